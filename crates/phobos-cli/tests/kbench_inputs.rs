//! `phobos-kbench` against bad input and damaged state, on the interpreter back end: dims,
//! flags, outputs and sizes files refused before anything runs, a locked database, a huge
//! space, a damaged variant cache, no GPU; and `--dry-run` with NVRTC.

mod kbench_common;
mod kbench_workflow_common;

use kbench_common::*;
use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;

#[test]
fn dims_and_flags_out_of_range_are_refused_before_anything_runs() {
    let s = Scratch::new("limits");
    let f = example("gemm.ph");
    for (args, says) in [
        (
            vec!["-m", "9223372036854775807", "-n", "64", "-k", "64"],
            "the dim M=9223372036854775807 is out of range: a dim is 1 to 2147483647",
        ),
        (
            vec!["--dims", "M=2147483648,N=64,K=64", "--dry-run"],
            "the dim M=2147483648 is out of range",
        ),
        (
            vec![
                "-m",
                "2147483647",
                "-n",
                "2147483647",
                "-k",
                "2147483647",
                "--dry-run",
            ],
            "error: the tensors are too large: their size in bytes overflows",
        ),
        (
            vec!["--dims", "M=64,N=64,K=64", "--budget-ms", "inf"],
            "`inf` must be a finite number above 0",
        ),
        (
            vec!["--dims", "M=64,N=64,K=64", "--budget-ms", "1e300"],
            "`1e300` is more than 3600000 ms (an hour)",
        ),
        (
            vec!["--dims", "M=64,N=64,K=64", "--budget-ms", "nan"],
            "`nan` must be a finite number above 0",
        ),
        (
            vec!["--dims", "M=64,N=64,K=64", "--peak", "nan"],
            "`nan` must be a finite number above 0",
        ),
        (
            vec!["--dims", "M=64,N=64,K=64", "--jobs", "4294967296"],
            "`4294967296` is not a number of jobs from 1 to 1024",
        ),
    ] {
        let mut a = vec![f.as_str()];
        a.extend(&args);
        a.extend(INTERP);
        let r = kbench(&s, &a);
        assert_ne!(r.code, 0, "{args:?}");
        assert!(r.stderr.contains(says), "{args:?}: {}", r.stderr);
        assert!(!r.stderr.contains("panicked"), "{args:?}: {}", r.stderr);
    }
}

#[test]
fn outputs_and_databases_are_checked_before_the_run_and_named() {
    let s = Scratch::new("paths");
    let f = example("gemm.ph");
    let missing = s.0.join("no/such/folder/r.yaml");
    let dims = ["-m", "64", "-n", "64", "-k", "64", "--backend", "interp"];
    let mut a = vec![f.as_str(), "-o", missing.to_str().unwrap()];
    a.extend(dims);
    let r = kbench(&s, &a);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr
            .starts_with(&format!("error: cannot write {}: ", missing.display())),
        "{}",
        r.stderr
    );
    assert!(r.stdout.is_empty(), "nothing was tuned: {}", r.stdout);

    // Another program's SQLite file: two lines, its path, and the file left as it was.
    let foreign = s.0.join("notes.sqlite");
    rusqlite::Connection::open(&foreign)
        .unwrap()
        .execute_batch("CREATE TABLE notes (t TEXT); INSERT INTO notes VALUES ('keep');")
        .unwrap();
    let before = std::fs::read(&foreign).unwrap();
    let mut c = Command::new(bin());
    c.arg(&f)
        .args(dims)
        .arg("--db")
        .arg(&foreign)
        .env("XDG_CACHE_HOME", &s.0);
    let r = finish(c.output().unwrap());
    assert_eq!(r.code, 1);
    assert_eq!(
        r.stderr.trim(),
        format!(
            "error: {} is not a phobos results database (it holds the tables `notes`); it was \
             left as it is: pass another file with --db",
            foreign.display()
        )
    );
    assert_eq!(std::fs::read(&foreign).unwrap(), before);
}

