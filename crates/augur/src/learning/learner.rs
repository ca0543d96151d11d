//! The background learner: its own bounded pool of threads (`Options::learning_threads`,
//! never the flush/compaction thread) that trains models for files after they are
//! installed, according to the learning policy (Bourbon §4.4; lazy learning from the
//! range-query follow-up).
//!
//! Flow: the version set announces every installed version's new and removed files
//! ([`VersionListener`]). Under `always` and `cost-benefit` a new file waits `T_wait`; then,
//! if it has died meanwhile (counted as "died before learning") it is dropped, else `always`
//! queues it and `cost-benefit` asks the [`cost_benefit`] analyzer, queueing it with priority
//! `B − C` or counting it as skipped. Under `lazy` a new file arms a trigger that queues it
//! once `max(k, ⌈keys × per-key rate⌉)` lookups passed its bloom filter (lookups the filter
//! rejects never reach the index, so a model cannot speed them up). Workers pop the queue (a max-priority heap) and call
//! [`Table::learn`](crate::sst::Table::learn), which installs the model for lookups without
//! any lock on the read path. Foreground operations never wait for the learner: announcing
//! and triggering only push onto the queue under a short lock.
//!
//! Files are held as `Weak` references while they wait, so learning never keeps a dead
//! file on disk. Lock order: `state` before the [`Book`]'s locks; neither is held while
//! training.

use super::cost_benefit::{self, Candidate};
use super::stats::Book;
use super::LearningPolicy;
use crate::error::{Error, Result};
use crate::index::chooser::ModelBudget;
use crate::index::IndexConfig;
use crate::version::{TableFile, Version, VersionListener};
use parking_lot::{Condvar, Mutex, MutexGuard};
use std::collections::{BinaryHeap, VecDeque};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A file waiting for `T_wait` to pass.
struct Waiting {
    file: Weak<TableFile>,
    level: usize,
    ready_at: Instant,
}

/// A file chosen for learning, ordered by priority then age (older first).
struct Queued {
    priority: f64,
    seq: u64,
    file: Weak<TableFile>,
    level: usize,
}

impl PartialEq for Queued {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == std::cmp::Ordering::Equal
    }
}
impl Eq for Queued {}
impl PartialOrd for Queued {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Queued {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.priority
            .total_cmp(&other.priority)
            .then_with(|| other.seq.cmp(&self.seq))
    }
}

#[derive(Default)]
struct State {
    waiting: VecDeque<Waiting>,
    queue: BinaryHeap<Queued>,
    seq: u64,
    /// Files being trained right now.
    training: usize,
    shutting_down: bool,
}

/// What the worker threads share.
struct Shared {
    policy: LearningPolicy,
    /// The index to learn per level.
    configs: Vec<IndexConfig>,
    /// The model chooser's budget under `--index=auto`.
    auto: Option<ModelBudget>,
    wait: Duration,
    lazy_reads: u64,
    lazy_reads_per_key: f64,
    book: Arc<Book>,
    state: Mutex<State>,
    cv: Condvar,
}

impl Shared {
    /// The index to learn for a file of `level` (the deepest level's for a level past the
    /// configured ones, which the version never has).
    fn config_at(&self, level: usize) -> IndexConfig {
        let last = self.configs.len().saturating_sub(1);
        self.configs
            .get(level.min(last))
            .copied()
            .unwrap_or_default()
    }
}

