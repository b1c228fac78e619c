//! Measured peaks (`--benchmark`'s efficiency column) and per-GPU row counts.
//!
//! A peak is measured once per device, driver, back end and element types, then read back by
//! every later benchmark; `--peak TFLOPS` bypasses it.

use super::{Store, StoreError};
use rusqlite::{params, OptionalExtension};

/// What a peak is measured for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeakKey {
    /// The device's name.
    pub device: String,
    /// The driver version.
    pub driver: String,
    /// `cuda` or `interp`.
    pub backend: String,
    /// The element types it holds for, e.g. `A=f16,B=f16,C=f32`.
    pub dtypes: String,
}

/// A stored peak.
#[derive(Clone, Debug, PartialEq)]
pub struct Peak {
    /// TFLOP/s.
    pub tflops: f64,
    /// How it was measured, e.g. `cuBLAS 4096x4096x4096`.
    pub method: String,
}

impl Store {
    /// The latest peak stored for this key.
    pub fn peak(&self, key: &PeakKey) -> Result<Option<Peak>, StoreError> {
        Ok(self
            .conn
            .query_row(
                "SELECT tflops, method FROM peaks
                 WHERE device = ?1 AND driver = ?2 AND backend = ?3 AND dtypes = ?4
                 ORDER BY id DESC LIMIT 1",
                params![key.device, key.driver, key.backend, key.dtypes],
                |r| {
                    Ok(Peak {
                        tflops: r.get(0)?,
                        method: r.get(1)?,
                    })
                },
            )
            .optional()?)
    }

