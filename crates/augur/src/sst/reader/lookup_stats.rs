//! Per-table lookup statistics: exact counts of point lookups per path (model or baseline)
//! and outcome (positive: the key was found; negative: filtered out or absent), plus sampled
//! latencies of each, the inputs of Bourbon's cost–benefit analyzer (§4.4.2) and of
//! `Db::stats()`. A lookup is timed only one time in [`SAMPLE_EVERY`] (a per-thread tick, so
//! the fast path pays one thread-local increment and no clock read), and an optional
//! trigger fires once after the table's k-th lookup past its bloom filter (lazy learning).

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Instant;

/// One lookup in this many (per thread) is timed.
pub const SAMPLE_EVERY: u32 = 64;

thread_local! {
    static TICK: Cell<u32> = const { Cell::new(0) };
}

/// Whether the lookup about to run on this thread should be timed.
pub(crate) fn sample_this_lookup() -> bool {
    TICK.with(|t| {
        let n = t.get();
        t.set(n.wrapping_add(1));
        n % SAMPLE_EVERY == 0
    })
}

/// Counts and sampled latency of the lookups of one path with one outcome.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PathCounts {
    /// Lookups that took this path with this outcome.
    pub lookups: u64,
    /// How many of them were timed.
    pub samples: u64,
    /// Total nanoseconds of the timed ones.
    pub sampled_ns: u64,
}

impl PathCounts {
    /// Average nanoseconds of the timed lookups, or `None` without samples.
    pub fn avg_ns(&self) -> Option<f64> {
        (self.samples > 0).then(|| self.sampled_ns as f64 / self.samples as f64)
    }

    /// Adds `other` into `self`.
    pub fn add(&mut self, other: &PathCounts) {
        self.lookups += other.lookups;
        self.samples += other.samples;
        self.sampled_ns += other.sampled_ns;
    }
}

/// A snapshot of a table's lookup statistics: `[negative, positive]` per path.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LookupCounts {
    /// Lookups on the baseline path (fence pointers): `[negative, positive]`.
    pub baseline: [PathCounts; 2],
    /// Lookups on the model path: `[negative, positive]`.
    pub model: [PathCounts; 2],
}

impl LookupCounts {
    /// Positive lookups on both paths.
    pub fn positive(&self) -> u64 {
        self.baseline[1].lookups + self.model[1].lookups
    }

    /// Negative lookups on both paths.
    pub fn negative(&self) -> u64 {
        self.baseline[0].lookups + self.model[0].lookups
    }

    /// Lookups served on the model path.
    pub fn model_lookups(&self) -> u64 {
        self.model[0].lookups + self.model[1].lookups
    }

    /// Lookups served on the baseline path.
    pub fn baseline_lookups(&self) -> u64 {
        self.baseline[0].lookups + self.baseline[1].lookups
    }

    /// Adds `other` into `self`.
    pub fn add(&mut self, other: &LookupCounts) {
        for i in 0..2 {
            self.baseline[i].add(&other.baseline[i]);
            self.model[i].add(&other.model[i]);
        }
    }
}

/// A callback run once, on the lookup thread, after the table served `after` lookups.
struct Trigger {
    after: u64,
    fired: AtomicBool,
    action: Box<dyn Fn() + Send + Sync>,
}

/// Live counters of one table: `[path][outcome]`, path 0 = baseline, 1 = model; outcome
/// 0 = negative, 1 = positive.
#[derive(Default)]
pub(crate) struct LookupStats {
    lookups: [[AtomicU64; 2]; 2],
    /// Lookups that passed the bloom filter (what the trigger counts).
    past_filter: AtomicU64,
    samples: [[AtomicU64; 2]; 2],
    sampled_ns: [[AtomicU64; 2]; 2],
    trigger: OnceLock<Trigger>,
}

impl LookupStats {
    /// Records one lookup; `started` is set when it was sampled; `past_filter` when the
    /// bloom filter let it through to the index.
    pub(crate) fn record(
        &self,
        model: bool,
        found: bool,
        past_filter: bool,
        started: Option<Instant>,
    ) {
        let (p, o) = (usize::from(model), usize::from(found));
        if let Some(cell) = self.lookups.get(p).and_then(|c| c.get(o)) {
            cell.fetch_add(1, Ordering::Relaxed);
        }
        if !past_filter {
            return self.sample(p, o, started);
        }
        let reached = self.past_filter.fetch_add(1, Ordering::Relaxed) + 1;
        self.sample(p, o, started);
        if let Some(t) = self.trigger.get() {
            if !t.fired.load(Ordering::Relaxed)
                && reached >= t.after
                && !t.fired.swap(true, Ordering::AcqRel)
            {
                (t.action)();
            }
        }
    }

