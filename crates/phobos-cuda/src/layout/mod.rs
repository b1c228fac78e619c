//! Register layouts of tiles: which thread holds which element. Mirrors the C++ layouts of
//! the prelude (the same formulas), so layout choices and shared-memory sizes are decided here
//! and unit-tested without a GPU.

use phobos_ir::knobs::Knob;
use phobos_ir::Point;

pub mod mma;
pub use mma::{staged_bytes, staged_swizzled, MmaAcc, MmaRows};

/// A register layout of an `[r, c]` tile (a rank-1 tile `[n]` is `[1, n]`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Layout {
    /// `ph::Blocked<R, C, THREADS, VEC>`: coalesced, row-major order.
    Blocked {
        r: i64,
        c: i64,
        threads: u32,
        vec: i64,
    },
    /// `ph::FfmaAcc<..>`: the register-tiled FFMA accumulator.
    Ffma(FfmaAcc),
    /// `ph::gemm::sm80::AccLayout<..>`: the mma.sync accumulator of a dot outside a recognized
    /// GEMM loop (`phobos_mma.cuh`).
    Mma(MmaAcc),
    /// `ph::MmaRows<..>`: a `[r, 1]` tile held as the rows of [`Layout::Mma`] accumulators.
    MmaRows(MmaRows),
    /// A layout provided by a main-loop strategy's header (tensor-core accumulators): its C++
    /// type and shape. It follows the same contract, so every generic operation accepts it.
    External {
        cpp: String,
        alias: String,
        r: i64,
        c: i64,
    },
}

/// The parameters of `ph::FfmaAcc<BM, BN, THREADS, TM, TN, WM, WN>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FfmaAcc {
    pub bm: i64,
    pub bn: i64,
    pub threads: u32,
    pub tm: i64,
    pub tn: i64,
    pub wm: i64,
    pub wn: i64,
}

/// `[r, c]` of a tile shape.
pub fn rc(shape: &[i64]) -> (i64, i64) {
    match shape {
        [n] => (1, *n),
        [r, c] => (*r, *c),
        _ => (1, shape.iter().product()),
    }
}

/// The Blocked vector width: 4, 2 or 1, dividing `c`, and only as wide as keeps every thread
/// of the block busy (a tile of 256 elements over 256 threads gets 1).
pub fn blocked_vec(r: i64, c: i64, threads: u32) -> i64 {
    blocked_vec_capped(r, c, threads, 4)
}

/// [`blocked_vec`] up to `cap` (a power of two): 8 or 16 elements a group let tiles of 2- and
/// 1-byte types move 16 bytes an access.
pub fn blocked_vec_capped(r: i64, c: i64, threads: u32, cap: i64) -> i64 {
    let t = threads as i64;
    let mut v = cap.max(1);
    while v > 1 && !(c % v == 0 && r * c >= v * t) {
        v /= 2;
    }
    v
}

/// The Blocked layout of a tile shape.
pub fn blocked(shape: &[i64], threads: u32) -> Layout {
    blocked_capped(shape, threads, 4)
}

/// The Blocked layout of a tile shape with vector groups of up to `cap` elements.
pub fn blocked_capped(shape: &[i64], threads: u32, cap: i64) -> Layout {
    let (r, c) = rc(shape);
    Layout::Blocked {
        r,
        c,
        threads,
        vec: blocked_vec_capped(r, c, threads, cap),
    }
}

