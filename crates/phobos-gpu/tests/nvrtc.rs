//! Offline compiles through NVRTC (no GPU). Skipped with a message only when libnvrtc cannot be
//! found and `PHOBOS_REQUIRE_NVRTC` is unset; `./test.sh` sets it, so CI cannot skip silently.

mod common;

use common::kernels;
use phobos_gpu::nvrtc::{self, summarize_log};
use phobos_gpu::resources;
use phobos_gpu::{compile, compile_many, Arch, CompileErrorKind, CompileOptions};
use std::time::Instant;

/// True when NVRTC is here; false (after saying so) when the tests may skip; panics when
/// `PHOBOS_REQUIRE_NVRTC` is set and NVRTC is missing.
fn have_nvrtc() -> bool {
    match nvrtc::nvrtc_version() {
        Ok(_) => true,
        Err(line) if std::env::var_os("PHOBOS_REQUIRE_NVRTC").is_some() => {
            panic!("PHOBOS_REQUIRE_NVRTC is set but NVRTC is unusable: {line}")
        }
        Err(line) => {
            eprintln!("skipping NVRTC test: {line}");
            false
        }
    }
}

/// Like [`have_nvrtc`] for the standalone ptxas.
fn have_ptxas() -> bool {
    let ok = std::process::Command::new(resources::ptxas_path())
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !ok && std::env::var_os("PHOBOS_REQUIRE_NVRTC").is_some() {
        panic!("PHOBOS_REQUIRE_NVRTC is set but ptxas cannot be run (set PHOBOS_PTXAS)");
    }
    ok
}

const SAXPY: &str = r#"
extern "C" __global__ void saxpy(float* y, const float* x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"#;

#[test]
fn saxpy_compiles_to_ptx_and_cubin_for_sm90a() {
    if !have_nvrtc() {
        return;
    }
    let c = compile(SAXPY, &CompileOptions::default()).expect("saxpy compiles");
    assert!(
        c.ptx.contains(".target sm_90a"),
        "{}",
        &c.ptx[..300.min(c.ptx.len())]
    );
    assert!(c.ptx.contains(".visible .entry saxpy("));
    let cubin = c.cubin.as_ref().expect("a CUBIN for a real target");
    assert_eq!(&cubin[..4], b"\x7fELF");
    assert_eq!(c.flags[0], "--gpu-architecture=sm_90a");
    assert_eq!(c.nvrtc_version.0, 13);
    assert_eq!(c.options, CompileOptions::default());
    // The in-process resource report is in the log.
    let r = resources::of_compiled(&c, "saxpy").expect("report in the log");
    assert!(r.registers >= 4 && r.registers <= 32, "{r:?}");
    assert!(!r.spills());
    assert_eq!(r.static_smem_bytes, 0);
}

#[test]
fn ptx_only_for_sm80_and_resources_through_ptxas() {
    if !have_nvrtc() {
        return;
    }
    let opts = CompileOptions {
        arch: Arch::SM_80,
        cubin: false,
        ..CompileOptions::default()
    };
    let c = compile(SAXPY, &opts).expect("compiles");
    assert!(c.cubin.is_none());
    assert!(c.ptx.contains(".target sm_80"));
    assert_eq!(c.flags[0], "--gpu-architecture=compute_80");
    assert!(!c.log.contains("Compiling entry function"));
    if have_ptxas() {
        let r = resources::of_compiled(&c, "saxpy").expect("ptxas report");
        assert!(r.registers >= 4, "{r:?}");
    }
}

#[test]
fn named_headers_are_included_by_name() {
    if !have_nvrtc() {
        return;
    }
    let src = r#"
#include "phobos_prelude.cuh"
#include "tile_ops.cuh"
extern "C" __global__ void k(float* y) { y[threadIdx.x] = twice(PHOBOS_ONE); }
"#;
    let opts = CompileOptions::default()
        .header(
            "phobos_prelude.cuh",
            "#pragma once\n#define PHOBOS_ONE 1.0f\n",
        )
        .header(
            "tile_ops.cuh",
            "#pragma once\n__device__ inline float twice(float x) { return 2.0f * x; }\n",
        );
    let c = compile(src, &opts).expect("compiles with both headers");
    assert!(c.ptx.contains(".entry k("));
    // Without the headers it fails, and the log names the missing file.
    let e = compile(src, &CompileOptions::default()).unwrap_err();
    assert_eq!(e.kind, CompileErrorKind::Compilation);
    assert!(e.log.contains("phobos_prelude.cuh"), "{}", e.log);
}

#[test]
fn a_compile_error_keeps_the_log_and_options() {
    if !have_nvrtc() {
        return;
    }
    let src = "extern \"C\" __global__ void bad(float* y) {\n  y[0] = undefined_name;\n}\n";
    let opts = CompileOptions {
        line_info: true,
        ..CompileOptions::default()
    };
    let e = compile(src, &opts).unwrap_err();
    assert_eq!(e.kind, CompileErrorKind::Compilation);
    assert!(e.log.contains("undefined_name"), "{}", e.log);
    assert_eq!(*e.options, opts);
    assert!(e.flags.contains(&"-lineinfo".to_string()));
    let summary = e.to_string();
    assert!(
        summary.starts_with("compile error: phobos_kernel.cu(2): error:"),
        "{summary}"
    );
    assert!(!summary.contains('\n'));
    assert_eq!(
        summarize_log(&e.log).as_deref(),
        Some(&summary["compile error: ".len()..])
    );
}

#[test]
fn an_unknown_flag_is_an_api_error_with_the_log() {
    if !have_nvrtc() {
        return;
    }
    let opts = CompileOptions {
        extra_flags: vec!["--no-such-flag".into()],
        ..CompileOptions::default()
    };
    let e = compile(SAXPY, &opts).unwrap_err();
    match &e.kind {
        CompileErrorKind::Api { call, status } => {
            assert_eq!(*call, "nvrtcCompileProgram");
            assert_eq!(status, "NVRTC_ERROR_INVALID_OPTION");
        }
        other => panic!("{other:?}"),
    }
    assert!(e.to_string().contains("--no-such-flag"), "{e}");
}

#[test]
fn wgmma_needs_sm90a() {
    if !have_nvrtc() {
        return;
    }
    let src = r#"extern "C" __global__ void k(float* y) {
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
        y[threadIdx.x] = 1.0f;
    }"#;
    let ok = compile(src, &CompileOptions::default()).expect("sm_90a takes wgmma");
    assert!(ok.ptx.contains("wgmma.fence.sync.aligned"));
    let e = compile(src, &CompileOptions::for_arch(Arch::SM_90)).unwrap_err();
    assert!(e.log.contains("wgmma"), "{}", e.log);
}

