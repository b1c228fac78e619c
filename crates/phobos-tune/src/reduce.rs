//! What the tuner and the runs of stored configurations (`--check`, `--benchmark`) share about
//! checks: the seed of each job, and the smaller problem an interpreter check runs when the
//! real one is too large for it.

use crate::facts::eval_uniform;
use crate::types::Problem;
use crate::verify::elements;
use phobos_ir::Kernel;

/// Caps tried, largest first, when shrinking a large problem for an interpreter check.
pub const REDUCED_CAPS: [i64; 6] = [512, 256, 128, 64, 32, 16];

/// The seed of job `id` of a run seeded with `seed`: each check and timing sees new data, and
/// a rerun with the same seed sees the same data.
pub fn job_seed(seed: u64, id: u64) -> u64 {
    seed.wrapping_mul(0x9e37_79b9_7f4a_7c15).wrapping_add(id)
}

/// Whether the interpreter checks `problem` as it is: at most `max_elements` tensor elements
/// and, when the kernel declares `@flops`, at most `max_flops`.
pub fn interp_sized(kernel: &Kernel, problem: &Problem, max_elements: u64, max_flops: f64) -> bool {
    elements(kernel, problem).is_some_and(|e| e <= max_elements)
        && kernel
            .flops
            .as_ref()
            .is_none_or(|f| eval_uniform(kernel, f, problem).is_none_or(|x| x <= max_flops))
}

/// `problem` with each runtime dim capped at the first of `caps` (rounded up to a multiple of
/// its `@aligned` divisor) for which `accept` holds.
pub fn capped_problem(
    kernel: &Kernel,
    problem: &Problem,
    caps: &[i64],
    accept: impl Fn(&Problem) -> bool,
) -> Option<Problem> {
    caps.iter().find_map(|&cap| {
        let dims = problem
            .dims
            .iter()
            .map(|(n, v)| {
                let align = kernel
                    .aligned
                    .iter()
                    .filter(|(d, _)| &kernel.dims[*d].name == n)
                    .map(|&(_, m)| m.max(1))
                    .max()
                    .unwrap_or(1);
                (n.clone(), (*v).min((cap + align - 1) / align * align))
            })
            .collect();
        let p = Problem {
            dims,
            ..problem.clone()
        };
        accept(&p).then_some(p)
    })
}
