//! The template arguments of the register-fed main loops: `ph::gemm::sm80::MainLoop`
//! (mma.sync + ldmatrix + cp.async) and `ph::gemm::ffma::MainLoop` (exact fp32 on FFMA), their
//! constraints, shared memory and accumulator layouts.

use super::{b, mma_k, smem_fits, NoMainLoop, OperandCopy};
use crate::Target;

/// `ph::gemm::sm80::MainLoop<DT, BM, BN, BK, WARPS_M, WARPS_N, STAGES, A_KMAJOR, B_KMAJOR, VA, VB>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sm80Cfg {
    pub dt: &'static str,
    pub elem_bytes: u32,
    pub bm: u32,
    pub bn: u32,
    pub bk: u32,
    pub warps_m: u32,
    pub warps_n: u32,
    pub stages: u32,
    pub a_k: bool,
    pub b_k: bool,
    /// Bytes per cp.async of A and B (16, 8 or 4), or the operand's alignment in bytes (2 or
    /// 1) when it is under 4: that operand is register-staged ([`Sm80Cfg::copy`]).
    pub va: u32,
    pub vb: u32,
    /// VEC_COPY=1: an operand aligned to 2 bytes of a 16-bit type is copied by shifted 16-byte
    /// vectors ([`OperandCopy::Shifted`]); the header's `SHIFT` argument.
    pub shift: bool,
}

impl Sm80Cfg {
    pub fn threads(&self) -> u32 {
        self.warps_m * self.warps_n * 32
    }
    /// `MainLoop::SMEM_BYTES`.
    pub fn smem_bytes(&self) -> u32 {
        self.stages * (self.bm + self.bn) * self.bk * self.elem_bytes
    }
    pub fn acc_regs(&self) -> u32 {
        self.bm * self.bn / self.threads()
    }
    /// How A (`b == false`) or B is copied into shared memory.
    pub fn copy(&self, b: bool) -> OperandCopy {
        match if b { self.vb } else { self.va } {
            v if v >= 4 => OperandCopy::CpAsync { bytes: v },
            2 if self.shifted(2) => OperandCopy::Shifted,
            v => OperandCopy::RegisterStaged { align_bytes: v },
        }
    }
    /// An operand copied `v` bytes at a time is copied by shifted vectors (`Staged::SHIFTED`).
    fn shifted(&self, v: u32) -> bool {
        self.shift && v == 2 && self.elem_bytes == 2
    }
    /// The main loop's type. `SHIFT` is written out only where an operand takes it, so that
    /// VEC_COPY=1 leaves every other loop's text as it was.
    pub fn cpp(&self) -> String {
        let shift = if self.shifted(self.va) || self.shifted(self.vb) {
            ", 1"
        } else {
            ""
        };
        format!(
            "ph::gemm::sm80::MainLoop<{}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}{shift}>",
            self.dt,
            self.bm,
            self.bn,
            self.bk,
            self.warps_m,
            self.warps_n,
            self.stages,
            b(self.a_k),
            b(self.b_k),
            self.va,
            self.vb
        )
    }
    /// The header's constraints, and shared memory within `target`'s limit per block.
    pub fn validate(&self, target: Target) -> Result<(), NoMainLoop> {
        let es = self.elem_bytes;
        let ks = mma_k(es);
        let (wm, wn) = (self.bm / self.warps_m.max(1), self.bn / self.warps_n.max(1));
        // A register-staged operand stores 4-byte pieces, a shifted one 16-byte pieces.
        let line_ok = |kmajor: bool, rows: u32, v: u32| {
            let line = if kmajor { self.bk } else { rows } * es;
            let piece = if self.shifted(v) { 16 } else { v.max(4) };
            line % 32 == 0 && line % piece == 0 && (rows * self.bk * es) % 128 == 0
        };
        let checks: [(bool, NoMainLoop); 8] = [
            (
                es == 2 || (self.a_k && self.b_k),
                NoMainLoop::MmaNeedsKMajor,
            ),
            (self.bk % ks == 0, NoMainLoop::BkNotMmaK),
            (
                self.bm % self.warps_m == 0 && self.bn % self.warps_n == 0,
                NoMainLoop::WarpsDoNotDivide,
            ),
            (wm % 16 == 0 && wn % 16 == 0, NoMainLoop::WarpTileNot16),
            (
                (2..=8).contains(&self.stages),
                NoMainLoop::Stages { max: 8 },
            ),
            (
                [1, 2, 4, 8, 16].contains(&self.va)
                    && [1, 2, 4, 8, 16].contains(&self.vb)
                    && self.va >= es
                    && self.vb >= es,
                NoMainLoop::CopyWidth,
            ),
            (
                line_ok(self.a_k, self.bm, self.va) && line_ok(self.b_k, self.bn, self.vb),
                NoMainLoop::StagedLines,
            ),
            (self.acc_regs() <= 128, NoMainLoop::TooManyAccumulators),
        ];
        match checks.iter().find(|(ok, _)| !ok) {
            Some((_, why)) => Err(*why),
            None => smem_fits(self.smem_bytes(), target),
        }
    }
    /// Mirror of `AccLayout::coord`.
    pub fn coord(&self, tid: u32, i: u32) -> Option<(u32, u32)> {
        let (wm_, wn_) = (self.bm / self.warps_m, self.bn / self.warps_n);
        let ni_n = wn_ / 8;
        let n = (wm_ / 16) * ni_n * 4;
        if tid >= self.threads() || i >= n {
            return None;
        }
        let (warp, lane) = (tid / 32, tid % 32);
        let (wm, wn) = (warp % self.warps_m, warp / self.warps_m);
        let (e, f) = (i % 4, i / 4);
        let (ni, mi) = (f % ni_n, f / ni_n);
        Some((
            wm * wm_ + mi * 16 + lane / 4 + 8 * (e / 2),
            wn * wn_ + ni * 8 + (lane % 4) * 2 + e % 2,
        ))
    }
}

