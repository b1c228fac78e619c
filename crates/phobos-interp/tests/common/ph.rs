//! Kernels from `.ph` source text, through the checker.

#![allow(dead_code)]

use phobos_ir::Kernel;
use phobos_syntax::SourceFile;

/// The text of `examples/NAME` at the workspace root.
pub fn example(name: &str) -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/").to_string() + name;
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Checks `src` and instantiates its kernel `name` (the only one when `None`) with the pins,
/// types and layout strings the CLI takes. Panics with every diagnostic on failure.
pub fn kernel(src: &str, name: Option<&str>, pins: Option<&str>, types: Option<&str>) -> Kernel {
    let file = SourceFile::new("test.ph", src);
    let module = phobos_check::load(file).unwrap_or_else(|d| panic!("load: {d:#?}"));
    let info = module.kernel(name).unwrap_or_else(|e| panic!("{e}"));
    let variant = info
        .variant(pins, types, None)
        .unwrap_or_else(|e| panic!("variant: {e}"));
    phobos_check::instantiate(&module, info, &variant)
        .unwrap_or_else(|d| panic!("instantiate: {d:#?}"))
}

/// Every point of a kernel's space, as `--autotune` pin strings.
pub fn points(src: &str, name: Option<&str>) -> Vec<String> {
    let module = phobos_check::load(SourceFile::new("test.ph", src)).unwrap();
    let info = module.kernel(name).unwrap();
    info.space.points().map(|p| p.to_pins()).collect()
}
