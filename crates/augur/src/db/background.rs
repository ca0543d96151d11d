//! Background work: one thread runs compactions (and flushes first, unless a flush thread
//! does); leveled databases have a flush thread beside it, so a long compaction never holds
//! up the flush that writers stalled on a full memtable wait for (RocksDB's flush pool).
//! Under FLSM a flush may append to L1 like a compaction, so flushes stay on the one thread.
//! Value-log GC runs on a short-lived thread of its own, because it writes through the
//! foreground write path (a writer stalled on a flush must never wait on the thread that
//! would flush).
//!
//! With `Options::background_threads = false` the same units of work run inline, in the
//! writer that made them necessary (deterministic, for tests).

use super::DbInner;
use crate::compaction::{self, Choice, Compaction, CompactionContext};
use crate::error::Result;
use crate::version::LevelModel;
use crate::version::Version;
use crate::work_signal::WorkSignal;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// Body of the background thread.
pub(super) fn run(db: &Arc<DbInner>) {
    serve(
        db,
        &db.background,
        || db.do_one_unit(),
        || db.maybe_start_gc(db),
    );
}

/// Body of the flush thread: flushes immutable memtables as they come. A new L0 file may
/// make a compaction due: each flush asks the background thread to look.
pub(super) fn run_flushes(db: &Arc<DbInner>) {
    serve(db, &db.flush_signal, || db.flush_one(), || {});
}

/// Each time `signal` asks for work, runs `unit` until it reports nothing done (waking
/// those who wait for progress after each unit, and the background thread to look for
/// compactions), then `after_round`; until shutdown, or until the database is poisoned
/// (an error of `unit` poisons it).
fn serve(
    db: &Arc<DbInner>,
    signal: &WorkSignal,
    unit: impl Fn() -> Result<bool>,
    after_round: impl Fn(),
) {
    while signal.wait_for_work() {
        loop {
            if signal.is_shutting_down() || db.poisoned.lock().is_some() {
                break;
            }
            match unit() {
                Ok(true) => db.background.request_work(),
                Ok(false) => break,
                Err(e) => {
                    db.poison(&e);
                    break;
                }
            }
        }
        // Writers waiting for room wait on the background signal.
        db.background.notify_all();
        after_round();
    }
}

impl DbInner {
    /// Wakes the background threads.
    pub fn request_background_work(&self) {
        self.flush_signal.request_work();
        self.background.request_work();
    }

    /// True when a thread of its own flushes memtables (background threads, leveled).
    pub(crate) fn has_flush_thread(&self) -> bool {
        self.opts.background_threads
            && self.versions.current().style == crate::version::CompactionStyle::Leveled
    }

    /// Waits a little for the background thread to make progress.
    pub fn wait_for_background_progress(&self) {
        self.background.wait_for_progress(Duration::from_millis(10));
    }

    /// One unit of work: a flush, else a compaction, else deleting value-log segments no
    /// snapshot needs any more. Returns whether a flush or compaction ran.
    pub fn do_one_unit(&self) -> Result<bool> {
        let _w = self.bg_work.lock();
        if !self.has_flush_thread() && self.flush_one()? {
            return Ok(true);
        }
        let version = self.versions.current();
        if let Choice::Merge(c) = self.strategy.choose(&version, &self.opts) {
            self.run_compaction(&c, &version)?;
            return Ok(true);
        }
        self.delete_unreachable_segments()?;
        self.train_one_level_model(&version)
    }

    /// With `Options::level_models`, trains the model of one sorted level that lacks it.
    /// Returns whether it did (more may follow).
    pub(crate) fn train_one_level_model(&self, version: &Version) -> Result<bool> {
        // FLSM levels are several overlapping runs that change with every append: level
        // models are not trained there (each file keeps its own model).
        if !self.opts.level_models
            || !self.opts.learning.uses_models()
            || version.style == crate::version::CompactionStyle::Flsm
        {
            return Ok(false);
        }
        for (level, files) in version.levels.iter().enumerate().skip(1) {
            let Some(slot) = version.level_models.get(level) else {
                continue;
            };
            if files.is_empty() || slot.get().is_some() {
                continue;
            }
            let model = LevelModel::train(files, &self.opts.index_config_at(level))?;
            self.counters.note_level_model(model.train_ns());
            // Only this thread sets level models, and it holds `bg_work`.
            let _ = slot.set(Arc::new(model));
            return Ok(true);
        }
        Ok(false)
    }

    /// Runs flushes and compactions until none is due, then, with `gc`, GC if due (inline
    /// mode). GC writes its relocations through the write queue while holding `gc_lock`, so
    /// its own relocation writes and a writer that leads the queue pass `gc = false`:
    /// starting GC from there would wait on itself.
    pub fn run_pending_work_inline(&self, gc: bool) -> Result<()> {
        while self.do_one_unit().inspect_err(|e| self.poison(e))? {}
        if gc && self.opts.value_log_gc_ratio < 1.0 {
            // As on the GC thread: a failure is logged, not returned, because the write
            // that triggered GC is already committed. Failures that leave state unknown
            // (relocation writes, the manifest edit) poison the database inside GC.
            if let Err(e) = self.run_value_log_gc(self.opts.value_log_gc_ratio, false) {
                log::warn!("value-log GC failed: {e}");
            }
        }
        Ok(())
    }

