//! The interpreter computes the right product for every element type and layout the GEMM
//! examples take: each case is bound through `workflow::bind` (as the tuner binds a sizes-file
//! entry), run on small ragged shapes, and compared with a float64 host matmul of the same
//! inputs within the output type's tolerance.

use phobos_check::{instantiate, load, Module};
use phobos_interp::{Arg, Args, Config};
use phobos_ir::{relative_error, DType, MemOrder, Point};
use phobos_syntax::SourceFile;
use phobos_tune::space::Pinned;
use phobos_tune::verify::{make_args, tolerance};
use phobos_tune::workflow::{bind, GemmProblem, Operands, TensorNames};
use phobos_tune::ArgValue;
use std::path::PathBuf;

fn module(name: &str) -> Module {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let dir = if dir.exists() {
        dir
    } else {
        PathBuf::from("crates/phobos-cli")
    };
    let path = dir.join("../../examples").join(name);
    let text = std::fs::read_to_string(&path).unwrap();
    load(SourceFile::new(name, text)).unwrap_or_else(|d| panic!("{d:?}"))
}

struct Case {
    a: DType,
    b: DType,
    c: DType,
    col_a: bool,
    col_b: bool,
    dims: (i64, i64, i64),
}

/// `C = A B` in float64 from the inputs as stored (already rounded to their types).
fn host_matmul(a: &[f64], b: &[f64], dims: (usize, usize, usize)) -> Vec<f64> {
    host_matmul_k(a, b, dims, dims.2)
}

/// The same over only the first `upto` steps of k.
fn host_matmul_k(a: &[f64], b: &[f64], (m, n, k): (usize, usize, usize), upto: usize) -> Vec<f64> {
    let mut c = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            c[i * n + j] = (0..upto).map(|p| a[i * k + p] * b[p * n + j]).sum();
        }
    }
    c
}

/// Runs one case on the interpreter; the relative error against the host matmul and the
/// tolerance, or why the kernel refuses the case.
fn run(m: &Module, pins: &str, case: &Case) -> Result<(f64, f64), String> {
    let info = m.kernel(None)?;
    let order = |c: bool| {
        Some(if c {
            MemOrder::ColMajor
        } else {
            MemOrder::RowMajor
        })
    };
    let (dm, dn, dk) = case.dims;
    let gemm = GemmProblem {
        m: dm,
        n: dn,
        k: dk,
        operands: Operands {
            dtype_a: Some(case.a),
            dtype_b: Some(case.b),
            dtype_c: Some(case.c),
            order_a: order(case.col_a),
            order_b: order(case.col_b),
        },
    };
    let binding = bind(info, &gemm, &TensorNames::default()).map_err(|e| e.to_string())?;
    let pins = phobos_check::parse_pins(pins).map_err(|e| e.to_string())?;
    let point: Point = Pinned::new(&info.space, &pins)
        .map_err(|e| e.to_string())?
        .default_point();
    let variant = info
        .variant(
            None,
            Some(&binding.types_text()),
            Some(&binding.layouts_text()),
        )
        .map_err(|e| e.to_string())?
        .at(point);
    let kernel = instantiate(m, info, &variant).map_err(|d| {
        d.iter()
            .map(|d| format!("error[{}]: {}", d.code, d.message))
            .collect::<Vec<_>>()
            .join("; ")
    })?;
    let problem = binding.to_problem();
    let mut args = make_args(&kernel, &problem, 11, true)?;
    let mut bound = Args::new();
    for a in &args {
        bound = match a {
            ArgValue::Tensor(t) => bound.push(Arg::Tensor(t.clone())),
            ArgValue::Scalar(v) => bound.push(Arg::Scalar(*v)),
        };
    }
    let out = phobos_interp::run(&kernel, bound, &Config::default()).map_err(|e| e.to_string())?;
    let c_out = out.get("C").ok_or("no output C")?.clone();
    if let ArgValue::Tensor(t) = &mut args[2] {
        *t = c_out.clone();
    }
    let t = |i: usize| args[i].tensor().unwrap().data.clone();
    let (a, b) = (t(0), t(1));
    let dims = (dm as usize, dn as usize, dk as usize);
    let reference: Vec<f64> = host_matmul(&a, &b, dims)
        .into_iter()
        .map(|x| case.c.round(x))
        .collect();
    assert_eq!(c_out.dtype, case.c);
    // A control: the same comparison notices a product over only the first half of k.
    let short = host_matmul_k(&a, &b, dims, dims.2 / 2);
    let tol = tolerance(&kernel, case.c);
    assert!(
        relative_error(&c_out.data, &short) > tol,
        "the comparison must be able to fail"
    );
    Ok((relative_error(&c_out.data, &reference), tol))
}

