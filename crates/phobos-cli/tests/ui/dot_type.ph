kernel k(A: tensor<f16>[M, K], B: tensor<f32>[K, N], C: tensor<f32>[M, N]) {
  let a = A[0 :+ 32, 0 :+ 16]
  let b = B[0 :+ 16, 0 :+ 32]
  C[0 :+ 32, 0 :+ 32] = dot(a, b)
}
