//! The runtime: load a `.ph` file, pick a kernel, launch it on the GPU or the interpreter with
//! the tuned configuration of the problem, tuning on first use when asked to.
//!
//! ```text
//! launch(args, policy)
//!   problem of the arguments (dims from tensor shapes, scalars by name)
//!   ─▶ point: Default │ stored winner (same Phobos version and generated code)
//!             │ config table entry, nearest problem │ tune (phobos_tune::tune, workers)
//!   ─▶ compile (cached per problem and point) ─▶ load ─▶ run, results back in the arguments
//! ```

use crate::args::{check_device_ordinal, problem_of, refuse_device_buffers, Arg};
use crate::backend::{cuda, interp};
use crate::frontend::{CheckFrontend, LoadError};
use phobos_gpu::Gpu;
use phobos_ir::{HostTensor, Point};
use phobos_syntax::SourceFile;
use phobos_tune::cache::VariantCache;
use phobos_tune::deploy::{ConfigEntry, ConfigTable};
use phobos_tune::space::Pinned;
use phobos_tune::store::{RunKey, PHOBOS_VERSION};
use phobos_tune::worker::{Executor, InProcess, Setup, WorkerProcess, WorkerState};
use phobos_tune::{
    ArgValue, Compiler, Device, DeviceInfo, Frontend, Loaded, Problem, Settings, Store, Tuner,
};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// Where kernels run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// A GPU by ordinal: CUDA C++ compiled with NVRTC.
    Cuda(u32),
    /// The CPU interpreter, which defines the semantics (no GPU needed).
    Interp,
}

impl Backend {
    /// The GPU `ordinal`.
    pub fn cuda(ordinal: u32) -> Backend {
        Backend::Cuda(ordinal)
    }

    /// The CPU interpreter.
    pub fn interp() -> Backend {
        Backend::Interp
    }

    fn tune_backend(self) -> phobos_tune::Backend {
        match self {
            Backend::Cuda(_) => phobos_tune::Backend::Cuda,
            Backend::Interp => phobos_tune::Backend::Interp,
        }
    }
}

/// How [`Kernel::launch`] picks the configuration (the point of the `@autotune` space).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// The stored winner of the problem, else the nearest entry of the config table, else
    /// tune now (and store the result).
    TuneOnFirstUse,
    /// The stored winner or the config table's entry, else the default point; never tunes.
    UseStored,
    /// The default point of the space.
    Default,
    /// Tune now, measuring every point again.
    Retune,
}

/// Where the configuration a launch ran came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// Tuned by this launch.
    Tuned,
    /// The stored winner of this problem.
    Stored,
    /// The config table's entry of this problem or the nearest one.
    Table,
    /// The default point.
    Default,
}

/// What a launch ran.
#[derive(Clone, Debug, PartialEq)]
pub struct Launched {
    /// The configuration.
    pub point: Point,
    pub source: Source,
    /// Whether the variant was compiled by this launch (else it came from this kernel's cache).
    pub compiled: bool,
}

impl Launched {
    /// The configuration as `NAME=V_NAME=V`.
    pub fn config(&self) -> String {
        self.point.to_pins()
    }
}