#[test]
fn a_large_sizes_file_reports_its_one_bad_entry_with_few_lines() {
    let s = Scratch::new("big-sizes");
    let sizes = s.0.join("sizes.yaml");
    let mut text: String = (0..20_000)
        .map(|i| format!("- {{M: {}, N: 64, K: 64}}\n", 16 * (1 + i % 4)))
        .collect();
    text.push_str("- {M: 0, N: 64, K: 64}\n");
    std::fs::write(&sizes, text).unwrap();
    let r = kbench(
        &s,
        &[
            &example("gemm_tuned.ph"),
            "--sizes",
            sizes.to_str().unwrap(),
            "--dry-run",
            INTERP[0],
            INTERP[1],
        ],
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    // 19 996 repeats are warned about: 20 are shown, the rest counted.
    assert_eq!(
        r.stderr.matches("warning[W1002]").count(),
        20,
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains(&format!(
            "... and 19977 more diagnostics in {} (errors among them are listed below)",
            sizes.display()
        )),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains(&format!(
            "{}:20001: entry rejected: error[E1006]: M must be positive, not 0",
            sizes.display()
        )),
        "{}",
        r.stderr
    );
    assert!(r.stderr.len() < 10_000, "{} bytes", r.stderr.len());
}

#[test]
fn a_locked_database_is_waited_for_and_said() {
    let s = Scratch::new("locked");
    let f = example("partial_sums.ph");
    let args = [f.as_str(), "--dims", "N=256", INTERP[0], INTERP[1]];
    kbench_json(&s, &args);
    let lock = rusqlite::Connection::open(s.db()).unwrap();
    lock.execute_batch("BEGIN EXCLUSIVE").unwrap();
    let child = command(&s, &args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(2500));
    lock.execute_batch("COMMIT").unwrap();
    let r = finish(child.wait_with_output().unwrap());
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains(&format!(
            "waiting for the results database {}: another process holds its lock",
            s.db()
        )),
        "{}",
        r.stderr
    );
}

#[test]
fn a_huge_space_asks_for_a_bound_and_a_random_sample_runs_in_seconds() {
    let s = Scratch::new("huge");
    let f = data("huge_space.ph");
    let r = kbench(&s, &[&f, INTERP[0], INTERP[1]]);
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains(
            "the space has 68719476736 points, more than 65536 searched exhaustively; bound the \
             search with --max-points N"
        ),
        "{}",
        r.stderr
    );
    let start = std::time::Instant::now();
    let j = kbench_json(
        &s,
        &[
            &f,
            INTERP[0],
            INTERP[1],
            "--strategy",
            "random",
            "--max-points",
            "16",
        ],
    );
    assert!(start.elapsed().as_secs() < 60, "{:?}", start.elapsed());
    let points = j["points"].as_array().unwrap();
    assert_eq!(points.len(), 16, "{j:#}");
    // Points whose folded kernels are equal are timed once, as one binary.
    assert!(
        points
            .iter()
            .all(|p| p["status"] == "ok" || p["status"] == "duplicate"),
        "{j:#}"
    );
    assert!(points.iter().any(|p| p["status"] == "ok"), "{j:#}");
    assert!(j["winner"]["config"].is_string());
    let r = kbench(&s, &[&f, INTERP[0], INTERP[1], "--strategy", "random"]);
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains("--strategy random needs --max-points N"),
        "{}",
        r.stderr
    );
}

