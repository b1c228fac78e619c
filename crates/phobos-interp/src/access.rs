//! Tensor loads and stores. Indexing is logical (row-major over the tensor's dims, whatever its
//! memory order); an element outside the tensor (a negative index included) reads as zero and is
//! not stored. Atomics update elements in place, in thread order.

use crate::error::Error;
use crate::exec::Machine;
use crate::value::{to_value, Mask, Tile, Val};
use phobos_ir::eval::{binary, Value};
use phobos_ir::{AtomicOp, HostTensor, Index, ParamId};
use phobos_syntax::Span;

/// One position of an access, evaluated.
enum Pos {
    At(Val),
    Span { start: i64, len: usize },
}

/// The flat offset of a logical index in a row-major tensor, or `None` outside it.
fn offset(t: &HostTensor, coords: &[i64]) -> Option<usize> {
    let mut flat = 0usize;
    for (&c, &extent) in coords.iter().zip(&t.shape) {
        if c < 0 || c as usize >= extent {
            return None;
        }
        flat = flat * extent + c as usize;
    }
    Some(flat)
}

impl Machine<'_> {
    fn positions(&mut self, index: &[Index], mask: &Mask) -> Result<Vec<Pos>, Error> {
        let mut out = Vec::with_capacity(index.len());
        for i in index {
            out.push(match i {
                Index::At(e) => Pos::At(self.eval(e, mask)?),
                Index::Span { start, len } => Pos::Span {
                    start: self.eval(start, mask)?.uniform(mask, start.span)? as i64,
                    len: (*len).max(0) as usize,
                },
            });
        }
        Ok(out)
    }

    fn tensor(&self, p: ParamId, span: Span) -> Result<&HostTensor, Error> {
        self.tensors
            .get(p)
            .and_then(|t| t.as_ref())
            .ok_or_else(|| Error::internal(format!("param #{p} is not a tensor"), span))
    }

    /// Checks the access has one position per tensor axis.
    fn check_rank(&self, p: ParamId, index: &[Index], span: Span) -> Result<(), Error> {
        let rank = self.tensor(p, span)?.shape.len();
        if rank != index.len() {
            return Err(Error::internal(
                format!(
                    "an access with {} indices into a tensor of rank {rank}",
                    index.len()
                ),
                span,
            ));
        }
        Ok(())
    }

    /// Reads one element per thread (every position `At`) or a tile (some `Span`).
    pub(crate) fn load(
        &mut self,
        p: ParamId,
        index: &[Index],
        span: Span,
        mask: &Mask,
    ) -> Result<Val, Error> {
        self.check_rank(p, index, span)?;
        let pos = self.positions(index, mask)?;
        let t = self.tensor(p, span)?;
        let read = |coords: &[i64]| offset(t, coords).map_or(0.0, |o| t.data[o]);
        if pos.iter().all(|p| matches!(p, Pos::At(_))) {
            let vals: Vec<&Val> = pos
                .iter()
                .map(|p| match p {
                    Pos::At(v) => v,
                    Pos::Span { .. } => unreachable!("all positions are At"),
                })
                .collect();
            let mut coords = vec![0i64; vals.len()];
            if vals.iter().all(|v| matches!(v, Val::Uni(_))) {
                for (c, v) in coords.iter_mut().zip(&vals) {
                    *c = v.lane(0) as i64;
                }
                return Ok(Val::Uni(read(&coords)));
            }
            let lanes = (0..self.threads)
                .map(|lane| {
                    for (c, v) in coords.iter_mut().zip(&vals) {
                        *c = v.lane(lane) as i64;
                    }
                    read(&coords)
                })
                .collect();
            return Ok(Val::Lanes(lanes));
        }
        let (base, shape) = tile_frame(&pos, mask, span)?;
        let mut data = Vec::with_capacity(shape.iter().product());
        for_each_element(&pos, &base, &shape, |coords| data.push(read(coords)));
        Ok(Val::Tile(Tile { shape, data }))
    }

    /// Writes one element per active thread, or a tile.
    pub(crate) fn store(
        &mut self,
        p: ParamId,
        index: &[Index],
        value: Val,
        span: Span,
        mask: &Mask,
    ) -> Result<(), Error> {
        self.check_rank(p, index, span)?;
        let pos = self.positions(index, mask)?;
        let threads = self.threads;
        let t = self
            .tensors
            .get_mut(p)
            .and_then(|t| t.as_mut())
            .ok_or_else(|| Error::internal(format!("param #{p} is not a tensor"), span))?;
        // Empty when writes are not tracked: every `mark` is then a no-op.
        let mut no_marks = Vec::new();
        let marks = self.written.get_mut(p).unwrap_or(&mut no_marks);
        let mut mark = |o: usize| {
            if let Some(m) = marks.get_mut(o) {
                *m = true;
            }
        };
        if pos.iter().all(|p| matches!(p, Pos::At(_))) {
            let mut coords = vec![0i64; pos.len()];
            // Threads store in order, so when several write one element the highest thread wins
            // (on the GPU the winner is unspecified).
            for lane in (0..threads).filter(|&l| mask.get(l)) {
                for (c, p) in coords.iter_mut().zip(&pos) {
                    if let Pos::At(v) = p {
                        *c = v.lane(lane) as i64;
                    }
                }
                if let Some(o) = offset(t, &coords) {
                    t.data[o] = value.lane(lane);
                    mark(o);
                }
            }
            return Ok(());
        }
        let (base, shape) = tile_frame(&pos, mask, span)?;
        let values = match value {
            Val::Tile(v) if v.shape == shape => v.data,
            Val::Tile(v) => {
                return Err(Error::internal(
                    format!("a tile of shape {:?} stored to {shape:?}", v.shape),
                    span,
                ))
            }
            scalar => vec![scalar.uniform(mask, span)?; shape.iter().product()],
        };
        let mut k = 0;
        for_each_element(&pos, &base, &shape, |coords| {
            if let Some(o) = offset(t, coords) {
                t.data[o] = values[k];
                mark(o);
            }
            k += 1;
        });
        Ok(())
    }
}

