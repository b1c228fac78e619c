//! Reading results back for reuse: only those of this Phobos version and of code the
//! generator still emits for their point.

use super::{RunKey, Store, StoreError};
use crate::types::PointResult;
use rusqlite::{params, OptionalExtension};
use std::collections::HashMap;

/// The winner of a finished run, with the hash of its generated code when it was tuned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredWinner {
    /// The winning point, as `to_pins` writes it.
    pub pins: String,
    /// What the code generator produced for it; `None` in rows of schema version 2 and older.
    pub codegen: Option<String>,
}

impl Store {
    /// The latest stored result of every point measured under this key whose generated code
    /// is still what `codegen` says (by `to_pins`); points `codegen` lacks, and rows of
    /// another generator output or another Phobos version, are not served. Pruned points are
    /// not reused: pruning is cheap and depends on flags. Later rows win, so a final-round time
    /// replaces the search time of the same point.
    pub fn lookup(
        &self,
        key: &RunKey,
        codegen: &HashMap<String, String>,
    ) -> Result<Vec<PointResult>, StoreError> {
        let mut stmt = self.conn.prepare(
            "SELECT point, point_json, outcome_json, resources_json, flops, bytes, codegen_hash
             FROM measurements
             WHERE kernel_hash = ?1 AND problem = ?2 AND device = ?3 AND driver = ?4
                   AND compiler = ?5 AND backend = ?6 AND phobos_version = ?7
                   AND codegen_hash IS NOT NULL AND status != 'pruned'
             ORDER BY id",
        )?;
        let rows = stmt.query_map(
            params![
                key.kernel_hash,
                key.problem.key(),
                key.device,
                key.driver,
                key.compiler,
                key.backend.name(),
                key.phobos_version
            ],
            |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, Option<String>>(3)?,
                    r.get::<_, Option<f64>>(4)?,
                    r.get::<_, Option<f64>>(5)?,
                    r.get::<_, String>(6)?,
                ))
            },
        )?;
        let mut latest: HashMap<String, PointResult> = HashMap::new();
        let mut order: Vec<String> = Vec::new();
        for row in rows {
            let (pins, point, outcome, resources, flops, bytes, hash) = row?;
            if codegen.get(&pins) != Some(&hash) {
                continue;
            }
            let result = PointResult {
                point: serde_json::from_str(&point)?,
                outcome: serde_json::from_str(&outcome)?,
                resources: resources.as_deref().map(serde_json::from_str).transpose()?,
                flops,
                bytes,
                reused: true,
            };
            if latest.insert(pins.clone(), result).is_none() {
                order.push(pins);
            }
        }
        Ok(order
            .into_iter()
            .filter_map(|p| latest.remove(&p))
            .collect())
    }

    /// The winner of the latest finished run under this key (the same Phobos version
    /// included), with the hash of its generated code: the caller reuses it only when the
    /// code generator still produces that code for the point.
    pub fn last_winner(&self, key: &RunKey) -> Result<Option<StoredWinner>, StoreError> {
        let row = self
            .conn
            .query_row(
                "SELECT winner, winner_codegen FROM runs
                 WHERE kernel_hash = ?1 AND problem = ?2 AND device = ?3 AND driver = ?4
                       AND compiler = ?5 AND backend = ?6 AND phobos_version = ?7
                       AND finished_at IS NOT NULL
                 ORDER BY id DESC LIMIT 1",
                params![
                    key.kernel_hash,
                    key.problem.key(),
                    key.device,
                    key.driver,
                    key.compiler,
                    key.backend.name(),
                    key.phobos_version
                ],
                |r| {
                    Ok((
                        r.get::<_, Option<String>>(0)?,
                        r.get::<_, Option<String>>(1)?,
                    ))
                },
            )
            .optional()?;
        Ok(row.and_then(|(pins, codegen)| {
            Some(StoredWinner {
                pins: pins?,
                codegen,
            })
        }))
    }
}
