//! `phobos check FILE...`: every diagnostic of every file, then "N errors, M warnings".
//! Exit 0 when there are no errors (warnings allowed), 1 otherwise (unreadable files included).

use crate::args::CheckArgs;
use crate::render;
use phobos_syntax::{Diagnostic, SourceFile};
use std::path::Path;
use std::process::ExitCode;

/// Reads a `.ph` (or `.cu`) file into a [`SourceFile`] named by its path.
pub fn read_source(path: &Path) -> Result<SourceFile, String> {
    std::fs::read_to_string(path)
        .map(|text| SourceFile::new(path.display().to_string(), text))
        .map_err(|e| format!("cannot read {}: {e}", path.display()))
}

/// Loads a `.ph` file, or the kernels a `.cu` file's attribute comments declare (its
/// diagnostics point into the `.cu` file).
pub fn load_module(file: &SourceFile) -> Result<phobos_check::Module, Vec<Diagnostic>> {
    if phobos_check::cuda_cpp::is_cuda_source(&file.name) {
        return phobos_check::cuda_cpp::load_cu(file.clone()).map(|cu| cu.module);
    }
    phobos_check::load(file.clone())
}

/// The message for a command that needs a Phobos body and was given a `.cu` file.
pub fn cuda_source_refused(file: &SourceFile, command: &str) -> Option<(String, String)> {
    phobos_check::cuda_cpp::is_cuda_source(&file.name).then(|| {
        (
            format!(
                "{} is CUDA C++: `phobos {command}` takes Phobos kernels",
                file.name
            ),
            "tune it with phobos-kbench (docs/cuda.md); `phobos check` and `phobos space` \
             read its attributes"
                .to_string(),
        )
    })
}

/// Every diagnostic `phobos check` reports for one source file (a `.cu` file: its attribute
/// comments, mapped into it).
pub fn check_source(file: &SourceFile) -> Vec<Diagnostic> {
    if phobos_check::cuda_cpp::is_cuda_source(&file.name) {
        return match phobos_check::cuda_cpp::load_cu(file.clone()) {
            Ok(cu) => {
                // `check_module` starts with the module's warnings, mapped already.
                let mut diags = phobos_check::check_module(&cu.module);
                let mapped = cu.module.warnings.len().min(diags.len());
                let rest: Vec<Diagnostic> = diags.drain(mapped..).map(|d| cu.remap(d)).collect();
                diags.extend(rest);
                // `phobos emit` shows a Phobos point's errors; a C++ kernel's are the tuner's.
                for d in &mut diags {
                    if d.code == phobos_check::codes::POINTS_FAIL {
                        d.help = Some(
                            "`phobos-kbench --dry-run --report` lists each point's error".into(),
                        );
                    }
                }
                diags
            }
            Err(diags) => diags,
        };
    }
    match phobos_check::load(file.clone()) {
        Ok(module) => phobos_check::check_module(&module),
        Err(diags) => diags,
    }
}

fn plural(n: usize, word: &str) -> String {
    format!("{n} {word}{}", if n == 1 { "" } else { "s" })
}

pub fn run(args: &CheckArgs) -> ExitCode {
    let color = render::stderr_color();
    let (mut errors, mut warnings) = (0usize, 0usize);
    for path in &args.files {
        let file = match read_source(path) {
            Ok(f) => f,
            Err(e) => {
                eprintln!("error: {e}\n");
                errors += 1;
                continue;
            }
        };
        for d in check_source(&file) {
            if d.is_error() {
                errors += 1;
            } else {
                warnings += 1;
            }
            eprintln!("{}\n", render::render(&d, &file, color));
        }
    }
    eprintln!(
        "{}, {}",
        plural(errors, "error"),
        plural(warnings, "warning")
    );
    if errors > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