/// `ph::gemm::ffma::MainLoop<BM, BN, BK, WARPS_M, WARPS_N, TM, TN, A_KMAJOR, B_KMAJOR, VA, VB,
/// STAGES>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FfmaCfg {
    pub bm: u32,
    pub bn: u32,
    pub bk: u32,
    pub warps_m: u32,
    pub warps_n: u32,
    pub tm: u32,
    pub tn: u32,
    pub a_k: bool,
    pub b_k: bool,
    /// Global copy width in floats (4, 2 or 1).
    pub va: u32,
    pub vb: u32,
    /// Shared-memory pipeline depth (2..4).
    pub stages: u32,
}

impl FfmaCfg {
    pub fn threads(&self) -> u32 {
        self.warps_m * self.warps_n * 32
    }
    /// `MainLoop::SMEM_BYTES`: STAGES buffers of BK lines of (BM + 4) and (BN + 4) floats.
    pub fn smem_bytes(&self) -> u32 {
        self.stages * (self.bk * (self.bm + 4) + self.bk * (self.bn + 4)) * 4
    }
    pub fn cpp(&self) -> String {
        format!(
            "ph::gemm::ffma::MainLoop<{}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}>",
            self.bm,
            self.bn,
            self.bk,
            self.warps_m,
            self.warps_n,
            self.tm,
            self.tn,
            b(self.a_k),
            b(self.b_k),
            self.va,
            self.vb,
            self.stages
        )
    }
    /// The header's constraints, and shared memory within `target`'s limit per block.
    pub fn validate(&self, target: Target) -> Result<(), NoMainLoop> {
        let (wm, wn) = (self.bm / self.warps_m.max(1), self.bn / self.warps_n.max(1));
        let fits = |kmajor: bool, rows: u32, v: u32| (if kmajor { self.bk } else { rows }) % v == 0;
        let checks: [(bool, NoMainLoop); 7] = [
            (
                [4, 8, 16].contains(&self.tm)
                    && [4, 8, 16].contains(&self.tn)
                    && self.tm * self.tn <= 128,
                NoMainLoop::ThreadTile,
            ),
            (
                self.bm % self.warps_m == 0 && self.bn % self.warps_n == 0,
                NoMainLoop::WarpsDoNotDivide,
            ),
            (
                wm % self.tm == 0 && wn % self.tn == 0 && (wm / self.tm) * (wn / self.tn) == 32,
                NoMainLoop::WarpTileNot32ThreadTiles,
            ),
            (
                [1, 2, 4].contains(&self.va) && [1, 2, 4].contains(&self.vb),
                NoMainLoop::LoadWidth,
            ),
            (
                fits(self.a_k, self.bm, self.va) && fits(self.b_k, self.bn, self.vb),
                NoMainLoop::LoadWidthLines,
            ),
            (
                (2..=4).contains(&self.stages),
                NoMainLoop::Stages { max: 4 },
            ),
            (
                !(self.a_k || self.b_k) || self.threads() % self.bk == 0,
                NoMainLoop::KMajorThreads,
            ),
        ];
        match checks.iter().find(|(ok, _)| !ok) {
            Some((_, why)) => Err(*why),
            None => smem_fits(self.smem_bytes(), target),
        }
    }
    /// Mirror of `AccLayout::coord`.
    pub fn coord(&self, tid: u32, i: u32) -> Option<(u32, u32)> {
        let (wm_, wn_) = (self.bm / self.warps_m, self.bn / self.warps_n);
        let ln_n = wn_ / self.tn;
        let (gm, gn) = (self.tm / 4, self.tn / 4);
        if tid >= self.threads() || i >= self.tm * self.tn {
            return None;
        }
        let (warp, lane) = (tid / 32, tid % 32);
        let (wm, wn) = (warp % self.warps_m, warp / self.warps_m);
        let (lm, ln) = (lane / ln_n, lane % ln_n);
        let (ri, ci) = (i / self.tn, i % self.tn);
        Some((
            wm * wm_ + (ri / 4) * (wm_ / gm) + lm * 4 + ri % 4,
            wn * wn_ + (ci / 4) * (wn_ / gn) + ln * 4 + ci % 4,
        ))
    }
}
