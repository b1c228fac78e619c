//! Main-loop strategies: what replaces a recognized GEMM loop ([`crate::gemm_match`]).
//!
//! A strategy provides (1) the accumulator layout, which the `acc` local keeps for its whole
//! life, (2) the shared-memory bytes of its pipeline, (3) the headers it needs, and (4) the C++
//! statement that runs the loop. The FFMA strategy is the generic one; the main loops of
//! `cuda/gemm/` (wgmma + TMA, mma.sync, register-tiled FFMA) are [`MainLoop::Fast`], selected
//! in [`select`] by [`gemm_fast`]. See the crate README.

use crate::gemm_fast::{
    self, BIssue, CopyIssuer, GemmPlan, GemmRequest, Knobs, NoMainLoop, OperandCopy, Pipeline,
    Reject, Release, SharedOperand, Strategy,
};
use crate::gemm_match::{GemmMatch, GemmOperand};
use crate::gemm_split::SplitRecord;
use crate::layout::{blocked, FfmaAcc, Layout};
use crate::{GemmPolicy, Target};
use phobos_ir::{BinOp, DType, Dim, Expr, ExprKind, Kernel, Lit, MemOrder, ParamKind};

/// The rendered arguments of a main-loop call.
#[derive(Clone, Debug)]
pub struct LoopArgs {
    /// The accumulator tile variable.
    pub acc: String,
    /// The alias the kernel declares the accumulator's layout by (see `Emitter::alias`).
    pub acc_alias: String,
    /// `ph::Operand<S>{..}` of A and of B.
    pub a: String,
    pub b: String,
    pub k_start: String,
    pub k_end: String,
    /// `unsigned char*` to the strategy's shared-memory region.
    pub smem: String,
    /// The kernel's tensor-map parameters of A and B (wgmma + TMA only).
    pub tma: Option<(String, String)>,
}

/// How a recognized GEMM loop runs.
#[derive(Clone, Debug, PartialEq)]
pub enum MainLoop {
    /// CUDA-core FMAs: operands global -> registers -> shared memory (k-major, two buffers),
    /// register-tiled product into the FfmaAcc layout (`ph::FfmaGemm` in phobos_dot.cuh).
    Ffma(FfmaLoop),
    /// A main loop of `cuda/gemm/` chosen by [`gemm_fast`]: wgmma + TMA, mma.sync, or the
    /// register-tiled FFMA loop.
    Fast(FastLoop),
}

/// A `cuda/gemm/` main loop and its accumulator layout (`typename MainLoop::Layout`).
#[derive(Clone, Debug, PartialEq)]
pub struct FastLoop {
    pub plan: GemmPlan,
    pub acc_layout: Layout,
    /// The faster main loops tried before this one and why each was not taken, in order.
    pub rejected: Vec<(Strategy, NoMainLoop)>,
}

/// How one recognized GEMM loop runs: the plan's typed record of it (`Emitted::gemms`; the
/// notes render it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GemmRecord {
    /// The `cuda/gemm/` main loop, or `None` for the generic FFMA loop of `phobos_dot.cuh`.
    pub strategy: Option<Strategy>,
    /// How the fast main loops move A and B into shared memory, and at which width.
    pub copies: Option<[OperandCopy; 2]>,
    /// The fast main loops' pipeline: how deep, at which k step, and who issues the copies
    /// (on the wgmma loop: thread 0 between its MMAs, or a producer warp).
    pub pipeline: Option<Pipeline>,
    /// SPLIT_K applied to this loop: the parts, and how their partial tiles combine.
    pub split: Option<SplitRecord>,
    /// The wgmma loop: when its consumers hand a stage's slot back (SCHEDULE=3:
    /// [`Release::OwnCompletion`]); `None` on the other loops.
    pub release: Option<Release>,
    /// The wgmma loop: which blocks of a cluster copy B (CLUSTER=3: [`BIssue::Rank0`]); `None`
    /// on the other loops.
    pub b_issue: Option<BIssue>,
    /// The wgmma loop: the operand a cluster's blocks share (CLUSTER=4: [`SharedOperand::A`]);
    /// `None` on the other loops.
    pub shared: Option<SharedOperand>,
    /// The faster main loops tried for this loop and why each was not taken, in the order
    /// tried (the notes' "no ... main loop: ..." lines); empty when none was tried (FFMA-only
    /// policy, or a layout already set by an earlier loop).
    pub rejected: Vec<(Strategy, NoMainLoop)>,
}

