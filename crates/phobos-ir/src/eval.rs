//! Evaluation of uniform scalar IR expressions: the one definition of what a grid, `@where`,
//! `@flops` and `@bytes` expression (and a constant the checker folds) is worth.
//!
//! The checker folds constants with it, the interpreter and the GPU runtime size the grid with it,
//! and the tuner evaluates `@where`, `@flops` and `@bytes` for a problem with it, so all of them
//! agree by construction.
//!
//! Only expressions over literals, runtime dims and scalar parameters evaluate; a local, a `ctx`
//! value, a tensor load or any tile gives [`EvalError::NotUniformScalar`].
//!
//! Arithmetic follows the IR's rules: integers wrap at their width, integer `/` and `%` truncate
//! toward zero, `>>` is arithmetic on signed types; floats are computed in f64 and rounded to their
//! type after every operation. Division by zero and shifts by a negative amount or by the width or
//! more are errors (C leaves them undefined). Integer-to-integer casts wrap (two's complement).

use crate::dtype::DType;
use crate::ir::{
    BinOp, Ctx, DimId, Expr, ExprKind, Kernel, Lit, MathFn, MathFnN, ParamId, ParamKind, UnOp,
};

/// A scalar value. Integers hold the value already wrapped to their type (a `u32` is never
/// negative); floats hold the value already rounded to their type.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    Bool(bool),
    Int(i64),
    Float(f64),
}

impl Value {
    /// The value as an integer (floats truncate toward zero, saturating; bools are 0 or 1).
    pub fn as_i64(self) -> i64 {
        match self {
            Value::Bool(b) => b as i64,
            Value::Int(i) => i,
            Value::Float(f) => f as i64,
        }
    }

    /// The value as an f64.
    pub fn as_f64(self) -> f64 {
        match self {
            Value::Bool(b) => b as u8 as f64,
            Value::Int(i) => i as f64,
            Value::Float(f) => f,
        }
    }

    /// The value as a bool (non-zero is true).
    pub fn as_bool(self) -> bool {
        match self {
            Value::Bool(b) => b,
            Value::Int(i) => i != 0,
            Value::Float(f) => f != 0.0,
        }
    }

    /// Converts to `to` with the IR's cast semantics.
    pub fn cast(self, to: DType) -> Value {
        match (self, to) {
            (v, DType::Bool) => Value::Bool(v.as_bool()),
            (Value::Int(i), t) if t.is_int() => Value::Int(wrap(t, i)),
            (Value::Bool(b), t) if t.is_int() => Value::Int(b as i64),
            (Value::Float(f), t) if t.is_int() => Value::Int(to.round(f) as i64),
            (v, t) => Value::Float(t.round(v.as_f64())),
        }
    }
}

/// Why an expression could not be evaluated.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum EvalError {
    #[error("the runtime dim `{0}` has no value")]
    UnboundDim(String),
    #[error("the scalar parameter `{0}` has no value")]
    UnboundParam(String),
    #[error("{0} is not a uniform scalar known before the launch")]
    NotUniformScalar(&'static str),
    #[error("division by zero")]
    DivByZero,
    #[error("shift by {0} is out of range for {1}")]
    ShiftOutOfRange(i64, DType),
}

/// What an expression may read besides literals: runtime dims and scalar parameters.
pub trait Env {
    /// The value of runtime dim `id`, if known.
    fn dim(&self, id: DimId) -> Result<i64, EvalError>;
    /// The value of scalar parameter `id`, if known.
    fn param(&self, id: ParamId) -> Result<Value, EvalError>;
}

/// An environment that knows nothing: only constant expressions evaluate.
pub struct Constants;

impl Env for Constants {
    fn dim(&self, id: DimId) -> Result<i64, EvalError> {
        Err(EvalError::UnboundDim(format!("#{id}")))
    }
    fn param(&self, id: ParamId) -> Result<Value, EvalError> {
        Err(EvalError::UnboundParam(format!("#{id}")))
    }
}

