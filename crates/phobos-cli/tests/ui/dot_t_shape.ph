kernel k(Q: tensor<f16>[N, 64], K: tensor<f16>[64, N], S: tensor<f32>[N, N]) {
  let q = Q[0 :+ 32, :]
  let k = K[:, 0 :+ 32]
  S[0 :+ 32, 0 :+ 32] = dot_t(q, k)
}
