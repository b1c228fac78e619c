//! Statements and control flow: the grid of blocks, each block's threads in lockstep under an
//! active mask, and the step budget.
//!
//! Control flow on a uniform value takes one branch for the whole block. Control flow on a
//! per-thread value splits the mask: `if` runs each branch with the threads that take it; a loop
//! keeps iterating while any thread is live; `break` removes the thread from its loop, `continue`
//! from the rest of the iteration. Threads outside the mask neither store nor assign.

use crate::error::Error;
use crate::value::{Mask, Val};
use phobos_ir::eval::Value;
use phobos_ir::{HostTensor, Kernel, LocalId, Stmt, StmtKind};
use phobos_syntax::Span;

/// The default step budget of a launch (see [`Config::step_budget`]): far more than any problem
/// the interpreter is fast enough for (a 1024³ GEMM takes about half a million steps), and a
/// runaway loop of 256 threads reaches it in about a minute.
pub const DEFAULT_STEP_BUDGET: u64 = 10_000_000;

/// How the interpreter runs a launch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// The most steps one launch may take before it stops with [`Error::StepBudget`]. A step is
    /// one statement executed by one block (all its threads together) or one loop test, so a
    /// `while` that never ends becomes an error instead of a hang.
    pub step_budget: u64,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            step_budget: DEFAULT_STEP_BUDGET,
        }
    }
}

/// A loop being executed: the threads that left it with `break`.
struct LoopFrame {
    broken: Mask,
    span: Span,
}

/// The state of one block while it runs, plus the launch-wide step count.
pub(crate) struct Machine<'a> {
    pub k: &'a Kernel,
    pub dims: &'a [i64],
    /// Scalar parameter values by parameter id (`None` for tensors).
    pub scalars: &'a [Option<Value>],
    /// Tensors by parameter id (`None` for scalars).
    pub tensors: &'a mut [Option<HostTensor>],
    /// By parameter id: which elements of the tensor a store of this launch reached, one flag
    /// per element in row-major order; empty when writes are not tracked.
    pub written: Vec<Vec<bool>>,
    pub threads: usize,
    pub block: [i64; 3],
    pub grid: [i64; 3],
    pub locals: Vec<Option<Val>>,
    loops: Vec<LoopFrame>,
    pub steps: u64,
    budget: u64,
}

/// Runs every block of the grid in order (x fastest, then y, then z) and returns the steps taken.
pub(crate) fn run_grid(
    k: &Kernel,
    dims: &[i64],
    scalars: &[Option<Value>],
    tensors: &mut [Option<HostTensor>],
    grid: [i64; 3],
    config: &Config,
) -> Result<u64, Error> {
    let mut m = Machine::new(k, dims, scalars, tensors, grid, config, false);
    for z in 0..grid[2] {
        for y in 0..grid[1] {
            for x in 0..grid[0] {
                m.run_block([x, y, z])?;
            }
        }
    }
    Ok(m.steps)
}

impl<'a> Machine<'a> {
    /// A machine for one launch; `track_writes` records which elements stores reach.
    pub(crate) fn new(
        k: &'a Kernel,
        dims: &'a [i64],
        scalars: &'a [Option<Value>],
        tensors: &'a mut [Option<HostTensor>],
        grid: [i64; 3],
        config: &Config,
        track_writes: bool,
    ) -> Machine<'a> {
        let written = tensors
            .iter()
            .map(|t| match (track_writes, t) {
                (true, Some(t)) => vec![false; t.data.len()],
                _ => Vec::new(),
            })
            .collect();
        Machine {
            k,
            dims,
            scalars,
            tensors,
            written,
            threads: k.launch.threads as usize,
            block: [0; 3],
            grid,
            locals: Vec::new(),
            loops: Vec::new(),
            steps: 0,
            budget: config.step_budget,
        }
    }

    /// Runs the body once for the block at `block`, with fresh locals.
    pub(crate) fn run_block(&mut self, block: [i64; 3]) -> Result<(), Error> {
        self.block = block;
        self.locals = vec![None; self.k.locals.len()];
        let mut mask = Mask::full(self.threads);
        let k = self.k;
        self.exec(&k.body, &mut mask)
    }
}

