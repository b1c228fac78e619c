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
    /// Rounds each warpgroup stages its part of the tile in (1: all at once).
    pub rounds: u32,
}

/// Decides whether the kernel's C store goes through shared memory and TMA stores, adding C's
/// tensor map to `tma` when it does; says why not in `notes` when the GEMM is on the wgmma
/// main loop. It does when the kernel has one GEMM, on the wgmma main loop, whose tile the
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
    notes: &mut Vec<String>,
    target: &Target,
) -> Option<TmaStore> {
    let [(m, MainLoop::Fast(f))] = gemms else {
        return None;
    };
    let (Strategy::Sm90, Some(cfg)) = (f.plan.strategy, f.plan.sm90.as_deref()) else {
        return None;
    };
    let mut refuse = |why: &str| {
        notes.push(format!("C store: registers to global memory ({why})"));
        None
    };
    match split_k {
        Some(SplitReduce::AtomicAdd) => return refuse("SPLIT_K adds partial tiles with atomics"),
        Some(SplitReduce::Workspace) => {
            return refuse("SPLIT_K: the last part of each tile stores it, after the others")
        }
        Some(SplitReduce::Cluster) => {
            return refuse("SPLIT_K: each part of the cluster stores its columns of the tile")
        }
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
        return refuse("the kernel's last statement is not the C tile's store");
    };
    let whole = matches!(index.as_slice(),
        [Index::Span { len: r, .. }, Index::Span { len: c, .. }]
            if *r == m.tile_m && *c == m.tile_n);
    if !whole {
        return refuse("the store is not of one whole TILE_M x TILE_N tile of a 2-D tensor");
    }
    if natural(k, target, layouts, value).as_ref() != layouts.get(&m.acc) {
        return refuse("the stored value is not elementwise in the accumulator");
    }
    let ParamKind::Tensor { dtype, order, .. } = &k.params[*tensor].kind else {
        return None;
    };
    if *order != MemOrder::RowMajor {
        return refuse("C is column-major");
    }
    let Some(spec) = TmaSpec::store_c(*dtype) else {
        return refuse("the copy engine has no type for C's elements");
    };
    let es = dtype.size_bytes() as u32;
    let (wgm, wgn) = (cfg.bm / cfg.wg_m, cfg.bn / cfg.wg_n);
    if !(wgn * es).is_multiple_of(128) || !wgm.is_multiple_of(64) {
        return refuse("a warpgroup's columns are not whole 128-byte lines");
    }
    if !(crate::mainloop::stride_align(k, *tensor, 0) * es).is_multiple_of(16) {
        return refuse("C's rows are not known to be 16-byte aligned");
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
        return refuse(&format!(
            "staging even one box per warpgroup would take shared memory that the main loop's \
             {} bytes need, or lower the blocks per multiprocessor",
            f.plan.smem_bytes
        ));
    };
    let map = format!("ph_tma{}", tma.len());
    let param = TmaParam::new(map.clone(), *tensor, &k.params[*tensor].kind, 1, spec)?;
    tma.push(param);
    notes.push(format!(
        "C store: through shared memory and TMA stores, boxes of 64 rows x 128 bytes, {} \
         per warpgroup in {rounds} round{} ({smem_bytes} bytes; \
         ph::gemm::sm90::store_tile_tma)",
        boxes,
        if rounds == 1 { "" } else { "s" }
    ));
    Some(TmaStore {
        stmt: last,
        map,
        smem_bytes,
        rounds,
    })
}
