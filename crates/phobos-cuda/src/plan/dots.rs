//! The plan's decisions about dots outside the recognized GEMM loops: which run on tensor
//! cores (and why the others do not), the operand layouts and shared-memory residents that feed
//! them, and the typed record `Emitted::dots` carries.

use super::mma_type::{dot_tensor, staged_instr, MmaType, TensorDot, WgOperand, WgmmaForm};
use super::{accumulates_dot, collect_assigns};
use crate::gemm_match::GemmMatch;
use crate::layout::{blocked, FfmaAcc, Layout, MmaAcc};
use crate::mainloop::MainLoop;
use crate::visit::{bodies, stmt_exprs};
use crate::Target;
use phobos_ir::{BinOp, DType, Expr, ExprKind, Kernel, LocalId, Stmt, StmtKind};
use std::collections::{BTreeMap, BTreeSet};

/// How one dot outside the recognized GEMM loops is lowered (the plan's record of it; the
/// emitted notes render it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DotRecord {
    /// The result's `[m, n]` and the inner extent.
    pub m: i64,
    pub n: i64,
    pub k: i64,
    /// The tensor-core accumulator, or why the dot runs on FFMA.
    pub lowering: Result<MmaAcc, NoMma>,
    /// The instruction, on tensor cores: wgmma, or mma.sync and why not wgmma (direct dots:
    /// `dot_instr`; K-major staged ones: `staged_instr`).
    pub instr: Option<MmaInstr>,
    /// The operand type, on tensor cores (which mma.sync: m16n8k16, k8 or k32).
    pub operands: Option<MmaType>,
    /// On wgmma: the instruction's type and where it reads each operand from.
    pub wgmma: Option<WgmmaForm>,
}

impl std::fmt::Display for DotRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (m, n) = (self.m, self.n);
        match (&self.lowering, &self.instr) {
            (Ok(a), Some(MmaInstr::Wgmma)) => match self.wgmma {
                // K-major staging: name the type, the operands' layout and the padding.
                Some(w) if !w.ty.direct(self.k) => {
                    let padded = match w.k {
                        kp if kp != self.k => format!(", K {} padded to {kp}", self.k),
                        _ => String::new(),
                    };
                    let operands = match w.a {
                        WgOperand::Registers => "A from registers, B K-major in shared memory",
                        _ => "A and B K-major in shared memory",
                    };
                    write!(
                        f,
                        "dot [{m}, {n}]: tensor cores (wgmma m64n{n}k{} {}, {operands}, {} warpgroups{padded})",
                        w.ty.k(),
                        w.ty,
                        a.warps_m / 4
                    )
                }
                _ => write!(
                    f,
                    "dot [{m}, {n}]: tensor cores (wgmma m64n{n}k16, {} warpgroups)",
                    a.warps_m / 4
                ),
            },
            (Ok(a), instr) => {
                let ty = self.operands.unwrap_or(MmaType::F16);
                let named = match ty {
                    MmaType::F16 | MmaType::BF16 => String::new(),
                    t => format!(" {t}"),
                };
                let padded = match ty.padded_k(self.k) {
                    kp if kp != self.k => format!(", K {} padded to {kp}", self.k),
                    _ => String::new(),
                };
                write!(
                    f,
                    "dot [{m}, {n}]: tensor cores (mma.sync m16n8k{}{named}, {} x {} warps{padded})",
                    ty.k(),
                    a.warps_m,
                    a.warps_n
                )?;
                match instr {
                    Some(MmaInstr::MmaSync(why)) => write!(f, "; not wgmma: {why}"),
                    _ => Ok(()),
                }
            }
            (Err(why), _) => write!(f, "dot [{m}, {n}]: FFMA: {why}"),
        }
    }
}

/// The tensor-core instruction of a dot: wgmma (sm_90a), or mma.sync with the reason wgmma was
/// not taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MmaInstr {
    Wgmma,
    MmaSync(NoWgmma),
}