/// Values of a kernel's runtime dims and scalar parameters, looked up by name.
#[derive(Clone, Debug, Default)]
pub struct Bindings {
    dim_names: Vec<String>,
    param_names: Vec<String>,
    dims: Vec<Option<i64>>,
    params: Vec<Option<Value>>,
}

impl Bindings {
    /// Binds the kernel's runtime dims and scalar parameters by name; names the kernel does not
    /// have are ignored (a problem may list more dims than one kernel uses). A scalar parameter's
    /// value is converted to its type.
    pub fn new(kernel: &Kernel, dims: &[(String, i64)], scalars: &[(String, Value)]) -> Bindings {
        let lookup_dim = |n: &str| dims.iter().find(|(d, _)| d == n).map(|&(_, v)| v);
        let lookup_param = |n: &str| scalars.iter().find(|(d, _)| d == n).map(|&(_, v)| v);
        Bindings {
            dim_names: kernel.dims.iter().map(|d| d.name.clone()).collect(),
            param_names: kernel.params.iter().map(|p| p.name.clone()).collect(),
            dims: kernel.dims.iter().map(|d| lookup_dim(&d.name)).collect(),
            params: kernel
                .params
                .iter()
                .map(|p| match p.kind {
                    ParamKind::Scalar { dtype } => lookup_param(&p.name).map(|v| v.cast(dtype)),
                    ParamKind::Tensor { .. } => None,
                })
                .collect(),
        }
    }
}

impl Env for Bindings {
    fn dim(&self, id: DimId) -> Result<i64, EvalError> {
        self.dims.get(id).copied().flatten().ok_or_else(|| {
            EvalError::UnboundDim(self.dim_names.get(id).cloned().unwrap_or_default())
        })
    }
    fn param(&self, id: ParamId) -> Result<Value, EvalError> {
        self.params.get(id).copied().flatten().ok_or_else(|| {
            EvalError::UnboundParam(self.param_names.get(id).cloned().unwrap_or_default())
        })
    }
}

/// Wraps an integer to the width of an integer type.
pub fn wrap(t: DType, v: i64) -> i64 {
    match t {
        DType::I8 => v as i8 as i64,
        DType::U8 => v as u8 as i64,
        DType::I32 => v as i32 as i64,
        DType::U32 => v as u32 as i64,
        DType::Bool => (v != 0) as i64,
        _ => v,
    }
}

/// A literal as a value of type `t`.
pub fn lit_value(lit: Lit, t: DType) -> Value {
    match lit {
        Lit::Int(i) => Value::Int(i).cast(t),
        Lit::Float(f) => Value::Float(f).cast(t),
        Lit::Bool(b) => Value::Bool(b).cast(t),
    }
}

