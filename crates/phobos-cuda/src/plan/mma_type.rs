//! The operand types of dots on tensor cores outside the recognized GEMM loops: which mma.sync
//! instruction each runs, and which dots take the direct path (`ph::mma_dot`: f16 / bf16 with
//! whole k steps, operands streamed, resident or from registers, wgmma possible) rather than
//! K-major staging (`ph::mma_dot_k`: every other type, and a K padded to whole k steps; on
//! sm_90a `ph::wg_dot_k`, wgmma with K padded to whole 128-byte lines).

use super::dots::{MmaInstr, NoMma, NoWgmma};
use crate::layout::{Layout, MmaAcc};
use crate::Target;
use phobos_ir::{DType, Expr, ExprKind, Kernel, LocalId};
use std::collections::BTreeMap;

/// The operand type of a tensor-core dot, naming its mma.sync instruction: m16n8k16 for f16 and
/// bf16, m16n8k8 for TF32, m16n8k32 for the 8-bit types (fp8 on sm_89 and later); f32
/// accumulators, i32 for s8 and u8.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MmaType {
    F16,
    BF16,
    /// f32 or `tf32` operands of a dot that may round them to TF32 (a `tf32` operand or
    /// `@allow_tf32`).
    Tf32,
    F8E4M3,
    F8E5M2,
    S8,
    U8,
}

impl MmaType {
    /// The tensor-core type of a dot's operands; `None` for exact f32, f64 or mixed operands.
    pub fn of(dot: &Expr) -> Option<MmaType> {
        let ExprKind::Dot { a, b, tf32, .. } = &dot.kind else {
            return None;
        };
        let (ta, tb) = (a.ty.dtype(), b.ty.dtype());
        let f32ish = |t| matches!(t, DType::F32 | DType::Tf32);
        if f32ish(ta) && f32ish(tb) {
            return (*tf32 || ta == DType::Tf32 || tb == DType::Tf32).then_some(MmaType::Tf32);
        }
        if ta != tb {
            return None;
        }
        Some(match ta {
            DType::F16 => MmaType::F16,
            DType::BF16 => MmaType::BF16,
            DType::F8E4M3 => MmaType::F8E4M3,
            DType::F8E5M2 => MmaType::F8E5M2,
            DType::I8 => MmaType::S8,
            DType::U8 => MmaType::U8,
            _ => return None,
        })
    }

    /// Bytes of one operand element as the tensor cores read it.
    pub const fn bytes(self) -> i64 {
        match self {
            MmaType::F16 | MmaType::BF16 => 2,
            MmaType::Tf32 => 4,
            _ => 1,
        }
    }

    /// The k of the mma.sync instruction: one k step is 32 bytes of K.
    pub const fn k(self) -> i64 {
        32 / self.bytes()
    }

    /// K rounded up to whole k steps (the columns past K are staged as zeros).
    pub const fn padded_k(self, k: i64) -> i64 {
        (k + self.k() - 1) / self.k() * self.k()
    }

    /// K rounded up to whole 128-byte lines: the K of a K-major staged dot on wgmma, whose
    /// descriptors address the 128-byte swizzled form (the columns past K are staged as zeros).
    pub const fn wgmma_padded_k(self, k: i64) -> i64 {
        let line = 128 / self.bytes();
        (k + line - 1) / line * line
    }

    /// The compute capability (times ten) whose mma.sync first takes this type.
    pub const fn min_cc(self) -> u32 {
        match self {
            MmaType::F8E4M3 | MmaType::F8E5M2 => 89,
            _ => 80,
        }
    }

    /// The PTX name of the operand type.
    pub const fn ptx(self) -> &'static str {
        match self {
            MmaType::F16 => "f16",
            MmaType::BF16 => "bf16",
            MmaType::Tf32 => "tf32",
            MmaType::F8E4M3 => "e4m3",
            MmaType::F8E5M2 => "e5m2",
            MmaType::S8 => "s8",
            MmaType::U8 => "u8",
        }
    }

    /// The C++ constant naming the type as a template argument (`ph::gemm::Dt`, `ph::MMA_U8`).
    pub const fn cuda(self) -> &'static str {
        match self {
            MmaType::F16 => "ph::gemm::F16",
            MmaType::BF16 => "ph::gemm::BF16",
            MmaType::Tf32 => "ph::gemm::TF32",
            MmaType::F8E4M3 => "ph::gemm::F8E4M3",
            MmaType::F8E5M2 => "ph::gemm::F8E5M2",
            MmaType::S8 => "ph::gemm::I8",
            MmaType::U8 => "ph::MMA_U8",
        }
    }

    /// Whether a dot of this type and inner extent `k` takes the direct path: 16-bit operands
    /// and whole k steps.
    pub const fn direct(self, k: i64) -> bool {
        matches!(self, MmaType::F16 | MmaType::BF16) && k % 16 == 0
    }
}

impl std::fmt::Display for MmaType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.ptx())
    }
}

/// A dot on tensor cores: its accumulator and operand type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TensorDot {
    pub acc: MmaAcc,
    pub ty: MmaType,
    /// The inner extent.
    pub k: i64,
}

impl TensorDot {
    /// Whether it takes the direct path ([`MmaType::direct`]).
    pub const fn direct(&self) -> bool {
        self.ty.direct(self.k)
    }
}