/// The widest Blocked vector group of a kernel: 16 bytes of its narrowest tensor that tiles
/// are loaded from or stored to (4 for 4-byte types, 8 for 2-byte, 16 for 1-byte), and 4 when
/// no tile touches memory; and, for tensors of 4-byte or wider elements, where the host
/// specialized the kernel on its problem, no wider than the alignment in elements of those
/// tensors' rows (the strides of their outer axes).
/// Rows known to be unaligned take element accesses, and a group of one element a thread
/// makes each of those coalesced (consecutive lanes, consecutive elements) where a wider group
/// would space a warp's elements a group apart. Rows of unknown alignment keep the wide group,
/// whose accesses check alignment at run time. One cap for every tile of the kernel, so that
/// tiles of one shape share their layout and combine without conversions.
pub fn kernel_vec_cap(k: &phobos_ir::Kernel) -> i64 {
    use phobos_ir::{ExprKind, ParamKind, StmtKind};
    let mut narrowest = 4usize;
    let mut row_align = 16i64;
    let mut note = |t: usize| {
        if let ParamKind::Tensor { dtype, dims, .. } = &k.params[t].kind {
            narrowest = narrowest.min(dtype.size_bytes().max(1));
            row_align = row_align.min(outer_stride_align(k, t, dims.len()));
        }
    };
    crate::visit::any_in_stmts(&k.body, &mut |e| {
        if let ExprKind::Load { tensor, .. } = &e.kind {
            if e.ty.is_tile() {
                note(*tensor);
            }
        }
        false
    });
    fn stores(stmts: &[phobos_ir::Stmt], f: &mut dyn FnMut(usize)) {
        for s in stmts {
            match &s.kind {
                StmtKind::Store { tensor, value, .. } if value.ty.is_tile() => f(*tensor),
                StmtKind::For { body, .. } | StmtKind::While { body, .. } => stores(body, f),
                StmtKind::If {
                    then_body,
                    else_body,
                    ..
                } => {
                    stores(then_body, f);
                    stores(else_body, f);
                }
                _ => {}
            }
        }
    }
    stores(&k.body, &mut note);
    let cap = (16 / narrowest as i64).clamp(4, 16);
    // Element groups for 4-byte and wider types only: one element a lane fills a warp's
    // 128-byte line. For 2-byte types it moves half a line an instruction, and the wide groups
    // measured faster (NOTES r6: bf16 cross-entropy at V = 50257, 1.26 against 0.73 TB/s).
    if narrowest >= 4 {
        cap.min(row_align)
    } else {
        cap
    }
}

/// The tensors whose tile loads take shifted 16-byte accesses (`ph::load_tile_shifted`): 2-byte
/// elements in 8-element groups (`vec_cap` 8), rows known not to start on 16 bytes (an outer
/// stride with no factor 8). Such a row's groups are not aligned vectors; each reads the two
/// aligned vectors covering it and shifts its elements out (bench/NOTES.md r8).
pub fn shifted_tensors(k: &phobos_ir::Kernel, vec_cap: i64) -> std::collections::BTreeSet<usize> {
    use phobos_ir::{ExprKind, ParamKind};
    let mut out = std::collections::BTreeSet::new();
    if vec_cap != 8 {
        return out;
    }
    crate::visit::any_in_stmts(&k.body, &mut |e| {
        if let ExprKind::Load { tensor, .. } = &e.kind {
            if let ParamKind::Tensor { dtype, dims, .. } = &k.params[*tensor].kind {
                if e.ty.is_tile()
                    && dtype.size_bytes() == 2
                    && outer_stride_align(k, *tensor, dims.len()) < 8
                {
                    out.insert(*tensor);
                }
            }
        }
        false
    });
    out
}

/// True when `tensor` holds 2-byte elements whose rows are known not to start on 16 bytes
/// (the tensors whose row tiles `ph::store_row_shifted` stores at `PACK=2`).
pub fn rows_known_unaligned(k: &phobos_ir::Kernel, tensor: usize) -> bool {
    match &k.params[tensor].kind {
        phobos_ir::ParamKind::Tensor { dtype, dims, .. } => {
            dtype.size_bytes() == 2 && outer_stride_align(k, tensor, dims.len()) < 8
        }
        _ => false,
    }
}

/// The alignment, in elements, known for every row of a tensor of `rank` axes: the smallest
/// over its outer axes' strides; 16 for a vector (its one row starts at the base) and where
/// nothing is known.
fn outer_stride_align(k: &phobos_ir::Kernel, tensor: usize, rank: usize) -> i64 {
    let phobos_ir::ParamKind::Tensor { order, .. } = &k.params[tensor].kind else {
        return 16;
    };
    // The contiguous axis is the last for row-major tensors, the first for column-major.
    let outer = match order {
        phobos_ir::MemOrder::RowMajor => 0..rank.saturating_sub(1),
        phobos_ir::MemOrder::ColMajor => 1.min(rank)..rank,
    };
    outer
        .filter_map(|axis| crate::mainloop::stride_align_if_known(k, tensor, axis))
        .map(i64::from)
        .min()
        .unwrap_or(16)
}

