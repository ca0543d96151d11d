//! The learning subsystem's ledger: per level, what the files that died did over their
//! lifetime (lookups per path and outcome with sampled times, sizes, lifetimes) and what the
//! learner did (models built, skipped, wasted; training time). The cost–benefit analyzer
//! reads its [`LevelEstimates`]; `Db::stats()` reports it.

use super::cost_benefit::LevelEstimates;
use crate::sst::{LearnReport, LookupCounts};
use crate::version::TableFile;
use parking_lot::Mutex;
use std::time::Duration;

/// Accumulated history of one level.
#[derive(Debug, Clone, Default)]
pub(crate) struct LevelHistory {
    /// Files removed from the level (not moved) since open.
    pub dead_files: u64,
    /// Sum of their lifetimes (ns).
    pub dead_lifetime_ns: u128,
    /// Dead files that lived at least `T_wait`: the analyzer's "finished files".
    pub finished_files: u64,
    /// Total bytes of the finished files.
    pub finished_bytes: u64,
    /// Lookups of the finished files.
    pub finished_lookups: LookupCounts,
    /// Lookups of every dead file (for the per-path latency averages).
    pub dead_lookups: LookupCounts,
    /// Models trained by the learner (or `learn_all`) for files of this level.
    pub models_built: u64,
    /// Files the analyzer decided not to learn.
    pub models_skipped: u64,
    /// Files that died with a model that never served a lookup.
    pub models_wasted: u64,
    /// Files that died before the learner got to them.
    pub died_before_learning: u64,
    /// Nanoseconds spent training.
    pub learn_ns: u64,
}

/// The ledger, shared by the learner threads and the version set's listener.
#[derive(Debug)]
pub(crate) struct Book {
    wait: Duration,
    levels: Mutex<Vec<LevelHistory>>,
    /// Keys trained and nanoseconds spent: the per-key training cost.
    trained: Mutex<(u64, u64)>,
}

impl Book {
    /// An empty ledger; files living less than `wait` do not count as finished.
    pub fn new(num_levels: usize, wait: Duration) -> Self {
        Book {
            wait,
            levels: Mutex::new(vec![LevelHistory::default(); num_levels]),
            trained: Mutex::new((0, 0)),
        }
    }

    fn with_level<R>(&self, level: usize, f: impl FnOnce(&mut LevelHistory) -> R) -> Option<R> {
        self.levels.lock().get_mut(level).map(f)
    }

    /// Records that `file` left `level` for good (compacted away).
    pub fn file_died(&self, level: usize, file: &TableFile) {
        let table = &file.table;
        let lifetime = table.opened_at().elapsed();
        let lookups = table.lookup_counts();
        let wasted = table.has_model() && lookups.model_lookups() == 0;
        self.with_level(level, |h| {
            h.dead_files += 1;
            h.dead_lifetime_ns += lifetime.as_nanos();
            h.dead_lookups.add(&lookups);
            if lifetime >= self.wait {
                h.finished_files += 1;
                h.finished_bytes += file.meta.file_size;
                h.finished_lookups.add(&lookups);
            }
            if wasted {
                h.models_wasted += 1;
            }
        });
    }

    /// Records a trained model.
    pub fn learned(&self, level: usize, report: &LearnReport) {
        self.with_level(level, |h| {
            h.models_built += 1;
            h.learn_ns += report.train_ns;
        });
        let mut t = self.trained.lock();
        t.0 += report.keys;
        t.1 += report.train_ns;
    }

    /// Records a file the analyzer chose not to learn.
    pub fn skipped(&self, level: usize) {
        self.with_level(level, |h| h.models_skipped += 1);
    }

    /// Records a file that died before the learner got to it.
    pub fn died_before_learning(&self, level: usize) {
        self.with_level(level, |h| h.died_before_learning += 1);
    }

    /// Average training nanoseconds per key so far, `None` before the first model.
    pub fn train_ns_per_key(&self) -> Option<f64> {
        let (keys, ns) = *self.trained.lock();
        (keys > 0).then(|| ns as f64 / keys as f64)
    }

    /// Total nanoseconds spent training.
    pub fn learn_ns_total(&self) -> u64 {
        self.trained.lock().1
    }

    /// A copy of the history of `level`.
    pub fn history(&self, level: usize) -> LevelHistory {
        self.levels.lock().get(level).cloned().unwrap_or_default()
    }

    /// The analyzer's view of `level`: lookup counts and sizes of its finished files, path
    /// times of all its dead files.
    pub fn estimates(&self, level: usize) -> LevelEstimates {
        let h = self.history(level);
        let n = h.finished_files.max(1) as f64;
        let all = h.dead_lookups;
        LevelEstimates {
            finished_files: h.finished_files,
            avg_negative_lookups: h.finished_lookups.negative() as f64 / n,
            avg_positive_lookups: h.finished_lookups.positive() as f64 / n,
            avg_file_bytes: h.finished_bytes as f64 / n,
            baseline_ns: [all.baseline[0].avg_ns(), all.baseline[1].avg_ns()],
            model_ns: [all.model[0].avg_ns(), all.model[1].avg_ns()],
        }
    }
}
