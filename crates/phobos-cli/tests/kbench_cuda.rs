//! `phobos-kbench` on CUDA C++ sources (examples/cuda): every point of the examples compiled
//! offline with NVRTC (`--dry-run`), the argument handling and errors, and (ignored without a
//! GPU) the examples tuned end to end.

mod kbench_workflow_common;

use kbench_workflow_common::{bin, crate_dir, Scratch};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

fn example(name: &str) -> String {
    crate_dir()
        .join("../../examples/cuda")
        .join(name)
        .display()
        .to_string()
}

fn kbench(args: &[&str], s: &Scratch) -> Output {
    Command::new(bin())
        .args(args)
        .args(["--db", &s.db()])
        .env("NO_COLOR", "1")
        .env("XDG_CACHE_HOME", s.0.join("cache"))
        .output()
        .expect("phobos-kbench runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn nvrtc_available() -> bool {
    let ok = phobos_gpu::nvrtc::nvrtc_version().is_ok();
    if !ok && std::env::var_os("PHOBOS_REQUIRE_NVRTC").is_some() {
        panic!("NVRTC is required (PHOBOS_REQUIRE_NVRTC) but not found");
    }
    ok
}

fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", text(&o.stdout), text(&o.stderr)))
}

/// (file, extra arguments, the number of points of the space)
const EXAMPLES: [(&str, &[&str], usize); 3] = [
    ("reduction.cu", &["--dims", "M=64,N=1000"], 45),
    (
        "stencil.cu",
        &[
            "--dims",
            "H=100,W=200",
            "--arg",
            "c0=0.5",
            "--arg",
            "c1=0.125",
        ],
        36,
    ),
    (
        "compile_error.cu",
        &["--dims", "N=4096", "--arg", "a=2"],
        12,
    ),
];

#[test]
fn dry_run_compiles_every_point_of_the_cuda_examples() {
    if !nvrtc_available() {
        eprintln!("skipped: NVRTC not found (eval \"$(scripts/cuda-tools.sh)\")");
        return;
    }
    for (name, extra, size) in EXAMPLES {
        let s = Scratch::new("dry");
        let file = example(name);
        let mut args = vec![file.as_str(), "--dry-run", "--json"];
        args.extend(extra);
        let o = kbench(&args, &s);
        let j = json(&o);
        let points = j["points"].as_array().unwrap();
        assert_eq!(points.len(), size, "{name}");
        for p in points {
            let status = p["status"].as_str().unwrap();
            let vec8 = p["point"]["VEC"] == 8;
            match status {
                // Compiled, with the resources ptxas reports.
                "compiled" | "duplicate" => {
                    assert!(!vec8, "{name}: {p}");
                    assert!(p["resources"]["registers"].as_u64().unwrap() > 0, "{p}");
                }
                "pruned" => assert!(p["reason"].as_str().unwrap().contains("@where"), "{p}"),
                "compile-failed" => {
                    // Only the points of compile_error.cu without a Vec<8>.
                    assert!(vec8, "{name}: {p}");
                    let reason = p["reason"].as_str().unwrap();
                    assert!(reason.contains("compile_error.cu(") && reason.contains("Vec<8>"));
                    let log = p["outcome"]["detail"]["log"].as_str().unwrap();
                    assert!(log.contains("-DVEC=8"), "{log}");
                }
                other => panic!("{name}: {other}: {p}"),
            }
        }
        let compiled = points.iter().filter(|p| p["status"] == "compiled").count();
        assert!(compiled >= 9, "{name}: only {compiled} compiled");
    }
}

#[test]
fn the_point_is_passed_as_macros_and_changes_the_binary() {
    if !nvrtc_available() {
        eprintln!("skipped: NVRTC not found");
        return;
    }
    let s = Scratch::new("macros");
    let file = example("reduction.cu");
    let o = kbench(&[&file, "--dims", "M=64,N=1000", "--dry-run", "--json"], &s);
    let j = json(&o);
    let regs = |pins: &str| {
        j["points"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["config"] == pins)
            .map(|p| p["resources"].clone())
            .unwrap()
    };
    // The block's shared memory is BLOCK / 32 floats: the macro reached the template.
    assert_eq!(regs("BLOCK=64 MIN_BLOCKS=1 ITEMS=1")["smem_bytes"], 8);
    assert_eq!(regs("BLOCK=1024 MIN_BLOCKS=1 ITEMS=1")["smem_bytes"], 128);
}