/// Why a tensor-core dot runs on mma.sync rather than wgmma.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoWgmma {
    /// wgmma needs sm_90a; the target's compute capability times ten ([`crate::Target::cc`]).
    Arch(u32),
    /// wgmma gives each warp 16 whole rows of an m64 tile; this accumulator gives each warp
    /// `rows` rows over `warps_n` warp columns.
    WarpRows { rows: i64, warps_n: i64 },
    /// N is not a multiple of 32 up to 256 (the wgmma shapes generated).
    Columns(i64),
    /// A K-major staged dot (tf32, fp8, i8, u8, a K of no whole k steps) at a point that does
    /// not pin the knob `WGMMA_K` to 1.
    Knob,
    /// A staged operand's rows are not whole 128-byte lines of the swizzled form
    /// (`[rows, cols]` with cols a multiple of 64 and rows of 8).
    Operand { rows: i64, cols: i64 },
}

impl std::fmt::Display for NoWgmma {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NoWgmma::Arch(a) => write!(f, "sm_{a} has no wgmma (sm_90a)"),
            NoWgmma::WarpRows { rows, warps_n } => write!(
                f,
                "{rows} rows a warp over {warps_n} warp column(s), wgmma needs 16 rows a warp in one column (threads = 2 x rows)"
            ),
            NoWgmma::Columns(n) => write!(f, "N = {n} is not a multiple of 32 up to 256"),
            NoWgmma::Knob => write!(f, "WGMMA_K is not 1 (K-major staged dots take wgmma under WGMMA_K=1)"),
            NoWgmma::Operand { rows, cols } => write!(
                f,
                "a staged [{rows}, {cols}] operand is not in 128-byte swizzled lines (columns a multiple of 64, rows of 8)"
            ),
        }
    }
}

/// The instruction of a tensor-core dot with accumulator `acc`: wgmma when the target has it,
/// each warp holds 16 whole rows, N is a generated wgmma shape and every operand read from
/// shared memory is in the swizzled form (A from registers needs none); else mma.sync and why.
/// `layouts` are the plan's (A from registers when A is a local laid out as the accumulator's
/// rows).
pub fn dot_instr(
    target: &Target,
    dot: &Expr,
    acc: &MmaAcc,
    layouts: &BTreeMap<LocalId, Layout>,
) -> MmaInstr {
    let ExprKind::Dot { a, b, .. } = &dot.kind else {
        return MmaInstr::MmaSync(NoWgmma::Columns(0));
    };
    let why = || {
        if !target.wgmma() {
            return Some(NoWgmma::Arch(target.cc()));
        }
        let rows = acc.bm / acc.warps_m;
        if acc.warps_n != 1 || rows != 16 || acc.bm % 64 != 0 {
            return Some(NoWgmma::WarpRows {
                rows,
                warps_n: acc.warps_n,
            });
        }
        if acc.bn % 32 != 0 || acc.bn > 256 {
            return Some(NoWgmma::Columns(acc.bn));
        }
        let swizzled = |e: &Expr| {
            let (r, c) = crate::layout::rc(e.ty.shape().unwrap_or(&[1]));
            crate::layout::staged_swizzled(r, c)
                .then_some(())
                .ok_or(NoWgmma::Operand { rows: r, cols: c })
        };
        let a_in_registers = matches!(&a.kind, ExprKind::Local(l)
            if matches!(layouts.get(l), Some(Layout::Mma(p)) if a_from_registers(p, acc)));
        if !a_in_registers {
            if let Err(e) = swizzled(a) {
                return Some(e);
            }
        }
        swizzled(b).err()
    };
    match why() {
        None => MmaInstr::Wgmma,
        Some(w) => MmaInstr::MmaSync(w),
    }
}

