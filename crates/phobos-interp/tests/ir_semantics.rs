//! Value semantics of every scalar type and tile operation, on hand-built IR.

mod common;

use common::build::*;
use common::run_ok;
use phobos_interp::Args;
use phobos_ir::*;

/// Runs a one-thread kernel that stores `value(builder)` into `O[0]` (of the value's type).
fn scalar(
    inputs: &[(&str, HostTensor)],
    value: impl FnOnce(&mut KernelBuilder, &[ParamId]) -> Expr,
) -> f64 {
    let mut b = KernelBuilder::new("k", 1);
    let ids: Vec<ParamId> = inputs
        .iter()
        .map(|(n, t)| {
            let dims: Vec<String> = t.shape.iter().map(|d| d.to_string()).collect();
            let dims: Vec<&str> = dims.iter().map(|s| s.as_str()).collect();
            b.tensor(n, t.dtype, &dims)
        })
        .collect();
    let v = value(&mut b, &ids);
    let o = b.tensor("O", v.ty.dtype(), &["1"]);
    let k = b.finish(
        [int(1), int(1), int(1)],
        vec![store(o, vec![ati(int(0))], v)],
    );
    let mut args = Args::new();
    for (_, t) in inputs {
        args = args.push(t.clone());
    }
    let out = run_ok(&k, args.push(HostTensor::zeros(k_dtype(&k), &[1])));
    out.get("O").unwrap().data[0]
}

fn k_dtype(k: &Kernel) -> DType {
    match k.params.last().unwrap().kind {
        ParamKind::Tensor { dtype, .. } => dtype,
        _ => unreachable!(),
    }
}

/// Runs a one-thread kernel that stores the tile `value(builder)` into `O` of its shape.
fn tile(
    inputs: &[(&str, HostTensor)],
    value: impl FnOnce(&mut KernelBuilder, &[ParamId]) -> Expr,
) -> HostTensor {
    let mut b = KernelBuilder::new("k", 1);
    let ids: Vec<ParamId> = inputs
        .iter()
        .map(|(n, t)| {
            let dims: Vec<String> = t.shape.iter().map(|d| d.to_string()).collect();
            let dims: Vec<&str> = dims.iter().map(|s| s.as_str()).collect();
            b.tensor(n, t.dtype, &dims)
        })
        .collect();
    let v = value(&mut b, &ids);
    let shape = v.ty.shape().unwrap().to_vec();
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    let dims: Vec<&str> = dims.iter().map(|s| s.as_str()).collect();
    let o = b.tensor("O", v.ty.dtype(), &dims);
    let index = shape.iter().map(|&n| span_of(int(0), n)).collect();
    let k = b.finish([int(1), int(1), int(1)], vec![store(o, index, v)]);
    let mut args = Args::new();
    for (_, t) in inputs {
        args = args.push(t.clone());
    }
    let ushape: Vec<usize> = shape.iter().map(|&d| d as usize).collect();
    let out = run_ok(&k, args.push(HostTensor::zeros(k_dtype(&k), &ushape)));
    out.get("O").unwrap().clone()
}

#[test]
fn narrow_floats_round_after_every_operation() {
    // 1 + 2^-11 is not an f16: each addition rounds back to 1.
    let v = scalar(&[], |_, _| {
        add(
            add(lit(1.0, DType::F16), lit(1.0 / 2048.0, DType::F16)),
            lit(1.0 / 2048.0, DType::F16),
        )
    });
    assert_eq!(v, 1.0);
    // In f32 the same sum is exact.
    let v = scalar(&[], |_, _| {
        add(
            add(lit(1.0, DType::F32), lit(1.0 / 2048.0, DType::F32)),
            lit(1.0 / 2048.0, DType::F32),
        )
    });
    assert_eq!(v, 1.0 + 2.0 / 2048.0);
    // f32 division is correctly rounded.
    let v = scalar(&[], |_, _| {
        bin(BinOp::Div, lit(1.0, DType::F32), lit(3.0, DType::F32))
    });
    assert_eq!(v, (1.0f32 / 3.0) as f64);
    let v = scalar(&[], |_, _| {
        bin(
            BinOp::Mul,
            lit(1.5, DType::BF16),
            lit(1.0 + 1.0 / 128.0, DType::BF16),
        )
    });
    assert_eq!(v, DType::BF16.round(1.5 * (1.0 + 1.0 / 128.0)));
}

