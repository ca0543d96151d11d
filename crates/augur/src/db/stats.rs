//! Statistics: counters updated on the hot paths (relaxed atomics) and the snapshot of the
//! tree's shape returned by `Db::stats()`.

use super::DbInner;
use crate::index::IndexKind;
use crate::sst::{LookupCounts, ModelTime, Table};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Live counters.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    writes: AtomicU64,
    wal_bytes: AtomicU64,
    gets: AtomicU64,
    stalls: AtomicU64,
    stall_ns: AtomicU64,
    slowdown_ns: AtomicU64,
    memtable_peak_bytes: AtomicU64,
    flushes: AtomicU64,
    flush_bytes: AtomicU64,
    compactions: AtomicU64,
    compaction_bytes_read: AtomicU64,
    compaction_bytes_written: AtomicU64,
    compaction_bytes_appended: AtomicU64,
    compaction_entries_dropped: AtomicU64,
    expired_values: AtomicU64,
    gc_runs: AtomicU64,
    gc_relocated: AtomicU64,
    values_relocated: AtomicU64,
    value_bytes_relocated: AtomicU64,
    user_bytes: AtomicU64,
    vlog_bytes: AtomicU64,
    level_models_built: AtomicU64,
    flush_ns: AtomicU64,
    flush_train_ns: AtomicU64,
    compaction_ns: AtomicU64,
    compaction_train_ns: AtomicU64,
    train_wait_ns: AtomicU64,
    level_model_train_ns: AtomicU64,
    level_model_lookups: AtomicU64,
    level_models_refused: AtomicU64,
}

fn add(c: &AtomicU64, v: u64) {
    c.fetch_add(v, Ordering::Relaxed);
}

impl Counters {
    pub fn note_write(&self, entries: u64, wal_bytes: u64) {
        add(&self.writes, entries);
        add(&self.wal_bytes, wal_bytes);
    }
    pub fn note_vlog_bytes(&self, bytes: u64) {
        add(&self.vlog_bytes, bytes);
    }
    pub fn note_user_bytes(&self, bytes: u64) {
        add(&self.user_bytes, bytes);
    }
    pub fn note_get(&self) {
        add(&self.gets, 1);
    }
    /// A writer that waited `ns` for a flush or an L0 compaction (a stop).
    pub fn note_stall(&self, ns: u64) {
        add(&self.stalls, 1);
        add(&self.stall_ns, ns);
    }
    /// A writer delayed `ns` by the smooth slowdown.
    pub fn note_slowdown(&self, ns: u64) {
        add(&self.slowdown_ns, ns);
    }
    /// The memtables (active and immutable) hold `bytes` at once: keeps the largest.
    pub fn note_memtable_bytes(&self, bytes: u64) {
        self.memtable_peak_bytes.fetch_max(bytes, Ordering::Relaxed);
    }
    /// User bytes written since open.
    pub fn user_bytes(&self) -> u64 {
        self.user_bytes.load(Ordering::Relaxed)
    }
    /// A flush that wrote `bytes` in `ns`, training its model as `model` says.
    pub fn note_flush(&self, bytes: u64, ns: u64, model: ModelTime) {
        add(&self.flushes, 1);
        add(&self.flush_bytes, bytes);
        add(&self.flush_ns, ns);
        add(&self.flush_train_ns, model.train_ns);
        add(&self.train_wait_ns, model.wait_ns);
    }
    /// A compaction that took `ns` and produced `outcome` (its byte and entry counts, what
    /// training its outputs' models cost, whether its outputs were FLSM fragments appended
    /// to the next level).
    pub fn note_compaction(&self, outcome: &crate::compaction::CompactionOutcome, ns: u64) {
        add(&self.compactions, 1);
        add(&self.compaction_bytes_read, outcome.bytes_read);
        add(&self.compaction_bytes_written, outcome.bytes_written);
        if outcome.appended {
            add(&self.compaction_bytes_appended, outcome.bytes_written);
        }
        add(&self.compaction_entries_dropped, outcome.entries_dropped);
        add(&self.expired_values, outcome.expired_values);
        add(&self.compaction_ns, ns);
        add(&self.compaction_train_ns, outcome.model_time.train_ns);
        add(&self.train_wait_ns, outcome.model_time.wait_ns);
    }
    pub fn note_level_model(&self, train_ns: u64, usable: bool) {
        add(&self.level_models_built, 1);
        add(&self.level_model_train_ns, train_ns);
        if !usable {
            add(&self.level_models_refused, 1);
        }
    }
    /// `n` table lookups of one point lookup were searched through a level model.
    pub fn note_level_model_lookups(&self, n: u64) {
        add(&self.level_model_lookups, n);
    }
    /// A compaction (or GC rewrite) that relocated `values` into new value-log entries of
    /// `bytes` (counted as value-log bytes written too).
    pub fn note_relocation(&self, values: u64, bytes: u64) {
        add(&self.values_relocated, values);
        add(&self.value_bytes_relocated, bytes);
        add(&self.vlog_bytes, bytes);
    }
    pub fn note_gc(&self, relocated: u64) {
        add(&self.gc_runs, 1);
        add(&self.gc_relocated, relocated);
    }
}

