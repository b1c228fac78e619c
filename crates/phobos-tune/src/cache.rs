//! The on-disk cache of compiled variants, under the user's cache folder.
//!
//! A variant is keyed by everything that determines its binary: the emitted source and
//! headers, the compile options, the compiler version and the target architecture. The key
//! is a content hash, so a changed kernel, flag or toolkit simply misses.

use crate::hash::stable_hash;
use serde::{de::DeserializeOwned, Serialize};
use std::path::{Path, PathBuf};

/// `$XDG_CACHE_HOME/phobos`, else `$HOME/.cache/phobos`.
pub fn cache_root() -> Option<PathBuf> {
    let non_empty = |v: std::ffi::OsString| (!v.is_empty()).then(|| PathBuf::from(v));
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME").and_then(non_empty) {
        return Some(dir.join("phobos"));
    }
    std::env::var_os("HOME")
        .and_then(non_empty)
        .map(|h| h.join(".cache").join("phobos"))
}

/// A folder of compiled variants: `<key>.bin` with a `<key>.json` side record.
#[derive(Clone, Debug)]
pub struct VariantCache {
    dir: PathBuf,
}

impl VariantCache {
    /// The cache at `dir` (created on first write).
    pub fn at(dir: impl Into<PathBuf>) -> VariantCache {
        VariantCache { dir: dir.into() }
    }

    /// The default cache: `<cache root>/variants`, or a temporary folder when there is no home.
    pub fn default_location() -> VariantCache {
        let dir = cache_root()
            .unwrap_or_else(|| std::env::temp_dir().join("phobos-cache"))
            .join("variants");
        VariantCache::at(dir)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The key of a variant from the parts that determine it.
    pub fn key(parts: &[&[u8]]) -> String {
        stable_hash(parts)
    }

    /// The path of a cached binary (whether or not it exists).
    pub fn binary_path(&self, key: &str) -> PathBuf {
        self.dir.join(format!("{key}.bin"))
    }

    /// A cached binary and its record, when both are there and readable.
    pub fn get<M: DeserializeOwned>(&self, key: &str) -> Option<(Vec<u8>, M)> {
        let bin = std::fs::read(self.binary_path(key)).ok()?;
        let meta = std::fs::read(self.dir.join(format!("{key}.json"))).ok()?;
        Some((bin, serde_json::from_slice(&meta).ok()?))
    }

    /// Stores a binary and its record. Each file is written to a temporary name and renamed,
    /// so a concurrent reader sees a whole file or none; the record goes last, so a reader
    /// that finds it also finds the binary.
    pub fn put<M: Serialize>(
        &self,
        key: &str,
        binary: &[u8],
        meta: &M,
    ) -> std::io::Result<PathBuf> {
        std::fs::create_dir_all(&self.dir)?;
        let bin_path = self.binary_path(key);
        write_atomic(&bin_path, binary)?;
        let meta = serde_json::to_vec(meta).map_err(std::io::Error::other)?;
        write_atomic(&self.dir.join(format!("{key}.json")), &meta)?;
        Ok(bin_path)
    }
}

fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension(format!(
        "tmp{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn put_then_get() {
        let dir = tempfile::tempdir().unwrap();
        let c = VariantCache::at(dir.path().join("v"));
        let k = VariantCache::key(&[b"src", b"-arch=sm_90"]);
        assert!(c.get::<String>(&k).is_none());
        let p = c.put(&k, b"\x7fELF", &"meta".to_string()).unwrap();
        assert!(p.exists());
        let (bin, meta) = c.get::<String>(&k).unwrap();
        assert_eq!(bin, b"\x7fELF");
        assert_eq!(meta, "meta");
        assert_ne!(k, VariantCache::key(&[b"src", b"-arch=sm_80"]));
    }
}
