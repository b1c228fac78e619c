//! Helpers of the phobos-kbench tests on the kernels of tests/kbench/: the command under
//! test with its own database and cache, its output, and the points of a `--json` report.

#![allow(dead_code)]

pub use crate::kbench_workflow_common::{bin, crate_dir, example, Scratch};
use serde_json::Value;
use std::process::{Command, Output};

/// A kernel file of these tests.
pub fn data(name: &str) -> String {
    let p = crate_dir().join("tests/kbench").join(name);
    p.display().to_string()
}

/// phobos-kbench with the scratch folder's database and cache, and no worker test hook.
pub fn command(s: &Scratch, args: &[&str]) -> Command {
    let mut c = Command::new(bin());
    c.args(args)
        .args(["--db", &s.db()])
        .env("XDG_CACHE_HOME", &s.0)
        .env_remove(phobos_tune::worker::ABORT_HOOK)
        .env_remove(phobos_tune::worker::HANG_HOOK)
        .env_remove(phobos_tune::worker::CORRUPT_HOOK)
        .env_remove(phobos_tune::backend::GENERATOR_TAG_ENV);
    c
}

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

pub fn finish(o: Output) -> Run {
    Run {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

pub fn kbench(s: &Scratch, args: &[&str]) -> Run {
    finish(command(s, args).output().unwrap())
}

/// Runs with `--json` and parses stdout.
pub fn kbench_json(s: &Scratch, args: &[&str]) -> Value {
    let mut a = args.to_vec();
    a.push("--json");
    let r = kbench(s, &a);
    assert_eq!(r.code, 0, "stderr:\n{}\nstdout:\n{}", r.stderr, r.stdout);
    serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {}", r.stdout))
}

pub fn point<'a>(j: &'a Value, config: &str) -> &'a Value {
    j["points"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["config"] == config)
        .unwrap_or_else(|| panic!("no point {config} in {j:#}"))
}

pub const INTERP: [&str; 2] = ["--backend", "interp"];
