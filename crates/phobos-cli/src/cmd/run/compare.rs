//! `phobos run --compare`: every tensor the kernel stores to, as the GPU left it, against the
//! interpreter's, by norm-wise relative error (`phobos_ir::relative_error`) within the tolerance
//! of the tensor's element type (`DType::tolerance`; integers and bools must match exactly).
//!
//! A kernel with a `dot` on TF32 or fp8 operands gets at least TF32's tolerance for every
//! float output: tensor cores round f32 to TF32 their own way (the interpreter rounds to
//! nearest) and accumulate fp8 products with fewer bits than f32, so even an f32 result of such a
//! `dot` differs from the interpreter's by more than f32's tolerance.

use phobos_interp::{
    Config, Coverage, Error, Launch, SampleConfig, WriteMask, DEFAULT_SAMPLE_BUDGET,
};
use phobos_ir::walk::blocks_independent;
use phobos_ir::{relative_error, DType, HostTensor, Kernel};

/// One output compared.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Comparison {
    pub name: String,
    pub dtype: DType,
    /// Norm-wise relative error of the GPU's tensor against the interpreter's.
    pub error: f64,
    pub tolerance: f64,
    /// Why the tolerance is wider than the element type's, when it is.
    pub widened: Option<&'static str>,
    /// Elements that differ by more than the tolerance allows, and the first of them.
    pub differ: usize,
    pub first: Option<Difference>,
}

/// The first element that differs.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Difference {
    pub index: Vec<usize>,
    pub gpu: f64,
    pub interpreter: f64,
}

impl Comparison {
    /// Within tolerance. A NaN where the interpreter has a number never passes.
    pub fn pass(&self) -> bool {
        self.error <= self.tolerance
    }

    /// `C: relative error 1.192e-7, tolerance 1e-4 (f32): pass`; a failure adds how many
    /// elements differ and the first of them.
    pub fn line(&self) -> String {
        let tol = if self.tolerance == 0.0 {
            "0 (exact)".to_string()
        } else {
            format!("{:e}", self.tolerance)
        };
        let mut line = format!(
            "{}: relative error {}, tolerance {tol} ({}{}): {}",
            self.name,
            if self.error.is_finite() {
                format!("{:.3e}", self.error)
            } else {
                format!("{}", self.error)
            },
            self.dtype,
            self.widened.map_or(String::new(), |w| format!(", {w}")),
            if self.pass() { "pass" } else { "FAIL" }
        );
        if !self.pass() {
            line.push_str(&format!("; {} element(s) differ", self.differ));
            if let Some(d) = &self.first {
                line.push_str(&format!(
                    ", the first at {:?}: GPU {}, interpreter {}",
                    d.index, d.gpu, d.interpreter
                ));
            }
        }
        line
    }
}

/// Why a kernel's float outputs need TF32's tolerance: a `dot` on TF32 or fp8 operands.
pub(super) fn reduced_precision_dot(kernel: &Kernel) -> Option<&'static str> {
    phobos_ir::walk::reduced_precision_dot(kernel)
}

/// The interpreter's side of `--compare`: its tensors and, when it ran a sample of the blocks,
/// which elements they wrote and which blocks ran.
pub(super) struct Reference {
    pub tensors: Vec<(String, HostTensor)>,
    pub sample: Option<(Vec<(String, WriteMask)>, Coverage)>,
}

/// Runs the interpreter for `--compare`: a kernel whose blocks are independent runs them in a
/// random order (corners and edges first) until the whole grid ran or the time budget is
/// spent, so a problem too large to interpret whole is checked on a sample of its blocks;
/// another kernel runs whole.
pub(super) fn reference(launch: &Launch, config: &Config, seed: u64) -> Result<Reference, Error> {
    if !blocks_independent(launch.kernel()) {
        let out = launch.run(config)?;
        return Ok(Reference {
            tensors: out.tensors,
            sample: None,
        });
    }
    let sample = SampleConfig {
        seed,
        random_blocks: usize::MAX,
        ..SampleConfig::default()
    };
    let s = launch.run_sample(config, &sample)?;
    Ok(Reference {
        tensors: s.output.tensors,
        sample: (!s.coverage.complete()).then_some((s.output.written, s.coverage)),
    })
}

/// `checked 18 of 683 blocks (2 corners, 16 random), 1696 elements: the interpreter's time
/// budget of 3 s ends there`, for a sampled run.
pub(super) fn sample_line(c: &Coverage, elements: usize) -> String {
    let parts: Vec<String> = [
        (c.corners, "corner", "corners"),
        (c.edges, "edge", "edges"),
        (c.random, "random", "random"),
    ]
    .iter()
    .filter(|(n, _, _)| *n > 0)
    .map(|&(n, one, many)| format!("{n} {}", if n == 1 { one } else { many }))
    .collect();
    format!(
        "checked {} of {} blocks ({}), {elements} elements: the interpreter's time budget of {} s \
         ends there",
        c.blocks(),
        c.grid_blocks,
        parts.join(", "),
        DEFAULT_SAMPLE_BUDGET.as_secs()
    )
}

