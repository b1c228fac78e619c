//! The results store: one SQLite file (WAL mode) holding every variant compiled and every
//! measurement, keyed by what determines it.
//!
//! **A result is reused only under the generator that produced it**: besides the kernel,
//! problem, device, driver and compiler, each row carries the Phobos version and the hash of
//! what the code generator emitted for its point ([`crate::Compiler::codegen_hash`]). Rows of
//! another version or another generator output (timings, `wrong` and `crashed` verdicts alike)
//! stay in the file for history but are never served by [`Store::lookup`] or
//! [`Store::last_winner`].
//!
//! **Each result is committed as it arrives**, in its own short write transaction, so a killed
//! run loses nothing and the next run resumes from what is stored. Writers take the write lock
//! up front (`BEGIN IMMEDIATE`) and wait up to a minute (telling a `WaitHook` after a second),
//! so two runs sharing one file serialize their writes instead of failing with "database is
//! locked".

mod merge;
mod peaks;
mod schema;
mod searches;
mod winners;

use crate::types::{Backend, PointResult, Resources};
use phobos_ir::Point;
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

pub use merge::{MergeCounts, Setup};
pub use peaks::{Peak, PeakKey};
pub use schema::current_version;
pub use searches::StoredSearch;

/// How long a writer waits for another process's write to finish before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(60);

/// How long a writer waits in silence before the store's [`WaitHook`] is told.
const WAIT_NOTICE: Duration = Duration::from_secs(1);

/// Told (with the database's path) when a write has waited [`WAIT_NOTICE`] for another
/// process's lock, once per wait: the CLI says so instead of hanging silently.
pub type WaitHook = Arc<dyn Fn(&Path) + Send + Sync>;

thread_local! {
    /// The hook of the write in progress on this thread, for [`busy`], which SQLite calls on
    /// the writing thread but which cannot capture anything.
    static WAITING: RefCell<Option<(WaitHook, PathBuf)>> = const { RefCell::new(None) };
}

/// SQLite's busy handler: retries every 20 ms, tells the hook once after [`WAIT_NOTICE`], gives
/// up after [`BUSY_TIMEOUT`].
fn busy(retries: i32) -> bool {
    const STEP: Duration = Duration::from_millis(20);
    let waited = STEP * retries.max(0) as u32;
    if waited >= BUSY_TIMEOUT {
        return false;
    }
    if waited < WAIT_NOTICE && waited + STEP >= WAIT_NOTICE {
        WAITING.with(|w| {
            if let Some((hook, path)) = &*w.borrow() {
                hook(path);
            }
        });
    }
    std::thread::sleep(STEP);
    true
}

/// Installs a hook for [`busy`] on this thread while it lives.
struct Waiting;

impl Waiting {
    fn install(hook: Option<&WaitHook>, path: &Path) -> Option<Waiting> {
        let hook = hook?.clone();
        WAITING.with(|w| *w.borrow_mut() = Some((hook, path.to_path_buf())));
        Some(Waiting)
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        WAITING.with(|w| *w.borrow_mut() = None);
    }
}

/// A store error: the path and what SQLite said.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot open the results database {path}: {source}")]
    Open {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error("cannot create the folder of the results database {path}: {source}")]
    Folder {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the results database {path} has schema version {found}, newer than this build's {supported}")]
    TooNew {
        path: PathBuf,
        found: i64,
        supported: i64,
    },
    #[error(
        "{path} is not a phobos results database (it holds the tables {tables}); it was left \
         as it is: pass another file with --db"
    )]
    Foreign { path: PathBuf, tables: String },
    #[error("cannot write the results database {path}: {source}")]
    Write {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error("results database: {0}")]
    Sql(#[from] rusqlite::Error),
    #[error("results database: bad stored record: {0}")]
    Record(#[from] serde_json::Error),
}

/// The version of Phobos this build is: part of every stored result's key.
pub const PHOBOS_VERSION: &str = env!("CARGO_PKG_VERSION");

/// What a stored result is keyed by, besides its point and its generated code.
#[derive(Clone, Debug, PartialEq)]
pub struct RunKey {
    /// The Phobos version that produced the results ([`PHOBOS_VERSION`] for new ones).
    pub phobos_version: String,
    pub kernel_hash: String,
    pub kernel_name: String,
    pub problem: crate::types::Problem,
    pub device: String,
    pub driver: String,
    /// `nvrtc 13.0` or `interp`.
    pub compiler: String,
    pub backend: Backend,
}

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

/// The winner of a finished run, with the hash of its generated code when it was tuned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredWinner {
    /// The winning point, as `to_pins` writes it.
    pub pins: String,
    /// What the code generator produced for it; `None` in rows of schema version 2 and older.
    pub codegen: Option<String>,
}

/// An open results database.
pub struct Store {
    conn: Connection,
    path: PathBuf,
    on_wait: Option<WaitHook>,
}

