//! The interpreter as a back end: "compiling" is instantiating (done by the front end), and the
//! "device" runs the interpreter and times it by the wall clock.

use phobos_interp::{Arg, Args, Config, Launch, SampleConfig};
use phobos_ir::{HostTensor, Kernel};
use phobos_tune::{
    ArgValue, Artifact, Backend, BlockCoverage, CompileResult, Compiled, Compiler, Device,
    DeviceInfo, Loaded, Problem, RunError, SampleSpec, SampledRun,
};
use std::time::{Duration, Instant};

/// Identifies interpreter variants: two points whose IR is identical run identically.
pub struct InterpCompiler {
    /// [`phobos_tune::backend::generator_tag`], mixed into the generated code's hash.
    tag: Option<String>,
}

impl InterpCompiler {
    pub fn new() -> InterpCompiler {
        InterpCompiler {
            tag: phobos_tune::backend::generator_tag(),
        }
    }
}

impl Default for InterpCompiler {
    fn default() -> InterpCompiler {
        InterpCompiler::new()
    }
}

/// The IR without its point: equal text means the same program (a name the body does not use
/// gives the same binary at every value).
fn program_text(kernel: &Kernel) -> String {
    let mut k = kernel.clone();
    k.point = Default::default();
    format!("{k:?}")
}

impl Compiler for InterpCompiler {
    fn backend(&self) -> Backend {
        Backend::Interp
    }

    fn version(&self) -> String {
        "interp".into()
    }

    fn compile(&self, kernel: &Kernel, _device: &DeviceInfo) -> CompileResult {
        let start = Instant::now();
        let text = program_text(kernel);
        CompileResult::Ok(Compiled {
            binary_hash: phobos_tune::hash::stable_hash(&[text.as_bytes()]),
            artifact: None,
            resources: None,
            from_cache: false,
            repaired: None,
            compile_ms: start.elapsed().as_secs_f64() * 1e3,
        })
    }

    /// The interpreter runs the IR: that is its generated code (with the point, which the
    /// store keys by anyway).
    fn codegen_hash(&self, kernel: &Kernel) -> Option<String> {
        let text = program_text(kernel);
        let tag = self.tag.as_deref().unwrap_or_default();
        Some(phobos_tune::hash::stable_hash(&[
            text.as_bytes(),
            tag.as_bytes(),
        ]))
    }
}

/// The CPU interpreter standing in for a device.
pub struct InterpDevice;

struct InterpLoaded {
    kernel: Kernel,
    prepared: Vec<ArgValue>,
}

impl Device for InterpDevice {
    fn info(&self) -> DeviceInfo {
        DeviceInfo::interpreter()
    }

    fn load(
        &mut self,
        kernel: &Kernel,
        _artifact: Option<&Artifact>,
        _problem: &Problem,
    ) -> Result<Box<dyn Loaded>, RunError> {
        Ok(Box::new(InterpLoaded {
            kernel: kernel.clone(),
            prepared: Vec::new(),
        }))
    }
}

fn bind(args: &[ArgValue]) -> Args {
    let mut bound = Args::new();
    for a in args {
        bound = match a {
            ArgValue::Tensor(t) => bound.push(Arg::Tensor(t.clone())),
            ArgValue::Scalar(v) => bound.push(Arg::Scalar(*v)),
        };
    }
    bound
}

fn refused(e: phobos_interp::Error) -> RunError {
    RunError::refused(format!("interpreter: {e}"))
}

/// Moves the tensors of a run back into the arguments, by parameter name.
fn write_back(kernel: &Kernel, out: Vec<(String, HostTensor)>, args: &mut [ArgValue]) {
    for (name, tensor) in out {
        let at = kernel.params.iter().position(|p| p.name == name);
        if let Some(ArgValue::Tensor(t)) = at.and_then(|i| args.get_mut(i)) {
            *t = tensor;
        }
    }
}

/// Runs the interpreter on arguments in parameter order and writes the tensors back.
pub fn interpret(kernel: &Kernel, args: &mut [ArgValue]) -> Result<(), RunError> {
    let out = phobos_interp::run(kernel, bind(args), &Config::default()).map_err(refused)?;
    write_back(kernel, out.tensors, args);
    Ok(())
}

/// Runs a sample of the launch's blocks ([`Launch::run_sample`]) and writes their stores back.
pub fn interpret_sample(
    kernel: &Kernel,
    args: &mut [ArgValue],
    sample: &SampleSpec,
) -> Result<SampledRun, RunError> {
    let launch = Launch::new(kernel, bind(args)).map_err(refused)?;
    let config = SampleConfig {
        seed: sample.seed,
        budget: Duration::from_millis(sample.budget_ms),
        random_blocks: sample.random_blocks,
    };
    let s = launch
        .run_sample(&Config::default(), &config)
        .map_err(refused)?;
    let written = kernel
        .params
        .iter()
        .map(|p| s.output.mask(&p.name).map(|m| m.0.clone()))
        .collect();
    write_back(kernel, s.output.tensors, args);
    let c = s.coverage;
    Ok(SampledRun {
        written,
        coverage: BlockCoverage {
            grid_blocks: c.grid_blocks,
            corners: c.corners,
            edges: c.edges,
            random: c.random,
        },
    })
}

impl Loaded for InterpLoaded {
    fn run(&mut self, args: &mut [ArgValue]) -> Result<(), RunError> {
        interpret(&self.kernel, args)
    }

    fn prepare(&mut self, args: &[ArgValue]) -> Result<(), RunError> {
        self.prepared = args.to_vec();
        Ok(())
    }

    fn run_sample(
        &mut self,
        args: &mut [ArgValue],
        sample: &SampleSpec,
    ) -> Result<Option<SampledRun>, RunError> {
        interpret_sample(&self.kernel, args, sample).map(Some)
    }

    fn launch_timed(&mut self) -> Result<f64, RunError> {
        // Each launch gets its own copy, as a GPU launch rewrites its outputs in place.
        let mut args = self.prepared.clone();
        let start = Instant::now();
        interpret(&self.kernel, &mut args)?;
        Ok(start.elapsed().as_secs_f64() * 1e3)
    }
}
