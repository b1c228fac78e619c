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

/// What a lookup in the cache found.
#[derive(Debug, PartialEq)]
pub enum Cached<M> {
    /// A binary whose content hash matches the one stored beside it, and its record.
    Hit(Vec<u8>, M),
    /// Nothing (or a write that never finished): compile.
    Miss,
    /// An entry whose binary, hash or record is damaged (emptied, truncated, overwritten):
    /// why, in a few words. It must not be trusted; compiling again replaces it.
    Damaged(String),
}

/// A folder of compiled variants: `<key>.bin`, the content hash of the binary in `<key>.sum`
/// and a `<key>.json` side record.
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

    /// The path of the content hash stored beside a binary.
    pub fn sum_path(&self, key: &str) -> PathBuf {
        self.dir.join(format!("{key}.sum"))
    }

    /// A cached binary and its record, verified against the hash stored beside it.
    pub fn get<M: DeserializeOwned>(&self, key: &str) -> Cached<M> {
        // The record is written last: without it the entry was never finished.
        let Ok(meta) = std::fs::read(self.dir.join(format!("{key}.json"))) else {
            return Cached::Miss;
        };
        let Ok(bin) = std::fs::read(self.binary_path(key)) else {
            return Cached::Damaged("the binary is missing".into());
        };
        let Ok(sum) = std::fs::read_to_string(self.sum_path(key)) else {
            return Cached::Damaged("the hash beside the binary is missing".into());
        };
        if sum.trim() != content_hash(&bin) {
            return Cached::Damaged(format!(
                "the binary ({} bytes) does not match its hash",
                bin.len()
            ));
        }
        match serde_json::from_slice(&meta) {
            Ok(m) => Cached::Hit(bin, m),
            Err(_) => Cached::Damaged("the record beside the binary is unreadable".into()),
        }
    }

    /// Whether the binary at `path` (a [`VariantCache::binary_path`]) still matches the hash
    /// stored beside it: the worker checks before it hands the bytes to the driver.
    pub fn verify_binary(path: &Path, bin: &[u8]) -> Result<(), String> {
        let sum = std::fs::read_to_string(path.with_extension("sum"))
            .map_err(|e| format!("cannot read the hash beside {}: {e}", path.display()))?;
        if sum.trim() == content_hash(bin) {
            Ok(())
        } else {
            Err(format!(
                "the cached binary {} is damaged (it does not match its hash); run again to \
                 compile it anew",
                path.display()
            ))
        }
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
        write_atomic(&self.sum_path(key), content_hash(binary).as_bytes())?;
        let meta = serde_json::to_vec(meta).map_err(std::io::Error::other)?;
        write_atomic(&self.dir.join(format!("{key}.json")), &meta)?;
        Ok(bin_path)
    }
}

/// The hash a binary is verified by.
fn content_hash(bin: &[u8]) -> String {
    stable_hash(&[bin])
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
        assert_eq!(c.get::<String>(&k), Cached::Miss);
        let p = c.put(&k, b"\x7fELF", &"meta".to_string()).unwrap();
        assert!(p.exists());
        assert_eq!(
            c.get::<String>(&k),
            Cached::Hit(b"\x7fELF".to_vec(), "meta".to_string())
        );
        assert_eq!(VariantCache::verify_binary(&p, b"\x7fELF"), Ok(()));
        assert_ne!(k, VariantCache::key(&[b"src", b"-arch=sm_80"]));
    }

    #[test]
    fn damaged_entries_are_not_trusted_and_a_put_repairs_them() {
        let dir = tempfile::tempdir().unwrap();
        let c = VariantCache::at(dir.path());
        let k = VariantCache::key(&[b"src"]);
        let bin: Vec<u8> = (0..=255).collect();
        let p = c.put(&k, &bin, &1u32).unwrap();
        let damage: [(&str, &dyn Fn()); 4] = [
            ("emptied", &|| std::fs::write(&p, b"").unwrap()),
            ("truncated", &|| std::fs::write(&p, &bin[..100]).unwrap()),
            ("one byte changed", &|| {
                let mut b = bin.clone();
                b[7] ^= 1;
                std::fs::write(&p, b).unwrap()
            }),
            ("hash removed", &|| {
                std::fs::remove_file(c.sum_path(&k)).unwrap()
            }),
        ];
        for (what, damage) in damage {
            damage();
            assert!(
                matches!(c.get::<u32>(&k), Cached::Damaged(_)),
                "{what}: {:?}",
                c.get::<u32>(&k)
            );
            c.put(&k, &bin, &1u32).unwrap();
            assert_eq!(c.get::<u32>(&k), Cached::Hit(bin.clone(), 1), "{what}");
        }
        assert!(VariantCache::verify_binary(&p, &bin[1..]).is_err());
    }
}
