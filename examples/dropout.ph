// Seeded dropout (Triton tutorial 04): keep x / (1 - p) where rand(seed, offset) > p, with the
// element's index as the offset, so the mask is a function of (seed, index) alone; and the
// same input with Gaussian noise of scale p from randn.
@autotune(BLOCK in [256, 1024])
@launch(256)
kernel dropout(X: tensor<f32>[N], Y: tensor<f32>[N], Z: tensor<f32>[N], p: f32, seed: i32) {
  let i = ctx.block.x * BLOCK
  let offsets = i + arange(BLOCK)
  let x = X[i :+ BLOCK]
  Y[i :+ BLOCK] = where(rand(seed, offsets) > p, x / (1.0 - p), 0.0)
  Z[i :+ BLOCK] = x + p * randn(seed, offsets)
}
