//! Atomics: their semantics on small kernels, and the examples that use them (histogram, layer
//! norm backward, attention with the log-sum-exp) against host references.

mod common;

use common::ph::{example, kernel};
use common::run_ok;
use phobos_interp::host::random_tensor;
use phobos_interp::Args;
use phobos_ir::{relative_error, DType, HostTensor};

fn zeros(dtype: DType, shape: &[usize]) -> HostTensor {
    HostTensor::zeros(dtype, shape)
}

fn filled(dtype: DType, shape: &[usize], v: f64) -> HostTensor {
    HostTensor::from_f64(dtype, shape, &vec![v; shape.iter().product()])
}

#[test]
fn element_atomics_return_each_threads_old_value() {
    // Every thread adds its index + 1 to one counter, in thread order: thread t sees the sum of
    // 1..=t before its own addition; max and min keep the extremes; out-of-bounds does nothing
    // and reads 0.
    let src = "@launch(64)\n\
kernel k(C: tensor<i32>[2], Old: tensor<i32>[64], F: tensor<f32>[2], G: tensor<u32>[1]) {\n\
  let t = ctx.thread\n\
  let old = atomic_add(C[0], t + 1)\n\
  Old[t] = old\n\
  atomic_max(F[0], f32(t) - 10.0)\n\
  atomic_min(F[1], f32(t) - 10.0)\n\
  var outside = atomic_add(C[5 + t], 1)\n\
  C[1] = outside\n\
  atomic_min(G[0], u32(t + 3))\n\
}\n";
    let k = kernel(src, None, None, None);
    let out = run_ok(
        &k,
        Args::new()
            .push(filled(DType::I32, &[2], 100.0))
            .push(zeros(DType::I32, &[64]))
            .push(HostTensor::from_f64(DType::F32, &[2], &[0.5, 0.5]))
            .push(filled(DType::U32, &[1], 50.0)),
    );
    let c = &out.get("C").unwrap().data;
    // 100 + (1 + .. + 64); C[1] = the old value of an element outside C, 0.
    assert_eq!(c, &vec![100.0 + (64.0 * 65.0 / 2.0), 0.0]);
    let old = &out.get("Old").unwrap().data;
    for (t, &o) in old.iter().enumerate() {
        let t = t as f64;
        assert_eq!(o, 100.0 + t * (t + 1.0) / 2.0, "thread {t}");
    }
    assert_eq!(out.get("F").unwrap().data, vec![53.0, -10.0]);
    assert_eq!(out.get("G").unwrap().data, vec![3.0]);
}

#[test]
fn integer_atomics_wrap_and_floats_round_to_their_type() {
    let src = "@launch(32)\n\
kernel k(I: tensor<i32>[1], H: tensor<f16>[1], B: tensor<bf16>[1], D: tensor<f64>[1]) {\n\
  atomic_add(I[0], 2147483647)\n\
  atomic_add(H[0], f16(0.1))\n\
  atomic_add(B[0], bf16(0.1))\n\
  atomic_add(D[0], 0.1)\n\
}\n";
    let k = kernel(src, None, None, None);
    let out = run_ok(
        &k,
        Args::new()
            .push(zeros(DType::I32, &[1]))
            .push(zeros(DType::F16, &[1]))
            .push(zeros(DType::BF16, &[1]))
            .push(zeros(DType::F64, &[1])),
    );
    // 32 * (2^31 - 1) wraps to -32 in i32.
    assert_eq!(out.get("I").unwrap().data, vec![-32.0]);
    // Each addition rounds to the element type, as the GPU's atomics do.
    let mut h = 0.0f64;
    let mut b = 0.0f64;
    let mut d = 0.0f64;
    for _ in 0..32 {
        h = DType::F16.round(h + DType::F16.round(0.1));
        b = DType::BF16.round(b + DType::BF16.round(0.1));
        d += 0.1;
    }
    assert_eq!(out.get("H").unwrap().data, vec![h]);
    assert_eq!(out.get("B").unwrap().data, vec![b]);
    assert_eq!(out.get("D").unwrap().data, vec![d]);
    assert!(h != 3.2 && b != h, "rounding is visible: {h} {b}");
}