/// Evaluates a uniform scalar expression.
pub fn eval(expr: &Expr, env: &dyn Env) -> Result<Value, EvalError> {
    let t = expr.ty.dtype();
    if expr.ty.is_tile() {
        return Err(EvalError::NotUniformScalar("a tile"));
    }
    Ok(match &expr.kind {
        ExprKind::Lit(l) => lit_value(*l, t),
        ExprKind::Dim(id) => Value::Int(env.dim(*id)?).cast(t),
        ExprKind::Param(id) => env.param(*id)?.cast(t),
        ExprKind::Local(_) => return Err(EvalError::NotUniformScalar("a local variable")),
        ExprKind::Ctx(c) => {
            return Err(EvalError::NotUniformScalar(match c {
                Ctx::Block(_) => "`ctx.block`",
                Ctx::Grid(_) => "`ctx.grid`",
                _ => "a `ctx` value",
            }))
        }
        ExprKind::Unary(op, a) => unary(*op, eval(a, env)?, t),
        ExprKind::Binary(op, a, b) => {
            let operand = a.ty.dtype();
            binary(*op, eval(a, env)?, eval(b, env)?, operand)?
        }
        ExprKind::Math(f, a) => math(*f, eval(a, env)?, t),
        ExprKind::MathN(f, args) => {
            let vs = args
                .iter()
                .map(|a| eval(a, env))
                .collect::<Result<Vec<_>, _>>()?;
            math_n(*f, &vs, t)
        }
        ExprKind::Select(c, a, b) => {
            if eval(c, env)?.as_bool() {
                eval(a, env)?.cast(t)
            } else {
                eval(b, env)?.cast(t)
            }
        }
        ExprKind::Cast(a) => eval(a, env)?.cast(t),
        ExprKind::Cdiv(a, b) => {
            let (x, y) = (eval(a, env)?.as_i64(), eval(b, env)?.as_i64());
            Value::Int(wrap(t, cdiv(x, y)?))
        }
        ExprKind::Broadcast(a) => eval(a, env)?.cast(t),
        ExprKind::Load { .. } => return Err(EvalError::NotUniformScalar("a tensor load")),
        ExprKind::TileGet { .. }
        | ExprKind::Reduce { .. }
        | ExprKind::Dot { .. }
        | ExprKind::Transpose(_)
        | ExprKind::Reshape(_)
        | ExprKind::Arange(_) => return Err(EvalError::NotUniformScalar("a tile")),
    })
}

/// Evaluates an integer (or float, truncated) expression to i64.
pub fn eval_i64(expr: &Expr, env: &dyn Env) -> Result<i64, EvalError> {
    eval(expr, env).map(Value::as_i64)
}

/// Evaluates a bool expression.
pub fn eval_bool(expr: &Expr, env: &dyn Env) -> Result<bool, EvalError> {
    eval(expr, env).map(Value::as_bool)
}

/// `ceil(a / b)`, exact for every sign of `b` other than zero.
pub fn cdiv(a: i64, b: i64) -> Result<i64, EvalError> {
    if b == 0 {
        return Err(EvalError::DivByZero);
    }
    let q = a.wrapping_div(b);
    let r = a.wrapping_rem(b);
    Ok(if r != 0 && ((r < 0) == (b < 0)) {
        q.wrapping_add(1)
    } else {
        q
    })
}

/// Applies a unary operator to a value of type `t`.
pub fn unary(op: UnOp, v: Value, t: DType) -> Value {
    match (op, v) {
        (UnOp::Neg, Value::Int(i)) => Value::Int(wrap(t, i.wrapping_neg())),
        (UnOp::Neg, Value::Float(f)) => Value::Float(t.round(-f)),
        (UnOp::Neg, Value::Bool(b)) => Value::Bool(b),
        (UnOp::Not, Value::Bool(b)) => Value::Bool(!b),
        (UnOp::Not, Value::Int(i)) => Value::Int(wrap(t, !i)),
        (UnOp::Not, Value::Float(f)) => Value::Bool(f == 0.0),
    }
}

/// Applies an elementwise math function to a value of type `t`.
pub fn math(f: MathFn, v: Value, t: DType) -> Value {
    if let (MathFn::Abs, Value::Int(i)) = (f, v) {
        return Value::Int(wrap(t, i.wrapping_abs()));
    }
    // Narrow floats are computed in f32, like the device does.
    let x = v.as_f64();
    let y = match f {
        MathFn::Exp => x.exp(),
        MathFn::Exp2 => x.exp2(),
        MathFn::Log => x.ln(),
        MathFn::Sqrt => x.sqrt(),
        MathFn::Rsqrt => 1.0 / x.sqrt(),
        MathFn::Abs => x.abs(),
        MathFn::Tanh => x.tanh(),
        MathFn::Log2 => x.log2(),
        MathFn::Log1p => x.ln_1p(),
        MathFn::Expm1 => x.exp_m1(),
        MathFn::Sin => x.sin(),
        MathFn::Cos => x.cos(),
        MathFn::Erf => erf(x),
        MathFn::Floor => x.floor(),
        MathFn::Ceil => x.ceil(),
        MathFn::Round => x.round_ties_even(),
        MathFn::Sigmoid => 1.0 / (1.0 + (-x).exp()),
    };
    Value::Float(t.round(narrow_first(t, y)))
}

