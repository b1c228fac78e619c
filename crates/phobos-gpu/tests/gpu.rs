//! GPU tests: device query, the launch ABI end to end, occupancy against the driver, launch
//! refusals, module errors and event timing. Run on a GPU machine with `--ignored`
//! (`--test-threads=1` keeps the timing tests from sharing the device).

mod common;

use common::kernels::*;
use common::*;
use phobos_gpu::{
    bind_args, device_count, Arg, DeviceTensor, GpuError, KernelArgs, LaunchConfig, ModuleImage,
    Stats,
};
use phobos_ir::{relative_error, DType, Dim, HostTensor, MemOrder};

fn saxpy_kernel() -> phobos_ir::Kernel {
    kernel(
        "saxpy",
        vec![
            tensor("y", DType::F32, vec![Dim::Dyn(0)], MemOrder::RowMajor),
            tensor("x", DType::F32, vec![Dim::Dyn(0)], MemOrder::RowMajor),
            scalar("a", DType::F32),
        ],
        vec![("N", (0, 0))],
        256,
        [cdiv(dim(0), lit(256)), lit(1), lit(1)],
    )
}

fn copy2d_kernel() -> phobos_ir::Kernel {
    kernel(
        "copy2d",
        vec![
            tensor(
                "out",
                DType::F32,
                vec![Dim::Dyn(0), Dim::Dyn(1)],
                MemOrder::RowMajor,
            ),
            tensor(
                "inp",
                DType::F32,
                vec![Dim::Dyn(0), Dim::Dyn(1)],
                MemOrder::ColMajor,
            ),
            scalar("scale", DType::F16),
        ],
        vec![("M", (0, 0)), ("N", (0, 1))],
        256,
        [cdiv(dim(1), lit(32)), cdiv(dim(0), lit(8)), lit(1)],
    )
}

#[test]
#[ignore = "needs a GPU"]
fn device_query_is_sane() {
    assert!(device_count().unwrap() >= 1);
    let gpu = gpu();
    let d = gpu.info();
    eprintln!(
        "{d:#?}\npeak DRAM bandwidth {:.0} GB/s",
        d.peak_mem_bandwidth_gbs()
    );
    assert!(!d.name.is_empty());
    assert!(d.cc >= (7, 0), "{:?}", d.cc);
    assert!((1..=1024).contains(&d.sm_count));
    assert_eq!(d.warp_size, 32);
    assert_eq!(d.max_threads_per_block, 1024);
    assert!(d.max_threads_per_sm >= 1024 && d.max_threads_per_sm <= 2048);
    assert!((16..=32).contains(&d.max_blocks_per_sm));
    assert_eq!(d.regs_per_sm, 65536);
    assert_eq!(d.smem_per_block, 48 * 1024);
    assert!(d.smem_per_block_optin >= d.smem_per_block);
    assert!(d.smem_per_sm >= d.smem_per_block_optin);
    assert!(d.l2_bytes >= 1 << 20);
    assert!(d.total_mem_bytes >= 4 << 30);
    assert!(d.driver_version >= 12000, "{}", d.driver_version);
    assert!(d.sm_clock_khz > 500_000 && d.sm_clock_khz < 4_000_000);
    let bw = d.peak_mem_bandwidth_gbs();
    assert!((100.0..20_000.0).contains(&bw), "{bw}");
    if d.name.contains("H200") || d.name.contains("H100") {
        assert_eq!(d.cc, (9, 0));
        assert_eq!(d.smem_per_sm, 233_472);
        assert_eq!(d.smem_per_block_optin, 232_448);
        assert_eq!(d.reserved_smem_per_block, 1024);
    }
    if d.name.contains("H200") {
        assert_eq!(d.sm_count, 132);
    }
    let (free, total) = gpu.mem_info().unwrap();
    assert!(free <= total && total as u64 <= d.total_mem_bytes);
    assert!(total as u64 >= d.total_mem_bytes / 10 * 9);
    assert!(matches!(
        phobos_gpu::Gpu::new(d.ordinal + 64),
        Err(GpuError::BadOrdinal { .. })
    ));
    // The driver alone (no context) describes the same device: what a worker reports before
    // its context exists.
    assert_eq!(&phobos_gpu::probe_device(d.ordinal).unwrap(), d);
    assert!(matches!(
        phobos_gpu::probe_device(d.ordinal + 64),
        Err(GpuError::BadOrdinal { .. })
    ));
}

