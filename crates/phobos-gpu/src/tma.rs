//! TMA tensor maps: the launch ABI's by-value `CUtensorMap` parameters.
//!
//! A kernel whose GEMM main loop copies its operands with the Hopper copy engine takes, after
//! the runtime-dim ints, one `const __grid_constant__ ph::gemm::sm90::TmaDesc` per operand: 128
//! bytes, the driver's `CUtensorMap`, encoded per launch by `cuTensorMapEncodeTiled` from the
//! operand's device address and extents. The code generator describes each map as a
//! [`TensorMapParam`]; [`encode_args`] turns a description, the tensor's address and the
//! launch's runtime dims into the driver call's arguments (pure, validated, tested without a
//! GPU), and [`crate::Gpu::encode_tensor_map`] makes the call. The maps are one of the facts a
//! launch of generated code needs beyond its arguments ([`crate::launch_plan`]).

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// The 128 bytes of a `CUtensorMap`, as the kernel receives them (`ph::gemm::sm90::TmaDesc`
/// has the same size and alignment).
#[repr(C, align(64))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TensorMap {
    pub opaque: [u64; 16],
}

impl TensorMap {
    /// The map's bytes, little-endian.
    pub fn to_bytes(&self) -> Vec<u8> {
        self.opaque.iter().flat_map(|w| w.to_le_bytes()).collect()
    }
}

/// An extent of a tensor map: a constant, or runtime dim `Dim(id)` (`ir::Kernel::dims` order).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Extent {
    Static(u64),
    Dim(usize),
}

/// One tensor-map parameter of a kernel: everything `cuTensorMapEncodeTiled` needs except the
/// launch-time values (the tensor's address and the runtime dims). The map is rank 2: the
/// tensor's memory as `global_dim[1]` lines of `global_dim[0]` elements, consecutive lines
/// `line_stride` elements apart (for a row-major `[R, C]` tensor: `[C, R]`, stride `C`; for a
/// column-major one: `[R, C]`, stride `R`). With `outer` it is rank 3: `outer.extent` planes
/// of those lines, dense (consecutive planes `global_dim[1] * line_stride` elements apart): a
/// row-major `[B, N, D]` tensor is `[D, N]`, stride `D`, outer `B`. A box then stops at its
/// plane's last line: the lines past `global_dim[1]` read as zeros, never the next plane's.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TensorMapParam {
    /// The tensor parameter (index into `ir::Kernel::params`) whose memory the map covers.
    pub tensor: usize,
    /// `CUtensorMapDataType` (0 `UINT8`, 6 `FLOAT16`, 7 `FLOAT32`, 9 `BFLOAT16`, ...).
    pub data_type: u32,
    /// Bytes per element of the tensor.
    pub elem_bytes: u32,
    /// `globalDim`, innermost (contiguous) first.
    pub global_dim: [Extent; 2],
    /// `globalStrides[0]` in elements.
    pub line_stride: Extent,
    /// `boxDim`, innermost first: the elements one copy brings into shared memory.
    pub box_dim: [u32; 2],
    /// `elementStrides`.
    pub element_strides: [u32; 2],
    /// `CUtensorMapInterleave`, `CUtensorMapSwizzle`, `CUtensorMapL2promotion`,
    /// `CUtensorMapFloatOOBfill` as their numeric values.
    pub interleave: u32,
    pub swizzle: u32,
    pub l2_promotion: u32,
    pub oob_fill: u32,
    /// The third (outermost) dimension of a rank-3 map; `None`: rank 2.
    #[serde(default)]
    pub outer: Option<OuterDim>,
}

/// The outermost dimension of a rank-3 tensor map ([`TensorMapParam::outer`]): how many planes,
/// and how many of them one box spans (`elementStrides[2]` is 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct OuterDim {
    pub extent: Extent,
    pub box_dim: u32,
}

