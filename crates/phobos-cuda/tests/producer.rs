//! The producer of an mbarrier ring (`PRODUCER=1`: a warp, `PRODUCER=2`: a warpgroup;
//! plan/overlap.rs `Producer`, emit/producer.rs): the typed record of both attention examples and
//! its refusals, the emitted shape (the producer's branch before any tile statement, its loop of
//! `expect_tx` and TMA boxes on the rank-3 maps, no cp.async and no block barrier among the
//! consumers, `setmaxnreg` with a producer warpgroup), the launch's thread count and maps, and the
//! default's code byte for byte as before the knob. The GPU cases are in
//! tests/attention_forms.rs.

mod common;

use phobos_cuda::{Emitted, NoProducer, Producer, RegSplit};

const FA: &str = "examples/flash_attention.ph";
const D128: &str = "examples/flash_attention_d128.ph";

/// The one loop record's producer decision, after checking that the notes render the record.
fn producer(e: &Emitted) -> Result<Producer, NoProducer> {
    assert_eq!(e.loops.len(), 1, "{:?}", e.loops);
    assert!(e.notes.contains(&e.loops[0].to_string()), "{:?}", e.notes);
    e.loops[0]
        .overlap
        .clone()
        .expect("an overlapped loop")
        .producer
}

/// Points with a producer: (example, pins, types, consumer threads, producer threads, boxes a
/// stage, bytes a stage).
const POINTS: [(&str, &str, &str, u32, u32, u32, u32); 6] = [
    (
        D128,
        "BR=128 BC=64 THREADS=288 OVERLAP=1 PINGPONG=1 RING=1 PRODUCER=1",
        "T=f16",
        256,
        32,
        4,
        2 * 64 * 128 * 2,
    ),
    (
        D128,
        "BR=128 BC=128 THREADS=384 OVERLAP=2 PINGPONG=1 RING=1 PRODUCER=2 CAUSAL=1",
        "T=bf16",
        256,
        128,
        4,
        2 * 128 * 128 * 2,
    ),
    (
        D128,
        "BR=64 BC=64 THREADS=160 OVERLAP=1 RING=1 PRODUCER=1",
        "T=f16",
        128,
        32,
        4,
        2 * 64 * 128 * 2,
    ),
    (
        D128,
        "BR=64 BC=64 THREADS=256 OVERLAP=2 RING=1 PRODUCER=2",
        "T=f16",
        128,
        128,
        4,
        2 * 64 * 128 * 2,
    ),
    (
        FA,
        "BR=128 BC=128 THREADS=288 MIN_BLOCKS=1 OVERLAP=1 PINGPONG=1 RING=1 PRODUCER=1 CAUSAL=1",
        "T=f16",
        256,
        32,
        2,
        2 * 128 * 64 * 2,
    ),
    (
        FA,
        "BR=64 BC=64 THREADS=256 MIN_BLOCKS=1 OVERLAP=2 RING=1 PRODUCER=2",
        "T=bf16",
        128,
        128,
        2,
        2 * 64 * 64 * 2,
    ),
];

#[test]
fn the_record_says_who_fills_the_ring() {
    for (path, pins, types, consumers, threads, boxes, bytes) in POINTS {
        let e = common::example_sm90(path, pins, types);
        assert_eq!(
            producer(&e),
            Ok(Producer {
                consumers,
                threads,
                boxes,
                bytes,
                // setmaxnreg: a producer warpgroup before two consumer warpgroups.
                regs: (threads == 128 && consumers == 256).then_some(RegSplit {
                    producer: 24,
                    consumer: 240
                }),
            }),
            "{path} {pins}"
        );
        let note = e.loops[0].to_string();
        let which = if threads == 32 { "warp" } else { "warpgroup" };
        assert!(
            note.contains(&format!("; a producer {which} fills them by TMA")),
            "{note}"
        );
        // The launch keeps the producer's threads; the layouts do not.
        assert_eq!(e.threads, consumers + threads, "{pins}");
        assert!(e
            .source
            .contains(&format!("__launch_bounds__({}", consumers + threads)));
        assert!(
            !e.source.contains(&format!(", {}, 1>", consumers + threads)),
            "no layout of the launch's threads: {pins}"
        );
        // The two rank-3 maps (K, V): boxes of 64 columns by the tile's rows by one head.
        assert_eq!(e.tma.len(), 2, "{pins}");
        let bc: u32 = pins
            .split(' ')
            .find_map(|p| p.strip_prefix("BC="))
            .unwrap()
            .parse()
            .unwrap();
        for (m, name) in e.tma.iter().zip(["K", "V"]) {
            assert!(m.outer.is_some(), "{pins}");
            assert_eq!(m.spec.box_dim, [64, bc], "{pins}");
            assert!(e.source.contains(&format!(
                "const __grid_constant__ ph::gemm::sm90::TmaDesc {}",
                m.name
            )));
            assert!(e.source.contains(&format!("&{}, ", m.name)), "{name}");
            assert!(e
                .source
                .contains(&format!("ph::gemm::tma_prefetch_desc(&{});", m.name)));
        }
    }
    // PRODUCER=0: nothing said, nothing emitted.
    let off = common::example_sm90(D128, "BR=128 BC=64 THREADS=256 OVERLAP=1 RING=1", "T=f16");
    assert_eq!(producer(&off), Err(NoProducer::Knob));
    assert!(!off.loops[0].to_string().contains("producer"));
    assert!(off.tma.is_empty() && off.threads == 256);
}

