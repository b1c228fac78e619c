//! The persistent schedule of the producer form (`PERSIST=1`; plan/persist.rs `Persist`,
//! emit/producer.rs, emit/ahead.rs): the typed record of both attention examples and its
//! refusals, the emitted shape (the producer's and the consumers' loops over the logical
//! blocks, the ring's counter carried across them, the zeroed buffer written once, the logical
//! grid's extents as parameters, `ctx.block` / `ctx.grid` read from the logical block), the
//! launch facts (a persistent launch over the logical grid), and the default's code byte for
//! byte as before the knob; the walk's order (`WALK`, `Walk`): the snake's record, its lines
//! opening both loops, the logical blocks it deals, and WALK=0's code byte for byte as before
//! that knob. The GPU cases are in tests/attention_forms.rs.

mod common;

use phobos_cuda::{Emitted, NoPersist, Persist, QByProducer, Walk};

const FA: &str = "examples/flash_attention.ph";
const D128: &str = "examples/flash_attention_d128.ph";

/// The one loop record's persistence decision, after checking that the notes render it.
fn persist(e: &Emitted) -> Result<Persist, NoPersist> {
    assert_eq!(e.loops.len(), 1, "{:?}", e.loops);
    assert!(e.notes.contains(&e.loops[0].to_string()), "{:?}", e.notes);
    e.loops[0]
        .overlap
        .clone()
        .expect("an overlapped loop")
        .persist
}

/// PERSIST=1 points: (example, pins, types, consumer threads).
const POINTS: [(&str, &str, &str, u32); 4] = [
    (
        D128,
        "BR=128 BC=128 THREADS=384 OVERLAP=1 RING=1 PRODUCER=2 PERSIST=1",
        "T=f16",
        256,
    ),
    (
        D128,
        "BR=64 BC=64 THREADS=256 OVERLAP=2 RING=1 PRODUCER=2 PERSIST=1 CAUSAL=1",
        "T=bf16",
        128,
    ),
    (
        FA,
        "BR=128 BC=128 THREADS=384 MIN_BLOCKS=1 OVERLAP=1 PINGPONG=1 RING=1 PRODUCER=2 PERSIST=1 CAUSAL=1",
        "T=f16",
        256,
    ),
    (
        FA,
        "BR=128 BC=64 THREADS=384 MIN_BLOCKS=1 OVERLAP=2 RING=1 PRODUCER=2 PERSIST=1",
        "T=bf16",
        256,
    ),
];

const TILE_LOOP: &str =
    "for (int ph_tile = (int)blockIdx.x; ph_tile < ph_gx * ph_gy; ph_tile += (int)gridDim.x) {";

#[test]
fn the_record_says_the_blocks_persist() {
    for (path, pins, types, _) in POINTS {
        let e = common::example_sm90(path, pins, types);
        assert_eq!(
            persist(&e),
            Ok(Persist {
                stages: 3,
                q: None,
                walk: Walk::RoundRobin
            }),
            "{pins}"
        );
        assert!(e.loops[0].to_string().contains(
            "; persistent blocks loop over the logical grid, the ring's tile counter carried across them: PERSIST=1"
        ));
        // A persistent launch: the logical grid's extents after the tensor maps.
        assert!(e.persistent, "{pins}");
        assert!(phobos::backend::cuda::launch_facts(&e).persistent);
        let sig = &e.source[e.source.find("extern \"C\"").unwrap()..];
        let sig = &sig[..sig.find('{').unwrap()];
        assert!(
            sig.ends_with("TmaDesc ph_tma1, int ph_gx, int ph_gy) "),
            "{pins}: {sig}"
        );
    }
    // PERSIST=0: nothing said, one block a logical block.
    let off = common::example_sm90(
        D128,
        "BR=128 BC=128 THREADS=384 OVERLAP=1 RING=1 PRODUCER=2 PERSIST=0",
        "T=f16",
    );
    assert_eq!(persist(&off), Err(NoPersist::Knob));
    assert!(!off.loops[0].to_string().contains("persist"));
    assert!(!off.persistent && !off.source.contains("ph_gx"));
}

