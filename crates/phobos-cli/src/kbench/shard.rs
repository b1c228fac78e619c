//! `--shard I/N`: which share of the work this process tunes, from the flag or from the
//! scheduler that started it (a Slurm job array, a Kubernetes Indexed Job), and the points of
//! each problem that make up that share.

use super::args::KbenchArgs;
use super::problems::Job;
use phobos_ir::Point;
use phobos_tune::shard::{predicted_cost_s, Shard};
use phobos_tune::space::Pinned;
use phobos_tune::{Backend, Frontend, Settings};
use std::collections::BTreeSet;

/// A shard and where it came from (`--shard`, or the variable that gave its index).
#[derive(Clone, Debug, PartialEq)]
pub struct Given {
    pub shard: Shard,
    pub from: &'static str,
}

/// The shard of this process: `--shard I/N`; else a Slurm array task (`SLURM_ARRAY_TASK_ID`
/// less `SLURM_ARRAY_TASK_MIN` of `SLURM_ARRAY_TASK_COUNT`, or with `--shards N` the task id
/// itself of N, so that a shard resubmitted alone as `--array=5` keeps its number); else a
/// Kubernetes Indexed Job's pod (`JOB_COMPLETION_INDEX` of `--shards`); else none.
pub fn resolve(
    args: &KbenchArgs,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<Given>, String> {
    let number = |name: &str| -> Result<Option<usize>, String> {
        env(name)
            .map(|v| {
                v.trim()
                    .parse::<usize>()
                    .map_err(|_| format!("{name}=`{v}` is not a shard index or count"))
            })
            .transpose()
    };
    if let Some(text) = &args.shard {
        let shard = Shard::parse(text).map_err(|e| format!("--shard: {e}"))?;
        if let Some(n) = args.shards.filter(|&n| n != shard.count) {
            return Err(format!(
                "--shard {text} is one of {} shards, but --shards says {n}",
                shard.count
            ));
        }
        return Ok(Some(Given {
            shard,
            from: "--shard",
        }));
    }
    if let Some(id) = number("SLURM_ARRAY_TASK_ID")? {
        let (min, count) = match args.shards {
            Some(n) => (0, n),
            None => (
                number("SLURM_ARRAY_TASK_MIN")?.unwrap_or(0),
                number("SLURM_ARRAY_TASK_COUNT")?.ok_or(
                    "SLURM_ARRAY_TASK_ID is set but SLURM_ARRAY_TASK_COUNT is not: pass --shards N",
                )?,
            ),
        };
        let index = id.checked_sub(min).ok_or_else(|| {
            format!("SLURM_ARRAY_TASK_ID={id} is below SLURM_ARRAY_TASK_MIN={min}")
        })?;
        let shard = Shard::new(index, count)
            .map_err(|e| format!("SLURM_ARRAY_TASK_ID={id} (less {min}): {e}"))?;
        return Ok(Some(Given {
            shard,
            from: "SLURM_ARRAY_TASK_ID",
        }));
    }
    if let Some(index) = number("JOB_COMPLETION_INDEX")? {
        let count = args.shards.ok_or(
            "JOB_COMPLETION_INDEX is set but the number of shards is not: pass --shards N (the \
             Job's completions)",
        )?;
        let shard = Shard::new(index, count).map_err(|e| format!("JOB_COMPLETION_INDEX: {e}"))?;
        return Ok(Some(Given {
            shard,
            from: "JOB_COMPLETION_INDEX",
        }));
    }
    match args.shards {
        Some(_) => Err("--shards N needs this process's index: --shard I/N, or run it as a Slurm array task (SLURM_ARRAY_TASK_ID) or a Kubernetes Indexed Job pod (JOB_COMPLETION_INDEX)".into()),
        None => Ok(None),
    }
}

/// A problem's work per launch: its GEMM's `2 M N K`, else the product of its dims.
fn work(job: &Job) -> f64 {
    match &job.gemm {
        Some(g) => g.flops(),
        None => job.problem.dims.iter().map(|(_, v)| *v as f64).product(),
    }
}

/// The points of each job in this shard (`None`: all of them, when there is no shard). Units
/// are every selected point (`--strategy`, `--max-points`) of every job, in order; each is
/// weighed by its problem's predicted cost on this back end, and a point the problem's `@where`
/// rules out by nothing (it is pruned, not run).
pub fn points(
    frontend: &dyn Frontend,
    pins: &[(String, i64)],
    jobs: &[Job],
    settings: &Settings,
    backend: Backend,
    shard: Option<Shard>,
) -> Result<Vec<Option<BTreeSet<String>>>, String> {
    let Some(shard) = shard else {
        return Ok(vec![None; jobs.len()]);
    };
    // The points every shard's run selects alike (the same flags and seed), dealt out here: a
    // shard's points are a subset of that selection and the shards' union is the whole of it.
    // A point outside the space is so for every problem (its `@where` reads names alone).
    let problem = jobs.first().map(|j| &j.problem);
    let inside = |p: &Point| problem.is_none_or(|problem| !frontend.outside_space(p, problem));
    let points = Pinned::new(frontend.space(), pins)
        .map_err(|e| e.to_string())?
        .select(
            settings.strategy,
            settings.max_points,
            settings.seed,
            &inside,
        )
        .map_err(|e| e.to_string())?;
    // Launches per second of work, roughly: the interpreter runs a few million operations a
    // second, a GPU a hundred TFLOP/s. Only the ratio between problems matters.
    let rate = match backend {
        Backend::Interp => 2e7,
        Backend::Cuda => 1e14,
    };
    let mut units: Vec<(usize, String)> = Vec::new();
    let mut costs: Vec<f64> = Vec::new();
    for (j, job) in jobs.iter().enumerate() {
        let cost = predicted_cost_s(
            work(job),
            rate,
            settings.time.budget_ms,
            settings.time.min_reps,
        );
        for p in &points {
            units.push((j, p.to_pins()));
            // A point the problem's `@where` rules out is pruned before anything runs: it
            // costs nothing, so the points that do run are what the shards share.
            let pruned = matches!(frontend.where_violation(p, &job.problem), Ok(Some(_)));
            costs.push(if pruned { 0.0 } else { cost });
        }
    }
    let mut mine = vec![BTreeSet::new(); jobs.len()];
    for u in shard.select(&costs) {
        let (j, pins) = &units[u];
        mine[*j].insert(pins.clone());
    }
    Ok(mine.into_iter().map(Some).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use std::collections::HashMap;

    fn args(extra: &[&str]) -> KbenchArgs {
        KbenchArgs::try_parse_from(
            std::iter::once("phobos-kbench")
                .chain(std::iter::once("g.ph").chain(extra.iter().copied())),
        )
        .unwrap()
    }

    fn resolve_with(extra: &[&str], vars: &[(&str, &str)]) -> Result<Option<Shard>, String> {
        let vars: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        resolve(&args(extra), &|k| vars.get(k).cloned()).map(|g| g.map(|g| g.shard))
    }

    fn shard(index: usize, count: usize) -> Option<Shard> {
        Some(Shard { index, count })
    }

    #[test]
    fn the_flag_comes_first_then_slurm_then_kubernetes() {
        let slurm = [
            ("SLURM_ARRAY_TASK_ID", "3"),
            ("SLURM_ARRAY_TASK_COUNT", "4"),
        ];
        assert_eq!(resolve_with(&[], &[]), Ok(None));
        assert_eq!(resolve_with(&["--shard", "1/2"], &slurm), Ok(shard(1, 2)));
        assert_eq!(resolve_with(&[], &slurm), Ok(shard(3, 4)));
        // An array numbered from 1.
        let from_one = [
            ("SLURM_ARRAY_TASK_ID", "4"),
            ("SLURM_ARRAY_TASK_MIN", "1"),
            ("SLURM_ARRAY_TASK_COUNT", "4"),
        ];
        assert_eq!(resolve_with(&[], &from_one), Ok(shard(3, 4)));
        // Shard 5 of 8 resubmitted alone (`--array=5`): the task id is the shard.
        let alone = [
            ("SLURM_ARRAY_TASK_ID", "5"),
            ("SLURM_ARRAY_TASK_MIN", "5"),
            ("SLURM_ARRAY_TASK_COUNT", "1"),
        ];
        assert_eq!(resolve_with(&[], &alone), Ok(shard(0, 1)));
        assert_eq!(resolve_with(&["--shards", "8"], &alone), Ok(shard(5, 8)));
        assert_eq!(
            resolve_with(&["--shards", "8"], &[("JOB_COMPLETION_INDEX", "5")]),
            Ok(shard(5, 8))
        );
    }

    #[test]
    fn what_is_missing_or_out_of_range_is_said() {
        let e = resolve_with(&[], &[("JOB_COMPLETION_INDEX", "0")]).unwrap_err();
        assert!(e.contains("pass --shards N"), "{e}");
        let e = resolve_with(&["--shards", "2"], &[("JOB_COMPLETION_INDEX", "2")]).unwrap_err();
        assert_eq!(
            e,
            "JOB_COMPLETION_INDEX: shard 2 of 2 does not exist: the shards of 2 are 0 to 1"
        );
        let e = resolve_with(&["--shards", "2"], &[]).unwrap_err();
        assert!(
            e.starts_with("--shards N needs this process's index"),
            "{e}"
        );
        let e = resolve_with(&["--shard", "1/2", "--shards", "3"], &[]).unwrap_err();
        assert_eq!(e, "--shard 1/2 is one of 2 shards, but --shards says 3");
        let e = resolve_with(&["--shard", "2"], &[]).unwrap_err();
        assert!(e.starts_with("--shard: `2` is not a shard"), "{e}");
        let e = resolve_with(&[], &[("SLURM_ARRAY_TASK_ID", "x")]).unwrap_err();
        assert_eq!(e, "SLURM_ARRAY_TASK_ID=`x` is not a shard index or count");
    }
}
