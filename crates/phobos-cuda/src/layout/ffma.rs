//! The register-tiled FFMA accumulator (`ph::FfmaAcc`): its parameters, which of them a dot
//! takes (the point's TILE_TM/TILE_TN/WARP_M/WARP_N or the default rule), and which element each
//! register of a thread holds.

use phobos_ir::knobs::Knob;
use phobos_ir::Point;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::tests::{covers_exactly_once, vec_groups_are_rows};
    use crate::layout::Layout;

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
