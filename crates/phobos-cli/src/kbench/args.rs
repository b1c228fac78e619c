//! `phobos-kbench`'s command line.

use clap::Parser;
use phobos_tune::shard::MAX_SHARDS;
use phobos_tune::space::{Strategy, MAX_EXHAUSTIVE_POINTS};
use std::ffi::OsString;
use std::path::PathBuf;

/// Tune a Phobos kernel: compile every point of its `@autotune` space, check each against the
/// interpreter, time the rest and keep the fastest. GEMM problems come from the command line
/// or a sizes file; results files are checked (`--check`), benchmarked (`--benchmark`) and
/// single configurations run (`--config`) without tuning.
#[derive(Parser, Debug, Clone)]
#[command(
    name = "phobos-kbench",
    version,
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true
)]
pub struct KbenchArgs {
    /// Another command instead of tuning: `merge`, `export`.
    #[command(subcommand)]
    pub command: Option<Command>,
    /// The `.ph` file.
    #[arg(required_unless_present = "worker")]
    pub file: Option<PathBuf>,
    /// Kernel name (needed when the file has several).
    #[arg(long)]
    pub kernel: Option<String>,
    /// A CUDA C++ kernel's checks compare with this kernel at its default point instead of the
    /// kernel's own default point: a `.ph` kernel (run by the interpreter) or a `.cu` kernel
    /// (compiled, run on the same GPU), with the same parameters in the same order.
    #[arg(long, value_name = "FILE[:NAME]")]
    pub reference: Option<String>,
    /// Runtime dims, e.g. "M=4096,N=4096,K=4096".
    #[arg(long)]
    pub dims: Option<String>,
    /// Shorthand for the runtime dim M.
    #[arg(short = 'm')]
    pub m: Option<i64>,
    /// Shorthand for the runtime dim N.
    #[arg(short = 'n')]
    pub n: Option<i64>,
    /// Shorthand for the runtime dim K.
    #[arg(short = 'k')]
    pub k: Option<i64>,
    /// A YAML sizes file: one GEMM problem per entry, tuned in turn (the seed's format).
    #[arg(long, visible_alias = "gemm_size_file", value_name = "FILE")]
    pub sizes: Option<PathBuf>,
    /// Tune the good entries of a sizes file and report the bad ones (default: reject the file).
    #[arg(long)]
    pub skip_bad_entries: bool,
    /// Element type of A: fp32 tf32 fp16 bf16 fp8 (e4m3) bf8 (e5m2) int8, or a Phobos name.
    #[arg(long = "dtype-a", visible_alias = "dtype_a", value_name = "TYPE")]
    pub dtype_a: Option<String>,
    /// Element type of B.
    #[arg(long = "dtype-b", visible_alias = "dtype_b", value_name = "TYPE")]
    pub dtype_b: Option<String>,
    /// Element type of C, the output.
    #[arg(long = "dtype-c", visible_alias = "dtype_c", value_name = "TYPE")]
    pub dtype_c: Option<String>,
    /// A is column-major (rowMajorA: 'N').
    #[arg(long = "col-a", visible_alias = "col_a")]
    pub col_a: bool,
    /// B is column-major (rowMajorB: 'N').
    #[arg(long = "col-b", visible_alias = "col_b")]
    pub col_b: bool,
    /// The tensor parameters playing A, B and C of a GEMM (default "A=A,B=B,C=C").
    #[arg(long, value_name = "A=X,B=W,C=Y")]
    pub operands: Option<String>,
    /// Write the best configuration per problem to FILE, itself a valid sizes file.
    #[arg(short = 'o', long = "output", visible_alias = "o", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Verify the stored configuration of each entry of FILE against the reference (cuBLAS on
    /// the GPU, the interpreter on --backend interp) without tuning; exit 1 if any fails.
    #[arg(long, value_name = "FILE")]
    pub check: Option<PathBuf>,
    /// The seed's spelling of `--check` for the file given with --sizes/--gemm_size_file.
    #[arg(long = "compare_wo_tuning")]
    pub compare_wo_tuning: bool,
    /// Accepted for the seed's scripts: every configuration is checked before it is timed.
    #[arg(long)]
    pub compare: bool,
    /// Time the stored configuration of each entry of FILE (or of the --sizes file) and print
    /// `trans M N K TFLOPS Efficiency` with cuBLAS side by side.
    #[arg(long, value_name = "FILE", num_args = 0..=1)]
    pub benchmark: Option<Option<PathBuf>>,
    /// The peak TFLOP/s the efficiency column is relative to (default: measured on the device
    /// once per element types and kept in the results database).
    #[arg(long, value_name = "TFLOPS", value_parser = positive_f64)]
    pub peak: Option<f64>,
    /// Run one configuration from the config string the tuner prints: compile, verify, time.
    #[arg(long, visible_alias = "config_str", value_name = "STR")]
    pub config: Option<String>,
    /// Pin names of the space and skip their search, e.g. "TILE_M=64 TILE_N=128".
    #[arg(long)]
    pub autotune: Option<String>,
    /// Element-type parameters, e.g. "TA=bf16,TC=f32".
    #[arg(long)]
    pub types: Option<String>,
    /// Tensor memory orders, e.g. "B=col" (row is the default).
    #[arg(long)]
    pub layout: Option<String>,
    /// Scalar argument NAME=VALUE (repeatable).
    #[arg(long = "arg", value_name = "NAME=VALUE")]
    pub args: Vec<String>,
    /// How the searched points are picked: `exhaustive` (every point, in space order),
    /// `random` (a seeded sample, then refinement around its best points; with --max-points N,
    /// a sample of N points from the whole space, drawn up front), `anneal` (simulated
    /// annealing over neighbouring points) or `model` (a surrogate model of the time that
    /// picks the likeliest improvements), in batches as results come.
    #[arg(long, default_value = "exhaustive", value_parser = strategy)]
    pub strategy: Strategy,
    /// Start no point's check and timing after this many seconds of the run (the final round
    /// still runs among the points measured).
    #[arg(long, value_name = "SECONDS", value_parser = max_time_s)]
    pub max_time: Option<f64>,
    /// Measure first the best points of the nearest problems recorded in PATH (a results
    /// database, or a dataset `phobos-kbench record` wrote); with --strategy anneal, model or
    /// random without --max-points.
    #[arg(long, value_name = "PATH")]
    pub seed_from: Option<PathBuf>,
    /// Search at most N points (needed for spaces of more than 65536 points); with --shard, N
    /// in all, split over the shards.
    #[arg(long, value_name = "N", value_parser = max_points)]
    pub max_points: Option<usize>,
    /// Parallel compiles (default: all cores; at most 1024).
    #[arg(long, value_parser = jobs)]
    pub jobs: Option<usize>,
    /// The results database (default: $XDG_CACHE_HOME/phobos/kbench.sqlite).
    #[arg(long)]
    pub db: Option<PathBuf>,
    /// Measure again even when the database has results for this problem.
    #[arg(long)]
    pub retune: bool,
    /// `cuda` (the GPU) or `interp` (the CPU interpreter, timed by the wall clock).
    #[arg(long, default_value = "cuda")]
    pub backend: String,
    /// Everything but timing: space, pruning, compiles, resources, one interpreter check.
    #[arg(long)]
    pub dry_run: bool,
    /// Print the table of every point sorted by time, with resources and occupancy.
    #[arg(long)]
    pub report: bool,
    /// One JSON object per problem on stdout instead of text.
    #[arg(long)]
    pub json: bool,
    /// The full timing budget, in milliseconds of measured time (at most an hour): what each
    /// leader gets in the final round, and a single configuration (`--config`).
    #[arg(long, default_value_t = phobos_tune::timing::FULL_BUDGET_MS, value_parser = budget_ms)]
    pub budget_ms: f64,
    /// The search's timing budget per point, in milliseconds of measured time (never more
    /// than --budget-ms): enough to rank the points, the leaders are re-timed at --budget-ms.
    #[arg(long, default_value_t = phobos_tune::timing::SEARCH_BUDGET_MS, value_parser = budget_ms)]
    pub search_budget_ms: f64,
    /// Stop timing a point after 3 launches when its fastest is more than FACTOR times the
    /// best median so far (at least 1); it is kept as stopped early and never wins.
    #[arg(long, value_name = "FACTOR", default_value_t = phobos_tune::timing::EARLY_STOP_FACTOR, value_parser = early_stop)]
    pub early_stop: f64,
    /// Time every point at its full search budget, however slow.
    #[arg(long, conflicts_with = "early_stop")]
    pub no_early_stop: bool,
    /// Seed of the random inputs.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Keep tiles far larger than the problem (the large-tile heuristic is on by default).
    #[arg(long)]
    pub no_prune_large: bool,
    /// Which GPU to use.
    #[arg(long, default_value_t = 0)]
    pub gpu: u32,
    /// Time on several GPUs at once, one worker per GPU, e.g. "0,1" (compiles stay shared).
    #[arg(long, visible_alias = "gpu_ids", value_name = "0,1,..")]
    pub gpus: Option<String>,
    /// Tune only this share of the work, I of N (0 <= I < N, N at most 4096): the problems'
    /// points (those --strategy and --max-points pick) are split over N processes by
    /// predicted cost; each writes its own database, merged afterwards (default:
    /// SLURM_ARRAY_TASK_ID of SLURM_ARRAY_TASK_COUNT, or JOB_COMPLETION_INDEX of --shards).
    #[arg(long, value_name = "I/N")]
    pub shard: Option<String>,
    /// The number of shards when the scheduler gives only the index (JOB_COMPLETION_INDEX).
    #[arg(long, value_name = "N", value_parser = shards)]
    pub shards: Option<usize>,
    /// Run the interleaved final round among each problem's leaders even when every time
    /// comes from the database (after a merge: the leaders re-timed on one GPU).
    #[arg(long)]
    pub final_round: bool,
    /// Seconds one worker job may take before the worker is presumed hung and replaced.
    #[arg(long, default_value_t = 120.0, hide = true, value_parser = job_timeout_s)]
    pub job_timeout_s: f64,
    /// Internal: run as the worker process (jobs on stdin, results on stdout).
    #[arg(long, hide = true)]
    pub worker: bool,
}

