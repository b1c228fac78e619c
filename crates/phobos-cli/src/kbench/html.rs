//! `phobos-kbench report --db PATH [--kernel FILE[:NAME]] --html out.html`: the stored searches
//! as one standalone HTML page (inline SVG, nothing fetched): per problem the table of points,
//! time per point, time against registers and against occupancy, and a roofline of achieved
//! FLOP/s against the device's peaks.

use super::export::{load_kernel, open_db};
use super::UserError;
use phobos_tune::store::{Peak, StoredSearch};
use phobos_tune::{Frontend, PointResult};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

/// `phobos-kbench report`.
#[derive(clap::Args, Debug, Clone)]
pub struct ReportArgs {
    /// The results database.
    #[arg(long)]
    pub db: PathBuf,
    /// Only this kernel: its `.ph` file, and `:NAME` when the file has several (default:
    /// every kernel in the database).
    #[arg(long, value_name = "FILE[:NAME]")]
    pub kernel: Option<String>,
    /// The page to write.
    #[arg(long, value_name = "FILE")]
    pub html: PathBuf,
    /// The device's memory bandwidth in GB/s, for the roofline's slope (none drawn without).
    #[arg(long, value_name = "GBPS", value_parser = super::args::positive_f64)]
    pub peak_gbps: Option<f64>,
}

pub fn run(args: &ReportArgs) -> Result<ExitCode, UserError> {
    let frontend = args.kernel.as_deref().map(load_kernel).transpose()?;
    let store = open_db(&args.db)?;
    let err = |e: phobos_tune::StoreError| UserError::new(e.to_string());
    let searches = store
        .searches(frontend.as_ref().map(|f| f.kernel_hash()))
        .map_err(err)?;
    if searches.is_empty() {
        return Err(
            UserError::new(format!("{} holds no search", args.db.display()))
                .hint("tune first: phobos-kbench FILE --dims ... --db PATH"),
        );
    }
    let mut body = String::new();
    for s in &searches {
        let peaks = store.peaks_of(&s.device).map_err(err)?;
        let least = frontend.as_ref().and_then(|f| least_bytes(f, s));
        body.push_str(&section(s, &peaks, args.peak_gbps, least));
    }
    let page = format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>phobos-kbench report</title>\
         <style>{STYLE}</style></head><body><h1>phobos-kbench report</h1>\
         <p>{} search{} from {}</p>{body}</body></html>\n",
        searches.len(),
        if searches.len() == 1 { "" } else { "es" },
        escape(&args.db.display().to_string())
    );
    std::fs::write(&args.html, page)
        .map_err(|e| UserError::new(format!("cannot write {}: {e}", args.html.display())))?;
    eprintln!("wrote {}", args.html.display());
    Ok(ExitCode::SUCCESS)
}

const STYLE: &str = "body{font-family:sans-serif;margin:2em;color:#222}\
table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;padding:2px 6px;\
text-align:right}td.l,th.l{text-align:left}svg{margin:0.5em 1em 0.5em 0;background:#fafafa;\
border:1px solid #ddd}details{margin:0.5em 0}";

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The bytes every launch must move at least: each tensor read or written once, for a kernel
/// that declares no `@bytes` (the roofline's x for its points).
fn least_bytes(frontend: &phobos::frontend::CheckFrontend, s: &StoredSearch) -> Option<f64> {
    let (r, _, _) = s.points.first()?;
    let k = frontend.instantiate(&r.point, &s.problem).ok()?;
    let shapes = phobos_tune::verify::shapes(&k, &s.problem).ok()?;
    let bytes = k
        .params
        .iter()
        .zip(shapes)
        .filter_map(|(p, shape)| {
            let phobos_ir::ParamKind::Tensor { dtype, .. } = &p.kind else {
                return None;
            };
            Some(shape?.iter().product::<usize>() as f64 * dtype.size_bytes() as f64)
        })
        .sum();
    Some(bytes)
}

