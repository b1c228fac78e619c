//! `where` statements under the block-uniform test of their `MaskRecord` (plan/masks.rs): the
//! tiles whose every element passes the condition skip the per-element select.

use super::{Emitter, Result};
use crate::layout::Layout;
use crate::plan::{Extent, MaskRecord};
use phobos_ir::{Expr, ExprKind};

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
        let ExprKind::Select(_, a, _) = &value.kind else {
            return self.tile_into(dst, lay, value);
        };
        let test = self.mask_test(rec)?;
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

    /// The C test that every element of the record's condition holds: the extremes of each
    /// comparison in 64 bits, and the largest element of each side within i32.
    fn mask_test(&mut self, rec: &MaskRecord) -> Result<String> {
        let mut terms = Vec::new();
        for b in &rec.bounds {
            let (l, r) = b.offsets();
            let lhs = self.extreme(&b.lhs, l)?;
            let rhs = self.extreme(&b.rhs, r)?;
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