/// The most parallel compiles `--jobs` may ask for: more threads than this only exhaust memory.
pub const MAX_JOBS: usize = 1024;

/// A finite number above zero (`--peak`); `nan`, `inf` and `1e400` are refused here, where the
/// flag is read, rather than by a worker later.
pub(crate) fn positive_f64(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a number"))?;
    if v.is_finite() && v > 0.0 {
        Ok(v)
    } else {
        Err(format!("`{s}` must be a finite number above 0"))
    }
}

/// `positive_f64` at most `max`, named in the error with its unit.
fn bounded_f64(s: &str, max: f64, unit: &str) -> Result<f64, String> {
    let v = positive_f64(s)?;
    if v > max {
        return Err(format!("`{s}` is more than {max} {unit}"));
    }
    Ok(v)
}

/// `--budget-ms`: a timing budget of at most an hour.
fn budget_ms(s: &str) -> Result<f64, String> {
    bounded_f64(s, 3_600_000.0, "ms (an hour)")
}

/// `--early-stop`: a factor of at least 1, at most a million.
fn early_stop(s: &str) -> Result<f64, String> {
    let v = bounded_f64(s, 1e6, "")?;
    if v < 1.0 {
        return Err(format!(
            "`{s}` is below 1: a point as fast as the best would stop (--no-early-stop turns \
             it off)"
        ));
    }
    Ok(v)
}

