//! Tuning: each problem in turn through the engine, its points as they finish, its winner
//! with the config string that reproduces it; one summary line per problem at the end and the
//! results file (`-o`).

use super::problems::Job;
use super::session::Session;
use super::shard::Given;
use super::{json, render, shard, UserError};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use phobos_tune::workflow::{write_results, ResultRow, SizesItem};
use phobos_tune::{tune, Backend, Event, Frontend, Report, Tuner};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::io::IsTerminal;
use std::process::ExitCode;

fn shell_quote(s: &str) -> String {
    if s.chars()
        .all(|c| c.is_ascii_alphanumeric() || "-_./=,:".contains(c))
    {
        s.to_string()
    } else {
        format!("\"{s}\"")
    }
}

/// The command that runs exactly the winner again: `--config STR` for a GEMM, else the
/// problem's flags and `--autotune`.
fn reproduce(session: &Session, job: &Job, report: &Report) -> Option<String> {
    let w = report.winner.as_ref()?;
    let args = session.args;
    let mut cmd = format!(
        "phobos-kbench {} --kernel {}",
        shell_quote(&session.file_name),
        report.kernel
    );
    let config = job.config_string(&w.point);
    if let Some(cs) = &config {
        cmd.push_str(&format!(" --config {cs}"));
        if let Some(o) = &args.operands {
            cmd.push_str(&format!(" --operands {}", shell_quote(o)));
        }
    } else {
        let p = &report.problem;
        if !p.dims.is_empty() {
            cmd.push_str(&format!(" --dims {}", p.dims_text()));
        }
        if !p.types.is_empty() {
            cmd.push_str(&format!(" --types {}", shell_quote(&p.types_text())));
        }
        if !p.layouts.is_empty() {
            cmd.push_str(&format!(" --layout {}", shell_quote(&p.layouts_text())));
        }
    }
    for (n, v) in &report.problem.args {
        cmd.push_str(&format!(" --arg {n}={v}"));
    }
    if report.backend == Backend::Interp {
        cmd.push_str(" --backend interp");
    }
    if session.gpus[0] != 0 {
        cmd.push_str(&format!(" --gpu {}", session.gpus[0]));
    }
    if config.is_none() && !w.point.0.is_empty() {
        cmd.push_str(&format!(" --autotune \"{}\"", w.point.to_pins()));
    }
    Some(cmd)
}

/// How one problem ended, for the summary and the results file.
struct Done {
    job: Job,
    report: Option<Report>,
    error: Option<String>,
}

impl Done {
    /// Whether the problem ended as it should: a winner, or for a shard (whose share may hold
    /// no valid point) a search that ran.
    fn ok(&self, dry_run: bool, sharded: bool) -> bool {
        let Some(r) = &self.report else { return false };
        if sharded && !dry_run {
            return true;
        }
        if dry_run {
            let s = r.summary();
            s.compiled + s.duplicate > 0
                && r.dry_run_check.as_ref().is_none_or(|c| c.error.is_none())
        } else {
            r.winner.is_some()
        }
    }

    /// One line: the problem, the winner and its rate, the counts, the config string.
    fn summary_line(&self) -> String {
        let label = self.job.label();
        let Some(r) = &self.report else {
            return format!(
                "{label}: failed: {}",
                self.error.as_deref().unwrap_or("no result")
            );
        };
        let counts = r.summary().line();
        let Some(w) = &r.winner else {
            return format!("{label}: no winner ({counts})");
        };
        let mut s = format!("{label}: {:.4} ms", w.stats.median_ms);
        if let Some(t) = r.point(&w.point).and_then(|p| p.tflops()) {
            s.push_str(&format!(", {}", render::rate(t)));
        }
        if let Some(x) = w.speedup_vs_default {
            s.push_str(&format!(", {x:.2}x the default"));
        }
        s.push_str(&format!(" ({counts})"));
        match self.job.config_string(&w.point) {
            Some(cs) => s.push_str(&format!("  {cs}")),
            None => s.push_str(&format!("  {}", w.point.to_pins())),
        }
        s
    }

    fn result_row(&self) -> Option<ResultRow> {
        let gemm = self.job.gemm?;
        let winner = self.report.as_ref().and_then(|r| r.winner.as_ref());
        Some(match winner {
            Some(w) => ResultRow::timed(
                SizesItem {
                    problem: gemm,
                    config: Some(w.point.clone()),
                },
                w.stats.median_ms,
            ),
            None => {
                let why = match (&self.error, &self.report) {
                    (Some(e), _) => format!("no valid configuration: {e}"),
                    (None, Some(r)) => format!("no valid configuration: {}", r.summary().line()),
                    (None, None) => "no valid configuration".into(),
                };
                ResultRow::new(SizesItem {
                    problem: gemm,
                    config: None,
                })
                .with_note(why)
            }
        })
    }
}

