//! The GPU the generated code targets: its name, compute capability and the features that the
//! code generator chooses strategies by (tensor-core instructions, tensor maps, clusters) and
//! its limits.

use std::fmt;

/// A code-generation target: an NVIDIA compute capability and whether the code is
/// architecture-specific (`sm_90a`: wgmma and TMA). Strategy choices ask for a feature
/// ([`Target::mma_sync`], [`Target::wgmma`], ...) instead of comparing numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Target {
    /// Compute capability times ten (`90` for sm_90a, `80` for sm_80).
    cc: u32,
    /// The `a` suffix: architecture-specific features (wgmma, TMA) may be used.
    specific: bool,
}

impl Default for Target {
    /// sm_90a, the target when none is given.
    fn default() -> Target {
        Target::sm90a()
    }
}

impl Target {
    /// Hopper, architecture-specific: wgmma, TMA and clusters.
    pub const fn sm90a() -> Target {
        Target {
            cc: 90,
            specific: true,
        }
    }

    /// Ampere: mma.sync and cp.async, no wgmma or TMA.
    pub const fn sm80() -> Target {
        Target {
            cc: 80,
            specific: false,
        }
    }

    /// The target of a compute capability times ten (`75`, `80`, `86`, `89`, `90`): `90` is
    /// sm_90a, as [`crate::emit_for_arch`]'s numbers have always meant.
    pub const fn from_cc(cc: u32) -> Target {
        Target {
            cc,
            specific: cc == 90,
        }
    }

    /// Compute capability times ten (`90` for sm_90a).
    pub const fn cc(&self) -> u32 {
        self.cc
    }

    /// The architecture name NVRTC and ptxas take: `sm_90a`, `sm_80`, ...
    pub fn name(&self) -> String {
        format!("sm_{}{}", self.cc, if self.specific { "a" } else { "" })
    }

    /// Warp-level tensor-core `mma.sync` (sm_80 and later).
    pub const fn mma_sync(&self) -> bool {
        self.cc >= 80
    }

    /// Warpgroup tensor-core `wgmma.mma_async` (sm_90a only).
    pub const fn wgmma(&self) -> bool {
        self.cc == 90 && self.specific
    }

    /// Tensor-memory-accelerator bulk copies through tensor maps (sm_90a only).
    pub const fn tma(&self) -> bool {
        self.cc == 90 && self.specific
    }

    /// Thread-block clusters and distributed shared memory (sm_90 and later).
    pub const fn clusters(&self) -> bool {
        self.cc >= 90
    }

    /// Threads per warp.
    pub const fn warp_size(&self) -> u32 {
        32
    }

    /// Largest dynamic shared memory a block may opt into, in bytes (227 KiB on sm_90,
    /// 163 KiB on sm_80, 99 KiB on sm_86 and sm_89, 64 KiB on sm_75).
    pub const fn max_smem_per_block(&self) -> u32 {
        match self.cc {
            90.. => 232_448,
            86 | 87 | 89 => 101_376,
            80.. => 166_912,
            _ => 65_536,
        }
    }

    /// Registers one thread may use.
    pub const fn max_regs_per_thread(&self) -> u32 {
        255
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sm_{}{}", self.cc, if self.specific { "a" } else { "" })
    }
}

#[cfg(test)]
mod tests {
    use super::Target;

    #[test]
    fn features_per_architecture() {
        let t = Target::sm90a();
        assert_eq!((t.name(), t.cc()), ("sm_90a".to_string(), 90));
        assert!(t.mma_sync() && t.wgmma() && t.tma() && t.clusters());
        assert_eq!(t.max_smem_per_block(), 232_448);
        assert_eq!(Target::default(), t);
        assert_eq!(Target::from_cc(90), t);

        let a = Target::sm80();
        assert_eq!((a.name(), a.cc()), ("sm_80".to_string(), 80));
        assert!(a.mma_sync() && !a.wgmma() && !a.tma() && !a.clusters());
        assert_eq!(a.max_smem_per_block(), 166_912);
        assert_eq!(Target::from_cc(80), a);

        for cc in [86, 89] {
            let t = Target::from_cc(cc);
            assert_eq!(t.name(), format!("sm_{cc}"));
            assert!(t.mma_sync() && !t.wgmma() && !t.tma() && !t.clusters());
            assert_eq!(t.max_smem_per_block(), 101_376);
        }

        let t = Target::from_cc(75);
        assert_eq!(t.to_string(), "sm_75");
        assert!(!t.mma_sync() && !t.wgmma() && !t.tma() && !t.clusters());
        assert_eq!(t.max_smem_per_block(), 65_536);
        for t in [Target::sm90a(), Target::sm80(), Target::from_cc(75)] {
            assert_eq!((t.warp_size(), t.max_regs_per_thread()), (32, 255));
        }
    }
}
