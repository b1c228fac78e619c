//! Differential test cases: a kernel at one point, its generated CUDA, inputs, and the
//! interpreter's outputs. Everything up to the GPU launch is built (and tested) offline.

use super::randk::{scalar_kernel, tile_kernel, Rng};
use phobos_cuda::{emit, EmitOptions, Emitted};
use phobos_interp::host::{random_tensor, shapes_for, stored_tensors, tensor_seed};
use phobos_interp::{Args, Config, Launch};
use phobos_ir::{DType, HostTensor, Kernel, ParamId, ParamKind};
use phobos_syntax::SourceFile;

/// One kernel launch to run on the interpreter and the GPU.
pub struct Case {
    pub label: String,
    pub kernel: Kernel,
    pub emitted: Emitted,
    /// The value of every parameter before the launch, in signature order.
    pub args: Vec<Value>,
    /// Runtime dims in `Kernel::dims` order, and the grid.
    pub dims: Vec<i64>,
    pub grid: [i64; 3],
    /// The interpreter's value of every stored tensor after the launch; empty for a case
    /// `PHOBOS_DIFF_ONLY` leaves out (`diff_only`).
    pub expected: Vec<(ParamId, HostTensor)>,
}

pub enum Value {
    Tensor(HostTensor),
    Scalar(f64),
}

/// Small integers in [-4, 4] ([0, 4] unsigned): exact in every type, sums exact in any order.
fn small_ints(dtype: DType, shape: &[usize], seed: u64) -> HostTensor {
    let mut rng = Rng::new(seed);
    let n: usize = shape.iter().product();
    let data: Vec<f64> = (0..n)
        .map(|_| match dtype {
            DType::Bool => rng.below(2) as f64,
            t if t.is_int() && !t.is_signed_int() => rng.below(5) as f64,
            _ => rng.below(9) as f64 - 4.0,
        })
        .collect();
    HostTensor::from_f64(dtype, shape, &data)
}

/// Tensors the kernel only writes start as NaN (or -77) so that skipped stores show.
fn poison(t: &mut HostTensor) {
    let v = if t.dtype.is_float() {
        f64::NAN
    } else if t.dtype == DType::Bool {
        1.0
    } else {
        t.dtype.round(-77.0)
    };
    t.data.iter_mut().for_each(|x| *x = v);
}

/// `PHOBOS_DIFF_ONLY`'s comma-separated parts, read once (empty when it is unset: every case).
/// A case it does not select is built without its reference (`Case::expected` is empty), so a
/// short GPU call that runs a few cases does not interpret all the others first.
pub fn diff_only() -> &'static [String] {
    static ONLY: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    ONLY.get_or_init(|| {
        std::env::var("PHOBOS_DIFF_ONLY")
            .unwrap_or_default()
            .split(',')
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect()
    })
}

/// Whether a case's label names one of `only`'s parts (every case when `only` is empty).
pub fn selected(label: &str, only: &[String]) -> bool {
    only.is_empty() || only.iter().any(|o| label.contains(o.as_str()))
}

/// Builds a case: inputs (seeded), interpreter run, generated code.
pub fn build(
    label: String,
    kernel: Kernel,
    source: SourceFile,
    dims: &[(String, i64)],
    seed: u64,
    exact: bool,
) -> Result<Case, String> {
    build_with(label, kernel, source, dims, seed, exact, &|_, _| {})
}