/// The arguments of one `cuTensorMapEncodeTiled` call. Rank 2 uses the arrays below; rank 3
/// adds `outer` (its `globalDim[2]`, `globalStrides[1]` in bytes, `boxDim[2]`,
/// `elementStrides[2]`): [`TensorMapArgs::arrays`] gives the driver's arrays of either rank.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorMapArgs {
    pub data_type: u32,
    pub rank: u32,
    pub global_address: u64,
    pub global_dim: [u64; 2],
    pub global_strides: [u64; 1],
    pub box_dim: [u32; 2],
    pub element_strides: [u32; 2],
    pub interleave: u32,
    pub swizzle: u32,
    pub l2_promotion: u32,
    pub oob_fill: u32,
    pub outer: Option<OuterArgs>,
}

/// The third dimension of a rank-3 map's encode arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OuterArgs {
    pub global_dim: u64,
    /// Bytes between consecutive planes.
    pub stride: u64,
    pub box_dim: u32,
    pub element_stride: u32,
}

/// The driver's arrays of one encode call, `rank` entries each (`rank - 1` strides).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MapArrays {
    pub global_dim: Vec<u64>,
    pub global_strides: Vec<u64>,
    pub box_dim: Vec<u32>,
    pub element_strides: Vec<u32>,
}

impl TensorMapArgs {
    /// `globalDim`, `globalStrides`, `boxDim` and `elementStrides` as the driver takes them.
    pub fn arrays(&self) -> MapArrays {
        let mut m = MapArrays {
            global_dim: self.global_dim.to_vec(),
            global_strides: self.global_strides.to_vec(),
            box_dim: self.box_dim.to_vec(),
            element_strides: self.element_strides.to_vec(),
        };
        if let Some(o) = self.outer {
            m.global_dim.push(o.global_dim);
            m.global_strides.push(o.stride);
            m.box_dim.push(o.box_dim);
            m.element_strides.push(o.element_stride);
        }
        m
    }
}

/// Why a tensor map cannot describe a launch's tensor (the driver would refuse it, or the
/// description does not match the bound tensor).
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum TmaError {
    #[error("tensor map of parameter #{tensor}: the parameter is not a bound tensor")]
    NotATensor { tensor: usize },
    #[error("tensor map of `{param}`: base address {address:#x} is not 16-byte aligned")]
    Misaligned { param: String, address: u64 },
    #[error(
        "tensor map of `{param}`: lines {bytes} bytes apart; the copy engine needs a multiple \
         of 16 below 2^40 (specialize the variant on the problem's alignment)"
    )]
    Stride { param: String, bytes: u64 },
    #[error("tensor map of `{param}`: extent {extent} is out of range (1 ..= 2^32)")]
    Extent { param: String, extent: i64 },
    #[error("tensor map of `{param}`: runtime dim #{dim} is not bound")]
    UnboundDim { param: String, dim: usize },
    #[error(
        "tensor map of `{param}`: the map covers {map:?} elements (innermost first) but the \
         tensor holds {tensor:?}"
    )]
    Mismatch {
        param: String,
        map: Vec<u64>,
        tensor: Vec<usize>,
    },
    #[error("tensor map of `{param}`: {what}")]
    Invalid { param: String, what: String },
    /// A launch that no map is at fault for: its grid or its split-K workspace (`part`).
    #[error("{part}: {what}")]
    Launch { part: &'static str, what: String },
}

/// Resolves an extent against the runtime dims; `None` for an unbound dim.
fn resolve(e: Extent, dims: &[i64]) -> Option<i64> {
    match e {
        Extent::Static(n) => Some(n as i64),
        Extent::Dim(id) => dims.get(id).copied(),
    }
}

