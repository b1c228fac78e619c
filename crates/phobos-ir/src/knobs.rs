//! The `@autotune` names the code generator reads from a point to steer its lowering ("knobs"),
//! in one table: the code generator's readers take their names from here, and the checker
//! warns about a declared name that misses one of them by a typo (`STAGE` for `STAGES`).
//!
//! A knob never changes what a kernel computes, only how the code generator lowers it
//! (docs/language.md lists what each does); a kernel that declares none gets the defaults.

use crate::Point;

/// A name the code generator reads from a point.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Knob {
    TileM,
    TileN,
    TileK,
    WarpM,
    WarpN,
    TileTm,
    TileTn,
    Stages,
    GroupM,
    SplitK,
    SplitReduce,
    Schedule,
    Cluster,
    Overlap,
    PingPong,
    Ring,
    Producer,
    Persist,
    Walk,
    Shift,
    Evict,
    Pack,
    RowSmem,
    RowsAhead,
    RowSplit,
    OnePass,
    WgmmaK,
    VecCopy,
    StoreLines,
}

impl Knob {
    /// Every knob, in the order the docs list them.
    pub const ALL: [Knob; 29] = [
        Knob::TileM,
        Knob::TileN,
        Knob::TileK,
        Knob::WarpM,
        Knob::WarpN,
        Knob::TileTm,
        Knob::TileTn,
        Knob::Stages,
        Knob::GroupM,
        Knob::SplitK,
        Knob::SplitReduce,
        Knob::Schedule,
        Knob::Cluster,
        Knob::Overlap,
        Knob::PingPong,
        Knob::Ring,
        Knob::Producer,
        Knob::Persist,
        Knob::Walk,
        Knob::Shift,
        Knob::Evict,
        Knob::Pack,
        Knob::RowSmem,
        Knob::RowsAhead,
        Knob::RowSplit,
        Knob::OnePass,
        Knob::WgmmaK,
        Knob::VecCopy,
        Knob::StoreLines,
    ];

