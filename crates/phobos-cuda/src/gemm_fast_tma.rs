//! The host side of the Hopper main loop's operands: what the runtime must encode with
//! `cuTensorMapEncodeTiled` for each operand and pass by value as a `__grid_constant__`
//! kernel parameter (`ph::gemm::sm90::TmaDesc`, the same 128 bytes as `CUtensorMap`).

use phobos_ir::DType;
use std::fmt;

/// Which operand a tensor map describes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TmaOperand {
    /// A, `[M, K]` logically.
    A,
    /// B, `[K, N]` logically.
    B,
    /// C, `[M, N]` row-major: the epilogue's TMA stores (`gemm/store_tma.cuh`).
    C,
}

/// `CUtensorMapDataType` values the maps use (numeric values of the CUDA 12/13 enum).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TmaDataType {
    /// `CU_TENSOR_MAP_DATA_TYPE_UINT8` (0): fp8 bytes, copied unchanged.
    Uint8 = 0,
    /// `CU_TENSOR_MAP_DATA_TYPE_FLOAT16` (6).
    Float16 = 6,
    /// `CU_TENSOR_MAP_DATA_TYPE_FLOAT32` (7): tf32 operands are f32 in memory; the MMA reads
    /// their tf32 bits.
    Float32 = 7,
    /// `CU_TENSOR_MAP_DATA_TYPE_BFLOAT16` (9).
    Bfloat16 = 9,
}

/// The swizzle every map of the main loop uses: `CU_TENSOR_MAP_SWIZZLE_128B` (3).
pub const TMA_SWIZZLE_128B: u32 = 3;
/// `CU_TENSOR_MAP_INTERLEAVE_NONE` (0).
pub const TMA_INTERLEAVE_NONE: u32 = 0;
/// `CU_TENSOR_MAP_L2_PROMOTION_L2_256B` (3): the maps of attention's streamed tiles and of C's
/// stores.
pub const TMA_L2_PROMOTION_256B: u32 = 3;
/// `CU_TENSOR_MAP_L2_PROMOTION_L2_128B` (2): the GEMM main loop's A and B. On rows that do not
/// start on a 128-byte line (K = 1000 f16 and N = 2000 f16 at 3000x2000x1000) every box row
/// straddles two lines, and a 256-byte promotion made the tiles' copies alone 15–19 % slower
/// than a 128-byte one (bench/NOTES.md v27c); on aligned rows the two are equal.
pub const TMA_L2_PROMOTION_128B: u32 = 2;
/// `CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE` (0): out-of-bounds elements read as zeros, which is
/// how the ragged M/N/K edges of every tile become zeros.
pub const TMA_OOB_FILL_ZERO: u32 = 0;

/// Everything the runtime needs to encode one operand's tensor map, except the launch-time
/// values (base address, extents, leading dimension), which phobos-gpu's `encode_args`
/// combines with it (and checks as the driver would).
///
/// The map is rank 2. Its innermost dimension (`globalDim[0]`) is the operand's contiguous
/// axis: K for a K-major operand (A row-major `[M, K]`; B `[N, K]` as `dot_t` reads it, or a
/// column-major `[K, N]`), M or N otherwise (a column-major A, a row-major `[K, N]` B).
/// `globalStrides[0]` is the leading dimension in bytes and must be a multiple of 16; the base
/// address must be 16-byte aligned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TmaSpec {
    pub operand: TmaOperand,
    pub data_type: TmaDataType,
    /// Bytes per element.
    pub elem_bytes: u32,
    /// True when k is the contiguous (innermost) axis.
    pub k_major: bool,
    /// `boxDim`: {128 / elem_bytes, rows}, innermost first: one 128-byte swizzle line wide.
    pub box_dim: [u32; 2],
    /// `elementStrides`: always {1, 1}.
    pub element_strides: [u32; 2],
    pub interleave: u32,
    pub swizzle: u32,
    pub l2_promotion: u32,
    pub oob_fill: u32,
}

impl TmaDataType {
    /// The map type of a main-loop operand type (`None`: no TMA path for it).
    pub fn of(dtype: DType) -> Option<TmaDataType> {
        match dtype {
            DType::F16 => Some(TmaDataType::Float16),
            DType::BF16 => Some(TmaDataType::Bfloat16),
            DType::F32 | DType::Tf32 => Some(TmaDataType::Float32),
            DType::F8E4M3 | DType::F8E5M2 => Some(TmaDataType::Uint8),
            _ => None,
        }
    }
}

