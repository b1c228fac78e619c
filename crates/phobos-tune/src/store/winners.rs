//! The winners a config table is exported from (`phobos-kbench export`).

use super::{Store, StoreError};
use crate::deploy::ConfigEntry;
use crate::types::Problem;
use rusqlite::params;

impl Store {
    /// The winner of the latest finished run of each problem and setup of one kernel under
    /// one Phobos version, with its generated code's hash and its latest median time under
    /// that code: the entries of a config table, ordered by problem and setup.
    pub fn winners(
        &self,
        kernel_hash: &str,
        phobos_version: &str,
    ) -> Result<Vec<ConfigEntry>, StoreError> {
        let mut stmt = self.conn.prepare(
            "SELECT r.problem, r.device, r.driver, r.compiler, r.backend, r.winner,
                    r.winner_codegen, m.dims, m.dtypes, m.layouts, m.median_ms
             FROM runs r
             JOIN measurements m ON m.id = (
                 SELECT MAX(x.id) FROM measurements x
                 WHERE x.kernel_hash = r.kernel_hash AND x.problem = r.problem
                       AND x.device = r.device AND x.driver = r.driver
                       AND x.compiler = r.compiler AND x.backend = r.backend
                       AND x.phobos_version = r.phobos_version AND x.point = r.winner
                       AND x.codegen_hash IS r.winner_codegen AND x.status = 'ok')
             WHERE r.kernel_hash = ?1 AND r.phobos_version = ?2 AND r.winner IS NOT NULL
                   AND r.id = (
                       SELECT MAX(y.id) FROM runs y
                       WHERE y.kernel_hash = r.kernel_hash AND y.problem = r.problem
                             AND y.device = r.device AND y.driver = r.driver
                             AND y.compiler = r.compiler AND y.backend = r.backend
                             AND y.phobos_version = r.phobos_version
                             AND y.finished_at IS NOT NULL AND y.winner IS NOT NULL)
             ORDER BY r.problem, r.device, r.driver, r.compiler, r.backend",
        )?;
        let rows = stmt.query_map(params![kernel_hash, phobos_version], |r| {
            Ok((
                [
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, String>(4)?,
                    r.get::<_, String>(5)?,
                ],
                r.get::<_, Option<String>>(6)?,
                [
                    r.get::<_, String>(7)?,
                    r.get::<_, String>(8)?,
                    r.get::<_, String>(9)?,
                ],
                r.get::<_, Option<f64>>(10)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let ([device, driver, compiler, backend, config], codegen, [dims, types, layouts], ms) =
                row?;
            out.push(ConfigEntry {
                problem: Problem {
                    dims: serde_json::from_str(&dims)?,
                    types: serde_json::from_str(&types)?,
                    layouts: serde_json::from_str(&layouts)?,
                    args: Vec::new(),
                },
                device,
                driver,
                compiler,
                backend,
                config,
                codegen,
                median_ms: ms,
            });
        }
        Ok(out)
    }
}
