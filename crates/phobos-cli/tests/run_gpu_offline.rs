//! `phobos run` without a GPU (CI): the GPU path stops with one line and a hint, `--compare`
//! is parsed and needs the GPU, and every math built-in on every element type is either
//! refused by the checker or lowered by the CUDA back end (never an error in code generation).

use phobos_ir::DType;
use phobos_syntax::SourceFile;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn example(name: &str) -> String {
    root().join("examples").join(name).display().to_string()
}

fn phobos(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_phobos"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .expect("the phobos binary runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// True where the CUDA driver library loads: the no-GPU checks below cannot run there (the
/// GPU tests of run_gpu.rs cover that machine).
fn driver_present() -> bool {
    phobos_gpu::probe::driver().is_ok()
}

#[test]
fn without_a_driver_the_gpu_path_is_one_line_and_a_hint() {
    if driver_present() {
        eprintln!("skipped: this machine has a CUDA driver");
        return;
    }
    let gemm = example("gemm.ph");
    for extra in [&[][..], &["--compare"][..]] {
        let mut args = vec!["run", gemm.as_str(), "--dims", "M=64,N=48,K=40"];
        args.extend_from_slice(extra);
        let o = phobos(&args);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        let lines: Vec<&str> = err.lines().collect();
        assert_eq!(
            lines,
            [
                format!("error: {}", phobos_gpu::probe::DRIVER_NOT_FOUND).as_str(),
                "hint: no GPU here? run on the CPU reference interpreter with --interpret",
            ],
            "{args:?}"
        );
        // Nothing ran: no summary line (the interpreter half of --compare did not start).
        assert_eq!(text(&o.stdout), "", "{args:?}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

#[test]
fn a_bad_kernel_is_reported_before_the_gpu_is_looked_for() {
    let dir = std::env::temp_dir().join(format!("phobos-run-gpu-offline-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.ph");
    std::fs::write(
        &bad,
        "@grid(1)\nkernel k(X: tensor<i32>[N], Y: tensor<f32>[N]) {\n  Y[0] = exp(X[0])\n}\n",
    )
    .unwrap();
    let o = phobos(&["run", &bad.display().to_string(), "--dims", "N=4"]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("error[E0502]: `exp` is not defined for i32"),
        "{err}"
    );
    assert!(err.contains("convert first: `exp(f32(X[0]))`"), "{err}");
    assert!(!err.contains("libcuda"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn compare_excludes_interpret_and_is_in_the_help() {
    let gemm = example("gemm.ph");
    let o = phobos(&[
        "run",
        &gemm,
        "--dims",
        "M=4,N=4,K=4",
        "--compare",
        "--interpret",
    ]);
    assert_eq!(o.status.code(), Some(2), "usage errors exit 2");
    let err = text(&o.stderr);
    assert!(
        err.contains("'--compare' cannot be used with '--interpret'"),
        "{err}"
    );
    let help = text(&phobos(&["run", "--help"]).stdout);
    assert!(help.contains("--compare"), "{help}");
    assert!(help.contains("--interpret"), "{help}");
}

#[test]
fn interpret_still_runs_without_a_gpu() {
    let o = phobos(&[
        "run",
        &example("saxpy.ph"),
        "--dims",
        "N=1000",
        "--arg",
        "a=0.5",
        "--interpret",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(
        text(&o.stdout).starts_with("Y: f32[1000] min="),
        "{}",
        text(&o.stdout)
    );
}

/// Every math built-in on every element type, on a scalar and on a tile: the checker refuses
/// it (E0502, with a cast suggested for integers and bools) or the CUDA back end lowers it.
#[test]
fn math_builtins_are_refused_by_the_checker_or_lowered() {
    let fns = ["exp", "exp2", "log", "sqrt", "rsqrt", "tanh", "abs"];
    let mut lowered = 0;
    for t in DType::ALL {
        for f in fns {
            for tile in [false, true] {
                let (read, write) = if tile {
                    ("X[0 :+ 32]", "Y[0 :+ 32]")
                } else {
                    ("X[ctx.thread]", "Y[ctx.thread]")
                };
                let src = format!(
                    "@launch(32)\n@grid(1)\nkernel k(X: tensor<{t}>[32], Y: tensor<f32>[32]) {{\n  \
                     {write} = f32({f}({read}))\n}}\n"
                );
                let label = format!("{f} on {t} ({})", if tile { "tile" } else { "scalar" });
                let file = SourceFile::new("m.ph", src.clone());
                let module = match phobos_check::load(file.clone()) {
                    Ok(m) => m,
                    Err(d) => panic!("{label}: {d:?}"),
                };
                let info = module.kernel(None).unwrap();
                let variant = info.default_variant().unwrap();
                match phobos_check::instantiate(&module, info, &variant) {
                    Ok(kernel) => {
                        let opts = phobos_cuda::EmitOptions { source: Some(file) };
                        if let Err(e) = phobos_cuda::emit(&kernel, &opts) {
                            panic!("{label} checks but does not lower: {e}\n{src}");
                        }
                        lowered += 1;
                        assert!(
                            t.is_float() || (f == "abs" && t.is_int()),
                            "{label} should not check"
                        );
                    }
                    Err(d) => {
                        let e = d.iter().find(|d| d.is_error()).expect("an error");
                        assert_eq!(e.code, "E0502", "{label}: {d:?}");
                        assert!(!t.is_float(), "{label} is refused: {d:?}");
                        if f != "abs" {
                            assert!(
                                e.help.iter().any(|h| h.contains(&format!("{f}(f32("))),
                                "{label}: no cast suggested: {d:?}"
                            );
                        }
                    }
                }
            }
        }
    }
    assert!(lowered >= 2 * 7 * 6, "only {lowered} lowered");
}

/// Every atomic on every element type, on one element (its old value bound) and on a tile: the
/// checker refuses an unsupported type (E0618, naming the supported ones) or the CUDA back end
/// lowers it; the set of accepted types is `AtomicOp::supports`'.
#[test]
fn atomics_are_refused_by_the_checker_or_lowered() {
    let ops = [
        ("atomic_add", phobos_ir::AtomicOp::Add),
        ("atomic_max", phobos_ir::AtomicOp::Max),
        ("atomic_min", phobos_ir::AtomicOp::Min),
    ];
    let mut lowered = 0;
    for t in DType::ALL {
        for (f, op) in ops {
            for tile in [false, true] {
                let body = if tile {
                    format!("{f}(Y[0 :+ 32], X[0 :+ 32])")
                } else {
                    format!("let old = {f}(Y[ctx.thread], X[ctx.thread])\n  X[ctx.thread] = old")
                };
                let src = format!(
                    "@launch(32)\n@grid(1)\nkernel k(X: tensor<{t}>[32], Y: tensor<{t}>[32]) {{\n  {body}\n}}\n"
                );
                let label = format!("{f} on {t} ({})", if tile { "tile" } else { "element" });
                let file = SourceFile::new("a.ph", src.clone());
                let module = phobos_check::load(file.clone()).unwrap_or_else(|d| panic!("{d:?}"));
                let info = module.kernel(None).unwrap();
                let variant = info.default_variant().unwrap();
                match phobos_check::instantiate(&module, info, &variant) {
                    Ok(kernel) => {
                        assert!(op.supports(t), "{label} should not check");
                        let opts = phobos_cuda::EmitOptions { source: Some(file) };
                        if let Err(e) = phobos_cuda::emit(&kernel, &opts) {
                            panic!("{label} checks but does not lower: {e}\n{src}");
                        }
                        lowered += 1;
                    }
                    Err(d) => {
                        assert!(!op.supports(t), "{label} is refused: {d:?}");
                        let e = d.iter().find(|d| d.is_error()).expect("an error");
                        assert_eq!(e.code, "E0618", "{label}: {d:?}");
                        assert!(
                            e.help.iter().any(|h| h.contains("i32, u32")),
                            "{label}: no supported types listed: {d:?}"
                        );
                    }
                }
            }
        }
    }
    // add: 6 types, max and min: 3 each; element and tile.
    assert_eq!(lowered, 2 * (6 + 3 + 3));
}
