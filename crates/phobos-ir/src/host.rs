//! Tensors on the host: the currency between the CLI, the interpreter, the GPU runtime and
//! the tuner's correctness checks.

use crate::dtype::DType;

/// The most host memory tensors may take when the machine does not say what it has (1 TiB).
const HOST_BYTES_FALLBACK: u64 = 1 << 40;

/// Tensors that cannot be held on this host: refused before anything is allocated, because an
/// allocation that large aborts the process.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}", too_large(*.bytes, *.available))]
pub struct TooLarge {
    /// The bytes the tensors need on the host; `None` when the count overflows `u64`.
    pub bytes: Option<u64>,
    /// The bytes this machine has available, when it says.
    pub available: Option<u64>,
}

fn too_large(bytes: Option<u64>, available: Option<u64>) -> String {
    match (bytes, available) {
        (None, _) => "the tensors are too large: their size in bytes overflows".into(),
        (Some(b), Some(a)) => format!(
            "the tensors need {} of host memory, but only {} is available",
            human_bytes(b),
            human_bytes(a)
        ),
        (Some(b), None) => format!(
            "the tensors need {} of host memory, more than {} allowed",
            human_bytes(b),
            human_bytes(HOST_BYTES_FALLBACK)
        ),
    }
}

/// Host bytes of tensors of these shapes as [`HostTensor`] holds them (an `f64` per element);
/// `None` when the count overflows.
pub fn host_bytes<'a>(shapes: impl IntoIterator<Item = &'a [usize]>) -> Option<u64> {
    shapes.into_iter().try_fold(0u64, |total, shape| {
        let elems = shape
            .iter()
            .try_fold(1u64, |n, &d| n.checked_mul(d as u64))?;
        total.checked_add(elems.checked_mul(std::mem::size_of::<f64>() as u64)?)
    })
}

/// The memory this machine can give a process without swapping (Linux's `MemAvailable`), if
/// it says.
pub fn available_memory_bytes() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// The bytes tensors of these shapes take on the host, or [`TooLarge`] when they overflow or
/// exceed the memory the machine has available.
pub fn check_host_memory<'a>(
    shapes: impl IntoIterator<Item = &'a [usize]>,
) -> Result<u64, TooLarge> {
    let available = available_memory_bytes();
    match host_bytes(shapes) {
        Some(b) if b <= available.unwrap_or(HOST_BYTES_FALLBACK) => Ok(b),
        bytes => Err(TooLarge { bytes, available }),
    }
}

