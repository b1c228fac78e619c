//! Which problem and which reference a point's correctness check uses.

use super::run::State;
use super::Event;
use crate::backend::CompileResult;
use crate::backend::SampleSpec;
use crate::facts::where_violation;
use crate::reduce::{capped_problem, interp_sized, REDUCED_CAPS};
use crate::types::Problem;
use crate::verify::elements;
use crate::worker::{LibrarySpec, ReferenceSpec, VariantSpec};
use phobos_ir::walk::blocks_independent;
use phobos_ir::{Kernel, Point};

/// Caps of the runtime dims for a check against the library (cuBLAS).
const LIBRARY_CAPS: [i64; 3] = [1024, 2048, 4096];

impl State<'_, '_> {
    /// A smaller problem for an interpreter check: each runtime dim capped (kept a multiple of
    /// its `@aligned` divisor), small enough, and satisfying `@where` for both points.
    pub(super) fn reduced_problem(&self, kernel: &Kernel, reference: &Point) -> Option<Problem> {
        self.capped_problem(kernel, reference, &REDUCED_CAPS, true)
    }

    /// The problem with each runtime dim capped at the first of `caps` for which it satisfies
    /// `@where` (for the kernel and `reference`) and, when `small`, the interpreter's limits.
    fn capped_problem(
        &self,
        kernel: &Kernel,
        reference: &Point,
        caps: &[i64],
        small_only: bool,
    ) -> Option<Problem> {
        let fe = self.tuner.frontend;
        let s = self.settings;
        capped_problem(kernel, self.problem, caps, |p| {
            let small =
                !small_only || interp_sized(kernel, p, s.verify_max_elements, s.verify_max_flops);
            small
                && where_violation(kernel, p) == Ok(None)
                && fe.where_violation(reference, p) == Ok(None)
        })
    }

    /// The seed of every sampled check of a run, for both the blocks picked and the inputs:
    /// the checks of one run share one sample of the reference, so the worker interprets it
    /// once and compares each variant against it (`worker::serve`), where a sample a check
    /// cost each check seconds of interpretation. Other checks get fresh inputs each.
    pub(super) fn sampled_check_seed(&self) -> u64 {
        self.seed(u64::MAX)
    }

    /// The interpreter at `reference` on a sample of the problem's blocks, when the blocks of
    /// both the checked kernel and the reference are independent.
    pub(super) fn sampled(&self, kernel: &Kernel, reference: &Point) -> Option<ReferenceSpec> {
        let reference_kernel = self
            .tuner
            .frontend
            .instantiate(reference, self.problem)
            .ok()?;
        if !(blocks_independent(kernel) && blocks_independent(&reference_kernel)) {
            return None;
        }
        Some(ReferenceSpec::InterpSample {
            point: reference.clone(),
            sample: SampleSpec {
                seed: self.sampled_check_seed(),
                budget_ms: self.settings.check_budget_ms,
                random_blocks: self.settings.check_random_blocks,
            },
        })
    }

    /// The reference point compiled (`Settings::compiled_reference`): the reference point when
    /// it compiles, else the first point that does, looked for once.
    fn compiled_reference(&mut self, i: usize) -> VariantSpec {
        if self.compiled_reference.is_none() {
            let mut candidates: Vec<Point> = self.reference_point.iter().cloned().collect();
            candidates.extend(
                self.points
                    .iter()
                    .zip(&self.slots)
                    .filter(|(_, s)| s.kernel.is_some())
                    .map(|(p, _)| p.clone()),
            );
            let found = candidates.into_iter().find_map(|p| {
                let kernel = match self.points.iter().position(|q| q == &p) {
                    Some(j) if self.slots[j].kernel.is_some() => self.slots[j].kernel.clone(),
                    _ => self.tuner.frontend.instantiate(&p, self.problem).ok(),
                }?;
                match self.tuner.compiler.compile(&kernel, &self.tuner.device) {
                    CompileResult::Ok(c) => Some(VariantSpec {
                        point: p,
                        artifact: c.artifact,
                    }),
                    _ => None,
                }
            });
            self.compiled_reference = Some(found);
        }
        // Point `i` compiled, so some point does.
        self.compiled_reference
            .clone()
            .flatten()
            .unwrap_or_else(|| self.spec(i))
    }

    pub(super) fn check_plan(
        &mut self,
        i: usize,
        observer: &mut dyn FnMut(Event<'_>),
    ) -> (Problem, ReferenceSpec) {
        if let Some(r) = &self.settings.external_reference {
            return (self.problem.clone(), r.clone());
        }
        if self.settings.compiled_reference {
            let spec = self.compiled_reference(i);
            return (self.problem.clone(), ReferenceSpec::Variant(spec));
        }
        let kernel = self.slots[i]
            .kernel
            .as_ref()
            .expect("a compiled point has a kernel");
        let reference = self
            .reference_point
            .clone()
            .unwrap_or_else(|| self.points[i].clone());
        let interp = ReferenceSpec::Interp {
            point: reference.clone(),
        };
        let small = elements(kernel, self.problem)
            .is_some_and(|e| e <= self.settings.verify_max_elements)
            && self.slots[i]
                .flops
                .is_none_or(|f| f <= self.settings.verify_max_flops);
        if small {
            return (self.problem.clone(), interp);
        }
        if let Some(p) = self.reduced_problem(kernel, &reference) {
            return (p, interp);
        }
        if let Some(lib) = &self.settings.library {
            let spec = LibrarySpec {
                point: self.points[i].clone(),
                ..lib.clone()
            };
            // The library is fast at any size, but a smaller problem (when @where allows one)
            // keeps the fresh random inputs of each check cheap to make.
            let p = self
                .capped_problem(kernel, &self.points[i], &LIBRARY_CAPS, false)
                .unwrap_or_else(|| self.problem.clone());
            return (p, ReferenceSpec::Library(spec));
        }
        if let Some(sampled) = self.sampled(kernel, &reference) {
            return (self.problem.clone(), sampled);
        }
        if let Some(v) = &self.verified {
            return (self.problem.clone(), ReferenceSpec::Variant(v.clone()));
        }
        observer(Event::Log(format!(
            "checking {} against the interpreter at full size: no smaller problem satisfies \
             @where, and its blocks may depend on each other",
            self.points[i].to_pins()
        )));
        (self.problem.clone(), interp)
    }
}
