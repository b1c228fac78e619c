//! The command line fuzzed with a fixed seed: `phobos run --interpret` and `phobos-kbench
//! --backend interp --dry-run` with flags drawn from values that have broken them before (huge,
//! negative, NaN, infinite, malformed). Every run must end with an exit code of 0, 1 or 2, never
//! a panic, a signal or a hang. The seed is fixed so that CI runs the same cases every time; set
//! `PHOBOS_FUZZ_SEED` to explore others.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Values each flag is tried with. Dims stay tiny or near i32::MAX (never in between: a valid
/// mid-sized problem would be run, slowly, on the interpreter).
const NUMBERS: [&str; 16] = [
    "0",
    "-1",
    "1",
    "16",
    "64",
    "2147483647",
    "2147483648",
    "4294967296",
    "9223372036854775807",
    "99999999999999999999",
    "nan",
    "inf",
    "-inf",
    "1e300",
    "",
    "x",
];

/// (flag, how its value is built from a number) for each binary.
const RUN_FLAGS: [(&str, &str); 6] = [
    ("--dims", "N={}"),
    ("--dims", "N={},N=16"),
    ("--arg", "s={}"),
    ("--seed", "{}"),
    ("--autotune", "B={}"),
    ("--types", "T={}"),
];

const KBENCH_FLAGS: [(&str, &str); 13] = [
    ("--dims", "N={}"),
    ("-m", "{}"),
    ("--jobs", "{}"),
    ("--budget-ms", "{}"),
    ("--peak", "{}"),
    ("--max-points", "{}"),
    ("--strategy", "random"),
    ("--autotune", "B={}"),
    ("--seed", "{}"),
    ("--gpus", "{}"),
    ("--layout", "X={}"),
    ("--shard", "{}/4"),
    ("--shards", "{}"),
];

use phobos_ir::rng::SplitMix64;

fn kernel() -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz/square.ph");
    p.display().to_string()
}

/// One to three flags with drawn values.
fn draw(rng: &mut SplitMix64, flags: &[(&str, &str)]) -> Vec<String> {
    let mut out = Vec::new();
    for _ in 0..1 + rng.next_u64() % 3 {
        let (flag, form) = flags[(rng.next_u64() % flags.len() as u64) as usize];
        out.push(flag.to_string());
        out.push(form.replace("{}", rng.pick::<&str>(&NUMBERS)));
    }
    out
}

/// Runs one command to its end (at most a minute) and checks how it ended.
fn judge(mut c: Command, case: &str) {
    let mut child = c
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("{case}: still running after a minute");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
    let code = status.code();
    assert!(
        matches!(code, Some(0..=2)),
        "{case}: ended with {status} (a signal or an unexpected code)\n{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{case}: panicked\n{stderr}");
    if code != Some(0) {
        assert!(
            stderr.contains("error"),
            "{case}: failed without saying why\n{stderr}"
        );
    }
}

#[test]
fn the_command_line_never_panics_on_drawn_flags() {
    let seed = std::env::var("PHOBOS_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(22);
    let mut rng = SplitMix64(seed);
    let scratch = std::env::temp_dir().join(format!("phobos-cli-fuzz-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).unwrap();
    for i in 0..24 {
        let args = draw(&mut rng, &RUN_FLAGS);
        let mut c = Command::new(env!("CARGO_BIN_EXE_phobos"));
        c.args(["run", &kernel(), "--interpret"]).args(&args);
        if !args.iter().any(|a| a == "--dims") {
            c.args(["--dims", "N=16"]);
        }
        judge(c, &format!("seed {seed} case {i}: phobos run {args:?}"));

        let args = draw(&mut rng, &KBENCH_FLAGS);
        let mut c = Command::new(env!("CARGO_BIN_EXE_phobos-kbench"));
        c.arg(kernel())
            .args(["--backend", "interp", "--dry-run"])
            .args(&args)
            .arg("--db")
            .arg(scratch.join("kb.sqlite"))
            .env("XDG_CACHE_HOME", &scratch);
        // The shard comes from the flags alone, not from a scheduler running the tests.
        for var in [
            "SLURM_ARRAY_TASK_ID",
            "SLURM_ARRAY_TASK_MIN",
            "SLURM_ARRAY_TASK_COUNT",
            "JOB_COMPLETION_INDEX",
        ] {
            c.env_remove(var);
        }
        if !args.iter().any(|a| a == "--dims" || a == "-m") {
            c.args(["--dims", "N=16"]);
        }
        judge(c, &format!("seed {seed} case {i}: phobos-kbench {args:?}"));
    }
    let _ = std::fs::remove_dir_all(&scratch);
}
