//! The example a user runs first (`cargo run -p phobos --example first_use -- --backend interp
//! --db PATH`), run twice on the interpreter: the first run tunes and prints `tuned: <config>`,
//! the second finds the winner stored and prints `cached: <config>` with the same config,
//! measuring nothing. On the GPU (ignored without one) the same with `--backend cuda`.

use std::path::PathBuf;
use std::process::Command;

/// The example's binary beside this test's, as `cargo build --examples` leaves it (test.sh builds
/// the examples first: `cargo test --all-targets` alone builds them only as test harnesses).
fn example() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap().parent().unwrap();
    let p = dir
        .join("examples")
        .join(format!("first_use{}", std::env::consts::EXE_SUFFIX));
    assert!(
        p.exists(),
        "{} is missing: run ./test.sh, or cargo build -p phobos --examples first",
        p.display()
    );
    p
}

/// Runs the example; `(exit code, stdout, stderr)`.
fn first_use(backend: &str, db: &str, cache: &std::path::Path) -> (i32, String, String) {
    let o = Command::new(example())
        .args(["--backend", backend, "--db", db])
        .env("XDG_CACHE_HOME", cache)
        .env_remove(phobos_tune::backend::GENERATOR_TAG_ENV)
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn tuned_then_cached(backend: &str) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("first.sqlite").display().to_string();
    let (code, out, err) = first_use(backend, &db, dir.path());
    assert_eq!(code, 0, "{err}");
    let config = out
        .strip_prefix("tuned: ")
        .unwrap_or_else(|| panic!("{out}"))
        .trim_end()
        .to_string();
    assert!(config.contains("TILE_M="), "{config}");
    let rows = phobos_tune::Store::open(std::path::Path::new(&db))
        .unwrap()
        .measurement_count()
        .unwrap();
    assert!(rows > 0);

    let (code, out, err) = first_use(backend, &db, dir.path());
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, format!("cached: {config}\n"));
    let after = phobos_tune::Store::open(std::path::Path::new(&db))
        .unwrap()
        .measurement_count()
        .unwrap();
    assert_eq!(after, rows, "the second run measures nothing");
}

#[test]
fn first_use_tunes_then_reuses_on_the_interpreter() {
    tuned_then_cached("interp");
}

#[test]
#[ignore = "needs a GPU"]
fn first_use_tunes_then_reuses_on_the_gpu() {
    tuned_then_cached("cuda");
}
