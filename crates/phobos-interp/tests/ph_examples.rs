//! The example kernels against straightforward host implementations.

mod common;

use common::ph::{example, kernel};
use common::{matmul, run_ok};
use phobos_interp::host::random_tensor;
use phobos_interp::Args;
use phobos_ir::{relative_error, DType, HostTensor};

fn sentinel(dtype: DType, shape: &[usize]) -> HostTensor {
    HostTensor::from_f64(dtype, shape, &vec![f64::NAN; shape.iter().product()])
}

#[test]
fn saxpy_matches_the_host() {
    for (pins, n) in [
        (None, 1000),
        (Some("BLOCK=4096"), 5000),
        (Some("BLOCK=512"), 1),
    ] {
        let k = kernel(&example("saxpy.ph"), None, pins, None);
        let x = random_tensor(DType::F32, &[n], 1);
        let y = random_tensor(DType::F32, &[n], 2);
        let a = 1.75;
        let out = run_ok(&k, Args::new().push(a).push(x.clone()).push(y.clone()));
        // a * x rounds to f32, then the sum does.
        let expected: Vec<f64> = (0..n)
            .map(|i| ((a as f32 * x.data[i] as f32) + y.data[i] as f32) as f64)
            .collect();
        assert_eq!(out.get("Y").unwrap().data, expected, "{pins:?} n={n}");
    }
}

/// f32, and 2-byte elements (`T=bf16`, `T=f16`): a transpose moves bits, so equality.
#[test]
fn transpose_matches_the_host() {
    for (pins, types, (m, n)) in [
        (None, None, (37, 53)),
        (Some("TILE_R=64 TILE_C=16"), None, (100, 7)),
        (Some("TILE_R=32 TILE_C=64"), None, (64, 128)),
        // Several tiles a block: the last block's tiles past M, a partial tile, whole tiles.
        (
            Some("TILE_R=64 TILE_C=16 TILES=4 THREADS=256"),
            None,
            (301, 77),
        ),
        (
            Some("TILE_R=16 TILE_C=32 TILES=2 THREADS=128"),
            None,
            (100, 45),
        ),
        (
            Some("TILE_R=32 TILE_C=32 TILES=4 THREADS=512"),
            None,
            (256, 64),
        ),
        // Two tiles in flight: past M in the last block, and a block of two tiles.
        (
            Some("TILE_R=64 TILE_C=16 TILES=4 THREADS=256 AHEAD=2"),
            None,
            (301, 77),
        ),
        (
            Some("TILE_R=16 TILE_C=32 TILES=2 THREADS=128 AHEAD=2"),
            None,
            (100, 45),
        ),
        // VEC_COPY=1 changes only the code generator's accesses: the same values.
        (
            Some("TILE_R=64 TILE_C=32 TILES=2 THREADS=512 AHEAD=2 VEC_COPY=1"),
            None,
            (131, 67),
        ),
        // 2-byte elements: 8-element groups, odd rows by the shifted loads.
        (None, Some("T=bf16"), (37, 53)),
        (
            Some("TILE_R=64 TILE_C=32 TILES=2 THREADS=512 AHEAD=2"),
            Some("T=bf16"),
            (131, 67),
        ),
        (
            Some("TILE_R=128 TILE_C=64 TILES=1 THREADS=1024 STORE_LINES=1"),
            Some("T=f16"),
            (201, 77),
        ),
    ] {
        let dt = match types {
            None => DType::F32,
            Some("T=bf16") => DType::BF16,
            Some(_) => DType::F16,
        };
        let k = kernel(&example("transpose.ph"), None, pins, types);
        let x = random_tensor(dt, &[m, n], 3);
        let out = run_ok(&k, Args::new().push(x.clone()).push(sentinel(dt, &[n, m])));
        let y = out.get("Y").unwrap();
        assert_eq!(y.dtype, dt);
        for i in 0..m {
            for j in 0..n {
                assert_eq!(
                    y.data[j * m + i],
                    x.data[i * n + j],
                    "{pins:?} {types:?} ({i}, {j})"
                );
            }
        }
    }
}

