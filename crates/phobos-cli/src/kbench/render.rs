//! Text for people: the space, pruned points, one line per point, the table, the winner.

use phobos_ir::Point;
use phobos_tune::engine::Summary;
use phobos_tune::space::Pinned;
use phobos_tune::{
    Backend, CheckReference, CheckScope, Checked, Outcome, PointResult, Report, Resources,
};

fn point_text(p: &Point) -> String {
    if p.0.is_empty() {
        "(no @autotune)".into()
    } else {
        p.to_pins()
    }
}

/// The space before the search.
pub fn space(kernel: &str, pinned: &Pinned, default_point: &Point) -> String {
    let mut out = format!(
        "{kernel}: {} point{}",
        pinned.size(),
        if pinned.size() == 1 { "" } else { "s" }
    );
    let names: Vec<String> = pinned
        .declared
        .names
        .iter()
        .map(|n| {
            let choices: Vec<String> = n.choices.iter().map(i64::to_string).collect();
            format!("{} in [{}]", n.name, choices.join(", "))
        })
        .collect();
    if !names.is_empty() {
        out.push_str(&format!(
            " of {} ({})",
            pinned.declared.size(),
            names.join(", ")
        ));
    }
    if !pinned.pins.is_empty() {
        let pins: Vec<String> = pinned
            .pins
            .iter()
            .map(|(n, v)| format!("{n}={v}"))
            .collect();
        out.push_str(&format!("\n  pinned: {}", pins.join(" ")));
    }
    out.push_str(&format!("\n  default: {}", point_text(default_point)));
    out
}

/// The time column: milliseconds, labelled when the interpreter's wall clock measured it.
fn time_text(r: &PointResult, backend: Backend) -> String {
    match r.outcome.stats() {
        Some(s) => {
            let tag = if backend == Backend::Interp {
                " (interp wall clock)"
            } else {
                ""
            };
            let early = if s.stopped_early {
                " (stopped early)"
            } else {
                ""
            };
            format!(
                "{:>10.4} ms ±{:.1}%{tag}{early}",
                s.median_ms,
                s.spread * 100.0
            )
        }
        None => format!("{:>13}", "-"),
    }
}

/// TFLOP/s, or GFLOP/s below 0.1 TFLOP/s.
pub fn rate(t: f64) -> String {
    if t >= 0.1 {
        format!("{t:.2} TFLOP/s")
    } else {
        format!("{:.2} GFLOP/s", t * 1e3)
    }
}

fn rate_text(r: &PointResult) -> String {
    if let Some(t) = r.tflops() {
        rate(t)
    } else if let Some(g) = r.gbps() {
        format!("{g:.1} GB/s")
    } else {
        String::new()
    }
}

fn resources_text(r: &PointResult) -> String {
    match &r.resources {
        Some(res) => resources(res),
        None => String::new(),
    }
}

/// Registers, spills, shared memory and occupancy in one line; for a clustered launch, how many
/// of its clusters the device held at once.
pub fn resources(res: &Resources) -> String {
    let mut s = format!(
        "regs {} spill {} smem {}",
        res.registers,
        res.spill_bytes(),
        res.smem_bytes
    );
    if let Some(o) = res.occupancy {
        s.push_str(&format!(
            " occ {}/{} ({})",
            o.active_warps_per_sm,
            o.max_warps_per_sm,
            o.limiter.name()
        ));
    }
    if let Some(c) = res.clusters {
        let waves = c.waves();
        s.push_str(&format!(
            " clusters of {}: {} launched, {} at once ({waves} wave{})",
            c.size(),
            c.launched,
            c.resident,
            if waves == 1 { "" } else { "s" }
        ));
    }
    s
}

/// One line per finished point.
pub fn point_line(r: &PointResult, backend: Backend) -> String {
    let mut parts = vec![
        format!("{:<28}", point_text(&r.point)),
        time_text(r, backend),
    ];
    let rate = rate_text(r);
    if !rate.is_empty() {
        parts.push(rate);
    }
    let res = resources_text(r);
    if !res.is_empty() {
        parts.push(res);
    }
    let mut status = r.outcome.status().to_string();
    if let Some(reason) = r.outcome.reason() {
        status.push_str(&format!(": {reason}"));
    }
    if r.reused {
        // A stored crash is reused only when it is deterministic (transient ones run again).
        status.push_str(match r.outcome {
            Outcome::Crashed(_) => " (stored: deterministic, --retune runs it again)",
            _ => " (stored)",
        });
    }
    parts.push(status);
    parts.join("  ")
}

