//! The plan's overlapped loops (plan/overlap.rs): which loops with wgmma dots issue the second
//! dot one iteration late beside the first, and why the others do not — typed records, and the
//! code each form emits.

mod common;

use phobos_cuda::{emit_for_arch, EmitOptions, Emitted, LoopRecord, NoOverlap};

fn emitted(path: &str, pins: &str, types: Option<&str>, arch: u32) -> Emitted {
    let k = &common::kernels_at(path, pins, types)[0];
    emit_for_arch(k, &EmitOptions::default(), arch).unwrap_or_else(|e| panic!("{pins}: {e}"))
}

fn emitted_text(text: &str, pins: &str) -> Emitted {
    common::emitted_sm90("t.ph", text, pins, "")
}

/// The one loop record of a kernel, rendered among the notes.
fn one_loop(e: &Emitted) -> &LoopRecord {
    assert_eq!(e.loops.len(), 1, "{:?}", e.loops);
    assert!(e.notes.contains(&e.loops[0].to_string()), "{:?}", e.notes);
    &e.loops[0]
}

#[test]
fn attention_loops_overlap_their_wgmma_dots() {
    for (path, pins, types) in [
        (
            "examples/flash_attention.ph",
            "BR=128 BC=128 THREADS=256",
            None,
        ),
        (
            "examples/flash_attention.ph",
            "BR=64 BC=64 THREADS=128 CAUSAL=1",
            None,
        ),
        ("examples/attention_lse.ph", "BR=64 BC=128 CAUSAL=1", None),
        (
            "examples/flash_attention_d128.ph",
            "BR=128 BC=64 THREADS=256",
            Some("T=bf16"),
        ),
        (
            "examples/flash_attention_d128.ph",
            "BR=64 BC=64 THREADS=128",
            None,
        ),
    ] {
        let e = emitted(path, pins, types, 90);
        let r = one_loop(&e);
        assert_eq!(r.var, "c");
        let o = r
            .overlap
            .as_ref()
            .unwrap_or_else(|w| panic!("{path} {pins}: {w}"));
        // S = dot_t(q, K) is the body's second statement, acc's update its ninth.
        assert_eq!((o.ahead, o.behind, o.buffers), (1, 8, 3), "{path} {pins}");
        assert!(o.smem <= e.dynamic_smem_bytes, "{path} {pins}");
        let src = &e.source;
        // Both products issued, then a wait for the first only; the second awaited at acc's
        // update and after the loop.
        let issue = src.find("true, true>(").expect("an issued dot");
        let wait1 = src.find("ph::wg_wait<1>(").expect("wait_group 1");
        assert!(issue < wait1, "{src}");
        assert_eq!(src.matches("ph::wg_wait<0>(acc)").count(), 2, "{src}");
        assert_eq!(src.matches("ph::wg_commit();").count(), 3, "{src}");
        assert!(src.contains("ph::mma_zero<"), "{src}");
        assert!(src.contains("% 3;"), "{src}");
    }
}

#[test]
fn loops_without_wgmma_have_no_record() {
    // mma.sync: 32 rows a warp, or an sm_80 target.
    assert!(emitted(
        "examples/flash_attention.ph",
        "BR=128 BC=64 THREADS=128",
        None,
        90
    )
    .loops
    .is_empty());
    let e = emitted(
        "examples/flash_attention.ph",
        "BR=128 BC=64 THREADS=256",
        None,
        80,
    );
    assert!(e.loops.is_empty());
    assert!(!e.source.contains("wg_wait"), "{}", e.source);
    assert!(e.source.contains("& 1;"), "{}", e.source);
}

const HEAD: &str = "\
@autotune(R in {64}, C in {64, 128}, D in {64, 256})
@launch(128)
kernel k(
  Q: tensor<f16>[M, D], K: tensor<f16>[N, D], V: tensor<f16>[N, D], O: tensor<f32>[M, D]
) {
  let r = ctx.block.x * R
  let q = Q[r :+ R, :]
  var acc: tile<f32>[R, D] = 0.0
";

fn why_not(body: &str, pins: &str) -> NoOverlap {
    let e = emitted_text(&format!("{HEAD}{body}  O[r :+ R, :] = acc\n}}\n"), pins);
    match &one_loop(&e).overlap {
        Ok(o) => panic!("{body}: overlapped {o:?}"),
        Err(why) => {
            assert!(!e.source.contains("wg_wait"), "{}", e.source);
            *why
        }
    }
}

#[test]
fn loops_that_cannot_overlap_say_why() {
    let plain = "\
  for c in range(0, N, C) {
    let s = dot_t(q, K[c :+ C, :])
    acc = acc + dot(f16(s), V[c :+ C, :])
  }
";
    // The plain loop overlaps; each change below takes one condition away.
    let e = emitted_text(
        &format!("{HEAD}{plain}  O[r :+ R, :] = acc\n}}\n"),
        "C=64 D=64",
    );
    assert!(one_loop(&e).overlap.is_ok(), "{:?}", e.loops);
    let one_dot = "\
  for c in range(0, N, C) {
    acc = acc + dot(q, V[c :+ C, :]) * 0.5
  }
";
    // (q [R, D] · V [C = 64, D = 64]: one wgmma dot.)
    assert_eq!(why_not(one_dot, "C=64 D=64"), NoOverlap::Dots(1));
    let early_exit = plain.replace(
        "    acc = acc",
        "    if c > 64 {\n      break\n    }\n    acc = acc",
    );
    assert_eq!(why_not(&early_exit, "C=64 D=64"), NoOverlap::EarlyExit);
    let reads_acc = plain.replace(
        "    acc = acc + dot",
        "    O[r :+ R, :] = acc\n    acc = acc + dot",
    );
    assert_eq!(why_not(&reads_acc, "C=64 D=64"), NoOverlap::Accumulator);
    let late = plain.replace("dot_t(q, K[c :+ C, :])", "dot_t(q * 2.0, K[c :+ C, :])");
    assert_eq!(why_not(&late, "C=64 D=64"), NoOverlap::LateOperand);
    // D = 256, C = 128: three buffers of K and V tiles (2 x 64 KiB each) exceed the limit.
    match why_not(plain, "D=256 C=128") {
        NoOverlap::SharedMemory { need, limit } => assert!(need > limit),
        other => panic!("{other:?}"),
    }
}