fn host_softmax(x: &HostTensor) -> Vec<f64> {
    let (m, n) = (x.shape[0], x.shape[1]);
    let mut out = vec![0.0; m * n];
    for r in 0..m {
        let row = &x.data[r * n..(r + 1) * n];
        let max = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let e: Vec<f64> = row.iter().map(|v| (v - max).exp()).collect();
        let s: f64 = e.iter().sum();
        for c in 0..n {
            out[r * n + c] = e[c] / s;
        }
    }
    out
}

/// f32 rows, and 2-byte rows (`T=bf16`, `T=f16`: computed in f32, each output rounded once, so
/// within the output type's half unit).
#[test]
fn softmax_matches_the_host() {
    for (pins, types, (m, n)) in [
        (None, None, (5, 200)),
        (Some("ROWS=8 BLOCK=256"), None, (19, 256)),
        (Some("ROWS=2 BLOCK=1024"), None, (3, 1000)),
        (None, Some("T=bf16"), (5, 200)),
        (Some("ROWS=8 BLOCK=256"), Some("T=bf16"), (19, 250)),
        (
            Some("ROWS=1 BLOCK=8192 THREADS=512"),
            Some("T=bf16"),
            (2, 8000),
        ),
        (Some("ROWS=2 BLOCK=1024"), Some("T=f16"), (3, 1001)),
    ] {
        let (dt, tol) = match types {
            None => (DType::F32, 1e-6),
            Some("T=bf16") => (DType::BF16, 8e-3),
            Some(_) => (DType::F16, 1e-3),
        };
        let k = kernel(&example("softmax.ph"), None, pins, types);
        let x = random_tensor(DType::F32, &[m, n], 4);
        let x = HostTensor::from_f64(
            dt,
            &[m, n],
            &x.data.iter().map(|v| v * 8.0).collect::<Vec<_>>(),
        );
        let out = run_ok(&k, Args::new().push(x.clone()).push(sentinel(dt, &[m, n])));
        let y = out.get("Y").unwrap();
        assert_eq!(y.dtype, dt);
        let err = relative_error(&y.data, &host_softmax(&x));
        assert!(err < tol, "{pins:?} {types:?} {m}x{n}: {err}");
    }
}

#[test]
fn softmax_rejects_rows_wider_than_the_block() {
    let k = kernel(&example("softmax.ph"), None, None, None);
    let x = random_tensor(DType::F32, &[2, 300], 4);
    let err = phobos_interp::run(
        &k,
        Args::new()
            .push(x)
            .push(HostTensor::zeros(DType::F32, &[2, 300])),
        &Default::default(),
    )
    .unwrap_err();
    assert!(
        matches!(err, phobos_interp::Error::WhereViolated { .. }),
        "{err}"
    );
    assert!(
        err.to_string().contains("N) <= 256") || err.to_string().contains("N <= 256"),
        "{err}"
    );
}

/// softmax(Q Kᵀ scale) V per batch-head in f64, optionally causal.
fn host_attention(
    q: &HostTensor,
    k: &HostTensor,
    v: &HostTensor,
    scale: f64,
    causal: bool,
) -> Vec<f64> {
    let (bh, n, d) = (q.shape[0], q.shape[1], q.shape[2]);
    let mut out = vec![0.0; bh * n * d];
    for b in 0..bh {
        let at = |t: &HostTensor, i: usize, j: usize| t.data[(b * n + i) * d + j];
        for i in 0..n {
            let s: Vec<f64> = (0..n)
                .map(|j| {
                    if causal && j > i {
                        f64::NEG_INFINITY
                    } else {
                        (0..d).map(|x| at(q, i, x) * at(k, j, x)).sum::<f64>() * scale
                    }
                })
                .collect();
            let max = s.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let p: Vec<f64> = s.iter().map(|x| (x - max).exp()).collect();
            let l: f64 = p.iter().sum();
            for x in 0..d {
                out[(b * n + i) * d + x] = (0..n).map(|j| p[j] * at(v, j, x)).sum::<f64>() / l;
            }
        }
    }
    out
}

