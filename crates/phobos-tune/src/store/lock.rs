//! Writing while other processes share the file: every write is one short transaction that
//! takes the write lock up front (`BEGIN IMMEDIATE`); a writer that finds the lock taken waits
//! up to a minute, telling the store's [`WaitHook`] once after a second.

use super::{Store, StoreError};
use rusqlite::TransactionBehavior;
use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// How long a writer waits for another process's write to finish before giving up.
pub(super) const BUSY_TIMEOUT: Duration = Duration::from_secs(60);

/// How long a writer waits in silence before the store's [`WaitHook`] is told.
const WAIT_NOTICE: Duration = Duration::from_secs(1);

/// Told (with the database's path) when a write has waited a second (`WAIT_NOTICE`) for another
/// process's lock, once per wait: the CLI says so instead of hanging silently.
pub type WaitHook = Arc<dyn Fn(&Path) + Send + Sync>;

thread_local! {
    /// The hook of the write in progress on this thread, for [`busy`], which SQLite calls on
    /// the writing thread but which cannot capture anything.
    static WAITING: RefCell<Option<(WaitHook, PathBuf)>> = const { RefCell::new(None) };
}

/// SQLite's busy handler: retries every 20 ms, tells the hook once after [`WAIT_NOTICE`], gives
/// up after [`BUSY_TIMEOUT`].
pub(super) fn busy(retries: i32) -> bool {
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
pub(super) struct Waiting;

impl Waiting {
    pub(super) fn install(hook: Option<&WaitHook>, path: &Path) -> Option<Waiting> {
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

impl Store {
    /// Runs `f` in a write transaction of its own, taken up front (`BEGIN IMMEDIATE`) and
    /// committed before returning; an error names the file.
    pub(super) fn write<T>(
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
}
