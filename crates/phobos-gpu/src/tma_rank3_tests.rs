//! Tests of rank-3 tensor maps (attention's K and V as `[BH, N, D]`), without a GPU.

use super::*;
use crate::abi::{bind_args, Arg, TensorRef};
use crate::launch_plan::*;
use phobos_ir::{
    DType, Dim, DimVar, Expr, ExprKind, Launch, Lit, MemOrder, Param, ParamKind, Point, Ty,
};
use phobos_syntax::Span;
use proptest::prelude::*;

/// The map of a row-major `[BH, N, D]` operand (`BH`, `N`, `D` runtime dims 0, 1, 2) in boxes
/// of one 128-byte swizzle line by `rows` lines of one head: the tile `[rows, 64]` of the
/// staged wgmma operand.
fn heads(data_type: u32, rows: u32) -> TensorMapParam {
    TensorMapParam {
        tensor: 0,
        data_type,
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
fn heads_encode_as_rank_3_with_dense_planes() {
    // BH = 32, N = 577 (ragged), D = 128, f16.
    let a = encode_args(&heads(6, 64), "K", 0x4000, &[32, 577, 128]).unwrap();
    assert_eq!(a.rank, 3);
    let m = a.arrays();
    assert_eq!(m.global_dim, vec![128, 577, 32]);
    assert_eq!(m.global_strides, vec![256, 256 * 577]);
    assert_eq!(m.box_dim, vec![64, 64, 1]);
    assert_eq!(m.element_strides, vec![1, 1, 1]);
    // Past N zeros (FLOAT_OOB_FILL_NONE), the 128-byte swizzle, 256-byte L2 promotion.
    assert_eq!(
        (a.data_type, a.swizzle, a.oob_fill, a.l2_promotion),
        (6, 3, 0, 3)
    );
    // bf16, D = 64, 1000 rows of 32 heads, boxes of 128 rows.
    let a = encode_args(&heads(9, 128), "V", 0, &[8, 1000, 64]).unwrap();
    let m = a.arrays();
    assert_eq!(m.global_dim, vec![64, 1000, 8]);
    assert_eq!(m.global_strides, vec![128, 128 * 1000]);
    assert_eq!((a.data_type, m.box_dim), (9, vec![64, 128, 1]));
    // Rank 2 keeps its arrays.
    let flat = TensorMapParam {
        outer: None,
        ..heads(6, 64)
    };
    let a = encode_args(&flat, "K", 0, &[1, 577, 128]).unwrap();
    assert_eq!((a.rank, a.outer), (2, None));
    assert_eq!(a.arrays().global_dim, vec![128, 577]);
}

#[test]
fn rank_3_refusals() {
    let p = heads(6, 64);
    assert!(matches!(
        encode_args(&p, "K", 0, &[0, 577, 128]),
        Err(TmaError::Extent { extent: 0, .. })
    ));
    // D = 36 f16: lines of 72 bytes.
    assert!(matches!(
        encode_args(&p, "K", 0, &[4, 577, 36]),
        Err(TmaError::Stride { bytes: 72, .. })
    ));
    // Planes 2^40 bytes apart or more.
    assert!(matches!(
        encode_args(&p, "K", 0, &[2, 1 << 32, 128]),
        Err(TmaError::Stride { .. })
    ));
    assert!(matches!(
        encode_args(&p, "K", 0, &[4, 577]),
        Err(TmaError::UnboundDim { dim: 2, .. })
    ));
    for b in [0, 257] {
        let q = TensorMapParam {
            outer: Some(OuterDim {
                extent: Extent::Dim(0),
                box_dim: b,
            }),
            ..p.clone()
        };
        assert!(
            matches!(
                encode_args(&q, "K", 0, &[4, 577, 128]),
                Err(TmaError::Invalid { .. })
            ),
            "box {b}"
        );
    }
}

/// Where the copy engine reads element `(d, r)` of the box at coordinates `(d0, n0, h)`: the
/// byte offset from the base, or `None` when the element lies outside the map (filled with
/// zeros). This is the driver's documented meaning of the encode arguments.
fn box_source(a: &TensorMapArgs, (d0, n0, h): (u64, u64, u64), (d, r): (u64, u64)) -> Option<u64> {
    let m = a.arrays();
    let (x, y, z) = (d0 + d, n0 + r, h);
    if x >= m.global_dim[0] || y >= m.global_dim[1] || z >= m.global_dim[2] {
        return None;
    }
    Some(z * m.global_strides[1] + y * m.global_strides[0] + x * 2)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, rng_seed: proptest::test_runner::RngSeed::Fixed(11), ..ProptestConfig::default() })]

    /// Every box of head h reads only head h's rows: the last key tile's rows past N are
    /// zeros, never the next head's first rows (what a flattened `[BH * N, D]` map would read).
    #[test]
    fn ragged_boxes_stay_in_their_head(bh in 1u64..40, n in 1u64..2000, d128 in any::<bool>(), rows in prop::sample::select(vec![32u32, 64, 128])) {
        let d = if d128 { 128 } else { 64 };
        let a = encode_args(&heads(6, rows), "K", 0, &[bh as i64, n as i64, d as i64]).unwrap();
        let plane = n * d * 2;
        let h = bh - 1;
        let n0 = (n - 1) / rows as u64 * rows as u64; // the last tile
        for d0 in (0..d).step_by(64) {
            for r in 0..rows as u64 {
                for x in [0u64, 63] {
                    let src = box_source(&a, (d0, n0, h), (x, r));
                    if n0 + r < n {
                        let s = src.unwrap();
                        prop_assert!(s >= h * plane && s < (h + 1) * plane);
                        prop_assert_eq!(s, h * plane + (n0 + r) * d * 2 + (d0 + x) * 2);
                    } else {
                        prop_assert_eq!(src, None);
                    }
                }
            }
        }
    }
}

