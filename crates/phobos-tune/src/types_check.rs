//! What a correctness check compared and, when it failed, why: the typed records the engine
//! keeps per point and the CLI renders (`--report`, `--json`).

use serde::{Deserialize, Serialize};

/// Why a correctness check failed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Mismatch {
    /// The output tensor that disagreed.
    pub tensor: String,
    /// `|out - ref| / |ref|`, norm-wise (infinite for NaN or unwritten elements).
    pub error: f64,
    pub tolerance: f64,
    /// What the reference was (the interpreter at which point and dims, or another variant).
    pub reference: String,
}

/// What one correctness check compared: typed, for the CLI to render (`--report`, `--json`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Checked {
    /// The runtime dims of the problem the check ran: the tuned problem's, or smaller ones.
    pub dims: Vec<(String, i64)>,
    pub reference: CheckReference,
    pub scope: CheckScope,
}

/// What a check's outputs were compared against.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckReference {
    /// The CPU interpreter (the semantics).
    Interpreter,
    /// A variant already verified in this run.
    Variant,
    /// The device's library routine (cuBLAS).
    Library,
}

/// Which output elements a check compared.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum CheckScope {
    /// Every element of every output.
    Whole { elements: u64 },
    /// Only the elements that a sample of the grid's blocks wrote, interpreted on their own.
    Sampled {
        coverage: BlockCoverage,
        /// Output elements compared (those the sampled blocks wrote).
        elements: u64,
    },
}

/// Which blocks of a grid a sampled check interpreted.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockCoverage {
    pub grid_blocks: u64,
    /// Corner blocks (every coordinate first or last along its axis: the ragged tiles).
    pub corners: u64,
    /// Blocks inside the grid's edges.
    pub edges: u64,
    /// Seeded random blocks.
    pub random: u64,
}

impl BlockCoverage {
    /// Blocks interpreted.
    pub fn blocks(&self) -> u64 {
        self.corners + self.edges + self.random
    }
}