/// Applies a function of several operands with result type `t`.
pub fn math_n(f: MathFnN, vs: &[Value], t: DType) -> Value {
    let x = |i: usize| vs.get(i).map_or(f64::NAN, |v| v.as_f64());
    let int = |i: usize| vs.get(i).map_or(0, |v| v.as_i64());
    let y = match f {
        MathFnN::Pow => x(0).powf(x(1)),
        // f64's fused multiply-add; for f32 and narrower the f64 result then rounds to the type
        // (a second rounding that can differ from fmaf in the last bit).
        MathFnN::Fma => x(0).mul_add(x(1), x(2)),
        MathFnN::Rand => uint_to_uniform(philox(int(0) as u64, int(1) as u32)[0]) as f64,
        MathFnN::Randn => {
            let c = philox(int(0) as u64, int(1) as u32);
            let (u1, u2) = (uint_to_uniform(c[0]), uint_to_uniform(c[1]));
            let u1 = u1.max(1.0e-7);
            let th = std::f32::consts::TAU * u2;
            let r = (-2.0f32 * u1.ln()).sqrt();
            (r * th.cos()) as f64
        }
    };
    Value::Float(t.round(narrow_first(t, y)))
}

/// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3") on the counter
/// (offset, 0, 0, 0) with the key (seed's low and high words), as Triton's `tl.randint4x`.
pub fn philox(seed: u64, offset: u32) -> [u32; 4] {
    philox4x32_10([offset, 0, 0, 0], [seed as u32, (seed >> 32) as u32])
}

/// Philox4x32 with 10 rounds on a counter and a key (Random123's `philox4x32`).
pub fn philox4x32_10(counter: [u32; 4], key: [u32; 2]) -> [u32; 4] {
    const ROUND_A: u32 = 0xD251_1F53;
    const ROUND_B: u32 = 0xCD9E_8D57;
    const KEY_A: u32 = 0x9E37_79B9;
    const KEY_B: u32 = 0xBB67_AE85;
    let mulhi = |a: u32, b: u32| ((a as u64 * b as u64) >> 32) as u32;
    let [mut c0, mut c1, mut c2, mut c3] = counter;
    let [mut k0, mut k1] = key;
    for _ in 0..10 {
        let (p0, p2) = (c0, c2);
        c0 = mulhi(ROUND_B, p2) ^ c1 ^ k0;
        c2 = mulhi(ROUND_A, p0) ^ c3 ^ k1;
        c1 = ROUND_B.wrapping_mul(p2);
        c3 = ROUND_A.wrapping_mul(p0);
        k0 = k0.wrapping_add(KEY_A);
        k1 = k1.wrapping_add(KEY_B);
    }
    [c0, c1, c2, c3]
}

/// Triton's `uint_to_uniform_float`: the word as an i32, folded to non-negative (`-x - 1` for
/// negatives), converted to f32 and scaled by 2^-31. Values within 64 of 2^31 round to 1.0.
pub fn uint_to_uniform(x: u32) -> f32 {
    let x = x as i32;
    let x = if x < 0 {
        x.wrapping_neg().wrapping_sub(1)
    } else {
        x
    };
    // 2^-31, exactly (Triton writes it 4.6566127342e-10, which rounds to it in f32).
    x as f32 * (1.0 / 2_147_483_648.0)
}

/// The error function, to a few ulp of f64: erf(x) = 2/sqrt(pi) exp(-x^2) sum_n (2x^2)^n x /
/// (1 * 3 * .. * (2n + 1)), a series of positive terms (no cancellation) that converges for
/// every x; past |x| = 6 erf is 1 to f64 precision.
pub fn erf(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    let a = x.abs();
    if a >= 6.0 {
        return x.signum();
    }
    let x2 = a * a;
    let (mut term, mut sum, mut n) = (a, a, 0.0);
    while term > sum * 1e-17 {
        n += 1.0;
        term *= 2.0 * x2 / (2.0 * n + 1.0);
        sum += term;
    }
    let r = 2.0 / std::f64::consts::PI.sqrt() * (-x2).exp() * sum;
    r.min(1.0).copysign(x)
}

