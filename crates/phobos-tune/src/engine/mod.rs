//! The core loop, stage by stage:
//!
//! ```text
//! space + pins ─▶ instantiate + hash the generated code ─▶ reuse stored results of the same code
//!   ─▶ prune (@where, threads, large tiles) ─▶ compile (thread pool, cache, timeout)
//!   ─▶ drop duplicate binaries ─▶ verify (worker) ─▶ time (worker) ─▶ final round ─▶ winner
//! ```
//!
//! Each point ends with exactly one [`Outcome`], reported to the observer as it happens and
//! committed to the store at once. Compiling and running overlap: the main thread runs the
//! worker's jobs while the pool compiles the next variants.

mod adaptive;
mod check_plan;
mod compile;
mod finish;
mod lanes;
mod report;
mod run;

pub use report::{DryRunCheck, PhaseTimes, PointCheck, Report, Summary, Winner};

use crate::backend::{Compiler, Frontend};
use crate::facts::{validate, ProblemError};
use crate::prune;
use crate::space::{Pinned, SelectError, Strategy};
use crate::store::{RunKey, Store, StoreError};
use crate::strategy::prior::{prior, Prior};
use crate::timing::{FinalSettings, TimeSettings};
use crate::types::{crash_is_transient, DeviceInfo, Outcome, PointResult, Problem, PruneReason};
use crate::worker::Executor;
use phobos_check::PinError;
use phobos_ir::{Kernel, Point};
use rayon::prelude::*;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

/// Everything about a run that is not the kernel or the problem.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    /// Parallel compiles.
    pub jobs: usize,
    /// Seeds every random input (each check and timing derives its own from it).
    pub seed: u64,
    /// The large-tile heuristic (`--no-prune-large` turns it off).
    pub prune_large: bool,
    /// Ignore stored results and measure again.
    pub retune: bool,
    /// How the points searched are picked from the space.
    pub strategy: Strategy,
    /// At most this many points (required for spaces above `space::MAX_EXHAUSTIVE_POINTS`;
    /// `Strategy::Random` with it draws its points up front, without it searches adaptively;
    /// an adaptive search's default is `strategy::default_budget`).
    pub max_points: Option<usize>,
    /// No point starts its check and timing after this long from the start of the run (the
    /// final round still runs among the points measured).
    pub max_time: Option<Duration>,
    /// Points an adaptive strategy measures first (`--seed-from`: the best points of the
    /// nearest recorded problems); those not in the space are ignored.
    pub first_points: Vec<Point>,
    /// The problem's floating-point work when the kernel declares no `@flops` (2·M·N·K for a
    /// recognized GEMM): rates are reported from it.
    pub default_flops: Option<f64>,
    /// Everything but running: space, pruning, compiles, resources, one interpreter check.
    pub dry_run: bool,
    pub time: TimeSettings,
    pub final_round: FinalSettings,
    /// How many leaders enter the final round.
    pub finalists: usize,
    pub compile_timeout: Duration,
    /// Problems up to this many tensor elements are checked on the interpreter as they are.
    pub verify_max_elements: u64,
    /// ... and up to this many `@flops`, when declared.
    pub verify_max_flops: f64,
    /// A library routine computing the kernel's function for this problem (cuBLAS for a GEMM
    /// on the GPU): the reference for checks the interpreter cannot run at a reduced size (its
    /// `point` is replaced by the checked point's).
    pub library: Option<crate::worker::LibrarySpec>,
    /// A problem no smaller problem can stand in for is checked on a sample of its blocks
    /// (when they are independent): the interpreter's time for one such check, in ms.
    pub check_budget_ms: u64,
    /// ... and how many random blocks it adds to the grid's corners and edges.
    pub check_random_blocks: usize,
    /// Only these of the selected points (by `to_pins`; those `strategy` and `max_points`
    /// pick), the rest left to other processes (`--shard`); `None` for all of them.
    pub only_points: Option<BTreeSet<String>>,
    /// Run the final round among the leaders even when every time came from the store, so
    /// that times measured by several processes are compared on one device (`--final-round`).
    pub final_round_always: bool,
    /// The kernel has no IR the interpreter can run (a CUDA C++ source): every point is
    /// checked against the reference point (the default, or the first that compiles) compiled
    /// and run on the same device, on the same inputs.
    pub compiled_reference: bool,
    /// The reference of every check, when another kernel is (`--reference`): a
    /// [`crate::worker::ReferenceSpec::Kernel`], run on the problem as it is.
    pub external_reference: Option<crate::worker::ReferenceSpec>,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            jobs: std::thread::available_parallelism().map_or(1, |n| n.get()),
            seed: 0,
            prune_large: true,
            retune: false,
            strategy: Strategy::Exhaustive,
            max_points: None,
            max_time: None,
            first_points: Vec::new(),
            default_flops: None,
            dry_run: false,
            time: TimeSettings::default(),
            final_round: FinalSettings::default(),
            finalists: 4,
            compile_timeout: Duration::from_secs(120),
            // The interpreter runs a few million operations a second: checks stay around a
            // second, larger problems are checked at a reduced size.
            verify_max_elements: 1 << 16,
            verify_max_flops: (1u64 << 24) as f64,
            library: None,
            check_budget_ms: 3000,
            check_random_blocks: 16,
            only_points: None,
            final_round_always: false,
            compiled_reference: false,
            external_reference: None,
        }
    }
}

