//! Every example and both seed kernels check clean.

mod common;

#[test]
fn examples_check_clean() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples");
    let mut n = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "ph") {
            let src = std::fs::read_to_string(&path).unwrap();
            let d = common::diags(&src);
            assert!(d.is_empty(), "{}:\n{}", path.display(), common::show(&d));
            n += 1;
        }
    }
    assert!(n >= 2);
}
