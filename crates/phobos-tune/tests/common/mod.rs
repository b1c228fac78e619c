//! A synthetic kernel, compiler and device for testing the engine without a front end: the
//! kernel copies `X` to `O` doubled; the spec says which points the checker rejects, which
//! compute a wrong result, and how long each takes.

#![allow(dead_code)]

use phobos_check::{Name, Space};
use phobos_ir::{
    BinOp, DType, Dim, DimVar, Eviction, Expr, ExprKind, Index, Kernel, Launch, Lit, MemOrder,
    Param, ParamKind, Point, Stmt, StmtKind, Ty,
};
use phobos_tune::worker::{serve, Executor, InProcess, Setup, WorkerProcess, WorkerState};
use phobos_tune::*;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct MockSpec {
    /// Declared names and choices.
    pub names: Vec<(String, Vec<i64>)>,
    /// `@where(N % U == 0)`.
    pub where_n_multiple_of_u: bool,
    /// The checker rejects the point where this name has this value.
    pub reject: Option<(String, i64)>,
    /// The variant at this point adds 1 to every output.
    pub wrong_at: Option<(String, i64)>,
    /// Milliseconds per launch by the value of `U` (default 1.0).
    pub times: Vec<(i64, f64)>,
    /// Every variant compiles to the same binary.
    pub all_same_binary: bool,
    /// Stands for the code generator's version: the generated code of every point changes
    /// with it.
    #[serde(default)]
    pub generator: String,
    /// Timed launches after the first `n` (counted over the whole run) take `factor` times
    /// longer, as on a GPU that throttles under sustained load (in-process runs only).
    #[serde(skip)]
    pub throttle: Option<(Arc<AtomicUsize>, usize, f64)>,
    /// Every key timing inputs were prepared under (`Loaded::prepare_reused`), in order
    /// (in-process runs only).
    #[serde(skip)]
    pub prepared_keys: Option<Arc<std::sync::Mutex<Vec<String>>>>,
    /// Counts the sampled runs (`Loaded::run_sample`) of the oracle (in-process runs only).
    #[serde(skip)]
    pub samples: Option<Arc<AtomicUsize>>,
}

impl Default for MockSpec {
    fn default() -> MockSpec {
        MockSpec {
            names: vec![("U".into(), vec![1, 2, 4, 8])],
            where_n_multiple_of_u: false,
            reject: None,
            wrong_at: None,
            times: vec![(1, 4.0), (2, 2.0), (4, 1.0), (8, 3.0)],
            all_same_binary: false,
            generator: String::new(),
            throttle: None,
            prepared_keys: None,
            samples: None,
        }
    }
}

fn e(kind: ExprKind, ty: Ty) -> Expr {
    Expr {
        kind,
        ty,
        uniform: true,
        span: Default::default(),
    }
}

fn int(v: i64) -> Expr {
    e(ExprKind::Lit(Lit::Int(v)), Ty::Scalar(DType::I32))
}

fn matches(p: &Point, at: &Option<(String, i64)>) -> bool {
    at.as_ref().is_some_and(|(n, v)| p.get(n) == Some(*v))
}

pub struct MockFrontend {
    pub spec: MockSpec,
    space: Space,
}

impl MockFrontend {
    pub fn new(spec: MockSpec) -> MockFrontend {
        let space = Space {
            names: spec
                .names
                .iter()
                .map(|(n, c)| Name {
                    name: n.clone(),
                    choices: c.clone(),
                    span: Default::default(),
                })
                .collect(),
        };
        MockFrontend { spec, space }
    }

