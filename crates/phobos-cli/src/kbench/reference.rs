//! `--reference FILE[:NAME]`: the kernel a CUDA C++ kernel's checks compare with instead of
//! its own default point — a `.ph` kernel run by the interpreter, or a `.cu` kernel compiled and
//! run on the same GPU — at its default point, on the same arguments.

use super::UserError;
use phobos::backend::cuda::CudaCompiler;
use phobos::frontend::{CheckFrontend, LoadError};
use phobos_syntax::SourceFile;
use phobos_tune::cache::VariantCache;
use phobos_tune::space::Pinned;
use phobos_tune::worker::{ReferenceSource, ReferenceSpec, VariantSpec};
use phobos_tune::{CompileResult, Compiler, DeviceInfo, Frontend, Problem};

/// The loaded reference kernel.
pub struct Reference {
    pub frontend: CheckFrontend,
    source: SourceFile,
}

/// `FILE:NAME` into the file and the kernel name (a suffix that is a name, so paths with `:`
/// elsewhere still read as files).
fn split(text: &str) -> (&str, Option<&str>) {
    match text.rsplit_once(':') {
        Some((file, name))
            if !file.is_empty()
                && !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') =>
        {
            (file, Some(name))
        }
        _ => (text, None),
    }
}

impl Reference {
    /// Loads `FILE[:NAME]` for `tuned`; its diagnostics are printed here.
    pub fn load(text: &str, tuned: &CheckFrontend, color: bool) -> Result<Reference, UserError> {
        if tuned.cuda().is_none() {
            return Err(UserError::new(
                "--reference is for CUDA C++ kernels: a Phobos kernel is checked against the \
                 interpreter",
            ));
        }
        let (path, name) = split(text);
        let body = std::fs::read_to_string(path)
            .map_err(|e| UserError::new(format!("--reference: cannot read {path}: {e}")))?;
        let source = SourceFile::new(path, body);
        let frontend = match CheckFrontend::load(source.clone(), name) {
            Ok(f) => f,
            Err(LoadError::Diagnostics(d, f)) => {
                eprintln!("{}", crate::render::render_all(&d, &f, color));
                return Err(UserError::printed());
            }
            Err(LoadError::Kernel(m)) => return Err(UserError::new(format!("--reference: {m}"))),
        };
        if let Some(why) = tuned.reference_mismatch(&frontend) {
            return Err(UserError::new(format!("--reference {text}: {why}")).hint(
                "the reference runs on the same arguments: declare the same parameters in the \
                 same order",
            ));
        }
        Ok(Reference { frontend, source })
    }

    /// What a worker needs to load the reference.
    pub fn source(&self) -> ReferenceSource {
        ReferenceSource {
            source_name: self.source.name.clone(),
            source_text: self.source.text.clone(),
            kernel: self.frontend.kernel_name().to_string(),
        }
    }

    /// The reference of every check of one problem: the kernel at its default point, compiled
    /// for `device` when it is CUDA C++, else run by the interpreter.
    pub fn spec(&self, problem: &Problem, device: &DeviceInfo) -> Result<ReferenceSpec, String> {
        let what = format!("the reference `{}`", self.frontend.kernel_name());
        let point = Pinned::new(self.frontend.space(), &[])
            .map_err(|e| format!("{what}: {e}"))?
            .default_point();
        match self.frontend.where_violation(&point, problem) {
            Ok(None) => {}
            Ok(Some(c)) => return Err(format!("{what} at its default point {c}")),
            Err(f) => return Err(format!("{what}: {}", f.first_line)),
        }
        let kernel = self
            .frontend
            .instantiate(&point, problem)
            .map_err(|f| format!("{what}: {}", f.first_line))?;
        let artifact = if self.frontend.cuda().is_some() {
            let compiler = CudaCompiler::new(
                self.source.clone(),
                &device.arch(),
                VariantCache::default_location(),
            )
            .map_err(|e| format!("cannot compile {what}: {e}"))?;
            match compiler.compile(&kernel, device) {
                CompileResult::Ok(c) => c.artifact,
                CompileResult::Failed(f) => {
                    return Err(format!("{what} does not compile: {}", f.first_line))
                }
                CompileResult::Pruned(r) => return Err(format!("{what} cannot run here: {r}")),
            }
        } else {
            None
        };
        Ok(ReferenceSpec::Kernel(VariantSpec { point, artifact }))
    }
}

#[cfg(test)]
mod tests {
    use super::split;

    #[test]
    fn file_and_kernel_name() {
        assert_eq!(split("a/b.cu:saxpy"), ("a/b.cu", Some("saxpy")));
        assert_eq!(split("a/b.ph"), ("a/b.ph", None));
        assert_eq!(split("c:/x/b.ph"), ("c:/x/b.ph", None));
        assert_eq!(split(":k"), (":k", None));
    }
}