#[test]
fn register_cap_is_honoured() {
    if !have_nvrtc() {
        return;
    }
    let src = r#"extern "C" __global__ void heavy(float* y, const float* x, int n) {
        float acc[64];
        #pragma unroll
        for (int j = 0; j < 64; j++) acc[j] = x[threadIdx.x + j * n];
        #pragma unroll
        for (int r = 0; r < 4; r++)
        #pragma unroll
        for (int j = 0; j < 64; j++) acc[j] = acc[j] * acc[(j + r + 1) % 64] + 1.0f;
        float s = 0;
        #pragma unroll
        for (int j = 0; j < 64; j++) s += acc[j];
        y[threadIdx.x] = s;
    }"#;
    let free = compile(src, &CompileOptions::default()).unwrap();
    let capped = compile(
        src,
        &CompileOptions {
            max_registers: Some(32),
            ..CompileOptions::default()
        },
    )
    .unwrap();
    let rf = resources::of_compiled(&free, "heavy").unwrap();
    let rc = resources::of_compiled(&capped, "heavy").unwrap();
    assert!(rf.registers > 32, "{rf:?}");
    assert!(rc.registers <= 32, "{rc:?}");
    assert!(rc.spills(), "{rc:?}");
}

#[test]
fn compile_many_keeps_order_and_matches_single_compiles() {
    if !have_nvrtc() {
        return;
    }
    let jobs: Vec<(String, CompileOptions)> = (0..4)
        .map(|i| {
            (
                format!(
                    "extern \"C\" __global__ void k{i}(float* y) {{ y[threadIdx.x] = {i}.0f; }}"
                ),
                CompileOptions::default(),
            )
        })
        .collect();
    let out = compile_many(&jobs, 2);
    assert_eq!(out.len(), 4);
    for (i, r) in out.iter().enumerate() {
        let c = r.as_ref().expect("compiles");
        assert!(c.ptx.contains(&format!(".entry k{i}(")));
        let single = compile(&jobs[i].0, &jobs[i].1).unwrap();
        assert_eq!(c.ptx, single.ptx);
    }
}

