//! Background work: one thread runs compactions (and flushes first, unless a flush thread
//! does); leveled databases have a flush thread beside it, so a long compaction never holds
//! up the flush that writers stalled on a full memtable wait for (RocksDB's flush pool).
//! Under FLSM a flush may append to L1 like a compaction, so flushes stay on the one thread.
//! The compaction thread of a leveled database lowers its CPU priority
//! (`Options::compaction_nice`, `thread_priority.rs`): writers and flushes come first.
//! Automatic value-log GC is a unit of that thread's work too (`gc.rs`): it rewrites tables
//! in place, as compactions do, and never writes through the foreground write path.
//!
//! With `Options::background_threads = false` the same units of work run inline, in the
//! writer that made them necessary (deterministic, for tests).
//!
//! The state this work owns is the database's background part, [`BackgroundState`] (below):
//! the signals that wake the threads, the locks that serialize units of work, flushes and GC
//! runs, GC's bookkeeping, the compaction strategy (with what it remembers) and the level
//! models.

use super::DbInner;
use crate::compaction::{self, Choice, Compaction, CompactionContext, Strategy, ValueRelocation};
use crate::error::Result;
use crate::key::SeqNo;
use crate::options::Options;
use crate::version::{CompactionStyle, LevelModel, LevelModels, Version, VersionEdit};
use crate::vlog::SEGMENT_HEADER_LEN;
use crate::work_signal::WorkSignal;
use parking_lot::{Mutex, MutexGuard};
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

/// The background part of a database: what flushes, compactions and GC own. Other parts
/// reach it through the methods below, never through its locks.
///
/// Lock order: `gc` → `unit` → `flush` (then the write part's locks); `gc_skipped`,
/// `pending_deletions` (→ the value log's own locks) and `level_models` are leaves, as are
/// the strategy's own locks. Automatic GC try-locks `gc` while it holds `unit`: a try-lock
/// never waits, so that breaks no order.
pub(crate) struct BackgroundState {
    /// Wakes the background thread (work due, shutting down) and those waiting for its
    /// progress. Shared with the strategy (a seek that makes an FLSM guard due asks here).
    signal: Arc<WorkSignal>,
    /// Wakes the flush thread (leveled databases with background threads) and tells it to
    /// stop.
    flush_signal: WorkSignal,
    /// Serializes units of background work (flush, compaction, GC bookkeeping) and the
    /// training of level models.
    unit: Mutex<()>,
    /// Serializes flushes: memtables are flushed oldest first, one at a time.
    flush: Mutex<()>,
    /// One value-log GC run at a time.
    gc: Mutex<()>,
    /// Segments a GC run could not collect (a damaged value stays in place): automatic GC
    /// does not pick them again in this process, so it never loops on them.
    gc_skipped: Mutex<BTreeSet<u64>>,
    /// Value-log segments deleted in the manifest whose files wait for older snapshots to
    /// go: (segment, the first seqno a reader that cannot reach them reads at).
    pending_deletions: Mutex<Vec<(u64, SeqNo)>>,
    /// The compaction strategy, and what it remembers between picks (FLSM's round-robin
    /// cursors and seek statistics).
    strategy: Box<dyn Strategy>,
    /// The level models trained so far (`Options::level_models`), replaced whole by the
    /// holder of `unit`, which alone trains them; point reads take the current value.
    level_models: Mutex<Arc<LevelModels>>,
    /// Test support: while set, no immutable memtable is flushed
    /// (`Db::hold_flushes_for_test`).
    #[cfg(feature = "test-util")]
    flushes_held: std::sync::atomic::AtomicBool,
    /// Test support: while set, automatic value-log GC does not run
    /// (`Db::hold_automatic_gc_for_test`).
    #[cfg(feature = "test-util")]
    automatic_gc_held: std::sync::atomic::AtomicBool,
}

