//! The mbarrier ring of an overlapped loop's streamed buffers (`RING=1`, plan/overlap.rs
//! `Ring`): the typed record of both attention examples, the loop's synchronization (no block
//! barrier in it; each iteration waits on its buffer's full barrier, the copies of the next wait
//! on their buffer's empty one, the deferred product's wait releases the previous buffer), and
//! the default's code byte for byte as before the knob. The GPU cases are in
//! tests/attention_forms.rs.

mod common;

use phobos_cuda::{Emitted, NoRing, Ring};

const FA: &str = "examples/flash_attention.ph";
const D128: &str = "examples/flash_attention_d128.ph";

/// The example without the knob: its declaration and its `@where` gone, every other line in
/// its place.
fn without_knob(path: &str) -> String {
    let text = common::source(path).text;
    let decl = ", RING in {0, 1}";
    assert!(text.contains(decl), "{path} declares RING");
    (text.replace(decl, "").lines())
        .map(|l| {
            if l.starts_with("@where(RING") {
                "//"
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The one loop record's ring decision, after checking that the notes render the record.
fn ring(e: &Emitted) -> Result<Ring, NoRing> {
    assert_eq!(e.loops.len(), 1, "{:?}", e.loops);
    assert!(e.notes.contains(&e.loops[0].to_string()), "{:?}", e.notes);
    e.loops[0].overlap.clone().expect("an overlapped loop").ring
}

/// Points of both examples the examples' `@where` lets take the ring: one warpgroup of 64 rows
/// or two of 64 (taking turns or not), the overlapped loop plain or fenced, causal and not.
const POINTS: [(&str, &str, &str); 6] = [
    (
        FA,
        "BR=128 BC=128 THREADS=256 MIN_BLOCKS=1 OVERLAP=1",
        "T=f16",
    ),
    (
        FA,
        "BR=128 BC=64 THREADS=256 MIN_BLOCKS=1 OVERLAP=2 PINGPONG=1 CAUSAL=1",
        "T=bf16",
    ),
    (
        FA,
        "BR=64 BC=128 THREADS=128 MIN_BLOCKS=1 OVERLAP=2",
        "T=f16",
    ),
    (
        D128,
        "BR=128 BC=128 THREADS=256 OVERLAP=2 PINGPONG=1",
        "T=f16",
    ),
    (
        D128,
        "BR=128 BC=64 THREADS=256 OVERLAP=1 CAUSAL=1",
        "T=bf16",
    ),
    (D128, "BR=64 BC=64 THREADS=128 OVERLAP=1", "T=f16"),
];

/// The loop's text: from its head to the line closing it (the body is indented deeper).
fn loop_text(src: &str) -> &str {
    let head = src.find("for (int c = ").expect("the loop");
    let indent = src[..head].rsplit('\n').next().unwrap().len();
    let close = format!("\n{}}}\n", " ".repeat(indent));
    let end = head + src[head..].find(&close).expect("the loop's end");
    &src[head..end]
}

#[test]
fn ring_1_records_the_ring_and_0_does_not() {
    for (path, pins, types) in POINTS {
        let on = common::example_sm90(path, &format!("{pins} RING=1"), types);
        assert_eq!(ring(&on), Ok(Ring { stages: 3 }), "{path} {pins}");
        assert!(on.loops[0].to_string().ends_with(
            "; the 3 buffers guarded by full and empty mbarriers, no block barrier in the loop: RING=1)"
        ));
        let off = common::example_sm90(path, &format!("{pins} RING=0"), types);
        assert_eq!(ring(&off), Err(NoRing::Knob), "{path} {pins}");
        assert!(!off.loops[0].to_string().contains("mbarrier"));
        assert!(!off.source.contains("ph::ring_"), "{path} {pins}");
    }
    // The serial loop has no overlapped record: RING=1 changes nothing there.
    let text = common::source(D128).text.replace("@where(RING", "//");
    let serial = |ring: u32| {
        common::emitted_sm90(
            D128,
            &text,
            &format!("BR=64 BC=64 THREADS=128 OVERLAP=0 RING={ring}"),
            "T=f16",
        )
    };
    let (on, off) = (serial(1), serial(0));
    assert!(on.loops[0].overlap.is_err());
    assert!(!on.source.contains("ph::ring_"));
    let rest = |s: &str| s.lines().skip(1).map(str::to_string).collect::<Vec<_>>();
    assert_eq!(rest(&on.source), rest(&off.source));
}

#[test]
fn the_loop_waits_on_mbarriers_and_has_no_block_barrier() {
    for (path, pins, types) in POINTS {
        let e = common::example_sm90(path, &format!("{pins} RING=1"), types);
        let src = &e.source;
        let body = loop_text(src);
        assert!(!body.contains("__syncthreads"), "{pins}\n{body}");
        assert!(!body.contains("cp_async_wait"), "{pins}\n{body}");
        let at = |needle: &str| {
            assert_eq!(
                body.matches(needle).count(),
                1,
                "{pins}: one {needle}\n{body}"
            );
            body.find(needle).unwrap()
        };
        // The next tiles' copies: after their buffer's empty barrier (parity of the use three
        // iterations back), then arriving on its full one; this iteration's buffer awaited on
        // its full barrier, then published to the tensor cores, before the first product.
        let it = body.find("const int ph_it").expect("the iteration index");
        let name = &body[it + "const int ".len()..];
        let it_name = &name[..name.find(' ').unwrap()];
        let empty = at(&format!("if ({it_name} >= 1) ph::ring_wait(ph_ring"));
        assert!(body[empty..].starts_with(&format!(
            "if ({it_name} >= 1) ph::ring_wait(ph_ring1 + 3 + "
        )));
        assert!(body[empty..].contains(&format!("(({it_name} - 1) / 3) & 1);")));
        let copy = body.find("ph::mma_prefetch<").unwrap();
        let copied = at("ph::ring_copied(ph_ring1 + ");
        let full = at("ph::ring_wait(ph_ring1 + ph_buf");
        let full_line = body[full..].lines().next().unwrap();
        assert!(
            full_line.ends_with(&format!(", ({it_name} / 3) & 1);")),
            "{full_line}"
        );
        let publish = at("ph::mma_publish();");
        let first = body.find("ph::mma_dot<").unwrap();
        assert!(empty < copy && copy < copied && copied < full, "{pins}");
        assert!(full < publish && publish < first, "{pins}");
        // The previous buffer released after the deferred product's wait, before `prev` moves on.
        let wait0 = at("ph::wg_wait<0>(acc);");
        let release = at("ph::ring_release(ph_ring1 + 3 + ph_prev");
        let moved = body[release..].find("ph_prev").unwrap();
        assert!(wait0 < release, "{pins}");
        assert!(body[release + moved..].contains(" = ph_buf"), "{pins}");
        // Before the loop: the barriers set up and the block synchronized before the first
        // arrival; the zeroed buffer published by a block barrier.
        let head = src.find("for (int c = ").unwrap();
        let init = src.find("ph::ring_init<3, ").unwrap();
        let first_copied = src.find("ph::ring_copied(ph_ring1);").unwrap();
        assert!(
            src[init..first_copied].contains("__syncthreads();"),
            "{pins}"
        );
        let zero = src.find("ph::mma_zero<").unwrap();
        assert!(first_copied < zero && zero < head, "{pins}");
        assert!(
            src[zero..head].contains("ph::mma_publish();\n  __syncthreads();"),
            "{pins}"
        );
        // After it: the copies committed and awaited (the first one's, when the loop ran none).
        let after = &src[head + body.len()..];
        assert!(after.contains("ph::gemm::cp_async_commit();\n  ph::gemm::cp_async_wait<0>();"));
    }
    // The header: every thread's arrival counted, the cp.async arrival not incrementing.
    let h = phobos_cuda::header_text(phobos_cuda::MMA_HEADER).unwrap();
    let defs = &h[h.find("void ring_init(").unwrap()..];
    assert!(defs.contains("gemm::mbar_init(gemm::smem_u32(bars + s), THREADS)"));
    assert!(defs.contains("cp.async.mbarrier.arrive.shared::cta.b64 [%0];"));
}

#[test]
fn the_default_emits_the_code_before_the_knob() {
    for (path, pins, types) in POINTS {
        let off = common::example_sm90(path, &format!("{pins} RING=0"), types);
        let before = common::emitted_sm90(path, &without_knob(path), pins, types);
        let rest = |s: &str| s.lines().skip(1).map(str::to_string).collect::<Vec<_>>();
        assert_eq!(rest(&off.source), rest(&before.source), "{path} {pins}");
        assert!(off.source.lines().next().unwrap().contains("RING=0"));
        assert_eq!(off.notes, before.notes, "{path} {pins}");
    }
    for path in [FA, D128] {
        let e = common::example_sm90(path, "", "T=f16");
        assert!(e.source.lines().next().unwrap().contains("RING=0"));
        assert!(!e.source.contains("ph::ring_"));
    }
}

#[test]
fn a_loop_streaming_nothing_says_why_not() {
    // Both dots read tiles loaded before the loop (residents): no buffer to guard.
    let text = "\
@autotune(R in {64}, C in {64}, D in {64}, RING in {0, 1})
@launch(128)
kernel k(
  Q: tensor<f16>[M, D], K: tensor<f16>[N, D], V: tensor<f16>[N, D], O: tensor<f32>[M, D]
) {
  let r = ctx.block.x * R
  let q = Q[r :+ R, :]
  let kt = K[0 :+ C, :]
  let vt = V[0 :+ C, :]
  var acc: tile<f32>[R, D] = 0.0
  for c in range(0, N, C) {
    let s = dot_t(q, kt)
    acc = acc + dot(f16(s), vt)
  }
  O[r :+ R, :] = acc
}
";
    let e = common::emitted_sm90("t.ph", text, "RING=1", "");
    assert_eq!(ring(&e), Err(NoRing::NothingStreamed));
    assert!(e.loops[0]
        .to_string()
        .ends_with("; no mbarrier ring: the loop streams no operand)"));
    assert!(!e.source.contains("ph::ring_"), "{}", e.source);
}