/// As `build`, each input tensor then given to `inputs` with its parameter's name (to set
/// chosen values, such as the indices a kernel reads at).
pub fn build_with(
    label: String,
    kernel: Kernel,
    source: SourceFile,
    dims: &[(String, i64)],
    seed: u64,
    exact: bool,
    inputs: &dyn Fn(&str, &mut HostTensor),
) -> Result<Case, String> {
    let shapes = shapes_for(&kernel, dims).map_err(|e| format!("{label}: {e}"))?;
    let outputs = stored_tensors(&kernel);
    let mut read = std::collections::BTreeSet::new();
    kernel_reads(&kernel, &mut read);
    let mut args = Vec::new();
    let mut iargs = Args::new();
    let mut shape_iter = shapes.iter();
    for (id, p) in kernel.params.iter().enumerate() {
        match &p.kind {
            ParamKind::Tensor { dtype, .. } => {
                let (_, shape) = shape_iter.next().expect("one shape per tensor");
                let s = tensor_seed(seed, &p.name);
                let mut t = if exact {
                    small_ints(*dtype, shape, s)
                } else {
                    random_tensor(*dtype, shape, s)
                };
                if outputs.contains(&id) && !read.contains(&id) {
                    poison(&mut t);
                } else {
                    inputs(&p.name, &mut t);
                }
                iargs = iargs.push(t.clone());
                args.push(Value::Tensor(t));
            }
            ParamKind::Scalar { dtype } => {
                let v = if dtype.is_float() { 0.5 } else { 3.0 };
                iargs = iargs.push(v);
                args.push(Value::Scalar(v));
            }
        }
    }
    let launch = Launch::new(&kernel, iargs).map_err(|e| format!("{label}: {e}"))?;
    let dims: Vec<i64> = launch.dims().iter().map(|(_, v)| *v).collect();
    let grid = launch.grid();
    let expected = if selected(&label, diff_only()) {
        let out = launch
            .run(&Config::default())
            .map_err(|e| format!("{label}: interpreter: {e}"))?;
        outputs
            .iter()
            .map(|&id| {
                (
                    id,
                    out.get(&kernel.params[id].name).expect("output").clone(),
                )
            })
            .collect()
    } else {
        Vec::new()
    };
    let opts = EmitOptions {
        source: Some(source),
    };
    let emitted = emit(&kernel, &opts).map_err(|e| format!("{label}: {e}"))?;
    Ok(Case {
        label,
        kernel,
        emitted,
        args,
        dims,
        grid,
        expected,
    })
}

fn kernel_reads(k: &Kernel, out: &mut std::collections::BTreeSet<ParamId>) {
    fn walk(e: &phobos_ir::Expr, out: &mut std::collections::BTreeSet<ParamId>) {
        if let phobos_ir::ExprKind::Load { tensor, index, .. } = &e.kind {
            out.insert(*tensor);
            for i in index {
                match i {
                    phobos_ir::Index::At(x) => walk(x, out),
                    phobos_ir::Index::Span { start, .. } => walk(start, out),
                }
            }
        }
        match &e.kind {
            phobos_ir::ExprKind::Unary(_, a)
            | phobos_ir::ExprKind::Math(_, a)
            | phobos_ir::ExprKind::Cast(a)
            | phobos_ir::ExprKind::Broadcast(a)
            | phobos_ir::ExprKind::Transpose(a)
            | phobos_ir::ExprKind::Reshape(a)
            | phobos_ir::ExprKind::Reduce { arg: a, .. } => walk(a, out),
            phobos_ir::ExprKind::Binary(_, a, b)
            | phobos_ir::ExprKind::Cdiv(a, b)
            | phobos_ir::ExprKind::Dot { a, b, .. } => {
                walk(a, out);
                walk(b, out);
            }
            phobos_ir::ExprKind::Select(c, a, b) => {
                walk(c, out);
                walk(a, out);
                walk(b, out);
            }
            phobos_ir::ExprKind::MathN(_, args) => args.iter().for_each(|a| walk(a, out)),
            phobos_ir::ExprKind::TileGet { tile, index } => {
                walk(tile, out);
                index.iter().for_each(|i| walk(i, out));
            }
            _ => {}
        }
    }
    fn stmts(s: &[phobos_ir::Stmt], out: &mut std::collections::BTreeSet<ParamId>) {
        for st in s {
            match &st.kind {
                phobos_ir::StmtKind::Assign { value, .. } => walk(value, out),
                // An atomic reads the elements it updates: its tensor is never poisoned.
                phobos_ir::StmtKind::Atomic {
                    tensor,
                    value,
                    index,
                    ..
                } => {
                    out.insert(*tensor);
                    walk(value, out);
                    for i in index {
                        match i {
                            phobos_ir::Index::At(x) => walk(x, out),
                            phobos_ir::Index::Span { start, .. } => walk(start, out),
                        }
                    }
                }
                phobos_ir::StmtKind::Store { value, index, .. } => {
                    walk(value, out);
                    for i in index {
                        match i {
                            phobos_ir::Index::At(x) => walk(x, out),
                            phobos_ir::Index::Span { start, .. } => walk(start, out),
                        }
                    }
                }
                phobos_ir::StmtKind::For {
                    start,
                    end,
                    step,
                    body,
                    ..
                } => {
                    walk(start, out);
                    walk(end, out);
                    walk(step, out);
                    stmts(body, out);
                }
                phobos_ir::StmtKind::While { cond, body } => {
                    walk(cond, out);
                    stmts(body, out);
                }
                phobos_ir::StmtKind::If {
                    cond,
                    then_body,
                    else_body,
                } => {
                    walk(cond, out);
                    stmts(then_body, out);
                    stmts(else_body, out);
                }
                _ => {}
            }
        }
    }
    stmts(&k.body, out);
}

