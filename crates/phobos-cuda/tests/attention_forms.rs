//! Attention's loop forms at the points the tuner picks: the P·V dot reads the f32 `p` of
//! `T(p)` straight from its registers in both the overlapped (OVERLAP=1) and the serial
//! (OVERLAP=0) loop (the A fragments' pack rounds it to `T` as the cast would), OVERLAP=2 puts
//! a fence before the overlapped loop's wait for P·V (the typed record says so), the wgmma
//! descriptors are built without the thread index (cuda/phobos_mma.cuh), and, on a GPU, every
//! form (the two warpgroups' ping-pong, PINGPONG=1, the mbarrier ring, RING=1, and its TMA
//! producer, PRODUCER=1 and 2, and its persistent blocks, PERSIST=1 and 2, walked round robin or
//! in a snake, WALK=0 and 1, at a grid capped below the logical grid, and three consumer
//! warpgroups at BR=192, included)
//! against the interpreter at ragged N, causal and not, f16 and bf16, head dimension 64 and 128.

mod common;

use common::attention_cases::{form_cases, D128, FA, PERSIST_CAP};
use common::gpu_run::{run_capped, run_on_gpu};
use phobos_cuda::{emit_for_arch, EmitOptions, Emitted};

fn emitted(path: &str, pins: &str, types: &str) -> Emitted {
    let k = &common::kernels_at(path, pins, Some(types))[0];
    emit_for_arch(k, &EmitOptions::default(), 90).unwrap_or_else(|e| panic!("{pins}: {e}"))
}

/// The source line of the P·V dot (the one `mma_dot_ra` of the loop body).
fn pv_dot(src: &str) -> &str {
    let at = src.find("ph::mma_dot_ra<").expect("a dot from registers");
    let end = at + src[at..].find('\n').unwrap();
    &src[at..end]
}

#[test]
fn the_serial_loop_packs_p_without_the_casts_round_trip() {
    for (path, pins, types, round) in [
        (
            FA,
            "BR=64 BC=128 THREADS=128 MIN_BLOCKS=3 OVERLAP=0",
            "T=f16",
            "ph::rn_f16(p.v",
        ),
        (
            FA,
            "BR=64 BC=128 THREADS=128 MIN_BLOCKS=1 OVERLAP=0 CAUSAL=1",
            "T=bf16",
            "ph::rn_bf16(p.v",
        ),
        (
            D128,
            "BR=64 BC=64 THREADS=128 OVERLAP=0",
            "T=bf16",
            "ph::rn_bf16(p.v",
        ),
    ] {
        let e = emitted(path, pins, types);
        let src = &e.source;
        assert!(!src.contains("wg_wait"), "{pins}: serial loop\n{src}");
        let dot = pv_dot(src);
        assert!(dot.contains("(acc, p, ph::stile<"), "{pins}: {dot}");
        // p is f32; the pack must round it to T, not to whichever type the f32 maps to.
        let dt = if types == "T=bf16" {
            "ph::gemm::BF16"
        } else {
            "ph::gemm::F16"
        };
        assert!(
            dot.contains(&format!(", {dt}, ")),
            "{pins}: packs p as {dt}: {dot}"
        );
        assert!(!src.contains(round), "{pins}: a round trip of p\n{src}");
    }
}

#[test]
fn the_overlapped_loop_keeps_p_itself() {
    for (path, pins, types) in [
        (
            FA,
            "BR=64 BC=128 THREADS=128 MIN_BLOCKS=1 OVERLAP=1",
            "T=bf16",
        ),
        (D128, "BR=64 BC=64 THREADS=128 OVERLAP=1", "T=f16"),
    ] {
        let e = emitted(path, pins, types);
        let src = &e.source;
        assert!(src.contains("ph::wg_wait<1>(s)"), "{pins}\n{src}");
        let kept = src.find("ph_kept1 = p;").expect("the kept operand is p");
        assert!(pv_dot(src).contains("ph_kept1"), "{pins}");
        assert!(kept > src.find("ph::wg_wait<0>(acc)").unwrap(), "{pins}");
    }
}

