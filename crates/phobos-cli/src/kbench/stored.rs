//! Running stored configurations without tuning (`--check`, `--benchmark`, `--config`): the
//! point is completed and checked against the kernel and the problem, compiled in this
//! process, then checked and timed on one worker.
//!
//! The reference of a check: cuBLAS (cuBLASLt for fp8) on the GPU when it has a routine for
//! the problem; else, and on `--backend interp`, the interpreter at another valid point (the
//! default one when it applies), on a reduced problem when the full one is too large for it.

use super::problems::Job;
use super::session::Session;
use super::UserError;
use phobos::backend::cuda_blas;
use phobos::recipe::{compile_point, PointError};
use phobos_ir::{Kernel, Point};
use phobos_tune::reduce::{capped_problem, interp_sized, REDUCED_CAPS};
use phobos_tune::space::{Pinned, MAX_EXHAUSTIVE_POINTS};
use phobos_tune::timing::TimeSettings;
use phobos_tune::worker::{Executor, LibrarySpec, ReferenceSpec, Reply, Request, VariantSpec};
use phobos_tune::{Backend, Compiler, DeviceInfo, Frontend, Outcome, Problem, Resources, Stats};
use std::sync::Arc;

/// A stored configuration ready to run.
pub struct Prepared {
    /// Every declared name, in declaration order.
    pub point: Point,
    /// Names the stored configuration left out, filled with their defaults.
    pub filled: Vec<String>,
    /// The kernel at the point, with the problem's types and layouts.
    pub kernel: Kernel,
    /// What the worker loads (the point and its binary).
    pub spec: VariantSpec,
    /// Registers, spills, shared memory and occupancy of the binary.
    pub resources: Option<Resources>,
}

/// How a check ended.
pub struct Verdict {
    pub passed: bool,
    /// The largest relative error over the outputs, when they were compared.
    pub error: Option<f64>,
    pub tolerance: Option<f64>,
    /// What it was compared with, and at which dims.
    pub reference: String,
    /// Why it failed, in one line, when it did not even compare.
    pub failure: Option<String>,
}

/// One worker and a compiler for running stored configurations.
pub struct Runner<'s, 'a> {
    /// The loaded kernel, flags and database.
    pub session: &'s Session<'a>,
    /// The worker (or, for `--dry-run`, the interpreter in this process).
    pub executor: Box<dyn Executor>,
    /// The device it runs on.
    pub device: DeviceInfo,
    compiler: Arc<dyn Compiler + Send + Sync>,
    next_id: u64,
}

impl<'s, 'a> Runner<'s, 'a> {
    /// Starts the worker on the first GPU (or the interpreter) and the compiler for it.
    pub fn start(session: &'s Session<'a>) -> Result<Runner<'s, 'a>, UserError> {
        let executor = session.single_executor()?;
        let device = session.device(executor.as_ref());
        let compiler = session.compiler(&device)?;
        Ok(Runner {
            session,
            executor,
            device,
            compiler,
            next_id: 0,
        })
    }

    fn id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    fn seed(&self, id: u64) -> u64 {
        phobos_tune::reduce::job_seed(self.session.args.seed, id)
    }

    fn call(&mut self, req: &Request) -> Result<Reply, String> {
        let r = self.executor.call(req).map_err(|c| c.what);
        for line in self.executor.take_logs() {
            eprintln!("worker: {line}");
        }
        r
    }

    /// The point of a stored configuration for a job: completed with defaults, within
    /// `@where` for the problem, instantiated and compiled.
    pub fn prepare(&self, job: &Job, stored: &Point) -> Result<Prepared, String> {
        let fe = &self.session.frontend;
        let pinned = Pinned::new(fe.space(), &stored.0).map_err(|e| e.to_string())?;
        let point = pinned.default_point();
        let filled: Vec<String> = point
            .0
            .iter()
            .filter(|(n, _)| stored.get(n).is_none())
            .map(|(n, _)| n.clone())
            .collect();
        let (kernel, compiled) = compile_point(
            fe,
            self.compiler.as_ref(),
            &self.device,
            &point,
            &job.problem,
        )
        .map_err(|e| match e {
            PointError::Where(v) => format!("{} {v}", point.to_pins()),
            e => e.to_string(),
        })?;
        let mut resources = compiled.resources.clone();
        if let Some(r) = resources.as_mut() {
            r.occupancy = phobos_tune::occupancy::occupancy(
                r.threads,
                r.registers,
                r.smem_bytes,
                &self.device,
            );
        }
        Ok(Prepared {
            spec: VariantSpec {
                point: point.clone(),
                artifact: compiled.artifact,
            },
            point,
            filled,
            kernel,
            resources,
        })
    }

    /// cuBLAS for this job, when on the GPU and it has a routine for the problem.
    pub fn library(
        &self,
        job: &Job,
        prepared: &Prepared,
    ) -> Result<(LibrarySpec, &'static str), String> {
        if self.session.backend != Backend::Cuda || self.session.args.dry_run {
            return Err("no cuBLAS on the interpreter".into());
        }
        let names = &self.session.names;
        let spec = LibrarySpec {
            point: prepared.point.clone(),
            a: names.a.clone(),
            b: names.b.clone(),
            c: names.c.clone(),
        };
        let call = cuda_blas::plan(&prepared.kernel, &spec, &job.problem)?;
        Ok((spec, call.name))
    }

