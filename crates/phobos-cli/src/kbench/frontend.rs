//! The tuner's view of a checked `.ph` file: phobos-check behind the engine's `Frontend`.

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
}

impl CheckFrontend {
    /// Loads a source and picks a kernel; errors are rendered diagnostics or a message.
    pub fn load(file: SourceFile, kernel: Option<&str>) -> Result<CheckFrontend, LoadError> {
        let hash_text = file.text.clone();
        let module =
            phobos_check::load(file.clone()).map_err(|d| LoadError::Diagnostics(d, file))?;
        let info = module.kernel(kernel).map_err(LoadError::Kernel)?;
        Ok(CheckFrontend {
            hash: phobos_tune::hash::kernel_hash(&hash_text, &info.name),
            kernel: info.name.clone(),
            space: info.space.clone(),
            module,
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

    fn diagnostics(&self, diags: &[Diagnostic]) -> Failure {
        let errors: Vec<Diagnostic> = diags.iter().filter(|d| d.is_error()).cloned().collect();
        let first = errors.first().or(diags.first());
        let first_line = first.map_or_else(
            || "the checker rejected this point".to_string(),
            |d| {
                let (line, col) = self.module.file.line_col(d.primary.span.lo);
                format!(
                    "error[{}]: {} at {}:{line}:{col}",
                    d.code, d.message, self.module.file.name
                )
            },
        );
        Failure {
            first_line,
            log: crate::render::render_all(diags, &self.module.file, false),
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
        let v = self.variant(point, problem)?;
        let k = match instantiate(&self.module, self.info(), &v) {
            Ok(k) => k,
            Err(diags) => {
                // A `@where` over the point's names alone that is false here (E0207): the
                // point is pruned like one whose `@where` fails for the problem, not a
                // failed compile.
                let mut errors = diags.iter().filter(|d| d.is_error()).peekable();
                let only_where = errors.peek().is_some()
                    && errors.clone().all(|d| d.code == codes::WHERE_VIOLATED);
                return match errors.next() {
                    Some(d) if only_where => {
                        let text = d.message.strip_prefix("this point ").unwrap_or(&d.message);
                        Ok(Some(text.replace('`', "")))
                    }
                    _ => Err(self.diagnostics(&diags)),
                };
            }
        };
        let mut k = k;
        phobos_cuda::specialize_alignment(&mut k, &problem.dims);
        phobos_check::eval_where(&k, &problem.dims).map_err(Failure::from_log)
    }

    fn instantiate(&self, point: &Point, problem: &Problem) -> Result<Kernel, Failure> {
        let v = self.variant(point, problem)?;
        let mut k = instantiate(&self.module, self.info(), &v).map_err(|d| self.diagnostics(&d))?;
        // Specialize on the problem's alignment (as Triton does on divisibility by 16): the
        // fast GEMM main loops need 16-byte leading dims; the facts are checked at launch.
        phobos_cuda::specialize_alignment(&mut k, &problem.dims);
        Ok(k)
    }
}