/// `--report`'s cell for a clustered launch: blocks a cluster, then clusters held at once of
/// those launched (`4: 30/64`).
fn clusters_cell(c: &phobos_gpu::ClusterResidency) -> String {
    format!("{}: {}/{}", c.size(), c.resident, c.launched)
}

/// `--report`: every point sorted by time, with resources, occupancy and clusters.
pub fn table(report: &Report) -> String {
    let mut out = format!(
        "{:<28} {:>12} {:>12} {:>5} {:>6} {:>7} {:>10} {:<9} {:>10} {}\n",
        "point",
        "median ms",
        "rate",
        "regs",
        "spill",
        "smem",
        "warps/SM",
        "limiter",
        "clusters",
        "status"
    );
    for r in report.by_time() {
        let res = r.resources.as_ref();
        let occ = res.and_then(|x| x.occupancy);
        let opt = |v: Option<String>| v.unwrap_or_else(|| "-".into());
        out.push_str(&format!(
            "{:<28} {:>12} {:>12} {:>5} {:>6} {:>7} {:>10} {:<9} {:>10} {}\n",
            point_text(&r.point),
            opt(r.outcome.stats().map(|s| format!("{:.4}", s.median_ms))),
            opt(Some(rate_text(r)).filter(|s| !s.is_empty())),
            opt(res.map(|x| x.registers.to_string())),
            opt(res.map(|x| x.spill_bytes().to_string())),
            opt(res.map(|x| x.smem_bytes.to_string())),
            opt(occ.map(|o| format!("{}/{}", o.active_warps_per_sm, o.max_warps_per_sm))),
            opt(occ.map(|o| o.limiter.name().to_string())),
            opt(res.and_then(|x| x.clusters.as_ref()).map(clusters_cell)),
            match r.outcome.reason() {
                Some(why) => format!("{}: {why}", r.outcome.status()),
                None => r.outcome.status().to_string(),
            }
        ));
    }
    out
}

/// Where the run's time went, one line: `phases: space 0.12 s, compile 3.40 s (summed over
/// threads), check 0.80 s, timing 2.10 s, search 4.02 s (wall), final round 0.50 s, total 4.70 s`.
pub fn phases(report: &Report) -> String {
    let p = &report.phases;
    let s = |ms: f64| format!("{:.2} s", ms / 1e3);
    let mut line = format!(
        "phases: space and pruning {}, compile {} (summed over threads), check {}, timing {}, \
         search {} (wall), final round {}, total {}",
        s(p.space_ms),
        s(p.compile_ms),
        s(p.check_ms),
        s(p.timing_ms),
        s(p.search_ms),
        s(p.final_ms),
        s(p.total_ms)
    );
    if report.strategy != phobos_tune::space::Strategy::Exhaustive {
        line.push_str(&format!(
            "\nstrategy {}: {} of {} candidate points searched",
            report.strategy.name(),
            report.points.len(),
            report.candidates
        ));
    }
    line.push('\n');
    line
}

/// A count in a few characters: `950`, `12.3k`, `1.6M`.
fn count(n: u64) -> String {
    match n {
        0..=9_999 => n.to_string(),
        10_000..=999_999 => format!("{:.1}k", n as f64 / 1e3),
        _ => format!("{:.1}M", n as f64 / 1e6),
    }
}

