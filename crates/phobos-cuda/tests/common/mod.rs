//! Shared helpers of the phobos-cuda tests: kernels from `.ph` files at chosen points.

#![allow(dead_code)]

pub mod attention_cases;
pub mod cases;
pub mod dot_kernels;
pub mod fast;
pub mod fast_cases;
pub mod gpu_run;
pub mod mma_cases;
pub mod randk;
pub mod rowwise_cases;
pub mod store_cases;
pub mod transpose_cases;
pub mod whole_rows;

use phobos_ir::Kernel;
use phobos_syntax::SourceFile;
use std::path::{Path, PathBuf};

/// The workspace root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The source file of `path` (relative to the workspace root), named by that relative path.
pub fn source(path: &str) -> SourceFile {
    let text = std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"));
    SourceFile::new(path, text)
}

/// Every kernel of `path` at the point `pins` (e.g. "TILE_M=128"), with default types/orders.
pub fn kernels_at(path: &str, pins: &str, types: Option<&str>) -> Vec<Kernel> {
    let file = source(path);
    let module = phobos_check::load(file).unwrap_or_else(|d| panic!("{path}: {d:?}"));
    let names: Vec<String> = module_kernel_names(&module);
    names
        .iter()
        .map(|n| {
            let info = module.kernel(Some(n)).unwrap();
            let pins = if pins.is_empty() { None } else { Some(pins) };
            let variant = info
                .variant(pins, types, None)
                .unwrap_or_else(|e| panic!("{path} {n}: {e:?}"));
            phobos_check::instantiate(&module, info, &variant)
                .unwrap_or_else(|d| panic!("{path} {n}: {d:?}"))
        })
        .collect()
}

pub fn module_kernel_names(module: &phobos_check::Module) -> Vec<String> {
    module.kernels.iter().map(|k| k.name.clone()).collect()
}

/// The point violates a `@where` over its names alone: outside the space, as the
/// checker and the tuner see it.
pub fn outside_where(
    module: &phobos_check::Module,
    info: &phobos_check::KernelInfo,
    variant: &phobos_check::Variant,
) -> bool {
    phobos_check::outside_space(module, info, variant)
}

/// Every point of every kernel of `path` (default types) inside its space, as (label, kernel).
pub fn all_points(path: &str) -> Vec<(String, Kernel)> {
    let file = source(path);
    let module = phobos_check::load(file).unwrap_or_else(|d| panic!("{path}: {d:?}"));
    let mut out = Vec::new();
    for info in &module.kernels {
        let base = info
            .default_variant()
            .unwrap_or_else(|e| panic!("{path}: {e:?}"));
        for point in info.space.points() {
            let variant = base.at(point.clone());
            if outside_where(&module, info, &variant) {
                continue;
            }
            let k = phobos_check::instantiate(&module, info, &variant)
                .unwrap_or_else(|d| panic!("{path} {} {}: {d:?}", info.name, point.to_pins()));
            out.push((format!("{} {}", info.name, point.to_pins()), k));
        }
    }
    out
}

/// The example kernel files, `examples/*.ph`, sorted.
pub fn example_files() -> Vec<String> {
    let mut files: Vec<String> = std::fs::read_dir(root().join("examples"))
        .unwrap()
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            name.ends_with(".ph").then(|| format!("examples/{name}"))
        })
        .collect();
    files.sort();
    files
}

/// What NVRTC made of each job (`threads` compiling at once), or `None` when NVRTC is not
/// found: said on stderr, and a failure under CI or with PHOBOS_REQUIRE_NVRTC set, where every
/// compile test must run.
pub fn compile_or_skip(
    jobs: &[(String, phobos_gpu::CompileOptions)],
    threads: usize,
) -> Option<Vec<Result<phobos_gpu::Compiled, phobos_gpu::CompileError>>> {
    let results = phobos_gpu::compile_many(jobs, threads);
    if let Some(Err(e)) = results.first() {
        if let phobos_gpu::CompileErrorKind::NvrtcNotFound(why) = &e.kind {
            assert!(
                std::env::var_os("CI").is_none()
                    && std::env::var_os("PHOBOS_REQUIRE_NVRTC").is_none(),
                "NVRTC is needed under CI: {why}"
            );
            eprintln!("skipped: NVRTC not found ({why}); run eval \"$(scripts/cuda-tools.sh)\"");
            return None;
        }
    }
    Some(results)
}