#[test]
fn overlap_2_fences_the_wait_for_the_deferred_product() {
    for (path, pins, types) in [
        (FA, "BR=64 BC=128 THREADS=128 MIN_BLOCKS=1", "T=f16"),
        (D128, "BR=128 BC=64 THREADS=256 CAUSAL=1", "T=bf16"),
    ] {
        let fenced = emitted(path, &format!("{pins} OVERLAP=2"), types);
        let plain = emitted(path, &format!("{pins} OVERLAP=1"), types);
        let record = |e: &Emitted| {
            assert_eq!(e.loops.len(), 1, "{pins}");
            assert!(e.notes.contains(&e.loops[0].to_string()), "{:?}", e.notes);
            e.loops[0]
                .overlap
                .clone()
                .unwrap_or_else(|w| panic!("{pins}: {w}"))
        };
        let (o2, o1) = (record(&fenced), record(&plain));
        assert!(o2.fenced && !o1.fenced, "{pins}");
        assert_eq!(
            (o2.ahead, o2.behind, o2.buffers),
            (o1.ahead, o1.behind, o1.buffers)
        );
        assert!(fenced.loops[0]
            .to_string()
            .ends_with("behind a fence: OVERLAP=2)"));
        // One fence, in the loop, right before the wait for acc there (not the one after it).
        let src = &fenced.source;
        assert_eq!(src.matches("ph::wg_wait_fence();").count(), 1, "{src}");
        let fence = src.find("ph::wg_wait_fence();").unwrap();
        let wait0 = src.find("ph::wg_wait<0>(acc);").unwrap();
        assert!(fence < wait0, "{src}");
        assert!(src[fence..wait0]
            .trim_start_matches("ph::wg_wait_fence();")
            .trim()
            .is_empty());
        assert!(src.find("ph::wg_wait<1>(s)").unwrap() < fence, "{src}");
        assert!(!plain.source.contains("wg_wait_fence"), "{pins}");
        // Otherwise the same code (the notes' loop record aside).
        let code = |src: &str| -> Vec<String> {
            src.lines()
                .filter(|l| !l.contains("wg_wait_fence") && !l.starts_with("// "))
                .map(str::to_string)
                .collect()
        };
        assert_eq!(code(src), code(&plain.source), "{pins}");
    }
}

#[test]
fn wgmma_descriptors_take_no_thread_index() {
    // The header's descriptor builders: a compile-time offset added to one start field a dot,
    // the warpgroup's first row a constant (one warpgroup) or lane 0's (__shfl_sync).
    let h = phobos_cuda::header_text(phobos_cuda::MMA_HEADER).expect("the mma header");
    let start = h.find("struct WgStart {").unwrap();
    let end = h.find("// The accumulator's registers pinned").unwrap();
    let builders = &h[start..end];
    assert_eq!(builders.matches("threadIdx").count(), 1, "{builders}");
    assert!(builders.contains("__shfl_sync(0xffffffffu, (int)(threadIdx.x / 128), 0)"));
    assert!(
        !h.contains("desc_sw128(base"),
        "per-step descriptors rebuilt from addresses"
    );
}

/// A persistent case's launch plan without a GPU: the kernel's grid as the logical grid (its
/// two parameters), the launch over its tiles, to be clamped on the device.
fn persistent_plan(c: &common::cases::Case) -> Result<(), String> {
    use common::cases::Value;
    use phobos_gpu::{bind_args, plan_launch, Arg, TensorRef};
    use phobos_ir::ParamKind;
    let args: Vec<Arg<'_>> = (c.kernel.params.iter().zip(&c.args).enumerate())
        .map(|(i, (p, v))| match (&p.kind, v) {
            (ParamKind::Tensor { order, .. }, Value::Tensor(t)) => Arg::Tensor(TensorRef {
                ptr: 0x7000_0000 + 0x100_0000 * i as u64,
                dtype: t.dtype,
                shape: &t.shape,
                order: *order,
            }),
            (_, Value::Scalar(x)) => Arg::Scalar(*x),
            (_, Value::Tensor(_)) => Arg::Scalar(0.0),
        })
        .collect();
    let bound = bind_args(&c.kernel, &args).map_err(|e| format!("bind: {e}"))?;
    let facts = phobos::backend::cuda::launch_facts(&c.emitted);
    let plan = plan_launch(&facts, &c.kernel, &bound, &args).map_err(|e| format!("{e}"))?;
    let [gx, gy, _] = bound.grid;
    if !facts.persistent || plan.logical != Some([gx, gy]) || plan.grid != [gx * gy, 1, 1] {
        return Err(format!(
            "{:?} {:?} for {:?}",
            plan.grid, plan.logical, bound.grid
        ));
    }
    if gx * gy <= PERSIST_CAP {
        return Err(format!(
            "{gx} x {gy} logical blocks: the cap walks none twice"
        ));
    }
    Ok(())
}

/// The row shift RAGGED=1 emits (examples/flash_attention.ph, BR=192).
const RAGGED_SHIFT: &str = "r0 = ph::max(0, ph::sub(r0, ph::sub(ph::mul(";

