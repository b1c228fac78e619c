//! Occupancy computed from a kernel's resources and the device's limits: how many blocks of a
//! kernel fit on one SM at once, how many warps that is, and which resource stops it.
//!
//! A port of NVIDIA's occupancy calculator (`cuda_occupancy.h` of CUDA 13.0) for compute
//! capability 7.0 and later with the default shared-memory carveout, so that it agrees with
//! `cuOccupancyMaxActiveBlocksPerMultiprocessor` while also naming the limiter, which the driver
//! does not (seed 003: occupancy and its limiter drive launch-bound tuning). Pure: no GPU needed.
//! The tests hold tables NVIDIA's calculator printed for sm_90 and sm_80 (see
//! `fixtures/occupancy_ref.cpp`) and agree with every line.

use crate::device::DeviceInfo;
use serde::{Deserialize, Serialize};
use std::fmt;

/// What a kernel launch needs per block.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OccupancyInput {
    /// Threads per block.
    pub threads: u32,
    /// Registers per thread.
    pub registers: u32,
    /// Static shared memory per block.
    pub static_smem: u32,
    /// Dynamic shared memory per block at launch.
    pub dynamic_smem: u32,
    /// Barriers used (ptxas's "used N barriers"; 1 when unknown, as NVIDIA's calculator
    /// assumes).
    pub barriers: u32,
    /// The function's own block-size cap (`__launch_bounds__`), if any.
    pub max_threads_per_block: Option<u32>,
    /// The function's dynamic shared memory limit, when raised above the default (the
    /// `MAX_DYNAMIC_SHARED_SIZE_BYTES` attribute); `None` keeps the 48 KB default.
    pub max_dynamic_smem: Option<u32>,
}

/// A resource that bounds the number of resident blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Limiter {
    Registers,
    SharedMemory,
    /// Threads (warps) per SM, or the block is larger than allowed.
    Threads,
    /// The per-SM block limit.
    Blocks,
    Barriers,
}

impl Limiter {
    /// The word the tuner's report prints.
    pub fn name(self) -> &'static str {
        match self {
            Limiter::Registers => "registers",
            Limiter::SharedMemory => "shared memory",
            Limiter::Threads => "threads",
            Limiter::Blocks => "blocks per SM",
            Limiter::Barriers => "barriers",
        }
    }
}

impl fmt::Display for Limiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The result: resident blocks and warps per SM and what limits them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Occupancy {
    /// Blocks resident per SM (0: the launch cannot run at all).
    pub blocks_per_sm: u32,
    /// Warps resident per SM.
    pub warps_per_sm: u32,
    /// The device's maximum warps per SM.
    pub max_warps_per_sm: u32,
    /// Every resource whose own limit equals `blocks_per_sm` (several can tie), in the order
    /// registers, shared memory, threads, blocks, barriers.
    pub limiters: Vec<Limiter>,
    /// Blocks per SM each resource alone would allow (`u32::MAX`: no limit).
    pub limit_registers: u32,
    pub limit_smem: u32,
    pub limit_threads: u32,
    pub limit_blocks: u32,
    pub limit_barriers: u32,
    /// Shared memory the hardware allocates per block (with the reserved 1 KB, rounded).
    pub smem_per_block: u32,
}

impl Occupancy {
    /// Resident warps over the maximum, 0..=1.
    pub fn fraction(&self) -> f64 {
        self.warps_per_sm as f64 / self.max_warps_per_sm.max(1) as f64
    }

    /// The limiter to show first.
    pub fn limiter(&self) -> Limiter {
        self.limiters.first().copied().unwrap_or(Limiter::Blocks)
    }

    /// e.g. `32/64 warps (registers)` or `0/64 warps (shared memory)`.
    pub fn summary(&self) -> String {
        let names: Vec<&str> = self.limiters.iter().map(|l| l.name()).collect();
        format!(
            "{}/{} warps ({})",
            self.warps_per_sm,
            self.max_warps_per_sm,
            names.join(", ")
        )
    }
}

