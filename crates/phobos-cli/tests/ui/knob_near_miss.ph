// `STAGE` and `GROUPM` are one typo away from names the code generator reads (`STAGES`,
// `GROUP_M`) and the kernel does not use them: they steer nothing. `TILE_B` is as close to
// `TILE_M`, but the kernel uses it, so it is the kernel's own; `STAGES` is a knob.
@autotune(STAGE in [2, 4], GROUPM in {1, 8}, TILE_B in [64, 128], STAGES in [2, 3])
@launch(TILE_B)
kernel copy(X: tensor<f32>[N], Y: tensor<f32>[N]) {
  let i = ctx.block.x * 256
  Y[i :+ 256] = X[i :+ 256]
}
