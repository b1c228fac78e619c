//! Times the interpreter on a 256³ GEMM (examples/gemm.ph) at the default point and at larger
//! tiles, and prints seconds and GFLOP/s. A benchmark, not a test:
//!
//! ```text
//! cargo run --release -p phobos-interp --example bench_gemm [-- SIZE]
//! ```

use phobos_interp::host::{random_tensor, tensor_seed};
use phobos_interp::{Args, Config, Launch};
use phobos_ir::{relative_error, DType, HostTensor};
use phobos_syntax::SourceFile;
use std::time::Instant;

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(256);
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/gemm.ph");
    let text = std::fs::read_to_string(path).expect("examples/gemm.ph");
    let module = phobos_check::load(SourceFile::new("gemm.ph", text)).expect("gemm.ph checks");
    let info = module.kernel(Some("gemm")).expect("a kernel named gemm");
    let a = random_tensor(DType::F32, &[n, n], tensor_seed(0, "A"));
    let b = random_tensor(DType::F32, &[n, n], tensor_seed(0, "B"));
    let reference = reference(&a, &b);
    println!("GEMM {n}x{n}x{n} on the interpreter (f32)");
    println!(
        "{:<34} {:>9} {:>9} {:>10}",
        "point", "seconds", "GFLOP/s", "rel.error"
    );
    for pins in [
        None,
        Some("TILE_M=128 TILE_N=64 TILE_K=32"),
        Some("TILE_M=128 TILE_N=128 TILE_K=32"),
    ] {
        let variant = info.variant(pins, None, None).expect("valid pins");
        let kernel = phobos_check::instantiate(&module, info, &variant).expect("instantiates");
        let args = Args::new()
            .set("A", a.clone())
            .set("B", b.clone())
            .set("C", HostTensor::zeros(DType::F32, &[n, n]));
        let launch = Launch::new(&kernel, args).expect("binds");
        let start = Instant::now();
        let out = launch.run(&Config::default()).expect("runs");
        let seconds = start.elapsed().as_secs_f64();
        let err = relative_error(&out.get("C").unwrap().data, &reference);
        let gflops = 2.0 * (n as f64).powi(3) / seconds / 1e9;
        println!(
            "{:<34} {seconds:>9.3} {gflops:>9.3} {err:>10.1e}",
            kernel.point.to_pins()
        );
    }
}

fn reference(a: &HostTensor, b: &HostTensor) -> Vec<f64> {
    let n = a.shape[0];
    let mut c = vec![0.0; n * n];
    for i in 0..n {
        for k in 0..n {
            let x = a.data[i * n + k];
            for j in 0..n {
                c[i * n + j] += x * b.data[k * n + j];
            }
        }
    }
    c
}