    /// The latest peak of each element-types key stored for a device (any driver, any back
    /// end), as `(dtypes, peak)`: the compute roofs a report draws.
    pub fn peaks_of(&self, device: &str) -> Result<Vec<(String, Peak)>, StoreError> {
        let mut stmt = self.conn.prepare(
            "SELECT dtypes, tflops, method FROM peaks p
             WHERE device = ?1 AND id = (SELECT MAX(id) FROM peaks q
                                         WHERE q.device = p.device AND q.dtypes = p.dtypes)
             ORDER BY dtypes",
        )?;
        let rows = stmt.query_map(params![device], |r| {
            Ok((
                r.get::<_, String>(0)?,
                Peak {
                    tflops: r.get(1)?,
                    method: r.get(2)?,
                },
            ))
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Stores a measured peak (a later one replaces it for [`Store::peak`]).
    pub fn set_peak(&mut self, key: &PeakKey, peak: &Peak) -> Result<(), StoreError> {
        self.write(|tx| {
            tx.execute(
                "INSERT INTO peaks (device, driver, backend, dtypes, tflops, method)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![
                    key.device,
                    key.driver,
                    key.backend,
                    key.dtypes,
                    peak.tflops,
                    peak.method
                ],
            )
        })?;
        Ok(())
    }

    /// Measurement rows per GPU ordinal (`None`: not run on a device, or in-process), over
    /// every key, ordered by ordinal.
    pub fn rows_per_ordinal(&self) -> Result<Vec<(Option<u32>, i64)>, StoreError> {
        let mut stmt = self.conn.prepare(
            "SELECT device_ordinal, COUNT(*) FROM measurements
             GROUP BY device_ordinal ORDER BY device_ordinal",
        )?;
        let rows = stmt.query_map([], |r| Ok((r.get::<_, Option<u32>>(0)?, r.get(1)?)))?;
        Ok(rows.collect::<Result<Vec<_>, _>>()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Phase, RunKey};
    use crate::types::{Backend, Outcome, PointResult, Problem, Stats};
    use phobos_ir::Point;
    use rusqlite::Connection;

    fn key(dtypes: &str) -> PeakKey {
        PeakKey {
            device: "NVIDIA H200".into(),
            driver: "13.0".into(),
            backend: "cuda".into(),
            dtypes: dtypes.into(),
        }
    }

    #[test]
    fn peaks_are_kept_per_key_and_the_latest_wins() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kb.sqlite");
        let mut s = Store::open(&path).unwrap();
        assert_eq!(s.peak(&key("A=f16,B=f16,C=f32")).unwrap(), None);
        let first = Peak {
            tflops: 700.0,
            method: "cuBLAS 4096x4096x4096".into(),
        };
        s.set_peak(&key("A=f16,B=f16,C=f32"), &first).unwrap();
        s.set_peak(
            &key("A=f16,B=f16,C=f32"),
            &Peak {
                tflops: 720.5,
                ..first.clone()
            },
        )
        .unwrap();
        drop(s);
        let s = Store::open(&path).unwrap();
        assert_eq!(
            s.peak(&key("A=f16,B=f16,C=f32")).unwrap().unwrap().tflops,
            720.5
        );
        assert_eq!(s.peak(&key("A=bf16,B=bf16,C=f32")).unwrap(), None);
        let other_device = PeakKey {
            device: "NVIDIA A100".into(),
            ..key("A=f16,B=f16,C=f32")
        };
        assert_eq!(s.peak(&other_device).unwrap(), None);
    }

    #[test]
    fn ordinals_are_recorded_per_row() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Store::open(&dir.path().join("kb.sqlite")).unwrap();
        let k = RunKey {
            phobos_version: crate::store::PHOBOS_VERSION.into(),
            kernel_hash: "h".into(),
            kernel_name: "k".into(),
            problem: Problem::default(),
            device: "d".into(),
            driver: "1".into(),
            compiler: "c".into(),
            backend: Backend::Interp,
        };
        let r = |u: i64| PointResult {
            point: Point(vec![("U".into(), u)]),
            outcome: Outcome::Timed(Stats::from_samples(&[1.0], false).unwrap()),
            resources: None,
            flops: None,
            bytes: None,
            reused: false,
        };
        s.record_on(None, &k, Some("g"), &r(1), Phase::Search, Some(0))
            .unwrap();
        s.record_on(None, &k, Some("g"), &r(2), Phase::Search, Some(1))
            .unwrap();
        s.record_on(None, &k, Some("g"), &r(4), Phase::Search, Some(1))
            .unwrap();
        s.record(None, &k, Some("g"), &r(8), Phase::Search).unwrap();
        assert_eq!(
            s.rows_per_ordinal().unwrap(),
            vec![(None, 1), (Some(0), 1), (Some(1), 2)]
        );
        let generated = [1, 2, 4, 8]
            .map(|u| (format!("U={u}"), "g".to_string()))
            .into();
        assert_eq!(s.lookup(&k, &generated).unwrap().len(), 4);
    }

    /// A database written by schema version 1 is brought up to date, keeping its rows.
    #[test]
    fn a_version_1_database_is_migrated() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kb.sqlite");
        {
            let c = Connection::open(&path).unwrap();
            c.execute_batch(
                "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY,
                     applied_at TEXT NOT NULL DEFAULT 'x');",
            )
            .unwrap();
            c.execute_batch(crate::store::schema::MIGRATIONS[0].1)
                .unwrap();
            c.execute("INSERT INTO schema_migrations (version) VALUES (1)", [])
                .unwrap();
            c.execute(
                "INSERT INTO measurements (kernel_hash, kernel_name, point, point_json, problem,
                     dims, dtypes, layouts, device, driver, compiler, backend, phase, status,
                     outcome_json)
                 VALUES ('h', 'k', 'U=1', '[[\"U\",1]]', 'p', '[]', '[]', '[]', 'd', '1', 'c',
                     'interp', 'search', 'compiled', '{\"status\":\"compiled\"}')",
                [],
            )
            .unwrap();
        }
        let s = Store::open(&path).unwrap();
        assert_eq!(s.version().unwrap(), crate::store::current_version());
        assert_eq!(s.rows_per_ordinal().unwrap(), vec![(None, 1)]);
    }
}
