//! The interpreter as a back end: "compiling" is instantiating (done by the front end), and the
//! "device" runs the interpreter and times it by the wall clock.

use phobos_interp::{Arg, Args, Config};
use phobos_ir::Kernel;
use phobos_tune::{
    ArgValue, Artifact, Backend, CompileResult, Compiled, Compiler, Device, DeviceInfo, Loaded,
    Problem, RunError,
};
use std::time::Instant;

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

/// Runs the interpreter on arguments in parameter order and writes the tensors back.
pub fn interpret(kernel: &Kernel, args: &mut [ArgValue]) -> Result<(), RunError> {
    let mut bound = Args::new();
    for a in args.iter() {
        bound = match a {
            ArgValue::Tensor(t) => bound.push(Arg::Tensor(t.clone())),
            ArgValue::Scalar(v) => bound.push(Arg::Scalar(*v)),
        };
    }
    let out = phobos_interp::run(kernel, bound, &Config::default())
        .map_err(|e| RunError::refused(format!("interpreter: {e}")))?;
    for (param, a) in kernel.params.iter().zip(args.iter_mut()) {
        if let (ArgValue::Tensor(t), Some(o)) = (&mut *a, out.get(&param.name)) {
            *t = o.clone();
        }
    }
    Ok(())
}

impl Loaded for InterpLoaded {
    fn run(&mut self, args: &mut [ArgValue]) -> Result<(), RunError> {
        interpret(&self.kernel, args)
    }

    fn prepare(&mut self, args: &[ArgValue]) -> Result<(), RunError> {
        self.prepared = args.to_vec();
        Ok(())
    }

    fn launch_timed(&mut self) -> Result<f64, RunError> {
        // Each launch gets its own copy, as a GPU launch rewrites its outputs in place.
        let mut args = self.prepared.clone();
        let start = Instant::now();
        interpret(&self.kernel, &mut args)?;
        Ok(start.elapsed().as_secs_f64() * 1e3)
    }
}
