//! SPLIT_K: whether a recognized GEMM may split its k loop over `blockIdx.z`.
//!
//! With SPLIT_K = S the launch has S blocks along z; block z runs the main loop over its part
//! of the k range (`ph::gemm::split_k_range`: whole tiles of the main loop's step, so the parts'
//! iterations are exactly the unsplit loop's). The parts' partial tiles meet in one of two
//! ways ([`SplitReduce`]):
//!
//! - an f32 C: each part adds its partial tile into C with atomics; the host zeroes C right
//!   before the launch ([`SplitReduce::AtomicAdd`]);
//! - any other floating-point C (f16, bf16, ...), or any with SPLIT_REDUCE=2 or 3: each part stores its partial tile into its own f32 slice of
//!   a workspace the host allocates with the launch, then takes a ticket on its tile's
//!   counter; the part that arrives last sums the S slices in slice order, resets the counter,
//!   and runs the epilogue store (its cast included) once ([`SplitReduce::Workspace`]);
//! - any floating-point C with SPLIT_REDUCE=4 (the wgmma main loop only): the S parts of a tile
//!   form a thread block cluster along z and reduce-scatter their partial tiles through
//!   distributed shared memory; each part sums and stores 1/S of the tile's columns
//!   ([`SplitReduce::Cluster`]).
//!
//! The sum is the unsplit one grouped in S parts: the same function up to the f32 summation
//! order. That holds only when
//!
//! - the kernel has one recognized GEMM, at the top level of its body, accumulating in f32
//!   from zero (every other assignment of the accumulator is a literal 0);
//! - its epilogue is one tile store into C, linear in the accumulator: `acc`, `s * acc` or
//!   `acc * s` with `s` a uniform scalar, through identity casts (into an f32 C) or any casts
//!   (through the workspace, where the store runs once on the whole sum);
//! - C is read nowhere and that store is the kernel's only store (anything else would run S
//!   times, or read a C the other parts are still adding to);
//! - the kernel's own grid has z = 1 and nothing reads `ctx.block.z` or `ctx.grid.z`.
//!
//! Otherwise the loop stays whole and the notes say why.

use crate::gemm_fast::Strategy;
use crate::gemm_match::GemmMatch;
use crate::mainloop::MainLoop;
use crate::visit::{any_in_stmts, bodies, loaded_tensors, stmt_exprs};
use phobos_ir::{
    BinOp, Ctx, DType, Expr, ExprKind, Kernel, Lit, LocalId, ParamId, ParamKind, Stmt, StmtKind,
};
use std::collections::BTreeSet;

/// How the parts of a split k loop combine their partial tiles (`GemmRecord::split`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SplitReduce {
    /// f32 atomic adds into C, which the host zeroes before every launch.
    AtomicAdd,
    /// Plain stores into per-part f32 slices of a workspace the host allocates with the
    /// launch; the last part to arrive at its tile's counter sums the slices in slice order
    /// and stores C once (CUTLASS's "serial split-K", reduced in the last block).
    Workspace,
    /// The parts of a tile form a thread block cluster (`__cluster_dims__(1, 1, parts)`):
    /// each part owns 1/parts of the tile's columns, the others store their partials of them
    /// into its shared memory (distributed shared memory, no global workspace), and it sums
    /// them in part order and stores its columns of C.
    Cluster,
}

/// A split k loop as the plan records it: how many parts, and how they combine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SplitRecord {
    pub parts: u32,
    pub reduce: SplitReduce,
    /// Through the workspace in 8-byte pairs of columns, the last part's own slice from its
    /// registers (SPLIT_REDUCE=3, or 4 refused: [`SplitK::pairs`]).
    pub pairs: bool,
    /// SPLIT_REDUCE=4 was asked for and the main loop cannot reduce in a cluster: why (the
    /// parts then meet in the paired workspace).
    pub cluster_refused: Option<NoClusterSplit>,
}

/// Why SPLIT_REDUCE=4 cannot reduce a main loop's parts in a thread block cluster
/// ([`split_cluster_blocker`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoClusterSplit {
    /// Not the wgmma main loop (`reduce_split_dsmem` is in `gemm/sm90.cuh`).
    NotWgmma,
    /// Several consumer warpgroups along N: a thread does not hold every column slice.
    WarpgroupsAlongN,
    /// More parts than a portable cluster's 8 blocks.
    TooManyParts,
    /// TILE_N / SPLIT_K is not a multiple of 8 columns.
    SliceNotWhole,
    /// The tile's f32 partials do not fit in the main loop's shared memory.
    PartialsDoNotFit,
    /// The persistent schedule (its blocks do not split K).
    Persistent,
    /// CLUSTER already groups the blocks along M.
    ClusterAlongM,
}

