//! The compaction executor: merges the input files of a [`Compaction`] into new files of the
//! output level, or moves a file down when nothing overlaps it.
//!
//! Dropping rules (LevelDB, plus WiscKey garbage accounting):
//! - a version of a key is dropped when a newer version of the same key, itself visible to
//!   the oldest live snapshot (`seqno <= oldest_snapshot`), exists: nobody can read it;
//! - a tombstone is dropped when it is visible to the oldest snapshot and no deeper level can
//!   hold the key (nothing left to shadow);
//! - every dropped value pointer adds its entry's bytes to the garbage of its value-log segment.
//!
//! Outputs are cut at the target file size, but never between two versions of one user key,
//! so a level >= 1 holds all versions of a key in a single file.
//!
//! No compaction may raise the live table count past the limit the kernel's mapping (or
//! open-file) limit leaves (`table_limit.rs`): the one that would is refused with a
//! `ResourceLimit` naming the options to change, before the offending output is written,
//! and the outputs it wrote are removed. A sub-compaction that panics fails the compaction
//! with `TaskPanicked` (its outputs removed, as after any failure) instead of taking the
//! thread that runs the compaction down with it.
//!
//! Values may move too (`relocate.rs`): pointers into value-log segments chosen for garbage
//! collection, and in a merge into the last level the pointers out of key order (Titan's
//! level merge, `level_merge.rs`), are rewritten to copies in segments the compaction writes;
//! the old entries count as garbage. The outcome lists those segments, which the caller makes
//! readable before it installs the edit (which installs them in the manifest).
//!
//! What else a style asks of the outputs — FLSM cuts them at guards too, commits and removes
//! guards, and keeps tombstones that sibling fragments may need — is its [`OutputLayout`]
//! (`flsm/layout.rs`); leveled compaction asks nothing more ([`LeveledLayout`]). The strategy
//! of the database's style gives the executor its layout, so the merge below tests no style.

mod key_ranges;
mod level_merge;
mod output_hints;
mod relocate;

pub(crate) use relocate::ValueRelocation;
use key_ranges::{split_by_key_range, KeyRange};

use super::table_limit::TableLimit;
use super::{Compaction, Strategy};
use crate::error::{Error, Result};
use crate::filename;
use crate::fs::FileSystem;
use crate::iter::merge::MergeCursor;
use crate::iter::source::Source;
use crate::memtable::MemtableCursor;
use crate::key::{same_user_key, unpack_trailer, SeqNo, ValueKind};
use crate::options::{CompactionFilter, Options, ReadLatest};
use crate::sst::{Builder, BuilderOptions, LayoutHints, ModelTime, TableCursor};
use crate::version::{FileMeta, Version, VersionEdit};
use crate::vlog::{entry_bytes, ValuePointer};
use relocate::Relocator;
use std::borrow::Cow;
use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// An output whose slot layout stopped fitting its keys ends at the next user key once it
/// holds at least this fraction (1/32) of the target file size: a table's fixed costs
/// (filter, index, footer) stay small beside its data, and a layout chosen for the first
/// keys costs little if the rest of the file is short.
const DRIFT_CUT_DIVISOR: u64 = 32;

/// What the executor needs from the database.
pub(crate) struct CompactionContext<'a> {
    /// The strategy of the database's style: it gives the outputs' layout.
    pub strategy: &'a dyn Strategy,
    pub fs: &'a dyn FileSystem,
    pub dir: &'a Path,
    pub opts: &'a Options,
    pub builder: BuilderOptions,
    /// Oldest seqno any reader may still read at.
    pub oldest_snapshot: SeqNo,
    /// Largest seqno any table may hold (the version set's): bounds the outputs' seqnos.
    pub last_seqno: SeqNo,
    /// Allocates file numbers.
    pub new_file_number: &'a (dyn Fn() -> u64 + Sync),
    /// What values the compaction relocates (`None`: none).
    pub values: Option<&'a ValueRelocation<'a>>,
    /// Reads the database's current state for the compaction filter
    /// (`Options::compaction_filter`); without it the filter is not asked.
    pub read_latest: Option<ReadLatest<'a>>,
}

