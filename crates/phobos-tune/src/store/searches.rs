//! The searches stored for one kernel: every point's latest search result per problem and
//! setup, with its compile time (what `phobos-kbench record` writes as a dataset and
//! `phobos-kbench report` draws).

use super::{Store, StoreError};
use crate::types::{Backend, PointResult, Problem};
use rusqlite::params;
use std::collections::HashMap;

/// One problem's stored search on one setup.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredSearch {
    pub kernel: String,
    pub problem: Problem,
    pub device: String,
    pub backend: Backend,
    /// Each point's latest search result (in the order first measured), with its timed
    /// repetitions (0 when not timed) and compile time in ms (0 when not compiled).
    pub points: Vec<(PointResult, u32, f64)>,
}

impl Store {
    /// The stored searches of a kernel (by its hash; of every kernel for `None`), under any
    /// Phobos version, ordered by kernel, problem and setup.
    pub fn searches(&self, kernel_hash: Option<&str>) -> Result<Vec<StoredSearch>, StoreError> {
        let mut stmt = self.conn.prepare(
            "SELECT m.kernel_name || ' ' || m.problem, m.device, m.backend, m.point, m.point_json, m.outcome_json,
                    m.resources_json, m.flops, m.bytes, m.reps, m.dims, m.dtypes, m.layouts,
                    m.kernel_name,
                    (SELECT v.compile_ms FROM variants v
                     WHERE v.kernel_hash = m.kernel_hash AND v.problem = m.problem
                           AND v.point = m.point AND v.backend = m.backend
                     ORDER BY v.id DESC LIMIT 1)
             FROM measurements m
             WHERE (?1 IS NULL OR m.kernel_hash = ?1) AND m.phase = 'search'
             ORDER BY m.kernel_name, m.problem, m.device, m.backend, m.id",
        )?;
        let rows = stmt.query_map(params![kernel_hash], |r| {
            Ok((
                [
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, String>(4)?,
                    r.get::<_, String>(5)?,
                ],
                r.get::<_, Option<String>>(6)?,
                (r.get::<_, Option<f64>>(7)?, r.get::<_, Option<f64>>(8)?),
                r.get::<_, Option<i64>>(9)?,
                [
                    r.get::<_, String>(10)?,
                    r.get::<_, String>(11)?,
                    r.get::<_, String>(12)?,
                ],
                r.get::<_, Option<f64>>(14)?,
                r.get::<_, String>(13)?,
            ))
        })?;
        let mut out: Vec<StoredSearch> = Vec::new();
        let mut keys: Vec<(String, String, String)> = Vec::new();
        let mut slot: Vec<HashMap<String, usize>> = Vec::new();
        for row in rows {
            let (
                [problem, device, backend, pins, point, outcome],
                res,
                (flops, bytes),
                reps,
                d,
                c,
                kernel,
            ) = row?;
            let key = (problem, device.clone(), backend.clone());
            let k = match keys.iter().position(|x| x == &key) {
                Some(k) => k,
                None => {
                    keys.push(key);
                    slot.push(HashMap::new());
                    out.push(StoredSearch {
                        kernel,
                        problem: Problem {
                            dims: serde_json::from_str(&d[0])?,
                            types: serde_json::from_str(&d[1])?,
                            layouts: serde_json::from_str(&d[2])?,
                            args: Vec::new(),
                        },
                        device,
                        backend: Backend::parse(&backend).unwrap_or(Backend::Cuda),
                        points: Vec::new(),
                    });
                    out.len() - 1
                }
            };
            let result = PointResult {
                point: serde_json::from_str(&point)?,
                outcome: serde_json::from_str(&outcome)?,
                resources: res.as_deref().map(serde_json::from_str).transpose()?,
                flops,
                bytes,
                reused: true,
            };
            let entry = (result, reps.unwrap_or(0).max(0) as u32, c.unwrap_or(0.0));
            match slot[k].get(&pins) {
                Some(&at) => out[k].points[at] = entry,
                None => {
                    slot[k].insert(pins, out[k].points.len());
                    out[k].points.push(entry);
                }
            }
        }
        Ok(out)
    }
}