#[test]
fn the_record_says_why_not() {
    // Without the examples' @where: a producer warp (PRODUCER=1) cannot carry the counter.
    let text = common::source(D128)
        .text
        .replace("@where(PERSIST == 0 || PRODUCER == 2)", "//");
    let e = common::emitted_sm90(
        D128,
        &text,
        "BR=128 BC=64 THREADS=288 OVERLAP=1 PINGPONG=1 RING=1 PRODUCER=1 PERSIST=1",
        "T=f16",
    );
    assert_eq!(persist(&e), Err(NoPersist::Producer));
    assert!(e.loops[0]
        .to_string()
        .contains("; not persistent: the ring has no producer warpgroup (PRODUCER=2)"));
    assert!(!e.persistent && !e.source.contains("ph_tile"));
}

#[test]
fn producer_and_consumers_walk_the_logical_blocks_with_one_counter() {
    for (path, pins, types, consumers) in POINTS {
        let e = common::example_sm90(path, pins, types);
        let src = &e.source;
        // Two walks over the logical blocks: the producer's lane, then the consumers'.
        let walks: Vec<usize> = src.match_indices(TILE_LOOP).map(|(i, _)| i).collect();
        assert_eq!(walks.len(), 2, "{pins}\n{src}");
        let branch = src
            .find(&format!("if (threadIdx.x >= {consumers}) {{"))
            .unwrap();
        let lane = src
            .find(&format!("if (threadIdx.x == {consumers}) {{"))
            .unwrap();
        let ret = branch + src[branch..].find("return;").unwrap();
        assert!(branch < lane && lane < walks[0] && walks[0] < ret && ret < walks[1]);
        // The counter starts once, before each walk, and runs on in both loops over key tiles.
        let start =
            "int ph_ring_t = 0;  // the ring's tiles so far, across this block's logical blocks";
        assert_eq!(src.matches(start).count(), 2, "{pins}");
        for &w in &walks {
            let before = &src[..w];
            assert!(before.trim_end().ends_with(start), "{pins}");
            let walk = common::block_at(src, w);
            assert!(walk.contains("const int ph_bx = ph_tile % ph_gx;"));
            assert!(walk.contains("const int ph_by = ph_tile / ph_gx;"));
            assert_eq!(
                walk.matches("= ph_ring_t++;  // the ring's counter runs on across logical blocks")
                    .count(),
                1,
                "{pins}\n{walk}"
            );
            assert!(!walk.contains("ph_ring_t = 0"), "{pins}");
            // Inside, the logical block, never the launch's.
            let inner = &walk[walk.find('\n').unwrap()..];
            assert!(
                !inner.contains("blockIdx") && !inner.contains("gridDim"),
                "{pins}"
            );
            if pins.contains("CAUSAL=1") {
                assert!(
                    walk.contains("rb = ph::sub(ph::sub(ph_gx, 1), ph_bx);"),
                    "{pins}\n{walk}"
                );
            }
        }
        // The producer's walk: the bounds, then the key tiles' waits and boxes.
        let prod = common::block_at(src, walks[0]);
        assert!(prod.contains(">= 2) ph::ring_wait(ph_ring"), "{pins}");
        assert!(prod.contains("ph::ring_tma_3d("), "{pins}");
        assert!(!prod.contains("ph::Tile<"), "{pins}");
        // The consumers' walk: the whole body, the zeroed buffer written in the first logical
        // block only, the first deferred product reading the previous tile's buffer.
        let cons = common::block_at(src, walks[1]);
        assert!(cons.contains("if (ph_ring_t == 0) ph::mma_zero<"), "{pins}");
        assert!(!cons.contains("\n    ph::mma_zero<"), "{pins}");
        assert!(cons.contains(" = (ph_ring_t + 2) % 3;"), "{pins}");
        assert!(cons.contains("ph::ring_release(ph_ring"), "{pins}");
        assert!(cons.contains("ph::mma_dot_ra<"), "{pins}");
        // The epilogue's store inside the walk.
        assert!(cons.contains("ph::store_tile("), "{pins}\n{cons}");
        assert!(cons.contains(">{O + (long long)bh"), "{pins}\n{cons}");
        assert_eq!(src.matches("__syncthreads").count(), 1, "{pins}");
    }
}