/// Types narrower than f32 compute in f32 before rounding to themselves.
fn narrow_first(t: DType, x: f64) -> f64 {
    if t.is_float() && t.size_bytes() < 4 {
        x as f32 as f64
    } else {
        x
    }
}

/// Applies a binary operator to operands of type `t` (comparisons give bools).
pub fn binary(op: BinOp, a: Value, b: Value, t: DType) -> Result<Value, EvalError> {
    use BinOp::*;
    Ok(match (a, b) {
        (Value::Bool(x), Value::Bool(y)) => Value::Bool(match op {
            And | BitAnd | Min => x & y,
            Or | BitOr | Max => x | y,
            BitXor | Ne => x ^ y,
            Eq => x == y,
            Lt => !x & y,
            Le => x <= y,
            Gt => x & !y,
            Ge => x >= y,
            Add | Sub | Mul | Div | Rem | Shl | Shr => {
                return binary(op, Value::Int(x as i64), Value::Int(y as i64), DType::I32)
            }
        }),
        (Value::Float(_), _) | (_, Value::Float(_)) => {
            let (x, y) = (a.as_f64(), b.as_f64());
            let r = |v: f64| Value::Float(t.round(narrow_first(t, v)));
            match op {
                Add => r(x + y),
                Sub => r(x - y),
                Mul => r(x * y),
                Div => r(x / y),
                Rem => r(x % y),
                Min => r(x.min(y)),
                Max => r(x.max(y)),
                Eq => Value::Bool(x == y),
                Ne => Value::Bool(x != y),
                Lt => Value::Bool(x < y),
                Le => Value::Bool(x <= y),
                Gt => Value::Bool(x > y),
                Ge => Value::Bool(x >= y),
                And | BitAnd => Value::Bool(x != 0.0 && y != 0.0),
                Or | BitOr => Value::Bool(x != 0.0 || y != 0.0),
                BitXor | Shl | Shr => {
                    return binary(op, Value::Int(x as i64), Value::Int(y as i64), DType::I64)
                }
            }
        }
        _ => {
            let (x, y) = (a.as_i64(), b.as_i64());
            let w = |v: i64| Value::Int(wrap(t, v));
            match op {
                Add => w(x.wrapping_add(y)),
                Sub => w(x.wrapping_sub(y)),
                Mul => w(x.wrapping_mul(y)),
                Div if y == 0 => return Err(EvalError::DivByZero),
                Rem if y == 0 => return Err(EvalError::DivByZero),
                Div => w(x.wrapping_div(y)),
                Rem => w(x.wrapping_rem(y)),
                Min => w(x.min(y)),
                Max => w(x.max(y)),
                BitAnd => w(x & y),
                BitOr => w(x | y),
                BitXor => w(x ^ y),
                Shl | Shr => {
                    let bits = (t.size_bytes() * 8) as i64;
                    if !(0..bits).contains(&y) {
                        return Err(EvalError::ShiftOutOfRange(y, t));
                    }
                    if op == Shl {
                        w(x.wrapping_shl(y as u32))
                    } else {
                        w(x >> y)
                    }
                }
                And => Value::Bool(x != 0 && y != 0),
                Or => Value::Bool(x != 0 || y != 0),
                Eq => Value::Bool(x == y),
                Ne => Value::Bool(x != y),
                Lt => Value::Bool(x < y),
                Le => Value::Bool(x <= y),
                Gt => Value::Bool(x > y),
                Ge => Value::Bool(x >= y),
            }
        }
    })
}