fn vec_of(t: i64) -> i64 {
    if t % 4 == 0 {
        4
    } else if t % 2 == 0 {
        2
    } else {
        1
    }
}

impl FfmaAcc {
    /// Valid when the tiles nest exactly: one warp tile per warp, 32 thread tiles per warp tile.
    pub fn is_valid(&self) -> bool {
        let FfmaAcc {
            bm,
            bn,
            threads,
            tm,
            tn,
            wm,
            wn,
        } = *self;
        let pos = [bm, bn, tm, tn, wm, wn].iter().all(|&x| x >= 1);
        pos && threads % 32 == 0
            && wm % tm == 0
            && wn % tn == 0
            && bm % wm == 0
            && bn % wn == 0
            && (wm / tm) * (wn / tn) == 32
            && (bm / wm) * (bn / wn) * 32 == threads as i64
            // The register array of a thread tile is unrolled: keep it in registers.
            && tm * tn <= 256
    }

    /// The FFMA accumulator for a `[bm, bn]` dot result: TILE_TM/TILE_TN/WARP_M/WARP_N from the
    /// point when it defines them and they fit, otherwise the default rule:
    /// `E = bm * bn / threads` elements per thread, `TM = 2^ceil(log2(E) / 2)`, `TN = E / TM`;
    /// lanes along n as many as fit (`min(32, bn / TN)`), the rest along m. None when no
    /// valid FFMA layout exists (small or odd tiles): the dot then accumulates in Blocked.
    pub fn choose(bm: i64, bn: i64, threads: u32, point: &Point) -> Option<FfmaAcc> {
        let pinned = |k: Knob| k.get(point);
        let (tm, tn) = match (pinned(Knob::TileTm), pinned(Knob::TileTn)) {
            (Some(tm), Some(tn)) => (tm, tn),
            _ => default_thread_tile(bm, bn, threads)?,
        };
        let mut cands = Vec::new();
        if let (Some(wm), Some(wn)) = (pinned(Knob::WarpM), pinned(Knob::WarpN)) {
            cands.push(FfmaAcc {
                bm,
                bn,
                threads,
                tm,
                tn,
                wm,
                wn,
            });
        }
        if tm >= 1 && tn >= 1 {
            let lanes_n = (bn / tn).clamp(1, 32);
            let lanes_n = if 32 % lanes_n == 0 { lanes_n } else { 1 };
            let lanes_m = 32 / lanes_n;
            cands.push(FfmaAcc {
                bm,
                bn,
                threads,
                tm,
                tn,
                wm: lanes_m * tm,
                wn: lanes_n * tn,
            });
        }
        if let Some(found) = cands.into_iter().find(FfmaAcc::is_valid) {
            return Some(found);
        }
        // Pinned values that do not fit this shape fall back to the default rule.
        let (tm, tn) = default_thread_tile(bm, bn, threads)?;
        let lanes_n = (bn / tn).clamp(1, 32);
        let lanes_m = 32 / lanes_n;
        let acc = FfmaAcc {
            bm,
            bn,
            threads,
            tm,
            tn,
            wm: lanes_m * tm,
            wn: lanes_n * tn,
        };
        acc.is_valid().then_some(acc)
    }

    pub fn n(&self) -> i64 {
        self.tm * self.tn
    }

    pub fn vec(&self) -> i64 {
        vec_of(self.tn)
    }