#[test]
fn persist_2_has_the_producer_load_q() {
    for (path, pins, types, consumers) in POINTS {
        let pins = &pins.replace("PERSIST=1", "PERSIST=2");
        let e = common::example_sm90(path, pins, types);
        let br: u32 = pins["BR=".len() + pins.find("BR=").unwrap()..]
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        let d = if path == D128 { 128 } else { 64 };
        let p = persist(&e).unwrap_or_else(|w| panic!("{pins}: {w}"));
        let q: QByProducer = p.q.unwrap_or_else(|| panic!("{pins}: q by the producer"));
        assert_eq!((q.boxes, q.bytes), (d / 64, br * d * 2), "{pins}");
        assert!(e.loops[0].to_string().contains(&format!(
            "the producer loading the resident operand too ({} boxes, {} bytes, on q-full and q-empty mbarriers): PERSIST=2",
            q.boxes, q.bytes
        )));
        // A third map, Q's, with boxes of the block's rows.
        assert_eq!(e.tma.len(), 3, "{pins}");
        assert_eq!(e.tma[2].spec.box_dim, [64, br], "{pins}");
        assert!(e.tma[2].outer.is_some());
        let src = &e.source;
        assert!(src.contains(&format!(
            "ph::ring_init_tma_q<3, {consumers}>(ph_ring1);  // and ph_ring1[6] q full, ph_ring1[7] q empty"
        )));
        let walks: Vec<usize> = src.match_indices(TILE_LOOP).map(|(i, _)| i).collect();
        assert_eq!(walks.len(), 2, "{pins}");
        // The producer: per logical block, q-empty awaited from the second on, q's bytes
        // expected, its boxes, before the block's first K/V tile.
        let prod = common::block_at(src, walks[0]);
        let wait = prod
            .find("if (ph_q_n >= 1) ph::ring_wait(ph_ring1 + 7, (ph_q_n - 1) & 1);")
            .unwrap_or_else(|| {
                panic!(
                    "{pins}
{prod}"
                )
            });
        let expect = prod
            .find(&format!(
                "ph::ring_expect(ph_ring1 + 6, {});  // q's bytes",
                q.bytes
            ))
            .unwrap();
        let boxes: Vec<usize> = prod.match_indices(", &ph_tma2, ").map(|(i, _)| i).collect();
        assert_eq!(boxes.len() as u32, q.boxes, "{pins}");
        let kv = prod.find("for (int c = ").unwrap();
        assert!(wait < expect && expect < boxes[0] && boxes[boxes.len() - 1] < kv);
        assert!(prod[..kv].contains("++ph_q_n;"));
        // The consumers: q-full awaited, no copy of q, q-empty released after the key loop.
        let cons = common::block_at(src, walks[1]);
        let got = cons
            .find("ph::ring_wait(ph_ring1 + 6, ph_q_n & 1);  // q, loaded by the producer")
            .unwrap_or_else(|| {
                panic!(
                    "{pins}
{cons}"
                )
            });
        assert!(
            !cons.contains("mma_prefetch") && !cons.contains("cp_async"),
            "{pins}"
        );
        let key_loop = cons.find("for (int c = ").unwrap();
        let done = cons
            .find("ph::ring_release(ph_ring1 + 7);  // done with q")
            .unwrap();
        assert!(got < key_loop && key_loop < done, "{pins}");
        assert!(cons.trim_end().ends_with("++ph_q_n;"), "{pins}");
        assert_eq!(src.matches("int ph_q_n = 0;").count(), 2, "{pins}");
    }
    // PERSIST=1: q stays the consumers' copy.
    let (path, pins, types, _) = POINTS[0];
    let e = common::example_sm90(path, pins, types);
    assert!(!e.source.contains("ph_q_n") && e.tma.len() == 2);
}

/// The example without the knob: its declaration and its `@where` gone (and `WALK`'s, which
/// names it), every other line in its place.
fn without_knob(path: &str) -> String {
    let text = common::source(path).text;
    let decl = ", PERSIST in {0, 1, 2}";
    assert!(text.contains(decl), "{path} declares PERSIST");
    text.replace(decl, "")
        .replace("@where(PERSIST == 0 || PRODUCER == 2)", "//")
        .replace("@where(WALK == 0 || PERSIST != 0)", "//")
}

#[test]
fn the_default_emits_the_code_before_the_knob() {
    for (path, pins, types) in [
        (
            D128,
            "BR=128 BC=128 THREADS=384 OVERLAP=1 RING=1 PRODUCER=2",
            "T=f16",
        ),
        (
            D128,
            "BR=128 BC=64 THREADS=384 OVERLAP=2 PINGPONG=1 RING=1 PRODUCER=2 CAUSAL=1",
            "T=bf16",
        ),
        (
            D128,
            "BR=128 BC=64 THREADS=288 OVERLAP=1 RING=1 PRODUCER=1",
            "T=f16",
        ),
        (D128, "BR=64 BC=64 THREADS=128 OVERLAP=0 CAUSAL=1", "T=bf16"),
        (
            FA,
            "BR=128 BC=128 THREADS=384 MIN_BLOCKS=1 OVERLAP=1 PINGPONG=1 RING=1 PRODUCER=2",
            "T=f16",
        ),
        (
            FA,
            "BR=64 BC=128 THREADS=128 MIN_BLOCKS=3 OVERLAP=0",
            "T=f16",
        ),
    ] {
        let (now, _) =
            common::knob_off_unchanged(path, &without_knob(path), "PERSIST", pins, types);
        assert!(!now.persistent);
    }
}

