//! Facts about an instantiated kernel for one problem: its grid, its declared work, whether its
//! `@where` constraints hold, and whether the problem fits its signature.

use crate::types::Problem;
use phobos_ir::eval::{display, eval, Bindings, Value};
use phobos_ir::{Expr, Kernel, ParamKind};

fn bindings(kernel: &Kernel, problem: &Problem) -> Bindings {
    let scalars: Vec<(String, Value)> = problem
        .args
        .iter()
        .map(|(n, v)| (n.clone(), Value::Float(*v)))
        .collect();
    Bindings::new(kernel, &problem.dims, &scalars)
}

/// A uniform expression's value for the problem (`@flops`, `@bytes`, a grid axis).
pub fn eval_uniform(kernel: &Kernel, expr: &Expr, problem: &Problem) -> Option<f64> {
    eval(expr, &bindings(kernel, problem))
        .ok()
        .map(Value::as_f64)
}

/// `@flops` and `@bytes` for the problem, where declared.
pub fn work(kernel: &Kernel, problem: &Problem) -> (Option<f64>, Option<f64>) {
    let f = |e: &Option<Expr>| e.as_ref().and_then(|e| eval_uniform(kernel, e, problem));
    (f(&kernel.flops), f(&kernel.bytes))
}

/// Blocks per grid axis.
pub fn grid(kernel: &Kernel, problem: &Problem) -> Result<[u64; 3], String> {
    let env = bindings(kernel, problem);
    let mut out = [1u64; 3];
    for (axis, e) in kernel.grid.iter().enumerate() {
        let v = eval(e, &env).map_err(|err| err.to_string())?.as_i64();
        out[axis] = v.max(0) as u64;
    }
    Ok(out)
}

/// The first `@where` that is false for the problem, if any, as `violates @where(..)`.
pub fn where_violation(kernel: &Kernel, problem: &Problem) -> Result<Option<String>, String> {
    let env = bindings(kernel, problem);
    for w in &kernel.wheres {
        let holds = eval(w, &env).map_err(|e| e.to_string())?.as_bool();
        if !holds {
            return Ok(Some(format!("violates @where({})", display(w, kernel))));
        }
    }
    Ok(None)
}

/// A problem that does not fit the kernel's signature.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ProblemError {
    #[error("`{name}` is not a runtime dim of `{kernel}` (its runtime dims: {dims})")]
    UnknownDim {
        name: String,
        kernel: String,
        dims: String,
    },
    #[error("no value for the runtime dim `{name}` (give it with --dims {name}=..)")]
    MissingDim { name: String },
    #[error("the dim {name}={value} must be at least 1")]
    BadDim { name: String, value: i64 },
    #[error("{name}={value} is not a multiple of {multiple}, as @aligned requires")]
    Misaligned {
        name: String,
        value: i64,
        multiple: i64,
    },
    #[error(
        "`{name}` is not an element-type parameter of `{kernel}` (its type parameters: {declared})"
    )]
    UnknownType {
        name: String,
        kernel: String,
        declared: String,
    },
    #[error("`{name}` is not a tensor parameter of `{kernel}` (its tensors: {declared})")]
    UnknownTensor {
        name: String,
        kernel: String,
        declared: String,
    },
    #[error("`{name}` is not a scalar parameter of `{kernel}` (its scalars: {declared})")]
    UnknownArg {
        name: String,
        kernel: String,
        declared: String,
    },
    #[error("no value for the scalar parameter `{name}` (give it with --arg {name}=..)")]
    MissingArg { name: String },
}

fn list<'a>(names: impl Iterator<Item = &'a str>) -> String {
    let v: Vec<&str> = names.collect();
    if v.is_empty() {
        "none".into()
    } else {
        v.join(", ")
    }
}

/// Checks that the problem names only what the kernel has and gives everything it needs.
pub fn validate(kernel: &Kernel, problem: &Problem) -> Result<(), ProblemError> {
    let kname = || kernel.name.clone();
    for (name, _) in &problem.dims {
        if !kernel.dims.iter().any(|d| &d.name == name) {
            return Err(ProblemError::UnknownDim {
                name: name.clone(),
                kernel: kname(),
                dims: list(kernel.dims.iter().map(|d| d.name.as_str())),
            });
        }
    }
    for d in &kernel.dims {
        match problem.dim(&d.name) {
            None => {
                return Err(ProblemError::MissingDim {
                    name: d.name.clone(),
                })
            }
            Some(v) if v < 1 => {
                return Err(ProblemError::BadDim {
                    name: d.name.clone(),
                    value: v,
                })
            }
            Some(_) => {}
        }
    }
    for &(dim, multiple) in &kernel.aligned {
        let name = &kernel.dims[dim].name;
        if let Some(v) = problem.dim(name) {
            if multiple > 0 && v % multiple != 0 {
                return Err(ProblemError::Misaligned {
                    name: name.clone(),
                    value: v,
                    multiple,
                });
            }
        }
    }
    for (name, _) in &problem.types {
        if !kernel.type_args.iter().any(|(n, _)| n == name) {
            return Err(ProblemError::UnknownType {
                name: name.clone(),
                kernel: kname(),
                declared: list(kernel.type_args.iter().map(|(n, _)| n.as_str())),
            });
        }
    }
    let tensors = || {
        kernel
            .params
            .iter()
            .filter(|p| matches!(p.kind, ParamKind::Tensor { .. }))
    };
    let scalars = || {
        kernel
            .params
            .iter()
            .filter(|p| matches!(p.kind, ParamKind::Scalar { .. }))
    };
    for (name, _) in &problem.layouts {
        if !tensors().any(|p| &p.name == name) {
            return Err(ProblemError::UnknownTensor {
                name: name.clone(),
                kernel: kname(),
                declared: list(tensors().map(|p| p.name.as_str())),
            });
        }
    }
    for (name, _) in &problem.args {
        if !scalars().any(|p| &p.name == name) {
            return Err(ProblemError::UnknownArg {
                name: name.clone(),
                kernel: kname(),
                declared: list(scalars().map(|p| p.name.as_str())),
            });
        }
    }
    if let Some(p) = scalars().find(|p| problem.arg(&p.name).is_none()) {
        return Err(ProblemError::MissingArg {
            name: p.name.clone(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use phobos_syntax::SourceFile;

    #[test]
    fn work_reads_scalar_parameters_per_problem() {
        let src = "@launch(128)\n@grid(N)\n@flops(2 * N * N / (1 + causal))\n\
                   @bytes(f64(4 * N * N) * scale)\n\
                   kernel k(X: tensor<f32>[N, N], causal: i32, scale: f32) {\n  X[0, 0] = scale\n}\n";
        let module = phobos_check::load(SourceFile::new("k.ph", src)).unwrap();
        let info = &module.kernels[0];
        let variant = info.default_variant().unwrap();
        let kernel = phobos_check::instantiate(&module, info, &variant).unwrap();
        let problem = |causal: f64| Problem {
            dims: vec![("N".into(), 1000)],
            args: vec![("causal".into(), causal), ("scale".into(), 0.5)],
            ..Problem::default()
        };
        assert_eq!(work(&kernel, &problem(0.0)), (Some(2e6), Some(2e6)));
        assert_eq!(work(&kernel, &problem(1.0)), (Some(1e6), Some(2e6)));
    }
}
