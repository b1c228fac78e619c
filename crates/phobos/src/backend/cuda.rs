//! The GPU back end: emit and compile with NVRTC in the main process (on the thread pool, with
//! an on-disk cache), load, launch and time in the worker process.
//!
//! The launch facts of the generated code (tensor maps after the runtime dims, SPLIT_K outputs
//! to zero, the grid's z) are stored in the cache record beside the binary, so the worker
//! launches exactly what was compiled; zeroing is queued with the launch, inside the timed
//! region.

use phobos_cuda::{emit_for_target, EmitError, EmitOptions, Emitted, Target};
use phobos_gpu::nvrtc::{compile, nvrtc_version, Arch, CompileOptions, Header};
use phobos_gpu::{Extent, LaunchFacts, TensorMapParam};
use phobos_ir::{Dim, Kernel};
use phobos_syntax::SourceFile;
use phobos_tune::cache::{Cached, VariantCache};
use phobos_tune::hash::stable_hash;
use phobos_tune::prune;
use phobos_tune::{
    Artifact, Backend, CompileResult, Compiled, Compiler, DeviceInfo, Failure, Resources,
};
use serde::{Deserialize, Serialize};
use std::time::Instant;

mod device;
pub use device::{open_device, CudaDevice, CudaLoaded, VariantError};

/// What the variant cache keeps beside a binary.
#[derive(Serialize, Deserialize)]
struct CachedMeta {
    entry: String,
    dynamic_smem_bytes: u64,
    resources: Option<Resources>,
    /// What the launch needs beyond `bind_args` (absent in records of older versions: none).
    #[serde(default)]
    launch: LaunchFacts,
}

/// The code generator's target for an NVRTC architecture: sm_90a (wgmma and TMA) only for the
/// architecture-specific sm_90a, sm_80 (mma.sync) for any other sm_80 or later.
pub fn emit_target(arch: Arch) -> Target {
    match (arch.major, arch.specific) {
        (9, true) => Target::sm90a(),
        (m, _) if m >= 8 => Target::sm80(),
        (m, _) => Target::from_cc(m * 10 + arch.minor),
    }
}

fn extent(d: Dim) -> Extent {
    match d {
        Dim::Static(n) => Extent::Static(n.max(0) as u64),
        Dim::Dyn(id) => Extent::Dim(id),
    }
}

/// The launch facts of emitted code, for `Gpu::prepare_launch` (`phobos run` uses it too).
pub fn launch_facts(e: &Emitted) -> LaunchFacts {
    LaunchFacts {
        tensor_maps: e
            .tma
            .iter()
            .map(|t| TensorMapParam {
                tensor: t.tensor,
                data_type: t.spec.data_type as u32,
                elem_bytes: t.spec.elem_bytes,
                global_dim: [extent(t.global_dim[0]), extent(t.global_dim[1])],
                line_stride: extent(t.line_stride),
                box_dim: t.spec.box_dim,
                element_strides: t.spec.element_strides,
                interleave: t.spec.interleave,
                swizzle: t.spec.swizzle,
                l2_promotion: t.spec.l2_promotion,
                oob_fill: t.spec.oob_fill,
                outer: t.outer.map(|o| phobos_gpu::OuterDim {
                    extent: extent(o),
                    box_dim: 1,
                }),
            })
            .collect(),
        zero_before_launch: e.zero_before_launch.clone(),
        grid_z: e.grid_z,
        persistent: e.persistent,
        cluster_x: e.cluster,
        row_split: e.row_split_blocks(),
        // SPLIT_REDUCE=4: a tile's parts are a cluster along z.
        cluster_z: (e.gemms.iter())
            .filter_map(|g| g.split)
            .find(|s| s.reduce == phobos_cuda::SplitReduce::Cluster)
            .map_or(1, |s| s.parts),
        split_workspace: e.split_workspace.map(|w| phobos_gpu::SplitWorkspace {
            c: w.c,
            parts: w.parts,
        }),
    }
}

/// The generated CUDA C++ of a kernel point for an NVRTC target: the one recipe that
/// `phobos run`, phobos-kbench and [`crate::Runtime`] compile.
pub fn emit_cuda(kernel: &Kernel, file: &SourceFile, arch: Arch) -> Result<Emitted, EmitError> {
    let opts = EmitOptions {
        source: Some(file.clone()),
    };
    emit_for_target(kernel, &opts, &emit_target(arch))
}

