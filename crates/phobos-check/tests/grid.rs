//! Grid inference and `@grid`.

mod common;
use common::{error, lower, lower_at};
use phobos_ir::eval::display;

fn grid(k: &phobos_ir::Kernel) -> Vec<String> {
    k.grid.iter().map(|g| display(g, k)).collect()
}

#[test]
fn seed_gemm_grid() {
    let src = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/gemm.ph"
    ))
    .unwrap();
    assert_eq!(
        grid(&lower_at(&src, Some("TILE_M=64 TILE_N=128"))),
        ["cdiv(M, 64)", "cdiv(N, 128)", "1"]
    );
}

#[test]
fn no_block_read_is_one_block() {
    let src = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/partial_sums.ph"
    ))
    .unwrap();
    assert_eq!(grid(&lower(&src)), ["1", "1", "1"]);
}

#[test]
fn element_index_and_scaled_forms() {
    let k = lower(
        "kernel k(X: tensor<f32>[M, N], Y: tensor<f32>[B, N]) {\n  let r = ctx.block.x\n  let c = 64 * ctx.block.y\n  X[r, c :+ 64] = 0.0\n  Y[ctx.block.z, ctx.block.y * 64 :+ 64] = 1.0\n}\n",
    );
    assert_eq!(grid(&k), ["M", "cdiv(N, 64)", "B"]);
    // y: cdiv(N, 64) from X and 4096 / 128 = 32 from Y disagree.
    let d = error(
        "kernel k(X: tensor<f32>[M, N], Y: tensor<f32>[B, 4096]) {\n  let c = 64 * ctx.block.y\n  X[0, c :+ 64] = 0.0\n  Y[0, 128 * ctx.block.y :+ 128] = 1.0\n}\n",
        "E0902",
    );
    assert!(
        d.message.contains("cdiv(N, 64)") && d.message.contains("cdiv(4096, 128)"),
        "{}",
        d.message
    );
}

#[test]
fn static_dims_fold() {
    let k = lower("kernel k(X: tensor<f32>[1000]) {\n  X[ctx.block.x * 64 :+ 64] = 0.0\n}\n");
    assert_eq!(grid(&k), ["16", "1", "1"]);
}

#[test]
fn only_the_axes_read_get_extents() {
    let k = lower("kernel k(X: tensor<f32>[M, N]) {\n  X[0, ctx.block.y * 32 :+ 32] = 0.0\n}\n");
    assert_eq!(grid(&k), ["1", "cdiv(N, 32)", "1"]);
}

#[test]
fn explicit_grid_wins_and_may_read_scalars() {
    let k = lower(
        "@grid(cdiv(M, 64), splits)\nkernel k(X: tensor<f32>[M], splits: i32) {\n  X[ctx.block.x * 3 + ctx.block.y] = 0.0\n}\n",
    );
    assert_eq!(grid(&k), ["cdiv(M, 64)", "splits", "1"]);
}

#[test]
fn unknown_grid_suggests_the_known_axes() {
    let d = error(
        "kernel k(X: tensor<f32>[M, N]) {\n  X[ctx.block.x * 16 :+ 16, ctx.block.y + 1] = 0.0\n}\n",
        "E0901",
    );
    assert_eq!(
        d.help.as_deref(),
        Some("give the grid explicitly: `@grid(cdiv(M, 16), <blocks along y>)`")
    );
}

#[test]
fn disagreement_at_some_points_is_a_warning() {
    let d = common::diags(
        "@autotune(A in [32, 64], B in [32, 64])\nkernel k(X: tensor<f32>[M], Y: tensor<f32>[M]) {\n  X[ctx.block.x * A :+ A] = 0.0\n  Y[ctx.block.x * B :+ B] = 0.0\n}\n",
    );
    assert_eq!(d.len(), 1, "{}", common::show(&d));
    assert_eq!(d[0].code, "W0003");
    assert!(
        d[0].message
            .starts_with("2 of 4 points do not check, e.g. A=32 B=64: "),
        "{}",
        d[0].message
    );
}
