//! Kernels, attributes, type parameters, parameters and types.

use super::*;

fn kernel(src: &str) -> Kernel {
    let mut file = parse_ok(src);
    assert_eq!(file.kernels.len(), 1);
    file.kernels.remove(0)
}

fn attrs(attrs_src: &str) -> Vec<Attr> {
    kernel(&format!("{attrs_src}\nkernel k() {{}}")).attrs
}

#[test]
fn kernel_header_with_type_params_and_every_param_kind() {
    let src =
        "kernel gemm<T, TC = f32>(A: tensor<T>[M, K], alpha: f32, t: tile<f32>[4, 2 * W]) { }";
    let k = kernel(src);
    assert_eq!(k.name.name, "gemm");
    let tps: Vec<(String, Option<String>)> = k
        .type_params
        .iter()
        .map(|t| {
            (
                t.name.name.clone(),
                t.default.as_ref().map(|d| d.name.clone()),
            )
        })
        .collect();
    assert_eq!(tps, [("T".into(), None), ("TC".into(), Some("f32".into()))]);
    assert_eq!(&src[k.type_params[1].span.range()], "TC = f32");
    let params: Vec<(String, String)> = k
        .params
        .iter()
        .map(|p| (p.name.name.clone(), sx_ty(&p.ty)))
        .collect();
    assert_eq!(
        params,
        [
            ("A".into(), "tensor<T>[M, K]".into()),
            ("alpha".into(), "f32".into()),
            ("t".into(), "tile<f32>[4, (* 2 W)]".into()),
        ]
    );
    assert_eq!(&src[k.params[0].span.range()], "A: tensor<T>[M, K]");
    assert_eq!(&src[k.params[0].ty.span().range()], "tensor<T>[M, K]");
    assert_eq!(k.span.range(), 0..src.len());
}

#[test]
fn tensor_dims_are_names_or_literals() {
    let k = kernel("kernel k(X: tensor<f16>[1, N, 64]) {}");
    let TypeExpr::Tensor { dims, .. } = &k.params[0].ty else {
        panic!()
    };
    assert!(matches!(&dims[0], DimExpr::Lit(1, _)));
    assert!(matches!(&dims[1], DimExpr::Name(id) if id.name == "N"));
    assert!(matches!(&dims[2], DimExpr::Lit(64, _)));
    assert_eq!(codes("kernel k(X: tensor<f16>[N + 1, M]) {}"), ["E0030"]);
}

#[test]
fn headers_span_lines() {
    let k = kernel(
        "kernel k<\n  T = f16,\n>(\n  A: tensor<T>[\n    M,\n    K\n  ],\n  b: f32,\n)\n{\n}",
    );
    assert_eq!(k.type_params.len(), 1);
    assert_eq!(k.params.len(), 2);
}

#[test]
fn autotune_entries_keep_expressions() {
    let a = attrs("@autotune(TILE_M in [32, 128], D in [64], X in [-1, 1.5, 3])");
    let AttrKind::Autotune(entries) = &a[0].kind else {
        panic!()
    };
    assert_eq!(entries.len(), 3);
    assert_eq!(
        entries[2].values.iter().map(sx).collect::<Vec<_>>(),
        ["(neg 1)", "1.5", "3"]
    );
    assert!(matches!(attrs("@autotune()")[0].kind, AttrKind::Autotune(ref e) if e.is_empty()));
}

