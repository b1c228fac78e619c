//! FA3's producer warp or warpgroup of an overlapped loop (`PRODUCER`): which loops get one
//! ([`Producer`], [`NoProducer`]), what it copies (a head's tile of a rank-3 tensor,
//! [`head_tile`]), which statements it runs beside the consumers ([`producer_scalar_stmt`]) and
//! the rank-3 tensor maps it copies through ([`producer_maps`]).

use super::overlap::LoopRecord;
use super::persist::Persist;
use super::ring::{NoRing, Ring};
use super::streamed::streamed_loads;
use crate::Target;
use phobos_ir::knobs::Knob;
use phobos_ir::{Expr, ExprKind, Index, Kernel, Lit, Stmt, StmtKind};
use std::collections::BTreeSet;

/// FA3's producer warp (`PRODUCER=1`): the launch has one warp more than the consumer
/// warpgroups (`THREADS = 128 * warpgroups + 32`), which the tile layouts do not see. It
/// branches off at the kernel's start to a loop with the consumers' trip count (the scalar
/// statements before the loop decide its bounds) and fills the ring ([`Ring`]) by TMA: per key
/// tile, after waiting on the stage's empty barrier, one lane arrives on the full barrier with
/// the bytes to expect (`mbarrier.arrive.expect_tx`) and issues the tile's boxes
/// (`cp.async.bulk.tensor.3d`, 64 columns by the tile's rows by one head, on the rank-3 maps of
/// `TmaParam::heads`). The full barriers then count one arrival, and the consumers' block
/// barriers become named barriers of their own threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Producer {
    /// Threads of the consumer warpgroups.
    pub consumers: u32,
    /// The producer's threads after them: a warp (32, `PRODUCER=1`) or a warpgroup (128,
    /// `PRODUCER=2`, registers moved to the consumers by `setmaxnreg`).
    pub threads: u32,
    /// TMA boxes a stage (the streamed tiles' 64-column slabs).
    pub boxes: u32,
    /// Bytes a stage's boxes bring: the full barrier's `expect_tx`.
    pub bytes: u32,
    /// How `setmaxnreg` splits the register file between the producer and the consumers, or
    /// `None` where it is not emitted ([`reg_split`]).
    pub regs: Option<RegSplit>,
}

/// Registers a thread after `setmaxnreg`: the producer warpgroup's (`setmaxnreg.dec`) and each
/// consumer warpgroup's (`setmaxnreg.inc`): 24 and 240 with two consumer warpgroups, 24 and 160
/// with three (FA3's splits give the producer 24 and 32).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegSplit {
    pub producer: u32,
    pub consumer: u32,
}

/// The register file a block may split: 64 Ki 32-bit registers a multiprocessor, one block.
const REGISTER_FILE: u32 = 65536;
/// What a producer warpgroup keeps: its one issuing lane's walk, bounds and TMA coordinates.
const PRODUCER_REGS: u32 = 24;

/// The `setmaxnreg` split of a producer of `threads` threads beside `consumers` consumer
/// threads: only for a producer warpgroup (ptxas drops `setmaxnreg` in a block that is not
/// whole warpgroups, `PRODUCER=1`) beside two consumer warpgroups or more (with one, the launch
/// bound of 256 threads already allows 255). The consumers get the most registers, a multiple of
/// 8 up to 256, that fit the register file beside the producer's 24: 240 with two consumer
/// warpgroups (2 × 128 × 240 + 128 × 24 = 64512), 160 with three (3 × 128 × 160 + 128 × 24 =
/// 64512, where FA3 gives its producer 32: 65536).
pub fn reg_split(consumers: u32, threads: u32) -> Option<RegSplit> {
    if threads != 128 || consumers < 256 {
        return None;
    }
    let consumer = ((REGISTER_FILE - threads * PRODUCER_REGS) / consumers / 8 * 8).min(256);
    Some(RegSplit {
        producer: PRODUCER_REGS,
        consumer,
    })
}

/// Why an overlapped loop's ring is filled by the consumers' own copies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoProducer {
    /// The point does not pin `PRODUCER=1`.
    Knob,
    /// The streamed buffers are not an mbarrier ring (`RING=0`, or nothing streamed).
    NoRing,
    /// The launch has this many threads, not 128 * warpgroups + 32 (`PRODUCER=1`) or + 128
    /// (`PRODUCER=2`).
    Threads(u32),
    /// The loop is not at the kernel's top level, or its bounds or its streamed tiles' indices
    /// read a local that a statement before it computes from tiles.
    Placement,
    /// A streamed operand is not a tile `X[i, c :+ R, :]` of a row-major rank-3 f16 or bf16
    /// tensor whose last extent is a static multiple of 64, with R a multiple of 8 up to 256.
    Operand,
}