    fn sample(&self, p: usize, o: usize, started: Option<Instant>) {
        if let Some(t0) = started {
            let ns = u64::try_from(t0.elapsed().as_nanos()).unwrap_or(u64::MAX);
            if let (Some(s), Some(n)) = (
                self.samples.get(p).and_then(|c| c.get(o)),
                self.sampled_ns.get(p).and_then(|c| c.get(o)),
            ) {
                s.fetch_add(1, Ordering::Relaxed);
                n.fetch_add(ns, Ordering::Relaxed);
            }
        }
    }

    /// Arms the once-only trigger (a second call is ignored): it fires once `after`
    /// lookups passed the bloom filter — at once when that many already did.
    pub(crate) fn arm(&self, after: u64, action: Box<dyn Fn() + Send + Sync>) {
        let armed = self
            .trigger
            .set(Trigger {
                after,
                fired: AtomicBool::new(false),
                action,
            })
            .is_ok();
        if armed {
            if let Some(t) = self.trigger.get() {
                if self.past_filter.load(Ordering::Relaxed) >= after
                    && !t.fired.swap(true, Ordering::AcqRel)
                {
                    (t.action)();
                }
            }
        }
    }

    /// A snapshot of the counters.
    pub(crate) fn snapshot(&self) -> LookupCounts {
        let get = |a: &[[AtomicU64; 2]; 2], p: usize, o: usize| {
            a.get(p)
                .and_then(|c| c.get(o))
                .map_or(0, |c| c.load(Ordering::Relaxed))
        };
        let counts = |p: usize| {
            [0, 1].map(|o| PathCounts {
                lookups: get(&self.lookups, p, o),
                samples: get(&self.samples, p, o),
                sampled_ns: get(&self.sampled_ns, p, o),
            })
        };
        LookupCounts {
            baseline: counts(0),
            model: counts(1),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn counts_per_path_and_outcome() {
        let s = LookupStats::default();
        s.record(false, true, true, None);
        s.record(false, false, false, Some(Instant::now()));
        s.record(true, true, true, Some(Instant::now()));
        let c = s.snapshot();
        assert_eq!((c.positive(), c.negative()), (2, 1));
        assert_eq!((c.baseline_lookups(), c.model_lookups()), (2, 1));
        assert_eq!(c.baseline[0].samples, 1);
        assert_eq!(c.baseline[1].samples, 0);
        assert_eq!(c.model[1].samples, 1);
        assert!(c.baseline[1].avg_ns().is_none());
    }

    #[test]
    fn trigger_fires_once_at_the_kth_lookup_past_the_filter() {
        let s = LookupStats::default();
        let fired = Arc::new(AtomicU64::new(0));
        let f = fired.clone();
        s.arm(
            3,
            Box::new(move || {
                f.fetch_add(1, Ordering::SeqCst);
            }),
        );
        s.record(false, false, true, None);
        s.record(false, true, true, None);
        // Lookups the bloom filter rejects do not count.
        for _ in 0..10 {
            s.record(false, false, false, None);
        }
        assert_eq!(fired.load(Ordering::SeqCst), 0);
        s.record(false, true, true, None);
        assert_eq!(fired.load(Ordering::SeqCst), 1);
        s.record(true, true, true, None);
        assert_eq!(fired.load(Ordering::SeqCst), 1);
        // Armed after the threshold: fires immediately.
        let s2 = LookupStats::default();
        s2.record(false, true, true, None);
        let f = fired.clone();
        s2.arm(
            1,
            Box::new(move || {
                f.fetch_add(1, Ordering::SeqCst);
            }),
        );
        assert_eq!(fired.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn sampling_times_one_lookup_in_sample_every() {
        let sampled = (0..SAMPLE_EVERY * 4)
            .filter(|_| sample_this_lookup())
            .count();
        assert_eq!(sampled, 4);
    }
}