/// The FFMA strategy's parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct FfmaLoop {
    pub acc_layout: Layout,
    pub acc_dtype: DType,
    pub tile_k: i64,
    pub a_k_inner: bool,
    pub b_k_inner: bool,
    /// The fast main loops tried before falling back to this one and why each was not taken,
    /// in order.
    pub rejected: Vec<(Strategy, NoMainLoop)>,
}

/// Chooses the strategy of a recognized loop; returns it and the notes that explain the
/// choice (which main loop, and why each faster one was not taken).
///
/// `fixed` is the accumulator's layout when an earlier choice already set it (the local
/// keeps one layout). With [`crate::GemmPolicy::Fastest`] the rules are:
///
/// - f16, bf16, fp8, i8 and TF32 (a tf32 operand, or an f32 dot allowed to round): the
///   wgmma and TMA loop (`gemm/sm90.cuh`, on a target with wgmma and TMA) when its constraints hold (tiles,
///   threads, operand orders, whole-K loop, 16-byte aligned leading dims, no batch index),
///   else the mma.sync loop (`gemm/sm80.cuh`), else the generic FFMA loop;
/// - exact f32: the register-tiled FFMA loop of `gemm/ffma.cuh` when its constraints hold,
///   else the generic FFMA loop of `phobos_dot.cuh`.
///
/// Tile sizes, STAGES, WARP_M/N and TILE_TM/TN come from the point ([`Knobs::from_point`]);
/// the block must have exactly the plan's threads (`@launch`), else the next strategy is
/// tried. On sm90 the thread count picks the copy issuer: `128 * warpgroups` threads, thread
/// 0 issues the copies between its MMAs; `128 * warpgroups + 32`, a producer warp does.
pub fn select(
    k: &Kernel,
    m: &GemmMatch,
    fixed: Option<&Layout>,
    policy: GemmPolicy,
    target: &Target,
) -> (MainLoop, Vec<String>) {
    let threads = k.launch.threads;
    let mut notes = Vec::new();
    let mut rejected = Vec::new();
    let loop_name = &k.locals[m.k_var].name;
    if fixed.is_some() {
        notes.push(format!(
            "GEMM over {loop_name}: the accumulator's layout is already set by an earlier loop"
        ));
    } else if policy == GemmPolicy::FfmaOnly {
        notes.push(format!("GEMM over {loop_name}: FFMA-only policy"));
    } else {
        let knobs = Knobs::from_point(&k.point);
        let req = request(k, m, target);
        let exact_f32 = matches!(m.a.dtype, DType::F32) && !m.tf32;
        let order: &[Strategy] = if exact_f32 {
            &[Strategy::Ffma]
        } else {
            &[Strategy::Sm90, Strategy::Sm80]
        };
        for &s in order {
            let why = match gemm_fast::plan_for(s, &req, &knobs) {
                Ok(plan) if plan.threads == threads => {
                    notes.push(format!("GEMM over {loop_name}: {}", describe_plan(&plan)));
                    let acc_layout = Layout::External {
                        cpp: plan.layout(),
                        alias: format!("{}Acc{}x{}", strategy_name(s), m.tile_m, m.tile_n),
                        r: m.tile_m,
                        c: m.tile_n,
                    };
                    let fast = FastLoop {
                        plan,
                        acc_layout,
                        rejected,
                    };
                    return (MainLoop::Fast(fast), notes);
                }
                Ok(plan) => NoMainLoop::Threads {
                    needs: plan.threads,
                    launch: threads,
                },
                Err(Reject::Strategy(_, why)) => why,
                Err(e) => {
                    notes.push(format!(
                        "GEMM over {loop_name}: no {} main loop: {e}",
                        strategy_name(s)
                    ));
                    continue;
                }
            };
            notes.push(format!(
                "GEMM over {loop_name}: no {} main loop: {why}",
                strategy_name(s)
            ));
            rejected.push((s, why));
        }
    }
    let acc_layout = fixed.cloned().unwrap_or_else(|| {
        match FfmaAcc::choose(m.tile_m, m.tile_n, threads, &k.point) {
            Some(f) => Layout::Ffma(f),
            None => blocked(&[m.tile_m, m.tile_n], threads),
        }
    });
    let ffma = MainLoop::Ffma(FfmaLoop {
        acc_layout,
        acc_dtype: m.acc_dtype,
        tile_k: m.tile_k,
        a_k_inner: m.a.k_inner,
        b_k_inner: m.b.k_inner,
        rejected,
    });
    notes.push(format!(
        "GEMM over {loop_name}: generic {}",
        ffma.describe()
    ));
    (ffma, notes)
}

