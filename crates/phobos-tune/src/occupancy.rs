//! Theoretical occupancy from a variant's resources, and which resource limits it.
//!
//! The CUDA occupancy calculator's arithmetic, done here so the main process (which owns no GPU
//! state) and `--dry-run` (which may have no GPU) can report it from ptxas's numbers and the
//! device's limits.

use crate::types::{DeviceInfo, Limiter, Occupancy};

/// Registers are allocated per warp in units of this many.
const REG_ALLOC_UNIT: u32 = 256;
/// Shared memory the runtime reserves per block (sm_80 and later).
const SMEM_RESERVED_PER_BLOCK: u64 = 1024;

/// Resident blocks and warps per multiprocessor, and the resource that caps them.
/// `None` when the variant cannot run at all (no block fits).
pub fn occupancy(
    threads: u32,
    registers: u32,
    smem_bytes: u64,
    device: &DeviceInfo,
) -> Option<Occupancy> {
    let warps = threads.div_ceil(32).max(1);
    let by_warps = device.max_warps_per_sm / warps;
    let by_regs = if registers == 0 || device.regs_per_sm == u32::MAX {
        u32::MAX
    } else {
        let per_warp = (registers * 32).div_ceil(REG_ALLOC_UNIT) * REG_ALLOC_UNIT;
        (device.regs_per_sm / per_warp) / warps
    };
    let by_smem = if smem_bytes == 0 || device.smem_per_sm == u64::MAX {
        u32::MAX
    } else {
        (device.smem_per_sm / (smem_bytes + SMEM_RESERVED_PER_BLOCK)).min(u32::MAX as u64) as u32
    };
    let by_blocks = device.max_blocks_per_sm;
    // Ties name the first resource in this order: the one a user can most easily trade.
    let (blocks, limiter) = [
        (by_warps, Limiter::Warps),
        (by_regs, Limiter::Registers),
        (by_smem, Limiter::SharedMemory),
        (by_blocks, Limiter::Blocks),
    ]
    .into_iter()
    .min_by_key(|&(b, _)| b)?;
    (blocks > 0).then_some(Occupancy {
        active_warps_per_sm: blocks * warps,
        max_warps_per_sm: device.max_warps_per_sm,
        blocks_per_sm: blocks,
        limiter,
    })
}

/// An H100/H200 (sm_90) as `--dry-run` assumes it when no device is present.
pub fn sm90() -> DeviceInfo {
    DeviceInfo {
        name: "sm_90 (assumed, no device)".into(),
        driver: "none".into(),
        arch: "sm_90a".into(),
        sm_count: 132,
        max_threads_per_block: 1024,
        max_smem_per_block: 227 * 1024,
        smem_per_sm: 228 * 1024,
        regs_per_sm: 65536,
        max_warps_per_sm: 64,
        max_blocks_per_sm: 32,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limiters() {
        let d = sm90();
        // 256 threads, 32 regs: 8 blocks by warps (64/8), 8 by regs (65536/1024/8): warps win ties.
        let o = occupancy(256, 32, 0, &d).unwrap();
        assert_eq!((o.blocks_per_sm, o.active_warps_per_sm), (8, 64));
        assert_eq!(o.limiter, Limiter::Warps);
        // 128 registers: 65536 / 4096 per warp = 16 warps = 2 blocks of 8 warps.
        let o = occupancy(256, 128, 0, &d).unwrap();
        assert_eq!((o.blocks_per_sm, o.limiter), (2, Limiter::Registers));
        // 100 KB of shared memory: 2 blocks.
        let o = occupancy(128, 32, 100 * 1024, &d).unwrap();
        assert_eq!((o.blocks_per_sm, o.limiter), (2, Limiter::SharedMemory));
        // 32 threads, few registers: the block cap.
        let o = occupancy(32, 16, 0, &d).unwrap();
        assert_eq!((o.blocks_per_sm, o.limiter), (32, Limiter::Blocks));
        // 255 registers at 1024 threads does not fit.
        assert!(occupancy(1024, 255, 0, &d).is_none());
    }
}
