//! The host helpers: shapes from dims, seeded random tensors, which tensors a kernel writes.

mod common;

use common::build::*;
use phobos_interp::host::{random_tensor, shapes_for, stored_tensors, tensor_seed};
use phobos_interp::Error;
use phobos_ir::*;

fn kernel() -> Kernel {
    let mut b = KernelBuilder::new("attn", 32);
    b.tensor("Q", DType::F16, &["Nq", "64"]);
    b.tensor("K", DType::F16, &["Nk", "64"]);
    let o = b.tensor("O", DType::F32, &["Nq", "64"]);
    let mut k = b.finish(
        [int(1), int(1), int(1)],
        vec![store(
            o,
            vec![ati(int(0)), ati(int(0))],
            lit(1.0, DType::F32),
        )],
    );
    k.point = Point(vec![("D".into(), 64), ("BR".into(), 32)]);
    k
}

fn dims(list: &[(&str, i64)]) -> Vec<(String, i64)> {
    list.iter().map(|&(n, v)| (n.to_string(), v)).collect()
}

#[test]
fn shapes_come_from_dims_and_static_extents() {
    let k = kernel();
    let shapes = shapes_for(&k, &dims(&[("Nq", 100), ("Nk", 7), ("D", 64)])).unwrap();
    assert_eq!(
        shapes,
        vec![
            ("Q".to_string(), vec![100, 64]),
            ("K".to_string(), vec![7, 64]),
            ("O".to_string(), vec![100, 64]),
        ]
    );
}

#[test]
fn shapes_for_names_what_is_wrong() {
    let k = kernel();
    let err = shapes_for(&k, &dims(&[])).unwrap_err();
    assert_eq!(
        err,
        Error::MissingDims {
            names: vec!["Nq".into(), "Nk".into()]
        }
    );
    assert_eq!(err.to_string(), "no value for the runtime dims Nq, Nk");
    let err = shapes_for(&k, &dims(&[("Nq", 1), ("Nk", 1), ("M", 3)])).unwrap_err();
    assert_eq!(
        err.to_string(),
        "`M` is not a runtime dim of `attn` (runtime dims: Nq, Nk)"
    );
    let err = shapes_for(&k, &dims(&[("Nq", 1), ("Nk", 1), ("D", 32)])).unwrap_err();
    assert_eq!(
        err,
        Error::FixedDim {
            name: "D".into(),
            fixed: 64,
            given: 32
        }
    );
    let err = shapes_for(&k, &dims(&[("Nq", -1), ("Nk", 1)])).unwrap_err();
    assert!(matches!(err, Error::DimOutOfRange { extent: -1, .. }));
    let err = shapes_for(&k, &dims(&[("Nq", 1), ("Nq", 2), ("Nk", 1)])).unwrap_err();
    assert_eq!(err, Error::DuplicateDim { name: "Nq".into() });
}

#[test]
fn random_tensors_are_seeded_and_in_range() {
    for dtype in DType::ALL {
        let a = random_tensor(dtype, &[40, 25], 11);
        assert_eq!(a, random_tensor(dtype, &[40, 25], 11), "{dtype}");
        assert_ne!(a, random_tensor(dtype, &[40, 25], 12), "{dtype}");
        let (lo, hi) = match dtype {
            DType::Bool => (0.0, 1.0),
            t if t.is_signed_int() => (-4.0, 4.0),
            t if t.is_int() => (0.0, 4.0),
            _ => (-1.0, 1.0),
        };
        assert!(a.data.iter().all(|&x| (lo..=hi).contains(&x)), "{dtype}");
        // Every value is a value of its type, and the range is covered.
        assert!(a.data.iter().all(|&x| dtype.round(x) == x), "{dtype}");
        let min = a.data.iter().copied().fold(f64::MAX, f64::min);
        let max = a.data.iter().copied().fold(f64::MIN, f64::max);
        assert!(
            min < lo + 0.2 * (hi - lo) && max > hi - 0.2 * (hi - lo),
            "{dtype}: {min}..{max}"
        );
    }
}

#[test]
fn tensor_seeds_differ_by_name_and_seed() {
    assert_eq!(tensor_seed(0, "A"), tensor_seed(0, "A"));
    assert_ne!(tensor_seed(0, "A"), tensor_seed(0, "B"));
    assert_ne!(tensor_seed(0, "A"), tensor_seed(1, "A"));
}

#[test]
fn stored_tensors_are_the_outputs() {
    assert_eq!(stored_tensors(&kernel()), vec![2]);
}
