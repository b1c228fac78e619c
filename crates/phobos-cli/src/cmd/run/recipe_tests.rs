//! `phobos run` and phobos-kbench share the recipe: the kernel `phobos run` builds for a
//! configuration string and dims is the kernel the tuner's front end builds for that point and
//! problem, and `phobos run` compiles it with the back end's compiler into the very entry of
//! the variant cache that the tuner's compile (phobos-kbench, the runtime) made. Offline:
//! NVRTC from the wheels, no GPU.

use super::{bind, gpu, instantiate};
use crate::args::{Cli, Command};
use clap::Parser;
use phobos::backend::cuda::CudaCompiler;
use phobos::frontend::CheckFrontend;
use phobos::recipe::compile_point;
use phobos_syntax::SourceFile;
use phobos_tune::cache::VariantCache;
use phobos_tune::space::Pinned;
use phobos_tune::{DeviceInfo, Frontend, Problem};

/// NVRTC here, or a skip (a failure where `PHOBOS_REQUIRE_NVRTC` is set).
fn have_nvrtc() -> bool {
    match phobos_gpu::nvrtc::nvrtc_version() {
        Ok(_) => true,
        Err(line) => {
            assert!(
                std::env::var_os("PHOBOS_REQUIRE_NVRTC").is_none(),
                "PHOBOS_REQUIRE_NVRTC is set but NVRTC is unusable: {line}"
            );
            eprintln!("skipped: NVRTC not found ({line}); run eval \"$(scripts/cuda-tools.sh)\"");
            false
        }
    }
}

#[test]
fn phobos_run_compiles_the_cache_entry_the_tuner_compiled() {
    if !have_nvrtc() {
        return;
    }
    let path = format!("{}/../../examples/gemm.ph", env!("CARGO_MANIFEST_DIR"));
    let file = SourceFile::new(path.clone(), std::fs::read_to_string(&path).unwrap());
    let cache_dir = std::env::temp_dir().join(format!("phobos-recipe-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&cache_dir);
    let device = DeviceInfo::of_gpu(&phobos_gpu::DeviceInfo::h200());
    let config = "TILE_M=128 TILE_N=128 TILE_K=32";
    let dims = [("M", 256), ("N", 128), ("K", 64)];

    // The tuner's side: the front end at the point and problem, the back end's compiler.
    let Ok(frontend) = CheckFrontend::load(file.clone(), None) else {
        panic!("gemm.ph does not load");
    };
    let pins = phobos_check::parse_pins(config).unwrap();
    let point = Pinned::new(frontend.space(), &pins)
        .unwrap()
        .default_point();
    let problem = Problem {
        dims: dims.iter().map(|(n, v)| (n.to_string(), *v)).collect(),
        ..Problem::default()
    };
    let compiler =
        CudaCompiler::new(file.clone(), &device.arch(), VariantCache::at(&cache_dir)).unwrap();
    // What `Kernel::launch` and phobos-kbench's `--check`/`--benchmark`/`--config` compile.
    let Ok((tuned_kernel, tuned)) = compile_point(&frontend, &compiler, &device, &point, &problem)
    else {
        panic!("the tuner's compile of {config} failed");
    };
    assert!(!tuned.from_cache);

    // `phobos run FILE --autotune CONFIG --dims ...`: its kernel, then its compile.
    let dims_flag = dims.map(|(n, v)| format!("{n}={v}")).join(",");
    let cli = Cli::try_parse_from([
        "phobos",
        "run",
        path.as_str(),
        "--autotune",
        config,
        "--dims",
        dims_flag.as_str(),
    ])
    .unwrap();
    let Command::Run(args) = cli.command else {
        panic!("parsed as another command");
    };
    let Ok(kernel) = instantiate(&args, &file) else {
        panic!("phobos run does not instantiate {config}");
    };
    let Ok(launch) = bind(&args, &kernel) else {
        panic!("phobos run does not bind the dims");
    };
    let run_kernel = gpu::specialized(&launch);
    assert_eq!(run_kernel, tuned_kernel, "the same kernel point");
    let Ok(artifact) =
        gpu::compile_variant(&run_kernel, &file, &device, VariantCache::at(&cache_dir))
    else {
        panic!("phobos run's compile failed");
    };
    let tuned_artifact = tuned.artifact.expect("a binary");
    assert_eq!(artifact.path, tuned_artifact.path, "the same cache entry");
    assert_eq!(artifact.entry, tuned_artifact.entry);
    // And nothing else was compiled: one binary in the cache.
    let binaries = std::fs::read_dir(&cache_dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "bin")
        })
        .count();
    assert_eq!(binaries, 1);
    let _ = std::fs::remove_dir_all(&cache_dir);
}