#[test]
#[ignore = "needs a GPU"]
fn saxpy_through_the_abi() {
    let gpu = gpu();
    let f = load(&gpu, SAXPY, "saxpy");
    let mut rng = Rng::new("saxpy");
    let n = 1_000_003; // not a multiple of the block
    let x = rng.tensor(DType::F32, &[n], -1.0, 1.0);
    let y = rng.tensor(DType::F32, &[n], -1.0, 1.0);
    let a = rng.uniform(0.5, 2.0) as f32 as f64;
    let dx = DeviceTensor::upload(&gpu, &x, MemOrder::RowMajor).unwrap();
    let dy = DeviceTensor::upload(&gpu, &y, MemOrder::RowMajor).unwrap();
    let k = saxpy_kernel();
    let bound = bind_args(&k, &[dy.arg(), dx.arg(), Arg::Scalar(a)]).unwrap();
    assert_eq!(bound.grid, [(n as u32).div_ceil(256), 1, 1]);
    gpu.launch_sync(&f, &bound, 0).unwrap();
    let out = dy.download().unwrap();
    let want: Vec<f64> = x.data.iter().zip(&y.data).map(|(x, y)| a * x + y).collect();
    let err = relative_error(&out.data, &want);
    assert!(err < 1e-6, "relative error {err}");
    // The tensors disagree on N: a typed error naming both.
    let short = DeviceTensor::upload(
        &gpu,
        &rng.tensor(DType::F32, &[n - 1], -1.0, 1.0),
        MemOrder::RowMajor,
    )
    .unwrap();
    let e = bind_args(&k, &[dy.arg(), short.arg(), Arg::Scalar(a)]).unwrap_err();
    assert!(
        e.to_string()
            .contains("`y` axis 0 = 1000003, `x` axis 0 = 1000002"),
        "{e}"
    );
}

#[test]
#[ignore = "needs a GPU"]
fn masked_2d_copy_through_the_abi_writes_every_element() {
    let gpu = gpu();
    let f = load(&gpu, COPY2D, "copy2d");
    let mut rng = Rng::new("copy2d");
    for (m, n) in [(1000, 77), (8, 32), (1, 1), (33, 1025)] {
        let inp = rng.tensor(DType::F32, &[m, n], -4.0, 4.0);
        let d_in = DeviceTensor::upload(&gpu, &inp, MemOrder::ColMajor).unwrap();
        let d_out = DeviceTensor::alloc(&gpu, DType::F32, &[m, n], MemOrder::RowMajor).unwrap();
        d_out.fill_poison().unwrap();
        let poisoned = d_out.download().unwrap();
        assert!(poisoned.data.iter().all(|v| v.is_nan()), "poison is NaN");
        let bound = bind_args(
            &copy2d_kernel(),
            &[d_out.arg(), d_in.arg(), Arg::Scalar(0.5)],
        )
        .unwrap();
        assert_eq!(
            bound.grid,
            [(n as u32).div_ceil(32), (m as u32).div_ceil(8), 1]
        );
        gpu.launch_sync(&f, &bound, 0).unwrap();
        let out = d_out.download().unwrap();
        let want: Vec<f64> = inp.data.iter().map(|v| v * 0.5).collect();
        assert_eq!(out.data, want, "{m}x{n}");
    }
}

#[test]
#[ignore = "needs a GPU"]
fn half_scalar_with_toolkit_headers() {
    let dir = phobos_gpu::probe::cuda_include_dir()
        .expect("the CUDA toolkit headers (cuda_fp16.h): set PHOBOS_CUDA_INCLUDE or CUDA_HOME");
    eprintln!("CUDA headers from {}", dir.display());
    let gpu = gpu();
    let f = load(&gpu, HALF_SCALAR, "scale");
    let y = HostTensor::from_f64(
        DType::F32,
        &[100],
        &(0..100).map(|i| i as f64).collect::<Vec<_>>(),
    );
    let dy = DeviceTensor::upload(&gpu, &y, MemOrder::RowMajor).unwrap();
    let mut args = KernelArgs::new();
    args.ptr(dy.ptr())
        .scalar(DType::F16, 1.5)
        .scalar(DType::BF16, 0.25)
        .scalar(DType::I8, -3.0)
        .scalar(DType::F64, 0.125)
        .i32(100);
    let cfg = LaunchConfig {
        grid: [1, 1, 1],
        block: [128, 1, 1],
        dynamic_smem: 0,
    };
    gpu.launch_raw(&f, cfg, &mut args).unwrap();
    let out = dy.download().unwrap();
    for (i, v) in out.data.iter().enumerate() {
        assert_eq!(*v, 1.5 * i as f64 + 0.25 - 3.0 + 0.125, "element {i}");
    }
}

