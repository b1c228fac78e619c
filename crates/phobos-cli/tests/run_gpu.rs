//! `phobos run` on the GPU against `phobos run --interpret`, end to end through the binary.
//! Ignored by default (they need a GPU); scripts/gpu-check.sh runs them on the GPU machine:
//!
//! ```text
//! cargo test --release -p phobos-cli --test run_gpu -- --ignored --test-threads=1
//! ```
//!
//! The binary and the repository are found where they were built, else through
//! `PHOBOS_BIN` / `PHOBOS_ROOT` (set by scripts/gpu-check.sh, where the repository lives at
//! another path and the binary comes from `.gpu-bundle/bin`).

use phobos_ir::npy::read_npy;
use phobos_ir::relative_error;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Ragged runtime dims (no tile divides them) and scalar arguments for every example, at its
/// default point (where a `@where` needs a multiple, the smallest that is not a power of two).
const EXAMPLES: &[(&str, &str, &[&str])] = &[
    ("activations.ph", "N=1000", &[]),
    ("attention_lse.ph", "BH=3,N=45", &["scale=0.125"]),
    ("cross_entropy.ph", "M=7,V=5003", &[]),
    ("dropout.ph", "N=1000", &["p=0.25", "seed=7"]),
    ("flash_attention.ph", "BH=3,N=45", &["scale=0.125"]),
    ("flash_attention_d128.ph", "BH=2,N=45", &["scale=0.125"]),
    ("gemm.ph", "M=77,N=45,K=67", &[]),
    ("gemm_fast.ph", "M=77,N=45,K=67", &[]),
    ("gemm_persistent.ph", "M=77,N=45,K=67", &[]),
    ("gemm_small.ph", "M=77,N=45,K=67", &[]),
    ("gemm_tuned.ph", "M=77,N=65,K=192", &[]),
    ("gemm_typed.ph", "M=77,N=45,K=72", &[]),
    ("histogram.ph", "N=1000,BINS=7", &[]),
    ("layer_norm.ph", "M=7,N=300", &["eps=0.00001"]),
    ("layer_norm_backward.ph", "M=7,N=200", &[]),
    ("layer_norm_tiles.ph", "M=7,N=200", &["eps=0.00001"]),
    ("matmul_leaky_relu.ph", "M=77,N=45,K=67", &[]),
    ("partial_sums.ph", "N=1000", &[]),
    ("rms_norm.ph", "M=7,N=301", &["eps=0.000001"]),
    ("row_stats.ph", "M=7,N=45", &[]),
    ("saxpy.ph", "N=1000", &["a=0.5"]),
    ("sgemm.ph", "M=77,N=45,K=67", &[]),
    ("softmax.ph", "M=7,N=45", &[]),
    ("softmax_online.ph", "M=5,N=3001", &[]),
    ("softmax_row.ph", "M=5,N=3001", &[]),
    ("transpose.ph", "M=77,N=45", &[]),
];

