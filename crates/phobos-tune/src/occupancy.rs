//! Theoretical occupancy from a variant's resources, and which resource limits it.
//!
//! The arithmetic is phobos-gpu's port of NVIDIA's occupancy calculator (checked there against
//! the tables NVIDIA's own calculator prints), fed from ptxas's numbers and the driver's
//! description of the device, so the main process (which owns no GPU state) and `--dry-run`
//! (which may have no GPU) report it without a launch.

use crate::types::{DeviceInfo, Limiter, Occupancy};
use phobos_gpu::occupancy::{occupancy as calculate, Limiter as GpuLimiter, OccupancyInput};

/// Resident blocks and warps per multiprocessor, and the resource that caps them (on a tie,
/// the first of warps, registers, shared memory, blocks: the one a user can most easily
/// trade). `None` when the variant cannot run at all (no block fits), or the device is not a
/// GPU. `smem_bytes` is the block's whole shared memory, static and dynamic, which may use
/// the device's opt-in limit.
pub fn occupancy(
    threads: u32,
    registers: u32,
    smem_bytes: u64,
    device: &DeviceInfo,
) -> Option<Occupancy> {
    let gpu = device.gpu.as_deref()?;
    let o = calculate(
        gpu,
        &OccupancyInput {
            threads,
            registers,
            static_smem: 0,
            dynamic_smem: smem_bytes.min(u32::MAX as u64) as u32,
            barriers: 1,
            max_threads_per_block: None,
            max_dynamic_smem: Some(gpu.smem_per_block_optin),
        },
    );
    let has = |l: GpuLimiter| o.limiters.contains(&l);
    let limiter = if has(GpuLimiter::Threads) {
        Limiter::Warps
    } else if has(GpuLimiter::Registers) {
        Limiter::Registers
    } else if has(GpuLimiter::SharedMemory) {
        Limiter::SharedMemory
    } else {
        Limiter::Blocks
    };
    (o.blocks_per_sm > 0).then_some(Occupancy {
        active_warps_per_sm: o.warps_per_sm,
        max_warps_per_sm: o.max_warps_per_sm,
        blocks_per_sm: o.blocks_per_sm,
        limiter,
    })
}

/// An H100/H200 (sm_90) as `--dry-run` assumes it when no device is present.
pub fn sm90() -> DeviceInfo {
    DeviceInfo {
        name: "sm_90 (assumed, no device)".into(),
        driver: "none".into(),
        ..DeviceInfo::of_gpu(&phobos_gpu::DeviceInfo::h200())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limiters() {
        let d = sm90();
        assert_eq!(d.arch(), "sm_90a");
        assert_eq!(d.max_smem_per_block(), 227 * 1024);
        // 256 threads, 32 regs: 8 blocks by warps (64/8), 8 by regs (65536/1024/8): warps win ties.
        let o = occupancy(256, 32, 0, &d).unwrap();
        assert_eq!((o.blocks_per_sm, o.active_warps_per_sm), (8, 64));
        assert_eq!(o.limiter, Limiter::Warps);
        // 128 registers: 65536 / 4096 per warp = 16 warps = 2 blocks of 8 warps.
        let o = occupancy(256, 128, 0, &d).unwrap();
        assert_eq!((o.blocks_per_sm, o.limiter), (2, Limiter::Registers));
        // 100 KB of shared memory (and the 1 KB the driver reserves): 2 blocks.
        let o = occupancy(128, 32, 100 * 1024, &d).unwrap();
        assert_eq!((o.blocks_per_sm, o.limiter), (2, Limiter::SharedMemory));
        // 32 threads, few registers: the block cap.
        let o = occupancy(32, 16, 0, &d).unwrap();
        assert_eq!((o.blocks_per_sm, o.limiter), (32, Limiter::Blocks));
        // 255 registers at 1024 threads does not fit.
        assert!(occupancy(1024, 255, 0, &d).is_none());
        // The interpreter has no occupancy.
        assert!(occupancy(256, 32, 0, &DeviceInfo::interpreter()).is_none());
    }
}
