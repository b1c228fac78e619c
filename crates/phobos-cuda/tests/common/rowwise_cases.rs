//! Row-wise differential cases: row reductions in registers, their broadcasts and the masked
//! vector loads and stores of an inline kernel, and the row-wise examples (norms, softmaxes,
//! cross-entropy, transposes) at chosen points and ragged problems.

use super::cases::{build, example_case, Case};
use phobos_syntax::SourceFile;

/// Row reductions in registers (`ph::RowsInRegisters`), their fused broadcast, column-tile
/// broadcasts and the masked vector loads and stores: rows shared by 4 lanes, by 2 warps, by
/// the whole block over several registers of each thread, by a block that is not a power of
/// two in rows; ragged rows (a multiple of 4 for the vector path, odd for the scalar one).
pub fn rowwise_cases() -> Vec<Result<Case, String>> {
    let text = "\
@autotune(R in [2, 3, 4, 64], C in [4, 16, 256, 512, 4096], THREADS in [128, 256], PACK in {0, 3})
@launch(THREADS)
kernel rows(X: tensor<f32>[M, N], Y: tensor<f32>[M, N], S: tensor<f32>[M, 1], L: tensor<f32>[M, 1]) {
  let r = ctx.block.x * R
  let valid = arange(C) < N
  let x = where(valid, X[r :+ R, 0 :+ C], -inf)
  let e = where(valid, exp(x - rowmax(x)), 0.0)
  Y[r :+ R, 0 :+ C] = e / rowsum(e)
  S[r :+ R, 0 :+ 1] = rowsum(where(valid, x, 0.0))
  L[r :+ R, 0 :+ 1] = rowmin(where(valid, x, inf))
}
";
    let src = SourceFile::new("rows.ph", text);
    let module = phobos_check::load(src.clone()).unwrap_or_else(|d| panic!("{d:?}"));
    let info = &module.kernels[0];
    let mut cases = Vec::new();
    for (pins, m, n) in [
        ("R=64 C=16 THREADS=256", 150, 12),
        ("R=4 C=256 THREADS=128", 37, 252),
        ("R=3 C=512 THREADS=256", 37, 509),
        ("R=2 C=4096 THREADS=256", 9, 4000),
        ("R=2 C=4096 THREADS=128", 9, 4093),
        ("R=4 C=4 THREADS=128", 37, 3),
        // PACK=3: the column masks against each thread's first column, rows of several rows.
        ("R=3 C=512 THREADS=256 PACK=3", 37, 509),
        ("R=2 C=4096 THREADS=128 PACK=3", 9, 4093),
    ] {
        let label = format!("rows {pins} at M={m},N={n}");
        let variant = match info.variant(Some(pins), None, None) {
            Ok(v) => v,
            Err(e) => {
                cases.push(Err(format!("{label}: {e}")));
                continue;
            }
        };
        let mut k =
            phobos_check::instantiate(&module, info, &variant).unwrap_or_else(|d| panic!("{d:?}"));
        let dims = [("M".to_string(), m), ("N".to_string(), n)];
        phobos_cuda::specialize_alignment(&mut k, &dims);
        cases.push(build(label, k, src.clone(), &dims, 5, false));
    }
    // The row-wise examples in bf16, at widths that take the masked vector path.
    for (file, pins, dims) in [
        (
            "layer_norm.ph",
            "BLOCK=1024 THREADS=128 RPB=4",
            "M=9,N=1000",
        ),
        ("rms_norm.ph", "BLOCK=512 THREADS=128 RPB=4", "M=9,N=504"),
        // Four 256-thread blocks a multiprocessor (64 registers): a row narrower than the tile
        // (masked vector groups), an odd width (the element path), two rows a block.
        (
            "rms_norm.ph",
            "BLOCK=8192 THREADS=256 MIN_BLOCKS=4",
            "M=5,N=8000",
        ),
        (
            "rms_norm.ph",
            "BLOCK=8192 THREADS=256 MIN_BLOCKS=4 RPB=2",
            "M=5,N=8191",
        ),
        (
            "layer_norm.ph",
            "BLOCK=4096 THREADS=256 MIN_BLOCKS=4",
            "M=5,N=4095",
        ),
        (
            "layer_norm.ph",
            "BLOCK=8192 THREADS=256 MIN_BLOCKS=4",
            "M=3,N=8184",
        ),
        // Blocks of one warp: the row statistics by shuffles alone (`ph::reduce_warp`).
        ("layer_norm.ph", "BLOCK=1024 THREADS=32 RPB=4", "M=9,N=1000"),
        (
            "layer_norm.ph",
            "BLOCK=1024 THREADS=32 MIN_BLOCKS=4 RPB=2",
            "M=7,N=1024",
        ),
        ("rms_norm.ph", "BLOCK=1024 THREADS=32 RPB=2", "M=5,N=1021"),
        ("softmax_online.ph", "BLOCK=1024 THREADS=256", "M=3,N=2600"),
        // softmax.ph's rows of up to 8k in one tile: several rows a block (a row narrower than
        // the tile), aligned rows, odd rows (every shift among the 9), the widest tile.
        ("softmax.ph", "ROWS=8 BLOCK=256 THREADS=256", "M=19,N=250"),
        ("softmax.ph", "ROWS=2 BLOCK=1024 THREADS=128", "M=5,N=1024"),
        ("softmax.ph", "ROWS=1 BLOCK=4096 THREADS=512", "M=9,N=4001"),
        (
            "softmax.ph",
            "ROWS=1 BLOCK=8192 THREADS=512 MIN_BLOCKS=2",
            "M=3,N=8000",
        ),
        ("cross_entropy.ph", "BLOCK=2048 THREADS=256", "M=5,V=5000"),
        // Odd row lengths: rows known unaligned, shifted 16-byte loads (every row's shift
        // 0..7 among the 9 or 11 rows), the ragged last chunk element by element.
        ("softmax_online.ph", "BLOCK=1024 THREADS=256", "M=9,N=3001"),
        ("cross_entropy.ph", "BLOCK=2048 THREADS=256", "M=11,V=5003"),
        ("cross_entropy.ph", "BLOCK=4096 THREADS=512", "M=9,V=4099"),
        // SHIFT=1: the row's shift once, the conversion branching on it (every shift 0..7).
        (
            "softmax_online.ph",
            "BLOCK=2048 THREADS=256 SHIFT=1",
            "M=9,N=3001",
        ),
        (
            "softmax_online.ph",
            "BLOCK=4096 THREADS=512 SHIFT=1",
            "M=9,N=9001",
        ),
        (
            "cross_entropy.ph",
            "BLOCK=2048 THREADS=256 SHIFT=1",
            "M=11,V=5003",
        ),
        (
            "cross_entropy.ph",
            "BLOCK=4096 THREADS=512 SHIFT=1",
            "M=9,V=4099",
        ),
        // EVICT=1: the online softmax with its eviction hints, shifted and aligned rows.
        (
            "softmax_online.ph",
            "BLOCK=2048 THREADS=256 EVICT=1",
            "M=9,N=3001",
        ),
        (
            "softmax_online.ph",
            "BLOCK=4096 THREADS=512 SHIFT=1 EVICT=1",
            "M=9,N=9001",
        ),
        (
            "softmax_online.ph",
            "BLOCK=2048 THREADS=256 EVICT=1",
            "M=3,N=4096",
        ),
        // PACK=1: the whole row packed two a register; odd rows (every shift 0..7: the warp
        // shuffle and the next warp's vector through shared memory), aligned rows, one row
        // narrower than the tile's threads.
        (
            "softmax_row.ph",
            "BLOCK=57344 THREADS=1024 PACK=1",
            "M=9,N=50257",
        ),
        (
            "softmax_row.ph",
            "BLOCK=32768 THREADS=1024 PACK=1",
            "M=3,N=32000",
        ),
        (
            "softmax_row.ph",
            "BLOCK=8192 THREADS=256 PACK=1",
            "M=9,N=1001",
        ),
        (
            "softmax_row.ph",
            "BLOCK=16384 THREADS=512 PACK=0",
            "M=9,N=9001",
        ),
        // PACK=2: and the odd rows stored by aligned vectors (every shift, the row's two ends).
        (
            "softmax_row.ph",
            "BLOCK=57344 THREADS=1024 PACK=2",
            "M=9,N=50257",
        ),
        (
            "softmax_row.ph",
            "BLOCK=8192 THREADS=256 PACK=2",
            "M=9,N=1001",
        ),
        // PACK=3: PACK=2 with the column masks against the thread's first column and the
        // store's T(..) rounded once (bench/NOTES.md r12).
        (
            "softmax_row.ph",
            "BLOCK=57344 THREADS=1024 PACK=3",
            "M=9,N=50257",
        ),
        (
            "softmax_row.ph",
            "BLOCK=32768 THREADS=1024 PACK=3",
            "M=3,N=32000",
        ),
        (
            "softmax_row.ph",
            "BLOCK=8192 THREADS=256 PACK=3",
            "M=9,N=1001",
        ),
        // PACK=4: the mask at the load (-inf filled in the packed row past N), unmasked
        // passes, the max on packed pairs, the partials combined by lanes (bench/NOTES.md r14):
        // odd rows of every shift, aligned rows, rows shorter than one thread step and than
        // one group of a warp.
        (
            "softmax_row.ph",
            "BLOCK=57344 THREADS=1024 PACK=4",
            "M=9,N=50257",
        ),
        (
            "softmax_row.ph",
            "BLOCK=32768 THREADS=1024 PACK=4",
            "M=3,N=32000",
        ),
        (
            "softmax_row.ph",
            "BLOCK=8192 THREADS=1024 PACK=4",
            "M=9,N=3001",
        ),
        (
            "softmax_row.ph",
            "BLOCK=8192 THREADS=256 PACK=4",
            "M=9,N=1001",
        ),
        (
            "softmax_row.ph",
            "BLOCK=8192 THREADS=256 PACK=4",
            "M=9,N=1000",
        ),
        ("softmax_row.ph", "BLOCK=8192 THREADS=512 PACK=4", "M=9,N=5"),
        // ROW_SMEM=1: the row staged in shared memory by bulk copies, realigned there, the
        // store through the buffer (bench/NOTES.md r15): odd rows of every shift (the head and
        // tail loads, the chunk past the layout's last), aligned rows, 112 elements a thread at
        // 512 threads, rows shorter than one chunk.
        (
            "softmax_row.ph",
            "BLOCK=57344 THREADS=1024 PACK=4 ROW_SMEM=1",
            "M=9,N=50257",
        ),
        (
            "softmax_row.ph",
            "BLOCK=57344 THREADS=512 PACK=4 ROW_SMEM=1",
            "M=5,N=50257",
        ),
        (
            "softmax_row.ph",
            "BLOCK=32768 THREADS=1024 PACK=4 ROW_SMEM=1",
            "M=3,N=32000",
        ),
        (
            "softmax_row.ph",
            "BLOCK=8192 THREADS=1024 PACK=4 ROW_SMEM=1",
            "M=9,N=8191",
        ),
        (
            "softmax_row.ph",
            "BLOCK=8192 THREADS=1024 PACK=4 ROW_SMEM=1",
            "M=4,N=8192",
        ),
        (
            "softmax_row.ph",
            "BLOCK=8192 THREADS=256 PACK=4 ROW_SMEM=1",
            "M=9,N=1001",
        ),
        (
            "softmax_row.ph",
            "BLOCK=8192 THREADS=512 PACK=4 ROW_SMEM=1",
            "M=9,N=5",
        ),
        // ROW_SMEM=2 (bench/NOTES.md r24): the row left where its copy put it, masked in place,
        // each group stored from its registers where Y's row starts at X's shift (every row
        // here: X and Y of one width): odd rows of every shift, 512 threads, aligned rows, rows
        // of a few chunks and of less than one.
        (
            "softmax_row.ph",
            "BLOCK=57344 THREADS=1024 PACK=4 ROW_SMEM=2",
            "M=9,N=50257",
        ),
        (
            "softmax_row.ph",
            "BLOCK=57344 THREADS=512 PACK=4 ROW_SMEM=2",
            "M=5,N=50257",
        ),
        (
            "softmax_row.ph",
            "BLOCK=32768 THREADS=1024 PACK=4 ROW_SMEM=2",
            "M=3,N=32000",
        ),
        (
            "softmax_row.ph",
            "BLOCK=8192 THREADS=256 PACK=4 ROW_SMEM=2",
            "M=9,N=1001",
        ),
        (
            "softmax_row.ph",
            "BLOCK=8192 THREADS=512 PACK=4 ROW_SMEM=2",
            "M=9,N=5",
        ),
        // Cross-entropy with per-position (max, sum) partials (bench/NOTES.md r13): steps of 4
        // and 2 chunks and the masked rest, odd rows (every shift among 9 rows), aligned rows,
        // rows shorter than one step (the masked loop alone); SHIFT=2's unguarded whole chunks.
        (
            "cross_entropy.ph",
            "BLOCK=2048 THREADS=256 SHIFT=2 PARTIALS=4",
            "M=9,V=50257",
        ),
        (
            "cross_entropy.ph",
            "BLOCK=2048 THREADS=256 SHIFT=2 PARTIALS=2",
            "M=9,V=50257",
        ),
        (
            "cross_entropy.ph",
            "BLOCK=2048 THREADS=256 SHIFT=0 PARTIALS=4",
            "M=9,V=50257",
        ),
        (
            "cross_entropy.ph",
            "BLOCK=4096 THREADS=512 SHIFT=1 PARTIALS=4",
            "M=9,V=32000",
        ),
        (
            "cross_entropy.ph",
            "BLOCK=2048 THREADS=256 SHIFT=2 PARTIALS=2",
            "M=3,V=32000",
        ),
        (
            "cross_entropy.ph",
            "BLOCK=2048 THREADS=256 SHIFT=2 PARTIALS=4",
            "M=9,V=1001",
        ),
        (
            "cross_entropy.ph",
            "BLOCK=2048 THREADS=512 SHIFT=2 PARTIALS=2",
            "M=11,V=9001",
        ),
        (
            "cross_entropy.ph",
            "BLOCK=2048 THREADS=256 SHIFT=2 PARTIALS=2",
            "M=11,V=9001",
        ),
        (
            "softmax_online.ph",
            "BLOCK=1024 THREADS=128 SHIFT=2 EVICT=1 PARTIALS=4",
            "M=9,N=9001",
        ),
        // The online softmax's first pass with the partials (its second pass unchanged).
        (
            "softmax_online.ph",
            "BLOCK=2048 THREADS=256 SHIFT=2 EVICT=1 PARTIALS=4",
            "M=9,N=50257",
        ),
        (
            "softmax_online.ph",
            "BLOCK=2048 THREADS=256 SHIFT=0 PARTIALS=2",
            "M=9,N=50257",
        ),
        (
            "softmax_online.ph",
            "BLOCK=4096 THREADS=512 SHIFT=1 EVICT=1 PARTIALS=4",
            "M=3,N=32000",
        ),
        (
            "softmax_online.ph",
            "BLOCK=1024 THREADS=128 SHIFT=2 PARTIALS=2",
            "M=9,N=1001",
        ),
        // SHIFT=2 under the block-reduction loop (PARTIALS=0), each row's last chunk ragged.
        (
            "cross_entropy.ph",
            "BLOCK=4096 THREADS=256 SHIFT=2",
            "M=11,V=50257",
        ),
        (
            "cross_entropy.ph",
            "BLOCK=2048 THREADS=256 SHIFT=2",
            "M=9,V=5003",
        ),
    ] {
        let dims: Vec<(&str, i64)> = dims
            .split(',')
            .map(|kv| {
                let (n, v) = kv.split_once('=').expect("NAME=VALUE");
                (n, v.parse().expect("a number"))
            })
            .collect();
        cases.push(example_case(file, pins, Some("T=bf16"), &dims));
    }
    // The partials in f32 (4-element groups; SHIFT is for 2-byte rows only).
    for (file, pins, m, (dim, v)) in [
        (
            "cross_entropy.ph",
            "BLOCK=2048 THREADS=256 PARTIALS=4",
            3,
            ("V", 50257),
        ),
        (
            "cross_entropy.ph",
            "BLOCK=2048 THREADS=256 PARTIALS=2",
            3,
            ("V", 32000),
        ),
        (
            "cross_entropy.ph",
            "BLOCK=4096 THREADS=512 PARTIALS=4",
            9,
            ("V", 1001),
        ),
        (
            "softmax_online.ph",
            "BLOCK=2048 THREADS=256 PARTIALS=4",
            3,
            ("N", 50257),
        ),
        (
            "softmax_online.ph",
            "BLOCK=4096 THREADS=512 EVICT=1 PARTIALS=2",
            3,
            ("N", 32000),
        ),
        (
            "softmax_online.ph",
            "BLOCK=1024 THREADS=128 PARTIALS=4",
            9,
            ("N", 1001),
        ),
    ] {
        cases.push(example_case(
            file,
            pins,
            Some("T=f32"),
            &[("M", m), (dim, v)],
        ));
    }
    // PACK=3's column masks and PACK=4's body in f32 (the knob's packing is for 2-byte types
    // only; PACK=4's mask at the load and its lane-combined reductions are not).
    for (pins, m, n) in [
        ("BLOCK=57344 THREADS=1024 PACK=3", 3, 50257),
        ("BLOCK=32768 THREADS=1024 PACK=3", 3, 32000),
        ("BLOCK=8192 THREADS=256 PACK=3", 9, 1001),
        ("BLOCK=57344 THREADS=1024 PACK=4", 3, 50257),
        ("BLOCK=32768 THREADS=1024 PACK=4", 3, 32000),
        ("BLOCK=8192 THREADS=1024 PACK=4", 9, 3001),
        ("BLOCK=8192 THREADS=256 PACK=4", 9, 1000),
    ] {
        cases.push(example_case(
            "softmax_row.ph",
            pins,
            Some("T=f32"),
            &[("M", m), ("N", n)],
        ));
    }
    // ROW_SMEM=1 and 2 in f16 (the staged row's words are f16 pairs; the max reads them as f32).
    for (pins, m, n) in [
        ("BLOCK=57344 THREADS=1024 PACK=4 ROW_SMEM=1", 9, 50257),
        ("BLOCK=8192 THREADS=1024 PACK=4 ROW_SMEM=1", 5, 1001),
        ("BLOCK=57344 THREADS=1024 PACK=4 ROW_SMEM=2", 9, 50257),
    ] {
        cases.push(example_case(
            "softmax_row.ph",
            pins,
            Some("T=f16"),
            &[("M", m), ("N", n)],
        ));
    }
    cases.extend(super::transpose_cases::transpose_cases());
    cases.extend(super::store_cases::shifted_store_cases());
    cases.extend(super::store_cases::strided_transpose_cases());
    cases
}
