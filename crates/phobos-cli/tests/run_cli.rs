//! `phobos run --interpret` end to end: the built binary, real files, exit codes and messages.

use phobos_ir::npy::{read_npy, write_npy};
use phobos_ir::{relative_error, DType, HostTensor};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn example(name: &str) -> String {
    root().join("examples").join(name).display().to_string()
}

/// A fresh directory for one test.
fn temp_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("phobos-run-cli-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn phobos(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_phobos"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .expect("the phobos binary runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn matmul(a: &HostTensor, b: &HostTensor) -> Vec<f64> {
    let (m, k, n) = (a.shape[0], a.shape[1], b.shape[1]);
    let mut c = vec![0.0; m * n];
    for i in 0..m {
        for kk in 0..k {
            for j in 0..n {
                c[i * n + j] += a.data[i * k + kk] * b.data[kk * n + j];
            }
        }
    }
    c
}

/// Runs and expects exit 1 with `needle` on stderr; returns stderr.
fn fails(args: &[&str], needle: &str) -> String {
    let o = phobos(args);
    let err = stderr(&o);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{args:?}\nstdout: {}\nstderr: {err}",
        stdout(&o)
    );
    assert!(
        err.contains(needle),
        "{args:?}: expected {needle:?} in\n{err}"
    );
    err
}

