//! Tests of the tensor-map arguments and launch preparation, without a GPU.

use super::*;
use crate::abi::{bind_args, Arg, TensorRef};
use crate::args::KernelArgs;
use crate::launch_plan::*;
use phobos_ir::{
    DType, Dim, DimVar, Expr, ExprKind, Launch, Lit, MemOrder, Param, ParamKind, Point, Ty,
};
use phobos_syntax::Span;
use proptest::prelude::*;

/// The map of a K-major f16 A `[M, K]` (row-major): 64 x `rows` boxes, 128-byte swizzle.
fn f16_a(rows: u32) -> TensorMapParam {
    TensorMapParam {
        tensor: 0,
        data_type: 6,
        elem_bytes: 2,
        global_dim: [Extent::Dim(1), Extent::Dim(0)],
        line_stride: Extent::Dim(1),
        box_dim: [64, rows],
        element_strides: [1, 1],
        interleave: 0,
        swizzle: 3,
        l2_promotion: 3,
        oob_fill: 0,
        outer: None,
    }
}

/// The map of an N-major B `[K, N]` (row-major) of `dtype`.
fn b_n_major(data_type: u32, elem_bytes: u32, rows: u32) -> TensorMapParam {
    TensorMapParam {
        tensor: 1,
        data_type,
        elem_bytes,
        global_dim: [Extent::Dim(2), Extent::Dim(1)],
        line_stride: Extent::Dim(2),
        box_dim: [128 / elem_bytes, rows],
        ..f16_a(rows)
    }
}

#[test]
fn k_major_f16_operand_encodes_k_innermost() {
    // dims: M = 4096, K = 1000, N = 392.
    let a = encode_args(&f16_a(128), "A", 0x1000, &[4096, 1000, 392]).unwrap();
    assert_eq!(a.rank, 2);
    assert_eq!(a.global_address, 0x1000);
    assert_eq!(a.global_dim, [1000, 4096]);
    assert_eq!(a.global_strides, [2000]);
    assert_eq!(a.box_dim, [64, 128]);
    assert_eq!(a.element_strides, [1, 1]);
    assert_eq!(
        (
            a.data_type,
            a.interleave,
            a.swizzle,
            a.l2_promotion,
            a.oob_fill
        ),
        (6, 0, 3, 3, 0)
    );
}

#[test]
fn n_major_b_and_static_extents() {
    let p = b_n_major(9, 2, 64);
    let a = encode_args(&p, "B", 0, &[520, 336, 392]).unwrap();
    assert_eq!(a.global_dim, [392, 336]);
    assert_eq!(a.global_strides, [784]);
    assert_eq!((a.data_type, a.box_dim), (9, [64, 64]));
    let s = TensorMapParam {
        global_dim: [Extent::Static(256), Extent::Dim(1)],
        line_stride: Extent::Static(256),
        ..p
    };
    let a = encode_args(&s, "B", 0, &[1, 7, 1]).unwrap();
    assert_eq!((a.global_dim, a.global_strides), ([256, 7], [512]));
}

#[test]
fn fp8_and_tf32_maps() {
    let fp8 = TensorMapParam {
        data_type: 0,
        elem_bytes: 1,
        box_dim: [128, 128],
        ..f16_a(128)
    };
    let a = encode_args(&fp8, "A", 0, &[64, 48, 64]).unwrap();
    assert_eq!((a.global_dim, a.global_strides), ([48, 64], [48]));
    let tf32 = TensorMapParam {
        data_type: 7,
        elem_bytes: 4,
        box_dim: [32, 256],
        ..f16_a(256)
    };
    let a = encode_args(&tf32, "A", 0, &[64, 12, 64]).unwrap();
    assert_eq!(a.global_strides, [48]);
}