fn section(
    s: &StoredSearch,
    peaks: &[(String, Peak)],
    peak_gbps: Option<f64>,
    least_bytes: Option<f64>,
) -> String {
    let pts: Vec<&PointResult> = s.points.iter().map(|(r, _, _)| r).collect();
    let timed: Vec<&PointResult> = pts
        .iter()
        .copied()
        .filter(|r| r.outcome.stats().is_some())
        .collect();
    let ms = |r: &PointResult| r.outcome.stats().map_or(f64::NAN, |x| x.median_ms);
    let mut title = s.problem.dims_text();
    if !s.problem.types.is_empty() {
        title.push_str(&format!(" {}", s.problem.types_text()));
    }
    if !s.problem.layouts.is_empty() {
        title.push_str(&format!(" {}", s.problem.layouts_text()));
    }
    let mut out = format!(
        "<h2>{} {}</h2><p>{} on {}: {} points, {} timed</p>",
        escape(&s.kernel),
        escape(&title),
        s.backend.name(),
        escape(&s.device),
        pts.len(),
        timed.len()
    );
    let per_point: Vec<(f64, f64)> = pts
        .iter()
        .enumerate()
        .filter(|(_, r)| r.outcome.stats().is_some())
        .map(|(i, r)| (i as f64, ms(r)))
        .collect();
    out.push_str(&scatter(
        "time per point",
        "point (order measured)",
        "ms",
        &per_point,
        false,
        true,
        &[],
    ));
    let by = |f: &dyn Fn(&PointResult) -> Option<f64>| -> Vec<(f64, f64)> {
        timed.iter().filter_map(|r| Some((f(r)?, ms(r)))).collect()
    };
    let regs = by(&|r| Some(f64::from(r.resources.as_ref()?.registers)));
    if !regs.is_empty() {
        out.push_str(&scatter(
            "time against registers",
            "registers per thread",
            "ms",
            &regs,
            false,
            true,
            &[],
        ));
    }
    let occ = by(&|r| {
        let o = r.resources.as_ref()?.occupancy?;
        Some(f64::from(o.active_warps_per_sm) / f64::from(o.max_warps_per_sm.max(1)))
    });
    if !occ.is_empty() {
        out.push_str(&scatter(
            "time against occupancy",
            "active warps / max warps",
            "ms",
            &occ,
            false,
            true,
            &[],
        ));
    }
    out.push_str(&roofline(&timed, peaks, peak_gbps, least_bytes));
    out.push_str(&table(&pts));
    out
}

/// Achieved TFLOP/s against arithmetic intensity (FLOPs over `@bytes`, else over the least
/// bytes the problem's tensors hold), under the stored compute peaks and the given bandwidth.
fn roofline(
    timed: &[&PointResult],
    peaks: &[(String, Peak)],
    gbps: Option<f64>,
    least_bytes: Option<f64>,
) -> String {
    let dots: Vec<(f64, f64)> = timed
        .iter()
        .filter_map(|r| Some((r.flops? / r.bytes.or(least_bytes)?, r.tflops()?)))
        .filter(|(x, y)| x.is_finite() && y.is_finite() && *x > 0.0 && *y > 0.0)
        .collect();
    if dots.is_empty() {
        return "<p>No roofline: no timed point with both its FLOPs (@flops, or a GEMM's \
                2·M·N·K) and its bytes (@bytes, or with --kernel the problem's tensors).</p>"
            .into();
    }
    let lo = dots.iter().map(|d| d.0).fold(f64::INFINITY, f64::min) / 4.0;
    let hi = dots.iter().map(|d| d.0).fold(0.0, f64::max) * 4.0;
    let mut lines = Vec::new();
    for (dtypes, p) in peaks {
        let roof = |x: f64| gbps.map_or(p.tflops, |g| p.tflops.min(x * g / 1e3));
        let xs: Vec<f64> = (0..=32)
            .map(|k| lo * (hi / lo).powf(k as f64 / 32.0))
            .collect();
        lines.push((
            xs.iter().map(|&x| (x, roof(x))).collect::<Vec<_>>(),
            format!("peak {dtypes}: {:.0} TFLOP/s", p.tflops),
        ));
    }
    if peaks.is_empty() {
        if let Some(g) = gbps {
            lines.push((
                vec![(lo, lo * g / 1e3), (hi, hi * g / 1e3)],
                format!("{g:.0} GB/s"),
            ));
        }
    }
    scatter(
        "roofline",
        "FLOP per byte",
        "TFLOP/s",
        &dots,
        true,
        true,
        &lines,
    )
}

fn table(pts: &[&PointResult]) -> String {
    let mut sorted: Vec<&PointResult> = pts.to_vec();
    sorted.sort_by(|a, b| {
        let k = |r: &PointResult| r.outcome.stats().map_or(f64::INFINITY, |s| s.median_ms);
        k(a).total_cmp(&k(b))
    });
    let mut t = String::from(
        "<details><summary>every point, fastest first</summary><table><tr><th class=l>point</th>\
         <th class=l>status</th><th>median ms</th><th>TFLOP/s</th><th>GB/s</th><th>regs</th>\
         <th>smem</th><th>warps/SM</th></tr>",
    );
    for r in sorted {
        let opt = |v: Option<String>| v.unwrap_or_default();
        let res = r.resources.as_ref();
        let _ = write!(
            t,
            "<tr><td class=l>{}</td><td class=l>{}</td><td>{}</td><td>{}</td><td>{}</td>\
             <td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&r.point.to_pins()),
            escape(r.outcome.status()),
            opt(r.outcome.stats().map(|s| format!("{:.4}", s.median_ms))),
            opt(r.tflops().map(|x| format!("{x:.2}"))),
            opt(r.gbps().map(|x| format!("{x:.1}"))),
            opt(res.map(|x| x.registers.to_string())),
            opt(res.map(|x| x.smem_bytes.to_string())),
            opt(res
                .and_then(|x| x.occupancy)
                .map(|o| o.active_warps_per_sm.to_string())),
        );
    }
    t.push_str("</table></details>");
    t
}

