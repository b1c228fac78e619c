//! Block-level tile operations: broadcasting, reductions, `dot`, `transpose`.

use crate::error::Error;
use crate::value::Tile;
use phobos_ir::eval::wrap;
use phobos_ir::{DType, ReduceOp};
use phobos_syntax::Span;

/// Broadcasts a tile to `shape` by NumPy's rules: shapes align on the right; an axis of extent 1
/// and a missing leading axis stretch.
pub(crate) fn broadcast(t: &Tile, shape: &[usize], span: Span) -> Result<Tile, Error> {
    if t.shape == shape {
        return Ok(t.clone());
    }
    let rank = shape.len();
    if t.shape.len() > rank {
        return Err(bad_broadcast(t, shape, span));
    }
    // The source stride of each destination axis (0 where the source stretches).
    let lead = rank - t.shape.len();
    let mut strides = vec![0usize; rank];
    let mut stride = 1usize;
    for a in (0..t.shape.len()).rev() {
        let (src, dst) = (t.shape[a], shape[lead + a]);
        if src == dst {
            strides[lead + a] = stride;
        } else if src != 1 {
            return Err(bad_broadcast(t, shape, span));
        }
        stride *= src;
    }
    let n: usize = shape.iter().product();
    let mut data = Vec::with_capacity(n);
    let mut index = vec![0usize; rank];
    for _ in 0..n {
        let src: usize = index.iter().zip(&strides).map(|(i, s)| i * s).sum();
        data.push(t.data[src]);
        for a in (0..rank).rev() {
            index[a] += 1;
            if index[a] < shape[a] {
                break;
            }
            index[a] = 0;
        }
    }
    Ok(Tile {
        shape: shape.to_vec(),
        data,
    })
}

fn bad_broadcast(t: &Tile, shape: &[usize], span: Span) -> Error {
    Error::internal(
        format!(
            "cannot broadcast a tile of shape {:?} to {shape:?}",
            t.shape
        ),
        span,
    )
}

/// Combines the elements of one reduction. Sums are computed exactly for integers (then wrapped)
/// and in f64 for floats, and rounded to the element type once; `max`/`min` ignore a NaN unless
/// every element is NaN (like CUDA's `fmaxf`).
fn reduce_values(op: ReduceOp, t: DType, xs: impl Iterator<Item = f64>) -> f64 {
    match op {
        ReduceOp::Sum if t.is_int() || t == DType::Bool => {
            let s = xs.fold(0i64, |acc, x| acc.wrapping_add(x as i64));
            wrap(t, s) as f64
        }
        ReduceOp::Sum => t.round(xs.sum()),
        ReduceOp::Max => xs.reduce(f64::max).unwrap_or(0.0),
        ReduceOp::Min => xs.reduce(f64::min).unwrap_or(0.0),
    }
}

/// A reduction over everything (a scalar) or over one axis, which is kept with extent 1.
pub(crate) fn reduce(
    op: ReduceOp,
    t: DType,
    tile: &Tile,
    axis: Option<usize>,
    span: Span,
) -> Result<Result<f64, Tile>, Error> {
    let Some(axis) = axis else {
        return Ok(Ok(reduce_values(op, t, tile.data.iter().copied())));
    };
    if axis >= tile.shape.len() {
        return Err(Error::internal(
            format!(
                "reduction over axis {axis} of a tile of shape {:?}",
                tile.shape
            ),
            span,
        ));
    }
    // Elements along `axis` are `inner` apart; `outer` blocks of `extent * inner` elements.
    let extent = tile.shape[axis];
    let inner: usize = tile.shape[axis + 1..].iter().product();
    let outer: usize = tile.shape[..axis].iter().product();
    let mut data = Vec::with_capacity(outer * inner);
    for o in 0..outer {
        for i in 0..inner {
            let base = o * extent * inner + i;
            data.push(reduce_values(
                op,
                t,
                (0..extent).map(|k| tile.data[base + k * inner]),
            ));
        }
    }
    let mut shape = tile.shape.clone();
    shape[axis] = 1;
    Ok(Err(Tile { shape, data }))
}

/// Rounds an f32 value to TF32 (10 explicit mantissa bits), to nearest with ties away from
/// zero, as `cvt.rna.tf32.f32` does.
pub(crate) fn round_tf32(x: f64) -> f64 {
    let f = x as f32;
    if !f.is_finite() {
        return f as f64;
    }
    f32::from_bits(f.to_bits().wrapping_add(0x1000) & 0xffff_e000) as f64
}