#[test]
fn the_record_says_why_not() {
    // Without the examples' @where: no ring, and a launch that is not 128 * warpgroups + 32.
    let text = common::source(D128)
        .text
        .replace("@where(RING", "//")
        .replace(
            "THREADS % 128 == 32 * PRODUCER * PRODUCER % 128 && THREADS - 32 * PRODUCER * PRODUCER >= 128 &&",
            "",
        );
    let e = common::emitted_sm90(
        D128,
        &text,
        "BR=128 BC=64 THREADS=288 OVERLAP=1 PINGPONG=1 RING=0 PRODUCER=1",
        "T=f16",
    );
    assert_eq!(producer(&e), Err(NoProducer::NoRing));
    assert!(e.loops[0]
        .to_string()
        .contains("; no producer warp: the buffers are no mbarrier ring"));
    // The extra warp still has no part in the layouts: it leaves at once.
    assert!(e
        .source
        .contains("if (threadIdx.x >= 256) return;  // the extra warp: no ring to fill"));
    assert!(!e.source.contains("__syncthreads"));
    let e = common::emitted_sm90(
        D128,
        &text,
        "BR=128 BC=64 THREADS=256 OVERLAP=1 RING=1 PRODUCER=1",
        "T=f16",
    );
    assert_eq!(producer(&e), Err(NoProducer::Threads(256)));
    assert!(!e.source.contains("ring_tma_3d") && e.threads == 256);
}

/// The text of the first `for (int c = ` loop at or after byte `from`, to the line closing it.
fn loop_at(src: &str, from: usize) -> &str {
    let head = from + src[from..].find("for (int c = ").expect("a loop");
    common::block_at(src, head)
}

