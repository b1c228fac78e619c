//! Operators on register values with the IR's semantics, as C++ expressions. Shared by scalar
//! code and the per-register loops of tile code.

use crate::ctype::{is_narrow_float, register, rounder};
use phobos_ir::{BinOp, DType, MathFn, MathFnN, UnOp};

/// A C++ expression and its precedence level (C's table: 0 binds tightest).
#[derive(Clone, Debug)]
pub struct Code {
    pub s: String,
    pub prec: u8,
}

pub const ATOM: u8 = 0;
pub const UNARY: u8 = 3;
const MUL: u8 = 5;
const ADD: u8 = 6;
const SHIFT: u8 = 7;
const REL: u8 = 9;
const EQ: u8 = 10;
const BAND: u8 = 11;
const BXOR: u8 = 12;
const BOR: u8 = 13;
const LAND: u8 = 14;
const LOR: u8 = 15;
pub const COND: u8 = 16;

impl Code {
    pub fn atom(s: impl Into<String>) -> Code {
        Code {
            s: s.into(),
            prec: ATOM,
        }
    }

    pub fn new(s: impl Into<String>, prec: u8) -> Code {
        Code { s: s.into(), prec }
    }

    /// The text as an operand of a context allowing precedence up to `max`.
    pub fn at(&self, max: u8) -> String {
        if self.prec > max {
            format!("({})", self.s)
        } else {
            self.s.clone()
        }
    }

    /// The text as a full expression (function argument, initializer).
    pub fn full(&self) -> &str {
        &self.s
    }
}

fn call(f: &str, args: &[&Code]) -> Code {
    let a: Vec<&str> = args.iter().map(|c| c.full()).collect();
    Code::atom(format!("{f}({})", a.join(", ")))
}

fn infix(op: &str, prec: u8, a: &Code, b: &Code) -> Code {
    Code::new(format!("{} {op} {}", a.at(prec), b.at(prec - 1)), prec)
}

/// `(T)(x)`: a C cast to the register type of `t`.
fn c_cast(t: DType, a: &Code) -> Code {
    Code::new(format!("({})({})", register(t), a.full()), UNARY)
}

fn round(t: DType, a: Code) -> Code {
    match rounder(t) {
        Some(r) => call(r, &[&a]),
        None => a,
    }
}

pub fn unary(op: UnOp, t: DType, a: &Code) -> Code {
    match (op, t) {
        (UnOp::Not, DType::Bool) => Code::new(format!("!{}", a.at(UNARY)), UNARY),
        (UnOp::Not, DType::I8 | DType::U8) => {
            c_cast(t, &Code::new(format!("~{}", a.at(UNARY)), UNARY))
        }
        (UnOp::Not, _) => Code::new(format!("~{}", a.at(UNARY)), UNARY),
        (UnOp::Neg, DType::I32 | DType::I64) => call("ph::neg", &[a]),
        (UnOp::Neg, DType::U32) => Code::new(format!("0u - {}", a.at(ADD - 1)), ADD),
        (UnOp::Neg, DType::I8 | DType::U8) => {
            c_cast(t, &Code::new(format!("-{}", a.at(UNARY)), UNARY))
        }
        // Negation is exact in every float type.
        (UnOp::Neg, _) => Code::new(format!("-{}", a.at(UNARY)), UNARY),
    }
}

