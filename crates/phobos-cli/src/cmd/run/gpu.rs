//! The GPU back end of `phobos run`: open the device (driver, device and NVRTC, each absence one
//! line with a hint), specialize the kernel on the problem's alignment, check it against the
//! device, then the runtime's recipe, the one phobos-kbench tunes with: compile with the
//! back end's compiler (`CudaCompiler`, through the variant cache), load the variant, and
//! launch it on the bound tensors, uploaded here so that the outputs are poisoned first and
//! passed as GPU buffers ([`phobos::Arg::Device`]); every tensor is read back.

use super::Failure;
use phobos::backend::cuda::{emit_cuda, CudaCompiler, CudaDevice, CudaLoaded, VariantError};
use phobos_cuda::{EmitError, Emitted};
use phobos_gpu::nvrtc::Arch;
use phobos_gpu::{DeviceTensor, Gpu, GpuError};
use phobos_interp::Launch;
use phobos_ir::host::human_bytes;
use phobos_ir::{ExprKind, HostTensor, Kernel, ParamId, ParamKind};
use phobos_syntax::{Diagnostic, SourceFile};
use phobos_tune::cache::VariantCache;
use phobos_tune::{Artifact, CompileResult, Compiler, DeviceInfo, PruneReason};
use std::collections::BTreeSet;

/// The hint under every "nothing to run on" line.
const INTERPRET_HINT: &str = "run on the CPU reference interpreter with --interpret";

/// An open GPU that NVRTC can compile for.
pub(super) struct Device {
    gpu: CudaDevice,
    arch: Arch,
}

/// Opens device 0 (`CUDA_VISIBLE_DEVICES` picks which one that is) and checks NVRTC, in that
/// order: no driver, no device and no NVRTC are each one line with a hint.
pub(super) fn open() -> Result<Device, Failure> {
    let gpu = Gpu::new(0).map_err(open_failure)?;
    let arch = Arch::for_device(gpu.info().cc);
    let gpu = CudaDevice::from_gpu(gpu);
    phobos_gpu::probe::nvrtc().map_err(|line| {
        Failure::hint(
            line,
            format!(
                "NVRTC compiles the kernel for the GPU; or {INTERPRET_HINT} (with the CUDA 13 \
                 wheels: eval \"$(scripts/cuda-tools.sh)\")"
            ),
        )
    })?;
    Ok(Device { gpu, arch })
}

/// The line and hint for a device that cannot be opened.
fn open_failure(e: GpuError) -> Failure {
    let hint = match &e {
        GpuError::DriverNotFound => format!("no GPU here? {INTERPRET_HINT}"),
        GpuError::Library(_) => format!("update the NVIDIA driver, or {INTERPRET_HINT}"),
        GpuError::NoDevice(_) | GpuError::BadOrdinal { .. } => {
            format!("check the GPU with `nvidia-smi` and CUDA_VISIBLE_DEVICES, or {INTERPRET_HINT}")
        }
        _ => format!("the GPU cannot be opened; {INTERPRET_HINT}"),
    };
    Failure::hint(e.to_string(), hint)
}

/// The kernel of a bound launch as the GPU runs it: specialized on the problem's alignment
/// (the facts are checked again at launch) so that aligned GEMMs get the fast main loops, as
/// the tuner's front end specializes every point.
pub(super) fn specialized(launch: &Launch) -> Kernel {
    let mut k = launch.kernel().clone();
    phobos_cuda::specialize_alignment(&mut k, &launch.dims());
    k
}