fn round_up(x: u64, to: u64) -> u64 {
    x.div_ceil(to) * to
}

/// Shared memory per SM the carveout can be set to on sm_90 (KB), for rounding a need up.
fn carveout_sizes_kb(cc: (u32, u32)) -> &'static [u64] {
    match cc {
        (7, 5) => &[32, 64],
        (7, _) => &[0, 8, 16, 32, 64, 96],
        (8, 0) | (8, 7) => &[0, 8, 16, 32, 64, 100, 132, 164],
        (8, _) | (12, _) => &[0, 8, 16, 32, 64, 100],
        _ => &[0, 8, 16, 32, 64, 100, 132, 164, 196, 228],
    }
}

/// Blocks per SM for a kernel on a device; see the module doc. Ties between limiters are all
/// reported.
pub fn occupancy(dev: &DeviceInfo, k: &OccupancyInput) -> Occupancy {
    let warp = dev.warp_size.max(1) as u64;
    let threads = k.threads as u64;
    let warps_per_block = threads.div_ceil(warp).max(1);
    let max_warps = dev.max_threads_per_sm as u64 / warp;

    // Threads: warp slots, and the block-size caps.
    let block_cap = k
        .max_threads_per_block
        .map_or(dev.max_threads_per_block, |f| {
            f.min(dev.max_threads_per_block)
        });
    let limit_threads = if threads == 0 || threads > block_cap as u64 {
        0
    } else {
        max_warps / warps_per_block
    };

    // Blocks per SM.
    let limit_blocks = dev.max_blocks_per_sm as u64;

    // Registers: allocated per warp in units of 256, per SM sub-partition (4 on sm_70+).
    let partitions = 4u64;
    let regs_per_warp = round_up(k.registers as u64 * warp, 256);
    let regs_per_block = regs_per_warp * warps_per_block;
    // The hardware check assumes warps spread over all sub-partitions.
    let regs_assumed = regs_per_warp * round_up(warps_per_block, partitions);
    let limit_registers = if k.registers > 256
        || regs_assumed > dev.regs_per_block as u64
        || regs_per_block > dev.regs_per_block as u64
    {
        0
    } else {
        match (dev.regs_per_sm as u64 / partitions).checked_div(regs_per_warp) {
            Some(warps_per_partition) => warps_per_partition * partitions / warps_per_block,
            // No registers at all: no register limit.
            None => u32::MAX as u64,
        }
    };

    // Shared memory: static + dynamic + the driver's reserve, in 128-byte units.
    let reserved = dev.reserved_smem_per_block as u64;
    let smem_used = k.static_smem as u64 + k.dynamic_smem as u64 + reserved;
    let smem_alloc = round_up(smem_used, 128);
    let dyn_cap = k
        .max_dynamic_smem
        .map(|m| m as u64)
        .unwrap_or((dev.smem_per_block as u64).saturating_sub(k.static_smem as u64));
    let max_smem_use = k.static_smem as u64 + dyn_cap;
    let per_block_limit =
        if k.max_dynamic_smem.is_some() && max_smem_use > dev.smem_per_block as u64 {
            dev.smem_per_block_optin as u64
        } else {
            dev.smem_per_block as u64
        } + reserved;
    let limit_smem = if k.dynamic_smem as u64 > dyn_cap || smem_alloc > per_block_limit {
        0
    } else {
        // The default carveout is the whole of shared memory.
        let per_sm = round_up_carveout(dev.cc, dev.smem_per_sm as u64);
        if per_sm >= smem_alloc {
            per_sm / smem_alloc
        } else {
            0
        }
    };

    let mut limit = limit_threads
        .min(limit_blocks)
        .min(limit_registers)
        .min(limit_smem);
    // Barriers (Hopper on): 2 per block slot, shared among the blocks.
    let limit_barriers = if dev.cc.0 >= 9 && k.barriers > 0 {
        (2 * dev.max_blocks_per_sm as u64) / k.barriers as u64
    } else {
        u32::MAX as u64
    };
    limit = limit.min(limit_barriers);

    let mut limiters = Vec::new();
    for (l, v) in [
        (Limiter::Registers, limit_registers),
        (Limiter::SharedMemory, limit_smem),
        (Limiter::Threads, limit_threads),
        (Limiter::Blocks, limit_blocks),
        (Limiter::Barriers, limit_barriers),
    ] {
        if v == limit {
            limiters.push(l);
        }
    }
    let clamp = |v: u64| v.min(u32::MAX as u64) as u32;
    Occupancy {
        blocks_per_sm: clamp(limit),
        warps_per_sm: clamp(limit * warps_per_block),
        max_warps_per_sm: clamp(max_warps),
        limiters,
        limit_registers: clamp(limit_registers),
        limit_smem: clamp(limit_smem),
        limit_threads: clamp(limit_threads),
        limit_blocks: clamp(limit_blocks),
        limit_barriers: clamp(limit_barriers),
        smem_per_block: clamp(smem_alloc),
    }
}

