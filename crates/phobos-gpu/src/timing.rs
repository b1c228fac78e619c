//! Timing on the device with CUDA events.
//!
//! [`Gpu::time_launches`] warms up, sizes the number of repeats to a time budget, and times each
//! repeat between two events on the stream. With `l2_flush`, a buffer twice the size of L2 is
//! overwritten (`cuMemsetD8Async`) before every repeat, outside the timed region, so that each
//! repeat reads its inputs from DRAM. [`Stats`] summarizes the times (pure, tested).

use crate::device::Gpu;
use crate::error::GpuError;
use cudarc::driver::sys;
use serde::{Deserialize, Serialize};

/// A CUDA event on a [`Gpu`]'s stream.
pub struct Event {
    gpu: Gpu,
    event: sys::CUevent,
}

// SAFETY: events may be used from any thread with their context bound.
unsafe impl Send for Event {}
unsafe impl Sync for Event {}

impl Drop for Event {
    fn drop(&mut self) {
        if self.gpu.inner.ctx.bind_to_thread().is_ok() {
            unsafe {
                let _ = sys::cuEventDestroy_v2(self.event);
            }
        }
    }
}

impl Event {
    /// Records the event on the stream: it completes when the work queued before it does.
    pub fn record(&self) -> Result<(), GpuError> {
        self.gpu.enter()?;
        self.gpu.check("cuEventRecord", unsafe {
            sys::cuEventRecord(self.event, self.gpu.stream()).result()
        })
    }

    /// Milliseconds from `self` to `end`, waiting for `end` to complete.
    pub fn elapsed_ms(&self, end: &Event) -> Result<f32, GpuError> {
        self.gpu.enter()?;
        self.gpu.check("cuEventSynchronize", unsafe {
            sys::cuEventSynchronize(end.event).result()
        })?;
        let mut ms = 0f32;
        self.gpu.check("cuEventElapsedTime", unsafe {
            sys::cuEventElapsedTime_v2(&mut ms, self.event, end.event).result()
        })?;
        Ok(ms)
    }
}

impl Gpu {
    /// A new timing event.
    pub fn event(&self) -> Result<Event, GpuError> {
        self.enter()?;
        let mut event: sys::CUevent = std::ptr::null_mut();
        self.check("cuEventCreate", unsafe {
            sys::cuEventCreate(&mut event, sys::CUevent_flags::CU_EVENT_DEFAULT as u32).result()
        })?;
        Ok(Event {
            gpu: self.clone(),
            event,
        })
    }

    /// Overwrites a buffer of twice the L2 size (allocated on first use), so that the next
    /// kernel finds none of its data in L2. Queued on the stream; not waited for.
    pub fn flush_l2(&self) -> Result<(), GpuError> {
        self.enter()?;
        let (ptr, bytes) = {
            let mut slot =
                self.inner.flush.lock().map_err(|_| {
                    GpuError::Invalid("the L2 flush buffer lock is poisoned".into())
                })?;
            match *slot {
                Some(b) => b,
                None => {
                    let bytes = (2 * self.info().l2_bytes).max(1 << 20) as usize;
                    let mut ptr = 0u64;
                    self.check("cuMemAlloc", unsafe {
                        sys::cuMemAlloc_v2(&mut ptr, bytes).result()
                    })?;
                    *slot = Some((ptr, bytes));
                    (ptr, bytes)
                }
            }
        };
        self.memset_raw(ptr, bytes, 0)
    }

    /// Times `f` (which queues work on this handle's stream, e.g. one launch) with events:
    /// `warmup` untimed calls, then repeats sized so their total is about `budget_ms`, at least
    /// `min_reps` and at most `max_reps` of them, each timed alone, with the L2 flushed before
    /// each when `l2_flush` is set. Returns each repeat's time in milliseconds, in order.
    pub fn time_launches<F>(
        &self,
        mut f: F,
        warmup: u32,
        budget_ms: f64,
        min_reps: u32,
        max_reps: u32,
        l2_flush: bool,
    ) -> Result<Vec<f32>, GpuError>
    where
        F: FnMut() -> Result<(), GpuError>,
    {
        // Warm-up, timed as a whole to size the repeats.
        let (start, end) = (self.event()?, self.event()?);
        start.record()?;
        for _ in 0..warmup.max(1) {
            if l2_flush {
                self.flush_l2()?;
            }
            f()?;
        }
        end.record()?;
        let per_call = start.elapsed_ms(&end)? as f64 / warmup.max(1) as f64;
        let reps = plan_reps(per_call, budget_ms, min_reps, max_reps);
        // All repeats are queued before any is read, so host time between them does not leave
        // the device idle in the timed regions.
        let events = (0..2 * reps)
            .map(|_| self.event())
            .collect::<Result<Vec<_>, _>>()?;
        for pair in events.chunks(2) {
            if l2_flush {
                self.flush_l2()?;
            }
            pair[0].record()?;
            f()?;
            pair[1].record()?;
        }
        events
            .chunks(2)
            .map(|pair| pair[0].elapsed_ms(&pair[1]))
            .collect()
    }
}

