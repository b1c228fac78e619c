//! Tensor-core layouts of `dot`s outside a recognized GEMM loop (mirrors `phobos_mma.cuh` and
//! `ph::gemm::sm80::AccLayout`): the mma.sync m16n8 accumulator and the rows of it.

/// `ph::gemm::sm80::AccLayout<BM, BN, WARPS_M, WARPS_N>`: warps tile `[bm, bn]` in a
/// `warps_m x warps_n` grid (warp `w` at `(w % warps_m, w / warps_m)`), each warp tile in m16n8
/// fragments of 4 registers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MmaAcc {
    pub bm: i64,
    pub bn: i64,
    pub warps_m: i64,
    pub warps_n: i64,
}

/// `ph::MmaRows<BM, WARPS_M, WARPS_N>`: a `[bm, 1]` tile held as the rows of the accumulators
/// with that warp grid (replicated over the quad and the warp row).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MmaRows {
    pub bm: i64,
    pub warps_m: i64,
    pub warps_n: i64,
}

impl MmaAcc {
    /// The accumulator of a `[bm, bn]` dot over `threads` threads: as many warps along m as
    /// the rows allow (whole rows in one warp keep row reductions in registers and let the
    /// accumulator feed the next dot's A operand), the rest along n; each warp tile a multiple
    /// of 16 x 16. None when no grid fits.
    pub fn choose(bm: i64, bn: i64, threads: u32) -> Option<MmaAcc> {
        if !threads.is_multiple_of(32) || bm <= 0 || bn <= 0 {
            return None;
        }
        let warps = threads as i64 / 32;
        (1..=warps)
            .rev()
            .filter(|wm| warps % wm == 0)
            .map(|warps_m| MmaAcc {
                bm,
                bn,
                warps_m,
                warps_n: warps / warps_m,
            })
            .find(MmaAcc::is_valid)
    }

    pub fn is_valid(&self) -> bool {
        let ok = |extent: i64, warps: i64| warps >= 1 && extent % (warps * 16) == 0;
        ok(self.bm, self.warps_m) && ok(self.bn, self.warps_n)
    }

    pub fn threads(&self) -> u32 {
        (self.warps_m * self.warps_n * 32) as u32
    }

    fn mi(&self) -> i64 {
        self.bm / self.warps_m / 16
    }

    fn ni(&self) -> i64 {
        self.bn / self.warps_n / 8
    }

    pub fn n(&self) -> i64 {
        self.mi() * self.ni() * 4
    }

    /// The rows of this accumulator.
    pub fn rows(&self) -> MmaRows {
        MmaRows {
            bm: self.bm,
            warps_m: self.warps_m,
            warps_n: self.warps_n,
        }
    }

    /// Element of register `i` of thread `tid` (mirrors `AccLayout::coord`).
    pub fn coord(&self, tid: i64, i: i64) -> (i64, i64) {
        let (warp, lane) = (tid / 32, tid % 32);
        let (wm, wn) = (warp % self.warps_m, warp / self.warps_m);
        let (e, f) = (i % 4, i / 4);
        let (mi, ni) = (f / self.ni(), f % self.ni());
        let (tile_m, tile_n) = (self.bm / self.warps_m, self.bn / self.warps_n);
        (
            wm * tile_m + mi * 16 + lane / 4 + 8 * (e / 2),
            wn * tile_n + ni * 8 + (lane % 4) * 2 + e % 2,
        )
    }

    /// The [`MmaRows`] register holding the row of register `i` (mirrors `ph::mma_row_reg`).
    pub fn row_reg(&self, i: i64) -> i64 {
        (i / 4 / self.ni()) * 2 + (i % 4) / 2
    }
}

impl MmaRows {
    pub fn n(&self) -> i64 {
        2 * (self.bm / self.warps_m / 16)
    }

    /// Row of register `j` of thread `tid` (mirrors `MmaRows::coord`).
    pub fn coord(&self, tid: i64, j: i64) -> (i64, i64) {
        let (warp, lane) = (tid / 32, tid % 32);
        let wm = warp % self.warps_m;
        (
            wm * (self.bm / self.warps_m) + (j / 2) * 16 + lane / 4 + 8 * (j % 2),
            0,
        )
    }

    /// The copy stores and reductions count (mirrors `MmaRows::owns`).
    pub fn owns(&self, tid: i64) -> bool {
        tid % 4 == 0 && (tid / 32) / self.warps_m == 0
    }
}

/// Whether a staged 16-bit `[r, c]` operand takes the 128-byte swizzled form wgmma reads
/// (mirrors `ph::mma_swizzled`): rows of 64-element lines, 8 lines an atom.
pub fn staged_swizzled(r: i64, c: i64) -> bool {
    c % 64 == 0 && r % 8 == 0
}

/// Bytes of a staged 16-bit `[r, c]` operand in shared memory (mirrors
/// `ph::mma_staged_bytes`): swizzled, or padded rows of `c + 8`; a multiple of 1024, so every
/// staged buffer placed after others starts on a swizzle atom.
pub fn staged_bytes(r: i64, c: i64) -> u32 {
    let bytes = if staged_swizzled(r, c) {
        r * c * 2
    } else {
        r * (c + 8) * 2
    };
    (bytes as u32).div_ceil(1024) * 1024
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warps_go_along_m_first() {
        let a = MmaAcc::choose(64, 64, 128).unwrap();
        assert_eq!((a.warps_m, a.warps_n), (4, 1));
        let a = MmaAcc::choose(32, 64, 128).unwrap();
        assert_eq!((a.warps_m, a.warps_n), (2, 2));
        let a = MmaAcc::choose(16, 16, 32).unwrap();
        assert_eq!((a.warps_m, a.warps_n), (1, 1));
        assert!(
            MmaAcc::choose(16, 8, 32).is_none(),
            "warp tiles are 16 wide"
        );
        assert!(MmaAcc::choose(24, 32, 32).is_none());
        assert!(
            MmaAcc::choose(16, 16, 128).is_none(),
            "four warps need 64 rows or columns"
        );
    }

    /// Every element held by exactly one register; the rows layout holds each row's copies
    /// where the accumulator's registers of that row are, and exactly one copy is owned.
    #[test]
    fn accumulator_and_rows_cover_every_element() {
        for threads in [32u32, 64, 128, 256] {
            for (bm, bn) in [
                (16, 16),
                (64, 64),
                (128, 64),
                (64, 128),
                (32, 32),
                (128, 128),
            ] {
                let Some(a) = MmaAcc::choose(bm, bn, threads) else {
                    continue;
                };
                let mut seen = vec![0u32; (bm * bn) as usize];
                let rows = a.rows();
                let mut owned = vec![0u32; bm as usize];
                for tid in 0..threads as i64 {
                    for i in 0..a.n() {
                        let (r, c) = a.coord(tid, i);
                        seen[(r * bn + c) as usize] += 1;
                        assert_eq!(rows.coord(tid, a.row_reg(i)).0, r, "{a:?} {tid} {i}");
                    }
                    for j in 0..rows.n() {
                        if rows.owns(tid) {
                            owned[rows.coord(tid, j).0 as usize] += 1;
                        }
                    }
                }
                assert!(seen.iter().all(|&s| s == 1), "{a:?}");
                assert!(owned.iter().all(|&s| s == 1), "{a:?}: {owned:?}");
            }
        }
    }
}