#[test]
fn a_wide_product_narrowed_by_its_wheres_is_searched_without_flags() {
    // 2^17 points declared, 18 inside the `@where` over names alone: no bound needed. The
    // `@where` over the problem then prunes A=1 at an odd N, as for any space.
    let s = Scratch::new("wide");
    let f = data("wide_space.ph");
    let j = kbench_json(&s, &[&f, INTERP[0], INTERP[1], "--dims", "N=99"]);
    let points = j["points"].as_array().unwrap();
    assert_eq!(points.len(), 18, "{j:#}");
    let pruned: Vec<&Value> = points.iter().filter(|p| p["status"] == "pruned").collect();
    assert_eq!(pruned.len(), 1, "{j:#}");
    assert!(
        pruned[0]["config"].as_str().unwrap().starts_with("A=1 "),
        "{j:#}"
    );
    assert!(j["winner"]["config"].is_string());
    // `phobos space` counts the same points inside.
    let out = Command::new(env!("CARGO_BIN_EXE_phobos"))
        .args(["space", &f, "--json"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (v["size"].as_u64(), v["inside"].as_u64()),
        (Some(1 << 17), Some(18))
    );
}

#[test]
fn a_damaged_variant_cache_is_compiled_again_and_said() {
    if !nvrtc_available() {
        eprintln!("skipped: NVRTC not found (eval \"$(scripts/cuda-tools.sh)\")");
        return;
    }
    let s = Scratch::new("damaged");
    let args = [&example("partial_sums.ph"), "--dims", "N=4096", "--dry-run"];
    let first = kbench_json(&s, &args);
    let dir = s.0.join("phobos/variants");
    let bins: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "bin"))
        .collect();
    assert_eq!(bins.len(), 4, "{bins:?}");
    // Emptied, truncated, overwritten with noise, and one left alone.
    std::fs::write(&bins[0], b"").unwrap();
    let whole = std::fs::read(&bins[1]).unwrap();
    std::fs::write(&bins[1], &whole[..whole.len() / 2]).unwrap();
    std::fs::write(
        &bins[2],
        (0..4096u32)
            .map(|i| (i * 7919 % 251) as u8)
            .collect::<Vec<_>>(),
    )
    .unwrap();
    let r = kbench(&s, &args);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stderr.matches("was damaged").count(), 3, "{}", r.stderr);
    assert!(r.stderr.contains("compiled it again"), "{}", r.stderr);
    let again = kbench_json(&s, &args);
    let statuses = |j: &Value| -> Vec<String> {
        j["points"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| format!("{} {}", p["config"], p["status"]))
            .collect()
    };
    assert_eq!(statuses(&again), statuses(&first));
    assert_eq!(
        std::fs::read(&bins[1]).unwrap(),
        whole,
        "the entry is repaired"
    );
}

#[test]
fn without_a_gpu_it_says_so_in_one_line() {
    if std::env::var_os("PHOBOS_HAVE_GPU").is_some() {
        return;
    }
    let s = Scratch::new("nogpu");
    let r = kbench(&s, &[&example("partial_sums.ph"), "--dims", "N=256"]);
    assert_eq!(r.code, 1);
    let lines: Vec<&str> = r.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{}", r.stderr);
    assert!(
        lines[0].starts_with("error: no GPU found ("),
        "{}",
        r.stderr
    );
    assert!(lines[0].contains("--backend interp") && lines[0].contains("--dry-run"));
}

fn nvrtc_available() -> bool {
    let ok = phobos_gpu::nvrtc::nvrtc_version().is_ok();
    if !ok && std::env::var_os("PHOBOS_REQUIRE_NVRTC").is_some() {
        panic!("NVRTC is required (PHOBOS_REQUIRE_NVRTC) but not found");
    }
    ok
}

#[test]
fn dry_run_compiles_every_point_of_the_examples_with_nvrtc() {
    if !nvrtc_available() {
        eprintln!("skipped: NVRTC not found (eval \"$(scripts/cuda-tools.sh)\")");
        return;
    }
    let s = Scratch::new("dry");
    for (file, dims, points) in [
        ("gemm.ph", "M=128,N=128,K=64", 27),
        ("partial_sums.ph", "N=4096", 4),
    ] {
        let j = kbench_json(&s, &[&example(file), "--dims", dims, "--dry-run"]);
        assert_eq!(j["dry_run"], true);
        let all = j["points"].as_array().unwrap();
        assert_eq!(all.len(), points);
        for p in all {
            assert!(
                ["compiled", "duplicate"].contains(&p["status"].as_str().unwrap()),
                "{p}"
            );
            let r = &p["resources"];
            assert!(r["registers"].as_u64().unwrap() > 0, "{p}");
            assert!(
                r["occupancy"]["active_warps_per_sm"].as_u64().unwrap() > 0,
                "{p}"
            );
            assert!(r["occupancy"]["limiter"].is_string());
        }
        assert_eq!(j["dry_run_check"]["error"], Value::Null, "{j:#}");
        assert!(j["compiler"].as_str().unwrap().starts_with("nvrtc "));
    }
}