/// `--job-timeout-s`: at most a day.
fn job_timeout_s(s: &str) -> Result<f64, String> {
    bounded_f64(s, 86_400.0, "s (a day)")
}

/// `--strategy`: `exhaustive`, `random`, `anneal` or `model`.
pub(crate) fn strategy(s: &str) -> Result<Strategy, String> {
    Strategy::parse(s)
        .ok_or_else(|| format!("`{s}` is not a strategy (exhaustive, random, anneal, model)"))
}

/// `--max-time`: seconds, at most a week.
fn max_time_s(s: &str) -> Result<f64, String> {
    bounded_f64(s, 604_800.0, "s (a week)")
}

/// `--max-points`: 1 to `MAX_EXHAUSTIVE_POINTS`, the most a run may search.
pub(crate) fn max_points(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if n >= 1 && n as u128 <= MAX_EXHAUSTIVE_POINTS => Ok(n),
        _ => Err(format!(
            "`{s}` is not a number of points from 1 to {MAX_EXHAUSTIVE_POINTS}"
        )),
    }
}

/// `--shards`: 1 to [`MAX_SHARDS`].
fn shards(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if (1..=MAX_SHARDS).contains(&n) => Ok(n),
        _ => Err(format!(
            "`{s}` is not a number of shards from 1 to {MAX_SHARDS}"
        )),
    }
}