#[test]
fn refusals_say_what_the_driver_would_refuse() {
    let p = f16_a(128);
    assert!(matches!(
        encode_args(&p, "A", 8, &[10, 16, 1]),
        Err(TmaError::Misaligned { address: 8, .. })
    ));
    // K = 12 f16: lines 24 bytes apart.
    let e = encode_args(&p, "A", 0, &[10, 12, 1]).unwrap_err();
    assert!(matches!(e, TmaError::Stride { bytes: 24, .. }), "{e}");
    assert!(e.to_string().contains("specialize"), "{e}");
    assert!(matches!(
        encode_args(&p, "A", 0, &[0, 16, 1]),
        Err(TmaError::Extent { extent: 0, .. })
    ));
    assert!(matches!(
        encode_args(&p, "A", 0, &[16]),
        Err(TmaError::UnboundDim { dim: 1, .. })
    ));
    let wide = TensorMapParam {
        box_dim: [128, 64],
        ..p.clone()
    };
    assert!(matches!(
        encode_args(&wide, "A", 0, &[16, 256, 1]),
        Err(TmaError::Invalid { .. })
    ));
    let big_box = TensorMapParam {
        box_dim: [64, 512],
        ..p
    };
    assert!(matches!(
        encode_args(&big_box, "A", 0, &[16, 256, 1]),
        Err(TmaError::Invalid { .. })
    ));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, rng_seed: proptest::test_runner::RngSeed::Fixed(7), ..ProptestConfig::default() })]

    /// A map encodes exactly when the leading dimension is 16-byte aligned, and then its
    /// stride is the leading dimension in bytes.
    #[test]
    fn stride_alignment_decides(m in 1i64..5000, k in 1i64..5000) {
        let r = encode_args(&f16_a(128), "A", 0x100, &[m, k, 1]);
        if (k * 2) % 16 == 0 {
            let a = r.unwrap();
            prop_assert_eq!(a.global_strides[0], k as u64 * 2);
            prop_assert_eq!(a.global_dim, [k as u64, m as u64]);
        } else {
            let is_stride = matches!(r, Err(TmaError::Stride { .. }));
            prop_assert!(is_stride);
        }
    }
}

fn i32_lit(v: i64) -> Expr {
    Expr {
        kind: ExprKind::Lit(Lit::Int(v)),
        ty: Ty::Scalar(DType::I32),
        uniform: true,
        span: Span::default(),
    }
}

fn tensor(name: &str, dtype: DType, dims: Vec<Dim>, order: MemOrder) -> Param {
    Param {
        name: name.into(),
        kind: ParamKind::Tensor { dtype, dims, order },
        span: Span::default(),
    }
}

/// `gemm(A: f16[M, K], B: f16[K, N], C: f32[M, N])`, grid (4, 2, 1).
fn gemm() -> phobos_ir::Kernel {
    let d = |i| Dim::Dyn(i);
    phobos_ir::Kernel {
        name: "gemm".into(),
        point: Point::default(),
        type_args: vec![],
        params: vec![
            tensor("A", DType::F16, vec![d(0), d(1)], MemOrder::RowMajor),
            tensor("B", DType::F16, vec![d(1), d(2)], MemOrder::RowMajor),
            tensor("C", DType::F32, vec![d(0), d(2)], MemOrder::RowMajor),
        ],
        dims: ["M", "K", "N"]
            .iter()
            .zip([(0, 0), (0, 1), (1, 1)])
            .map(|(n, source)| DimVar {
                name: n.to_string(),
                source,
            })
            .collect(),
        aligned: vec![],
        launch: Launch {
            threads: 256,
            min_blocks_per_sm: None,
            max_regs: None,
        },
        grid: [i32_lit(4), i32_lit(2), i32_lit(1)],
        wheres: vec![],
        flops: None,
        bytes: None,
        locals: vec![],
        body: vec![],
        span: Span::default(),
    }
}

#[test]
fn plan_appends_maps_zeroes_outputs_and_sets_grid_z() {
    let k = gemm();
    let (sa, sb, sc) = ([520, 336], [336, 392], [520, 392]);
    let t = |ptr, dtype, shape| {
        Arg::Tensor(TensorRef {
            ptr,
            dtype,
            shape,
            order: MemOrder::RowMajor,
        })
    };
    let args = [
        t(0x10000, DType::F16, &sa[..]),
        t(0x20000, DType::F16, &sb[..]),
        t(0x30000, DType::F32, &sc[..]),
    ];
    let bound = bind_args(&k, &args).unwrap();
    let facts = LaunchFacts {
        tensor_maps: vec![f16_a(128), b_n_major(6, 2, 64)],
        zero_before_launch: vec![2],
        grid_z: 4,
        persistent: false,
        cluster_x: 1,
        split_workspace: None,
        row_split: 1,
        cluster_z: 1,
    };
    let LaunchPlan {
        maps,
        zero,
        grid,
        logical,
        workspace,
    } = plan_launch(&facts, &k, &bound, &args).unwrap();
    assert_eq!((logical, workspace), (None, None));
    assert_eq!(maps.len(), 2);
    assert_eq!(maps[0].global_address, 0x10000);
    assert_eq!(maps[0].global_dim, [336, 520]);
    assert_eq!(maps[1].global_address, 0x20000);
    assert_eq!(maps[1].global_dim, [392, 336]);
    assert_eq!(zero, vec![(0x30000, 520 * 392 * 4)]);
    assert_eq!(grid, [4, 2, 4]);

    // A map that does not describe its tensor (C is f32, the map says 2-byte elements).
    let wrong = LaunchFacts {
        tensor_maps: vec![TensorMapParam {
            tensor: 2,
            global_dim: [Extent::Dim(2), Extent::Dim(0)],
            line_stride: Extent::Dim(2),
            ..f16_a(128)
        }],
        ..LaunchFacts::default()
    };
    let e = plan_launch(&wrong, &k, &bound, &args).unwrap_err();
    assert!(matches!(e, TmaError::Mismatch { .. }), "{e}");
    assert!(e.to_string().contains("`C`"), "{e}");
}