#[test]
fn every_known_attribute() {
    let a = attrs(
        "@launch(256, 2, R)\n@grid(cdiv(M, T), 1)\n@where(K % (S * T) == 0)\n@aligned(K = 8, N = TILE_N)\n\
         @flops(2 * M * N * K)\n@bytes(4 * M)\n@allow_tf32",
    );
    let shapes: Vec<String> = a
        .iter()
        .map(|a| match &a.kind {
            AttrKind::Launch(es) => {
                format!("launch {}", es.iter().map(sx).collect::<Vec<_>>().join(" "))
            }
            AttrKind::Grid(es) => {
                format!("grid {}", es.iter().map(sx).collect::<Vec<_>>().join(" "))
            }
            AttrKind::Where(e) => format!("where {}", sx(e)),
            AttrKind::Aligned(ps) => format!(
                "aligned {}",
                ps.iter()
                    .map(|(n, e)| format!("{}={}", n.name, sx(e)))
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
            AttrKind::Flops(e) => format!("flops {}", sx(e)),
            AttrKind::Bytes(e) => format!("bytes {}", sx(e)),
            AttrKind::AllowTf32 => "allow_tf32".into(),
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(
        shapes,
        [
            "launch 256 2 R",
            "grid (call cdiv M T) 1",
            "where (== (% K (* S T)) 0)",
            "aligned K=8 N=TILE_N",
            "flops (* (* (* 2 M) N) K)",
            "bytes (* 4 M)",
            "allow_tf32",
        ]
    );
}

#[test]
fn unknown_attributes_keep_raw_text() {
    let a = attrs("@inline\n@hint( a(b, [c]),  d = 1 )\n@empty()");
    assert_eq!(a[0].kind, AttrKind::Unknown(String::new()));
    assert_eq!(a[1].kind, AttrKind::Unknown("a(b, [c]),  d = 1".into()));
    assert_eq!(a[2].kind, AttrKind::Unknown(String::new()));
    assert_eq!(a[1].name.name, "hint");
}

#[test]
fn attribute_spans() {
    let src = "@launch(256) @allow_tf32\n@foo(1)\nkernel k() {}";
    let k = kernel(src);
    let texts: Vec<&str> = k.attrs.iter().map(|a| &src[a.span.range()]).collect();
    assert_eq!(texts, ["@launch(256)", "@allow_tf32", "@foo(1)"]);
}

#[test]
fn known_attributes_with_the_wrong_shape() {
    for (src, help_has) in [
        ("@autotune(TILE_M = [32, 128])", "@autotune(NAME in"),
        ("@autotune(TILE_M in 32)", "@autotune(NAME in"),
        ("@launch()", "@launch(threads"),
        ("@launch(1, 2, 3, 4)", "@launch(threads"),
        ("@grid", "@grid(x"),
        ("@where(a, b)", "@where(condition)"),
        ("@aligned(K)", "@aligned(NAME = multiple"),
        ("@flops()", "@flops(expression)"),
        ("@allow_tf32(1)", "@allow_tf32"),
    ] {
        let (file, d) = parse(&SourceFile::new("t", format!("{src}\nkernel k() {{}}")));
        assert_eq!(d.len(), 1, "{src}: {d:#?}");
        assert_eq!(d[0].code, "E0031", "{src}");
        assert!(
            d[0].help.as_deref().unwrap().contains(help_has),
            "{src}: {:?}",
            d[0].help
        );
        // The attribute is dropped; the kernel is still there.
        assert_eq!(file.kernels.len(), 1, "{src}");
        assert!(file.kernels[0].attrs.is_empty(), "{src}");
    }
}

#[test]
fn tensor_dims_in_parentheses() {
    let src = "kernel k(A: tensor<f32>(M, K)) {}";
    let (file, d) = parse(&SourceFile::new("t", src));
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].code, "E0029");
    assert_eq!(d[0].help.as_deref(), Some("write `tensor<f32>[M, K]`"));
    assert_eq!(&src[d[0].primary.span.range()], "(");
    // Read as if bracketed.
    assert_eq!(sx_ty(&file.kernels[0].params[0].ty), "tensor<f32>[M, K]");
}

#[test]
fn missing_kernel_keyword() {
    let (file, d) = parse(&SourceFile::new(
        "t",
        "gemm(A: tensor<f32>[M]) {\n  x = 1\n}",
    ));
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].code, "E0024");
    assert_eq!(d[0].help.as_deref(), Some("write `kernel gemm(...)`"));
    assert_eq!(file.kernels[0].body.stmts.len(), 1);
    let d = parse_err("kernal gemm() {}");
    assert_eq!(d[0].message, "expected `kernel`, found `kernal`");
    assert_eq!(codes("@launch(256)\n\nx = 1"), ["E0024"]);
    assert_eq!(codes("@launch(256)"), ["E0024"]);
}

#[test]
fn broken_parameter_does_not_hide_the_rest() {
    let src = "kernel k(A tensor<f32>[M], B: , C: f32) {\n  x = 1 1\n}";
    let (file, d) = parse(&SourceFile::new("t", src));
    let codes: Vec<&str> = d.iter().map(|d| d.code).collect();
    assert_eq!(codes, ["E0020", "E0034", "E0022"]);
    assert_eq!(file.kernels[0].params.len(), 1);
    assert_eq!(file.kernels[0].params[0].name.name, "C");
}

#[test]
fn top_level_recovery_finds_the_next_kernel() {
    let src = "kernel a( {\n}\n@launch(1)\nkernel b() { }\nstray tokens here\nkernel c() { }";
    let (file, d) = parse(&SourceFile::new("t", src));
    let names: Vec<&str> = file.kernels.iter().map(|k| k.name.name.as_str()).collect();
    assert!(
        names.contains(&"b") && names.contains(&"c"),
        "{names:?} {d:#?}"
    );
    assert!(d.iter().any(|d| d.code == "E0024"));
}

#[test]
fn unknown_attribute_brackets_must_balance() {
    let (file, d) = parse(&SourceFile::new("t", "@hint(a [1, 2]])\nkernel k() {}"));
    assert_eq!(d.iter().map(|d| d.code).collect::<Vec<_>>(), ["E0023"]);
    assert_eq!(d[0].message, "expected `)`, found `]`");
    assert_eq!(file.kernels.len(), 1);
    assert_eq!(codes("@hint(a\nkernel k() {}"), ["E0023"]);
}