/// The strategy's name in notes.
pub fn strategy_name(s: Strategy) -> &'static str {
    match s {
        Strategy::Sm90 => "Sm90",
        Strategy::Sm80 => "Sm80",
        Strategy::Ffma => "Ffma",
    }
}

/// One line saying which main loop a plan is and how it runs.
fn describe_plan(p: &GemmPlan) -> String {
    let what = match p.strategy {
        Strategy::Sm90 => {
            let issuer = match p.pipeline.issuer {
                CopyIssuer::ProducerWarp => "a producer warp issues the copies",
                _ => {
                    "thread 0 issues the copies (a producer warp needs 32 more threads in @launch)"
                }
            };
            format!("wgmma + TMA main loop, {issuer}")
        }
        Strategy::Sm80 => "mma.sync + ldmatrix main loop".to_string(),
        Strategy::Ffma => "register-tiled FFMA main loop".to_string(),
    };
    let copies = match p.copies {
        [OperandCopy::Tma, OperandCopy::Tma] => String::new(),
        [a, b] => format!("; copies: A {a}, B {b}"),
    };
    format!(
        "{what}: {} (k step {}), {} bytes of shared memory{copies}",
        p.mainloop, p.tile_k, p.smem_bytes
    )
}

/// What `gemm_fast` needs to know about a recognized loop, for `target`.
pub fn request(k: &Kernel, m: &GemmMatch, target: &Target) -> GemmRequest {
    let k_dim = |o: &GemmOperand| match &k.params[o.tensor].kind {
        ParamKind::Tensor { dims, .. } => Some(dims[o.k_axis]),
        ParamKind::Scalar { .. } => None,
    };
    let k_whole = matches!(m.k_start.kind, ExprKind::Lit(Lit::Int(0)))
        && k_dim(&m.a) == k_dim(&m.b)
        && match (&m.k_end.kind, k_dim(&m.a)) {
            (ExprKind::Dim(d), Some(Dim::Dyn(e))) => *d == e,
            (ExprKind::Lit(Lit::Int(v)), Some(Dim::Static(s))) => *v == s,
            _ => false,
        };
    let rank2 = |o: &GemmOperand| match &k.params[o.tensor].kind {
        ParamKind::Tensor { dims, .. } => dims.len() == 2 && o.batch.is_empty(),
        ParamKind::Scalar { .. } => false,
    };
    GemmRequest {
        dtype: m.a.dtype,
        tf32: m.tf32,
        a_k_major: m.a.k_inner,
        b_k_major: m.b.k_inner,
        tile_m: m.tile_m as u32,
        tile_n: m.tile_n as u32,
        tile_k: m.tile_k as u32,
        threads: k.launch.threads,
        align_a: operand_align(k, &m.a),
        align_b: operand_align(k, &m.b),
        k_whole,
        plain_2d: rank2(&m.a) && rank2(&m.b),
        target: *target,
    }
}