impl BackgroundState {
    /// The background part of a database of compaction style `style`.
    pub(super) fn new(style: CompactionStyle, opts: &Options) -> BackgroundState {
        let signal = Arc::new(WorkSignal::default());
        BackgroundState {
            strategy: compaction::strategy_for(style, opts, signal.clone()),
            signal,
            flush_signal: WorkSignal::default(),
            unit: Mutex::new(()),
            flush: Mutex::new(()),
            gc: Mutex::new(()),
            gc_skipped: Mutex::default(),
            pending_deletions: Mutex::default(),
            level_models: Mutex::default(),
            #[cfg(feature = "test-util")]
            flushes_held: Default::default(),
            #[cfg(feature = "test-util")]
            automatic_gc_held: Default::default(),
        }
    }

    /// The background thread's signal: work requests, shutdown, progress.
    pub(super) fn signal(&self) -> &WorkSignal {
        &self.signal
    }

    /// Wakes the background threads.
    pub(super) fn request_work(&self) {
        self.flush_signal.request_work();
        self.signal.request_work();
    }

    /// Tells the background threads to stop.
    pub(super) fn shut_down(&self) {
        self.signal.shut_down();
        self.flush_signal.shut_down();
    }

    /// Takes the turn of one unit of background work (or of anything that must not run
    /// beside one: an explicit compaction or GC, training level models).
    pub(super) fn unit_turn(&self) -> MutexGuard<'_, ()> {
        self.unit.lock()
    }

    /// Takes the turn of one flush.
    pub(super) fn flush_turn(&self) -> MutexGuard<'_, ()> {
        self.flush.lock()
    }

    /// Takes the turn of one value-log GC run.
    pub(super) fn gc_turn(&self) -> MutexGuard<'_, ()> {
        self.gc.lock()
    }

    /// Takes the turn of one value-log GC run if no run has it.
    pub(super) fn try_gc_turn(&self) -> Option<MutexGuard<'_, ()>> {
        self.gc.try_lock()
    }

    /// Segments GC could not collect.
    pub(super) fn skipped_segments(&self) -> BTreeSet<u64> {
        self.gc_skipped.lock().clone()
    }

    /// The compaction strategy.
    pub(super) fn strategy(&self) -> &dyn Strategy {
        self.strategy.as_ref()
    }

    /// The level models trained so far.
    pub(super) fn level_models(&self) -> Arc<LevelModels> {
        self.level_models.lock().clone()
    }

    /// Marks `segment` as one GC could not collect.
    pub(super) fn skip_segment(&self, segment: u64) {
        self.gc_skipped.lock().insert(segment);
    }

    /// Segments deleted in the manifest whose files wait for their readers.
    pub(super) fn pending_deletions(&self) -> Vec<u64> {
        self.pending_deletions
            .lock()
            .iter()
            .map(|(s, _)| *s)
            .collect()
    }

    /// Makes `segments` wait for the readers that may still reach them: those reading at a
    /// seqno below `after`.
    pub(super) fn schedule_deletions(&self, segments: &[u64], after: SeqNo) {
        self.pending_deletions
            .lock()
            .extend(segments.iter().map(|&s| (s, after)));
    }

    /// Calls `delete` on every pending segment no reader can reach any more, the oldest
    /// live snapshot being `oldest`, and forgets it. An error ends the walk and leaves the
    /// list empty (the segments' files stay until the next open removes them).
    pub(super) fn delete_unreachable(
        &self,
        oldest: Option<SeqNo>,
        mut delete: impl FnMut(u64) -> Result<()>,
    ) -> Result<()> {
        let mut pending = self.pending_deletions.lock();
        let mut keep = Vec::new();
        for (segment, seqno) in pending.drain(..) {
            if oldest.is_none_or(|o| o >= seqno) {
                delete(segment)?;
            } else {
                keep.push((segment, seqno));
            }
        }
        *pending = keep;
        Ok(())
    }

    /// Test support: holds or releases flushes.
    #[cfg(feature = "test-util")]
    pub(super) fn hold_flushes(&self, held: bool) {
        use std::sync::atomic::Ordering;
        self.flushes_held.store(held, Ordering::Release);
    }

    /// Test support: holds or releases automatic GC.
    #[cfg(feature = "test-util")]
    pub(super) fn hold_automatic_gc(&self, held: bool) {
        use std::sync::atomic::Ordering;
        self.automatic_gc_held.store(held, Ordering::Release);
    }

    /// Whether flushes are held (always false without the `test-util` feature).
    pub(super) fn flushes_held(&self) -> bool {
        #[cfg(feature = "test-util")]
        {
            use std::sync::atomic::Ordering;
            self.flushes_held.load(Ordering::Acquire)
        }
        #[cfg(not(feature = "test-util"))]
        {
            false
        }
    }

    /// Whether automatic GC is held (always false without the `test-util` feature).
    pub(super) fn automatic_gc_held(&self) -> bool {
        #[cfg(feature = "test-util")]
        {
            use std::sync::atomic::Ordering;
            self.automatic_gc_held.load(Ordering::Acquire)
        }
        #[cfg(not(feature = "test-util"))]
        {
            false
        }
    }
}