impl NoClusterSplit {
    /// The plan's note (`phobos emit` prints it).
    pub fn note(&self) -> String {
        format!("SPLIT_REDUCE=4 not applied (the paired workspace instead): {self}")
    }
}

impl std::fmt::Display for NoClusterSplit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            NoClusterSplit::NotWgmma => "it needs the wgmma main loop",
            NoClusterSplit::WarpgroupsAlongN => "it needs one consumer warpgroup along N",
            NoClusterSplit::TooManyParts => "a portable cluster holds at most 8 blocks",
            NoClusterSplit::SliceNotWhole => {
                "each part owns TILE_N / SPLIT_K columns: a multiple of 8"
            }
            NoClusterSplit::PartialsDoNotFit => {
                "the tile's f32 partials do not fit in the main loop's shared memory"
            }
            NoClusterSplit::Persistent => "persistent blocks do not split K",
            NoClusterSplit::ClusterAlongM => "CLUSTER already groups blocks along M",
        })
    }
}

/// Why SPLIT_K, declared above 1, was not applied: the k loop runs whole (`Emitted::split_refused`;
/// the notes render it with [`NoSplit::note`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NoSplit {
    /// The kernel has this many recognized GEMMs, not exactly one.
    GemmCount(usize),
    /// The GEMM loop is not a top-level statement of the kernel.
    NotTopLevel,
    /// The GEMM accumulates in this type, not f32 (the parts add f32 partial sums).
    AccNotF32(DType),
    /// The accumulator does not start at 0 (each part would add its initial value).
    AccNotZero,
    /// The epilogue is this many statements using the accumulator, not one store.
    EpilogueStatements(usize),
    /// The epilogue's one statement is not a store of the accumulator.
    EpilogueNotStore,
    /// The store target `c` holds `dtype`, which f32 partial sums do not reduce into.
    CNotFloat { c: String, dtype: DType },
    /// The store target is not a tensor.
    CNotTensor,
    /// The stored value is not linear in the accumulator (a bias or an activation).
    NotLinear,
    /// The store target `c` is also read, while other parts add into it.
    CRead { c: String },
    /// The epilogue store is not the kernel's only store.
    OtherStores,
    /// The kernel uses the grid's z axis, which the parts take.
    UsesGridZ,
}

impl NoSplit {
    /// The plan's note (`phobos emit` prints it) at the knob's value `parts`.
    pub fn note(&self, parts: u32) -> String {
        format!("SPLIT_K={parts} not applied (the k loop runs whole): {self}")
    }
}

impl std::fmt::Display for NoSplit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NoSplit::GemmCount(n) => write!(
                f,
                "SPLIT_K needs exactly one recognized GEMM, the kernel has {n}"
            ),
            NoSplit::NotTopLevel => {
                f.write_str("SPLIT_K needs the GEMM loop at the top level of the kernel")
            }
            NoSplit::AccNotF32(dt) => write!(
                f,
                "SPLIT_K adds f32 partial sums; this GEMM accumulates in {dt}"
            ),
            NoSplit::AccNotZero => {
                f.write_str("SPLIT_K needs the accumulator to start at 0 (each part adds it)")
            }
            NoSplit::EpilogueStatements(n) => write!(
                f,
                "SPLIT_K needs an epilogue of one store of the accumulator, found {n} statements \
                 using it"
            ),
            NoSplit::EpilogueNotStore => {
                f.write_str("SPLIT_K needs the epilogue to be a store of the accumulator")
            }
            NoSplit::CNotFloat { c, dtype } => {
                write!(f, "SPLIT_K reduces f32 partial sums; `{c}` holds {dtype}")
            }
            NoSplit::CNotTensor => f.write_str("the store target is not a tensor"),
            NoSplit::NotLinear => f.write_str(
                "SPLIT_K needs a store linear in the accumulator (`acc` or a uniform scalar times \
                 `acc`): a bias or an activation cannot be split",
            ),
            NoSplit::CRead { c } => write!(
                f,
                "SPLIT_K: `{c}` is also read, while other parts add into it"
            ),
            NoSplit::OtherStores => {
                f.write_str("SPLIT_K needs the epilogue store to be the kernel's only store")
            }
            NoSplit::UsesGridZ => {
                f.write_str("SPLIT_K takes the grid's z axis, which the kernel uses")
            }
        }
    }
}

/// A GEMM whose k loop is split.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SplitK {
    /// SPLIT_K: blocks along z.
    pub parts: u32,
    /// How the parts combine.
    pub reduce: SplitReduce,
    /// The epilogue store (a top-level statement index of the kernel body).
    pub store: usize,
    /// The output C.
    pub c: ParamId,
    /// SPLIT_REDUCE=3 (workspace only): partial tiles and the last part's sum move in 8-byte
    /// pairs of columns where C's rows allow, the last part's own slice from its registers.
    pub pairs: bool,
    /// SPLIT_REDUCE=4 asked for and refused (the parts meet in the paired workspace): why.
    pub cluster_refused: Option<NoClusterSplit>,
}

