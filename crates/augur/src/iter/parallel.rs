//! Parallel range scans: one large range cut into partitions ([`super::split`]) and scanned
//! by several threads over one shared state, so every partition reads the same snapshot.
//!
//! Each partition is scanned by its own [`Scan`], whose first seek goes through the files'
//! learned indexes (the follow-up's "learned seeks in every worker"). Partitions are handed
//! out from a shared counter: with more partitions than threads, a thread that finishes early
//! takes the next partition instead of waiting (work sharing, the simple form of the work
//! stealing the follow-up proposes). The caller's thread is one of the workers; the others
//! are scoped threads that end with the call.

use super::context::ScanState;
use super::scan::{KeyRange, Scan};
use super::snapshot::Snapshot;
use super::split::Split;
use crate::error::{Error, Result};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

/// Runs `work` on a scan of every partition (`forward`, or backward) with up to `threads`
/// threads; returns the results in partition order, or the first error.
pub(crate) fn run<T, F>(
    state: &Arc<ScanState>,
    partitions: Vec<KeyRange>,
    threads: usize,
    forward: bool,
    readahead: usize,
    work: &F,
) -> Result<Vec<T>>
where
    T: Send,
    F: Fn(usize, &mut Scan) -> Result<T> + Sync,
{
    let n = partitions.len();
    let results: Vec<Mutex<Option<Result<T>>>> = (0..n).map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let worker = || loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        let Some(range) = partitions.get(i) else {
            return;
        };
        if failed.load(Ordering::Relaxed) {
            return;
        }
        let mut scan = Scan::new(state.clone(), range.clone(), forward, readahead);
        let r = work(i, &mut scan);
        if r.is_err() {
            failed.store(true, Ordering::Relaxed);
        }
        if let Some(slot) = results.get(i) {
            *slot.lock() = Some(r);
        }
    };
    std::thread::scope(|s| {
        for _ in 1..threads.min(n) {
            // A thread that cannot be started leaves its share to the others.
            let _ = std::thread::Builder::new()
                .name("augur-scan".into())
                .spawn_scoped(s, worker);
        }
        worker();
    });
    let results: Vec<Option<Result<T>>> = results.into_iter().map(Mutex::into_inner).collect();
    let mut out = Vec::with_capacity(n);
    let mut skipped = false;
    for r in results {
        match r {
            Some(Ok(v)) => out.push(v),
            Some(Err(e)) => return Err(e),
            None => skipped = true,
        }
    }
    if skipped {
        // Only an error stops the workers early, and it was returned above.
        return Err(Error::InvalidArgument(
            "parallel scan: a partition was not scanned".into(),
        ));
    }
    Ok(out)
}

/// How [`crate::Db::scan_parallel`] runs.
#[derive(Debug, Clone)]
pub struct ParallelScanOptions {
    /// Threads scanning partitions, the caller's included (at least 1). Default 2.
    pub threads: usize,
    /// Partitions to cut the range into; 0 means one per thread. More partitions than
    /// threads let a thread that finishes early take more work. Default 0.
    pub partitions: usize,
    /// How the range is cut. Default [`Split::Balanced`].
    pub split: Split,
    /// Scan every partition backward and return the results last partition first (so the
    /// concatenation is the range in reverse key order). Default `false`.
    pub reverse: bool,
    /// Read as of this snapshot (default: the current state).
    pub snapshot: Option<Snapshot>,
    /// Most separated values read ahead per batch in each partition (default
    /// `Options::scan_readahead`).
    pub value_readahead: Option<usize>,
}

impl Default for ParallelScanOptions {
    fn default() -> Self {
        ParallelScanOptions {
            threads: 2,
            partitions: 0,
            split: Split::Balanced,
            reverse: false,
            snapshot: None,
            value_readahead: None,
        }
    }
}

impl ParallelScanOptions {
    /// Partitions to cut the range into.
    ///
    /// # Errors
    /// `InvalidArgument` when `threads` is 0 or either count is above 4096.
    pub(crate) fn partition_count(&self) -> Result<usize> {
        if self.threads == 0 || self.threads > 4096 || self.partitions > 4096 {
            return Err(Error::InvalidArgument(format!(
                "parallel scan: threads must be 1..=4096 and partitions 0..=4096 (got {} and {})",
                self.threads, self.partitions
            )));
        }
        Ok(if self.partitions == 0 {
            self.threads
        } else {
            self.partitions
        })
    }
}