/// Problem sizes per example (ragged on purpose); other files get 37 for every dim.
fn example_dims(path: &str, k: &Kernel) -> Vec<(String, i64)> {
    if path == "examples/gemm_tuned.ph" {
        // Its @where rules depend on the point: K a multiple of SPLIT_K * TILE_K, a GROUP_M
        // group of rows inside M, tiles at most twice the problem, few tiles when splitting.
        let p = |n: &str| k.point.get(n).unwrap_or(1);
        let m = (p("GROUP_M") * p("TILE_M")).max(77) + 5;
        let n = (p("TILE_N") / 2).max(45) + 3;
        let kk = 2 * p("SPLIT_K") * p("TILE_K");
        return vec![("M".into(), m), ("N".into(), n), ("K".into(), kk)];
    }
    if path == "examples/gemm_small.ph" {
        // Its @where rules: a GROUP_M group of rows inside M, tiles at most twice the problem,
        // four k steps per SPLIT_K part, 8-aligned K and N for the producer warp's points (160 and
        // 288 threads).
        // Elsewhere K is odd: A's rows are 2-byte aligned (register-staged on mma.sync); N odd
        // or aligned depending on TILE_N.
        let p = |n: &str| k.point.get(n).unwrap_or(1);
        let m = (p("GROUP_M") * p("TILE_M")).max(77) + 5;
        let (n, kk) = if p("THREADS") == 288 && p("SPLIT_K") == 1 {
            (p("TILE_N") / 2 + 8, 72)
        } else if p("THREADS") == 160 || p("THREADS") == 288 {
            // The producer warp's deep ring at 64-row tiles, or split 128-row tiles: 8-aligned,
            // ragged K past four k steps a part (the last tile of each part's range half
            // zero-filled by TMA).
            (p("TILE_N") / 2 + 8, 4 * p("SPLIT_K") * p("TILE_K") + 8)
        } else {
            (
                (p("TILE_N") / 2).max(45) + 3,
                (4 * p("SPLIT_K") * p("TILE_K")).max(64) + 3,
            )
        };
        return vec![("M".into(), m), ("N".into(), n), ("K".into(), kk)];
    }
    let fixed: &[(&str, &[(&str, i64)])] = &[
        ("examples/gemm.ph", &[("M", 77), ("N", 45), ("K", 67)]),
        ("examples/gemm_typed.ph", &[("M", 77), ("N", 45), ("K", 72)]),
        (
            "examples/gemm_fast.ph",
            &[("M", 136), ("N", 264), ("K", 80)],
        ),
        (
            "examples/gemm_persistent.ph",
            &[("M", 136), ("N", 264), ("K", 80)],
        ),
        ("examples/partial_sums.ph", &[("N", 1000)]),
        ("examples/saxpy.ph", &[("N", 1000)]),
        ("examples/sgemm.ph", &[("M", 77), ("N", 45), ("K", 67)]),
        ("examples/softmax.ph", &[("M", 7), ("N", 45)]),
        ("examples/transpose.ph", &[("M", 77), ("N", 45)]),
        ("examples/flash_attention.ph", &[("BH", 3), ("N", 45)]),
        ("examples/flash_attention_d128.ph", &[("BH", 2), ("N", 45)]),
    ];
    let table = fixed
        .iter()
        .find(|(p, _)| *p == path)
        .map(|(_, d)| *d)
        .unwrap_or(&[]);
    k.dims
        .iter()
        .map(|d| {
            let v = table
                .iter()
                .find(|(n, _)| *n == d.name)
                .map_or(37, |(_, v)| *v);
            (d.name.clone(), v)
        })
        .collect()
}

