//! cuBLAS (cuBLASLt for fp8) as the GPU's library routine for a GEMM kernel: the reference of
//! `--check` and `--config`, the cuBLAS column and the measured peak of `--benchmark`.
//!
//! [`plan`] is pure (no GPU): the main process uses it to decide whether cuBLAS can be the
//! reference before asking a worker.

use phobos_gpu::blas_plan::{plan_gemm, GemmKind};
use phobos_gpu::{Blas, DeviceTensor, Gpu, GpuError};
use phobos_ir::{Kernel, MemOrder, ParamKind};
use phobos_tune::verify::shapes;
use phobos_tune::worker::LibrarySpec;
use phobos_tune::{ArgValue, Failure, Loaded, Problem, RunError};
use std::sync::Arc;

/// One cuBLAS call standing for a kernel: which parameters are A, B, C and what it runs.
#[derive(Clone, Debug, PartialEq)]
pub struct BlasGemm {
    a: usize,
    b: usize,
    c: usize,
    tf32: bool,
    /// `cuBLAS` or `cuBLASLt`.
    pub name: &'static str,
}

/// The call for `kernel`'s operands named in `spec`, or why cuBLAS cannot compute it (element
/// types, layouts or shapes it has no routine for).
pub fn plan(kernel: &Kernel, spec: &LibrarySpec, problem: &Problem) -> Result<BlasGemm, String> {
    let shapes = shapes(kernel, problem)?;
    let find = |name: &str| -> Result<(usize, phobos_ir::DType, Vec<usize>, MemOrder), String> {
        let i = kernel
            .params
            .iter()
            .position(|p| p.name == name)
            .ok_or_else(|| format!("`{}` has no tensor `{name}`", kernel.name))?;
        match (&kernel.params[i].kind, &shapes[i]) {
            (ParamKind::Tensor { dtype, order, .. }, Some(shape)) => {
                Ok((i, *dtype, shape.clone(), *order))
            }
            _ => Err(format!("`{name}` is not a tensor")),
        }
    };
    let (a, at, ashape, ao) = find(&spec.a)?;
    let (b, bt, bshape, bo) = find(&spec.b)?;
    let (c, ct, cshape, co) = find(&spec.c)?;
    if co != MemOrder::RowMajor {
        return Err("cuBLAS reference: C must be row-major".into());
    }
    let tf32 = phobos_tune::irwalk::uses_tf32(kernel);
    let (_, kind) = plan_gemm((at, &ashape, ao), (bt, &bshape, bo), (ct, &cshape), tf32).map_err(
        |e| match e {
            GpuError::Invalid(s) => format!("cuBLAS has no GEMM for this problem: {s}"),
            e => e.to_string(),
        },
    )?;
    Ok(BlasGemm {
        a,
        b,
        c,
        tf32,
        name: match kind {
            GemmKind::Fp8 { .. } => "cuBLASLt",
            _ => "cuBLAS",
        },
    })
}

fn gpu_error(e: GpuError) -> RunError {
    RunError {
        fatal: e.is_fatal(),
        failure: Failure::from_log(e.to_string()),
    }
}

/// A planned cuBLAS call loaded on a GPU.
pub struct BlasLoaded {
    blas: Arc<Blas>,
    gpu: Gpu,
    call: BlasGemm,
    kernel: Kernel,
    tensors: Option<(DeviceTensor, DeviceTensor, DeviceTensor)>,
}

impl BlasLoaded {
    /// A planned call on a GPU, for the kernel whose parameters it reads.
    pub fn new(blas: Arc<Blas>, gpu: Gpu, call: BlasGemm, kernel: Kernel) -> BlasLoaded {
        BlasLoaded {
            blas,
            gpu,
            call,
            kernel,
            tensors: None,
        }
    }

    fn upload(&mut self, args: &[ArgValue]) -> Result<(), RunError> {
        let tensor = |i: usize| -> Result<(&phobos_ir::HostTensor, MemOrder), RunError> {
            let order = match &self.kernel.params[i].kind {
                ParamKind::Tensor { order, .. } => *order,
                ParamKind::Scalar { .. } => MemOrder::RowMajor,
            };
            let t = args
                .get(i)
                .and_then(ArgValue::tensor)
                .ok_or_else(|| RunError::refused("cuBLAS: an operand is not a tensor"))?;
            Ok((t, order))
        };
        let (a, ao) = tensor(self.call.a)?;
        let (b, bo) = tensor(self.call.b)?;
        let (c, co) = tensor(self.call.c)?;
        let a = DeviceTensor::upload(&self.gpu, a, ao).map_err(gpu_error)?;
        let b = DeviceTensor::upload(&self.gpu, b, bo).map_err(gpu_error)?;
        let c = DeviceTensor::alloc(&self.gpu, c.dtype, &c.shape, co).map_err(gpu_error)?;
        self.tensors = Some((a, b, c));
        Ok(())
    }