/// The `cuTensorMapEncodeTiled` arguments of `p` for a tensor at `address` (its parameter is
/// called `param` in messages) with the launch's runtime dims (`ir::Kernel::dims` order).
/// Checks everything the driver checks for the maps this crate passes, so that a refusal is a
/// [`TmaError`] that says why.
pub fn encode_args(
    p: &TensorMapParam,
    param: &str,
    address: u64,
    dims: &[i64],
) -> Result<TensorMapArgs, TmaError> {
    let param = param.to_string();
    // Only a runtime dim can be unbound: a constant always resolves.
    let get = |e: Extent| {
        resolve(e, dims).ok_or_else(|| TmaError::UnboundDim {
            param: param.clone(),
            dim: match e {
                Extent::Dim(d) => d,
                Extent::Static(_) => 0,
            },
        })
    };
    let invalid = |what: String| TmaError::Invalid {
        param: param.clone(),
        what,
    };
    if !address.is_multiple_of(16) {
        return Err(TmaError::Misaligned { param, address });
    }
    let mut global_dim = [0u64; 2];
    for (g, e) in global_dim.iter_mut().zip(p.global_dim) {
        let v = get(e)?;
        if !(1..=1i64 << 32).contains(&v) {
            return Err(TmaError::Extent { param, extent: v });
        }
        *g = v as u64;
    }
    let line = get(p.line_stride)?;
    let bytes = (line.max(0) as u64).saturating_mul(p.elem_bytes as u64);
    if line < global_dim[0] as i64 || !bytes.is_multiple_of(16) || bytes >= 1 << 40 {
        return Err(TmaError::Stride { param, bytes });
    }
    if !matches!(p.elem_bytes, 1 | 2 | 4 | 8) || p.data_type > 12 {
        return Err(invalid(format!(
            "data type {} of {}-byte elements",
            p.data_type, p.elem_bytes
        )));
    }
    if p.box_dim.iter().any(|&b| !(1..=256).contains(&b)) {
        return Err(invalid(format!("box {:?} (1 ..= 256 per dim)", p.box_dim)));
    }
    let inner_bytes = p.box_dim[0] * p.elem_bytes;
    // Without interleave the box's inner extent is whole 16-byte pieces, and a swizzled box
    // is at most one swizzle span wide (32, 64 or 128 bytes).
    let span = match p.swizzle {
        0 => u32::MAX,
        1 => 32,
        2 => 64,
        3 => 128,
        s => return Err(invalid(format!("swizzle mode {s}"))),
    };
    if p.interleave != 0 || !inner_bytes.is_multiple_of(16) || inner_bytes > span {
        return Err(invalid(format!(
            "box rows of {inner_bytes} bytes with interleave {} and swizzle {}",
            p.interleave, p.swizzle
        )));
    }
    if p.element_strides.iter().any(|&s| !(1..=8).contains(&s)) {
        return Err(invalid(format!(
            "element strides {:?} (1 ..= 8)",
            p.element_strides
        )));
    }
    if p.l2_promotion > 3 || p.oob_fill > 1 {
        return Err(invalid(format!(
            "L2 promotion {} / fill {}",
            p.l2_promotion, p.oob_fill
        )));
    }
    let outer = match p.outer {
        None => None,
        Some(o) => {
            let planes = get(o.extent)?;
            if !(1..=1i64 << 32).contains(&planes) {
                return Err(TmaError::Extent {
                    param,
                    extent: planes,
                });
            }
            // Dense planes: `global_dim[1]` lines of `line` elements each.
            let stride = bytes.saturating_mul(global_dim[1]);
            if stride >= 1 << 40 {
                return Err(TmaError::Stride {
                    param,
                    bytes: stride,
                });
            }
            if !(1..=256).contains(&o.box_dim) {
                return Err(invalid(format!(
                    "box {:?} x {} (1 ..= 256 per dim)",
                    p.box_dim, o.box_dim
                )));
            }
            Some(OuterArgs {
                global_dim: planes as u64,
                stride,
                box_dim: o.box_dim,
                element_stride: 1,
            })
        }
    };
    Ok(TensorMapArgs {
        data_type: p.data_type,
        rank: if outer.is_some() { 3 } else { 2 },
        global_address: address,
        global_dim,
        global_strides: [bytes],
        box_dim: p.box_dim,
        element_strides: p.element_strides,
        interleave: p.interleave,
        swizzle: p.swizzle,
        l2_promotion: p.l2_promotion,
        oob_fill: p.oob_fill,
        outer,
    })
}

#[path = "tma_driver.rs"]
mod driver;

#[cfg(test)]
#[path = "tma_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "tma_rank3_tests.rs"]
mod rank3_tests;
