//! The `@autotune` names a GEMM kernel may declare to steer its main loop, read from one
//! point of the shape environment. The names are `phobos_ir::knobs::Knob`'s table.

use phobos_ir::knobs::Knob;
use phobos_ir::Point;

/// The knobs of one point. `None`: the kernel does not declare the name; the strategy picks.
///
/// TILE_M/N/K are the block tile; the matched loop's slices already fix them, so they are
/// read here only to cross-check. WARP_M/WARP_N: the warp tile (sm80, FFMA) or, on sm90,
/// WARP_N < TILE_N splits N across consumer warpgroups. TILE_TM/TILE_TN: the FFMA thread tile.
/// STAGES: shared-memory pipeline depth. GROUP_M: block swizzle group (1 = none). SPLIT_K: k
/// range split across blockIdx.z (1 = none). SPLIT_REDUCE: 2 makes the parts meet in an f32
/// workspace even when C is f32 (1, the default: atomics into an f32 C); 3 as 2, the workspace
/// accessed in 8-byte pairs of columns. On sm90 the kernel's thread count picks the copy
/// issuer: 128 * warpgroups threads (thread 0 issues) or 128 * warpgroups + 32 (a producer warp).
/// SCHEDULE: 1 (the default) runs one block per tile; 2 makes each block loop over tiles, the
/// persistent schedule (sm90 with a producer warp; see `plan`); 3 is 2 with each stage's slot
/// handed back as soon as its own MMAs complete ([`crate::Release::OwnCompletion`]). Values
/// from 1 rather than 0/1: a two-value `@autotune` list is the range `[1, 2]`. CLUSTER: 1 (the default), or 2 to run
/// neighbouring M tiles as a thread block cluster of two that share B through multicast copies
/// (sm90; see `plan`), each block copying half; 3 is 2 with rank 0 copying all of B
/// ([`crate::BIssue::Rank0`]); 4 runs neighbouring N tiles of one M tile as the cluster, sharing A
/// ([`crate::SharedOperand::A`], the persistent schedule only); 5 is 4 with four N tiles. VEC_COPY: 1 copies the mma.sync loop's 16-bit operands aligned to 2
/// bytes (an odd K or N) by shifted 16-byte vectors (`OperandCopy::Shifted`); 0 or absent, by
/// element loads (`OperandCopy::RegisterStaged`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Knobs {
    pub tile_m: Option<u32>,
    pub tile_n: Option<u32>,
    pub tile_k: Option<u32>,
    pub warp_m: Option<u32>,
    pub warp_n: Option<u32>,
    pub tile_tm: Option<u32>,
    pub tile_tn: Option<u32>,
    pub stages: Option<u32>,
    pub group_m: Option<u32>,
    pub split_k: Option<u32>,
    pub split_reduce: Option<u32>,
    pub schedule: Option<u32>,
    pub cluster: Option<u32>,
    pub vec_copy: Option<u32>,
}

impl Knobs {
    /// Reads the recognized names from a point; other names are ignored, and values that are
    /// not positive 32-bit integers read as absent (the checker has already validated them).
    pub fn from_point(p: &Point) -> Knobs {
        let get = |k: Knob| {
            k.get(p)
                .and_then(|v| u32::try_from(v).ok())
                .filter(|&v| v > 0)
        };
        Knobs {
            tile_m: get(Knob::TileM),
            tile_n: get(Knob::TileN),
            tile_k: get(Knob::TileK),
            warp_m: get(Knob::WarpM),
            warp_n: get(Knob::WarpN),
            tile_tm: get(Knob::TileTm),
            tile_tn: get(Knob::TileTn),
            stages: get(Knob::Stages),
            group_m: get(Knob::GroupM),
            split_k: get(Knob::SplitK),
            split_reduce: get(Knob::SplitReduce),
            schedule: get(Knob::Schedule),
            cluster: get(Knob::Cluster),
            vec_copy: get(Knob::VecCopy),
        }
    }

    /// GROUP_M, 1 when absent.
    pub fn group_m(&self) -> u32 {
        self.group_m.unwrap_or(1)
    }

    /// SCHEDULE=2 or 3, the persistent schedule, was asked for.
    pub fn persistent(&self) -> bool {
        matches!(self.schedule, Some(2 | 3))
    }

    /// SCHEDULE=3: the persistent schedule's consumers hand each stage back as soon as its own
    /// MMAs complete.
    pub fn release_own(&self) -> bool {
        self.schedule == Some(3)
    }

    /// The blocks of a cluster: CLUSTER, 1 when absent, 2 for CLUSTER=3 and 4, 4 for 5.
    pub fn cluster(&self) -> u32 {
        match self.cluster {
            Some(3 | 4) => 2,
            Some(5) => 4,
            c => c.unwrap_or(1),
        }
    }

