//! The tuner's view of a checked `.ph` file: phobos-check behind the engine's `Frontend`. A
//! CUDA C++ file (`.cu`, [`phobos_check::cuda_cpp`]) is seen through the Phobos kernels its
//! attribute comments declare, with every diagnostic mapped back into the `.cu` text.

use phobos_check::{codes, instantiate, KernelInfo, Module, Space, Variant};
use phobos_ir::{Kernel, Point};
use phobos_syntax::{Diagnostic, SourceFile};
use phobos_tune::{Failure, Frontend, Problem};

/// One kernel of a loaded module.
pub struct CheckFrontend {
    module: Module,
    kernel: String,
    hash: String,
    space: Space,
    /// The CUDA C++ source, when the file is one.
    cuda: Option<phobos_check::cuda_cpp::CuModule>,
    /// The kernel the checks compare with (`--reference`).
    reference: Option<Box<CheckFrontend>>,
}

impl CheckFrontend {
    /// Loads a source and picks a kernel; errors are rendered diagnostics or a message.
    pub fn load(file: SourceFile, kernel: Option<&str>) -> Result<CheckFrontend, LoadError> {
        let hash_text = file.text.clone();
        let (module, cuda) = if phobos_check::cuda_cpp::is_cuda_source(&file.name) {
            let cu = phobos_check::cuda_cpp::load_cu(file.clone())
                .map_err(|d| LoadError::Diagnostics(d, file.clone()))?;
            if cu.module.kernels.is_empty() {
                return Err(LoadError::Kernel(format!(
                    "{} has no kernel to tune: declare one with `// @params(..)` (and @autotune, \
                     @launch, @grid) above its `__global__` function (docs/cuda.md)",
                    file.name
                )));
            }
            (cu.module.clone(), Some(cu))
        } else {
            let module =
                phobos_check::load(file.clone()).map_err(|d| LoadError::Diagnostics(d, file))?;
            (module, None)
        };
        let info = module.kernel(kernel).map_err(LoadError::Kernel)?;
        Ok(CheckFrontend {
            hash: phobos_tune::hash::kernel_hash(&hash_text, &info.name),
            kernel: info.name.clone(),
            space: info.space.clone(),
            module,
            cuda,
            reference: None,
        })
    }

    pub fn info(&self) -> &KernelInfo {
        self.module
            .kernel(Some(&self.kernel))
            .expect("the kernel was found at load")
    }

    pub fn module(&self) -> &Module {
        &self.module
    }

    /// This kernel, checked against `reference` (see [`Frontend::reference`]).
    pub fn with_reference(mut self, reference: CheckFrontend) -> CheckFrontend {
        self.reference = Some(Box::new(reference));
        self
    }

    /// Why `reference` cannot stand for this kernel: the parameters differ (in order, kind,
    /// element type or dims), so the same arguments do not fit both.
    pub fn reference_mismatch(&self, reference: &CheckFrontend) -> Option<String> {
        let (a, b) = (&self.info().params, &reference.info().params);
        let show = |p: &phobos_check::ParamInfo, f: &CheckFrontend| {
            let span = p.span;
            let text = f.module.file.text.get(span.range()).unwrap_or(&p.name);
            text.to_string()
        };
        if a.len() != b.len() {
            return Some(format!(
                "`{}` takes {} parameters and the reference `{}` {}",
                self.kernel,
                a.len(),
                reference.kernel,
                b.len()
            ));
        }
        a.iter().zip(b).enumerate().find_map(|(i, (p, q))| {
            (p.kind != q.kind).then(|| {
                format!(
                    "parameter {} differs: `{}` here, `{}` in the reference",
                    i + 1,
                    show(p, self),
                    show(q, reference)
                )
            })
        })
    }

    /// The CUDA C++ source the kernel comes from, when it is one (no IR body: the interpreter
    /// cannot run it, and its reference is a point of its own, compiled).
    pub fn cuda(&self) -> Option<&phobos_check::cuda_cpp::CuModule> {
        self.cuda.as_ref()
    }

