//! The GPU back end's device side: open the GPU, load a compiled variant with its launch
//! record, launch it on host tensors, GPU buffers and scalars (`run_args`, the launch of the
//! runtime, of `phobos run` and of the tuner's workers), and time it.

use super::CachedMeta;
use crate::backend::cuda_blas;
use phobos_gpu::{bind_args, Blas, DeviceTensor, Function, Gpu, GpuError, ModuleImage};
use phobos_gpu::{LaunchFacts, PreparedLaunch};
use phobos_ir::{Kernel, ParamKind};
use phobos_tune::cache::VariantCache;
use phobos_tune::worker::LibrarySpec;
use phobos_tune::OPEN_FAILED;
use phobos_tune::{ArgValue, Artifact, Device, DeviceInfo, Failure, Loaded, Problem, RunError};
use std::sync::{Arc, Mutex};

fn gpu_error(e: GpuError) -> RunError {
    RunError {
        fatal: e.is_fatal(),
        failure: Failure::from_log(e.to_string()),
    }
}

/// Opens the GPU in the worker: the driver describes the device at once, and its context (the
/// slow part of opening it) is created on a thread meanwhile, so the worker reports ready and
/// the main process starts compiling while it is; the first job waits for it.
pub fn open_device(ordinal: u32) -> Result<Box<dyn Device>, Failure> {
    let info =
        phobos_gpu::probe_device(ordinal as usize).map_err(|e| Failure::from_log(e.to_string()))?;
    let opening = std::thread::spawn(move || CudaDevice::open(ordinal));
    Ok(Box::new(OpeningDevice {
        info: DeviceInfo::of_gpu(&info),
        state: Opening::Pending(opening),
    }))
}

/// A [`CudaDevice`] whose context is still being created.
struct OpeningDevice {
    info: DeviceInfo,
    state: Opening,
}

enum Opening {
    Pending(std::thread::JoinHandle<Result<CudaDevice, Failure>>),
    Open(CudaDevice),
    /// Why the context could not be created (every job is answered with it).
    Failed(Failure),
    /// Only while a pending open is being joined.
    Taken,
}

impl OpeningDevice {
    fn device(&mut self) -> Result<&mut CudaDevice, RunError> {
        if let Opening::Pending(_) = self.state {
            let Opening::Pending(handle) = std::mem::replace(&mut self.state, Opening::Taken)
            else {
                unreachable!("matched above")
            };
            self.state = match handle.join() {
                Ok(Ok(d)) => Opening::Open(d),
                Ok(Err(f)) => Opening::Failed(f),
                Err(_) => Opening::Failed(Failure::from_log("opening the GPU panicked")),
            };
        }
        match &mut self.state {
            Opening::Open(d) => Ok(d),
            Opening::Failed(f) => Err(RunError {
                fatal: true,
                failure: Failure::from_log(format!("{OPEN_FAILED}: {}", f.log)),
            }),
            Opening::Pending(_) | Opening::Taken => unreachable!("joined above"),
        }
    }
}

impl Device for OpeningDevice {
    fn info(&self) -> DeviceInfo {
        self.info.clone()
    }

    fn load(
        &mut self,
        kernel: &Kernel,
        artifact: Option<&Artifact>,
        problem: &Problem,
    ) -> Result<Box<dyn Loaded>, RunError> {
        self.device()?.load(kernel, artifact, problem)
    }

    fn library(
        &mut self,
        kernel: &Kernel,
        spec: &LibrarySpec,
        problem: &Problem,
    ) -> Result<Box<dyn Loaded>, RunError> {
        self.device()?.library(kernel, spec, problem)
    }
}

/// A GPU as the tuner's [`Device`], and the runtime's.
pub struct CudaDevice {
    gpu: Gpu,
    /// cuBLAS, created on first use (a reference check or a baseline timing).
    blas: Option<Arc<Blas>>,
    /// The timing inputs of the current problem, uploaded once for all its variants.
    resident: Arc<Mutex<Option<Resident>>>,
    /// The read-only inputs of the current sampled check, uploaded once for all its variants
    /// ([`Loaded::run_kept`]).
    kept: Arc<Mutex<Option<Resident>>>,
}

/// Uploaded timing inputs and the key of the host tensors they are a copy of.
struct Resident {
    key: String,
    tensors: Arc<Vec<Option<DeviceTensor>>>,
}

/// Timing inputs stay resident only while they take at most this share of the device's memory:
/// a correctness check at the full size allocates its own beside them.
const RESIDENT_SHARE: u64 = 4;