/// The snake's walk (`WALK=1`, `Walk::Snake`) as emitted: the loop over its rounds, the logical
/// block of the round, the skip past the grid, x slowest.
const SNAKE: [&str; 5] = [
    "for (int ph_round = 0; ph_round * (int)gridDim.x < ph_gx * ph_gy; ++ph_round) {",
    "const int ph_tile = ph_round * (int)gridDim.x + (ph_round % 2 == 0 ? (int)blockIdx.x : (int)gridDim.x - 1 - (int)blockIdx.x);",
    "if (ph_tile >= ph_gx * ph_gy) continue;",
    "const int ph_bx = ph_tile / ph_gy;  // x slowest: every y's first x, then the next",
    "const int ph_by = ph_tile % ph_gy;",
];

#[test]
fn walk_1_records_the_snake() {
    for (path, pins, types, _) in POINTS {
        for persist_knob in ["PERSIST=1", "PERSIST=2"] {
            let pins = pins.replace("PERSIST=1", persist_knob);
            let snake = common::example_sm90(path, &format!("{pins} WALK=1"), types);
            let p = persist(&snake).unwrap_or_else(|w| panic!("{pins}: {w}"));
            assert_eq!(p.walk, Walk::Snake, "{pins}");
            assert!(snake.loops[0]
                .to_string()
                .ends_with("; the logical blocks walked in a snake, x slowest: WALK=1)"));
            let plain = common::example_sm90(path, &format!("{pins} WALK=0"), types);
            let q = persist(&plain).unwrap_or_else(|w| panic!("{pins}: {w}"));
            assert_eq!(q.walk, Walk::RoundRobin, "{pins}");
            // Nothing else in the record changes.
            assert_eq!(Persist { walk: q.walk, ..p }, q, "{pins}");
            assert!(!plain.loops[0].to_string().contains("snake"), "{pins}");
            assert!(snake.persistent && plain.persistent);
        }
    }
    // Without the examples' @where, WALK=1 at PERSIST=0 has no walk to change: the code is
    // WALK=0's (the header's point aside).
    let (path, pins, types, _) = POINTS[0];
    let text = common::source(path)
        .text
        .replace("@where(WALK == 0 || PERSIST != 0)", "//");
    let pins = pins.replace("PERSIST=1", "PERSIST=0");
    let on = common::emitted_sm90(path, &text, &format!("{pins} WALK=1"), types);
    let off = common::emitted_sm90(path, &text, &format!("{pins} WALK=0"), types);
    assert_eq!(persist(&on), Err(NoPersist::Knob));
    assert_eq!(on.source.replacen(" WALK=1", " WALK=0", 1), off.source);
}