#[test]
fn integers_wrap_and_casts_saturate() {
    assert_eq!(
        scalar(&[], |_, _| add(lit(127.0, DType::I8), lit(1.0, DType::I8))),
        -128.0
    );
    assert_eq!(
        scalar(&[], |_, _| bin(
            BinOp::Sub,
            lit(0.0, DType::U32),
            lit(1.0, DType::U32)
        )),
        4294967295.0
    );
    assert_eq!(
        scalar(&[], |_, _| mul(
            lit(65536.0, DType::I32),
            lit(65536.0, DType::I32)
        )),
        0.0
    );
    assert_eq!(
        scalar(&[], |_, _| bin(
            BinOp::Div,
            lit(-7.0, DType::I32),
            lit(2.0, DType::I32)
        )),
        -3.0
    );
    assert_eq!(
        scalar(&[], |_, _| bin(
            BinOp::Rem,
            lit(-7.0, DType::I32),
            lit(2.0, DType::I32)
        )),
        -1.0
    );
    assert_eq!(
        scalar(&[], |_, _| cast(lit(1e10, DType::F32), DType::I32)),
        i32::MAX as f64
    );
    assert_eq!(
        scalar(&[], |_, _| cast(lit(-1e10, DType::F32), DType::I8)),
        -128.0
    );
    assert_eq!(
        scalar(&[], |_, _| cast(lit(f64::NAN, DType::F32), DType::I32)),
        0.0
    );
    assert_eq!(
        scalar(&[], |_, _| cast(lit(-2.7, DType::F32), DType::I32)),
        -2.0
    );
    // Integer to integer wraps.
    assert_eq!(
        scalar(&[], |_, _| cast(lit(300.0, DType::I32), DType::I8)),
        44.0
    );
    assert_eq!(
        scalar(&[], |_, _| cast(lit(70000.0, DType::F32), DType::F16)),
        f64::INFINITY
    );
}

#[test]
fn math_functions_round_to_their_type() {
    let v = scalar(&[], |_, _| math(MathFn::Exp, lit(1.0, DType::F32)));
    assert_eq!(v, std::f64::consts::E as f32 as f64);
    let v = scalar(&[], |_, _| math(MathFn::Rsqrt, lit(2.0, DType::F16)));
    assert_eq!(v, DType::F16.round(1.0 / 2f64.sqrt()));
    assert_eq!(
        scalar(&[], |_, _| math(MathFn::Abs, lit(-5.0, DType::I32))),
        5.0
    );
    let v = scalar(&[], |_, _| math(MathFn::Tanh, lit(0.5, DType::F64)));
    assert_eq!(v, 0.5f64.tanh());
}

#[test]
fn loads_outside_the_tensor_read_zero_and_stores_are_skipped() {
    // 8 threads read X[t - 2] (X has 4 elements) and write O[t - 1] (O has 6).
    let mut b = KernelBuilder::new("k", 8);
    let x = b.tensor("X", DType::F32, &["4"]);
    let o = b.tensor("O", DType::F32, &["6"]);
    let t = || ctx(Ctx::Thread);
    let v = b.load(x, vec![ati(bin(BinOp::Sub, t(), int(2)))]);
    let k = b.finish(
        [int(1), int(1), int(1)],
        vec![store(o, vec![ati(bin(BinOp::Sub, t(), int(1)))], v)],
    );
    let xs = HostTensor::from_f64(DType::F32, &[4], &[1.0, 2.0, 3.0, 4.0]);
    let os = HostTensor::from_f64(DType::F32, &[6], &[9.0; 6]);
    let out = run_ok(&k, Args::new().push(xs).push(os));
    // O[j] = X[j - 1] for j = t - 1 in 0..6; X[-1] reads zero.
    assert_eq!(
        out.get("O").unwrap().data,
        vec![0.0, 1.0, 2.0, 3.0, 4.0, 0.0]
    );
}

