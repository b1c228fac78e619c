//! Both seed kernels parse to the expected tree, and the larger kernels parse cleanly.

use super::*;

fn names(ids: &[Ident]) -> Vec<&str> {
    ids.iter().map(|i| i.name.as_str()).collect()
}

#[test]
fn gemm_seed_parses_to_the_expected_tree() {
    let file = parse_ok(SEED_GEMM);
    assert_eq!(file.kernels.len(), 1);
    let k = &file.kernels[0];
    assert_eq!(k.name.name, "gemm");
    assert!(k.type_params.is_empty());

    assert_eq!(k.attrs.len(), 2);
    let AttrKind::Autotune(entries) = &k.attrs[0].kind else {
        panic!("expected @autotune, got {:?}", k.attrs[0].kind)
    };
    let shape: Vec<(String, Vec<String>)> = entries
        .iter()
        .map(|e| (e.name.name.clone(), e.values.iter().map(sx).collect()))
        .collect();
    assert_eq!(
        shape,
        vec![
            ("TILE_M".into(), vec!["32".into(), "128".into()]),
            ("TILE_N".into(), vec!["32".into(), "128".into()]),
            ("TILE_K".into(), vec!["8".into(), "16".into(), "32".into()]),
        ]
    );
    // list_span covers the brackets exactly.
    assert_eq!(&SEED_GEMM[entries[0].list_span.range()], "[32, 128]");
    assert_eq!(&SEED_GEMM[entries[2].span.range()], "TILE_K in [8, 16, 32]");
    let AttrKind::Launch(launch) = &k.attrs[1].kind else {
        panic!("expected @launch")
    };
    assert_eq!(launch.iter().map(sx).collect::<Vec<_>>(), ["256"]);
    assert_eq!(&SEED_GEMM[k.attrs[1].span.range()], "@launch(256)");

    let params: Vec<(String, String)> = k
        .params
        .iter()
        .map(|p| (p.name.name.clone(), sx_ty(&p.ty)))
        .collect();
    assert_eq!(
        params,
        vec![
            ("A".into(), "tensor<f32>[M, K]".into()),
            ("B".into(), "tensor<f32>[K, N]".into()),
            ("C".into(), "tensor<f32>[M, N]".into()),
        ]
    );

    let body: Vec<String> = k.body.stmts.iter().map(sx_stmt).collect();
    assert_eq!(
        body,
        vec![
            "(let pm = (. (. ctx block) x))",
            "(let pn = (. (. ctx block) y))",
            "(var acc: tile<f32>[TILE_M, TILE_N] = 0.0)",
            "(for kt (call range 0 K TILE_K) {\
             (var a = (idx A [(* pm TILE_M) :+ TILE_M] [kt :+ TILE_K])); \
             (var b = (idx B [kt :+ TILE_K] [(* pn TILE_N) :+ TILE_N])); \
             (Add acc (call dot a b))})",
            "(Set (idx C [(* pm TILE_M) :+ TILE_M] [(* pn TILE_N) :+ TILE_N]) acc)",
        ]
    );
    // The kernel spans from its first attribute to its closing brace.
    assert_eq!(k.span.lo, 0);
    assert_eq!(k.span.hi as usize, SEED_GEMM.trim_end().len());
}

#[test]
fn partial_sums_seed_parses_to_the_expected_tree() {
    let file = parse_ok(SEED_PARTIAL_SUMS);
    let k = &file.kernels[0];
    assert_eq!(k.name.name, "partial_sums");
    let AttrKind::Autotune(entries) = &k.attrs[0].kind else {
        panic!("expected @autotune")
    };
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].name.name, "U");
    assert_eq!(
        entries[0].values.iter().map(sx).collect::<Vec<_>>(),
        ["1", "8"]
    );
    assert_eq!(
        k.params.iter().map(|p| sx_ty(&p.ty)).collect::<Vec<_>>(),
        ["tensor<f32>[1, N]", "tensor<f32>[1, 256]"]
    );
    let body: Vec<String> = k.body.stmts.iter().map(sx_stmt).collect();
    assert_eq!(
        body,
        vec![
            "(var acc: f32 = 0.0)",
            "(for<U> i (call range (. ctx thread) N 256) {(Add acc (idx X 0 i))})",
            "(Set (idx O 0 (. ctx thread)) acc)",
        ]
    );
    let StmtKind::For { unroll, var, .. } = &k.body.stmts[1].kind else {
        panic!("expected a for loop")
    };
    assert_eq!(
        &SEED_PARTIAL_SUMS[unroll.as_ref().unwrap().span.range()],
        "U"
    );
    assert_eq!(&SEED_PARTIAL_SUMS[var.span.range()], "i");
}

#[test]
fn both_seeds_in_one_file() {
    let file = parse_ok(&format!("{SEED_GEMM}\n{SEED_PARTIAL_SUMS}"));
    let ks: Vec<Ident> = file.kernels.iter().map(|k| k.name.clone()).collect();
    assert_eq!(names(&ks), ["gemm", "partial_sums"]);
}

#[test]
fn larger_kernels_parse_cleanly() {
    for src in LARGER {
        let file = parse_ok(src);
        assert_eq!(file.kernels.len(), 1);
    }
    let attn = &parse_ok(LARGER[0]).kernels[0];
    assert_eq!(attn.type_params.len(), 1);
    assert_eq!(attn.type_params[0].default.as_ref().unwrap().name, "f16");
    assert_eq!(attn.attrs.len(), 6);
    let misc = &parse_ok(LARGER[1]).kernels[0];
    assert!(matches!(misc.attrs[1].kind, AttrKind::AllowTf32));
    assert_eq!(
        misc.attrs[2].kind,
        AttrKind::Unknown("level = 2, mode(fast)".into())
    );
    // `var i = ctx.thread; var total: i64` is two statements on one line.
    assert_eq!(sx_stmt(&misc.body.stmts[1]), "(var total: i64)");
}