    pub fn kernel(&self, point: &Point) -> Kernel {
        let tile = point.get("TILE").unwrap_or(16);
        let tensor = |name: &str| Param {
            name: name.into(),
            kind: ParamKind::Tensor {
                dtype: DType::F32,
                dims: vec![Dim::Dyn(0)],
                order: MemOrder::RowMajor,
            },
            span: Default::default(),
        };
        let span = || Index::Span {
            start: int(0),
            len: tile,
        };
        let tile_ty = Ty::Tile(DType::F32, vec![tile]);
        let dim_n = e(ExprKind::Dim(0), Ty::Scalar(DType::I32));
        let wheres = if self.spec.where_n_multiple_of_u {
            let u = point.get("U").unwrap_or(1);
            let rem = e(
                ExprKind::Binary(BinOp::Rem, Box::new(dim_n.clone()), Box::new(int(u))),
                Ty::Scalar(DType::I32),
            );
            vec![e(
                ExprKind::Binary(BinOp::Eq, Box::new(rem), Box::new(int(0))),
                Ty::Scalar(DType::Bool),
            )]
        } else {
            Vec::new()
        };
        Kernel {
            name: "mock".into(),
            point: point.clone(),
            type_args: Vec::new(),
            params: vec![tensor("X"), tensor("O")],
            dims: vec![DimVar {
                name: "N".into(),
                source: (0, 0),
            }],
            aligned: Vec::new(),
            launch: Launch {
                threads: point.get("T").unwrap_or(256) as u32,
                min_blocks_per_sm: None,
                max_regs: None,
            },
            grid: [int(1), int(1), int(1)],
            wheres,
            flops: Some(dim_n),
            bytes: None,
            locals: Vec::new(),
            body: vec![Stmt {
                kind: StmtKind::Store {
                    tensor: 1,
                    index: vec![span()],
                    value: e(
                        ExprKind::Load {
                            tensor: 0,
                            index: vec![span()],
                            cache: Eviction::Normal,
                        },
                        tile_ty,
                    ),
                    cache: Eviction::Normal,
                },
                span: Default::default(),
            }],
            span: Default::default(),
        }
    }
}

impl Frontend for MockFrontend {
    fn kernel_name(&self) -> &str {
        "mock"
    }
    fn kernel_hash(&self) -> &str {
        "mock-hash"
    }
    fn space(&self) -> &Space {
        &self.space
    }
    fn where_violation(&self, point: &Point, problem: &Problem) -> Result<Option<String>, Failure> {
        phobos_tune::facts::where_violation(&self.kernel(point), problem).map_err(Failure::from_log)
    }
    fn instantiate(&self, point: &Point, _problem: &Problem) -> Result<Kernel, Failure> {
        if matches(point, &self.spec.reject) {
            return Err(Failure::from_log(format!(
                "error[E0999]: the checker rejects {}\n  --> mock.ph:1:1",
                point.to_pins()
            )));
        }
        Ok(self.kernel(point))
    }
}

pub struct MockCompiler {
    pub spec: MockSpec,
    pub compiles: AtomicUsize,
}

impl MockCompiler {
    pub fn new(spec: MockSpec) -> Arc<MockCompiler> {
        Arc::new(MockCompiler {
            spec,
            compiles: AtomicUsize::new(0),
        })
    }
}

impl Compiler for MockCompiler {
    fn backend(&self) -> Backend {
        Backend::Interp
    }
    fn version(&self) -> String {
        "mock 1".into()
    }
    fn compile(&self, kernel: &Kernel, _device: &DeviceInfo) -> CompileResult {
        self.compiles.fetch_add(1, Ordering::SeqCst);
        let hash = if self.spec.all_same_binary {
            "same".into()
        } else {
            kernel.point.to_pins()
        };
        CompileResult::Ok(Compiled {
            binary_hash: hash,
            artifact: None,
            resources: Some(Resources {
                registers: 32,
                threads: kernel.launch.threads,
                ..Default::default()
            }),
            from_cache: false,
            repaired: None,
            compile_ms: 1.0,
        })
    }
    fn codegen_hash(&self, kernel: &Kernel) -> Option<String> {
        let code = format!("{} {}", kernel.point.to_pins(), self.spec.generator);
        Some(phobos_tune::hash::stable_hash(&[code.as_bytes()]))
    }
}

pub struct MockDevice {
    pub spec: MockSpec,
    /// The reference device never computes wrong.
    pub oracle: bool,
}

struct MockLoaded {
    wrong: bool,
    ms: f64,
    throttle: Option<(Arc<AtomicUsize>, usize, f64)>,
    prepared_keys: Option<Arc<std::sync::Mutex<Vec<String>>>>,
    samples: Option<Arc<AtomicUsize>>,
}