/// Memory of the learned indexes of one type and window (in a level, or in total): with
/// `--index=auto` these are the model chooser's decisions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexMemory {
    /// The index type.
    pub kind: IndexKind,
    /// The largest window of those models (`Index::max_window`: `2δ + 1` for fence
    /// pointers, PLR and PGM at error bound δ).
    pub max_window: u64,
    /// Files whose model is of this type and window.
    pub files: usize,
    /// Exact bytes of those models (`Index::size_bytes`).
    pub bytes: u64,
}

/// Adds the `files` and `bytes` of `m` to `acc` (kept in type, then window order).
fn add_memory(acc: &mut Vec<IndexMemory>, m: IndexMemory) {
    match acc
        .iter_mut()
        .find(|a| a.kind == m.kind && a.max_window == m.max_window)
    {
        Some(a) => {
            a.files += m.files;
            a.bytes += m.bytes;
        }
        None => {
            acc.push(m);
            acc.sort_by_key(|a| (a.kind as u8, a.max_window));
        }
    }
}

/// The model memory of `tables`, per index type.
fn models_by_kind<'a>(tables: impl Iterator<Item = &'a Arc<Table>>) -> Vec<IndexMemory> {
    let mut acc = Vec::new();
    for t in tables {
        if let (Some(kind), Some(max_window)) = (t.model_kind(), t.model_max_window()) {
            let bytes = t.model_size_bytes() as u64;
            add_memory(
                &mut acc,
                IndexMemory {
                    kind,
                    max_window,
                    files: 1,
                    bytes,
                },
            );
        }
    }
    acc
}

