//! How long converting a large host tensor to device bytes takes (row- and column-major).
//!
//!     cargo run --release -p phobos-ir --example bytes_bench
use phobos_ir::{DType, HostTensor};
use std::time::Instant;

fn main() {
    let (rows, cols) = (8192usize, 8192usize);
    for dtype in [DType::BF16, DType::F32, DType::F8E4M3] {
        let t = HostTensor {
            dtype,
            shape: vec![rows, cols],
            data: (0..rows * cols).map(|i| ((i % 97) as f64) * 0.01).collect(),
        };
        let s = Instant::now();
        let a = t.to_bytes();
        let row = s.elapsed().as_secs_f64();
        let s = Instant::now();
        let b = t.to_bytes_col_major();
        let col = s.elapsed().as_secs_f64();
        let s = Instant::now();
        let back = HostTensor::from_bytes_col_major(dtype, &t.shape, &b).unwrap();
        let from_col = s.elapsed().as_secs_f64();
        assert_eq!(a.len(), b.len());
        assert_eq!(back.data.len(), t.data.len());
        println!("{dtype} {rows}x{cols}: to_bytes {row:.3} s, col-major {col:.3} s, from col-major {from_col:.3} s");
    }
}