/// Example kernels at their default point, their largest tiles, and one seeded other point.
pub fn example_cases() -> Vec<Result<Case, String>> {
    let mut cases = Vec::new();
    for path in super::example_files() {
        let src = super::source(&path);
        let module = phobos_check::load(src.clone()).unwrap_or_else(|d| panic!("{path}: {d:?}"));
        for info in &module.kernels {
            let base = info
                .default_variant()
                .unwrap_or_else(|e| panic!("{path}: {e:?}"));
            // The points the tuner would compile: none that violates a `@where` (E0207).
            let points: Vec<_> = info
                .space
                .points()
                .filter(|p| !super::outside_where(&module, info, &base.at(p.clone())))
                .collect();
            let largest = points
                .iter()
                .max_by_key(|p| p.0.iter().map(|(_, v)| *v as i128).product::<i128>())
                .cloned();
            let mut rng = Rng::new(7 + cases.len() as u64);
            let other = points[rng.below(points.len() as u64) as usize].clone();
            let mut chosen = vec![info.space.default_point()];
            for p in [largest, Some(other)].into_iter().flatten() {
                if !chosen.contains(&p) {
                    chosen.push(p);
                }
            }
            for p in chosen {
                let label = format!("{path} {} {}", info.name, p.to_pins());
                let mut k = match phobos_check::instantiate(&module, info, &base.at(p)) {
                    Ok(k) => k,
                    Err(d) => {
                        cases.push(Err(format!("{label}: {d:?}")));
                        continue;
                    }
                };
                let dims = example_dims(&path, &k);
                // As `phobos run` and the tuner compile it: specialized on the problem.
                phobos_cuda::specialize_alignment(&mut k, &dims);
                cases.push(build(label, k, src.clone(), &dims, 1, false));
            }
        }
    }
    cases
}

/// `n` random tile kernels and `n` random scalar kernels with small-integer inputs.
pub fn random_cases(n: usize, seed: u64) -> Vec<Result<Case, String>> {
    let mut rng = Rng::new(seed);
    let mut cases = Vec::new();
    for i in 0..2 * n {
        let text = if i % 2 == 0 {
            tile_kernel(&mut rng, i)
        } else {
            scalar_kernel(&mut rng, i)
        };
        let src = SourceFile::new(format!("random_{i}.ph"), text.clone());
        let module = match phobos_check::load(src.clone()) {
            Ok(m) => m,
            Err(d) => {
                cases.push(Err(format!(
                    "random kernel {i} does not check:\n{text}\n{d:?}"
                )));
                continue;
            }
        };
        let info = &module.kernels[0];
        let variant = info.default_variant().expect("no type parameters");
        let k = match phobos_check::instantiate(&module, info, &variant) {
            Ok(k) => k,
            Err(d) => {
                cases.push(Err(format!(
                    "random kernel {i} does not check:\n{text}\n{d:?}"
                )));
                continue;
            }
        };
        let dims: Vec<(String, i64)> = if i % 2 == 0 {
            let (m, nn) = (1 + rng.below(70) as i64, 1 + rng.below(70) as i64);
            let c = k.point.get("C").unwrap_or(1);
            vec![
                ("M".into(), m),
                ("N".into(), nn),
                ("G".into(), (nn + c - 1) / c),
            ]
        } else {
            vec![
                ("N".into(), 1 + rng.below(500) as i64),
                ("G".into(), 1 + rng.below(3) as i64),
            ]
        };
        cases.push(build(
            format!("random kernel {i}:\n{text}"),
            k,
            src,
            &dims,
            i as u64,
            true,
        ));
    }
    cases
}