/// Shape of one level.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LevelStats {
    /// Level number.
    pub level: usize,
    /// Number of SSTables.
    pub files: usize,
    /// Total bytes of its SSTables.
    pub bytes: u64,
    /// Total entries (all versions and tombstones).
    pub entries: u64,
    /// Sum of the user-key lengths of its entries (what the keys take uncompressed, unpadded).
    pub raw_key_bytes: u64,
    /// Sum of the lengths of its inline values, uncompressed.
    pub raw_value_bytes: u64,
    /// Bytes its inline values take in the files (compressed chunks, or raw ones).
    pub stored_value_bytes: u64,
    /// Files whose lookups go through a learned index.
    pub files_with_model: usize,
    /// Memory of the learned indexes of the level (bytes).
    pub model_bytes: u64,
    /// [`LevelStats::model_bytes`] per index type (a level may mix types after a reopen
    /// with another `--index`).
    pub models_by_kind: Vec<IndexMemory>,
    /// Segments (PLR) or pointers (fence) of those indexes.
    pub model_segments: u64,
    /// Memory of the fence-pointer block indexes and bloom filters (bytes).
    pub index_bytes: u64,
    /// Point lookups into the level's live files that found their key.
    pub positive_lookups: u64,
    /// Point lookups into the level's live files that did not (filtered or absent).
    pub negative_lookups: u64,
    /// Point lookups into the level's live files served on the model path.
    pub model_path_lookups: u64,
    /// Point lookups into the level's live files served on the baseline path.
    pub baseline_path_lookups: u64,
    /// Sampled average latency of a model-path lookup in the level's files, live and dead
    /// (ns; 0 without samples).
    pub avg_model_lookup_ns: u64,
    /// Sampled average latency of a baseline-path lookup in the level's files, live and
    /// dead (ns; 0 without samples).
    pub avg_baseline_lookup_ns: u64,
    /// Files removed from the level by compaction since open.
    pub dead_files: u64,
    /// Their average lifetime (µs; 0 without dead files).
    pub avg_file_lifetime_us: u64,
    /// Models trained in the background (or by `Db::learn_all`) for the level's files.
    pub models_built: u64,
    /// Files the cost–benefit analyzer chose not to learn.
    pub models_skipped: u64,
    /// Files deleted with a model that never served a lookup.
    pub models_wasted: u64,
    /// Files that died before the learner got to them (within `T_wait` or while queued).
    pub files_died_before_learning: u64,
    /// Nanoseconds spent training models for the level's files.
    pub learning_ns: u64,
    /// Bytes of the level model, when one is in use (`Options::level_models`).
    pub level_model_bytes: u64,
    /// Bytes pinned in memory for the level's tables, outside any cache: filters, fence
    /// indexes, file models, key bounds and properties, and the level model.
    pub pinned_bytes: u64,
    /// Segments of the level model (0 without one).
    pub level_model_segments: u64,
    /// FLSM: guards of the level (0 under leveled).
    pub guards: usize,
    /// FLSM: slots (guards and the sentinel) holding at least one file.
    pub nonempty_guards: usize,
    /// FLSM: most files in one slot.
    pub max_sstables_per_guard: usize,
    /// FLSM: most overlapping sorted runs in one slot (what a lookup may probe there).
    pub max_guard_depth: usize,
}

impl LevelStats {
    /// FLSM: mean files per non-empty slot (0 without files).
    pub fn mean_sstables_per_guard(&self) -> f64 {
        self.files as f64 / self.nonempty_guards.max(1) as f64
    }
}

/// One value-log segment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ValueLogSegmentStats {
    /// Segment id.
    pub id: u64,
    /// File size.
    pub bytes: u64,
    /// Bytes known to be garbage (dropped pointers).
    pub garbage_bytes: u64,
    /// Whether it still receives appends.
    pub active: bool,
}