    /// The name a kernel declares in `@autotune`.
    pub const fn name(self) -> &'static str {
        match self {
            Knob::TileM => "TILE_M",
            Knob::TileN => "TILE_N",
            Knob::TileK => "TILE_K",
            Knob::WarpM => "WARP_M",
            Knob::WarpN => "WARP_N",
            Knob::TileTm => "TILE_TM",
            Knob::TileTn => "TILE_TN",
            Knob::Stages => "STAGES",
            Knob::GroupM => "GROUP_M",
            Knob::SplitK => "SPLIT_K",
            Knob::SplitReduce => "SPLIT_REDUCE",
            Knob::Schedule => "SCHEDULE",
            Knob::Cluster => "CLUSTER",
            Knob::Overlap => "OVERLAP",
            Knob::PingPong => "PINGPONG",
            Knob::Ring => "RING",
            Knob::Producer => "PRODUCER",
            Knob::Persist => "PERSIST",
            Knob::Walk => "WALK",
            Knob::Shift => "SHIFT",
            Knob::Evict => "EVICT",
            Knob::Pack => "PACK",
            Knob::RowSmem => "ROW_SMEM",
            Knob::RowsAhead => "ROWS_AHEAD",
            Knob::RowSplit => "ROW_SPLIT",
            Knob::OnePass => "ONE_PASS",
            Knob::WgmmaK => "WGMMA_K",
            Knob::VecCopy => "VEC_COPY",
            Knob::StoreLines => "STORE_LINES",
        }
    }

    /// What the code generator does with it, in a few words.
    pub const fn meaning(self) -> &'static str {
        match self {
            Knob::TileM | Knob::TileN | Knob::TileK => "the block tile of a GEMM main loop",
            Knob::WarpM | Knob::WarpN => "the warp tile, a warpgroup's on wgmma",
            Knob::TileTm | Knob::TileTn => "the thread tile of the FFMA main loop",
            Knob::Stages => "shared-memory pipeline depth",
            Knob::GroupM => "the block swizzle group, for L2 reuse",
            Knob::SplitK => "the k range split over SPLIT_K blocks along z",
            Knob::SplitReduce => {
                "SPLIT_K parts: 1, added into an f32 C; 2, an f32 workspace; 3, in pairs; 4, a cluster"
            }
            Knob::Schedule => "1: one block per tile; 2: persistent blocks; 3: persistent, each stage released as soon as its own MMAs complete",
            Knob::Cluster => {
                "1, 2: thread block clusters of two sharing B, 3: the same, one block copying B, 4: two sharing A, or 5: four sharing A"
            }
            Knob::Overlap => {
                "0: a loop's wgmma dots wait at once; 1: overlapped; 2: overlapped, the wait fenced"
            }
            Knob::PingPong => {
                "1: two warpgroups take turns issuing an overlapped loop's wgmma dots; 0: not"
            }
            Knob::Ring => {
                "1: an overlapped loop's streamed buffers guarded by full and empty mbarriers; 0: block barriers"
            }
            Knob::Producer => {
                "1: the last warp fills the mbarrier ring by TMA (THREADS = 128 * warpgroups + 32); 2: the last warpgroup (+ 128, setmaxnreg); 0: the consumers copy"
            }
            Knob::Persist => {
                "1: with PRODUCER=2, persistent blocks loop over the logical grid, the ring's tile counter carried across them; 2: and the producer loads q by TMA; 0: one block each"
            }
            Knob::Walk => {
                "with PERSIST: 0, each block takes every gridDim.x-th logical block, x fastest; 1, rounds of gridDim.x dealt in a snake, x slowest (causal's longest row blocks first across heads); 2, pairs of x and grid.x − 1 − x of one y, every gridDim.x-th pair"
            }
            Knob::Shift => {
                "shifted row loads: 0, each group's shift; 1, the row's, once; 2, and whole tiles unguarded"
            }
            Knob::Evict => "0: accesses' eviction hints dropped; 1 (undeclared): emitted",
            Knob::Pack => {
                "1: a `let` of a bf16 or f16 tile load held two a register; 2: and shifted row stores; 3: and lean masks and stores; 4: and masked row loads filled, packed max, lane-combined reductions"
            }
            Knob::RowSmem => {
                "1: with PACK=4, a masked row load's `let` staged in shared memory by bulk copies; 2: and masked in place, not realigned, where its uses are whole-row max, min or sum and a store of a position-blind value through its buffer (stored from the registers when the destination's row starts at the row's shift), landing by slabs under its first use when loaded once a block; 0: in registers"
            }
            Knob::RowsAhead => {
                "1: with ROW_SMEM, persistent blocks over the logical grid, the next logical block's row copied into a second buffer while this one's is computed; 2: without ROW_SMEM, persistent blocks, the next row landing in one buffer while this one is computed from registers; 0: one block a row"
            }
            Knob::RowSplit => {
                "k (2, 4 or 8): each program instance on a cluster of k blocks, every row tile split into k column parts, whole-tile reductions combined across the cluster; 1: one block"
            }
            Knob::OnePass => {
                "1 (undeclared): a staged bf16 row's whole-row max and a later sum of exp2((x - max) a) in one pass, each thread's running (max, sum) as the row lands; 0: two passes"
            }
            Knob::WgmmaK => "1: tf32, fp8 and i8 dots outside GEMM loops on wgmma; 0: mma.sync",
            Knob::VecCopy => {
                "1: 16-bit mma.sync GEMM operands aligned to 2 bytes read by shifted 16-byte vectors, and 4-byte tiles of rows known unaligned loaded (and stored transposed) by them; 0: element accesses"
            }
            Knob::StoreLines => {
                "1: a transposed 4- or 2-byte tile stored to rows known unaligned (without VEC_COPY=1) by warp windows on 128-byte lines, a warp a row (2-byte elements a pair a lane); 0: the layout's element stores"
            }
        }
    }

    /// The knob named `name`, if it is one.
    pub fn from_name(name: &str) -> Option<Knob> {
        Knob::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Every knob's name, in table order.
    pub fn names() -> impl Iterator<Item = &'static str> {
        Knob::ALL.into_iter().map(Knob::name)
    }

    /// The value of this knob at `point`, when the kernel declares it.
    pub fn get(self, point: &Point) -> Option<i64> {
        point.get(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_distinct_and_read_back() {
        let names: Vec<&str> = Knob::names().collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), names.len());
        for k in Knob::ALL {
            assert_eq!(Knob::from_name(k.name()), Some(k));
            assert!(!k.meaning().is_empty());
        }
        assert_eq!(Knob::from_name("STAGE"), None);
        let p = Point(vec![("STAGES".into(), 3), ("BLOCK".into(), 64)]);
        assert_eq!(Knob::Stages.get(&p), Some(3));
        assert_eq!(Knob::GroupM.get(&p), None);
    }

    #[test]
    fn the_language_reference_lists_every_knob() {
        let doc = include_str!("../../../docs/language.md");
        let table = doc
            .split("### The knob table")
            .nth(1)
            .and_then(|t| t.split("\n\n").nth(2))
            .expect("docs/language.md has the knob table");
        for k in Knob::ALL {
            let row = table
                .lines()
                .find(|l| l.contains(&format!("`{}`", k.name())))
                .unwrap_or_else(|| panic!("{} is not in the table:\n{table}", k.name()));
            assert!(row.ends_with(&format!("| {} |", k.meaning())), "{row}");
        }
    }
}