    /// Which blocks of a cluster copy B: CLUSTER=3, rank 0 all of it.
    pub fn b_issue(&self) -> crate::BIssue {
        if self.cluster == Some(3) {
            crate::BIssue::Rank0
        } else {
            crate::BIssue::Shares
        }
    }

    /// The operand a cluster's blocks share: CLUSTER=4 and 5, A; else B.
    pub fn shared(&self) -> crate::SharedOperand {
        if matches!(self.cluster, Some(4 | 5)) {
            crate::SharedOperand::A
        } else {
            crate::SharedOperand::B
        }
    }

    /// SPLIT_K, 1 when absent.
    pub fn split_k(&self) -> u32 {
        self.split_k.unwrap_or(1)
    }

    /// SPLIT_REDUCE=2 or 3: split parts meet in the f32 workspace whatever C's type.
    pub fn split_workspace(&self) -> bool {
        matches!(self.split_reduce, Some(2 | 3))
    }

    /// SPLIT_REDUCE=3: the workspace's stores and the last part's sum in 8-byte pairs.
    pub fn split_pairs(&self) -> bool {
        self.split_reduce == Some(3)
    }

    /// VEC_COPY=1: 2-byte-aligned 16-bit operands of the mma.sync loop by shifted vectors.
    pub fn shifted_copies(&self) -> bool {
        self.vec_copy == Some(1)
    }

    /// SPLIT_REDUCE=4: the parts of a tile reduce through distributed shared memory in a
    /// thread block cluster.
    pub fn split_cluster(&self) -> bool {
        self.split_reduce == Some(4)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(v: &[(&str, i64)]) -> Point {
        Point(v.iter().map(|&(n, x)| (n.to_string(), x)).collect())
    }

    #[test]
    fn reads_declared_names_only() {
        let k = Knobs::from_point(&point(&[
            ("TILE_M", 128),
            ("STAGES", 4),
            ("GROUP_M", 8),
            ("BLOCK", 64),
            ("CLUSTER", 2),
        ]));
        assert_eq!(k.tile_m, Some(128));
        assert_eq!(k.stages, Some(4));
        assert_eq!(k.group_m(), 8);
        assert_eq!(k.split_k(), 1);
        assert_eq!(k.tile_n, None);
        assert_eq!(k.cluster(), 2);
        assert_eq!(Knobs::default().cluster(), 1);
        assert_eq!(k.b_issue(), crate::BIssue::Shares);
        let k3 = Knobs::from_point(&point(&[("CLUSTER", 3)]));
        assert_eq!((k3.cluster(), k3.b_issue()), (2, crate::BIssue::Rank0));
        assert_eq!(k3.shared(), crate::SharedOperand::B);
        let k4 = Knobs::from_point(&point(&[("CLUSTER", 4)]));
        assert_eq!(
            (k4.cluster(), k4.b_issue(), k4.shared()),
            (2, crate::BIssue::Shares, crate::SharedOperand::A)
        );
        let k5 = Knobs::from_point(&point(&[("CLUSTER", 5)]));
        assert_eq!(
            (k5.cluster(), k5.b_issue(), k5.shared()),
            (4, crate::BIssue::Shares, crate::SharedOperand::A)
        );
        assert!(!k.split_workspace());
        assert!(Knobs::from_point(&point(&[("SPLIT_REDUCE", 2)])).split_workspace());
        assert!(!Knobs::from_point(&point(&[("SPLIT_REDUCE", 2)])).split_pairs());
        let k3 = Knobs::from_point(&point(&[("SPLIT_REDUCE", 3)]));
        assert!(k3.split_workspace() && k3.split_pairs() && !k3.split_cluster());
        let k4 = Knobs::from_point(&point(&[("SPLIT_REDUCE", 4)]));
        assert!(k4.split_cluster() && !k4.split_workspace() && !k4.split_pairs());
        let s2 = Knobs::from_point(&point(&[("SCHEDULE", 2)]));
        assert!(s2.persistent() && !s2.release_own());
        let s3 = Knobs::from_point(&point(&[("SCHEDULE", 3)]));
        assert!(s3.persistent() && s3.release_own());
        assert!(!Knobs::from_point(&point(&[("SCHEDULE", 1)])).persistent());
    }

    #[test]
    fn nonpositive_values_read_as_absent() {
        let k = Knobs::from_point(&point(&[("SPLIT_K", 0), ("TILE_K", -8)]));
        assert_eq!(k.split_k, None);
        assert_eq!(k.tile_k, None);
    }
}