/// A scatter plot as inline SVG, with optional lines (label each).
fn scatter(
    title: &str,
    xlabel: &str,
    ylabel: &str,
    dots: &[(f64, f64)],
    logx: bool,
    logy: bool,
    lines: &[(Vec<(f64, f64)>, String)],
) -> String {
    let (w, h, m) = (420.0, 280.0, 48.0);
    let tx = |v: f64| if logx { v.max(1e-12).log10() } else { v };
    let ty = |v: f64| if logy { v.max(1e-12).log10() } else { v };
    let all = dots.iter().chain(lines.iter().flat_map(|l| l.0.iter()));
    let (mut x0, mut x1, mut y0, mut y1) = (
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::INFINITY,
        f64::NEG_INFINITY,
    );
    for &(x, y) in all {
        if x.is_finite() && y.is_finite() {
            x0 = x0.min(tx(x));
            x1 = x1.max(tx(x));
            y0 = y0.min(ty(y));
            y1 = y1.max(ty(y));
        }
    }
    if !x0.is_finite() {
        return String::new();
    }
    if x1 - x0 < 1e-12 {
        x1 = x0 + 1.0;
    }
    if y1 - y0 < 1e-12 {
        y1 = y0 + 1.0;
    }
    let px = |x: f64| m + (tx(x) - x0) / (x1 - x0) * (w - 1.5 * m);
    let py = |y: f64| h - m - (ty(y) - y0) / (y1 - y0) * (h - 1.5 * m);
    let label = |v: f64, log: bool| {
        let v = if log { 10f64.powf(v) } else { v };
        if v.abs() >= 100.0 || v == 0.0 {
            format!("{v:.0}")
        } else {
            format!("{v:.3}")
        }
    };
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\">\
         <text x=\"{}\" y=\"16\" text-anchor=\"middle\" font-size=\"13\">{}</text>\
         <line x1=\"{m}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#888\"/>\
         <line x1=\"{m}\" y1=\"{}\" x2=\"{m}\" y2=\"{}\" stroke=\"#888\"/>\
         <text x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-size=\"11\">{}</text>\
         <text x=\"12\" y=\"{}\" font-size=\"11\" transform=\"rotate(-90 12 {})\" text-anchor=\"middle\">{}</text>",
        w / 2.0,
        escape(title),
        h - m,
        w - m / 2.0,
        h - m,
        h - m,
        m / 2.0,
        w / 2.0,
        h - 8.0,
        escape(xlabel),
        h / 2.0,
        h / 2.0,
        escape(ylabel),
    );
    let _ = write!(
        s,
        "<text x=\"{m}\" y=\"{}\" font-size=\"10\">{}</text><text x=\"{}\" y=\"{}\" font-size=\"10\" text-anchor=\"end\">{}</text>\
         <text x=\"{}\" y=\"{}\" font-size=\"10\" text-anchor=\"end\">{}</text><text x=\"{}\" y=\"{}\" font-size=\"10\" text-anchor=\"end\">{}</text>",
        h - m + 14.0,
        label(x0, logx),
        w - m / 2.0,
        h - m + 14.0,
        label(x1, logx),
        m - 4.0,
        h - m,
        label(y0, logy),
        m - 4.0,
        m / 2.0 + 8.0,
        label(y1, logy),
    );
    for (k, (pts, name)) in lines.iter().enumerate() {
        let path: Vec<String> = pts
            .iter()
            .map(|&(x, y)| format!("{:.1},{:.1}", px(x), py(y)))
            .collect();
        let _ = write!(
            s,
            "<polyline fill=\"none\" stroke=\"#c33\" points=\"{}\"/><text x=\"{}\" y=\"{}\" font-size=\"10\" fill=\"#c33\">{}</text>",
            path.join(" "),
            m + 6.0,
            m / 2.0 + 14.0 + 12.0 * k as f64,
            escape(name)
        );
    }
    for &(x, y) in dots {
        if x.is_finite() && y.is_finite() {
            let _ = write!(
                s,
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"2.5\" fill=\"#36c\"/>",
                px(x),
                py(y)
            );
        }
    }
    s.push_str("</svg>");
    s
}
