//! The epilogue's C store through shared memory and TMA: whether a kernel's GEMM tile is
//! stored that way, its tensor map and its staging buffer.

use super::natural;
use crate::gemm_fast::cfg::SM90_SMEM_LIMIT;
use crate::gemm_fast::{Strategy, TmaSpec};
use crate::gemm_match::GemmMatch;
use crate::gemm_split::SplitReduce;
use crate::launch::TmaParam;
use crate::layout::Layout;
use crate::mainloop::MainLoop;
use crate::Target;
use phobos_ir::{Index, Kernel, LocalId, MemOrder, ParamKind, StmtKind};
use std::collections::BTreeMap;

/// The C store of a wgmma GEMM's epilogue, done through shared memory and TMA
/// (`ph::gemm::sm90::store_tile_tma`, gemm/store_tma.cuh).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TmaStore {
    /// The store: the index of the kernel body's last statement.
    pub stmt: usize,
    /// C's tensor-map parameter.
    pub map: String,
    /// Shared memory it needs past the main loop's (the staging buffer and 1024 bytes of
    /// slack).
    pub smem_bytes: u32,
    /// Boxes of 64 rows x 128 bytes in each warpgroup's part of the tile.
    pub boxes: u32,
    /// Rounds each warpgroup stages its part of the tile in (1: all at once).
    pub rounds: u32,
}

impl std::fmt::Display for TmaStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "C store: through shared memory and TMA stores, boxes of 64 rows x 128 bytes, {} \
             per warpgroup in {} round{} ({} bytes; ph::gemm::sm90::store_tile_tma)",
            self.boxes,
            self.rounds,
            if self.rounds == 1 { "" } else { "s" },
            self.smem_bytes
        )
    }
}

/// Why a wgmma GEMM's C store stays a store from registers to global memory (`Emitted::c_store`;
/// the notes render it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoTmaStore {
    /// SPLIT_K's parts add their partial tiles into C with atomics.
    SplitAtomics,
    /// SPLIT_K through the workspace: the part that arrives last stores the tile.
    SplitWorkspace,
    /// SPLIT_K in a cluster: each part stores its own columns of the tile.
    SplitCluster,
    /// The kernel's last statement is not the C tile's store.
    NotLastStore,
    /// The store is not of one whole TILE_M x TILE_N tile of a 2-D tensor.
    NotWholeTile,
    /// The stored value is not elementwise in the accumulator (it has another layout).
    NotElementwise,
    /// C is column-major.
    ColumnMajor,
    /// The copy engine has no type for C's elements.
    NoCopyType,
    /// A warpgroup's columns are not whole 128-byte lines (or its rows whole 64-row boxes).
    WarpgroupLines,
    /// C's rows are not known to be 16-byte aligned.
    RowsNotAligned,
    /// No whole number of boxes a round fits beside the main loop's `mainloop_bytes` of
    /// stages without lowering the blocks a multiprocessor holds.
    NoRoom { mainloop_bytes: u32 },
}

impl std::fmt::Display for NoTmaStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let why = match self {
            NoTmaStore::SplitAtomics => "SPLIT_K adds partial tiles with atomics",
            NoTmaStore::SplitWorkspace => {
                "SPLIT_K: the last part of each tile stores it, after the others"
            }
            NoTmaStore::SplitCluster => {
                "SPLIT_K: each part of the cluster stores its columns of the tile"
            }
            NoTmaStore::NotLastStore => "the kernel's last statement is not the C tile's store",
            NoTmaStore::NotWholeTile => {
                "the store is not of one whole TILE_M x TILE_N tile of a 2-D tensor"
            }
            NoTmaStore::NotElementwise => "the stored value is not elementwise in the accumulator",
            NoTmaStore::ColumnMajor => "C is column-major",
            NoTmaStore::NoCopyType => "the copy engine has no type for C's elements",
            NoTmaStore::WarpgroupLines => "a warpgroup's columns are not whole 128-byte lines",
            NoTmaStore::RowsNotAligned => "C's rows are not known to be 16-byte aligned",
            NoTmaStore::NoRoom { mainloop_bytes } => {
                return write!(
                    f,
                    "C store: registers to global memory (staging even one box per warpgroup \
                     would take shared memory that the main loop's {mainloop_bytes} bytes need, \
                     or lower the blocks per multiprocessor)"
                )
            }
        };
        write!(f, "C store: registers to global memory ({why})")
    }
}

