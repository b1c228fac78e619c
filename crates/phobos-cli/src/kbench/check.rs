//! `--check FILE` (the seed's `--compare_wo_tuning`): the stored configuration of every entry
//! checked against the reference without tuning, one line each; exit 1 if any fails.

use super::problems::Job;
use super::session::Session;
use super::stored::{Runner, Verdict};
use super::UserError;
use std::process::ExitCode;

/// `error 3.1e-07 (tolerance 1.0e-04) against cuBLAS for M=..`.
pub fn verdict_text(v: &Verdict) -> String {
    let mut s = String::new();
    if let Some(f) = &v.failure {
        s.push_str(f);
        s.push_str(&format!("; reference: {}", v.reference));
        return s;
    }
    match v.error {
        Some(e) => s.push_str(&format!("error {e:.1e}")),
        None => s.push_str("no output compared"),
    }
    if let Some(t) = v.tolerance {
        s.push_str(&format!(" (tolerance {t:.1e})"));
    }
    s.push_str(&format!(" against {}", v.reference));
    s
}

fn origin(job: &Job) -> String {
    job.origin
        .as_ref()
        .map_or_else(String::new, |o| format!("{o}  "))
}

/// Checks every entry of the file.
pub fn run(session: &Session, jobs: Vec<Job>) -> Result<ExitCode, UserError> {
    let mut runner = Runner::start(session)?;
    let (mut passed, mut failed) = (0usize, 0usize);
    for job in &jobs {
        let line = match &job.config {
            None => Err("no stored configuration (`config:`) to check".to_string()),
            Some(stored) => runner.prepare(job, stored).map(|p| {
                let v = runner.verify(job, &p);
                let mut text = format!("{}  {}", p.point.to_pins(), verdict_text(&v));
                if !p.filled.is_empty() {
                    text.push_str(&format!("  (defaults for {})", p.filled.join(", ")));
                }
                (v.passed, text)
            }),
        };
        let (ok, text) = match line {
            Ok(x) => x,
            Err(why) => (false, why),
        };
        let mark = if ok { "PASS" } else { "FAIL" };
        outln!("{mark}  {}{}  {text}", origin(job), job.label());
        if ok {
            passed += 1;
        } else {
            failed += 1;
        }
    }
    outln!(
        "checked {} configuration{}: {passed} passed, {failed} failed",
        jobs.len(),
        if jobs.len() == 1 { "" } else { "s" }
    );
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
