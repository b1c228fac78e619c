//! What a launch of generated code needs beyond the IR signature: the tensor-map parameters
//! of the wgmma + TMA main loop ([`TmaParam`], listed in [`crate::Emitted::tma`]).
//!
//! The launch ABI (phobos-gpu's README): the IR parameters, one `int` per runtime dim, then one
//! `const __grid_constant__ ph::gemm::sm90::TmaDesc` (a 128-byte `CUtensorMap`) per entry of
//! `Emitted::tma`, in that order. The host encodes each with `cuTensorMapEncodeTiled` per
//! launch, from the bound tensor's address and the runtime dims.

use crate::gemm_fast::TmaSpec;
use phobos_ir::{DType, Dim, MemOrder, ParamId, ParamKind};

/// One tensor-map parameter: which tensor, and how its map is encoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TmaParam {
    /// The C++ parameter name.
    pub name: String,
    /// The tensor parameter the map covers (a rank-2 tensor).
    pub tensor: ParamId,
    /// The tensor's element type.
    pub dtype: DType,
    /// Data type, box, swizzle, L2 promotion, fill: the constant part of the encoding.
    pub spec: TmaSpec,
    /// `globalDim`, innermost first: the tensor's extents in memory order (for a row-major
    /// `[R, C]` tensor `[C, R]`; column-major `[R, C]`).
    pub global_dim: [Dim; 2],
    /// `globalStrides[0]` in elements: the extent of the contiguous axis.
    pub line_stride: Dim,
}

impl TmaParam {
    /// The map of operand tensor `tensor` of `kernel_params` described by `spec`; `None` when
    /// the tensor is not rank 2 or its contiguous axis disagrees with the spec's k-major.
    pub fn new(
        name: String,
        tensor: ParamId,
        kind: &ParamKind,
        k_axis: usize,
        spec: TmaSpec,
    ) -> Option<TmaParam> {
        let ParamKind::Tensor { dtype, dims, order } = kind else {
            return None;
        };
        if dims.len() != 2 {
            return None;
        }
        let inner = match order {
            MemOrder::RowMajor => 1,
            MemOrder::ColMajor => 0,
        };
        if (inner == k_axis) != spec.k_major {
            return None;
        }
        Some(TmaParam {
            name,
            tensor,
            dtype: *dtype,
            spec,
            global_dim: [dims[inner], dims[1 - inner]],
            line_stride: dims[inner],
        })
    }
}
