@autotune(B in [16, 32, 48])
@launch(64)
kernel scale(X: tensor<f32>[N], O: tensor<f32>[N]) {
  let b = ctx.block.x
  // B = 48 asks for a tile of 48 - 2 * 24 = 0 elements: the checker rejects that point.
  var t: tile<f32>[B - 2 * (B / 48) * 24] = X[b * B :+ B - 2 * (B / 48) * 24]
  O[b * B :+ B - 2 * (B / 48) * 24] = t * 3.0
}