/// NVRTC's options for emitted code (its headers, register cap and program name).
pub fn compile_options(kernel: &Kernel, e: &Emitted, arch: Arch) -> CompileOptions {
    let mut copts = CompileOptions::for_arch(arch);
    copts.headers = e
        .headers
        .iter()
        .map(|(n, t)| Header::new(n.clone(), t.as_str()))
        .collect();
    copts.max_registers = e.max_regs;
    copts.program_name = format!("{}.cu", kernel.name);
    copts
}

/// NVRTC for one target architecture.
pub struct CudaCompiler {
    file: SourceFile,
    arch: Arch,
    cache: VariantCache,
    version: String,
    /// [`phobos_tune::backend::generator_tag`], appended to the emitted source as a comment.
    tag: Option<String>,
    /// The file is CUDA C++ (`.cu`): compiled as written, with the point as `-D` macros.
    cpp: bool,
}

impl CudaCompiler {
    /// A compiler for `arch` (`sm_90` and the like); fails with one line when NVRTC is missing.
    pub fn new(file: SourceFile, arch: &str, cache: VariantCache) -> Result<CudaCompiler, String> {
        let (major, minor) = nvrtc_version()?;
        let arch = Arch::parse(arch).unwrap_or(Arch::SM_90A);
        Ok(CudaCompiler {
            arch,
            cache,
            version: format!("nvrtc {major}.{minor}"),
            tag: phobos_tune::backend::generator_tag(),
            cpp: phobos_check::cuda_cpp::is_cuda_source(&file.name),
            file,
        })
    }

    /// What the code generator produces for this kernel on this target.
    fn emit(&self, kernel: &Kernel) -> Result<Emitted, Failure> {
        if self.cpp {
            return Ok(super::cuda_cpp::emitted(
                kernel,
                &self.file.text,
                self.tag.as_deref(),
            ));
        }
        let mut e = emit_cuda(kernel, &self.file, self.arch)
            .map_err(|err| Failure::from_log(err.to_string()))?;
        if let Some(tag) = &self.tag {
            e.source.push_str(&format!("// generator tag: {tag}\n"));
        }
        Ok(e)
    }
}

impl Compiler for CudaCompiler {
    fn backend(&self) -> Backend {
        Backend::Cuda
    }

    fn version(&self) -> String {
        self.version.clone()
    }