#[test]
fn form_cases_build_offline() {
    let cases = form_cases();
    assert_eq!(cases.len(), 66);
    let persistent: Vec<_> = cases.iter().filter(|c| c.emitted.persistent).collect();
    assert_eq!(persistent.len(), 28);
    for c in &persistent {
        persistent_plan(c).unwrap_or_else(|e| panic!("{}: {e}", c.label));
    }
    // The snake's cases (WALK=1): the record says so, and at the capped grid some walk an odd
    // last round with a skipped low block (an odd count of logical blocks), causal and not.
    let snake: Vec<_> = (persistent.iter())
        .filter(|c| c.label.contains("WALK=1"))
        .collect();
    assert_eq!(snake.len(), 10);
    let mut skipped = [false; 2];
    for c in &snake {
        let walk = c.emitted.loops[0]
            .overlap
            .as_ref()
            .map(|o| o.persist.map(|p| p.walk));
        assert_eq!(walk, Ok(Ok(phobos_cuda::Walk::Snake)), "{}", c.label);
        let n = c.grid[0] * c.grid[1];
        let rounds = (n + PERSIST_CAP as i64 - 1) / PERSIST_CAP as i64;
        if n % PERSIST_CAP as i64 != 0 && rounds % 2 == 0 {
            skipped[usize::from(c.label.contains("CAUSAL=1"))] = true;
        }
    }
    assert_eq!(
        skipped,
        [true, true],
        "causal and not, a case skips in an odd round"
    );
    // The paired walk's cases (WALK=2, bench/NOTES.md a18): the record says so, and some have
    // an odd count of row blocks a head (the middle one a unit of one, its second skipped).
    let paired: Vec<_> = (persistent.iter())
        .filter(|c| c.label.contains("WALK=2"))
        .collect();
    assert_eq!(paired.len(), 4);
    for c in &paired {
        let walk = c.emitted.loops[0]
            .overlap
            .as_ref()
            .map(|o| o.persist.map(|p| p.walk));
        assert_eq!(walk, Ok(Ok(phobos_cuda::Walk::Paired)), "{}", c.label);
    }
    assert!(paired.iter().any(|c| c.grid[0] % 2 == 1));
    assert!(paired.iter().any(|c| c.grid[0] % 2 == 0));
    // RAGGED=1's cases (bench/NOTES.md a17) shift their row blocks: the clamp is live code.
    let ragged: Vec<_> = (cases.iter())
        .filter(|c| c.label.contains("RAGGED=1"))
        .collect();
    assert_eq!(ragged.len(), 5);
    for c in &ragged {
        let src = &c.emitted.source;
        let at = (src.find(RAGGED_SHIFT)).unwrap_or_else(|| panic!("{}: the shift", c.label));
        let guard = src[..at].rsplit("if (").next().unwrap();
        assert!(guard.starts_with("true) {"), "{}: {guard}", c.label);
    }
    for c in &cases {
        assert!(
            c.emitted.source.contains("ph::mma_dot_ra<"),
            "{}: P·V from registers",
            c.label
        );
    }
    // Each compiles (NVRTC, as the GPU would get it), when NVRTC is here.
    let jobs: Vec<_> = (cases.iter())
        .map(|c| {
            (
                c.emitted.source.clone(),
                common::compile_options(&c.emitted),
            )
        })
        .collect();
    let Some(results) = common::compile_or_skip(&jobs, 2) else {
        return;
    };
    for (c, r) in cases.iter().zip(&results) {
        if let Err(e) = r {
            panic!("{}: {}\n{}", c.label, e.summary(), e.log);
        }
    }
}

#[test]
#[ignore = "needs a GPU"]
fn gpu_attention_forms_match_interpreter() {
    let gpu = phobos_gpu::Gpu::new(0).expect("a CUDA device");
    let mut errors = Vec::new();
    for c in &form_cases() {
        if let Err(e) = run_on_gpu(&gpu, c) {
            errors.push(format!("{}: {e}", c.label));
        }
        if c.emitted.persistent {
            let tol = &phobos_ir::walk::output_tolerance;
            if let Err(e) = run_capped(&gpu, c, tol, Some(PERSIST_CAP)) {
                errors.push(format!("{} (grid of {PERSIST_CAP}): {e}", c.label));
            }
        }
    }
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

#[test]
fn causal_row_blocks_run_longest_first() {
    for (path, pins) in [
        (FA, "BR=64 BC=128 THREADS=128 MIN_BLOCKS=3"),
        (D128, "BR=64 BC=64 THREADS=128"),
    ] {
        let causal = emitted(path, &format!("{pins} CAUSAL=1"), "T=f16");
        let plain = emitted(path, &format!("{pins} CAUSAL=0"), "T=f16");
        let reversed = "rb = ph::sub(ph::sub((int)gridDim.x, 1), (int)blockIdx.x);";
        // Both forms carry the reversal; only the causal one takes it.
        for e in [&causal, &plain] {
            let at = e.source.find(reversed).expect("the reversed row block");
            let before = &e.source[..at];
            let test = &before[before.rfind("if (").unwrap()..];
            let taken = test.starts_with("if (true)");
            assert_eq!(taken, std::ptr::eq(e, &causal), "{pins}: {test}");
        }
        // The mask tests still see the row block's first row.
        assert!(causal.source.contains("<= (long long)(r)"), "{pins}");
        assert_eq!(causal.masks.len(), 2, "{pins}");
    }
}
