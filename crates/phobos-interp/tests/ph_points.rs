//! Property test over every example kernel: at random points of its space and random small
//! shapes, every point computes the same result. Inputs are small integers, so sums are exact in
//! any order and integer and sum-order-independent kernels must agree bit for bit; flash
//! attention (whose online softmax depends on the block shape) agrees within f16's tolerance.

mod common;

use common::ph::{example, points};
use phobos_interp::host::{random_tensor, shapes_for};
use phobos_interp::{Args, Config};
use phobos_ir::{relative_error, HostTensor, Kernel, ParamKind};
use phobos_syntax::SourceFile;
use proptest::prelude::*;
use proptest::test_runner::{Config as PtConfig, RngAlgorithm, TestRng, TestRunner};

struct Case {
    file: &'static str,
    types: Option<&'static str>,
    /// Runtime dims: name, inclusive range, and a multiple every value must be.
    dims: &'static [(&'static str, usize, usize, usize)],
    scalars: &'static [(&'static str, f64)],
    /// `None`: bit-identical; `Some(tol)`: relative error at most `tol`.
    tolerance: Option<f64>,
    cases: u32,
}

const CASES: &[Case] = &[
    Case {
        file: "gemm.ph",
        types: None,
        dims: &[("M", 1, 90, 1), ("N", 1, 90, 1), ("K", 1, 70, 1)],
        scalars: &[],
        tolerance: None,
        cases: 12,
    },
    Case {
        file: "gemm_typed.ph",
        types: Some("TA=f16,TB=f16,TC=f32"),
        dims: &[("M", 1, 80, 1), ("N", 1, 80, 1), ("K", 8, 64, 8)],
        scalars: &[],
        tolerance: None,
        cases: 6,
    },
    Case {
        file: "gemm_typed.ph",
        types: Some("TA=bf16,TB=bf16,TC=bf16"),
        dims: &[("M", 1, 80, 1), ("N", 1, 80, 1), ("K", 8, 64, 8)],
        scalars: &[],
        tolerance: None,
        cases: 6,
    },
    Case {
        file: "partial_sums.ph",
        types: None,
        dims: &[("N", 1, 3000, 1)],
        scalars: &[],
        tolerance: None,
        cases: 12,
    },
    Case {
        file: "saxpy.ph",
        types: None,
        dims: &[("N", 1, 5000, 1)],
        scalars: &[("a", 3.0)],
        tolerance: None,
        cases: 12,
    },
    Case {
        file: "softmax.ph",
        types: None,
        dims: &[("M", 1, 12, 1), ("N", 1, 256, 1)],
        scalars: &[],
        tolerance: None,
        cases: 12,
    },
    Case {
        file: "rms_norm.ph",
        types: None,
        dims: &[("M", 1, 9, 1), ("N", 1, 512, 1)],
        scalars: &[("eps", 1e-6)],
        tolerance: Some(1e-6),
        cases: 6,
    },
    Case {
        file: "layer_norm.ph",
        types: None,
        dims: &[("M", 1, 9, 1), ("N", 1, 512, 1)],
        scalars: &[("eps", 1e-5)],
        tolerance: Some(1e-6),
        cases: 6,
    },
    Case {
        file: "transpose.ph",
        types: None,
        dims: &[("M", 1, 100, 1), ("N", 1, 100, 1)],
        scalars: &[],
        tolerance: None,
        cases: 12,
    },
    Case {
        file: "flash_attention.ph",
        types: None,
        dims: &[("BH", 1, 2, 1), ("N", 1, 70, 1)],
        scalars: &[("scale", 0.125)],
        tolerance: Some(5e-3),
        cases: 6,
    },
    Case {
        file: "flash_attention_d128.ph",
        types: Some("T=bf16"),
        dims: &[("BH", 1, 2, 1), ("N", 1, 70, 1)],
        scalars: &[("scale", 0.088)],
        tolerance: Some(2e-2),
        cases: 2,
    },
];

/// Inputs of small integers (outputs too, so a skipped store shows) for a kernel and dims.
fn inputs(k: &Kernel, dims: &[(String, i64)], case: &Case, seed: u64) -> Args {
    let shapes = shapes_for(k, dims).unwrap();
    let mut args = Args::new();
    for (i, p) in k.params.iter().enumerate() {
        match &p.kind {
            ParamKind::Tensor { dtype, .. } => {
                let shape = &shapes.iter().find(|(n, _)| *n == p.name).unwrap().1;
                let ints = random_tensor(phobos_ir::DType::I8, shape, seed + i as u64);
                args = args.set(&p.name, HostTensor::from_f64(*dtype, shape, &ints.data));
            }
            ParamKind::Scalar { .. } => {
                let v = case.scalars.iter().find(|(n, _)| *n == p.name).unwrap().1;
                args = args.set(&p.name, v);
            }
        }
    }
    args
}

fn check(case: &Case) {
    let src = example(case.file);
    // Points a constant `@where` excludes (E0207) are outside the space, as for the tuner.
    let module = phobos_check::load(SourceFile::new(case.file, src.clone())).unwrap();
    let info = module.kernel(None).unwrap();
    let (pins, kernels): (Vec<String>, Vec<Kernel>) = points(&src, None)
        .into_iter()
        .filter_map(|p| {
            let variant = info.variant(Some(&p), case.types, None).unwrap();
            match phobos_check::instantiate(&module, info, &variant) {
                Ok(k) => Some((p, k)),
                Err(d) if d.iter().all(|d| d.code == "E0207") => None,
                Err(d) => panic!("{} at {p}: {d:?}", case.file),
            }
        })
        .unzip();
    let dims = case
        .dims
        .iter()
        .map(|&(_, lo, hi, mult)| (lo / mult..=hi / mult).prop_map(move |v| v * mult))
        .collect::<Vec<_>>();
    let strategy = (0..pins.len(), 0..pins.len(), dims, any::<u64>());
    let config = PtConfig {
        cases: case.cases,
        failure_persistence: None,
        ..PtConfig::default()
    };
    let mut runner =
        TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &[7; 32]));
    let result = runner.run(&strategy, |(pa, pb, extents, seed)| {
        let dims: Vec<(String, i64)> = case
            .dims
            .iter()
            .zip(&extents)
            .map(|(d, &v)| (d.0.to_string(), v as i64))
            .collect();
        let mut outs = Vec::new();
        for p in [pa, pb] {
            let k = &kernels[p];
            let seed = seed % 1_000_000;
            match phobos_interp::run(k, inputs(k, &dims, case, seed), &Config::default()) {
                Ok(out) => outs.push(out),
                // A point whose @where the problem violates is skipped, as the tuner does.
                Err(phobos_interp::Error::WhereViolated { .. }) => return Ok(()),
                Err(e) => panic!("{} at {}: {e}", case.file, pins[p]),
            }
        }
        for ((name, a), (_, b)) in outs[0].tensors.iter().zip(&outs[1].tensors) {
            let what = format!(
                "{} {name}: {} vs {} at {dims:?}",
                case.file, pins[pa], pins[pb]
            );
            match case.tolerance {
                None => {
                    let same = a
                        .data
                        .iter()
                        .zip(&b.data)
                        .all(|(x, y)| x.to_bits() == y.to_bits());
                    prop_assert!(same, "{}", what);
                }
                Some(tol) => {
                    let err = relative_error(&a.data, &b.data);
                    prop_assert!(err <= tol, "{}: {}", what, err);
                }
            }
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

#[test]
fn every_point_of_every_example_computes_the_same_result() {
    for case in CASES {
        check(case);
    }
}
