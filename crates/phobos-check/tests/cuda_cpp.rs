//! CUDA C++ sources: the examples load with their spaces, and the attribute checks of
//! `phobos_check::cuda_cpp` point into the `.cu` text.

use phobos_check::cuda_cpp::{is_cuda_source, load_cu};
use phobos_check::{codes, instantiate};
use phobos_syntax::{Diagnostic, SourceFile};

fn example(name: &str) -> SourceFile {
    let path = format!("{}/../../examples/cuda/{name}", env!("CARGO_MANIFEST_DIR"));
    SourceFile::new(name, std::fs::read_to_string(path).unwrap())
}

fn errors(text: &str) -> Vec<Diagnostic> {
    match load_cu(SourceFile::new("k.cu", text)) {
        Ok(m) => panic!("loaded: {:?}", m.module.kernels),
        Err(d) => d,
    }
}

/// The `.cu` text under a diagnostic's caret.
fn under(text: &str, d: &Diagnostic) -> String {
    text[d.primary.span.range()].to_string()
}

#[test]
fn the_examples_load_with_their_spaces() {
    for (name, kernel, points) in [
        ("reduction.cu", "row_sum", 5 * 3 * 3),
        ("stencil.cu", "heat", 3 * 4 * 3),
        ("compile_error.cu", "saxpy", 3 * 4),
    ] {
        assert!(is_cuda_source(name));
        let cu = load_cu(example(name)).unwrap_or_else(|d| panic!("{name}: {d:?}"));
        let info = cu.module.kernel(None).unwrap();
        assert_eq!(info.name, kernel);
        assert_eq!(info.space.size(), points, "{name}");
        assert!(
            cu.module.warnings.is_empty(),
            "{name}: {:?}",
            cu.module.warnings
        );
        // The default point instantiates; its IR writes exactly the non-const pointers.
        let v = info.default_variant().unwrap();
        let k = instantiate(&cu.module, info, &v).unwrap();
        assert_eq!(k.name, kernel);
        assert!(k.launch.threads >= 32, "{name}: {:?}", k.launch);
    }
    assert!(!is_cuda_source("k.ph"));
}

const SAXPY: &str = "\
// @autotune(BLOCK in [64, 256])
// @launch(BLOCK)
// @grid(cdiv(N, BLOCK))
// @params(X: tensor<f32>[N], Y: tensor<f32>[N], a: f32)
extern \"C\" __global__ void saxpy(const float* x, float* y, float a, int n) {
  int i = blockIdx.x * BLOCK + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
";

#[test]
fn a_clean_kernel_loads() {
    let cu = load_cu(SourceFile::new("k.cu", SAXPY)).unwrap();
    let info = cu.module.kernel(Some("saxpy")).unwrap();
    assert_eq!(info.runtime_dims(), vec!["N".to_string()]);
    assert_eq!(cu.functions[0].params.len(), 4);
}

#[test]
fn an_unknown_attribute_is_an_error_at_its_name() {
    let text = SAXPY.replace("@launch(BLOCK)", "@lanuch(BLOCK)");
    let d = errors(&text);
    assert_eq!(d[0].code, codes::CU_UNKNOWN_ATTR);
    assert_eq!(under(&text, &d[0]), "lanuch");
    assert_eq!(d[0].help.as_deref(), Some("did you mean `launch`?"));
}

#[test]
fn a_missing_params_attribute_is_an_error_at_the_function() {
    let text = SAXPY.replace(
        "// @params(X: tensor<f32>[N], Y: tensor<f32>[N], a: f32)\n",
        "",
    );
    let d = errors(&text);
    assert_eq!(d[0].code, codes::CU_PARAMS);
    assert_eq!(under(&text, &d[0]), "saxpy");
}

#[test]
fn a_name_the_source_never_uses_is_an_error() {
    let text = SAXPY.replace("[64, 256])", "[64, 256], UNROLL in [1, 4])");
    let d = errors(&text);
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0].code, codes::CU_UNUSED_NAME);
    assert_eq!(under(&text, &d[0]), "UNROLL");
}

#[test]
fn a_name_only_launch_reads_is_used() {
    let text = SAXPY
        .replace("[64, 256])", "[64, 256], T in [64, 128])")
        .replace("@launch(BLOCK)", "@launch(T)");
    assert!(load_cu(SourceFile::new("k.cu", text)).is_ok());
}