/// The result: the edit to apply and byte counts for statistics.
pub(crate) struct CompactionOutcome {
    pub edit: VersionEdit,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub entries_dropped: u64,
    /// Values found expired and written as tombstones, each the newest version of its key
    /// among the inputs (see `Merge::expired_values`).
    pub expired_values: u64,
    /// What training the outputs' models cost (at-build learning).
    pub model_time: ModelTime,
    /// True when the outputs were appended to the next level without rewriting any of its
    /// files (FLSM fragments); false for merges that rewrite (leveled, the last level, in
    /// place).
    pub appended: bool,
    /// Value-log segments the compaction wrote, synced (directory included), as (id, size):
    /// the edit installs them (`vlog_installed`); the caller makes them readable first.
    pub segments: Vec<(u64, u64)>,
    /// Values relocated, and the bytes their copies take.
    pub values_relocated: u64,
    pub value_bytes_relocated: u64,
    /// Pointers into segments chosen for relocation that stayed in place (damaged values).
    pub values_kept: u64,
}

/// How a compaction's outputs are laid out at the output level besides the rules above, as
/// the strategy of the database's style decides.
pub trait OutputLayout {
    /// Called at each new user key of the merge (the only places an output may be cut):
    /// true when the current output must end before `user_key`.
    fn cut_before(&mut self, user_key: &[u8]) -> bool;
    /// Called when an output starts at `user_key`.
    fn output_started(&mut self, user_key: &[u8]);
    /// The first level whose files outside the compaction may hold a key of the output
    /// level (a tombstone is kept while one may).
    fn shadow_search_from(&self, output_level: usize) -> usize;
    /// True when the outputs are appended without rewriting any file of the output level.
    fn appended(&self) -> bool;
    /// Completes `edit` once every output is written (`entries_dropped` of the inputs'
    /// entries were dropped).
    fn finish(&mut self, edit: &mut VersionEdit, outputs: &[FileMeta], entries_dropped: u64);
}

/// Leveled compaction's layout: outputs are cut at the target size only, and every file of
/// the output level that overlaps is an input, so a tombstone's shadow search starts one
/// level deeper.
pub struct LeveledLayout;

impl OutputLayout for LeveledLayout {
    fn cut_before(&mut self, _user_key: &[u8]) -> bool {
        false
    }

    fn output_started(&mut self, _user_key: &[u8]) {}

    fn shadow_search_from(&self, output_level: usize) -> usize {
        output_level + 1
    }

    fn appended(&self) -> bool {
        false
    }

    fn finish(&mut self, _: &mut VersionEdit, _: &[FileMeta], _: u64) {}
}

/// True when no file outside the compaction (`inputs`) from level `first` down may contain
/// `user_key`. Levels below L0 are searched run by run: a run's files are disjoint and
/// sorted, so one binary search finds the only file of the run that may hold the key (a
/// scan of every file per tombstone before).
fn no_file_below_may_hold(
    version: &Version,
    inputs: &HashSet<u64>,
    first: usize,
    user_key: &[u8],
) -> bool {
    let outside_holds = |f: &std::sync::Arc<crate::version::TableFile>| {
        f.smallest_key() <= user_key
            && user_key <= f.largest_key()
            && !inputs.contains(&f.meta.file_id)
    };
    if first == 0 && version.levels.first().is_some_and(|l0| l0.iter().any(outside_holds)) {
        return false;
    }
    version.runs.iter().filter(|r| r.level >= first).all(|r| {
        let i = r.files.partition_point(|f| f.largest_key() < user_key);
        r.files.get(i).is_none_or(|f| !outside_holds(f))
    })
}

