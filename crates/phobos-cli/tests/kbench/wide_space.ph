// Seventeen names of two values: 2^17 points, more than an exhaustive search takes, narrowed by
// a `@where` over the names alone to the 18 points with at most one name at 1 (and by one over
// the problem, false at every point whose A is 1 when N is odd).
@autotune(A in {0, 1}, B in {0, 1}, C in {0, 1}, D in {0, 1}, E in {0, 1}, F in {0, 1})
@autotune(G in {0, 1}, H in {0, 1}, I in {0, 1}, J in {0, 1}, K in {0, 1}, L in {0, 1})
@autotune(M in {0, 1}, P in {0, 1}, Q in {0, 1}, R in {0, 1}, S in {0, 1})
@where(A + B + C + D + E + F + G + H + I + J + K + L + M + P + Q + R + S <= 1)
@where(A == 0 || N % 2 == 0)
@launch(64)
kernel wide(X: tensor<f32>[N], O: tensor<f32>[N]) {
  let s = A + B + C + D + E + F + G + H + I + J + K + L + M + P + Q + R + S
  for i in range(ctx.thread, N, 64) {
    O[i] = X[i] * f32(s + 1)
  }
}