impl std::fmt::Display for NoProducer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NoProducer::Knob => write!(f, "PRODUCER=0"),
            NoProducer::NoRing => write!(f, "the buffers are no mbarrier ring"),
            NoProducer::Threads(t) => {
                write!(
                    f,
                    "{t} threads, not 128 * warpgroups + 32 (PRODUCER=1) or + 128 (PRODUCER=2)"
                )
            }
            NoProducer::Placement => write!(
                f,
                "the loop is not at the top level, or its bounds depend on tile statements"
            ),
            NoProducer::Operand => write!(
                f,
                "a streamed operand is not a head's tile of a row-major [BH, N, D] tensor"
            ),
        }
    }
}

/// The threads of `k`'s producer, when it is emitted with one: `PRODUCER=1` and a launch of
/// `128 * warpgroups + 32` threads (a producer warp), or `PRODUCER=2` and `128 * warpgroups +
/// 128` (a producer warpgroup, which `setmaxnreg` can take registers from: ptxas keeps
/// `setmaxnreg` only in blocks of whole warpgroups), at least one consumer warpgroup. Then the
/// kernel is planned and emitted at the consumer warpgroups' threads, and the producer runs
/// apart ([`Producer`]). Never in a kernel with a recognized GEMM loop (it plans its own).
pub fn producer_warp(k: &Kernel) -> Option<u32> {
    let t = k.launch.threads;
    // A recognized GEMM loop plans its own producer warp from the launch's threads.
    if !crate::gemm_match::find_gemms(k).is_empty() {
        return None;
    }
    match Knob::Producer.get(&k.point) {
        Some(1) if t % 128 == 32 && t >= 160 => Some(32),
        Some(2) if t.is_multiple_of(128) && t >= 256 => Some(128),
        _ => None,
    }
}

/// A scalar statement the producer warp runs too: an assignment of a scalar local from scalar
/// expressions that read no tensor, or a branch on such a condition of such statements.
pub(crate) fn producer_scalar_stmt(s: &Stmt) -> bool {
    let plain = |e: &Expr| {
        !crate::visit::any_expr(e, &mut |x| {
            x.ty.is_tile()
                || matches!(
                    x.kind,
                    ExprKind::Load { .. } | ExprKind::Reduce { .. } | ExprKind::TileGet { .. }
                )
        })
    };
    match &s.kind {
        StmtKind::Assign { value, .. } => !value.ty.is_tile() && plain(value),
        StmtKind::If {
            cond,
            then_body,
            else_body,
        } => {
            plain(cond)
                && then_body.iter().all(producer_scalar_stmt)
                && else_body.iter().all(producer_scalar_stmt)
        }
        _ => false,
    }
}

/// One streamed operand as the producer warp copies it: the tensor, the index of its head
/// (`i`) and of its first row (`c`), the tile's rows and columns.
pub(crate) struct HeadTile<'k> {
    pub tensor: phobos_ir::ParamId,
    pub head: &'k Expr,
    pub row: &'k Expr,
    pub rows: i64,
    pub cols: i64,
}

/// `load` as a head's tile `X[i, c :+ R, :]` of a row-major rank-3 f16 or bf16 tensor whose last
/// extent is a static multiple of 64, R a multiple of 8 up to 256; else `None`.
pub(crate) fn head_tile<'k>(k: &'k Kernel, load: &'k Expr) -> Option<HeadTile<'k>> {
    let ExprKind::Load { tensor, index, .. } = &load.kind else {
        return None;
    };
    let phobos_ir::ParamKind::Tensor { dtype, dims, order } = &k.params[*tensor].kind else {
        return None;
    };
    if dims.len() != 3
        || *order != phobos_ir::MemOrder::RowMajor
        || !matches!(dtype, phobos_ir::DType::F16 | phobos_ir::DType::BF16)
    {
        return None;
    }
    let phobos_ir::Dim::Static(d) = dims[2] else {
        return None;
    };
    match index.as_slice() {
        [Index::At(head), Index::Span {
            start: row,
            len: rows,
        }, Index::Span { start, len }]
            if matches!(start.kind, ExprKind::Lit(Lit::Int(0)))
                && *len == d
                && d % 64 == 0
                && *rows % 8 == 0
                && (8..=256).contains(rows) =>
        {
            Some(HeadTile {
                tensor: *tensor,
                head,
                row,
                rows: *rows,
                cols: d,
            })
        }
        _ => None,
    }
}