/// Runs `c` against `version`; the caller applies the returned edit.
pub(crate) fn execute(
    c: &Compaction,
    version: &Version,
    ctx: &CompactionContext<'_>,
) -> Result<CompactionOutcome> {
    let mut edit = VersionEdit::default();
    for f in &c.inputs {
        edit.deleted.push((c.level, f.meta.file_id));
    }
    for f in &c.next_inputs {
        edit.deleted.push((c.output_level, f.meta.file_id));
    }
    if c.is_trivial_move() {
        let f = &c.inputs[0];
        edit.added.push((c.output_level, f.meta.clone()));
        return Ok(CompactionOutcome {
            edit,
            bytes_read: 0,
            bytes_written: 0,
            entries_dropped: 0,
            expired_values: 0,
            model_time: ModelTime::default(),
            appended: false,
            segments: Vec::new(),
            values_relocated: 0,
            value_bytes_relocated: 0,
            values_kept: 0,
        });
    }
    let ranges = if ctx.strategy.splits_by_key_range() {
        split_by_key_range(c, ctx.opts.max_subcompactions)
    } else {
        vec![KeyRange::default()]
    };
    let started = AtomicU64::new(0);
    let limit = OnceLock::new();
    let shared = Shared {
        started: &started,
        table_limit: &limit,
    };
    // One layout sees the whole merge and finishes it, except where the strategy splits by
    // key range: its layouts keep no state, so each sub-compaction takes its own.
    let mut layout = ctx.strategy.layout(c, version, ctx.opts);
    let results: Vec<MergeOutcome> = if ranges.len() == 1 {
        let whole = KeyRange::default();
        vec![merge_range(c, version, ctx, layout.as_mut(), whole, shared)]
    } else if !ctx.opts.background_threads {
        // Inline mode is deterministic (tests count and fail file operations by number):
        // the ranges merge one after another on this thread.
        ranges
            .iter()
            .map(|range| {
                let mut layout = ctx.strategy.layout(c, version, ctx.opts);
                merge_range(c, version, ctx, layout.as_mut(), range.clone(), shared)
            })
            .collect()
    } else {
        std::thread::scope(|s| {
            let handles: Vec<_> = ranges
                .iter()
                .map(|range| {
                    s.spawn(move || {
                        let mut layout = ctx.strategy.layout(c, version, ctx.opts);
                        merge_range(c, version, ctx, layout.as_mut(), range.clone(), shared)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|panic| {
                        let e = Error::panicked("a sub-compaction", panic.as_ref());
                        Err((e, Written::default()))
                    })
                })
                .collect()
        })
    };
    let mut outputs = Vec::new();
    let mut garbage: BTreeMap<u64, u64> = BTreeMap::new();
    let mut entries_dropped = 0;
    let mut expired_values = 0;
    let mut model_time = ModelTime::default();
    let mut values = RelocationTotals::default();
    let mut failure = None;
    let mut written_on_failure = Written::default();
    for r in results {
        match r {
            Ok(r) => {
                outputs.extend(r.outputs);
                for (segment, bytes) in r.garbage {
                    *garbage.entry(segment).or_default() += bytes;
                }
                entries_dropped += r.entries_dropped;
                expired_values += r.expired_values;
                model_time.add(r.model_time);
                written_on_failure.segments.extend(r.values.segments.iter().map(|s| s.0));
                values.add(r.values);
            }
            Err((e, written)) => {
                written_on_failure.tables.extend(written.tables);
                written_on_failure.segments.extend(written.segments);
                failure.get_or_insert(e);
            }
        }
    }
    if let Some(e) = failure {
        written_on_failure
            .tables
            .extend(outputs.iter().map(|m| m.file_id));
        remove_written(ctx, &written_on_failure);
        return Err(e);
    }
    if !outputs.is_empty() || !values.segments.is_empty() {
        ctx.fs.sync_dir(ctx.dir)?;
    }
    layout.finish(&mut edit, &outputs, entries_dropped);
    let bytes_read = c
        .inputs
        .iter()
        .chain(&c.next_inputs)
        .map(|f| f.meta.file_size)
        .sum();
    let bytes_written = outputs.iter().map(|m| m.file_size).sum();
    edit.added = outputs.into_iter().map(|m| (c.output_level, m)).collect();
    edit.vlog_garbage = garbage.into_iter().collect();
    edit.vlog_installed = values.segments.iter().map(|s| s.0).collect();
    Ok(CompactionOutcome {
        edit,
        bytes_read,
        bytes_written,
        entries_dropped,
        expired_values,
        model_time,
        appended: layout.appended(),
        segments: values.segments,
        values_relocated: values.relocated,
        value_bytes_relocated: values.relocated_bytes,
        values_kept: values.kept,
    })
}

/// Removes what a failed compaction wrote. Best effort: a table left behind is not
/// referenced by the manifest and is removed as obsolete at the next open, a segment left
/// behind is reserved and never installed, and removed by the next open too.
fn remove_written(ctx: &CompactionContext<'_>, written: &Written) {
    for id in &written.tables {
        let _ = ctx.fs.remove(&filename::table_path(ctx.dir, *id));
    }
    if let Some(values) = ctx.values {
        for id in &written.segments {
            let _ = values.vlog.discard_segment(*id);
        }
    }
}

/// What one (sub-)merge produced.
struct MergeResult {
    outputs: Vec<FileMeta>,
    garbage: BTreeMap<u64, u64>,
    entries_dropped: u64,
    expired_values: u64,
    model_time: ModelTime,
    values: RelocationTotals,
}

/// The value relocations of one or more merges.
#[derive(Default)]
struct RelocationTotals {
    /// Segments written and synced: (id, size).
    segments: Vec<(u64, u64)>,
    relocated: u64,
    relocated_bytes: u64,
    kept: u64,
}

impl RelocationTotals {
    fn add(&mut self, other: RelocationTotals) {
        self.segments.extend(other.segments);
        self.relocated += other.relocated;
        self.relocated_bytes += other.relocated_bytes;
        self.kept += other.kept;
    }
}

/// The files a failed (sub-)merge created, which the caller removes.
#[derive(Default)]
struct Written {
    tables: Vec<u64>,
    segments: Vec<u64>,
}

/// The compaction filter's verdicts during one merge pass: the last verdict is reused for
/// the keys of its group (`Verdict::scope_bytes`), which follow it in key order.
struct FilterRun<'a> {
    filter: &'a dyn CompactionFilter,
    read: ReadLatest<'a>,
    /// The last verdict: its group (the judged key's first `scope_bytes` bytes, or the
    /// whole key for a verdict about it alone) and whether it is garbage.
    group: Option<FilterGroup>,
}

