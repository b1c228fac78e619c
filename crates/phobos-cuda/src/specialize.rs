//! Specializing a kernel on its problem's alignment, as Triton specializes on divisibility by
//! 16: the fast GEMM main loops need 16-byte aligned leading dimensions (TMA, 16-byte
//! cp.async, 128-bit loads), which a kernel rarely declares. The host, which knows the
//! problem, adds `@aligned` facts for the runtime dims: the largest power of two, at most 16,
//! dividing each. They are facts only: the interpreter ignores them, `bind_args` checks them
//! at launch (so a binary specialized for one problem refuses a problem it does not fit), and
//! the code generator reads them like declared ones. A problem whose K is not a multiple of 8
//! (f16) therefore gets a kernel without the copy engine, instead of a refused launch.
//!
//! Where it happens: after instantiating the variant, before emitting, in every host that
//! compiles for a known problem (`phobos run`, the tuner's front end); the facts change the
//! emitted source, so they are part of what the variant cache keys on.

use phobos_ir::{DimId, Kernel};

/// The largest divisor the facts record, in elements: 16 elements are 16 bytes for the
/// narrowest type, enough for every alignment the main loops look for.
pub const MAX_ALIGN: i64 = 16;

/// The largest power of two at most [`MAX_ALIGN`] dividing `v` (`MAX_ALIGN` for 0).
pub fn pow2_divisor(v: i64) -> i64 {
    if v == 0 {
        return MAX_ALIGN;
    }
    (1i64 << v.unsigned_abs().trailing_zeros().min(4)).min(MAX_ALIGN)
}

/// The alignment facts of a problem: for each runtime dim of `kernel` that `dims` (name,
/// value) gives a positive value, `(dim, pow2_divisor(value))`. A fact of 1 (an odd value)
/// holds for every problem; it says the dim is known to be unaligned, where a dim without a
/// fact is unknown (the Blocked layouts then choose element-wide accesses,
/// `layout::kernel_vec_cap`).
pub fn problem_alignment(kernel: &Kernel, dims: &[(String, i64)]) -> Vec<(DimId, i64)> {
    kernel
        .dims
        .iter()
        .enumerate()
        .filter_map(|(id, d)| {
            let (_, v) = dims.iter().find(|(n, _)| *n == d.name)?;
            (*v > 0).then_some((id, pow2_divisor(*v)))
        })
        .collect()
}

/// Adds `@aligned` facts to `kernel`, skipping those a declared fact already implies.
pub fn assume_aligned(kernel: &mut Kernel, facts: &[(DimId, i64)]) {
    for &(dim, multiple) in facts {
        if dim >= kernel.dims.len() || multiple < 1 {
            continue;
        }
        let implied = kernel
            .aligned
            .iter()
            .any(|&(d, c)| d == dim && c > 0 && c % multiple == 0);
        if !implied {
            kernel.aligned.push((dim, multiple));
        }
    }
}

/// [`assume_aligned`] with the facts of the problem `dims` (name, value): the one call a host
/// makes between instantiating and emitting.
pub fn specialize_alignment(kernel: &mut Kernel, dims: &[(String, i64)]) {
    let facts = problem_alignment(kernel, dims);
    assume_aligned(kernel, &facts);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel(src: &str) -> Kernel {
        let module =
            phobos_check::load(phobos_syntax::SourceFile::new("t.ph", src)).expect("checks");
        let info = module.kernel(None).expect("one kernel");
        let v = info.default_variant().expect("variant");
        phobos_check::instantiate(&module, info, &v).expect("instantiates")
    }

    const GEMM: &str = "@aligned(K = 8)\n@launch(128)\nkernel g(A: tensor<f16>[M, K], \
                        B: tensor<f16>[K, N], C: tensor<f32>[M, N]) {\n  \
                        var acc: tile<f32>[64, 64] = 0.0\n  \
                        for k in range(0, K, 32) {\n    \
                        acc += dot(A[ctx.block.x * 64 :+ 64, k :+ 32], B[k :+ 32, ctx.block.y * 64 :+ 64])\n  }\n  \
                        C[ctx.block.x * 64 :+ 64, ctx.block.y * 64 :+ 64] = acc\n}\n";

    #[test]
    fn powers_of_two_up_to_sixteen() {
        let cases = [
            (1, 1),
            (2, 2),
            (12, 4),
            (24, 8),
            (48, 16),
            (4096, 16),
            (77, 1),
            (0, 16),
            (-8, 8),
        ];
        for (v, want) in cases {
            assert_eq!(pow2_divisor(v), want, "{v}");
        }
    }

    #[test]
    fn facts_follow_the_problem_and_keep_declared_ones() {
        let mut k = kernel(GEMM);
        let id = |n: &str| k.dims.iter().position(|d| d.name == n).unwrap();
        let (m, kk, n) = (id("M"), id("K"), id("N"));
        let dims = [
            ("M".to_string(), 77),
            ("N".to_string(), 392),
            ("K".to_string(), 336),
            ("Q".to_string(), 64),
        ];
        let facts = problem_alignment(&k, &dims);
        assert_eq!(facts, {
            let mut f = vec![(kk, 16), (n, 8), (m, 1)];
            f.sort();
            f
        });
        specialize_alignment(&mut k, &dims);
        assert!(k.aligned.contains(&(kk, 8)), "declared facts stay");
        assert!(k.aligned.contains(&(kk, 16)));
        assert!(k.aligned.contains(&(n, 8)));
        assert!(k.aligned.contains(&(m, 1)), "77 is odd: known unaligned");
        // Adding them again changes nothing.
        let before = k.aligned.clone();
        specialize_alignment(&mut k, &dims);
        assert_eq!(k.aligned, before);
        // A declared fact that implies the problem's is not repeated.
        let mut k2 = kernel(GEMM);
        assume_aligned(&mut k2, &[(kk, 8), (kk, 4), (n, 1), (m, 0)]);
        assert_eq!(k2.aligned, vec![(kk, 8), (n, 1)]);
    }
}
