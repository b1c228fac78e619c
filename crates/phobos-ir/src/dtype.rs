//! Element types and their value conversions.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A scalar element type.
///
/// `Tf32` is stored and computed as `f32`; it exists so that a host can bind a type parameter to
/// `tf32`, which lets the `dot`s reading that parameter's tensors run in TF32 (10-bit mantissa
/// inputs, f32 accumulation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DType {
    Bool,
    I8,
    U8,
    I32,
    U32,
    I64,
    F16,
    BF16,
    F32,
    Tf32,
    F64,
    F8E4M3,
    F8E5M2,
}

impl DType {
    pub const ALL: [DType; 13] = [
        DType::Bool,
        DType::I8,
        DType::U8,
        DType::I32,
        DType::U32,
        DType::I64,
        DType::F16,
        DType::BF16,
        DType::F32,
        DType::Tf32,
        DType::F64,
        DType::F8E4M3,
        DType::F8E5M2,
    ];

    /// The spelling in Phobos source.
    pub fn name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::I8 => "i8",
            DType::U8 => "u8",
            DType::I32 => "i32",
            DType::U32 => "u32",
            DType::I64 => "i64",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::F32 => "f32",
            DType::Tf32 => "tf32",
            DType::F64 => "f64",
            DType::F8E4M3 => "f8e4m3",
            DType::F8E5M2 => "f8e5m2",
        }
    }

    /// Parses a Phobos type name, or a tuner alias (`fp32 fp16 fp8 bf8 int8 ...`).
    pub fn parse(s: &str) -> Option<DType> {
        Some(match s {
            "bool" => DType::Bool,
            "i8" | "int8" => DType::I8,
            "u8" | "uint8" => DType::U8,
            "i32" | "int32" => DType::I32,
            "u32" | "uint32" => DType::U32,
            "i64" | "int64" => DType::I64,
            "f16" | "fp16" | "half" => DType::F16,
            "bf16" => DType::BF16,
            "f32" | "fp32" | "float" => DType::F32,
            "tf32" => DType::Tf32,
            "f64" | "fp64" | "double" => DType::F64,
            "f8e4m3" | "fp8" | "e4m3" | "fp8e4m3" => DType::F8E4M3,
            "f8e5m2" | "bf8" | "e5m2" | "fp8e5m2" => DType::F8E5M2,
            _ => return None,
        })
    }

    /// Bytes one element occupies in memory.
    pub fn size_bytes(self) -> usize {
        match self {
            DType::Bool | DType::I8 | DType::U8 | DType::F8E4M3 | DType::F8E5M2 => 1,
            DType::F16 | DType::BF16 => 2,
            DType::I32 | DType::U32 | DType::F32 | DType::Tf32 => 4,
            DType::I64 | DType::F64 => 8,
        }
    }

    pub fn is_float(self) -> bool {
        matches!(
            self,
            DType::F16
                | DType::BF16
                | DType::F32
                | DType::Tf32
                | DType::F64
                | DType::F8E4M3
                | DType::F8E5M2
        )
    }

    pub fn is_int(self) -> bool {
        matches!(
            self,
            DType::I8 | DType::U8 | DType::I32 | DType::U32 | DType::I64
        )
    }

    pub fn is_signed_int(self) -> bool {
        matches!(self, DType::I8 | DType::I32 | DType::I64)
    }

    /// The type a `dot` of two operands of this type accumulates and returns in.
    pub fn dot_acc(self) -> Option<DType> {
        match self {
            DType::F16 | DType::BF16 | DType::F8E4M3 | DType::F8E5M2 | DType::F32 | DType::Tf32 => {
                Some(DType::F32)
            }
            DType::F64 => Some(DType::F64),
            DType::I8 | DType::U8 => Some(DType::I32),
            _ => None,
        }
    }

    /// The type arithmetic on this type is computed in: `tf32` computes as `f32`.
    pub fn arith(self) -> DType {
        match self {
            DType::Tf32 => DType::F32,
            t => t,
        }
    }

    /// Rounds an f64 to the nearest value of this type (round to nearest even for floats,
    /// saturating truncation toward zero for integers, NaN to 0, non-zero to true for bool).
    /// This is the one place where the value semantics of every type are defined.
    pub fn round(self, x: f64) -> f64 {
        match self {
            DType::Bool => (x != 0.0) as u8 as f64,
            DType::I8 => (x as i8) as f64,
            DType::U8 => (x as u8) as f64,
            DType::I32 => (x as i32) as f64,
            DType::U32 => (x as u32) as f64,
            DType::I64 => (x as i64) as f64,
            DType::F16 => half::f16::from_f64(x).to_f64(),
            DType::BF16 => half::bf16::from_f64(x).to_f64(),
            DType::F32 | DType::Tf32 => x as f32 as f64,
            DType::F64 => x,
            DType::F8E4M3 => float8::F8E4M3::from_f64(x).to_f64(),
            DType::F8E5M2 => float8::F8E5M2::from_f64(x).to_f64(),
        }
    }

    /// Relative tolerance for comparing a result of this type against a float64 reference
    /// by `|out - ref| / |ref|` (norm-wise).
    pub fn tolerance(self) -> f64 {
        match self {
            DType::F64 => 1e-9,
            DType::F32 => 1e-4,
            DType::Tf32 => 5e-3,
            DType::F16 => 5e-3,
            DType::BF16 => 2e-2,
            DType::F8E4M3 | DType::F8E5M2 => 1.5e-1,
            DType::Bool | DType::I8 | DType::U8 | DType::I32 | DType::U32 | DType::I64 => 0.0,
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for t in DType::ALL {
            assert_eq!(DType::parse(t.name()), Some(t));
        }
    }

    #[test]
    fn rounding_matches_each_type() {
        assert_eq!(DType::F16.round(1.0 + 1.0 / 4096.0), 1.0);
        assert_eq!(DType::BF16.round(1.0 + 1.0 / 512.0), 1.0);
        assert_eq!(DType::I8.round(300.0), 127.0);
        assert_eq!(DType::I32.round(-2.7), -2.0);
        assert_eq!(DType::F8E4M3.round(1.0 + 1.0 / 32.0), 1.0);
        assert_eq!(DType::F32.round(0.1), 0.1f32 as f64);
    }
}
