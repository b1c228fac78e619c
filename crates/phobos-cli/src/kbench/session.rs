//! What every mode of `phobos-kbench` starts from: the checked source, the back end, the
//! results database, the settings, and the workers and compilers built from them.

use super::args::KbenchArgs;
use super::UserError;
use phobos::backend::{cuda, interp};
use phobos::frontend::{CheckFrontend, LoadError};
use phobos_syntax::SourceFile;
use phobos_tune::cache::VariantCache;
use phobos_tune::worker::{
    Executor, InProcess, MakeExecutor, Setup, WorkerError, WorkerPool, WorkerProcess, WorkerState,
};
use phobos_tune::workflow::TensorNames;
use phobos_tune::{Backend, Compiler, DeviceInfo, Settings, Store};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// The loaded kernel and everything around it.
pub struct Session<'a> {
    pub args: &'a KbenchArgs,
    pub file_name: String,
    pub source: SourceFile,
    pub frontend: CheckFrontend,
    pub backend: Backend,
    pub settings: Settings,
    pub db_path: PathBuf,
    pub store: Store,
    /// The tensors playing A, B and C (`--operands`).
    pub names: TensorNames,
    /// The GPUs timing runs use (`--gpus`, else `--gpu`).
    pub gpus: Vec<u32>,
    /// `--reference FILE[:NAME]`: the kernel every check compares with.
    pub reference: Option<super::reference::Reference>,
}

fn settings(args: &KbenchArgs, backend: Backend) -> Settings {
    let mut s = Settings {
        seed: args.seed,
        prune_large: !args.no_prune_large,
        retune: args.retune,
        dry_run: args.dry_run,
        strategy: args.strategy,
        max_points: args.max_points,
        max_time: args.max_time.map(std::time::Duration::from_secs_f64),
        final_round_always: args.final_round,
        ..Settings::default()
    };
    if let Some(j) = args.jobs {
        s.jobs = j.max(1);
    }
    // The search times each point at its own budget, never above the full one; the final
    // round re-times the leaders at the full budget.
    s.time.budget_ms = args.search_budget_ms.min(args.budget_ms).max(0.0);
    s.time.early_stop_factor = (!args.no_early_stop).then_some(args.early_stop);
    s.final_round.budget_ms = args.budget_ms.max(0.0);
    if backend == Backend::Interp {
        // The interpreter is slow and its wall clock is a stand-in: fewer repeats suffice.
        s.time.warmup = 1;
        s.time.min_reps = 3;
        s.time.max_reps = 50;
        s.final_round.warmup = 1;
        s.final_round.rounds = 5;
        s.final_round.max_rounds = 20;
        s.verify_max_elements = 1 << 16;
        s.verify_max_flops = (1u64 << 22) as f64;
    }
    s
}

/// The timing of one variant on its own (`--config`, `--benchmark` on the interpreter): the
/// search's repeats at the full budget, `--budget-ms`, and no early stop (there is nothing to
/// compare with).
pub fn full_budget(settings: &Settings) -> phobos_tune::timing::TimeSettings {
    phobos_tune::timing::TimeSettings {
        budget_ms: settings.final_round.budget_ms,
        early_stop_factor: None,
        ..settings.time.clone()
    }
}

/// Opens the results database, saying on stderr whenever a write waits more than a second
/// for another process's lock (it waits up to a minute).
pub(super) fn open_store(path: &std::path::Path) -> Result<Store, phobos_tune::StoreError> {
    let say = |path: &std::path::Path| {
        eprintln!(
            "waiting for the results database {}: another process holds its lock",
            path.display()
        )
    };
    Store::open_with(path, Some(std::sync::Arc::new(say)))
}

/// `0,1` into ordinals (no repeats).
pub fn parse_gpus(text: &str) -> Result<Vec<u32>, String> {
    let mut out: Vec<u32> = Vec::new();
    for item in text.split([',', ' ']).filter(|s| !s.is_empty()) {
        let g: u32 = item
            .trim()
            .parse()
            .map_err(|_| format!("--gpus: `{item}` is not a GPU ordinal (e.g. --gpus 0,1)"))?;
        if out.contains(&g) {
            return Err(format!("--gpus: GPU {g} is listed twice"));
        }
        out.push(g);
    }
    if out.is_empty() {
        return Err("--gpus: no GPU given (e.g. --gpus 0,1)".into());
    }
    Ok(out)
}

