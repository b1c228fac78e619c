//! Helpers shared by the workflow tests: the binary under test, scratch folders, data files.

#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Output};

/// The binary under test. On the GPU machine the test binaries run from a bundle, away from
/// the build's paths: `PHOBOS_KBENCH_BIN` (or `.gpu-bundle/bin/phobos-kbench` under the current
/// folder) names it there.
pub fn bin() -> PathBuf {
    if let Some(p) = std::env::var_os("PHOBOS_KBENCH_BIN") {
        return PathBuf::from(p);
    }
    let built = PathBuf::from(env!("CARGO_BIN_EXE_phobos-kbench"));
    if built.exists() {
        built
    } else {
        PathBuf::from(".gpu-bundle/bin/phobos-kbench")
    }
}

/// This crate's folder: where it was built, or `crates/phobos-cli` under the current folder
/// (the repository root on the GPU machine).
pub fn crate_dir() -> PathBuf {
    let built = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    if built.exists() {
        built
    } else {
        PathBuf::from("crates/phobos-cli")
    }
}

/// A scratch folder removed on drop (the cache, the database and the files of one test).
pub struct Scratch(pub PathBuf);

impl Scratch {
    pub fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("kbwf-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    pub fn db(&self) -> String {
        self.path("kb.sqlite")
    }

    pub fn path(&self, name: &str) -> String {
        self.0.join(name).display().to_string()
    }

    /// Writes a file into the folder and returns its path.
    pub fn file(&self, name: &str, text: &str) -> String {
        let p = self.path(name);
        std::fs::write(&p, text).unwrap();
        p
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A data file of these tests.
pub fn data(name: &str) -> String {
    crate_dir()
        .join("tests/kbench_workflow")
        .join(name)
        .display()
        .to_string()
}

pub fn example(name: &str) -> String {
    crate_dir()
        .join("../../examples")
        .join(name)
        .display()
        .to_string()
}

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// Both streams, for failure messages.
    pub fn all(&self) -> String {
        format!(
            "exit {}\n--- stdout\n{}\n--- stderr\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

fn finish(o: Output) -> Run {
    Run {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

pub fn command(s: &Scratch, args: &[&str]) -> Command {
    let mut c = Command::new(bin());
    c.args(args)
        .args(["--db", &s.db()])
        .env("XDG_CACHE_HOME", &s.0)
        .env_remove("PHOBOS_KBENCH_ABORT_AT")
        .env_remove("PHOBOS_KBENCH_HANG_AT")
        .env_remove("PHOBOS_KBENCH_CORRUPT_AT");
    c
}

/// `kbench` with a worker test hook set, e.g. `("PHOBOS_KBENCH_CORRUPT_AT", "TILE_M=32 ...")`.
pub fn kbench_with(s: &Scratch, args: &[&str], env: (&str, &str)) -> Run {
    finish(command(s, args).env(env.0, env.1).output().unwrap())
}

pub fn kbench(s: &Scratch, args: &[&str]) -> Run {
    finish(command(s, args).output().unwrap())
}

/// The space of examples/gemm_tuned.ph narrowed for the interpreter: TILE_K, SPLIT_K searched.
pub const TUNED_PINS: &str = "TILE_M=32 TILE_N=32 STAGES=3 GROUP_M=1";

/// One row of the benchmark table: `trans M N K TFLOPS Efficiency [cuBLAS]`.
#[derive(Debug)]
pub struct TableRow {
    pub trans: String,
    pub dims: (i64, i64, i64),
    pub tflops: f64,
    pub efficiency: f64,
    pub cublas: Option<f64>,
}

/// Parses the rows under each `trans    M ...` header.
pub fn table_rows(stdout: &str) -> Vec<TableRow> {
    let mut rows = Vec::new();
    let mut in_table = false;
    for line in stdout.lines() {
        if line.starts_with("trans") {
            in_table = true;
            continue;
        }
        if !in_table || line.trim().is_empty() || line.starts_with("Benchmarking") {
            in_table = false;
            continue;
        }
        let f: Vec<&str> = line.split_whitespace().collect();
        assert!(f.len() == 6 || f.len() == 7, "a table row: {line}");
        let int = |s: &str| s.parse::<i64>().unwrap_or_else(|_| panic!("{s} in {line}"));
        rows.push(TableRow {
            trans: f[0].to_string(),
            dims: (int(f[1]), int(f[2]), int(f[3])),
            tflops: f[4]
                .parse()
                .unwrap_or_else(|_| panic!("{} in {line}", f[4])),
            efficiency: f[5]
                .strip_suffix('%')
                .and_then(|e| e.parse().ok())
                .unwrap_or_else(|| panic!("{} in {line}", f[5])),
            cublas: f.get(6).and_then(|c| c.parse().ok()),
        });
    }
    rows
}