#[test]
fn flash_attention_matches_the_host() {
    let src = example("flash_attention.ph");
    for (pins, causal, (bh, n)) in [
        (None, false, (2, 80)),
        (Some("BR=64 BC=32"), false, (1, 100)),
        (Some("BR=32 BC=128"), false, (3, 33)),
        (Some("CAUSAL=1"), true, (2, 70)),
    ] {
        let k = kernel(&src, None, pins, None);
        let shape = [bh, n, 64];
        let q = random_tensor(DType::F16, &shape, 5);
        let kk = random_tensor(DType::F16, &shape, 6);
        let v = random_tensor(DType::F16, &shape, 7);
        let scale = 0.125;
        let out = run_ok(
            &k,
            Args::new()
                .set("Q", q.clone())
                .set("K", kk.clone())
                .set("V", v.clone())
                .set("O", sentinel(DType::F16, &shape))
                .set("scale", scale),
        );
        let err = relative_error(
            &out.get("O").unwrap().data,
            &host_attention(&q, &kk, &v, scale, causal),
        );
        assert!(err < DType::F16.tolerance(), "{pins:?} {bh}x{n}: {err}");
    }
}

#[test]
fn flash_attention_d128_matches_the_host_in_f16_and_bf16() {
    let src = example("flash_attention_d128.ph");
    for (dt, pins, causal, (bh, n)) in [
        (DType::F16, None, false, (2, 80)),
        (DType::F16, Some("BR=128 BC=64 CAUSAL=1"), true, (1, 150)),
        (DType::BF16, Some("BR=64 BC=128"), false, (2, 33)),
        (DType::BF16, Some("CAUSAL=1"), true, (2, 70)),
    ] {
        let types = format!("T={}", if dt == DType::F16 { "f16" } else { "bf16" });
        let k = kernel(&src, None, pins, Some(&types));
        let shape = [bh, n, 128];
        let q = random_tensor(dt, &shape, 15);
        let kk = random_tensor(dt, &shape, 16);
        let v = random_tensor(dt, &shape, 17);
        let scale = 0.088;
        let out = run_ok(
            &k,
            Args::new()
                .set("Q", q.clone())
                .set("K", kk.clone())
                .set("V", v.clone())
                .set("O", sentinel(dt, &shape))
                .set("scale", scale),
        );
        let err = relative_error(
            &out.get("O").unwrap().data,
            &host_attention(&q, &kk, &v, scale, causal),
        );
        assert!(err < dt.tolerance(), "{types} {pins:?} {bh}x{n}: {err}");
    }
}

#[test]
fn gemm_typed_accumulates_in_f32_for_every_input_type() {
    let src = example("gemm_typed.ph");
    let (m, n, kk) = (70, 40, 48);
    for types in [
        "TA=f16,TB=f16,TC=f32",
        "TA=bf16,TB=bf16,TC=bf16",
        "TA=f32,TB=f32,TC=f32",
        "TA=f8e4m3,TB=f8e4m3,TC=f16",
    ] {
        let k = kernel(&src, None, None, Some(types));
        let dt = |name: &str| {
            DType::parse(
                types
                    .split(',')
                    .find_map(|p| p.strip_prefix(&format!("{name}=")))
                    .unwrap(),
            )
            .unwrap()
        };
        let a = random_tensor(dt("TA"), &[m, kk], 8);
        let b = random_tensor(dt("TB"), &[kk, n], 9);
        let out = run_ok(
            &k,
            Args::new()
                .push(a.clone())
                .push(b.clone())
                .push(sentinel(dt("TC"), &[m, n])),
        );
        let c = out.get("C").unwrap();
        assert_eq!(c.dtype, dt("TC"));
        // Products of the rounded inputs, summed in f32 and converted once: within f32 of the
        // exact sum, then one rounding to TC.
        let err = relative_error(&c.data, &matmul(&a, &b));
        assert!(err < dt("TC").tolerance().max(1e-5), "{types}: {err}");
    }
}

/// erf by Simpson's rule on 2/sqrt(pi) exp(-t^2) (independent of the interpreter's series).
fn host_erf(x: f64) -> f64 {
    let n = 2000;
    let h = x / n as f64;
    let f = |t: f64| (-t * t).exp();
    let mut s = f(0.0) + f(x);
    for i in 1..n {
        s += f(i as f64 * h) * if i % 2 == 1 { 4.0 } else { 2.0 };
    }
    s * h / 3.0 * 2.0 / std::f64::consts::PI.sqrt()
}

