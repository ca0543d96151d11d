//! The lookup-step breakdown (Bourbon Figure 8): one point lookup in [`SAMPLE_EVERY`] (per
//! thread) is timed step by step — memtables, finding candidate files, the filter, the index
//! search (model prediction or fence-pointer search), locating the key (binary search of the
//! slots of the window or block), loading the entry, and reading the value — and the times
//! are added to per-database totals.
//!
//! The steps run deep in the read path (version → table → value log), so the active sample
//! lives in thread-local accumulators: an unsampled lookup pays one thread-local flag read per
//! step and no clock read.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// One lookup in this many (per thread) is broken down.
pub const SAMPLE_EVERY: u32 = 64;

/// A step of a point lookup.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(usize)]
pub enum Step {
    /// Searching the memtables.
    Memtable = 0,
    /// Choosing candidate files level by level (what remains of the file search once the
    /// per-table steps below are subtracted).
    FindFiles = 1,
    /// Bloom filter checks.
    Filter = 2,
    /// The index: model prediction, or the fence-pointer binary search.
    Search = 3,
    /// Binary search of the slots of the model window or the fence block (including loading
    /// and verifying the block).
    Locate = 4,
    /// Reading the found slot and materializing the entry (inline values included).
    Load = 5,
    /// Reading a separated value from the value log.
    ReadValue = 6,
}

/// Number of steps.
pub const STEPS: usize = 7;

/// Names of the steps, in `Step` order.
pub const STEP_NAMES: [&str; STEPS] = [
    "memtable",
    "find_files",
    "filter",
    "search",
    "locate",
    "load",
    "read_value",
];

/// Internal marker: time spent inside `Version::get`, from which `FindFiles` is derived.
const FILES_TOTAL: usize = STEPS;

thread_local! {
    static TICK: Cell<u32> = const { Cell::new(0) };
    static ACTIVE: Cell<bool> = const { Cell::new(false) };
    static ACC: Cell<[u64; STEPS + 1]> = const { Cell::new([0; STEPS + 1]) };
}

/// Starts a sampled lookup on this thread one time in [`SAMPLE_EVERY`]; returns whether it did.
pub(crate) fn begin() -> bool {
    let sampled = TICK.with(|t| {
        let n = t.get();
        t.set(n.wrapping_add(1));
        n % SAMPLE_EVERY == 0
    });
    if sampled {
        ACC.with(|a| a.set([0; STEPS + 1]));
        ACTIVE.with(|a| a.set(true));
    }
    sampled
}

fn add(slot: usize, ns: u64) {
    ACC.with(|a| {
        let mut v = a.get();
        if let Some(x) = v.get_mut(slot) {
            *x += ns;
        }
        a.set(v);
    });
}

/// Runs `f`, charging its time to `step` when a sampled lookup is active on this thread.
pub(crate) fn timed<R>(step: Step, f: impl FnOnce() -> R) -> R {
    timed_slot(step as usize, f)
}

/// Runs the whole file search (`Version::get`); `FindFiles` is this minus the table steps.
pub(crate) fn timed_files<R>(f: impl FnOnce() -> R) -> R {
    timed_slot(FILES_TOTAL, f)
}

fn timed_slot<R>(slot: usize, f: impl FnOnce() -> R) -> R {
    if !ACTIVE.with(Cell::get) {
        return f();
    }
    let start = Instant::now();
    let r = f();
    add(slot, start.elapsed().as_nanos() as u64);
    r
}

/// Per-database totals of sampled lookups.
#[derive(Debug, Default)]
pub(crate) struct BreakdownTotals {
    samples: AtomicU64,
    total_ns: AtomicU64,
    steps_ns: [AtomicU64; STEPS],
}

impl BreakdownTotals {
    /// Ends this thread's sampled lookup, which took `total_ns`, and adds it to the totals.
    pub fn finish(&self, total_ns: u64) {
        ACTIVE.with(|a| a.set(false));
        let acc = ACC.with(Cell::get);
        let table_steps: u64 = [Step::Filter, Step::Search, Step::Locate, Step::Load]
            .iter()
            .map(|s| acc[*s as usize])
            .sum();
        let mut steps = acc;
        steps[Step::FindFiles as usize] = acc[FILES_TOTAL].saturating_sub(table_steps);
        self.samples.fetch_add(1, Ordering::Relaxed);
        self.total_ns.fetch_add(total_ns, Ordering::Relaxed);
        for (total, ns) in self.steps_ns.iter().zip(steps) {
            total.fetch_add(ns, Ordering::Relaxed);
        }
    }

    /// The averages so far.
    pub fn snapshot(&self) -> LookupBreakdown {
        let samples = self.samples.load(Ordering::Relaxed);
        let avg = |ns: u64| ns as f64 / samples.max(1) as f64;
        LookupBreakdown {
            samples,
            avg_total_ns: avg(self.total_ns.load(Ordering::Relaxed)),
            avg_step_ns: std::array::from_fn(|i| avg(self.steps_ns[i].load(Ordering::Relaxed))),
        }
    }
}

/// Average time per step of the sampled point lookups (Bourbon Figure 8).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LookupBreakdown {
    /// Lookups sampled.
    pub samples: u64,
    /// Average nanoseconds of a whole sampled lookup.
    pub avg_total_ns: f64,
    /// Average nanoseconds per step, in [`STEP_NAMES`] order.
    pub avg_step_ns: [f64; STEPS],
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_lookup_in_sample_every_is_broken_down() {
        let totals = BreakdownTotals::default();
        let mut sampled = 0;
        for _ in 0..SAMPLE_EVERY * 3 {
            if begin() {
                sampled += 1;
                timed(Step::Memtable, || std::hint::black_box(1 + 1));
                timed_files(|| timed(Step::Filter, || ()));
                totals.finish(1_000);
            } else {
                // Unsampled: nothing is charged.
                timed(Step::Memtable, || ());
            }
        }
        assert_eq!(sampled, 3);
        let b = totals.snapshot();
        assert_eq!(b.samples, 3);
        assert_eq!(b.avg_total_ns, 1_000.0);
        assert!(b.avg_step_ns.iter().all(|ns| *ns >= 0.0));
    }
}