#[test]
fn walk_1_has_both_loops_take_the_snake() {
    for (path, pins, types, consumers) in POINTS {
        let pins = &format!("{} WALK=1", pins.replace("PERSIST=1", "PERSIST=2"));
        let e = common::example_sm90(path, pins, types);
        let src = &e.source;
        assert!(
            !src.contains(TILE_LOOP) && !src.contains("ph_tile +="),
            "{pins}"
        );
        let walks: Vec<usize> = src.match_indices(SNAKE[0]).map(|(i, _)| i).collect();
        assert_eq!(walks.len(), 2, "{pins}\n{src}");
        let lane = src
            .find(&format!("if (threadIdx.x == {consumers}) {{"))
            .unwrap();
        let ret = walks[0] + src[walks[0]..].find("return;").unwrap();
        assert!(lane < walks[0] && ret < walks[1], "{pins}");
        let mut heads = Vec::new();
        for &w in &walks {
            // The counters before the walk, as at WALK=0.
            let start =
                "int ph_ring_t = 0;  // the ring's tiles so far, across this block's logical blocks";
            assert!(src[..w].trim_end().ends_with(start), "{pins}");
            let walk = common::block_at(src, w);
            let lines: Vec<&str> = walk.lines().map(str::trim).collect();
            // The round's logical block, skipped past the grid, then x slowest: the same five
            // lines open both walks (the ring's counters pair the producer's tiles with the
            // consumers' only if both take the same logical blocks in the same order).
            assert!(lines[0].starts_with(SNAKE[0]), "{pins}: {}", lines[0]);
            assert_eq!(lines[1..5], SNAKE[1..], "{pins}\n{walk}");
            heads.push(lines[1..5].join("\n"));
            // Past the round's logical block, only the logical block's indices: neither the
            // launch's block nor its grid.
            let body = lines[5..].join("\n");
            assert!(
                !body.contains("blockIdx") && !body.contains("gridDim"),
                "{pins}"
            );
            assert!(!body.contains("continue;") && !body.contains("break;"));
            assert_eq!(
                walk.matches("= ph_ring_t++;  // the ring's counter runs on across logical blocks")
                    .count(),
                1,
                "{pins}"
            );
            if pins.contains("CAUSAL=1") {
                assert!(body.contains("rb = ph::sub(ph::sub(ph_gx, 1), ph_bx);"));
            }
        }
        assert_eq!(heads[0], heads[1], "{pins}");
        // The producer's q and the consumers' q-full wait, as at WALK=0, with the counter of
        // logical blocks advanced past the skip only.
        let prod = common::block_at(src, walks[0]);
        assert!(prod.contains("if (ph_q_n >= 1) ph::ring_wait(ph_ring1 + 7, (ph_q_n - 1) & 1);"));
        let cons = common::block_at(src, walks[1]);
        assert!(cons.trim_end().ends_with("++ph_q_n;"), "{pins}");
        // Otherwise the kernel is WALK=0's: only the walks' opening lines differ.
        let plain = common::example_sm90(path, &pins.replace("WALK=1", "WALK=0"), types);
        assert_only_walk_differs(src, &SNAKE, &plain.source, pins);
    }
}

/// The logical blocks block `j` of `g` takes in the emitted snake (`SNAKE`'s lines: rounds
/// while `r * g < gx * gy`, t dealt forwards in even rounds and backwards in odd ones, skipped
/// past the grid, x slowest).
fn snake(gx: i64, gy: i64, g: i64, j: i64) -> Vec<(i64, i64)> {
    let mut out = Vec::new();
    let mut r = 0;
    while r * g < gx * gy {
        let t = r * g + if r % 2 == 0 { j } else { g - 1 - j };
        r += 1;
        if t >= gx * gy {
            continue;
        }
        out.push((t / gy, t % gy));
    }
    out
}

#[test]
fn the_snake_deals_every_logical_block_once_and_balances_causal() {
    // The emitted lines are those `snake` follows.
    assert!(SNAKE[1]
        .contains("ph_round % 2 == 0 ? (int)blockIdx.x : (int)gridDim.x - 1 - (int)blockIdx.x"));
    assert!(SNAKE[3].starts_with("const int ph_bx = ph_tile / ph_gy;"));
    for (gx, gy, g) in [
        (5, 3, 2),
        (8, 2, 2),
        (5, 1, 2),
        (9, 1, 4),
        (32, 64, 132),
        (32, 3, 7),
    ] {
        let mut all: Vec<(i64, i64)> = (0..g).flat_map(|j| snake(gx, gy, g, j)).collect();
        all.sort_unstable();
        let grid: Vec<(i64, i64)> = (0..gx).flat_map(|x| (0..gy).map(move |y| (x, y))).collect();
        assert_eq!(all, grid, "{gx} x {gy} over {g}");
    }
    // An odd last round with a skipped low block: 5 x 3 over 2 blocks, block 0 takes 7
    // logical blocks and block 1 eight.
    assert_eq!(snake(5, 3, 2, 0).len(), 7);
    assert_eq!(snake(5, 3, 2, 1).len(), 8);
    // Causal's work per logical block is gx - bx key tiles (rb = gx - 1 - bx): at gx = 32,
    // BH = 64 on 132 blocks the snake gives every block the mean (bench/NOTES.md a15), where
    // round robin's heaviest carries 288.
    let (gx, gy, g) = (32, 64, 132);
    let load = |blocks: Vec<(i64, i64)>| blocks.iter().map(|(x, _)| gx - x).sum::<i64>();
    let most = (0..g).map(|j| load(snake(gx, gy, g, j))).max().unwrap();
    let round_robin = (0..g)
        .map(|j| {
            load(
                (j..gx * gy)
                    .step_by(g as usize)
                    .map(|t| (t % gx, t / gx))
                    .collect(),
            )
        })
        .max()
        .unwrap();
    let mean = gy * gx * (gx + 1) / 2 / g;
    assert_eq!((most, mean, round_robin), (256, 256, 288));
}

