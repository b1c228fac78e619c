//! Opening a results database: its folder created, someone else's database refused untouched,
//! WAL mode switched on, and the missing schema migrations applied.

use super::lock::{busy, Waiting, BUSY_TIMEOUT};
use super::{current_version, schema, Store, StoreError, WaitHook};
use rusqlite::{Connection, TransactionBehavior};
use std::path::Path;

impl Store {
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
}
