//! The row-wise examples (softmax in chunks, layer norm, RMSNorm, cross-entropy) against
//! float64 host implementations, at ragged shapes and several points of each space.

mod common;

use common::ph::{example, kernel};
use common::run_ok;
use phobos_interp::host::random_tensor;
use phobos_interp::Args;
use phobos_ir::{relative_error, DType, HostTensor};

fn sentinel(dtype: DType, shape: &[usize]) -> HostTensor {
    HostTensor::from_f64(dtype, shape, &vec![f64::NAN; shape.iter().product()])
}

/// A random tensor scaled by `k` (so exponentials spread over several orders of magnitude).
fn scaled(dtype: DType, shape: &[usize], seed: u64, k: f64) -> HostTensor {
    let t = random_tensor(dtype, shape, seed);
    let data: Vec<f64> = t.data.iter().map(|v| dtype.round(v * k)).collect();
    HostTensor::from_f64(dtype, shape, &data)
}

fn rows(x: &HostTensor) -> impl Iterator<Item = &[f64]> {
    x.data.chunks(x.shape[1])
}

fn host_softmax(x: &HostTensor) -> Vec<f64> {
    rows(x)
        .flat_map(|row| {
            let max = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let s: f64 = row.iter().map(|v| (v - max).exp()).sum();
            row.iter()
                .map(move |v| (v - max).exp() / s)
                .collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn softmax_online_matches_the_host() {
    for (pins, types, (m, n), tol) in [
        (None, None, (3, 3000), 1e-6),
        (Some("BLOCK=8192 THREADS=256"), None, (2, 700), 1e-6),
        (Some("BLOCK=1024 THREADS=128"), None, (2, 5000), 1e-6),
        (Some("BLOCK=2048 THREADS=256"), None, (2, 5000), 1e-6),
        (Some("BLOCK=8192 THREADS=512"), None, (2, 20000), 1e-6),
        // The second pass walks backwards from the last chunk: rows of whole chunks, of one
        // partial chunk, of one element, and a chunk wider than 32 values a thread.
        (Some("BLOCK=1024 THREADS=256"), None, (2, 3072), 1e-6),
        (Some("BLOCK=4096 THREADS=1024"), None, (3, 1), 1e-6),
        (Some("BLOCK=16384 THREADS=1024"), None, (2, 40000), 1e-6),
        (
            Some("BLOCK=1024 THREADS=256"),
            Some("T=bf16"),
            (3, 1500),
            1e-2,
        ),
        // The first pass's per-position partials (bench/NOTES.md r13): whole steps of 4 and 2
        // chunks and the masked rest, rows shorter than one step, one element.
        (
            Some("BLOCK=2048 THREADS=256 PARTIALS=4"),
            None,
            (2, 50257),
            1e-6,
        ),
        (
            Some("BLOCK=4096 THREADS=512 PARTIALS=2"),
            None,
            (2, 20001),
            1e-6,
        ),
        (
            Some("BLOCK=1024 THREADS=128 PARTIALS=4"),
            None,
            (3, 1001),
            1e-6,
        ),
        (
            Some("BLOCK=1024 THREADS=128 PARTIALS=2"),
            None,
            (2, 1),
            1e-6,
        ),
        (
            Some("BLOCK=2048 THREADS=256 PARTIALS=4 SHIFT=2"),
            Some("T=bf16"),
            (3, 20001),
            1e-2,
        ),
        // The whole row read once (WHOLE=1, softmax_row.ph's PACK=4 body): staged in shared
        // memory or packed in registers, rows of 50257 and narrower than the tile.
        (
            Some("BLOCK=57344 THREADS=1024 WHOLE=1 PACK=4 ROW_SMEM=1"),
            Some("T=bf16"),
            (2, 50257),
            1e-2,
        ),
        (
            Some("BLOCK=16384 THREADS=512 WHOLE=1 PACK=4"),
            Some("T=bf16"),
            (3, 9001),
            1e-2,
        ),
        (
            Some("BLOCK=16384 THREADS=512 WHOLE=1 PACK=4"),
            None,
            (2, 9001),
            1e-6,
        ),
        // ROWS_AHEAD=1 (bench/NOTES.md r18): the same body, persistent blocks on the GPU.
        (
            Some("BLOCK=4096 THREADS=256 WHOLE=1 PACK=4 ROW_SMEM=1 ROWS_AHEAD=1"),
            Some("T=bf16"),
            (5, 3001),
            1e-2,
        ),
    ] {
        let k = kernel(&example("softmax_online.ph"), None, pins, types);
        let dt = if types.is_some() {
            DType::BF16
        } else {
            DType::F32
        };
        let x = scaled(dt, &[m, n], 11, 8.0);
        let out = run_ok(&k, Args::new().push(x.clone()).push(sentinel(dt, &[m, n])));
        let err = relative_error(&out.get("Y").unwrap().data, &host_softmax(&x));
        assert!(err < tol, "{pins:?} {types:?} {m}x{n}: {err}");
    }
}

/// The one-read softmax of wide rows (examples/softmax_row.ph): ragged widths up to the 57344
/// tile, f32 and bf16, packed and not (PACK changes the registers, never a value).
#[test]
fn softmax_row_matches_the_host() {
    for (pins, types, (m, n), tol) in [
        (None, None, (3, 1000), 1e-6),
        (
            Some("BLOCK=16384 THREADS=512 PACK=0"),
            None,
            (2, 9001),
            1e-6,
        ),
        (
            Some("BLOCK=32768 THREADS=1024 PACK=0"),
            None,
            (2, 32000),
            1e-6,
        ),
        (
            Some("BLOCK=8192 THREADS=256 PACK=1"),
            Some("T=bf16"),
            (3, 1000),
            1e-2,
        ),
        (
            Some("BLOCK=32768 THREADS=1024 PACK=1"),
            Some("T=bf16"),
            (2, 32000),
            1e-2,
        ),
        (
            Some("BLOCK=57344 THREADS=1024 PACK=1"),
            Some("T=bf16"),
            (2, 50257),
            1e-2,
        ),
        (
            Some("BLOCK=57344 THREADS=1024 PACK=0"),
            None,
            (1, 50257),
            1e-6,
        ),
        (
            Some("BLOCK=8192 THREADS=256 PACK=2"),
            Some("T=bf16"),
            (9, 1001),
            1e-2,
        ),
        (
            Some("BLOCK=57344 THREADS=1024 PACK=3"),
            Some("T=bf16"),
            (2, 50257),
            1e-2,
        ),
        (Some("BLOCK=8192 THREADS=256 PACK=3"), None, (3, 1001), 1e-6),
        // PACK=4's body: the mask at the load, then unmasked passes (rows shorter than one
        // thread's step, ragged and aligned).
        (
            Some("BLOCK=57344 THREADS=1024 PACK=4"),
            Some("T=bf16"),
            (2, 50257),
            1e-2,
        ),
        (
            Some("BLOCK=8192 THREADS=256 PACK=4"),
            Some("T=bf16"),
            (3, 1000),
            1e-2,
        ),
        (
            Some("BLOCK=8192 THREADS=1024 PACK=4"),
            Some("T=bf16"),
            (2, 3001),
            1e-2,
        ),
        (Some("BLOCK=8192 THREADS=256 PACK=4"), None, (3, 1001), 1e-6),
        (
            Some("BLOCK=32768 THREADS=1024 PACK=4"),
            None,
            (2, 32000),
            1e-6,
        ),
        // ROWS_AHEAD=1 (bench/NOTES.md r18): the same body, persistent blocks on the GPU.
        (
            Some("BLOCK=8192 THREADS=1024 PACK=4 ROW_SMEM=1 ROWS_AHEAD=1"),
            Some("T=bf16"),
            (5, 3001),
            1e-2,
        ),
    ] {
        let k = kernel(&example("softmax_row.ph"), None, pins, types);
        let dt = if types.is_some() {
            DType::BF16
        } else {
            DType::F32
        };
        let x = scaled(dt, &[m, n], 13, 8.0);
        let out = run_ok(&k, Args::new().push(x.clone()).push(sentinel(dt, &[m, n])));
        let err = relative_error(&out.get("Y").unwrap().data, &host_softmax(&x));
        assert!(err < tol, "{pins:?} {types:?} {m}x{n}: {err}");
    }
}

/// Eviction hints never change a value: the online softmax (hinted on every access) and the
/// same kernel without its hints give the same bits.
#[test]
fn eviction_hints_change_no_value() {
    let hinted = example("softmax_online.ph");
    let plain: String = hinted
        .replace(", cache = evict_last]", "]")
        .replace(", cache = evict_first]", "]");
    // Two in the first pass, five in its PARTIALS form, three in the second pass.
    assert_eq!(hinted.matches("cache = ").count(), 10);
    assert!(!plain.contains("cache ="));
    for (types, partials) in [
        (None, 0),
        (Some("T=bf16"), 0),
        (None, 2),
        (Some("T=bf16"), 4),
    ] {
        let dt = if types.is_some() {
            DType::BF16
        } else {
            DType::F32
        };
        let x = scaled(dt, &[3, 2500], 5, 8.0);
        let pins = format!("BLOCK=1024 THREADS=128 PARTIALS={partials}");
        let pins = Some(pins.as_str());
        let run = |src: &str| {
            let k = kernel(src, None, pins, types);
            let out = run_ok(
                &k,
                Args::new().push(x.clone()).push(sentinel(dt, &[3, 2500])),
            );
            out.get("Y").unwrap().data.clone()
        };
        let (a, b) = (run(&hinted), run(&plain));
        assert!(a.iter().all(|v| v.is_finite()));
        assert_eq!(
            a.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            b.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
        );
    }
}

#[test]
fn layer_norm_matches_the_host() {
    for (pins, types, (m, n), tol) in [
        (None, None, (5, 300), 1e-6),
        (Some("BLOCK=1024 THREADS=128"), None, (9, 1000), 1e-6),
        (Some("BLOCK=1024 THREADS=128 RPB=4"), None, (10, 1000), 1e-6),
        (
            Some("BLOCK=4096 THREADS=512"),
            Some("T=bf16"),
            (3, 4000),
            1e-2,
        ),
    ] {
        let k = kernel(&example("layer_norm.ph"), None, pins, types);
        let dt = if types.is_some() {
            DType::BF16
        } else {
            DType::F32
        };
        let eps = 1e-5;
        let x = scaled(dt, &[m, n], 12, 3.0);
        let w = random_tensor(dt, &[n], 13);
        let b = random_tensor(dt, &[n], 14);
        let out = run_ok(
            &k,
            Args::new()
                .push(x.clone())
                .push(w.clone())
                .push(b.clone())
                .push(sentinel(dt, &[m, n]))
                .push(sentinel(DType::F32, &[m]))
                .push(sentinel(DType::F32, &[m]))
                .push(eps),
        );
        let (mut y, mut means, mut rstds) = (Vec::new(), Vec::new(), Vec::new());
        for row in rows(&x) {
            let mean = row.iter().sum::<f64>() / n as f64;
            let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n as f64;
            let rstd = 1.0 / (var + eps).sqrt();
            y.extend((0..n).map(|c| (row[c] - mean) * rstd * w.data[c] + b.data[c]));
            means.push(mean);
            rstds.push(rstd);
        }
        let label = format!("{pins:?} {types:?} {m}x{n}");
        let err = relative_error(&out.get("Y").unwrap().data, &y);
        assert!(err < tol, "{label} Y: {err}");
        let err = relative_error(&out.get("Mean").unwrap().data, &means);
        assert!(err < tol, "{label} Mean: {err}");
        let err = relative_error(&out.get("Rstd").unwrap().data, &rstds);
        assert!(err < tol, "{label} Rstd: {err}");
    }
}

#[test]
fn rms_norm_matches_the_host() {
    for (pins, types, (m, n), tol) in [
        (None, None, (5, 300), 1e-6),
        (Some("BLOCK=2048 THREADS=256"), None, (7, 2047), 1e-6),
        (Some("BLOCK=2048 THREADS=256 RPB=4"), None, (9, 2047), 1e-6),
        (
            Some("BLOCK=1024 THREADS=128"),
            Some("T=bf16"),
            (4, 777),
            1e-2,
        ),
    ] {
        let k = kernel(&example("rms_norm.ph"), None, pins, types);
        let dt = if types.is_some() {
            DType::BF16
        } else {
            DType::F32
        };
        let eps = 1e-6;
        let x = scaled(dt, &[m, n], 15, 2.0);
        let w = random_tensor(dt, &[n], 16);
        let out = run_ok(
            &k,
            Args::new()
                .push(x.clone())
                .push(w.clone())
                .push(sentinel(dt, &[m, n]))
                .push(eps),
        );
        let y: Vec<f64> = rows(&x)
            .flat_map(|row| {
                let ms = row.iter().map(|v| v * v).sum::<f64>() / n as f64;
                let rstd = 1.0 / (ms + eps).sqrt();
                (0..n)
                    .map(|c| row[c] * rstd * w.data[c])
                    .collect::<Vec<_>>()
            })
            .collect();
        let err = relative_error(&out.get("Y").unwrap().data, &y);
        assert!(err < tol, "{pins:?} {types:?} {m}x{n}: {err}");
    }
}

#[test]
fn cross_entropy_matches_the_host() {
    for (pins, types, (m, v), tol) in [
        (None, None, (3, 5000), 1e-6),
        (Some("BLOCK=8192 THREADS=512"), None, (2, 50257), 1e-6),
        (Some("BLOCK=8192 THREADS=512"), None, (2, 3000), 1e-6),
        (Some("BLOCK=2048 THREADS=256"), None, (2, 9000), 1e-6),
        (
            Some("BLOCK=2048 THREADS=512"),
            Some("T=bf16"),
            (3, 3001),
            1e-3,
        ),
        // Per-position (max, sum) partials: whole steps of 4 or 2 chunks and the masked rest,
        // and rows shorter than one step (the masked loop alone).
        (
            Some("BLOCK=2048 THREADS=256 PARTIALS=4"),
            None,
            (2, 50257),
            1e-6,
        ),
        (
            Some("BLOCK=2048 THREADS=256 PARTIALS=2"),
            None,
            (3, 9001),
            1e-6,
        ),
        (
            Some("BLOCK=4096 THREADS=512 PARTIALS=4"),
            None,
            (2, 1001),
            1e-6,
        ),
        (
            Some("BLOCK=2048 THREADS=256 PARTIALS=4"),
            Some("T=bf16"),
            (3, 20001),
            1e-3,
        ),
        // The whole row as one masked tile (WHOLE=1): staged in shared memory (ROW_SMEM=1)
        // or packed in registers, rows wider and narrower than the tile's threads' groups.
        (
            Some("BLOCK=57344 THREADS=1024 WHOLE=1 PACK=4 ROW_SMEM=1"),
            Some("T=bf16"),
            (3, 50257),
            1e-3,
        ),
        (
            Some("BLOCK=32768 THREADS=512 WHOLE=1 PACK=4"),
            Some("T=bf16"),
            (2, 32000),
            1e-3,
        ),
        (
            Some("BLOCK=2048 THREADS=256 WHOLE=1 PACK=4 ROW_SMEM=1"),
            Some("T=bf16"),
            (3, 1001),
            1e-3,
        ),
        (
            Some("BLOCK=57344 THREADS=1024 WHOLE=1 PACK=4 ROW_SMEM=2"),
            Some("T=bf16"),
            (2, 50257),
            1e-3,
        ),
        (
            Some("BLOCK=32768 THREADS=1024 WHOLE=1 PACK=4"),
            None,
            (2, 32000),
            1e-6,
        ),
        // ROWS_AHEAD=1 (bench/NOTES.md r18): the same body, persistent blocks on the GPU.
        (
            Some("BLOCK=4096 THREADS=256 WHOLE=1 PACK=4 ROW_SMEM=2 ROWS_AHEAD=1"),
            Some("T=bf16"),
            (5, 3001),
            1e-3,
        ),
    ] {
        let k = kernel(&example("cross_entropy.ph"), None, pins, types);
        let dt = if types.is_some() {
            DType::BF16
        } else {
            DType::F32
        };
        let x = scaled(dt, &[m, v], 17, 6.0);
        // Targets spread over the vocabulary, the last class included.
        let target: Vec<f64> = (0..m).map(|r| ((r * 7919 + v - 1) % v) as f64).collect();
        let t = HostTensor::from_f64(DType::I32, &[m], &target);
        let out = run_ok(
            &k,
            Args::new()
                .push(x.clone())
                .push(t)
                .push(sentinel(DType::F32, &[m])),
        );
        let loss: Vec<f64> = rows(&x)
            .zip(&target)
            .map(|(row, &t)| {
                let max = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                let lse = max + row.iter().map(|x| (x - max).exp()).sum::<f64>().ln();
                lse - row[t as usize]
            })
            .collect();
        let err = relative_error(&out.get("Loss").unwrap().data, &loss);
        assert!(err < tol, "{pins:?} {types:?} {m}x{v}: {err}");
    }
}