#[test]
fn tile_atomics_update_each_element_once_per_block_masked_at_the_edge() {
    // Column sums of a ragged M x N over blocks of 4 rows, and a splat max.
    let src = "@launch(128)\n\
kernel k(X: tensor<f32>[M, N], S: tensor<f32>[N], Top: tensor<f32>[N]) {\n\
  let r = ctx.block.x * 4\n\
  atomic_add(S[0 :+ 64], reshape(sum(X[r :+ 4, 0 :+ 64], axis=0), [64]))\n\
  atomic_max(Top[0 :+ 64], f32(ctx.block.x))\n\
}\n";
    let k = kernel(src, None, None, None);
    let (m, n) = (10, 50);
    let x = random_tensor(DType::F32, &[m, n], 5);
    let out = run_ok(
        &k,
        Args::new()
            .push(x.clone())
            .push(filled(DType::F32, &[n], 1.0))
            .push(filled(DType::F32, &[n], -1.0)),
    );
    // Blocks 0, 1, 2 (cdiv(10, 4)), each adding its rows' column sums in f32.
    let mut want = vec![1.0f32; n];
    for blk in 0..3 {
        for (c, w) in want.iter_mut().enumerate() {
            let mut part = 0.0f64;
            for r in blk * 4..(blk * 4 + 4).min(m) {
                part += x.data[r * n + c];
            }
            *w += part as f32;
        }
    }
    let got = &out.get("S").unwrap().data;
    let err = relative_error(got, &want.iter().map(|&v| v as f64).collect::<Vec<_>>());
    assert!(err < 1e-6, "{err}");
    assert_eq!(out.get("Top").unwrap().data, vec![2.0; n]);
}

#[test]
fn histogram_counts_every_key_in_range() {
    for (pins, n, bins) in [(None, 1000, 7), (Some("BLOCK=4096"), 5000, 3), (None, 1, 1)] {
        let k = kernel(&example("histogram.ph"), None, pins, None);
        // Keys in [-4, 4]: the negative ones count nowhere.
        let x = random_tensor(DType::I32, &[n], 41);
        let out = run_ok(
            &k,
            Args::new().push(x.clone()).push(zeros(DType::I32, &[bins])),
        );
        let mut want = vec![0.0; bins];
        for &key in &x.data {
            if key >= 0.0 && (key as usize) < bins {
                want[key as usize] += 1.0;
            }
        }
        assert_eq!(out.get("H").unwrap().data, want, "{pins:?} n={n}");
        assert!(want.iter().sum::<f64>() > 0.0 || n == 1);
    }
}

#[test]
fn layer_norm_backward_matches_the_host() {
    for (pins, (m, n)) in [
        (None, (5, 200)),
        (Some("ROWS=8 BLOCK=1024"), (19, 1000)),
        (Some("ROWS=4 BLOCK=256"), (9, 256)),
    ] {
        let k = kernel(&example("layer_norm_backward.ph"), None, pins, None);
        let x = random_tensor(DType::F32, &[m, n], 51);
        let dy = random_tensor(DType::F32, &[m, n], 52);
        let w = random_tensor(DType::F32, &[n], 53);
        let eps = 1e-5;
        let (mut mean, mut rstd) = (vec![0.0; m], vec![0.0; m]);
        for r in 0..m {
            let row = &x.data[r * n..(r + 1) * n];
            let mu = row.iter().sum::<f64>() / n as f64;
            let var = row.iter().map(|v| (v - mu).powi(2)).sum::<f64>() / n as f64;
            mean[r] = DType::F32.round(mu);
            rstd[r] = DType::F32.round(1.0 / (var + eps).sqrt());
        }
        let out = run_ok(
            &k,
            Args::new()
                .push(x.clone())
                .push(dy.clone())
                .push(w.clone())
                .push(HostTensor::from_f64(DType::F32, &[m], &mean))
                .push(HostTensor::from_f64(DType::F32, &[m], &rstd))
                .push(filled(DType::F32, &[m, n], f64::NAN))
                .push(zeros(DType::F32, &[n]))
                .push(zeros(DType::F32, &[n])),
        );
        // The textbook gradients in f64.
        let (mut dx, mut dw, mut db) = (vec![0.0; m * n], vec![0.0; n], vec![0.0; n]);
        for r in 0..m {
            let xhat: Vec<f64> = (0..n)
                .map(|c| (x.data[r * n + c] - mean[r]) * rstd[r])
                .collect();
            let wdy: Vec<f64> = (0..n).map(|c| w.data[c] * dy.data[r * n + c]).collect();
            let c1 = (0..n).map(|c| xhat[c] * wdy[c]).sum::<f64>() / n as f64;
            let c2 = wdy.iter().sum::<f64>() / n as f64;
            for c in 0..n {
                dx[r * n + c] = (wdy[c] - (xhat[c] * c1 + c2)) * rstd[r];
                dw[c] += dy.data[r * n + c] * xhat[c];
                db[c] += dy.data[r * n + c];
            }
        }
        for (name, want) in [("DX", dx), ("DW", dw), ("DB", db)] {
            let err = relative_error(&out.get(name).unwrap().data, &want);
            assert!(err < 1e-5, "{pins:?} {m}x{n} {name}: {err}");
        }
    }
}