#[test]
fn a_map_of_a_column_major_tensor_puts_its_first_axis_innermost() {
    let mut k = gemm();
    if let ParamKind::Tensor { order, .. } = &mut k.params[1].kind {
        *order = MemOrder::ColMajor;
    }
    let (sa, sb, sc) = ([64, 128], [128, 72], [64, 72]);
    let args = [
        Arg::Tensor(TensorRef {
            ptr: 0x100,
            dtype: DType::F16,
            shape: &sa,
            order: MemOrder::RowMajor,
        }),
        Arg::Tensor(TensorRef {
            ptr: 0x200,
            dtype: DType::F16,
            shape: &sb,
            order: MemOrder::ColMajor,
        }),
        Arg::Tensor(TensorRef {
            ptr: 0x300,
            dtype: DType::F32,
            shape: &sc,
            order: MemOrder::RowMajor,
        }),
    ];
    let bound = bind_args(&k, &args).unwrap();
    // B col-major [K, N]: K contiguous, a K-major operand.
    let b = TensorMapParam {
        tensor: 1,
        global_dim: [Extent::Dim(1), Extent::Dim(2)],
        line_stride: Extent::Dim(1),
        ..f16_a(128)
    };
    let facts = LaunchFacts {
        tensor_maps: vec![b],
        ..LaunchFacts::default()
    };
    let LaunchPlan {
        maps,
        zero,
        grid,
        logical,
        workspace,
    } = plan_launch(&facts, &k, &bound, &args).unwrap();
    assert_eq!(workspace, None);
    assert_eq!(maps[0].global_dim, [128, 72]);
    assert_eq!(maps[0].global_strides, [256]);
    assert!(zero.is_empty());
    assert_eq!(grid, [4, 2, 1]);
    assert_eq!(logical, None);
    // Persistent: the tiles in a row along x (clamped at launch), the logical grid passed on.
    let persistent = LaunchFacts {
        persistent: true,
        ..facts.clone()
    };
    let p = plan_launch(&persistent, &k, &bound, &args).unwrap();
    assert_eq!((p.grid, p.logical), ([8, 1, 1], Some([4, 2])));
    // Clusters of 2 along x: the grid's x rounded up to whole clusters (4 stays 4, 5 goes to
    // 6), y and z untouched.
    let cluster = LaunchFacts {
        cluster_x: 2,
        ..facts.clone()
    };
    assert_eq!(
        plan_launch(&cluster, &k, &bound, &args).unwrap().grid,
        [4, 2, 1]
    );
    let mut b5 = bound.clone();
    b5.grid[0] = 5;
    assert_eq!(
        plan_launch(&cluster, &k, &b5, &args).unwrap().grid,
        [6, 2, 1]
    );
    // Persistent in clusters: the logical grid keeps the tile counts (the kernel walks 5 M
    // tiles as 3 pairs); the launch's tiles cover whole clusters, 6 x 2.
    let both = LaunchFacts {
        persistent: true,
        ..cluster.clone()
    };
    let p = plan_launch(&both, &k, &b5, &args).unwrap();
    assert_eq!((p.grid, p.logical), ([12, 1, 1], Some([5, 2])));
    let p = plan_launch(&both, &k, &bound, &args).unwrap();
    assert_eq!((p.grid, p.logical), ([8, 1, 1], Some([4, 2])));
    // ROW_SPLIT: each block of the kernel's grid a cluster of 4 along x (5 instances: 20
    // blocks), y and z untouched; never with another cluster or a persistent walk, nor past
    // 2^31 - 1 blocks.
    let split = LaunchFacts {
        row_split: 4,
        ..facts.clone()
    };
    assert_eq!(
        plan_launch(&split, &k, &b5, &args).unwrap().grid,
        [20, 2, 1]
    );
    for bad in [
        LaunchFacts {
            cluster_x: 2,
            ..split.clone()
        },
        LaunchFacts {
            persistent: true,
            ..split.clone()
        },
    ] {
        assert!(plan_launch(&bad, &k, &b5, &args).is_err());
    }
    let mut huge = bound.clone();
    huge.grid[0] = 1 << 30;
    assert!(plan_launch(&split, &k, &huge, &args).is_err());
    // The grid part alone (what `phobos emit` prints), from the kernel's grid without arguments.
    assert_eq!(
        launch_grid(&both, [5, 2, 1]).unwrap(),
        LaunchGrid {
            grid: [12, 1, 1],
            logical: Some([5, 2])
        }
    );
    assert_eq!(launch_grid(&split, [5, 2, 1]).unwrap().grid, [20, 2, 1]);
    let e = launch_grid(&split, [1 << 30, 1, 1]).unwrap_err();
    assert!(
        matches!(
            e,
            TmaError::Launch {
                part: "the grid",
                ..
            }
        ),
        "{e}"
    );
    // ... and only over a 2-D grid.
    let mut b3 = bound.clone();
    b3.grid[2] = 2;
    assert!(plan_launch(&persistent, &k, &b3, &args).is_err());
    // A grid z over a kernel that has its own z is refused.
    let mut b2 = bound.clone();
    b2.grid[2] = 3;
    let facts = LaunchFacts {
        grid_z: 2,
        ..LaunchFacts::default()
    };
    assert!(plan_launch(&facts, &k, &b2, &args).is_err());
}