/// `--jobs`: 1 to [`MAX_JOBS`].
fn jobs(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if (1..=MAX_JOBS).contains(&n) => Ok(n),
        _ => Err(format!(
            "`{s}` is not a number of jobs from 1 to {MAX_JOBS}"
        )),
    }
}

/// The commands besides tuning.
#[derive(clap::Subcommand, Debug, Clone)]
pub enum Command {
    /// Merge results databases (the shards of a job) into OUT: every row once, however often
    /// merged; inputs measured on different devices, drivers or compilers are refused.
    Merge(MergeArgs),
    /// Write the winner of every problem of one kernel stored in a results database as a
    /// config table (JSON) that a program loads to pick the tuned configuration of a problem,
    /// or of the nearest one it has not seen.
    Export(ExportArgs),
    /// Write the searches of one kernel stored in a results database as a dataset (JSON
    /// Lines: each problem's points, outcomes, times and prior features) for `replay`.
    Record(super::replay::RecordArgs),
    /// Simulate a search strategy on recorded exhaustive runs, without a GPU: the time of the
    /// point it would pick against the exhaustive best, and the points and time it spends.
    Replay(super::replay::ReplayArgs),
    /// Render the stored searches of a kernel as a standalone HTML page (tables and plots).
    Report(super::html::ReportArgs),
}

/// `phobos-kbench export --db PATH --kernel FILE[:NAME] -o table.json`.
#[derive(clap::Args, Debug, Clone)]
pub struct ExportArgs {
    /// The results database.
    #[arg(long)]
    pub db: PathBuf,
    /// The kernel: its `.ph` file, and `:NAME` when the file has several.
    #[arg(long, value_name = "FILE[:NAME]")]
    pub kernel: String,
    /// The table to write.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: PathBuf,
}

/// `phobos-kbench merge OUT IN...`.
#[derive(clap::Args, Debug, Clone)]
pub struct MergeArgs {
    /// The merged database (created when missing; what it holds is kept).
    pub out: PathBuf,
    /// The databases to add.
    #[arg(required = true)]
    pub inputs: Vec<PathBuf>,
    /// Merge measurements taken on different devices, drivers or compilers (the database keys
    /// them apart; a run only reuses its own setup's).
    #[arg(long)]
    pub allow_mixed: bool,
}

/// The seed's single-dash spellings (`-dtype_a bf8`, `-col_a`), which clap would read as
/// bundles of short flags, rewritten to their long forms. Only these exact words change.
pub fn normalize(args: impl IntoIterator<Item = OsString>) -> Vec<OsString> {
    const SEED: [(&str, &str); 5] = [
        ("-dtype_a", "--dtype-a"),
        ("-dtype_b", "--dtype-b"),
        ("-dtype_c", "--dtype-c"),
        ("-col_a", "--col-a"),
        ("-col_b", "--col-b"),
    ];
    args.into_iter()
        .map(|a| {
            let Some(s) = a.to_str() else { return a };
            for (seed, long) in SEED {
                if s == seed {
                    return OsString::from(long);
                }
                if let Some(v) = s.strip_prefix(seed).and_then(|r| r.strip_prefix('=')) {
                    return OsString::from(format!("{long}={v}"));
                }
            }
            a
        })
        .collect()
}

