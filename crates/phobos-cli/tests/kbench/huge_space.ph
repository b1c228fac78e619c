// Twelve names of eight values: 8^12 points, searched only through a strategy and a bound.
@autotune(A in [1, 2, 3, 4, 5, 6, 7, 8], B in [1, 2, 3, 4, 5, 6, 7, 8], C in [1, 2, 3, 4, 5, 6, 7, 8])
@autotune(D in [1, 2, 3, 4, 5, 6, 7, 8], E in [1, 2, 3, 4, 5, 6, 7, 8], F in [1, 2, 3, 4, 5, 6, 7, 8])
@autotune(G in [1, 2, 3, 4, 5, 6, 7, 8], H in [1, 2, 3, 4, 5, 6, 7, 8], I in [1, 2, 3, 4, 5, 6, 7, 8])
@autotune(J in [1, 2, 3, 4, 5, 6, 7, 8], K in [1, 2, 3, 4, 5, 6, 7, 8], L in [1, 2, 3, 4, 5, 6, 7, 8])
@launch(64)
kernel huge(X: tensor<f32>[64], O: tensor<f32>[64]) {
  // Every point computes the same function: the names only make the space.
  let s = A + B + C + D + E + F + G + H + I + J + K + L
  if s > 0 {
    O[ctx.thread] = X[ctx.thread] * 2.0
  }
}