#[test]
#[ignore = "needs a GPU"]
fn computed_occupancy_matches_the_driver() {
    let gpu = gpu();
    let mut mismatches = Vec::new();
    let mut cases = 0;
    for (src, name) in [
        (SAXPY.to_string(), "saxpy"),
        (COPY2D.to_string(), "copy2d"),
        (occupancy_kernel(256), "occ"),
        (occupancy_kernel(6000), "occ"),
    ] {
        let f = load(&gpu, &src, name);
        let a = f.attributes();
        for threads in [32, 64, 96, 128, 256, 512, 1024] {
            for dyn_smem in [0u32, 4096, 40 * 1024, 100 * 1024] {
                if dyn_smem > 48 * 1024 - a.static_smem_bytes {
                    f.set_max_dynamic_smem(dyn_smem).unwrap();
                }
                let driver = f.driver_blocks_per_sm(threads, dyn_smem).unwrap();
                let ours = f.occupancy(threads, dyn_smem, None);
                cases += 1;
                if driver != ours.blocks_per_sm {
                    mismatches.push(format!(
                        "{name} ({} regs, {} B static smem): {threads} threads, {dyn_smem} B dynamic: driver {driver}, ours {} ({})",
                        a.num_regs, a.static_smem_bytes, ours.blocks_per_sm, ours.summary()
                    ));
                }
            }
        }
    }
    eprintln!("{cases} occupancy cases, {} mismatches", mismatches.len());
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

#[test]
#[ignore = "needs a GPU"]
fn refused_launches_are_typed_errors_and_the_context_survives() {
    let gpu = gpu();
    let f = load(&gpu, SAXPY, "saxpy");
    let y = DeviceTensor::alloc(&gpu, DType::F32, &[4096], MemOrder::RowMajor).unwrap();
    let args = |n: i32| {
        let mut a = KernelArgs::new();
        a.ptr(y.ptr()).ptr(y.ptr()).f32(1.0).i32(n);
        a
    };
    // 2048 threads per block.
    let e = gpu
        .launch_raw(
            &f,
            LaunchConfig {
                grid: [2, 1, 1],
                block: [2048, 1, 1],
                dynamic_smem: 0,
            },
            &mut args(4096),
        )
        .unwrap_err();
    assert!(
        matches!(e, GpuError::LaunchRejected { block: 2048, .. }),
        "{e}"
    );
    assert!(!e.is_fatal());
    // Dynamic shared memory over the opt-in limit.
    let too_much = gpu.info().smem_per_block_optin + 4096;
    let e = gpu
        .launch_raw(
            &f,
            LaunchConfig {
                grid: [1, 1, 1],
                block: [256, 1, 1],
                dynamic_smem: too_much,
            },
            &mut args(4096),
        )
        .unwrap_err();
    assert!(matches!(e, GpuError::LaunchRejected { .. }), "{e}");
    eprintln!("{e}");
    // A grid of zero blocks.
    let e = gpu
        .launch_raw(
            &f,
            LaunchConfig {
                grid: [0, 1, 1],
                block: [256, 1, 1],
                dynamic_smem: 0,
            },
            &mut args(4096),
        )
        .unwrap_err();
    assert!(matches!(e, GpuError::LaunchRejected { .. }), "{e}");
    // The context still works: y = 1 * y + y.
    assert!(!gpu.is_poisoned());
    gpu.memset(&y.buf, 0x3f).unwrap();
    gpu.launch_raw(
        &f,
        LaunchConfig {
            grid: [16, 1, 1],
            block: [256, 1, 1],
            dynamic_smem: 0,
        },
        &mut args(4096),
    )
    .unwrap();
    gpu.synchronize().unwrap();
    let want = 2.0 * f32::from_bits(0x3f3f_3f3f) as f64;
    assert!(y.download().unwrap().data.iter().all(|&v| v == want));
}

#[test]
#[ignore = "needs a GPU"]
fn module_errors_keep_the_driver_log() {
    let gpu = gpu();
    let e = gpu
        .load_module(&ModuleImage::Ptx(
            ".version 9.0\n.target sm_90\n.address_size 64\nthis is not ptx\n".into(),
        ))
        .unwrap_err();
    match &e {
        GpuError::ModuleLoad { error, log } => {
            eprintln!("{e}\n{log}");
            assert_eq!(error.call, "cuModuleLoadDataEx");
            assert!(!log.is_empty());
        }
        other => panic!("{other}"),
    }
    // Machine code for another architecture.
    let other_arch = if gpu.info().cc.0 == 8 {
        phobos_gpu::Arch::SM_90
    } else {
        phobos_gpu::Arch::SM_80
    };
    let c = phobos_gpu::compile(SAXPY, &phobos_gpu::CompileOptions::for_arch(other_arch)).unwrap();
    let e = gpu
        .load_module(&ModuleImage::Cubin(c.cubin.clone().unwrap()))
        .expect_err("a CUBIN for another architecture does not load");
    assert!(matches!(e, GpuError::ModuleLoad { .. }), "{e}");
    // Its PTX does (the driver assembles it for this device).
    let m = gpu.load_module(&ModuleImage::Ptx(c.ptx.clone())).unwrap();
    assert!(matches!(
        m.function("nope"),
        Err(GpuError::NoSuchFunction { .. })
    ));
    let f = m.function("saxpy").unwrap();
    assert!(f.attributes().num_regs > 0);
    assert!(!gpu.is_poisoned());
}

#[test]
#[ignore = "needs a GPU"]
fn copy_bandwidth_from_events_is_plausible() {
    let gpu = gpu();
    let bytes = 1usize << 30;
    let src = gpu.alloc(bytes).unwrap();
    let dst = gpu.alloc(bytes).unwrap();
    gpu.memset(&src, 0x3c).unwrap();
    let times = gpu
        .time_launches(|| gpu.copy(&dst, &src), 3, 300.0, 10, 200, false)
        .unwrap();
    let s = Stats::of(&times).unwrap();
    let gbs = 2.0 * bytes as f64 / (s.median * 1e-3) / 1e9;
    // The datasheet-style peak; 5 TB/s when the driver does not report the memory clock.
    let peak = Some(gpu.info().peak_mem_bandwidth_gbs())
        .filter(|&p| p > 0.0)
        .unwrap_or(5000.0);
    eprintln!(
        "device copy of 1 GiB: median {:.3} ms over {} repeats (spread {:.1}%), {gbs:.0} GB/s read+write, peak {peak:.0}",
        s.median,
        s.n,
        100.0 * s.rel_spread
    );
    assert!(s.n >= 10);
    assert!(
        gbs > 0.2 * peak && gbs < 1.25 * peak,
        "{gbs} GB/s against a peak of {peak}"
    );

    // A kernel timed with L2 flushes between repeats.
    let f = load(&gpu, SAXPY, "saxpy");
    let n = 64 << 20;
    let x = DeviceTensor::alloc(&gpu, DType::F32, &[n], MemOrder::RowMajor).unwrap();
    let y = DeviceTensor::alloc(&gpu, DType::F32, &[n], MemOrder::RowMajor).unwrap();
    gpu.memset(&x.buf, 0x3c).unwrap();
    gpu.memset(&y.buf, 0x3c).unwrap();
    let bound = bind_args(&saxpy_kernel(), &[y.arg(), x.arg(), Arg::Scalar(0.5)]).unwrap();
    let times = gpu
        .time_launches(|| gpu.launch(&f, &bound, 0), 3, 200.0, 10, 500, true)
        .unwrap();
    let s = Stats::of(&times).unwrap();
    let gbs = 12.0 * n as f64 / (s.median * 1e-3) / 1e9;
    eprintln!(
        "saxpy over 256 MiB vectors: median {:.3} ms, {gbs:.0} GB/s",
        s.median
    );
    assert!(
        gbs > 0.2 * peak && gbs < 1.25 * peak,
        "{gbs} GB/s against a peak of {peak}"
    );
}
