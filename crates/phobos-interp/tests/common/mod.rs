//! Helpers shared by the integration tests.

#![allow(dead_code)]

pub mod build;
pub mod ph;

use phobos_interp::{Args, Config, Output};
use phobos_ir::{HostTensor, Kernel};

/// Runs a kernel with the default configuration and panics with the error if it fails.
pub fn run_ok(k: &Kernel, args: Args) -> Output {
    match phobos_interp::run(k, args, &Config::default()) {
        Ok(out) => out,
        Err(e) => panic!("{} failed: {e}", k.name),
    }
}

/// `a @ b` in f64, row-major.
pub fn matmul(a: &HostTensor, b: &HostTensor) -> Vec<f64> {
    let (m, k, n) = (a.shape[0], a.shape[1], b.shape[1]);
    let mut c = vec![0.0; m * n];
    for i in 0..m {
        for kk in 0..k {
            let x = a.data[i * k + kk];
            for j in 0..n {
                c[i * n + j] += x * b.data[kk * n + j];
            }
        }
    }
    c
}