/// Body of the background thread.
pub(super) fn run(db: &Arc<DbInner>) {
    // With a flush thread of its own, this thread only compacts (and collects garbage): it
    // yields the CPU to writers and flushes (`Options::compaction_nice`).
    if db.has_flush_thread() {
        super::thread_priority::lower_current_thread(db.opts.compaction_nice);
    }
    let expiry_check = Duration::from_millis(db.opts.expiry_check_interval_ms.max(1));
    serve(
        db,
        db.work.signal(),
        Some(expiry_check),
        || db.do_one_unit(),
        || {},
    );
}

/// Body of the flush thread: flushes immutable memtables as they come. A new L0 file may
/// make a compaction due: each flush asks the background thread to look.
pub(super) fn run_flushes(db: &Arc<DbInner>) {
    serve(db, &db.work.flush_signal, None, || db.flush_one(), || {});
}

/// Each time `signal` asks for work (or, with `every`, when that long has passed without a
/// request: expired values are reclaimed without writes to wake the thread), runs `unit`
/// until it reports nothing done (waking those who wait for progress after each unit, and
/// the background thread to look for compactions), then `after_round`; until shutdown, or
/// until the database is poisoned (an error of `unit` poisons it).
fn serve(
    db: &Arc<DbInner>,
    signal: &WorkSignal,
    every: Option<Duration>,
    unit: impl Fn() -> Result<bool>,
    after_round: impl Fn(),
) {
    while signal.wait_for_work(every) {
        loop {
            if signal.is_shutting_down() || db.life.is_poisoned() {
                break;
            }
            match unit() {
                Ok(true) => db.work.signal.request_work(),
                Ok(false) => break,
                Err(e) => {
                    db.poison(&e);
                    break;
                }
            }
        }
        // Writers waiting for room wait on the background signal.
        db.work.signal.notify_all();
        after_round();
    }
}

impl DbInner {
    /// Wakes the background threads.
    pub fn request_background_work(&self) {
        self.work.request_work();
    }

    /// True when a thread of its own flushes memtables (background threads, leveled).
    pub(crate) fn has_flush_thread(&self) -> bool {
        self.background_threads() && self.versions.current().style == CompactionStyle::Leveled
    }

    /// Waits a little for the background thread to make progress.
    pub fn wait_for_background_progress(&self) {
        self.work
            .signal
            .wait_for_progress(Duration::from_millis(10));
    }

    /// One unit of work: a flush, else a compaction, else the in-place rewrite of tables
    /// dense with expired values (`expiry.rs`), else automatic value-log GC of one segment,
    /// else deleting value-log segments no snapshot needs any more. Returns whether a flush,
    /// compaction, rewrite or GC ran.
    ///
    /// GC comes before a compaction when half the value log is known garbage (and L0 is
    /// below its slowdown trigger, where compactions keep writes from stalling): under
    /// steady overwrites the compactions always due would otherwise starve GC, and the value
    /// log grow past twice its live bytes.
    pub fn do_one_unit(&self) -> Result<bool> {
        let _w = self.work.unit.lock();
        if !self.has_flush_thread() && self.flush_one()? {
            return Ok(true);
        }
        let version = self.versions.current();
        if version.levels[0].len() < self.opts.l0_slowdown_trigger
            && self.value_log_half_garbage(&version)
            && self.run_automatic_gc()?
        {
            return Ok(true);
        }
        if let Choice::Merge(c) = self.work.strategy.choose(&version, &self.opts) {
            self.run_compaction(&c, &version)?;
            return Ok(true);
        }
        if self.compact_one_expired(false, self.opts.clock.now_unix_ms())? {
            return Ok(true);
        }
        if self.run_automatic_gc()? {
            return Ok(true);
        }
        self.delete_unreachable_segments()?;
        self.train_one_level_model(&version)
    }