/// Attention in f64 from the f16 inputs: O and the natural log-sum-exp of each score row.
fn host_attention(
    q: &HostTensor,
    k: &HostTensor,
    v: &HostTensor,
    scale: f64,
    causal: bool,
) -> (Vec<f64>, Vec<f64>) {
    let (bh, n, d) = (q.shape[0], q.shape[1], q.shape[2]);
    let mut o = vec![0.0; bh * n * d];
    let mut lse = vec![0.0; bh * n];
    for b in 0..bh {
        let at = |t: &HostTensor, i: usize, j: usize| t.data[(b * n + i) * d + j];
        for i in 0..n {
            let keys = if causal { i + 1 } else { n };
            let s: Vec<f64> = (0..keys)
                .map(|j| (0..d).map(|c| at(q, i, c) * at(k, j, c)).sum::<f64>() * scale)
                .collect();
            let max = s.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let e: Vec<f64> = s.iter().map(|x| (x - max).exp()).collect();
            let sum: f64 = e.iter().sum();
            lse[b * n + i] = max + sum.ln();
            for c in 0..d {
                let acc: f64 = (0..keys).map(|j| e[j] * at(v, j, c)).sum();
                o[(b * n + i) * d + c] = acc / sum;
            }
        }
    }
    (o, lse)
}

#[test]
fn attention_lse_matches_the_host() {
    for (pins, bh, n) in [
        ("CAUSAL=0", 2, 45),
        ("CAUSAL=1", 2, 45),
        ("BR=128 BC=32 CAUSAL=1", 1, 150),
    ] {
        let k = kernel(&example("attention_lse.ph"), None, Some(pins), None);
        let q = random_tensor(DType::F16, &[bh, n, 64], 61);
        let kk = random_tensor(DType::F16, &[bh, n, 64], 62);
        let v = random_tensor(DType::F16, &[bh, n, 64], 63);
        let scale = 0.125;
        let out = run_ok(
            &k,
            Args::new()
                .push(q.clone())
                .push(kk.clone())
                .push(v.clone())
                .push(filled(DType::F16, &[bh, n, 64], f64::NAN))
                .push(filled(DType::F32, &[bh, n], f64::NAN))
                .push(scale),
        );
        let (o, lse) = host_attention(&q, &kk, &v, scale, pins.ends_with("CAUSAL=1"));
        // P is rounded to f16 before P V (as on the tensor cores), and O is stored as f16.
        let err = relative_error(&out.get("O").unwrap().data, &o);
        assert!(err < 1e-2, "{pins} O: {err}");
        let err = relative_error(&out.get("L").unwrap().data, &lse);
        assert!(err < 1e-5, "{pins} L: {err}");
    }
}