/// The example without `WALK`: its declaration and its `@where` gone, every other line in its
/// place.
fn without_walk(path: &str) -> String {
    let text = common::source(path).text;
    let decl = ", WALK in {0, 1, 2}";
    assert!(text.contains(decl), "{path} declares WALK");
    text.replace(decl, "")
        .replace("@where(WALK == 0 || PERSIST != 0)", "//")
}

#[test]
fn walk_0_emits_the_code_before_the_knob() {
    for (path, pins, types, _) in POINTS {
        for persist_knob in ["PERSIST=0", "PERSIST=1", "PERSIST=2"] {
            let pins = pins.replace("PERSIST=1", persist_knob);
            let (now, _) =
                common::knob_off_unchanged(path, &without_walk(path), "WALK", &pins, types);
            assert_eq!(now.persistent, persist_knob != "PERSIST=0", "{pins}");
            if now.persistent {
                assert_eq!(now.source.matches(TILE_LOOP).count(), 2, "{pins}");
            }
        }
    }
}

/// The paired walk (`WALK=2`, `Walk::Paired`) as emitted: units of two logical blocks round
/// robin, the second of an odd gx's middle unit skipped, x and gx - 1 - x of one y.
const PAIRED: [&str; 8] = [
    "for (int ph_round = 0; ; ++ph_round) {",
    "const int ph_unit = (int)blockIdx.x + (ph_round >> 1) * (int)gridDim.x;",
    "const int ph_half = (ph_gx + 1) >> 1;",
    "if (ph_unit >= ph_half * ph_gy) break;",
    "const int ph_p = ph_unit % ph_half;",
    "if ((ph_round & 1) && 2 * ph_p + 1 == ph_gx) continue;  // the middle x of an odd gx, once",
    "const int ph_bx = (ph_round & 1) ? ph_gx - 1 - ph_p : ph_p;",
    "const int ph_by = ph_unit / ph_half;",
];

#[test]
fn walk_2_has_both_loops_take_the_pairs() {
    for (path, pins, types, _) in POINTS {
        let pins = &format!("{} WALK=2", pins.replace("PERSIST=1", "PERSIST=2"));
        let e = common::example_sm90(path, pins, types);
        let p = persist(&e).unwrap_or_else(|w| panic!("{pins}: {w}"));
        assert_eq!(p.walk, Walk::Paired, "{pins}");
        assert!(e.loops[0]
            .to_string()
            .ends_with("; the logical blocks walked in pairs of x and gx - 1 - x: WALK=2)"));
        let src = &e.source;
        assert!(!src.contains(TILE_LOOP), "{pins}");
        let walks: Vec<usize> = src.match_indices(PAIRED[0]).map(|(i, _)| i).collect();
        assert_eq!(walks.len(), 2, "{pins}\n{src}");
        for &w in &walks {
            let walk = common::block_at(src, w);
            let lines: Vec<&str> = walk.lines().map(str::trim).collect();
            assert!(lines[0].starts_with(PAIRED[0]), "{pins}: {}", lines[0]);
            assert_eq!(lines[1..8], PAIRED[1..], "{pins}\n{walk}");
        }
        // Otherwise the kernel is WALK=0's: only the walks' opening lines differ.
        let plain = common::example_sm90(path, &pins.replace("WALK=2", "WALK=0"), types);
        assert_only_walk_differs(src, &PAIRED, &plain.source, pins);
    }
}

/// `src` (a walk's kernel, its walks opening with `walk`'s lines) is `plain` (the same point at
/// WALK=0, its walks opening with the round robin's) but for those lines and the comments.
fn assert_only_walk_differs(src: &str, walk: &[&str], plain: &str, pins: &str) {
    let code = |s: &str, drop: &[&str]| -> Vec<String> {
        s.lines()
            .filter(|l| !l.starts_with("// ") && !drop.iter().any(|d| l.contains(d)))
            .map(str::to_string)
            .collect()
    };
    let round_robin = [
        TILE_LOOP,
        "const int ph_bx = ph_tile % ph_gx;",
        "const int ph_by = ph_tile / ph_gx;",
    ];
    assert_eq!(code(src, walk), code(plain, &round_robin), "{pins}");
}