/// Runs a bound launch on the GPU and gives back every tensor parameter after it, in signature
/// order (as the interpreter does).
pub(super) fn execute(
    dev: &Device,
    launch: &Launch,
    file: &SourceFile,
) -> Result<Vec<(String, HostTensor)>, Failure> {
    let specialized = specialized(launch);
    let kernel = &specialized;
    let host: Vec<(String, HostTensor)> = kernel
        .params
        .iter()
        .filter_map(|p| Some((p.name.clone(), launch.tensor(&p.name)?.clone())))
        .collect();
    // An empty grid runs nothing, on either back end.
    if launch.grid().iter().any(|&g| g < 1) {
        return Ok(host);
    }
    let emitted = emit(kernel, file, dev.arch)?;
    check_limits(dev, kernel, &emitted)?;
    check_memory(dev, &host)?;
    let device = DeviceInfo::of_gpu(dev.gpu.gpu().info());
    let artifact = compile_variant(kernel, file, &device, VariantCache::default_location())?;
    let mut loaded = load(dev, kernel, &artifact, emitted.threads)?;

    let gpu = dev.gpu.gpu();
    let write_only = write_only_tensors(kernel);
    let mut tensors: Vec<Option<DeviceTensor>> = Vec::with_capacity(kernel.params.len());
    for (id, p) in kernel.params.iter().enumerate() {
        let t = match (&p.kind, launch.tensor(&p.name)) {
            (ParamKind::Tensor { order, .. }, Some(h)) => {
                let t = DeviceTensor::upload(gpu, h, *order).map_err(|e| gpu_failure(kernel, e))?;
                if write_only.contains(&id) {
                    t.fill_poison().map_err(|e| gpu_failure(kernel, e))?;
                }
                Some(t)
            }
            _ => None,
        };
        tensors.push(t);
    }
    let mut args: Vec<phobos::Arg<'_>> = kernel
        .params
        .iter()
        .zip(&tensors)
        .map(|(p, t)| match t {
            Some(t) => phobos::Arg::Device(t),
            None => phobos::Arg::Scalar(launch.scalar(&p.name).unwrap_or(0.0)),
        })
        .collect();
    // The launch binds what the generated code needs beyond the IR signature (TMA tensor maps
    // after the runtime dims, the SPLIT_K grid's z, outputs zeroed right before the launch,
    // after the poison, so a split-K sum starts from zero) from the variant's launch record.
    loaded.run_args(&mut args).map_err(|e| match e {
        VariantError::Bind(e) => Failure::hint(
            format!("the problem does not fit `{}`: {e}", kernel.name),
            "check --dims, --input and --arg against the kernel's signature and attributes",
        ),
        VariantError::Gpu(e) => gpu_failure(kernel, e),
        VariantError::Refused(m) => Failure::msg(format!("`{}` on the GPU: {m}", kernel.name)),
    })?;
    let mut out = Vec::with_capacity(host.len());
    for (p, t) in kernel.params.iter().zip(&tensors) {
        if let Some(t) = t {
            out.push((
                p.name.clone(),
                t.download().map_err(|e| gpu_failure(kernel, e))?,
            ));
        }
    }
    Ok(out)
}

/// Compiles a kernel point for `device` with the back end's compiler, through the variant
/// cache at `cache`: the compile phobos-kbench and the runtime make of the same point.
pub(super) fn compile_variant(
    kernel: &Kernel,
    file: &SourceFile,
    device: &DeviceInfo,
    cache: VariantCache,
) -> Result<Artifact, Failure> {
    let arch = device.arch();
    let compiler = CudaCompiler::new(file.clone(), &arch, cache)
        .map_err(|line| Failure::hint(format!("NVRTC: {line}"), INTERPRET_HINT))?;
    match compiler.compile(kernel, device) {
        CompileResult::Ok(c) => c.artifact.ok_or_else(|| {
            Failure::msg(format!("NVRTC, `{}`: no binary was produced", kernel.name))
        }),
        CompileResult::Failed(f) => Err(Failure::hint(
            format!("NVRTC, `{}`: {}", kernel.name, f.first_line),
            format!(
                "the generated code does not compile for {arch}: see it with `phobos emit` \
                 (same flags), or {INTERPRET_HINT}"
            ),
        )),
        CompileResult::Pruned(PruneReason::SharedMemory { bytes, limit }) => Err(Failure::hint(
            format!(
                "`{}` at this point needs {bytes} bytes of shared memory per block (static and \
                 dynamic), but {} allows at most {limit}",
                kernel.name, device.name
            ),
            "pick smaller tiles with --autotune (`phobos space` lists the points)",
        )),
        CompileResult::Pruned(r) => Err(Failure::msg(format!(
            "`{}` at this point cannot run on {}: {r}",
            kernel.name, device.name
        ))),
    }
}