#[test]
fn every_gpu_test_kernel_compiles_offline() {
    if !have_nvrtc() {
        return;
    }
    let mut sources = vec![
        (kernels::SAXPY.to_string(), "saxpy"),
        (kernels::COPY2D.to_string(), "copy2d"),
        (kernels::occupancy_kernel(256), "occ"),
        (kernels::occupancy_kernel(6000), "occ"),
        (kernels::WILD.to_string(), "wild"),
    ];
    // The fp16/bf16 kernel needs the toolkit headers, which NVRTC alone does not carry.
    match phobos_gpu::probe::cuda_include_dir() {
        Some(_) => sources.push((kernels::HALF_SCALAR.to_string(), "scale")),
        None => eprintln!(
            "cuda_fp16.h not found: the HALF_SCALAR kernel is compiled on the GPU machine only"
        ),
    }
    for arch in [Arch::SM_90A, Arch::SM_80] {
        for (src, name) in &sources {
            let c = compile(src, &CompileOptions::for_arch(arch))
                .unwrap_or_else(|e| panic!("{name} for {arch}: {e}\n{}", e.log));
            let r = resources::of_compiled(&c, name).unwrap();
            assert!(r.registers > 0, "{name}: {r:?}");
        }
    }
}

/// The TMA test kernel (rank-3 box through `cp.async.bulk.tensor.3d`) assembles for Hopper.
#[test]
fn tma_box_kernel_compiles_for_hopper() {
    if !have_nvrtc() {
        return;
    }
    for arch in [Arch::SM_90, Arch::SM_90A] {
        let c = compile(kernels::TMA_BOX3, &CompileOptions::for_arch(arch))
            .unwrap_or_else(|e| panic!("tma_box3 for {arch}: {e}\n{}", e.log));
        assert!(c.ptx.contains("cp.async.bulk.tensor.3d"), "{arch}");
        let r = resources::of_compiled(&c, "tma_box3").unwrap();
        assert!(r.registers > 0, "{r:?}");
    }
}

#[test]
fn supported_archs_include_hopper() {
    if !have_nvrtc() {
        return;
    }
    let archs = nvrtc::supported_archs().unwrap();
    assert!(archs.contains(&90) && archs.contains(&80), "{archs:?}");
}

/// A kernel of the size a tuned GEMM variant has: a register-tiled SGEMM with a 4-stage unrolled
/// inner loop. Each copy differs in a constant so that no cache can help.
fn gemm_like(variant: usize) -> String {
    format!(
        r#"
#define TM 4
#define TN 4
#define BK 16
extern "C" __global__ void __launch_bounds__(256) sgemm_{variant}(
    const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
    int M, int N, int K) {{
  __shared__ float As[BK][128 + 4];
  __shared__ float Bs[BK][128 + 4];
  float acc[TM][TN];
  #pragma unroll
  for (int i = 0; i < TM; i++)
    #pragma unroll
    for (int j = 0; j < TN; j++) acc[i][j] = 0.0f;
  int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  int bm = blockIdx.y * 128, bn = blockIdx.x * 128;
  for (int k0 = 0; k0 < K; k0 += BK) {{
    #pragma unroll
    for (int l = 0; l < 8; l++) {{
      int idx = threadIdx.x + l * 256;
      int r = idx / BK, c = idx % BK;
      As[c][r] = (bm + r < M && k0 + c < K) ? A[(bm + r) * K + k0 + c] : 0.0f;
      int rb = idx / 128, cb = idx % 128;
      Bs[rb][cb] = (k0 + rb < K && bn + cb < N) ? B[(k0 + rb) * N + bn + cb] : 0.0f;
    }}
    __syncthreads();
    #pragma unroll
    for (int kk = 0; kk < BK; kk++) {{
      float a[TM], b[TN];
      #pragma unroll
      for (int i = 0; i < TM; i++) a[i] = As[kk][ty * TM + i];
      #pragma unroll
      for (int j = 0; j < TN; j++) b[j] = Bs[kk][tx * TN + j];
      #pragma unroll
      for (int i = 0; i < TM; i++)
        #pragma unroll
        for (int j = 0; j < TN; j++) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }}
    __syncthreads();
  }}
  #pragma unroll
  for (int i = 0; i < TM; i++)
    #pragma unroll
    for (int j = 0; j < TN; j++) {{
      int r = bm + ty * TM + i, c = bn + tx * TN + j;
      if (r < M && c < N) C[r * N + c] = acc[i][j] * {variant}.0f;
    }}
}}
"#
    )
}

