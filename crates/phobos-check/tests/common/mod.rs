//! Helpers shared by the checker's integration tests: one per boundary.
#![allow(dead_code)]

use phobos_check::{check_module, instantiate, load, Module};
use phobos_ir as ir;
use phobos_syntax::{Diagnostic, SourceFile};

/// Loads source text (panics on load errors, printing them).
pub fn module(src: &str) -> Module {
    match load(SourceFile::new("t.ph", src)) {
        Ok(m) => m,
        Err(d) => panic!("load failed:\n{}", show(&d)),
    }
}

/// Every diagnostic `phobos check` would print for the source.
pub fn diags(src: &str) -> Vec<Diagnostic> {
    match load(SourceFile::new("t.ph", src)) {
        Ok(m) => check_module(&m),
        Err(d) => d,
    }
}

/// The codes of the diagnostics, in order.
pub fn codes(src: &str) -> Vec<&'static str> {
    diags(src).iter().map(|d| d.code).collect()
}

/// Asserts the source checks clean (no diagnostics at all).
pub fn clean(src: &str) {
    let d = diags(src);
    assert!(d.is_empty(), "expected no diagnostics:\n{}", show(&d));
}

/// The IR of the only kernel at its default point.
pub fn lower(src: &str) -> ir::Kernel {
    lower_at(src, None)
}

/// The IR of the only kernel with pins.
pub fn lower_at(src: &str, pins: Option<&str>) -> ir::Kernel {
    let m = module(src);
    let k = m.kernel(None).unwrap();
    let v = k.variant(pins, None, None).unwrap();
    match instantiate(&m, k, &v) {
        Ok(k) => k,
        Err(d) => panic!("instantiate failed:\n{}", show(&d)),
    }
}

/// Asserts the only error has this code, and returns it.
pub fn error(src: &str, code: &str) -> Diagnostic {
    let d = diags(src);
    let errors: Vec<&Diagnostic> = d.iter().filter(|d| d.is_error()).collect();
    assert!(
        errors.iter().any(|e| e.code == code),
        "expected {code}, got:\n{}",
        show(&d)
    );
    errors.into_iter().find(|e| e.code == code).unwrap().clone()
}

/// One line per diagnostic: `code message [help]`.
pub fn show(d: &[Diagnostic]) -> String {
    d.iter()
        .map(|d| {
            format!(
                "{} {} @{:?} help={:?}",
                d.code, d.message, d.primary.span, d.help
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}
