//! FA3's hdim-64 tile in `examples/flash_attention.ph`: BR=192, three consumer warpgroups of 64
//! rows beside the producer warpgroup (`PRODUCER=2 THREADS=512 RING=1`). The plan record's
//! register split (`Producer::regs`: 24 registers a producer thread, 160 a consumer one, where
//! two consumer warpgroups get 240), the deferred P·V's operand kept packed to T across
//! iterations in that budget (`Overlap::kept`), the emitted kernel (a snapshot), and the compile:
//! BC=64 and BC=128 fit 160 registers with no spill. The GPU cases are in
//! tests/attention_forms.rs.

mod common;

use phobos_cuda::{reg_split, Emitted, KeptA, MmaInstr, Producer, RegSplit};

const FA: &str = "examples/flash_attention.ph";
const FORM: &str = "BR=192 THREADS=512 MIN_BLOCKS=1 RING=1 PRODUCER=2";

fn at(extra: &str, types: &str) -> Emitted {
    common::example_sm90(FA, &format!("{FORM} {extra}"), types)
}

/// The one loop's producer record, after checking that the notes render the record.
fn producer(e: &Emitted) -> Producer {
    assert_eq!(e.loops.len(), 1, "{:?}", e.loops);
    assert!(e.notes.contains(&e.loops[0].to_string()), "{:?}", e.notes);
    let o = e.loops[0].overlap.clone().expect("an overlapped loop");
    o.producer.expect("a producer")
}

#[test]
fn the_split_fits_the_register_file() {
    let three = RegSplit {
        producer: 24,
        consumer: 160,
    };
    let two = RegSplit {
        producer: 24,
        consumer: 240,
    };
    assert_eq!(reg_split(384, 128), Some(three));
    assert_eq!(reg_split(256, 128), Some(two));
    // One consumer warpgroup: the launch bound of 256 threads already allows 255. A producer
    // warp: ptxas drops setmaxnreg in a block that is not whole warpgroups.
    assert_eq!(reg_split(128, 128), None);
    assert_eq!(reg_split(256, 32), None);
    for consumers in [256, 384] {
        let r = reg_split(consumers, 128).unwrap();
        assert!(consumers * r.consumer + 128 * r.producer <= 65536);
        assert!(consumers * (r.consumer + 8) + 128 * r.producer > 65536);
        assert_eq!((r.producer % 8, r.consumer % 8), (0, 0));
    }
}

#[test]
fn the_record_gives_three_consumer_warpgroups_160_registers() {
    for (extra, types, bc) in [
        ("BC=64 OVERLAP=1", "T=f16", 64),
        ("BC=128 OVERLAP=2 PERSIST=2 CAUSAL=1", "T=bf16", 128),
        ("BC=64 OVERLAP=1 PERSIST=2 WALK=1", "T=f16", 64),
        ("BC=128 OVERLAP=1 PERSIST=1", "T=f16", 128),
    ] {
        let e = at(extra, types);
        let p = producer(&e);
        assert_eq!(
            p,
            Producer {
                consumers: 384,
                threads: 128,
                boxes: 2,
                bytes: 2 * bc * 64 * 2,
                regs: Some(RegSplit {
                    producer: 24,
                    consumer: 160
                }),
            },
            "{extra}"
        );
        assert!(e.loops[0]
            .to_string()
            .contains("384 consumer threads, setmaxnreg 24 registers a producer thread and 160 a consumer one): PRODUCER=2"));
        let src = &e.source;
        assert_eq!(e.threads, 512, "{extra}");
        assert!(src.contains("__launch_bounds__(512, 1)"), "{extra}");
        // The split: once each, the producer's decrease inside its branch, before the
        // consumers' increase after it.
        let dec = src
            .find("ph::producer_regs<24>();")
            .expect("setmaxnreg.dec");
        let inc = src
            .find("ph::consumer_regs<160>();")
            .expect("setmaxnreg.inc");
        assert!(dec < src.find("return;").unwrap() && src.find("return;").unwrap() < inc);
        assert_eq!(src.matches("ph::producer_regs<").count(), 1);
        assert_eq!(src.matches("ph::consumer_regs<").count(), 1);
        // 192 rows: 12 warps of 16 rows, three wgmma warpgroups of 64; the consumers' barriers
        // count their 384 threads, and so do the ring's empty barriers.
        assert!(
            src.contains(&format!("AccLayout<192, {bc}, 12, 1>")),
            "{extra}"
        );
        // The dots run on wgmma over three warpgroups (12 warps of 16 rows).
        assert!(
            e.dots.iter().any(|d| d.instr == Some(MmaInstr::Wgmma)
                && matches!(&d.lowering, Ok(a) if a.warps_m == 12)),
            "{extra}: {:?}",
            e.dots
        );
        assert!(e.dots.iter().all(|d| e.notes.contains(&d.to_string())));
        assert!(src.contains("ph::consumer_sync<384>();"), "{extra}");
        let init = if extra.contains("PERSIST=2") {
            "ph::ring_init_tma_q<3, 384>("
        } else {
            "ph::ring_init_tma<3, 384>("
        };
        assert!(src.contains(init), "{extra}");
        assert!(src.contains("if (threadIdx.x >= 384) {"), "{extra}");
        // P kept packed across the back edge: zeroed packed before the loop, packed once in
        // the loop after the wait for the deferred product, read packed by both of its issues.
        let o = e.loops[0].overlap.as_ref().unwrap();
        assert_eq!(o.kept, KeptA::Packed, "{extra}");
        assert!(e.loops[0].to_string().ends_with(
            "; the deferred dot's A operand kept packed to its type across iterations)"
        ));
        let dt = if types == "T=bf16" { "BF16" } else { "F16" };
        let decl = format!("ph::PackedA<ph::gemm::{dt}, Mma192x{bc}> ph_kept");
        let at_decl = src.find(&decl).unwrap_or_else(|| panic!("{extra}: {decl}"));
        assert!(src[at_decl..].contains(" = {};"), "{extra}");
        assert_eq!(src.matches("ph::pack_a(ph_kept").count(), 1, "{extra}");
        let pack = src.find("ph::pack_a(ph_kept").unwrap();
        let wait = src.find("ph::wg_wait<0>(acc);").unwrap();
        assert!(at_decl < wait && wait < pack, "{extra}");
        assert_eq!(src.matches(", ph_kept").count(), 2, "{extra}");
    }
}

