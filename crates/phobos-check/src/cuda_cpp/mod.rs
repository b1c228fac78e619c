//! CUDA C++ sources (`.cu`): existing kernels tuned without rewriting them. A `__global__`
//! function's tunable names, parameters and launch are declared in `//` comment attributes
//! above it, with Phobos's rules:
//!
//! ```text
//! // @autotune(BLOCK in [64, 1024], MIN_BLOCKS in [1, 4])
//! // @launch(BLOCK)
//! // @grid(cdiv(N, BLOCK))
//! // @params(X: tensor<f32>[N], Y: tensor<f32>[N], a: f32)
//! extern "C" __global__ void __launch_bounds__(BLOCK, MIN_BLOCKS)
//! saxpy(const float* x, float* y, float a, int n) { .. }
//! ```
//!
//! The attribute comments of a kernel are those between the previous `__global__` function
//! (or the file's start) and its own `__global__`. They are parsed and checked by the Phobos
//! front end: [`load_cu`] builds a Phobos kernel per annotated function from them (its body
//! only says which tensors the function writes: those passed as non-`const` pointers) and maps
//! every diagnostic back into the `.cu` file. The checks of its own: an unknown attribute
//! (E1101), `@params` missing or repeated (E1102), an `@autotune` name the source never uses
//! (E1103), `@params` that do not match the function's C++ parameters (E1104), attributes
//! before no readable `__global__` function (E1105).

mod map;
mod scan;

pub use scan::{c_dtype, CKernel, CParam};

use crate::codes;
use crate::module::{load, DimInfo, Elem, KernelInfo, Module, ParamInfoKind};
use crate::suggest::did_you_mean;
use map::Built;
use phobos_syntax::{Diagnostic, SourceFile, Span};
use std::collections::HashSet;

/// The attributes a CUDA C++ kernel may carry.
pub const CU_ATTRS: [&str; 8] = [
    "autotune", "launch", "grid", "where", "aligned", "flops", "bytes", "params",
];

/// Whether a file name is a CUDA C++ source (`.cu`).
pub fn is_cuda_source(name: &str) -> bool {
    std::path::Path::new(name)
        .extension()
        .is_some_and(|e| e == "cu")
}

/// A loaded CUDA C++ file: its Phobos view (one kernel per annotated `__global__` function,
/// with the same names) and the way back from that view's spans to the file's.
#[derive(Clone, Debug)]
pub struct CuModule {
    /// The `.cu` file.
    pub file: SourceFile,
    /// The kernels as the Phobos front end sees them. Its spans are its own text's: map them
    /// with [`CuModule::remap`]. Its warnings are already mapped.
    pub module: Module,
    /// The scanned `__global__` functions, in the order of `module.kernels`.
    pub functions: Vec<CKernel>,
    built: Built,
}

impl CuModule {
    /// A diagnostic of [`CuModule::module`], pointing into the `.cu` file.
    pub fn remap(&self, d: Diagnostic) -> Diagnostic {
        self.built.remap(d)
    }
}

/// One attribute comment (possibly continued on the next comment lines).
#[derive(Clone, Debug)]
struct Attr {
    name: String,
    name_span: Span,
    /// (text, offset in the file): from `@` on the first line, whole comments after.
    pieces: Vec<(String, usize)>,
}

impl Attr {
    fn text(&self) -> String {
        let parts: Vec<&str> = self.pieces.iter().map(|(t, _)| t.as_str()).collect();
        parts.join("\n")
    }
}

fn depth(text: &str) -> i32 {
    text.chars().fold(0, |d, c| match c {
        '(' | '[' => d + 1,
        ')' | ']' => d - 1,
        _ => d,
    })
}