#[test]
fn gemm_writes_c_equal_to_a_times_b() {
    let dir = temp_dir("gemm");
    let out = dir.display().to_string();
    let o = phobos(&[
        "run",
        &example("gemm.ph"),
        "--dims",
        "M=64,N=48,K=40",
        "--interpret",
        "--output-dir",
        &out,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let a = read_npy(&dir.join("A.npy"), None).unwrap();
    let b = read_npy(&dir.join("B.npy"), None).unwrap();
    let c = read_npy(&dir.join("C.npy"), None).unwrap();
    assert_eq!(
        (a.shape.clone(), b.shape.clone(), c.shape.clone()),
        (vec![64, 40], vec![40, 48], vec![64, 48])
    );
    let err = relative_error(&c.data, &matmul(&a, &b));
    assert!(err < 1e-5, "relative error {err}");
    // One summary line, for the tensor the kernel stores to.
    let lines: Vec<String> = stdout(&o).lines().map(String::from).collect();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].starts_with("C: f32[64, 48] min="), "{}", lines[0]);
    assert!(lines[0].contains(" fnv="), "{}", lines[0]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn seeds_make_runs_reproducible() {
    let run = |seed: &str, pins: &str| {
        let o = phobos(&[
            "run",
            &example("gemm.ph"),
            "--dims",
            "M=33,N=17,K=9",
            "--interpret",
            "--seed",
            seed,
            "--autotune",
            pins,
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        stdout(&o)
    };
    assert_eq!(run("3", "TILE_M=32"), run("3", "TILE_M=32"));
    assert_ne!(run("3", "TILE_M=32"), run("4", "TILE_M=32"));
}

#[test]
fn inputs_come_from_npy_files_and_fix_their_dims() {
    let dir = temp_dir("inputs");
    let a = HostTensor::from_f64(DType::F32, &[3, 2], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    let b = HostTensor::from_f64(DType::F32, &[2, 2], &[1.0, 0.0, 0.0, -1.0]);
    write_npy(&dir.join("a.npy"), &a).unwrap();
    write_npy(&dir.join("b.npy"), &b).unwrap();
    let out = dir.join("out");
    let (pa, pb) = (
        format!("A={}", dir.join("a.npy").display()),
        format!("B={}", dir.join("b.npy").display()),
    );
    // M, K and N all come from the inputs: no --dims needed.
    let o = phobos(&[
        "run",
        &example("gemm.ph"),
        "--interpret",
        "--input",
        &pa,
        "--input",
        &pb,
        "--output-dir",
        &out.display().to_string(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let c = read_npy(&out.join("C.npy"), None).unwrap();
    assert_eq!(c.data, vec![1.0, -2.0, 3.0, -4.0, 5.0, -6.0]);
    assert!(
        stdout(&o).starts_with("C: f32[3, 2] min=-6 max=5 sum=-3 fnv="),
        "{}",
        stdout(&o)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_inputs_are_one_line_errors_with_hints() {
    let dir = temp_dir("bad");
    let f64_file = dir.join("a64.npy");
    write_npy(&f64_file, &HostTensor::zeros(DType::F64, &[4, 5])).unwrap();
    let wrong_k = dir.join("a32.npy");
    write_npy(&wrong_k, &HostTensor::zeros(DType::F32, &[4, 5])).unwrap();
    let gemm = example("gemm.ph");
    let err = fails(
        &["run", &gemm, "--dims", "M=64,N=48", "--interpret"],
        "error: no value for the runtime dims K",
    );
    assert!(err.contains("hint: give them with --dims"), "{err}");
    fails(
        &["run", &gemm, "--dims", "M=64;N=48", "--interpret"],
        "is not of the form NAME=INTEGER",
    );
    fails(
        &["run", &gemm, "--dims", "M=64,N=48,K=40,Q=3", "--interpret"],
        "`Q` is not a runtime dim of `gemm` (runtime dims: M, K, N)",
    );
    fails(
        &[
            "run",
            &gemm,
            "--dims",
            "M=4,N=4,K=40",
            "--interpret",
            "--input",
            &format!("A={}", f64_file.display()),
        ],
        "holds f64, but `A` holds f32",
    );
    fails(
        &[
            "run",
            &gemm,
            "--dims",
            "M=4,N=4,K=40",
            "--interpret",
            "--input",
            &format!("A={}", wrong_k.display()),
        ],
        "the dim `K` disagrees",
    );
    fails(
        &[
            "run",
            &gemm,
            "--dims",
            "M=4,N=4,K=4",
            "--interpret",
            "--input",
            "Z=z.npy",
        ],
        "`Z` is not a tensor parameter of `gemm` (tensors: A, B, C)",
    );
    fails(
        &[
            "run",
            &gemm,
            "--dims",
            "M=4,N=4,K=4",
            "--interpret",
            "--input",
            "A=/nonexistent/a.npy",
        ],
        "--input A: /nonexistent/a.npy",
    );
    fails(
        &[
            "run",
            &gemm,
            "--dims",
            "M=4,N=4,K=4",
            "--interpret",
            "--autotune",
            "TILE_Q=4",
        ],
        "TILE_Q",
    );
    let saxpy = example("saxpy.ph");
    fails(
        &["run", &saxpy, "--dims", "N=100", "--interpret"],
        "no value for the scalar parameter `a`",
    );
    fails(
        &[
            "run",
            &saxpy,
            "--dims",
            "N=100",
            "--interpret",
            "--arg",
            "b=1",
        ],
        "`b` is not a scalar parameter of `saxpy` (parameters: a, X, Y)",
    );
    fails(
        &[
            "run",
            &saxpy,
            "--dims",
            "N=100",
            "--interpret",
            "--arg",
            "a=x",
        ],
        "`x` is not a number",
    );
    // Without --interpret the GPU runs (tests/run_gpu.rs, tests/run_gpu_offline.rs).
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn check_and_runtime_errors_point_into_the_source() {
    let dir = temp_dir("diag");
    let bad = dir.join("bad.ph");
    std::fs::write(
        &bad,
        "kernel k(X: tensor<f32>[N]) {\n  let x: f32 = 1\n  X[0 :+ 4] = X[0 :+ 4] + y\n}\n",
    )
    .unwrap();
    let err = fails(
        &[
            "run",
            &bad.display().to_string(),
            "--dims",
            "N=4",
            "--interpret",
        ],
        "bad.ph:3:",
    );
    assert!(err.contains('^'), "{err}");
    let div = dir.join("div.ph");
    std::fs::write(&div, "@launch(32)\nkernel div(O: tensor<i32>[32]) {\n  O[ctx.thread] = 7 / (ctx.thread - 5)\n}\n").unwrap();
    let err = fails(
        &["run", &div.display().to_string(), "--interpret"],
        "integer division by zero",
    );
    assert!(err.contains("div.ph:3:19"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bf16_tensors_written_as_bits_read_back_as_inputs() {
    let dir = temp_dir("bf16");
    let out = dir.display().to_string();
    let typed = example("gemm_typed.ph");
    let types = "TA=bf16,TB=bf16,TC=bf16";
    let first = phobos(&[
        "run",
        &typed,
        "--dims",
        "M=20,N=16,K=24",
        "--types",
        types,
        "--interpret",
        "--output-dir",
        &out,
    ]);
    assert!(first.status.success(), "{}", stderr(&first));
    assert!(
        stderr(&first).contains("A.npy (bf16 as <u2)"),
        "{}",
        stderr(&first)
    );
    let (pa, pb) = (format!("A={out}/A.npy"), format!("B={out}/B.npy"));
    let again = phobos(&[
        "run",
        &typed,
        "--dims",
        "N=16",
        "--types",
        types,
        "--interpret",
        "--input",
        &pa,
        "--input",
        &pb,
    ]);
    assert!(again.status.success(), "{}", stderr(&again));
    assert_eq!(stdout(&first), stdout(&again));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn tensors_too_large_for_the_host_are_refused_before_allocation() {
    let dir = temp_dir("large");
    // Static dims the checker accepts (the bytes fit in i64), far beyond any host's memory.
    let big = dir.join("big.ph");
    std::fs::write(
        &big,
        "kernel f(X: tensor<f32>[2147483647, 1048576]) {\n  X[0, 0] = 1.0\n}\n",
    )
    .unwrap();
    let err = fails(
        &["run", big.to_str().unwrap(), "--interpret"],
        "error: the tensors need 16.0 PiB of host memory, but only ",
    );
    assert!(err.contains("hint: make the dims smaller"), "{err}");
    // Runtime dims whose product overflows.
    fails(
        &[
            "run",
            &example("gemm.ph"),
            "--dims",
            "M=2147483647,N=2147483647,K=2147483647",
            "--interpret",
        ],
        "error: the tensors are too large: their size in bytes overflows",
    );
    // A .npy header claiming a shape no file holds names the file.
    let npy = dir.join("huge.npy");
    let header = "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 8), }";
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend((header.len() as u16).to_le_bytes());
    bytes.extend(header.as_bytes());
    std::fs::write(&npy, bytes).unwrap();
    fails(
        &[
            "run",
            &example("gemm.ph"),
            "--interpret",
            "--input",
            &format!("A={}", npy.display()),
        ],
        &format!(
            "error: --input A: {}: malformed .npy header: the shape [4294967296, 4294967296, 8] \
             holds more bytes than any file",
            npy.display()
        ),
    );
}
