//! Merging results databases (`phobos-kbench merge`): the union of the runs, compiles,
//! measurements and peaks of another database, each row added once however often the same
//! input is merged.
//!
//! A row is the same row when every column but its id (and the id of its run, which differs
//! between files) is equal: rows carry their creation time to the millisecond, so two
//! measurements of one point by two processes are two rows, and one measurement merged twice
//! is one. A run is the same run when it started at the same time under the same key; a run
//! merged while still going and again after it finished keeps one row, finished.

use super::{Store, StoreError};
use rusqlite::params;
use std::path::Path;

/// What merging one input added, table by table: `(added, already there)`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MergeCounts {
    pub runs: (usize, usize),
    pub measurements: (usize, usize),
    pub variants: (usize, usize),
    pub peaks: (usize, usize),
}

/// One setup measurements were taken on: times from two setups do not compare.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Setup {
    pub device: String,
    pub driver: String,
    pub compiler: String,
    pub backend: String,
}

impl std::fmt::Display for Setup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} (driver {}, compiler {}, backend {})",
            self.device, self.driver, self.compiler, self.backend
        )
    }
}

/// The run key's columns: a run is the same run when these and its start time agree.
const RUN_KEY: [&str; 9] = [
    "started_at",
    "kernel_hash",
    "kernel_name",
    "problem",
    "device",
    "driver",
    "compiler",
    "backend",
    "phobos_version",
];