    fn compile(&self, kernel: &Kernel, device: &DeviceInfo) -> CompileResult {
        let start = Instant::now();
        let e = match self.emit(kernel) {
            Ok(e) => e,
            Err(f) => return CompileResult::Failed(f),
        };
        let dynamic = e.dynamic_smem_bytes as u64;
        if let Some(r) = prune::shared_memory(dynamic, device) {
            return CompileResult::Pruned(r);
        }
        let mut copts = compile_options(kernel, &e, self.arch);
        if self.cpp {
            copts.defines = super::cuda_cpp::defines(kernel);
            copts.program_name = std::path::Path::new(&self.file.name)
                .file_name()
                .map_or_else(
                    || self.file.name.clone(),
                    |n| n.to_string_lossy().into_owned(),
                );
        }
        let flags = copts.flags().join(" ");
        let mut parts: Vec<&[u8]> = vec![
            e.source.as_bytes(),
            flags.as_bytes(),
            self.version.as_bytes(),
            e.entry.as_bytes(),
        ];
        for (n, t) in &e.headers {
            parts.push(n.as_bytes());
            parts.push(t.as_bytes());
        }
        let key = VariantCache::key(&parts);
        let done = |bin: &[u8], meta: CachedMeta, from_cache: bool, repaired: Option<String>| {
            let total = meta.resources.as_ref().map_or(dynamic, |r| r.smem_bytes);
            if let Some(r) = prune::shared_memory(total, device) {
                return CompileResult::Pruned(r);
            }
            CompileResult::Ok(Compiled {
                binary_hash: stable_hash(&[bin]),
                artifact: Some(Artifact {
                    path: self.cache.binary_path(&key),
                    entry: meta.entry,
                    dynamic_smem_bytes: meta.dynamic_smem_bytes,
                }),
                resources: meta.resources,
                from_cache,
                repaired,
                compile_ms: start.elapsed().as_secs_f64() * 1e3,
            })
        };
        let repaired = match self.cache.get::<CachedMeta>(&key) {
            Cached::Hit(bin, meta) => return done(&bin, meta, true, None),
            Cached::Miss => None,
            Cached::Damaged(why) => Some(format!(
                "the cached binary {} was damaged ({why})",
                self.cache.binary_path(&key).display()
            )),
        };
        let c = match compile(&e.source, &copts) {
            Ok(c) => c,
            Err(err) => {
                return CompileResult::Failed(Failure {
                    first_line: err.summary(),
                    log: format!("{}\nflags: {}", err.log, err.flags.join(" ")),
                })
            }
        };
        // A C++ kernel's symbol is its name, or a mangled name when it is not `extern "C"`.
        let entry = if self.cpp {
            match super::cuda_cpp::entry(&c.ptx, &e.entry) {
                Ok(entry) => entry,
                Err(m) => return CompileResult::Failed(Failure::from_log(m)),
            }
        } else {
            e.entry.clone()
        };
        let resources = phobos_gpu::resources::of_compiled(&c, &entry)
            .ok()
            .map(|r| Resources {
                registers: r.registers,
                spill_store_bytes: r.spill_store_bytes,
                spill_load_bytes: r.spill_load_bytes,
                smem_bytes: r.static_smem_bytes as u64 + dynamic,
                threads: e.threads,
                occupancy: None,
                clusters: None,
            });
        let bin = c
            .cubin
            .clone()
            .unwrap_or_else(|| c.ptx.clone().into_bytes());
        let meta = CachedMeta {
            entry,
            dynamic_smem_bytes: dynamic,
            resources,
            launch: launch_facts(&e),
        };
        if let Err(err) = self.cache.put(&key, &bin, &meta) {
            return CompileResult::Failed(Failure::from_log(format!(
                "cannot write the variant cache {}: {err}",
                self.cache.dir().display()
            )));
        }
        done(&bin, meta, false, repaired)
    }

    /// The emitted source, its entry and its headers, for this target, and what the launch
    /// needs besides them (its tensor maps).
    fn codegen_hash(&self, kernel: &Kernel) -> Option<String> {
        let e = self.emit(kernel).ok()?;
        // A C++ source's code at a point is its text and the point's `-D` set.
        let defines = self
            .cpp
            .then(|| format!("{:?}", super::cuda_cpp::defines(kernel)));
        Some(code_hash(&e, defines.as_deref()))
    }
}