/// What the engine tells its observer, in order.
#[derive(Debug)]
pub enum Event<'a> {
    /// Before anything: the space searched.
    Space {
        pinned: &'a Pinned,
        default_point: &'a Point,
    },
    /// Before the search: a point dropped, and why.
    Pruned {
        point: &'a Point,
        reason: &'a PruneReason,
    },
    /// The search starts: how many points will finish in this run (at most, for an adaptive
    /// strategy or a time limit), how many come from the store.
    Search { to_run: usize, reused: usize },
    /// One point finished (in this run, or taken from the store).
    Point(&'a PointResult),
    /// With several workers (`--gpus`): which GPU ran this point; comes just before its
    /// `Point` event.
    Ran { point: &'a Point, ordinal: u32 },
    /// The final round starts among these leaders.
    FinalRound { leaders: &'a [Point] },
    /// Anything worth a line on stderr.
    Log(String),
}

/// Why a run could not happen at all.
#[derive(Debug, thiserror::Error)]
pub enum TuneError {
    #[error(transparent)]
    Pin(#[from] PinError),
    #[error(transparent)]
    Problem(#[from] ProblemError),
    #[error(
        "no point of the space satisfies @where for this problem (the first point {constraint})"
    )]
    NoPoint { constraint: String },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Space(#[from] SelectError),
    #[error(transparent)]
    TooLarge(#[from] phobos_ir::host::TooLarge),
    #[error("cannot start {jobs} compile threads: {message} (ask for fewer with --jobs)")]
    Threads { jobs: usize, message: String },
}

/// The parts a run is made of.
pub struct Tuner<'a> {
    pub frontend: &'a dyn Frontend,
    pub compiler: Arc<dyn Compiler + Send + Sync>,
    /// Runs verification and timing jobs (a worker process, or in-process for the interpreter).
    pub executor: &'a mut dyn Executor,
    pub store: Option<&'a mut Store>,
    /// The limits pruning and occupancy use: the executor's device, or an assumed one for
    /// `--dry-run` without a GPU.
    pub device: DeviceInfo,
}

/// What the engine knows about one point while it runs.
#[derive(Default)]
struct Slot {
    kernel: Option<Kernel>,
    flops: Option<f64>,
    bytes: Option<f64>,
    /// Large-tile excess, when the heuristic flags it.
    oversized: Option<(PruneReason, f64)>,
    /// What its correctness check compared, when it ran in this run.
    check: Option<crate::types::Checked>,
    result: Option<PointResult>,
}

/// Runs the whole loop for one kernel and one problem.
pub fn tune(
    tuner: Tuner<'_>,
    problem: &Problem,
    pins: &[(String, i64)],
    settings: &Settings,
    observer: &mut dyn FnMut(Event<'_>),
) -> Result<Report, TuneError> {
    let started = std::time::Instant::now();
    let frontend = tuner.frontend;
    let pinned = Pinned::new(frontend.space(), pins)?;
    let adaptive = settings.strategy.searches_adaptively(settings.max_points);
    // The points of the search (`strategy`, `max_points`), then of those this process's share
    // (`only_points`, a shard's): the shards of one job split one selection.
    let inside = |p: &Point| !frontend.outside_space(p, problem);
    let mut points = if adaptive {
        pinned.candidates_of(settings.strategy, &inside)?
    } else {
        pinned.select(
            settings.strategy,
            settings.max_points,
            settings.seed,
            &inside,
        )?
    };
    if let Some(only) = &settings.only_points {
        points.retain(|p| only.contains(&p.to_pins()));
    }
    let default_point = pinned.default_point();
    observer(Event::Space {
        pinned: &pinned,
        default_point: &default_point,
    });

    // The problem must fit the signature; any point the checker accepts can tell.
    if let Some(k) = points
        .iter()
        .find_map(|p| frontend.instantiate(p, problem).ok())
    {
        validate(&k, problem)?;
        // Every check and timing holds the problem's tensors on the host: refuse a problem
        // that cannot fit there now, rather than fail each point later.
        let shapes = crate::verify::shapes(&k, problem).unwrap_or_default();
        phobos_ir::host::check_host_memory(shapes.iter().flatten().map(|s| s.as_slice()))?;
    }

    let key = RunKey {
        phobos_version: crate::store::PHOBOS_VERSION.to_string(),
        kernel_hash: frontend.kernel_hash().to_string(),
        kernel_name: frontend.kernel_name().to_string(),
        problem: problem.clone(),
        device: tuner.executor.device().name.clone(),
        driver: tuner.executor.device().driver.clone(),
        compiler: tuner.compiler.version(),
        backend: tuner.compiler.backend(),
    };
    let mut slots: Vec<Slot> = points.iter().map(|_| Slot::default()).collect();

    // Stage 0: @where, then instantiate (in parallel), and hash what the code generator
    // produces for each point: the store serves only results of the same generated code.
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(settings.jobs.max(1))
        .build()
        .map_err(|e| TuneError::Threads {
            jobs: settings.jobs,
            message: e.to_string(),
        })?;
    let compiler = tuner.compiler.as_ref();
    let firsts: Vec<(Result<Kernel, Outcome>, Option<String>)> = pool.install(|| {
        points
            .par_iter()
            .map(|p| {
                let first = match frontend.where_violation(p, problem) {
                    Err(f) => Err(Outcome::CompileFailed(f)),
                    Ok(Some(constraint)) => Err(Outcome::Pruned(PruneReason::Where { constraint })),
                    Ok(None) => frontend
                        .instantiate(p, problem)
                        .map_err(Outcome::CompileFailed),
                };
                // A point the checker refuses is keyed by its diagnostic: it is refused again
                // while the front end says the same.
                let codegen = match &first {
                    Ok(k) => compiler.codegen_hash(k),
                    Err(Outcome::CompileFailed(f)) => Some(crate::hash::stable_hash(&[
                        b"refused by the checker",
                        f.log.as_bytes(),
                    ])),
                    Err(_) => None,
                };
                (first, codegen)
            })
            .collect()
    });
    let (firsts, codegen): (Vec<_>, Vec<_>) = firsts.into_iter().unzip();
    // What an adaptive strategy knows of each point before measuring it.
    let priors: Vec<Option<Prior>> = if adaptive {
        pool.install(|| {
            firsts
                .par_iter()
                .map(|f| Some(prior(f.as_ref().ok()?, problem, tuner.device.sm_count())))
                .collect()
        })
    } else {
        Vec::new()
    };

    // What the store already knows. A crash that may have been transient (a signal from
    // outside, a timeout, memory) runs again once; if it crashes again, that is kept.
    let mut stored: HashMap<String, PointResult> = HashMap::new();
    let mut retrying: HashSet<String> = HashSet::new();
    if let Some(store) = tuner.store.as_deref() {
        if !settings.retune && !settings.dry_run {
            let current: HashMap<String, String> = points
                .iter()
                .zip(&codegen)
                .filter_map(|(p, c)| Some((p.to_pins(), c.clone()?)))
                .collect();
            for r in store.lookup(&key, &current)? {
                let pins = r.point.to_pins();
                if let Outcome::Crashed(what) = &r.outcome {
                    if crash_is_transient(what) {
                        observer(Event::Log(format!(
                            "{pins}: the stored crash may have been transient ({what}); \
                             running it again"
                        )));
                        retrying.insert(pins);
                        continue;
                    }
                }
                stored.insert(pins, r);
            }
        }
    }

    // Stage 1: the points still to run, against hardware limits and large tiles.
    let firsts: Vec<Option<Result<Kernel, Outcome>>> = points
        .iter()
        .zip(firsts)
        .map(|(p, first)| (!stored.contains_key(&p.to_pins())).then_some(first))
        .collect();
    let mut early: Vec<Option<Outcome>> = vec![None; points.len()];
    for (i, first) in firsts.into_iter().enumerate() {
        match first {
            None => {}
            Some(Err(o)) => early[i] = Some(o),
            Some(Ok(k)) => {
                if let Some(r) = prune::threads(&k, &tuner.device) {
                    early[i] = Some(Outcome::Pruned(r));
                    continue;
                }
                let (flops, bytes) = crate::facts::work(&k, problem);
                slots[i].flops = flops.or(settings.default_flops);
                slots[i].bytes = bytes;
                if settings.prune_large {
                    slots[i].oversized = prune::large_tile(&k, problem);
                }
                slots[i].kernel = Some(k);
            }
        }
    }
    let where_pruned =
        |o: &Option<Outcome>| matches!(o, Some(Outcome::Pruned(PruneReason::Where { .. })));
    // A slice of the space (`only_points`) may hold only points @where rules out; the others
    // are another process's.
    let whole = settings.only_points.is_none();
    if whole && stored.is_empty() && !points.is_empty() && early.iter().all(where_pruned) {
        let constraint = match &early[0] {
            Some(Outcome::Pruned(PruneReason::Where { constraint })) => constraint.clone(),
            _ => String::new(),
        };
        return Err(TuneError::NoPoint { constraint });
    }
    // The heuristic never empties the space: if it flags every point the hard rules kept,
    // the least oversized stay.
    let alive: Vec<usize> = (0..points.len())
        .filter(|&i| slots[i].kernel.is_some())
        .collect();
    let any_stored_ok = stored.values().any(|r| r.outcome.stats().is_some());
    if !alive.is_empty() && !any_stored_ok && alive.iter().all(|&i| slots[i].oversized.is_some()) {
        let excess: Vec<f64> = alive
            .iter()
            .map(|&i| slots[i].oversized.as_ref().map_or(0.0, |o| o.1))
            .collect();
        for k in prune::keep_least_oversized(&excess) {
            slots[alive[k]].oversized = None;
        }
    }
    for &i in &alive {
        if let Some((reason, _)) = slots[i].oversized.take() {
            slots[i].kernel = None;
            early[i] = Some(Outcome::Pruned(reason));
        }
    }
    // An adaptive strategy chooses among the points left: the others are not part of its
    // search (nor of its report).
    if adaptive {
        early.iter_mut().for_each(|o| *o = None);
    }
    for (i, o) in early.iter().enumerate() {
        if let Some(Outcome::Pruned(reason)) = o {
            observer(Event::Pruned {
                point: &points[i],
                reason,
            });
        }
    }

    // The reference for correctness: the default point if it survived, else the first survivor.
    let reference_point = if slots
        .iter()
        .zip(&points)
        .any(|(s, p)| s.kernel.is_some() && p == &default_point)
    {
        Some(default_point.clone())
    } else {
        slots
            .iter()
            .zip(&points)
            .find(|(s, _)| s.kernel.is_some())
            .map(|(_, p)| p.clone())
            .or_else(|| {
                // Everything left is stored: any point the front end accepts will do.
                points
                    .iter()
                    .find(|p| {
                        frontend.where_violation(p, problem) == Ok(None)
                            && frontend.instantiate(p, problem).is_ok()
                    })
                    .cloned()
            })
    };

    let reused = points
        .iter()
        .filter(|p| stored.contains_key(&p.to_pins()))
        .count();
    // An adaptive strategy runs at most its budget of the points left (the bar's length).
    let to_run = if adaptive {
        let left = slots.iter().filter(|s| s.kernel.is_some()).count();
        let budget = settings
            .max_points
            .unwrap_or_else(|| crate::strategy::default_budget(left + reused));
        budget.min(left)
    } else {
        points.len() - reused
    };
    observer(Event::Search { to_run, reused });
    let mut state = run::State {
        tuner,
        settings,
        problem,
        key,
        run_id: None,
        points: &points,
        slots,
        reference_point,
        verified: None,
        compiled_reference: None,
        best_ms: None,
        compiled: HashMap::new(),
        binaries: HashMap::new(),
        new_measurements: 0,
        next_id: 0,
        finalists: Vec::new(),
        search_ms: HashMap::new(),
        retrying,
        codegen,
        priors,
        phases: PhaseTimes::default(),
        deadline: settings.max_time.map(|t| started + t),
        candidates: 0,
    };
    if let Some(store) = state.tuner.store.as_deref_mut() {
        if !settings.dry_run {
            state.run_id = Some(store.begin_run(&state.key)?);
        }
    }
    for (i, p) in points.iter().enumerate() {
        if let Some(r) = stored.remove(&p.to_pins()) {
            // A point stopped early sets no best: its few launches only showed it slow.
            if let Some(s) = r.outcome.stats().filter(|s| !s.stopped_early) {
                state.best_ms = Some(
                    state
                        .best_ms
                        .map_or(s.median_ms, |b: f64| b.min(s.median_ms)),
                );
            }
            observer(Event::Point(&r));
            state.slots[i].result = Some(r);
        }
    }
    for (i, o) in early.into_iter().enumerate() {
        if let Some(o) = o {
            state.finish(i, o, None, observer)?;
        }
    }
    state.phases.space_ms = ms_since(started);
    let search_started = std::time::Instant::now();
    if adaptive {
        state.search_adaptive(&pool, observer)?;
    } else {
        state.candidates = state.points.len();
        state.search(&pool, observer)?;
    }
    state.phases.search_ms = ms_since(search_started);
    let final_started = std::time::Instant::now();
    state.final_round(observer)?;
    state.phases.final_ms = ms_since(final_started);
    state.phases.total_ms = ms_since(started);
    state.report(pinned, default_point, observer)
}

/// Milliseconds since `t`.
fn ms_since(t: std::time::Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}