/// The wgmma form of a direct dot (`ph::mma_dot` / `ph::mma_dot_ra`): A from registers when it
/// is an accumulator holding the same whole rows, else K-major in shared memory; B K-major for
/// `dot_t`, N-major for `dot`.
fn direct_form(t: &TensorDot, dot: &Expr, layouts: &BTreeMap<LocalId, Layout>) -> WgmmaForm {
    let (a, trans_b) = match &dot.kind {
        ExprKind::Dot { a, trans_b, .. } => (&**a, *trans_b),
        _ => (dot, true),
    };
    let a_in_registers = matches!(&a.kind, ExprKind::Local(l)
        if matches!(layouts.get(l), Some(Layout::Mma(p)) if a_from_registers(p, &t.acc)));
    WgmmaForm {
        ty: t.ty,
        a: if a_in_registers {
            WgOperand::Registers
        } else {
            WgOperand::KMajor
        },
        b: if trans_b {
            WgOperand::KMajor
        } else {
            WgOperand::MnMajor
        },
        k: t.k,
    }
}

/// Whether an A operand laid out as `a` feeds a dot with accumulator `acc` from registers
/// (`ph::mma_dot_ra`): whole rows per warp, the same warps and rows.
pub fn a_from_registers(a: &MmaAcc, acc: &MmaAcc) -> bool {
    a.warps_n == 1 && acc.warps_n == 1 && a.warps_m == acc.warps_m && a.bm == acc.bm
}

/// Why a dot outside a recognized GEMM loop does not run on tensor cores.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoMma {
    /// Exact f32 operands (neither `tf32` nor `@allow_tf32`), f64, wider integers or mixed
    /// types: FFMA keeps the interpreter's precision.
    OperandType(DType),
    /// mma.sync needs sm_80; the target's compute capability times ten ([`crate::Target::cc`]).
    Arch(u32),
    /// fp8 mma.sync needs sm_89; the target's compute capability times ten.
    Fp8Arch(u32),
    /// No grid of warps tiles `[m, n]` in 16 x 16 warp tiles for the block's threads.
    Shape(i64, i64),
}

impl std::fmt::Display for NoMma {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NoMma::OperandType(t) => write!(
                f,
                "{t} operands (tensor cores take f16, bf16, fp8, i8, u8, and f32 as TF32 under a tf32 operand or @allow_tf32)"
            ),
            NoMma::Arch(a) => write!(f, "sm_{a} has no mma.sync (sm_80 and later)"),
            NoMma::Fp8Arch(a) => write!(f, "sm_{a} has no fp8 mma.sync (sm_89 and later)"),
            NoMma::Shape(m, n) => write!(
                f,
                "no warp grid tiles [{m}, {n}] in 16 x 16 warp tiles for the block's threads"
            ),
        }
    }
}

/// Why a dot does not take the direct tensor-core path of [`dot_mma`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NotDirect {
    /// It runs on FFMA.
    Ffma(NoMma),
    /// It runs on tensor cores through K-major staging (`ph::mma_dot_k`, or `ph::wg_dot_k` on
    /// wgmma).
    Staged(TensorDot),
}

/// The tensor-core accumulator of a dot expression on the direct path (`ph::mma_dot`: f16 or
/// bf16 operands, K a multiple of 16, operands that may be streamed, resident in shared memory
/// or, for A, an accumulator's registers, and wgmma on sm_90a), or why not.
pub fn dot_mma(k: &Kernel, target: &Target, dot: &Expr) -> Result<MmaAcc, NotDirect> {
    match dot_tensor(k, target, dot) {
        Ok(t) if t.direct() => Ok(t.acc),
        Ok(t) => Err(NotDirect::Staged(t)),
        Err(why) => Err(NotDirect::Ffma(why)),
    }
}

/// The accumulator layout of a dot: tensor-core fragments where [`dot_tensor`] allows, else the
/// FFMA accumulator, else Blocked.
pub fn dot_layout(k: &Kernel, target: &Target, dot: &Expr) -> Layout {
    if let Ok(t) = dot_tensor(k, target, dot) {
        return Layout::Mma(t.acc);
    }
    let (m, n) = crate::layout::rc(dot.ty.shape().unwrap_or(&[1]));
    match FfmaAcc::choose(m, n, k.launch.threads, &k.point) {
        Some(f) => Layout::Ffma(f),
        None => blocked(&[m, n], k.launch.threads),
    }
}

