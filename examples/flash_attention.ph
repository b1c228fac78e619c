// Attention forward, O = softmax(Q Kᵀ * scale) V, for BH batch-heads of N tokens each and a
// head dimension D fixed at 64. Each block computes BR rows of one batch-head, streaming K and V
// in BC-row tiles with the online softmax (running row max m and row sum l). Pin CAUSAL=1 for
// causal masking (a key column attends only to rows at or after it).
// T is the element type of Q, K, V and O: f16 by default, or `--types T=bf16` / `T=f8e4m3`.
// MIN_BLOCKS asks ptxas for that many resident blocks a multiprocessor (a register cap): three
// 128-thread blocks need at most 168 registers a thread. OVERLAP=0 makes each wgmma dot wait at
// once instead of overlapping the softmax (docs/language.md), for the tuner to compare; OVERLAP=2
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
// BR=192 (THREADS=512, PRODUCER=2 only): FA3's hdim-64 tile, three consumer warpgroups of 64 rows
// beside the producer warpgroup, setmaxnreg giving the consumers 160 registers and the producer 24.
// 192 rows do not divide N = 4096: the last row block of each head is ragged (masked rows).
// RAGGED=1 (CAUSAL=1 BR=192): the row blocks aligned to N's end, so that the ragged one is the
// first (the shortest under causal; clamped to row 0, it overlaps the second) instead of the last.
@autotune(D in [64], BR in [32, 64, 128, 192], BC in [32, 128], CAUSAL in [0], THREADS in {128, 256, 160, 288, 384, 512},
          MIN_BLOCKS in {1, 3}, OVERLAP in {1, 0, 2}, PINGPONG in {0, 1}, PRODUCER in {0, 1, 2}, RING in {0, 1}, PERSIST in {0, 1, 2}, WALK in {0, 1, 2}, RAGGED in {0, 1})
@where(THREADS * MIN_BLOCKS <= 384 || (THREADS == 512 && MIN_BLOCKS == 1))
@where(THREADS % 128 == 32 * PRODUCER * PRODUCER % 128 && THREADS - 32 * PRODUCER * PRODUCER >= 128 &&
       (THREADS - 32 * PRODUCER * PRODUCER <= 256 || (PRODUCER == 2 && BR == 192)))
@where(BR != 192 || (THREADS == 512 && BC != 32))
@where(PINGPONG == 0 || (THREADS - 32 * PRODUCER * PRODUCER == 256 && BR == 128 && OVERLAP != 0))
@where(RING == 0 || (OVERLAP != 0 && BR == (THREADS - 32 * PRODUCER * PRODUCER) / 2 && MIN_BLOCKS == 1))
@where(RING == 1 || PRODUCER == 0)
@where(PERSIST == 0 || PRODUCER == 2)
@where(WALK == 0 || PERSIST != 0)
@where(RAGGED == 0 || (CAUSAL == 1 && BR == 192))
@launch(THREADS, MIN_BLOCKS)
@grid(cdiv(N, BR), BH)
@flops(4 * BH * N * N * D / (1 + CAUSAL))
@bytes(8 * BH * N * D)
kernel flash_attention<T = f16>(
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
  var r0 = rb * BR
  // RAGGED=1: the rows past N (cdiv(N, BR) * BR - N of them) come off the first row block, not
  // the last: under causal the last is the longest (every key tile) and the first the shortest.
  if RAGGED == 1 {
    r0 = max(0, r0 - (ctx.grid.x * BR - N))
  }
  let r = r0
  let q = Q[bh, r :+ BR, :]
  let rows = r + arange(BR)[:, None]
  // The softmax in base 2, as FlashAttention's: the row max m is kept in units of
  // qk_scale = scale * log2(e), so that p = exp2(s * qk_scale - m) is one fused multiply-add and
  // one exp2 an element. scale > 0 (then rowmax(s) * qk_scale is the row max of s * qk_scale).
  let qk_scale = scale * 1.4426950408889634
  var m: tile<f32>[BR, 1] = -inf
  var l: tile<f32>[BR, 1] = 0.0
  var acc: tile<f32>[BR, D] = 0.0
  // Causal: key tiles past the block's last row are fully masked; the loop stops before them.
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
  O[bh, r :+ BR, :] = acc / l
}
