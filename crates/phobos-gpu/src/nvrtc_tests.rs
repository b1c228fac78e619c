//! Unit tests of the NVRTC options, flags and log handling (no NVRTC needed).
use super::*;

#[test]
fn arch_names_round_trip() {
    for a in [
        Arch::SM_90A,
        Arch::SM_90,
        Arch::SM_80,
        Arch::new(10, 0, true),
    ] {
        assert_eq!(Arch::parse(&a.sm()), Some(a));
        assert_eq!(Arch::parse(&a.compute()), Some(a));
    }
    assert_eq!(Arch::SM_90A.sm(), "sm_90a");
    assert_eq!(Arch::SM_90A.compute(), "compute_90a");
    assert_eq!(Arch::new(10, 0, true).sm(), "sm_100a");
    assert_eq!(Arch::parse("9.0"), Some(Arch::SM_90));
    assert_eq!(Arch::parse("89"), Some(Arch::new(8, 9, false)));
    assert_eq!(Arch::parse("sm_x"), None);
    assert_eq!(Arch::parse("sm_9"), None);
    assert_eq!(Arch::for_device((9, 0)), Arch::SM_90A);
    assert_eq!(Arch::for_device((8, 0)), Arch::SM_80);
}

#[test]
fn default_flags_are_sm90a_cubin_verbose_no_fast_math() {
    let o = CompileOptions::default();
    let f = o.flags_with(None);
    assert_eq!(f, vec!["--gpu-architecture=sm_90a", "--ptxas-options=-v"]);
    assert!(!f.iter().any(|f| f.contains("fast")));
}

#[test]
fn every_option_becomes_its_flag_in_order() {
    let o = CompileOptions {
        arch: Arch::SM_80,
        cubin: false,
        max_registers: Some(128),
        line_info: true,
        fast_math: true,
        include_dirs: vec!["/inc".into()],
        defines: vec![("TILE".into(), Some("64".into())), ("DEBUG".into(), None)],
        extra_flags: vec!["--std=c++17".into()],
        ..CompileOptions::default()
    };
    let f = o.flags_with(Some(std::path::Path::new("/cuda/include")));
    assert_eq!(
        f,
        vec![
            "--gpu-architecture=compute_80",
            "--maxrregcount=128",
            "-lineinfo",
            "--use_fast_math",
            "--include-path=/inc",
            "--include-path=/cuda/include",
            "-DTILE=64",
            "-DDEBUG",
            "--std=c++17",
        ]
    );
    let no_inc = CompileOptions {
        cuda_include: false,
        ..CompileOptions::default()
    };
    assert!(!no_inc
        .flags_with(Some(std::path::Path::new("/cuda/include")))
        .iter()
        .any(|f| f.contains("include")));
}

#[test]
fn log_summary_takes_the_first_error_and_counts_the_rest() {
    let log =
        "phobos_kernel.cu(3): warning #177-D: variable \"q\" was declared but never referenced\n\
               phobos_kernel.cu(4): error: identifier \"x\" is undefined\n  y = x;\n      ^\n\n\
               phobos_kernel.cu(5): error: expected a \";\"\n\n\
               2 errors detected in the compilation of \"phobos_kernel.cu\".";
    assert_eq!(
        summarize_log(log).unwrap(),
        "phobos_kernel.cu(4): error: identifier \"x\" is undefined (and 1 more error)"
    );
    assert_eq!(
        summarize_log("nvrtc: error: unrecognized option --bogus found").unwrap(),
        "nvrtc: error: unrecognized option --bogus found"
    );
    assert_eq!(summarize_log("  \n"), None);
    assert_eq!(summarize_log("just a note").unwrap(), "just a note");
}

#[test]
fn error_summary_is_one_line() {
    let e = CompileError {
        kind: CompileErrorKind::Compilation,
        log: "k.cu(1): catastrophic error: could not open source file \"x.h\"\n  #include <x.h>\n"
            .into(),
        options: Box::default(),
        flags: vec![],
    };
    assert_eq!(
        e.to_string(),
        "compile error: k.cu(1): catastrophic error: could not open source file \"x.h\""
    );
    let missing = CompileError {
        kind: CompileErrorKind::NvrtcNotFound(probe::NVRTC_NOT_FOUND.into()),
        log: String::new(),
        options: Box::default(),
        flags: vec![],
    };
    assert_eq!(missing.to_string(), probe::NVRTC_NOT_FOUND);
}
