//! The `phobos` binary: exit codes and output of `check` and `space`.

use std::path::PathBuf;
use std::process::{Command, Output};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn phobos(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_phobos"))
        .args(args)
        .current_dir(root())
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn examples() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(root().join("examples"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "ph"))
        .map(|p| format!("examples/{}", p.file_name().unwrap().to_string_lossy()))
        .collect();
    v.sort();
    v
}

#[test]
fn every_example_checks_clean() {
    let files = examples();
    assert!(files.len() >= 7, "{files:?}");
    let args: Vec<&str> = std::iter::once("check")
        .chain(files.iter().map(String::as_str))
        .collect();
    let out = phobos(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stderr(&out).trim(), "0 errors, 0 warnings");
}

#[test]
fn space_json_of_the_seed_gemm() {
    let out = phobos(&["space", "examples/gemm.ph", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().count(), 1);
    let v: serde_json::Value = serde_json::from_str(text.trim()).unwrap();
    assert_eq!(v["kernel"], "gemm");
    assert_eq!(v["size"], 27);
    assert_eq!(
        v["default"],
        serde_json::json!({"TILE_M": 32, "TILE_N": 32, "TILE_K": 8})
    );
    assert_eq!(
        v["names"][0],
        serde_json::json!({"name": "TILE_M", "choices": [32, 64, 128]})
    );
    assert_eq!(v["names"][2]["choices"], serde_json::json!([8, 16, 32]));
    // Names keep declaration order in `default` too.
    assert!(text.find("\"TILE_M\":32").unwrap() < text.find("\"TILE_K\":8").unwrap());
}

#[test]
fn space_text_and_pins() {
    let out = phobos(&[
        "space",
        "examples/gemm.ph",
        "--autotune",
        "TILE_M=64,TILE_K=16",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("TILE_M   64\n"), "{text}");
    assert!(text.contains("TILE_N   32, 64, 128\n"), "{text}");
    assert!(text.contains("size     3 points\n"), "{text}");
    assert!(
        text.contains("default  TILE_M=64 TILE_N=32 TILE_K=16"),
        "{text}"
    );
}

#[test]
fn space_rejects_undeclared_pins() {
    let out = phobos(&["space", "examples/gemm.ph", "--autotune", "M=64"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out)
            .contains("`M` is not declared in @autotune (declared: TILE_M, TILE_N, TILE_K)"),
        "{}",
        stderr(&out)
    );
    let out = phobos(&["space", "examples/gemm.ph", "--kernel", "nope"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("has no kernel `nope` (kernels: gemm)"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn check_reports_errors_with_exit_1() {
    let dir = std::env::temp_dir().join(format!("phobos-cli-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.ph");
    std::fs::write(
        &bad,
        "@fast\nkernel k(X: tensor<f32>[N]) {\n  X[0] = y\n}\n",
    )
    .unwrap();
    let out = phobos(&["check", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("error[E0401]: unknown name `y`"), "{err}");
    assert!(err.contains("warning[W0001]"), "{err}");
    assert!(err.trim_end().ends_with("1 error, 1 warning"), "{err}");
    assert!(
        !err.contains('\u{1b}'),
        "no colour when stderr is not a terminal"
    );
    let warn_only = dir.join("warn.ph");
    std::fs::write(
        &warn_only,
        "@fast\nkernel k(X: tensor<f32>[N]) {\n  X[0] = 1.0\n}\n",
    )
    .unwrap();
    let out = phobos(&["check", warn_only.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "warnings alone exit 0: {}",
        stderr(&out)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn unreadable_files_exit_1() {
    let out = phobos(&["check", "examples/does-not-exist.ph", "examples/gemm.ph"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("error: cannot read examples/does-not-exist.ph"),
        "{}",
        stderr(&out)
    );
    assert!(stderr(&out).trim_end().ends_with("1 error, 0 warnings"));
    let out = phobos(&["space", "examples/does-not-exist.ph"]);
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn emit_specializes_on_the_dims_it_is_given() {
    let args = [
        "emit",
        "examples/gemm_fast.ph",
        "--types",
        "TA=f16,TB=f16,TC=f16",
    ];
    // As declared, no leading dimension is known to be 16-byte aligned: no TMA.
    let plain = phobos(&args);
    assert!(plain.status.success(), "{}", stderr(&plain));
    let text = String::from_utf8_lossy(&plain.stdout);
    assert!(!text.contains("ph::gemm::sm90::MainLoop<"), "{text}");
    // On a 4096^3 problem, as the tuner compiles it: the Hopper main loop.
    let aligned = phobos(&[&args[..], &["--dims", "M=4096,N=4096,K=4096"]].concat());
    assert!(aligned.status.success(), "{}", stderr(&aligned));
    let text = String::from_utf8_lossy(&aligned.stdout);
    assert!(text.contains("ph::gemm::sm90::MainLoop<"), "{text}");

    let bad = phobos(&[&args[..], &["--dims", "M=64,Q=3"]].concat());
    assert_eq!(bad.status.code(), Some(1));
    let err = stderr(&bad);
    assert!(
        err.contains("`Q` is not a runtime dim of `gemm_fast`"),
        "{err}"
    );
    assert!(err.contains("M, K, N") || err.contains("M, N, K"), "{err}");
    let bad = phobos(&[&args[..], &["--dims", "M=big"]].concat());
    assert!(stderr(&bad).contains("`M=big` in --dims is not of the form NAME=INTEGER"));
}

#[test]
fn emit_refuses_a_problem_the_point_cannot_run() {
    let args = [
        "emit",
        "examples/softmax.ph",
        "--autotune",
        "ROWS=1 BLOCK=8192 THREADS=256 MIN_BLOCKS=1",
    ];
    // Rows of 9000 do not fit one 8192-wide tile: `phobos run` refuses it, so does emit, at
    // the constraint.
    let out = phobos(&[&args[..], &["--dims", "M=64,N=9000"]].concat());
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("error[E0207]: the problem violates @where(N <= 8192)"),
        "{err}"
    );
    assert!(err.contains("examples/softmax.ph:7:8"), "{err}");
    assert!(err.contains("false for N=9000"), "{err}");
    // A problem that fits, and dims that leave the constraint unread, emit.
    for dims in ["M=64,N=8192", "M=64"] {
        let out = phobos(&[&args[..], &["--dims", dims]].concat());
        assert!(out.status.success(), "{dims}: {}", stderr(&out));
    }
}

/// The first line of a successful run's output (`phobos emit`'s launch line).
fn first_line(args: &[&str]) -> String {
    let out = phobos(args);
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.lines().next().unwrap_or_default().to_string()
}

#[test]
fn emit_gives_the_grid_of_the_problem_it_is_given() {
    let args = [
        "emit",
        "examples/transpose.ph",
        "--autotune",
        "TILE_R=128 TILE_C=64 TILES=2 THREADS=512 AHEAD=2",
    ];
    let launch = |dims: &[&str]| first_line(&[&args[..], dims].concat());
    // `@grid(cdiv(M, TILE_R * TILES), cdiv(N, TILE_C))` at 8191 x 8193: 32 x 129 blocks, and the
    // launch has those.
    assert_eq!(
        launch(&["--dims", "M=8191,N=8193"]),
        "// launch: 512 threads, 33280 bytes of dynamic shared memory, @grid (32, 129, 1), \
         blocks (32, 129, 1)"
    );
    // Without every dim the grid reads (or without --dims), no grid.
    let partial = "// launch: 512 threads, 33280 bytes of dynamic shared memory";
    assert_eq!(launch(&["--dims", "M=8191"]), partial);
    assert_eq!(launch(&[]), partial);
}

#[test]
fn emit_gives_the_blocks_the_launch_has() {
    // ROW_SPLIT=2: each instance of the kernel's grid a cluster of two blocks along x.
    assert_eq!(
        first_line(&[
            "emit",
            "examples/softmax_row.ph",
            "--types",
            "T=bf16",
            "--dims",
            "M=2048,N=50257",
            "--autotune",
            "BLOCK=57344 THREADS=512 PACK=4 ROW_SMEM=0 ROWS_AHEAD=0 ROW_SPLIT=2 ONE_PASS=1",
        ]),
        "// launch: 512 threads, 1840 bytes of dynamic shared memory, @grid (2048, 1, 1), \
         blocks (4096, 1, 1), clusters (2, 1, 1)"
    );
    // A persistent walk in clusters of two: 24 x 8 tiles (x rounded to whole clusters), one
    // block a tile at most, the logical grid passed to the kernel.
    assert_eq!(
        first_line(&[
            "emit",
            "examples/gemm_persistent.ph",
            "--dims",
            "M=3000,N=2000,K=1024",
            "--autotune",
            "TILE_M=128 TILE_N=256 TILE_K=64 STAGES=4 GROUP_M=8 SCHEDULE=2 CLUSTER=2",
        ]),
        "// launch: 288 threads, 231488 bytes of dynamic shared memory, @grid (24, 8, 1), \
         blocks (192, 1, 1), clusters (2, 1, 1), persistent over (24, 8)"
    );
    // A problem whose launch would exceed 2^31 - 1 blocks along x: said, not launched.
    assert_eq!(
        first_line(&[
            "emit",
            "examples/softmax_row.ph",
            "--types",
            "T=bf16",
            "--dims",
            "M=1073741824,N=50257",
            "--autotune",
            "BLOCK=57344 THREADS=512 PACK=4 ROW_SMEM=0 ROWS_AHEAD=0 ROW_SPLIT=2 ONE_PASS=1",
        ]),
        "// launch: 512 threads, 1840 bytes of dynamic shared memory, @grid (1073741824, 1, 1), \
         no launch: the grid: x = 1073741824 blocks of 2 (ROW_SPLIT) exceeds 2^31 - 1 or meets \
         another cluster"
    );
    // SPLIT_K=2 reduced in a cluster along z: the parts are the grid's z.
    assert_eq!(
        first_line(&[
            "emit",
            "examples/gemm_small.ph",
            "--dims",
            "M=512,N=512,K=4096",
            "--autotune",
            "TILE_M=64 TILE_N=64 TILE_K=64 THREADS=160 STAGES=8 SPLIT_K=2 SCHEDULE=1 GROUP_M=1 \
             SPLIT_REDUCE=4 CLUSTER=1 VEC_COPY=1",
        ]),
        "// launch: 160 threads, 132224 bytes of dynamic shared memory, @grid (8, 8, 1), \
         blocks (8, 8, 2), clusters (1, 1, 2)"
    );
}

#[test]
fn space_takes_several_files_and_shows_choice_sets() {
    let out = phobos(&["space", "examples/saxpy.ph", "examples/missing.ph"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("cannot read examples/missing.ph"),
        "{}",
        stderr(&out)
    );
    let dir = std::env::temp_dir().join(format!("phobos-space-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let flags = dir.join("flags.ph");
    std::fs::write(
        &flags,
        "@autotune(CAUSAL in {1, 0}, D in [64, 64], GROUP_M in {8, 1, 4})\n\
         kernel k(X: tensor<f32>[N]) {\n  X[0] = 0.0\n}\n",
    )
    .unwrap();
    let flags = flags.display().to_string();
    let out = phobos(&["space", "examples/saxpy.ph", &flags, "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert_eq!(lines[0]["file"], "examples/saxpy.ph");
    assert_eq!(lines[0]["kernel"], "saxpy");
    assert_eq!(lines[1]["file"], flags.as_str());
    assert_eq!(
        lines[1]["names"],
        serde_json::json!([
            {"name": "CAUSAL", "choices": [1, 0]},
            {"name": "D", "choices": [64]},
            {"name": "GROUP_M", "choices": [8, 1, 4]},
        ])
    );
    assert_eq!(lines[1]["size"], 6);
    assert_eq!(
        lines[1]["default"],
        serde_json::json!({"CAUSAL": 1, "D": 64, "GROUP_M": 8})
    );
    // --kernel picks the kernel out of whichever file has it.
    let out = phobos(&["space", "examples/saxpy.ph", &flags, "--kernel", "k"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with(&format!("# {flags}\n")), "{text}");
    assert!(!text.contains("saxpy"), "{text}");
    let out = phobos(&["space", "examples/saxpy.ph", &flags, "--kernel", "nope"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("no file has a kernel `nope`"),
        "{}",
        stderr(&out)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `phobos-kbench` searches a space exhaustively only up to 65536 points (beyond that it asks
/// for --max-points or pins), so every example must stay under it to tune without flags.
#[test]
fn every_example_space_tunes_without_flags() {
    for file in examples() {
        let out = phobos(&["space", &file, "--json"]);
        assert!(out.status.success(), "{file}: {}", stderr(&out));
        for line in String::from_utf8(out.stdout).unwrap().lines() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            // A wide product counts the points inside its `@where`s over names alone.
            let size = v["inside"].as_u64().or(v["size"].as_u64()).expect("a size");
            assert!(
                size <= 1 << 16,
                "{file} {}: {size} points, more than an exhaustive search takes",
                v["kernel"]
            );
        }
    }
}

/// A reader that closes the pipe before the output comes (`phobos emit ... | head -0`): a quiet
/// exit 0, not a panic on the failed write.
#[test]
fn a_closed_pipe_ends_quietly() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_phobos"))
        .args([
            "emit",
            "examples/softmax_row.ph",
            "--types",
            "T=bf16",
            "--dims",
            "M=2048,N=50257",
            "--autotune",
            "BLOCK=57344 THREADS=1024 PACK=4",
        ])
        .current_dir(root())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

/// Help and version text that cannot be written says so and exits 1, for both tools (clap's own
/// exit reports success); a usage error still exits 2.
#[cfg(target_os = "linux")]
#[test]
fn help_to_a_full_disk_is_an_error() {
    for (bin, args) in [
        (env!("CARGO_BIN_EXE_phobos"), &["--help"][..]),
        (env!("CARGO_BIN_EXE_phobos"), &["emit", "--help"][..]),
        (env!("CARGO_BIN_EXE_phobos"), &["--version"][..]),
        (env!("CARGO_BIN_EXE_phobos-kbench"), &["--help"][..]),
    ] {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let out = Command::new(bin).args(args).stdout(full).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", stderr(&out));
        assert_eq!(
            stderr(&out).trim(),
            "error: writing to standard output: No space left on device (os error 28)",
            "{args:?}"
        );
    }
    let out = Command::new(env!("CARGO_BIN_EXE_phobos"))
        .arg("--bogus")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("unexpected argument '--bogus'"),
        "{}",
        stderr(&out)
    );
}

/// Output that cannot be written (a full disk) says so and exits 1.
#[cfg(target_os = "linux")]
#[test]
fn a_full_disk_is_an_error() {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_phobos"))
        .args(["space", "examples/gemm.ph"])
        .current_dir(root())
        .stdout(full)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(
        stderr(&out).trim(),
        "error: writing to standard output: No space left on device (os error 28)"
    );
}