/// Elements every line start of an operand is a multiple of (at most 16): the alignment of
/// its leading dimension and of its batch strides. Tensor base pointers are whole device
/// allocations (256-byte aligned).
fn operand_align(k: &Kernel, o: &GemmOperand) -> u32 {
    let ld_axis = if o.k_inner { o.mn_axis } else { o.k_axis };
    let mut a = stride_align(k, o.tensor, ld_axis);
    for (axis, _) in &o.batch {
        a = a.min(stride_align(k, o.tensor, *axis));
    }
    a
}

/// The largest power of two (at most 16) dividing the element stride of `axis` where every
/// runtime dim it multiplies has a fact (`@aligned`, `@where` divisibility, or the host's
/// specialization, whose fact is 1 for a dim of no power-of-two factor); `None` where one has
/// none, so nothing is known about the stride.
pub(crate) fn stride_align_if_known(k: &Kernel, tensor: usize, axis: usize) -> Option<u32> {
    let ParamKind::Tensor { dims, order, .. } = &k.params[tensor].kind else {
        return Some(1);
    };
    let factors = match order {
        MemOrder::RowMajor => &dims[axis + 1..],
        MemOrder::ColMajor => &dims[..axis],
    };
    let has_fact = |d: usize| {
        k.aligned.iter().any(|(dim, _)| *dim == d)
            || k.wheres.iter().any(|w| divisibility(w, d).is_some())
    };
    factors
        .iter()
        .all(|d| !matches!(d, Dim::Dyn(id) if !has_fact(*id)))
        .then(|| stride_align(k, tensor, axis))
}

/// The largest power of two (at most 16) known to divide the element stride of `axis`.
pub(crate) fn stride_align(k: &Kernel, tensor: usize, axis: usize) -> u32 {
    let ParamKind::Tensor { dims, order, .. } = &k.params[tensor].kind else {
        return 1;
    };
    let factors: Vec<&Dim> = match order {
        MemOrder::RowMajor => dims[axis + 1..].iter().collect(),
        MemOrder::ColMajor => dims[..axis].iter().collect(),
    };
    let mut a: u64 = 1;
    for d in factors {
        let f = match d {
            Dim::Static(n) => pow2_part(*n),
            Dim::Dyn(id) => dim_align(k, *id),
        };
        a = (a * f).min(16);
    }
    a as u32
}

fn pow2_part(n: i64) -> u64 {
    if n == 0 {
        16
    } else {
        (1u64 << n.unsigned_abs().trailing_zeros().min(4)).min(16)
    }
}

/// What `@aligned(D = c)` or a `@where(D % c == 0)` guarantees about runtime dim `d`.
fn dim_align(k: &Kernel, d: usize) -> u64 {
    let mut a = 1;
    for (dim, c) in &k.aligned {
        if *dim == d {
            a = a.max(pow2_part(*c));
        }
    }
    for w in &k.wheres {
        if let Some(c) = divisibility(w, d) {
            a = a.max(pow2_part(c));
        }
    }
    a
}

/// `D % c == 0` (either side order) for runtime dim `d`: Some(c).
fn divisibility(w: &Expr, d: usize) -> Option<i64> {
    let ExprKind::Binary(BinOp::Eq, x, y) = &w.kind else {
        return None;
    };
    let (rem, zero) = match (&x.kind, &y.kind) {
        (ExprKind::Binary(BinOp::Rem, ..), ExprKind::Lit(Lit::Int(0))) => (x, y),
        (ExprKind::Lit(Lit::Int(0)), ExprKind::Binary(BinOp::Rem, ..)) => (y, x),
        _ => return None,
    };
    let _ = zero;
    // `@where` is evaluated in i64: the dim may come wrapped in a cast.
    let strip = |e: &Expr| match &e.kind {
        ExprKind::Cast(inner) => (**inner).clone(),
        _ => e.clone(),
    };
    match &rem.kind {
        ExprKind::Binary(BinOp::Rem, a, b) => match (&strip(a).kind, &strip(b).kind) {
            (ExprKind::Dim(dd), ExprKind::Lit(Lit::Int(c))) if *dd == d && *c > 0 => Some(*c),
            _ => None,
        },
        _ => None,
    }
}

