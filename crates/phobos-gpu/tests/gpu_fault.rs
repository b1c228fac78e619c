//! A kernel fault on the GPU. Its own test binary (its own process): a fault makes the
//! device's primary context unusable for every later call of the process, so it cannot share a
//! process with other GPU tests. Run with `--ignored` on a GPU machine.

mod common;

use common::kernels::WILD;
use common::*;
use phobos_gpu::{GpuError, KernelArgs, LaunchConfig};

#[test]
#[ignore = "needs a GPU"]
fn a_fault_is_typed_and_poisons_the_handle() {
    let gpu = gpu();
    let f = load(&gpu, WILD, "wild");
    let buf = gpu.alloc(4).unwrap();
    let mut args = KernelArgs::new();
    args.ptr(buf.ptr());
    let cfg = LaunchConfig {
        grid: [1, 1, 1],
        block: [32, 1, 1],
        dynamic_smem: 0,
    };
    // The launch itself is accepted; the fault shows when the stream is waited for.
    gpu.launch_raw(&f, cfg, &mut args).unwrap();
    let e = gpu.synchronize().unwrap_err();
    eprintln!("{e}");
    match &e {
        GpuError::Fault(call) => {
            assert_eq!(call.call, "cuStreamSynchronize");
            // CUDA_ERROR_ILLEGAL_ADDRESS (or a launch failure on some drivers).
            assert!([700, 719].contains(&call.code), "{call}");
        }
        other => panic!("expected a fault, got {other}"),
    }
    assert!(e.is_fatal());
    assert!(e.to_string().contains("restart the process"));
    assert!(gpu.is_poisoned());
    // Every later call is refused without touching the dead context.
    assert!(matches!(gpu.alloc(16), Err(GpuError::Poisoned(_))));
    assert!(matches!(gpu.synchronize(), Err(GpuError::Poisoned(_))));
    assert!(matches!(
        gpu.launch_raw(&f, cfg, &mut args),
        Err(GpuError::Poisoned(_))
    ));
}