impl SplitK {
    /// The typed record of the split.
    pub fn record(&self) -> SplitRecord {
        SplitRecord {
            parts: self.parts,
            reduce: self.reduce,
            pairs: self.pairs,
            cluster_refused: self.cluster_refused,
        }
    }
}

impl SplitK {
    /// The plan's note (`phobos emit` prints it); `c` is C's name.
    pub fn note(&self, c: &str) -> String {
        let parts = self.parts;
        match self.reduce {
            SplitReduce::AtomicAdd => format!(
                "SPLIT_K={parts}: grid z = {parts} parts of the k range, partial tiles added into \
                 `{c}` with f32 atomics; the host zeroes it before the launch"
            ),
            SplitReduce::Workspace => format!(
                "SPLIT_K={parts}: grid z = {parts} parts of the k range, partial tiles stored into \
                 {parts} f32 workspace slices; the last part of each tile sums them in order and \
                 stores `{c}` (serial split-K; the host allocates the workspace with the launch){}",
                if self.pairs {
                    "; in 8-byte pairs of columns, the last part's own slice from its registers"
                } else {
                    ""
                }
            ),
            SplitReduce::Cluster => format!(
                "SPLIT_K={parts}: grid z = {parts} parts of the k range in thread block clusters \
                 of {parts} (__cluster_dims__(1, 1, {parts})); the parts reduce-scatter their \
                 partial tiles through distributed shared memory and each sums and stores 1/{parts} \
                 of the tile's columns of `{c}`"
            ),
        }
    }
}

/// The split of `gemms[0]` into `parts`, or why the loop must stay whole. `workspace`
/// (SPLIT_REDUCE=2 or 3): through the f32 workspace even when C is f32; `pairs`
/// (SPLIT_REDUCE=3): the workspace's accesses in pairs ([`SplitK::pairs`]); `cluster`
/// (SPLIT_REDUCE=4): through distributed shared memory whatever C's type (the caller checks
/// that the main loop allows it, [`split_cluster_blocker`]).
pub fn plan_split(
    k: &Kernel,
    gemms: &[&GemmMatch],
    parts: u32,
    workspace: bool,
    pairs: bool,
    cluster: bool,
) -> Result<SplitK, NoSplit> {
    let [m] = gemms else {
        return Err(NoSplit::GemmCount(gemms.len()));
    };
    if m.path.len() != 1 {
        return Err(NoSplit::NotTopLevel);
    }
    if m.acc_dtype != DType::F32 {
        return Err(NoSplit::AccNotF32(m.acc_dtype));
    }
    let loop_at = m.path[0].1;
    if !zero_initialized(&k.body, loop_at, m.acc) {
        return Err(NoSplit::AccNotZero);
    }
    let [store] = m.epilogue.as_slice() else {
        return Err(NoSplit::EpilogueStatements(m.epilogue.len()));
    };
    let StmtKind::Store { tensor, value, .. } = &k.body[*store].kind else {
        return Err(NoSplit::EpilogueNotStore);
    };
    let reduce = match &k.params[*tensor].kind {
        ParamKind::Tensor { dtype, .. } if cluster && dtype.is_float() => SplitReduce::Cluster,
        ParamKind::Tensor {
            dtype: DType::F32, ..
        } if !workspace => SplitReduce::AtomicAdd,
        ParamKind::Tensor { dtype, .. } if dtype.is_float() => SplitReduce::Workspace,
        ParamKind::Tensor { dtype, .. } => {
            return Err(NoSplit::CNotFloat {
                c: k.params[*tensor].name.clone(),
                dtype: *dtype,
            })
        }
        ParamKind::Scalar { .. } => return Err(NoSplit::CNotTensor),
    };
    let any_cast = reduce != SplitReduce::AtomicAdd;
    if !linear_in(value, m.acc, any_cast) {
        return Err(NoSplit::NotLinear);
    }
    let mut loaded = BTreeSet::new();
    any_in_stmts(&k.body, &mut |e| {
        loaded_tensors(e, true, &mut loaded);
        loaded_tensors(e, false, &mut loaded);
        false
    });
    if loaded.contains(tensor) {
        return Err(NoSplit::CRead {
            c: k.params[*tensor].name.clone(),
        });
    }
    if count_stores(&k.body) != 1 {
        return Err(NoSplit::OtherStores);
    }
    let reads_z = any_in_stmts(&k.body, &mut |e| {
        matches!(
            e.kind,
            ExprKind::Ctx(Ctx::Block(2)) | ExprKind::Ctx(Ctx::Grid(2))
        )
    });
    let grid_z_one = matches!(k.grid[2].kind, ExprKind::Lit(Lit::Int(1)));
    if reads_z || !grid_z_one {
        return Err(NoSplit::UsesGridZ);
    }
    Ok(SplitK {
        parts,
        reduce,
        store: *store,
        c: *tensor,
        pairs: pairs && reduce == SplitReduce::Workspace,
        cluster_refused: None,
    })
}

