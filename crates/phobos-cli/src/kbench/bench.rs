//! `--benchmark FILE`: the stored configuration of every entry timed and printed as the seed's
//! table, `trans M N K TFLOPS Efficiency`, against the peak, with cuBLAS (cuBLASLt for fp8)
//! measured in the same run side by side. Entries are grouped by element types, one table per
//! group, each with its peak. On the interpreter the numbers are its wall clock, labelled so,
//! and there is no cuBLAS column.
//!
//! The peak: `--peak TFLOPS`; else the best of cuBLAS on a large square GEMM (measured once per
//! device and element types, kept in the results database) and cuBLAS on the entries; without
//! a cuBLAS routine for the types (and on the interpreter), the best entry.

use super::problems::{bind_gemm, Job};
use super::session::Session;
use super::stored::Runner;
use super::UserError;
use phobos_ir::{DType, MemOrder};
use phobos_tune::store::{Peak, PeakKey};
use phobos_tune::timing::TimeSettings;
use phobos_tune::worker::LibrarySpec;
use phobos_tune::workflow::{GemmProblem, Operands};
use phobos_tune::{Backend, Frontend, Problem, Store};
use std::process::ExitCode;

/// The side of the square GEMM the peak is measured on.
const PEAK_SIZE: i64 = 4096;

/// Timing rounds per entry on the GPU: Phobos and cuBLAS alternate, each keeps its best.
const BENCH_ROUNDS: usize = 2;

struct Row {
    job: Job,
    tflops: Option<f64>,
    cublas: Option<f64>,
    /// The point that ran (for measuring the peak with the same kernel binding).
    point: Option<phobos_ir::Point>,
    error: Option<String>,
}

/// The seed's columns: `trans M N K TFLOPS Efficiency`, then `cuBLAS` on the GPU.
pub fn header(with_cublas: bool) -> String {
    let mut s = format!(
        "{:<5}{:>5}{:>6}{:>6}{:>10}{:>12}",
        "trans", "M", "N", "K", "TFLOPS", "Efficiency"
    );
    if with_cublas {
        s.push_str(&format!("{:>10}", "cuBLAS"));
    }
    s
}

/// TFLOP/s in the seed's two decimals; tiny interpreter rates in scientific notation.
fn tflops_text(t: Option<f64>) -> String {
    match t {
        Some(t) if t >= 0.01 || t == 0.0 => format!("{t:.2}"),
        Some(t) => format!("{t:.2e}"),
        None => "-".into(),
    }
}

/// One row of the table (`-` where there is no number).
pub fn row(
    trans: &str,
    (m, n, k): (i64, i64, i64),
    tflops: Option<f64>,
    peak: f64,
    cublas: Option<Option<f64>>,
) -> String {
    let eff = tflops
        .filter(|_| peak > 0.0)
        .map_or("-".to_string(), |t| format!("{:.0}%", 100.0 * t / peak));
    let mut s = format!(
        "{trans:<5}{m:>5}{n:>6}{k:>6}{:>10}{eff:>12}",
        tflops_text(tflops)
    );
    if let Some(c) = cublas {
        s.push_str(&format!("{:>10}", tflops_text(c)));
    }
    s
}

/// The element types of A, B and C.
type Types = (Option<DType>, Option<DType>, Option<DType>);

fn types_of(job: &Job) -> Types {
    let o = job.gemm.map(|g| g.operands).unwrap_or_default();
    (o.dtype_a, o.dtype_b, o.dtype_c)
}

fn name(t: Option<DType>) -> &'static str {
    t.map_or("?", DType::name)
}

fn settings(session: &Session) -> TimeSettings {
    if session.backend == Backend::Interp {
        return super::session::full_budget(&session.settings);
    }
    gpu_settings(session.args.budget_ms)
}

/// Benchmark mode times longer than a search (the seed runs 1000 launches). No early stop:
/// the jobs carry no best time to compare with. Every field crosses to the worker as JSON, so
/// every value must be finite (JSON has no infinity).
fn gpu_settings(budget_ms: f64) -> TimeSettings {
    TimeSettings {
        warmup: 10,
        min_reps: 20,
        max_reps: 1000,
        budget_ms: (budget_ms * 2.0).max(1.0),
        ..TimeSettings::default()
    }
}