/// Renders a uniform scalar expression in Phobos syntax, naming dims and parameters
/// (for messages such as "violates @where(K % 64 == 0)").
pub fn display(expr: &Expr, kernel: &Kernel) -> String {
    let mut out = String::new();
    write_expr(&mut out, expr, kernel, 0);
    out
}

fn prec(op: BinOp) -> u8 {
    use BinOp::*;
    match op {
        Or => 1,
        And => 2,
        Eq | Ne | Lt | Le | Gt | Ge => 3,
        BitOr => 4,
        BitXor => 5,
        BitAnd => 6,
        Shl | Shr => 7,
        Add | Sub => 8,
        Mul | Div | Rem => 9,
        Min | Max => 10,
    }
}

fn write_expr(out: &mut String, e: &Expr, k: &Kernel, outer: u8) {
    match &e.kind {
        ExprKind::Lit(Lit::Int(i)) => out.push_str(&i.to_string()),
        ExprKind::Lit(Lit::Float(f)) => out.push_str(&format!("{f:?}")),
        ExprKind::Lit(Lit::Bool(b)) => out.push_str(&b.to_string()),
        ExprKind::Dim(id) => out.push_str(k.dims.get(*id).map_or("?", |d| d.name.as_str())),
        ExprKind::Param(id) => out.push_str(k.params.get(*id).map_or("?", |p| p.name.as_str())),
        ExprKind::Local(id) => out.push_str(k.locals.get(*id).map_or("?", |l| l.name.as_str())),
        ExprKind::Ctx(c) => out.push_str(&match c {
            Ctx::Block(a) => format!("ctx.block.{}", axis(*a)),
            Ctx::Grid(a) => format!("ctx.grid.{}", axis(*a)),
            Ctx::Thread => "ctx.thread".into(),
            Ctx::Threads => "ctx.threads".into(),
            Ctx::Warp => "ctx.warp".into(),
            Ctx::Lane => "ctx.lane".into(),
        }),
        ExprKind::Unary(op, a) => {
            out.push_str(match op {
                UnOp::Neg => "-",
                UnOp::Not => "!",
            });
            write_expr(out, a, k, 11);
        }
        ExprKind::Binary(op @ (BinOp::Min | BinOp::Max), a, b) => {
            call(out, op.symbol(), &[a, b], k)
        }
        ExprKind::Binary(op, a, b) => {
            let p = prec(*op);
            if p < outer {
                out.push('(');
            }
            write_expr(out, a, k, p);
            out.push_str(&format!(" {} ", op.symbol()));
            write_expr(out, b, k, p + 1);
            if p < outer {
                out.push(')');
            }
        }
        ExprKind::Math(f, a) => call(out, &format!("{f:?}").to_lowercase(), &[a], k),
        ExprKind::MathN(f, args) => {
            let args: Vec<&Expr> = args.iter().collect();
            call(out, &format!("{f:?}").to_lowercase(), &args, k)
        }
        ExprKind::Select(c, a, b) => call(out, "where", &[c, a, b], k),
        // Widening a dim to i64 (as `@where` and `@flops` do) changes no value: show the dim.
        ExprKind::Cast(a) if matches!(a.kind, ExprKind::Dim(_)) && e.ty.dtype().is_int() => {
            write_expr(out, a, k, outer)
        }
        ExprKind::Cast(a) => call(out, e.ty.dtype().name(), &[a], k),
        ExprKind::Cdiv(a, b) => call(out, "cdiv", &[a, b], k),
        ExprKind::Broadcast(a) => write_expr(out, a, k, outer),
        _ => out.push_str("<tile>"),
    }
}

fn call(out: &mut String, name: &str, args: &[&Expr], k: &Kernel) {
    out.push_str(name);
    out.push('(');
    for (i, a) in args.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        write_expr(out, a, k, 0);
    }
    out.push(')');
}

fn axis(a: u8) -> char {
    ['x', 'y', 'z'].get(a as usize).copied().unwrap_or('?')
}

#[cfg(test)]
mod tests;