    /// Whether the garbage `version` records is at least half the bytes of the sealed
    /// value-log segments.
    fn value_log_half_garbage(&self, version: &Version) -> bool {
        if self.opts.value_log_gc_ratio >= 1.0 {
            return false;
        }
        let sealed: u64 = self
            .vlog
            .segments()
            .iter()
            .filter(|s| s.sealed)
            .map(|s| s.size_bytes)
            .sum();
        let garbage: u64 = version.vlog_garbage.values().sum();
        sealed > 0 && garbage.saturating_mul(2) >= sealed
    }

    /// With `Options::level_models`, trains the model of one sorted level that lacks it.
    /// Returns whether it did (more may follow).
    pub(crate) fn train_one_level_model(&self, version: &Version) -> Result<bool> {
        // FLSM levels are several overlapping runs that change with every append: level
        // models are not trained there (each file keeps its own model).
        if !self.opts.level_models
            || !self.opts.learning.uses_models()
            || version.style == CompactionStyle::Flsm
        {
            return Ok(false);
        }
        let models = self.work.level_models();
        for (level, files) in version.levels.iter().enumerate().skip(1) {
            // A refused model stays as a marker until the level changes: not retrained.
            if files.is_empty() || models.trained(level, &version.level_changed).is_some() {
                continue;
            }
            let changed = version.level_changed.get(level).copied().unwrap_or(0);
            let config = self.opts.index_config_at(level);
            let model = LevelModel::train(level, files, changed, &config)?;
            self.counters
                .note_level_model(model.train_ns(), model.usable());
            // Only a holder of `unit` trains level models: no other model was installed
            // since `models` was taken.
            *self.work.level_models.lock() = Arc::new(models.with(&version.level_changed, model));
            return Ok(true);
        }
        Ok(false)
    }

    /// Runs flushes, compactions and automatic GC until none is due (inline mode).
    pub fn run_pending_work_inline(&self) -> Result<()> {
        while self.do_one_unit().inspect_err(|e| self.poison(e))? {}
        Ok(())
    }

    /// Runs the executor on `c`, relocating every pointer into the `forced` segments besides
    /// those the options choose (`compaction/executor/relocate.rs`), and makes the segments
    /// it wrote readable; the caller installs the outcome's edit.
    ///
    /// A GC rewrite (`forced` not empty) does no level merge: moving values GC did not ask
    /// for makes garbage GC would then collect, with more level merges, without end; GC's
    /// relocations land in key order anyway.
    pub(crate) fn execute_compaction(
        &self,
        c: &Compaction,
        version: &Version,
        forced: &BTreeSet<u64>,
    ) -> Result<compaction::CompactionOutcome> {
        let new_file_number = || self.versions.new_file_number();
        let reserve = || -> Result<u64> {
            let id = self.vlog.allocate_segment_id()?;
            self.log_and_apply(VersionEdit {
                vlog_reserved: vec![id],
                ..VersionEdit::default()
            })?;
            Ok(id)
        };
        let mut segments = forced.clone();
        if self.opts.value_log_gc_ratio < 1.0 {
            segments.extend(
                self.gc_candidates(self.opts.value_log_gc_ratio, false)
                    .into_iter()
                    .map(|(id, _)| id),
            );
        }
        let values = ValueRelocation {
            vlog: &self.vlog,
            segments,
            level_merge_threshold: (self.opts.level_merge && forced.is_empty())
                .then_some(self.opts.level_merge_threshold),
            segment_bytes: self.opts.value_log_segment_bytes,
            reserve: &reserve,
        };
        // The compaction filter's view of the current state: a point read that is not
        // counted as the application's (`Stats::gets`).
        let read_latest = |key: &[u8]| -> Result<Option<Vec<u8>>> {
            Ok(self.get_with_retry(key, None)?.map(|found| found.value))
        };
        let ctx = CompactionContext {
            strategy: self.work.strategy(),
            fs: self.opts.fs.as_ref(),
            dir: &self.dir,
            opts: &self.opts,
            builder: self.opts.builder_options(c.output_level),
            oldest_snapshot: self.oldest_readable_seqno(),
            last_seqno: self.versions.last_seqno(),
            new_file_number: &new_file_number,
            values: Some(&values),
            read_latest: self
                .opts
                .compaction_filter
                .is_some()
                .then_some(&read_latest),
        };
        let outcome = compaction::execute(c, version, &ctx)?;
        // Readable before any version points into them.
        for &(id, size) in &outcome.segments {
            self.vlog.add_sealed(id, size)?;
        }
        self.counters
            .note_relocation(outcome.values_relocated, outcome.value_bytes_relocated);
        Ok(outcome)
    }

