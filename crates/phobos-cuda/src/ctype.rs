//! Element types in C++: storage types (what memory and kernel parameters hold), register types
//! (what the generated code computes in) and literals.

use phobos_ir::{DType, Lit};

/// The C++ type of an element in memory and of a scalar kernel parameter.
///
/// f16/bf16/fp8 are the prelude's 2- and 1-byte structs, with the size and alignment of
/// `__half`, `__nv_bfloat16` and `__nv_fp8_*` (the launch ABI is the same).
pub fn storage(t: DType) -> &'static str {
    match t {
        DType::F16 => "ph::f16",
        DType::BF16 => "ph::bf16",
        DType::F8E4M3 => "ph::f8e4m3",
        DType::F8E5M2 => "ph::f8e5m2",
        t => register(t),
    }
}

/// The C++ type values of `t` are computed in. f16/bf16/fp8 values live in `float` registers,
/// always rounded to their type.
pub fn register(t: DType) -> &'static str {
    match t {
        DType::Bool => "bool",
        DType::I8 => "signed char",
        DType::U8 => "unsigned char",
        DType::I32 => "int",
        DType::U32 => "unsigned",
        DType::I64 => "long long",
        DType::F16 | DType::BF16 | DType::F8E4M3 | DType::F8E5M2 => "float",
        DType::F32 | DType::Tf32 => "float",
        DType::F64 => "double",
    }
}

/// `sizeof` of the register type: what a tile element takes in the scratch area.
pub fn register_bytes(t: DType) -> u32 {
    match t {
        DType::Bool | DType::I8 | DType::U8 => 1,
        DType::I64 | DType::F64 => 8,
        _ => 4,
    }
}

/// True for the types kept in a wider register and rounded after each operation.
pub fn is_narrow_float(t: DType) -> bool {
    matches!(t, DType::F16 | DType::BF16 | DType::F8E4M3 | DType::F8E5M2)
}

/// The prelude function rounding a float register to a narrow float type.
pub fn rounder(t: DType) -> Option<&'static str> {
    match t {
        DType::F16 => Some("ph::rn_f16"),
        DType::BF16 => Some("ph::rn_bf16"),
        DType::F8E4M3 => Some("ph::rn_e4m3"),
        DType::F8E5M2 => Some("ph::rn_e5m2"),
        _ => None,
    }
}

/// A literal of type `t` as a C++ expression, and whether it needs parentheses as an operand
/// (negative numbers).
pub fn literal(lit: Lit, t: DType) -> (String, bool) {
    let x = match lit {
        Lit::Int(i) => i as f64,
        Lit::Float(f) => f,
        Lit::Bool(b) => b as u8 as f64,
    };
    // Integers keep their exact value (an i64 literal may not fit an f64).
    if let Lit::Int(i) = lit {
        if t.is_int() {
            return int_literal(i, t);
        }
    }
    let x = t.round(x);
    match t {
        DType::Bool => ((if x != 0.0 { "true" } else { "false" }).into(), false),
        t if t.is_int() => int_literal(x as i64, t),
        DType::F64 => float_literal(x, "", "ph::inf_f64()"),
        _ => float_literal(x, "f", "ph::inf_f32()"),
    }
}

fn int_literal(i: i64, t: DType) -> (String, bool) {
    let s = match t {
        DType::I32 | DType::I8 | DType::U8 => {
            let v = match t {
                DType::I8 => i as i8 as i64,
                DType::U8 => i as u8 as i64,
                _ => i as i32 as i64,
            };
            if v == i32::MIN as i64 {
                "(-2147483647 - 1)".to_string()
            } else {
                v.to_string()
            }
        }
        DType::U32 => format!("{}u", i as u32),
        DType::I64 => {
            if i == i64::MIN {
                "(-9223372036854775807ll - 1)".to_string()
            } else {
                format!("{i}ll")
            }
        }
        _ => i.to_string(),
    };
    let neg = s.starts_with('-');
    (s, neg)
}

fn float_literal(x: f64, suffix: &str, inf: &str) -> (String, bool) {
    if x.is_nan() {
        let s = if suffix.is_empty() {
            "__longlong_as_double(0x7ff8000000000000ll)"
        } else {
            "__int_as_float(0x7fc00000)"
        };
        return (s.into(), false);
    }
    if x.is_infinite() {
        return if x > 0.0 {
            (inf.into(), false)
        } else {
            (format!("-{inf}"), true)
        };
    }
    let mut s = if suffix.is_empty() {
        format!("{x:?}")
    } else {
        format!("{:?}", x as f32)
    };
    if !s.contains(['.', 'e', 'E']) {
        s.push_str(".0");
    }
    s.push_str(suffix);
    let neg = s.starts_with('-');
    (s, neg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_by_type() {
        assert_eq!(literal(Lit::Float(0.0), DType::F32).0, "0.0f");
        assert_eq!(literal(Lit::Int(3), DType::F32).0, "3.0f");
        assert_eq!(literal(Lit::Float(0.1), DType::F64).0, "0.1");
        assert_eq!(literal(Lit::Int(-5), DType::I32), ("-5".into(), true));
        assert_eq!(
            literal(Lit::Int(i32::MIN as i64), DType::I32).0,
            "(-2147483647 - 1)"
        );
        assert_eq!(literal(Lit::Int(7), DType::U32).0, "7u");
        assert_eq!(literal(Lit::Int(7), DType::I64).0, "7ll");
        assert_eq!(
            literal(Lit::Float(f64::INFINITY), DType::F32).0,
            "ph::inf_f32()"
        );
        assert_eq!(
            literal(Lit::Float(f64::NEG_INFINITY), DType::F32),
            ("-ph::inf_f32()".into(), true)
        );
        // A narrow float literal is rounded to its type first.
        let (s, _) = literal(Lit::Float(1.0 + 1.0 / 4096.0), DType::F16);
        assert_eq!(s, "1.0f");
        assert_eq!(literal(Lit::Bool(true), DType::Bool).0, "true");
    }

    #[test]
    fn narrow_floats_compute_in_float() {
        for t in [DType::F16, DType::BF16, DType::F8E4M3, DType::F8E5M2] {
            assert_eq!(register(t), "float");
            assert!(rounder(t).is_some());
        }
        assert_eq!(storage(DType::F16), "ph::f16");
        assert_eq!(register_bytes(DType::F64), 8);
    }
}