/// CPU seconds this process has used (user + system), from /proc/self/stat.
fn process_cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = f.get(11).and_then(|v| v.parse().ok()).unwrap_or(0.0)
        + f.get(12).and_then(|v| v.parse().ok()).unwrap_or(0.0);
    ticks / 100.0
}

/// Samples the scheduler state of this process's threads (other than the sampling one) every
/// 2 ms until `stop` is set; returns (samples, samples with 2 or more threads runnable).
/// Unlike wall time, this separates a lock inside NVRTC (one compiling thread asleep on it)
/// from a machine without a free core (both runnable, waiting for a CPU).
fn sample_runnable(stop: &std::sync::atomic::AtomicBool) -> (u32, u32) {
    use std::sync::atomic::Ordering;
    let me = std::fs::read_link("/proc/thread-self")
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_default();
    let (mut samples, mut both) = (0, 0);
    while !stop.load(Ordering::Relaxed) {
        let mut runnable = 0;
        if let Ok(dir) = std::fs::read_dir("/proc/self/task") {
            for task in dir.flatten() {
                if task.file_name().to_string_lossy() == me {
                    continue;
                }
                let stat = std::fs::read_to_string(task.path().join("stat")).unwrap_or_default();
                let state = stat
                    .rsplit_once(')')
                    .map(|(_, r)| r.trim_start())
                    .unwrap_or("");
                if state.starts_with('R') {
                    runnable += 1;
                }
            }
        }
        samples += 1;
        if runnable >= 2 {
            both += 1;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    (samples, both)
}

/// Measures whether NVRTC compiles in parallel: 8 compiles of a GEMM-sized kernel on 1 thread,
/// then on 2 (and 4 and 8 where the machine has the cores), reporting wall time, the CPU time the process used meanwhile, and how often both
/// compiling threads were runnable at once. Run with
/// `cargo test -p phobos-gpu --release --test nvrtc -- --ignored --nocapture nvrtc_thread_scaling`.
#[test]
#[ignore = "a measurement, not a check: run by hand on an idle machine"]
fn nvrtc_thread_scaling() {
    if !have_nvrtc() {
        return;
    }
    // One warm-up compile loads NVRTC and its builtins.
    compile(&gemm_like(99), &CompileOptions::default()).unwrap();
    let jobs: Vec<(String, CompileOptions)> = (0..8)
        .map(|i| (gemm_like(i), CompileOptions::default()))
        .collect();
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let counts: Vec<usize> = [1, 2, 4, 8]
        .into_iter()
        .filter(|&t| t == 1 || t <= cores)
        .collect();
    for round in 0..2 {
        for &threads in &counts {
            let stop = std::sync::atomic::AtomicBool::new(false);
            let cpu0 = process_cpu_seconds();
            let t = Instant::now();
            let (out, (samples, both)) = std::thread::scope(|s| {
                let sampler = s.spawn(|| sample_runnable(&stop));
                let out = compile_many(&jobs, threads);
                stop.store(true, std::sync::atomic::Ordering::Relaxed);
                (out, sampler.join().unwrap())
            });
            let secs = t.elapsed().as_secs_f64();
            let cpu = process_cpu_seconds() - cpu0;
            assert!(out.iter().all(|r| r.is_ok()));
            let per: f64 = out
                .iter()
                .map(|r| r.as_ref().unwrap().elapsed.as_secs_f64())
                .sum::<f64>()
                / 8.0;
            println!(
                "round {round}: 8 compiles on {threads} thread(s): {secs:.2} s wall, \
                 {cpu:.2} s CPU (ratio {:.2}), {per:.3} s wall per compile, 2+ threads \
                 runnable in {both} of {samples} samples",
                cpu / secs
            );
        }
    }
}