/// The generated CUDA C++ for `arch`; a construct the back end cannot lower points into the
/// source.
fn emit(kernel: &Kernel, file: &SourceFile, arch: Arch) -> Result<Emitted, Failure> {
    emit_cuda(kernel, file, arch).map_err(|e| match e {
        EmitError::Unsupported { what, span } => Failure::Diagnostics(vec![Diagnostic::error(
            "",
            format!("the CUDA back end cannot lower {what}"),
            span,
        )
        .with_note(format!("while generating code for `{}`", kernel.name))
        .with_help(format!(
            "the checker should have refused this; {INTERPRET_HINT}"
        ))]),
    })
}

/// Block size and shared memory against the device, before compiling.
fn check_limits(dev: &Device, kernel: &Kernel, e: &Emitted) -> Result<(), Failure> {
    let info = dev.gpu.gpu().info();
    if e.threads > info.max_threads_per_block {
        return Err(Failure::hint(
            format!(
                "`{}` launches {} threads per block, but {} allows at most {}",
                kernel.name, e.threads, info.name, info.max_threads_per_block
            ),
            "lower the threads in @launch",
        ));
    }
    if e.dynamic_smem_bytes > info.smem_per_block_optin {
        return Err(Failure::hint(
            format!(
                "`{}` at this point needs {} bytes of dynamic shared memory per block, but {} \
                 allows at most {}",
                kernel.name, e.dynamic_smem_bytes, info.name, info.smem_per_block_optin
            ),
            "pick smaller tiles with --autotune (`phobos space` lists the points)",
        ));
    }
    Ok(())
}

/// The bytes tensors take in device memory (their element type's size each); `None` on
/// overflow.
fn device_bytes(tensors: &[(String, HostTensor)]) -> Option<u64> {
    tensors.iter().try_fold(0u64, |total, (_, t)| {
        let elems = t
            .shape
            .iter()
            .try_fold(1u64, |n, &d| n.checked_mul(d as u64))?;
        total.checked_add(elems.checked_mul(t.dtype.size_bytes() as u64)?)
    })
}

/// The tensors against the device's memory, before anything is allocated there.
fn check_memory(dev: &Device, tensors: &[(String, HostTensor)]) -> Result<(), Failure> {
    let info = dev.gpu.gpu().info();
    match device_bytes(tensors) {
        Some(b) if b <= info.total_mem_bytes => Ok(()),
        b => Err(Failure::hint(
            format!(
                "the tensors need {} of device memory, but {} has {}",
                b.map_or_else(|| "more bytes than u64 counts".into(), human_bytes),
                info.name,
                human_bytes(info.total_mem_bytes)
            ),
            "make the dims smaller",
        )),
    }
}

/// Loads the compiled variant; checks what only the compiled code knows (registers against the
/// block size).
fn load(
    dev: &Device,
    kernel: &Kernel,
    artifact: &Artifact,
    threads: u32,
) -> Result<CudaLoaded, Failure> {
    let loaded = dev
        .gpu
        .load_variant(kernel, Some(artifact))
        .map_err(|e| match e {
            VariantError::Gpu(err) => gpu_failure(kernel, err),
            e => Failure::msg(format!("`{}` on the GPU: {e}", kernel.name)),
        })?;
    let attrs = loaded.function().attributes();
    let info = dev.gpu.gpu().info();
    if attrs.max_threads_per_block < threads {
        return Err(Failure::hint(
            format!(
                "`{}` needs {} registers per thread, so {} runs at most {} threads per block; \
                 the kernel launches {threads}",
                kernel.name, attrs.num_regs, info.name, attrs.max_threads_per_block
            ),
            "lower the threads in @launch, or cap registers with @launch(threads, min_blocks, \
             max_regs)",
        ));
    }
    Ok(loaded)
}

/// A GPU error as one line with what to do about it.
fn gpu_failure(kernel: &Kernel, e: GpuError) -> Failure {
    let hint = match &e {
        GpuError::LaunchRejected { .. } => {
            "the driver refused this configuration: fewer threads or smaller tiles \
             (--autotune) may fit"
        }
        GpuError::Fault(_) | GpuError::Poisoned(_) => {
            "the generated code faulted: a bug of the code generator; compare with --interpret \
             and see the code with `phobos emit`"
        }
        GpuError::ModuleLoad { .. } => "the driver refused the compiled code",
        _ => "",
    };
    let message = format!("`{}` on the GPU: {e}", kernel.name);
    if hint.is_empty() {
        Failure::msg(message)
    } else {
        Failure::hint(message, hint)
    }
}