/// Tile locals that are loaded once (one assignment, a statement of the kernel's body, of a
/// tile load of a 16-bit tensor the kernel never writes) and read only as operands of tensor-core dots, at least once inside a
/// loop (attention's q): they stay in shared memory in the dots' staged form, loaded before
/// the loop, instead of taking registers and being staged again at every iteration.
pub(super) fn resident_operands(k: &Kernel, target: &Target) -> BTreeSet<LocalId> {
    let mut stored = BTreeSet::new();
    crate::visit::stored_tensors(&k.body, &mut stored);
    let mut assigns: Vec<(LocalId, &Expr)> = Vec::new();
    collect_assigns(&k.body, &mut assigns);
    let mut out = BTreeSet::new();
    for (l, local) in k.locals.iter().enumerate() {
        // One assignment, a statement of the kernel's own body (not inside a loop, whose next
        // iteration would overwrite the copy while slower warps still read it).
        let top_level = k
            .body
            .iter()
            .any(|s| matches!(&s.kind, StmtKind::Assign { local, .. } if *local == l));
        let loads_once = match assigns.iter().filter(|(x, _)| *x == l).collect::<Vec<_>>()[..] {
            [(_, value)] => {
                top_level
                    && matches!(&value.kind,
                        ExprKind::Load { tensor, .. } if !stored.contains(tensor))
            }
            _ => false,
        };
        let narrow = matches!(local.ty.dtype(), DType::F16 | DType::BF16) && local.ty.is_tile();
        if local.mutable || !loads_once || !narrow {
            continue;
        }
        fn uses(
            k: &Kernel,
            target: &Target,
            stmts: &[Stmt],
            l: LocalId,
            depth: usize,
            found: &mut (usize, bool, bool),
        ) {
            for s in stmts {
                for e in stmt_exprs(s) {
                    operand_uses(k, target, e, l, depth, found);
                }
                let inner = depth
                    + usize::from(matches!(
                        s.kind,
                        StmtKind::For { .. } | StmtKind::While { .. }
                    ));
                for b in bodies(s) {
                    uses(k, target, b, l, inner, found);
                }
            }
        }
        fn operand_uses(
            k: &Kernel,
            target: &Target,
            e: &Expr,
            l: LocalId,
            depth: usize,
            found: &mut (usize, bool, bool),
        ) {
            if let ExprKind::Dot { a, b, .. } = &e.kind {
                let mma = dot_mma(k, target, e).is_ok();
                for op in [a, b] {
                    if matches!(op.kind, ExprKind::Local(x) if x == l) {
                        if mma {
                            found.0 += 1;
                            found.2 |= depth > 0;
                        } else {
                            found.1 = true;
                        }
                    } else {
                        operand_uses(k, target, op, l, depth, found);
                    }
                }
                return;
            }
            if matches!(e.kind, ExprKind::Local(x) if x == l) {
                found.1 = true;
                return;
            }
            for c in crate::visit::children(e) {
                operand_uses(k, target, c, l, depth, found);
            }
        }
        let mut found = (0, false, false);
        uses(k, target, &k.body, l, 0, &mut found);
        let (in_dots, elsewhere, in_loop) = found;
        if in_dots > 0 && !elsewhere && in_loop {
            out.insert(l);
        }
    }
    out
}

/// Layouts for locals that are the A operand of tensor-core dots whose warps hold whole rows
/// of the accumulator: the accumulator layout of the operand's own shape with the same warps,
/// whose registers are the mma's A fragments (`ph::mma_dot_ra`: the operand is never staged).
/// A local used as the A operand of dots that disagree keeps its own layout.
pub(super) fn a_operand_layouts(
    k: &Kernel,
    target: &Target,
    fixed: &BTreeMap<LocalId, Layout>,
) -> BTreeMap<LocalId, Layout> {
    let mut want: BTreeMap<LocalId, Option<Layout>> = BTreeMap::new();
    crate::visit::any_in_stmts(&k.body, &mut |e| {
        if let ExprKind::Dot { a, .. } = &e.kind {
            if let ExprKind::Local(l) = a.kind {
                let (_, inner) = crate::layout::rc(a.ty.shape().unwrap_or(&[1]));
                let lay = dot_mma(k, target, e).ok().and_then(|acc| {
                    let op = MmaAcc {
                        bm: acc.bm,
                        bn: inner,
                        warps_m: acc.warps_m,
                        warps_n: 1,
                    };
                    (acc.warps_n == 1 && op.is_valid()).then_some(Layout::Mma(op))
                });
                let entry = want.entry(l).or_insert_with(|| lay.clone());
                if *entry != lay {
                    *entry = None;
                }
            }
        }
        false
    });
    want.into_iter()
        .filter(|(l, _)| !fixed.contains_key(l))
        .filter_map(|(l, lay)| Some((l, lay?)))
        .collect()
}

