// Tiles live in registers: an element of a tile takes no eviction hint.
@launch(128)
kernel pick(X: tensor<f32>[N], Y: tensor<f32>[1]) {
  let t = X[0 :+ 128]
  Y[0] = t[3, cache = evict_last]
}
