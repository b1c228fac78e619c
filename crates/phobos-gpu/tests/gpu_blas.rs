//! GPU tests of the cuBLAS reference GEMMs against a float64 CPU reference, on fresh random
//! inputs, with the output poisoned first. Run with `--ignored` on a GPU machine.

mod common;

use common::*;
use phobos_gpu::{Blas, DeviceTensor, Gpu, GpuError, Stats};
use phobos_ir::{relative_error, DType, HostTensor, MemOrder};

const ORDERS: [MemOrder; 2] = [MemOrder::RowMajor, MemOrder::ColMajor];

/// `A @ B` in float64 over the (already rounded) inputs, row-major.
fn reference(a: &HostTensor, b: &HostTensor) -> Vec<f64> {
    let (m, k, n) = (a.shape[0], a.shape[1], b.shape[1]);
    let mut c = vec![0.0; m * n];
    for i in 0..m {
        for p in 0..k {
            let av = a.data[i * k + p];
            for j in 0..n {
                c[i * n + j] += av * b.data[p * n + j];
            }
        }
    }
    c
}

struct Case {
    mnk: (usize, usize, usize),
    input: DType,
    output: DType,
    orders: (MemOrder, MemOrder, MemOrder),
    tf32: bool,
}

/// Runs one GEMM; returns the relative error against float64, or cuBLAS's refusal.
fn run(gpu: &Gpu, blas: &Blas, rng: &mut Rng, c: &Case) -> Result<f64, GpuError> {
    let (m, n, k) = c.mnk;
    let (lo, hi) = if c.input.is_int() {
        (-8.0, 8.0)
    } else {
        (-1.0, 1.0)
    };
    let a = rng.tensor(c.input, &[m, k], lo, hi);
    let b = rng.tensor(c.input, &[k, n], lo, hi);
    let da = DeviceTensor::upload(gpu, &a, c.orders.0)?;
    let db = DeviceTensor::upload(gpu, &b, c.orders.1)?;
    let dc = DeviceTensor::alloc(gpu, c.output, &[m, n], c.orders.2)?;
    dc.fill_poison()?;
    blas.gemm(&da, &db, &dc, c.tf32)?;
    let out = dc.download()?;
    Ok(relative_error(&out.data, &reference(&a, &b)))
}

fn check(gpu: &Gpu, blas: &Blas, rng: &mut Rng, c: &Case, tol: f64) {
    let err = run(gpu, blas, rng, c)
        .unwrap_or_else(|e| panic!("{:?} {}->{} {:?}: {e}", c.mnk, c.input, c.output, c.orders));
    eprintln!(
        "{:?} {} -> {} {:?}{}: relative error {err:.2e}",
        c.mnk,
        c.input,
        c.output,
        c.orders,
        if c.tf32 { " tf32" } else { "" }
    );
    assert!(
        err <= tol,
        "{:?} {}->{} {:?}: {err} > {tol}",
        c.mnk,
        c.input,
        c.output,
        c.orders
    );
}

const SHAPES: [(usize, usize, usize); 4] =
    [(128, 96, 64), (67, 45, 33), (1, 129, 7), (255, 3, 300)];

fn every_layout(
    gpu: &Gpu,
    blas: &Blas,
    rng: &mut Rng,
    input: DType,
    output: DType,
    tf32: bool,
    tol: f64,
) {
    for mnk in SHAPES {
        for ao in ORDERS {
            for bo in ORDERS {
                for co in ORDERS {
                    let case = Case {
                        mnk,
                        input,
                        output,
                        orders: (ao, bo, co),
                        tf32,
                    };
                    check(gpu, blas, rng, &case, tol);
                }
            }
        }
    }
}

#[test]
#[ignore = "needs a GPU"]
fn sgemm_matches_float64_in_every_layout() {
    let gpu = gpu();
    let blas = Blas::new(&gpu).unwrap();
    let mut rng = Rng::new("sgemm");
    every_layout(&gpu, &blas, &mut rng, DType::F32, DType::F32, false, 1e-5);
}

#[test]
#[ignore = "needs a GPU"]
fn tf32_and_f64_gemms() {
    let gpu = gpu();
    let blas = Blas::new(&gpu).unwrap();
    let mut rng = Rng::new("tf32");
    every_layout(
        &gpu,
        &blas,
        &mut rng,
        DType::F32,
        DType::F32,
        true,
        DType::Tf32.tolerance(),
    );
    every_layout(&gpu, &blas, &mut rng, DType::F64, DType::F64, false, 1e-12);
}

#[test]
#[ignore = "needs a GPU"]
fn hgemm_and_bf16_gemm_match_float64() {
    let gpu = gpu();
    let blas = Blas::new(&gpu).unwrap();
    let mut rng = Rng::new("hgemm");
    every_layout(&gpu, &blas, &mut rng, DType::F16, DType::F32, false, 1e-4);
    every_layout(
        &gpu,
        &blas,
        &mut rng,
        DType::F16,
        DType::F16,
        false,
        DType::F16.tolerance(),
    );
    every_layout(&gpu, &blas, &mut rng, DType::BF16, DType::F32, false, 1e-4);
    every_layout(
        &gpu,
        &blas,
        &mut rng,
        DType::BF16,
        DType::BF16,
        false,
        DType::BF16.tolerance(),
    );
}

