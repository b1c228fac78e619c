//! The problems a run works on, each bound to the kernel: runtime dims, element types and
//! layouts (the engine's `Problem`, the store key) and, for a GEMM, its GEMM view (`M N K`,
//! operand types and orders) for config strings, results files and the `trans` column.
//!
//! GEMM problems (from `--dtype-*`, `--col-*`, `-o`, a sizes file, a results file or a config
//! string) are bound through `workflow::bind`; a plain `--dims` problem keeps its dims as given
//! and gets a GEMM view when the kernel binds it as one.

use super::args::KbenchArgs;
use super::problem;
use phobos_check::{DimInfo, Elem, KernelInfo, ParamInfoKind};
use phobos_ir::{DType, MemOrder, Point};
use phobos_tune::workflow::{bind, ConfigString, GemmProblem, Operands, TensorNames};
use phobos_tune::{Frontend, Problem};

/// One problem to tune, check, benchmark or run.
#[derive(Clone, Debug, PartialEq)]
pub struct Job {
    /// Where it came from (`sizes.yaml:3`); `None` for the command line.
    pub origin: Option<String>,
    /// Dims, every type parameter, layouts, scalar arguments.
    pub problem: Problem,
    /// The GEMM view, with every operand's element type and order resolved.
    pub gemm: Option<GemmProblem>,
    /// The configuration stored with it (a results file, a config string).
    pub config: Option<Point>,
}

fn order_letter(o: Option<MemOrder>) -> &'static str {
    match o.unwrap_or_default() {
        MemOrder::RowMajor => "row",
        MemOrder::ColMajor => "col",
    }
}

impl Job {
    /// `M=4864 N=4096 K=8192 NT A=f16 B=f16 C=f32`, or the dims and types as given.
    pub fn label(&self) -> String {
        match &self.gemm {
            Some(g) => {
                let o = &g.operands;
                let t = |d: Option<DType>| d.map_or("?", DType::name);
                format!(
                    "M={} N={} K={} {} A={} B={} C={}",
                    g.m,
                    g.n,
                    g.k,
                    g.trans(),
                    t(o.dtype_a),
                    t(o.dtype_b),
                    t(o.dtype_c)
                )
            }
            None => {
                let mut s = self.problem.dims_text().replace(',', " ");
                if !self.problem.types.is_empty() {
                    s.push_str(&format!(" {}", self.problem.types_text().replace(',', " ")));
                }
                s
            }
        }
    }

    /// The config string of a point for this problem (GEMMs only).
    pub fn config_string(&self, point: &Point) -> Option<String> {
        ConfigString::new(self.gemm?, point.clone())
            .ok()
            .map(|c| c.to_string())
    }
}

/// Whether the command line describes a GEMM (so problems are bound as GEMMs).
pub fn gemm_flags(args: &KbenchArgs) -> bool {
    args.dtype_a.is_some()
        || args.dtype_b.is_some()
        || args.dtype_c.is_some()
        || args.col_a
        || args.col_b
        || args.output.is_some()
}

/// `--dtype-a/-b/-c`, `--col-a/-b` as operands (`None` where not given).
pub fn cli_operands(args: &KbenchArgs) -> Result<Operands, String> {
    let dtype = |flag: &str, v: &Option<String>| -> Result<Option<DType>, String> {
        v.as_deref()
            .map(|s| {
                DType::parse(s).ok_or_else(|| {
                    format!(
                        "--{flag}: unknown element type `{s}` (valid: fp32 tf32 fp16 bf16 fp8 bf8 \
                         int8, or a Phobos name such as f16, f8e4m3, i8)"
                    )
                })
            })
            .transpose()
    };
    let col = |c: bool| c.then_some(MemOrder::ColMajor);
    Ok(Operands {
        dtype_a: dtype("dtype-a", &args.dtype_a)?,
        dtype_b: dtype("dtype-b", &args.dtype_b)?,
        dtype_c: dtype("dtype-c", &args.dtype_c)?,
        order_a: col(args.col_a),
        order_b: col(args.col_b),
    })
}