impl KbenchArgs {
    /// Parses the process's arguments (with the seed's spellings).
    pub fn from_env() -> KbenchArgs {
        crate::parse_args(normalize(std::env::args_os()))
    }

    /// The file `--benchmark` names, or the sizes file for a bare `--benchmark`.
    pub fn benchmark_file(&self) -> Option<Result<PathBuf, &'static str>> {
        Some(match self.benchmark.as_ref()? {
            Some(b) => Ok(b.clone()),
            None => self
                .sizes
                .clone()
                .ok_or("--benchmark needs a file: --benchmark FILE, or --sizes FILE --benchmark"),
        })
    }

    /// The file to check: `--check FILE`, or the sizes file with `--compare_wo_tuning`.
    pub fn check_file(&self) -> Option<Result<PathBuf, &'static str>> {
        if let Some(c) = &self.check {
            return Some(Ok(c.clone()));
        }
        self.compare_wo_tuning.then(|| {
            self.sizes
                .clone()
                .ok_or("--compare_wo_tuning checks the file given with --gemm_size_file/--sizes")
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> KbenchArgs {
        let v: Vec<OsString> = std::iter::once("phobos-kbench")
            .chain(args.iter().copied())
            .map(OsString::from)
            .collect();
        KbenchArgs::try_parse_from(normalize(v)).unwrap()
    }

    #[test]
    fn the_seed_spellings_are_accepted() {
        let a = parse(&[
            "g.ph",
            "--gemm_size_file",
            "in.yaml",
            "-dtype_a",
            "bf8",
            "-dtype_b=fp8",
            "--dtype_c",
            "fp16",
            "-col_a",
            "--col_b",
            "--gpu_ids",
            "4,5",
            "--o",
            "out.yaml",
        ]);
        assert_eq!(a.sizes.as_deref(), Some(std::path::Path::new("in.yaml")));
        assert_eq!(a.dtype_a.as_deref(), Some("bf8"));
        assert_eq!(a.dtype_b.as_deref(), Some("fp8"));
        assert_eq!(a.dtype_c.as_deref(), Some("fp16"));
        assert!(a.col_a && a.col_b);
        assert_eq!(a.gpus.as_deref(), Some("4,5"));
        assert_eq!(a.output.as_deref(), Some(std::path::Path::new("out.yaml")));
        let b = parse(&["g.ph", "-m", "16", "-n", "16", "-k", "16", "-o", "r.yaml"]);
        assert_eq!((b.m, b.n, b.k), (Some(16), Some(16), Some(16)));
        assert!(b.output.is_some());
    }

    #[test]
    fn benchmark_and_check_take_a_file_or_the_sizes_file() {
        let a = parse(&["g.ph", "--benchmark", "r.yaml"]);
        assert_eq!(a.benchmark_file(), Some(Ok(PathBuf::from("r.yaml"))));
        let a = parse(&["g.ph", "--gemm_size_file", "r.yaml", "--benchmark"]);
        assert_eq!(a.benchmark_file(), Some(Ok(PathBuf::from("r.yaml"))));
        let a = parse(&["g.ph", "--benchmark"]);
        assert!(matches!(a.benchmark_file(), Some(Err(_))));
        let a = parse(&["g.ph", "--gemm_size_file", "o.yaml", "--compare_wo_tuning"]);
        assert_eq!(a.check_file(), Some(Ok(PathBuf::from("o.yaml"))));
        let a = parse(&["g.ph", "--compare_wo_tuning"]);
        assert!(matches!(a.check_file(), Some(Err(_))));
        assert_eq!(parse(&["g.ph"]).check_file(), None);
        let a = parse(&["g.ph", "--config_str", "M=1_N=1_K=1"]);
        assert_eq!(a.config.as_deref(), Some("M=1_N=1_K=1"));
    }

    fn refused(args: &[&str]) -> String {
        let v: Vec<OsString> = std::iter::once("phobos-kbench")
            .chain(args.iter().copied())
            .map(OsString::from)
            .collect();
        KbenchArgs::try_parse_from(v).unwrap_err().to_string()
    }

    #[test]
    fn numeric_flags_are_checked_where_they_are_read() {
        for bad in ["nan", "inf", "-inf", "0", "-1", "1e300", "x"] {
            let e = refused(&["g.ph", &format!("--budget-ms={bad}")]);
            assert!(e.contains("--budget-ms"), "{bad}: {e}");
        }
        for bad in ["nan", "inf", "0", "-3", "1e999"] {
            let e = refused(&["g.ph", &format!("--peak={bad}")]);
            assert!(e.contains("finite number above 0"), "{bad}: {e}");
        }
        for bad in ["0", "4294967296", "1025", "-1"] {
            let e = refused(&["g.ph", &format!("--jobs={bad}")]);
            assert!(e.contains("from 1 to 1024"), "{bad}: {e}");
        }
        let a = parse(&[
            "g.ph",
            "--budget-ms",
            "2.5",
            "--peak",
            "989",
            "--jobs",
            "16",
        ]);
        assert_eq!((a.budget_ms, a.peak, a.jobs), (2.5, Some(989.0), Some(16)));
    }

    #[test]
    fn search_budget_and_early_stop() {
        let a = parse(&["g.ph"]);
        assert_eq!((a.budget_ms, a.search_budget_ms), (100.0, 10.0));
        assert_eq!((a.early_stop, a.no_early_stop), (1.5, false));
        let a = parse(&["g.ph", "--search-budget-ms", "2", "--early-stop", "2.5"]);
        assert_eq!((a.search_budget_ms, a.early_stop), (2.0, 2.5));
        assert!(parse(&["g.ph", "--no-early-stop"]).no_early_stop);
        for bad in ["0.5", "0", "nan", "x"] {
            let e = refused(&["g.ph", &format!("--early-stop={bad}")]);
            assert!(e.contains("--early-stop"), "{bad}: {e}");
        }
        assert!(refused(&["g.ph", "--search-budget-ms=0"]).contains("--search-budget-ms"));
        let e = refused(&["g.ph", "--early-stop", "2", "--no-early-stop"]);
        assert!(e.contains("cannot be used with"), "{e}");
    }

    #[test]
    fn merge_is_a_command_and_a_kernel_file_is_not() {
        let a = parse(&[
            "merge",
            "out.sqlite",
            "a.sqlite",
            "b.sqlite",
            "--allow-mixed",
        ]);
        let Some(Command::Merge(m)) = a.command else {
            panic!("{a:?}")
        };
        assert_eq!(m.out, PathBuf::from("out.sqlite"));
        assert_eq!(m.inputs.len(), 2);
        assert!(m.allow_mixed);
        let a = parse(&["g.ph", "--shard", "1/4", "--final-round"]);
        assert!(a.command.is_none());
        assert_eq!(a.shard.as_deref(), Some("1/4"));
        assert!(a.final_round);
        let v: Vec<OsString> = ["phobos-kbench", "merge", "out.sqlite"]
            .iter()
            .map(OsString::from)
            .collect();
        assert!(KbenchArgs::try_parse_from(v).is_err());
    }

    #[test]
    fn other_words_are_left_alone() {
        let v: Vec<OsString> = ["-dtype_ax", "--dtype_a", "-m", "-col_b=1x"]
            .iter()
            .map(OsString::from)
            .collect();
        let n = normalize(v);
        assert_eq!(n[0], "-dtype_ax");
        assert_eq!(n[1], "--dtype_a");
        assert_eq!(n[2], "-m");
        assert_eq!(n[3], "--col-b=1x");
    }
}