/// Cases beyond the examples: the tensor-core main loop (gemm_typed with its operands aligned,
/// f16 and bf16).
pub fn extra_cases() -> Vec<Result<Case, String>> {
    let text = std::fs::read_to_string(super::root().join("examples/gemm_typed.ph"))
        .expect("gemm_typed.ph")
        .replace("@where(K % 8 == 0)", "@where(K % 8 == 0)\n@aligned(N = 8)");
    let src = SourceFile::new("examples/gemm_typed.ph (N aligned)", text);
    let module = phobos_check::load(src.clone()).unwrap_or_else(|d| panic!("{d:?}"));
    let info = &module.kernels[0];
    let mut cases = Vec::new();
    for (pins, types) in [
        ("TILE_M=128", "TA=f16,TB=f16,TC=f32"),
        ("TILE_M=128 TILE_N=128", "TA=bf16,TB=bf16,TC=f32"),
    ] {
        let label = format!("gemm_typed, N aligned, {pins} {types}");
        let variant = info
            .variant(Some(pins), Some(types), None)
            .expect("variant");
        let k =
            phobos_check::instantiate(&module, info, &variant).unwrap_or_else(|d| panic!("{d:?}"));
        let dims = [
            ("M".to_string(), 77),
            ("N".to_string(), 48),
            ("K".to_string(), 72),
        ];
        cases.push(build(label, k, src.clone(), &dims, 3, false));
    }
    cases.extend(row_total_cases());
    cases
}

/// `[R, 1]` expressions of row totals broadcast over the columns (computed in the wide tile's
/// layout, emit.rs `row_total_expressions_stay_in_the_wide_layout`) beside a row total bound to a
/// local and a column total (the `[R, 1]` and `[1, C]` tiles and their broadcasts), at ragged
/// rows and columns: 4 rows a block over 9 or 4 rows, 200 of 256 columns.
fn row_total_cases() -> Vec<Result<Case, String>> {
    let text = "@launch(128)
@grid(cdiv(M, 4))
kernel totals(X: tensor<f32>[M, N], Y: tensor<f32>[M, N], Z: tensor<f32>[M, N]) {
  let r = ctx.block.x * 4
  let x = where(arange(256) < N, X[r :+ 4, 0 :+ 256], -inf)
  let e = exp2(x * 1.5 - rowmax(x) * 1.5)
  Y[r :+ 4, 0 :+ 256] = e * (1.0 / rowsum(e)) + (rowmax(e) - rowmin(e)) * 0.25
  let m = rowmax(x) * 2.0
  Z[r :+ 4, 0 :+ 256] = where(arange(256) < N, x - m + sum(x, axis=0) * 0.001, 0.0)
}
";
    let src = SourceFile::new("row_totals.ph", text);
    let module = phobos_check::load(src.clone()).unwrap_or_else(|d| panic!("{d:?}"));
    let info = &module.kernels[0];
    let k = phobos_check::instantiate(&module, info, &info.default_variant().expect("variant"))
        .unwrap_or_else(|d| panic!("{d:?}"));
    [(9, 200), (4, 256)]
        .into_iter()
        .map(|(m, n)| {
            let dims = [("M".to_string(), m), ("N".to_string(), n)];
            build(
                format!("row totals, M={m} N={n}"),
                k.clone(),
                src.clone(),
                &dims,
                7,
                false,
            )
        })
        .collect()
}

/// An example kernel (examples/FILE) at pins and types, checked on the problem `dims` (the
/// kernel specialized on its alignment, as the tuner compiles it).
pub fn example_case(
    file: &str,
    pins: &str,
    types: Option<&str>,
    dims: &[(&str, i64)],
) -> Result<Case, String> {
    example_case_with(file, pins, types, dims, &|_, _| {})
}