/// `a op b` where both operands have type `t`; `b_lit` is b's value when it is an integer
/// literal (division and shifts by known amounts stay plain C).
pub fn binary(op: BinOp, t: DType, a: &Code, b: &Code, b_lit: Option<i64>) -> Code {
    use BinOp::*;
    let cmp = |s: &str, p: u8| infix(s, p, a, b);
    match op {
        Eq => return cmp("==", EQ),
        Ne => return cmp("!=", EQ),
        Lt => return cmp("<", REL),
        Le => return cmp("<=", REL),
        Gt => return cmp(">", REL),
        Ge => return cmp(">=", REL),
        Min => return call("ph::min", &[a, b]),
        Max => return call("ph::max", &[a, b]),
        _ => {}
    }
    let width = match t {
        DType::I8 | DType::U8 => 8,
        DType::I64 => 64,
        _ => 32,
    };
    let lit_pos = b_lit.is_some_and(|v| v > 0);
    let lit_shift = b_lit.is_some_and(|v| (0..width).contains(&v));
    match t {
        DType::Bool => match op {
            And => cmp("&&", LAND),
            Or => cmp("||", LOR),
            BitAnd => cmp("&", BAND),
            BitOr => cmp("|", BOR),
            _ => cmp("!=", EQ),
        },
        DType::F32 | DType::Tf32 | DType::F64 => float_arith(op, t, a, b),
        t if is_narrow_float(t) => match op {
            Rem => float_arith(op, t, a, b),
            _ => round(t, float_arith(op, t, a, b)),
        },
        DType::I32 | DType::I64 => match op {
            Add => call("ph::add", &[a, b]),
            Sub => call("ph::sub", &[a, b]),
            Mul => call("ph::mul", &[a, b]),
            Div if lit_pos => cmp("/", MUL),
            Rem if lit_pos => cmp("%", MUL),
            Div => call("ph::div", &[a, b]),
            Rem => call("ph::rem", &[a, b]),
            Shl if lit_shift => cmp("<<", SHIFT),
            Shr if lit_shift => cmp(">>", SHIFT),
            Shl => call("ph::shl", &[a, b]),
            Shr => call("ph::shr", &[a, b]),
            _ => bitwise(op, a, b),
        },
        DType::U32 => match op {
            Add => cmp("+", ADD),
            Sub => cmp("-", ADD),
            Mul => cmp("*", MUL),
            Div if lit_pos => cmp("/", MUL),
            Rem if lit_pos => cmp("%", MUL),
            Div => call("ph::div", &[a, b]),
            Rem => call("ph::rem", &[a, b]),
            Shl if lit_shift => cmp("<<", SHIFT),
            Shr if lit_shift => cmp(">>", SHIFT),
            Shl => call("ph::shl", &[a, b]),
            Shr => call("ph::shr", &[a, b]),
            _ => bitwise(op, a, b),
        },
        // i8/u8: computed in int (no overflow possible), wrapped back by the cast.
        _ => match op {
            Add => c_cast(t, &cmp("+", ADD)),
            Sub => c_cast(t, &cmp("-", ADD)),
            Mul => c_cast(t, &cmp("*", MUL)),
            Div => call(&format!("ph::div<{}>", register(t)), &[a, b]),
            Rem => call(&format!("ph::rem<{}>", register(t)), &[a, b]),
            Shl => call(&format!("ph::shl<{}>", register(t)), &[a, b]),
            Shr => call(&format!("ph::shr<{}>", register(t)), &[a, b]),
            _ => c_cast(t, &bitwise(op, a, b)),
        },
    }
}

fn bitwise(op: BinOp, a: &Code, b: &Code) -> Code {
    match op {
        BinOp::BitAnd | BinOp::And => infix("&", BAND, a, b),
        BinOp::BitOr | BinOp::Or => infix("|", BOR, a, b),
        _ => infix("^", BXOR, a, b),
    }
}

fn float_arith(op: BinOp, t: DType, a: &Code, b: &Code) -> Code {
    let f64 = t == DType::F64;
    match op {
        BinOp::Add => infix("+", ADD, a, b),
        BinOp::Sub => infix("-", ADD, a, b),
        BinOp::Mul => infix("*", MUL, a, b),
        BinOp::Div => infix("/", MUL, a, b),
        BinOp::Rem => call(if f64 { "fmod" } else { "fmodf" }, &[a, b]),
        // Bitwise and logical operators never reach floats (the checker's types).
        _ => infix("+", ADD, a, b),
    }
}

