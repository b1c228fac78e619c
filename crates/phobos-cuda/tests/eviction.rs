//! Eviction hints (`X[.., cache = evict_last]`, `ir::Eviction`): what the emitter writes for
//! hinted tile and element accesses, that unhinted kernels are untouched, and (offline NVRTC)
//! that every hinted form assembles for sm_80 and sm_90a into the PTX cache-eviction-priority
//! forms. On the GPU: gpu_diff runs the hinted online softmax against the interpreter
//! (`cargo test -p phobos-cuda --release --test gpu_diff -- --ignored`).

mod common;

use phobos_cuda::{emit, EmitOptions, Emitted};
use phobos_gpu::{Arch, Compiled};
use phobos_syntax::SourceFile;

/// The kernel of `src` at `pins` with `types`, specialized on `dims` when given.
fn emitted(src: SourceFile, pins: &str, types: &str, dims: Option<&[(&str, i64)]>) -> Emitted {
    let name = src.name.clone();
    let module = phobos_check::load(src.clone()).unwrap_or_else(|d| panic!("{name}: {d:?}"));
    let info = &module.kernels[0];
    let variant = info
        .variant(Some(pins), Some(types), None)
        .unwrap_or_else(|e| panic!("{name} {pins}: {e:?}"));
    let mut k = phobos_check::instantiate(&module, info, &variant)
        .unwrap_or_else(|d| panic!("{name} {pins}: {d:?}"));
    if let Some(dims) = dims {
        let dims: Vec<(String, i64)> = dims.iter().map(|(n, v)| (n.to_string(), *v)).collect();
        phobos_cuda::specialize_alignment(&mut k, &dims);
    }
    emit(&k, &EmitOptions { source: Some(src) }).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn online(types: &str, n: i64) -> Emitted {
    online_at("BLOCK=4096 THREADS=512 EVICT=1", types, n)
}

fn online_at(pins: &str, types: &str, n: i64) -> Emitted {
    emitted(
        common::source("examples/softmax_online.ph"),
        pins,
        types,
        Some(&[("M", 2048), ("N", n)]),
    )
}

/// Every hint on element loads and stores of 1, 2, 4 and 8 bytes, and on tile loads and stores
/// (16-byte vectors when aligned).
const ELEMENTS: &str = "\
@launch(128)
kernel hints<T = f32>(X: tensor<T>[N], Y: tensor<T>[N], Z: tensor<T>[M, N]) {
  let i = ctx.block.x * 128 + ctx.thread
  let a = X[i, cache = evict_last] + X[i + 1, cache = evict_first]
  let b = X[i + 2, cache = no_allocate] + X[i + 3, cache = evict_normal]
  Y[i, cache = evict_first] = a + b
  Y[i + 1, cache = evict_last] = a
  Y[i + 2, cache = no_allocate] = b
  let t = Z[ctx.block.x, 0 :+ 512, cache = evict_last]
  Z[ctx.block.x, 0 :+ 512, cache = evict_first] = t + t
}
";

fn elements(types: &str, dims: Option<&[(&str, i64)]>) -> Emitted {
    emitted(SourceFile::new("hints.ph", ELEMENTS), "", types, dims)
}

#[test]
fn hinted_accesses_name_their_hint() {
    let sm = online("T=bf16", 50257).source;
    // The first pass's two loads, and six of its PARTIALS form, emitted under `if (false)` at
    // the default PARTIALS=0 (four chunks a step, the masked rest's two mask paths).
    assert_eq!(
        sm.matches("ph::load_tile_shifted<Blk1x4096, ph::EVICT_LAST + ph::READ_ONLY>(")
            .count(),
        8,
        "{sm}"
    );
    assert_eq!(
        sm.matches("ph::load_tile_shifted<Blk1x4096, ph::EVICT_FIRST + ph::READ_ONLY>(")
            .count(),
        2,
        "{sm}"
    );
    assert_eq!(
        sm.matches("ph::store_tile<ph::EVICT_FIRST>(").count(),
        1,
        "{sm}"
    );
    let f32 = online("T=f32", 50257).source;
    assert_eq!(
        f32.matches("ph::load_tile<Blk1x4096, ph::EVICT_LAST + ph::READ_ONLY>(")
            .count(),
        8
    );
    assert_eq!(
        f32.matches("ph::load_tile<Blk1x4096, ph::EVICT_FIRST + ph::READ_ONLY>(")
            .count(),
        2
    );
    let el = elements("T=f32", None).source;
    for call in [
        "ph::load1<true, ph::EVICT_LAST + ph::READ_ONLY>(",
        "ph::load1<true, ph::EVICT_FIRST + ph::READ_ONLY>(",
        "ph::load1<true, ph::NO_ALLOCATE + ph::READ_ONLY>(",
        // Z is written too: its load takes no `READ_ONLY`.
        "ph::load_tile<Blk1x512, ph::EVICT_LAST>(",
        "ph::store1<true, ph::EVICT_FIRST>(",
        "ph::store1<true, ph::EVICT_LAST>(",
        "ph::store1<true, ph::NO_ALLOCATE>(",
        "ph::store_tile<ph::EVICT_FIRST>(",
    ] {
        assert!(el.contains(call), "{call}\n{el}");
    }
    // `evict_normal` is no hint: the access is emitted as without one.
    assert!(el.contains("ph::load1<true>("), "{el}");
    assert!(!el.contains("EVICT_NORMAL"), "{el}");
}

#[test]
fn unhinted_kernels_emit_no_hint() {
    // The knob EVICT=0 (the example's default point) drops every hint: the same code as the
    // kernel without them.
    for types in ["T=bf16", "T=f32"] {
        let src = online_at("BLOCK=4096 THREADS=512 EVICT=0", types, 50257).source;
        let plain = online_at("BLOCK=4096 THREADS=512", types, 50257).source;
        assert_eq!(src, plain);
        let body = src.split_once("extern \"C\"").unwrap().1;
        for word in ["EVICT_", "NO_ALLOCATE", "READ_ONLY"] {
            assert!(!body.contains(word), "{types}: {word}\n{src}");
        }
    }
    for (file, pins) in [
        ("examples/softmax.ph", "ROWS=1 BLOCK=4096"),
        ("examples/cross_entropy.ph", "BLOCK=4096 THREADS=256"),
    ] {
        let src = emitted(common::source(file), pins, "", None).source;
        for word in ["EVICT_", "NO_ALLOCATE"] {
            assert!(!src.contains(word), "{file}: {word}\n{src}");
        }
    }
}

/// Compiles each source for `arch`; `None` when NVRTC is missing outside CI.
fn compile_for(emitted: &[Emitted], arch: Arch) -> Option<Vec<Compiled>> {
    let jobs: Vec<_> = (emitted.iter())
        .map(|e| {
            let mut o = common::compile_options(e);
            o.arch = arch;
            (e.source.clone(), o)
        })
        .collect();
    let results = common::compile_or_skip(&jobs, 2)?;
    Some(
        emitted
            .iter()
            .zip(results)
            .map(|(e, r)| r.unwrap_or_else(|err| panic!("{} {arch:?}: {}", e.entry, err.log)))
            .collect(),
    )
}

fn count(ptx: &str, needle: &str) -> usize {
    ptx.lines().filter(|l| l.contains(needle)).count()
}

#[test]
fn hints_assemble_for_sm80_and_sm90a() {
    let cases = [
        online("T=bf16", 50257),
        online("T=f32", 50257),
        online("T=bf16", 50256),
        elements("T=f32", Some(&[("M", 64), ("N", 4096)])),
        elements("T=bf16", None),
        elements("T=f64", None),
        elements("T=u8", None),
    ];
    for arch in [Arch::SM_80, Arch::SM_90A] {
        let Some(compiled) = compile_for(&cases, arch) else {
            return;
        };
        let ptx: Vec<&str> = compiled.iter().map(|c| c.ptx.as_str()).collect();
        // The online softmax: X read through the non-coherent path (never written), its first
        // pass kept in L2, its second read and Y's stores evicted first; 128-bit vectors on
        // the shifted (odd bf16) and aligned paths.
        for p in [ptx[0], ptx[2]] {
            assert!(count(p, "ld.global.nc.L1::evict_last.L2::cache_hint.v4.b32") >= 2);
            assert!(count(p, "ld.global.nc.L1::evict_first.L2::cache_hint.v4.b32") >= 2);
            assert!(count(p, "createpolicy.fractional.L2::evict_last.b64") >= 1);
            assert!(count(p, "createpolicy.fractional.L2::evict_first.b64") >= 1);
        }
        assert!(count(ptx[2], "st.global.L1::evict_first.L2::cache_hint.v4.b32") >= 1);
        assert!(count(ptx[0], "st.global.L1::evict_first.L2::cache_hint.b16") >= 1);
        assert!(count(ptx[1], "ld.global.nc.L1::evict_last.L2::cache_hint.b32") >= 2);
        assert!(count(ptx[1], "st.global.L1::evict_first.L2::cache_hint.b32") >= 1);
        // Element accesses of every width, and each hint (X is never written: `.nc`).
        for (p, ty) in [
            (ptx[3], "b32"),
            (ptx[4], "b16"),
            (ptx[5], "v2.b32"),
            (ptx[6], "u8"),
        ] {
            for form in [
                "ld.global.nc.L1::evict_last.L2::cache_hint.",
                "ld.global.nc.L1::evict_first.L2::cache_hint.",
                "ld.global.nc.L1::no_allocate.",
                "st.global.L1::evict_first.L2::cache_hint.",
                "st.global.L1::evict_last.L2::cache_hint.",
                "st.global.L1::no_allocate.",
            ] {
                assert!(
                    count(p, &format!("{form}{ty} ")) >= 1,
                    "{arch:?} {form}{ty}\n{p}"
                );
            }
        }
        // The aligned tile of the element kernel (f32, 512 wide): 128-bit hinted vectors, not
        // through the non-coherent path (the kernel writes Z).
        assert!(count(ptx[3], "ld.global.L1::evict_last.L2::cache_hint.v4.b32") >= 1);
        assert!(count(ptx[3], "st.global.L1::evict_first.L2::cache_hint.v4.b32") >= 1);
        for (e, c) in cases.iter().zip(&compiled) {
            let res = phobos_gpu::resources::of_compiled(c, &e.entry).expect("ptxas report");
            assert_eq!(res.spill_store_bytes, 0, "{} {arch:?}: spills", e.entry);
        }
    }
}
