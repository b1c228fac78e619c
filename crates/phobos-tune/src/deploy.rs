//! Deployable configuration tables (`phobos-kbench export`): the tuned winner of every problem
//! of one kernel, as a JSON file a program ships with instead of the results database, and the
//! choice of the entry for a problem the table does not hold.
//!
//! A table entry keeps the hash of the winner's generated code: whoever runs an entry checks
//! it against what the code generator produces now, so a table is never served stale either.
//!
//! For an unseen problem the nearest entry wins, dimension by dimension over shape buckets
//! (powers of two, as vLLM's per-shape tables): entries of the same element types and layouts
//! only, ranked by how many dims fall in another bucket, then by the summed distance of the
//! dims on a log scale, then by their order in the file.

use crate::types::Problem;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The `format` of the tables this build writes and reads.
pub const TABLE_FORMAT: &str = "phobos-configs/1";

/// The winners of one kernel, problem by problem.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConfigTable {
    /// [`TABLE_FORMAT`].
    pub format: String,
    pub kernel: String,
    /// The hash of the source text and the kernel name the winners were tuned for.
    pub kernel_hash: String,
    /// The Phobos version that tuned them.
    pub phobos_version: String,
    pub entries: Vec<ConfigEntry>,
}

/// One problem's winner on one setup.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConfigEntry {
    pub problem: Problem,
    pub device: String,
    pub driver: String,
    pub compiler: String,
    /// `cuda` or `interp`.
    pub backend: String,
    /// The winning point, as `to_pins` writes it (`TILE_M=64_TILE_N=128`, or `TILE=64`).
    pub config: String,
    /// The hash of the point's generated code when it won.
    pub codegen: Option<String>,
    /// Its median time, when one is stored under that code.
    pub median_ms: Option<f64>,
}

/// Why a table could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum TableError {
    #[error("cannot read the config table {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write the config table {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not a config table: {source}")]
    Parse {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("{path} is a config table of format `{found}`; this build reads `{TABLE_FORMAT}`")]
    Format { path: PathBuf, found: String },
}

/// The shape bucket of a dim: the exponent of the smallest power of two at least `n`.
pub fn bucket(n: i64) -> u32 {
    if n <= 1 {
        0
    } else {
        64 - ((n - 1) as u64).leading_zeros()
    }
}

/// How far an entry's problem is from another: `None` when they differ in anything but the
/// values of the dims (element types, layouts, the set of dim names). Config tables and
/// `--seed-from` both rank recorded problems by it.
pub fn distance(entry: &Problem, problem: &Problem) -> Option<(usize, f64)> {
    fn sorted_names(p: &Problem) -> Vec<&str> {
        let mut v: Vec<&str> = p.dims.iter().map(|(n, _)| n.as_str()).collect();
        v.sort_unstable();
        v
    }
    let same_kind = sorted_names(entry) == sorted_names(problem)
        && Problem {
            dims: Vec::new(),
            args: Vec::new(),
            ..entry.clone()
        }
        .key()
            == Problem {
                dims: Vec::new(),
                args: Vec::new(),
                ..problem.clone()
            }
            .key();
    if !same_kind {
        return None;
    }
    let log = |n: i64| (n.max(1) as f64).log2();
    let mut other_buckets = 0;
    let mut far = 0.0;
    for (name, want) in &problem.dims {
        let have = entry.dim(name)?;
        if bucket(have) != bucket(*want) {
            other_buckets += 1;
        }
        far += (log(have) - log(*want)).abs();
    }
    Some((other_buckets, far))
}