/// Decides whether the kernel's C store goes through shared memory and TMA stores, adding C's
/// tensor map to `tma` when it does; says why not (`Some(Err(..))`) when the GEMM is on the
/// wgmma main loop, and `None` when it is not. It does when the kernel has one GEMM, on the wgmma main loop, whose tile the
/// body's last statement stores whole (`C[r :+ TILE_M, c :+ TILE_N] = f(acc)`, f elementwise:
/// the value keeps the accumulator's layout) into an unbatched row-major C of a type TMA
/// copies, with 16-byte aligned rows; without SPLIT_K (whose parts combine first), and when a
/// staging buffer (the whole tile, else 1/r of it staged in r rounds, r the fewest rounds that
/// divide the boxes and fit) fits in shared memory beside the main loop's stages without
/// lowering the number of blocks a multiprocessor holds. Being last, nothing after it reuses the staging buffer while the copies read it.
pub(super) fn plan_tma_store(
    k: &Kernel,
    gemms: &[(GemmMatch, MainLoop)],
    layouts: &BTreeMap<LocalId, Layout>,
    split_k: Option<SplitReduce>,
    tma: &mut Vec<TmaParam>,
    target: &Target,
) -> Option<Result<TmaStore, NoTmaStore>> {
    let [(m, MainLoop::Fast(f))] = gemms else {
        return None;
    };
    let (Strategy::Sm90, Some(cfg)) = (f.plan.strategy, f.plan.sm90.as_deref()) else {
        return None;
    };
    let refuse = |why: NoTmaStore| Some(Err(why));
    match split_k {
        Some(SplitReduce::AtomicAdd) => return refuse(NoTmaStore::SplitAtomics),
        Some(SplitReduce::Workspace) => return refuse(NoTmaStore::SplitWorkspace),
        Some(SplitReduce::Cluster) => return refuse(NoTmaStore::SplitCluster),
        None => {}
    }
    let last = k.body.len().checked_sub(1)?;
    let StmtKind::Store {
        tensor,
        index,
        value,
        ..
    } = &k.body[last].kind
    else {
        return refuse(NoTmaStore::NotLastStore);
    };
    let whole = matches!(index.as_slice(),
        [Index::Span { len: r, .. }, Index::Span { len: c, .. }]
            if *r == m.tile_m && *c == m.tile_n);
    if !whole {
        return refuse(NoTmaStore::NotWholeTile);
    }
    if natural(k, target, layouts, value).as_ref() != layouts.get(&m.acc) {
        return refuse(NoTmaStore::NotElementwise);
    }
    let ParamKind::Tensor { dtype, order, .. } = &k.params[*tensor].kind else {
        return None;
    };
    if *order != MemOrder::RowMajor {
        return refuse(NoTmaStore::ColumnMajor);
    }
    let Some(spec) = TmaSpec::store_c(*dtype) else {
        return refuse(NoTmaStore::NoCopyType);
    };
    let es = dtype.size_bytes() as u32;
    let (wgm, wgn) = (cfg.bm / cfg.wg_m, cfg.bn / cfg.wg_n);
    if !(wgn * es).is_multiple_of(128) || !wgm.is_multiple_of(64) {
        return refuse(NoTmaStore::WarpgroupLines);
    }
    if !(crate::mainloop::stride_align(k, *tensor, 0) * es).is_multiple_of(16) {
        return refuse(NoTmaStore::RowsNotAligned);
    }
    // The fewest staging rounds whose buffer fits beside the stages without lowering the
    // blocks a multiprocessor holds (blocks that share one overlap an epilogue with another's
    // MMAs already): each warpgroup stages 1/rounds of its boxes at a time.
    let boxes = (wgm / 64) * (wgn * es / 128);
    let warpgroups = cfg.wg_m * cfg.wg_n;
    let main = f.plan.smem_bytes.div_ceil(16) * 16;
    let fits = |rounds: u32| {
        let bytes = warpgroups * (boxes / rounds) * 64 * 128 + 1024;
        let ok = main + bytes <= SM90_SMEM_LIMIT
            && SM90_SMEM_LIMIT / (main + bytes) >= SM90_SMEM_LIMIT / main.max(1);
        ok.then_some((rounds, bytes))
    };
    // Any whole number of boxes a round (a 192-wide f16 tile's 3 boxes in 1 or 3 rounds).
    let Some((rounds, smem_bytes)) = (1..=boxes)
        .filter(|r| boxes.is_multiple_of(*r))
        .find_map(fits)
    else {
        return refuse(NoTmaStore::NoRoom {
            mainloop_bytes: f.plan.smem_bytes,
        });
    };
    let map = format!("ph_tma{}", tma.len());
    let param = TmaParam::new(map.clone(), *tensor, &k.params[*tensor].kind, 1, spec)?;
    tma.push(param);
    Some(Ok(TmaStore {
        stmt: last,
        map,
        smem_bytes,
        boxes,
        rounds,
    }))
}