/// Repeats for a time budget: `budget / per_call`, clamped to `[min_reps, max_reps]` (and at
/// least 1).
pub fn plan_reps(per_call_ms: f64, budget_ms: f64, min_reps: u32, max_reps: u32) -> u32 {
    let max_reps = max_reps.max(1);
    let min_reps = min_reps.clamp(1, max_reps);
    let want = if per_call_ms > 0.0 && per_call_ms.is_finite() {
        (budget_ms / per_call_ms).ceil()
    } else {
        max_reps as f64
    };
    (want.max(0.0).min(u32::MAX as f64) as u32).clamp(min_reps, max_reps)
}

/// Summary statistics of repeated timings, in milliseconds.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    pub n: usize,
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub mean: f64,
    /// 10th and 90th percentiles (linear interpolation between order statistics).
    pub p10: f64,
    pub p90: f64,
    /// (p90 - p10) / median: the spread that decides whether two variants differ.
    pub rel_spread: f64,
}

impl Stats {
    /// The statistics of `times`; `None` when empty or when a time is not finite.
    pub fn of(times: &[f32]) -> Option<Stats> {
        if times.is_empty() || times.iter().any(|t| !t.is_finite()) {
            return None;
        }
        let mut v: Vec<f64> = times.iter().map(|&t| t as f64).collect();
        v.sort_by(|a, b| a.total_cmp(b));
        let median = quantile(&v, 0.5);
        let (p10, p90) = (quantile(&v, 0.1), quantile(&v, 0.9));
        Some(Stats {
            n: v.len(),
            median,
            min: v[0],
            max: v[v.len() - 1],
            mean: v.iter().sum::<f64>() / v.len() as f64,
            p10,
            p90,
            rel_spread: if median > 0.0 {
                (p90 - p10) / median
            } else {
                0.0
            },
        })
    }
}

/// The q-quantile of sorted values, interpolating linearly (NumPy's default).
fn quantile(sorted: &[f64], q: f64) -> f64 {
    let pos = q * (sorted.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_of_known_values() {
        let s = Stats::of(&[5.0, 1.0, 3.0, 2.0, 4.0]).unwrap();
        assert_eq!(s.n, 5);
        assert_eq!(s.median, 3.0);
        assert_eq!((s.min, s.max), (1.0, 5.0));
        assert_eq!(s.mean, 3.0);
        assert!((s.p10 - 1.4).abs() < 1e-12, "{}", s.p10);
        assert!((s.p90 - 4.6).abs() < 1e-12, "{}", s.p90);
        assert!((s.rel_spread - 3.2 / 3.0).abs() < 1e-12);
        let even = Stats::of(&[1.0, 2.0, 3.0, 10.0]).unwrap();
        assert_eq!(even.median, 2.5);
        let one = Stats::of(&[0.25]).unwrap();
        assert_eq!(
            (one.median, one.p10, one.p90, one.rel_spread),
            (0.25, 0.25, 0.25, 0.0)
        );
    }

    #[test]
    fn stats_refuse_empty_and_nan() {
        assert_eq!(Stats::of(&[]), None);
        assert_eq!(Stats::of(&[1.0, f32::NAN]), None);
    }

    #[test]
    fn repeats_follow_the_budget_within_bounds() {
        assert_eq!(plan_reps(0.1, 100.0, 10, 10_000), 1000);
        assert_eq!(plan_reps(50.0, 100.0, 10, 10_000), 10);
        assert_eq!(plan_reps(0.0001, 100.0, 10, 500), 500);
        assert_eq!(plan_reps(0.0, 100.0, 10, 500), 500);
        assert_eq!(plan_reps(1.0, 100.0, 0, 0), 1);
        assert_eq!(plan_reps(f64::NAN, 100.0, 3, 7), 7);
    }
}
