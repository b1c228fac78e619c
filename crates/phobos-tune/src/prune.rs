//! Dropping points before compiling them.
//!
//! Three kinds of rule, in this order:
//! 1. `@where` for the problem at hand (the front end evaluates it): a hard constraint.
//! 2. Hardware limits known ahead: more threads per block than the device allows, and (once the
//!    emitter has said how much) more shared memory per block than the device allows. Hard too:
//!    such a variant can never launch.
//! 3. The large-tile heuristic, from the production GEMM tuner of seed 002 ("skip BLOCK_SIZE_M or
//!    BLOCK_SIZE_N if they are over 2 times larger than M or N"): a tile span more than
//!    [`LARGE_TILE_FACTOR`] times the runtime extent it covers wastes most of its work on
//!    out-of-bounds elements. It is only a guess about speed, so it can be switched off
//!    (`--no-prune-large`) and it never empties the space: when it would drop every point that
//!    the hard rules kept, the points it judges least oversized stay.

use crate::irwalk::accesses;
use crate::types::{DeviceInfo, Problem, PruneReason};
use phobos_ir::{Dim, Kernel, ParamKind};

/// A tile more than this many times the extent it spans is "far larger than the problem".
pub const LARGE_TILE_FACTOR: i64 = 2;

/// The hardware rule that needs only the instantiated kernel: threads per block.
pub fn threads(kernel: &Kernel, device: &DeviceInfo) -> Option<PruneReason> {
    let limit = device.max_threads_per_block();
    (kernel.launch.threads > limit).then_some(PruneReason::Threads {
        threads: kernel.launch.threads,
        limit,
    })
}

/// The hardware rule that needs the emitter's shared-memory figure.
pub fn shared_memory(bytes: u64, device: &DeviceInfo) -> Option<PruneReason> {
    let limit = device.max_smem_per_block();
    (bytes > limit).then_some(PruneReason::SharedMemory { bytes, limit })
}

/// The largest tile-over-extent excess of any span over a runtime dim, when over the factor.
/// Returns the reason and the excess ratio (to rank points when one must be kept).
pub fn large_tile(kernel: &Kernel, problem: &Problem) -> Option<(PruneReason, f64)> {
    let mut worst: Option<(PruneReason, f64)> = None;
    for access in accesses(kernel) {
        let param = &kernel.params[access.tensor];
        let ParamKind::Tensor { dims, .. } = &param.kind else {
            continue;
        };
        for (axis, (span, dim)) in access.spans.iter().zip(dims).enumerate() {
            let (Some(len), Dim::Dyn(d)) = (span, dim) else {
                continue;
            };
            let Some(extent) = problem.dim(&kernel.dims[*d].name) else {
                continue;
            };
            if extent <= 0 || *len <= LARGE_TILE_FACTOR * extent {
                continue;
            }
            let ratio = *len as f64 / extent as f64;
            if worst.as_ref().is_none_or(|w| ratio > w.1) {
                worst = Some((
                    PruneReason::TileTooLarge {
                        tensor: param.name.clone(),
                        axis,
                        tile: *len,
                        extent,
                    },
                    ratio,
                ));
            }
        }
    }
    worst
}

/// Of the points the heuristic would drop, the indices to keep anyway when nothing else is
/// left: those with the smallest excess (all ties).
pub fn keep_least_oversized(excess: &[f64]) -> Vec<usize> {
    let Some(best) = excess.iter().copied().reduce(f64::min) else {
        return Vec::new();
    };
    excess
        .iter()
        .enumerate()
        .filter(|&(_, &e)| e == best)
        .map(|(i, _)| i)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_least_oversized() {
        assert_eq!(keep_least_oversized(&[4.0, 2.5, 8.0, 2.5]), vec![1, 3]);
        assert!(keep_least_oversized(&[]).is_empty());
    }

    #[test]
    fn hardware_limits() {
        let d = DeviceInfo::of_gpu(&phobos_gpu::DeviceInfo {
            smem_per_block_optin: 1000,
            ..phobos_gpu::DeviceInfo::h200()
        });
        assert_eq!(
            shared_memory(1001, &d),
            Some(PruneReason::SharedMemory {
                bytes: 1001,
                limit: 1000
            })
        );
        assert_eq!(shared_memory(1000, &d), None);
    }
}