/// Tensors the kernel stores to and never loads from: they are poisoned on the device before
/// the launch (NaN for floats, `0x7f..` for integers), so an element the kernel fails to write
/// shows. Tensors it also reads (atomics read what they update) keep their values: the kernel
/// may depend on them.
pub(super) fn write_only_tensors(kernel: &Kernel) -> BTreeSet<ParamId> {
    let mut loaded = phobos_ir::walk::atomic_targets(&kernel.body);
    phobos_ir::walk::exprs(&kernel.body, &mut |e| {
        if let ExprKind::Load { tensor, .. } = &e.kind {
            loaded.insert(*tensor);
        }
    });
    phobos_ir::walk::stored(&kernel.body)
        .difference(&loaded)
        .copied()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use phobos::backend::cuda::launch_facts;
    use phobos_gpu::{bind_args, Arg};

    #[test]
    fn device_bytes_count_each_element_type_and_refuse_overflow() {
        let t = |dtype, shape: &[usize]| HostTensor {
            dtype,
            shape: shape.to_vec(),
            data: Vec::new(),
        };
        let small = [
            ("A".into(), t(phobos_ir::DType::BF16, &[4, 8])),
            ("C".into(), t(phobos_ir::DType::F32, &[3])),
        ];
        assert_eq!(device_bytes(&small), Some(4 * 8 * 2 + 3 * 4));
        let huge = [("A".into(), t(phobos_ir::DType::F64, &[1 << 40, 1 << 30]))];
        assert_eq!(device_bytes(&huge), None);
    }

    fn kernel(src: &str) -> Kernel {
        let module = phobos_check::load(SourceFile::new("t.ph", src)).expect("checks");
        let info = module.kernel(None).expect("one kernel");
        let variant = info.default_variant().expect("a default point");
        phobos_check::instantiate(&module, info, &variant).expect("instantiates")
    }

    #[test]
    fn only_tensors_stored_and_never_loaded_are_poisoned() {
        let k = kernel(
            "@grid(cdiv(N, 256))\nkernel k(X: tensor<f32>[N], Y: tensor<f32>[N], Z: tensor<f32>[N]) {\n  \
             let i = ctx.block.x * ctx.threads + ctx.thread\n  \
             Y[i] = X[i] + Z[i]\n  Z[i] = 2.0 * X[i]\n}\n",
        );
        // Y is written only; Z is read before it is written; X is only read.
        assert_eq!(write_only_tensors(&k), BTreeSet::from([1]));
    }

    #[test]
    fn a_load_in_an_index_or_a_condition_counts_as_a_read() {
        let k = kernel(
            "@grid(cdiv(N, 256))\nkernel k(I: tensor<i32>[N], Y: tensor<f32>[N], F: tensor<i32>[N]) {\n  \
             let i = ctx.block.x * ctx.threads + ctx.thread\n  \
             if F[i] > 0 {\n    Y[I[i]] = 1.0\n  }\n  F[i] = 0\n}\n",
        );
        assert_eq!(write_only_tensors(&k), BTreeSet::from([1]));
    }

    #[test]
    fn an_atomic_target_is_read_so_never_poisoned() {
        let k = kernel(
            "@grid(cdiv(N, 256))\nkernel k(X: tensor<i32>[N], H: tensor<i32>[8], S: tensor<f32>[8], Y: tensor<f32>[N]) {\n  \
             let i = ctx.block.x * ctx.threads + ctx.thread\n  \
             atomic_add(H[X[i]], 1)\n  atomic_max(S[0 :+ 8], 1.0)\n  Y[i] = 0.0\n}\n",
        );
        assert_eq!(write_only_tensors(&k), BTreeSet::from([3]));
    }

    /// An example kernel at `pins` and `types`, specialized on `dims`, emitted for sm_90a, its
    /// launch facts, and the host-side launch plan for tensors at made-up aligned addresses.
    fn planned(
        example: &str,
        pins: Option<&str>,
        types: Option<&str>,
        dims: &[(&str, usize)],
    ) -> (phobos_gpu::LaunchFacts, phobos_gpu::LaunchPlan) {
        let path = format!("{}/../../examples/{example}", env!("CARGO_MANIFEST_DIR"));
        let file = SourceFile::new(example, std::fs::read_to_string(path).unwrap());
        let module = phobos_check::load(file.clone()).unwrap();
        let info = module.kernel(None).unwrap();
        let variant = info.variant(pins, types, None).unwrap();
        let mut k = phobos_check::instantiate(&module, info, &variant).unwrap();
        let named: Vec<(String, i64)> = dims
            .iter()
            .map(|(n, v)| (n.to_string(), *v as i64))
            .collect();
        phobos_cuda::specialize_alignment(&mut k, &named);
        let Ok(e) = emit(&k, &file, Arch::SM_90A) else {
            panic!("{example} does not emit");
        };
        let facts = launch_facts(&e);
        let size = |n: &str| dims.iter().find(|d| d.0 == n).unwrap().1;
        let shapes: Vec<Vec<usize>> = [("M", "K"), ("K", "N"), ("M", "N")]
            .iter()
            .map(|(r, c)| vec![size(r), size(c)])
            .collect();
        let dtypes: Vec<phobos_ir::DType> = k
            .params
            .iter()
            .map(|p| match &p.kind {
                ParamKind::Tensor { dtype, .. } => *dtype,
                ParamKind::Scalar { dtype } => *dtype,
            })
            .collect();
        let args: Vec<Arg<'_>> = shapes
            .iter()
            .zip(&dtypes)
            .enumerate()
            .map(|(i, (shape, dtype))| {
                Arg::Tensor(phobos_gpu::TensorRef {
                    ptr: 0x1000_0000 * (i as u64 + 1),
                    dtype: *dtype,
                    shape,
                    order: phobos_ir::MemOrder::RowMajor,
                })
            })
            .collect();
        let bound = bind_args(&k, &args).unwrap();
        let plan = phobos_gpu::plan_launch(&facts, &k, &bound, &args).unwrap();
        (facts, plan)
    }

    #[test]
    fn aligned_gemms_get_tensor_maps_that_cover_their_operands() {
        let dims = [("M", 256), ("N", 384), ("K", 192)];
        let (facts, plan) = planned("gemm_fast.ph", None, Some("TA=bf16,TB=bf16"), &dims);
        let covered: Vec<ParamId> = facts.tensor_maps.iter().map(|t| t.tensor).collect();
        assert_eq!(covered, [0, 1], "A and B through TMA");
        assert_eq!(plan.maps.len(), 2);
        // Row-major A is K-contiguous: its map is K x M, innermost first.
        assert_eq!(plan.maps[0].global_dim, [192, 256]);
        assert_eq!(plan.maps[0].global_address, 0x1000_0000);
        assert!(plan.zero.is_empty());
        // A ragged problem keeps the plain launch: no map, the kernel's own grid.
        let ragged = [("M", 77), ("N", 45), ("K", 67)];
        let (facts, plan) = planned("gemm_fast.ph", None, None, &ragged);
        assert!(facts.tensor_maps.is_empty());
        assert_eq!(plan.grid[2], 1);
    }

    #[test]
    fn split_k_zeroes_c_and_launches_its_parts_along_z() {
        let dims = [("M", 77), ("N", 65), ("K", 192)];
        let pins = "TILE_M=64 TILE_N=128 TILE_K=32 SPLIT_K=2";
        let (facts, plan) = planned("gemm_tuned.ph", Some(pins), None, &dims);
        assert_eq!(
            (facts.zero_before_launch.clone(), facts.grid_z),
            (vec![2], 2)
        );
        assert_eq!(plan.zero, vec![(0x3000_0000, 77 * 65 * 4)]);
        assert_eq!(plan.grid, [2, 1, 2]);
    }

    #[test]
    fn missing_driver_is_one_line_with_the_interpreter_hint() {
        let Failure::Message { message, hint } = open_failure(GpuError::DriverNotFound) else {
            panic!("a message");
        };
        assert_eq!(message, phobos_gpu::probe::DRIVER_NOT_FOUND);
        assert!(!message.contains('\n'));
        assert!(hint.unwrap().contains("--interpret"));
        let Failure::Message { message, hint } =
            open_failure(GpuError::NoDevice("the driver reports 0 devices".into()))
        else {
            panic!("a message");
        };
        assert!(message.starts_with("no CUDA device available"), "{message}");
        assert!(hint.unwrap().contains("nvidia-smi"));
    }
}
