//! One small kernel per diagnostic code (E0109 needs a host-made point: see api.rs); a test
//! asserts every code of `phobos_check::codes::ALL` is produced by some case here.

mod common;

/// (code, source): the source must produce a diagnostic with that code.
const CASES: &[(&str, &str)] = &[
    ("E0101", "@autotune(B in [-1, 8])\nkernel k(X: tensor<f32>[N]) {\n  X[0] = 0.0\n}\n"),
    ("E0102", "@autotune(B in [8, 4])\nkernel k(X: tensor<f32>[N]) {\n  X[0] = 0.0\n}\n"),
    ("E0104", "@autotune(B in [8], B in [16])\nkernel k(X: tensor<f32>[N]) {\n  X[0] = 0.0\n}\n"),
    ("E0105", "@autotune(B in [8, 4, 4])\nkernel k(X: tensor<f32>[N]) {\n  X[0] = 0.0\n}\n"),
    ("E0106", "@autotune(B in [N])\nkernel k(X: tensor<f32>[N]) {\n  X[0] = 0.0\n}\n"),
    ("E0107", "@autotune(B in [])\nkernel k(X: tensor<f32>[N]) {\n  X[0] = 0.0\n}\n"),
    ("E0108", "@autotune(T in [8])\nkernel k<T>(X: tensor<T>[N]) {\n  X[0] = T(0)\n}\n"),
    ("E0201", "@allow_tf32\n@allow_tf32\nkernel k(X: tensor<f32>[N]) {\n  X[0] = 0.0\n}\n"),
    ("E0202", "@launch(256, N)\nkernel k(X: tensor<f32>[N]) {\n  X[0] = 0.0\n}\n"),
    ("E0203", "@launch(2048)\nkernel k(X: tensor<f32>[N]) {\n  X[0] = 0.0\n}\n"),
    ("E0204", "@launch(256, 1, 300)\nkernel k(X: tensor<f32>[N]) {\n  X[0] = 0.0\n}\n"),
    ("E0204", "@launch(256, 0)\nkernel k(X: tensor<f32>[N]) {\n  X[0] = 0.0\n}\n"),
    ("E0205", "@grid(N > 2)\nkernel k(X: tensor<f32>[N]) {\n  X[0] = 0.0\n}\n"),
    ("E0206", "@flops(N > 2)\nkernel k(X: tensor<f32>[N]) {\n  X[0] = 0.0\n}\n"),
    ("E0207", "@autotune(B in [8])\n@where(B > 8)\nkernel k(X: tensor<f32>[N]) {\n  X[0] = 0.0\n}\n"),
    ("E0208", "@aligned(Q = 8)\nkernel k(X: tensor<f32>[N]) {\n  X[0] = 0.0\n}\n"),
    ("E0209", "@aligned(N = 0)\nkernel k(X: tensor<f32>[N]) {\n  X[0] = 0.0\n}\n"),
    ("E0210", "@where(ctx.block.x < N)\nkernel k(X: tensor<f32>[N]) {\n  X[0] = 0.0\n}\n"),
    ("E0210", "@bytes(X)\nkernel k(X: tensor<f32>[N]) {\n  X[0] = 0.0\n}\n"),
    ("E0301", "kernel k(X: tensor<f32>[N]) {\n}\nkernel k(X: tensor<f32>[N]) {\n}\n"),
    ("E0302", "kernel k<T, T>(X: tensor<T>[N]) {\n}\n"),
    ("E0302", "kernel k<T>(T: tensor<f32>[N]) {\n}\n"),
    ("E0303", "kernel k(a: float) {\n}\n"),
    ("E0303", "kernel k(X: tensor<f32>[N]) {\n  var t: tile<flt>[4] = 0.0\n}\n"),
    ("E0304", "kernel k(X: tensor<f32>[N]) {\n  var t: tensor<f32>[4] = 0.0\n}\n"),
    ("E0305", "kernel k(X: tensor<f32>[A, B, C, D, E, F, G, H, I]) {\n}\n"),
    ("E0306", "kernel k<N>(X: tensor<f32>[N]) {\n}\n"),
    ("E0307", "kernel k<T = half>(X: tensor<T>[N]) {\n}\n"),
    ("E0308", "kernel k(ctx: f32) {\n}\n"),
    ("E0308", "kernel k(X: tensor<f32>[inf]) {\n}\n"),
    ("E0305", "kernel k(X: tensor<f32>[2147483648]) {\n}\n"),
    ("E0309", "kernel k(X: tensor<f64>[65536, 65536, 65536, 65536]) {\n}\n"),
    ("E0401", "kernel k(X: tensor<f32>[N]) {\n  X[0] = y\n}\n"),
    ("E0402", "kernel k(X: tensor<f32>[N]) {\n  X[0] = expp(1.0)\n}\n"),
    ("E0403", "kernel k(X: tensor<f32>[N]) {\n  X[0] = f32(ctx)\n}\n"),
    ("E0403", "kernel k(X: tensor<f32>[N]) {\n  X[ctx.grid] = 0.0\n}\n"),
    ("E0403", "kernel k(X: tensor<f32>[N]) {\n  X[ctx.threadz] = 0.0\n}\n"),
    ("E0404", "kernel k<T>(X: tensor<T>[N]) {\n  let t = T\n}\n"),
    ("E0405", "kernel k(X: tensor<f32>[N]) {\n  let x\n}\n"),
    ("E0406", "kernel k(X: tensor<f32>[N]) {\n  continue\n}\n"),
    ("E0501", "kernel k(X: tensor<f32>[N], Y: tensor<i32>[N]) {\n  X[0] = X[0] * Y[0]\n}\n"),
    ("E0501", "kernel k(X: tensor<i32>[N]) {\n  X[0] = X[0] + 1.5\n}\n"),
    ("E0502", "kernel k(X: tensor<bool>[N]) {\n  X[0] = -X[1]\n}\n"),
    ("E0502", "kernel k(X: tensor<i32>[N]) {\n  X[0] = i32(sqrt(X[1]))\n}\n"),
    ("E0502", "kernel k(X: tensor<i32>[N]) {\n  X[0] = 1 && 2\n}\n"),
    ("E0503", "kernel k(X: tensor<f32>[N]) {\n  while 1 {\n  }\n}\n"),
    ("E0503", "kernel k(X: tensor<f32>[N]) {\n  X[0] = where(X[1], 1.0, 2.0)\n}\n"),
    ("E0504", "kernel k(X: tensor<f32>[N]) {\n  var t: tile<f32>[4] = X[0 :+ 8]\n}\n"),
    ("E0505", "kernel k(X: tensor<f32>[N]) {\n  X[3000000000] = 0.0\n}\n"),
    ("E0505", "kernel k(X: tensor<f16>[N]) {\n  X[0] = X[1] + 70000.0\n}\n"),
    ("E0506", "kernel k(X: tensor<f32>[N]) {\n  X[0] = sum(X[0 :+ 4], dim=0)\n}\n"),
    ("E0506", "kernel k(X: tensor<f32>[N]) {\n  X[0] = where(true, 1.0)\n}\n"),
    ("E0507", "kernel k(X: tensor<f32>[N], a: i32) {\n  X[0 :+ 4, 0] = sum(X[0 :+ 4], axis=a)\n}\n"),
    ("E0508", "kernel k(X: tensor<i32>[N]) {\n  X[0] = 1 << 70\n}\n"),
    ("E0508", "kernel k(X: tensor<i32>[N]) {\n  X[0] = i32(7) % i32(0)\n}\n"),
    ("E0508", "kernel k(X: tensor<i64>[N]) {\n  X[0] = 9223372036854775807 + 1\n}\n"),
    ("E0509", "kernel k(X: tensor<f32>[N]) {\n  for i in range(0, i64(N)) {\n  }\n}\n"),
    ("E0509", "kernel k(X: tensor<f32>[N]) {\n  var t: tile<f32>[2.5] = 0.0\n}\n"),
    ("E0601", "kernel k(X: tensor<f32>[N]) {\n  X[0 :+ 4] = X[0 :+ 4] + X[0 :+ 3]\n}\n"),
    ("E0602", "kernel k(X: tensor<f16>[N]) {\n  let t = X[0 :+ 4]\n  let d = dot(t, t)\n}\n"),
    ("E0603", "kernel k(X: tensor<bool>[N, N]) {\n  let t = X[0 :+ 4, 0 :+ 4]\n  let d = dot(t, t)\n}\n"),
    ("E0603", "kernel k(A: tensor<i8>[N, N], B: tensor<u8>[N, N]) {\n  let d = dot(A[0 :+ 16, 0 :+ 16], B[0 :+ 16, 0 :+ 16])\n}\n"),
    ("E0604", "kernel k(X: tensor<f32>[N]) {\n  var t: tile<f32>[2, 2, 2] = 0.0\n}\n"),
    ("E0604", "kernel k(X: tensor<f32>[N]) {\n  let t = transpose(X[0 :+ 4])\n}\n"),
    ("E0605", "kernel k(X: tensor<f32>[N]) {\n  let t = arange(0)\n}\n"),
    ("E0605", "kernel k(X: tensor<f32>[N]) {\n  X[4 : 4] = 0.0\n}\n"),
    ("E0606", "kernel k(X: tensor<f32>[N]) {\n  var t: tile<f32>[N] = 0.0\n}\n"),
    ("E0607", "kernel k(X: tensor<f32>[N]) {\n  X[ctx.block.x : 2 * ctx.block.x] = 0.0\n}\n"),
    ("E0608", "kernel k(X: tensor<f32>[N]) {\n  X[4 :] = 0.0\n}\n"),
    ("E0609", "kernel k(X: tensor<f32>[N]) {\n  let t = X[0 :+ 4]\n  X[0] = t[0, 1]\n}\n"),
    ("E0503", "kernel k(X: tensor<f32>[N]) {\n  if X[0 :+ 4] > 0.0 {\n  }\n}\n"),
    ("E0610", "kernel k(X: tensor<f32>[N]) {\n  X[arange(4)] = 0.0\n}\n"),
    ("E0611", "kernel k(X: tensor<f32>[N]) {\n  let i = 3\n  X[0] = f32(i[0])\n}\n"),
    ("E0612", "kernel k(X: tensor<f32>[N]) {\n  let t = max(X[0 :+ 4], axis=-2)\n}\n"),
    ("E0613", "kernel k(X: tensor<f32>[N]) {\n  X[0] = X[0 :+ 4]\n}\n"),
    ("E0614", "kernel k(X: tensor<f32>[N]) {\n  let t = X[0 :+ 4]\n  X[0] = sum(t[1 : 3])\n}\n"),
    ("E0615", "@launch(32)\nkernel k(X: tensor<f32>[8, 8], Y: tensor<f32>[60]) {\n  Y[:] = reshape(X[:, :], [60])\n}\n"),
    ("E0616", "kernel k(X: tensor<f32>[N]) {\n  let s = [1, 2]\n}\n"),
    ("E0701", "kernel k(X: tensor<f32>[N]) {\n  let n = 4\n  n = 5\n}\n"),
    ("E0701", "kernel k(X: tensor<f32>[N]) {\n  for i in range(0, N) {\n    i += 1\n  }\n}\n"),
    ("E0702", "kernel k(X: tensor<f32>[N]) {\n  X = 0.0\n}\n"),
    ("E0702", "kernel k(X: tensor<f32>[N]) {\n  N = 4\n}\n"),
    ("E0702", "@autotune(B in [4])\nkernel k(X: tensor<f32>[N]) {\n  B = 4\n}\n"),
    ("E0703", "kernel k(X: tensor<f32>[N]) {\n  inf = 4.0\n}\n"),
    ("E0703", "kernel k(X: tensor<f32>[N]) {\n  var t: tile<f32>[4] = 0.0\n  (t + t)[0] = 1.0\n}\n"),
    ("E0704", "kernel k(X: tensor<f32>[N]) {\n  for i in range(0, N, 1, 2) {\n  }\n}\n"),
    ("E0704", "kernel k(X: tensor<f32>[N]) {\n  let r = range(0, 4)\n}\n"),
    ("E0705", "kernel k(X: tensor<f32>[N]) {\n  for<unroll N> i in range(0, N) {\n  }\n}\n"),
    ("E0705", "kernel k(X: tensor<f32>[N]) {\n  for<unroll 2048> i in range(0, N) {\n  }\n}\n"),
    ("E0706", "kernel k(X: tensor<f32>[N]) {\n  var t: tile<f32>[2, 2] = 0.0\n  t[0, 0] += 1.0\n}\n"),
    ("E0801", "kernel k(X: tensor<f32>[N]) {\n  while X[ctx.thread] > 0.0 {\n    X[0 :+ 4] = 0.0\n  }\n}\n"),
    ("E0802", "kernel k(X: tensor<f32>[N]) {\n  X[ctx.thread :+ 4] = 0.0\n}\n"),
    ("E0802", "kernel k(X: tensor<f32>[N]) {\n  var t: tile<f32>[4] = f32(ctx.lane)\n}\n"),
    ("E0901", "kernel k(X: tensor<f32>[N]) {\n  X[ctx.block.x * 64 :+ 32] = 0.0\n}\n"),
    ("E0902", "kernel k(X: tensor<f32>[N]) {\n  let t = X[ctx.block.x * 32 :+ 32]\n  X[ctx.block.x * 64 :+ 64] = 0.0\n}\n"),
    ("W0001", "@tune(B in [1])\nkernel k(X: tensor<f32>[N]) {\n  X[0] = 0.0\n}\n"),
    ("W0002", "kernel k(X: tensor<f32>[N]) {\n  X[0] == 1.0\n}\n"),
    ("E0617", "kernel k(X: tensor<f32>[N]) {\n  var s: f32 = 0.0\n  atomic_add(s, 1.0)\n}\n"),
    ("E0618", "kernel k(X: tensor<f64>[N]) {\n  atomic_min(X[0], 1.0)\n}\n"),
    ("E0618", "kernel k(X: tensor<u8>[N]) {\n  atomic_add(X[0], 1)\n}\n"),
    ("E0618", "kernel k(X: tensor<f32>[N], H: tensor<i32>[N]) {\n  atomic_add(H[0], X[0])\n}\n"),
    ("E0619", "kernel k(X: tensor<f32>[N]) {\n  X[1] = atomic_add(X[0], 1.0)\n}\n"),
    ("E0619", "kernel k(X: tensor<f32>[N]) {\n  let o = atomic_max(X[0 :+ 4], 1.0)\n}\n"),
    ("E0620", "kernel k(X: tensor<f32>[N]) {\n  X[0] = X[1, eviction_policy = evict_last]\n}\n"),
    ("E0620", "kernel k(X: tensor<f32>[N]) {\n  X[0, cache = evict_first, cache = evict_last] = 1.0\n}\n"),
    ("E0620", "kernel k(X: tensor<f32>[N]) {\n  let t = X[0 :+ 4]\n  X[0] = t[1, cache = evict_last]\n}\n"),
    ("E0620", "kernel k(X: tensor<f32>[N]) {\n  atomic_add(X[0, cache = evict_last], 1.0)\n}\n"),
    ("E0621", "kernel k(X: tensor<f32>[N]) {\n  X[0] = X[1, cache = evict_lst]\n}\n"),
    ("E0621", "kernel k(X: tensor<f32>[N]) {\n  X[0] = X[1, cache = 2]\n}\n"),
    ("W0004", "@autotune(B in [8, 8])\nkernel k(X: tensor<f32>[N]) {\n  X[0] = 0.0\n}\n"),
    ("W0003", "@autotune(T in [1, 4096])\nkernel k(X: tensor<f32>[N]) {\n  var t: tile<f32>[T, T] = 0.0\n}\n"),
    ("W0005", "@autotune(SPLITK in [1, 4])\nkernel k(X: tensor<f32>[N]) {\n  X[0] = 0.0\n}\n"),
];

