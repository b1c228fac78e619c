//! GPU test of rank-3 tensor maps: attention's K / V as `[BH, N, D]`, a head's ragged last key
//! tile copied by TMA. Run on a GPU machine with `--ignored`.

mod common;

use common::kernels::TMA_BOX3;
use common::*;
use phobos_gpu::{
    encode_args, DeviceTensor, Extent, KernelArgs, LaunchConfig, OuterDim, TensorMapParam,
};
use phobos_ir::{DType, MemOrder};

/// The map of a row-major `[BH, N, D]` tensor in boxes of 64 columns by `rows` rows of one
/// head, 128-byte swizzle, zeros out of bounds (what the TMA producer of attention uses).
fn heads(dtype: DType, rows: u32) -> TensorMapParam {
    TensorMapParam {
        tensor: 0,
        data_type: if dtype == DType::BF16 { 9 } else { 6 },
        elem_bytes: 2,
        global_dim: [Extent::Dim(2), Extent::Dim(1)],
        line_stride: Extent::Dim(2),
        box_dim: [64, rows],
        element_strides: [1, 1],
        interleave: 0,
        swizzle: 3,
        l2_promotion: 3,
        oob_fill: 0,
        outer: Some(OuterDim {
            extent: Extent::Dim(0),
            box_dim: 1,
        }),
    }
}

#[test]
#[ignore = "needs a GPU"]
fn rank_3_boxes_land_swizzled_and_zero_past_n() {
    let gpu = gpu();
    if gpu.info().cc.0 < 9 {
        eprintln!("skipping: TMA needs sm_90");
        return;
    }
    let f = load(&gpu, TMA_BOX3, "tma_box3");
    let mut rng = Rng::new("tma_box3");
    // (dtype, BH, N, D, rows of a box)
    for (dtype, bh, n, d, rows) in [
        (DType::F16, 3usize, 577usize, 128usize, 64u32),
        (DType::BF16, 2, 1000, 64, 128),
        (DType::F16, 4, 100, 64, 32),
    ] {
        // No zeros in the input: a zero read back is the fill.
        let x = rng.tensor(dtype, &[bh, n, d], 1.0, 2.0);
        let dx = DeviceTensor::upload(&gpu, &x, MemOrder::RowMajor).unwrap();
        let a = encode_args(
            &heads(dtype, rows),
            "K",
            dx.ptr(),
            &[bh as i64, n as i64, d as i64],
        )
        .unwrap();
        let map = gpu.encode_tensor_map(&a).unwrap();
        let last = (n - 1) / rows as usize * rows as usize;
        for h in [0, bh - 1] {
            for n0 in [0, last] {
                for d0 in (0..d).step_by(64) {
                    let out =
                        DeviceTensor::alloc(&gpu, dtype, &[rows as usize * 64], MemOrder::RowMajor)
                            .unwrap();
                    out.fill_poison().unwrap();
                    let bytes = rows as i32 * 128;
                    let mut args = KernelArgs::new();
                    args.ptr(out.ptr())
                        .tensor_map(&map)
                        .i32(d0 as i32)
                        .i32(n0 as i32)
                        .i32(h as i32)
                        .i32(bytes);
                    let cfg = LaunchConfig {
                        grid: [1, 1, 1],
                        block: [128, 1, 1],
                        dynamic_smem: 0,
                    };
                    gpu.launch_raw(&f, cfg, &mut args).unwrap();
                    let got = out.download().unwrap();
                    for r in 0..rows as usize {
                        for c in 0..64 {
                            // The 128-byte swizzle (`ph::mma_off` of a staged [rows, 64] slab).
                            let off = r * 128 + (((c / 8) ^ (r % 8)) * 16) + (c % 8) * 2;
                            let want = if n0 + r < n {
                                x.data[(h * n + n0 + r) * d + d0 + c]
                            } else {
                                0.0
                            };
                            assert_eq!(
                                got.data[off / 2],
                                want,
                                "{dtype} BH={bh} N={n} D={d} head {h} rows {n0}+{r} column {}",
                                d0 + c
                            );
                        }
                    }
                }
            }
        }
    }
}