impl ConfigTable {
    pub fn read(path: &Path) -> Result<ConfigTable, TableError> {
        let text = std::fs::read_to_string(path).map_err(|source| TableError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let table: ConfigTable =
            serde_json::from_str(&text).map_err(|source| TableError::Parse {
                path: path.to_path_buf(),
                source,
            })?;
        if table.format != TABLE_FORMAT {
            return Err(TableError::Format {
                path: path.to_path_buf(),
                found: table.format,
            });
        }
        Ok(table)
    }

    /// Writes the table as indented JSON.
    pub fn write(&self, path: &Path) -> Result<(), TableError> {
        let write_err = |source| TableError::Write {
            path: path.to_path_buf(),
            source,
        };
        let mut text =
            serde_json::to_string_pretty(self).map_err(|e| write_err(std::io::Error::other(e)))?;
        text.push('\n');
        std::fs::write(path, text).map_err(write_err)
    }

    /// The entries for this problem on this back end (and device, when given), nearest first:
    /// the problem's own entry (distance zero) before any other. Entries of other element
    /// types, layouts or dim names are left out.
    pub fn nearest(
        &self,
        problem: &Problem,
        backend: &str,
        device: Option<&str>,
    ) -> Vec<&ConfigEntry> {
        let mut ranked: Vec<((usize, f64), usize, &ConfigEntry)> = self
            .entries
            .iter()
            .enumerate()
            .filter(|(_, e)| e.backend == backend && device.is_none_or(|d| e.device == d))
            .filter_map(|(i, e)| Some((distance(&e.problem, problem)?, i, e)))
            .collect();
        ranked.sort_by(|a, b| {
            (a.0 .0)
                .cmp(&b.0 .0)
                .then(a.0 .1.total_cmp(&b.0 .1))
                .then(a.1.cmp(&b.1))
        });
        ranked.into_iter().map(|(_, _, e)| e).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use phobos_ir::{DType, MemOrder};

    fn gemm(m: i64, n: i64, k: i64) -> Problem {
        Problem {
            dims: vec![("M".into(), m), ("N".into(), n), ("K".into(), k)],
            ..Default::default()
        }
    }

    fn entry(p: Problem, config: &str) -> ConfigEntry {
        ConfigEntry {
            problem: p,
            device: "cpu-interpreter".into(),
            driver: "none".into(),
            compiler: "interp".into(),
            backend: "interp".into(),
            config: config.into(),
            codegen: Some("c".into()),
            median_ms: Some(1.0),
        }
    }

    fn table() -> ConfigTable {
        ConfigTable {
            format: TABLE_FORMAT.into(),
            kernel: "gemm".into(),
            kernel_hash: "h".into(),
            phobos_version: "0".into(),
            entries: vec![
                entry(gemm(16, 1024, 1024), "small-m"),
                entry(gemm(4096, 1024, 1024), "large-m"),
                entry(gemm(256, 1024, 1024), "mid-m"),
                entry(
                    Problem {
                        types: vec![("T".into(), DType::BF16)],
                        ..gemm(256, 1024, 1024)
                    },
                    "bf16",
                ),
                entry(
                    Problem {
                        layouts: vec![("B".into(), MemOrder::ColMajor)],
                        ..gemm(256, 1024, 1024)
                    },
                    "col-b",
                ),
            ],
        }
    }

    fn first(t: &ConfigTable, p: &Problem) -> Option<String> {
        t.nearest(p, "interp", None)
            .first()
            .map(|e| e.config.clone())
    }

    #[test]
    fn buckets_are_powers_of_two() {
        let got: Vec<u32> = [0, 1, 2, 3, 4, 5, 64, 65, 4096].map(bucket).to_vec();
        assert_eq!(got, [0, 0, 1, 2, 2, 3, 6, 7, 12]);
    }

    #[test]
    fn the_own_entry_then_the_nearest_bucket_wins() {
        let t = table();
        assert_eq!(first(&t, &gemm(256, 1024, 1024)).unwrap(), "mid-m");
        // 200 shares 256's bucket.
        assert_eq!(first(&t, &gemm(200, 1024, 1024)).unwrap(), "mid-m");
        assert_eq!(first(&t, &gemm(3000, 1024, 1024)).unwrap(), "large-m");
        assert_eq!(first(&t, &gemm(8, 1024, 1024)).unwrap(), "small-m");
        // No bucket matches M=64: the closest on a log scale (16 is 2 octaves away, 256 too;
        // the file's order breaks the tie).
        assert_eq!(first(&t, &gemm(64, 1024, 1024)).unwrap(), "small-m");
        // A mismatch in N counts as much as one in M.
        assert_eq!(first(&t, &gemm(256, 900, 1024)).unwrap(), "mid-m");
        let order: Vec<&str> = t
            .nearest(&gemm(300, 1024, 1024), "interp", None)
            .iter()
            .map(|e| e.config.as_str())
            .collect();
        assert_eq!(order, ["mid-m", "large-m", "small-m"]);
    }

    #[test]
    fn other_types_layouts_dims_backends_and_devices_are_never_picked() {
        let t = table();
        let bf16 = Problem {
            types: vec![("T".into(), DType::BF16)],
            ..gemm(100, 100, 100)
        };
        assert_eq!(first(&t, &bf16).unwrap(), "bf16");
        let col = Problem {
            layouts: vec![("B".into(), MemOrder::ColMajor)],
            ..gemm(100, 100, 100)
        };
        assert_eq!(first(&t, &col).unwrap(), "col-b");
        let two_dims = Problem {
            dims: vec![("M".into(), 256), ("N".into(), 1024)],
            ..Default::default()
        };
        assert_eq!(first(&t, &two_dims), None);
        assert!(t.nearest(&gemm(256, 1024, 1024), "cuda", None).is_empty());
        assert!(t
            .nearest(&gemm(256, 1024, 1024), "interp", Some("NVIDIA H200"))
            .is_empty());
    }

    #[test]
    fn tables_round_trip_and_other_formats_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.json");
        table().write(&path).unwrap();
        assert_eq!(ConfigTable::read(&path).unwrap(), table());
        let other = ConfigTable {
            format: "phobos-configs/9".into(),
            ..table()
        };
        other.write(&path).unwrap();
        let err = ConfigTable::read(&path).unwrap_err().to_string();
        assert_eq!(
            err,
            format!(
                "{} is a config table of format `phobos-configs/9`; this build reads \
                 `phobos-configs/1`",
                path.display()
            )
        );
        std::fs::write(&path, "[").unwrap();
        assert!(matches!(
            ConfigTable::read(&path),
            Err(TableError::Parse { .. })
        ));
    }
}