/// The attribute comments: `// @name(` starts one; while its parentheses are open, the next
/// comment lines continue it.
fn attributes(text: &str, comments: &[scan::LineComment]) -> Vec<Attr> {
    let mut out: Vec<Attr> = Vec::new();
    let mut open = 0;
    for c in comments {
        let line_of = |o: usize| text[..o].matches('\n').count();
        if open > 0 {
            if let Some(last) = out.last_mut() {
                let prev = last.pieces.last().map_or(0, |p| p.1);
                if c.own_line && line_of(c.start) == line_of(prev) + 1 {
                    open += depth(&c.text);
                    last.pieces.push((c.text.clone(), c.start));
                    continue;
                }
            }
        }
        open = 0;
        let body = c.text.trim_start();
        let Some(rest) = body.strip_prefix('@') else {
            continue;
        };
        let name: String = rest
            .chars()
            .take_while(|ch| ch.is_ascii_alphanumeric() || *ch == '_')
            .collect();
        if name.is_empty() || !rest[name.len()..].trim_start().starts_with('(') {
            continue;
        }
        let at = c.start + (c.text.len() - body.len());
        open = depth(body);
        out.push(Attr {
            name_span: Span::new(at + 1, at + 1 + name.len()),
            name,
            pieces: vec![(body.to_string(), at)],
        });
    }
    out
}

/// One annotated function with its attributes.
struct Annotated {
    function: CKernel,
    attrs: Vec<Attr>,
    params: Attr,
}

/// Loads a CUDA C++ file: every diagnostic (errors and warnings) points into it.
pub fn load_cu(file: SourceFile) -> Result<CuModule, Vec<Diagnostic>> {
    let scanned = scan::scan(&file.text);
    let attrs = attributes(&file.text, &scanned.comments);
    let functions = scan::kernels(&scanned.code);
    let mut diags = Vec::new();
    let mut annotated: Vec<Annotated> = Vec::new();
    let mut prev = 0u32;
    for f in &functions {
        let global = match f {
            Ok(k) => k.global_span,
            Err(s) => *s,
        };
        let mine: Vec<Attr> = attrs
            .iter()
            .filter(|a| a.name_span.lo >= prev && a.name_span.lo < global.lo)
            .cloned()
            .collect();
        prev = global.hi;
        if mine.is_empty() {
            continue;
        }
        let function = match f {
            Ok(k) => k.clone(),
            Err(s) => {
                diags.push(
                    Diagnostic::error(
                        codes::CU_NO_KERNEL,
                        "cannot read the name and parameters of this `__global__` function",
                        *s,
                    )
                    .with_label("attributes above it, but no `name(..)` after it")
                    .with_help("write the declaration as `__global__ void name(params) {..}`"),
                );
                continue;
            }
        };
        if let Some(a) = annotate(function, mine, &mut diags) {
            annotated.push(a);
        }
    }
    for a in attrs.iter().filter(|a| a.name_span.lo >= prev) {
        diags.push(
            Diagnostic::error(
                codes::CU_NO_KERNEL,
                format!("`@{}` is above no `__global__` function", a.name),
                a.name_span,
            )
            .with_help("put the attributes of a kernel right above its `__global__` function"),
        );
    }
    if diags.iter().any(Diagnostic::is_error) {
        return Err(diags);
    }
    // First the attributes and parameters alone, to learn the parameters' ranks.
    let (built, loaded) = build(&file.name, &annotated, None);
    let module = loaded.map_err(|d| remap_all(&built, d))?;
    let mut outputs = Vec::new();
    for (a, info) in annotated.iter().zip(&module.kernels) {
        check_signature(a, info, &built, &mut diags);
        check_used(a, info, &scanned.code, &built, &mut diags);
        outputs.push(written(a, info));
    }
    if diags.iter().any(Diagnostic::is_error) {
        return Err(diags);
    }
    let (built, loaded) = build(&file.name, &annotated, Some(&outputs));
    let mut module = loaded.map_err(|d| remap_all(&built, d))?;
    // The code generator's knob names mean nothing to a C++ kernel.
    module.warnings.retain(|w| w.code != codes::KNOB_NEAR_MISS);
    module.warnings = remap_all(&built, std::mem::take(&mut module.warnings));
    module.warnings.extend(diags);
    Ok(CuModule {
        file,
        module,
        functions: annotated.into_iter().map(|a| a.function).collect(),
        built,
    })
}

fn remap_all(built: &Built, diags: Vec<Diagnostic>) -> Vec<Diagnostic> {
    diags.into_iter().map(|d| built.remap(d)).collect()
}

