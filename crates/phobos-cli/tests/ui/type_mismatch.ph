kernel k(A: tensor<f32>[N], B: tensor<f16>[N]) {
  let i = ctx.thread
  A[i] = A[i] + B[i]
}
