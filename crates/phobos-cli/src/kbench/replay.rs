//! `phobos-kbench record` (a results database's searches as a dataset) and `phobos-kbench
//! replay` (a strategy simulated on recorded exhaustive runs, no GPU).

use super::args::{max_points, positive_f64, strategy};
use super::export::{load_kernel, open_db};
use super::UserError;
use phobos::frontend::CheckFrontend;
use phobos_tune::store::StoredSearch;
use phobos_tune::strategy::prior::prior;
use phobos_tune::strategy::replay::{self, Dataset, Header, Recorded, Replayed};
use phobos_tune::strategy::{Prior, Strategy};
use phobos_tune::{Frontend, Outcome};
use serde_json::json;
use std::path::PathBuf;
use std::process::ExitCode;

/// `phobos-kbench record --db PATH [--kernel FILE[:NAME]] -o FILE.jsonl`.
#[derive(clap::Args, Debug, Clone)]
pub struct RecordArgs {
    /// The results database.
    #[arg(long)]
    pub db: PathBuf,
    /// The kernel: its `.ph` file, and `:NAME` when the file has several (default: every
    /// kernel in the database, without prior features).
    #[arg(long, value_name = "FILE[:NAME]")]
    pub kernel: Option<String>,
    /// Multiprocessors of the device the runs were measured on (the prior's wave count).
    #[arg(long, default_value_t = 132)]
    pub sm_count: u32,
    /// The dataset to write (JSON Lines).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: PathBuf,
}

/// `phobos-kbench replay (--data FILE.. | --db PATH [--kernel ..]) --strategy S`.
#[derive(clap::Args, Debug, Clone)]
pub struct ReplayArgs {
    /// Datasets `record` wrote (repeatable).
    #[arg(long, value_name = "FILE")]
    pub data: Vec<PathBuf>,
    /// A results database instead (its searches as `record` would write them).
    #[arg(long)]
    pub db: Option<PathBuf>,
    /// With --db: the kernel, for the prior features.
    #[arg(long, value_name = "FILE[:NAME]")]
    pub kernel: Option<String>,
    /// With --db: multiprocessors of the device (the prior's wave count).
    #[arg(long, default_value_t = 132)]
    pub sm_count: u32,
    /// Strategies, comma-separated: exhaustive, random, anneal, model.
    #[arg(long, value_delimiter = ',', value_parser = strategy, default_value = "model")]
    pub strategy: Vec<Strategy>,
    /// Points per search (default: each strategy's own budget; random with it draws its
    /// points up front, as in a run).
    #[arg(long, value_parser = max_points)]
    pub max_points: Option<usize>,
    /// Device and compile time per search, in seconds.
    #[arg(long, value_name = "SECONDS", value_parser = positive_f64)]
    pub max_time: Option<f64>,
    /// The first seed.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Searches per strategy and dataset, with seeds from --seed on (the table shows their
    /// mean and worst).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub seeds: u64,
    /// One JSON object on stdout.
    #[arg(long)]
    pub json: bool,
}

/// A stored search as a dataset; with the kernel, each point's prior features.
pub(super) fn dataset(
    s: &StoredSearch,
    frontend: Option<&CheckFrontend>,
    sm_count: u32,
) -> Dataset {
    let points = s
        .points
        .iter()
        .map(|(r, reps, compile_ms)| {
            let prior = frontend
                .and_then(|f| f.instantiate(&r.point, &s.problem).ok())
                .map_or(Prior::default(), |k| prior(&k, &s.problem, sm_count));
            let median = r.outcome.stats().map(|x| x.median_ms);
            Recorded {
                point: r.point.clone(),
                status: r.outcome.status().into(),
                median_ms: median,
                duplicate_of: match &r.outcome {
                    Outcome::Duplicate(of) => Some(of.clone()),
                    _ => None,
                },
                gpu_ms: median.map_or(0.0, |m| m * f64::from(*reps)),
                compile_ms: *compile_ms,
                prior,
            }
        })
        .collect();
    Dataset {
        header: Header {
            kernel: s.kernel.clone(),
            problem: s.problem.clone(),
            device: s.device.clone(),
            backend: s.backend.name().into(),
        },
        points,
    }
}

fn from_db(
    db: &std::path::Path,
    kernel: Option<&str>,
    sm_count: u32,
) -> Result<Vec<Dataset>, UserError> {
    let frontend = kernel.map(load_kernel).transpose()?;
    let store = open_db(db)?;
    let searches = store
        .searches(frontend.as_ref().map(|f| f.kernel_hash()))
        .map_err(|e| UserError::new(e.to_string()))?;
    if searches.is_empty() {
        return Err(UserError::new(format!(
            "{} holds no search{}",
            db.display(),
            frontend.as_ref().map_or(String::new(), |f| format!(
                " of `{}` of this source",
                f.kernel_name()
            ))
        ))
        .hint("tune it first: phobos-kbench FILE --dims ... --db PATH"));
    }
    Ok(searches
        .iter()
        .map(|s| dataset(s, frontend.as_ref(), sm_count))
        .collect())
}

