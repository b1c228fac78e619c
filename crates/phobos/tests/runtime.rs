//! The runtime's policies on the interpreter: the default point, stored winners (only for the
//! same generated code), the config table's nearest entry for an unseen problem, retuning.

use phobos::{ArgValue, Backend, DType, HostTensor, Policy, Runtime, Source};
use phobos_tune::deploy::{ConfigTable, TABLE_FORMAT};
use phobos_tune::store::PHOBOS_VERSION;
use phobos_tune::Store;

const SCALE: &str = "@autotune(BLOCK in [32, 64, 128])\n\
                     kernel scale(X: tensor<f32>[N], Y: tensor<f32>[N]) {\n  \
                     let o = ctx.block.x * BLOCK\n  \
                     Y[o :+ BLOCK] = X[o :+ BLOCK] * 2.0\n\
                     }\n";

fn args(n: usize) -> [ArgValue; 2] {
    let x: Vec<f64> = (0..n).map(|i| i as f64).collect();
    [
        ArgValue::Tensor(HostTensor::from_f64(DType::F32, &[n], &x)),
        ArgValue::Tensor(HostTensor::zeros(DType::F32, &[n])),
    ]
}

fn doubled(a: &[ArgValue; 2]) -> bool {
    let (x, y) = (a[0].tensor().unwrap(), a[1].tensor().unwrap());
    x.data.iter().zip(&y.data).all(|(x, y)| *y == 2.0 * x)
}

/// Every step in one test: the generator tag is read from the environment, for the process.
#[test]
fn policies_stored_winners_tables_and_changed_code() {
    std::env::remove_var(phobos_tune::backend::GENERATOR_TAG_ENV);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("kb.sqlite");
    let rt = Runtime::new(Backend::interp()).unwrap().with_db(&db);
    let module = rt.load_source("scale.ph", SCALE).unwrap();
    let mut k = module.kernel("scale").unwrap();

    // Default: the space's default point (the first choice), compiled once.
    let mut a = args(300);
    let d = k.launch(&mut a, Policy::Default).unwrap();
    assert_eq!(
        (d.source, d.config(), d.compiled),
        (Source::Default, "BLOCK=32".into(), true)
    );
    assert!(doubled(&a));
    // UseStored with nothing stored falls back to it, and reuses the compiled variant.
    let u = k.launch(&mut args(300), Policy::UseStored).unwrap();
    assert_eq!(
        (u.source, u.config(), u.compiled),
        (Source::Default, "BLOCK=32".into(), false)
    );

    // TuneOnFirstUse tunes once, then finds the winner stored.
    let t = k.launch(&mut args(300), Policy::TuneOnFirstUse).unwrap();
    assert_eq!(t.source, Source::Tuned);
    let s = k.launch(&mut args(300), Policy::UseStored).unwrap();
    assert_eq!((s.source, &s.point), (Source::Stored, &t.point));
    // Retune measures again.
    let rows = Store::open(&db).unwrap().measurement_count().unwrap();
    let r = k.launch(&mut args(300), Policy::Retune).unwrap();
    assert_eq!(r.source, Source::Tuned);
    assert!(Store::open(&db).unwrap().measurement_count().unwrap() > rows);

    // The winners as a table; a runtime with an empty database and the table takes the entry
    // of the nearest problem for N=260 (the bucket of 300) without tuning.
    let kernel_hash = phobos_tune::hash::kernel_hash(SCALE, "scale");
    let entries = Store::open(&db)
        .unwrap()
        .winners(&kernel_hash, PHOBOS_VERSION)
        .unwrap();
    assert_eq!(entries.len(), 1);
    let table = ConfigTable {
        format: TABLE_FORMAT.into(),
        kernel: "scale".into(),
        kernel_hash,
        phobos_version: PHOBOS_VERSION.into(),
        entries,
    };
    let path = dir.path().join("table.json");
    table.write(&path).unwrap();
    let rt2 = Runtime::new(Backend::interp())
        .unwrap()
        .with_db(dir.path().join("empty.sqlite"))
        .with_table(&path)
        .unwrap();
    let module2 = rt2.load_source("scale.ph", SCALE).unwrap();
    let mut k2 = module2.kernel("scale").unwrap();
    let mut a = args(260);
    let e = k2.launch(&mut a, Policy::UseStored).unwrap();
    assert_eq!(
        (e.source, e.config()),
        (Source::Table, table.entries[0].config.clone())
    );
    assert!(doubled(&a));
    assert!(!dir.path().join("empty.sqlite").exists(), "nothing tuned");

    // Once the generated code changes, neither the stored winner nor the table entry is used.
    std::env::set_var(phobos_tune::backend::GENERATOR_TAG_ENV, "changed");
    let mut k3 = module.kernel("scale").unwrap();
    let c = k3.launch(&mut args(300), Policy::UseStored).unwrap();
    assert_eq!(c.source, Source::Default);
    let c = k3.launch(&mut args(300), Policy::TuneOnFirstUse).unwrap();
    assert_eq!(c.source, Source::Tuned);
    let mut k4 = module2.kernel("scale").unwrap();
    assert_eq!(
        k4.launch(&mut args(260), Policy::UseStored).unwrap().source,
        Source::Default
    );
    std::env::remove_var(phobos_tune::backend::GENERATOR_TAG_ENV);
}

