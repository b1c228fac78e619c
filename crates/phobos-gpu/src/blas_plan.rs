//! Planning a reference GEMM (pure): which cuBLAS routine, types and compute mode a problem
//! needs, and how a row-major `C = A @ B` with row- or column-major operands maps onto
//! cuBLAS's column-major convention.

use crate::error::GpuError;
use phobos_ir::{DType, MemOrder};

/// A column-major cuBLAS call computing the requested product: `C' = op(X) op(Y)` with
/// `C'` of `m x n`. When `swap` is set, X is the problem's B and Y its A (a row-major C is a
/// column-major Cᵀ = Bᵀ Aᵀ); otherwise X is A and Y is B.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ColMajorGemm {
    pub swap: bool,
    /// `op(X)` is Xᵀ.
    pub trans_x: bool,
    /// `op(Y)` is Yᵀ.
    pub trans_y: bool,
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub ld_x: usize,
    pub ld_y: usize,
    pub ld_c: usize,
}

/// Maps `C[M, N] = A[M, K] @ B[K, N]` (each in its memory order) onto a column-major call.
pub fn map_to_col_major(
    (m, n, k): (usize, usize, usize),
    a: MemOrder,
    b: MemOrder,
    c: MemOrder,
) -> ColMajorGemm {
    use MemOrder::*;
    match c {
        // Cᵀ (N x M, column-major) = Bᵀ Aᵀ: B's row-major memory is Bᵀ column-major.
        RowMajor => ColMajorGemm {
            swap: true,
            trans_x: b == ColMajor,
            trans_y: a == ColMajor,
            m: n,
            n: m,
            k,
            ld_x: if b == RowMajor { n } else { k },
            ld_y: if a == RowMajor { k } else { m },
            ld_c: n,
        },
        // C (M x N, column-major) = A B: A's row-major memory is Aᵀ column-major.
        ColMajor => ColMajorGemm {
            swap: false,
            trans_x: a == RowMajor,
            trans_y: b == RowMajor,
            m,
            n,
            k,
            ld_x: if a == RowMajor { k } else { m },
            ld_y: if b == RowMajor { n } else { k },
            ld_c: m,
        },
    }
    .with_min_ld()
}

impl ColMajorGemm {
    /// cuBLAS wants every leading dimension at least 1, also for empty matrices.
    fn with_min_ld(mut self) -> Self {
        self.ld_x = self.ld_x.max(1);
        self.ld_y = self.ld_y.max(1);
        self.ld_c = self.ld_c.max(1);
        self
    }
}

/// Which library path and compute mode a GEMM takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GemmKind {
    /// fp32 in and out, fp32 arithmetic (no TF32).
    F32,
    /// fp32 in and out, TF32 tensor cores (`CUBLAS_COMPUTE_32F_FAST_TF32`).
    Tf32,
    /// fp64.
    F64,
    /// fp16 or bf16 in, fp32 accumulation, fp16/bf16/fp32 out.
    Half { input: DType, output: DType },
    /// int8 in, int32 accumulation and out (`CUBLAS_COMPUTE_32I`).
    I8,
    /// fp8 e4m3 in through cuBLASLt, fp32 accumulation, fp32/bf16/fp16 out, unit scales.
    Fp8 { output: DType },
}

/// What a GEMM of these tensor types and shapes is, or why cuBLAS cannot do it. `tf32` asks
/// for TF32 with fp32 operands (also implied by a `tf32` operand type).
pub fn plan_gemm(
    (a_t, a_shape, a_order): (DType, &[usize], MemOrder),
    (b_t, b_shape, b_order): (DType, &[usize], MemOrder),
    (c_t, c_shape): (DType, &[usize]),
    tf32: bool,
) -> Result<((usize, usize, usize), GemmKind), GpuError> {
    let bad = |s: String| Err(GpuError::Invalid(s));
    if a_shape.len() != 2 || b_shape.len() != 2 || c_shape.len() != 2 {
        return bad(format!(
            "GEMM operands must be matrices, got A {a_shape:?}, B {b_shape:?}, C {c_shape:?}"
        ));
    }
    let (m, k, n) = (a_shape[0], a_shape[1], b_shape[1]);
    if b_shape[0] != k || c_shape != [m, n] {
        return bad(format!(
            "GEMM shapes do not chain: A {a_shape:?} @ B {b_shape:?} -> C {c_shape:?}"
        ));
    }
    if [m, n, k].iter().any(|&d| d > i32::MAX as usize) {
        return bad(format!("GEMM dims {m}x{n}x{k} exceed cuBLAS's int range"));
    }
    use DType::*;
    let kind = match (a_t.arith(), b_t.arith(), c_t.arith()) {
        (F32, F32, F32) if tf32 || a_t == Tf32 || b_t == Tf32 => GemmKind::Tf32,
        (F32, F32, F32) => GemmKind::F32,
        (F64, F64, F64) => GemmKind::F64,
        (F16, F16, F16 | F32) | (BF16, BF16, BF16 | F32) => GemmKind::Half {
            input: a_t,
            output: c_t,
        },
        (I8, I8, I32) => GemmKind::I8,
        (F8E4M3, F8E4M3, F32 | BF16 | F16) => {
            // cuBLASLt's fp8 kernels take only the "TN" layout (both operands K-contiguous)
            // and dims that are multiples of 16.
            if a_order != MemOrder::RowMajor || b_order != MemOrder::ColMajor {
                return bad(format!(
                    "fp8 GEMM needs A row-major and B column-major (K contiguous in both), got \
                     A {a_order:?}, B {b_order:?}"
                ));
            }
            if m % 16 != 0 || n % 16 != 0 || k % 16 != 0 {
                return bad(format!(
                    "fp8 GEMM needs M, N and K to be multiples of 16, got {m}x{n}x{k}"
                ));
            }
            GemmKind::Fp8 { output: c_t }
        }
        _ => {
            return bad(format!(
                "no cuBLAS GEMM for {a_t} x {b_t} -> {c_t} (supported: f32, tf32, f64, \
                 f16/bf16 -> same or f32, i8 -> i32, f8e4m3 -> f32/bf16/f16)"
            ))
        }
    };
    Ok(((m, n, k), kind))
}

