//! Per-thread control flow written in Phobos, against a host model of each thread; runtime
//! errors from source, with spans that point at the right text.

mod common;

use common::ph::{example, kernel};
use common::run_ok;
use phobos_interp::host::random_tensor;
use phobos_interp::{Args, Config, Error};
use phobos_ir::{DType, HostTensor};

const SRC: &str = r#"
@launch(64)
kernel divergent_if(O: tensor<i32>[64]) {
  let t = ctx.thread
  var x: i32 = 0
  if t % 3 == 0 {
    x = t * 2
  } else if t % 3 == 1 {
    x = -t
  } else {
    x = 7
  }
  O[t] = x
}

@launch(64)
kernel collatz(O: tensor<i32>[64]) {
  var n = ctx.thread + 1
  var c = 0
  while n != 1 {
    if n % 2 == 0 {
      n = n / 2
    } else {
      n = 3 * n + 1
    }
    c += 1
  }
  O[ctx.thread] = c
}

@launch(64)
kernel break_continue(O: tensor<i32>[64]) {
  let t = ctx.thread
  var s = 0
  for<unroll 4> i in range(0, 40) {
    if i >= t {
      break
    }
    if i % 6 == 0 {
      continue
    }
    if i % 2 == 0 {
      s += i
    }
  }
  O[t] = s
}

@launch(64)
kernel nested(O: tensor<i32>[64]) {
  let t = ctx.thread
  var s = 0
  for j in range(0, 5) {
    var i = 0
    while i < 10 {
      if i * j > t {
        break
      }
      s += 1
      i += 1
    }
  }
  O[t] = s
}

@launch(64)
kernel strided(O: tensor<i32>[64]) {
  let t = ctx.thread
  var s = 0
  for i in range(t, 3 * t + 1, t % 4 + 1) {
    if i >= 50 {
      break
    }
    s += i
  }
  O[t] = s
}
"#;

fn outputs(name: &str) -> Vec<i64> {
    let k = kernel(SRC, Some(name), None, None);
    let out = run_ok(&k, Args::new().push(HostTensor::zeros(DType::I32, &[64])));
    out.get("O")
        .unwrap()
        .data
        .iter()
        .map(|&x| x as i64)
        .collect()
}

fn model(f: impl Fn(i64) -> i64) -> Vec<i64> {
    (0..64).map(f).collect()
}

#[test]
fn divergent_if_else_chains() {
    let expected = model(|t| match t % 3 {
        0 => t * 2,
        1 => -t,
        _ => 7,
    });
    assert_eq!(outputs("divergent_if"), expected);
}

#[test]
fn divergent_while() {
    let expected = model(|t| {
        let (mut n, mut c) = (t + 1, 0);
        while n != 1 {
            n = if n % 2 == 0 { n / 2 } else { 3 * n + 1 };
            c += 1;
        }
        c
    });
    assert_eq!(outputs("collatz"), expected);
}

#[test]
fn per_thread_break_and_continue() {
    let expected = model(|t| (0..40.min(t)).filter(|i| i % 6 != 0 && i % 2 == 0).sum());
    assert_eq!(outputs("break_continue"), expected);
}

#[test]
fn break_leaves_the_inner_loop_only() {
    let expected = model(|t| {
        (0..5)
            .map(|j| (0..10).take_while(|i| i * j <= t).count() as i64)
            .sum()
    });
    assert_eq!(outputs("nested"), expected);
}

#[test]
fn per_thread_loop_bounds() {
    let expected = model(|t| {
        (t..3 * t + 1)
            .step_by((t % 4 + 1) as usize)
            .take_while(|&i| i < 50)
            .sum()
    });
    assert_eq!(outputs("strided"), expected);
}

const ERRORS: &str = r#"
@launch(32)
kernel div_zero(O: tensor<i32>[32]) {
  let t = ctx.thread
  O[t] = 10 / (t - 3)
}

@launch(32)
kernel guarded(O: tensor<i32>[32]) {
  let t = ctx.thread
  if t != 3 {
    O[t] = 10 / (t - 3)
  }
}

@launch(32)
kernel forever(O: tensor<i32>[32]) {
  var x = ctx.thread
  while x < 100 {
    x = x * 1
  }
  O[ctx.thread] = x
}
"#;

fn run_err(name: &str, config: &Config) -> Result<Vec<f64>, Error> {
    let k = kernel(ERRORS, Some(name), None, None);
    phobos_interp::run(
        &k,
        Args::new().push(HostTensor::zeros(DType::I32, &[32])),
        config,
    )
    .map(|o| o.get("O").unwrap().data.clone())
}

fn text(span: phobos_syntax::Span) -> &'static str {
    &ERRORS[span.range()]
}

#[test]
fn division_by_zero_points_at_the_division() {
    let err = run_err("div_zero", &Config::default()).unwrap_err();
    assert!(matches!(err, Error::DivisionByZero { .. }), "{err}");
    assert_eq!(text(err.span().unwrap()), "10 / (t - 3)");
    // The same division in threads that skip it is no error.
    let out = run_err("guarded", &Config::default()).unwrap();
    let expected: Vec<f64> = (0..32)
        .map(|t: i64| if t == 3 { 0.0 } else { (10 / (t - 3)) as f64 })
        .collect();
    assert_eq!(out, expected);
}

#[test]
fn a_loop_that_never_ends_hits_the_step_budget() {
    let err = run_err("forever", &Config { step_budget: 5_000 }).unwrap_err();
    assert!(
        matches!(err, Error::StepBudget { budget: 5_000, .. }),
        "{err}"
    );
    assert!(
        text(err.span().unwrap()).starts_with("while x < 100"),
        "{:?}",
        text(err.span().unwrap())
    );
}

#[test]
fn disagreeing_extents_name_both_tensors() {
    let k = kernel(&example("gemm.ph"), None, None, None);
    let args = Args::new()
        .push(random_tensor(DType::F32, &[16, 24], 1))
        .push(random_tensor(DType::F32, &[20, 8], 2))
        .push(HostTensor::zeros(DType::F32, &[16, 8]));
    let err = phobos_interp::run(&k, args, &Config::default()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "the dim `K` disagrees: `A` (axis 1) has extent 24, but `B` (axis 0) has 20"
    );
}
