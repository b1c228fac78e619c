kernel k(X: tensor<f32>[16, 16], axis: i32) {
  let t = X[0 :+ 16, 0 :+ 16]
  X[0 :+ 16, 0 :+ 1] = sum(t, axis=axis)
}