/// Adds every type parameter the problem leaves at its default, so that the same variant
/// always has the same store key.
pub fn complete_types(info: &KernelInfo, problem: &mut Problem) {
    let mut types = Vec::new();
    for (name, default) in &info.type_params {
        match problem.types.iter().find(|(n, _)| n == name) {
            Some(&(_, t)) => types.push((name.clone(), t)),
            None => {
                if let Some(d) = default {
                    types.push((name.clone(), *d));
                }
            }
        }
    }
    // Names the kernel does not declare stay, so that the engine reports them.
    for (n, t) in &problem.types {
        if !types.iter().any(|(m, _)| m == n) {
            types.push((n.clone(), *t));
        }
    }
    problem.types = types;
}

/// Each operand's element type and memory order under the problem's binding.
pub fn resolve_operands(
    info: &KernelInfo,
    problem: &Problem,
    names: &TensorNames,
) -> Option<Operands> {
    let elem = |name: &str| -> Option<DType> {
        match &info.param(name)?.kind {
            ParamInfoKind::Tensor { elem, .. } => match elem {
                Elem::Concrete(t) => Some(*t),
                Elem::Param(p) => problem.types.iter().find(|(n, _)| n == p).map(|x| x.1),
            },
            ParamInfoKind::Scalar { .. } => None,
        }
    };
    Some(Operands {
        dtype_a: Some(elem(&names.a)?),
        dtype_b: Some(elem(&names.b)?),
        dtype_c: Some(elem(&names.c)?),
        order_a: Some(problem.layout(&names.a)),
        order_b: Some(problem.layout(&names.b)),
    })
}

/// The GEMM view of a problem given by its dims, when the kernel binds it as a GEMM to exactly
/// the same problem.
pub fn gemm_view(info: &KernelInfo, problem: &Problem, names: &TensorNames) -> Option<GemmProblem> {
    let axes = |name: &str| -> Option<Vec<i64>> {
        match &info.param(name)?.kind {
            ParamInfoKind::Tensor { dims, .. } if dims.len() == 2 => dims
                .iter()
                .map(|d| match d {
                    DimInfo::Static(v) => Some(*v),
                    DimInfo::Runtime(n) => problem.dim(n),
                    DimInfo::Declared(_) => None,
                })
                .collect(),
            _ => None,
        }
    };
    let (a, b) = (axes(&names.a)?, axes(&names.b)?);
    let gemm = GemmProblem {
        m: a[0],
        n: b[1],
        k: a[1],
        operands: resolve_operands(info, problem, names)?,
    };
    let mut bound = bind(info, &gemm, names).ok()?.to_problem();
    complete_types(info, &mut bound);
    bound.args = problem.args.clone();
    (bound.key() == problem.key()).then_some(gemm)
}

/// Adds `--types`/`--layout` entries to a bound problem; one that contradicts the binding is
/// an error.
fn merge(bound: &mut Problem, extra: &Problem) -> Result<(), String> {
    for (n, t) in &extra.types {
        match bound.types.iter().find(|(m, _)| m == n) {
            Some((_, t0)) if t0 != t => {
                return Err(format!(
                    "`{n}` is {t0} for the problem's element types but {t} from --types"
                ))
            }
            Some(_) => {}
            None => bound.types.push((n.clone(), *t)),
        }
    }
    for (n, o) in &extra.layouts {
        match bound.layouts.iter().find(|(m, _)| m == n) {
            Some((_, o0)) if o0 != o => {
                return Err(format!(
                    "`{n}` is {} for the problem's layouts but {} from --layout",
                    order_letter(Some(*o0)),
                    order_letter(Some(*o))
                ))
            }
            Some(_) => {}
            None => bound.layouts.push((n.clone(), *o)),
        }
    }
    bound.args = extra.args.clone();
    Ok(())
}

