kernel k(X: tensor<f32>[N], lo: i32, hi: i32) {
  let t = X[lo : hi]
  X[0] = sum(t)
}
