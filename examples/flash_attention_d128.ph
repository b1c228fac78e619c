// Attention forward at head dimension 128, O = softmax(Q Kᵀ * scale) V, for BH batch-heads of N
// tokens each, in f16 or bf16 (`--types T=bf16`). The same loop as flash_attention.ph: each block
// computes BR rows of one batch-head, streaming K and V in BC-row tiles with the online softmax
// (running row max m and row sum l). Pin CAUSAL=1 for causal masking (a key column attends only
// to rows at or after it); the key loop then stops at the block's last row.
// OVERLAP=0 makes each wgmma dot wait at once instead of overlapping the softmax; OVERLAP=2
// overlaps with the wait for P·V fenced, so that the exponentials run beside it. PINGPONG=1 has
// the two warpgroups of BR=128 THREADS=256 (64 rows each) take turns issuing the overlapped
// loop's dots, one's softmax beside the other's products (FA3's ping-pong).
// RING=1 (overlapped loops) guards the K/V buffers with full and empty mbarriers instead of two
// block barriers an iteration, so that the warpgroups drift apart (FA3's pipeline, cp.async copies).
// PRODUCER=1 (with RING=1, THREADS = 128 * warpgroups + 32) has the last warp fill the ring by
// TMA while the warpgroups compute (FA3's producer warp); the tile layouts take the warpgroups only.
// PRODUCER=2: the last warpgroup (THREADS = 128 * warpgroups + 128), setmaxnreg moving its
// registers to the consumers. PERSIST=1 (with PRODUCER=2): persistent blocks, one a resident
// slot, each looping over the logical blocks below, the producer's ring running on across them;
// PERSIST=2: the producer loads q by TMA too. WALK=1 (with PERSIST): the logical blocks walked
// x slowest in a snake, which balances causal's unequal row blocks over the persistent blocks.
// WALK=2: the row blocks in pairs (x with gx - 1 - x of one head, one after the other), so that
// every pair carries the same causal work and the blocks in flight span few heads.
@autotune(D in [128], BR in [64, 128], BC in [64, 128], CAUSAL in [0], THREADS in {128, 256, 160, 288, 384},
          OVERLAP in {1, 0, 2}, PINGPONG in {0, 1}, PRODUCER in {0, 1, 2}, RING in {0, 1}, PERSIST in {0, 1, 2}, WALK in {0, 1, 2})
@where(THREADS % 128 == 32 * PRODUCER * PRODUCER % 128 && THREADS - 32 * PRODUCER * PRODUCER >= 128 &&
       THREADS - 32 * PRODUCER * PRODUCER <= 256)
@where(PINGPONG == 0 || (THREADS - 32 * PRODUCER * PRODUCER == 256 && BR == 128 && OVERLAP != 0))
@where(RING == 0 || (OVERLAP != 0 && BR == (THREADS - 32 * PRODUCER * PRODUCER) / 2))
@where(RING == 1 || PRODUCER == 0)
@where(PERSIST == 0 || PRODUCER == 2)
@where(WALK == 0 || PERSIST != 0)
@launch(THREADS)
@grid(cdiv(N, BR), BH)
@flops(4 * BH * N * N * D / (1 + CAUSAL))
@bytes(8 * BH * N * D)
kernel flash_attention_d128<T = f16>(
  Q: tensor<T>[BH, N, D], K: tensor<T>[BH, N, D], V: tensor<T>[BH, N, D],
  O: tensor<T>[BH, N, D], scale: f32
) {
  let bh = ctx.block.y
  // Causal: the row blocks with the most key tiles (the last rows) start first, so that the
  // short ones fill the multiprocessors at the end instead of the long ones running alone.
  var rb = ctx.block.x
  if CAUSAL == 1 {
    rb = ctx.grid.x - 1 - ctx.block.x
  }
  let r = rb * BR
  let q = Q[bh, r :+ BR, :]
  let rows = r + arange(BR)[:, None]
  // The softmax in base 2, as FlashAttention's: the row max m is kept in units of
  // qk_scale = scale * log2(e), so that p = exp2(s * qk_scale - m) is one fused multiply-add and
  // one exp2 an element. scale > 0 (then rowmax(s) * qk_scale is the row max of s * qk_scale).
  let qk_scale = scale * 1.4426950408889634
  var m: tile<f32>[BR, 1] = -inf
  var l: tile<f32>[BR, 1] = 0.0
  var acc: tile<f32>[BR, D] = 0.0
  var hi = N
  if CAUSAL == 1 {
    hi = min(N, r + BR)
  }
  for c in range(0, hi, BC) {
    let cols = c + arange(BC)
    var s = dot_t(q, K[bh, c :+ BC, :])
    s = where(cols < N, s, -inf)
    if CAUSAL == 1 {
      s = where(cols <= rows, s, -inf)
    }
    let m_new = max(m, rowmax(s) * qk_scale)
    let p = exp2(s * qk_scale - m_new)
    let alpha = exp2(m - m_new)
    l = l * alpha + rowsum(p)
    acc = acc * alpha + dot(T(p), V[bh, c :+ BC, :])
    m = m_new
  }
  O[bh, r :+ BR, :] = T(acc / l)
}