/// Why loading or launching failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The checker's diagnostics, rendered.
    #[error("{0}")]
    Diagnostics(String),
    #[error("{0}")]
    Kernel(String),
    #[error("argument {index}: {message}")]
    Argument { index: usize, message: String },
    #[error("the configuration {config}: {message}")]
    Point { config: String, message: String },
    #[error(transparent)]
    Store(#[from] phobos_tune::StoreError),
    #[error(transparent)]
    Table(#[from] phobos_tune::deploy::TableError),
    #[error(transparent)]
    Tune(#[from] phobos_tune::TuneError),
    #[error("tuning found no configuration that runs correctly for this problem")]
    NoWinner,
    #[error("{0}")]
    Device(String),
    #[error("the launch failed: {0}")]
    Run(String),
}

/// A runtime for one back end, with its results database and optional config table.
pub struct Runtime {
    backend: Backend,
    db: Option<PathBuf>,
    table: Option<ConfigTable>,
    settings: Settings,
}

impl Runtime {
    /// A runtime on `backend`, storing results in the default database
    /// (`$XDG_CACHE_HOME/phobos/kbench.sqlite`, the one phobos-kbench uses).
    pub fn new(backend: Backend) -> Result<Runtime, Error> {
        Ok(Runtime {
            backend,
            db: Store::default_path(),
            table: None,
            settings: Settings::default(),
        })
    }

    /// Stores and looks results up in the database at `path` instead.
    pub fn with_db(mut self, path: impl Into<PathBuf>) -> Runtime {
        self.db = Some(path.into());
        self
    }

    /// Uses the config table at `path` (written by `phobos-kbench export`) for problems the
    /// database has no winner of.
    pub fn with_table(mut self, path: &Path) -> Result<Runtime, Error> {
        self.table = Some(ConfigTable::read(path)?);
        Ok(self)
    }

    /// The tuner's settings for tuning on first use (repeats, strategy, `max_points`...).
    pub fn with_settings(mut self, settings: Settings) -> Runtime {
        self.settings = settings;
        self
    }

    /// The GPU this runtime launches on, to allocate the [`phobos_gpu::DeviceTensor`]s a launch
    /// may take ([`Arg::Device`]); it shares the device's primary context with the launches.
    /// The interpreter has no GPU memory: its tensors are host tensors.
    pub fn gpu(&self) -> Result<Gpu, Error> {
        match self.backend {
            Backend::Cuda(ordinal) => {
                Gpu::new(ordinal as usize).map_err(|e| Error::Device(e.to_string()))
            }
            Backend::Interp => Err(Error::Device(
                "the interpreter has no GPU memory: pass host tensors (`Arg::Host`)".into(),
            )),
        }
    }

    /// Reads and checks a `.ph` file.
    pub fn load(&self, path: impl AsRef<Path>) -> Result<Module<'_>, Error> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| Error::Read {
            path: path.to_path_buf(),
            source,
        })?;
        self.load_source(&path.display().to_string(), &text)
    }

    /// Checks source text under a file name (for diagnostics).
    pub fn load_source(&self, name: &str, text: &str) -> Result<Module<'_>, Error> {
        let source = SourceFile::new(name, text);
        if let Err(d) = phobos_check::load(source.clone()) {
            return Err(Error::Diagnostics(crate::render::render_all(
                &d, &source, false,
            )));
        }
        Ok(Module { rt: self, source })
    }
}

/// A checked source file.
pub struct Module<'rt> {
    rt: &'rt Runtime,
    source: SourceFile,
}

impl<'rt> Module<'rt> {
    /// The kernel `name` of the file.
    pub fn kernel(&self, name: &str) -> Result<Kernel<'rt>, Error> {
        let frontend = load_frontend(&self.source, name)?;
        Ok(Kernel {
            rt: self.rt,
            source: self.source.clone(),
            name: frontend.kernel_name().to_string(),
            frontend,
            engine: None,
            variants: HashMap::new(),
        })
    }
}

fn load_frontend(source: &SourceFile, name: &str) -> Result<CheckFrontend, Error> {
    CheckFrontend::load(source.clone(), Some(name)).map_err(|e| match e {
        LoadError::Diagnostics(d, f) => {
            Error::Diagnostics(crate::render::render_all(&d, &f, false))
        }
        LoadError::Kernel(m) => Error::Kernel(m),
    })
}

/// The compiler and the device of a kernel, made on its first launch.
struct Engine {
    compiler: Arc<dyn Compiler + Send + Sync>,
    device: EngineDevice,
    info: DeviceInfo,
}

/// Where the variants of a kernel run.
enum EngineDevice {
    Interp(interp::InterpDevice),
    Cuda(cuda::CudaDevice),
}

/// A loaded variant.
enum Variant {
    Interp(Box<dyn Loaded>),
    Cuda(Box<cuda::CudaLoaded>),
}

/// One kernel of a module, with its compiled variants.
pub struct Kernel<'rt> {
    rt: &'rt Runtime,
    source: SourceFile,
    name: String,
    frontend: CheckFrontend,
    engine: Option<Engine>,
    /// Loaded variants by problem and point.
    variants: HashMap<(String, String), Variant>,
}

