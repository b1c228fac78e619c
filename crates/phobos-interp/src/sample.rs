//! Running part of a grid: chosen blocks only, with a record of the elements they stored to.
//!
//! Blocks never communicate within a launch (the language's rule; see
//! [`phobos_ir::walk::blocks_independent`] for what a host checks first), so the elements a
//! subset of blocks stores are the ones the whole launch stores there. A host that cannot afford
//! to interpret a whole problem runs a sample of its blocks ([`Launch::run_sample`]: the corner
//! blocks, where ragged tiles hang over the tensors' ends, blocks along the grid's edges, and
//! seeded random ones, as many as fit a time budget) and compares exactly the elements they
//! wrote ([`WriteMask`]).

use crate::bind::Launch;
use crate::error::Error;
use crate::exec::{Config, Machine};
use phobos_ir::rng::SplitMix64;
use phobos_ir::HostTensor;
use std::collections::HashSet;
use std::time::{Duration, Instant};

/// Which elements of one tensor the blocks of a run stored to, one flag per element in
/// row-major order (the order of [`HostTensor::data`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WriteMask(pub Vec<bool>);

impl WriteMask {
    /// Whether the element at flat position `i` was written.
    pub fn get(&self, i: usize) -> bool {
        self.0.get(i).copied().unwrap_or(false)
    }

    /// How many elements were written.
    pub fn count(&self) -> usize {
        self.0.iter().filter(|&&w| w).count()
    }
}

/// What a run of chosen blocks gives back.
#[derive(Clone, Debug, PartialEq)]
pub struct BlocksOutput {
    /// Every tensor parameter after the run, in signature order: the blocks' stores applied to
    /// the inputs, the rest of each tensor as it was bound.
    pub tensors: Vec<(String, HostTensor)>,
    /// For every tensor parameter, in signature order: the elements the blocks stored to.
    pub written: Vec<(String, WriteMask)>,
    /// Steps taken (see [`Config::step_budget`]).
    pub steps: u64,
}

impl BlocksOutput {
    /// The write mask of the tensor parameter `name`.
    pub fn mask(&self, name: &str) -> Option<&WriteMask> {
        self.written.iter().find(|(n, _)| n == name).map(|(_, m)| m)
    }
}

/// Why a block is in a sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BlockRole {
    /// Every coordinate is the first or the last of its axis: where ragged tiles meet.
    Corner,
    /// On an edge of the grid: all coordinates but one are the first or last of their axis.
    Edge,
    /// Drawn at random (seeded) from the remaining blocks.
    Random,
}

/// How [`Launch::run_sample`] picks and bounds its blocks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SampleConfig {
    /// Seeds the edge and random picks: the same seed picks the same blocks.
    pub seed: u64,
    /// The interpreter's time for the sample: after each block, another runs only when the
    /// average time per block so far says it fits. The first block always runs.
    pub budget: Duration,
    /// At most this many random blocks besides the corners and edges.
    pub random_blocks: usize,
}

impl Default for SampleConfig {
    fn default() -> SampleConfig {
        SampleConfig {
            seed: 0,
            budget: DEFAULT_SAMPLE_BUDGET,
            random_blocks: 16,
        }
    }
}

/// The default time budget of a sampled run: a check stays within a few seconds.
pub const DEFAULT_SAMPLE_BUDGET: Duration = Duration::from_secs(3);

/// What a sampled run covered: typed, for hosts to report.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Coverage {
    /// Blocks in the launch's grid.
    pub grid_blocks: u64,
    /// Blocks that ran, by why they were picked.
    pub corners: u64,
    pub edges: u64,
    pub random: u64,
}

impl Coverage {
    /// Blocks that ran.
    pub fn blocks(&self) -> u64 {
        self.corners + self.edges + self.random
    }

    /// Every block of the grid ran: the run is the whole launch.
    pub fn complete(&self) -> bool {
        self.blocks() == self.grid_blocks
    }
}

/// A sampled run: its output and what it covered.
#[derive(Clone, Debug, PartialEq)]
pub struct SampledOutput {
    pub output: BlocksOutput,
    pub coverage: Coverage,
}

