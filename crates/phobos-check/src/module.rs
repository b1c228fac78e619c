//! A loaded file: its AST and, per kernel, what a host needs to know before instantiating it.

use crate::kernel;
use crate::space::Space;
use phobos_ir::DType;
use phobos_syntax::{ast, Diagnostic, SourceFile, Span};

/// A parsed file whose kernels passed the kernel-level checks.
#[derive(Clone, Debug)]
pub struct Module {
    pub file: SourceFile,
    pub ast: ast::File,
    /// One entry per kernel, in file order.
    pub kernels: Vec<KernelInfo>,
    /// Warnings of parsing and of the kernel-level checks (unknown attributes, ...).
    pub warnings: Vec<Diagnostic>,
}

/// The signature of a kernel: its shape environment, type parameters and parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelInfo {
    pub name: String,
    /// Index into `Module::ast.kernels`.
    pub index: usize,
    pub span: Span,
    pub space: Space,
    /// Element-type parameters in declaration order, with their defaults.
    pub type_params: Vec<(String, Option<DType>)>,
    /// Parameters in signature order (the launch argument order).
    pub params: Vec<ParamInfo>,
    /// `@allow_tf32` is present.
    pub allow_tf32: bool,
}

/// One kernel parameter as the host sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct ParamInfo {
    pub name: String,
    pub kind: ParamInfoKind,
    pub span: Span,
}

/// A tensor or a scalar parameter.
#[derive(Clone, Debug, PartialEq)]
pub enum ParamInfoKind {
    Tensor { elem: Elem, dims: Vec<DimInfo> },
    Scalar { elem: Elem },
}

/// An element type as written: concrete, or a type parameter bound per variant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Elem {
    Concrete(DType),
    Param(String),
}

impl Elem {
    /// The element type under a binding of the type parameters.
    pub fn resolve(&self, types: &[(String, DType)]) -> Option<DType> {
        match self {
            Elem::Concrete(t) => Some(*t),
            Elem::Param(p) => types.iter().find(|(n, _)| n == p).map(|&(_, t)| t),
        }
    }
}

/// One extent of a tensor parameter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DimInfo {
    /// An integer literal.
    Static(i64),
    /// A name declared in `@autotune`: static, its value is the point's.
    Declared(String),
    /// Any other name: a runtime extent read from the tensors at launch.
    Runtime(String),
}

impl KernelInfo {
    /// The runtime dim names in order of first appearance (the order of `ir::Kernel::dims`).
    pub fn runtime_dims(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for p in &self.params {
            if let ParamInfoKind::Tensor { dims, .. } = &p.kind {
                for d in dims {
                    if let DimInfo::Runtime(n) = d {
                        if !out.contains(n) {
                            out.push(n.clone());
                        }
                    }
                }
            }
        }
        out
    }

    /// The names of the tensor parameters, in order.
    pub fn tensor_names(&self) -> Vec<&str> {
        self.params
            .iter()
            .filter(|p| matches!(p.kind, ParamInfoKind::Tensor { .. }))
            .map(|p| p.name.as_str())
            .collect()
    }

    /// The parameter of that name.
    pub fn param(&self, name: &str) -> Option<&ParamInfo> {
        self.params.iter().find(|p| p.name == name)
    }
}

impl Module {
    /// Picks a kernel by name; `None` picks the only kernel of the file.
    pub fn kernel(&self, name: Option<&str>) -> Result<&KernelInfo, String> {
        let names = || {
            self.kernels
                .iter()
                .map(|k| k.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        match name {
            Some(n) => self.kernels.iter().find(|k| k.name == n).ok_or_else(|| {
                format!(
                    "{} has no kernel `{n}` (kernels: {})",
                    self.file.name,
                    names()
                )
            }),
            None => match self.kernels.as_slice() {
                [k] => Ok(k),
                [] => Err(format!("{} has no kernels", self.file.name)),
                _ => Err(format!(
                    "{} has several kernels; choose one with --kernel ({})",
                    self.file.name,
                    names()
                )),
            },
        }
    }

    /// The AST of a kernel.
    pub fn kernel_ast(&self, kernel: &KernelInfo) -> &ast::Kernel {
        &self.ast.kernels[kernel.index]
    }
}

/// Parses a file and runs the kernel-level checks (attributes, shape environment, type
/// parameters, parameter types, duplicate kernel names). On error, returns every diagnostic
/// (errors and warnings); on success, the warnings stay in [`Module::warnings`].
pub fn load(file: SourceFile) -> Result<Module, Vec<Diagnostic>> {
    let (ast, mut diags) = phobos_syntax::parse(&file);
    if phobos_syntax::has_errors(&diags) {
        return Err(diags);
    }
    let mut kernels = Vec::with_capacity(ast.kernels.len());
    for (index, k) in ast.kernels.iter().enumerate() {
        if let Some(first) = ast.kernels[..index]
            .iter()
            .find(|o| o.name.name == k.name.name)
        {
            diags.push(
                Diagnostic::error(
                    crate::codes::DUP_KERNEL,
                    format!("the kernel `{}` is defined twice", k.name.name),
                    k.name.span,
                )
                .with_label("defined again here")
                .with_secondary(first.name.span, "first defined here")
                .with_help("rename one of them"),
            );
        }
        kernels.push(kernel::info(k, index, &mut diags));
        crate::knobs::near_misses(&file, k, &mut diags);
    }
    if phobos_syntax::has_errors(&diags) {
        return Err(diags);
    }
    Ok(Module {
        file,
        ast,
        kernels,
        warnings: diags,
    })
}