const LAYOUTS: [(bool, bool); 4] = [(false, false), (true, false), (false, true), (true, true)];

#[test]
fn gemm_typed_is_right_for_every_element_type_and_layout() {
    let m = module("gemm_typed.ph");
    let mut cases = 0;
    for t in [
        DType::F16,
        DType::BF16,
        DType::F32,
        DType::Tf32,
        DType::F8E4M3,
        DType::F8E5M2,
    ] {
        for c in [DType::F32, DType::F16, DType::BF16] {
            for (col_a, col_b) in LAYOUTS {
                for (pins, dims) in [
                    ("TILE_M=64 TILE_N=64 TILE_K=32", (37, 45, 24)),
                    ("TILE_M=128 TILE_N=64 TILE_K=64", (70, 21, 72)),
                ] {
                    let case = Case {
                        a: t,
                        b: t,
                        c,
                        col_a,
                        col_b,
                        dims,
                    };
                    let (err, tol) = run(&m, pins, &case)
                        .unwrap_or_else(|e| panic!("{t} -> {c}, col {col_a}/{col_b}, {pins}: {e}"));
                    assert!(
                        err <= tol,
                        "{t} -> {c}, col {col_a}/{col_b}, {pins}: error {err:.3e} over {tol:.1e}"
                    );
                    cases += 1;
                }
            }
        }
    }
    assert_eq!(cases, 144);
}

#[test]
fn gemm_typed_refuses_what_its_dot_cannot_take() {
    let m = module("gemm_typed.ph");
    let pins = "TILE_M=64 TILE_N=64 TILE_K=32";
    // i8 dots accumulate in i32, which the kernel's f32 accumulator does not take implicitly.
    let i8 = Case {
        a: DType::I8,
        b: DType::I8,
        c: DType::F32,
        col_a: false,
        col_b: false,
        dims: (16, 16, 16),
    };
    let e = run(&m, pins, &i8).unwrap_err();
    assert!(e.contains("error[E"), "{e}");
    // One dot takes operands of one type.
    let mixed = Case {
        b: DType::BF16,
        a: DType::F16,
        ..i8
    };
    let e = run(&m, pins, &mixed).unwrap_err();
    assert!(e.contains("different element types"), "{e}");
}

#[test]
fn gemm_tuned_is_right_for_every_element_type_and_layout_int8_included() {
    let m = module("gemm_tuned.ph");
    let pins = "TILE_M=32 TILE_N=32 TILE_K=16 STAGES=4 GROUP_M=1 SPLIT_K=2";
    let mut cases = 0;
    for t in [
        DType::F16,
        DType::BF16,
        DType::F32,
        DType::Tf32,
        DType::F8E4M3,
        DType::F8E5M2,
        DType::I8,
    ] {
        let outs: &[DType] = if t == DType::I8 {
            &[DType::F32, DType::I32]
        } else {
            &[DType::F32, DType::BF16]
        };
        for &c in outs {
            for (col_a, col_b) in LAYOUTS {
                let case = Case {
                    a: t,
                    b: t,
                    c,
                    col_a,
                    col_b,
                    dims: (37, 45, 64),
                };
                let (err, tol) = run(&m, pins, &case)
                    .unwrap_or_else(|e| panic!("{t} -> {c}, col {col_a}/{col_b}: {e}"));
                assert!(
                    err <= tol,
                    "{t} -> {c}, col {col_a}/{col_b}: error {err:.3e} over {tol:.1e}"
                );
                cases += 1;
            }
        }
    }
    assert_eq!(cases, 56);
}

/// GROUP_M and SPLIT_K do not change what the body computes on the interpreter: every value
/// gives the same C, bit for bit.
#[test]
fn group_m_and_split_k_leave_the_interpreters_result_unchanged() {
    let m = module("gemm_tuned.ph");
    let case = Case {
        a: DType::BF16,
        b: DType::BF16,
        c: DType::F32,
        col_a: false,
        col_b: true,
        // Within @where for every GROUP_M (8 * 32 <= M) and SPLIT_K (64 % (4 * 16) == 0).
        dims: (261, 72, 64),
    };
    let base = run(&m, "TILE_M=32 TILE_N=32 TILE_K=16", &case).unwrap();
    for g in [1, 4, 8] {
        for s in [1, 2, 4] {
            let pins = format!("TILE_M=32 TILE_N=32 TILE_K=16 GROUP_M={g} SPLIT_K={s}");
            assert_eq!(run(&m, &pins, &case).unwrap(), base, "{pins}");
        }
    }
}