impl Store {
    /// `$XDG_CACHE_HOME/phobos/kbench.sqlite`, else `~/.cache/phobos/kbench.sqlite`.
    pub fn default_path() -> Option<PathBuf> {
        Some(crate::cache::cache_root()?.join("kbench.sqlite"))
    }

    /// Opens (creating if needed) a database and brings its schema up to date.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        Store::open_with(path, None)
    }

    /// [`Store::open`], telling `on_wait` whenever a write (the migrations included) waits for
    /// another process's lock.
    pub fn open_with(path: &Path, on_wait: Option<WaitHook>) -> Result<Store, StoreError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| StoreError::Folder {
                path: dir.to_path_buf(),
                source,
            })?;
        }
        let open_err = |source| StoreError::Open {
            path: path.to_path_buf(),
            source,
        };
        let mut conn = Connection::open(path).map_err(open_err)?;
        conn.busy_handler(Some(busy)).map_err(open_err)?;
        // Someone else's database is refused before anything (WAL, migrations) changes it.
        let tables: Vec<String> = conn
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
            .and_then(|mut st| st.query_map([], |r| r.get(0))?.collect())
            .map_err(open_err)?;
        if !tables.is_empty() && !tables.iter().any(|t| t == "schema_migrations") {
            const SHOWN: usize = 5;
            let mut list = tables
                .iter()
                .take(SHOWN)
                .map(|t| format!("`{t}`"))
                .collect::<Vec<_>>()
                .join(", ");
            if tables.len() > SHOWN {
                list.push_str(&format!(" and {} more", tables.len() - SHOWN));
            }
            return Err(StoreError::Foreign {
                path: path.to_path_buf(),
                tables: list,
            });
        }
        // WAL lets readers and one writer proceed together; NORMAL sync is durable across a
        // killed process (only a power cut can lose the last commits).
        // Switching a new file to WAL takes an exclusive lock, and SQLite answers BUSY at once
        // (without the busy handler) when another process is opening the same file: retry.
        let deadline = std::time::Instant::now() + BUSY_TIMEOUT;
        loop {
            match conn.pragma_update(None, "journal_mode", "WAL") {
                Err(rusqlite::Error::SqliteFailure(e, _))
                    if e.code == rusqlite::ErrorCode::DatabaseBusy
                        && std::time::Instant::now() < deadline =>
                {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                r => break r.map_err(open_err)?,
            }
        }
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(open_err)?;
        let mut store = Store {
            conn,
            path: path.to_path_buf(),
            on_wait,
        };
        store.migrate()?;
        Ok(store)
    }

    /// The file this store lives in.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn migrate(&mut self) -> Result<(), StoreError> {
        let _waiting = Waiting::install(self.on_wait.as_ref(), &self.path);
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute_batch(
            "CREATE TABLE IF NOT EXISTS schema_migrations (
                 version    INTEGER PRIMARY KEY,
                 applied_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
             );",
        )?;
        let found: i64 = tx.query_row(
            "SELECT COALESCE(MAX(version), 0) FROM schema_migrations",
            [],
            |r| r.get(0),
        )?;
        if found > current_version() {
            return Err(StoreError::TooNew {
                path: self.path.clone(),
                found,
                supported: current_version(),
            });
        }
        for &(version, sql) in schema::MIGRATIONS.iter().filter(|m| m.0 > found) {
            tx.execute_batch(sql)?;
            tx.execute(
                "INSERT INTO schema_migrations (version) VALUES (?1)",
                [version],
            )?;
        }
        tx.commit()?;
        Ok(())
    }

    /// The schema version of this database.
    pub fn version(&self) -> Result<i64, StoreError> {
        Ok(self.conn.query_row(
            "SELECT COALESCE(MAX(version), 0) FROM schema_migrations",
            [],
            |r| r.get(0),
        )?)
    }

    fn write<T>(
        &mut self,
        f: impl FnOnce(&rusqlite::Transaction<'_>) -> rusqlite::Result<T>,
    ) -> Result<T, StoreError> {
        let _waiting = Waiting::install(self.on_wait.as_ref(), &self.path);
        // A full disk or a read-only file shows here: name the file.
        let write_err = |source| StoreError::Write {
            path: self.path.clone(),
            source,
        };
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(write_err)?;
        let out = f(&tx).map_err(write_err)?;
        tx.commit().map_err(write_err)?;
        Ok(out)
    }

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

    /// Number of measurement rows (all keys); for tests and summaries.
    pub fn measurement_count(&self) -> Result<i64, StoreError> {
        Ok(self
            .conn
            .query_row("SELECT COUNT(*) FROM measurements", [], |r| r.get(0))?)
    }

    /// Number of variant rows (all keys).
    pub fn variant_count(&self) -> Result<i64, StoreError> {
        Ok(self
            .conn
            .query_row("SELECT COUNT(*) FROM variants", [], |r| r.get(0))?)
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

#[cfg(test)]
mod tests;