#[test]
#[ignore = "needs a GPU"]
fn int8_gemm_is_exact_where_supported() {
    let gpu = gpu();
    let blas = Blas::new(&gpu).unwrap();
    let mut rng = Rng::new("int8");
    for mnk in [(128, 96, 64), (256, 256, 128)] {
        let case = Case {
            mnk,
            input: DType::I8,
            output: DType::I32,
            orders: (MemOrder::RowMajor, MemOrder::ColMajor, MemOrder::RowMajor),
            tf32: false,
        };
        match run(&gpu, &blas, &mut rng, &case) {
            Ok(err) => assert_eq!(err, 0.0, "{mnk:?}"),
            Err(GpuError::Blas(e)) if e.name == "CUBLAS_STATUS_NOT_SUPPORTED" => {
                eprintln!("int8 GEMM {mnk:?} not supported by this cuBLAS: {e}");
            }
            Err(e) => panic!("{mnk:?}: {e}"),
        }
    }
}

#[test]
#[ignore = "needs a GPU"]
fn fp8_cublaslt_gemm_256() {
    let gpu = gpu();
    if gpu.info().cc < (8, 9) {
        eprintln!(
            "fp8 needs compute capability 8.9 or later; this device is {:?}",
            gpu.info().cc
        );
        return;
    }
    let blas = Blas::new(&gpu).unwrap();
    let mut rng = Rng::new("fp8");
    // Hopper's fp8 tensor cores accumulate with fewer bits than fp32, hence 2e-3 for an f32
    // output. The non-square shape catches a swapped or transposed operand.
    for mnk in [(256, 256, 256), (128, 64, 96)] {
        for (output, tol) in [(DType::F32, 2e-3), (DType::BF16, 1e-2), (DType::F16, 5e-3)] {
            for co in ORDERS {
                let case = Case {
                    mnk,
                    input: DType::F8E4M3,
                    output,
                    orders: (MemOrder::RowMajor, MemOrder::ColMajor, co),
                    tf32: false,
                };
                check(&gpu, &blas, &mut rng, &case, tol);
            }
        }
    }
    // A layout fp8 cannot take is refused before cuBLASLt is called.
    let a = DeviceTensor::alloc(&gpu, DType::F8E4M3, &[64, 64], MemOrder::RowMajor).unwrap();
    let b = DeviceTensor::alloc(&gpu, DType::F8E4M3, &[64, 64], MemOrder::RowMajor).unwrap();
    let c = DeviceTensor::alloc(&gpu, DType::F32, &[64, 64], MemOrder::RowMajor).unwrap();
    assert!(matches!(
        blas.gemm(&a, &b, &c, false),
        Err(GpuError::Invalid(_))
    ));
}

#[test]
#[ignore = "needs a GPU"]
fn gemm_timing_through_events() {
    let gpu = gpu();
    let blas = Blas::new(&gpu).unwrap();
    let mut rng = Rng::new("gemm timing");
    let n = 2048;
    for (input, output, tf32) in [
        (DType::F32, DType::F32, false),
        (DType::F32, DType::F32, true),
        (DType::BF16, DType::BF16, false),
        (DType::F8E4M3, DType::BF16, false),
    ] {
        let a = DeviceTensor::upload(
            &gpu,
            &rng.tensor(input, &[n, n], -1.0, 1.0),
            MemOrder::RowMajor,
        )
        .unwrap();
        let b_order = if input == DType::F8E4M3 {
            MemOrder::ColMajor
        } else {
            MemOrder::RowMajor
        };
        let b =
            DeviceTensor::upload(&gpu, &rng.tensor(input, &[n, n], -1.0, 1.0), b_order).unwrap();
        let c = DeviceTensor::alloc(&gpu, output, &[n, n], MemOrder::RowMajor).unwrap();
        let times = gpu
            .time_launches(|| blas.gemm(&a, &b, &c, tf32), 5, 200.0, 10, 200, true)
            .unwrap();
        let s = Stats::of(&times).unwrap();
        let tflops = 2.0 * (n as f64).powi(3) / (s.median * 1e-3) / 1e12;
        eprintln!(
            "{input}{} GEMM {n}^3: median {:.3} ms ({} repeats, spread {:.1}%), {tflops:.1} TFLOP/s",
            if tf32 { " (tf32)" } else { "" },
            s.median,
            s.n,
            100.0 * s.rel_spread
        );
        assert!(tflops > 1.0 && tflops < 5000.0, "{tflops}");
    }
}

#[test]
#[ignore = "needs a GPU"]
fn gemm_shape_mismatch_is_refused() {
    let gpu = gpu();
    let blas = Blas::new(&gpu).unwrap();
    let a = DeviceTensor::alloc(&gpu, DType::F32, &[8, 4], MemOrder::RowMajor).unwrap();
    let b = DeviceTensor::alloc(&gpu, DType::F32, &[5, 8], MemOrder::RowMajor).unwrap();
    let c = DeviceTensor::alloc(&gpu, DType::F32, &[8, 8], MemOrder::RowMajor).unwrap();
    let e = blas.gemm(&a, &b, &c, false).unwrap_err();
    assert!(e.to_string().contains("do not chain"), "{e}");
}
