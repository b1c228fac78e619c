//! What the resource model says of a point before it is compiled: the features the model
//! strategy learns from besides the point's own values.
//!
//! Registers and shared memory are known only once a variant is compiled, which is most of a
//! point's cost on a big space; these are the facts the instantiated kernel gives for free:
//! how much of each tile is in bounds for the problem, how evenly the blocks fill the device's
//! multiprocessors, how many threads a block has, and how many output elements each thread
//! holds (the accumulator's share of the register file).

use crate::irwalk::accesses;
use crate::types::Problem;
use phobos_ir::{Dim, Kernel, ParamKind};
use serde::{Deserialize, Serialize};

/// The prior features of one point for one problem and device.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Prior {
    /// The in-bounds share of the work: per runtime dim a tile spans, `extent / padded extent`
    /// (the worst span over that dim), multiplied over the dims. 1 when tiles divide the
    /// problem.
    pub tile_efficiency: f64,
    /// Blocks over blocks rounded up to whole waves of the device's multiprocessors.
    pub wave_efficiency: f64,
    /// Blocks in the grid.
    pub blocks: f64,
    /// Threads per block.
    pub threads: f64,
    /// Elements of the largest stored tile per thread.
    pub outputs_per_thread: f64,
}

impl Prior {
    /// The features as numbers, in a fixed order ([`Prior::NAMES`]).
    pub fn features(&self) -> [f64; 5] {
        [
            self.tile_efficiency,
            self.wave_efficiency,
            self.blocks.max(1.0).log2(),
            self.threads.max(1.0).log2(),
            self.outputs_per_thread.max(1.0).log2(),
        ]
    }

    pub const NAMES: [&'static str; 5] = [
        "tile_efficiency",
        "wave_efficiency",
        "log2_blocks",
        "log2_threads",
        "log2_outputs_per_thread",
    ];

    /// The model's starting guess of how good a point is (higher is better): the share of the
    /// machine's work that is useful.
    pub fn score(&self) -> f64 {
        self.tile_efficiency * self.wave_efficiency
    }
}

/// The prior of an instantiated kernel for a problem on a device of `sm_count` multiprocessors.
pub fn prior(kernel: &Kernel, problem: &Problem, sm_count: u32) -> Prior {
    let mut worst: Vec<(usize, f64)> = Vec::new();
    let mut outputs = 1i64;
    for access in accesses(kernel) {
        let ParamKind::Tensor { dims, .. } = &kernel.params[access.tensor].kind else {
            continue;
        };
        if access.store {
            let elements: i64 = access.spans.iter().map(|s| s.unwrap_or(1)).product();
            outputs = outputs.max(elements);
        }
        for (span, dim) in access.spans.iter().zip(dims) {
            let (Some(len), Dim::Dyn(d)) = (span, dim) else {
                continue;
            };
            let Some(extent) = problem.dim(&kernel.dims[*d].name) else {
                continue;
            };
            if extent <= 0 || *len <= 0 {
                continue;
            }
            let padded = (extent + len - 1) / len * len;
            let eff = extent as f64 / padded as f64;
            match worst.iter_mut().find(|(x, _)| x == d) {
                Some(w) => w.1 = w.1.min(eff),
                None => worst.push((*d, eff)),
            }
        }
    }
    let blocks = crate::facts::grid(kernel, problem)
        .map(|g| g.iter().product::<u64>())
        .unwrap_or(1)
        .max(1);
    let sms = u64::from(sm_count.max(1));
    let threads = kernel.launch.threads.max(1);
    Prior {
        tile_efficiency: worst.iter().map(|w| w.1).product(),
        wave_efficiency: blocks as f64 / (blocks.div_ceil(sms) * sms) as f64,
        blocks: blocks as f64,
        threads: f64::from(threads),
        outputs_per_thread: outputs as f64 / f64::from(threads),
    }
}
