//! The seed kernels from examples/*.ph: GEMM at several points and on ragged shapes against a
//! float64 matmul; partial sums bit-identical for every unroll factor and equal to the host sum.

mod common;

use common::ph::{example, kernel};
use common::{matmul, run_ok};
use phobos_interp::host::random_tensor;
use phobos_interp::Args;
use phobos_ir::{relative_error, DType, HostTensor};

fn check_gemm(pins: Option<&str>, (m, n, k): (usize, usize, usize)) {
    let kern = kernel(&example("gemm.ph"), Some("gemm"), pins, None);
    let a = random_tensor(DType::F32, &[m, k], 1);
    let b = random_tensor(DType::F32, &[k, n], 2);
    // A sentinel in C catches skipped stores.
    let c = HostTensor::from_f64(DType::F32, &[m, n], &vec![f64::NAN; m * n]);
    let out = run_ok(
        &kern,
        Args::new()
            .set("A", a.clone())
            .set("B", b.clone())
            .set("C", c),
    );
    let err = relative_error(&out.get("C").unwrap().data, &matmul(&a, &b));
    assert!(err < 1e-5, "{pins:?} on {m}x{n}x{k}: relative error {err}");
}

#[test]
fn gemm_matches_a_float64_matmul_at_several_points() {
    for pins in [
        None,
        Some("TILE_M=128 TILE_N=64 TILE_K=32"),
        Some("TILE_M=64 TILE_N=128 TILE_K=16"),
        Some("TILE_M=32 TILE_N=128 TILE_K=32"),
    ] {
        check_gemm(pins, (128, 96, 80));
    }
}

#[test]
fn gemm_handles_ragged_shapes() {
    for pins in [
        None,
        Some("TILE_M=128 TILE_N=64 TILE_K=32"),
        Some("TILE_M=64 TILE_N=32 TILE_K=16"),
    ] {
        check_gemm(pins, (37, 53, 29));
        check_gemm(pins, (1, 1, 1));
        check_gemm(pins, (130, 33, 9));
    }
}

#[test]
fn partial_sums_are_bit_identical_for_every_unroll_and_equal_the_host_sum() {
    let src = example("partial_sums.ph");
    for n in [1000usize, 4096 + 3] {
        let x = random_tensor(DType::F32, &[1, n], 7);
        // The host sum in the kernel's order: thread t adds X[t], X[t + 256], ... in f32.
        let expected: Vec<u32> = (0..256)
            .map(|t| {
                (t..n)
                    .step_by(256)
                    .fold(0f32, |s, i| s + x.data[i] as f32)
                    .to_bits()
            })
            .collect();
        for u in [1, 2, 4, 8] {
            let kern = kernel(&src, None, Some(&format!("U={u}")), None);
            let o = HostTensor::zeros(DType::F32, &[1, 256]);
            let out = run_ok(&kern, Args::new().push(x.clone()).push(o));
            let got: Vec<u32> = out
                .get("O")
                .unwrap()
                .data
                .iter()
                .map(|&v| (v as f32).to_bits())
                .collect();
            assert_eq!(got, expected, "U={u} N={n}");
        }
    }
}