/// Compiles each emitted kernel (NVRTC, two at once), each labelled by its `labels` entry (a
/// compile error panics with it); returns each one's compile and ptxas resource report, or
/// `None` when NVRTC is not found (as [`compile_or_skip`]).
pub fn compiled(
    emitted: &[phobos_cuda::Emitted],
    labels: &[String],
) -> Option<Vec<(phobos_gpu::Compiled, phobos_gpu::resources::Resources)>> {
    assert_eq!(emitted.len(), labels.len());
    let jobs: Vec<_> = (emitted.iter())
        .map(|e| (e.source.clone(), compile_options(e)))
        .collect();
    let results = compile_or_skip(&jobs, 2)?;
    let checked = results.into_iter().zip(emitted).zip(labels);
    Some(
        checked
            .map(|((r, e), label)| {
                let c = r.unwrap_or_else(|err| panic!("{label}: {}\n{}", err.summary(), err.log));
                let res = phobos_gpu::resources::of_compiled(&c, &e.entry).expect("ptxas report");
                (c, res)
            })
            .collect(),
    )
}

/// [`compiled`], asserting that ptxas spilled nothing.
pub fn assert_no_spills(
    emitted: &[phobos_cuda::Emitted],
    labels: &[String],
) -> Option<Vec<(phobos_gpu::Compiled, phobos_gpu::resources::Resources)>> {
    let out = compiled(emitted, labels)?;
    for ((_, res), label) in out.iter().zip(labels) {
        assert_eq!(
            (res.spill_store_bytes, res.spill_load_bytes),
            (0, 0),
            "{label}: spills"
        );
    }
    Some(out)
}

/// A staged row's PTX (ROW_SMEM, ROWS_AHEAD): bulk copies completing on an mbarrier, waited on
/// by parity.
pub fn assert_bulk_copied(ptx: &str, label: &str) {
    assert!(
        ptx.contains("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"),
        "{label}: no bulk copy"
    );
    assert!(ptx.contains("mbarrier.try_wait.parity"), "{label}: no wait");
}

/// NVRTC options for an emitted kernel: its named headers and register cap.
pub fn compile_options(e: &phobos_cuda::Emitted) -> phobos_gpu::CompileOptions {
    let mut o = phobos_gpu::CompileOptions {
        max_registers: e.max_regs,
        cuda_include: false,
        ..phobos_gpu::CompileOptions::default()
    };
    for (name, text) in &e.headers {
        o = o.header(name.clone(), text.as_str());
    }
    o
}

/// The points of the first kernel of the example at `path` whose `@where` holds for a problem.
pub fn points_where(path: &str, dims: &[(&str, i64)]) -> Vec<phobos_ir::Point> {
    points_where_typed(path, "", dims)
}

/// [`points_where`] at `types` (`"T=bf16"`; the defaults when empty): a `@where` may read
/// `sizeof(T)`.
pub fn points_where_typed(path: &str, types: &str, dims: &[(&str, i64)]) -> Vec<phobos_ir::Point> {
    let module = phobos_check::load(source(path)).unwrap();
    let info = &module.kernels[0];
    let types = (!types.is_empty()).then_some(types);
    let base = info.variant(None, types, None).unwrap();
    let dims: Vec<(String, i64)> = dims.iter().map(|(n, v)| (n.to_string(), *v)).collect();
    info.space
        .points()
        .filter(|p| {
            phobos_check::instantiate(&module, info, &base.at(p.clone()))
                .ok()
                .is_some_and(|k| phobos_check::eval_where(&k, &dims) == Ok(None))
        })
        .collect()
}