/// Elementwise math; None for a function the type does not have.
pub fn math(f: MathFn, t: DType, a: &Code) -> Option<Code> {
    if t.is_int() {
        return match (f, t) {
            (MathFn::Abs, DType::I32 | DType::I64) => Some(call("ph::abs", &[a])),
            (MathFn::Abs, DType::I8) => {
                Some(c_cast(t, &call("ph::abs", &[&c_cast(DType::I32, a)])))
            }
            (MathFn::Abs, DType::U32 | DType::U8) => Some(a.clone()),
            _ => None,
        };
    }
    if !t.is_float() {
        return None;
    }
    let f64 = t == DType::F64;
    // exp and exp2 of f32 (and of the narrow floats, computed in f32) take the hardware path:
    // one MUFU.EX2 (`ex2.approx.ftz.f32`), exp after a multiply by log2(e) (docs/language.md
    // gives the error bound).
    if !f64 && matches!(f, MathFn::Exp | MathFn::Exp2) {
        let name = if f == MathFn::Exp {
            "ph::exp_approx"
        } else {
            "ph::exp2_approx"
        };
        return Some(round(t, call(name, &[a])));
    }
    let name = match f {
        MathFn::Exp => "exp",
        MathFn::Exp2 => "exp2",
        MathFn::Log => "log",
        MathFn::Sqrt => "sqrt",
        MathFn::Rsqrt => "rsqrt",
        MathFn::Abs => "fabs",
        MathFn::Tanh => "tanh",
        MathFn::Log2 => "log2",
        MathFn::Log1p => "log1p",
        MathFn::Expm1 => "expm1",
        MathFn::Sin => "sin",
        MathFn::Cos => "cos",
        MathFn::Erf => "erf",
        MathFn::Floor => "floor",
        MathFn::Ceil => "ceil",
        MathFn::Round => "rint",
        MathFn::Sigmoid => "ph::sigmoid",
    };
    let name = if f64 || f == MathFn::Sigmoid {
        name.to_string()
    } else {
        format!("{name}f")
    };
    let c = call(&name, &[a]);
    // |x| and the roundings to integers are exact; everything else rounds to the narrow type.
    let exact = matches!(
        f,
        MathFn::Abs | MathFn::Floor | MathFn::Ceil | MathFn::Round
    );
    Some(if exact { c } else { round(t, c) })
}

/// `pow`/`fma` on float operands of type `t` (f16/bf16/fp8 in f32, rounded once after);
/// `rand`/`randn` (f32) from the prelude's Philox.
pub fn math_n(f: MathFnN, t: DType, args: &[Code]) -> Code {
    let refs: Vec<&Code> = args.iter().collect();
    let name = match f {
        MathFnN::Pow => "pow",
        MathFnN::Fma => "fma",
        MathFnN::Rand => return call("ph::rand", &refs),
        MathFnN::Randn => return call("ph::randn", &refs),
    };
    let name = if t == DType::F64 {
        name.to_string()
    } else {
        format!("{name}f")
    };
    round(t, call(&name, &refs))
}

/// Conversion of a register value of type `from` to type `to` (the IR's Cast).
pub fn cast(from: DType, to: DType, a: &Code) -> Code {
    let (from_a, to_a) = (from.arith(), to.arith());
    if from_a == to_a {
        return a.clone();
    }
    if to == DType::Bool {
        return Code::new(format!("{} != 0", a.at(EQ - 1)), EQ);
    }
    if from == DType::Bool {
        return if to.is_float() {
            round(
                to,
                Code::new(format!("{} ? 1.0f : 0.0f", a.at(COND - 1)), COND),
            )
        } else {
            c_cast(to, a)
        };
    }
    match to {
        DType::F32 | DType::Tf32 if is_narrow_float(from) => a.clone(),
        DType::F32 | DType::Tf32 | DType::F64 => c_cast(to, a),
        t if is_narrow_float(t) => match (from, t) {
            (DType::F64, DType::F16) => {
                Code::atom(format!("ph::f16_to_f32(ph::f64_to_f16({}))", a.full()))
            }
            (DType::F64, DType::BF16) => {
                Code::atom(format!("ph::bf16_to_f32(ph::f64_to_bf16({}))", a.full()))
            }
            (f, _) if f.is_float() && f != DType::F64 => round(t, a.clone()),
            _ => round(t, c_cast(DType::F32, a)),
        },
        _ if from.is_float() => {
            let f = match to {
                DType::I32 => "ph::f2i",
                DType::U32 => "ph::f2u",
                DType::I64 => "ph::f2ll",
                DType::I8 => "ph::f2i8",
                _ => "ph::f2u8",
            };
            call(f, &[a])
        }
        // Integer to integer wraps to the target's width.
        _ => c_cast(to, a),
    }
}