/// The default carveout preference rounded to a size the hardware offers.
fn round_up_carveout(cc: (u32, u32), bytes: u64) -> u64 {
    carveout_sizes_kb(cc)
        .iter()
        .map(|kb| kb * 1024)
        .find(|&s| s >= bytes)
        .unwrap_or(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(threads: u32, registers: u32, static_smem: u32, dynamic_smem: u32) -> OccupancyInput {
        OccupancyInput {
            threads,
            registers,
            static_smem,
            dynamic_smem,
            barriers: 1,
            max_threads_per_block: None,
            max_dynamic_smem: None,
        }
    }

    fn h200(k: OccupancyInput) -> Occupancy {
        occupancy(&DeviceInfo::h200(), &k)
    }

    #[test]
    fn registers_limit_a_256_thread_block_at_64_regs() {
        let o = h200(input(256, 64, 0, 0));
        // 64 regs x 32 lanes = 2048 per warp; 16384 per sub-partition = 8 warps; 32 per SM.
        assert_eq!(o.blocks_per_sm, 4);
        assert_eq!(o.warps_per_sm, 32);
        assert_eq!(o.limiters, vec![Limiter::Registers]);
        assert_eq!(o.fraction(), 0.5);
        assert_eq!(o.summary(), "32/64 warps (registers)");
    }

    #[test]
    fn small_kernels_are_limited_by_threads() {
        let o = h200(input(256, 32, 0, 0));
        assert_eq!(o.blocks_per_sm, 8);
        assert_eq!(o.warps_per_sm, 64);
        assert_eq!(o.limiters, vec![Limiter::Registers, Limiter::Threads]);
        let o = h200(input(64, 16, 0, 0));
        // 64 warps / 2 per block = 32 = the block limit too.
        assert_eq!(o.blocks_per_sm, 32);
        assert!(o.limiters.contains(&Limiter::Blocks));
        assert!(o.limiters.contains(&Limiter::Threads));
    }

    #[test]
    fn shared_memory_limits_with_the_reserved_kilobyte() {
        // 48 KB static + 1 KB reserved = 50176 B per block; 233472 / 50176 = 4.
        let o = h200(input(128, 32, 48 * 1024, 0));
        assert_eq!(o.blocks_per_sm, 4);
        assert_eq!(o.limiters, vec![Limiter::SharedMemory]);
        assert_eq!(o.smem_per_block, 50176);
        // Odd sizes round to 128 bytes.
        let o = h200(input(128, 32, 1000, 0));
        assert_eq!(o.smem_per_block, 2048);
    }

    #[test]
    fn dynamic_shared_memory_needs_the_raised_limit() {
        // 100 KB dynamic without raising the limit: cannot launch.
        let o = h200(input(256, 32, 0, 100 * 1024));
        assert_eq!(o.blocks_per_sm, 0);
        assert_eq!(o.limiters, vec![Limiter::SharedMemory]);
        // With the limit raised to 200 KB: two blocks of 101 KB fit in 228 KB.
        let mut k = input(256, 32, 0, 100 * 1024);
        k.max_dynamic_smem = Some(200 * 1024);
        let o = h200(k);
        assert_eq!(o.blocks_per_sm, 2);
        // Over the opt-in maximum: never.
        k.dynamic_smem = 228 * 1024;
        k.max_dynamic_smem = Some(228 * 1024);
        assert_eq!(h200(k).blocks_per_sm, 0);
    }

    #[test]
    fn too_many_registers_for_the_block_cannot_launch() {
        // 1024 threads x 128 regs = 131072 > 65536 per block.
        let o = h200(input(1024, 128, 0, 0));
        assert_eq!(o.blocks_per_sm, 0);
        assert_eq!(o.limiters, vec![Limiter::Registers]);
        // 255 regs round to 8192 per warp: 2 warps per sub-partition, 8 per SM.
        let o = h200(input(256, 255, 0, 0));
        assert_eq!((o.blocks_per_sm, o.warps_per_sm), (1, 8));
    }

    #[test]
    fn block_size_caps_and_barriers() {
        assert_eq!(h200(input(2048, 16, 0, 0)).blocks_per_sm, 0);
        let mut k = input(512, 16, 0, 0);
        k.max_threads_per_block = Some(256);
        let o = h200(k);
        assert_eq!((o.blocks_per_sm, o.limiter()), (0, Limiter::Threads));
        let mut k = input(32, 16, 0, 0);
        k.barriers = 4;
        let o = h200(k);
        // 64 barrier slots / 4 = 16 blocks, under the 32-block limit.
        assert_eq!(o.blocks_per_sm, 16);
        assert_eq!(o.limiters, vec![Limiter::Barriers]);
    }

    /// Every line of a table NVIDIA's calculator (`cuda_occupancy.h`) printed: same blocks.
    fn matches_nvidia_table(dev: &DeviceInfo, table: &str) {
        let mut checked = 0;
        for line in table.lines() {
            let v: Vec<i64> = line
                .split_whitespace()
                .map(|x| x.parse().unwrap())
                .collect();
            let k = OccupancyInput {
                threads: v[0] as u32,
                registers: v[1] as u32,
                static_smem: v[2] as u32,
                dynamic_smem: v[3] as u32,
                barriers: v[4] as u32,
                max_threads_per_block: Some(1024),
                max_dynamic_smem: (v[5] >= 0).then_some(v[5] as u32),
            };
            let o = occupancy(dev, &k);
            assert_eq!(
                o.blocks_per_sm as i64,
                v[6].max(0),
                "{line}: {}",
                o.summary()
            );
            checked += 1;
        }
        assert_eq!(checked, 2304);
    }

    #[test]
    fn agrees_with_nvidia_calculator_on_hopper() {
        matches_nvidia_table(
            &DeviceInfo::h200(),
            include_str!("fixtures/occupancy_sm90.txt"),
        );
    }

    #[test]
    fn agrees_with_nvidia_calculator_on_ampere() {
        let a100 = DeviceInfo {
            cc: (8, 0),
            smem_per_sm: 167_936,
            smem_per_block_optin: 166_912,
            ..DeviceInfo::h200()
        };
        matches_nvidia_table(&a100, include_str!("fixtures/occupancy_sm80.txt"));
    }

    #[test]
    fn ampere_carveout_and_no_barrier_limit() {
        let a100 = DeviceInfo {
            cc: (8, 0),
            sm_count: 108,
            smem_per_sm: 167_936,
            smem_per_block_optin: 166_912,
            ..DeviceInfo::h200()
        };
        let mut k = input(128, 32, 0, 80 * 1024);
        k.max_dynamic_smem = Some(160 * 1024);
        k.barriers = 16;
        // 81 KB + 1 KB reserved per block; 164 KB per SM: 2 blocks, barriers ignored pre-Hopper.
        assert_eq!(occupancy(&a100, &k).blocks_per_sm, 2);
    }
}
