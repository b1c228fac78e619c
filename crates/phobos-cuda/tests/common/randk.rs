//! A generator of small random kernels (as `.ph` text) for differential testing: tile programs
//! of elementwise operations, broadcasts and reductions, and per-thread scalar programs with
//! loops and branches. Inputs are small integers, so every result is exact in any order.

/// A tiny deterministic generator (xorshift64*).
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    pub fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len() as u64) as usize]
    }
}

/// A tile expression over `x` and `y` (both `[R, C]`), `depth` levels deep.
fn tile_expr(rng: &mut Rng, depth: u32, square: bool) -> String {
    if depth == 0 {
        return match rng.below(6) {
            0 | 1 => "x".into(),
            2 | 3 => "y".into(),
            4 => format!("{}", 1 + rng.below(3)),
            _ => "s".into(),
        };
    }
    let a = tile_expr(rng, depth - 1, square);
    let b = tile_expr(rng, depth - 1, square);
    match rng.below(if square { 11 } else { 10 }) {
        0 => format!("({a} + {b})"),
        1 => format!("({a} - {b})"),
        2 => format!("({a} * {b})"),
        3 => format!("max({a}, {b})"),
        4 => format!("min({a}, {b})"),
        5 => format!("where({a} < {b}, {a}, {b})"),
        6 => format!("({a} + sum(x, axis=1))"),
        7 => format!("({a} - max(y, axis=0))"),
        8 => format!("({a} + rowmax({b} + y))"),
        9 => format!("({a} + min({b} + x, axis=0))"),
        _ => format!("({a} + transpose({b} + x))"),
    }
}

/// A tile program: `O = E(x, y)` per `[R, C]` tile and the row sums of O per block column.
pub fn tile_kernel(rng: &mut Rng, idx: usize) -> String {
    let dtype = *rng.pick(&["i32", "f32", "f16"]);
    let threads = *rng.pick(&[64u32, 128, 256]);
    let square = rng.below(3) == 0;
    let (r, c) = if square {
        let n = *rng.pick(&[8i64, 16, 32]);
        (n, n)
    } else {
        (
            *rng.pick(&[1i64, 2, 4, 8, 16]),
            *rng.pick(&[8i64, 16, 32, 64]),
        )
    };
    // f16 products stay exact only while small: keep f16 expressions shallow.
    let depth = if dtype == "f16" {
        1
    } else {
        1 + rng.below(2) as u32
    };
    let e = tile_expr(rng, depth, square);
    let full = *rng.pick(&["sum", "max", "min"]);
    format!(
        "@autotune(R in [{r}], C in [{c}])\n\
         @launch({threads})\n\
         @grid(cdiv(M, R), cdiv(N, C))\n\
         kernel rand_tile_{idx}(X: tensor<{dtype}>[M, N], Y: tensor<{dtype}>[M, N], O: tensor<{dtype}>[M, N], S: tensor<{dtype}>[M, G]) {{\n\
         \x20 let r = ctx.block.x * R\n\
         \x20 let c = ctx.block.y * C\n\
         \x20 let x = X[r :+ R, c :+ C]\n\
         \x20 let y = Y[r :+ R, c :+ C]\n\
         \x20 let s = {full}(x)\n\
         \x20 let t = x + {e}\n\
         \x20 O[r :+ R, c :+ C] = t\n\
         \x20 S[r :+ R, ctx.block.y :+ 1] = sum(t, axis=1)\n\
         }}\n"
    )
}

/// A per-thread statement updating `acc` from `v` (the thread's element).
fn scalar_stmt(rng: &mut Rng, dtype: &str) -> String {
    match rng.below(7) {
        0 => "acc += v".into(),
        1 => format!("acc = acc * {} - v", 1 + rng.below(2)),
        2 => "if v > 0 {\n      acc += v * 2\n    } else {\n      acc -= v\n    }".into(),
        3 => "acc = max(acc, v)".into(),
        4 => "acc = min(acc, v + 3)".into(),
        5 if dtype == "i32" => format!("acc = acc + (v % {})", 2 + rng.below(3)),
        5 => "acc = acc + abs(v)".into(),
        _ => "var j = 0\n    while j < 3 {\n      acc += v\n      j += 1\n      if acc > 20 {\n        break\n      }\n    }".into(),
    }
}

/// A per-thread program: a strided loop over X folding into `acc`, one result per thread.
pub fn scalar_kernel(rng: &mut Rng, idx: usize) -> String {
    let dtype = *rng.pick(&["i32", "f32", "i64"]);
    let threads = *rng.pick(&[32u32, 64, 128]);
    let unroll = *rng.pick(&[1u32, 2, 4]);
    let init = rng.below(3);
    let body: Vec<String> = (0..1 + rng.below(3))
        .map(|_| scalar_stmt(rng, dtype))
        .collect();
    format!(
        "@autotune(U in [{unroll}])\n\
         @launch({threads})\n\
         @grid(G)\n\
         kernel rand_scalar_{idx}(X: tensor<{dtype}>[N], O: tensor<{dtype}>[G, {threads}]) {{\n\
         \x20 var acc: {dtype} = {init}\n\
         \x20 for<unroll U> i in range(ctx.block.x * {threads} + ctx.thread, N, {threads} * G) {{\n\
         \x20   let v = X[i]\n\
         \x20   {}\n\
         \x20 }}\n\
         \x20 O[ctx.block.x, ctx.thread] = acc\n\
         }}\n",
        body.join("\n    ")
    )
}