    fn gemm(&self) -> Result<(), RunError> {
        let (a, b, c) = self
            .tensors
            .as_ref()
            .ok_or_else(|| RunError::refused("cuBLAS: not prepared"))?;
        self.blas.gemm(a, b, c, self.call.tf32).map_err(gpu_error)
    }
}

impl Loaded for BlasLoaded {
    fn run(&mut self, args: &mut [ArgValue]) -> Result<(), RunError> {
        self.upload(args)?;
        self.gemm()?;
        let (_, _, c) = self.tensors.as_ref().expect("uploaded");
        let out = c.download().map_err(gpu_error)?;
        if let Some(ArgValue::Tensor(t)) = args.get_mut(self.call.c) {
            *t = out;
        }
        Ok(())
    }

    fn prepare(&mut self, args: &[ArgValue]) -> Result<(), RunError> {
        self.upload(args)
    }

    fn launch_timed(&mut self) -> Result<f64, RunError> {
        // Timed like a variant: the L2 flushed first, device events around the call.
        self.gpu.flush_l2().map_err(gpu_error)?;
        let (a, b) = (
            self.gpu.event().map_err(gpu_error)?,
            self.gpu.event().map_err(gpu_error)?,
        );
        a.record().map_err(gpu_error)?;
        self.gemm()?;
        b.record().map_err(gpu_error)?;
        Ok(a.elapsed_ms(&b).map_err(gpu_error)? as f64)
    }

    fn describe(&self) -> Option<String> {
        Some(self.call.name.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use phobos_check::{instantiate, load};
    use phobos_ir::Point;
    use phobos_syntax::SourceFile;

    fn kernel(types: &str, layout: &str) -> Kernel {
        let src = "@autotune(T in [32])\nkernel g<TA = f16, TC = f32>(A: tensor<TA>[M, K], \
                   B: tensor<TA>[K, N], C: tensor<TC>[M, N]) {\n  let pm = ctx.block.x\n  \
                   let pn = ctx.block.y\n  var acc: tile<f32>[T, T] = 0.0\n  for k in range(0, \
                   K, T) {\n    acc += dot(A[pm * T :+ T, k :+ T], B[k :+ T, pn * T :+ T])\n  }\n  \
                   C[pm * T :+ T, pn * T :+ T] = TC(acc)\n}\n";
        let m = load(SourceFile::new("g.ph", src)).unwrap();
        let info = m.kernel(None).unwrap();
        let layout = (!layout.is_empty()).then_some(layout);
        let v = info
            .variant(None, Some(types), layout)
            .unwrap()
            .at(Point(vec![("T".into(), 32)]));
        instantiate(&m, info, &v).unwrap()
    }

    fn problem(m: i64, n: i64, k: i64) -> Problem {
        Problem {
            dims: vec![("M".into(), m), ("K".into(), k), ("N".into(), n)],
            ..Default::default()
        }
    }

    fn spec() -> LibrarySpec {
        LibrarySpec {
            point: Point(vec![("T".into(), 32)]),
            a: "A".into(),
            b: "B".into(),
            c: "C".into(),
        }
    }

    #[test]
    fn cublas_takes_what_it_has_a_routine_for() {
        let p = problem(64, 48, 32);
        let k = kernel("TA=f16,TC=f32", "B=col");
        assert_eq!(plan(&k, &spec(), &p).unwrap().name, "cuBLAS");
        let k = kernel("TA=f8e4m3,TC=f32", "A=row,B=col");
        assert_eq!(plan(&k, &spec(), &p).unwrap().name, "cuBLASLt");
        // fp8 only as "TN"; e5m2 and i8 into f32 not at all.
        let k = kernel("TA=f8e4m3,TC=f32", "A=row,B=row");
        let e = plan(&k, &spec(), &p).unwrap_err();
        assert!(e.starts_with("cuBLAS has no GEMM for this problem"), "{e}");
        assert!(plan(&kernel("TA=f8e5m2,TC=f32", ""), &spec(), &p).is_err());
        let k = kernel("TA=tf32,TC=f32", "");
        assert!(plan(&k, &spec(), &p).unwrap().tf32);
        let bad = LibrarySpec {
            a: "X".into(),
            ..spec()
        };
        assert_eq!(
            plan(&k, &bad, &p).unwrap_err(),
            "`g` has no tensor `X`".to_string()
        );
    }
}