/// The record of every dot outside the recognized GEMM loops: its tensor-core accumulator, or
/// why it runs on FFMA.
pub(super) fn dot_records(
    k: &Kernel,
    target: &Target,
    gemms: &[(GemmMatch, MainLoop)],
    layouts: &BTreeMap<LocalId, Layout>,
) -> Vec<DotRecord> {
    let in_gemm: BTreeSet<LocalId> = gemms.iter().map(|(m, _)| m.acc).collect();
    let record = |d: &Expr| {
        let (m, n) = crate::layout::rc(d.ty.shape().unwrap_or(&[1]));
        let k_inner = match &d.kind {
            ExprKind::Dot { a, .. } => crate::layout::rc(a.ty.shape().unwrap_or(&[1])).1,
            _ => 0,
        };
        let lowering = dot_tensor(k, target, d);
        let instr = lowering.as_ref().ok().map(|t| match t.direct() {
            true => dot_instr(target, d, &t.acc, layouts),
            false => staged_instr(k, target, t),
        });
        let wgmma = match (&lowering, instr) {
            (Ok(t), Some(MmaInstr::Wgmma)) if !t.direct() => Some(WgmmaForm::k_major(
                t,
                super::mma_type::staged_a_from_registers(k, target, layouts, d, t),
            )),
            (Ok(t), Some(MmaInstr::Wgmma)) => Some(direct_form(t, d, layouts)),
            _ => None,
        };
        DotRecord {
            m,
            n,
            k: k_inner,
            instr,
            operands: lowering.as_ref().ok().map(|t| t.ty),
            wgmma,
            lowering: lowering.map(|t| t.acc),
        }
    };
    fn walk(
        stmts: &[Stmt],
        skip: &BTreeSet<LocalId>,
        record: &dyn Fn(&Expr) -> DotRecord,
        out: &mut Vec<DotRecord>,
    ) {
        for s in stmts {
            if let StmtKind::Assign { local, value } = &s.kind {
                if skip.contains(local) && accumulates_dot(*local, value).is_some() {
                    continue;
                }
            }
            for e in stmt_exprs(s) {
                crate::visit::any_expr(e, &mut |x| {
                    if matches!(x.kind, ExprKind::Dot { .. }) {
                        out.push(record(x));
                    }
                    false
                });
            }
            for b in bodies(s) {
                walk(b, skip, record, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(&k.body, &in_gemm, &record, &mut out);
    out
}

/// `f(acc) + dot(..)` (either order) assigned to `acc` with a tensor-core accumulator layout
/// `lay` the dot shares, where the dot does not read `acc`: `(f(acc), dot)`. Adding the
/// products into `f(acc)` in place differs from the separate sum only in rounding order.
pub fn scaled_dot<'e>(l: LocalId, value: &'e Expr, lay: &Layout) -> Option<(&'e Expr, &'e Expr)> {
    let ExprKind::Binary(BinOp::Add, x, y) = &value.kind else {
        return None;
    };
    let (rest, dot) = match (&x.kind, &y.kind) {
        (_, ExprKind::Dot { .. }) => (&**x, &**y),
        (ExprKind::Dot { .. }, _) => (&**y, &**x),
        _ => return None,
    };
    let same_shape = rest.ty.shape() == dot.ty.shape();
    (matches!(lay, Layout::Mma(_)) && same_shape && !crate::visit::expr_reads_local(dot, l))
        .then_some((rest, dot))
}