pub fn record(args: &RecordArgs) -> Result<ExitCode, UserError> {
    let datasets = from_db(&args.db, args.kernel.as_deref(), args.sm_count)?;
    std::fs::write(&args.output, replay::write(&datasets))
        .map_err(|e| UserError::new(format!("cannot write {}: {e}", args.output.display())))?;
    let points: usize = datasets.iter().map(|d| d.points.len()).sum();
    eprintln!(
        "wrote {} with {} search{} ({points} points)",
        args.output.display(),
        datasets.len(),
        if datasets.len() == 1 { "" } else { "es" }
    );
    Ok(ExitCode::SUCCESS)
}

/// A dataset's name in the table: the kernel and the problem.
fn label(d: &Dataset) -> String {
    let p = &d.header.problem;
    let mut s = format!("{} {}", d.header.kernel, p.dims_text());
    if !p.types.is_empty() {
        s.push_str(&format!(" {}", p.types_text()));
    }
    if !p.layouts.is_empty() {
        s.push_str(&format!(" {}", p.layouts_text()));
    }
    s
}

pub fn run(args: &ReplayArgs) -> Result<ExitCode, UserError> {
    let mut datasets = Vec::new();
    for path in &args.data {
        let text = std::fs::read_to_string(path)
            .map_err(|e| UserError::new(format!("cannot read {}: {e}", path.display())))?;
        let d =
            replay::parse(&text).map_err(|e| UserError::new(format!("{}:{e}", path.display())))?;
        datasets.extend(d);
    }
    if let Some(db) = &args.db {
        datasets.extend(from_db(db, args.kernel.as_deref(), args.sm_count)?);
    }
    if datasets.is_empty() {
        return Err(UserError::new("nothing to replay")
            .hint("give recorded runs with --data FILE (phobos-kbench record) or --db PATH"));
    }
    let max_ms = args.max_time.map(|s| s * 1e3);
    let mut rows = Vec::new();
    for d in &datasets {
        for &s in &args.strategy {
            let runs: Vec<Replayed> = (0..args.seeds)
                .map(|k| d.replay(s, args.max_points, max_ms, args.seed + k))
                .collect();
            rows.push((d, s, runs));
        }
    }
    if args.json {
        let out: Vec<_> = rows
            .iter()
            .map(|(d, s, runs)| {
                let n = runs.len() as f64;
                json!({
                    "dataset": label(d),
                    "device": d.header.device,
                    "backend": d.header.backend,
                    "strategy": s.name(),
                    "best_fraction": runs.iter().map(|r| r.best_fraction).sum::<f64>() / n,
                    "worst_best_fraction": runs.iter().map(|r| r.best_fraction).fold(f64::INFINITY, f64::min),
                    "points": runs.iter().map(|r| r.points).sum::<usize>() as f64 / n,
                    "time_share": runs.iter().map(|r| r.time_share).sum::<f64>() / n,
                    "gpu_ms": runs.iter().map(|r| r.gpu_ms).sum::<f64>() / n,
                    "compile_ms": runs.iter().map(|r| r.compile_ms).sum::<f64>() / n,
                    "exhaustive_points": runs[0].exhaustive_points,
                    "runs": runs,
                })
            })
            .collect();
        outln!("{}", json!({ "replays": out }));
        return Ok(ExitCode::SUCCESS);
    }
    outln!(
        "{:<48} {:<10} {:>7} {:>8} {:>8} {:>8}",
        "dataset",
        "strategy",
        "points",
        "best",
        "worst",
        "time"
    );
    for (d, s, runs) in &rows {
        let n = runs.len() as f64;
        let mean = |f: &dyn Fn(&Replayed) -> f64| runs.iter().map(f).sum::<f64>() / n;
        outln!(
            "{:<48} {:<10} {:>7.1} {:>8.3} {:>8.3} {:>7.1}%",
            label(d),
            s.name(),
            mean(&|r| r.points as f64),
            mean(&|r| r.best_fraction),
            runs.iter()
                .map(|r| r.best_fraction)
                .fold(f64::INFINITY, f64::min),
            100.0 * mean(&|r| r.time_share),
        );
    }
    outln!(
        "best: the exhaustive best time over the best time found (mean over {} seed{}); \
         time: share of the exhaustive run's device and compile time",
        args.seeds,
        if args.seeds == 1 { "" } else { "s" }
    );
    Ok(ExitCode::SUCCESS)
}
