// Extents are indexed as i32: a static dim above 2147483647 cannot be addressed.
kernel f(X: tensor<f32>[4294967296, 4294967296]) {
  X[0, 0] = 1.0
}