impl Kernel<'_> {
    /// The kernel's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Runs the kernel on `args` (in parameter order; tensors are written back in place) with
    /// the configuration `policy` picks for their problem.
    pub fn launch(&mut self, args: &mut [ArgValue], policy: Policy) -> Result<Launched, Error> {
        self.launch_args(&mut Arg::from_values(args), policy)
    }

    /// Runs the kernel on host tensors, GPU buffers the caller owns (see [`Arg`]) and scalars,
    /// in parameter order, with the configuration `policy` picks for their problem. Every
    /// argument is checked against the signature first ([`Error::Argument`]).
    ///
    /// ```
    /// use phobos::{Arg, Backend, DType, Error, HostTensor, Policy, Runtime};
    /// let rt = Runtime::new(Backend::interp())?;
    /// let module = rt.load_source(
    ///     "axpy.ph",
    ///     "kernel axpy(X: tensor<f32>[N], Y: tensor<f32>[N], a: f32) {\n  \
    ///        let o = ctx.block.x * 64\n  \
    ///        Y[o :+ 64] = X[o :+ 64] * a + Y[o :+ 64]\n\
    ///      }\n",
    /// )?;
    /// let mut axpy = module.kernel("axpy")?;
    /// let mut x = HostTensor::from_f64(DType::F32, &[3], &[1.0, 2.0, 3.0]);
    /// let mut y = HostTensor::from_f64(DType::F32, &[3], &[1.0, 1.0, 1.0]);
    /// axpy.launch_args(
    ///     &mut [Arg::Host(&mut x), Arg::Host(&mut y), Arg::Scalar(2.0)],
    ///     Policy::Default,
    /// )?;
    /// assert_eq!(y.data, [3.0, 5.0, 7.0]);
    /// // A tensor of another element type is refused before anything runs.
    /// let mut h = HostTensor::zeros(DType::F16, &[3]);
    /// let wrong = axpy.launch_args(
    ///     &mut [Arg::Host(&mut x), Arg::Host(&mut h), Arg::Scalar(2.0)],
    ///     Policy::Default,
    /// );
    /// assert!(matches!(wrong, Err(Error::Argument { index: 1, .. })));
    /// # Ok::<(), phobos::Error>(())
    /// ```
    pub fn launch_args(&mut self, args: &mut [Arg<'_>], policy: Policy) -> Result<Launched, Error> {
        match self.rt.backend {
            Backend::Interp => refuse_device_buffers(args)?,
            Backend::Cuda(ordinal) => check_device_ordinal(args, ordinal)?,
        }
        let problem = problem_of(&self.frontend, &self.default_point(), args)?;
        self.engine()?;
        let (point, source) = match policy {
            Policy::Default => (self.default_point(), Source::Default),
            Policy::UseStored => self
                .stored(&problem)?
                .unwrap_or_else(|| (self.default_point(), Source::Default)),
            Policy::TuneOnFirstUse => match self.stored(&problem)? {
                Some(found) => found,
                None => (self.tune(&problem, false)?, Source::Tuned),
            },
            Policy::Retune => (self.tune(&problem, true)?, Source::Tuned),
        };
        let compiled = self.run(&point, &problem, args)?;
        Ok(Launched {
            point,
            source,
            compiled,
        })
    }

    fn default_point(&self) -> Point {
        Pinned::new(self.frontend.space(), &[])
            .map(|p| p.default_point())
            .unwrap_or_default()
    }

    fn engine(&mut self) -> Result<&mut Engine, Error> {
        if self.engine.is_none() {
            let (device, compiler): (EngineDevice, Arc<dyn Compiler + Send + Sync>) =
                match self.rt.backend {
                    Backend::Interp => (
                        EngineDevice::Interp(interp::InterpDevice),
                        Arc::new(interp::InterpCompiler::new()),
                    ),
                    Backend::Cuda(ordinal) => {
                        let device = cuda::CudaDevice::open(ordinal)
                            .map_err(|f| Error::Device(f.first_line))?;
                        let compiler = cuda::CudaCompiler::new(
                            self.source.clone(),
                            &device.info().arch(),
                            VariantCache::default_location(),
                        )
                        .map_err(|e| Error::Device(format!("cannot compile for the GPU: {e}")))?;
                        (EngineDevice::Cuda(device), Arc::new(compiler))
                    }
                };
            let info = match &device {
                EngineDevice::Interp(d) => d.info(),
                EngineDevice::Cuda(d) => d.info(),
            };
            self.engine = Some(Engine {
                compiler,
                device,
                info,
            });
        }
        Ok(self.engine.as_mut().expect("made above"))
    }

    fn key(&self, problem: &Problem) -> Option<RunKey> {
        let e = self.engine.as_ref()?;
        Some(RunKey {
            phobos_version: PHOBOS_VERSION.into(),
            kernel_hash: self.frontend.kernel_hash().into(),
            kernel_name: self.name.clone(),
            problem: problem.clone(),
            device: e.info.name.clone(),
            driver: e.info.driver.clone(),
            compiler: e.compiler.version(),
            backend: self.rt.backend.tune_backend(),
        })
    }

    /// Whether the code generator still produces `codegen` for `point` at `problem`.
    fn same_code(&self, point: &Point, problem: &Problem, codegen: Option<&str>) -> bool {
        let (Some(e), Some(codegen)) = (self.engine.as_ref(), codegen) else {
            return false;
        };
        matches!(self.frontend.where_violation(point, problem), Ok(None))
            && self
                .frontend
                .instantiate(point, problem)
                .ok()
                .and_then(|k| e.compiler.codegen_hash(&k))
                .is_some_and(|now| now == codegen)
    }

    /// The stored winner of the problem, else the config table's entry for it.
    fn stored(&self, problem: &Problem) -> Result<Option<(Point, Source)>, Error> {
        let key = self.key(problem).expect("the engine is made first");
        if let Some(path) = self.rt.db.as_deref().filter(|p| p.is_file()) {
            let store = Store::open(path)?;
            if let Some(w) = store.last_winner(&key)? {
                if let Some(point) = self.parse_point(&w.pins) {
                    if self.same_code(&point, problem, w.codegen.as_deref()) {
                        return Ok(Some((point, Source::Stored)));
                    }
                }
            }
        }
        Ok(self.table_entry(problem).map(|p| (p, Source::Table)))
    }

    /// The entry of the nearest problem whose point still applies to this one and whose code
    /// the generator still produces for the entry's own problem.
    fn table_entry(&self, problem: &Problem) -> Option<Point> {
        let table = self.rt.table.as_ref()?;
        if table.kernel_hash != self.frontend.kernel_hash()
            || table.phobos_version != PHOBOS_VERSION
        {
            return None;
        }
        let e = self.engine.as_ref()?;
        let backend = self.rt.backend.tune_backend().name();
        table
            .nearest(problem, backend, Some(&e.info.name))
            .into_iter()
            .find_map(|entry: &ConfigEntry| {
                let point = self.parse_point(&entry.config)?;
                let applies = matches!(self.frontend.where_violation(&point, problem), Ok(None))
                    && self.frontend.instantiate(&point, problem).is_ok();
                (applies && self.same_code(&point, &entry.problem, entry.codegen.as_deref()))
                    .then_some(point)
            })
    }

    fn parse_point(&self, pins: &str) -> Option<Point> {
        let pins = phobos_check::parse_pins(pins).ok()?;
        Some(
            Pinned::new(self.frontend.space(), &pins)
                .ok()?
                .default_point(),
        )
    }

    /// Tunes the problem with the runtime's settings, storing every result; the winner.
    fn tune(&mut self, problem: &Problem, retune: bool) -> Result<Point, Error> {
        let key_info = self.engine()?.info.clone();
        let compiler = self.engine()?.compiler.clone();
        let mut executor: Box<dyn Executor> = match self.rt.backend {
            Backend::Interp => Box::new(InProcess::new(WorkerState {
                frontend: Box::new(load_frontend(&self.source, &self.name)?),
                device: Box::new(interp::InterpDevice),
                oracle: Box::new(interp::InterpDevice),
                sampled: Default::default(),
            })),
            Backend::Cuda(ordinal) => Box::new(self.start_worker(ordinal)?),
        };
        let mut store = match &self.rt.db {
            Some(path) => Some(Store::open(path)?),
            None => None,
        };
        let settings = Settings {
            retune,
            ..self.rt.settings.clone()
        };
        let report = phobos_tune::tune(
            Tuner {
                frontend: &self.frontend,
                compiler,
                executor: executor.as_mut(),
                store: store.as_mut(),
                device: key_info,
            },
            problem,
            &[],
            &settings,
            &mut |_| {},
        )?;
        report.winner.map(|w| w.point).ok_or(Error::NoWinner)
    }

    /// This program again as a worker process on the GPU `ordinal` (see
    /// [`crate::worker_main`]).
    fn start_worker(&self, ordinal: u32) -> Result<WorkerProcess, Error> {
        crate::worker::start_self(
            crate::worker::Summons::Env,
            Setup {
                source_name: self.source.name.clone(),
                source_text: self.source.text.clone(),
                kernel: self.name.clone(),
                backend: phobos_tune::Backend::Cuda,
                gpu: ordinal,
                reference: None,
            },
            Duration::from_secs(60),
        )
        .map_err(|e| Error::Device(e.to_string()))
    }

    /// Compiles (unless cached), loads and runs one point; whether it compiled.
    fn run(&mut self, point: &Point, problem: &Problem, args: &mut [Arg]) -> Result<bool, Error> {
        let slot = (problem.key(), point.to_pins());
        let mut compiled = false;
        if !self.variants.contains_key(&slot) {
            let config = point.to_pins();
            let point_err = |message: String| Error::Point {
                config: config.clone(),
                message,
            };
            self.engine()?;
            let Some(e) = self.engine.as_mut() else {
                return Err(Error::Device("the device is not open".into()));
            };
            let (kernel, built) = crate::recipe::compile_point(
                &self.frontend,
                e.compiler.as_ref(),
                &e.info,
                point,
                problem,
            )
            .map_err(|err| point_err(err.to_string()))?;
            let artifact = built.artifact;
            let loaded = match &mut e.device {
                EngineDevice::Interp(d) => d
                    .load(&kernel, artifact.as_ref(), problem)
                    .map(Variant::Interp),
                EngineDevice::Cuda(d) => d
                    .load_variant(&kernel, artifact.as_ref())
                    .map(|l| Variant::Cuda(Box::new(l)))
                    .map_err(phobos_tune::RunError::from),
            }
            .map_err(|r| point_err(r.failure.first_line))?;
            self.variants.insert(slot.clone(), loaded);
            compiled = true;
        }
        let failed = |r: phobos_tune::RunError| Error::Run(r.failure.first_line);
        match self.variants.get_mut(&slot).expect("inserted above") {
            Variant::Cuda(loaded) => loaded.run_args(args).map_err(|e| failed(e.into()))?,
            Variant::Interp(loaded) => {
                // The interpreter's device memory is the host's: the tensors run in place.
                let mut values: Vec<ArgValue> = Vec::with_capacity(args.len());
                for a in args.iter_mut() {
                    values.push(match a {
                        Arg::Host(t) => ArgValue::Tensor(std::mem::replace(*t, empty())),
                        Arg::Scalar(v) => ArgValue::Scalar(*v),
                        // Refused before the launch; here too rather than lose the tensors.
                        Arg::Device(_) => ArgValue::Scalar(f64::NAN),
                    });
                }
                let result = loaded.run(&mut values).map_err(failed);
                for (a, v) in args.iter_mut().zip(values) {
                    if let (Arg::Host(t), ArgValue::Tensor(v)) = (a, v) {
                        **t = v;
                    }
                }
                result?;
            }
        }
        Ok(compiled)
    }
}

/// A placeholder while a host tensor is lent to the interpreter.
fn empty() -> HostTensor {
    HostTensor {
        dtype: phobos_ir::DType::F32,
        shape: Vec::new(),
        data: Vec::new(),
    }
}
