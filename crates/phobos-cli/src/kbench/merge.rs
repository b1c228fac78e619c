//! `phobos-kbench merge OUT IN...`: the union of results databases, the shards of one job
//! (`--shard`) into the store the next run, `-o` and `--check` read.

use super::args::MergeArgs;
use super::UserError;
use phobos_tune::store::Setup;
use phobos_tune::Store;
use std::collections::BTreeSet;
use std::path::Path;
use std::process::ExitCode;

fn open(path: &Path) -> Result<Store, UserError> {
    Store::open(path).map_err(|e| UserError::new(e.to_string()))
}

fn plural(n: usize, word: &str) -> String {
    format!("{n} {word}{}", if n == 1 { "" } else { "s" })
}

/// Merges every input into the output, after checking that they were all measured on one
/// setup (unless `--allow-mixed`); prints what each input added.
pub fn run(args: &MergeArgs) -> Result<ExitCode, UserError> {
    let same_file = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    };
    for input in &args.inputs {
        if !input.is_file() {
            return Err(UserError::new(format!(
                "{}: no such results database",
                input.display()
            )));
        }
        if same_file(input, &args.out) {
            return Err(UserError::new(format!(
                "{} is the output and an input: name the merged database separately",
                input.display()
            )));
        }
    }
    // Each file's setups, the output's included: merging onto a store from another GPU is
    // as mixed as merging two inputs from two GPUs.
    let mut seen: Vec<(String, Vec<Setup>)> = Vec::new();
    let out_exists = args.out.is_file();
    // The output is written: say so when another process holds its lock.
    let mut out =
        super::session::open_store(&args.out).map_err(|e| UserError::new(e.to_string()))?;
    if out_exists {
        let s = out.setups().map_err(|e| UserError::new(e.to_string()))?;
        seen.push((args.out.display().to_string(), s));
    }
    for input in &args.inputs {
        let s = open(input)?
            .setups()
            .map_err(|e| UserError::new(e.to_string()))?;
        seen.push((input.display().to_string(), s));
    }
    let all: BTreeSet<&Setup> = seen.iter().flat_map(|(_, s)| s).collect();
    if all.len() > 1 && !args.allow_mixed {
        let lines: Vec<String> = seen
            .iter()
            .filter(|(_, s)| !s.is_empty())
            .map(|(f, s)| {
                let list: Vec<String> = s.iter().map(Setup::to_string).collect();
                format!("  {f}: {}", list.join("; "))
            })
            .collect();
        return Err(UserError::new(format!(
            "the databases were measured on {} setups, whose times do not compare:\n{}",
            all.len(),
            lines.join("\n")
        ))
        .hint("merge each setup's databases separately, or pass --allow-mixed to keep them side by side (a run reuses only its own setup's measurements)"));
    }
    for input in &args.inputs {
        let c = out
            .merge(input)
            .map_err(|e| UserError::new(format!("merging {}: {e}", input.display())))?;
        outln!(
            "{}: {} added ({} already there), {} added, {} added",
            input.display(),
            plural(c.measurements.0, "measurement"),
            c.measurements.1,
            plural(c.variants.0, "compile"),
            plural(c.runs.0, "run"),
        );
    }
    let rows = out
        .measurement_rows()
        .map_err(|e| UserError::new(e.to_string()))?;
    let points: BTreeSet<(&str, &str)> = rows
        .iter()
        .map(|(problem, point, _, _)| (problem.as_str(), point.as_str()))
        .collect();
    let problems: BTreeSet<&str> = rows.iter().map(|r| r.0.as_str()).collect();
    outln!(
        "{}: {} of {} in {}",
        args.out.display(),
        plural(rows.len(), "measurement"),
        plural(points.len(), "point"),
        plural(problems.len(), "problem")
    );
    Ok(ExitCode::SUCCESS)
}