/// The largest tiles of every example (each pinned name at its largest choice; the others at
/// their defaults where a larger value would violate a `@where` at these dims), with dims that
/// are ragged where the kernel allows it.
const LARGEST: &[(&str, &str, &str)] = &[
    ("activations.ph", "BLOCK=1024", "N=1000"),
    ("attention_lse.ph", "BR=128 BC=128 CAUSAL=1", "BH=3,N=45"),
    (
        "cross_entropy.ph",
        "BLOCK=57344 THREADS=1024 WHOLE=1 PACK=4",
        "M=7,V=5003",
    ),
    ("dropout.ph", "BLOCK=1024", "N=1000"),
    // BR=192 (three consumer warpgroups): PINGPONG at its default, 0 (two warpgroups only).
    (
        "flash_attention.ph",
        "BR=192 BC=128 THREADS=512 OVERLAP=2 PRODUCER=2 RING=1 PERSIST=2 WALK=2",
        "BH=3,N=45",
    ),
    (
        "flash_attention_d128.ph",
        "BR=128 BC=128 THREADS=384 OVERLAP=2 PINGPONG=1 PRODUCER=2 RING=1 PERSIST=2 WALK=2",
        "BH=2,N=45",
    ),
    (
        "gemm.ph",
        "TILE_M=128 TILE_N=128 TILE_K=32",
        "M=77,N=45,K=67",
    ),
    ("gemm_fast.ph", "TILE_N=256 STAGES=4", "M=77,N=45,K=67"),
    ("gemm_persistent.ph", "SCHEDULE=2", "M=77,N=45,K=67"),
    // STAGES at its default (3): its largest choice, 12, is the 160-thread points' only. The
    // largest TILE_M (192, three consumer warpgroups) takes tiles at most 192 wide, so TILE_N
    // is 192, not its largest choice (256).
    (
        "gemm_small.ph",
        "TILE_M=192 TILE_N=192 TILE_K=64 THREADS=416 SCHEDULE=3 GROUP_M=8",
        "M=1545,N=136,K=72",
    ),
    (
        "gemm_tuned.ph",
        "TILE_M=128 TILE_N=256 TILE_K=64 STAGES=4",
        "M=77,N=129,K=192",
    ),
    (
        "gemm_typed.ph",
        "TILE_M=128 TILE_N=128 TILE_K=64 WARP_M=64",
        "M=77,N=45,K=72",
    ),
    ("histogram.ph", "BLOCK=4096", "N=5000,BINS=7"),
    (
        "layer_norm.ph",
        "BLOCK=8192 THREADS=1024 MIN_BLOCKS=2 RPB=4",
        "M=7,N=300",
    ),
    ("layer_norm_backward.ph", "ROWS=8 BLOCK=1024", "M=19,N=1000"),
    ("layer_norm_tiles.ph", "ROWS=4 BLOCK=1024", "M=7,N=200"),
    ("matmul_leaky_relu.ph", "TILE_K=32", "M=77,N=45,K=67"),
    ("partial_sums.ph", "U=8", "N=1000"),
    (
        "rms_norm.ph",
        "BLOCK=8192 THREADS=1024 MIN_BLOCKS=2 RPB=4",
        "M=7,N=301",
    ),
    ("row_stats.ph", "ROWS=8 BLOCK=256", "M=7,N=45"),
    ("saxpy.ph", "BLOCK=4096", "N=1000"),
    (
        "sgemm.ph",
        "TILE_M=128 TILE_N=256 TILE_K=16",
        "M=77,N=45,K=67",
    ),
    ("softmax.ph", "ROWS=8 THREADS=512 MIN_BLOCKS=2", "M=7,N=45"),
    (
        "softmax_online.ph",
        "BLOCK=57344 THREADS=1024 WHOLE=1 PACK=4",
        "M=3,N=40001",
    ),
    (
        "softmax_row.ph",
        "BLOCK=65536 THREADS=1024 PACK=4",
        "M=3,N=50257",
    ),
    (
        "transpose.ph",
        "TILE_R=256 TILE_C=64 TILES=2 THREADS=1024 STORE_LINES=1",
        "M=301,N=77",
    ),
];

/// The repository: `PHOBOS_ROOT`, else where this crate was built, else the current folder.
fn root() -> PathBuf {
    if let Some(r) = std::env::var_os("PHOBOS_ROOT") {
        return PathBuf::from(r);
    }
    let built = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    if built.join("examples").is_dir() {
        built
    } else {
        PathBuf::from(".")
    }
}

/// The `phobos` binary: `PHOBOS_BIN`, else the one built with these tests, else the bundle's.
fn bin() -> PathBuf {
    if let Some(b) = std::env::var_os("PHOBOS_BIN") {
        return PathBuf::from(b);
    }
    let built = PathBuf::from(env!("CARGO_BIN_EXE_phobos"));
    if built.exists() {
        built
    } else {
        root().join(".gpu-bundle/bin/phobos")
    }
}

fn phobos(args: &[String]) -> Output {
    Command::new(bin())
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", bin().display()))
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn temp_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("phobos-run-gpu-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `run FILE --dims D [--arg A].. [extra]..` for one example.
fn run_args(file: &str, dims: &str, scalars: &[&str], extra: &[&str]) -> Vec<String> {
    let mut a = vec![
        "run".to_string(),
        root().join("examples").join(file).display().to_string(),
        "--dims".into(),
        dims.into(),
    ];
    for s in scalars {
        a.push("--arg".into());
        a.push(s.to_string());
    }
    a.extend(extra.iter().map(|s| s.to_string()));
    a
}

/// The tensor names of the summary lines (`C: f32[77, 45] min=..`).
fn summarized(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .filter(|l| l.contains(" fnv="))
        .filter_map(|l| l.split_once(':').map(|(n, _)| n.to_string()))
        .collect()
}

#[test]
fn the_table_covers_every_example() {
    let mut files: Vec<String> = std::fs::read_dir(root().join("examples"))
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".ph"))
        .collect();
    files.sort();
    let table: Vec<&str> = EXAMPLES.iter().map(|(f, _, _)| *f).collect();
    assert_eq!(files, table, "give every example its dims in EXAMPLES");
}