impl Machine<'_> {
    /// Counts one step; past the budget, the error points at the innermost running loop.
    fn step(&mut self, span: Span) -> Result<(), Error> {
        self.steps += 1;
        if self.steps > self.budget {
            let span = self.loops.last().map_or(span, |l| l.span);
            return Err(Error::StepBudget {
                budget: self.budget,
                span,
            });
        }
        Ok(())
    }

    /// Executes statements for the threads of `mask`; threads that `break` or `continue` leave
    /// the mask.
    pub(crate) fn exec(&mut self, stmts: &[Stmt], mask: &mut Mask) -> Result<(), Error> {
        for s in stmts {
            if mask.is_empty() {
                return Ok(());
            }
            self.step(s.span)?;
            self.stmt(s, mask)?;
        }
        Ok(())
    }

    fn stmt(&mut self, s: &Stmt, mask: &mut Mask) -> Result<(), Error> {
        match &s.kind {
            StmtKind::Assign { local, value } => {
                let v = self.eval(value, mask)?;
                self.assign(*local, v, mask, s.span)
            }
            // The eviction hint (`cache`) never changes a value: the interpreter ignores it.
            StmtKind::Store {
                tensor,
                index,
                value,
                cache: _,
            } => {
                let v = self.eval(value, mask)?;
                self.store(*tensor, index, v, s.span, mask)
            }
            StmtKind::Atomic {
                op,
                tensor,
                index,
                value,
                old,
            } => {
                let v = self.eval(value, mask)?;
                let before = self.atomic(*op, *tensor, index, v, s.span, mask)?;
                match (old, before) {
                    (Some(l), Some(b)) => self.assign(*l, b, mask, s.span),
                    (Some(_), None) => Err(Error::internal(
                        "the old value of a tile atomic is bound",
                        s.span,
                    )),
                    (None, _) => Ok(()),
                }
            }
            StmtKind::If {
                cond,
                then_body,
                else_body,
            } => match self.eval(cond, mask)? {
                Val::Uni(c) if c != 0.0 => self.exec(then_body, mask),
                Val::Uni(_) => self.exec(else_body, mask),
                Val::Lanes(c) => {
                    let mut taken = mask.clone();
                    taken.retain(|t| c[t] != 0.0);
                    let mut other = mask.clone();
                    other.retain(|t| c[t] == 0.0);
                    self.exec(then_body, &mut taken)?;
                    self.exec(else_body, &mut other)?;
                    taken.union(&other);
                    *mask = taken;
                    Ok(())
                }
                Val::Tile(_) => Err(Error::internal("a tile as an `if` condition", cond.span)),
            },
            StmtKind::While { cond, body } => {
                self.in_loop(s.span, |m| m.run_while(cond, body, s.span, mask))
            }
            StmtKind::For {
                var,
                start,
                end,
                step,
                unroll: _,
                body,
            } => {
                // `unroll` is a hint for the code generator: every factor runs the same
                // iterations, so the interpreter runs the plain loop.
                let start = self.eval(start, mask)?;
                let end = self.eval(end, mask)?;
                let step = self.eval(step, mask)?;
                self.in_loop(s.span, |m| {
                    m.run_for(*var, [start, end, step], body, s.span, mask)
                })
            }
            StmtKind::Break => {
                let frame = self
                    .loops
                    .last_mut()
                    .ok_or_else(|| Error::internal("`break` outside a loop", s.span))?;
                frame.broken.union(mask);
                mask.clear();
                Ok(())
            }
            StmtKind::Continue => {
                if self.loops.is_empty() {
                    return Err(Error::internal("`continue` outside a loop", s.span));
                }
                mask.clear();
                Ok(())
            }
        }
    }

    /// Assigns a value to a local in the threads of `mask`; other threads keep theirs.
    fn assign(&mut self, local: LocalId, v: Val, mask: &Mask, span: Span) -> Result<(), Error> {
        let threads = self.threads;
        let slot = self
            .locals
            .get_mut(local)
            .ok_or_else(|| Error::internal(format!("local #{local} does not exist"), span))?;
        if mask.is_full() || matches!(v, Val::Tile(_)) {
            *slot = Some(v);
            return Ok(());
        }
        let mut lanes = match slot.take() {
            Some(Val::Uni(x)) => vec![x; threads],
            Some(Val::Lanes(l)) => l,
            Some(Val::Tile(_)) => {
                return Err(Error::internal("a scalar assigned to a tile local", span))
            }
            // Threads outside the mask never read it.
            None => vec![0.0; threads],
        };
        for t in mask.active() {
            lanes[t] = v.lane(t);
        }
        *slot = Some(Val::Lanes(lanes));
        Ok(())
    }

    fn in_loop(
        &mut self,
        span: Span,
        body: impl FnOnce(&mut Self) -> Result<(), Error>,
    ) -> Result<(), Error> {
        self.loops.push(LoopFrame {
            broken: Mask::from_bits(vec![false; self.threads]),
            span,
        });
        let result = body(self);
        self.loops.pop();
        result
    }

    /// Runs one iteration's body for the live threads and drops those that broke out.
    fn iteration(&mut self, body: &[Stmt], live: &mut Mask) -> Result<(), Error> {
        let mut running = live.clone();
        self.exec(body, &mut running)?;
        if let Some(frame) = self.loops.last_mut() {
            live.retain(|t| !frame.broken.get(t));
            frame.broken.clear();
        }
        Ok(())
    }

    /// Sets a loop variable in every thread (it is scoped to the loop).
    fn set_local(&mut self, local: LocalId, v: Val, span: Span) -> Result<(), Error> {
        let slot = self
            .locals
            .get_mut(local)
            .ok_or_else(|| Error::internal(format!("local #{local} does not exist"), span))?;
        *slot = Some(v);
        Ok(())
    }

    fn run_while(
        &mut self,
        cond: &phobos_ir::Expr,
        body: &[Stmt],
        span: Span,
        mask: &Mask,
    ) -> Result<(), Error> {
        let mut live = mask.clone();
        while !live.is_empty() {
            self.step(span)?;
            match self.eval(cond, &live)? {
                Val::Uni(0.0) => break,
                Val::Uni(_) => {}
                Val::Lanes(c) => live.retain(|t| c[t] != 0.0),
                Val::Tile(_) => return Err(Error::internal("a tile as a `while` condition", span)),
            }
            if live.is_empty() {
                break;
            }
            self.iteration(body, &mut live)?;
        }
        Ok(())
    }

    /// `for var in range(start, end, step)`: uniform bounds run one counter for the block (the
    /// loop variable stays uniform); per-thread bounds run one counter per thread. Counters are
    /// i64, so a loop ending near the top of i32 stops instead of wrapping.
    fn run_for(
        &mut self,
        var: LocalId,
        [start, end, step]: [Val; 3],
        body: &[Stmt],
        span: Span,
        mask: &Mask,
    ) -> Result<(), Error> {
        let mut live = mask.clone();
        if let (Val::Uni(s), Val::Uni(e), Val::Uni(st)) = (&start, &end, &step) {
            let (mut i, end, step) = (*s as i64, *e as i64, *st as i64);
            while step > 0 && i < end && !live.is_empty() {
                self.step(span)?;
                self.set_local(var, Val::Uni(i as f64), span)?;
                self.iteration(body, &mut live)?;
                i += step;
            }
            return Ok(());
        }
        let lanes = |v: &Val| {
            (0..self.threads)
                .map(|t| v.lane(t) as i64)
                .collect::<Vec<_>>()
        };
        let (mut cur, end, step) = (lanes(&start), lanes(&end), lanes(&step));
        live.retain(|t| step[t] > 0 && cur[t] < end[t]);
        while !live.is_empty() {
            self.step(span)?;
            self.set_local(
                var,
                Val::Lanes(cur.iter().map(|&i| i as f64).collect()),
                span,
            )?;
            self.iteration(body, &mut live)?;
            for (c, s) in cur.iter_mut().zip(&step) {
                *c += s;
            }
            live.retain(|t| cur[t] < end[t]);
        }
        Ok(())
    }
}