/// Binds a GEMM problem: the engine's problem (with `extra`'s type parameters, layouts and
/// scalars) and the GEMM view with every operand resolved.
pub fn bind_gemm(
    info: &KernelInfo,
    names: &TensorNames,
    gemm: &GemmProblem,
    extra: &Problem,
) -> Result<(Problem, GemmProblem), String> {
    // A and B are row-major unless given: say so, so that the problem lists both orders.
    let row = Some(MemOrder::RowMajor);
    let explicit = GemmProblem {
        operands: Operands {
            order_a: gemm.operands.order_a.or(row),
            order_b: gemm.operands.order_b.or(row),
            ..gemm.operands
        },
        ..*gemm
    };
    let binding = bind(info, &explicit, names).map_err(|e| e.to_string())?;
    let mut p = binding.to_problem();
    merge(&mut p, extra)?;
    complete_types(info, &mut p);
    let resolved = GemmProblem {
        operands: resolve_operands(info, &p, names).unwrap_or(gemm.operands),
        ..*gemm
    };
    Ok((p, resolved))
}

/// Whether some point of the space instantiates for the problem (element types that `dot`
/// cannot take, say, fail at every point); the error is the default point's.
pub fn instantiates(frontend: &dyn Frontend, problem: &Problem) -> Result<(), String> {
    let space = frontend.space();
    let default = Point(
        space
            .names
            .iter()
            .filter_map(|n| Some((n.name.clone(), *n.choices.first()?)))
            .collect(),
    );
    let first = match frontend.instantiate(&default, problem) {
        Ok(_) => return Ok(()),
        Err(f) => f,
    };
    let pinned = phobos_tune::space::Pinned::new(space, &[]).map_err(|e| e.to_string())?;
    // A huge space is searched only in part: looking further than a search would is no use.
    let limit = phobos_tune::space::MAX_EXHAUSTIVE_POINTS as usize;
    if pinned
        .space
        .points()
        .take(limit)
        .any(|p| frontend.instantiate(&p, problem).is_ok())
    {
        Ok(())
    } else {
        Err(format!(
            "the kernel does not check for this problem at any point: {}",
            first.first_line
        ))
    }
}

/// The command line's extra type parameters, layouts and scalars (and its dims).
pub fn extras(args: &KbenchArgs) -> Result<Problem, String> {
    problem::from_args(args)
}

/// The problem of the command line (`--dims`, `-m -n -k`, and the GEMM flags).
pub fn from_command_line(
    args: &KbenchArgs,
    info: &KernelInfo,
    names: &TensorNames,
) -> Result<Job, String> {
    let extra = extras(args)?;
    if gemm_flags(args) {
        let dim = |n: &str| {
            extra.dim(n).ok_or_else(|| {
                format!(
                    "a GEMM problem needs M, N and K, and {n} is missing (-m .. -n .. -k .., or \
                     --dims M=..,N=..,K=..)"
                )
            })
        };
        let (m, n, k) = (dim("M")?, dim("N")?, dim("K")?);
        if let Some((other, _)) = extra
            .dims
            .iter()
            .find(|(d, _)| !["M", "N", "K"].contains(&d.as_str()))
        {
            return Err(format!(
                "`{other}` is not a GEMM dim: a GEMM problem is given by M, N and K"
            ));
        }
        let gemm = GemmProblem {
            m,
            n,
            k,
            operands: cli_operands(args)?,
        };
        let (problem, gemm) = bind_gemm(info, names, &gemm, &extra)?;
        return Ok(Job {
            origin: None,
            problem,
            gemm: Some(gemm),
            config: None,
        });
    }
    let mut problem = extra;
    complete_types(info, &mut problem);
    let gemm = gemm_view(info, &problem, names);
    Ok(Job {
        origin: None,
        problem,
        gemm,
        config: None,
    })
}