/// Compares the tensors named in `outputs` (in that order) between the two runs, on the
/// elements `masks` selects when given (those a sample of blocks wrote); `widen` is
/// [`reduced_precision_dot`] of the kernel.
pub(super) fn compare(
    outputs: &[String],
    gpu: &[(String, HostTensor)],
    interpreter: &[(String, HostTensor)],
    masks: Option<&[(String, WriteMask)]>,
    widen: Option<&'static str>,
) -> Vec<Comparison> {
    let find = |set: &'_ [(String, HostTensor)], name: &str| {
        set.iter().find(|(n, _)| n == name).map(|(_, t)| t.clone())
    };
    outputs
        .iter()
        .filter_map(|name| {
            let (g, i) = (find(gpu, name)?, find(interpreter, name)?);
            let mask = masks
                .and_then(|m| m.iter().find(|(n, _)| n == name))
                .map(|(_, m)| m);
            Some(compare_one(name, &g, &i, mask, widen))
        })
        .collect()
}

fn compare_one(
    name: &str,
    gpu: &HostTensor,
    interp: &HostTensor,
    mask: Option<&WriteMask>,
    widen: Option<&'static str>,
) -> Comparison {
    let own = interp.dtype.tolerance();
    let wide = DType::Tf32.tolerance();
    let widened = widen.filter(|_| interp.dtype.is_float() && own < wide);
    let tolerance = if widened.is_some() { wide } else { own };
    let selected = |i: usize| mask.is_none_or(|m| m.get(i));
    let error = if gpu.shape != interp.shape {
        f64::INFINITY
    } else if mask.is_some() {
        let pick = |d: &[f64]| -> Vec<f64> {
            d.iter()
                .enumerate()
                .filter(|&(i, _)| selected(i))
                .map(|(_, &x)| x)
                .collect()
        };
        relative_error(&pick(&gpu.data), &pick(&interp.data))
    } else {
        relative_error(&gpu.data, &interp.data)
    };
    // Element-wise: what a reader checks first when the norm-wise error is too large.
    let close = |g: f64, w: f64| {
        g == w || (g.is_nan() && w.is_nan()) || (g - w).abs() <= tolerance * w.abs().max(1.0)
    };
    let mut differ = 0;
    let mut first = None;
    for (flat, (&g, &w)) in gpu.data.iter().zip(&interp.data).enumerate() {
        if selected(flat) && !close(g, w) {
            differ += 1;
            if first.is_none() {
                first = Some(Difference {
                    index: unflatten(flat, &interp.shape),
                    gpu: g,
                    interpreter: w,
                });
            }
        }
    }
    Comparison {
        name: name.to_string(),
        dtype: interp.dtype,
        error,
        tolerance,
        widened,
        differ,
        first,
    }
}