    /// The element register `i` of thread `tid` holds (mirrors `FfmaAcc::coord`).
    pub fn coord(&self, tid: i64, i: i64) -> (i64, i64) {
        let (vm, vn) = (vec_of(self.tm), vec_of(self.tn));
        let (lanes_m, lanes_n) = (self.wm / self.tm, self.wn / self.tn);
        let warps_n = self.bn / self.wn;
        let (w, l) = (tid / 32, tid % 32);
        let row0 = w / warps_n * self.wm + l / lanes_n * vm;
        let col0 = w % warps_n * self.wn + l % lanes_n * vn;
        let (ti, tj) = (i / self.tn, i % self.tn);
        (
            row0 + ti / vm * (lanes_m * vm) + ti % vm,
            col0 + tj / vn * (lanes_n * vn) + tj % vn,
        )
    }
}

fn default_thread_tile(bm: i64, bn: i64, threads: u32) -> Option<(i64, i64)> {
    let t = threads as i64;
    if bm * bn < t || (bm * bn) % t != 0 {
        return None;
    }
    let e = bm * bn / t;
    if !(e as u64).is_power_of_two() {
        return None;
    }
    let log = e.trailing_zeros() as i64;
    let tm = (1i64 << ((log + 1) / 2)).min(bm);
    let tn = e / tm;
    Some((tm, tn))
}

/// How a Blocked layout reduces its rows in registers (mirrors `ph::RowsInRegisters`): the
/// lanes sharing a row, and the partials each row leaves in the shared buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowsInRegisters {
    pub lanes: i64,
    pub slots_per_row: i64,
    pub rows: i64,
}

impl RowsInRegisters {
    /// Shared-memory bytes of the partials for register type bytes `size` (16-byte rounded).
    pub fn smem_bytes(&self, size: i64) -> i64 {
        (self.rows * self.slots_per_row * size + 15) / 16 * 16
    }
}

/// The register row reduction of `l`, when its rows lie on aligned lanes of one warp or on
/// whole warps: `G = C / VEC` groups a row, a power of two dividing 32 or a multiple of 32.
/// None for other layouts (the reduction stages the tile in shared memory).
pub fn rows_in_registers(l: &Layout) -> Option<RowsInRegisters> {
    let Layout::Blocked { r, c, threads, vec } = *l else {
        return None;
    };
    let g = c / vec;
    let t = threads as i64;
    let pow2 = g > 0 && (g & (g - 1)) == 0;
    if t % 32 != 0 || !pow2 || !(32 % g == 0 || g % 32 == 0) {
        return None;
    }
    let lanes = g.min(32);
    let run = if g % t == 0 { g / t } else { 1 };
    Some(RowsInRegisters {
        lanes,
        slots_per_row: g / lanes / run,
        rows: r,
    })
}

impl Layout {
    pub fn shape(&self) -> (i64, i64) {
        match self {
            Layout::Blocked { r, c, .. } => (*r, *c),
            Layout::Ffma(f) => (f.bm, f.bn),
            Layout::Mma(m) => (m.bm, m.bn),
            Layout::MmaRows(m) => (m.bm, 1),
            Layout::External { r, c, .. } => (*r, *c),
        }
    }

    pub fn is_blocked(&self) -> bool {
        matches!(self, Layout::Blocked { .. })
    }

    /// The C++ type.
    pub fn cpp(&self) -> String {
        match self {
            Layout::Blocked { r, c, threads, vec } => {
                format!("ph::Blocked<{r}, {c}, {threads}, {vec}>")
            }
            Layout::Ffma(f) => format!(
                "ph::FfmaAcc<{}, {}, {}, {}, {}, {}, {}>",
                f.bm, f.bn, f.threads, f.tm, f.tn, f.wm, f.wn
            ),
            Layout::Mma(m) => format!(
                "ph::gemm::sm80::AccLayout<{}, {}, {}, {}>",
                m.bm, m.bn, m.warps_m, m.warps_n
            ),
            Layout::MmaRows(m) => {
                format!("ph::MmaRows<{}, {}, {}>", m.bm, m.warps_m, m.warps_n)
            }
            Layout::External { cpp, .. } => cpp.clone(),
        }
    }

