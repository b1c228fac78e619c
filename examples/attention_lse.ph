// Fused attention forward with the row log-sum-exp (Triton tutorial 06): O = softmax(S) V with
// S = Q Kᵀ * scale, and L[bh, i] = log(sum_j exp(S[i, j])) (natural log), which the backward
// uses to recompute the softmax. As in Triton, the online softmax runs in base 2 (scores scaled
// by log2(e), exp2), and L converts the base-2 max and sum back: (m + log2(l)) * ln(2).
// CAUSAL=1 masks the keys after each query and stops at the block's last row.
// T is the element type of Q, K, V and O: f16 by default, `--types T=bf16` for bf16.
// OVERLAP=0 makes each wgmma dot wait at once instead of overlapping the softmax.
@autotune(D in [64], BR in [32, 128], BC in [32, 128], CAUSAL in {0, 1}, OVERLAP in {1, 0})
@launch(128)
@flops(4 * BH * N * N * D / (1 + CAUSAL))
kernel attention_lse<T = f16>(
  Q: tensor<T>[BH, N, D], K: tensor<T>[BH, N, D], V: tensor<T>[BH, N, D],
  O: tensor<T>[BH, N, D], L: tensor<f32>[BH, N], scale: f32
) {
  let bh = ctx.block.y
  let r = ctx.block.x * BR
  let q = Q[bh, r :+ BR, :]
  let rows = (r + arange(BR))[:, None]
  let qk_scale = scale * 1.4426950408889634
  // Causal: keys past the block's last row are masked for all its rows.
  let kv_end = min(N, r + BR + (1 - CAUSAL) * N)
  var m: tile<f32>[BR, 1] = -inf
  var l: tile<f32>[BR, 1] = 0.0
  var acc: tile<f32>[BR, D] = 0.0
  for c in range(0, kv_end, BC) {
    let cols = (c + arange(BC))[None, :]
    var s = dot_t(q, K[bh, c :+ BC, :]) * qk_scale
    s = where(cols < N, s, -inf)
    if CAUSAL == 1 {
      s = where(cols <= rows, s, -inf)
    }
    let m_new = max(m, rowmax(s))
    let p = exp2(s - m_new)
    let alpha = exp2(m - m_new)
    l = l * alpha + rowsum(p)
    acc = acc * alpha + dot(T(p), V[bh, c :+ BC, :])
    m = m_new
  }
  O[bh, r :+ BR, :] = acc / l
  L[bh, r :+ BR] = reshape((m + log2(l)) * 0.6931471805599453, [BR])
}
