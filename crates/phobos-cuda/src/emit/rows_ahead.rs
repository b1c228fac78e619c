//! ROWS_AHEAD=1 (`plan::RowsAheadRecord`): the kernel body in a loop over the logical blocks
//! (`Emitter::logical_blocks_begin`, as `PERSIST` has it), the staged row in two buffers of the
//! resident region, each with its own mbarrier. Before the loop the block initializes both
//! barriers and issues its first logical block's row (`ph::smem_row_ahead_begin`); the staged
//! `let` of each logical block issues the next one's row into the other buffer, then finishes
//! its own (`ph::load_row_smem_ahead`, cuda/phobos_rowsmem.cuh). The next row's region is the
//! staged load's, its locals substituted by their definitions (`plan::block_index`) and
//! `ctx.block.x/y` read as the next logical block's.
//!
//! ROWS_AHEAD=2 (`plan::AheadForm::Landed`): one buffer and its mbarrier; the row's `let` reads
//! the landed row into registers (`ph::load_row_landed`, cuda/phobos_rowland.cuh) and then issues
//! the next logical block's row into the buffer, its region computed there by a lambda (no
//! register holds it across the row's reads).

use super::{Emitter, Result, GX, GY, TILE};
use phobos_ir::{Expr, ExprKind, Index, ParamId};

/// The next logical block's indices along x and y.
const NBX: &str = "ph_nbx";
const NBY: &str = "ph_nby";
/// Logical blocks of this block before the current one: the current row's buffer (`& 1`) and
/// its barrier's phase (`>> 1 & 1`).
pub(super) const ROW_N: &str = "ph_row_n";
/// ROWS_AHEAD=2: the lambda returning the next logical block's row region.
const NEXT_ROW: &str = "ph_next_row";

