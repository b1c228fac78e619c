kernel k<TA = f16, TB = TA>(A: tensor<TA>[N], B: tensor<TB>[N]) {
  B[0] = TB(A[0])
}
