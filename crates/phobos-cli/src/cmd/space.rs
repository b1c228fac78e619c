//! `phobos space FILE... [--kernel K] [--autotune PINS] [--json]`: each kernel's shape
//! environment (names and choices), its size and its default point, file by file. Pins reduce
//! names to one value. With `--json`, one object per kernel per line:
//! `{"file", "kernel", "names": [{"name", "choices"}], "size", "default": {name: value}}`.

use crate::args::SpaceArgs;
use crate::cmd::check::read_source;
use crate::render;
use phobos_check::{parse_pins, KernelInfo, Space};
use std::process::ExitCode;

fn fail(msg: &str) -> ExitCode {
    eprintln!("error: {msg}");
    ExitCode::from(1)
}

/// One kernel's space as a JSON line, names in declaration order.
pub fn json_line(file: &str, kernel: &str, space: &Space) -> String {
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
        "{{\"file\":{},\"kernel\":{},\"names\":[{names}],\"size\":{},\"default\":{{{default}}}}}",
        s(file),
        s(kernel),
        space.size()
    )
}

/// One kernel's space for people.
pub fn text(kernel: &str, space: &Space) -> String {
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
            lines.push(if args.json {
                json_line(&file.name, &k.name, &space)
            } else {
                text(&k.name, &space)
            });
        }
    }
    if let (Some(name), false) = (&args.kernel, kernel_found) {
        return fail(&format!("no file has a kernel `{name}`"));
    }
    // Text blocks end with a newline, so joining them leaves a blank line between kernels.
    println!("{}", lines.join("\n").trim_end());
    ExitCode::SUCCESS
}
