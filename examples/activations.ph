// Elementwise epilogues with the math library: an erf-GELU, SiLU (with an fma), a soft-plus in
// base 2 with a power, and roundings, over a vector of runtime length N, one BLOCK-long span per block.
@autotune(BLOCK in [256, 1024])
@launch(256)
@flops(40 * N)
@bytes(24 * N)
kernel activations(
  X: tensor<f32>[N], G: tensor<f32>[N], S: tensor<f32>[N], P: tensor<f32>[N],
  R: tensor<f32>[N], H: tensor<f16>[N]
) {
  let i = ctx.block.x * BLOCK
  let x = X[i :+ BLOCK]
  G[i :+ BLOCK] = 0.5 * x * (1.0 + erf(x * 0.7071067811865476))
  S[i :+ BLOCK] = fma(x, sigmoid(x), sin(x) * cos(x))
  P[i :+ BLOCK] = log2(1.0 + exp2(x)) + log1p(abs(x)) - expm1(-abs(x)) + pow(abs(x), 1.5)
  R[i :+ BLOCK] = floor(x * 4.0) + ceil(x * 4.0) + round(x * 4.0)
  H[i :+ BLOCK] = sigmoid(f16(x)) + erf(f16(x))
}
