// examples/flash_attention.ph over a space wide enough to compare search strategies on
// (bench/record_spaces.sh): 4 x 4 row and column tiles, 4 block sizes, 4 occupancy hints and
// 5 register caps, 1280 points.
@autotune(D in [64], BR in [16, 32, 64, 128], BC in [16, 32, 64, 128], THREADS in [64, 128, 256, 512])
@autotune(MIN_BLOCKS in [1, 2, 3, 4], MAX_REGS in [64, 96, 128, 168, 255])
@launch(THREADS, MIN_BLOCKS, MAX_REGS)
@flops(4 * BH * N * N * D)
@bytes(8 * BH * N * D)
kernel attention_space(
  Q: tensor<f16>[BH, N, D], K: tensor<f16>[BH, N, D], V: tensor<f16>[BH, N, D],
  O: tensor<f16>[BH, N, D], scale: f32
) {
  let bh = ctx.block.y
  let r = ctx.block.x * BR
  let q = Q[bh, r :+ BR, :]
  var m: tile<f32>[BR, 1] = -inf
  var l: tile<f32>[BR, 1] = 0.0
  var acc: tile<f32>[BR, D] = 0.0
  for c in range(0, N, BC) {
    let cols = c + arange(BC)
    var s = dot_t(q, K[bh, c :+ BC, :]) * scale
    s = where(cols < N, s, -inf)
    let m_new = max(m, rowmax(s))
    let p = exp(s - m_new)
    let alpha = exp(m - m_new)
    l = l * alpha + rowsum(p)
    acc = acc * alpha + dot(f16(p), V[bh, c :+ BC, :])
    m = m_new
  }
  O[bh, r :+ BR, :] = acc / l
}