impl Store {
    /// Every setup (device, driver, compiler, back end) with measurements in this database.
    pub fn setups(&self) -> Result<Vec<Setup>, StoreError> {
        let mut stmt = self.conn.prepare(
            "SELECT DISTINCT device, driver, compiler, backend FROM measurements
             ORDER BY device, driver, compiler, backend",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok(Setup {
                device: r.get(0)?,
                driver: r.get(1)?,
                compiler: r.get(2)?,
                backend: r.get(3)?,
            })
        })?;
        Ok(rows.collect::<Result<Vec<_>, _>>()?)
    }

    /// Adds every row of the database at `input` not already here, in one transaction (a
    /// merge stopped half-way adds nothing). The input is opened, so brought to this build's
    /// schema, first.
    pub fn merge(&mut self, input: &Path) -> Result<MergeCounts, StoreError> {
        drop(Store::open(input)?);
        let name = input.to_string_lossy().into_owned();
        self.conn
            .execute("ATTACH DATABASE ?1 AS src", params![name])?;
        let merged = self.merge_attached();
        let detached = self.conn.execute_batch("DETACH DATABASE src");
        let counts = merged?;
        detached?;
        Ok(counts)
    }

    fn merge_attached(&mut self) -> Result<MergeCounts, StoreError> {
        let _waiting = super::lock::Waiting::install(self.on_wait.as_ref(), &self.path);
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let mut counts = MergeCounts::default();
        let count = |table: &str, schema: &str| -> rusqlite::Result<usize> {
            tx.query_row(&format!("SELECT COUNT(*) FROM {schema}.{table}"), [], |r| {
                r.get::<_, i64>(0)
            })
            .map(|n| n as usize)
        };

        // Runs first, mapping the input's ids to this database's.
        tx.execute_batch(
            "DROP TABLE IF EXISTS temp.run_map;
             CREATE TEMP TABLE run_map (old INTEGER PRIMARY KEY, new INTEGER NOT NULL);",
        )?;
        let same_run = RUN_KEY
            .iter()
            .map(|c| format!("t.{c} IS s.{c}"))
            .collect::<Vec<_>>()
            .join(" AND ");
        let before = count("runs", "main")?;
        let cols = RUN_KEY.join(", ");
        tx.execute(
            &format!(
                "INSERT INTO main.runs ({cols}, finished_at, winner, winner_codegen)
                 SELECT {cols}, finished_at, winner, winner_codegen FROM src.runs s
                 WHERE NOT EXISTS (SELECT 1 FROM main.runs t WHERE {same_run})
                 ORDER BY s.id"
            ),
            [],
        )?;
        let added = count("runs", "main")? - before;
        counts.runs = (added, count("runs", "src")? - added);
        tx.execute(
            &format!(
                "INSERT INTO temp.run_map (old, new)
                 SELECT s.id, (SELECT MIN(t.id) FROM main.runs t WHERE {same_run}) FROM src.runs s"
            ),
            [],
        )?;
        // A run merged while going, merged again finished.
        tx.execute(
            "UPDATE main.runs SET
                 finished_at = (SELECT s.finished_at FROM src.runs s JOIN temp.run_map m
                                ON m.old = s.id WHERE m.new = main.runs.id),
                 winner = (SELECT s.winner FROM src.runs s JOIN temp.run_map m
                           ON m.old = s.id WHERE m.new = main.runs.id),
                 winner_codegen = (SELECT s.winner_codegen FROM src.runs s JOIN temp.run_map m
                                   ON m.old = s.id WHERE m.new = main.runs.id)
             WHERE finished_at IS NULL AND id IN (
                 SELECT m.new FROM temp.run_map m JOIN src.runs s ON s.id = m.old
                 WHERE s.finished_at IS NOT NULL)",
            [],
        )?;

        for table in ["measurements", "variants", "peaks"] {
            let columns: Vec<String> = {
                let mut stmt = tx.prepare(&format!("PRAGMA main.table_info({table})"))?;
                let names = stmt.query_map([], |r| r.get::<_, String>(1))?;
                names
                    .collect::<rusqlite::Result<Vec<_>>>()?
                    .into_iter()
                    .filter(|c| c != "id" && c != "run_id")
                    .collect()
            };
            let has_run = table != "peaks";
            let same = columns
                .iter()
                .map(|c| format!("t.{c} IS s.{c}"))
                .collect::<Vec<_>>()
                .join(" AND ");
            let list = columns.join(", ");
            let select = columns
                .iter()
                .map(|c| format!("s.{c}"))
                .collect::<Vec<_>>()
                .join(", ");
            let (into, from, join) = if has_run {
                (
                    format!("run_id, {list}"),
                    format!("m.new, {select}"),
                    "LEFT JOIN temp.run_map m ON m.old = s.run_id",
                )
            } else {
                (list.clone(), select.clone(), "")
            };
            let before = count(table, "main")?;
            tx.execute(
                &format!(
                    "INSERT INTO main.{table} ({into})
                     SELECT {from} FROM src.{table} s {join}
                     WHERE NOT EXISTS (SELECT 1 FROM main.{table} t WHERE {same})
                     ORDER BY s.id"
                ),
                [],
            )?;
            let added = count(table, "main")? - before;
            let pair = (added, count(table, "src")? - added);
            match table {
                "measurements" => counts.measurements = pair,
                "variants" => counts.variants = pair,
                _ => counts.peaks = pair,
            }
        }
        tx.execute_batch("DROP TABLE temp.run_map")?;
        tx.commit()?;
        Ok(counts)
    }

    /// Every measurement row's problem, point and phase (`search`, `final`) and status, in
    /// the order they were stored: what a merge must keep exactly once.
    pub fn measurement_rows(&self) -> Result<Vec<(String, String, String, String)>, StoreError> {
        let mut stmt = self
            .conn
            .prepare("SELECT problem, point, phase, status FROM measurements ORDER BY id")?;
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?;
        Ok(rows.collect::<Result<Vec<_>, _>>()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Phase, RunKey};
    use crate::types::{Backend, Outcome, PointResult, Problem, Stats};
    use phobos_ir::Point;

    fn key(device: &str) -> RunKey {
        RunKey {
            phobos_version: crate::store::PHOBOS_VERSION.into(),
            kernel_hash: "abc".into(),
            kernel_name: "gemm".into(),
            problem: Problem {
                dims: vec![("M".into(), 64)],
                ..Default::default()
            },
            device: device.into(),
            driver: "none".into(),
            compiler: "interp".into(),
            backend: Backend::Interp,
        }
    }

    fn timed(t: i64, ms: f64) -> PointResult {
        PointResult {
            point: Point(vec![("T".into(), t)]),
            outcome: Outcome::Timed(Stats::from_samples(&[ms, ms], false).unwrap()),
            resources: None,
            flops: None,
            bytes: None,
            reused: false,
        }
    }

    /// Every `T=t` generating the code `g`.
    fn generated(ts: impl IntoIterator<Item = i64>) -> std::collections::HashMap<String, String> {
        ts.into_iter()
            .map(|t| (format!("T={t}"), "g".to_string()))
            .collect()
    }

    /// A database with one finished run timing the points `ts`.
    fn shard(path: &Path, ts: &[i64]) {
        let mut s = Store::open(path).unwrap();
        let k = key("cpu");
        let run = s.begin_run(&k).unwrap();
        for &t in ts {
            s.record(Some(run), &k, Some("g"), &timed(t, t as f64), Phase::Search)
                .unwrap();
        }
        s.finish_run(run, None).unwrap();
    }

    #[test]
    fn merging_is_a_union_and_merging_again_adds_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b, out) = (
            dir.path().join("a.sqlite"),
            dir.path().join("b.sqlite"),
            dir.path().join("out.sqlite"),
        );
        shard(&a, &[1, 3]);
        shard(&b, &[2, 4, 5]);
        let mut m = Store::open(&out).unwrap();
        let ca = m.merge(&a).unwrap();
        assert_eq!(ca.runs, (1, 0));
        assert_eq!(ca.measurements, (2, 0));
        assert_eq!(m.merge(&b).unwrap().measurements, (3, 0));
        let again = m.merge(&a).unwrap();
        assert_eq!((again.runs, again.measurements), ((0, 1), (0, 2)));
        let mut points: Vec<String> = m
            .measurement_rows()
            .unwrap()
            .into_iter()
            .map(|r| r.1)
            .collect();
        points.sort();
        assert_eq!(points, ["T=1", "T=2", "T=3", "T=4", "T=5"]);
        // The merged store answers lookups like one that measured everything itself.
        assert_eq!(m.lookup(&key("cpu"), &generated(1..=5)).unwrap().len(), 5);
        assert_eq!(
            m.setups().unwrap(),
            vec![Setup {
                device: "cpu".into(),
                driver: "none".into(),
                compiler: "interp".into(),
                backend: "interp".into()
            }]
        );
    }

    #[test]
    fn a_run_merged_while_going_ends_finished_once() {
        let dir = tempfile::tempdir().unwrap();
        let (a, out) = (dir.path().join("a.sqlite"), dir.path().join("out.sqlite"));
        let mut s = Store::open(&a).unwrap();
        let k = key("cpu");
        let run = s.begin_run(&k).unwrap();
        s.record(Some(run), &k, Some("g"), &timed(1, 1.0), Phase::Search)
            .unwrap();
        let mut m = Store::open(&out).unwrap();
        assert_eq!(m.merge(&a).unwrap().measurements, (1, 0));
        s.record(Some(run), &k, Some("g"), &timed(2, 2.0), Phase::Search)
            .unwrap();
        s.finish_run(run, Some((&Point(vec![("T".into(), 1)]), Some("g"))))
            .unwrap();
        let c = m.merge(&a).unwrap();
        assert_eq!((c.runs, c.measurements), ((0, 1), (1, 1)));
        let w = m.last_winner(&k).unwrap().unwrap();
        assert_eq!((w.pins.as_str(), w.codegen.as_deref()), ("T=1", Some("g")));
    }

    #[test]
    fn setups_list_every_device() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Store::open(&dir.path().join("a.sqlite")).unwrap();
        for d in ["gpu-b", "gpu-a"] {
            s.record(None, &key(d), Some("g"), &timed(1, 1.0), Phase::Search)
                .unwrap();
        }
        let devices: Vec<String> = s.setups().unwrap().into_iter().map(|x| x.device).collect();
        assert_eq!(devices, ["gpu-a", "gpu-b"]);
    }
}