#[test]
fn split_workspace_holds_every_part_then_one_counter_per_tile() {
    let k = gemm();
    let (sa, sb, sc) = ([520, 336], [336, 392], [520, 392]);
    let t = |ptr, dtype, shape| {
        Arg::Tensor(TensorRef {
            ptr,
            dtype,
            shape,
            order: MemOrder::RowMajor,
        })
    };
    let args = [
        t(0x10000, DType::F16, &sa[..]),
        t(0x20000, DType::F16, &sb[..]),
        t(0x30000, DType::F32, &sc[..]),
    ];
    let bound = bind_args(&k, &args).unwrap();
    let facts = LaunchFacts {
        grid_z: 3,
        split_workspace: Some(SplitWorkspace { c: 2, parts: 3 }),
        ..LaunchFacts::default()
    };
    let p = plan_launch(&facts, &k, &bound, &args).unwrap();
    // Nothing to zero per launch; 3 slices of C's 520 x 392 floats, then a counter per block
    // of the 4 x 2 grid.
    assert!(p.zero.is_empty());
    assert_eq!(p.grid, [4, 2, 3]);
    let slices = 3 * 520 * 392 * 4;
    assert_eq!(
        p.workspace,
        Some(WorkspacePlan {
            bytes: slices + 8 * 4,
            counters_at: slices
        })
    );
    // The workspace sizes itself from a tensor; a scalar there is refused, so is one part.
    for bad in [
        SplitWorkspace { c: 3, parts: 3 },
        SplitWorkspace { c: 2, parts: 1 },
    ] {
        let facts = LaunchFacts {
            split_workspace: Some(bad),
            ..facts.clone()
        };
        assert!(plan_launch(&facts, &k, &bound, &args).is_err(), "{bad:?}");
    }
}

#[test]
fn tensor_maps_pass_by_value_in_aligned_boxes() {
    let mut a = KernelArgs::new();
    let mut m = TensorMap { opaque: [0; 16] };
    for (i, w) in m.opaque.iter_mut().enumerate() {
        *w = 0x0101_0101_0101_0101 * i as u64;
    }
    a.ptr(0xabc).i32(7).tensor_map(&m).i32(9);
    assert_eq!(a.len(), 4);
    assert_eq!(a.bytes(2).len(), 128);
    assert_eq!(a.bytes(2), m.to_bytes());
    assert_eq!(a.bytes(3), 9i32.to_le_bytes().to_vec());
    let ptrs = a.param_ptrs();
    assert_eq!(ptrs[2] as usize % 64, 0, "a map is 64-byte aligned");
    // SAFETY: the pointer points into `a`'s boxed map, alive here.
    let back = unsafe { *(ptrs[2] as *const TensorMap) };
    assert_eq!(back, m);
    let b = a.clone();
    assert_eq!(a, b);
}
