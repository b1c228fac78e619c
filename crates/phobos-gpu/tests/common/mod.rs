//! Helpers shared by the GPU tests: random inputs, hand-built IR kernels, compile-and-load.

#![allow(dead_code)]

pub mod kernels;

use phobos_gpu::{compile, CompileOptions, Function, Gpu};
use phobos_ir::{
    DType, Dim, DimId, DimVar, Expr, ExprKind, HostTensor, Kernel, Launch, Lit, MemOrder, Param,
    ParamKind, Point, Ty,
};
use phobos_syntax::Span;

/// A small xorshift generator; seeded from the clock so every run checks fresh inputs, and the
/// seed is printed so a failure can be replayed with `PHOBOS_TEST_SEED`.
pub struct Rng(u64);

impl Rng {
    pub fn new(test: &str) -> Rng {
        let seed = std::env::var("PHOBOS_TEST_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_nanos() as u64)
                    .unwrap_or(1)
            });
        eprintln!("{test}: PHOBOS_TEST_SEED={seed}");
        Rng(seed | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// Uniform in [lo, hi).
    pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * ((self.next_u64() >> 11) as f64 / (1u64 << 53) as f64)
    }

    /// A tensor of uniform values in [lo, hi), rounded to `dtype` (integers: truncated).
    pub fn tensor(&mut self, dtype: DType, shape: &[usize], lo: f64, hi: f64) -> HostTensor {
        let n: usize = shape.iter().product();
        let v: Vec<f64> = (0..n)
            .map(|_| {
                let x = self.uniform(lo, hi);
                if dtype.is_int() {
                    x.floor()
                } else {
                    x
                }
            })
            .collect();
        HostTensor::from_f64(dtype, shape, &v)
    }
}

/// Opens GPU 0 or fails the test with the reason.
pub fn gpu() -> Gpu {
    Gpu::new(0).unwrap_or_else(|e| panic!("this test needs a GPU: {e}"))
}

/// Compiles CUDA source for the device's architecture and loads one kernel.
pub fn load(gpu: &Gpu, source: &str, name: &str) -> Function {
    let arch = phobos_gpu::Arch::for_device(gpu.info().cc);
    let c = compile(source, &CompileOptions::for_arch(arch))
        .unwrap_or_else(|e| panic!("{name} does not compile: {e}\n{}", e.log));
    let m = gpu
        .load_compiled(&c)
        .unwrap_or_else(|e| panic!("{name} does not load: {e}"));
    m.function(name)
        .unwrap_or_else(|e| panic!("{name} not found: {e}"))
}

pub fn int(kind: ExprKind) -> Expr {
    Expr {
        kind,
        ty: Ty::Scalar(DType::I32),
        uniform: true,
        span: Span::default(),
    }
}

pub fn lit(v: i64) -> Expr {
    int(ExprKind::Lit(Lit::Int(v)))
}

pub fn dim(id: DimId) -> Expr {
    int(ExprKind::Dim(id))
}

pub fn cdiv(a: Expr, b: Expr) -> Expr {
    int(ExprKind::Cdiv(Box::new(a), Box::new(b)))
}

pub fn tensor(name: &str, dtype: DType, dims: Vec<Dim>, order: MemOrder) -> Param {
    Param {
        name: name.into(),
        kind: ParamKind::Tensor { dtype, dims, order },
        span: Span::default(),
    }
}

pub fn scalar(name: &str, dtype: DType) -> Param {
    Param {
        name: name.into(),
        kind: ParamKind::Scalar { dtype },
        span: Span::default(),
    }
}

/// A kernel signature for the launch ABI (no body: the CUDA is hand-written).
pub fn kernel(
    name: &str,
    params: Vec<Param>,
    dims: Vec<(&str, (usize, usize))>,
    threads: u32,
    grid: [Expr; 3],
) -> Kernel {
    Kernel {
        name: name.into(),
        point: Point::default(),
        type_args: vec![],
        params,
        dims: dims
            .into_iter()
            .map(|(n, source)| DimVar {
                name: n.into(),
                source,
            })
            .collect(),
        aligned: vec![],
        launch: Launch {
            threads,
            min_blocks_per_sm: None,
            max_regs: None,
        },
        grid,
        wheres: vec![],
        flops: None,
        bytes: None,
        locals: vec![],
        body: vec![],
        span: Span::default(),
    }
}