/// cuBLAS on a square GEMM of these element types, measured on the runner's GPU.
fn square_peak(runner: &mut Runner, rows: &[&Row], settings: &TimeSettings) -> Option<Peak> {
    let session = runner.session;
    let first = rows.iter().find(|r| r.point.is_some())?;
    let (a, b, c) = types_of(&first.job);
    let gemm = GemmProblem {
        m: PEAK_SIZE,
        n: PEAK_SIZE,
        k: PEAK_SIZE,
        // Row-major A and column-major B: the layout every cuBLAS path takes (fp8 only this).
        operands: Operands {
            dtype_a: a,
            dtype_b: b,
            dtype_c: c,
            order_a: Some(MemOrder::RowMajor),
            order_b: Some(MemOrder::ColMajor),
        },
    };
    let extra = Problem {
        args: first.job.problem.args.clone(),
        ..Problem::default()
    };
    let (problem, _) = bind_gemm(session.frontend.info(), &session.names, &gemm, &extra).ok()?;
    let point = first.point.clone()?;
    let kernel = session.frontend.instantiate(&point, &problem).ok()?;
    let names = &session.names;
    let spec = LibrarySpec {
        point,
        a: names.a.clone(),
        b: names.b.clone(),
        c: names.c.clone(),
    };
    let call = phobos::backend::cuda_blas::plan(&kernel, &spec, &problem).ok()?;
    eprintln!(
        "measuring the peak: {} {PEAK_SIZE}x{PEAK_SIZE}x{PEAK_SIZE}",
        call.name
    );
    let stats = runner.time_library(spec, &problem, settings).ok()?;
    Some(Peak {
        tflops: gemm.tflops(stats.median_ms)?,
        method: format!("{} {PEAK_SIZE}x{PEAK_SIZE}x{PEAK_SIZE}", call.name),
    })
}

/// The peak of one group of rows and how it was found.
fn peak(
    runner: &mut Runner,
    store: &mut Option<Store>,
    rows: &[&Row],
    settings: &TimeSettings,
) -> (f64, String) {
    let session = runner.session;
    if let Some(p) = session.args.peak {
        return (p, "given with --peak".into());
    }
    let best = |v: Vec<f64>| {
        v.into_iter()
            .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))))
    };
    let best_row = best(rows.iter().filter_map(|r| r.tflops).collect());
    if session.backend == Backend::Interp {
        return (
            best_row.unwrap_or(0.0),
            "the best row: no library on the interpreter; --peak sets it".into(),
        );
    }
    let key = PeakKey {
        device: runner.device.name.clone(),
        driver: runner.device.driver.clone(),
        backend: session.backend.name().into(),
        dtypes: {
            let (a, b, c) = types_of(&rows[0].job);
            format!("A={},B={},C={}", name(a), name(b), name(c))
        },
    };
    let stored = store.as_ref().and_then(|s| s.peak(&key).ok().flatten());
    let square = match stored {
        Some(p) => Some(p),
        None => {
            let p = square_peak(runner, rows, settings);
            if let (Some(p), Some(s)) = (&p, store.as_mut()) {
                if let Err(e) = s.set_peak(&key, p) {
                    eprintln!("warning: the measured peak was not stored: {e}");
                }
            }
            p
        }
    };
    let best_cublas = best(rows.iter().filter_map(|r| r.cublas).collect());
    match (square, best_cublas) {
        (Some(sq), Some(c)) if c > sq.tflops => (c, "cuBLAS on an entry of this table".into()),
        (Some(sq), _) => (sq.tflops, sq.method),
        (None, Some(c)) => (c, "cuBLAS on an entry of this table".into()),
        (None, None) => (
            best_row.unwrap_or(0.0),
            "the best row: cuBLAS has no routine for these types; --peak sets it".into(),
        ),
    }
}

