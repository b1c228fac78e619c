//! `where` statements under the block-uniform test of their `MaskRecord` (plan/masks.rs): the
//! tiles whose every element passes the condition skip the per-element select.

use super::{Emitter, Result};
use crate::emit::columns::Axis;
use crate::layout::Layout;
use crate::plan::{Extent, MaskRecord, MaskScope};
use phobos_ir::{BinOp, Expr, ExprKind};

impl<'k> Emitter<'k> {
    /// `dst = value` (a `where`) for the record `rec`: `if (!test) dst = value;` when the
    /// unmasked value is `dst` itself, else `if (test) dst = a; else dst = value;`.
    pub(crate) fn masked_assign(
        &mut self,
        dst: &str,
        lay: &Layout,
        value: &'k Expr,
        rec: &MaskRecord,
    ) -> Result<()> {
        let ExprKind::Select(cond, a, b) = &value.kind else {
            return self.tile_into(dst, lay, value);
        };
        if rec.scope == MaskScope::Thread {
            return self.thread_masked_assign(dst, lay, (cond, a, b), rec);
        }
        let test = self.mask_test(rec, lay)?;
        let (dirty0, pending0) = (self.scratch_dirty, self.pending.clone());
        if rec.keeps_local {
            self.line(format!("if (!({test})) {{"));
        } else {
            self.line(format!("if ({test}) {{"));
            self.indent += 1;
            self.tile_into(dst, lay, a)?;
            self.indent -= 1;
            self.line("} else {");
        }
        let (dirty1, pending1) = (self.scratch_dirty, self.pending.clone());
        self.scratch_dirty = dirty0;
        self.pending = pending0;
        self.indent += 1;
        self.tile_into(dst, lay, value)?;
        self.indent -= 1;
        self.line("}");
        self.scratch_dirty |= dirty1;
        self.pending.extend(pending1);
        Ok(())
    }

    /// `dst = where(cond, a, b)` under a per-thread record: `dst = a`, then, in the threads that
    /// hold an element the test cannot vouch for, `dst = where(cond, dst, b)` in place. The
    /// condition's and masked value's own statements (a conversion, a broadcast) are emitted
    /// before the divergent test, so that no barrier lies inside it.
    fn thread_masked_assign(
        &mut self,
        dst: &str,
        lay: &Layout,
        (cond, a, b): (&'k Expr, &'k Expr, &'k Expr),
        rec: &MaskRecord,
    ) -> Result<()> {
        if !rec.keeps_local {
            self.tile_into(dst, lay, a)?;
        }
        let c = self.elem(cond, lay)?;
        let v = self.elem(b, lay)?;
        let test = self.mask_test(rec, lay)?;
        let alias = self.alias(lay);
        self.line(format!("if (!({test})) {{"));
        self.line("#pragma unroll");
        self.line(format!(
            "  for (int ph_i = 0; ph_i < {alias}::N; ++ph_i) if (!({})) {dst}.v[ph_i] = {};",
            c.full(),
            v.full()
        ));
        self.line("}");
        Ok(())
    }

    /// A side's greatest (`high`) or least element over this thread's registers, in 64 bits.
    fn thread_extreme(&mut self, x: &Extent, high: bool, alias: &str) -> Result<String> {
        let index = match (x.axis, x.span > 0) {
            (Some(Axis::Cols), true) => Some(if high { "col_hi" } else { "col_lo" }),
            (Some(Axis::Rows), true) => Some(if high { "row_hi" } else { "row_lo" }),
            _ => None,
        };
        let index = index.map(|f| format!("(long long)ph::ThreadSpan<{alias}>::{f}()"));
        Ok(match (&x.base, index) {
            (Some(b), i) => {
                let c = self.scalar(b)?;
                match i {
                    Some(i) => format!("((long long)({}) + {i})", c.full()),
                    None => format!("(long long)({})", c.full()),
                }
            }
            (None, Some(i)) => i,
            (None, None) => "0LL".into(),
        })
    }

    /// The C test that every element of the record's condition holds: the extremes of each
    /// comparison in 64 bits, over the whole tile (`MaskScope::Block`) or over the elements this
    /// thread holds in `lay` (`MaskScope::Thread`, `ph::ThreadSpan`), and the largest element of
    /// each side over the whole tile within i32.
    fn mask_test(&mut self, rec: &MaskRecord, lay: &Layout) -> Result<String> {
        let alias = (rec.scope == MaskScope::Thread).then(|| self.alias(lay));
        let mut terms = Vec::new();
        for b in &rec.bounds {
            let (lhs, rhs) = match &alias {
                None => {
                    let (l, r) = b.offsets();
                    (self.extreme(&b.lhs, l)?, self.extreme(&b.rhs, r)?)
                }
                Some(alias) => {
                    let high_lhs = matches!(b.op, BinOp::Lt | BinOp::Le);
                    let lhs = self.thread_extreme(&b.lhs, high_lhs, alias)?;
                    (lhs, self.thread_extreme(&b.rhs, !high_lhs, alias)?)
                }
            };
            terms.push(format!("{lhs} {} {rhs}", b.op.symbol()));
            for side in [&b.lhs, &b.rhs] {
                if side.base.is_some() && side.span > 0 {
                    let top = self.extreme(side, side.span)?;
                    terms.push(format!("{top} <= 2147483647LL"));
                }
            }
        }
        Ok(terms.join(" && "))
    }

    /// `base + offset` in 64 bits.
    fn extreme(&mut self, x: &Extent, offset: i64) -> Result<String> {
        Ok(match &x.base {
            Some(b) => {
                let c = self.scalar(b)?;
                if offset == 0 {
                    format!("(long long)({})", c.full())
                } else {
                    format!("((long long)({}) + {offset}LL)", c.full())
                }
            }
            None => format!("{offset}LL"),
        })
    }
}