impl Device for MockDevice {
    fn info(&self) -> DeviceInfo {
        DeviceInfo {
            name: "mock-device".into(),
            ..DeviceInfo::interpreter()
        }
    }
    fn load(
        &mut self,
        kernel: &Kernel,
        _artifact: Option<&Artifact>,
        _problem: &Problem,
    ) -> Result<Box<dyn Loaded>, RunError> {
        let u = kernel.point.get("U").unwrap_or(1);
        let ms = self
            .spec
            .times
            .iter()
            .find(|(v, _)| *v == u)
            .map_or(1.0, |t| t.1);
        Ok(Box::new(MockLoaded {
            wrong: !self.oracle && matches(&kernel.point, &self.spec.wrong_at),
            ms,
            throttle: self.spec.throttle.clone(),
            prepared_keys: self.spec.prepared_keys.clone(),
            samples: self.spec.samples.clone(),
        }))
    }
}

impl Loaded for MockLoaded {
    fn run(&mut self, args: &mut [ArgValue]) -> Result<(), RunError> {
        let x = args[0].tensor().unwrap().clone();
        if let ArgValue::Tensor(o) = &mut args[1] {
            for (o, x) in o.data.iter_mut().zip(&x.data) {
                *o = 2.0 * x + if self.wrong { 1.0 } else { 0.0 };
            }
        }
        Ok(())
    }
    fn prepare(&mut self, _args: &[ArgValue]) -> Result<(), RunError> {
        Ok(())
    }
    fn prepare_reused(&mut self, key: &str, args: &[ArgValue]) -> Result<(), RunError> {
        if let Some(keys) = &self.prepared_keys {
            keys.lock().unwrap().push(key.to_string());
        }
        self.prepare(args)
    }
    /// As if the launch had two blocks, each writing half of `O`, and the sample ran the
    /// first: the first half of `O` is written, the rest keeps its poison.
    fn run_sample(
        &mut self,
        args: &mut [ArgValue],
        _sample: &SampleSpec,
    ) -> Result<Option<SampledRun>, RunError> {
        if let Some(count) = &self.samples {
            count.fetch_add(1, Ordering::SeqCst);
        }
        let n = args[1].tensor().unwrap().data.len();
        let before = args[1].clone();
        self.run(args)?;
        let written: Vec<bool> = (0..n).map(|i| i < n / 2).collect();
        if let (ArgValue::Tensor(o), ArgValue::Tensor(b)) = (&mut args[1], before) {
            for (i, v) in o.data.iter_mut().enumerate() {
                if !written[i] {
                    *v = b.data[i];
                }
            }
        }
        Ok(Some(SampledRun {
            written: vec![Some(vec![false; n]), Some(written)],
            coverage: BlockCoverage {
                grid_blocks: 2,
                corners: 1,
                ..BlockCoverage::default()
            },
        }))
    }
    fn launch_timed(&mut self) -> Result<f64, RunError> {
        match &self.throttle {
            Some((count, n, factor)) if count.fetch_add(1, Ordering::SeqCst) >= *n => {
                Ok(self.ms * factor)
            }
            _ => Ok(self.ms),
        }
    }
}

pub fn state(spec: &MockSpec) -> WorkerState {
    WorkerState {
        frontend: Box::new(MockFrontend::new(spec.clone())),
        device: Box::new(MockDevice {
            spec: spec.clone(),
            oracle: false,
        }),
        oracle: Box::new(MockDevice {
            spec: spec.clone(),
            oracle: true,
        }),
        sampled: Default::default(),
    }
}

/// The generated-code hash of every point of the spec's space, by `to_pins`: what the engine
/// looks stored results up with.
pub fn generated(spec: &MockSpec) -> std::collections::HashMap<String, String> {
    let mut points = vec![Point(Vec::new())];
    for (name, choices) in &spec.names {
        points = points
            .into_iter()
            .flat_map(|p| {
                choices.iter().map(move |&c| {
                    let mut q = p.clone();
                    q.0.push((name.clone(), c));
                    q
                })
            })
            .collect();
    }
    let frontend = MockFrontend::new(spec.clone());
    let compiler = MockCompiler::new(spec.clone());
    points
        .iter()
        .map(|p| {
            let hash = compiler.codegen_hash(&frontend.kernel(p)).unwrap();
            (p.to_pins(), hash)
        })
        .collect()
}