pub fn select(c: &Code, a: &Code, b: &Code) -> Code {
    Code::new(
        format!("{} ? {} : {}", c.at(COND - 1), a.at(COND - 1), b.at(COND)),
        COND,
    )
}

pub fn cdiv(a: &Code, b: &Code) -> Code {
    call("ph::cdiv", &[a, b])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Code {
        Code::atom(s)
    }

    #[test]
    fn precedence_adds_only_needed_parentheses() {
        let sum = binary(BinOp::Add, DType::F32, &v("a"), &v("b"), None);
        let prod = binary(BinOp::Mul, DType::F32, &sum, &v("c"), None);
        assert_eq!(prod.s, "(a + b) * c");
        let diff = binary(BinOp::Sub, DType::F32, &v("a"), &sum, None);
        assert_eq!(diff.s, "a - (a + b)");
        let diff2 = binary(BinOp::Sub, DType::F32, &sum, &v("c"), None);
        assert_eq!(diff2.s, "a + b - c");
    }

    #[test]
    fn integer_semantics_use_wrapping_helpers() {
        assert_eq!(
            binary(BinOp::Add, DType::I32, &v("a"), &v("b"), None).s,
            "ph::add(a, b)"
        );
        assert_eq!(
            binary(BinOp::Div, DType::I32, &v("a"), &v("4"), Some(4)).s,
            "a / 4"
        );
        assert_eq!(
            binary(BinOp::Div, DType::I32, &v("a"), &v("b"), None).s,
            "ph::div(a, b)"
        );
        assert_eq!(
            binary(BinOp::Add, DType::U32, &v("a"), &v("b"), None).s,
            "a + b"
        );
        assert_eq!(
            binary(BinOp::Add, DType::I8, &v("a"), &v("b"), None).s,
            "(signed char)(a + b)"
        );
        assert_eq!(
            binary(BinOp::Shl, DType::I32, &v("a"), &v("3"), Some(3)).s,
            "a << 3"
        );
        assert_eq!(
            binary(BinOp::Shl, DType::I32, &v("a"), &v("40"), Some(40)).s,
            "ph::shl(a, 40)"
        );
    }

    #[test]
    fn narrow_floats_round_after_each_operation() {
        assert_eq!(
            binary(BinOp::Add, DType::F16, &v("a"), &v("b"), None).s,
            "ph::rn_f16(a + b)"
        );
        assert_eq!(
            math(MathFn::Exp, DType::BF16, &v("x")).unwrap().s,
            "ph::rn_bf16(ph::exp_approx(x))"
        );
        assert_eq!(
            math(MathFn::Exp2, DType::F32, &v("x")).unwrap().s,
            "ph::exp2_approx(x)"
        );
        assert_eq!(math(MathFn::Exp, DType::F64, &v("x")).unwrap().s, "exp(x)");
        assert_eq!(
            math(MathFn::Abs, DType::F16, &v("x")).unwrap().s,
            "fabsf(x)"
        );
    }

    #[test]
    fn casts_saturate_and_round() {
        assert_eq!(cast(DType::F32, DType::I32, &v("x")).s, "ph::f2i(x)");
        assert_eq!(cast(DType::F32, DType::F16, &v("x")).s, "ph::rn_f16(x)");
        assert_eq!(cast(DType::F16, DType::F32, &v("x")).s, "x");
        assert_eq!(cast(DType::I32, DType::F32, &v("x")).s, "(float)(x)");
        assert_eq!(cast(DType::I32, DType::I8, &v("x")).s, "(signed char)(x)");
        assert_eq!(cast(DType::F32, DType::Bool, &v("x")).s, "x != 0");
        assert_eq!(cast(DType::F32, DType::Tf32, &v("x")).s, "x");
    }
}