/// As `example_case`, each input tensor then given to `inputs` with its parameter's name (see
/// `build_with`).
pub fn example_case_with(
    file: &str,
    pins: &str,
    types: Option<&str>,
    dims: &[(&str, i64)],
    inputs: &dyn Fn(&str, &mut HostTensor),
) -> Result<Case, String> {
    let dims_text: Vec<String> = dims.iter().map(|(n, v)| format!("{n}={v}")).collect();
    let types_text = types.map_or(String::new(), |t| format!(" {t}"));
    let label = format!("{file} {pins}{types_text} at {}", dims_text.join(","));
    let src = super::source(&format!("examples/{file}"));
    let module = phobos_check::load(src.clone()).unwrap_or_else(|d| panic!("{d:?}"));
    let info = &module.kernels[0];
    let variant = info
        .variant(Some(pins), types, None)
        .map_err(|e| format!("{label}: {e}"))?;
    let mut k =
        phobos_check::instantiate(&module, info, &variant).unwrap_or_else(|d| panic!("{d:?}"));
    let dims: Vec<(String, i64)> = dims.iter().map(|(n, v)| (n.to_string(), *v)).collect();
    phobos_cuda::specialize_alignment(&mut k, &dims);
    build_with(label, k, src, &dims, 6, false, inputs)
}

/// Atomics whose results do not depend on the order of the updates: split sums of small
/// integers (exact in every type, f16 and bf16 included, in any order), max and min, a
/// histogram, a counter and the largest old value it returned.
pub fn atomic_cases() -> Vec<Result<Case, String>> {
    let text = "\
@launch(128)
@grid(cdiv(M, 4), cdiv(N, 64))
kernel split_sums(
  X: tensor<i32>[M, N], F: tensor<f32>[M, N],
  S: tensor<i32>[N], SF: tensor<f32>[N], SH: tensor<f16>[N], SB: tensor<bf16>[N],
  SD: tensor<f64>[N], Top: tensor<f32>[N], Low: tensor<i32>[N], Hist: tensor<u32>[16],
  Last: tensor<i32>[2]
) {
  let r = ctx.block.x * 4
  let c = ctx.block.y * 64
  let x = X[r :+ 4, c :+ 64]
  let f = F[r :+ 4, c :+ 64]
  let colsum = reshape(sum(f, axis=0), [64])
  atomic_add(S[c :+ 64], reshape(sum(x, axis=0), [64]))
  atomic_add(SF[c :+ 64], colsum)
  atomic_add(SH[c :+ 64], f16(colsum))
  atomic_add(SB[c :+ 64], bf16(colsum))
  atomic_add(SD[c :+ 64], f64(colsum))
  atomic_max(Top[c :+ 64], reshape(max(f, axis=0), [64]))
  atomic_min(Low[c :+ 64], reshape(min(x, axis=0), [64]))
  for i in range(ctx.thread, 256, 128) {
    let row = r + i / 64
    let col = c + i % 64
    if row < M && col < N {
      atomic_add(Hist[X[row, col] + 4], 1)
      atomic_max(Hist[15], u32(X[row, col] + 4))
      let o = atomic_add(Last[0], 1)
      atomic_max(Last[1], o)
    }
  }
}
";
    let src = SourceFile::new("split_sums.ph", text);
    let module = phobos_check::load(src.clone()).unwrap_or_else(|d| panic!("{d:?}"));
    let info = &module.kernels[0];
    let variant = info.default_variant().expect("no type parameters");
    let k = phobos_check::instantiate(&module, info, &variant).unwrap_or_else(|d| panic!("{d:?}"));
    // |partial sums| <= 4 M stay below 256: exact in bf16.
    [(37, 45), (50, 130), (1, 1)]
        .into_iter()
        .map(|(m, n)| {
            let dims = [("M".to_string(), m), ("N".to_string(), n)];
            let label = format!("atomics split_sums at M={m},N={n}");
            build(label, k.clone(), src.clone(), &dims, 9, true)
        })
        .collect()
}
