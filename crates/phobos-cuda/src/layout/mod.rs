//! Register layouts of tiles: which thread holds which element. Mirrors the C++ layouts of
//! the prelude (the same formulas), so layout choices and shared-memory sizes are decided here
//! and unit-tested without a GPU.

pub mod ffma;
pub mod mma;
pub mod vec_cap;
pub use ffma::FfmaAcc;
pub use mma::{staged_bytes, staged_swizzled, MmaAcc, MmaRows};
pub use vec_cap::{
    kernel_vec_cap, line_store_tensors, rows_known_unaligned, shifted_store_tensors,
    shifted_tensors,
};

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
    pub(super) fn covers_exactly_once(l: &Layout, threads: u32) {
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
    pub(super) fn vec_groups_are_rows(l: &Layout, threads: u32) {
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
}