/// The row-major multi-index of a flat position.
fn unflatten(mut flat: usize, shape: &[usize]) -> Vec<usize> {
    let mut index = vec![0; shape.len()];
    for (i, &n) in shape.iter().enumerate().rev() {
        if n > 0 {
            index[i] = flat % n;
            flat /= n;
        }
    }
    index
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(dtype: DType, shape: &[usize], data: &[f64]) -> HostTensor {
        HostTensor::from_f64(dtype, shape, data)
    }

    #[test]
    fn equal_tensors_pass_and_report_zero() {
        let a = t(DType::F32, &[2, 2], &[1.0, 2.0, 3.0, 4.0]);
        let c = compare(
            &["C".into()],
            &[("C".into(), a.clone())],
            &[("C".into(), a)],
            None,
            None,
        );
        assert_eq!(c.len(), 1);
        assert!(c[0].pass());
        assert_eq!(c[0].differ, 0);
        assert_eq!(
            c[0].line(),
            "C: relative error 0.000e0, tolerance 1e-4 (f32): pass"
        );
    }

    #[test]
    fn a_nan_fails_and_names_the_first_element() {
        let want = t(DType::F16, &[2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        let got = t(DType::F16, &[2, 3], &[1.0, 2.0, 3.0, 4.0, f64::NAN, 6.0]);
        let c = compare_one("Y", &got, &want, None, None);
        assert!(!c.pass());
        assert_eq!(c.differ, 1);
        let first = c.first.as_ref().expect("a first difference");
        assert_eq!((first.index.clone(), first.interpreter), (vec![1, 1], 5.0));
        assert!(first.gpu.is_nan());
        assert_eq!(
            c.line(),
            "Y: relative error inf, tolerance 5e-3 (f16): FAIL; 1 element(s) differ, the first \
             at [1, 1]: GPU NaN, interpreter 5"
        );
    }

    #[test]
    fn a_mask_compares_only_the_elements_a_sample_wrote() {
        let want = t(DType::F32, &[2, 2], &[1.0, 2.0, 3.0, 4.0]);
        let got = t(DType::F32, &[2, 2], &[1.0, 2.0, f64::NAN, 9.0]);
        let first_row = WriteMask(vec![true, true, false, false]);
        let c = compare_one("Y", &got, &want, Some(&first_row), None);
        assert!(c.pass(), "{}", c.line());
        assert_eq!(c.error, 0.0);
        let all = WriteMask(vec![true; 4]);
        let c = compare_one("Y", &got, &want, Some(&all), None);
        assert!(!c.pass());
        assert_eq!((c.differ, c.first.unwrap().index), (2, vec![1, 0]));
        let c = Coverage {
            grid_blocks: 683,
            corners: 2,
            edges: 0,
            random: 16,
        };
        assert_eq!(
            sample_line(&c, 1696),
            "checked 18 of 683 blocks (2 corners, 16 random), 1696 elements: the interpreter's \
             time budget of 3 s ends there"
        );
    }

    #[test]
    fn integers_must_match_exactly_and_floats_within_tolerance() {
        let want = t(DType::I32, &[3], &[1.0, 2.0, 3.0]);
        let got = t(DType::I32, &[3], &[1.0, 2.0, 4.0]);
        let c = compare_one("N", &got, &want, None, None);
        assert!(!c.pass());
        assert!(
            c.line().contains("tolerance 0 (exact) (i32): FAIL"),
            "{}",
            c.line()
        );
        let want = t(DType::F32, &[2], &[1.0, 1.0]);
        let got = t(DType::F32, &[2], &[1.0 + 1e-6, 1.0]);
        assert!(compare_one("X", &got, &want, None, None).pass());
        let got = t(DType::F32, &[2], &[1.01, 1.0]);
        assert!(!compare_one("X", &got, &want, None, None).pass());
    }

    #[test]
    fn outputs_missing_from_a_run_are_skipped_in_order() {
        let a = t(DType::F32, &[1], &[1.0]);
        let runs = [("A".to_string(), a.clone()), ("B".to_string(), a)];
        let c = compare(
            &["B".into(), "A".into(), "Z".into()],
            &runs,
            &runs,
            None,
            None,
        );
        let names: Vec<&str> = c.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["B", "A"]);
    }

    #[test]
    fn a_tf32_or_fp8_dot_widens_the_tolerance_of_float_outputs_only() {
        let want = t(DType::F32, &[2], &[1.0, 1.0]);
        let got = t(DType::F32, &[2], &[1.001, 1.0]);
        assert!(!compare_one("C", &got, &want, None, None).pass());
        let c = compare_one("C", &got, &want, None, Some("TF32 dot"));
        assert!(c.pass());
        assert_eq!(
            c.line(),
            "C: relative error 7.071e-4, tolerance 5e-3 (f32, TF32 dot): pass"
        );
        // Integers stay exact, and a looser type keeps its own tolerance.
        let n = t(DType::I32, &[1], &[3.0]);
        assert_eq!(
            compare_one("N", &n, &n, None, Some("fp8 dot")).tolerance,
            0.0
        );
        let h = t(DType::BF16, &[1], &[1.0]);
        let c = compare_one("H", &h, &h, None, Some("fp8 dot"));
        assert_eq!((c.tolerance, c.widened), (DType::BF16.tolerance(), None));
    }

    fn kernel(types: &str) -> Kernel {
        let src =
            "@grid(1)\nkernel g<TA = f32>(A: tensor<TA>[16, 16], C: tensor<f32>[16, 16]) {\n  \
                   let a = A[0 :+ 16, 0 :+ 16]\n  C[0 :+ 16, 0 :+ 16] = dot(a, a)\n}\n";
        let module = phobos_check::load(phobos_syntax::SourceFile::new("g.ph", src)).unwrap();
        let info = module.kernel(None).unwrap();
        let variant = info.variant(None, Some(types), None).unwrap();
        phobos_check::instantiate(&module, info, &variant).unwrap()
    }

    #[test]
    fn dots_on_tf32_and_fp8_are_found() {
        assert_eq!(reduced_precision_dot(&kernel("TA=f32")), None);
        assert_eq!(reduced_precision_dot(&kernel("TA=f16")), None);
        assert_eq!(reduced_precision_dot(&kernel("TA=tf32")), Some("TF32 dot"));
        assert_eq!(reduced_precision_dot(&kernel("TA=f8e4m3")), Some("fp8 dot"));
    }

    #[test]
    fn unflatten_is_row_major() {
        assert_eq!(unflatten(5, &[2, 3]), vec![1, 2]);
        assert_eq!(unflatten(0, &[4]), vec![0]);
        assert_eq!(unflatten(23, &[2, 3, 4]), vec![1, 2, 3]);
    }
}