/// A snapshot of the database's statistics.
#[derive(Debug, Clone, Default)]
pub struct Stats {
    /// Per level.
    pub levels: Vec<LevelStats>,
    /// Average time per step of sampled point lookups (Bourbon Figure 8).
    pub lookup_breakdown: crate::stats::breakdown::LookupBreakdown,
    /// Per value-log segment.
    pub value_log: Vec<ValueLogSegmentStats>,
    /// Entries written (puts, deletes, relocations).
    pub writes: u64,
    /// Bytes of user keys and values passed to writes.
    pub user_bytes_written: u64,
    /// Bytes appended to WAL files.
    pub wal_bytes_written: u64,
    /// Bytes of the live value-log segments.
    pub value_log_bytes: u64,
    /// Bytes appended to the value log by writes and relocations since open.
    pub value_log_bytes_written: u64,
    /// Point reads served.
    pub gets: u64,
    /// Writes that waited for a flush or L0 compaction.
    pub write_stalls: u64,
    /// Nanoseconds writers waited for a flush or L0 compaction (stopped).
    pub write_stall_ns: u64,
    /// Nanoseconds writers were delayed by the smooth slowdown (`delayed_write_rate`).
    pub write_slowdown_ns: u64,
    /// The most bytes the memtables (the active one and those waiting for flush) were
    /// charged at once since open, observed when a memtable is sealed and when a flushed one
    /// is released: with `max_immutable_memtables` at its default of 2, up to three
    /// memtables' worth. The process's resident memory holds them besides the tables'
    /// pinned metadata.
    pub memtable_peak_bytes: u64,
    /// Memtable flushes.
    pub flushes: u64,
    /// Bytes of SSTables written by flushes.
    pub flush_bytes_written: u64,
    /// Compactions run (including trivial moves).
    pub compactions: u64,
    /// Bytes read by compactions.
    pub compaction_bytes_read: u64,
    /// Bytes of SSTables written by compactions.
    pub compaction_bytes_written: u64,
    /// Part of `compaction_bytes_written` appended as FLSM fragments (nothing in the next
    /// level rewritten); the rest rewrote (leveled merges, the FLSM last level, in place).
    pub compaction_bytes_appended: u64,
    /// The database's compaction style.
    pub compaction_style: crate::version::CompactionStyle,
    /// Entries dropped by compactions.
    pub compaction_entries_dropped: u64,
    /// Expired values compactions found and wrote as tombstones, each the newest version
    /// of its key in its compaction: about one per key that expired, counted late (when a
    /// compaction reaches the key, not when it expires) and never for a key overwritten or
    /// deleted in a table the same compaction merges.
    pub expired_values: u64,
    /// Value-log GC runs that collected a segment.
    pub gc_runs: u64,
    /// Values GC runs relocated.
    pub gc_entries_relocated: u64,
    /// Values compactions (GC rewrites included) relocated into fresh value-log segments:
    /// out of segments past `value_log_gc_ratio`, or out of key order (level merge).
    pub values_relocated: u64,
    /// Bytes those relocations appended to the value log (part of
    /// `value_log_bytes_written`).
    pub value_log_bytes_relocated: u64,
    /// Live snapshots and iterators.
    pub live_snapshots: usize,
    /// Latest sequence number.
    pub last_seqno: u64,
    /// Level models trained since open.
    pub level_models_built: u64,
    /// Nanoseconds spent training level models.
    pub level_model_train_ns: u64,
    /// Point lookups into SSTables served through a level model since open (a subset of
    /// `model_path_lookups`: the file's own model was skipped).
    pub level_model_lookups: u64,
    /// Level models trained since open but refused (counted in `level_models_built` too):
    /// too few of the level's keys had distinct projections (`LevelModel::usable`).
    pub level_models_refused: u64,
    /// Point lookups into SSTables (live and dead) served on the model path since open.
    pub model_path_lookups: u64,
    /// Point lookups into SSTables (live and dead) served on the baseline path since open.
    pub baseline_path_lookups: u64,
    /// Models trained in the background or by `Db::learn_all` since open.
    pub models_built: u64,
    /// Nanoseconds spent training them.
    pub learning_ns_total: u64,
    /// Nanoseconds spent training models while flushing and compacting (at-build learning),
    /// since open: `flush_training_ns + compaction_training_ns`.
    pub at_build_training_ns: u64,
    /// Part of `flush_ns + compaction_ns` spent waiting for models once the rest of their
    /// tables was written: what at-build training added to the wall time (training runs
    /// beside the writing of large tables, so this is below `at_build_training_ns`).
    pub at_build_training_wait_ns: u64,
    /// Wall time of all flushes since open (ns), at-build training included.
    pub flush_ns: u64,
    /// Training and encoding the flushed tables' models (ns; partly beside the writing, see
    /// `at_build_training_wait_ns`).
    pub flush_training_ns: u64,
    /// Wall time of all compactions since open (ns), at-build training included.
    pub compaction_ns: u64,
    /// Training and encoding the compaction outputs' models (ns; partly beside the writing).
    pub compaction_training_ns: u64,
    /// Average training cost per key (ns; 0 before the first model).
    pub training_ns_per_key: f64,
    /// Files waiting for `T_wait`, queued for learning, or being learned.
    pub learning_pending: usize,
    /// The page cache (direct mode) and the open-file bound (`max_open_files`): occupancy,
    /// hits, misses, device reads.
    pub reads: crate::cache::ReadStats,
}