/// Mirrors `ph::dot_ld`: the row stride of a k-major staged operand.
pub fn dot_ld(mn: i64) -> i64 {
    (mn + 3) / 4 * 4 + 4
}

impl MainLoop {
    /// The typed record of the choice (`split` is the plan's: `Plan::split`).
    pub fn record(&self) -> GemmRecord {
        match self {
            MainLoop::Ffma(f) => GemmRecord {
                strategy: None,
                copies: None,
                pipeline: None,
                split: None,
                release: None,
                b_issue: None,
                shared: None,
                rejected: f.rejected.clone(),
            },
            MainLoop::Fast(f) => GemmRecord {
                strategy: Some(f.plan.strategy),
                copies: Some(f.plan.copies),
                pipeline: Some(f.plan.pipeline),
                split: None,
                release: f.plan.sm90.as_ref().map(|c| c.release),
                b_issue: f.plan.sm90.as_ref().map(|c| c.b_issue),
                shared: f.plan.sm90.as_ref().map(|c| c.shared),
                rejected: f.rejected.clone(),
            },
        }
    }

    /// The layout the accumulator lives in.
    pub fn acc_layout(&self) -> &Layout {
        match self {
            MainLoop::Ffma(f) => &f.acc_layout,
            MainLoop::Fast(f) => &f.acc_layout,
        }
    }

    /// Dynamic shared memory of the loop's pipeline (mirrors `FfmaGemm::SMEM_BYTES`).
    pub fn smem_bytes(&self) -> u32 {
        match self {
            MainLoop::Ffma(f) => {
                let (bm, bn) = f.acc_layout.shape();
                let stage = f.tile_k * dot_ld(bm) + f.tile_k * dot_ld(bn);
                (2 * stage * crate::ctype::register_bytes(f.acc_dtype) as i64) as u32
            }
            MainLoop::Fast(f) => f.plan.smem_bytes,
        }
    }

    /// Headers (by name, see [`crate::header_text`]) the call needs.
    pub fn headers(&self) -> Vec<&'static str> {
        match self {
            MainLoop::Ffma(_) => vec![crate::DOT_HEADER],
            MainLoop::Fast(f) => vec![f.plan.header],
        }
    }

    /// The statement replacing the loop.
    pub fn emit(&self, args: &LoopArgs) -> String {
        match self {
            MainLoop::Ffma(f) => format!(
                "ph::FfmaGemm<{}, {}, {}, {}, {}>::run({}, {}, {}, {}, {}, {});",
                crate::ctype::register(f.acc_dtype),
                args.acc_alias,
                f.tile_k,
                f.a_k_inner,
                f.b_k_inner,
                args.acc,
                args.a,
                args.b,
                args.k_start,
                args.k_end,
                args.smem
            ),
            MainLoop::Fast(f) => f.plan.call(&gemm_fast::CallArgs {
                acc: &args.acc,
                a: &args.a,
                b: &args.b,
                k0: &args.k_start,
                k1: &args.k_end,
                smem: &args.smem,
                tma: args.tma.as_ref().map(|(a, b)| (a.as_str(), b.as_str())),
            }),
        }
    }

    /// One line for the notes and the generated comment.
    pub fn describe(&self) -> String {
        match self {
            MainLoop::Ffma(f) => format!(
                "FFMA main loop (phobos_dot.cuh), double-buffered, TILE_K={}, A {}, B {}, accumulator {}",
                f.tile_k,
                if f.a_k_inner {
                    "k-contiguous"
                } else {
                    "m-contiguous"
                },
                if f.b_k_inner {
                    "k-contiguous"
                } else {
                    "n-contiguous"
                },
                f.acc_layout.cpp()
            ),
            MainLoop::Fast(f) => describe_plan(&f.plan),
        }
    }
}
