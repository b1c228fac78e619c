//! Tune on first use: the seed GEMM (`examples/gemm.ph`) at a small size. The first run tunes
//! it and prints `tuned: <config>`; the same command again finds the winner in the database,
//! times nothing and prints `cached: <config>`.
//!
//! ```text
//! cargo run --release -p phobos --example first_use -- --backend interp --db /tmp/first.sqlite
//! cargo run --release -p phobos --example first_use -- --backend cuda --db /tmp/first.sqlite
//! ```

use phobos::{ArgValue, Backend, DType, HostTensor, Policy, Runtime, Source};
use std::path::PathBuf;
use std::process::ExitCode;

const M: usize = 64;
const N: usize = 64;
const K: usize = 32;

fn main() -> ExitCode {
    // On the GPU, tuning re-executes this program as its worker: serve there and exit.
    phobos::worker_main();
    match run() {
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}

fn run() -> Result<String, Box<dyn std::error::Error>> {
    let mut backend = Backend::interp();
    let mut db: Option<PathBuf> = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--backend" => {
                backend = match args.next().as_deref() {
                    Some("interp") => Backend::interp(),
                    Some("cuda") => Backend::cuda(0),
                    other => return Err(format!("--backend cuda|interp, not {other:?}").into()),
                }
            }
            "--db" => db = Some(args.next().ok_or("--db needs a path")?.into()),
            other => return Err(format!("unknown argument `{other}` (--backend, --db)").into()),
        }
    }
    let mut rt = Runtime::new(backend)?;
    if let Some(db) = db {
        rt = rt.with_db(db);
    }
    let gemm_ph = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/gemm.ph");
    let module = rt.load(&gemm_ph)?;
    let mut gemm = module.kernel("gemm")?;

    let a: Vec<f64> = (0..M * K).map(|i| (i % 7) as f64 - 3.0).collect();
    let b: Vec<f64> = (0..K * N).map(|i| (i % 5) as f64 - 2.0).collect();
    let mut tensors = [
        ArgValue::Tensor(HostTensor::from_f64(DType::F32, &[M, K], &a)),
        ArgValue::Tensor(HostTensor::from_f64(DType::F32, &[K, N], &b)),
        ArgValue::Tensor(HostTensor::zeros(DType::F32, &[M, N])),
    ];
    let ran = gemm.launch(&mut tensors, Policy::TuneOnFirstUse)?;

    // The result is checked here too: C[1][2] = sum_k A[1][k] * B[k][2].
    let c = tensors[2].tensor().ok_or("C is a tensor")?;
    let want: f64 = (0..K).map(|k| a[K + k] * b[k * N + 2]).sum();
    if (c.data[N + 2] - want).abs() > 1e-3 * want.abs().max(1.0) {
        return Err(format!("C[1][2] is {}, expected {want}", c.data[N + 2]).into());
    }
    let word = match ran.source {
        Source::Tuned => "tuned",
        _ => "cached",
    };
    Ok(format!("{word}: {}", ran.config()))
}
