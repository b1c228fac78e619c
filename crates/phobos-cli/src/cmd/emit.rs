//! `phobos emit`: the generated CUDA C++ of a kernel at one point (default), the PTX NVRTC
//! makes of it (`--ptx`), or the typed tile IR (`--ir`), on stdout.

use crate::args::EmitArgs;
use phobos_ir::Kernel;
use phobos_syntax::SourceFile;
use std::process::ExitCode;

use super::{run_on_file, Failure};

fn msg(message: impl Into<String>) -> Failure {
    Failure::msg(message)
}

/// Runs `phobos emit`; exit 0 on success, 1 on any error (reported on stderr).
pub fn run(args: &EmitArgs) -> ExitCode {
    run_on_file(&args.kernel.file, |file| {
        let text = emit_file(args, file)?;
        out!("{text}");
        Ok(())
    })
}

fn instantiate(args: &EmitArgs, file: &SourceFile) -> Result<Kernel, Failure> {
    if let Some((message, hint)) = super::check::cuda_source_refused(file, "emit") {
        return Err(Failure::Message {
            message,
            hint: Some(hint),
        });
    }
    let module = phobos_check::load(file.clone()).map_err(Failure::Diagnostics)?;
    let info = module.kernel(args.kernel.kernel.as_deref()).map_err(msg)?;
    let variant = info
        .variant(
            args.kernel.autotune.as_deref(),
            args.kernel.types.as_deref(),
            args.kernel.layout.as_deref(),
        )
        .map_err(|e| msg(e.to_string()))?;
    phobos_check::instantiate(&module, info, &variant).map_err(Failure::Diagnostics)
}

/// Specializes `kernel` on the alignment of the problem `--dims` names, if any, after checking
/// that the problem meets the kernel's `@where`; returns those dims.
fn specialize(args: &EmitArgs, kernel: &mut Kernel) -> Result<Vec<(String, i64)>, Failure> {
    let Some(text) = &args.dims else {
        return Ok(Vec::new());
    };
    let dims = super::parse_dims(text).map_err(|e| Failure::Message {
        message: e,
        hint: Some("write --dims M=4096,N=4096,K=4096".into()),
    })?;
    let declared: Vec<&str> = kernel.dims.iter().map(|d| d.name.as_str()).collect();
    if let Some((name, _)) = dims.iter().find(|(n, _)| !declared.contains(&n.as_str())) {
        return Err(Failure::Message {
            message: format!("`{name}` is not a runtime dim of `{}`", kernel.name),
            hint: Some(if declared.is_empty() {
                "the kernel has no runtime dims".into()
            } else {
                format!("its runtime dims: {}", declared.join(", "))
            }),
        });
    }
    // A problem the point cannot run (`@where(N <= BLOCK)` false) is refused as `phobos run`
    // refuses it; with only some dims given (for alignment alone) the constraints that read
    // the others cannot be evaluated and are left to the run.
    if let Ok(Some(d)) = phobos_check::where_diagnostic(kernel, &dims) {
        return Err(Failure::Diagnostics(vec![d]));
    }
    phobos_cuda::specialize_alignment(kernel, &dims);
    Ok(dims)
}

/// The blocks `@grid` (or the inferred grid) gives the problem of `dims`, as `, @grid (x, y,
/// z)` for the launch line, then the blocks the launch has (`phobos_gpu::launch_grid`, as `phobos
/// run` and the tuner launch it): `, blocks (x, y, z)`, with `, clusters (x, y, z)` where its
/// blocks come in clusters and `, persistent over (x, y)` where the kernel walks that logical
/// grid (the launch's x then clamped to the blocks resident at once, which needs the device).
/// Empty where the grid reads something `--dims` does not give (a dim left out, a scalar
/// parameter).
fn grid_note(kernel: &Kernel, dims: Vec<(String, i64)>, emitted: &phobos_cuda::Emitted) -> String {
    if dims.is_empty() {
        return String::new();
    }
    let problem = phobos_tune::Problem {
        dims,
        ..phobos_tune::Problem::default()
    };
    let Ok([x, y, z]) = phobos_tune::facts::grid(kernel, &problem) else {
        return String::new();
    };
    let mut note = format!(", @grid ({x}, {y}, {z})");
    let facts = phobos::backend::cuda::launch_facts(emitted);
    let grid = [x, y, z].map(|n| u32::try_from(n).unwrap_or(u32::MAX));
    match phobos_gpu::launch_grid(&facts, grid) {
        Ok(launch) => {
            let [bx, by, bz] = launch.grid;
            note.push_str(&format!(", blocks ({bx}, {by}, {bz})"));
            let cluster = facts.cluster_dims();
            if cluster != [1, 1, 1] {
                let [cx, cy, cz] = cluster;
                note.push_str(&format!(", clusters ({cx}, {cy}, {cz})"));
            }
            if let Some([gx, gy]) = launch.logical {
                note.push_str(&format!(", persistent over ({gx}, {gy})"));
            }
        }
        Err(e) => note.push_str(&format!(", no launch: {e}")),
    }
    note
}

fn emit_file(args: &EmitArgs, file: &SourceFile) -> Result<String, Failure> {
    let mut kernel = instantiate(args, file)?;
    let dims = specialize(args, &mut kernel)?;
    if args.ir {
        return Ok(phobos_ir::print_kernel(&kernel));
    }
    let opts = phobos_cuda::EmitOptions {
        source: Some(file.clone()),
    };
    let emitted = phobos_cuda::emit(&kernel, &opts).map_err(|e| Failure::Message {
        message: format!("{}: {e}", kernel.name),
        hint: Some(
            "this is a compiler bug or a missing check; please report it with the kernel".into(),
        ),
    })?;
    if !args.ptx {
        let mut out = format!(
            "// launch: {} threads, {} bytes of dynamic shared memory{}{}\n",
            emitted.threads,
            emitted.dynamic_smem_bytes,
            grid_note(&kernel, dims, &emitted),
            emitted
                .max_regs
                .map_or(String::new(), |r| format!(", -maxrregcount={r}"))
        );
        out.push_str(&emitted.source);
        return Ok(out);
    }
    let mut options = phobos_gpu::CompileOptions {
        max_registers: emitted.max_regs,
        cubin: false,
        ..phobos_gpu::CompileOptions::default()
    };
    for (name, text) in &emitted.headers {
        options = options.header(name.clone(), text.as_str());
    }
    match phobos_gpu::compile(&emitted.source, &options) {
        Ok(compiled) => Ok(compiled.ptx),
        Err(e) => Err(Failure::Message {
            message: format!("NVRTC: {}\n{}", e.summary(), e.log),
            hint: match e.kind {
                phobos_gpu::CompileErrorKind::NvrtcNotFound(_) => Some(
                    "put libnvrtc on the library path: eval \"$(scripts/cuda-tools.sh)\"".into(),
                ),
                _ => None,
            },
        }),
    }
}