impl<'a> Session<'a> {
    /// Reads and checks the source, opens the database. Diagnostics are printed here (the
    /// error then carries no message of its own).
    /// A shard's default database is its own (`kbench-shard-I-of-N.sqlite` beside the
    /// default): shards on different hosts must not share one SQLite file over a network
    /// file system.
    pub fn open(
        args: &'a KbenchArgs,
        shard: Option<phobos_tune::shard::Shard>,
    ) -> Result<Session<'a>, UserError> {
        let path = args.file.as_ref().expect("clap requires FILE");
        let file_name = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|e| UserError::new(format!("cannot read {file_name}: {e}")))?;
        let source = SourceFile::new(file_name.clone(), text);
        let color = crate::render::stderr_color();
        let frontend = match CheckFrontend::load(source.clone(), args.kernel.as_deref()) {
            Ok(f) => f,
            Err(LoadError::Diagnostics(d, f)) => {
                eprintln!("{}", crate::render::render_all(&d, &f, color));
                return Err(UserError::printed());
            }
            Err(LoadError::Kernel(m)) => return Err(UserError::new(m)),
        };
        if !frontend.module().warnings.is_empty() {
            eprintln!(
                "{}",
                crate::render::render_all(&frontend.module().warnings, &source, color)
            );
        }
        let backend = Backend::parse(&args.backend).ok_or_else(|| {
            UserError::new(format!(
                "unknown backend `{}` (valid: cuda, interp)",
                args.backend
            ))
        })?;
        // A CUDA C++ kernel runs only where it compiles; each point is checked against its
        // reference point on the same GPU.
        let cuda_cpp = frontend.cuda().is_some();
        if cuda_cpp && backend == Backend::Interp {
            return Err(UserError::new(format!(
                "{file_name} is CUDA C++: the interpreter runs only Phobos kernels"
            ))
            .hint(
                "tune it on the GPU (--backend cuda), or compile and check every point \
                   without a GPU with --dry-run",
            ));
        }
        let reference = match &args.reference {
            Some(text) => Some(super::reference::Reference::load(text, &frontend, color)?),
            None => None,
        };
        let names = match &args.operands {
            Some(t) => TensorNames::parse(t).map_err(|e| UserError::new(e.to_string()))?,
            None => TensorNames::default(),
        };
        let gpus = match &args.gpus {
            Some(t) => parse_gpus(t).map_err(UserError::new)?,
            None => vec![args.gpu],
        };
        let db_path = args
            .db
            .clone()
            .or_else(|| {
                let p = Store::default_path()?;
                Some(match shard {
                    Some(s) => {
                        p.with_file_name(format!("kbench-shard-{}-of-{}.sqlite", s.index, s.count))
                    }
                    None => p,
                })
            })
            .ok_or_else(|| {
                UserError::new("no cache folder for the results database")
                    .hint("choose one with --db PATH")
            })?;
        let store = open_store(&db_path).map_err(|e| UserError::new(e.to_string()))?;
        Ok(Session {
            args,
            file_name,
            source,
            frontend,
            backend,
            settings: Settings {
                compiled_reference: cuda_cpp,
                ..settings(args, backend)
            },
            db_path,
            store,
            names,
            gpus,
            reference,
        })
    }

    /// The kernel's name.
    pub fn kernel_name(&self) -> String {
        self.frontend.info().name.clone()
    }

    fn setup(&self, gpu: u32) -> Setup {
        Setup {
            source_name: self.file_name.clone(),
            source_text: self.source.text.clone(),
            kernel: self.kernel_name(),
            backend: self.backend,
            gpu,
            reference: self.reference.as_ref().map(|r| r.source()),
        }
    }

    fn start_worker(&self, gpu: u32) -> Result<WorkerProcess, WorkerError> {
        phobos::worker::start_self(
            phobos::worker::Summons::Arg("--worker"),
            self.setup(gpu),
            Duration::from_secs_f64(self.args.job_timeout_s.max(1.0)),
        )
    }

    /// A worker failure as the user sees it: no GPU is one line with what to use instead.
    fn worker_error(&self, e: WorkerError) -> UserError {
        match e {
            WorkerError::Setup(f) if self.backend == Backend::Cuda => UserError::new(format!(
                "no GPU found ({}); use --backend interp to tune on the CPU interpreter, or \
                 --dry-run to compile and check every point without timing",
                f.first_line
            )),
            e => UserError::new(e.to_string()),
        }
    }

    /// The interpreter in this process, for `--dry-run` (nothing is launched on a GPU).
    fn in_process(&self) -> Result<Box<dyn Executor>, UserError> {
        let fe = CheckFrontend::load(self.source.clone(), Some(&self.kernel_name()))
            .map_err(|_| UserError::new("the source changed while loading"))?;
        Ok(Box::new(InProcess::new(WorkerState {
            frontend: Box::new(fe),
            device: Box::new(interp::InterpDevice),
            oracle: Box::new(interp::InterpDevice),
            sampled: Default::default(),
        })))
    }

    /// The executor of a search: the interpreter in-process for a dry run, one worker process,
    /// or one per GPU of `--gpus` sharing the search.
    pub fn executor(&self) -> Result<Box<dyn Executor>, UserError> {
        if self.args.dry_run {
            return self.in_process();
        }
        if self.gpus.len() == 1 {
            return self
                .start_worker(self.gpus[0])
                .map(|w| Box::new(w) as Box<dyn Executor>)
                .map_err(|e| self.worker_error(e));
        }
        let makers: Vec<MakeExecutor> = self
            .gpus
            .iter()
            .map(|&g| {
                let setup = self.setup(g);
                let timeout = Duration::from_secs_f64(self.args.job_timeout_s.max(1.0));
                Box::new(move || {
                    let w = phobos::worker::start_self(
                        phobos::worker::Summons::Arg("--worker"),
                        setup,
                        timeout,
                    )
                    .map_err(|e| match e {
                        WorkerError::Setup(f) => WorkerError::Setup(phobos_tune::Failure {
                            first_line: format!("GPU {g}: {}", f.first_line),
                            log: f.log,
                        }),
                        e => e,
                    })?;
                    Ok(Box::new(w) as Box<dyn Executor>)
                }) as MakeExecutor
            })
            .collect();
        let pool = WorkerPool::start(makers).map_err(|e| self.worker_error(e))?;
        // Times from different kinds of GPU would not compare.
        let devices = pool.devices();
        if let Some((o, d)) = devices.iter().find(|(_, d)| d.name != devices[0].1.name) {
            return Err(UserError::new(format!(
                "--gpus: GPU {} is {} but GPU {} is {}; times from different GPUs do not compare",
                devices[0].0.unwrap_or(0),
                devices[0].1.name,
                o.unwrap_or(0),
                d.name
            )));
        }
        Ok(Box::new(pool))
    }

    /// One executor on the first GPU, for checking, benchmarking and single configurations.
    pub fn single_executor(&self) -> Result<Box<dyn Executor>, UserError> {
        if self.args.dry_run {
            return self.in_process();
        }
        self.start_worker(self.gpus[0])
            .map(|w| Box::new(w) as Box<dyn Executor>)
            .map_err(|e| self.worker_error(e))
    }

    /// The limits pruning uses: the executor's device, or an H200 for `--dry-run` without a
    /// GPU.
    pub fn device(&self, executor: &dyn Executor) -> DeviceInfo {
        match (self.args.dry_run, self.backend) {
            (true, Backend::Cuda) => phobos_tune::occupancy::sm90(),
            _ => executor.device().clone(),
        }
    }

    /// The compiler of the back end for a device.
    pub fn compiler(
        &self,
        device: &DeviceInfo,
    ) -> Result<Arc<dyn Compiler + Send + Sync>, UserError> {
        Ok(match self.backend {
            Backend::Interp => Arc::new(interp::InterpCompiler::new()),
            Backend::Cuda => Arc::new(
                cuda::CudaCompiler::new(
                    self.source.clone(),
                    &device.arch(),
                    VariantCache::default_location(),
                )
                .map_err(|e| UserError::new(format!("cannot compile for the GPU: {e}")))?,
            ),
        })
    }
}