/// The tensor-core lowering of a dot expression outside a recognized GEMM loop (f16, bf16,
/// TF32, fp8, i8 or u8 operands, sm_80+ and sm_89+ for fp8, a warp grid of 16 x 16 multiples;
/// any K), or why it runs on FFMA.
pub fn dot_tensor(k: &Kernel, target: &Target, dot: &Expr) -> Result<TensorDot, NoMma> {
    let ExprKind::Dot { a, .. } = &dot.kind else {
        return Err(NoMma::OperandType(dot.ty.dtype()));
    };
    let ty = MmaType::of(dot).ok_or(NoMma::OperandType(a.ty.dtype()))?;
    if !target.mma_sync() {
        return Err(NoMma::Arch(target.cc()));
    }
    if target.cc() < ty.min_cc() {
        return Err(NoMma::Fp8Arch(target.cc()));
    }
    let (_, inner) = crate::layout::rc(a.ty.shape().unwrap_or(&[1]));
    let (m, n) = crate::layout::rc(dot.ty.shape().unwrap_or(&[1]));
    let acc = MmaAcc::choose(m, n, k.launch.threads).ok_or(NoMma::Shape(m, n))?;
    Ok(TensorDot { acc, ty, k: inner })
}

/// The operand type of a dot that, on tensor cores, goes through K-major staging
/// (`ph::mma_dot_k`); `None` for the direct path and for dots on no tensor cores.
pub fn k_major_staged(dot: &Expr) -> Option<MmaType> {
    let ExprKind::Dot { a, .. } = &dot.kind else {
        return None;
    };
    let (_, inner) = crate::layout::rc(a.ty.shape().unwrap_or(&[1]));
    MmaType::of(dot).filter(|t| !t.direct(inner))
}

/// The instruction of a K-major staged dot: wgmma (`ph::wg_dot_k`, both operands K-major, K
/// padded to whole 128-byte lines) when the target has it, each warp holds 16 whole rows, N is
/// a generated wgmma shape and the point pins the knob `WGMMA_K` to 1; else mma.sync
/// (`ph::mma_dot_k`, the default) and why not wgmma.
pub fn staged_instr(k: &Kernel, target: &Target, t: &TensorDot) -> MmaInstr {
    let acc = &t.acc;
    let rows = acc.bm / acc.warps_m;
    if !target.wgmma() {
        MmaInstr::MmaSync(NoWgmma::Arch(target.cc()))
    } else if acc.warps_n != 1 || rows != 16 || acc.bm % 64 != 0 {
        MmaInstr::MmaSync(NoWgmma::WarpRows {
            rows,
            warps_n: acc.warps_n,
        })
    } else if acc.bn % 32 != 0 || acc.bn > 256 {
        MmaInstr::MmaSync(NoWgmma::Columns(acc.bn))
    } else if phobos_ir::knobs::Knob::WgmmaK.get(&k.point) != Some(1) {
        MmaInstr::MmaSync(NoWgmma::Knob)
    } else {
        MmaInstr::Wgmma
    }
}

/// Where a wgmma reads one operand from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WgOperand {
    /// The A fragments in registers (an accumulator holding whole rows, `ph::mma_dot_ra`).
    Registers,
    /// Shared memory, K-major: the inner extent along the 128-byte swizzled lines.
    KMajor,
    /// Shared memory, M- or N-major (dot's [K, N] B operand as it is; 16-bit types only).
    MnMajor,
}

impl std::fmt::Display for WgOperand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            WgOperand::Registers => "registers",
            WgOperand::KMajor => "K-major shared",
            WgOperand::MnMajor => "N-major shared",
        })
    }
}

/// The form of a dot on wgmma: the instruction's operand type, where each operand is read from,
/// and the K the instruction steps over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WgmmaForm {
    /// The operand type (the instruction's k: 32 bytes of it).
    pub ty: MmaType,
    pub a: WgOperand,
    pub b: WgOperand,
    /// K as staged: the dot's own K, or for K-major staging padded to whole 128-byte lines.
    pub k: i64,
}

impl WgmmaForm {
    /// The form of a K-major staged dot: A staged too (`ph::wg_dot_k`) or from registers
    /// (`ph::wg_dot_k_ra`, see `staged_a_from_registers`).
    pub fn k_major(t: &TensorDot, a_in_registers: bool) -> WgmmaForm {
        WgmmaForm {
            ty: t.ty,
            a: match a_in_registers {
                true => WgOperand::Registers,
                false => WgOperand::KMajor,
            },
            b: WgOperand::KMajor,
            k: t.ty.wgmma_padded_k(t.k),
        }
    }
}

/// Whether a K-major staged dot on wgmma reads its A operand from registers
/// (`ph::wg_dot_k_ra`): TF32 or 8-bit operands, and A laid out as an accumulator whose warps hold
/// the dot's whole rows (an earlier dot's result, attention's P). Its registers are the A
/// fragments once B's rows are staged in their order; 16-bit staged dots have a K of no whole k
/// steps, which no accumulator has.
pub fn staged_a_from_registers(
    k: &Kernel,
    target: &Target,
    layouts: &BTreeMap<LocalId, Layout>,
    dot: &Expr,
    t: &TensorDot,
) -> bool {
    let ExprKind::Dot { a, .. } = &dot.kind else {
        return false;
    };
    let typed = !matches!(t.ty, MmaType::F16 | MmaType::BF16);
    typed
        && staged_instr(k, target, t) == MmaInstr::Wgmma
        && matches!(super::natural(k, target, layouts, a),
            Some(Layout::Mma(p)) if super::a_from_registers(&p, &t.acc))
}
