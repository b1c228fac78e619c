//! Tensors on the host: the currency between the CLI, the interpreter, the GPU runtime and
//! the tuner's correctness checks.

use crate::dtype::DType;

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
        let mut out = Vec::with_capacity(self.data.len() * self.dtype.size_bytes());
        for &x in &self.data {
            encode(self.dtype, x, &mut out);
        }
        out
    }

    /// The inverse of [`HostTensor::to_bytes`].
    pub fn from_bytes(dtype: DType, shape: &[usize], bytes: &[u8]) -> Option<HostTensor> {
        let n: usize = shape.iter().product();
        let size = dtype.size_bytes();
        if bytes.len() != n * size {
            return None;
        }
        let data = bytes.chunks_exact(size).map(|c| decode(dtype, c)).collect();
        Some(HostTensor {
            dtype,
            shape: shape.to_vec(),
            data,
        })
    }

    /// Bytes of this tensor stored in the reversed dim order (column-major for rank 2).
    pub fn to_bytes_col_major(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.data.len() * self.dtype.size_bytes());
        for i in col_major_order(&self.shape) {
            encode(self.dtype, self.data[i], &mut out);
        }
        out
    }

    /// The inverse of [`HostTensor::to_bytes_col_major`].
    pub fn from_bytes_col_major(dtype: DType, shape: &[usize], bytes: &[u8]) -> Option<HostTensor> {
        let mut t =
            HostTensor::from_bytes(dtype, &[bytes.len() / dtype.size_bytes().max(1)], bytes)?;
        if t.data.len() != shape.iter().product::<usize>() {
            return None;
        }
        let mut data = vec![0.0; t.data.len()];
        for (k, i) in col_major_order(shape).into_iter().enumerate() {
            data[i] = t.data[k];
        }
        t.data = data;
        t.shape = shape.to_vec();
        Some(t)
    }
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

fn encode(dtype: DType, x: f64, out: &mut Vec<u8>) {
    match dtype {
        DType::Bool => out.push((x != 0.0) as u8),
        DType::I8 => out.push(x as i8 as u8),
        DType::U8 => out.push(x as u8),
        DType::I32 => out.extend((x as i32).to_le_bytes()),
        DType::U32 => out.extend((x as u32).to_le_bytes()),
        DType::I64 => out.extend((x as i64).to_le_bytes()),
        DType::F16 => out.extend(half::f16::from_f64(x).to_bits().to_le_bytes()),
        DType::BF16 => out.extend(half::bf16::from_f64(x).to_bits().to_le_bytes()),
        DType::F32 | DType::Tf32 => out.extend((x as f32).to_le_bytes()),
        DType::F64 => out.extend(x.to_le_bytes()),
        DType::F8E4M3 => out.push(float8::F8E4M3::from_f64(x).to_bits()),
        DType::F8E5M2 => out.push(float8::F8E5M2::from_f64(x).to_bits()),
    }
}

fn decode(dtype: DType, b: &[u8]) -> f64 {
    match dtype {
        DType::Bool => (b[0] != 0) as u8 as f64,
        DType::I8 => b[0] as i8 as f64,
        DType::U8 => b[0] as f64,
        DType::I32 => i32::from_le_bytes(b.try_into().unwrap()) as f64,
        DType::U32 => u32::from_le_bytes(b.try_into().unwrap()) as f64,
        DType::I64 => i64::from_le_bytes(b.try_into().unwrap()) as f64,
        DType::F16 => half::f16::from_bits(u16::from_le_bytes(b.try_into().unwrap())).to_f64(),
        DType::BF16 => half::bf16::from_bits(u16::from_le_bytes(b.try_into().unwrap())).to_f64(),
        DType::F32 | DType::Tf32 => f32::from_le_bytes(b.try_into().unwrap()) as f64,
        DType::F64 => f64::from_le_bytes(b.try_into().unwrap()),
        DType::F8E4M3 => float8::F8E4M3::from_bits(b[0]).to_f64(),
        DType::F8E5M2 => float8::F8E5M2::from_bits(b[0]).to_f64(),
    }
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
    fn nan_never_passes() {
        assert!(relative_error(&[f64::NAN, 1.0], &[1.0, 1.0]).is_infinite());
        assert_eq!(relative_error(&[1.0, 2.0], &[1.0, 2.0]), 0.0);
    }
}