#[test]
fn the_largest_tiles_are_the_largest_choices() {
    let table: Vec<&str> = LARGEST.iter().map(|(f, _, _)| *f).collect();
    let all: Vec<&str> = EXAMPLES.iter().map(|(f, _, _)| *f).collect();
    assert_eq!(
        table, all,
        "give every example its largest tiles in LARGEST"
    );
    for (file, pins, _) in LARGEST {
        let path = root().join("examples").join(file).display().to_string();
        let o = phobos(&["space".into(), path, "--json".into()]);
        assert!(o.status.success(), "{file}: {}", text(&o.stderr));
        let space: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        for pin in pins.split_whitespace() {
            let (name, value) = pin.split_once('=').unwrap();
            // A launch bound, not a tile: the norms' largest MIN_BLOCKS (4) and largest THREADS
            // (512) do not combine (`@where(THREADS * MIN_BLOCKS <= 1024)`), and the table
            // keeps the largest THREADS; gemm_small's largest TILE_M and TILE_N do not either,
            // nor transpose's largest TILE_R (256, at most two tiles a block) and TILES.
            if name == "MIN_BLOCKS"
                || (*file == "gemm_small.ph" && name == "TILE_N")
                || (*file == "transpose.ph" && name == "TILES")
            {
                continue;
            }
            let choices = space["names"]
                .as_array()
                .unwrap()
                .iter()
                .find(|n| n["name"] == name)
                .unwrap_or_else(|| panic!("{file}: no name {name}"))["choices"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c.as_i64().unwrap())
                .max()
                .unwrap();
            assert_eq!(value.parse::<i64>().unwrap(), choices, "{file} {name}");
        }
    }
}

/// `phobos run --compare` with the given flags; the failure text, if it fails.
fn compare_run(label: &str, args: Vec<String>) -> Option<String> {
    let o = phobos(&args);
    let out = text(&o.stdout);
    eprintln!("{label}:\n{out}");
    let verdicts: Vec<&str> = out
        .lines()
        .filter(|l| l.contains(": relative error "))
        .collect();
    let ok = o.status.success()
        && !verdicts.is_empty()
        && verdicts.len() == summarized(&out).len()
        && verdicts.iter().all(|l| l.ends_with(": pass"));
    (!ok).then(|| {
        format!(
            "{label}: exit {:?}\n{out}{}",
            o.status.code(),
            text(&o.stderr)
        )
    })
}

