//! Diagnostic snapshots: every `tests/ui/*.ph` (and `*.cu`, CUDA C++ with attribute comments) is a small bad (or warning-only) kernel; its
//! diagnostics, as `phobos check` renders them without colour, are compared with
//! `tests/ui/snapshots/ui__<name>.snap`. Bless with `INSTA_UPDATE=always cargo test -p
//! phobos-cli --test ui` (or `cargo insta review`), then read every changed snapshot.

use phobos_cli::cmd::check::check_source;
use phobos_cli::render::render_all;
use phobos_syntax::SourceFile;
use std::path::Path;

/// Renders what `phobos check` prints for one file, with its summary line.
fn check_diag(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let name = format!("tests/ui/{}", path.file_name().unwrap().to_string_lossy());
    let file = SourceFile::new(name, text);
    let diags = check_source(&file);
    let errors = diags.iter().filter(|d| d.is_error()).count();
    let plural = |n: usize, w: &str| format!("{n} {w}{}", if n == 1 { "" } else { "s" });
    format!(
        "{}\n\n{}, {}\n",
        render_all(&diags, &file, false),
        plural(errors, "error"),
        plural(diags.len() - errors, "warning")
    )
}

#[test]
fn ui() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ui");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "ph" || e == "cu"))
        .collect();
    files.sort();
    assert!(files.len() >= 30, "only {} ui files", files.len());
    let mut failed = Vec::new();
    let mut codes = std::collections::BTreeSet::new();
    for path in &files {
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        let out = check_diag(path);
        assert!(
            out.contains("error[") || out.contains("warning["),
            "{name}.ph produces no diagnostic"
        );
        for code in out
            .split(['[', ']'])
            .filter(|s| s.len() == 5 && s[1..].chars().all(|c| c.is_ascii_digit()))
        {
            codes.insert(code.to_string());
        }
        let result = std::panic::catch_unwind(|| {
            insta::with_settings!({
                snapshot_path => dir.join("snapshots"),
                prepend_module_to_snapshot => false,
                omit_expression => true,
            }, {
                insta::assert_snapshot!(name.as_str(), out);
            });
        });
        if result.is_err() {
            failed.push(name);
        }
    }
    assert!(failed.is_empty(), "snapshots differ: {failed:?}");
    assert!(
        codes.len() >= 30,
        "only {} distinct codes: {codes:?}",
        codes.len()
    );
}