#[test]
fn the_interpreter_refuses_a_cuda_source_with_a_hint() {
    let s = Scratch::new("interp");
    let file = example("stencil.cu");
    let o = kbench(&[&file, "--dims", "H=8,W=8", "--backend", "interp"], &s);
    assert_eq!(o.status.code(), Some(1));
    let err = text(&o.stderr);
    assert!(
        err.contains("is CUDA C++: the interpreter runs only Phobos kernels"),
        "{err}"
    );
    assert!(err.contains("--dry-run"), "{err}");
}

#[test]
fn stored_configurations_of_a_cuda_source_are_refused() {
    let s = Scratch::new("modes");
    let file = example("reduction.cu");
    let yaml = s.0.join("r.yaml");
    std::fs::write(&yaml, "[]\n").unwrap();
    let yaml = yaml.display().to_string();
    for mode in [
        vec!["--check", yaml.as_str()],
        vec!["--benchmark", yaml.as_str()],
        vec!["--config", "M=64_N=64_BLOCK=64_MIN_BLOCKS=1_ITEMS=1"],
    ] {
        let mut args = vec![file.as_str()];
        args.extend(&mode);
        let o = kbench(&args, &s);
        assert_eq!(o.status.code(), Some(1), "{mode:?}");
        let err = text(&o.stderr);
        assert!(
            err.contains("is CUDA C++: --check, --benchmark and --config take Phobos kernels"),
            "{mode:?}: {err}"
        );
    }
}

#[test]
fn attribute_errors_stop_before_anything_runs() {
    let s = Scratch::new("errors");
    for (edit, code) in [
        ("@launch(BLOCK)", "@lanuch(BLOCK)"),
        ("BLOCK in [128, 512]", "BLOCK in [128, 512], U in [1, 2]"),
        (", float a, int n)", ", float a)"),
    ] {
        let src = std::fs::read_to_string(example("compile_error.cu")).unwrap();
        let bad = s.0.join("bad.cu");
        std::fs::write(&bad, src.replace(edit, code)).unwrap();
        let path = bad.display().to_string();
        let o = kbench(&[&path, "--dims", "N=64", "--arg", "a=1", "--dry-run"], &s);
        assert_eq!(o.status.code(), Some(1), "{code}");
        let err = text(&o.stderr);
        let want = match code {
            c if c.contains("lanuch") => "error[E1101]",
            c if c.contains("U in") => "error[E1103]",
            _ => "error[E1104]",
        };
        assert!(err.contains(want), "{code}: {err}");
        assert!(err.contains("bad.cu:"), "{err}");
        assert!(o.stdout.is_empty());
    }
}

#[test]
fn a_kernel_name_that_is_not_annotated_is_refused() {
    let s = Scratch::new("name");
    let file = example("reduction.cu");
    let o = kbench(
        &[
            &file,
            "--kernel",
            "block_sum",
            "--dims",
            "M=4,N=4",
            "--dry-run",
        ],
        &s,
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o.stderr).contains("block_sum"), "{}", text(&o.stderr));
}

/// Tunes one example on the GPU and returns its JSON report.
fn tune_on_gpu(name: &Path, extra: &[&str]) -> Value {
    let s = Scratch::new("gpu");
    let file = name.display().to_string();
    let mut args = vec![file.as_str(), "--json", "--report", "--budget-ms", "20"];
    args.extend(extra);
    let o = kbench(&args, &s);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    json(&o)
}

#[test]
#[ignore = "needs a GPU"]
fn the_reduction_tunes_on_the_gpu() {
    let j = tune_on_gpu(
        Path::new(&example("reduction.cu")),
        &["--dims", "M=4096,N=8192"],
    );
    let w = &j["winner"];
    assert!(w["median_ms"].as_f64().unwrap() > 0.0, "{w}");
    for p in j["points"].as_array().unwrap() {
        assert!(
            ["ok", "duplicate", "pruned"].contains(&p["status"].as_str().unwrap()),
            "{p}"
        );
    }
}

#[test]
#[ignore = "needs a GPU"]
fn the_stencil_tunes_on_the_gpu() {
    let j = tune_on_gpu(
        Path::new(&example("stencil.cu")),
        &[
            "--dims",
            "H=4096,W=4096",
            "--arg",
            "c0=0.5",
            "--arg",
            "c1=0.125",
        ],
    );
    assert!(j["winner"]["median_ms"].as_f64().unwrap() > 0.0);
}

#[test]
#[ignore = "needs a GPU"]
fn compile_errors_are_skipped_and_the_rest_tuned_on_the_gpu() {
    let j = tune_on_gpu(
        Path::new(&example("compile_error.cu")),
        &["--dims", "N=16777216", "--arg", "a=2"],
    );
    assert_ne!(j["winner"]["point"]["VEC"], 8);
    let failed = j["points"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["status"] == "compile-failed")
        .count();
    assert_eq!(failed, 3);
}

