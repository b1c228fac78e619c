//! FA3's ping-pong of two warpgroups (`PINGPONG=1`, plan/overlap.rs `PingPong`): the typed
//! record of both attention examples, the named barriers' places in the emitted loop (a turn
//! around the two products' issue, no block barrier inside it, the first turn warpgroup 0's, the
//! last arrival taken after the loop), and the default's code byte for byte as before the knob.
//! The GPU cases are in tests/attention_forms.rs.

mod common;

use phobos_cuda::{Emitted, NoPingPong, PingPong, PINGPONG_BARRIER};

const FA: &str = "examples/flash_attention.ph";
const D128: &str = "examples/flash_attention_d128.ph";

/// The example without the knob: its declaration and its `@where` gone, every other line in
/// its place (the `#line` directives stay the same).
fn without_knob(path: &str) -> String {
    let text = common::source(path).text;
    let decl = ", PINGPONG in {0, 1}";
    assert!(text.contains(decl), "{path} declares PINGPONG");
    (text.replace(decl, "").lines())
        .map(|l| {
            if l.starts_with("@where(PINGPONG") {
                "//"
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The one loop record's ping-pong decision, after checking that the notes render the record.
fn pingpong(e: &Emitted) -> Result<PingPong, NoPingPong> {
    assert_eq!(e.loops.len(), 1, "{:?}", e.loops);
    assert!(e.notes.contains(&e.loops[0].to_string()), "{:?}", e.notes);
    let o = e.loops[0].overlap.clone().expect("an overlapped loop");
    o.pingpong
}

/// The points of both examples where the schedule applies: two warpgroups of 64 rows, the
/// overlapped loop (plain or fenced), causal and not.
const POINTS: [(&str, &str, &str); 4] = [
    (FA, "BR=128 BC=128 THREADS=256 OVERLAP=1", "T=f16"),
    (FA, "BR=128 BC=64 THREADS=256 OVERLAP=2 CAUSAL=1", "T=bf16"),
    (D128, "BR=128 BC=64 THREADS=256 OVERLAP=1", "T=f16"),
    (
        D128,
        "BR=128 BC=64 THREADS=256 OVERLAP=2 CAUSAL=1",
        "T=bf16",
    ),
];

#[test]
fn two_warpgroups_take_turns_at_pingpong_1() {
    for (path, pins, types) in POINTS {
        let on = common::example_sm90(path, &format!("{pins} PINGPONG=1"), types);
        assert_eq!(
            pingpong(&on),
            Ok(PingPong {
                barrier: PINGPONG_BARRIER
            }),
            "{path} {pins}"
        );
        assert!(on.loops[0].to_string().ends_with(
            "; the two warpgroups take turns issuing them, on named barriers 14 and 15: PINGPONG=1)"
        ));
        let off = common::example_sm90(path, &format!("{pins} PINGPONG=0"), types);
        assert_eq!(pingpong(&off), Err(NoPingPong::Knob), "{path} {pins}");
        assert!(!off.loops[0].to_string().contains("ping-pong"));
        assert!(!off.source.contains("ph::pp_"), "{path} {pins}");
    }
}

#[test]
fn one_warpgroup_says_why_not() {
    // The examples' @where keeps PINGPONG=1 to two warpgroups; without it the record says why.
    for (path, pins) in [
        (
            FA,
            "BR=64 BC=128 THREADS=128 MIN_BLOCKS=1 OVERLAP=1 PINGPONG=1",
        ),
        (D128, "BR=64 BC=64 THREADS=128 OVERLAP=2 PINGPONG=1"),
    ] {
        let text = common::source(path).text.replace("@where(PINGPONG", "//");
        let e = common::emitted_sm90(path, &text, pins, "T=f16");
        assert_eq!(pingpong(&e), Err(NoPingPong::Warpgroups(1)), "{pins}");
        assert!(e.loops[0]
            .to_string()
            .ends_with("; no ping-pong: 1 warpgroup(s), not two)"));
        assert!(!e.source.contains("ph::pp_"), "{pins}");
    }
    // The serial loop has no overlapped record, so nothing to take turns on.
    let text = common::source(D128).text.replace("@where(PINGPONG", "//");
    let e = common::emitted_sm90(
        D128,
        &text,
        "BR=128 BC=64 THREADS=256 OVERLAP=0 PINGPONG=1",
        "T=f16",
    );
    assert!(e.loops[0].overlap.is_err());
    assert!(!e.source.contains("ph::pp_"));
}

#[test]
fn the_turns_enclose_the_issue_and_balance() {
    for (path, pins, types) in POINTS {
        let e = common::example_sm90(path, &format!("{pins} PINGPONG=1"), types);
        let src = &e.source;
        let b = PINGPONG_BARRIER;
        let at = |needle: &str| {
            assert_eq!(
                src.matches(needle).count(),
                1,
                "{pins}: one {needle}\n{src}"
            );
            src.find(needle).unwrap()
        };
        let begin = at(&format!("ph::pp_begin<{b}>();"));
        let turn = at(&format!("ph::pp_turn<{b}>();"));
        let pass = at(&format!("ph::pp_pass<{b}>();"));
        let end = at(&format!("ph::pp_end<{b}>();"));
        let ahead = src.find("ph::mma_dot<").expect("the first dot");
        let wait1 = at("ph::wg_wait<1>(s);");
        let head = src.find("for (int c = ").expect("the loop");
        let last_dot = src.rfind("ph::mma_dot_ra<").unwrap();
        // Before the loop; the turn after the iteration's block barriers, right before the
        // first product; the pass after both products' commits, before the wait for S; the last
        // arrival taken after the loop, before the product issued there.
        assert!(begin < head && head < turn, "{pins}");
        assert!(
            src[..turn].rfind("__syncthreads();").unwrap() > head,
            "{pins}"
        );
        assert!(turn < ahead && pass < wait1, "{pins}");
        assert!(
            src[ahead..pass].matches("ph::wg_commit();").count() == 2,
            "{pins}"
        );
        let in_loop_wait = src.find("ph::wg_wait<0>(acc);").unwrap();
        assert!(in_loop_wait < end && end < last_dot, "{pins}");
        // No block barrier inside a turn: the other warpgroup waits on it without reaching one.
        assert!(!src[turn..pass].contains("__syncthreads"), "{pins}");
        assert!(!src[turn..pass].contains("bar.sync"), "{pins}");
        // The schedule's barriers are no other code's.
        assert!(!src.contains("named_bar_sync("), "{pins}");
        // The header's definitions: 256 threads each, warpgroup 0 first, 1 takes the rest.
        let h = phobos_cuda::header_text(phobos_cuda::MMA_HEADER).unwrap();
        let defs = &h[h.find("int pp_warpgroup()").unwrap()..];
        assert!(defs.contains("if (pp_warpgroup() == 1) asm volatile(\"bar.arrive %0, 256;\""));
        assert!(defs.contains("if (pp_warpgroup() == 0) asm volatile(\"bar.sync %0, 256;\""));
        assert!(defs.contains("\"bar.sync %0, 256;\" ::\"r\"(B + pp_warpgroup())"));
        assert!(defs.contains("\"bar.arrive %0, 256;\" ::\"r\"(B + 1 - pp_warpgroup())"));
    }
}

#[test]
fn the_default_emits_the_code_before_the_knob() {
    for (path, pins, types) in POINTS {
        // The example declaring the knob at its default (0) and the example without it: the
        // same code but for the first line, which names the point.
        let off = common::example_sm90(path, &format!("{pins} PINGPONG=0"), types);
        let before = common::emitted_sm90(path, &without_knob(path), pins, types);
        let rest = |s: &str| s.lines().skip(1).map(str::to_string).collect::<Vec<_>>();
        assert_eq!(rest(&off.source), rest(&before.source), "{path} {pins}");
        assert!(off.source.lines().next().unwrap().contains("PINGPONG=0"));
        assert_eq!(off.notes, before.notes, "{path} {pins}");
        // And PINGPONG=1 adds the four calls, the record's note, nothing else.
        let on = common::example_sm90(path, &format!("{pins} PINGPONG=1"), types);
        let code = |s: &str| -> Vec<String> {
            s.lines()
                .skip(1)
                .filter(|l| !l.contains("ph::pp_") && !l.starts_with("// loop over c:"))
                .map(str::to_string)
                .collect()
        };
        assert_eq!(code(&on.source), code(&off.source), "{path} {pins}");
        assert_eq!(
            on.source.lines().filter(|l| l.contains("ph::pp_")).count(),
            4
        );
    }
    // The examples' default points leave the knob off.
    for path in [FA, D128] {
        let e = common::example_sm90(path, "", "T=f16");
        assert!(e.source.lines().next().unwrap().contains("PINGPONG=0"));
        assert!(!e.source.contains("ph::pp_"));
    }
}