    /// Starts a GC thread when a segment's garbage ratio passed the threshold.
    fn maybe_start_gc(&self, me: &Arc<DbInner>) {
        if self.opts.value_log_gc_ratio >= 1.0
            || self
                .worst_segment(self.opts.value_log_gc_ratio, false)
                .is_none()
        {
            return;
        }
        if self.gc_running.swap(true, Ordering::AcqRel) {
            return;
        }
        let db = me.clone();
        let spawned = std::thread::Builder::new()
            .name("augur-gc".into())
            .spawn(move || {
                if let Err(e) = db.run_value_log_gc(db.opts.value_log_gc_ratio, false) {
                    log::warn!("value-log GC failed: {e}");
                }
                db.gc_running.store(false, Ordering::Release);
            });
        match spawned {
            // The previous thread cleared `gc_running`, so it is ending: joining is quick.
            Ok(handle) => {
                if let Some(previous) = self.gc_thread.lock().replace(handle) {
                    let _ = previous.join();
                }
            }
            Err(_) => self.gc_running.store(false, Ordering::Release),
        }
    }

    /// Runs the executor on `c` (the caller installs the outcome's edit).
    pub(crate) fn execute_compaction(
        &self,
        c: &Compaction,
        version: &Version,
    ) -> Result<compaction::CompactionOutcome> {
        let new_file_number = || self.versions.new_file_number();
        let ctx = CompactionContext {
            strategy: self.strategy.as_ref(),
            fs: self.opts.fs.as_ref(),
            dir: &self.dir,
            opts: &self.opts,
            builder: self.opts.builder_options(c.output_level),
            oldest_snapshot: self.oldest_readable_seqno(),
            last_seqno: self.versions.last_seqno(),
            new_file_number: &new_file_number,
        };
        compaction::execute(c, version, &ctx)
    }

    /// Executes one compaction and installs its result.
    pub fn run_compaction(&self, c: &Compaction, version: &Version) -> Result<()> {
        let started = std::time::Instant::now();
        let outcome = self.execute_compaction(c, version)?;
        self.versions.log_and_apply(outcome.edit)?;
        self.counters.note_compaction(
            outcome.bytes_read,
            outcome.bytes_written,
            outcome.entries_dropped,
            u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX),
            outcome.model_time,
            outcome.appended,
        );
        Ok(())
    }

    /// Compacts every file overlapping `[begin, end]` down to the level below the deepest
    /// one holding data in that range (at most the last; leveled with only L0 holding data:
    /// the level L0 compacts into). Leveled skips the
    /// levels that hold nothing where the inputs are, so each entry is rewritten once per
    /// level that holds data rather than once per level; FLSM goes level by level.
    pub fn compact_range(&self, begin: Option<&[u8]>, end: Option<&[u8]>) -> Result<()> {
        self.flush_and_wait()?;
        let _w = self.bg_work.lock();
        let version = self.versions.current();
        let deepest = (0..version.levels.len())
            .rev()
            .find(|&l| !version.overlapping(l, begin, end).is_empty());
        let Some(deepest) = deepest else {
            return Ok(());
        };
        let last = version.levels.len() - 1;
        let leveled = version.style == crate::version::CompactionStyle::Leveled;
        let bottom = if leveled && deepest == 0 {
            compaction::l0_output_level(&version, &self.opts)
        } else {
            // The deepest level holding data is merged too unless it is the last: a full
            // compaction leaves no level above the last with files in the range.
            (deepest + 1).min(last)
        };
        let mut level = 0;
        while level < bottom {
            let version = self.versions.current();
            let inputs = version.overlapping(level, begin, end);
            if inputs.is_empty() {
                level += 1;
                continue;
            }
            let inputs = if level == 0 {
                version.levels[0].clone()
            } else {
                version.whole_slots(level, inputs)
            };
            let lo = inputs.iter().map(|f| f.smallest_key()).min();
            let hi = inputs.iter().map(|f| f.largest_key()).max();
            let output_level = if leveled {
                (level + 1..bottom)
                    .find(|&l| !version.overlapping(l, lo, hi).is_empty())
                    .unwrap_or(bottom)
            } else {
                level + 1
            };
            let c = Compaction {
                level,
                next_inputs: version
                    .whole_slots(output_level, version.overlapping(output_level, lo, hi)),
                inputs,
                output_level,
                allow_trivial_move: false,
                memtable: None,
            };
            self.run_compaction(&c, &version)
                .inspect_err(|e| self.poison(e))?;
            level = output_level;
        }
        Ok(())
    }
}