/// Rounds half to even, as numpy.round does.
fn host_round(x: f64) -> f64 {
    let r = x.round();
    if (x - x.trunc()).abs() == 0.5 {
        2.0 * (x / 2.0).round()
    } else {
        r
    }
}

#[test]
fn activations_match_the_host() {
    for (pins, n) in [(None, 1000), (Some("BLOCK=1024"), 3000)] {
        let k = kernel(&example("activations.ph"), None, pins, None);
        // [-4, 4], with quarter steps included so floor, ceil and round meet exact halves.
        let mut x = random_tensor(DType::F32, &[n], 9);
        for (i, v) in x.data.iter_mut().enumerate() {
            *v = if i % 7 == 0 {
                (i % 33) as f64 / 8.0 - 2.0
            } else {
                *v * 4.0
            };
        }
        let mut args = Args::new().push(x.clone());
        for _ in 0..4 {
            args = args.push(sentinel(DType::F32, &[n]));
        }
        let out = run_ok(&k, args.push(sentinel(DType::F16, &[n])));
        let xs = &x.data;
        let sig = |v: f64| 1.0 / (1.0 + (-v).exp());
        let host = |f: &dyn Fn(f64) -> f64| xs.iter().map(|&v| f(v)).collect::<Vec<f64>>();
        let expect = [
            ("G", host(&|v| 0.5 * v * (1.0 + host_erf(v / 2f64.sqrt())))),
            ("S", host(&|v| v * sig(v) + v.sin() * v.cos())),
            (
                "P",
                host(&|v| {
                    (1.0 + v.exp2()).log2() + v.abs().ln_1p() - (-v.abs()).exp_m1()
                        + v.abs().powf(1.5)
                }),
            ),
            (
                "R",
                host(&|v| (4.0 * v).floor() + (4.0 * v).ceil() + host_round(4.0 * v)),
            ),
        ];
        for (name, want) in expect {
            let err = relative_error(&out.get(name).unwrap().data, &want);
            assert!(err < 1e-6, "{pins:?} {name}: {err}");
        }
        let h = host(&|v| sig(v) + host_erf(v));
        let err = relative_error(&out.get("H").unwrap().data, &h);
        assert!(err < 2e-3, "{pins:?} H: {err}");
    }
}

#[test]
fn row_stats_match_the_host() {
    for (pins, (m, n)) in [
        (None, (5, 50)),
        (Some("ROWS=8 BLOCK=256"), (19, 256)),
        (Some("ROWS=8 BLOCK=64"), (3, 1)),
    ] {
        let k = kernel(&example("row_stats.ph"), None, pins, None);
        let x = random_tensor(DType::F32, &[m, n], 11);
        let out = run_ok(
            &k,
            Args::new()
                .push(x.clone())
                .push(sentinel(DType::F32, &[m]))
                .push(sentinel(DType::F32, &[m]))
                .push(sentinel(DType::F32, &[m, n])),
        );
        let rows: Vec<&[f64]> = x.data.chunks(n).collect();
        let sums: Vec<f64> = rows.iter().map(|r| r.iter().sum()).collect();
        let maxes: Vec<f64> = rows
            .iter()
            .map(|r| r.iter().copied().fold(f64::NEG_INFINITY, f64::max))
            .collect();
        let err = relative_error(&out.get("S").unwrap().data, &sums);
        assert!(err < 1e-6, "{pins:?} {m}x{n}: S {err}");
        assert_eq!(out.get("MX").unwrap().data, maxes, "{pins:?} {m}x{n}");
        let z: Vec<f64> = (0..m * n)
            .map(|i| (x.data[i] as f32 - (i / n) as f32) as f64)
            .collect();
        assert_eq!(out.get("Z").unwrap().data, z, "{pins:?} {m}x{n}");
    }
}