fn tensor(name: &str, dims: Vec<Dim>) -> Param {
    Param {
        name: name.into(),
        kind: ParamKind::Tensor {
            dtype: DType::F16,
            dims,
            order: MemOrder::RowMajor,
        },
        span: Span::default(),
    }
}

/// `attn(K: f16[BH, N, D], V: f16[BH, N, D])`.
fn attn() -> phobos_ir::Kernel {
    let d = |i| Dim::Dyn(i);
    let lit = Expr {
        kind: ExprKind::Lit(Lit::Int(1)),
        ty: Ty::Scalar(DType::I32),
        uniform: true,
        span: Span::default(),
    };
    phobos_ir::Kernel {
        name: "attn".into(),
        point: Point::default(),
        type_args: vec![],
        params: vec![
            tensor("K", vec![d(0), d(1), d(2)]),
            tensor("V", vec![d(0), d(1), d(2)]),
        ],
        dims: ["BH", "N", "D"]
            .iter()
            .zip([(0, 0), (0, 1), (0, 2)])
            .map(|(n, source)| DimVar {
                name: n.to_string(),
                source,
            })
            .collect(),
        aligned: vec![],
        launch: Launch {
            threads: 288,
            min_blocks_per_sm: None,
            max_regs: None,
        },
        grid: [lit.clone(), lit.clone(), lit],
        wheres: vec![],
        flops: None,
        bytes: None,
        locals: vec![],
        body: vec![],
        span: Span::default(),
    }
}

#[test]
fn plan_checks_a_rank_3_map_against_its_tensor() {
    let k = attn();
    let shape = [16usize, 1000, 64];
    let t = |ptr| {
        Arg::Tensor(TensorRef {
            ptr,
            dtype: DType::F16,
            shape: &shape,
            order: MemOrder::RowMajor,
        })
    };
    let args = [t(0x10000), t(0x90000)];
    let bound = bind_args(&k, &args).unwrap();
    let v = TensorMapParam {
        tensor: 1,
        ..heads(6, 128)
    };
    let facts = LaunchFacts {
        tensor_maps: vec![heads(6, 64), v],
        ..LaunchFacts::default()
    };
    let p = plan_launch(&facts, &k, &bound, &args).unwrap();
    assert_eq!(p.maps.len(), 2);
    assert_eq!(p.maps[1].global_address, 0x90000);
    assert_eq!(p.maps[0].arrays().global_dim, vec![64, 1000, 16]);
    assert_eq!(p.maps[1].arrays().box_dim, vec![64, 128, 1]);
    // A rank-2 map of the [BH, N, D] tensor (the flattened rows) does not describe it.
    let flat = LaunchFacts {
        tensor_maps: vec![TensorMapParam {
            outer: None,
            ..heads(6, 64)
        }],
        ..LaunchFacts::default()
    };
    let e = plan_launch(&flat, &k, &bound, &args).unwrap_err();
    assert!(matches!(e, TmaError::Mismatch { .. }), "{e}");
    // Nor does a map whose planes are not the tensor's heads (its outer extent is N).
    let wrong = LaunchFacts {
        tensor_maps: vec![TensorMapParam {
            outer: Some(OuterDim {
                extent: Extent::Dim(1),
                box_dim: 1,
            }),
            ..heads(6, 64)
        }],
        ..LaunchFacts::default()
    };
    let e = plan_launch(&wrong, &k, &bound, &args).unwrap_err();
    assert!(matches!(e, TmaError::Mismatch { .. }), "{e}");
    assert!(e.to_string().contains("`K`"), "{e}");
}