    /// Executes one compaction and installs its result.
    pub fn run_compaction(&self, c: &Compaction, version: &Version) -> Result<()> {
        self.run_compaction_with(c, version, &BTreeSet::new())
            .map(|_| ())
    }

    /// Executes one compaction that also relocates every pointer into the `forced` segments,
    /// installs its result (deleting the segments it made all garbage), and returns it.
    pub(crate) fn run_compaction_with(
        &self,
        c: &Compaction,
        version: &Version,
        forced: &BTreeSet<u64>,
    ) -> Result<compaction::CompactionOutcome> {
        let started = std::time::Instant::now();
        let mut outcome = self.execute_compaction(c, version, forced)?;
        let all_garbage = self.all_garbage_after(&outcome.edit);
        outcome.edit.vlog_deleted.extend(&all_garbage);
        self.log_and_apply(outcome.edit.clone())?;
        self.schedule_segment_deletions(&all_garbage)?;
        let ns = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.counters.note_compaction(&outcome, ns);
        Ok(outcome)
    }

    /// The sealed segments whose garbage reaches all their entries' bytes once `edit`'s
    /// garbage is added: no table points into them any more (each entry's pointer was
    /// dropped or relocated, which is when garbage is counted), so they are deleted without
    /// being read. Garbage only grows, so a version older than the one `edit` is applied to
    /// never makes a segment look emptier than it is.
    fn all_garbage_after(&self, edit: &VersionEdit) -> Vec<u64> {
        if edit.vlog_garbage.is_empty() {
            return Vec::new();
        }
        let version = self.versions.current();
        let sealed: std::collections::BTreeMap<u64, u64> = self
            .vlog
            .segments()
            .into_iter()
            .filter(|s| s.sealed)
            .map(|s| (s.id, s.size_bytes))
            .collect();
        let active = self.vlog.active_segment();
        edit.vlog_garbage
            .iter()
            .filter(|(seg, _)| Some(*seg) != active && !version.vlog_deleted.contains(*seg))
            .filter_map(|&(seg, bytes)| {
                let entries = sealed.get(&seg)?.saturating_sub(SEGMENT_HEADER_LEN as u64);
                let garbage = version.vlog_garbage.get(&seg).copied().unwrap_or(0) + bytes;
                (entries > 0 && garbage >= entries).then_some(seg)
            })
            .collect()
    }

    /// Compacts every file overlapping `[begin, end]` down to the level below the deepest
    /// one holding data in that range (at most the last; leveled with only L0 holding data:
    /// the level L0 compacts into), then rewrites in place every table (of any range) that
    /// holds expired values, so nothing expired is left below L0. Leveled skips the
    /// levels that hold nothing where the inputs are, so each entry is rewritten once per
    /// level that holds data rather than once per level; FLSM goes level by level.
    pub fn compact_range(&self, begin: Option<&[u8]>, end: Option<&[u8]>) -> Result<()> {
        self.flush_and_wait()?;
        let _w = self.work.unit_turn();
        let version = self.versions.current();
        let deepest = (0..version.levels.len())
            .rev()
            .find(|&l| !version.overlapping(l, begin, end).is_empty());
        let Some(deepest) = deepest else {
            return Ok(());
        };
        let last = version.levels.len() - 1;
        let leveled = version.style == CompactionStyle::Leveled;
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
        self.compact_all_expired().inspect_err(|e| self.poison(e))
    }
}