#[test]
fn tile_loads_and_stores_mask_every_edge() {
    // A 4x4 tile at (-1, 2) of a 3x4 tensor, stored back at (1, -2) into a 3x3 output.
    let x = HostTensor::from_f64(
        DType::I32,
        &[3, 4],
        &(0..12).map(f64::from).collect::<Vec<_>>(),
    );
    let mut b = KernelBuilder::new("k", 4);
    let xp = b.tensor("X", DType::I32, &["3", "4"]);
    let o = b.tensor("O", DType::I32, &["3", "3"]);
    let v = b.load(xp, vec![span_of(int(-1), 4), span_of(int(2), 4)]);
    let k = b.finish(
        [int(1), int(1), int(1)],
        vec![store(o, vec![span_of(int(1), 4), span_of(int(-2), 4)], v)],
    );
    let out = run_ok(
        &k,
        Args::new()
            .push(x)
            .push(HostTensor::from_f64(DType::I32, &[3, 3], &[-1.0; 9])),
    );
    // Tile element (r, c) = X[r - 1, c + 2] (zero outside); it lands at O[r + 1, c - 2].
    let mut expected = vec![-1.0; 9];
    for r in 0..4i64 {
        for c in 0..4i64 {
            let (xr, xc, or, oc) = (r - 1, c + 2, r + 1, c - 2);
            let v = if (0..3).contains(&xr) && (0..4).contains(&xc) {
                (xr * 4 + xc) as f64
            } else {
                0.0
            };
            if (0..3).contains(&or) && (0..3).contains(&oc) {
                expected[(or * 3 + oc) as usize] = v;
            }
        }
    }
    assert_eq!(out.get("O").unwrap().data, expected);
}

/// Small integers in [-4, 4] as `dtype`, so float sums are exact in any order.
fn small_ints(dtype: DType, shape: &[usize], seed: u64) -> HostTensor {
    let r = phobos_interp::host::random_tensor(DType::I32, shape, seed);
    HostTensor::from_f64(dtype, shape, &r.data)
}

#[test]
fn reductions_keep_the_axis_or_give_a_scalar() {
    let x = small_ints(DType::F32, &[3, 5], 3);
    let rows = tile(&[("X", x.clone())], |b, ids| {
        let t = b.load(ids[0], vec![span_of(int(0), 3), span_of(int(0), 5)]);
        reduce(ReduceOp::Sum, Some(1), t)
    });
    assert_eq!(rows.shape, vec![3, 1]);
    for r in 0..3 {
        assert_eq!(rows.data[r], x.data[r * 5..r * 5 + 5].iter().sum::<f64>());
    }
    let cols = tile(&[("X", x.clone())], |b, ids| {
        let t = b.load(ids[0], vec![span_of(int(0), 3), span_of(int(0), 5)]);
        reduce(ReduceOp::Max, Some(0), t)
    });
    assert_eq!(cols.shape, vec![1, 5]);
    for c in 0..5 {
        assert_eq!(
            cols.data[c],
            (0..3).map(|r| x.data[r * 5 + c]).fold(f64::MIN, f64::max)
        );
    }
    let all = scalar(&[("X", x.clone())], |b, ids| {
        let t = b.load(ids[0], vec![span_of(int(0), 3), span_of(int(0), 5)]);
        reduce(ReduceOp::Min, None, t)
    });
    assert_eq!(all, x.data.iter().copied().fold(f64::MAX, f64::min));
}

#[test]
fn dot_accumulates_in_its_accumulator_type() {
    // i8 operands accumulate in i32: 100 * 100 * 4 does not fit i8 but fits i32.
    let a = HostTensor::from_f64(DType::I8, &[2, 4], &[100.0; 8]);
    let b = HostTensor::from_f64(DType::I8, &[4, 3], &[100.0; 12]);
    let c = tile(&[("A", a), ("B", b)], |bb, ids| {
        let x = bb.load(ids[0], vec![span_of(int(0), 2), span_of(int(0), 4)]);
        let y = bb.load(ids[1], vec![span_of(int(0), 4), span_of(int(0), 3)]);
        dot(x, y, false, false)
    });
    assert_eq!(c.dtype, DType::I32);
    assert_eq!(c.data, vec![40000.0; 6]);
    // f16 operands accumulate in f32: 2048 + 1 + 1 is exact in f32, not in f16.
    let a = HostTensor::from_f64(DType::F16, &[1, 3], &[2048.0, 1.0, 1.0]);
    let b = HostTensor::from_f64(DType::F16, &[3, 1], &[1.0, 1.0, 1.0]);
    let c = tile(&[("A", a), ("B", b)], |bb, ids| {
        let x = bb.load(ids[0], vec![span_of(int(0), 1), span_of(int(0), 3)]);
        let y = bb.load(ids[1], vec![span_of(int(0), 3), span_of(int(0), 1)]);
        dot(x, y, false, false)
    });
    assert_eq!(c.data, vec![2050.0]);
}