#[cfg(test)]
mod tests {
    use super::*;
    use MemOrder::*;

    /// Column-major GEMM as cuBLAS defines it, on flat memory.
    #[allow(clippy::too_many_arguments)]
    fn blas_ref(g: &ColMajorGemm, x: &[f64], y: &[f64]) -> Vec<f64> {
        let mut c = vec![0.0; g.ld_c * g.n];
        for j in 0..g.n {
            for i in 0..g.m {
                let mut s = 0.0;
                for p in 0..g.k {
                    let xv = if g.trans_x {
                        x[p + i * g.ld_x]
                    } else {
                        x[i + p * g.ld_x]
                    };
                    let yv = if g.trans_y {
                        y[j + p * g.ld_y]
                    } else {
                        y[p + j * g.ld_y]
                    };
                    s += xv * yv;
                }
                c[i + j * g.ld_c] = s;
            }
        }
        c
    }

    fn store(v: &[f64], rows: usize, cols: usize, order: MemOrder) -> Vec<f64> {
        let mut out = vec![0.0; rows * cols];
        for r in 0..rows {
            for c in 0..cols {
                let at = match order {
                    RowMajor => r * cols + c,
                    ColMajor => r + c * rows,
                };
                out[at] = v[r * cols + c];
            }
        }
        out
    }

    #[test]
    fn every_layout_combination_computes_a_times_b() {
        let (m, n, k) = (5, 3, 4);
        let a: Vec<f64> = (0..m * k).map(|i| (i as f64 * 0.37).sin()).collect();
        let b: Vec<f64> = (0..k * n).map(|i| (i as f64 * 0.91).cos()).collect();
        let mut want = vec![0.0; m * n];
        for i in 0..m {
            for j in 0..n {
                want[i * n + j] = (0..k).map(|p| a[i * k + p] * b[p * n + j]).sum();
            }
        }
        for ao in [RowMajor, ColMajor] {
            for bo in [RowMajor, ColMajor] {
                for co in [RowMajor, ColMajor] {
                    let g = map_to_col_major((m, n, k), ao, bo, co);
                    let (am, bm) = (store(&a, m, k, ao), store(&b, k, n, bo));
                    let (x, y) = if g.swap { (&bm, &am) } else { (&am, &bm) };
                    let c = blas_ref(&g, x, y);
                    let expect = store(&want, m, n, co);
                    for (got, exp) in c.iter().zip(&expect) {
                        assert!((got - exp).abs() < 1e-12, "{ao:?} {bo:?} {co:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn fp8_layout_is_tn_in_cublas_terms() {
        let g = map_to_col_major((32, 48, 64), RowMajor, ColMajor, RowMajor);
        assert!(g.trans_x && !g.trans_y);
        assert_eq!((g.ld_x, g.ld_y), (64, 64));
    }

    fn kind(
        a: DType,
        b: DType,
        c: DType,
        tf32: bool,
        ao: MemOrder,
        bo: MemOrder,
        mnk: (usize, usize, usize),
    ) -> Result<GemmKind, String> {
        let (m, n, k) = mnk;
        plan_gemm((a, &[m, k], ao), (b, &[k, n], bo), (c, &[m, n]), tf32)
            .map(|(_, kind)| kind)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn plans_pick_the_library_path() {
        use DType::*;
        let sq = (64, 64, 64);
        assert_eq!(
            kind(F32, F32, F32, false, RowMajor, RowMajor, sq),
            Ok(GemmKind::F32)
        );
        assert_eq!(
            kind(F32, F32, F32, true, RowMajor, RowMajor, sq),
            Ok(GemmKind::Tf32)
        );
        assert_eq!(
            kind(Tf32, F32, F32, false, RowMajor, RowMajor, sq),
            Ok(GemmKind::Tf32)
        );
        assert_eq!(
            kind(BF16, BF16, F32, false, ColMajor, RowMajor, sq),
            Ok(GemmKind::Half {
                input: BF16,
                output: F32
            })
        );
        assert_eq!(
            kind(I8, I8, I32, false, RowMajor, ColMajor, sq),
            Ok(GemmKind::I8)
        );
        assert_eq!(
            kind(F8E4M3, F8E4M3, BF16, false, RowMajor, ColMajor, sq),
            Ok(GemmKind::Fp8 { output: BF16 })
        );
        assert!(kind(F8E4M3, F8E4M3, F32, false, RowMajor, RowMajor, sq)
            .unwrap_err()
            .contains("column-major"));
        assert!(
            kind(F8E4M3, F8E4M3, F32, false, RowMajor, ColMajor, (64, 64, 40))
                .unwrap_err()
                .contains("multiples of 16")
        );
        assert!(kind(F16, BF16, F32, false, RowMajor, RowMajor, sq)
            .unwrap_err()
            .contains("no cuBLAS GEMM"));
    }

    #[test]
    fn shapes_must_chain() {
        let e = plan_gemm(
            (DType::F32, &[4, 5], RowMajor),
            (DType::F32, &[6, 3], RowMajor),
            (DType::F32, &[4, 3]),
            false,
        )
        .unwrap_err();
        assert!(e.to_string().contains("do not chain"), "{e}");
    }
}