#[test]
fn dropout_keeps_what_philox_says() {
    use phobos_ir::eval::{philox, uint_to_uniform};
    for (pins, n, seed) in [(None, 1000, 3), (Some("BLOCK=1024"), 3000, 123_456)] {
        let k = kernel(&example("dropout.ph"), None, pins, None);
        let x = random_tensor(DType::F32, &[n], 12);
        let p = 0.25;
        let out = run_ok(
            &k,
            Args::new()
                .push(x.clone())
                .push(sentinel(DType::F32, &[n]))
                .push(sentinel(DType::F32, &[n]))
                .push(p)
                .push(seed as f64),
        );
        let y = &out.get("Y").unwrap().data;
        let mut kept = 0;
        for (i, (&yi, &xi)) in y.iter().zip(&x.data).enumerate() {
            let r = uint_to_uniform(philox(seed, i as u32)[0]);
            let want = if r > p as f32 {
                kept += 1;
                (xi as f32 / (1.0f32 - p as f32)) as f64
            } else {
                0.0
            };
            assert_eq!(yi, want, "{pins:?} element {i}");
        }
        // About 1 - p of the elements survive.
        let frac = kept as f64 / n as f64;
        assert!((frac - 0.75).abs() < 0.05, "{pins:?}: kept {frac}");
        // The noise is a standard normal times p.
        let z = &out.get("Z").unwrap().data;
        let noise: Vec<f64> = (0..n).map(|i| (z[i] - x.data[i]) / p).collect();
        let mean = noise.iter().sum::<f64>() / n as f64;
        let var = noise.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n as f64;
        assert!(
            mean.abs() < 0.1 && (var - 1.0).abs() < 0.15,
            "{pins:?}: {mean} {var}"
        );
    }
}

#[test]
fn layer_norm_matches_the_host() {
    for (pins, (m, n)) in [(None, (5, 200)), (Some("ROWS=4 BLOCK=1024"), (9, 1000))] {
        let k = kernel(&example("layer_norm_tiles.ph"), None, pins, None);
        let x = random_tensor(DType::F32, &[m, n], 21);
        let w = random_tensor(DType::F32, &[n], 22);
        let b = random_tensor(DType::F32, &[n], 23);
        let eps = 1e-5;
        let out = run_ok(
            &k,
            Args::new()
                .push(x.clone())
                .push(w.clone())
                .push(b.clone())
                .push(sentinel(DType::F32, &[m, n]))
                .push(sentinel(DType::F32, &[m]))
                .push(sentinel(DType::F32, &[m]))
                .push(eps),
        );
        let (mut y, mut means, mut rstds) = (vec![0.0; m * n], vec![0.0; m], vec![0.0; m]);
        for r in 0..m {
            let row = &x.data[r * n..(r + 1) * n];
            let mean = row.iter().sum::<f64>() / n as f64;
            let var = row.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n as f64;
            let rstd = 1.0 / (var + eps).sqrt();
            for c in 0..n {
                y[r * n + c] = (row[c] - mean) * rstd * w.data[c] + b.data[c];
            }
            (means[r], rstds[r]) = (mean, rstd);
        }
        for (name, want) in [("Y", y), ("Mean", means), ("Rstd", rstds)] {
            let err = relative_error(&out.get(name).unwrap().data, &want);
            assert!(err < 1e-5, "{pins:?} {m}x{n} {name}: {err}");
        }
    }
}

#[test]
fn matmul_leaky_relu_matches_the_host() {
    for (pins, (m, n, kk)) in [(None, (77, 45, 67)), (Some("TILE_K=32"), (64, 128, 96))] {
        let k = kernel(&example("matmul_leaky_relu.ph"), None, pins, None);
        let a = random_tensor(DType::F16, &[m, kk], 31);
        let b = random_tensor(DType::F16, &[kk, n], 32);
        let out = run_ok(
            &k,
            Args::new()
                .push(a.clone())
                .push(b.clone())
                .push(sentinel(DType::F16, &[m, n])),
        );
        let want: Vec<f64> = matmul(&a, &b)
            .into_iter()
            .map(|v| if v >= 0.0 { v } else { 0.01 * v })
            .collect();
        let err = relative_error(&out.get("C").unwrap().data, &want);
        assert!(err < 1e-3, "{pins:?} {m}x{n}x{kk}: {err}");
    }
}