/// Why SPLIT_REDUCE=4 cannot reduce `parts` parts of the main loop `ml` in a thread block
/// cluster, if it cannot: the wgmma loop (`reduce_split_dsmem` in `gemm/sm90.cuh`) with one
/// consumer warpgroup along N (every thread holds every column slice), a portable cluster
/// size, slices of whole 8-column groups, a tile of f32 partials that fits in the ring, one
/// block per tile and no CLUSTER of its own.
pub fn split_cluster_blocker(
    ml: &MainLoop,
    parts: u32,
    persistent: bool,
    cluster: u32,
) -> Option<NoClusterSplit> {
    let MainLoop::Fast(f) = ml else {
        return Some(NoClusterSplit::NotWgmma);
    };
    let (Strategy::Sm90, Some(c)) = (f.plan.strategy, f.plan.sm90.as_deref()) else {
        return Some(NoClusterSplit::NotWgmma);
    };
    if c.wg_n != 1 {
        return Some(NoClusterSplit::WarpgroupsAlongN);
    }
    if parts > 8 {
        return Some(NoClusterSplit::TooManyParts);
    }
    if c.bn % (8 * parts) != 0 {
        return Some(NoClusterSplit::SliceNotWhole);
    }
    if (c.bm * c.bn * 4) as u64 + 1024 > f.plan.smem_bytes as u64 {
        return Some(NoClusterSplit::PartialsDoNotFit);
    }
    if persistent {
        return Some(NoClusterSplit::Persistent);
    }
    if cluster > 1 {
        return Some(NoClusterSplit::ClusterAlongM);
    }
    None
}

/// True when every assignment of `acc` outside the statement at `loop_at` (the GEMM loop)
/// assigns a literal zero.
fn zero_initialized(body: &[Stmt], loop_at: usize, acc: LocalId) -> bool {
    fn all(stmts: &[Stmt], acc: LocalId) -> bool {
        stmts.iter().all(|s| {
            let own = match &s.kind {
                StmtKind::Assign { local, value } if *local == acc => is_zero(value),
                _ => true,
            };
            own && bodies(s).into_iter().all(|b| all(b, acc))
        })
    }
    body.iter()
        .enumerate()
        .all(|(i, s)| i == loop_at || all(std::slice::from_ref(s), acc))
}

fn is_zero(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Lit(Lit::Int(0)) => true,
        ExprKind::Lit(Lit::Float(v)) => *v == 0.0,
        ExprKind::Broadcast(a) | ExprKind::Cast(a) => is_zero(a),
        _ => false,
    }
}

/// `acc`, `s * acc`, `acc * s` (s a uniform scalar not reading acc), through identity casts
/// (any casts with `any_cast`).
fn linear_in(e: &Expr, acc: LocalId, any_cast: bool) -> bool {
    let scalar = |x: &Expr| {
        let x = match &x.kind {
            ExprKind::Broadcast(inner) => inner,
            _ => x,
        };
        !x.ty.is_tile() && x.uniform && !crate::visit::expr_reads_local(x, acc)
    };
    match &e.kind {
        ExprKind::Local(l) => *l == acc,
        ExprKind::Cast(a) => (any_cast || a.ty == e.ty) && linear_in(a, acc, any_cast),
        ExprKind::Binary(BinOp::Mul, a, b) => {
            (scalar(a) && linear_in(b, acc, any_cast)) || (scalar(b) && linear_in(a, acc, any_cast))
        }
        _ => false,
    }
}

fn count_stores(stmts: &[Stmt]) -> usize {
    stmts
        .iter()
        .map(|s| {
            usize::from(matches!(
                s.kind,
                StmtKind::Store { .. } | StmtKind::Atomic { .. }
            )) + bodies(s).into_iter().map(count_stores).sum::<usize>()
        })
        .sum()
}

/// Whether statement expressions mention `ctx.block.x`/`ctx.block.y` (GROUP_M remaps them).
pub fn reads_block_xy(stmts: &[Stmt]) -> bool {
    stmts.iter().any(|s| {
        stmt_exprs(s).into_iter().any(|e| {
            crate::visit::any_expr(e, &mut |x| {
                matches!(
                    x.kind,
                    ExprKind::Ctx(Ctx::Block(0)) | ExprKind::Ctx(Ctx::Block(1))
                )
            })
        }) || bodies(s).into_iter().any(reads_block_xy)
    })
}