#[test]
fn a_knob_name_or_a_near_miss_the_kernel_uses_is_not_a_near_miss() {
    for src in [
        // The knob itself.
        "@autotune(SPLIT_K in [1, 4])\nkernel k(X: tensor<f32>[N]) {\n  X[0] = 0.0\n}\n",
        // Used in the body, in an attribute, in a type.
        "@autotune(SPLITK in [1, 4])\nkernel k(X: tensor<f32>[N]) {\n  X[0] = f32(SPLITK)\n}\n",
        "@autotune(STAGE in [1, 4])\n@where(N % STAGE == 0)\nkernel k(X: tensor<f32>[N]) {\n  X[0] = 0.0\n}\n",
        "@autotune(TILE_B in [4, 8])\nkernel k(X: tensor<f32>[N]) {\n  var t: tile<f32>[TILE_B] = 0.0\n  X[0] = t[0]\n}\n",
        // Far from every knob.
        "@autotune(BLOCK in [64, 128])\nkernel k(X: tensor<f32>[N]) {\n  X[0] = 0.0\n}\n",
    ] {
        let d = common::diags(src);
        assert!(
            !d.iter().any(|d| d.code == "W0005"),
            "{src}\n{}",
            common::show(&d)
        );
    }
}

#[test]
fn every_case_produces_its_code() {
    let mut bad = Vec::new();
    for (code, src) in CASES {
        let d = common::diags(src);
        if !d.iter().any(|d| d.code == *code) {
            bad.push(format!(
                "{code} not produced by:\n{src}got:\n{}\n",
                common::show(&d)
            ));
        }
        for d in &d {
            assert!(
                d.primary.span.hi as usize <= src.len(),
                "span out of range for {code}"
            );
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn every_code_has_a_case() {
    let missing: Vec<&str> = phobos_check::codes::ALL
        .iter()
        .map(|(c, _)| *c)
        // The codes of CUDA C++ sources (E11xx) have their cases in tests/cuda_cpp.rs.
        .filter(|c| *c != phobos_check::codes::BAD_POINT && !c.starts_with("E11"))
        .filter(|c| !CASES.iter().any(|(k, _)| k == c))
        .collect();
    assert!(missing.is_empty(), "codes without a case: {missing:?}");
}
