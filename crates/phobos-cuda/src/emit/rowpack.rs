//! Packed tiles (the knob `PACK`): a `let` bound to a tile load of a 2-byte float type held two
//! elements to a 32-bit register (`ph::Packed`), each use reading its element as f32. A row
//! tile loads straight into the packed registers (`ph::load_row_packed`, phobos_rowpack.cuh):
//! the whole row of a wide softmax fits a block's registers where its f32 tile spills.

use super::{Emitter, Result};
use crate::layout::Layout;
use phobos_ir::{DType, Expr, ExprKind};

impl<'k> Emitter<'k> {
    /// The storage type when local `l` (declared here, of element type `t`) is held packed:
    /// the point sets `PACK=1`, `l` is a `let` of bf16 or f16 and its value is a tile load.
    /// The values are the same; their registers are halved.
    pub(crate) fn packs(&self, l: usize, t: DType, value: &Expr) -> Option<&'static str> {
        let on = phobos_ir::knobs::Knob::Pack.get(&self.k.point) == Some(1);
        let load = matches!(value.kind, ExprKind::Load { .. });
        if !on || !load || self.k.locals[l].mutable || self.plan.resident.contains(&l) {
            return None;
        }
        match t {
            DType::BF16 => Some("ph::bf16"),
            DType::F16 => Some("ph::f16"),
            _ => None,
        }
    }

    /// Declares packed local `name` in `lay` from tile load `value`: a row tile of a blocked
    /// layout through `ph::load_row_packed` (its shared-memory exchange in the scratch area),
    /// any other tile loaded as f32 and packed.
    pub(crate) fn packed_load(
        &mut self,
        name: &str,
        lay: &Layout,
        value: &Expr,
        storage: &str,
    ) -> Result<()> {
        let alias = self.alias(lay);
        let ExprKind::Load {
            tensor,
            index,
            cache,
        } = &value.kind
        else {
            unreachable!("packs() takes loads only")
        };
        let rhs = match lay {
            Layout::Blocked {
                r: 1,
                c,
                threads,
                vec: 8,
            } if threads % 32 == 0 => {
                self.headers.insert(crate::REDUCE_HEADER);
                self.headers.insert(crate::ROWPACK_HEADER);
                let region = self.region(*tensor, index, false)?;
                let ev = self.load_eviction_arg(*tensor, self.hint(*cache));
                let ev = if ev.is_empty() {
                    ", ph::EVICT_NORMAL".to_string()
                } else {
                    ev
                };
                // One 16-byte vector a group of each warp's lane 0 (`ph::packed_row_scratch`).
                let t = i64::from(*threads);
                let groups = (c / 8 + t - 1) / t;
                let bytes = groups * i64::from(threads / 32) * 16;
                let s = self.scratch(bytes as u32);
                format!("ph::load_row_packed<{alias}{ev}>({region}, {s})")
            }
            _ => {
                let rhs = self.tile_rhs(lay, value)?.expect("a tile load is one call");
                format!("ph::pack<{storage}>({rhs})")
            }
        };
        self.line(format!("ph::Packed<{storage}, {alias}> {name} = {rhs};"));
        Ok(())
    }
}
