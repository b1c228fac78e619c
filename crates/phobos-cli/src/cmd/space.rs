//! `phobos space FILE... [--kernel K] [--autotune PINS] [--json]`: each kernel's shape
//! environment (names and choices), its size and its default point, file by file. Pins reduce
//! names to one value. With `--json`, one object per kernel per line:
//! `{"file", "kernel", "names": [{"name", "choices"}], "size", "inside", "default": {name:
//! value}}`. `inside` counts the points a search takes from a product larger than it searches
//! whole: those whose `@where`s over names alone hold (`null` where the product is searched
//! whole, or too large to walk; phobos_tune::space::MAX_WALKED_POINTS).

use crate::args::SpaceArgs;
use crate::cmd::check::read_source;
use crate::render;
use phobos_check::{parse_pins, KernelInfo, Module, Space};
use phobos_tune::space::{MAX_EXHAUSTIVE_POINTS, MAX_WALKED_POINTS};
use std::process::ExitCode;

fn fail(msg: &str) -> ExitCode {
    eprintln!("error: {msg}");
    ExitCode::from(1)
}

/// The points of a product a search walks (above [`MAX_EXHAUSTIVE_POINTS`], at most
/// [`MAX_WALKED_POINTS`]) that are inside the space, as the tuner counts them.
fn inside(module: &Module, kernel: &KernelInfo, space: &Space) -> Option<u128> {
    let size = space.size();
    if size <= MAX_EXHAUSTIVE_POINTS || size > MAX_WALKED_POINTS {
        return None;
    }
    let base = phobos_check::check_variant(kernel);
    let outside =
        |p: &phobos_ir::Point| phobos_check::outside_space(module, kernel, &base.at(p.clone()));
    Some(space.points().filter(|p| !outside(p)).count() as u128)
}

/// One kernel's space as a JSON line, names in declaration order.
pub fn json_line(file: &str, kernel: &str, space: &Space, inside: Option<u128>) -> String {
    let s = |x: &str| serde_json::to_string(x).unwrap_or_default();
    let names = space
        .names
        .iter()
        .map(|n| {
            let choices = n
                .choices
                .iter()
                .map(i64::to_string)
                .collect::<Vec<_>>()
                .join(",");
            format!("{{\"name\":{},\"choices\":[{choices}]}}", s(&n.name))
        })
        .collect::<Vec<_>>()
        .join(",");
    let default = space
        .default_point()
        .0
        .iter()
        .map(|(n, v)| format!("{}:{v}", s(n)))
        .collect::<Vec<_>>()
        .join(",");
    format!(
        "{{\"file\":{},\"kernel\":{},\"names\":[{names}],\"size\":{},\"inside\":{},\"default\":{{{default}}}}}",
        s(file),
        s(kernel),
        space.size(),
        inside.map_or("null".to_string(), |n| n.to_string())
    )
}

/// One kernel's space for people.
pub fn text(kernel: &str, space: &Space, inside: Option<u128>) -> String {
    let width = space
        .names
        .iter()
        .map(|n| n.name.len())
        .max()
        .unwrap_or(0)
        .max(7);
    let mut out = format!("kernel {kernel}\n");
    if space.names.is_empty() {
        out.push_str("  no @autotune names: one point\n");
    }
    for n in &space.names {
        let choices = n
            .choices
            .iter()
            .map(i64::to_string)
            .collect::<Vec<_>>()
            .join(", ");
        out.push_str(&format!("  {:width$}  {choices}\n", n.name));
    }
    let size = space.size();
    out.push_str(&format!(
        "  {:width$}  {size} point{}\n",
        "size",
        if size == 1 { "" } else { "s" }
    ));
    if let Some(n) = inside {
        out.push_str(&format!(
            "  {:width$}  {n} of them inside its @where over names alone (what a search takes)\n",
            "inside"
        ));
    }
    let default = space.default_point().to_pins();
    if !default.is_empty() {
        out.push_str(&format!("  {:width$}  {default}\n", "default"));
    }
    out
}

pub fn run(args: &SpaceArgs) -> ExitCode {
    let pins = match parse_pins(args.autotune.as_deref().unwrap_or("")) {
        Ok(p) => p,
        Err(e) => return fail(&e.to_string()),
    };
    let mut lines = Vec::new();
    let mut kernel_found = false;
    for path in &args.files {
        let file = match read_source(path) {
            Ok(f) => f,
            Err(e) => return fail(&e),
        };
        let module = match super::check::load_module(&file) {
            Ok(m) => m,
            Err(diags) => {
                eprintln!(
                    "{}\n",
                    render::render_all(&diags, &file, render::stderr_color())
                );
                return fail(&format!("{} does not load", file.name));
            }
        };
        let kernels: Vec<&KernelInfo> = match &args.kernel {
            // With several files, a file without the kernel is skipped.
            Some(name) if args.files.len() > 1 => {
                module.kernels.iter().filter(|k| &k.name == name).collect()
            }
            Some(name) => match module.kernel(Some(name)) {
                Ok(k) => vec![k],
                Err(e) => return fail(&e),
            },
            None => module.kernels.iter().collect(),
        };
        kernel_found |= !kernels.is_empty();
        if !args.json && args.files.len() > 1 && !kernels.is_empty() {
            lines.push(format!("# {}\n", file.name));
        }
        for k in kernels {
            let space = match k.space.pin(&pins) {
                Ok(s) => s,
                Err(e) => return fail(&format!("{}: kernel `{}`: {e}", file.name, k.name)),
            };
            let inside = inside(&module, k, &space);
            lines.push(if args.json {
                json_line(&file.name, &k.name, &space, inside)
            } else {
                text(&k.name, &space, inside)
            });
        }
    }
    if let (Some(name), false) = (&args.kernel, kernel_found) {
        return fail(&format!("no file has a kernel `{name}`"));
    }
    // Text blocks end with a newline, so joining them leaves a blank line between kernels.
    outln!("{}", lines.join("\n").trim_end());
    ExitCode::SUCCESS
}
