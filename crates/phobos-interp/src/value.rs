//! Runtime values: uniform scalars, per-thread scalars (one lane per thread), block tiles, and
//! the active-thread mask.
//!
//! Every element is an f64 holding a value of its element type (already rounded or wrapped),
//! which is how [`phobos_ir::HostTensor`] holds them too; scalar arithmetic goes through
//! [`phobos_ir::eval`], so the interpreter and the constant folder agree by construction.

use crate::error::Error;
use phobos_ir::eval::{EvalError, Value};
use phobos_ir::DType;
use phobos_syntax::Span;

/// A block tile: a row-major array of a static shape.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Tile {
    pub shape: Vec<usize>,
    pub data: Vec<f64>,
}

impl Tile {
    pub fn filled(shape: Vec<usize>, x: f64) -> Tile {
        let n = shape.iter().product();
        Tile {
            shape,
            data: vec![x; n],
        }
    }

    /// The flat index of a multi-index, or `None` when it is outside the tile.
    pub fn offset(&self, index: &[i64]) -> Option<usize> {
        let mut flat = 0usize;
        for (&i, &extent) in index.iter().zip(&self.shape) {
            if i < 0 || i as usize >= extent {
                return None;
            }
            flat = flat * extent + i as usize;
        }
        Some(flat)
    }
}

/// A value during execution.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Val {
    /// A scalar equal in every thread (the fast path: computed once).
    Uni(f64),
    /// A scalar per thread, indexed by `ctx.thread`.
    Lanes(Vec<f64>),
    /// A block-level tile.
    Tile(Tile),
}

impl Val {
    pub fn tile(self, span: Span) -> Result<Tile, Error> {
        match self {
            Val::Tile(t) => Ok(t),
            _ => Err(Error::internal("a scalar where a tile was expected", span)),
        }
    }

    /// The value of a scalar that the IR says is uniform. Lanes are accepted when every active
    /// thread holds the same value (a value assigned under a partial mask stays in lanes).
    pub fn uniform(&self, mask: &Mask, span: Span) -> Result<f64, Error> {
        match self {
            Val::Uni(x) => Ok(*x),
            Val::Lanes(v) => {
                let mut active = mask.active();
                let first = active.next().map_or(v[0], |t| v[t]);
                if active.any(|t| v[t].to_bits() != first.to_bits()) {
                    return Err(Error::internal(
                        "a value marked uniform differs between threads",
                        span,
                    ));
                }
                Ok(first)
            }
            Val::Tile(_) => Err(Error::internal("a tile where a scalar was expected", span)),
        }
    }

    /// The value in thread `t` of a scalar.
    pub fn lane(&self, t: usize) -> f64 {
        match self {
            Val::Uni(x) => *x,
            Val::Lanes(v) => v[t],
            Val::Tile(t) => t.data[0],
        }
    }
}

/// Which threads of the block are executing.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Mask {
    bits: Vec<bool>,
    count: usize,
}

impl Mask {
    pub fn full(threads: usize) -> Mask {
        Mask {
            bits: vec![true; threads],
            count: threads,
        }
    }

    pub fn from_bits(bits: Vec<bool>) -> Mask {
        let count = bits.iter().filter(|&&b| b).count();
        Mask { bits, count }
    }

    pub fn get(&self, t: usize) -> bool {
        self.bits[t]
    }

    pub fn len(&self) -> usize {
        self.bits.len()
    }

    pub fn is_full(&self) -> bool {
        self.count == self.bits.len()
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    pub fn active(&self) -> impl Iterator<Item = usize> + '_ {
        self.bits
            .iter()
            .enumerate()
            .filter_map(|(t, &b)| b.then_some(t))
    }

    /// Keeps the threads for which `keep` holds.
    pub fn retain(&mut self, mut keep: impl FnMut(usize) -> bool) {
        for t in 0..self.bits.len() {
            if self.bits[t] && !keep(t) {
                self.bits[t] = false;
                self.count -= 1;
            }
        }
    }

    /// Adds the threads of `other`.
    pub fn union(&mut self, other: &Mask) {
        for t in 0..self.bits.len() {
            if other.bits[t] && !self.bits[t] {
                self.bits[t] = true;
                self.count += 1;
            }
        }
    }

    pub fn clear(&mut self) {
        self.bits.iter_mut().for_each(|b| *b = false);
        self.count = 0;
    }
}

/// An f64 element of type `t` as a scalar value of [`phobos_ir::eval`].
pub(crate) fn to_value(t: DType, x: f64) -> Value {
    if t == DType::Bool {
        Value::Bool(x != 0.0)
    } else if t.is_int() {
        Value::Int(x as i64)
    } else {
        Value::Float(x)
    }
}

/// Applies `f` elementwise to operands of any kind: tiles (all of one shape) with uniform
/// scalars, or per-thread scalars with uniform ones. A failure in a thread outside `mask` is
/// ignored (that thread's value is unused), so `if d != 0 { x = n / d }` is never an error.
pub(crate) fn zip(
    args: &[&Val],
    mask: &Mask,
    span: Span,
    mut f: impl FnMut(&[f64]) -> Result<f64, EvalError>,
) -> Result<Val, Error> {
    let mut xs = vec![0.0; args.len()];
    if let Some(shape) = args.iter().find_map(|a| match a {
        Val::Tile(t) => Some(t.shape.clone()),
        _ => None,
    }) {
        // Scalars in a tile operation are uniform.
        let mut consts = vec![None; args.len()];
        for (i, a) in args.iter().enumerate() {
            match a {
                Val::Tile(t) if t.shape != shape => {
                    return Err(Error::internal(
                        format!("tile shapes {:?} and {shape:?} differ", t.shape),
                        span,
                    ))
                }
                Val::Tile(_) => {}
                scalar => consts[i] = Some(scalar.uniform(mask, span)?),
            }
        }
        let n: usize = shape.iter().product();
        let mut data = Vec::with_capacity(n);
        for e in 0..n {
            for (i, a) in args.iter().enumerate() {
                xs[i] = match (a, consts[i]) {
                    (_, Some(c)) => c,
                    (Val::Tile(t), None) => t.data[e],
                    _ => unreachable!("scalars were made constants above"),
                };
            }
            data.push(f(&xs).map_err(|e| Error::from_eval(e, span))?);
        }
        return Ok(Val::Tile(Tile { shape, data }));
    }
    if args.iter().all(|a| matches!(a, Val::Uni(_))) {
        for (i, a) in args.iter().enumerate() {
            xs[i] = a.lane(0);
        }
        return f(&xs).map(Val::Uni).map_err(|e| Error::from_eval(e, span));
    }
    let mut out = Vec::with_capacity(mask.len());
    for t in 0..mask.len() {
        for (i, a) in args.iter().enumerate() {
            xs[i] = a.lane(t);
        }
        out.push(match f(&xs) {
            Ok(x) => x,
            Err(e) if mask.get(t) => return Err(Error::from_eval(e, span)),
            Err(_) => 0.0,
        });
    }
    Ok(Val::Lanes(out))
}
