//! Host-side helpers shared by the CLI, the GPU runtime and the tuner: tensor shapes for a
//! problem, seeded random inputs, and which tensors a kernel writes. Nothing here executes a
//! kernel.

use crate::error::Error;
use phobos_ir::rng::SplitMix64;
use phobos_ir::{DType, Dim, HostTensor, Kernel, ParamId, ParamKind, Stmt, StmtKind};

/// The shape of every tensor parameter, in signature order, for the runtime dims `dims`.
///
/// Every runtime dim must be given (the error names all that are missing); a name that is not a
/// runtime dim is an error, except a shape-environment name given its bound value (so
/// `D=64` may be passed for a kernel where `D` is static).
pub fn shapes_for(
    kernel: &Kernel,
    dims: &[(String, i64)],
) -> Result<Vec<(String, Vec<usize>)>, Error> {
    for (i, (name, value)) in dims.iter().enumerate() {
        if dims[..i].iter().any(|(n, _)| n == name) {
            return Err(Error::DuplicateDim { name: name.clone() });
        }
        if kernel.dims.iter().any(|d| &d.name == name) {
            if !(0..=i32::MAX as i64).contains(value) {
                return Err(Error::DimOutOfRange {
                    dim: name.clone(),
                    extent: *value,
                });
            }
            continue;
        }
        match kernel.point.get(name) {
            Some(fixed) if fixed == *value => {}
            Some(fixed) => {
                return Err(Error::FixedDim {
                    name: name.clone(),
                    fixed,
                    given: *value,
                })
            }
            None => {
                return Err(Error::UnknownDim {
                    name: name.clone(),
                    kernel: kernel.name.clone(),
                    dims: if kernel.dims.is_empty() {
                        "none".to_string()
                    } else {
                        kernel
                            .dims
                            .iter()
                            .map(|d| d.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    },
                })
            }
        }
    }
    let value = |name: &str| dims.iter().find(|(n, _)| n == name).map(|&(_, v)| v);
    let missing: Vec<String> = kernel
        .dims
        .iter()
        .filter(|d| value(&d.name).is_none())
        .map(|d| d.name.clone())
        .collect();
    if !missing.is_empty() {
        return Err(Error::MissingDims { names: missing });
    }
    Ok(kernel
        .params
        .iter()
        .filter_map(|p| match &p.kind {
            ParamKind::Tensor { dims: pdims, .. } => Some((
                p.name.clone(),
                pdims
                    .iter()
                    .map(|d| match *d {
                        Dim::Static(n) => n.max(0) as usize,
                        Dim::Dyn(id) => kernel
                            .dims
                            .get(id)
                            .and_then(|d| value(&d.name))
                            .unwrap_or(0) as usize,
                    })
                    .collect(),
            )),
            ParamKind::Scalar { .. } => None,
        })
        .collect())
}

/// A deterministic random tensor: floats uniform in [-1, 1] (rounded to the type), integers in
/// [-4, 4] ([0, 4] unsigned), bools fair. The same `(dtype, shape, seed)` always gives the same
/// tensor, on every machine.
pub fn random_tensor(dtype: DType, shape: &[usize], seed: u64) -> HostTensor {
    let mut rng = SplitMix64(seed);
    let n: usize = shape.iter().product();
    let data = (0..n)
        .map(|_| {
            let r = rng.next_u64();
            match dtype {
                DType::Bool => (r >> 63) as f64,
                t if t.is_signed_int() => (r % 9) as f64 - 4.0,
                t if t.is_int() => (r % 5) as f64,
                // 53 random bits give a uniform value in [0, 1], then [-1, 1].
                t => t.round(2.0 * ((r >> 11) as f64 / ((1u64 << 53) - 1) as f64) - 1.0),
            }
        })
        .collect();
    HostTensor {
        dtype,
        shape: shape.to_vec(),
        data,
    }
}

/// The seed of one named tensor of a run seeded with `seed`: each tensor gets its own stream,
/// and adding a parameter does not change the others' values.
pub fn tensor_seed(seed: u64, name: &str) -> u64 {
    // FNV-1a of the name, mixed with the seed.
    let h = name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    });
    SplitMix64(seed ^ h).next_u64()
}

/// The tensor parameters the kernel stores to (its outputs), in signature order.
pub fn stored_tensors(kernel: &Kernel) -> Vec<ParamId> {
    fn walk(stmts: &[Stmt], out: &mut Vec<ParamId>) {
        for s in stmts {
            match &s.kind {
                StmtKind::Store { tensor, .. } | StmtKind::Atomic { tensor, .. } => {
                    out.push(*tensor)
                }
                StmtKind::For { body, .. } | StmtKind::While { body, .. } => walk(body, out),
                StmtKind::If {
                    then_body,
                    else_body,
                    ..
                } => {
                    walk(then_body, out);
                    walk(else_body, out);
                }
                StmtKind::Assign { .. } | StmtKind::Break | StmtKind::Continue => {}
            }
        }
    }
    let mut out = Vec::new();
    walk(&kernel.body, &mut out);
    out.sort_unstable();
    out.dedup();
    out
}