/// A verdict and the keys it covers.
struct FilterGroup {
    /// The keys' common first bytes (the whole key when `exact`).
    bytes: Vec<u8>,
    /// The verdict is about one key: it covers only a key equal to `bytes`.
    exact: bool,
    garbage: bool,
}

impl FilterRun<'_> {
    /// Whether the values of `user_key` are garbage by the filter: never outside its
    /// prefix; the group's verdict inside a judged group; else a new verdict.
    fn garbage(&mut self, user_key: &[u8]) -> bool {
        if !user_key.starts_with(self.filter.prefix()) {
            return false;
        }
        if let Some(g) = &self.group {
            let covered = if g.exact {
                user_key == g.bytes.as_slice()
            } else {
                user_key.starts_with(&g.bytes)
            };
            if covered {
                return g.garbage;
            }
        }
        let verdict = self.filter.judge(user_key, self.read);
        let exact = verdict.scope_bytes == 0 || verdict.scope_bytes >= user_key.len();
        let scope = if exact {
            user_key.len()
        } else {
            verdict.scope_bytes
        };
        self.group = Some(FilterGroup {
            bytes: user_key.get(..scope).unwrap_or(user_key).to_vec(),
            exact,
            garbage: verdict.garbage,
        });
        verdict.garbage
    }
}

/// What the sub-compactions of one compaction share: the live-table limit counts every
/// output they start, and the limit is read at most once (so a compaction does the same
/// file-system operations whatever the threads' interleaving).
#[derive(Clone, Copy)]
struct Shared<'a> {
    started: &'a AtomicU64,
    table_limit: &'a OnceLock<TableLimit>,
}

/// A (sub-)merge's result, or its error with the files it created (the caller removes
/// them).
type MergeOutcome = std::result::Result<MergeResult, (Error, Written)>;

/// Merges the entries of `range` (all of `c` with the default range).
fn merge_range(
    c: &Compaction,
    version: &Version,
    ctx: &CompactionContext<'_>,
    layout: &mut dyn OutputLayout,
    range: KeyRange,
    shared: Shared<'_>,
) -> MergeOutcome {
    let mut merge = Merge::new(c, version, ctx, layout, range, shared);
    // A compaction reads each input page once: it uses cached pages but adds none, so it
    // does not push the readers' hot set out of the page cache (direct mode). The flag is
    // per thread: each sub-compaction sets its own.
    match crate::cache::without_cache_fill(|| merge.run()) {
        Ok(()) => {
            let values = merge.relocator.map_or_else(RelocationTotals::default, |r| {
                RelocationTotals {
                    segments: r.written,
                    relocated: r.relocated,
                    relocated_bytes: r.relocated_bytes,
                    kept: r.kept,
                }
            });
            Ok(MergeResult {
                outputs: merge.outputs,
                garbage: merge.garbage,
                entries_dropped: merge.entries_dropped,
                expired_values: merge.expired_values,
                model_time: merge.model_time,
                values,
            })
        }
        Err(e) => {
            let mut tables: Vec<u64> = merge.outputs.iter().map(|m| m.file_id).collect();
            tables.extend(merge.builder.as_ref().map(|(id, _)| *id));
            let segments = merge.relocator.map(|r| r.reserved).unwrap_or_default();
            Err((e, Written { tables, segments }))
        }
    }
}