/// Why a variant could not be loaded or launched.
#[derive(Debug, thiserror::Error)]
pub enum VariantError {
    /// The binary or its launch record is missing or damaged.
    #[error("{0}")]
    Refused(String),
    /// The arguments do not fit the kernel.
    #[error(transparent)]
    Bind(#[from] phobos_gpu::BindError),
    #[error(transparent)]
    Gpu(#[from] GpuError),
}

impl From<VariantError> for RunError {
    fn from(e: VariantError) -> RunError {
        match e {
            VariantError::Gpu(e) => gpu_error(e),
            e => RunError::refused(e.to_string()),
        }
    }
}

impl CudaDevice {
    /// Opens the GPU `ordinal`.
    pub fn open(ordinal: u32) -> Result<CudaDevice, Failure> {
        let gpu = Gpu::new(ordinal as usize).map_err(|e| Failure::from_log(e.to_string()))?;
        Ok(CudaDevice::from_gpu(gpu))
    }

    /// A GPU opened already.
    pub fn from_gpu(gpu: Gpu) -> CudaDevice {
        CudaDevice {
            gpu,
            blas: None,
            resident: Arc::new(Mutex::new(None)),
            kept: Arc::new(Mutex::new(None)),
        }
    }

    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    /// Loads a compiled variant of `kernel` (the binary and launch record the compiler put in
    /// the variant cache).
    pub fn load_variant(
        &self,
        kernel: &Kernel,
        artifact: Option<&Artifact>,
    ) -> Result<CudaLoaded, VariantError> {
        let refused = |m: String| VariantError::Refused(m);
        let a = artifact.ok_or_else(|| refused("no binary for a GPU launch".into()))?;
        let bytes = std::fs::read(&a.path)
            .map_err(|e| refused(format!("cannot read {}: {e}", a.path.display())))?;
        // The file may have changed since the compile checked it: never hand the driver a
        // damaged image.
        VariantCache::verify_binary(&a.path, &bytes).map_err(refused)?;
        let image = if bytes.starts_with(b"\x7fELF") {
            ModuleImage::Cubin(bytes)
        } else {
            ModuleImage::Ptx(String::from_utf8_lossy(&bytes).into_owned())
        };
        // The record beside the binary (`<key>.json`) holds its launch facts.
        let record = a.path.with_extension("json");
        let meta: CachedMeta = std::fs::read(&record)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .ok_or_else(|| {
                refused(format!(
                    "cannot read the launch record {}",
                    record.display()
                ))
            })?;
        let module = self.gpu.load_module(&image)?;
        let function = module.function(&a.entry)?;
        Ok(CudaLoaded {
            gpu: self.gpu.clone(),
            kernel: kernel.clone(),
            function,
            smem: a.dynamic_smem_bytes as u32,
            facts: meta.launch,
            tensors: Arc::new(Vec::new()),
            prepared: None,
            resident: self.resident.clone(),
            kept: self.kept.clone(),
            events: None,
        })
    }
}

impl Device for CudaDevice {
    fn info(&self) -> DeviceInfo {
        DeviceInfo::of_gpu(self.gpu.info())
    }

    fn load(
        &mut self,
        kernel: &Kernel,
        artifact: Option<&Artifact>,
        _problem: &Problem,
    ) -> Result<Box<dyn Loaded>, RunError> {
        Ok(Box::new(self.load_variant(kernel, artifact)?))
    }

    fn library(
        &mut self,
        kernel: &Kernel,
        spec: &LibrarySpec,
        problem: &Problem,
    ) -> Result<Box<dyn Loaded>, RunError> {
        let call = cuda_blas::plan(kernel, spec, problem).map_err(RunError::refused)?;
        let blas = match &self.blas {
            Some(b) => b.clone(),
            None => {
                let b = Arc::new(Blas::new(&self.gpu).map_err(gpu_error)?);
                self.blas = Some(b.clone());
                b
            }
        };
        Ok(Box::new(cuda_blas::BlasLoaded::new(
            blas,
            self.gpu.clone(),
            call,
            kernel.clone(),
        )))
    }
}

/// A variant loaded on the GPU.
pub struct CudaLoaded {
    gpu: Gpu,
    kernel: Kernel,
    function: Function,
    smem: u32,
    facts: LaunchFacts,
    tensors: Arc<Vec<Option<DeviceTensor>>>,
    prepared: Option<PreparedLaunch>,
    /// The device's resident timing inputs ([`Loaded::prepare_reused`]).
    resident: Arc<Mutex<Option<Resident>>>,
    /// The device's resident check inputs ([`Loaded::run_kept`]).
    kept: Arc<Mutex<Option<Resident>>>,
    /// The two events around a timed launch, made on the first and reused.
    events: Option<(phobos_gpu::Event, phobos_gpu::Event)>,
}

impl CudaLoaded {
    /// The tensors of `args` on the device, in parameter order (`None` for scalars).
    fn upload_all(&self, args: &[ArgValue]) -> Result<Vec<Option<DeviceTensor>>, RunError> {
        let mut out = Vec::with_capacity(args.len());
        for (p, a) in self.kernel.params.iter().zip(args) {
            out.push(match (&p.kind, a) {
                (ParamKind::Tensor { order, .. }, ArgValue::Tensor(h)) => {
                    Some(DeviceTensor::upload(&self.gpu, h, *order).map_err(gpu_error)?)
                }
                _ => None,
            });
        }
        Ok(out)
    }

    fn upload(&mut self, args: &[ArgValue]) -> Result<(), RunError> {
        self.tensors = Arc::new(Vec::new());
        self.tensors = Arc::new(self.upload_all(args)?);
        self.bind(args)
    }

    /// Uploads `args` unless the device holds them under `key` already; keeps them there
    /// when they are small enough ([`RESIDENT_SHARE`]).
    fn upload_reused(&mut self, key: &str, args: &[ArgValue]) -> Result<(), RunError> {
        let mut resident = self.resident.lock().unwrap_or_else(|p| p.into_inner());
        match resident.as_ref() {
            Some(r) if r.key == key => self.tensors = r.tensors.clone(),
            _ => {
                // The previous problem's copies go first: both need not fit at once.
                *resident = None;
                self.tensors = Arc::new(Vec::new());
                self.tensors = Arc::new(self.upload_all(args)?);
                let bytes: u64 = self
                    .tensors
                    .iter()
                    .flatten()
                    .map(|t| t.buf.len() as u64)
                    .sum();
                if bytes <= self.gpu.info().total_mem_bytes / RESIDENT_SHARE {
                    *resident = Some(Resident {
                        key: key.to_string(),
                        tensors: self.tensors.clone(),
                    });
                }
            }
        }
        drop(resident);
        self.bind(args)
    }

    /// One launch on the device's copies of `args` under `key` (uploaded when the device holds
    /// none under it, and kept when small enough, [`RESIDENT_SHARE`]): the tensors the kernel
    /// only reads are used in place, each tensor it writes is copied on the device from its kept
    /// first state into a fresh buffer for this launch alone (no host conversion or upload a
    /// variant) and downloaded into `args` after it.
    fn run_on_kept(&mut self, key: &str, args: &mut [ArgValue]) -> Result<(), RunError> {
        let stored = phobos_ir::walk::stored(&self.kernel.body);
        let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        let first = match kept.as_ref() {
            Some(r) if r.key == key => r.tensors.clone(),
            _ => {
                // The previous check's copies go first: both need not fit at once.
                *kept = None;
                let first = Arc::new(self.upload_all(args)?);
                let bytes: u64 = first.iter().flatten().map(|t| t.buf.len() as u64).sum();
                if bytes <= self.gpu.info().total_mem_bytes / RESIDENT_SHARE {
                    *kept = Some(Resident {
                        key: key.to_string(),
                        tensors: first.clone(),
                    });
                }
                first
            }
        };
        drop(kept);
        let mut written = Vec::with_capacity(first.len());
        for (i, t) in first.iter().enumerate() {
            written.push(match t {
                Some(t) if stored.contains(&i) => {
                    let fresh = DeviceTensor::alloc(&self.gpu, t.dtype, &t.shape, t.order)
                        .map_err(gpu_error)?;
                    self.gpu.copy(&fresh.buf, &t.buf).map_err(gpu_error)?;
                    Some(fresh)
                }
                _ => None,
            });
        }
        let refs: Vec<phobos_gpu::Arg<'_>> = (written.iter().zip(first.iter()).zip(args.iter()))
            .map(|((w, r), a)| match (w.as_ref().or(r.as_ref()), a) {
                (Some(t), _) => t.arg(),
                (None, ArgValue::Scalar(v)) => phobos_gpu::Arg::Scalar(*v),
                (None, ArgValue::Tensor(_)) => phobos_gpu::Arg::Scalar(0.0),
            })
            .collect();
        let bound = bind_args(&self.kernel, &refs).map_err(|e| RunError::refused(e.to_string()))?;
        let prepared = (self.gpu)
            .prepare_launch(&self.kernel, bound, &refs, &self.facts)
            .map_err(gpu_error)?;
        (self.gpu)
            .launch_prepared(&self.function, &prepared, self.smem)
            .map_err(gpu_error)?;
        self.gpu.synchronize().map_err(gpu_error)?;
        for (w, a) in written.iter().zip(args.iter_mut()) {
            if let (Some(t), ArgValue::Tensor(h)) = (w, a) {
                *h = t.download().map_err(gpu_error)?;
            }
        }
        Ok(())
    }

    /// The prepared launch on the current tensors and the scalars of `args`.
    fn bind(&mut self, args: &[ArgValue]) -> Result<(), RunError> {
        let refs: Vec<phobos_gpu::Arg<'_>> = self
            .tensors
            .iter()
            .zip(args)
            .map(|(t, a)| match (t, a) {
                (Some(t), _) => t.arg(),
                (None, ArgValue::Scalar(v)) => phobos_gpu::Arg::Scalar(*v),
                (None, ArgValue::Tensor(_)) => phobos_gpu::Arg::Scalar(0.0),
            })
            .collect();
        let bound = bind_args(&self.kernel, &refs).map_err(|e| RunError::refused(e.to_string()))?;
        let prepared = self
            .gpu
            .prepare_launch(&self.kernel, bound, &refs, &self.facts)
            .map_err(gpu_error)?;
        self.prepared = Some(prepared);
        Ok(())
    }
}

impl CudaLoaded {
    /// The loaded entry point (its registers and limits).
    pub fn function(&self) -> &Function {
        &self.function
    }

    /// One launch on host tensors (uploaded, and those the kernel writes downloaded after it), GPU buffers (used in
    /// place, after the work queued on them) and scalars, in parameter order.
    pub fn run_args(&mut self, args: &mut [crate::Arg<'_>]) -> Result<(), VariantError> {
        use crate::Arg as A;
        let mut owned: Vec<Option<DeviceTensor>> = Vec::with_capacity(args.len());
        for (p, a) in self.kernel.params.iter().zip(args.iter()) {
            owned.push(match (&p.kind, a) {
                (ParamKind::Tensor { order, .. }, A::Host(h)) => {
                    Some(DeviceTensor::upload(&self.gpu, h, *order)?)
                }
                (_, A::Device(t)) => {
                    // The caller's stream may still be writing it.
                    t.buf.gpu().synchronize()?;
                    None
                }
                _ => None,
            });
        }
        let refs: Vec<phobos_gpu::Arg<'_>> = owned
            .iter()
            .zip(args.iter())
            .map(|(o, a)| match (o, a) {
                (Some(t), _) => t.arg(),
                (None, A::Device(t)) => t.arg(),
                (None, A::Scalar(v)) => phobos_gpu::Arg::Scalar(*v),
                (None, A::Host(_)) => phobos_gpu::Arg::Scalar(0.0),
            })
            .collect();
        let bound = bind_args(&self.kernel, &refs)?;
        let prepared = self
            .gpu
            .prepare_launch(&self.kernel, bound, &refs, &self.facts)?;
        self.gpu
            .launch_prepared(&self.function, &prepared, self.smem)?;
        self.gpu.synchronize()?;
        // Only the tensors the kernel writes come back: the others hold what was uploaded (a
        // sampled check of attention at real size uploads 100M input elements a variant, and
        // reading them back cost more than the launch; bench/NOTES.md t6).
        let stored = phobos_ir::walk::stored(&self.kernel.body);
        for (i, (t, a)) in owned.iter().zip(args.iter_mut()).enumerate() {
            if let (Some(t), A::Host(h)) = (t, a) {
                if stored.contains(&i) {
                    **h = t.download()?;
                }
            }
        }
        Ok(())
    }
}

impl Loaded for CudaLoaded {
    fn run(&mut self, args: &mut [ArgValue]) -> Result<(), RunError> {
        Ok(self.run_args(&mut crate::Arg::from_values(args))?)
    }

    fn prepare(&mut self, args: &[ArgValue]) -> Result<(), RunError> {
        self.upload(args)
    }

    fn run_kept(&mut self, key: &str, args: &mut [ArgValue]) -> Result<(), RunError> {
        self.run_on_kept(key, args)
    }

    fn prepare_reused(&mut self, key: &str, args: &[ArgValue]) -> Result<(), RunError> {
        self.upload_reused(key, args)
    }

    fn launch_timed(&mut self) -> Result<f64, RunError> {
        let prepared = self
            .prepared
            .as_ref()
            .ok_or_else(|| RunError::refused("not prepared"))?;
        // The L2 is flushed before each launch so no variant is timed on a warm cache.
        self.gpu.flush_l2().map_err(gpu_error)?;
        if self.events.is_none() {
            self.events = Some((
                self.gpu.event().map_err(gpu_error)?,
                self.gpu.event().map_err(gpu_error)?,
            ));
        }
        let (a, b) = self.events.as_ref().expect("made above");
        a.record().map_err(gpu_error)?;
        // SPLIT_K outputs are zeroed here, between the events: part of the variant's cost.
        self.gpu
            .launch_prepared(&self.function, prepared, self.smem)
            .map_err(gpu_error)?;
        b.record().map_err(gpu_error)?;
        Ok(a.elapsed_ms(b).map_err(gpu_error)? as f64)
    }

    fn clusters(&self) -> Option<phobos_gpu::ClusterResidency> {
        // What the driver cannot answer is left out of the record, not guessed.
        let prepared = self.prepared.as_ref()?;
        (self.gpu)
            .cluster_residency(&self.function, prepared, self.smem)
            .ok()
            .flatten()
    }
}
