//! Expression evaluation: one value per expression, uniform scalars computed once, per-thread
//! scalars lane by lane, tiles element by element.

use crate::error::Error;
use crate::exec::Machine;
use crate::tile;
use crate::value::{to_value, zip, Mask, Tile, Val};
use phobos_ir::eval::{binary, cdiv, lit_value, math, math_n, unary, wrap, Value};
use phobos_ir::{Ctx, DType, Expr, ExprKind, Ty};

impl Machine<'_> {
    /// Evaluates `e` for the threads of `mask` (other lanes hold unspecified values).
    pub(crate) fn eval(&mut self, e: &Expr, mask: &Mask) -> Result<Val, Error> {
        let t = e.ty.dtype();
        let span = e.span;
        Ok(match &e.kind {
            ExprKind::Lit(l) => {
                let x = lit_value(*l, t).as_f64();
                match &e.ty {
                    Ty::Tile(_, shape) => Val::Tile(Tile::filled(extents(shape), x)),
                    Ty::Scalar(_) => Val::Uni(x),
                }
            }
            ExprKind::Dim(d) => {
                let x = self.dims.get(*d).copied().ok_or_else(|| {
                    Error::internal(format!("runtime dim #{d} does not exist"), span)
                })?;
                Val::Uni(Value::Int(x).cast(t).as_f64())
            }
            ExprKind::Param(p) => match self.scalars.get(*p).copied().flatten() {
                Some(v) => Val::Uni(v.cast(t).as_f64()),
                None => return Err(Error::internal(format!("param #{p} is not a scalar"), span)),
            },
            ExprKind::Local(l) => match self.locals.get(*l) {
                Some(Some(v)) => v.clone(),
                _ => {
                    let name = self.k.locals.get(*l).map_or("?", |l| l.name.as_str());
                    return Err(Error::internal(
                        format!("`{name}` is read before it is assigned"),
                        span,
                    ));
                }
            },
            ExprKind::Ctx(c) => self.ctx(*c),
            ExprKind::Unary(op, a) => {
                let at = a.ty.dtype();
                let v = self.eval(a, mask)?;
                zip(&[&v], mask, span, |x| {
                    Ok(unary(*op, to_value(at, x[0]), t).as_f64())
                })?
            }
            ExprKind::Binary(op, a, b) => {
                let at = a.ty.dtype();
                let (va, vb) = (self.eval(a, mask)?, self.eval(b, mask)?);
                zip(&[&va, &vb], mask, span, |x| {
                    binary(*op, to_value(at, x[0]), to_value(at, x[1]), at).map(Value::as_f64)
                })?
            }
            ExprKind::Math(f, a) => {
                let at = a.ty.dtype();
                let v = self.eval(a, mask)?;
                zip(&[&v], mask, span, |x| {
                    Ok(math(*f, to_value(at, x[0]), t).as_f64())
                })?
            }
            ExprKind::MathN(f, args) => {
                let vs = args
                    .iter()
                    .map(|a| self.eval(a, mask))
                    .collect::<Result<Vec<_>, _>>()?;
                let refs: Vec<&Val> = vs.iter().collect();
                let types: Vec<DType> = args.iter().map(|a| a.ty.dtype()).collect();
                zip(&refs, mask, span, |x| {
                    let xs: Vec<Value> = x
                        .iter()
                        .zip(&types)
                        .map(|(&v, &at)| to_value(at, v))
                        .collect();
                    Ok(math_n(*f, &xs, t).as_f64())
                })?
            }
            ExprKind::Select(c, a, b) => {
                let (vc, va, vb) = (
                    self.eval(c, mask)?,
                    self.eval(a, mask)?,
                    self.eval(b, mask)?,
                );
                zip(&[&vc, &va, &vb], mask, span, |x| {
                    Ok(if x[0] != 0.0 { x[1] } else { x[2] })
                })?
            }
            ExprKind::Cast(a) => {
                let at = a.ty.dtype();
                let v = self.eval(a, mask)?;
                zip(&[&v], mask, span, |x| {
                    Ok(to_value(at, x[0]).cast(t).as_f64())
                })?
            }
            ExprKind::Cdiv(a, b) => {
                let at = a.ty.dtype();
                let (va, vb) = (self.eval(a, mask)?, self.eval(b, mask)?);
                zip(&[&va, &vb], mask, span, |x| {
                    let q = cdiv(to_value(at, x[0]).as_i64(), to_value(at, x[1]).as_i64())?;
                    Ok(wrap(t, q) as f64)
                })?
            }
            ExprKind::Broadcast(a) => {
                let v = self.eval(a, mask)?;
                match (&e.ty, v) {
                    (Ty::Tile(_, shape), Val::Tile(src)) => {
                        Val::Tile(tile::broadcast(&src, &extents(shape), span)?)
                    }
                    (Ty::Tile(_, shape), scalar) => {
                        Val::Tile(Tile::filled(extents(shape), scalar.uniform(mask, span)?))
                    }
                    (Ty::Scalar(_), v) => v,
                }
            }
            // The eviction hint (`cache`) never changes a value: the interpreter ignores it.
            ExprKind::Load {
                tensor,
                index,
                cache: _,
            } => self.load(*tensor, index, span, mask)?,
            ExprKind::TileGet { tile, index } => {
                let src = self.eval(tile, mask)?.tile(span)?;
                let idx = index
                    .iter()
                    .map(|i| self.eval(i, mask))
                    .collect::<Result<Vec<_>, _>>()?;
                let refs: Vec<&Val> = idx.iter().collect();
                let mut at = vec![0i64; refs.len()];
                zip(&refs, mask, span, |x| {
                    for (a, &xi) in at.iter_mut().zip(x) {
                        *a = xi as i64;
                    }
                    Ok(src.offset(&at).map_or(0.0, |o| src.data[o]))
                })?
            }
            ExprKind::Reduce { op, axis, arg } => {
                let src = self.eval(arg, mask)?.tile(span)?;
                match tile::reduce(*op, t, &src, *axis, span)? {
                    Ok(x) => Val::Uni(x),
                    Err(tile) => Val::Tile(tile),
                }
            }
            ExprKind::Dot {
                a,
                b,
                trans_b,
                tf32,
            } => {
                let input = a.ty.dtype();
                let ta = self.eval(a, mask)?.tile(span)?;
                let tb = self.eval(b, mask)?.tile(span)?;
                Val::Tile(tile::dot(&ta, &tb, *trans_b, *tf32, input, t, span)?)
            }
            ExprKind::Transpose(a) => {
                let src = self.eval(a, mask)?.tile(span)?;
                Val::Tile(tile::transpose(&src, span)?)
            }
            ExprKind::Reshape(a) => {
                let src = self.eval(a, mask)?.tile(span)?;
                Val::Tile(tile::reshape(
                    src,
                    extents(e.ty.shape().unwrap_or(&[])),
                    span,
                )?)
            }
            ExprKind::Arange(n) => Val::Tile(Tile {
                shape: vec![*n as usize],
                data: (0..*n).map(|i| i as f64).collect(),
            }),
        })
    }

    fn ctx(&self, c: Ctx) -> Val {
        let lanes =
            |f: fn(usize) -> usize| Val::Lanes((0..self.threads).map(|t| f(t) as f64).collect());
        match c {
            Ctx::Block(a) => Val::Uni(self.block[a as usize % 3] as f64),
            Ctx::Grid(a) => Val::Uni(self.grid[a as usize % 3] as f64),
            Ctx::Thread => lanes(|t| t),
            Ctx::Threads => Val::Uni(self.threads as f64),
            Ctx::Warp => lanes(|t| t / 32),
            Ctx::Lane => lanes(|t| t % 32),
        }
    }
}

/// A static tile shape as extents.
pub(crate) fn extents(shape: &[i64]) -> Vec<usize> {
    shape.iter().map(|&d| d.max(0) as usize).collect()
}