/// The learner of one database: the [`Book`] of statistics, and worker threads under the
/// background policies.
pub(crate) struct Learner {
    shared: Arc<Shared>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

/// Settings of a [`Learner`].
#[derive(Debug, Clone)]
pub(crate) struct LearnerOptions {
    pub policy: LearningPolicy,
    /// The index to learn per level (`Options::index_config_at`), indexed by level.
    pub configs: Vec<IndexConfig>,
    /// `Some` under `--index=auto`: the model chooser's budget.
    pub auto: Option<ModelBudget>,
    pub wait: Duration,
    pub threads: usize,
    pub lazy_reads: u64,
    pub lazy_reads_per_key: f64,
    pub num_levels: usize,
}

impl Learner {
    /// Creates the learner and, under a background policy, starts its threads.
    ///
    /// # Errors
    /// `Io` when a thread cannot be started.
    pub fn start(o: LearnerOptions) -> Result<Arc<Learner>> {
        let shared = Arc::new(Shared {
            policy: o.policy,
            configs: o.configs,
            auto: o.auto,
            wait: o.wait,
            lazy_reads: o.lazy_reads,
            lazy_reads_per_key: o.lazy_reads_per_key,
            book: Arc::new(Book::new(o.num_levels, o.wait)),
            state: Mutex::new(State::default()),
            cv: Condvar::new(),
        });
        let learner = Arc::new(Learner {
            shared: shared.clone(),
            threads: Mutex::new(Vec::new()),
        });
        if o.policy.learns_in_background() {
            for i in 0..o.threads {
                let sh = shared.clone();
                let handle = std::thread::Builder::new()
                    .name(format!("augur-learn-{i}"))
                    .spawn(move || sh.run())
                    .map_err(|e| Error::io("starting a learner thread", e));
                match handle {
                    Ok(h) => learner.threads.lock().push(h),
                    Err(e) => {
                        learner.shutdown();
                        return Err(e);
                    }
                }
            }
        }
        Ok(learner)
    }

    /// The statistics ledger.
    pub fn book(&self) -> &Book {
        &self.shared.book
    }

    /// Announces the files of `version` (those found at open) as new files.
    pub fn announce_existing(&self, version: &Version) {
        let files: Vec<_> = version
            .levels
            .iter()
            .enumerate()
            .flat_map(|(level, fs)| fs.iter().map(move |f| (level, f.clone())))
            .collect();
        self.shared.announce(&files);
    }

    /// Learns every file of `version` that has no model yet, on the calling thread
    /// (`Db::learn_all`, the `offline` policy). Returns how many models were installed.
    ///
    /// # Errors
    /// `InvalidArgument` under the `never` policy; `Corruption` from a damaged file.
    pub fn learn_all(&self, version: &Version) -> Result<u64> {
        if !self.shared.policy.uses_models() {
            return Err(Error::InvalidArgument(
                "learn_all: the `never` learning policy uses no models".into(),
            ));
        }
        let mut learned = 0;
        for (level, files) in version.levels.iter().enumerate() {
            for f in files {
                let report = f
                    .table
                    .learn_with(&self.shared.config_at(level), self.shared.auto)?;
                if report.installed {
                    self.shared.book.learned(level, &report);
                    learned += 1;
                }
            }
        }
        Ok(learned)
    }

    /// Files waiting for `T_wait`, queued, or being trained (for tests and statistics).
    pub fn pending(&self) -> usize {
        let st = self.shared.state.lock();
        st.waiting.len() + st.queue.len() + st.training
    }

    /// Stops the worker threads (a model being trained is finished first) and joins them.
    pub fn shutdown(&self) {
        {
            let mut st = self.shared.state.lock();
            st.shutting_down = true;
            st.waiting.clear();
            st.queue.clear();
        }
        self.shared.cv.notify_all();
        let threads = std::mem::take(&mut *self.threads.lock());
        for t in threads {
            let _ = t.join();
        }
    }
}

impl Drop for Learner {
    fn drop(&mut self) {
        self.shutdown();
    }
}

impl VersionListener for Learner {
    fn files_changed(
        &self,
        added: &[(usize, Arc<TableFile>)],
        removed: &[(usize, Arc<TableFile>)],
    ) {
        for (level, f) in removed {
            self.shared.book.file_died(*level, f);
        }
        self.shared.announce(added);
    }
}

impl Shared {
    /// Takes note of new files according to the policy.
    fn announce(self: &Arc<Self>, files: &[(usize, Arc<TableFile>)]) {
        match self.policy {
            LearningPolicy::Always | LearningPolicy::CostBenefit => {
                let ready_at = Instant::now() + self.wait;
                let mut st = self.state.lock();
                if st.shutting_down {
                    return;
                }
                for (level, f) in files {
                    if !f.table.has_model() {
                        st.waiting.push_back(Waiting {
                            file: Arc::downgrade(f),
                            level: *level,
                            ready_at,
                        });
                    }
                }
                drop(st);
                self.cv.notify_one();
            }
            LearningPolicy::Lazy => {
                for (level, f) in files {
                    if f.table.has_model() {
                        continue;
                    }
                    let (shared, file, level) = (Arc::downgrade(self), Arc::downgrade(f), *level);
                    f.table.on_lookups(
                        self.lazy_threshold(f.table.entries()),
                        Box::new(move || {
                            if let Some(sh) = shared.upgrade() {
                                sh.enqueue(file.clone(), level, 0.0);
                            }
                        }),
                    );
                }
            }
            _ => {}
        }
    }