#[test]
fn the_producer_branches_off_first_and_the_consumers_only_wait() {
    for (path, pins, types, consumers, threads, boxes, bytes) in POINTS {
        let e = common::example_sm90(path, pins, types);
        let src = &e.source;
        let branch = src
            .find(&format!("if (threadIdx.x >= {consumers}) {{"))
            .unwrap_or_else(|| panic!("{pins}: the producer's branch\n{src}"));
        // Before it: the ring set up and the whole block synchronized, no tile statement.
        let init = src
            .find(&format!("ph::ring_init_tma<3, {consumers}>(ph_ring"))
            .unwrap();
        let sync = src.find("__syncthreads();").unwrap();
        assert!(init < sync && sync < branch, "{pins}");
        assert_eq!(src.matches("__syncthreads").count(), 1, "{pins}");
        assert!(!src[..branch].contains("ph::Tile<"), "{pins}");
        assert!(!src[..branch].contains("mma_prefetch"), "{pins}");
        // The producer's loop: one lane, the empty barrier from the third tile on, expect_tx of
        // the stage's bytes, then the boxes on the stage's full barrier.
        let prod = loop_at(src, branch);
        let lane = src[branch..].find(&format!("if (threadIdx.x == {consumers}) {{"));
        assert!(lane.is_some_and(|l| branch + l < src.find(prod).unwrap()));
        assert!(
            prod.contains(">= 2) ph::ring_wait(ph_ring"),
            "{pins}\n{prod}"
        );
        assert!(prod.contains(" - 2) / 3) & 1);"), "{pins}");
        let expect = prod
            .find(&format!(", {bytes});  // the stage's bytes"))
            .unwrap_or_else(|| panic!("{pins}: expect_tx\n{prod}"));
        assert_eq!(prod.matches("ph::ring_tma_3d(").count() as u32, boxes);
        assert!(expect < prod.find("ph::ring_tma_3d(").unwrap());
        assert!(!prod.contains("mma_prefetch") && !prod.contains("cp_async"));
        let after_loop = src.find(prod).unwrap() + prod.len();
        let ret = src[after_loop..].find("return;").unwrap();
        assert!(
            src[after_loop..after_loop + ret].lines().count() <= 4,
            "{pins}"
        );
        // Causal: the producer runs the consumers' bound.
        if pins.contains("CAUSAL=1") {
            let bound = "hi = ph::min(N, ph::add(r, ";
            assert!(src[branch..after_loop].contains(bound), "{pins}");
        }
        // setmaxnreg: a producer warpgroup before two consumer warpgroups.
        let regs = threads == 128 && consumers == 256;
        assert_eq!(src.contains("ph::producer_regs<24>();"), regs, "{pins}");
        assert_eq!(src.contains("ph::consumer_regs<240>();"), regs, "{pins}");
        // The consumers' loop: no copies, no block barrier, the full barrier awaited.
        let rest = &src[after_loop + ret..];
        let body = loop_at(rest, 0);
        assert!(!body.contains("mma_prefetch") && !body.contains("cp_async"));
        assert!(!body.contains("ring_copied") && !body.contains("__syncthreads"));
        assert!(!body.contains("consumer_sync"), "{pins}");
        assert!(body.contains("ph::ring_wait(ph_ring"), "{pins}");
        assert!(body.contains("ph::ring_release(ph_ring"), "{pins}");
        // Their other barriers are named barriers of the consumer threads.
        assert!(
            rest.contains(&format!("ph::consumer_sync<{consumers}>();")),
            "{pins}"
        );
        assert!(!rest.contains("cp_async_commit();\n  ph::gemm::cp_async_wait<0>();\n  ph::pp_end"));
    }
    // The header: the full barriers count one arrival, the empty ones the consumers.
    let h = phobos_cuda::header_text(phobos_cuda::MMA_HEADER).unwrap();
    let defs = &h[h.find("void ring_init_tma(").unwrap()..];
    assert!(defs.contains("gemm::mbar_init(gemm::smem_u32(bars + s), 1)"));
    assert!(defs.contains("gemm::mbar_init(gemm::smem_u32(bars + S + s), CONSUMERS)"));
    assert!(defs.contains(
        "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
    ));
    assert!(defs.contains("bar.sync 1, %0;"));
    assert!(defs.contains("setmaxnreg.dec.sync.aligned.u32"));
}

/// The example without the knob: its declaration gone, its terms zero, its own `@where` gone
/// (and PERSIST's, which names it), every other line in its place.
fn without_knob(path: &str) -> String {
    let text = common::source(path).text;
    let decl = ", PRODUCER in {0, 1, 2}";
    assert!(text.contains(decl), "{path} declares PRODUCER");
    (text
        .replace(decl, "")
        .replace("32 * PRODUCER * PRODUCER", "0")
        .replace("PRODUCER == 2 && BR == 192", "BR == 0")
        .lines())
    .map(|l| {
        if l.starts_with("@where(RING == 1 || PRODUCER") || l.starts_with("@where(PERSIST") {
            "//"
        } else {
            l
        }
    })
    .collect::<Vec<_>>()
    .join("\n")
}

#[test]
fn the_default_emits_the_code_before_the_knob() {
    for (path, pins, types) in [
        (
            D128,
            "BR=128 BC=64 THREADS=256 OVERLAP=1 PINGPONG=1 RING=1",
            "T=f16",
        ),
        (D128, "BR=64 BC=64 THREADS=128 OVERLAP=0 CAUSAL=1", "T=bf16"),
        (
            D128,
            "BR=128 BC=128 THREADS=256 OVERLAP=2 PINGPONG=1 RING=0",
            "T=f16",
        ),
        (
            FA,
            "BR=64 BC=128 THREADS=128 MIN_BLOCKS=3 OVERLAP=0",
            "T=f16",
        ),
        (
            FA,
            "BR=128 BC=64 THREADS=256 MIN_BLOCKS=1 OVERLAP=2 RING=1 CAUSAL=1",
            "T=bf16",
        ),
    ] {
        let (now, _) =
            common::knob_off_unchanged(path, &without_knob(path), "PRODUCER", pins, types);
        assert!(now.tma.is_empty());
    }
}