    fn variant(&self, point: &Point, problem: &Problem) -> Result<Variant, Failure> {
        let info = self.info();
        let types = problem.types_text();
        let layouts = problem.layouts_text();
        let nonempty = |s: &str| (!s.is_empty()).then_some(s.to_string());
        let v = info
            .variant(
                None,
                nonempty(&types).as_deref(),
                nonempty(&layouts).as_deref(),
            )
            .map_err(|e| Failure::from_log(e.to_string()))?;
        Ok(v.at(point.clone()))
    }

    /// The kernel at this point with the problem's types and layouts, specialized on the
    /// problem's alignment (as Triton does on divisibility by 16: the fast GEMM main loops need
    /// 16-byte leading dims; the facts are checked at launch); the checker's diagnostics when
    /// the point does not check.
    fn specialized(
        &self,
        point: &Point,
        problem: &Problem,
    ) -> Result<Result<Kernel, Vec<Diagnostic>>, Failure> {
        let v = self.variant(point, problem)?;
        Ok(instantiate(&self.module, self.info(), &v).map(|mut k| {
            phobos_cuda::specialize_alignment(&mut k, &problem.dims);
            k
        }))
    }

    fn diagnostics(&self, diags: &[Diagnostic]) -> Failure {
        let (diags, file) = match &self.cuda {
            Some(cu) => (
                diags.iter().map(|d| cu.remap(d.clone())).collect(),
                &cu.file,
            ),
            None => (diags.to_vec(), &self.module.file),
        };
        let errors: Vec<Diagnostic> = diags.iter().filter(|d| d.is_error()).cloned().collect();
        let first = errors.first().or(diags.first());
        let first_line = first.map_or_else(
            || "the checker rejected this point".to_string(),
            |d| {
                let (line, col) = file.line_col(d.primary.span.lo);
                format!(
                    "error[{}]: {} at {}:{line}:{col}",
                    d.code, d.message, file.name
                )
            },
        );
        Failure {
            first_line,
            log: crate::render::render_all(&diags, file, false),
        }
    }
}

/// Why a source could not be loaded.
pub enum LoadError {
    Diagnostics(Vec<Diagnostic>, SourceFile),
    Kernel(String),
}

impl Frontend for CheckFrontend {
    fn kernel_name(&self) -> &str {
        &self.kernel
    }

    fn kernel_hash(&self) -> &str {
        &self.hash
    }

    fn space(&self) -> &Space {
        &self.space
    }

    fn where_violation(&self, point: &Point, problem: &Problem) -> Result<Option<String>, Failure> {
        let k = match self.specialized(point, problem)? {
            Ok(k) => k,
            // A `@where` over the point's names alone that is false here (E0207): the point
            // is pruned like one whose `@where` fails for the problem, not a failed compile.
            Err(diags) => {
                return match where_violated_at_point(&diags) {
                    Some(text) => Ok(Some(text)),
                    None => Err(self.diagnostics(&diags)),
                }
            }
        };
        phobos_check::eval_where(&k, &problem.dims).map_err(Failure::from_log)
    }

    fn outside_space(&self, point: &Point, problem: &Problem) -> bool {
        self.variant(point, problem)
            .is_ok_and(|v| phobos_check::outside_space(&self.module, self.info(), &v))
    }

    fn instantiate(&self, point: &Point, problem: &Problem) -> Result<Kernel, Failure> {
        self.specialized(point, problem)?
            .map_err(|d| self.diagnostics(&d))
    }

    fn reference(&self) -> Option<&dyn Frontend> {
        self.reference.as_deref().map(|r| r as &dyn Frontend)
    }
}

/// `this point violates @where(..)` when the only errors are constant `@where`s false at the
/// point (E0207), else `None`.
fn where_violated_at_point(diags: &[Diagnostic]) -> Option<String> {
    let mut errors = diags.iter().filter(|d| d.is_error()).peekable();
    let first = errors.peek().copied()?;
    if !errors.all(|d| d.code == codes::WHERE_VIOLATED) {
        return None;
    }
    let text = first
        .message
        .strip_prefix("this point ")
        .unwrap_or(&first.message);
    Some(text.replace('`', ""))
}
