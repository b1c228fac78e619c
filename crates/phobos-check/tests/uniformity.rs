//! Uniformity: which scalars are per-thread, and where tile statements may run.

mod common;
use common::{clean, error, lower};

fn uniform(k: &phobos_ir::Kernel, name: &str) -> bool {
    k.locals.iter().find(|l| l.name == name).unwrap().uniform
}

#[test]
fn loop_variables_follow_their_bounds() {
    let k = lower(
        "kernel k(X: tensor<f32>[N]) {\n  for i in range(0, N, 64) {\n    X[i] = 0.0\n  }\n  for j in range(ctx.thread, N, 256) {\n    X[j] = 1.0\n  }\n}\n",
    );
    assert!(uniform(&k, "i"));
    assert!(!uniform(&k, "j"));
}

#[test]
fn a_var_assigned_a_per_thread_value_is_per_thread_everywhere() {
    let k = lower(
        "kernel k(X: tensor<f32>[N]) {\n  var a = 0\n  var b = 0\n  for i in range(0, 4) {\n    b = a\n    a = ctx.lane\n  }\n  X[a + b] = 0.0\n}\n",
    );
    // `b` learns it from `a` only in a later pass: the fixpoint.
    assert!(!uniform(&k, "a"));
    assert!(!uniform(&k, "b"));
}

#[test]
fn a_var_assigned_under_a_per_thread_condition_is_per_thread() {
    let k = lower(
        "kernel k(X: tensor<f32>[N]) {\n  var s: f32 = 1.0\n  var u: f32 = 1.0\n  if X[ctx.thread] > 0.0 {\n    s = 2.0\n  }\n  if N > 4 {\n    u = 2.0\n  }\n  X[0] = s + u\n}\n",
    );
    assert!(!uniform(&k, "s"));
    assert!(uniform(&k, "u"));
}

#[test]
fn a_uniform_var_may_feed_tiles() {
    clean(
        "kernel k(X: tensor<f32>[N], Y: tensor<f32>[64]) {\n  var scale: f32 = 1.0\n  for i in range(0, 4) {\n    scale = scale * 2.0\n  }\n  if N > 100 {\n    scale = 0.5\n  }\n  Y[0 :+ 64] = X[0 :+ 64] * scale\n}\n",
    );
}

#[test]
fn per_thread_while_makes_its_vars_per_thread() {
    let k = lower(
        "kernel k(X: tensor<i32>[N]) {\n  var i = ctx.thread\n  var steps = 0\n  while i < N {\n    i += 256\n    steps += 1\n  }\n  X[ctx.thread] = steps\n}\n",
    );
    assert!(!uniform(&k, "steps"));
}

#[test]
fn scalar_statements_may_diverge() {
    clean(
        "kernel k(X: tensor<f32>[N]) {\n  if ctx.thread < 32 {\n    X[ctx.thread] = 1.0\n  } else {\n    X[ctx.thread] = 2.0\n  }\n}\n",
    );
}

#[test]
fn uniform_jumps_keep_tiles_legal() {
    clean(
        "kernel k(X: tensor<f32>[64, N], Y: tensor<f32>[64, 64]) {\n  var acc: tile<f32>[64, 64] = 0.0\n  for j in range(0, N, 64) {\n    if j > 128 {\n      break\n    }\n    if j == 64 {\n      continue\n    }\n    acc += X[0 :+ 64, j :+ 64]\n  }\n  Y[0 :+ 64, 0 :+ 64] = acc\n}\n",
    );
}

#[test]
fn divergence_ends_with_the_loop() {
    clean(
        "kernel k(X: tensor<f32>[64, N], Y: tensor<f32>[64, 64]) {\n  for j in range(0, N) {\n    if X[ctx.thread, j] < 0.0 {\n      break\n    }\n  }\n  Y[0 :+ 64, 0 :+ 64] = X[0 :+ 64, 0 :+ 64]\n}\n",
    );
}

#[test]
fn tile_statements_before_a_per_thread_continue_are_legal() {
    clean(
        "kernel k(X: tensor<f32>[64, N], Y: tensor<f32>[64, 64]) {\n  var acc: tile<f32>[64, 64] = 0.0\n  for j in range(0, N, 64) {\n    acc += X[0 :+ 64, j :+ 64]\n    if X[ctx.thread, j] < 0.0 {\n      continue\n    }\n    Y[ctx.thread, 0] = 1.0\n  }\n  Y[0 :+ 64, 0 :+ 64] = acc\n}\n",
    );
}

#[test]
fn nested_divergence_names_the_outer_condition() {
    let d = error(
        "kernel k(X: tensor<f32>[64]) {\n  if ctx.lane == 0 {\n    if N2 > 0 {\n    }\n  }\n}\n",
        "E0401",
    );
    assert!(d.message.contains("N2"));
    let d = error(
        "kernel k(X: tensor<f32>[64]) {\n  if ctx.warp == 0 {\n    for i in range(0, 2) {\n      X[0 :+ 64] = 0.0\n    }\n  }\n}\n",
        "E0801",
    );
    assert!(d.message.contains("`ctx.warp == 0`"), "{}", d.message);
    assert_eq!(
        d.secondary[0].message,
        "this condition differs between threads"
    );
}

#[test]
fn tile_elements_may_be_read_per_thread() {
    let k = lower(
        "kernel k(X: tensor<f32>[256]) {\n  let t = X[0 :+ 256]\n  let mine = t[ctx.thread]\n  X[ctx.thread] = mine\n}\n",
    );
    assert!(!uniform(&k, "mine"));
}

#[test]
fn reductions_of_tiles_are_uniform() {
    clean(
        "kernel k(X: tensor<f32>[256]) {\n  let t = X[0 :+ 256]\n  let m = max(t)\n  if m > 0.0 {\n    X[0 :+ 256] = t / m\n  }\n}\n",
    );
}

#[test]
fn a_tile_condition_under_divergence_is_a_tile_statement() {
    error(
        "kernel k(X: tensor<f32>[256]) {\n  if ctx.thread < 4 {\n    if sum(X[0 :+ 256]) > 0.0 {\n      X[ctx.thread] = 0.0\n    }\n  }\n}\n",
        "E0801",
    );
}