    /// The alias the generated code names it by (`Blk32x8`, `Acc32x32`).
    pub fn alias(&self) -> String {
        match self {
            Layout::Blocked { r, c, .. } => format!("Blk{r}x{c}"),
            Layout::Ffma(f) => format!("Acc{}x{}", f.bm, f.bn),
            Layout::Mma(m) => format!("Mma{}x{}", m.bm, m.bn),
            Layout::MmaRows(m) => format!("MmaRows{}", m.bm),
            Layout::External { alias, .. } => alias.clone(),
        }
    }

    /// Elements per thread (Blocked and FfmaAcc; external layouts report none).
    pub fn n(&self) -> Option<i64> {
        match self {
            Layout::Blocked { r, c, threads, vec } => {
                let groups = r * c / vec;
                Some((groups + *threads as i64 - 1) / *threads as i64 * vec)
            }
            Layout::Ffma(f) => Some(f.n()),
            Layout::Mma(m) => Some(m.n()),
            Layout::MmaRows(m) => Some(m.n()),
            Layout::External { .. } => None,
        }
    }

    /// The element register `i` of thread `tid` holds (mirrors the C++ `coord`); rows >= R
    /// are padding.
    pub fn coord(&self, tid: i64, i: i64) -> Option<(i64, i64)> {
        match self {
            Layout::Blocked {
                c, threads, vec, ..
            } => {
                let e = ((i / vec) * *threads as i64 + tid) * vec + i % vec;
                Some((e / c, e % c))
            }
            Layout::Ffma(f) => Some(f.coord(tid, i)),
            Layout::Mma(m) => Some(m.coord(tid, i)),
            Layout::MmaRows(m) => Some(m.coord(tid, i)),
            Layout::External { .. } => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every in-tile element held exactly once; padding only past the last row.
    fn covers_exactly_once(l: &Layout, threads: u32) {
        let (r, c) = l.shape();
        let n = l.n().unwrap();
        let mut seen = vec![0u32; (r * c) as usize];
        for tid in 0..threads as i64 {
            for i in 0..n {
                let (rr, cc) = l.coord(tid, i).unwrap();
                assert!(cc < c && cc >= 0 && rr >= 0, "{l:?} tid {tid} i {i}");
                if rr < r {
                    seen[(rr * c + cc) as usize] += 1;
                }
            }
        }
        assert!(seen.iter().all(|&s| s == 1), "{l:?}: {seen:?}");
    }

    /// Registers i..i+VEC-1 (i % VEC == 0) hold consecutive columns of one row.
    fn vec_groups_are_rows(l: &Layout, threads: u32) {
        let n = l.n().unwrap();
        let vec = match l {
            Layout::Blocked { vec, .. } => *vec,
            Layout::Ffma(f) => f.vec(),
            _ => 1,
        };
        for tid in 0..threads as i64 {
            for i in (0..n).step_by(vec as usize) {
                let (r0, c0) = l.coord(tid, i).unwrap();
                assert_eq!(c0 % vec, 0);
                for v in 1..vec {
                    assert_eq!(l.coord(tid, i + v).unwrap(), (r0, c0 + v), "{l:?}");
                }
            }
        }
    }

    #[test]
    fn blocked_covers_every_element_once() {
        for threads in [32u32, 64, 128, 256] {
            for shape in [
                [1, 1],
                [1, 7],
                [3, 5],
                [32, 8],
                [8, 32],
                [64, 64],
                [1, 256],
                [128, 128],
                [5, 12],
            ] {
                let l = blocked(&shape, threads);
                covers_exactly_once(&l, threads);
                vec_groups_are_rows(&l, threads);
            }
        }
    }

    /// The register row reduction's partial slots: simulated over the layout's coordinates,
    /// every slot of a row is written exactly once (by the first lane of its part), and no two
    /// rows share one; the C++ `row_partials` writes the same indices.
    #[test]
    fn row_reduction_slots_cover_each_row_once() {
        for threads in [32u32, 64, 128, 256, 512] {
            for shape in [
                [1, 4096],
                [8, 4096],
                [1, 256],
                [4, 128],
                [16, 64],
                [64, 16],
                [32, 8],
                [2, 8192],
                [3, 1024],
                [7, 32],
            ] {
                let l = blocked(&shape, threads);
                let Some(ri) = rows_in_registers(&l) else {
                    continue;
                };
                let Layout::Blocked { r, c, vec, .. } = l else {
                    unreachable!()
                };
                let g = c / vec;
                let run = if g % threads as i64 == 0 {
                    g / threads as i64
                } else {
                    1
                };
                let ks = l.n().unwrap() / vec;
                let mut writes = vec![0u32; (ri.rows * ri.slots_per_row) as usize];
                for k0 in (0..ks).step_by(run as usize) {
                    for tid in 0..threads as i64 {
                        let grp = k0 * threads as i64 + tid;
                        // Every group of the run lies in the row of its first.
                        for k in k0..(k0 + run).min(ks) {
                            let (row, _) = l.coord(tid, k * vec).unwrap();
                            assert_eq!(row, grp / g, "{l:?} tid {tid} k {k}");
                        }
                        if grp % ri.lanes == 0 && grp / g < r {
                            let slot = grp / g * ri.slots_per_row + grp % g / ri.lanes;
                            assert!(slot / ri.slots_per_row == grp / g, "{l:?}");
                            writes[slot as usize] += 1;
                        }
                    }
                }
                assert!(writes.iter().all(|&w| w == 1), "{l:?}: {writes:?}");
            }
        }
        assert!(rows_in_registers(&blocked(&[5, 12], 256)).is_none());
        assert!(rows_in_registers(&blocked(&[1, 8000], 256)).is_none());
    }

    #[test]
    fn blocked_vec_keeps_threads_busy() {
        assert_eq!(blocked_vec(32, 8, 256), 1);
        assert_eq!(blocked_vec(128, 32, 256), 4);
        assert_eq!(blocked_vec(1, 256, 256), 1);
        assert_eq!(blocked_vec(1, 1024, 256), 4);
        assert_eq!(blocked_vec(16, 6, 32), 2);
    }

    #[test]
    fn ffma_defaults_follow_the_rule() {
        let p = Point::default();
        let a = FfmaAcc::choose(32, 32, 256, &p).unwrap();
        assert_eq!((a.tm, a.tn, a.wm, a.wn), (2, 2, 4, 32));
        let a = FfmaAcc::choose(128, 128, 256, &p).unwrap();
        assert_eq!((a.tm, a.tn, a.wm, a.wn), (8, 8, 16, 128));
        let a = FfmaAcc::choose(32, 128, 256, &p).unwrap();
        assert_eq!((a.tm, a.tn), (4, 4));
        assert!(
            FfmaAcc::choose(8, 8, 256, &p).is_none(),
            "fewer elements than threads"
        );
        assert!(
            FfmaAcc::choose(24, 32, 256, &p).is_none(),
            "3 elements per thread"
        );
    }

    #[test]
    fn ffma_uses_pinned_names_when_they_fit() {
        let p = Point(vec![
            ("TILE_TM".into(), 4),
            ("TILE_TN".into(), 16),
            ("WARP_M".into(), 32),
            ("WARP_N".into(), 64),
        ]);
        let a = FfmaAcc::choose(128, 128, 256, &p).unwrap();
        assert_eq!((a.tm, a.tn, a.wm, a.wn), (4, 16, 32, 64));
        // A thread tile that does not cover the block tile falls back to the default.
        let p = Point(vec![("TILE_TM".into(), 4), ("TILE_TN".into(), 4)]);
        let a = FfmaAcc::choose(128, 128, 256, &p).unwrap();
        assert_eq!((a.tm, a.tn), (8, 8));
    }

    #[test]
    fn ffma_covers_every_element_once() {
        let p = Point::default();
        for threads in [64u32, 128, 256, 512] {
            for (bm, bn) in [
                (32, 32),
                (64, 64),
                (128, 128),
                (32, 128),
                (128, 32),
                (64, 32),
                (16, 64),
            ] {
                if let Some(a) = FfmaAcc::choose(bm, bn, threads, &p) {
                    let l = Layout::Ffma(a);
                    covers_exactly_once(&l, threads);
                    vec_groups_are_rows(&l, threads);
                }
            }
        }
    }
}
