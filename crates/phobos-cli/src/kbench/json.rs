//! `--json`: one object on stdout with the problem, every point and the winner.

use phobos_ir::{MemOrder, Point};
use phobos_tune::{Backend, Checked, PointResult, Report};
use serde_json::{json, Map, Value};

fn point(p: &Point) -> Value {
    Value::Object(
        p.0.iter()
            .map(|(n, v)| (n.clone(), json!(v)))
            .collect::<Map<_, _>>(),
    )
}

/// A check as typed data, with its one-line text.
fn check(c: &Checked) -> Value {
    json!({
        "dims": c.dims.iter().map(|(n, v)| (n.clone(), json!(v))).collect::<Map<_, _>>(),
        "reference": c.reference,
        "scope": c.scope,
        "text": super::render::check_text(c),
    })
}

fn one(r: &PointResult, checked: Option<&Checked>) -> Value {
    let stats = r.outcome.stats().map(|s| {
        json!({
            "median_ms": s.median_ms, "min_ms": s.min_ms, "max_ms": s.max_ms,
            "spread": s.spread, "reps": s.reps, "stopped_early": s.stopped_early,
        })
    });
    let resources = r.resources.as_ref().map(|x| {
        json!({
            "registers": x.registers,
            "spill_store_bytes": x.spill_store_bytes,
            "spill_load_bytes": x.spill_load_bytes,
            "smem_bytes": x.smem_bytes,
            "threads": x.threads,
            "occupancy": x.occupancy.map(|o| json!({
                "active_warps_per_sm": o.active_warps_per_sm,
                "max_warps_per_sm": o.max_warps_per_sm,
                "blocks_per_sm": o.blocks_per_sm,
                "limiter": o.limiter.name(),
            })),
            "clusters": x.clusters.map(|c| json!({
                "dims": c.dims,
                "resident": c.resident,
                "launched": c.launched,
                "waves": c.waves(),
            })),
        })
    });
    json!({
        "point": point(&r.point),
        "config": r.point.to_pins(),
        "status": r.outcome.status(),
        "reason": r.outcome.reason(),
        "outcome": r.outcome,
        "time": stats,
        "tflops": r.tflops(),
        "gbps": r.gbps(),
        "flops": r.flops,
        "bytes": r.bytes,
        "resources": resources,
        "reused": r.reused,
        "check": checked.map(check),
    })
}

/// The whole report as one JSON value.
pub fn report(report: &Report, file: &str, reproduce: Option<&str>) -> Value {
    let p = &report.problem;
    let summary = report.summary();
    json!({
        "file": file,
        "kernel": report.kernel,
        "kernel_hash": report.kernel_hash,
        "backend": report.backend.name(),
        "timing": match report.backend {
            Backend::Cuda => "gpu events",
            Backend::Interp => "cpu interpreter wall clock (not GPU time)",
        },
        "compiler": report.compiler,
        "device": report.device,
        "dry_run": report.dry_run,
        "problem": {
            "dims": p.dims.iter().map(|(n, v)| (n.clone(), json!(v))).collect::<Map<_, _>>(),
            "types": p.types.iter().map(|(n, t)| (n.clone(), json!(t.name()))).collect::<Map<_, _>>(),
            "layouts": p.layouts.iter().map(|(n, o)| (n.clone(), json!(match o {
                MemOrder::RowMajor => "row",
                MemOrder::ColMajor => "col",
            }))).collect::<Map<_, _>>(),
            "args": p.args.iter().map(|(n, v)| (n.clone(), json!(v))).collect::<Map<_, _>>(),
        },
        "pins": report.pins.iter().map(|(n, v)| (n.clone(), json!(v))).collect::<Map<_, _>>(),
        "default_point": point(&report.default_point),
        "reference_point": report.reference_point.as_ref().map(point),
        "points": report
            .points
            .iter()
            .map(|r| one(r, report.check(&r.point)))
            .collect::<Vec<_>>(),
        "winner": report.winner.as_ref().map(|w| json!({
            "point": point(&w.point),
            "config": w.point.to_pins(),
            "median_ms": w.stats.median_ms,
            "speedup_vs_default": w.speedup_vs_default,
            "reproduce": reproduce,
        })),
        "dry_run_check": report.dry_run_check.as_ref().map(|c| json!({
            "point": point(&c.point), "error": c.error, "check": c.checked.as_ref().map(check),
        })),
        "summary": summary,
        "summary_line": summary.line(),
        "worker_restarts": report.worker_restarts,
        "strategy": report.strategy,
        "candidates": report.candidates,
        "phases": report.phases,
    })
}

/// Adds what the workflow knows about a problem: where it came from, its GEMM view and the
/// winner's config string.
pub fn add_job(j: &mut Value, job: &super::problems::Job, config: Option<&str>) {
    let gemm = job.gemm.map(|g| {
        let o = &g.operands;
        let order = |o: Option<MemOrder>| match o.unwrap_or_default() {
            MemOrder::RowMajor => "row",
            MemOrder::ColMajor => "col",
        };
        json!({
            "M": g.m, "N": g.n, "K": g.k, "trans": g.trans(),
            "dtype_a": o.dtype_a.map(|t| t.name()),
            "dtype_b": o.dtype_b.map(|t| t.name()),
            "dtype_c": o.dtype_c.map(|t| t.name()),
            "layout_a": order(o.order_a),
            "layout_b": order(o.order_b),
        })
    });
    if let Value::Object(m) = j {
        m.insert("origin".into(), json!(job.origin));
        m.insert("gemm".into(), json!(gemm));
        if let Some(Value::Object(w)) = m.get_mut("winner") {
            w.insert("config_string".into(), json!(config));
        }
    }
}