    /// The point whose interpreter run is the reference: the default point when it is valid
    /// for the problem (the kernel's semantics, as in a search), else the first valid point in
    /// space order, else the checked point itself.
    fn reference_point(&self, point: &Point, problem: &Problem) -> Point {
        let fe = &self.session.frontend;
        let Ok(pinned) = Pinned::new(fe.space(), &[]) else {
            return point.clone();
        };
        let valid = |p: &Point| {
            fe.where_violation(p, problem) == Ok(None) && fe.instantiate(p, problem).is_ok()
        };
        std::iter::once(pinned.default_point())
            .chain(pinned.space.points().take(MAX_EXHAUSTIVE_POINTS as usize))
            .find(valid)
            .unwrap_or_else(|| point.clone())
    }

    /// The problem an interpreter check runs: the job's, or one with each dim capped (kept
    /// within `@aligned` and `@where` for both points) when the job's is too large.
    fn interp_problem(&self, prepared: &Prepared, reference: &Point, problem: &Problem) -> Problem {
        let s = &self.session.settings;
        let k = &prepared.kernel;
        let small = |p: &Problem| interp_sized(k, p, s.verify_max_elements, s.verify_max_flops);
        if small(problem) {
            return problem.clone();
        }
        let fe = &self.session.frontend;
        capped_problem(k, problem, &REDUCED_CAPS, |p| {
            small(p)
                && fe.where_violation(&prepared.point, p) == Ok(None)
                && fe.where_violation(reference, p) == Ok(None)
        })
        .unwrap_or_else(|| problem.clone())
    }

    /// Checks a prepared configuration against the reference (see the module docs).
    pub fn verify(&mut self, job: &Job, prepared: &Prepared) -> Verdict {
        let (problem, reference, what) = match self.library(job, prepared) {
            Ok((spec, name)) => (
                job.problem.clone(),
                ReferenceSpec::Library(spec),
                format!("{name} for {}", job.problem.dims_text()),
            ),
            Err(_) => {
                let point = self.reference_point(&prepared.point, &job.problem);
                let p = self.interp_problem(prepared, &point, &job.problem);
                let at = if point.0.is_empty() {
                    "the only point".to_string()
                } else if point == prepared.point {
                    format!("the same point ({})", point.to_pins())
                } else {
                    point.to_pins()
                };
                let what = format!("the interpreter at {at} for {}", p.dims_text());
                (p, ReferenceSpec::Interp { point }, what)
            }
        };
        let tolerance = prepared
            .kernel
            .params
            .iter()
            .enumerate()
            .filter(|(i, _)| phobos_tune::irwalk::written(&prepared.kernel).contains(i))
            .filter_map(|(_, p)| match &p.kind {
                phobos_ir::ParamKind::Tensor { dtype, .. } => {
                    Some(phobos_tune::verify::tolerance(&prepared.kernel, *dtype))
                }
                phobos_ir::ParamKind::Scalar { .. } => None,
            })
            .reduce(f64::min);
        let id = self.id();
        let req = Request::Verify {
            id,
            variant: prepared.spec.clone(),
            problem,
            reference,
            seed: self.seed(id),
        };
        let fail = |failure: String| Verdict {
            passed: false,
            error: None,
            tolerance,
            reference: what.clone(),
            failure: Some(failure),
        };
        match self.call(&req) {
            Ok(Reply::Verified {
                mismatch: None,
                max_error,
                ..
            }) => Verdict {
                passed: true,
                error: max_error,
                tolerance,
                reference: what,
                failure: None,
            },
            Ok(Reply::Verified {
                mismatch: Some(m),
                max_error,
                ..
            }) => Verdict {
                passed: false,
                error: max_error.or(Some(m.error)),
                tolerance: Some(m.tolerance),
                reference: what,
                failure: None,
            },
            Ok(r @ Reply::Failed { .. }) => fail(outcome_line(r)),
            Ok(other) => fail(format!("unexpected worker reply {other:?}")),
            Err(c) => fail(format!("crashed: {c}")),
        }
    }

    /// Times a prepared configuration on the job's problem.
    pub fn time(
        &mut self,
        job: &Job,
        prepared: &Prepared,
        settings: &TimeSettings,
    ) -> Result<Stats, String> {
        let id = self.id();
        let req = Request::Time {
            id,
            variant: prepared.spec.clone(),
            problem: job.problem.clone(),
            settings: settings.clone(),
            best_ms: None,
            seed: self.seed(id),
        };
        self.timed(&req)
    }

    /// Times the library routine on a problem (`point` instantiates the kernel for it).
    pub fn time_library(
        &mut self,
        library: LibrarySpec,
        problem: &Problem,
        settings: &TimeSettings,
    ) -> Result<Stats, String> {
        let id = self.id();
        let req = Request::TimeLibrary {
            id,
            library,
            problem: problem.clone(),
            settings: settings.clone(),
            seed: self.seed(id),
        };
        self.timed(&req)
    }

    fn timed(&mut self, req: &Request) -> Result<Stats, String> {
        match self.call(req) {
            Ok(Reply::Timed { stats, .. }) => Ok(stats),
            Ok(r @ Reply::Failed { .. }) => Err(outcome_line(r)),
            Ok(other) => Err(format!("unexpected worker reply {other:?}")),
            Err(c) => Err(format!("crashed: {c}")),
        }
    }
}

/// A failed job's reply in one line.
fn outcome_line(r: Reply) -> String {
    match r {
        Reply::Failed { failure, .. } => {
            let o = match failure {
                phobos_tune::worker::JobFailure::Load(f) => Outcome::LoadFailed(f),
                phobos_tune::worker::JobFailure::Fatal(f) => {
                    Outcome::Crashed(format!("fault: {}", f.first_line))
                }
                phobos_tune::worker::JobFailure::Setup(f) => {
                    Outcome::Crashed(format!("worker setup: {}", f.first_line))
                }
            };
            format!("{}: {}", o.status(), o.reason().unwrap_or_default())
        }
        other => format!("{other:?}"),
    }
}
