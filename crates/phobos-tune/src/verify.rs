//! Correctness checks: fresh random inputs, poisoned outputs, comparison by dtype tolerance.

use crate::backend::ArgValue;
use crate::hash::stable_hash;
use crate::irwalk::{write_only, written};
use crate::types::{Mismatch, Problem};
use phobos_ir::rng::SplitMix64;
use phobos_ir::{relative_error, DType, Dim, HostTensor, Kernel, ParamKind};

/// The logical shape of every tensor parameter for a problem (`None` for scalars).
pub fn shapes(kernel: &Kernel, problem: &Problem) -> Result<Vec<Option<Vec<usize>>>, String> {
    kernel
        .params
        .iter()
        .map(|p| match &p.kind {
            ParamKind::Scalar { .. } => Ok(None),
            ParamKind::Tensor { dims, .. } => dims
                .iter()
                .map(|d| match d {
                    Dim::Static(n) => Ok(*n as usize),
                    Dim::Dyn(id) => {
                        let name = &kernel.dims[*id].name;
                        problem
                            .dim(name)
                            .filter(|&v| v >= 0)
                            .map(|v| v as usize)
                            .ok_or_else(|| format!("no value for dim `{name}`"))
                    }
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
        })
        .collect()
}

/// Total tensor elements of a problem: what a check on the interpreter costs, roughly.
pub fn elements(kernel: &Kernel, problem: &Problem) -> Option<u64> {
    let shapes = shapes(kernel, problem).ok()?;
    Some(
        shapes
            .iter()
            .flatten()
            .map(|s| s.iter().product::<usize>() as u64)
            .sum(),
    )
}

/// Random values for a dtype: floats in [-1, 1), signed integers in [-4, 4], unsigned in
/// [0, 8], bools 0/1. Never all zeros.
pub fn random_tensor(dtype: DType, shape: &[usize], seed: u64) -> HostTensor {
    use rayon::prelude::*;
    let n: usize = shape.iter().product();
    let value = |i: usize| {
        // Uniform in [0, 1).
        let u = (SplitMix64::at(seed, i as u64) >> 11) as f64 / (1u64 << 53) as f64;
        dtype.round(match dtype {
            DType::Bool => (u < 0.5) as u8 as f64,
            t if t.is_signed_int() => (u * 9.0).floor() - 4.0,
            t if t.is_int() => (u * 9.0).floor(),
            _ => u * 2.0 - 1.0,
        })
    };
    let mut data: Vec<f64> = (0..n)
        .into_par_iter()
        .with_min_len(1 << 14)
        .map(value)
        .collect();
    if n > 0 && data.par_iter().all(|&v| v == 0.0) {
        data[0] = 1.0;
    }
    HostTensor {
        dtype,
        shape: shape.to_vec(),
        data,
    }
}

/// A value no correct kernel writes: NaN for floats, an unlikely integer otherwise. Both the
/// variant and the reference start from it, so an element the variant skips stands out.
pub fn poison(dtype: DType) -> f64 {
    match dtype {
        t if t.is_float() => f64::NAN,
        DType::I8 => -77.0,
        DType::U8 => 201.0,
        DType::I32 | DType::I64 => -123_456_789.0,
        DType::U32 => 3_000_000_123.0,
        _ => 1.0,
    }
}

/// Fresh arguments for one check or timing: every tensor random (seeded by `seed` and the
/// parameter name), write-only outputs poisoned when `poison_outputs`, scalars from the problem.
pub fn make_args(
    kernel: &Kernel,
    problem: &Problem,
    seed: u64,
    poison_outputs: bool,
) -> Result<Vec<ArgValue>, String> {
    let shapes = shapes(kernel, problem)?;
    phobos_ir::host::check_host_memory(shapes.iter().flatten().map(|s| s.as_slice()))
        .map_err(|e| e.to_string())?;
    let poisoned = if poison_outputs {
        write_only(kernel)
    } else {
        Vec::new()
    };
    kernel
        .params
        .iter()
        .zip(shapes)
        .enumerate()
        .map(|(i, (p, shape))| match (&p.kind, shape) {
            (ParamKind::Tensor { dtype, .. }, Some(shape)) => {
                if poisoned.contains(&i) {
                    let n = shape.iter().product();
                    Ok(ArgValue::Tensor(HostTensor::from_f64(
                        *dtype,
                        &shape,
                        &vec![poison(*dtype); n],
                    )))
                } else {
                    let h = stable_hash(&[&seed.to_le_bytes(), p.name.as_bytes()]);
                    let s = u64::from_str_radix(&h[..16], 16).unwrap_or(seed);
                    Ok(ArgValue::Tensor(random_tensor(*dtype, &shape, s)))
                }
            }
            (ParamKind::Scalar { dtype }, _) => problem
                .arg(&p.name)
                .map(|v| ArgValue::Scalar(dtype.round(v)))
                .ok_or_else(|| format!("no value for scalar argument `{}`", p.name)),
            (ParamKind::Tensor { .. }, None) => Err(format!("no shape for `{}`", p.name)),
        })
        .collect()
}

/// The tolerance for an output: its dtype's, or TF32's when a `dot` runs in reduced precision
/// on the tensor cores (`phobos_ir::walk::output_tolerance`).
pub fn tolerance(kernel: &Kernel, dtype: DType) -> f64 {
    phobos_ir::walk::output_tolerance(kernel, dtype)
}

/// Which elements of each parameter a check compares: by parameter id, a flag per element
/// (row-major); `None` (for the whole map or one parameter) compares every element.
pub type Masks<'a> = Option<&'a [Option<Vec<bool>>]>;

/// The norm-wise relative error of `o` against `r` over the elements `mask` selects (all when
/// `None`); a length mismatch is infinite.
fn masked_error(o: &HostTensor, r: &HostTensor, mask: Option<&[bool]>) -> f64 {
    if o.data.len() != r.data.len() {
        return f64::INFINITY;
    }
    match mask {
        None => relative_error(&o.data, &r.data),
        Some(m) => {
            let pick = |d: &[f64]| -> Vec<f64> {
                d.iter()
                    .zip(m)
                    .filter(|(_, &w)| w)
                    .map(|(&x, _)| x)
                    .collect()
            };
            relative_error(&pick(&o.data), &pick(&r.data))
        }
    }
}

/// The output tensors a check compares, each with its mask: every tensor the kernel writes.
fn compared<'a>(
    kernel: &Kernel,
    out: &'a [ArgValue],
    reference: &'a [ArgValue],
    masks: Masks<'a>,
) -> Vec<(usize, &'a HostTensor, &'a HostTensor, Option<&'a [bool]>)> {
    written(kernel)
        .into_iter()
        .filter_map(|id| {
            let o = out.get(id).and_then(ArgValue::tensor)?;
            let r = reference.get(id).and_then(ArgValue::tensor)?;
            let m = masks.and_then(|m| m.get(id)?.as_deref());
            Some((id, o, r, m))
        })
        .collect()
}

/// Output elements a check compares: those of every tensor the kernel writes, or those the
/// masks select.
pub fn compared_elements(kernel: &Kernel, out: &[ArgValue], masks: Masks<'_>) -> u64 {
    compared(kernel, out, out, masks)
        .iter()
        .map(|(_, o, _, m)| match m {
            None => o.data.len() as u64,
            Some(m) => m.iter().filter(|&&w| w).count() as u64,
        })
        .sum()
}

/// The comparison of every tensor the kernel writes against the reference, in one pass over
/// each (over the elements `masks` selects, when given): the first tensor whose norm-wise
/// relative error is not within its tolerance (a NaN error fails too), and the largest error
/// over all of them (`None` when nothing was compared; NaN or a shape mismatch counts as
/// infinite).
pub fn compare(
    kernel: &Kernel,
    out: &[ArgValue],
    reference: &[ArgValue],
    reference_name: &str,
    masks: Masks<'_>,
) -> (Option<Mismatch>, Option<f64>) {
    let mut mismatch = None;
    let mut worst: Option<f64> = None;
    for (id, o, r, m) in compared(kernel, out, reference, masks) {
        let tol = tolerance(kernel, o.dtype);
        let error = masked_error(o, r, m);
        // Only a comparable error within the tolerance passes.
        let within = error.partial_cmp(&tol).is_some_and(|o| o.is_le());
        if !within && mismatch.is_none() {
            mismatch = Some(Mismatch {
                tensor: kernel.params[id].name.clone(),
                error,
                tolerance: tol,
                reference: reference_name.to_string(),
            });
        }
        let e = if error.is_nan() { f64::INFINITY } else { error };
        worst = Some(worst.map_or(e, |w| w.max(e)));
    }
    (mismatch, worst)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_is_seeded_and_never_zero() {
        let a = random_tensor(DType::F32, &[4, 4], 7);
        let b = random_tensor(DType::F32, &[4, 4], 7);
        let c = random_tensor(DType::F32, &[4, 4], 8);
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert!(a.data.iter().all(|v| (-1.0..1.0).contains(v)));
        let one = random_tensor(DType::U8, &[1], 0);
        assert!(one.data.iter().any(|&v| v != 0.0));
        for seed in 0..50 {
            let t = random_tensor(DType::I8, &[3], seed);
            assert!(t.data.iter().any(|&v| v != 0.0));
            assert!(t.data.iter().all(|v| (-4.0..=4.0).contains(v)));
        }
    }

    #[test]
    fn masks_restrict_the_comparison_to_the_elements_written() {
        let src = "@launch(32)\nkernel copy(X: tensor<f32>[N], O: tensor<f32>[N]) {\n  \
                   let i = ctx.block.x * 4\n  O[i :+ 4] = X[i :+ 4]\n}\n";
        let module = phobos_check::load(phobos_syntax::SourceFile::new("copy.ph", src)).unwrap();
        let info = module.kernel(None).unwrap();
        let k = phobos_check::instantiate(&module, info, &info.default_variant().unwrap()).unwrap();
        let t = |d: &[f64]| ArgValue::Tensor(HostTensor::from_f64(DType::F32, &[4], d));
        let x = t(&[1.0, 2.0, 3.0, 4.0]);
        let out = [x.clone(), t(&[1.0, 2.0, 9.0, f64::NAN])];
        let reference = [x, t(&[1.0, 2.0, 3.0, 4.0])];
        // The whole of O differs.
        let (m, worst) = compare(&k, &out, &reference, "ref", None);
        assert_eq!(m.unwrap().tensor, "O");
        // NaN counts as infinite.
        assert_eq!(worst, Some(f64::INFINITY));
        assert_eq!(compared_elements(&k, &out, None), 4);
        // Only the first two elements of O were written by the sampled blocks: they agree.
        let masks = vec![None, Some(vec![true, true, false, false])];
        assert_eq!(
            compare(&k, &out, &reference, "ref", Some(&masks)),
            (None, Some(0.0))
        );
        assert_eq!(compared_elements(&k, &out, Some(&masks)), 2);
        // The third is a wrong value, the fourth never written (poison stays NaN).
        for bad in [2, 3] {
            let mut mask = vec![true, true, false, false];
            mask[bad] = true;
            let masks = vec![None, Some(mask)];
            assert!(compare(&k, &out, &reference, "ref", Some(&masks))
                .0
                .is_some());
        }
    }

    #[test]
    fn poison_fails_comparison() {
        for t in [DType::F32, DType::F16, DType::I32, DType::U8] {
            let p = poison(t);
            let r = relative_error(&[t.round(p)], &[1.0]);
            assert!(r.is_nan() || r > t.tolerance(), "{t}");
        }
    }
}
