//! The arguments of a launch: host tensors run in place on the interpreter, every mismatch with
//! the signature is an `Error::Argument` naming the argument (never a panic), device buffers
//! are refused by the interpreter, and on a GPU (ignored without one) a launch on buffers the
//! caller owns writes them in place with the result of the host-tensor launch.

use phobos::{Arg, ArgValue, Backend, DType, Error, HostTensor, Kernel, Policy, Runtime};

const AXPY: &str = "@autotune(BLOCK in [32, 64])\n\
                    kernel axpy(X: tensor<f32>[N], Y: tensor<f32>[N], Z: tensor<f32>[N], \
                    a: f32) {\n  \
                    let o = ctx.block.x * BLOCK\n  \
                    Z[o :+ BLOCK] = X[o :+ BLOCK] * a + Y[o :+ BLOCK]\n\
                    }\n";

const GEMM: &str =
    "@grid(1)\nkernel mm(A: tensor<f32>[M, 8], B: tensor<f32>[8, N], C: tensor<f32>[M, N]) {\n  \
                    C[0 :+ 16, 0 :+ 16] = dot(A[0 :+ 16, 0 :+ 8], B[0 :+ 8, 0 :+ 16])\n\
                    }\n";

fn ramp(n: usize, scale: f64) -> HostTensor {
    let v: Vec<f64> = (0..n).map(|i| i as f64 * scale).collect();
    HostTensor::from_f64(DType::F32, &[n], &v)
}

fn with_kernel<T>(src: &str, name: &str, f: impl FnOnce(&mut Kernel) -> T) -> T {
    let rt = Runtime::new(Backend::interp()).unwrap();
    let module = rt.load_source("k.ph", src).unwrap();
    let mut k = module.kernel(name).unwrap();
    f(&mut k)
}

/// The index and message of an argument error.
fn argument_error(r: Result<phobos::Launched, Error>) -> (usize, String) {
    match r {
        Err(Error::Argument { index, message }) => (index, message),
        Err(other) => panic!("not an argument error: {other}"),
        Ok(l) => panic!("launched {}", l.config()),
    }
}

#[test]
fn host_tensors_and_scalars_run_in_place_on_the_interpreter() {
    with_kernel(AXPY, "axpy", |k| {
        let (mut x, mut y, mut z) = (
            ramp(100, 1.0),
            ramp(100, 0.5),
            HostTensor::zeros(DType::F32, &[100]),
        );
        let mut args = [
            Arg::Host(&mut x),
            Arg::Host(&mut y),
            Arg::Host(&mut z),
            Arg::Scalar(3.0),
        ];
        k.launch_args(&mut args, Policy::Default).unwrap();
        assert_eq!(z.data[99], 99.0 * 3.0 + 49.5);
        assert!(z.data.iter().enumerate().all(|(i, v)| *v == i as f64 * 3.5));
        // The inputs are given back as they were.
        assert_eq!((x.data[7], y.data[7]), (7.0, 3.5));
    });
}

#[test]
fn wrong_arguments_are_errors_that_name_them() {
    with_kernel(AXPY, "axpy", |k| {
        let mut run = |x: &mut HostTensor, y: &mut HostTensor, z: &mut HostTensor, last: Arg| {
            let mut args = [Arg::Host(x), Arg::Host(y), Arg::Host(z), last];
            argument_error(k.launch_args(&mut args, Policy::Default))
        };
        let f32s = |n| HostTensor::zeros(DType::F32, &[n]);

        // A tensor of another element type.
        let (i, m) = run(
            &mut f32s(64),
            &mut HostTensor::zeros(DType::F16, &[64]),
            &mut f32s(64),
            Arg::Scalar(1.0),
        );
        assert_eq!(i, 1);
        assert!(m.contains("`Y` holds f32") && m.contains("f16"), "{m}");

        // Another extent of a dim the first tensor fixed.
        let (i, m) = run(
            &mut f32s(64),
            &mut f32s(64),
            &mut f32s(50),
            Arg::Scalar(1.0),
        );
        assert_eq!(i, 2);
        assert!(m.contains("`Z` has 50") && m.contains("N is 64"), "{m}");

        // Another rank.
        let (i, m) = run(
            &mut f32s(64),
            &mut HostTensor::zeros(DType::F32, &[8, 8]),
            &mut f32s(64),
            Arg::Scalar(1.0),
        );
        assert_eq!(i, 1);
        assert!(m.contains("1 dims"), "{m}");

        // Fewer values than the shape says (the fields are public).
        let mut short = f32s(64);
        short.data.truncate(10);
        let (i, m) = run(&mut f32s(64), &mut short, &mut f32s(64), Arg::Scalar(1.0));
        assert_eq!(i, 1);
        assert!(m.contains("holds 10 values"), "{m}");

        // A tensor where a scalar goes.
        let mut extra = f32s(64);
        let (i, m) = run(
            &mut f32s(64),
            &mut f32s(64),
            &mut f32s(64),
            Arg::Host(&mut extra),
        );
        assert_eq!(i, 3);
        assert!(m.contains("`a` expects a scalar of f32"), "{m}");
    });
}