pub fn in_process(spec: &MockSpec) -> InProcess {
    InProcess::new(state(spec))
}

pub fn problem(n: i64) -> Problem {
    Problem {
        dims: vec![("N".into(), n)],
        ..Default::default()
    }
}

/// Fast settings: few repeats, one thread.
pub fn settings() -> Settings {
    Settings {
        jobs: 2,
        time: phobos_tune::timing::TimeSettings {
            warmup: 1,
            min_reps: 3,
            max_reps: 5,
            budget_ms: 1.0,
            early_stop_factor: Some(3.0),
        },
        final_round: phobos_tune::timing::FinalSettings {
            warmup: 1,
            rounds: 3,
            budget_ms: 0.0,
            max_rounds: 3,
        },
        ..Settings::default()
    }
}

/// Everything an observer saw, as text lines.
#[derive(Default)]
pub struct Seen {
    pub pruned: Vec<(String, String)>,
    pub points: Vec<PointResult>,
    pub logs: Vec<String>,
    pub finals: usize,
    pub search: Option<(usize, usize)>,
    /// `Event::Ran`: which GPU ran which point (with several workers).
    pub ran: Vec<(String, u32)>,
}

pub fn run(
    spec: &MockSpec,
    executor: &mut dyn Executor,
    store: Option<&mut Store>,
    problem: &Problem,
    pins: &[(String, i64)],
    settings: &Settings,
) -> (Result<Report, TuneError>, Seen, Arc<MockCompiler>) {
    let frontend = MockFrontend::new(spec.clone());
    let compiler = MockCompiler::new(spec.clone());
    let mut seen = Seen::default();
    let device = executor.device().clone();
    let report = tune(
        Tuner {
            frontend: &frontend,
            compiler: compiler.clone(),
            executor,
            store,
            device,
        },
        problem,
        pins,
        settings,
        &mut |ev| match ev {
            Event::Pruned { point, reason } => {
                seen.pruned.push((point.to_pins(), reason.to_string()))
            }
            Event::Point(r) => seen.points.push(r.clone()),
            Event::Log(l) => seen.logs.push(l),
            Event::FinalRound { .. } => seen.finals += 1,
            Event::Search { to_run, reused } => seen.search = Some((to_run, reused)),
            Event::Space { .. } => {}
            Event::Ran { point, ordinal } => seen.ran.push((point.to_pins(), ordinal)),
        },
    );
    (report, seen, compiler)
}

/// The environment variable that turns a test binary into a mock worker.
pub const WORKER_ENV: &str = "PHOBOS_TUNE_TEST_WORKER";

/// Runs the worker loop when this test binary was started as a worker; call it from a test
/// named `worker_entry`.
pub fn maybe_serve() {
    if std::env::var_os(WORKER_ENV).is_none() {
        return;
    }
    let stdin = std::io::stdin();
    let code = serve(stdin.lock(), std::io::stdout(), |setup: &Setup| {
        let spec: MockSpec = serde_json::from_str(&setup.source_text)
            .map_err(|e| Failure::from_log(e.to_string()))?;
        Ok(state(&spec))
    });
    std::process::exit(code);
}

/// A worker process running this test binary's `worker_entry`, with extra environment.
pub fn worker(spec: &MockSpec, env: &[(&str, &str)], timeout: Duration) -> WorkerProcess {
    worker_on(spec, 0, env, timeout)
}

/// [`worker`] for the GPU ordinal `gpu` (the mock device ignores it; the pool records it).
pub fn worker_on(
    spec: &MockSpec,
    gpu: u32,
    env: &[(&str, &str)],
    timeout: Duration,
) -> WorkerProcess {
    let env: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let exe = std::env::current_exe().unwrap();
    WorkerProcess::start(
        move || {
            let mut c = std::process::Command::new(&exe);
            c.args(["--exact", "worker_entry", "--nocapture", "--test-threads=1"])
                .env(WORKER_ENV, "1");
            for (k, v) in &env {
                c.env(k, v);
            }
            c
        },
        Setup {
            source_name: "mock.ph".into(),
            source_text: serde_json::to_string(spec).unwrap(),
            kernel: "mock".into(),
            backend: Backend::Interp,
            gpu,
            reference: None,
        },
        timeout,
    )
    .unwrap()
}
