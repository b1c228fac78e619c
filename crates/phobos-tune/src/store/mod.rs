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

mod lock;
mod merge;
mod open;
mod peaks;
mod record;
mod reuse;
mod schema;
mod searches;
mod winners;

use crate::types::Backend;
use rusqlite::Connection;
use std::path::{Path, PathBuf};

pub use lock::WaitHook;
pub use merge::{MergeCounts, Setup};
pub use peaks::{Peak, PeakKey};
pub use record::{Phase, VariantRow};
pub use reuse::StoredWinner;
pub use schema::current_version;
pub use searches::StoredSearch;

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

    /// The file this store lives in.
    pub fn path(&self) -> &Path {
        &self.path
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
}

#[cfg(test)]
mod tests;