/// The blocks a sample of `grid` tries, in the order it runs them: the corners (the first
/// block, then the last, where every ragged tile meets, then the others), one block drawn
/// inside each edge of the grid (axes of at least 3 blocks, in a grid of 2 or 3 axes), then up
/// to `random` blocks drawn from the rest (all of them, in a seeded random order, when there
/// are no more: `usize::MAX` asks for the whole grid, and a budget then cuts it to a sample).
pub fn pick_blocks(grid: [i64; 3], seed: u64, random: usize) -> Vec<([i64; 3], BlockRole)> {
    let ext = grid.map(|e| e.max(0));
    let total = ext.iter().map(|&e| e as u64).product::<u64>();
    if total == 0 {
        return Vec::new();
    }
    let last = ext.map(|e| e - 1);
    let mut picked: Vec<([i64; 3], BlockRole)> = Vec::new();
    let mut seen: HashSet<[i64; 3]> = HashSet::new();
    let mut push = |b: [i64; 3], r: BlockRole, picked: &mut Vec<_>| {
        if seen.insert(b) {
            picked.push((b, r));
        }
    };
    // Corners: the first block, the last, then the rest by bits (x lowest).
    push([0; 3], BlockRole::Corner, &mut picked);
    push(last, BlockRole::Corner, &mut picked);
    for bits in 0..8u32 {
        let b = [0, 1, 2].map(|a| if bits >> a & 1 == 1 { last[a] } else { 0 });
        push(b, BlockRole::Corner, &mut picked);
    }
    // Edges: for each axis of 3 or more blocks, each line along it whose other coordinates are
    // at their ends, one block inside it.
    let mut draw = 0u64;
    let mut next = |n: u64| {
        draw += 1;
        SplitMix64::at(seed, draw) % n.max(1)
    };
    if ext.iter().filter(|&&e| e > 1).count() > 1 {
        for a in 0..3 {
            if ext[a] < 3 {
                continue;
            }
            let others: Vec<usize> = (0..3).filter(|&o| o != a).collect();
            let mut lines: Vec<[i64; 3]> = Vec::new();
            for bits in 0..4u32 {
                let mut b = [0i64; 3];
                for (j, &o) in others.iter().enumerate() {
                    b[o] = if bits >> j & 1 == 1 { last[o] } else { 0 };
                }
                if !lines.contains(&b) {
                    lines.push(b);
                }
            }
            for mut b in lines {
                b[a] = 1 + next(ext[a] as u64 - 2) as i64;
                push(b, BlockRole::Edge, &mut picked);
            }
        }
    }
    let rest = total - picked.len() as u64;
    if rest <= random as u64 && rest <= MAX_LISTED {
        // Every other block, in a seeded random order: a budget that stops the run early still
        // leaves a random sample.
        let chosen: HashSet<[i64; 3]> = picked.iter().map(|(b, _)| *b).collect();
        let mut others: Vec<[i64; 3]> = Vec::with_capacity(rest as usize);
        for z in 0..ext[2] {
            for y in 0..ext[1] {
                for x in 0..ext[0] {
                    if !chosen.contains(&[x, y, z]) {
                        others.push([x, y, z]);
                    }
                }
            }
        }
        for i in (1..others.len()).rev() {
            others.swap(i, next(i as u64 + 1) as usize);
        }
        picked.extend(others.into_iter().map(|b| (b, BlockRole::Random)));
        return picked;
    }
    let block_at = |i: u64| {
        let x = (i % ext[0] as u64) as i64;
        let y = (i / ext[0] as u64 % ext[1] as u64) as i64;
        let z = (i / (ext[0] as u64 * ext[1] as u64)) as i64;
        [x, y, z]
    };
    let mut chosen: HashSet<[i64; 3]> = picked.iter().map(|(b, _)| *b).collect();
    let target = picked.len() + (random as u64).min(rest).min(MAX_LISTED) as usize;
    while picked.len() < target {
        let b = block_at(next(total));
        if chosen.insert(b) {
            picked.push((b, BlockRole::Random));
        }
    }
    picked
}

/// The most random blocks a sample lists: a grid of more blocks than this is never run whole
/// by a sample, and the list stays small.
const MAX_LISTED: u64 = 1 << 20;

impl Launch<'_> {
    /// Runs only the blocks listed, in that order, on copies of the bound tensors, and records
    /// which elements their stores reached. A block outside the grid is an error.
    pub fn run_blocks(&self, config: &Config, blocks: &[[i64; 3]]) -> Result<BlocksOutput, Error> {
        self.run_picked(config, blocks.iter().copied(), |_| true)
            .map(|(out, _)| out)
    }

    /// Runs a sample of the grid's blocks ([`pick_blocks`]) within `sample.budget` and records
    /// what their stores reached; [`Coverage`] says which blocks ran. A grid small enough runs
    /// whole (then [`Coverage::complete`]).
    pub fn run_sample(
        &self,
        config: &Config,
        sample: &SampleConfig,
    ) -> Result<SampledOutput, Error> {
        let picks = pick_blocks(self.grid(), sample.seed, sample.random_blocks);
        let start = Instant::now();
        let mut ran = 0u32;
        let fits = |_: &[i64; 3]| {
            // The average block so far predicts the next one.
            let elapsed = start.elapsed();
            let ok = ran == 0 || elapsed + elapsed / ran <= sample.budget;
            ran += 1;
            ok
        };
        let (output, count) = self.run_picked(config, picks.iter().map(|(b, _)| *b), fits)?;
        let grid = self.grid();
        let mut coverage = Coverage {
            grid_blocks: grid.iter().map(|&e| e.max(0) as u64).product(),
            ..Coverage::default()
        };
        for (_, role) in &picks[..count] {
            match role {
                BlockRole::Corner => coverage.corners += 1,
                BlockRole::Edge => coverage.edges += 1,
                BlockRole::Random => coverage.random += 1,
            }
        }
        Ok(SampledOutput { output, coverage })
    }

    /// Runs `blocks` in order while `go` allows the next; returns the output and how many ran.
    fn run_picked(
        &self,
        config: &Config,
        blocks: impl Iterator<Item = [i64; 3]>,
        mut go: impl FnMut(&[i64; 3]) -> bool,
    ) -> Result<(BlocksOutput, usize), Error> {
        let grid = self.grid();
        let mut tensors = self.bound_tensors().to_vec();
        let mut m = Machine::new(
            self.kernel(),
            self.dim_values(),
            self.scalar_values(),
            &mut tensors,
            grid,
            config,
            true,
        );
        let mut count = 0;
        for b in blocks {
            if (0..3).any(|a| b[a] < 0 || b[a] >= grid[a]) {
                return Err(Error::BlockOutsideGrid { block: b, grid });
            }
            if !go(&b) {
                break;
            }
            m.run_block(b)?;
            count += 1;
        }
        let steps = m.steps;
        let written = std::mem::take(&mut m.written);
        let params = &self.kernel().params;
        let output = BlocksOutput {
            written: params
                .iter()
                .zip(written)
                .zip(&tensors)
                .filter(|(_, t)| t.is_some())
                .map(|((p, w), _)| (p.name.clone(), WriteMask(w)))
                .collect(),
            tensors: params
                .iter()
                .zip(tensors)
                .filter_map(|(p, t)| Some((p.name.clone(), t?)))
                .collect(),
            steps,
        };
        Ok((output, count))
    }
}
