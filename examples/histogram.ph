// A histogram of integer keys: H[b] counts the keys of X equal to b. Each thread adds one to
// the bin of each of its keys with `atomic_add`; keys outside [0, BINS) count nowhere (an atomic
// outside the tensor updates nothing). The host zeroes H first. Integer additions commute, so
// the counts are exact whatever order the GPU applies them in.
@autotune(BLOCK in [256, 4096])
@launch(256)
@grid(cdiv(N, BLOCK))
@bytes(4 * N)
kernel histogram(X: tensor<i32>[N], H: tensor<i32>[BINS]) {
  let base = ctx.block.x * BLOCK
  for j in range(ctx.thread, BLOCK, 256) {
    let i = base + j
    if i < N {
      atomic_add(H[X[i]], 1)
    }
  }
}