/// The merge of one compaction's inputs into its outputs.
struct Merge<'a, 'l> {
    c: &'a Compaction,
    version: &'a Version,
    ctx: &'a CompactionContext<'a>,
    layout: &'l mut dyn OutputLayout,
    /// The user keys this merge covers (sub-compactions split the compaction's).
    range: KeyRange,
    /// What the compaction's sub-compactions share.
    shared: Shared<'a>,
    input_ids: HashSet<u64>,
    /// Live tables before the compaction; the limit is read once it writes more files than
    /// it removes.
    live_before: u64,
    outputs: Vec<FileMeta>,
    builder: Option<(u64, Builder)>,
    /// What every output's builder is told of its entries (from the inputs, at the first).
    hints: Option<LayoutHints>,
    garbage: BTreeMap<u64, u64>,
    entries_dropped: u64,
    /// Values this merge found expired and turned into tombstones, counted where the value
    /// is the newest version of its key that the merge keeps (not shadowed by a newer one
    /// of its inputs): each expiry of a key is counted once, by the compaction that first
    /// finds it expired (its output holds a tombstone from then on). A newer version in a
    /// table outside the compaction is not seen, so a value replaced before it expired may
    /// count too. The server reports the total as Redis's `expired_keys`.
    expired_values: u64,
    model_time: ModelTime,
    /// Relocates values (`None` when the compaction relocates none).
    relocator: Option<Relocator<'a>>,
    /// The outputs are the only run of the last level that may hold their keys (leveled):
    /// an entry every snapshot sees is written with seqno 0, as RocksDB does at the
    /// bottommost level. No other version of its key can be older (none is below; the
    /// shadowed ones are dropped here), so its order among its key's versions holds, and
    /// the trailers of a settled last level compress to almost nothing.
    zero_seqnos: bool,
}

impl<'a, 'l> Merge<'a, 'l> {
    fn new(
        c: &'a Compaction,
        version: &'a Version,
        ctx: &'a CompactionContext<'a>,
        layout: &'l mut dyn OutputLayout,
        range: KeyRange,
        shared: Shared<'a>,
    ) -> Self {
        let zero_seqnos = c.output_level + 1 == version.levels.len()
            && layout.shadow_search_from(c.output_level) > c.output_level;
        Merge {
            c,
            version,
            ctx,
            layout,
            range,
            shared,
            input_ids: c
                .inputs
                .iter()
                .chain(&c.next_inputs)
                .map(|f| f.meta.file_id)
                .collect(),
            live_before: version.levels.iter().map(|l| l.len() as u64).sum(),
            outputs: Vec::new(),
            builder: None,
            hints: None,
            garbage: BTreeMap::new(),
            entries_dropped: 0,
            expired_values: 0,
            model_time: ModelTime::default(),
            relocator: ctx
                .values
                .filter(|v| !v.is_idle())
                .map(|v| Relocator::new(v, &version.vlog_deleted)),
            zero_seqnos,
        }
    }

    /// A merge of every input, unpositioned.
    fn cursor(&self) -> MergeCursor {
        let mut sources: Vec<Source> = self
            .c
            .inputs
            .iter()
            .chain(&self.c.next_inputs)
            .map(|f| Source::Table(TableCursor::new(f.table.clone(), true)))
            .collect();
        if let Some(m) = &self.c.memtable {
            sources.push(Source::Mem(MemtableCursor::new(m.mem.clone(), true)));
        }
        MergeCursor::new(sources, true)
    }