/// `1.5 GiB`, `512 B`: a byte count for messages.
pub fn human_bytes(b: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = b as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{b} B")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

/// A dense tensor in logical row-major order. Values are kept as f64, already rounded to
/// `dtype` (integers up to 2^53 are exact, which covers every test and benchmark input).
#[derive(Clone, Debug, PartialEq)]
pub struct HostTensor {
    pub dtype: DType,
    pub shape: Vec<usize>,
    pub data: Vec<f64>,
}

impl HostTensor {
    pub fn zeros(dtype: DType, shape: &[usize]) -> HostTensor {
        HostTensor {
            dtype,
            shape: shape.to_vec(),
            data: vec![0.0; shape.iter().product()],
        }
    }

    /// Builds a tensor from values, rounding each to `dtype`.
    pub fn from_f64(dtype: DType, shape: &[usize], values: &[f64]) -> HostTensor {
        assert_eq!(
            values.len(),
            shape.iter().product::<usize>(),
            "values do not fill the shape"
        );
        HostTensor {
            dtype,
            shape: shape.to_vec(),
            data: values.iter().map(|&x| dtype.round(x)).collect(),
        }
    }

    pub fn len(&self) -> usize {
        self.data.len()
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// Row-major strides in elements.
    pub fn strides(&self) -> Vec<usize> {
        let mut strides = vec![1; self.shape.len()];
        for i in (0..self.shape.len().saturating_sub(1)).rev() {
            strides[i] = strides[i + 1] * self.shape[i + 1];
        }
        strides
    }

    /// Little-endian bytes in the element type's memory format, row-major.
    pub fn to_bytes(&self) -> Vec<u8> {
        encode_all(self.dtype, &self.data)
    }

    /// The inverse of [`HostTensor::to_bytes`].
    pub fn from_bytes(dtype: DType, shape: &[usize], bytes: &[u8]) -> Option<HostTensor> {
        let n: usize = shape.iter().product();
        let size = dtype.size_bytes();
        if bytes.len() != n * size {
            return None;
        }
        Some(HostTensor {
            dtype,
            shape: shape.to_vec(),
            data: decode_all(dtype, bytes),
        })
    }

    /// Bytes of this tensor stored in the reversed dim order (column-major for rank 2).
    pub fn to_bytes_col_major(&self) -> Vec<u8> {
        match self.shape[..] {
            [rows, cols] => encode_transposed(self.dtype, &self.data, rows, cols),
            _ => {
                let permuted: Vec<f64> = col_major_order(&self.shape)
                    .into_iter()
                    .map(|i| self.data[i])
                    .collect();
                encode_all(self.dtype, &permuted)
            }
        }
    }

    /// The inverse of [`HostTensor::to_bytes_col_major`].
    pub fn from_bytes_col_major(dtype: DType, shape: &[usize], bytes: &[u8]) -> Option<HostTensor> {
        let n: usize = shape.iter().product();
        if bytes.len() != n * dtype.size_bytes() {
            return None;
        }
        let data = match shape[..] {
            [rows, cols] => decode_transposed(dtype, bytes, rows, cols),
            _ => {
                let stored = decode_all(dtype, bytes);
                let mut data = vec![0.0; stored.len()];
                for (k, i) in col_major_order(shape).into_iter().enumerate() {
                    data[i] = stored[k];
                }
                data
            }
        };
        Some(HostTensor {
            dtype,
            shape: shape.to_vec(),
            data,
        })
    }
}

/// Square blocks of a transposition: small enough that both sides stay in cache.
const BLOCK: usize = 64;

/// Calls `$body` with `$f` bound to the encoder of `$dtype`: `f64` to little-endian bytes.
macro_rules! with_encoder {
    ($dtype:expr, $f:ident => $body:expr) => {
        match $dtype {
            DType::Bool => {
                let $f = |x: f64| [(x != 0.0) as u8];
                $body
            }
            DType::I8 => {
                let $f = |x: f64| [x as i8 as u8];
                $body
            }
            DType::U8 => {
                let $f = |x: f64| [x as u8];
                $body
            }
            DType::I32 => {
                let $f = |x: f64| (x as i32).to_le_bytes();
                $body
            }
            DType::U32 => {
                let $f = |x: f64| (x as u32).to_le_bytes();
                $body
            }
            DType::I64 => {
                let $f = |x: f64| (x as i64).to_le_bytes();
                $body
            }
            DType::F16 => {
                let $f = |x: f64| half::f16::from_f64(x).to_bits().to_le_bytes();
                $body
            }
            DType::BF16 => {
                let $f = |x: f64| half::bf16::from_f64(x).to_bits().to_le_bytes();
                $body
            }
            DType::F32 | DType::Tf32 => {
                let $f = |x: f64| (x as f32).to_le_bytes();
                $body
            }
            DType::F64 => {
                let $f = |x: f64| x.to_le_bytes();
                $body
            }
            DType::F8E4M3 => {
                let $f = |x: f64| [float8::F8E4M3::from_f64(x).to_bits()];
                $body
            }
            DType::F8E5M2 => {
                let $f = |x: f64| [float8::F8E5M2::from_f64(x).to_bits()];
                $body
            }
        }
    };
}

/// Every value in the element type's little-endian format, in order.
fn encode_all(dtype: DType, data: &[f64]) -> Vec<u8> {
    fn fill<const N: usize>(data: &[f64], f: impl Fn(f64) -> [u8; N]) -> Vec<u8> {
        let mut out = vec![0u8; data.len() * N];
        for (chunk, &x) in out.chunks_exact_mut(N).zip(data) {
            chunk.copy_from_slice(&f(x));
        }
        out
    }
    with_encoder!(dtype, f => fill(data, f))
}

/// The bytes of the transpose of a row-major `rows x cols` matrix (its column-major storage),
/// encoded as they are gathered.
fn encode_transposed(dtype: DType, data: &[f64], rows: usize, cols: usize) -> Vec<u8> {
    fn fill<const N: usize>(
        data: &[f64],
        rows: usize,
        cols: usize,
        f: impl Fn(f64) -> [u8; N],
    ) -> Vec<u8> {
        let mut out = vec![0u8; data.len() * N];
        for r0 in (0..rows).step_by(BLOCK) {
            for c0 in (0..cols).step_by(BLOCK) {
                for c in c0..(c0 + BLOCK).min(cols) {
                    let column = &mut out[c * rows * N..(c + 1) * rows * N];
                    for r in r0..(r0 + BLOCK).min(rows) {
                        column[r * N..(r + 1) * N].copy_from_slice(&f(data[r * cols + c]));
                    }
                }
            }
        }
        out
    }
    with_encoder!(dtype, f => fill(data, rows, cols, f))
}

/// Calls `$body` with `$f` bound to the decoder of `$dtype`: little-endian bytes to `f64`.
macro_rules! with_decoder {
    ($dtype:expr, $f:ident => $body:expr) => {
        match $dtype {
            DType::Bool => {
                let $f = |b: [u8; 1]| (b[0] != 0) as u8 as f64;
                $body
            }
            DType::I8 => {
                let $f = |b: [u8; 1]| b[0] as i8 as f64;
                $body
            }
            DType::U8 => {
                let $f = |b: [u8; 1]| b[0] as f64;
                $body
            }
            DType::I32 => {
                let $f = |b: [u8; 4]| i32::from_le_bytes(b) as f64;
                $body
            }
            DType::U32 => {
                let $f = |b: [u8; 4]| u32::from_le_bytes(b) as f64;
                $body
            }
            DType::I64 => {
                let $f = |b: [u8; 8]| i64::from_le_bytes(b) as f64;
                $body
            }
            DType::F16 => {
                let $f = |b: [u8; 2]| half::f16::from_bits(u16::from_le_bytes(b)).to_f64();
                $body
            }
            DType::BF16 => {
                let $f = |b: [u8; 2]| half::bf16::from_bits(u16::from_le_bytes(b)).to_f64();
                $body
            }
            DType::F32 | DType::Tf32 => {
                let $f = |b: [u8; 4]| f32::from_le_bytes(b) as f64;
                $body
            }
            DType::F64 => {
                let $f = |b: [u8; 8]| f64::from_le_bytes(b);
                $body
            }
            DType::F8E4M3 => {
                let $f = |b: [u8; 1]| float8::F8E4M3::from_bits(b[0]).to_f64();
                $body
            }
            DType::F8E5M2 => {
                let $f = |b: [u8; 1]| float8::F8E5M2::from_bits(b[0]).to_f64();
                $body
            }
        }
    };
}

/// The values of little-endian bytes, in order (the inverse of [`encode_all`]).
fn decode_all(dtype: DType, bytes: &[u8]) -> Vec<f64> {
    fn read<const N: usize>(bytes: &[u8], f: impl Fn([u8; N]) -> f64) -> Vec<f64> {
        bytes
            .chunks_exact(N)
            .map(|c| f(c.try_into().expect("chunks of N")))
            .collect()
    }
    with_decoder!(dtype, f => read(bytes, f))
}

/// A row-major `rows x cols` matrix from its column-major storage (the inverse of
/// [`encode_transposed`]).
fn decode_transposed(dtype: DType, bytes: &[u8], rows: usize, cols: usize) -> Vec<f64> {
    fn read<const N: usize>(
        bytes: &[u8],
        rows: usize,
        cols: usize,
        f: impl Fn([u8; N]) -> f64,
    ) -> Vec<f64> {
        let mut out = vec![0.0; rows * cols];
        for r0 in (0..rows).step_by(BLOCK) {
            for c0 in (0..cols).step_by(BLOCK) {
                for c in c0..(c0 + BLOCK).min(cols) {
                    let column = &bytes[c * rows * N..(c + 1) * rows * N];
                    for r in r0..(r0 + BLOCK).min(rows) {
                        let b = column[r * N..(r + 1) * N].try_into().expect("N bytes");
                        out[r * cols + c] = f(b);
                    }
                }
            }
        }
        out
    }
    with_decoder!(dtype, f => read(bytes, rows, cols, f))
}

/// Row-major element indices in the order a reversed-dim (column-major) layout stores them.
fn col_major_order(shape: &[usize]) -> Vec<usize> {
    let n: usize = shape.iter().product();
    let rank = shape.len();
    let mut strides = vec![1usize; rank];
    for i in (0..rank.saturating_sub(1)).rev() {
        strides[i] = strides[i + 1] * shape[i + 1];
    }
    let mut order = Vec::with_capacity(n);
    let mut idx = vec![0usize; rank];
    for _ in 0..n {
        order.push(idx.iter().zip(&strides).map(|(a, b)| a * b).sum());
        // The first dim moves fastest.
        for d in 0..rank {
            idx[d] += 1;
            if idx[d] < shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    order
}

/// Norm-wise relative error `||out - ref|| / ||ref||` (2-norms). NaN anywhere in `out` where
/// `reference` is finite gives infinity, so NaN never passes a tolerance.
pub fn relative_error(out: &[f64], reference: &[f64]) -> f64 {
    assert_eq!(out.len(), reference.len());
    let mut num = 0.0;
    let mut den = 0.0;
    for (&o, &r) in out.iter().zip(reference) {
        if o.is_nan() && !r.is_nan() {
            return f64::INFINITY;
        }
        if o.is_nan() && r.is_nan() {
            continue;
        }
        if o.is_infinite() || r.is_infinite() {
            if o != r {
                return f64::INFINITY;
            }
            continue;
        }
        num += (o - r) * (o - r);
        den += r * r;
    }
    if den == 0.0 {
        if num == 0.0 {
            0.0
        } else {
            num.sqrt()
        }
    } else {
        (num / den).sqrt()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_bytes_count_an_f64_per_element_and_refuse_overflow() {
        assert_eq!(host_bytes([&[4usize, 8][..], &[3][..]]), Some((32 + 3) * 8));
        assert_eq!(host_bytes([&[usize::MAX, 2][..]]), None);
        let huge = [i32::MAX as usize, 1 << 20];
        let err = check_host_memory([&huge[..]]).unwrap_err();
        assert_eq!(err.bytes, Some((i32::MAX as u64) << 23));
        assert!(err.to_string().contains("16.0 PiB"), "{err}");
        assert_eq!(check_host_memory([&[16usize, 16][..]]), Ok(2048));
    }

    #[test]
    fn byte_counts_read_in_binary_units() {
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(3 << 29), "1.5 GiB");
    }

    #[test]
    fn bytes_round_trip_every_dtype() {
        for t in DType::ALL {
            let src = HostTensor::from_f64(t, &[2, 3], &[0.0, 1.0, -2.0, 3.0, 0.5, 1.0]);
            let back = HostTensor::from_bytes(t, &[2, 3], &src.to_bytes()).unwrap();
            assert_eq!(src, back, "{t}");
            let back =
                HostTensor::from_bytes_col_major(t, &[2, 3], &src.to_bytes_col_major()).unwrap();
            assert_eq!(src, back, "{t} col-major");
        }
    }

    #[test]
    fn col_major_reverses_strides() {
        let t = HostTensor::from_f64(DType::I32, &[2, 3], &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
        let bytes = t.to_bytes_col_major();
        let as_rows = HostTensor::from_bytes(DType::I32, &[6], &bytes).unwrap();
        assert_eq!(as_rows.data, vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
    }

    #[test]
    fn col_major_of_a_matrix_is_its_transpose_at_every_block_edge() {
        for (rows, cols) in [(1, 1), (3, 70), (130, 67), (64, 64), (65, 129)] {
            let n = rows * cols;
            let values: Vec<f64> = (0..n).map(|i| i as f64).collect();
            let t = HostTensor::from_f64(DType::I32, &[rows, cols], &values);
            let bytes = t.to_bytes_col_major();
            let stored = HostTensor::from_bytes(DType::I32, &[n], &bytes).unwrap();
            // Element k of the column-major storage is (k % rows, k / rows).
            for (k, &v) in stored.data.iter().enumerate() {
                assert_eq!(
                    v,
                    ((k % rows) * cols + k / rows) as f64,
                    "{rows}x{cols} at {k}"
                );
            }
            let back = HostTensor::from_bytes_col_major(DType::I32, &[rows, cols], &bytes).unwrap();
            assert_eq!(back, t, "{rows}x{cols}");
        }
        // Rank 3 keeps the general order: the first dim fastest.
        let t = HostTensor::from_f64(DType::I32, &[2, 2, 2], &[0., 1., 2., 3., 4., 5., 6., 7.]);
        let bytes = t.to_bytes_col_major();
        let stored = HostTensor::from_bytes(DType::I32, &[8], &bytes).unwrap();
        assert_eq!(stored.data, vec![0., 4., 2., 6., 1., 5., 3., 7.]);
        assert_eq!(
            HostTensor::from_bytes_col_major(DType::I32, &[2, 2, 2], &bytes).unwrap(),
            t
        );
    }

    #[test]
    fn nan_never_passes() {
        assert!(relative_error(&[f64::NAN, 1.0], &[1.0, 1.0]).is_infinite());
        assert_eq!(relative_error(&[1.0, 2.0], &[1.0, 2.0]), 0.0);
    }
}