/// What a check compared, in one line: `sampled 24 of 8192 blocks (4 corners, 4 edges, 16
/// random), 1.6M elements compared against the interpreter for BH=64,N=4096`.
pub fn check_text(c: &Checked) -> String {
    let against = match c.reference {
        CheckReference::Interpreter => "the interpreter",
        CheckReference::Variant => "a verified variant",
        CheckReference::Library => "the library",
    };
    let dims: Vec<String> = c.dims.iter().map(|(n, v)| format!("{n}={v}")).collect();
    let what = match &c.scope {
        CheckScope::Whole { elements } => {
            format!("every output element ({}) compared", count(*elements))
        }
        CheckScope::Sampled { coverage, elements } => {
            let parts: Vec<String> = [
                (coverage.corners, "corner", "corners"),
                (coverage.edges, "edge", "edges"),
                (coverage.random, "random", "random"),
            ]
            .iter()
            .filter(|(n, _, _)| *n > 0)
            .map(|&(n, one, many)| format!("{n} {}", if n == 1 { one } else { many }))
            .collect();
            format!(
                "sampled {} of {} blocks ({}), {} elements compared",
                coverage.blocks(),
                coverage.grid_blocks,
                parts.join(", "),
                count(*elements)
            )
        }
    };
    format!("{what} against {against} for {}", dims.join(","))
}

/// `--report`'s account of the checks: one line per distinct check, with how many points it
/// covered (points taken from the database were checked in an earlier run).
pub fn checks(report: &Report) -> String {
    let mut lines: Vec<(String, usize)> = Vec::new();
    for c in &report.checks {
        let text = check_text(&c.checked);
        match lines.iter_mut().find(|(t, _)| *t == text) {
            Some((_, n)) => *n += 1,
            None => lines.push((text, 1)),
        }
    }
    let mut out = String::new();
    if !lines.is_empty() {
        out.push_str("checks:\n");
    }
    for (text, n) in lines {
        out.push_str(&format!(
            "  {text}: {n} point{}\n",
            if n == 1 { "" } else { "s" }
        ));
    }
    out
}

/// The closing lines: the winner, its speed-up, how to reproduce it, the summary.
pub fn ending(report: &Report, reproduce: Option<&str>, summary: &Summary) -> String {
    let mut out = String::new();
    let clock = match report.backend {
        Backend::Interp => " on the CPU interpreter (wall clock, not GPU time)",
        Backend::Cuda => "",
    };
    match &report.winner {
        Some(w) => {
            out.push_str(&format!(
                "best: {}  {:.4} ms{clock}",
                point_text(&w.point),
                w.stats.median_ms
            ));
            match w.speedup_vs_default {
                Some(s) => out.push_str(&format!(
                    ", {s:.2}x the default point ({})\n",
                    point_text(&report.default_point)
                )),
                None => out.push_str(&format!(
                    " (the default point {} was not timed)\n",
                    point_text(&report.default_point)
                )),
            }
            if let Some(cmd) = reproduce {
                out.push_str(&format!("reproduce: {cmd}\n"));
            }
        }
        None if report.dry_run => {
            if let Some(c) = &report.dry_run_check {
                match &c.error {
                    None => out.push_str(&format!(
                        "interpreter check of {}: ok{}\n",
                        point_text(&c.point),
                        match &c.checked {
                            Some(
                                k @ Checked {
                                    scope: CheckScope::Sampled { .. },
                                    ..
                                },
                            ) => format!(" ({})", check_text(k)),
                            _ => String::new(),
                        }
                    )),
                    Some(e) => out.push_str(&format!(
                        "interpreter check of {}: {e}\n",
                        point_text(&c.point)
                    )),
                }
            }
        }
        None => out.push_str("no point ran correctly: there is no winner\n"),
    }
    out.push_str(&summary.line());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resources_say_how_many_clusters_fit_at_once() {
        let mut res = Resources {
            registers: 90,
            smem_bytes: 132224,
            threads: 160,
            ..Resources::default()
        };
        assert_eq!(resources(&res), "regs 90 spill 0 smem 132224");
        res.clusters = Some(phobos_gpu::ClusterResidency {
            dims: [1, 1, 4],
            resident: 30,
            launched: 32,
        });
        assert_eq!(
            resources(&res),
            "regs 90 spill 0 smem 132224 clusters of 4: 32 launched, 30 at once (2 waves)"
        );
        res.clusters = Some(phobos_gpu::ClusterResidency {
            dims: [2, 1, 1],
            resident: 66,
            launched: 64,
        });
        assert!(resources(&res).ends_with("clusters of 2: 64 launched, 66 at once (1 wave)"));
        // --report's column: blocks a cluster, clusters at once / launched.
        assert_eq!(clusters_cell(res.clusters.as_ref().unwrap()), "2: 66/64");
    }
}
