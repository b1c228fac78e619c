//! `--config STR` (the seed's `one_config.py --config_str`): one configuration from the
//! config string the tuner prints, compiled, checked and timed; one line out.

use super::check::verdict_text;
use super::problems::{bind_gemm, cli_operands, extras, Job};
use super::session::Session;
use super::stored::Runner;
use super::{render, UserError};
use phobos_tune::workflow::{ConfigString, GemmProblem};
use phobos_tune::Backend;
use std::process::ExitCode;

/// The job a config string describes (its operands over the command line's).
pub fn job(session: &Session, text: &str) -> Result<Job, UserError> {
    let cs: ConfigString = text
        .parse()
        .map_err(|e| UserError::new(format!("--config: {e}")))?;
    let extra = extras(session.args).map_err(UserError::new)?;
    if !extra.dims.is_empty() {
        return Err(UserError::new(
            "--config gives the dims: leave out --dims and -m/-n/-k",
        ));
    }
    let fallback = cli_operands(session.args).map_err(UserError::new)?;
    let gemm = GemmProblem {
        operands: cs.problem.operands.or(&fallback),
        ..cs.problem
    };
    let (problem, gemm) = bind_gemm(session.frontend.info(), &session.names, &gemm, &extra)
        .map_err(|e| UserError::new(format!("--config: {e}")))?;
    Ok(Job {
        origin: None,
        problem,
        gemm: Some(gemm),
        config: Some(cs.point),
    })
}

/// Runs the configuration and prints its line; exit 1 when it fails or is wrong.
pub fn run(session: &Session, job: Job) -> Result<ExitCode, UserError> {
    let mut runner = Runner::start(session)?;
    let stored = job.config.clone().unwrap_or_default();
    let prepared = runner
        .prepare(&job, &stored)
        .map_err(|e| UserError::new(format!("{}: {e}", job.label())))?;
    let config = job
        .config_string(&prepared.point)
        .unwrap_or_else(|| prepared.point.to_pins());
    if !prepared.filled.is_empty() {
        eprintln!(
            "note: the config string leaves out {}: using the defaults",
            prepared.filled.join(", ")
        );
    }
    let verdict = runner.verify(&job, &prepared);
    let mut line = config;
    if !verdict.passed {
        let what = if verdict.failure.is_some() {
            "failed"
        } else {
            "wrong"
        };
        outln!("{line}  {what}: {}", verdict_text(&verdict));
        return Ok(ExitCode::from(1));
    }
    if session.args.dry_run {
        outln!(
            "{line}  ok (not timed: --dry-run)  checked: {}",
            verdict_text(&verdict)
        );
        return Ok(ExitCode::SUCCESS);
    }
    let settings = super::session::full_budget(&session.settings);
    match runner.time(&job, &prepared, &settings) {
        Ok(s) => {
            let clock = if session.backend == Backend::Interp {
                " (interp wall clock)"
            } else {
                ""
            };
            line.push_str(&format!(
                "  ok  {:.4} ms ±{:.1}%{clock}",
                s.median_ms,
                s.spread * 100.0
            ));
            if let Some(t) = job.gemm.and_then(|g| g.tflops(s.median_ms)) {
                line.push_str(&format!("  {}", render::rate(t)));
            }
            line.push_str(&format!("  checked: {}", verdict_text(&verdict)));
            if let Some(r) = &prepared.resources {
                line.push_str(&format!("  {}", render::resources(r)));
            }
            outln!("{line}");
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            outln!("{line}  failed: {e}");
            Ok(ExitCode::from(1))
        }
    }
}