#[test]
fn a_missing_argument_and_a_wrong_static_extent_are_errors() {
    with_kernel(AXPY, "axpy", |k| {
        let mut x = HostTensor::zeros(DType::F32, &[64]);
        let (i, m) = argument_error(k.launch_args(&mut [Arg::Host(&mut x)], Policy::Default));
        assert_eq!(i, 1);
        assert!(m.contains("takes 4 arguments, 1 given"), "{m}");
        // The same through the `ArgValue` form.
        let mut values = [ArgValue::Scalar(1.0)];
        let (i, m) = argument_error(k.launch(&mut values, Policy::Default));
        assert_eq!(i, 1);
        assert!(m.contains("takes 4 arguments"), "{m}");
    });
    with_kernel(GEMM, "mm", |k| {
        let mut a = HostTensor::zeros(DType::F32, &[16, 8]);
        let mut b = HostTensor::zeros(DType::F32, &[4, 16]);
        let mut c = HostTensor::zeros(DType::F32, &[16, 16]);
        let mut args = [Arg::Host(&mut a), Arg::Host(&mut b), Arg::Host(&mut c)];
        let (i, m) = argument_error(k.launch_args(&mut args, Policy::Default));
        assert_eq!(i, 1);
        assert!(m.contains("`B` has 8 along axis 0, the tensor 4"), "{m}");
    });
}

#[test]
fn the_interpreter_has_no_gpu_memory() {
    let rt = Runtime::new(Backend::interp()).unwrap();
    let Err(Error::Device(m)) = rt.gpu() else {
        panic!("the interpreter gave a GPU");
    };
    assert!(m.contains("Arg::Host"), "{m}");
}

/// A launch on buffers the caller owns leaves the result in them, the same as the host-tensor
/// launch; the inputs are not copied back or changed.
#[test]
#[ignore = "needs a GPU"]
fn device_buffers_the_caller_owns_are_written_in_place() {
    use phobos::DeviceTensor;
    use phobos_ir::MemOrder;
    let dir = tempfile::tempdir().unwrap();
    let rt = Runtime::new(Backend::cuda(0))
        .unwrap()
        .with_db(dir.path().join("kb.sqlite"));
    let module = rt.load_source("axpy.ph", AXPY).unwrap();
    let mut k = module.kernel("axpy").unwrap();
    let n = 1000;
    let gpu = rt.gpu().unwrap();
    let x = DeviceTensor::upload(&gpu, &ramp(n, 1.0), MemOrder::RowMajor).unwrap();
    let y = DeviceTensor::upload(&gpu, &ramp(n, 0.5), MemOrder::RowMajor).unwrap();
    let z = DeviceTensor::alloc(&gpu, DType::F32, &[n], MemOrder::RowMajor).unwrap();
    z.fill_poison().unwrap();
    let mut args = [
        Arg::Device(&x),
        Arg::Device(&y),
        Arg::Device(&z),
        Arg::Scalar(2.0),
    ];
    let first = k.launch_args(&mut args, Policy::Default).unwrap();
    let on_gpu = z.download().unwrap();
    assert!(
        on_gpu
            .data
            .iter()
            .enumerate()
            .all(|(i, v)| *v == i as f64 * 2.5),
        "{:?}",
        &on_gpu.data[..8]
    );
    assert_eq!(x.download().unwrap().data, ramp(n, 1.0).data);

    // Mixed: host Z, device X and Y; same variant, same result.
    let mut hz = HostTensor::zeros(DType::F32, &[n]);
    let mut mixed = [
        Arg::Device(&x),
        Arg::Device(&y),
        Arg::Host(&mut hz),
        Arg::Scalar(2.0),
    ];
    let again = k.launch_args(&mut mixed, Policy::Default).unwrap();
    assert_eq!((again.point, again.compiled), (first.point, false));
    assert_eq!(hz.data, on_gpu.data);

    // A buffer of another element type or memory order is refused before the launch.
    let h = DeviceTensor::alloc(&gpu, DType::F16, &[n], MemOrder::RowMajor).unwrap();
    let mut bad = [
        Arg::Device(&x),
        Arg::Device(&h),
        Arg::Device(&z),
        Arg::Scalar(2.0),
    ];
    let (i, m) = argument_error(k.launch_args(&mut bad, Policy::Default));
    assert_eq!(i, 1);
    assert!(m.contains("f16"), "{m}");
    let small = DeviceTensor {
        buf: gpu.alloc(16).unwrap(),
        dtype: DType::F32,
        shape: vec![n],
        order: MemOrder::RowMajor,
    };
    let mut bad = [
        Arg::Device(&x),
        Arg::Device(&y),
        Arg::Device(&small),
        Arg::Scalar(2.0),
    ];
    let (i, m) = argument_error(k.launch_args(&mut bad, Policy::Default));
    assert_eq!(i, 2);
    assert!(m.contains("holds 16 bytes"), "{m}");
}

#[test]
#[ignore = "needs a GPU"]
fn device_buffers_are_refused_by_the_interpreter() {
    // The interpreter's memory is the host's; a buffer can only be made on a GPU machine.
    let gpu = phobos_gpu::Gpu::new(0).unwrap();
    let x = phobos::DeviceTensor::alloc(&gpu, DType::F32, &[64], phobos_ir::MemOrder::RowMajor)
        .unwrap();
    with_kernel(AXPY, "axpy", |k| {
        let (mut y, mut z) = (
            HostTensor::zeros(DType::F32, &[64]),
            HostTensor::zeros(DType::F32, &[64]),
        );
        let mut args = [
            Arg::Device(&x),
            Arg::Host(&mut y),
            Arg::Host(&mut z),
            Arg::Scalar(1.0),
        ];
        let (i, m) = argument_error(k.launch_args(&mut args, Policy::Default));
        assert_eq!(i, 0);
        assert!(m.contains("the interpreter runs on host memory"), "{m}");
    });
}