/// What the store keys a point's code by: the emitted source, its entry, its headers, a `.cu`
/// point's `-D` set (`defines`), and its tensor maps where it has any ([`launch_facts`]): the
/// host encodes them, so another map (its box, its L2 promotion) runs other code from the same
/// source. A kernel without maps adds nothing: its key is the source's alone.
fn code_hash(e: &Emitted, defines: Option<&str>) -> String {
    let mut parts: Vec<&[u8]> = vec![e.source.as_bytes(), e.entry.as_bytes()];
    if let Some(d) = defines {
        parts.push(d.as_bytes());
    }
    for (n, t) in &e.headers {
        parts.push(n.as_bytes());
        parts.push(t.as_bytes());
    }
    let maps = (!e.tma.is_empty())
        .then(|| serde_json::to_vec(&launch_facts(e).tensor_maps).unwrap_or_default());
    parts.extend(maps.as_deref());
    stable_hash(&parts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_sm_90a_gets_the_hopper_main_loop() {
        assert_eq!(emit_target(Arch::SM_90A), Target::sm90a());
        assert_eq!(emit_target(Arch::SM_90), Target::sm80());
        assert_eq!(emit_target(Arch::SM_80), Target::sm80());
        assert_eq!(emit_target(Arch::new(10, 0, true)), Target::sm80());
        assert_eq!(emit_target(Arch::new(7, 5, false)), Target::from_cc(75));
        assert!(!emit_target(Arch::new(7, 5, false)).mma_sync());
    }

    /// The one kernel of `text` at its default point, specialized on dims M, N, K as the
    /// tuner compiles it.
    fn specialized(text: &str, [m, n, k]: [i64; 3]) -> Kernel {
        let module = phobos_check::load(SourceFile::new("g.ph", text)).expect("checks");
        let info = module.kernel(None).expect("one kernel");
        let v = info.default_variant().expect("variant");
        let mut kernel = phobos_check::instantiate(&module, info, &v).expect("instantiates");
        let dims = [("M", m), ("N", n), ("K", k)].map(|(d, v)| (d.to_string(), v));
        phobos_cuda::specialize_alignment(&mut kernel, &dims);
        kernel
    }

    /// SPLIT_REDUCE=4's parts are the kernel's cluster along z, which the launch facts carry
    /// (the worker asks the driver how many such clusters fit at once); other launches have none.
    #[test]
    fn launch_facts_carry_a_split_cluster_along_z() {
        let at = |reduce: u32| {
            format!(
                "@autotune(TILE_M in [64], TILE_N in [64], TILE_K in [64], STAGES in [6], \
                 SPLIT_K in [4], SPLIT_REDUCE in [{reduce}])\n\
                 @launch(160)\n\
                 kernel g(A: tensor<f16>[M, K], B: tensor<f16>[K, N], C: tensor<f16>[M, N]) {{\n  \
                 var acc: tile<f32>[TILE_M, TILE_N] = 0.0\n  \
                 for k in range(0, K, TILE_K) {{\n    \
                 acc += dot(A[ctx.block.x * TILE_M :+ TILE_M, k :+ TILE_K], B[k :+ TILE_K, ctx.block.y * TILE_N :+ TILE_N])\n  }}\n  \
                 C[ctx.block.x * TILE_M :+ TILE_M, ctx.block.y * TILE_N :+ TILE_N] = f16(acc)\n}}\n"
            )
        };
        for (reduce, cluster_z) in [(4, 4), (3, 1)] {
            let k = specialized(&at(reduce), [512, 512, 4096]);
            let e = emit_for_target(&k, &EmitOptions::default(), &Target::sm90a()).unwrap();
            let facts = launch_facts(&e);
            assert_eq!(
                (facts.grid_z, facts.cluster_z, facts.cluster_x),
                (4, cluster_z, 1),
                "SPLIT_REDUCE={reduce}: {}",
                e.notes.join("\n")
            );
        }
    }

    /// A wgmma variant's launch facts survive the cache record the worker reads.
    #[test]
    fn launch_facts_of_a_wgmma_gemm_round_trip_through_the_record() {
        let text = "@autotune(TILE_M in [128], TILE_N in [128], TILE_K in [64], SPLIT_K in [2])\n\
                    @launch(256)\n\
                    kernel g(A: tensor<bf16>[M, K], B: tensor<bf16>[K, N], C: tensor<f32>[M, N]) {\n  \
                    var acc: tile<f32>[TILE_M, TILE_N] = 0.0\n  \
                    for k in range(0, K, TILE_K) {\n    \
                    acc += dot(A[ctx.block.x * TILE_M :+ TILE_M, k :+ TILE_K], B[k :+ TILE_K, ctx.block.y * TILE_N :+ TILE_N])\n  }\n  \
                    C[ctx.block.x * TILE_M :+ TILE_M, ctx.block.y * TILE_N :+ TILE_N] = acc\n}\n";
        let k = specialized(text, [512, 256, 1024]);
        let e = emit_for_target(&k, &EmitOptions::default(), &Target::sm90a()).unwrap();
        let facts = launch_facts(&e);
        assert_eq!(facts.tensor_maps.len(), 2);
        assert_eq!(facts.tensor_maps[0].data_type, 9);
        assert_eq!(
            facts.tensor_maps[0].global_dim,
            [Extent::Dim(1), Extent::Dim(0)]
        );
        assert_eq!(
            (facts.zero_before_launch.clone(), facts.grid_z),
            (vec![2], 2)
        );
        let meta = CachedMeta {
            entry: e.entry.clone(),
            dynamic_smem_bytes: e.dynamic_smem_bytes as u64,
            resources: None,
            launch: facts.clone(),
        };
        let back: CachedMeta = serde_json::from_slice(&serde_json::to_vec(&meta).unwrap()).unwrap();
        assert_eq!(back.launch, facts);
        // The store keys the code by its launch facts too: the same source with another L2
        // promotion for A's map is other code.
        let mut other = e.clone();
        other.tma[0].spec.l2_promotion = 3;
        assert!(e
            .tma
            .iter()
            .all(|t| t.spec.l2_promotion == phobos_cuda::gemm_fast::tma::TMA_L2_PROMOTION_128B));
        assert_eq!(other.source, e.source);
        assert_ne!(code_hash(&other, None), code_hash(&e, None));
        // A record of an older version has no launch facts: a plain launch.
        let old: CachedMeta =
            serde_json::from_str(r#"{"entry":"g","dynamic_smem_bytes":0,"resources":null}"#)
                .unwrap();
        assert_eq!(old.launch, LaunchFacts::default());
        // Below sm_90a the same kernel has no tensor maps.
        let e80 = emit_for_target(&k, &EmitOptions::default(), &Target::sm80()).unwrap();
        assert!(launch_facts(&e80).tensor_maps.is_empty());
    }

    /// The store keys a point by what `emit_cuda` produces, the recipe `phobos run` compiles
    /// too; the generator tag changes it.
    #[test]
    fn the_tuner_keys_the_code_phobos_run_compiles() {
        let text = "@autotune(BLOCK in [32, 64])\n\
                    kernel scale(X: tensor<f32>[N], Y: tensor<f32>[N]) {\n  \
                    let o = ctx.block.x * BLOCK\n  \
                    Y[o :+ BLOCK] = X[o :+ BLOCK] * 2.0\n}\n";
        let file = SourceFile::new("s.ph", text);
        let module = phobos_check::load(file.clone()).expect("checks");
        let info = module.kernel(None).expect("one kernel");
        let v = info.default_variant().expect("variant");
        let k = phobos_check::instantiate(&module, info, &v).expect("instantiates");
        let compiler = |tag: Option<&str>| CudaCompiler {
            file: file.clone(),
            arch: Arch::SM_90A,
            cache: VariantCache::at("unused"),
            version: "nvrtc 13.0".into(),
            tag: tag.map(String::from),
            cpp: false,
        };
        let e = emit_cuda(&k, &file, Arch::SM_90A).unwrap();
        let mut parts: Vec<&[u8]> = vec![e.source.as_bytes(), e.entry.as_bytes()];
        for (n, t) in &e.headers {
            parts.push(n.as_bytes());
            parts.push(t.as_bytes());
        }
        let plain = compiler(None).codegen_hash(&k);
        assert_eq!(plain, Some(stable_hash(&parts)));
        let tagged = compiler(Some("changed")).codegen_hash(&k);
        assert!(tagged.is_some() && tagged != plain);
    }

    /// A `.cu` point's code is the text with the point's `-D` set: another point, or an edit
    /// of the file, is other code for the store.
    #[test]
    fn a_cuda_source_is_keyed_by_its_text_and_the_point() {
        let text = "// @autotune(B in [32, 64])\n// @launch(B)\n// @params(X: tensor<f32>[N])\n\
                    extern \"C\" __global__ void k(float* x, int n) { x[B] = n; }\n";
        let compiler = |text: &str| {
            let file = SourceFile::new("k.cu", text);
            let cu = phobos_check::cuda_cpp::load_cu(file.clone()).expect("loads");
            let info = cu.module.kernel(None).expect("one kernel").clone();
            let c = CudaCompiler {
                file,
                arch: Arch::SM_90A,
                cache: VariantCache::at("unused"),
                version: "nvrtc 13.0".into(),
                tag: None,
                cpp: true,
            };
            (c, cu.module, info)
        };
        let (c, module, info) = compiler(text);
        let at = |b: &str| {
            let v = info.variant(Some(b), None, None).unwrap();
            phobos_check::instantiate(&module, &info, &v).unwrap()
        };
        let (k32, k64) = (at("B=32"), at("B=64"));
        assert_eq!(k32.launch.threads, 32);
        let e = c.emit(&k64).unwrap();
        assert_eq!((e.source.as_str(), e.entry.as_str()), (text, "k"));
        assert_eq!(
            super::super::cuda_cpp::defines(&k64),
            vec![("B".to_string(), Some("64".to_string()))]
        );
        let h32 = c.codegen_hash(&k32).unwrap();
        assert_ne!(h32, c.codegen_hash(&k64).unwrap());
        let (edited, _, _) = compiler(&text.replace("= n;", "= n + 1;"));
        assert_ne!(h32, edited.codegen_hash(&k32).unwrap());
    }
}