/// Sorts a function's attributes: unknown ones are errors, `@params` must appear once.
fn annotate(function: CKernel, attrs: Vec<Attr>, diags: &mut Vec<Diagnostic>) -> Option<Annotated> {
    let mut kept = Vec::new();
    let mut params: Vec<Attr> = Vec::new();
    for a in attrs {
        if a.name == "params" {
            params.push(a);
        } else if CU_ATTRS.contains(&a.name.as_str()) {
            kept.push(a);
        } else {
            let mut d = Diagnostic::error(
                codes::CU_UNKNOWN_ATTR,
                format!("unknown attribute `@{}` for a CUDA C++ kernel", a.name),
                a.name_span,
            )
            .with_label("unknown attribute")
            .with_note(format!(
                "attributes of a CUDA C++ kernel: @{}",
                CU_ATTRS.join(", @")
            ));
            if let Some(s) = did_you_mean(&a.name, CU_ATTRS) {
                d = d.with_help(s);
            }
            diags.push(d);
        }
    }
    match params.len() {
        1 => Some(Annotated {
            function,
            attrs: kept,
            params: params.remove(0),
        }),
        0 => {
            diags.push(
                Diagnostic::error(
                    codes::CU_PARAMS,
                    format!("the kernel `{}` has no `@params` attribute", function.name),
                    function.name_span,
                )
                .with_label("its parameters are not declared")
                .with_help(
                    "declare them in Phobos's syntax above the function, e.g. \
                     `// @params(X: tensor<f32>[N], a: f32)`",
                ),
            );
            None
        }
        _ => {
            diags.push(
                Diagnostic::error(
                    codes::CU_PARAMS,
                    format!("the kernel `{}` has more than one `@params`", function.name),
                    params[1].name_span,
                )
                .with_label("declared again here")
                .with_secondary(params[0].name_span, "first declared here")
                .with_help("keep one `@params`"),
            );
            None
        }
    }
}

/// The Phobos text of the annotated functions; with `outputs`, each body stores to (and loads
/// from) the tensors its function writes, so the tuner knows which results to compare.
fn build(
    name: &str,
    annotated: &[Annotated],
    outputs: Option<&[Vec<(String, usize)>]>,
) -> (Built, Result<Module, Vec<Diagnostic>>) {
    let mut b = Built::default();
    for (k, a) in annotated.iter().enumerate() {
        let at = a.function.name_span;
        for attr in &a.attrs {
            for (i, (text, origin)) in attr.pieces.iter().enumerate() {
                if i > 0 {
                    b.write("\n", attr.name_span);
                }
                b.copy(text, *origin);
            }
            b.write("\n", attr.name_span);
        }
        b.write("kernel ", at);
        b.copy(&a.function.name, at.lo as usize);
        for (i, (text, origin)) in a.params.pieces.iter().enumerate() {
            if i == 0 {
                // Past `@params`.
                b.copy(&text["@params".len()..], origin + "@params".len());
            } else {
                b.write("\n", a.params.name_span);
                b.copy(text, *origin);
            }
        }
        b.write(" {\n", at);
        for (name, rank) in outputs.map_or(&[][..], |o| &o[k]) {
            let zeros = vec!["0"; *rank].join(", ");
            b.write(&format!("  {name}[{zeros}] = {name}[{zeros}]\n"), at);
        }
        b.write("}\n", at);
    }
    let loaded = load(SourceFile::new(name, b.text.clone()));
    (b, loaded)
}

/// The tensors a function writes (non-`const` pointers), with their ranks.
fn written(a: &Annotated, info: &KernelInfo) -> Vec<(String, usize)> {
    info.params
        .iter()
        .zip(&a.function.params)
        .filter_map(|(p, c)| match &p.kind {
            ParamInfoKind::Tensor { dims, .. } if !c.const_pointee => {
                Some((p.name.clone(), dims.len()))
            }
            _ => None,
        })
        .collect()
}