impl Stats {
    /// Model memory per index type over all levels (file models only; level models are in
    /// [`LevelStats::level_model_bytes`]).
    pub fn models_by_kind(&self) -> Vec<IndexMemory> {
        let mut acc = Vec::new();
        for m in self.levels.iter().flat_map(|l| &l.models_by_kind) {
            add_memory(&mut acc, *m);
        }
        acc
    }

    /// Bytes pinned in memory for all tables (see [`LevelStats::pinned_bytes`]).
    pub fn pinned_bytes(&self) -> u64 {
        self.levels.iter().map(|l| l.pinned_bytes).sum()
    }

    /// Bytes of all learned indexes in memory: file models plus level models.
    pub fn total_model_bytes(&self) -> u64 {
        self.levels
            .iter()
            .map(|l| l.model_bytes + l.level_model_bytes)
            .sum()
    }

    /// Fraction of SSTable point lookups served on the model path since open (0 without
    /// lookups).
    pub fn model_path_fraction(&self) -> f64 {
        let all = self.model_path_lookups + self.baseline_path_lookups;
        self.model_path_lookups as f64 / all.max(1) as f64
    }
}

impl Stats {
    /// Bytes written to files (WAL + value log + flushes + compactions) per user byte.
    pub fn write_amplification(&self) -> f64 {
        let written = self.wal_bytes_written
            + self.value_log_bytes_written
            + self.flush_bytes_written
            + self.compaction_bytes_written;
        written as f64 / self.user_bytes_written.max(1) as f64
    }
}