    /// Positions `merged` at the first entry of the range.
    fn seek_start(&self, merged: &mut MergeCursor) -> Result<()> {
        match &self.range.start {
            // The first entry of the start key: the newest version sorts first.
            Some(start) => merged.seek(start, u64::MAX),
            None => merged.seek_to_first(),
        }
    }

    /// Level merge: a first pass over the range's pointers decides whether this merge into
    /// the last level rewrites the ones out of key order (`level_merge.rs`).
    fn decide_level_merge(&mut self) -> Result<()> {
        let last = self.version.levels.len().saturating_sub(1);
        let Some(relocator) = self.relocator.as_ref() else {
            return Ok(());
        };
        if self.c.output_level != last || relocator.level_merge_threshold().is_none() {
            return Ok(());
        }
        let mut merged = self.cursor();
        self.seek_start(&mut merged)?;
        let end = self.range.end.as_deref();
        let counts = level_merge::count_out_of_order(&mut merged, end, &self.version.vlog_deleted)?;
        if let Some(r) = self.relocator.as_mut() {
            r.decide_level_merge(&counts);
        }
        Ok(())
    }

    /// Merges every input entry of the range in order, dropping what no reader can see,
    /// into outputs.
    fn run(&mut self) -> Result<()> {
        self.decide_level_merge()?;
        let mut merged = self.cursor();
        self.seek_start(&mut merged)?;
        let now = self.ctx.opts.clock.now_unix_ms();
        let mut filter = self
            .ctx
            .opts
            .compaction_filter
            .as_deref()
            .zip(self.ctx.read_latest)
            .map(|(filter, read)| FilterRun {
                filter,
                read,
                group: None,
            });
        let mut current_key: Vec<u8> = Vec::new();
        let mut has_key = false;
        // Seqno of the previous (newer) entry of the current key; MAX when it is the first.
        let mut last_seqno_for_key = SeqNo::MAX;
        while merged.valid() {
            let user_key = merged.key();
            if self.range.end.as_deref().is_some_and(|end| user_key >= end) {
                break;
            }
            let Some((seqno, mut kind)) = unpack_trailer(merged.trailer()) else {
                // Every source validated its trailers while decoding them.
                merged.advance()?;
                continue;
            };
            // An expired value is a tombstone for every reader (`crate::expiry`): written as
            // one, it keeps hiding the key's older versions, and is dropped by the rules for
            // tombstones once nothing below can hold the key.
            let expired = kind == ValueKind::ExpiringValue
                && crate::expiry::stored_has_expired(merged.value(), now);
            if expired {
                kind = ValueKind::Delete;
            }
            if !has_key || !same_user_key(&current_key, user_key) {
                // A key boundary: the only place an output may be cut.
                self.key_boundary(user_key)?;
                current_key.clear();
                current_key.extend_from_slice(user_key);
                has_key = true;
                last_seqno_for_key = SeqNo::MAX;
            }
            let shadowed = last_seqno_for_key <= self.ctx.oldest_snapshot;
            last_seqno_for_key = seqno;
            if expired && !shadowed {
                self.expired_values += 1;
            }
            let filtered = kind != ValueKind::Delete
                && filter.as_mut().is_some_and(|f| f.garbage(user_key));
            if shadowed || filtered || self.drops_tombstone(kind, seqno, user_key) {
                self.note_dropped(kind, user_key, merged.value());
            } else {
                if self.builder.is_none() {
                    self.start_output(user_key)?;
                }
                let value = match (&mut self.relocator, kind) {
                    (Some(r), ValueKind::Pointer) => {
                        r.output(user_key, merged.value(), &mut self.garbage)?
                    }
                    (_, ValueKind::Delete) => Cow::Borrowed(&[][..]),
                    _ => Cow::Borrowed(merged.value()),
                };
                let seqno = if self.zero_seqnos
                    && kind != ValueKind::Delete
                    && seqno <= self.ctx.oldest_snapshot
                {
                    0
                } else {
                    seqno
                };
                if let Some((_, b)) = self.builder.as_mut() {
                    b.add(user_key, seqno, kind, &value)?;
                }
            }
            merged.advance()?;
        }
        if let Some((id, b)) = self.builder.take() {
            self.outputs.push(finish(id, b, &mut self.model_time)?);
        }
        if let Some(r) = self.relocator.as_mut() {
            r.finish()?;
        }
        Ok(())
    }

