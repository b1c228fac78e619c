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
    /// The tensor parameter the map covers (rank 2, or rank 3 with `outer`).
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
    /// A rank-3 map's outermost extent (planes of `global_dim[1]` lines, dense; boxes one
    /// plane deep): the heads of a row-major `[BH, N, D]` tensor. `None`: rank 2.
    pub outer: Option<Dim>,
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
            outer: None,
        })
    }

    /// The rank-3 map of a row-major `[BH, N, D]` tensor (attention's K or V) read a head's
    /// tile at a time: `globalDim` `[D, N, BH]`, boxes `spec.box_dim` by one head, so that the
    /// rows of a ragged last tile past N are zeros, not the next head's. `None` when the tensor
    /// is not a row-major rank-3 tensor of the spec's element type.
    pub fn heads(
        name: String,
        tensor: ParamId,
        kind: &ParamKind,
        spec: TmaSpec,
    ) -> Option<TmaParam> {
        let ParamKind::Tensor { dtype, dims, order } = kind else {
            return None;
        };
        if dims.len() != 3
            || *order != MemOrder::RowMajor
            || dtype.size_bytes() as u32 != spec.elem_bytes
        {
            return None;
        }
        Some(TmaParam {
            name,
            tensor,
            dtype: *dtype,
            spec,
            global_dim: [dims[2], dims[1]],
            line_stride: dims[2],
            outer: Some(dims[0]),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gemm_fast::TmaOperand;

    fn kind(dims: Vec<Dim>, order: MemOrder) -> ParamKind {
        ParamKind::Tensor {
            dtype: DType::BF16,
            dims,
            order,
        }
    }

    #[test]
    fn heads_map_is_rank_3_innermost_first() {
        let spec = TmaSpec::new(TmaOperand::B, DType::BF16, true, 64).unwrap();
        let k = kind(
            vec![Dim::Dyn(0), Dim::Dyn(1), Dim::Static(128)],
            MemOrder::RowMajor,
        );
        let t = TmaParam::heads("ph_tma0".into(), 1, &k, spec.clone()).unwrap();
        assert_eq!(t.global_dim, [Dim::Static(128), Dim::Dyn(1)]);
        assert_eq!(
            (t.line_stride, t.outer),
            (Dim::Static(128), Some(Dim::Dyn(0)))
        );
        assert_eq!((t.tensor, t.spec.box_dim), (1, [64, 64]));
        // Not a row-major rank-3 tensor: no map.
        let cm = kind(
            vec![Dim::Dyn(0), Dim::Dyn(1), Dim::Dyn(2)],
            MemOrder::ColMajor,
        );
        assert!(TmaParam::heads("m".into(), 1, &cm, spec.clone()).is_none());
        let r2 = kind(vec![Dim::Dyn(1), Dim::Dyn(2)], MemOrder::RowMajor);
        assert!(TmaParam::heads("m".into(), 1, &r2, spec.clone()).is_none());
        // The GEMM's maps stay rank 2.
        let a = TmaParam::new("a".into(), 0, &r2, 1, spec).unwrap();
        assert_eq!(a.outer, None);
    }
}