impl DbInner {
    /// Collects the statistics.
    pub fn stats(&self) -> Stats {
        let c = &self.counters;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let version = self.versions.current();
        let book = self.learner.book();
        let level_models = self.work.level_models();
        let mut all_lookups = LookupCounts::default();
        let slots = |level: usize| version.slots.get(level).into_iter().flatten();
        let levels: Vec<LevelStats> = version
            .levels
            .iter()
            .enumerate()
            .map(|(level, files)| {
                let tables = || files.iter().map(|f| &f.table);
                let mut live = LookupCounts::default();
                for t in tables() {
                    live.add(&t.lookup_counts());
                }
                let history = book.history(level);
                let mut every = history.dead_lookups;
                every.add(&live);
                all_lookups.add(&every);
                let avg = |p: &[crate::sst::PathCounts; 2]| {
                    let mut c = p[0];
                    c.add(&p[1]);
                    c.avg_ns().map_or(0, |ns| ns.round() as u64)
                };
                let level_model = version.level_model(&level_models, level);
                LevelStats {
                    level,
                    files: files.len(),
                    bytes: files.iter().map(|f| f.meta.file_size).sum(),
                    entries: files.iter().map(|f| f.meta.entries).sum(),
                    raw_key_bytes: tables().map(|t| t.properties().raw_key_bytes).sum(),
                    raw_value_bytes: tables().map(|t| t.properties().raw_value_bytes).sum(),
                    stored_value_bytes: tables().map(|t| t.stored_value_bytes()).sum(),
                    files_with_model: tables().filter(|t| t.has_model()).count(),
                    model_bytes: tables().map(|t| t.model_size_bytes() as u64).sum(),
                    models_by_kind: models_by_kind(tables()),
                    model_segments: tables().map(|t| t.model_segments()).sum(),
                    index_bytes: tables().map(|t| t.index_size_bytes() as u64).sum(),
                    positive_lookups: tables().map(|t| t.lookups().0).sum(),
                    negative_lookups: tables().map(|t| t.lookups().1).sum(),
                    model_path_lookups: live.model_lookups(),
                    baseline_path_lookups: live.baseline_lookups(),
                    avg_model_lookup_ns: avg(&every.model),
                    avg_baseline_lookup_ns: avg(&every.baseline),
                    dead_files: history.dead_files,
                    avg_file_lifetime_us: (history.dead_lifetime_ns
                        / u128::from(history.dead_files.max(1))
                        / 1000) as u64,
                    models_built: history.models_built,
                    models_skipped: history.models_skipped,
                    models_wasted: history.models_wasted,
                    files_died_before_learning: history.died_before_learning,
                    learning_ns: history.learn_ns,
                    level_model_bytes: level_model.map_or(0, |m| m.size_bytes() as u64),
                    pinned_bytes: tables().map(|t| t.pinned_bytes() as u64).sum::<u64>()
                        + level_model.map_or(0, |m| m.size_bytes() as u64),
                    level_model_segments: level_model.map_or(0, |m| m.segments()),
                    guards: version.guards.get(level).map_or(0, |g| g.len()),
                    nonempty_guards: slots(level).filter(|s| s.files > 0).count(),
                    max_sstables_per_guard: slots(level)
                        .map(|s| s.files as usize)
                        .max()
                        .unwrap_or(0),
                    max_guard_depth: slots(level).map(|s| s.depth as usize).max().unwrap_or(0),
                }
            })
            .collect();
        let active = self.vlog.active_segment();
        let value_log: Vec<ValueLogSegmentStats> = self
            .vlog
            .segments()
            .into_iter()
            .map(|s| ValueLogSegmentStats {
                id: s.id,
                bytes: s.size_bytes,
                garbage_bytes: version.vlog_garbage.get(&s.id).copied().unwrap_or(0),
                active: Some(s.id) == active,
            })
            .collect();
        Stats {
            value_log_bytes: value_log.iter().map(|s| s.bytes).sum(),
            value_log,
            value_log_bytes_written: get(&c.vlog_bytes),
            writes: get(&c.writes),
            user_bytes_written: get(&c.user_bytes),
            wal_bytes_written: get(&c.wal_bytes),
            gets: get(&c.gets),
            write_stalls: get(&c.stalls),
            write_stall_ns: get(&c.stall_ns),
            write_slowdown_ns: get(&c.slowdown_ns),
            memtable_peak_bytes: get(&c.memtable_peak_bytes),
            flushes: get(&c.flushes),
            flush_bytes_written: get(&c.flush_bytes),
            compactions: get(&c.compactions),
            compaction_bytes_read: get(&c.compaction_bytes_read),
            compaction_bytes_written: get(&c.compaction_bytes_written),
            compaction_bytes_appended: get(&c.compaction_bytes_appended),
            compaction_style: version.style,
            compaction_entries_dropped: get(&c.compaction_entries_dropped),
            expired_values: get(&c.expired_values),
            gc_runs: get(&c.gc_runs),
            gc_entries_relocated: get(&c.gc_relocated),
            values_relocated: get(&c.values_relocated),
            value_log_bytes_relocated: get(&c.value_bytes_relocated),
            live_snapshots: self.reads.snapshots().count(),
            last_seqno: self.visible_seqno(),
            lookup_breakdown: self.reads.breakdown().snapshot(),
            level_models_built: get(&c.level_models_built),
            level_model_train_ns: get(&c.level_model_train_ns),
            level_model_lookups: get(&c.level_model_lookups),
            level_models_refused: get(&c.level_models_refused),
            model_path_lookups: all_lookups.model_lookups(),
            baseline_path_lookups: all_lookups.baseline_lookups(),
            models_built: levels.iter().map(|l| l.models_built).sum(),
            learning_ns_total: book.learn_ns_total(),
            at_build_training_ns: get(&c.flush_train_ns) + get(&c.compaction_train_ns),
            at_build_training_wait_ns: get(&c.train_wait_ns),
            flush_ns: get(&c.flush_ns),
            flush_training_ns: get(&c.flush_train_ns),
            compaction_ns: get(&c.compaction_ns),
            compaction_training_ns: get(&c.compaction_train_ns),
            training_ns_per_key: book.train_ns_per_key().unwrap_or(0.0),
            learning_pending: self.learner.pending(),
            reads: self.versions.reads().stats(),
            levels,
        }
    }
}
