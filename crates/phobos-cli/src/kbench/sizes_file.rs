//! A sizes (or results) file for a run: its diagnostics rendered with file and line, its bad
//! entries rejected (the default) or skipped (`--skip-bad-entries`), its good entries bound to
//! the kernel. An entry the kernel cannot take (a dim it fixes, an element type `dot` refuses)
//! is a bad entry too, reported at its line; nothing is ever guessed.

use super::problems::{bind_gemm, cli_operands, extras, instantiates, Job};
use super::session::Session;
use super::UserError;
use phobos_syntax::SourceFile;
use phobos_tune::workflow::{location, parse_sizes, GemmProblem};
use std::collections::HashMap;
use std::path::Path;

/// The jobs of a sizes file (see the module docs).
pub fn load(session: &Session, path: &Path) -> Result<Vec<Job>, UserError> {
    let args = session.args;
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| UserError::new(format!("cannot read {name}: {e}")))?;
    let file = SourceFile::new(name.clone(), text);
    let color = crate::render::stderr_color();
    let sizes = match parse_sizes(&file) {
        Ok(s) => s,
        Err(d) => {
            eprintln!("{}", crate::render::render_all(&[d], &file, color));
            return Err(UserError::new(format!("{name} is not a sizes file")));
        }
    };
    // Each rendering reads the file, so a huge file with many warnings shows the first few.
    const SHOWN: usize = 20;
    let all = sizes.diagnostics();
    let diags: Vec<_> = all.iter().take(SHOWN).map(|&d| d.clone()).collect();
    if !diags.is_empty() {
        eprintln!("{}", crate::render::render_all(&diags, &file, color));
    }
    if all.len() > SHOWN {
        eprintln!(
            "... and {} more diagnostics in {name} (errors among them are listed below)",
            all.len() - SHOWN
        );
    }
    let extra = extras(args).map_err(UserError::new)?;
    if !extra.dims.is_empty() {
        return Err(UserError::new(format!(
            "the problems come from {name}: leave out --dims and -m/-n/-k"
        )));
    }
    let fallback = cli_operands(args).map_err(UserError::new)?;
    let info = session.frontend.info();
    let mut jobs = Vec::new();
    // (where, why) of each entry that cannot run.
    let mut bad: Vec<(String, String)> = Vec::new();
    let mut checked: HashMap<String, Result<(), String>> = HashMap::new();
    for entry in &sizes.entries {
        let origin = format!("{name}:{}", entry.line);
        let Some(item) = &entry.item else {
            let why = entry.diagnostics.iter().find(|d| d.is_error()).map_or_else(
                || "invalid entry".to_string(),
                |d| {
                    format!(
                        "error[{}]: {} (at {})",
                        d.code,
                        d.message,
                        location(&file, d)
                    )
                },
            );
            bad.push((origin, why));
            continue;
        };
        for o in item.problem.operands.overrides(&fallback) {
            eprintln!("warning: {origin}: {o}");
        }
        let gemm = GemmProblem {
            operands: item.problem.operands.or(&fallback),
            ..item.problem
        };
        // A problem listed many times is checked against the kernel once.
        let bound = bind_gemm(info, &session.names, &gemm, &extra).and_then(|(p, g)| {
            checked
                .entry(p.key())
                .or_insert_with(|| instantiates(&session.frontend, &p))
                .clone()?;
            Ok((p, g))
        });
        match bound {
            Ok((problem, gemm)) => jobs.push(Job {
                origin: Some(origin),
                problem,
                gemm: Some(gemm),
                config: item.config.clone(),
            }),
            Err(why) => bad.push((origin, why)),
        }
    }
    if !bad.is_empty() {
        let skip = args.skip_bad_entries;
        for (origin, why) in &bad {
            let verb = if skip { "skipped" } else { "rejected" };
            eprintln!("{origin}: entry {verb}: {why}");
        }
        if !skip {
            let n = bad.len();
            return Err(UserError::new(format!(
                "{n} bad entr{} in {name}; nothing was run",
                if n == 1 { "y" } else { "ies" }
            ))
            .hint("fix them, or pass --skip-bad-entries to run the others"));
        }
    }
    if jobs.is_empty() {
        return Err(UserError::new(format!("{name} has no problem to run")));
    }
    Ok(jobs)
}
