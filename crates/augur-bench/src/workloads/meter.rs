//! Timing of a benchmark's operations: the wall time of its measured part, less the harness
//! work run outside it ([`Meter::exclude`]), and, with `--histogram`, every operation's latency.
//! Used by every benchmark of `workloads` and by `ycsb.rs`.

use crate::report::Outcome;
use hdrhistogram::Histogram;
use std::time::{Duration, Instant};

/// Per-operation timing.
pub(crate) struct Meter {
    start: Instant,
    last: Instant,
    /// Time spent in [`Meter::exclude`]d harness work, subtracted from the total.
    excluded: Duration,
    hist: Option<Histogram<u64>>,
}

impl Meter {
    pub(crate) fn new(record: bool) -> Self {
        let now = Instant::now();
        Meter {
            start: now,
            last: now,
            excluded: Duration::ZERO,
            // Three significant digits from 1 ns to one hour; creation cannot fail with
            // these bounds, and if it did we would simply not record.
            hist: if record {
                Histogram::new_with_bounds(1, 3_600_000_000_000, 3).ok()
            } else {
                None
            },
        }
    }

    /// Records one operation; returns its latency in nanoseconds (0 when not recording).
    pub(crate) fn op_done(&mut self) -> u64 {
        match &mut self.hist {
            Some(h) => {
                let now = Instant::now();
                let ns = now.duration_since(self.last).as_nanos() as u64;
                h.saturating_record(ns);
                self.last = now;
                ns
            }
            None => 0,
        }
    }

    /// The outcome of meters that ran concurrently (one per thread): the time is the slowest
    /// thread's, so `micros_per_op` is wall time per operation over all threads (db_bench's
    /// merged statistics); the latency histograms are added.
    pub(crate) fn combine(meters: Vec<Meter>, name: &str, ops: u64, bytes: u64) -> Outcome {
        let mut seconds = 0.0f64;
        let mut hist: Option<Histogram<u64>> = None;
        for m in meters {
            let own = m.start.elapsed().saturating_sub(m.excluded).as_secs_f64();
            seconds = seconds.max(own);
            hist = match (hist, m.hist) {
                (Some(mut a), Some(b)) => {
                    // Same bounds, so adding cannot fail; if it did, keep what we have.
                    let _ = a.add(&b);
                    Some(a)
                }
                (a, b) => a.or(b),
            };
        }
        Outcome {
            name: name.to_string(),
            ops,
            seconds,
            bytes,
            found: None,
            write_amplification: None,
            latency_ns: hist,
            extra: Vec::new(),
            record_only: Vec::new(),
            stats: None,
        }
    }

    /// Runs harness work `f` (e.g. materializing the next keys) outside the measured time:
    /// neither the total nor the next operation's latency includes it.
    pub(crate) fn exclude<T>(&mut self, f: impl FnOnce() -> T) -> T {
        let started = Instant::now();
        let out = f();
        let now = Instant::now();
        self.excluded += now.duration_since(started);
        self.last = now;
        out
    }

    pub(crate) fn finish(self, name: &str, ops: u64, bytes: u64) -> Outcome {
        Meter::combine(vec![self], name, ops, bytes)
    }
}