/// `dot(a, b)` (`[M, K] x [K, N]`) or `dot_t(a, b)` (`[M, K] x [N, K]`), accumulated in
/// `acc`, the element type `DType::dot_acc` gives for the operands' `input` type.
///
/// Each output element starts at zero and adds the products in order of `k`. Products are exact
/// (an f64 holds the product of two f32s); float sums are rounded to `acc` after every step, as
/// a fused multiply-add in `acc` would be (up to a rare double rounding); integer sums are exact
/// and wrap to `acc` at the end, which equals wrapping after every step. With `tf32`, f32 inputs
/// are first rounded to TF32.
pub(crate) fn dot(
    a: &Tile,
    b: &Tile,
    trans_b: bool,
    tf32: bool,
    input: DType,
    acc: DType,
    span: Span,
) -> Result<Tile, Error> {
    let (m, k) = match a.shape[..] {
        [m, k] => (m, k),
        _ => return Err(Error::internal("dot of a tile that is not rank 2", span)),
    };
    let (kb, n) = match (&b.shape[..], trans_b) {
        (&[kb, n], false) => (kb, n),
        (&[n, kb], true) => (kb, n),
        _ => return Err(Error::internal("dot of a tile that is not rank 2", span)),
    };
    if k != kb {
        return Err(Error::internal(
            format!("dot of shapes {:?} and {:?}", a.shape, b.shape),
            span,
        ));
    }
    let prep = |x: f64| {
        if tf32 && matches!(input, DType::F32 | DType::Tf32) {
            round_tf32(x)
        } else {
            x
        }
    };
    let a_rows: Vec<f64> = a.data.iter().map(|&x| prep(x)).collect();
    // B as [K, N] rows, so that one `k` step updates a whole output row.
    let b_rows: Vec<f64> = if trans_b {
        (0..k * n)
            .map(|e| prep(b.data[(e % n) * k + e / n]))
            .collect()
    } else {
        b.data.iter().map(|&x| prep(x)).collect()
    };
    let mut data = Vec::with_capacity(m * n);
    for i in 0..m {
        let a_row = &a_rows[i * k..(i + 1) * k];
        data.extend(dot_row(a_row, &b_rows, n, acc));
    }
    Ok(Tile {
        shape: vec![m, n],
        data,
    })
}

/// One output row: `sum_k a_row[k] * b[k, :]`, each element summed in order of `k`. Looping over
/// `k` outside keeps the elements' sums independent of each other, which is what lets the CPU
/// overlap them; the order within each element is unchanged.
fn dot_row(a_row: &[f64], b: &[f64], n: usize, acc: DType) -> Vec<f64> {
    let rows = a_row.iter().zip(b.chunks_exact(n));
    if acc.is_int() {
        let mut sums = vec![0i64; n];
        for (&x, b_row) in rows {
            for (s, &y) in sums.iter_mut().zip(b_row) {
                *s = s.wrapping_add(x as i64 * y as i64);
            }
        }
        return sums.into_iter().map(|s| wrap(acc, s) as f64).collect();
    }
    let mut sums = vec![0.0; n];
    for (&x, b_row) in rows {
        match acc {
            DType::F64 => sums.iter_mut().zip(b_row).for_each(|(s, &y)| *s += x * y),
            // f32, the only other accumulator, rounded after every step.
            _ => sums
                .iter_mut()
                .zip(b_row)
                .for_each(|(s, &y)| *s = (*s + x * y) as f32 as f64),
        }
    }
    sums
}

/// Rank-2 transpose.
pub(crate) fn transpose(t: &Tile, span: Span) -> Result<Tile, Error> {
    let (r, c) = match t.shape[..] {
        [r, c] => (r, c),
        _ => {
            return Err(Error::internal(
                "transpose of a tile that is not rank 2",
                span,
            ))
        }
    };
    let mut data = Vec::with_capacity(r * c);
    for j in 0..c {
        for i in 0..r {
            data.push(t.data[i * c + j]);
        }
    }
    Ok(Tile {
        shape: vec![c, r],
        data,
    })
}

/// The same elements, in row-major order, under `shape` (the checker proved the counts equal).
pub(crate) fn reshape(t: Tile, shape: Vec<usize>, span: Span) -> Result<Tile, Error> {
    if shape.iter().product::<usize>() != t.data.len() {
        return Err(Error::internal(
            "reshape to a different element count",
            span,
        ));
    }
    Ok(Tile {
        shape,
        data: t.data,
    })
}