#[test]
#[ignore = "needs a GPU"]
fn compare_passes_at_the_largest_tiles() {
    let failures: Vec<String> = LARGEST
        .iter()
        .filter_map(|(file, pins, dims)| {
            let scalars = EXAMPLES.iter().find(|e| e.0 == *file).unwrap().2;
            let args = run_args(file, dims, scalars, &["--autotune", pins, "--compare"]);
            compare_run(&format!("{file} {pins}"), args)
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
#[ignore = "needs a GPU"]
fn compare_passes_for_every_element_type_of_the_typed_gemms() {
    let mut failures = Vec::new();
    for types in [
        "TA=f16,TB=f16,TC=f16",
        "TA=bf16,TB=bf16,TC=bf16",
        "TA=bf16,TB=bf16,TC=f32",
        "TA=tf32,TB=tf32,TC=f32",
        "TA=f8e4m3,TB=f8e4m3,TC=f32",
    ] {
        for (file, dims) in [
            ("gemm_typed.ph", "M=77,N=45,K=72"),
            ("gemm_fast.ph", "M=77,N=45,K=67"),
        ] {
            let args = run_args(file, dims, &[], &["--types", types, "--compare"]);
            failures.extend(compare_run(&format!("{file} {types}"), args));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
#[ignore = "needs a GPU"]
fn compare_passes_on_the_fast_gemm_paths() {
    // Dims divisible by 16: `phobos run` specializes on the alignment, so the GEMMs take the
    // wgmma + TMA main loop (tensor maps encoded at launch); the SPLIT_K point adds its parts
    // into a C zeroed right before the launch, over a grid with z = SPLIT_K.
    let mut failures = Vec::new();
    for types in [
        "TA=f16,TB=f16,TC=f32",
        "TA=bf16,TB=bf16,TC=bf16",
        "TA=tf32,TB=tf32,TC=f32",
        "TA=f8e4m3,TB=f8e4m3,TC=f32",
    ] {
        let args = run_args(
            "gemm_fast.ph",
            "M=256,N=384,K=192",
            &[],
            &["--types", types, "--compare"],
        );
        failures.extend(compare_run(&format!("gemm_fast.ph aligned {types}"), args));
    }
    for (pins, dims) in [
        (
            "TILE_M=64 TILE_N=128 TILE_K=32 SPLIT_K=2",
            "M=77,N=65,K=192",
        ),
        (
            "TILE_M=128 TILE_N=128 TILE_K=64 SPLIT_K=2",
            "M=256,N=256,K=256",
        ),
    ] {
        let args = run_args(
            "gemm_tuned.ph",
            dims,
            &[],
            &["--autotune", pins, "--compare"],
        );
        failures.extend(compare_run(&format!("gemm_tuned.ph {pins} {dims}"), args));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
#[ignore = "needs a GPU"]
fn compare_passes_on_the_persistent_schedule() {
    // More tiles (32 x 9 = 288) than an H200 holds blocks of this kernel at once (132), so
    // blocks loop over several tiles; M, N and K ragged against the 128 x 256 x 64 tile.
    let mut failures = Vec::new();
    for types in ["TA=f16,TB=f16,TC=f32", "TA=bf16,TB=bf16,TC=bf16"] {
        for schedule in ["SCHEDULE=1", "SCHEDULE=2"] {
            let args = run_args(
                "gemm_persistent.ph",
                "M=4000,N=2056,K=136",
                &[],
                &["--types", types, "--autotune", schedule, "--compare"],
            );
            failures.extend(compare_run(
                &format!("gemm_persistent.ph {schedule} {types}"),
                args,
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
#[ignore = "needs a GPU"]
fn compare_passes_with_clusters() {
    // CLUSTER=2: blocks in pairs on neighbouring M tiles share B through multicast copies. Nine
    // M tiles (M = 1100), so the grid's x is rounded up to ten and the last pair's second block
    // has no tile; N and K ragged. B row-major (N-major slabs split between the pair) and, for
    // fp8, column-major (K-major rows split).
    let mut failures = Vec::new();
    for (types, layout) in [
        ("TA=f16,TB=f16,TC=f32", "B=row"),
        ("TA=bf16,TB=bf16,TC=bf16", "B=row"),
        ("TA=f8e4m3,TB=f8e4m3,TC=bf16", "B=col"),
    ] {
        for cluster in ["CLUSTER=1", "CLUSTER=2"] {
            let pins = format!("SCHEDULE=1 {cluster}");
            let args = run_args(
                "gemm_persistent.ph",
                "M=1100,N=520,K=80",
                &[],
                &[
                    "--types",
                    types,
                    "--layout",
                    layout,
                    "--autotune",
                    &pins,
                    "--compare",
                ],
            );
            // The same variant's code: clusters exactly where asked.
            let mut emit_args = args[..4].to_vec();
            emit_args[0] = "emit".into();
            emit_args.extend(args[4..args.len() - 1].iter().cloned());
            let out = phobos(&emit_args);
            let clustered = text(&out.stdout).contains("__cluster_dims__(2, 1, 1)");
            if !out.status.success() || clustered != (cluster == "CLUSTER=2") {
                failures.push(format!(
                    "phobos {}: clusters {clustered}\n{}",
                    emit_args.join(" "),
                    text(&out.stderr)
                ));
            }
            failures.extend(compare_run(
                &format!("gemm_persistent.ph {pins} {types} {layout}"),
                args,
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
#[ignore = "needs a GPU"]
fn every_example_on_the_gpu_equals_the_interpreter() {
    let mut failures = Vec::new();
    for (file, dims, scalars) in EXAMPLES {
        let dir = temp_dir(file.trim_end_matches(".ph"));
        let (gdir, idir) = (dir.join("gpu"), dir.join("interp"));
        let gpu = phobos(&run_args(
            file,
            dims,
            scalars,
            &["--output-dir", &gdir.display().to_string()],
        ));
        let interp = phobos(&run_args(
            file,
            dims,
            scalars,
            &["--interpret", "--output-dir", &idir.display().to_string()],
        ));
        if !gpu.status.success() || !interp.status.success() {
            failures.push(format!(
                "{file}: gpu exit {:?}: {}\ninterpreter exit {:?}: {}",
                gpu.status.code(),
                text(&gpu.stderr),
                interp.status.code(),
                text(&interp.stderr)
            ));
            continue;
        }
        let outputs = summarized(&text(&gpu.stdout));
        assert_eq!(
            outputs,
            summarized(&text(&interp.stdout)),
            "{file}: both back ends summarize the same outputs"
        );
        assert!(!outputs.is_empty(), "{file}: no output summarized");
        for name in &outputs {
            let g = read_npy(&gdir.join(format!("{name}.npy")), None).unwrap();
            let i = read_npy(&idir.join(format!("{name}.npy")), None).unwrap();
            assert_eq!((g.dtype, &g.shape), (i.dtype, &i.shape), "{file} {name}");
            let err = relative_error(&g.data, &i.data);
            let tol = i.dtype.tolerance();
            eprintln!("{file} {name}: relative error {err:.3e} (tolerance {tol:e})");
            if err > tol {
                failures.push(format!("{file} {name}: relative error {err} > {tol}"));
            }
            // The interpreter's output is not vacuous (all NaN would compare equal to a
            // GPU that wrote nothing).
            assert!(i.data.iter().any(|x| !x.is_nan()), "{file} {name}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
#[ignore = "needs a GPU"]
fn compare_passes_on_every_example() {
    let failures: Vec<String> = EXAMPLES
        .iter()
        .filter_map(|(file, dims, scalars)| {
            compare_run(file, run_args(file, dims, scalars, &["--compare"]))
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
#[ignore = "needs a GPU"]
fn the_same_inputs_give_the_same_outputs_through_files() {
    // A GPU run's own inputs, read back with --input, reproduce its outputs bit for bit.
    let dir = temp_dir("inputs");
    let out = dir.join("first");
    let first = phobos(&run_args(
        "gemm_typed.ph",
        "M=77,N=45,K=72",
        &[],
        &[
            "--types",
            "TA=bf16,TB=bf16,TC=f32",
            "--output-dir",
            &out.display().to_string(),
        ],
    ));
    assert!(first.status.success(), "{}", text(&first.stderr));
    let (a, b) = (
        format!("A={}", out.join("A.npy").display()),
        format!("B={}", out.join("B.npy").display()),
    );
    let again = phobos(&run_args(
        "gemm_typed.ph",
        "N=45",
        &[],
        &[
            "--types",
            "TA=bf16,TB=bf16,TC=f32",
            "--input",
            &a,
            "--input",
            &b,
        ],
    ));
    assert!(again.status.success(), "{}", text(&again.stderr));
    assert_eq!(text(&first.stdout), text(&again.stdout));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
#[ignore = "needs a GPU"]
fn an_illegal_configuration_is_a_clean_error() {
    // A 256 x 256 f32 transpose needs 256 KiB of shared memory scratch: more than any GPU
    // gives a block. The run must stop with one line, not a panic or a driver fault.
    let dir = temp_dir("illegal");
    let file = dir.join("big.ph");
    std::fs::write(
        &file,
        "@launch(256)\n@grid(1)\nkernel big(X: tensor<f32>[256, 256], Y: tensor<f32>[256, 256]) \
         {\n  Y[0 :+ 256, 0 :+ 256] = transpose(X[0 :+ 256, 0 :+ 256])\n}\n",
    )
    .unwrap();
    let o = phobos(&["run".to_string(), file.display().to_string()]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("error: `big` at this point needs"), "{err}");
    assert!(err.contains("bytes of"), "{err}");
    assert!(err.contains("shared memory"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(
        err.lines().filter(|l| l.starts_with("error")).count(),
        1,
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