    /// Lookups (past the bloom filter) after which `lazy` learns a file of `entries` keys.
    fn lazy_threshold(&self, entries: u64) -> u64 {
        let scaled = (entries as f64 * self.lazy_reads_per_key).ceil();
        self.lazy_reads.max(scaled.min(u64::MAX as f64) as u64)
    }

    fn enqueue(&self, file: Weak<TableFile>, level: usize, priority: f64) {
        let mut st = self.state.lock();
        if st.shutting_down {
            return;
        }
        Self::push(&mut st, file, level, priority);
        drop(st);
        self.cv.notify_one();
    }

    fn push(st: &mut State, file: Weak<TableFile>, level: usize, priority: f64) {
        st.seq += 1;
        let seq = st.seq;
        st.queue.push(Queued {
            priority,
            seq,
            file,
            level,
        });
    }

    /// Upgrades `file` if it is still part of the tree.
    fn live(file: &Weak<TableFile>) -> Option<Arc<TableFile>> {
        file.upgrade().filter(|f| !f.is_obsolete())
    }

    /// A file whose `T_wait` passed: drop it if dead, else decide by the policy.
    fn evaluate(self: &Arc<Self>, st: &mut MutexGuard<'_, State>, w: Waiting) {
        let Some(file) = Self::live(&w.file) else {
            self.book.died_before_learning(w.level);
            return;
        };
        if file.table.has_model() {
            return;
        }
        let priority = if self.policy == LearningPolicy::CostBenefit {
            let own = file.table.lookup_counts();
            let candidate = Candidate {
                keys: file.table.entries(),
                file_bytes: file.meta.file_size,
                baseline_ns: [own.baseline[0].avg_ns(), own.baseline[1].avg_ns()],
            };
            let estimates = self.book.estimates(w.level);
            let per_key = self.book.train_ns_per_key();
            let decision = cost_benefit::decide(&estimates, &candidate, per_key);
            if !decision.learns() {
                self.book.skipped(w.level);
                // Re-examined (and learned) once its own lookups would pay for it.
                if let Some(k) = cost_benefit::break_even_lookups(&estimates, &candidate, per_key) {
                    let after = (own.positive() + own.negative()).saturating_add(k);
                    let (shared, weak, level) = (Arc::downgrade(self), w.file, w.level);
                    let action = Box::new(move || {
                        if let Some(sh) = shared.upgrade() {
                            sh.enqueue(weak.clone(), level, 0.0);
                        }
                    });
                    // Unlocked: the action runs at once if the file got there meanwhile,
                    // and it takes the state lock.
                    MutexGuard::unlocked(st, || file.table.on_lookups(after, action));
                }
                return;
            }
            decision.priority()
        } else {
            0.0
        };
        Self::push(st, w.file, w.level, priority);
    }

    /// Body of a worker thread.
    fn run(self: &Arc<Self>) {
        let mut st = self.state.lock();
        loop {
            if st.shutting_down {
                return;
            }
            let now = Instant::now();
            while st.waiting.front().is_some_and(|w| w.ready_at <= now) {
                if let Some(w) = st.waiting.pop_front() {
                    self.evaluate(&mut st, w);
                }
            }
            if let Some(q) = st.queue.pop() {
                st.training += 1;
                parking_lot::MutexGuard::unlocked(&mut st, || self.learn(&q));
                st.training -= 1;
                continue;
            }
            // `evaluate` may have released the lock (arming a re-examination): a shutdown
            // that came meanwhile notified nobody, so look before waiting.
            if st.shutting_down {
                return;
            }
            match st.waiting.front().map(|w| w.ready_at) {
                Some(at) => {
                    self.cv.wait_until(&mut st, at);
                }
                None => self.cv.wait(&mut st),
            }
        }
    }

    fn learn(&self, q: &Queued) {
        let Some(file) = Self::live(&q.file) else {
            self.book.died_before_learning(q.level);
            return;
        };
        match file.table.learn_with(&self.config_at(q.level), self.auto) {
            Ok(report) if report.installed => self.book.learned(q.level, &report),
            Ok(_) => {}
            Err(e) => log::warn!("learning {} failed: {e}", file.table.path().display()),
        }
    }
}