/// The first kernel of `text` (named `path`) at `pins` (and `types`, unless empty), emitted for
/// sm_90a.
pub fn emitted_sm90(path: &str, text: &str, pins: &str, types: &str) -> phobos_cuda::Emitted {
    let module =
        phobos_check::load(SourceFile::new(path, text)).unwrap_or_else(|d| panic!("{d:?}"));
    let info = &module.kernels[0];
    let types = (!types.is_empty()).then_some(types);
    let variant = info.variant(Some(pins), types, None).unwrap();
    let k = phobos_check::instantiate(&module, info, &variant).unwrap_or_else(|d| panic!("{d:?}"));
    phobos_cuda::emit_for_arch(&k, &phobos_cuda::EmitOptions::default(), 90)
        .unwrap_or_else(|e| panic!("{pins}: {e}"))
}

/// The example at `path` at `pins` (and `types`, unless empty), emitted for sm_90a.
pub fn example_sm90(path: &str, pins: &str, types: &str) -> phobos_cuda::Emitted {
    emitted_sm90(path, &source(path).text, pins, types)
}

/// The first kernel of `src` at `pins` with `types`, specialized on `dims` as `phobos run` and
/// the tuner compile it, emitted with its source.
pub fn specialized(
    src: SourceFile,
    pins: &str,
    types: &str,
    dims: &[(&str, i64)],
) -> phobos_cuda::Emitted {
    let k = specialized_kernel(src.clone(), pins, Some(types), dims);
    let opts = phobos_cuda::EmitOptions { source: Some(src) };
    phobos_cuda::emit(&k, &opts).unwrap_or_else(|e| panic!("{pins}: {e}"))
}

/// The first kernel of `src` at `pins` (with `types`, else the defaults), specialized on the
/// alignment of `dims` (none: not specialized).
pub fn specialized_kernel(
    src: SourceFile,
    pins: &str,
    types: Option<&str>,
    dims: &[(&str, i64)],
) -> Kernel {
    let module = phobos_check::load(src).unwrap_or_else(|d| panic!("{d:?}"));
    let info = &module.kernels[0];
    let variant = info
        .variant(Some(pins), types, None)
        .unwrap_or_else(|e| panic!("{pins}: {e:?}"));
    let mut k = phobos_check::instantiate(&module, info, &variant)
        .unwrap_or_else(|d| panic!("{pins}: {d:?}"));
    if !dims.is_empty() {
        let dims: Vec<(String, i64)> = dims.iter().map(|(n, v)| (n.to_string(), *v)).collect();
        phobos_cuda::specialize_alignment(&mut k, &dims);
    }
    k
}

/// The emitted text but its first line (which names the point).
pub fn body(e: &phobos_cuda::Emitted) -> String {
    let (_, rest) = e.source.split_once('\n').expect("a header line");
    rest.to_string()
}

/// The emitted text from byte `from` to the line that closes the block opened on the line at
/// `from` (the emitter indents a block's closing brace as the line that opens it).
pub fn block_at(src: &str, from: usize) -> &str {
    let indent = src[..from].rsplit('\n').next().unwrap().len();
    let close = format!("\n{}}}\n", " ".repeat(indent));
    let end = from + src[from..].find(&close).expect("the block's end");
    &src[from..end]
}

/// Emits `path` at `pins` with `knob=0` and the example without the knob (`without`, its text)
/// at `pins`, and checks that the two sources differ only by the knob in the header comment;
/// returns both, knob first.
pub fn knob_off_unchanged(
    path: &str,
    without: &str,
    knob: &str,
    pins: &str,
    types: &str,
) -> (phobos_cuda::Emitted, phobos_cuda::Emitted) {
    let before = emitted_sm90(path, without, pins, types);
    let off = format!(" {knob}=0");
    let now = example_sm90(path, &format!("{pins}{off}"), types);
    assert_eq!(
        now.source.replacen(&off, "", 1),
        before.source,
        "{path} {pins}"
    );
    assert_eq!(now.threads, before.threads);
    (now, before)
}