impl TmaSpec {
    /// The spec of an operand whose box is 128 bytes wide and `rows` long.
    pub fn new(operand: TmaOperand, dtype: DType, k_major: bool, rows: u32) -> Option<TmaSpec> {
        let data_type = TmaDataType::of(dtype)?;
        let elem_bytes = dtype.size_bytes() as u32;
        Some(TmaSpec {
            operand,
            data_type,
            elem_bytes,
            k_major,
            box_dim: [128 / elem_bytes, rows],
            element_strides: [1, 1],
            interleave: TMA_INTERLEAVE_NONE,
            swizzle: TMA_SWIZZLE_128B,
            l2_promotion: TMA_L2_PROMOTION_256B,
            oob_fill: TMA_OOB_FILL_ZERO,
        })
    }

    /// The spec with another L2 promotion (`CUtensorMapL2promotion`).
    pub fn with_l2_promotion(self, l2_promotion: u32) -> TmaSpec {
        TmaSpec {
            l2_promotion,
            ..self
        }
    }

    /// The map of a row-major C that `ph::gemm::sm90::store_tile_tma` stores through: boxes one
    /// 128-byte swizzle line wide and 64 rows (one m64 wgmma tile) long. `k_major` here means
    /// that the box's lines run along C's contiguous axis (N).
    pub fn store_c(dtype: DType) -> Option<TmaSpec> {
        TmaSpec::new(TmaOperand::C, dtype, true, 64)
    }

    /// Bytes one box brings into shared memory.
    pub fn box_bytes(&self) -> u32 {
        self.box_dim[0] * self.box_dim[1] * self.elem_bytes
    }
}

impl fmt::Display for TmaSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:?}: {:?}, inner={}, box={}x{}, swizzle 128B, oob zero",
            self.operand,
            self.data_type,
            match (self.operand, self.k_major) {
                (TmaOperand::C, _) => "N",
                (_, true) => "K",
                (_, false) => "MN",
            },
            self.box_dim[0],
            self.box_dim[1]
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f16_k_major_a_box_is_one_swizzle_line() {
        let s = TmaSpec::new(TmaOperand::A, DType::F16, true, 128).unwrap();
        assert_eq!(s.box_dim, [64, 128]);
        assert_eq!(s.box_bytes(), 16384);
        assert_eq!(s.data_type as u32, 6);
        assert_eq!((s.swizzle, s.oob_fill, s.interleave), (3, 0, 0));
    }

    #[test]
    fn only_the_main_loop_operands_promote_128_bytes() {
        let c = TmaSpec::store_c(DType::F16).unwrap();
        assert_eq!(c.l2_promotion, TMA_L2_PROMOTION_256B);
        let a = TmaSpec::new(TmaOperand::A, DType::F16, true, 128).unwrap();
        let promoted = a.clone().with_l2_promotion(TMA_L2_PROMOTION_128B);
        assert_eq!((a.l2_promotion, promoted.l2_promotion), (3, 2));
        assert_eq!(promoted.box_dim, a.box_dim);
    }

    #[test]
    fn mn_major_b_box() {
        let s = TmaSpec::new(TmaOperand::B, DType::BF16, false, 64).unwrap();
        assert!(!s.k_major);
        assert_eq!(s.box_dim, [64, 64]);
        assert_eq!(s.data_type as u32, 9);
    }

    #[test]
    fn fp8_and_tf32_types() {
        let s = TmaSpec::new(TmaOperand::A, DType::F8E4M3, true, 128).unwrap();
        assert_eq!((s.data_type as u32, s.box_dim), (0, [128, 128]));
        let s = TmaSpec::new(TmaOperand::B, DType::Tf32, true, 256).unwrap();
        assert_eq!((s.data_type as u32, s.box_dim), (7, [32, 256]));
        assert!(TmaSpec::new(TmaOperand::A, DType::I8, true, 64).is_none());
    }

    #[test]
    fn c_store_boxes_are_one_line_by_64_rows() {
        let s = TmaSpec::store_c(DType::F16).unwrap();
        assert_eq!(
            (s.operand, s.box_dim, s.swizzle),
            (TmaOperand::C, [64, 64], 3)
        );
        assert_eq!(TmaSpec::store_c(DType::F32).unwrap().box_dim, [32, 64]);
        assert_eq!(TmaSpec::store_c(DType::BF16).unwrap().box_bytes(), 8192);
        assert!(TmaSpec::store_c(DType::I32).is_none());
    }
}
