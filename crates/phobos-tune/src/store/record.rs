//! Recording runs, compiles and measurements, each committed as it arrives.

use super::{RunKey, Store, StoreError};
use crate::types::{PointResult, Resources};
use phobos_ir::Point;
use rusqlite::params;

/// Which stage a measurement comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// The search: every point once.
    Search,
    /// The interleaved final round among the leaders.
    Final,
}

impl Phase {
    fn name(self) -> &'static str {
        match self {
            Phase::Search => "search",
            Phase::Final => "final",
        }
    }
}

/// One compile, as the `variants` table keeps it.
#[derive(Clone, Debug, PartialEq)]
pub struct VariantRow {
    pub point: Point,
    pub arch: String,
    pub binary_hash: Option<String>,
    /// `ok` or `compile-failed`.
    pub status: String,
    pub reason: Option<String>,
    pub log: Option<String>,
    pub resources: Option<Resources>,
    pub compile_ms: f64,
}

impl Store {
    /// Starts a run and returns its id.
    pub fn begin_run(&mut self, key: &RunKey) -> Result<i64, StoreError> {
        self.write(|tx| {
            tx.execute(
                "INSERT INTO runs (kernel_hash, kernel_name, problem, device, driver, compiler, backend,
                     phobos_version)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                params![
                    key.kernel_hash,
                    key.kernel_name,
                    key.problem.key(),
                    key.device,
                    key.driver,
                    key.compiler,
                    key.backend.name(),
                    key.phobos_version
                ],
            )?;
            Ok(tx.last_insert_rowid())
        })
    }

    /// Marks a run finished with its winner and the hash of the winner's generated code.
    pub fn finish_run(
        &mut self,
        run: i64,
        winner: Option<(&Point, Option<&str>)>,
    ) -> Result<(), StoreError> {
        let codegen = winner.and_then(|w| w.1);
        let winner = winner.map(|w| w.0.to_pins());
        self.write(|tx| {
            tx.execute(
                "UPDATE runs SET finished_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), winner = ?2,
                     winner_codegen = ?3
                 WHERE id = ?1",
                params![run, winner, codegen],
            )
        })?;
        Ok(())
    }

    /// Records one compile of the code whose hash is `codegen`.
    pub fn record_variant(
        &mut self,
        run: Option<i64>,
        key: &RunKey,
        codegen: Option<&str>,
        v: &VariantRow,
    ) -> Result<(), StoreError> {
        let r = v.resources.as_ref();
        self.write(|tx| {
            tx.execute(
                "INSERT INTO variants (run_id, kernel_hash, kernel_name, point, problem, compiler,
                     backend, arch, binary_hash, status, reason, log, registers, spill_store_bytes,
                     spill_load_bytes, smem_bytes, compile_ms, phobos_version, codegen_hash)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17,
                     ?18, ?19)",
                params![
                    run,
                    key.kernel_hash,
                    key.kernel_name,
                    v.point.to_pins(),
                    key.problem.key(),
                    key.compiler,
                    key.backend.name(),
                    v.arch,
                    v.binary_hash,
                    v.status,
                    v.reason,
                    v.log,
                    r.map(|r| r.registers),
                    r.map(|r| r.spill_store_bytes),
                    r.map(|r| r.spill_load_bytes),
                    r.map(|r| r.smem_bytes as i64),
                    v.compile_ms,
                    key.phobos_version,
                    codegen
                ],
            )
        })?;
        Ok(())
    }

    /// Records the outcome of one point whose generated code hashes to `codegen` (committed
    /// before returning). `None` for a point the generator never saw (the checker refused it):
    /// such a row is never reused.
    pub fn record(
        &mut self,
        run: Option<i64>,
        key: &RunKey,
        codegen: Option<&str>,
        result: &PointResult,
        phase: Phase,
    ) -> Result<(), StoreError> {
        self.record_on(run, key, codegen, result, phase, None)
    }

    /// Records the outcome of one point with the GPU ordinal it ran on (`None` for outcomes
    /// that never reached a device, or in-process runs).
    pub fn record_on(
        &mut self,
        run: Option<i64>,
        key: &RunKey,
        codegen: Option<&str>,
        result: &PointResult,
        phase: Phase,
        ordinal: Option<u32>,
    ) -> Result<(), StoreError> {
        let stats = result.outcome.stats();
        let res = result.resources.as_ref();
        let occ = res.and_then(|r| r.occupancy);
        let outcome_json = serde_json::to_string(&result.outcome)?;
        let resources_json = res.map(serde_json::to_string).transpose()?;
        let point_json = serde_json::to_string(&result.point)?;
        let dims = serde_json::to_string(&key.problem.dims)?;
        let dtypes = serde_json::to_string(&key.problem.types)?;
        let layouts = serde_json::to_string(&key.problem.layouts)?;
        self.write(|tx| {
            tx.execute(
                "INSERT INTO measurements (run_id, kernel_hash, kernel_name, point, point_json,
                     problem, dims, dtypes, layouts, device, driver, compiler, backend, phase,
                     status, reason, median_ms, min_ms, max_ms, spread, reps, registers,
                     spill_store_bytes, spill_load_bytes, smem_bytes, active_warps_per_sm,
                     occupancy_limiter, flops, bytes, outcome_json, resources_json,
                     device_ordinal, phobos_version, codegen_hash)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16,
                     ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30, ?31,
                     ?32, ?33, ?34)",
                params![
                    run,
                    key.kernel_hash,
                    key.kernel_name,
                    result.point.to_pins(),
                    point_json,
                    key.problem.key(),
                    dims,
                    dtypes,
                    layouts,
                    key.device,
                    key.driver,
                    key.compiler,
                    key.backend.name(),
                    phase.name(),
                    result.outcome.status(),
                    result.outcome.reason(),
                    stats.map(|s| s.median_ms),
                    stats.map(|s| s.min_ms),
                    stats.map(|s| s.max_ms),
                    stats.map(|s| s.spread),
                    stats.map(|s| s.reps),
                    res.map(|r| r.registers),
                    res.map(|r| r.spill_store_bytes),
                    res.map(|r| r.spill_load_bytes),
                    res.map(|r| r.smem_bytes as i64),
                    occ.map(|o| o.active_warps_per_sm),
                    occ.map(|o| o.limiter.name()),
                    result.flops,
                    result.bytes,
                    outcome_json,
                    resources_json,
                    ordinal,
                    key.phobos_version,
                    codegen
                ],
            )
        })?;
        Ok(())
    }
}