/// Whether the ring of the loop `s` (at `path`) is filled by a producer warp ([`Producer`]).
pub(super) fn producer(
    k: &Kernel,
    target: &Target,
    s: &Stmt,
    path: &[(usize, usize)],
    ring: &Result<Ring, NoRing>,
    extra_warp: Option<u32>,
) -> Result<Producer, NoProducer> {
    if !matches!(Knob::Producer.get(&k.point), Some(1 | 2)) {
        return Err(NoProducer::Knob);
    }
    if ring.is_err() {
        return Err(NoProducer::NoRing);
    }
    let Some(threads) = extra_warp else {
        return Err(NoProducer::Threads(k.launch.threads));
    };
    let StmtKind::For {
        var,
        start,
        end,
        step,
        body,
        ..
    } = &s.kind
    else {
        return Err(NoProducer::Placement);
    };
    let [(0, at)] = path else {
        return Err(NoProducer::Placement);
    };
    let mut assigned = BTreeSet::new();
    crate::visit::assigned_locals(body, &mut assigned);
    let loads = streamed_loads(k, target, *var, body, &assigned);
    let tiles: Vec<HeadTile> = loads.iter().filter_map(|l| head_tile(k, l)).collect();
    if tiles.len() != loads.len() {
        return Err(NoProducer::Operand);
    }
    // The locals the producer's loop reads are computed by scalar statements only.
    let mut from_tiles = BTreeSet::new();
    for st in &k.body[..*at] {
        if !producer_scalar_stmt(st) {
            crate::visit::assigned_locals(std::slice::from_ref(st), &mut from_tiles);
        }
    }
    let reads_tiles = |e: &Expr| {
        crate::visit::any_expr(
            e,
            &mut |x| matches!(x.kind, ExprKind::Local(l) if from_tiles.contains(&l)),
        )
    };
    let needed = [start, end, step]
        .into_iter()
        .chain(tiles.iter().flat_map(|t| [t.head, t.row]));
    if needed.into_iter().any(reads_tiles) {
        return Err(NoProducer::Placement);
    }
    let boxes: i64 = tiles.iter().map(|t| t.cols / 64).sum();
    let bytes: i64 = tiles.iter().map(|t| t.rows * t.cols * 2).sum();
    Ok(Producer {
        consumers: k.launch.threads,
        threads,
        boxes: boxes as u32,
        bytes: bytes as u32,
        regs: reg_split(k.launch.threads, threads),
    })
}

/// The rank-3 tensor maps of the streamed operands of every loop with a producer warp, named
/// `ph_tma<i>` from `first` on, in loop and operand order.
pub(super) fn producer_maps(
    k: &Kernel,
    target: &Target,
    loops: &[LoopRecord],
    first: usize,
) -> Vec<crate::launch::TmaParam> {
    let mut out = Vec::new();
    for r in loops {
        let (Ok(o), [(0, at)]) = (&r.overlap, r.path.as_slice()) else {
            continue;
        };
        if o.producer.is_err() {
            continue;
        }
        let StmtKind::For { var, body, .. } = &k.body[*at].kind else {
            continue;
        };
        let mut assigned = BTreeSet::new();
        crate::visit::assigned_locals(body, &mut assigned);
        let mut loads = streamed_loads(k, target, *var, body, &assigned);
        // PERSIST=2: the resident q's map after K's and V's.
        if let Ok(Persist { q: Some(q), .. }) = o.persist {
            if let StmtKind::Assign { value, .. } = &k.body[q.stmt].kind {
                loads.push(value);
            }
        }
        for load in loads {
            let Some(t) = head_tile(k, load) else {
                continue;
            };
            let Some(spec) = crate::gemm_fast::TmaSpec::new(
                crate::gemm_fast::TmaOperand::B,
                load.ty.dtype(),
                true,
                t.rows as u32,
            ) else {
                continue;
            };
            let name = format!("ph_tma{}", first + out.len());
            if let Some(m) =
                crate::launch::TmaParam::heads(name, t.tensor, &k.params[t.tensor].kind, spec)
            {
                out.push(m);
            }
        }
    }
    out
}