impl Machine<'_> {
    /// An atomic update: per active thread, in thread order, for an element access (returning
    /// each thread's old value, zero outside the tensor); each element of the tile once for a
    /// tile access (returning nothing). The GPU applies the updates of one element in some
    /// order; this is one of them.
    pub(crate) fn atomic(
        &mut self,
        op: AtomicOp,
        p: ParamId,
        index: &[Index],
        value: Val,
        span: Span,
        mask: &Mask,
    ) -> Result<Option<Val>, Error> {
        self.check_rank(p, index, span)?;
        let pos = self.positions(index, mask)?;
        let threads = self.threads;
        let t = self
            .tensors
            .get_mut(p)
            .and_then(|t| t.as_mut())
            .ok_or_else(|| Error::internal(format!("param #{p} is not a tensor"), span))?;
        let dtype = t.dtype;
        let update = |old: f64, v: f64| -> Result<f64, Error> {
            binary(op.bin_op(), to_value(dtype, old), to_value(dtype, v), dtype)
                .map(Value::as_f64)
                .map_err(|e| Error::internal(format!("{}: {e}", op.name()), span))
        };
        if pos.iter().all(|p| matches!(p, Pos::At(_))) {
            let mut coords = vec![0i64; pos.len()];
            let mut old = vec![0.0; threads];
            for lane in (0..threads).filter(|&l| mask.get(l)) {
                for (c, p) in coords.iter_mut().zip(&pos) {
                    if let Pos::At(v) = p {
                        *c = v.lane(lane) as i64;
                    }
                }
                if let Some(o) = offset(t, &coords) {
                    old[lane] = t.data[o];
                    t.data[o] = update(t.data[o], value.lane(lane))?;
                }
            }
            return Ok(Some(Val::Lanes(old)));
        }
        let (base, shape) = tile_frame(&pos, mask, span)?;
        let values = match value {
            Val::Tile(v) if v.shape == shape => v.data,
            Val::Tile(v) => {
                return Err(Error::internal(
                    format!("a tile of shape {:?} updating {shape:?}", v.shape),
                    span,
                ))
            }
            scalar => vec![scalar.uniform(mask, span)?; shape.iter().product()],
        };
        let mut k = 0;
        let mut result = Ok(());
        for_each_element(&pos, &base, &shape, |coords| {
            if let Some(o) = offset(t, coords) {
                match update(t.data[o], values[k]) {
                    Ok(x) => t.data[o] = x,
                    Err(e) => result = Err(e),
                }
            }
            k += 1;
        });
        result.map(|()| None)
    }
}

/// The tensor coordinates of a tile access's first element, and the tile's shape. Every
/// position of a tile access is uniform.
fn tile_frame(pos: &[Pos], mask: &Mask, span: Span) -> Result<(Vec<i64>, Vec<usize>), Error> {
    let mut base = Vec::with_capacity(pos.len());
    let mut shape = Vec::new();
    for p in pos {
        match p {
            Pos::At(v) => base.push(v.uniform(mask, span)? as i64),
            Pos::Span { start, len } => {
                base.push(*start);
                shape.push(*len);
            }
        }
    }
    Ok((base, shape))
}

/// Calls `f` with the tensor coordinates of every tile element, in row-major tile order.
fn for_each_element(pos: &[Pos], base: &[i64], shape: &[usize], mut f: impl FnMut(&[i64])) {
    let n: usize = shape.iter().product();
    let spans: Vec<usize> = pos
        .iter()
        .enumerate()
        .filter_map(|(a, p)| matches!(p, Pos::Span { .. }).then_some(a))
        .collect();
    let mut idx = vec![0usize; shape.len()];
    let mut coords = base.to_vec();
    for _ in 0..n {
        for (j, &a) in spans.iter().enumerate() {
            coords[a] = base[a] + idx[j] as i64;
        }
        f(&coords);
        for j in (0..shape.len()).rev() {
            idx[j] += 1;
            if idx[j] < shape[j] {
                break;
            }
            idx[j] = 0;
        }
    }
}