    /// At a new user key: ends the current output if the layout cuts here, it reached the
    /// target size, or its slot layout stopped fitting the keys (once it holds a
    /// [`DRIFT_CUT_DIVISOR`]th of the target size: the next output chooses its layout from
    /// keys of the new shape; `Builder::layout_drifted`).
    fn key_boundary(&mut self, user_key: &[u8]) -> Result<()> {
        let cut = self.layout.cut_before(user_key);
        let target = self.ctx.opts.target_file_size_bytes;
        let full = self.builder.as_ref().is_some_and(|(_, b)| {
            let size = b.estimated_size_bytes();
            size >= target || (b.layout_drifted() && size >= target / DRIFT_CUT_DIVISOR)
        });
        if cut || full {
            if let Some((id, b)) = self.builder.take() {
                self.outputs.push(finish(id, b, &mut self.model_time)?);
            }
        }
        Ok(())
    }

    /// A tombstone every reader sees, of a key no file below the outputs may hold: nothing
    /// is left for it to shadow.
    fn drops_tombstone(&self, kind: ValueKind, seqno: SeqNo, user_key: &[u8]) -> bool {
        kind == ValueKind::Delete
            && seqno <= self.ctx.oldest_snapshot
            && no_file_below_may_hold(
                self.version,
                &self.input_ids,
                self.layout.shadow_search_from(self.c.output_level),
                user_key,
            )
    }

    /// Counts a dropped entry, and its value-log entry as garbage.
    fn note_dropped(&mut self, kind: ValueKind, user_key: &[u8], value: &[u8]) {
        self.entries_dropped += 1;
        if kind == ValueKind::Pointer {
            if let Some(p) = ValuePointer::decode(value) {
                *self.garbage.entry(p.segment).or_default() += entry_bytes(user_key.len(), &p);
            }
        }
    }

    /// Starts an output at `user_key`, after checking that one more file keeps the live
    /// table count within the limit (if not, fails; the caller removes the outputs).
    fn start_output(&mut self, user_key: &[u8]) -> Result<()> {
        let outputs_after = self.shared.started.fetch_add(1, Ordering::Relaxed) + 1;
        let removed = self.input_ids.len() as u64;
        // With `max_open_files` tables hold descriptors and mappings only within the bound,
        // so the kernel's limits do not cap the number of live tables.
        if outputs_after > removed && self.ctx.opts.max_open_files.is_none() {
            let (fs, mode) = (self.ctx.fs, self.ctx.opts.read_mode);
            let limit = self
                .shared
                .table_limit
                .get_or_init(|| TableLimit::read(fs, mode));
            let live_after = self.live_before.saturating_sub(removed) + outputs_after;
            limit.check(self.live_before, live_after, self.ctx.opts)?;
        }
        let hints = match (&self.hints, &self.c.memtable) {
            (Some(h), _) => h.clone(),
            // A memtable compaction has no file inputs: its memtable's bounds are the
            // outputs'.
            (None, memtable) => {
                let mut h = match memtable {
                    Some(m) => m.hints.clone(),
                    None => {
                        let inputs: Vec<_> =
                            self.c.inputs.iter().chain(&self.c.next_inputs).collect();
                        output_hints::output_hints(
                            &inputs,
                            self.ctx.builder.block_records,
                            self.ctx.last_seqno,
                        )?
                    }
                };
                if self.zero_seqnos {
                    // Seqno 0 joins the range; when every input entry is seen by every
                    // snapshot, it is the whole range and trailers take one byte.
                    let oldest = self.ctx.oldest_snapshot;
                    h.seqnos = h.seqnos.map(|(_, hi)| (0, if hi <= oldest { 0 } else { hi }));
                }
                self.hints.insert(h).clone()
            }
        };
        self.layout.output_started(user_key);
        let id = (self.ctx.new_file_number)();
        let path = filename::table_path(self.ctx.dir, id);
        let file = self.ctx.fs.create(&path)?;
        self.builder = Some((
            id,
            Builder::with_hints(file, path, self.ctx.builder, hints),
        ));
        Ok(())
    }
}

fn finish(file_id: u64, b: Builder, model_time: &mut ModelTime) -> Result<FileMeta> {
    let s = b.finish()?;
    model_time.add(s.model_time);
    Ok(FileMeta::of_table(file_id, &s))
}
