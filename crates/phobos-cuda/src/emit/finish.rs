//! The kernel's text assembled: the launch ABI's signature, the headers, the hoisted
//! declarations and the body, and the launch facts (`Emitted`).

use super::{type_args, unsupported, Emitter, Result, GX, GY, SPLIT_WS};
use crate::layout::Layout;
use crate::{ctype, Emitted, SplitReduce};
use phobos_ir::ParamKind;
use std::collections::BTreeSet;

impl Emitter<'_> {
    fn signature(&self, smem: u32) -> String {
        let k = self.k;
        let mut stored = BTreeSet::new();
        crate::visit::stored_tensors(&k.body, &mut stored);
        let mut params = Vec::new();
        for (i, p) in k.params.iter().enumerate() {
            let name = &self.names.params[i];
            params.push(match &p.kind {
                ParamKind::Tensor { dtype, .. } => {
                    let c = if stored.contains(&i) { "" } else { "const " };
                    format!("{c}{}* __restrict__ {name}", ctype::storage(*dtype))
                }
                ParamKind::Scalar { dtype } if ctype::is_narrow_float(*dtype) => {
                    format!("{} {name}_arg", ctype::storage(*dtype))
                }
                ParamKind::Scalar { dtype } => format!("{} {name}", ctype::storage(*dtype)),
            });
        }
        for d in &self.names.dims {
            params.push(format!("int {d}"));
        }
        for t in &self.plan.tma {
            params.push(format!(
                "const __grid_constant__ ph::gemm::sm90::TmaDesc {}",
                t.name
            ));
        }
        if self.plan.persistent || self.logical_grid() {
            params.push(format!("int {GX}"));
            params.push(format!("int {GY}"));
        }
        if (self.plan.split.as_ref()).is_some_and(|s| s.reduce == SplitReduce::Workspace) {
            params.push(format!("float* __restrict__ {SPLIT_WS}"));
        }
        // ROW_SPLIT: two blocks a multiprocessor (the registers budgeted for them), parts of two
        // rows where an unsplit row had one, unless the kernel says otherwise.
        let split = self.split_blocks().map(|_| 2);
        let bounds = match (
            k.launch.min_blocks_per_sm,
            self.staged_row_blocks(smem),
            split,
        ) {
            (Some(m), _, _) | (None, Some(m), _) | (None, None, Some(m)) => {
                format!("{}, {m}", self.launch_threads())
            }
            (None, None, None) => self.launch_threads().to_string(),
        };
        let cluster = match (self.plan.cluster, self.plan.split.as_ref()) {
            _ if self.split_blocks().is_some() => {
                format!(
                    "__cluster_dims__({}, 1, 1) ",
                    self.split_blocks().unwrap_or(1)
                )
            }
            (n, _) if n > 1 => format!("__cluster_dims__({n}, 1, 1) "),
            (_, Some(s)) if s.reduce == SplitReduce::Cluster => {
                format!("__cluster_dims__(1, 1, {}) ", s.parts)
            }
            _ => String::new(),
        };
        format!(
            "extern \"C\" __global__ void {cluster}__launch_bounds__({bounds}) {}({})",
            self.names.kernel,
            params.join(", ")
        )
    }

    /// ROW_SMEM=1 (a row staged in shared memory): the blocks a multiprocessor its shared memory
    /// admits (228 KB, 1 KB of it reserved a block), when more than one, so that the registers
    /// the row no longer takes are budgeted for them (`__launch_bounds__`'s second argument).
    fn staged_row_blocks(&self, smem: u32) -> Option<u32> {
        if self.staged_rows.is_empty() {
            return None;
        }
        let by_smem = (228 * 1024) / (smem + 1024);
        let by_threads = 2048 / self.launch_threads().max(1);
        // ROWS_AHEAD: two buffers leave room for fewer blocks, but the registers are budgeted as
        // for the one-buffer form's blocks (ptxas spills a staged row's passes at 64 a thread
        // that it holds in 32 without spilling: bench/NOTES.md r18).
        let by_smem = match self.rows_ahead {
            Some(_) => (228 * 1024) / (smem / 2 + 1024),
            None => by_smem,
        };
        let blocks = by_smem.min(by_threads);
        (blocks > 1).then_some(blocks)
    }

    pub(super) fn finish(mut self) -> Result<Emitted> {
        let k = self.k;
        if self.extra_warp.is_some() && self.scratch_total() > 0 {
            // The scratch users synchronize the whole block, which the producer warp has left.
            return unsupported(
                "PRODUCER=1 with statements that use the shared scratch area",
                k.span,
            );
        }
        for (_, ml) in &self.plan.gemms {
            for h in ml.headers() {
                self.headers.insert(h);
            }
        }
        let scratch = self.scratch_total().div_ceil(16) * 16;
        // The main loop's stages, the C store's staging buffer, then the scratch area.
        let resident_region = self.gemm_smem.div_ceil(16) * 16 + self.c_smem.div_ceil(16) * 16;
        // Staged dot operands (resident, streamed, or staged in the scratch area) start on
        // 1024-byte swizzle atoms: every region after the main loop's is so aligned.
        let staged = self.headers.contains(crate::MMA_HEADER);
        let resident_region = if staged {
            resident_region.div_ceil(1024) * 1024
        } else {
            resident_region
        };
        let pipe_region = resident_region + self.resident_smem;
        let gemm_region = pipe_region + self.pipe_buffers * self.pipe_stage;
        // ROW_SPLIT: the slots the blocks of the cluster write their partials into, last.
        let slots = self.split_blocks().map_or(0, |n| 16 + 2 * n * 8);
        let smem = gemm_region + scratch + slots;
        let mut out = Vec::new();
        out.push(format!(
            "// Phobos kernel `{}` at {}{}, {} threads",
            k.name,
            if k.point.0.is_empty() {
                "its only point".to_string()
            } else {
                k.point.to_pins()
            },
            type_args(k),
            self.launch_threads()
        ));
        for n in &self.notes {
            out.push(format!("// {n}"));
        }
        // Tensor-core layouts of dots outside GEMM loops come with their header and the
        // mma.sync main loop's, which declares the accumulator.
        if self
            .layouts_used
            .keys()
            .any(|l| matches!(l, Layout::Mma(_) | Layout::MmaRows(_)))
        {
            for h in [
                crate::MMA_HEADER,
                crate::REDUCE_HEADER,
                "gemm/ptx.cuh",
                "gemm/sm80.cuh",
                "gemm/sm90.cuh",
            ] {
                self.headers.insert(h);
            }
        }
        // The prelude first: the other headers build on it.
        let mut includes: Vec<&str> = self.headers.iter().copied().collect();
        includes.sort_by_key(|h| (*h != crate::PRELUDE_HEADER, h.starts_with("gemm/"), *h));
        for h in includes {
            out.push(format!("#include \"{h}\""));
        }
        out.push(String::new());
        // Two layouts may render alike (the same alias and type): declare each alias once.
        let mut aliases = BTreeSet::new();
        for (l, name) in &self.layouts_used {
            let line = format!("using {name} = {};", l.cpp());
            if aliases.insert(line.clone()) {
                out.push(line);
            }
        }
        if !self.layouts_used.is_empty() {
            out.push(String::new());
        }
        out.push(format!("{} {{", self.signature(smem)));
        if smem > 0 {
            let align = if staged { 1024 } else { 128 };
            out.push(format!(
                "  extern __shared__ __align__({align}) unsigned char ph_smem[];  // {smem} bytes"
            ));
        }
        if self.resident_smem > 0 {
            out.push(format!(
                "  unsigned char* ph_resident = ph_smem + {resident_region};  // dot operands loaded once"
            ));
        }
        if self.pipe_stage > 0 {
            let n = match self.pipe_buffers {
                2 => "two".to_string(),
                n => n.to_string(),
            };
            out.push(format!(
                "  constexpr int PH_PIPE_STAGE = {};  // streamed dot operands: {n} buffers",
                self.pipe_stage
            ));
            out.push(format!(
                "  unsigned char* ph_pipe = ph_smem + {pipe_region};"
            ));
        }
        if scratch > 0 {
            out.push(format!(
                "  ph::Scratch<{scratch}> ph_scratch{{ph_smem + {gemm_region}}};  // conversions, broadcasts, reductions"
            ));
        }
        if slots > 0 {
            out.push(format!(
                "  unsigned char* {} = ph_smem + {};  // the cluster's partials",
                super::CLUSTER_SLOTS,
                gemm_region + scratch
            ));
        }
        for (i, p) in k.params.iter().enumerate() {
            if let ParamKind::Scalar { dtype } = p.kind {
                if ctype::is_narrow_float(dtype) {
                    let n = &self.names.params[i];
                    out.push(format!(
                        "  const float {n} = ph::Reg<{}>::load({n}_arg);",
                        ctype::storage(dtype)
                    ));
                }
            }
        }
        out.append(&mut self.lines);
        out.push("}".into());
        let notes = self.notes.clone();
        let dots = self.plan.dots.clone();
        let loops = self.plan.loops.clone();
        let masks = self.plan.masks.clone();
        let mut headers: Vec<(String, String)> = self
            .headers
            .iter()
            .map(|h| {
                (
                    h.to_string(),
                    crate::header_text(h).unwrap_or_default().to_string(),
                )
            })
            .collect();
        // The prelude includes the eviction hints' header and its second half by name: register
        // them beside it.
        if self.headers.contains(crate::PRELUDE_HEADER) {
            for name in [crate::EVICT_HEADER, crate::MEMORY_HEADER] {
                let text = crate::header_text(name).unwrap_or_default();
                headers.push((name.to_string(), text.to_string()));
            }
        }
        // The shifted loads' header includes the GEMM wrappers' (their shift, shared with the
        // mma.sync loop's shifted copies) by name.
        if self.headers.contains(crate::SHIFTED_HEADER)
            && !self.headers.iter().any(|h| h.starts_with("gemm/"))
        {
            let text = crate::header_text("gemm/ptx.cuh").unwrap_or_default();
            headers.push(("gemm/ptx.cuh".to_string(), text.to_string()));
        }
        // The cuda/gemm headers include each other by name: register all of them.
        if self.headers.iter().any(|h| h.starts_with("gemm/")) {
            for (name, text) in crate::gemm_fast::headers() {
                if !headers.iter().any(|(n, _)| n == name) {
                    headers.push((name.to_string(), text.to_string()));
                }
            }
        }
        Ok(Emitted {
            source: out.join("\n") + "\n",
            entry: self.names.kernel.clone(),
            headers,
            dynamic_smem_bytes: smem,
            threads: self.launch_threads(),
            max_regs: k.launch.max_regs,
            notes,
            dots,
            loops,
            masks,
            gemms: (self.plan.gemms.iter().enumerate())
                .map(|(i, (_, l))| crate::GemmRecord {
                    // SPLIT_K applies to the kernel's only GEMM.
                    split: self
                        .plan
                        .split
                        .as_ref()
                        .filter(|_| i == 0)
                        .map(|s| s.record()),
                    ..l.record()
                })
                .collect(),
            row_smem: self.plan.row_smem.values().cloned().collect(),
            sum_exp: self.sum_exp.clone(),
            rows_ahead: self.plan.rows_ahead.clone(),
            schedule: self.plan.schedule.clone(),
            c_store: self.plan.c_store.clone(),
            tma: self.plan.tma.clone(),
            zero_before_launch: (self.plan.split.iter())
                .filter(|s| s.reduce == SplitReduce::AtomicAdd)
                .map(|s| s.c)
                .collect(),
            split_refused: self.plan.split_refused.clone(),
            split_workspace: (self.plan.split.as_ref())
                .filter(|s| s.reduce == SplitReduce::Workspace)
                .map(|s| crate::SplitWorkspace {
                    c: s.c,
                    parts: s.parts,
                }),
            grid_z: self.plan.split.as_ref().map_or(1, |s| s.parts),
            persistent: self.plan.persistent || self.logical_grid(),
            cluster: self.plan.cluster,
            cluster_refused: self.plan.cluster_refused,
            row_split: self.row_split.clone(),
        })
    }
}