/// Tunes every job in turn (with a shard, its share of each job's points).
pub fn run(
    session: &mut Session,
    jobs: Vec<Job>,
    shard: Option<Given>,
) -> Result<ExitCode, UserError> {
    let args = session.args;
    if args.output.is_some() {
        if let Some(j) = jobs.iter().find(|j| j.gemm.is_none()) {
            return Err(UserError::new(format!(
                "-o writes GEMM results, but {} is not a GEMM of this kernel's A, B, C",
                j.label()
            ))
            .hint("name the operand tensors with --operands A=X,B=W,C=Y"));
        }
    }
    let pins = match &args.autotune {
        Some(t) => phobos_check::parse_pins(t).map_err(|e| UserError::new(e.to_string()))?,
        None => Vec::new(),
    };
    session
        .frontend
        .info()
        .space
        .pin(&pins)
        .map_err(|e| UserError::new(e.to_string()))?;
    let shares = shard::points(
        &session.frontend,
        &pins,
        &jobs,
        &session.settings,
        session.backend,
        shard.as_ref().map(|g| g.shard),
    )
    .map_err(UserError::new)?;
    let mut jobs: Vec<(Job, Option<BTreeSet<String>>)> = jobs.into_iter().zip(shares).collect();
    if let Some(g) = &shard {
        let mine: usize = jobs
            .iter()
            .map(|(_, s)| s.as_ref().map_or(0, |s| s.len()))
            .sum();
        eprintln!(
            "shard {} (from {}): {mine} points of {} problem{}, into {}",
            g.shard,
            g.from,
            jobs.len(),
            if jobs.len() == 1 { "" } else { "s" },
            session.db_path.display()
        );
        jobs.retain(|(_, s)| s.as_ref().is_none_or(|s| !s.is_empty()));
    }
    let mut executor = session.executor()?;
    let device = session.device(executor.as_ref());
    let compiler = session.compiler(&device)?;
    let kernel_name = session.kernel_name();
    let many = jobs.len() > 1;
    let mut done: Vec<Done> = Vec::new();
    let total = jobs.len();
    for (n, (job, only)) in jobs.into_iter().enumerate() {
        if many {
            let from = job
                .origin
                .as_ref()
                .map_or(String::new(), |o| format!(" ({o})"));
            eprintln!("problem {}/{total}: {}{from}", n + 1, job.label());
        }
        let result = tune_one(
            session,
            executor.as_mut(),
            compiler.clone(),
            &device,
            &job,
            &pins,
            only,
        );
        match result {
            Ok(report) => {
                let cmd = reproduce(session, &job, &report);
                let config = report
                    .winner
                    .as_ref()
                    .and_then(|w| job.config_string(&w.point));
                if args.json {
                    let mut j = json::report(&report, &session.file_name, cmd.as_deref());
                    json::add_job(&mut j, &job, config.as_deref());
                    outln!("{j}");
                } else {
                    if args.report {
                        out!("{}", render::phases(&report));
                        out!("{}", render::table(&report));
                        out!("{}", render::checks(&report));
                    }
                    let summary = report.summary();
                    outln!("{}", render::ending(&report, cmd.as_deref(), &summary));
                    if let Some(cs) = &config {
                        outln!("config: {cs}");
                    }
                }
                done.push(Done {
                    job,
                    report: Some(report),
                    error: None,
                });
            }
            Err(e) if many => {
                eprintln!("error: {}: {e}", job.label());
                done.push(Done {
                    job,
                    report: None,
                    error: Some(e),
                });
            }
            Err(e) => {
                if let Some(path) = &args.output {
                    let d = Done {
                        job,
                        report: None,
                        error: Some(e.clone()),
                    };
                    write(session, path, &kernel_name, &[d])?;
                }
                return Err(UserError::new(e));
            }
        }
    }
    if many && !args.json {
        outln!("summary ({total} problems):");
        for d in &done {
            outln!("  {}", d.summary_line());
        }
    }
    if let Some(path) = &args.output {
        write(session, path, &kernel_name, &done)?;
    }
    let ok = done.iter().all(|d| d.ok(args.dry_run, shard.is_some()));
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn write(
    session: &Session,
    path: &std::path::Path,
    kernel: &str,
    done: &[Done],
) -> Result<(), UserError> {
    let rows: Vec<ResultRow> = done.iter().filter_map(Done::result_row).collect();
    let device = done
        .iter()
        .find_map(|d| d.report.as_ref())
        .map_or_else(String::new, |r| format!(" on {}", r.device.name));
    let header = vec![format!(
        "kernel {kernel} in {}, backend {}{device}",
        session.file_name,
        session.backend.name()
    )];
    std::fs::write(path, write_results(&rows, &header))
        .map_err(|e| UserError::new(format!("cannot write {}: {e}", path.display())))?;
    eprintln!(
        "wrote {} problem{} to {}",
        rows.len(),
        if rows.len() == 1 { "" } else { "s" },
        path.display()
    );
    Ok(())
}

/// One problem through the engine, rendering its events on stderr.
fn tune_one(
    session: &mut Session,
    executor: &mut dyn phobos_tune::worker::Executor,
    compiler: std::sync::Arc<dyn phobos_tune::Compiler + Send + Sync>,
    device: &phobos_tune::DeviceInfo,
    job: &Job,
    pins: &[(String, i64)],
    only: Option<BTreeSet<String>>,
) -> Result<Report, String> {
    let backend = session.backend;
    let kernel_name = session.kernel_name();
    let quiet_bar = !std::io::stderr().is_terminal();
    let bar = ProgressBar::with_draw_target(
        None,
        if quiet_bar {
            ProgressDrawTarget::hidden()
        } else {
            ProgressDrawTarget::stderr()
        },
    );
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} points  {elapsed} elapsed, eta {eta}")
            .expect("a valid template"),
    );
    let say = |line: String| bar.suspend(|| eprintln!("{line}"));
    let mut announced: HashSet<String> = HashSet::new();
    let mut ran_on: HashMap<String, u32> = HashMap::new();
    let db_path = session.db_path.clone();
    let mut settings = session.settings.clone();
    settings.library = library_reference(session, job);
    if let Some(r) = &session.reference {
        settings.external_reference = Some(r.spec(&job.problem, device)?);
    }
    settings.only_points = only;
    settings.default_flops = job.gemm.map(|g| 2.0 * g.m as f64 * g.n as f64 * g.k as f64);
    if let Some(path) = &session.args.seed_from {
        settings.first_points = super::seed_from::first_points(
            path,
            session.frontend.kernel_hash(),
            &kernel_name,
            &job.problem,
        )
        .map_err(|e| e.message.unwrap_or_default())?;
        if !settings.first_points.is_empty() {
            eprintln!(
                "first: {} point{} of the nearest problems in {}",
                settings.first_points.len(),
                if settings.first_points.len() == 1 {
                    ""
                } else {
                    "s"
                },
                path.display()
            );
        }
    }
    let result = tune(
        Tuner {
            frontend: &session.frontend,
            compiler,
            executor,
            store: Some(&mut session.store),
            device: device.clone(),
        },
        &job.problem,
        pins,
        &settings,
        &mut |ev| match ev {
            Event::Space {
                pinned,
                default_point,
            } => {
                if backend == Backend::Interp {
                    say("backend: interp (times are the CPU interpreter's wall clock, not GPU times)".into());
                }
                say(render::space(&kernel_name, pinned, default_point))
            }
            Event::Pruned { point, reason } => {
                announced.insert(point.to_pins());
                say(format!("  pruned {}: {reason}", point.to_pins()));
            }
            Event::Search { to_run, reused } => {
                if reused > 0 {
                    say(format!(
                        "{reused} point{} from the results database {} (--retune to measure again)",
                        if reused == 1 { "" } else { "s" },
                        db_path.display()
                    ));
                }
                bar.set_length((to_run + reused) as u64);
            }
            Event::Ran { point, ordinal } => {
                ran_on.insert(point.to_pins(), ordinal);
            }
            Event::Point(r) => {
                bar.inc(1);
                if !announced.contains(&r.point.to_pins()) {
                    let mut line = render::point_line(r, backend);
                    if let Some(o) = ran_on.get(&r.point.to_pins()) {
                        line.push_str(&format!("  [gpu {o}]"));
                    }
                    say(line);
                }
            }
            Event::FinalRound { leaders } => say(format!(
                "final round, interleaved: {}",
                leaders
                    .iter()
                    .map(|p| p.to_pins())
                    .collect::<Vec<_>>()
                    .join(" | ")
            )),
            Event::Log(l) => say(l),
        },
    );
    bar.finish_and_clear();
    result.map_err(|e| e.to_string())
}

/// cuBLAS as the reference for the checks the interpreter cannot run at a reduced size: a GEMM
/// problem on the GPU whose element types and layouts cuBLAS has a routine for.
fn library_reference(session: &Session, job: &Job) -> Option<phobos_tune::worker::LibrarySpec> {
    if session.backend != Backend::Cuda || session.args.dry_run || job.gemm.is_none() {
        return None;
    }
    let point = phobos_tune::space::Pinned::new(session.frontend.space(), &[])
        .ok()?
        .default_point();
    let kernel = session.frontend.instantiate(&point, &job.problem).ok()?;
    let names = &session.names;
    let spec = phobos_tune::worker::LibrarySpec {
        point,
        a: names.a.clone(),
        b: names.b.clone(),
        c: names.c.clone(),
    };
    phobos::backend::cuda_blas::plan(&kernel, &spec, &job.problem).ok()?;
    Some(spec)
}