#[test]
fn two_consumer_warpgroups_keep_their_split() {
    let e = common::example_sm90(
        FA,
        "BR=128 BC=128 THREADS=384 MIN_BLOCKS=1 OVERLAP=1 PINGPONG=1 RING=1 PRODUCER=2 PERSIST=2",
        "T=f16",
    );
    assert_eq!(
        producer(&e).regs,
        Some(RegSplit {
            producer: 24,
            consumer: 240
        })
    );
    assert!(e.source.contains("ph::consumer_regs<240>();"));
    // 240 registers hold P in f32 across the back edge, as before the three-warpgroup form.
    assert_eq!(e.loops[0].overlap.as_ref().unwrap().kept, KeptA::F32);
    assert!(!e.source.contains("PackedA") && !e.source.contains("pack_a"));
    assert!(e.source.contains("ph_kept4 = p;"), "{}", e.source);
}

#[test]
fn the_192_row_kernel() {
    let e = at("BC=64 OVERLAP=1 PERSIST=2 CAUSAL=1", "T=f16");
    insta::assert_snapshot!(format!(
        "// {} threads, {} bytes of dynamic shared memory\n{}",
        e.threads, e.dynamic_smem_bytes, e.source
    ));
}

/// The consumers' 160 registers hold BC=128 with P kept packed (32 registers a thread, where
/// the f32 P's 64 spilled 316 bytes beside the next S and O: bench/NOTES.md a16) once the
/// producer loads q (PERSIST=2; the consumers' own q copies spill 12–84 bytes at PERSIST 0 and
/// 1, as at BR=128 D=128), and BC=64 in every form.
#[test]
fn the_192_row_points_compile_without_spills() {
    let points = [
        ("BC=128 OVERLAP=1 PERSIST=2", "T=f16"),
        ("BC=128 OVERLAP=2 PERSIST=2 CAUSAL=1", "T=bf16"),
        ("BC=128 OVERLAP=1 PERSIST=2 WALK=1 CAUSAL=1", "T=f16"),
        ("BC=64 OVERLAP=1 PERSIST=2 CAUSAL=1", "T=f16"),
        ("BC=64 OVERLAP=2", "T=bf16"),
    ];
    let emitted: Vec<Emitted> = points.iter().map(|(p, t)| at(p, t)).collect();
    let labels: Vec<String> = (points.iter()).map(|(p, t)| format!("{p} {t}")).collect();
    let Some(compiled) = common::assert_no_spills(&emitted, &labels) else {
        return;
    };
    for (label, (_, res)) in labels.iter().zip(&compiled) {
        // The launch bound of 512 threads: 128 registers a thread before setmaxnreg.
        assert!(res.registers <= 128, "{label}: {}", res.registers);
    }
}