/// Times every entry and prints the tables.
pub fn run(session: &Session, jobs: Vec<Job>) -> Result<ExitCode, UserError> {
    if session.args.dry_run {
        return Err(UserError::new(
            "--benchmark times configurations: it cannot run with --dry-run",
        ));
    }
    let mut runner = Runner::start(session)?;
    let settings = settings(session);
    let on_gpu = session.backend == Backend::Cuda;
    let mut rows: Vec<Row> = Vec::new();
    let n_jobs = jobs.len();
    for (i, job) in jobs.into_iter().enumerate() {
        let started = std::time::Instant::now();
        eprintln!("benchmark {}/{n_jobs}: {}", i + 1, job.label());
        let mut r = Row {
            job,
            tflops: None,
            cublas: None,
            point: None,
            error: None,
        };
        match r.job.config.clone() {
            None => r.error = Some("no stored configuration (`config:`) to time".into()),
            Some(stored) => match runner.prepare(&r.job, &stored) {
                Err(e) => r.error = Some(e),
                Ok(p) => {
                    let library = if on_gpu {
                        runner.library(&r.job, &p).ok().map(|(spec, _)| spec)
                    } else {
                        None
                    };
                    // Phobos and cuBLAS take turns (P C, then C P), so that both run at the
                    // same clocks and temperature; each keeps its faster round.
                    let (mut phobos_ms, mut cublas_ms): (Option<f64>, Option<f64>) = (None, None);
                    let faster = |a: Option<f64>, b: f64| Some(a.map_or(b, |a| a.min(b)));
                    let rounds = if library.is_some() { BENCH_ROUNDS } else { 1 };
                    for round in 0..rounds {
                        for library_turn in [round % 2 == 1, round % 2 == 0] {
                            if !library_turn && r.error.is_none() {
                                match runner.time(&r.job, &p, &settings) {
                                    Ok(s) => phobos_ms = faster(phobos_ms, s.median_ms),
                                    Err(e) => r.error = Some(e),
                                }
                            }
                            if let (true, Some(spec)) = (library_turn, &library) {
                                match runner.time_library(spec.clone(), &r.job.problem, &settings) {
                                    Ok(s) => cublas_ms = faster(cublas_ms, s.median_ms),
                                    Err(e) => eprintln!("{}: cuBLAS failed: {e}", r.job.label()),
                                }
                            }
                        }
                    }
                    r.tflops = phobos_ms.and_then(|ms| r.job.gemm.and_then(|g| g.tflops(ms)));
                    r.cublas = cublas_ms.and_then(|ms| r.job.gemm.and_then(|g| g.tflops(ms)));
                    r.point = Some(p.point);
                }
            },
        }
        let rate = |t: Option<f64>| t.map_or("-".to_string(), |t| format!("{t:.2} TFLOP/s"));
        eprintln!(
            "  Phobos {}, cuBLAS {} ({:.1} s)",
            rate(r.tflops),
            rate(r.cublas),
            started.elapsed().as_secs_f64()
        );
        if let Some(e) = &r.error {
            let at = r
                .job
                .origin
                .as_ref()
                .map_or_else(String::new, |o| format!("{o}: "));
            eprintln!("{at}{}: {e}", r.job.label());
        }
        rows.push(r);
    }
    // Groups by element types, in the order they first appear.
    let mut groups: Vec<(Types, Vec<usize>)> = Vec::new();
    for (i, r) in rows.iter().enumerate() {
        let t = types_of(&r.job);
        match groups.iter_mut().find(|(g, _)| *g == t) {
            Some((_, v)) => v.push(i),
            None => groups.push((t, vec![i])),
        }
    }
    let mut store = Store::open(&session.db_path).ok();
    let kernel = session.kernel_name();
    for (n, ((a, b, c), idx)) in groups.iter().enumerate() {
        let group: Vec<&Row> = idx.iter().map(|&i| &rows[i]).collect();
        let (peak, how) = peak(&mut runner, &mut store, &group, &settings);
        if n > 0 {
            outln!();
        }
        let inputs = if a == b {
            name(*a).to_string()
        } else {
            format!("{} x {}", name(*a), name(*b))
        };
        let clock = if on_gpu {
            String::new()
        } else {
            " on the CPU interpreter, wall-clock times, not GPU times".into()
        };
        outln!(
            "Benchmarking {kernel} with {inputs} inputs, {} output{clock} (peak tflops: {}, {how})",
            name(*c),
            tflops_text(Some(peak))
        );
        outln!("{}", header(on_gpu));
        for r in group {
            let dims = r.job.gemm.map_or((0, 0, 0), |g| (g.m, g.n, g.k));
            let trans = r.job.gemm.map_or("?".into(), |g| g.trans());
            outln!(
                "{}",
                row(&trans, dims, r.tflops, peak, on_gpu.then_some(r.cublas))
            );
        }
    }
    let failed = rows.iter().filter(|r| r.error.is_some()).count();
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The settings reach the worker unchanged (an infinite value once became JSON `null`,
    /// which the worker could not read, and every benchmark waited for its job timeout).
    #[test]
    fn gpu_settings_cross_the_worker_protocol() {
        use phobos_tune::worker::protocol::{decode, encode};
        use phobos_tune::worker::{Request, VariantSpec};
        let req = Request::Time {
            id: 1,
            variant: VariantSpec {
                point: phobos_ir::Point(vec![]),
                artifact: None,
            },
            problem: Problem::default(),
            settings: gpu_settings(50.0),
            best_ms: None,
            seed: 0,
        };
        assert_eq!(decode::<Request>(&encode(&req)), Some(req));
    }

    #[test]
    fn the_table_is_the_seeds() {
        // The seed's sample output, column for column.
        assert_eq!(
            header(false),
            "trans    M     N     K    TFLOPS  Efficiency"
        );
        assert_eq!(
            row("NT", (4864, 4096, 8192), Some(841.22), 1298.0, None),
            "NT    4864  4096  8192    841.22         65%"
        );
        assert_eq!(
            row("NT", (8192, 8192, 8192), Some(745.31), 1298.0, None),
            "NT    8192  8192  8192    745.31         57%"
        );
        assert_eq!(
            header(true),
            "trans    M     N     K    TFLOPS  Efficiency    cuBLAS"
        );
        assert_eq!(
            row("TN", (16, 16, 16), None, 10.0, Some(Some(0.5))),
            "TN      16    16    16         -           -      0.50"
        );
        assert_eq!(
            row("NN", (64, 64, 64), Some(2.5e-5), 5e-5, Some(None)),
            "NN      64    64    64   2.50e-5         50%         -"
        );
    }
}