#[test]
fn dot_t_and_transpose_agree_with_the_host() {
    let a = small_ints(DType::F32, &[3, 4], 5);
    let b = small_ints(DType::F32, &[5, 4], 6);
    let c = tile(&[("A", a.clone()), ("B", b.clone())], |bb, ids| {
        let x = bb.load(ids[0], vec![span_of(int(0), 3), span_of(int(0), 4)]);
        let y = bb.load(ids[1], vec![span_of(int(0), 5), span_of(int(0), 4)]);
        dot(x, y, true, false)
    });
    let c2 = tile(&[("A", a.clone()), ("B", b.clone())], |bb, ids| {
        let x = bb.load(ids[0], vec![span_of(int(0), 3), span_of(int(0), 4)]);
        let y = bb.load(ids[1], vec![span_of(int(0), 5), span_of(int(0), 4)]);
        dot(x, transpose(y), false, false)
    });
    for i in 0..3 {
        for j in 0..5 {
            let e: f64 = (0..4).map(|k| a.data[i * 4 + k] * b.data[j * 4 + k]).sum();
            assert_eq!(c.data[i * 5 + j], e);
        }
    }
    assert_eq!(c, c2);
}

#[test]
fn tf32_rounds_f32_inputs() {
    // 1 + 2^-12 is an f32 but not a TF32 (10 mantissa bits): it rounds to 1.
    let x = 1.0 + 1.0 / 4096.0;
    let a = HostTensor::from_f64(DType::F32, &[1, 1], &[x]);
    let b = HostTensor::from_f64(DType::F32, &[1, 1], &[1.0]);
    for (tf32, expected) in [(false, x), (true, 1.0)] {
        let c = tile(&[("A", a.clone()), ("B", b.clone())], |bb, ids| {
            let p = bb.load(ids[0], vec![span_of(int(0), 1), span_of(int(0), 1)]);
            let q = bb.load(ids[1], vec![span_of(int(0), 1), span_of(int(0), 1)]);
            dot(p, q, false, tf32)
        });
        assert_eq!(c.data, vec![expected], "tf32 = {tf32}");
    }
    // Ties round away from zero: 1 + 2^-11 lies halfway between two TF32 values.
    let a = HostTensor::from_f64(
        DType::F32,
        &[1, 2],
        &[1.0 + 1.0 / 2048.0, -(1.0 + 1.0 / 2048.0)],
    );
    let b = HostTensor::from_f64(DType::F32, &[2, 1], &[1.0, 0.0]);
    let c = tile(&[("A", a), ("B", b)], |bb, ids| {
        let p = bb.load(ids[0], vec![span_of(int(0), 1), span_of(int(0), 2)]);
        let q = bb.load(ids[1], vec![span_of(int(0), 2), span_of(int(0), 1)]);
        dot(p, q, false, true)
    });
    assert_eq!(c.data, vec![1.0 + 1.0 / 1024.0]);
}

#[test]
fn tile_get_where_arange_and_broadcast() {
    // where(arange(6) % 2 == 0, arange(6), -1), then element 4 and an out-of-range element.
    let mk = || {
        let ar = e(ExprKind::Arange(6), Ty::Tile(DType::I32, vec![6]), true);
        let even = bin(
            BinOp::Eq,
            bin(BinOp::Rem, ar.clone(), broadcast(int(2), DType::I32, &[6])),
            broadcast(int(0), DType::I32, &[6]),
        );
        select(even, ar, broadcast(int(-1), DType::I32, &[6]))
    };
    let t = tile(&[], |_, _| mk());
    assert_eq!(t.data, vec![0.0, -1.0, 2.0, -1.0, 4.0, -1.0]);
    let get = |i: i64| {
        scalar(&[], move |_, _| {
            e(
                ExprKind::TileGet {
                    tile: Box::new(mk()),
                    index: vec![int(i)],
                },
                Ty::Scalar(DType::I32),
                true,
            )
        })
    };
    assert_eq!(get(4), 4.0);
    assert_eq!(get(6), 0.0);
    assert_eq!(get(-1), 0.0);
    // A [2, 1] column broadcast against a [1, 3] row.
    let col = HostTensor::from_f64(DType::F32, &[2, 1], &[10.0, 20.0]);
    let row = HostTensor::from_f64(DType::F32, &[1, 3], &[1.0, 2.0, 3.0]);
    let t = tile(&[("C", col), ("R", row)], |b, ids| {
        let c = b.load(ids[0], vec![span_of(int(0), 2), span_of(int(0), 1)]);
        let r = b.load(ids[1], vec![span_of(int(0), 1), span_of(int(0), 3)]);
        add(
            broadcast(c, DType::F32, &[2, 3]),
            broadcast(r, DType::F32, &[2, 3]),
        )
    });
    assert_eq!(t.data, vec![11.0, 12.0, 13.0, 21.0, 22.0, 23.0]);
}