#[test]
fn params_that_do_not_match_the_signature() {
    // One parameter too few: the runtime dim's int is missing.
    let text = SAXPY.replace(", float a, int n)", ", float a)");
    let d = errors(&text);
    assert_eq!(d[0].code, codes::CU_SIGNATURE);
    assert_eq!(under(&text, &d[0]), "(const float* x, float* y, float a)");
    assert!(d[0].message.contains("must take 4"), "{}", d[0].message);
    // A tensor of the wrong element type.
    let text = SAXPY.replace("X: tensor<f32>", "X: tensor<f16>");
    let d = errors(&text);
    assert_eq!(d[0].code, codes::CU_SIGNATURE);
    assert_eq!(under(&text, &d[0]), "const float* x");
    assert!(d[0].message.contains("`__half*`"), "{}", d[0].message);
    assert_eq!(&text[d[0].secondary[0].span.range()], "X: tensor<f16>[N]");
    // A scalar passed where a pointer is declared.
    let text = SAXPY.replace("float* y,", "float y,");
    assert_eq!(errors(&text)[0].code, codes::CU_SIGNATURE);
    // The dim's parameter must be an int.
    let text = SAXPY.replace("int n)", "float n)");
    let d = errors(&text);
    assert_eq!(under(&text, &d[0]), "float n");
}

#[test]
fn phobos_errors_in_attributes_point_into_the_cu_file() {
    let text = SAXPY.replace("[64, 256]", "[256, 64]");
    let d = errors(&text);
    assert_eq!(d[0].code, codes::AUTOTUNE_BOUNDS_ORDER);
    let (line, _) = SourceFile::new("k.cu", text.clone()).line_col(d[0].primary.span.lo);
    assert_eq!(line, 1);
    assert_eq!(under(&text, &d[0]), "64");
}

#[test]
fn attributes_continue_on_the_next_comment_lines() {
    let text = SAXPY.replace(
        "// @params(X: tensor<f32>[N], Y: tensor<f32>[N], a: f32)",
        "// @params(X: tensor<f32>[N],\n//         Y: tensor<f32>[N], a: f32)",
    );
    let cu = load_cu(SourceFile::new("k.cu", text)).unwrap();
    assert_eq!(cu.module.kernels[0].params.len(), 3);
}

#[test]
fn attributes_below_every_kernel_are_an_error() {
    let text = format!("{SAXPY}// @launch(64)\n");
    let d = errors(&text);
    assert_eq!(d[0].code, codes::CU_NO_KERNEL);
}

#[test]
fn two_kernels_each_take_the_attributes_above_them() {
    let second = "\n// @launch(64)\n// @params(Y: tensor<f32>[N])\n\
                  extern \"C\" __global__ void zero(float* y, int n) { y[threadIdx.x] = 0; }\n";
    let cu = load_cu(SourceFile::new("k.cu", format!("{SAXPY}{second}"))).unwrap();
    assert_eq!(cu.module.kernels.len(), 2);
    assert_eq!(cu.module.kernels[1].name, "zero");
    assert_eq!(cu.module.kernels[1].space.size(), 1);
    // A __global__ without attributes is not a kernel to tune.
    let plain = "__global__ void helper(int* p) {}\n";
    let cu = load_cu(SourceFile::new("k.cu", format!("{plain}{SAXPY}"))).unwrap();
    assert_eq!(cu.module.kernels.len(), 1);
}

#[test]
fn every_cuda_code_has_a_case() {
    let cases: [(&str, String); 6] = [
        ("E1101", SAXPY.replace("@launch(BLOCK)", "@lanuch(BLOCK)")),
        (
            "E1102",
            SAXPY.replace(
                "// @params(X: tensor<f32>[N], Y: tensor<f32>[N], a: f32)\n",
                "",
            ),
        ),
        (
            "E1102",
            SAXPY.replace(
                "// @launch(BLOCK)",
                "// @params(X: tensor<f32>[N])\n// @launch(BLOCK)",
            ),
        ),
        (
            "E1103",
            SAXPY.replace("[64, 256])", "[64, 256], U in [1, 2])"),
        ),
        (
            "E1104",
            SAXPY.replace("float a, int n)", "double a, int n)"),
        ),
        ("E1105", format!("{SAXPY}// @grid(1)\n")),
    ];
    for (code, _) in phobos_check::codes::ALL
        .iter()
        .filter(|(c, _)| c.starts_with("E11"))
    {
        assert!(cases.iter().any(|(c, _)| c == code), "no case for {code}");
    }
    for (code, text) in &cases {
        let d = errors(text);
        assert!(d.iter().any(|d| d.code == *code), "{code}: {d:?}");
        for d in &d {
            assert!(d.primary.span.hi as usize <= text.len(), "{code}: {d:?}");
        }
    }
}

/// No input panics: every prefix of the examples (cut anywhere, inside comments, attributes
/// and signatures), and each with a byte dropped, loads or reports diagnostics.
#[test]
fn no_cut_of_the_examples_panics() {
    for name in ["reduction.cu", "stencil.cu", "compile_error.cu"] {
        let text = example(name).text;
        let cuts: Vec<usize> = (0..text.len())
            .filter(|&i| text.is_char_boundary(i))
            .collect();
        for &i in &cuts {
            let _ = load_cu(SourceFile::new(name, &text[..i]));
            let dropped = format!("{}{}", &text[..i], text.get(i + 1..).unwrap_or(""));
            if let Err(d) = load_cu(SourceFile::new(name, dropped.clone())) {
                for d in d {
                    assert!(d.primary.span.hi as usize <= dropped.len(), "{name} at {i}");
                }
            }
        }
    }
}