#[test]
#[ignore = "needs a GPU"]
fn wrong_points_are_caught_against_the_reference_point() {
    let file = crate_dir().join("tests/kbench_cuda/wrong_at_some_points.cu");
    let j = tune_on_gpu(&file, &["--dims", "N=100000", "--arg", "a=3"]);
    assert_eq!(j["winner"]["point"]["BUG"], 0, "{}", j["winner"]);
    for p in j["points"].as_array().unwrap() {
        let want = if p["point"]["BUG"] == 1 {
            "wrong"
        } else {
            "ok"
        };
        assert_eq!(p["status"], want, "{p}");
    }
}

#[test]
fn phobos_reads_the_attributes_and_refuses_to_emit_or_run_a_cuda_source() {
    let phobos = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_phobos"))
            .args(args)
            .env("NO_COLOR", "1")
            .output()
            .expect("phobos runs")
    };
    let file = example("stencil.cu");
    let o = phobos(&["space", &file]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(
        out.contains("kernel heat") && out.contains("36 points"),
        "{out}"
    );
    let o = phobos(&["check", &file]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    for cmd in ["emit", "run"] {
        let o = phobos(&[cmd, &file, "--dims", "H=4,W=4"]);
        assert_eq!(o.status.code(), Some(1), "{cmd}");
        let err = text(&o.stderr);
        assert!(
            err.contains(&format!("is CUDA C++: `phobos {cmd}` takes Phobos kernels")),
            "{err}"
        );
    }
}

fn sgemm() -> String {
    crate_dir()
        .join("tests/kbench_cuda/sgemm.cu")
        .display()
        .to_string()
}

#[test]
fn gemm_flags_apply_to_a_cuda_gemm() {
    if !nvrtc_available() {
        eprintln!("skipped: NVRTC not found");
        return;
    }
    let s = Scratch::new("gemm");
    let file = sgemm();
    let o = kbench(
        &[
            &file,
            "-m",
            "96",
            "-n",
            "64",
            "-k",
            "32",
            "--dry-run",
            "--json",
        ],
        &s,
    );
    let j = json(&o);
    assert_eq!(j["problem"]["dims"]["M"], 96, "{}", j["problem"]);
    let points = j["points"].as_array().unwrap();
    assert_eq!(points.len(), 3);
    // 2 * M * N * K from @flops.
    assert_eq!(points[0]["flops"], 2.0 * 96.0 * 64.0 * 32.0);
}

#[test]
#[ignore = "needs a GPU"]
fn a_cuda_gemm_tunes_and_writes_its_results_file_on_the_gpu() {
    let s = Scratch::new("gemm-gpu");
    let file = sgemm();
    let out = s.0.join("results.yaml").display().to_string();
    let o = kbench(
        &[
            &file,
            "-m",
            "1024",
            "-n",
            "1024",
            "-k",
            "512",
            "-o",
            &out,
            "--budget-ms",
            "20",
        ],
        &s,
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let yaml = std::fs::read_to_string(&out).unwrap();
    assert!(yaml.contains("TILE"), "{yaml}");
}

fn wrong_file() -> String {
    crate_dir()
        .join("tests/kbench_cuda/wrong_at_some_points.cu")
        .display()
        .to_string()
}

fn ph_reference() -> String {
    crate_dir()
        .join("tests/kbench_cuda/saxpy_reference.ph")
        .display()
        .to_string()
}

#[test]
fn reference_kernels_load_and_compile_in_a_dry_run() {
    if !nvrtc_available() {
        eprintln!("skipped: NVRTC not found");
        return;
    }
    let s = Scratch::new("reference");
    let file = wrong_file();
    let cu_ref = format!("{}:saxpy", example("compile_error.cu"));
    for reference in [ph_reference(), cu_ref] {
        let o = kbench(
            &[
                &file,
                "--dims",
                "N=1000",
                "--arg",
                "a=2",
                "--dry-run",
                "--reference",
                &reference,
            ],
            &s,
        );
        assert_eq!(o.status.code(), Some(0), "{reference}: {}", text(&o.stderr));
    }
    // A reference that does not compile stops the run before any point.
    let broken = s.0.join("broken.cu");
    let src = std::fs::read_to_string(example("compile_error.cu")).unwrap();
    std::fs::write(
        &broken,
        src.replace(
            "BLOCK in [128, 512], VEC in {1, 2, 4, 8}",
            "BLOCK in [128, 512], VEC in {8, 1}",
        ),
    )
    .unwrap();
    let broken = broken.display().to_string();
    let o = kbench(
        &[
            &file,
            "--dims",
            "N=1000",
            "--arg",
            "a=2",
            "--dry-run",
            "--reference",
            &broken,
        ],
        &s,
    );
    assert_eq!(o.status.code(), Some(1));
    let err = text(&o.stderr);
    assert!(
        err.contains("the reference `saxpy` does not compile"),
        "{err}"
    );
}

#[test]
fn reference_argument_errors() {
    let s = Scratch::new("reference-errors");
    let file = wrong_file();
    let run = |args: &[&str]| {
        let mut a = vec![file.as_str(), "--dims", "N=64", "--arg", "a=1", "--dry-run"];
        a.extend(args);
        let o = kbench(&a, &s);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        text(&o.stderr)
    };
    // Other parameters: the reduction takes X[M, N] and Y[M].
    let err = run(&["--reference", &example("reduction.cu")]);
    assert!(
        err.contains("`saxpy` takes 3 parameters and the reference `row_sum` 2"),
        "{err}"
    );
    assert!(err.contains("same parameters in the same order"), "{err}");
    // The same parameters in another order.
    let saxpy_ph = crate_dir()
        .join("../../examples/saxpy.ph")
        .display()
        .to_string();
    let err = run(&["--reference", &saxpy_ph]);
    assert!(
        err.contains("parameter 1 differs: `X: tensor<f32>[N]` here, `a: f32` in the reference"),
        "{err}"
    );
    // A missing file and an unknown kernel.
    let err = run(&["--reference", "no/such/file.ph"]);
    assert!(
        err.contains("--reference: cannot read no/such/file.ph"),
        "{err}"
    );
    let err = run(&["--reference", &format!("{}:nope", ph_reference())]);
    assert!(err.contains("--reference") && err.contains("nope"), "{err}");
    // A Phobos kernel is checked against the interpreter already.
    let o = kbench(
        &[
            &saxpy_ph,
            "--dims",
            "N=64",
            "--arg",
            "a=1",
            "--backend",
            "interp",
            "--reference",
            &ph_reference(),
        ],
        &s,
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o.stderr).contains("--reference is for CUDA C++ kernels"));
}

#[test]
#[ignore = "needs a GPU"]
fn wrong_points_are_caught_against_a_reference_kernel() {
    let file = crate_dir().join("tests/kbench_cuda/wrong_at_some_points.cu");
    let cu_ref = format!("{}:saxpy", example("compile_error.cu"));
    for reference in [ph_reference(), cu_ref] {
        let j = tune_on_gpu(
            &file,
            &[
                "--dims",
                "N=100000",
                "--arg",
                "a=3",
                "--reference",
                &reference,
            ],
        );
        assert_eq!(j["winner"]["point"]["BUG"], 0, "{}", j["winner"]);
        for p in j["points"].as_array().unwrap() {
            let want = if p["point"]["BUG"] == 1 {
                "wrong"
            } else {
                "ok"
            };
            assert_eq!(p["status"], want, "{reference}: {p}");
        }
    }
}

#[test]
fn a_file_without_annotated_kernels_says_how_to_declare_one() {
    let s = Scratch::new("plain");
    let plain = s.0.join("plain.cu");
    std::fs::write(&plain, "__global__ void k(float* x) { x[0] = 1.0f; }\n").unwrap();
    let path = plain.display().to_string();
    let o = kbench(&[&path, "--dims", "N=4", "--dry-run"], &s);
    assert_eq!(o.status.code(), Some(1));
    let err = text(&o.stderr);
    assert!(
        err.contains("plain.cu has no kernel to tune: declare one with `// @params(..)`"),
        "{err}"
    );
}

fn template_file() -> String {
    crate_dir()
        .join("tests/kbench_cuda/template.cu")
        .display()
        .to_string()
}

#[test]
fn a_template_kernel_compiles_at_every_point() {
    if !nvrtc_available() {
        eprintln!("skipped: NVRTC not found");
        return;
    }
    let s = Scratch::new("template");
    let file = template_file();
    let o = kbench(&[&file, "--dims", "N=1000", "--dry-run", "--json"], &s);
    let j = json(&o);
    let points = j["points"].as_array().unwrap();
    assert_eq!(points.len(), 3);
    for p in points {
        assert_eq!(p["status"], "compiled", "{p}");
        assert!(p["resources"]["registers"].as_u64().unwrap() > 0, "{p}");
    }
}

#[test]
#[ignore = "needs a GPU"]
fn a_template_kernel_tunes_on_the_gpu() {
    let j = tune_on_gpu(Path::new(&template_file()), &["--dims", "N=1000000"]);
    assert!(j["winner"]["median_ms"].as_f64().unwrap() > 0.0);
}