impl Emitter<'_> {
    /// The body, a logical block at a time, with the staged row `a` read a row ahead.
    pub(super) fn rows_ahead_body(&mut self, a: crate::plan::AheadRow) -> Result<()> {
        if a.form == crate::plan::AheadForm::Landed {
            return self.landed_body(a);
        }
        let k = self.k;
        let at = self
            .staged_row(a.local)
            .expect("a row read ahead is staged");
        let (tensor, index, alias) = self.staged_load(a.local);
        self.line(format!(
            "ph::smem_row_ahead_init<{alias}>(ph_resident + {at});"
        ));
        self.first_row(tensor, &index, |first| {
            format!("ph::smem_row_ahead_issue<{alias}>({first}, (int)blockIdx.x < {GX} * {GY}, ph_resident + {at}, -1);")
        })?;
        self.logical_blocks_begin("a row ahead");
        // Recomputed from the tile, not carried: one register fewer across the body.
        self.line(format!(
            "const int {ROW_N} = ({TILE} - (int)blockIdx.x) / (int)gridDim.x;  // logical blocks before this one: the row's buffer and its barrier's phase"
        ));
        self.line("{  // the next logical block's row, issued before this one's statements");
        self.indent += 1;
        self.line(format!("const int ph_nt = {TILE} + (int)gridDim.x;"));
        self.line(format!("const int {NBX} = ph_nt % {GX};"));
        self.line(format!("const int {NBY} = ph_nt / {GX};"));
        let next = self.next_region(tensor, &index)?;
        self.line(format!(
            "ph::smem_row_ahead_issue<{alias}>({next}, ph_nt < {GX} * {GY}, ph_resident + {at}, {ROW_N});"
        ));
        self.indent -= 1;
        self.line("}");
        self.block(&k.body, 0)?;
        // The next logical block's statements start as the first one's did: nothing pending.
        if self.scratch_dirty || !self.pending.is_empty() {
            self.barrier();
        }
        self.indent -= 1;
        self.line("}");
        Ok(())
    }

    /// ROWS_AHEAD=2: the body a logical block at a time, the row `a` landed a row ahead.
    fn landed_body(&mut self, a: crate::plan::AheadRow) -> Result<()> {
        let at = self.landed_row(a);
        let (tensor, index, alias) = self.staged_load(a.local);
        self.line(format!("ph::row_land_init(ph_resident + {at});"));
        self.first_row(tensor, &index, |first| {
            format!("ph::row_land_issue<{alias}>({first}, (int)blockIdx.x < {GX} * {GY}, ph_resident + {at});")
        })?;
        self.logical_blocks_begin("a row landing ahead");
        self.line(format!(
            "const int {ROW_N} = ({TILE} - (int)blockIdx.x) / (int)gridDim.x;  // logical blocks before this one: the buffer's phase"
        ));
        self.line(format!(
            "const auto {NEXT_ROW} = [&] {{  // the next logical block's row, issued once this one is read"
        ));
        self.indent += 1;
        self.line(format!("const int ph_nt = {TILE} + (int)gridDim.x;"));
        self.line(format!("const int {NBX} = ph_nt % {GX};"));
        self.line(format!("const int {NBY} = ph_nt / {GX};"));
        let next = self.next_region(tensor, &index)?;
        self.line(format!("return {next};"));
        self.indent -= 1;
        self.line("};");
        self.block(&self.k.body, 0)?;
        if self.scratch_dirty || !self.pending.is_empty() {
            self.barrier();
        }
        self.indent -= 1;
        self.line("}");
        Ok(())
    }

    /// ROWS_AHEAD=2: the landed row's buffer, reserved in the resident region: its offset.
    pub(super) fn landed_row(&mut self, a: crate::plan::AheadRow) -> u32 {
        if let Some((_, at)) = self.landed {
            return at;
        }
        let at = self.resident_smem.div_ceil(16) * 16;
        self.resident_smem = at + a.bytes;
        self.landed = Some((a.local, at));
        for h in [
            crate::ROWLAND_HEADER,
            crate::ROWSMEM_HEADER,
            crate::ROWPACK_HEADER,
            crate::REDUCE_HEADER,
            "gemm/ptx.cuh",
        ] {
            self.headers.insert(h);
        }
        at
    }

    /// ROWS_AHEAD=2: declares local `l` (the landed row, `where(arange(n) < e, load, fill)`)
    /// read out of its buffer: packed at PACK=4 for 2-byte types, a Tile otherwise; then the
    /// next logical block's row issued.
    pub(super) fn landed_load(
        &mut self,
        l: phobos_ir::LocalId,
        lay: &crate::layout::Layout,
        value: &Expr,
        t: phobos_ir::DType,
    ) -> Result<()> {
        let name = self.names.locals[l].clone();
        let a = self.rows_ahead.expect("a landed row");
        let at = self.landed_row(a);
        let alias = self.alias(lay);
        let (e, load, fill) =
            crate::plan::filled_parts(value).expect("a landed row is a masked row load");
        let ExprKind::Load {
            tensor,
            index,
            cache,
        } = &load.kind
        else {
            unreachable!("filled_parts returns a load")
        };
        let region = self.region(*tensor, index, false)?;
        let ev = self.written_eviction_arg(*tensor, *cache);
        let e = self.scalar(e)?;
        let fill = self.scalar(fill)?;
        self.note_layout(l, lay);
        let packed = self
            .filled_load(value)
            .is_some()
            .then(|| self.packs(l, t, value))
            .flatten();
        let ty = match packed {
            Some(storage) => {
                self.packed.insert(l, storage);
                format!("ph::Packed<{storage}, {alias}>")
            }
            None => self.tile_type(t, lay),
        };
        self.line(format!(
            "{ty} {name} = ph::load_row_landed<{ty}, {alias}{ev}>({region}, {}, {}, ph_resident + {at}, {ROW_N}, {NEXT_ROW}, {TILE} + (int)gridDim.x < {GX} * {GY});",
            e.full(),
            fill.full()
        ));
        Ok(())
    }

    /// Before the loop: the first logical block's row issued, `issue` the call given its region
    /// (read at the block's first logical block, [`NBX`], [`NBY`]).
    fn first_row(
        &mut self,
        tensor: ParamId,
        index: &[Index],
        issue: impl FnOnce(&str) -> String,
    ) -> Result<()> {
        self.line("{  // the first logical block's row, before the loop");
        self.indent += 1;
        self.line(format!("const int {NBX} = (int)blockIdx.x % {GX};"));
        self.line(format!("const int {NBY} = (int)blockIdx.x / {GX};"));
        let first = self.next_region(tensor, index)?;
        self.line(issue(&first));
        self.indent -= 1;
        self.line("}");
        Ok(())
    }

    /// The staged load of local `l`: its tensor, its indices and its layout's alias.
    fn staged_load(&mut self, l: phobos_ir::LocalId) -> (ParamId, Vec<Index>, String) {
        let mut found = None;
        phobos_ir::walk::stmts(&self.k.body, &mut |s| {
            if let phobos_ir::StmtKind::Assign { local, value } = &s.kind {
                if *local == l {
                    found = Some(value.clone());
                }
            }
        });
        let value = found.expect("the staged row's `let`");
        let (_, load, _) = crate::plan::filled_parts(&value).expect("a masked row load");
        let phobos_ir::ExprKind::Load { tensor, index, .. } = &load.kind else {
            unreachable!("filled_parts returns a load")
        };
        let lay = self.plan.layouts[&l].clone();
        (*tensor, index.clone(), self.alias(&lay))
    }

    /// The region of the staged load at the next logical block ([`NBX`], [`NBY`]).
    fn next_region(&mut self, tensor: ParamId, index: &[Index]) -> Result<String> {
        let index = crate::plan::block_index(self.k, index).expect("the plan checked the address");
        let saved = self.block_names.replace((NBX, NBY));
        let region = self.region(tensor, &index, false);
        self.block_names = saved;
        region
    }
}