/// `@params` against the C++ parameters: each in order (a tensor is a pointer to its element
/// type, a scalar its value), then one `int` per runtime dim.
fn check_signature(a: &Annotated, info: &KernelInfo, built: &Built, diags: &mut Vec<Diagnostic>) {
    let f = &a.function;
    let dims = info.runtime_dims();
    let expected = info.params.len() + dims.len();
    let abi_help = format!(
        "the launch passes each `@params` parameter in order (a tensor as a pointer to its \
         elements, a scalar as its value), then one `int` per runtime dim in order of first \
         use ({})",
        if dims.is_empty() {
            "none here".to_string()
        } else {
            dims.join(", ")
        }
    );
    if f.params.len() != expected {
        diags.push(
            Diagnostic::error(
                codes::CU_SIGNATURE,
                format!(
                    "`@params` declares {} parameter{} and {} runtime dim{}, so `{}` must take {} \
                     C++ parameters; it takes {}",
                    info.params.len(),
                    if info.params.len() == 1 { "" } else { "s" },
                    dims.len(),
                    if dims.len() == 1 { "" } else { "s" },
                    f.name,
                    expected,
                    f.params.len()
                ),
                f.params_span,
            )
            .with_label(format!("{} parameters here", f.params.len()))
            .with_secondary(a.params.name_span, "declared here")
            .with_help(abi_help),
        );
        return;
    }
    for (i, (p, c)) in info.params.iter().zip(&f.params).enumerate() {
        let (tensor, elem) = match &p.kind {
            ParamInfoKind::Tensor { elem, .. } => (true, elem),
            ParamInfoKind::Scalar { elem } => (false, elem),
        };
        let dtype = match elem {
            Elem::Concrete(t) => Some(*t),
            Elem::Param(_) => None,
        };
        let type_ok = match (dtype, c.dtype) {
            (Some(want), Some(got)) => want.arith() == got.arith(),
            _ => true,
        };
        if tensor == c.pointer && type_ok {
            continue;
        }
        let want = dtype.map_or("its element type", scan::c_spelling);
        let wanted = if tensor {
            format!("`{want}*` (or `const {want}*`)")
        } else {
            format!("`{want}`")
        };
        diags.push(
            Diagnostic::error(
                codes::CU_SIGNATURE,
                format!(
                    "parameter {} of `{}` is `{}`, but `@params` declares `{}` there, passed as {}",
                    i + 1,
                    f.name,
                    c.text,
                    p.name,
                    wanted
                ),
                c.span,
            )
            .with_label(format!("expected {wanted}"))
            .with_secondary(built.map(p.span), "declared here")
            .with_help(abi_help.clone()),
        );
    }
    for (c, d) in f.params[info.params.len()..].iter().zip(&dims) {
        if c.pointer || c.dtype.is_some_and(|t| t != phobos_ir::DType::I32) {
            diags.push(
                Diagnostic::error(
                    codes::CU_SIGNATURE,
                    format!(
                        "`{}` must be an `int`: the launch passes the runtime dim `{d}` there",
                        c.text
                    ),
                    c.span,
                )
                .with_label("expected `int`")
                .with_help(abi_help.clone()),
            );
        }
    }
}

/// Every `@autotune` name must change something: the C++ code mentions it (it is passed as
/// `-DNAME=value`), or `@launch` or `@grid` reads it.
fn check_used(
    a: &Annotated,
    info: &KernelInfo,
    code: &str,
    built: &Built,
    diags: &mut Vec<Diagnostic>,
) {
    let mut used: HashSet<&str> = scan::identifiers(code)
        .into_iter()
        .map(|(w, _)| w)
        .collect();
    let launch_text: Vec<String> = a
        .attrs
        .iter()
        .filter(|x| x.name == "launch" || x.name == "grid")
        .map(Attr::text)
        .collect();
    for t in &launch_text {
        used.extend(scan::identifiers(t).into_iter().map(|(w, _)| w));
    }
    // A declared name used as a static tensor dim changes the problem, not the code.
    for p in &info.params {
        if let ParamInfoKind::Tensor { dims, .. } = &p.kind {
            for d in dims {
                if let DimInfo::Declared(n) = d {
                    used.insert(n);
                }
            }
        }
    }
    for n in &info.space.names {
        if used.contains(n.name.as_str()) {
            continue;
        }
        diags.push(
            Diagnostic::error(
                codes::CU_UNUSED_NAME,
                format!(
                    "`{}` changes nothing: the CUDA source never uses it, and neither @launch nor \
                     @grid reads it",
                    n.name
                ),
                built.map(n.span),
            )
            .with_label("declared here")
            .with_help(format!(
                "each point is compiled with `-D{}=<value>`: use the macro in the kernel, or \
                 remove the name",
                n.name
            )),
        );
    }
}