#[test]
fn wrong_arguments_are_refused_by_index() {
    let rt = Runtime::new(Backend::interp())
        .unwrap()
        .with_db("/nonexistent/kb.sqlite");
    let module = rt.load_source("scale.ph", SCALE).unwrap();
    let mut k = module.kernel("scale").unwrap();
    let mut one = [ArgValue::Scalar(1.0)];
    assert_eq!(
        k.launch(&mut one, Policy::Default).unwrap_err().to_string(),
        "argument 1: `scale` takes 2 arguments, 1 given"
    );
    let mut bad = [ArgValue::Scalar(1.0), ArgValue::Scalar(2.0)];
    assert_eq!(
        k.launch(&mut bad, Policy::Default).unwrap_err().to_string(),
        "argument 0: `X` expects a tensor of f32 with 1 dims"
    );
    assert!(matches!(
        module.kernel("nope"),
        Err(phobos::Error::Kernel(_))
    ));
    let bad_source = rt.load_source("bad.ph", "kernel k(X: tensor<f32>[N]) {\n");
    match bad_source {
        Err(phobos::Error::Diagnostics(text)) => assert!(text.contains("bad.ph:1:"), "{text}"),
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("accepted"),
    }
}

/// Element-type parameters follow the tensors: f16 tensors bind `T=f16` (the default, f32,
/// stays implicit, as phobos-kbench keys problems), scalars pass by name.
#[test]
fn type_parameters_follow_the_tensors() {
    let src = "@autotune(BLOCK in [32, 64])\n\
               kernel axpy<T = f32>(a: f32, X: tensor<T>[N], Y: tensor<T>[N]) {\n  \
               let o = ctx.block.x * BLOCK\n  \
               Y[o :+ BLOCK] = T(f32(X[o :+ BLOCK]) * a)\n\
               }\n";
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("kb.sqlite");
    let rt = Runtime::new(Backend::interp()).unwrap().with_db(&db);
    let module = rt.load_source("axpy.ph", src).unwrap();
    let mut k = module.kernel("axpy").unwrap();
    for dtype in [DType::F16, DType::F32] {
        let x: Vec<f64> = (0..100).map(|i| i as f64).collect();
        let mut a = [
            ArgValue::Scalar(0.5),
            ArgValue::Tensor(HostTensor::from_f64(dtype, &[100], &x)),
            ArgValue::Tensor(HostTensor::zeros(dtype, &[100])),
        ];
        let r = k.launch(&mut a, Policy::TuneOnFirstUse).unwrap();
        assert_eq!(r.source, Source::Tuned);
        assert_eq!(a[2].tensor().unwrap().data[99], 49.5);
    }
    let problems: Vec<String> = Store::open(&db)
        .unwrap()
        .measurement_rows()
        .unwrap()
        .into_iter()
        .map(|r| r.0)
        .collect();
    assert!(problems.iter().any(|p| p.contains("T=f16")), "{problems:?}");
    assert!(problems.iter().any(|p| !p.contains("T=")), "{problems:?}");
}
