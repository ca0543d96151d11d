//! Value-log garbage collection (WiscKey §3.3, done through the LSM instead of a tail
//! pointer, and without a detour through the memtable): pick the segment with the highest
//! garbage ratio, rewrite in place the tables that may point into it — compactions that
//! relocate every such pointer into a fresh segment (`compaction/executor/relocate.rs`) and
//! leave every table at its level — then record the segment as deleted in the manifest and
//! delete its file once no snapshot or iterator can reach it.
//!
//! Which tables: each table records the span of segment ids its pointers reach
//! (`FileMeta::value_segments`); a table of an older build, without one, may point anywhere.
//! L0 cannot be rewritten in place (its files are ordered by number), so when an L0 file may
//! point into the segment, L0 is compacted down first, as a compaction of L0 would. Leveled
//! levels are rewritten one contiguous run of such files at a time (the outputs then overlap
//! nothing else of the level); FLSM levels whole guards at a time (a guard's files must be
//! merged together).
//!
//! Memtables: a segment receives appends only while it is the newest, so only memtables
//! written to while it was may point into it. Automatic GC skips such segments; an explicit
//! run flushes them first. Both wait for the write group in flight (`committing`) before they
//! look, so no pointer into the segment can still be on its way into a memtable.
//!
//! The active segment: an open keeps appending to the newest segment, so its garbage can
//! grow without a rollover. An explicit run seals and collects it like any other; automatic
//! GC seals it once its garbage passes the GC ratio and a quarter of the segment size, and
//! collects it later like any sealed segment.
//!
//! The old GC (which re-appended live entries through the write path, landing them in L0
//! and slowing point reads) is gone: nothing needs it.
//!
//! Crash safety: each rewrite is a compaction with its own edit (its segments reserved before
//! they are written, installed with its tables); the deletion is a later edit, and the file
//! is removed after it. A crash anywhere leaves every table pointing at a live segment.

use super::DbInner;
use crate::compaction::{l0_output_level, Compaction};
use crate::error::Result;
use crate::version::{CompactionStyle, TableFile, Version, VersionEdit};
use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;

/// What one GC run did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GcReport {
    /// The segment collected, if one qualified and could be collected.
    pub segment: Option<u64>,
    /// Table entries the rewrites read.
    pub entries_scanned: u64,
    /// Values the rewrites relocated into fresh segments (those of the collected segment
    /// still live, and any of other segments past `value_log_gc_ratio` they met).
    pub entries_relocated: u64,
    /// Size of the collected segment file.
    pub segment_bytes: u64,
    /// Tables the rewrites replaced (their levels unchanged, L0 aside).
    pub tables_rewritten: u64,
}

/// The least garbage, as a fraction of `value_log_segment_bytes`, for which automatic GC
/// seals the active segment (see `seal_active_segment_with_garbage`).
const ACTIVE_SEAL_GARBAGE_FRACTION: f64 = 0.25;

impl DbInner {
    /// Sealed segments (and, `with_active`, the active one) whose garbage ratio is at least
    /// `min_ratio` and whose garbage is not 0, as `(id, size)`, worst first; segments
    /// deleted already or waiting for their readers are left out.
    pub(crate) fn gc_candidates(&self, min_ratio: f64, with_active: bool) -> Vec<(u64, u64)> {
        let version = self.versions.current();
        let active = self.vlog.active_segment().filter(|_| !with_active);
        let pending = self.work.pending_deletions();
        let mut found: Vec<(u64, u64, f64)> = self
            .vlog
            .segments()
            .into_iter()
            .filter(|s| Some(s.id) != active && !pending.contains(&s.id))
            .filter_map(|s| {
                let garbage = *version.vlog_garbage.get(&s.id)?;
                let ratio = garbage as f64 / s.size_bytes.max(1) as f64;
                (garbage > 0 && ratio >= min_ratio).then_some((s.id, s.size_bytes, ratio))
            })
            .collect();
        found.sort_by(|a, b| b.2.total_cmp(&a.2));
        found.into_iter().map(|(id, size, _)| (id, size)).collect()
    }

    /// The segment with the highest garbage ratio, if that ratio is at least `min_ratio`
    /// and it has any garbage; with `with_active`, the active segment competes too.
    pub fn worst_segment(&self, min_ratio: f64, with_active: bool) -> Option<(u64, u64)> {
        self.gc_candidates(min_ratio, with_active)
            .into_iter()
            .next()
    }

    /// The segment automatic GC would collect now: the worst sealed one past
    /// `value_log_gc_ratio` that no memtable may point into.
    pub(crate) fn automatic_gc_candidate(&self) -> Option<(u64, u64)> {
        if self.opts.value_log_gc_ratio >= 1.0 {
            return None;
        }
        if self.work.automatic_gc_held() {
            return None;
        }
        let mut candidates = self.gc_candidates(self.opts.value_log_gc_ratio, false);
        let skipped = self.work.skipped_segments();
        candidates.retain(|(id, _)| !skipped.contains(id));
        if candidates.is_empty() {
            return None;
        }
        self.wait_for_write_group();
        candidates
            .into_iter()
            .find(|&(id, _)| !self.memtables_may_point_into(id))
    }

    /// Automatic GC (a unit of background work): collects [`Self::automatic_gc_candidate`]
    /// unless an explicit run is in progress. Returns whether it collected a segment.
    /// REQUIRES: the caller holds the background part's `unit`.
    pub(crate) fn run_automatic_gc(&self) -> Result<bool> {
        let Some(_gc) = self.work.try_gc_turn() else {
            return Ok(false);
        };
        self.seal_active_segment_with_garbage()?;
        let Some((segment, bytes)) = self.automatic_gc_candidate() else {
            return Ok(false);
        };
        let report = crate::cache::without_cache_fill(|| self.collect_segment(segment, bytes))?;
        Ok(report.segment.is_some())
    }

    /// Seals the active value-log segment when its garbage ratio reached
    /// `value_log_gc_ratio` and its garbage is at least [`ACTIVE_SEAL_GARBAGE_FRACTION`] of
    /// `value_log_segment_bytes`. An open keeps appending to the newest segment, so a
    /// database reopened often can keep its garbage there, and automatic GC collects sealed
    /// segments only: sealed, it is collected by a later automatic GC, once no memtable
    /// points into it. The garbage floor bounds the churn: every seal frees at least that
    /// much. REQUIRES: the caller holds the background part's `gc`.
    fn seal_active_segment_with_garbage(&self) -> Result<()> {
        let ratio = self.opts.value_log_gc_ratio;
        if ratio >= 1.0 || self.opts.read_only {
            return Ok(());
        }
        let Some(active) = self.vlog.active_segment() else {
            return Ok(());
        };
        // The garbage floor first: a map lookup, where the size needs the segment list (this
        // runs with every unit of background work, after every write in inline mode).
        let garbage = self
            .versions
            .current()
            .vlog_garbage
            .get(&active)
            .copied()
            .unwrap_or(0) as f64;
        let floor = self.opts.value_log_segment_bytes as f64 * ACTIVE_SEAL_GARBAGE_FRACTION;
        if garbage == 0.0 || garbage < floor {
            return Ok(());
        }
        let size = self
            .vlog
            .segments()
            .into_iter()
            .find(|s| s.id == active && !s.sealed)
            .map_or(0, |s| s.size_bytes);
        if size == 0 || garbage < ratio * size as f64 {
            return Ok(());
        }
        // A failed sync leaves the segment's tail unknown: poison, as a write would.
        self.vlog.seal(active).inspect_err(|e| self.poison(e))
    }

    /// An explicit GC run (`Db::run_value_log_gc`): collects the segment with the most
    /// garbage, the active segment included (sealed first: an open keeps appending to the
    /// newest segment, so a database reopened often can hold all its garbage there), after
    /// flushing the memtables if they may point into it. Returns what it did; an empty
    /// report when no segment has garbage.
    pub fn run_value_log_gc(&self) -> Result<GcReport> {
        self.check_writable()?;
        let _gc = self.work.gc_turn();
        self.delete_unreachable_segments()?;
        let Some((segment, segment_bytes)) = self.worst_segment(0.0, true) else {
            return Ok(GcReport::default());
        };
        if self.vlog.active_segment() == Some(segment) {
            // A failed sync leaves the segment's tail unknown: poison, as a write would.
            self.vlog.seal(segment).inspect_err(|e| self.poison(e))?;
        }
        self.wait_for_write_group();
        if self.memtables_may_point_into(segment) {
            self.flush_and_wait()?;
        }
        let _w = self.work.unit_turn();
        crate::cache::without_cache_fill(|| self.collect_segment(segment, segment_bytes))
            .inspect_err(|e| self.poison(e))
    }

    /// Rewrites the tables that may point into `segment` (of `segment_bytes`) and, when none
    /// is left that may, records it as deleted. REQUIRES: the background part's `unit` and `gc` held, no
    /// memtable points into the segment.
    fn collect_segment(&self, segment: u64, segment_bytes: u64) -> Result<GcReport> {
        let mut run = Rewrites {
            forced: BTreeSet::from([segment]),
            report: GcReport {
                segment_bytes,
                ..GcReport::default()
            },
            rewritten: HashSet::new(),
            kept: 0,
        };
        let version = self.versions.current();
        if version.levels[0].iter().any(|f| run.may_point_into(f)) {
            run.compact(self, &self.l0_down(&version), &version)?;
        }
        for level in 1..version.levels.len() {
            loop {
                let version = self.versions.current();
                let files: Vec<Arc<TableFile>> = version.levels[level]
                    .iter()
                    .filter(|f| run.may_point_into(f))
                    .cloned()
                    .collect();
                let Some(c) = in_place(&version, level, files) else {
                    break;
                };
                run.compact(self, &c, &version)?;
            }
        }
        let version = self.versions.current();
        let tables_left = version
            .levels
            .iter()
            .flatten()
            .any(|f| run.may_point_into(f));
        self.wait_for_write_group();
        let mut report = run.report;
        if version.vlog_deleted.contains(segment) {
            // A rewrite made it all garbage, and its edit deleted it.
        } else if tables_left || run.kept > 0 || self.memtables_may_point_into(segment) {
            log::warn!("value-log segment {segment} is still referenced; GC leaves it");
            self.work.skip_segment(segment);
            return Ok(report);
        } else {
            // A failed manifest write leaves the manifest's tail unknown (log_and_apply's
            // contract): appending later edits after it could lose them, so poison.
            self.log_and_apply(VersionEdit {
                vlog_deleted: vec![segment],
                ..VersionEdit::default()
            })
            .inspect_err(|e| self.poison(e))?;
            self.schedule_segment_deletions(&[segment])?;
        }
        self.counters.note_gc(report.entries_relocated);
        report.segment = Some(segment);
        Ok(report)
    }

    /// The compaction of every L0 file down, where a compaction of L0 would go (leveled:
    /// L0's output level, merged with the files there it overlaps; FLSM: L1).
    fn l0_down(&self, version: &Version) -> Compaction {
        let inputs = version.levels[0].clone();
        let output_level = match version.style {
            CompactionStyle::Leveled => l0_output_level(version, &self.opts),
            CompactionStyle::Flsm => 1,
        };
        let lo = inputs.iter().map(|f| f.smallest_key()).min();
        let hi = inputs.iter().map(|f| f.largest_key()).max();
        Compaction {
            level: 0,
            next_inputs: version
                .whole_slots(output_level, version.overlapping(output_level, lo, hi)),
            inputs,
            output_level,
            allow_trivial_move: false,
            memtable: None,
        }
    }

    /// Makes `segments`, just recorded as deleted in the manifest, wait for the readers that
    /// may still reach them, and deletes the files none can.
    pub(crate) fn schedule_segment_deletions(&self, segments: &[u64]) -> Result<()> {
        if segments.is_empty() {
            return Ok(());
        }
        // No write made the deletion visible: a reader registered at the current seqno may
        // still hold a version that points into the segments, so wait for a later one.
        let after = self.visible_seqno() + 1;
        self.work.schedule_deletions(segments, after);
        self.delete_unreachable_segments()
    }

    /// True when a memtable may hold a pointer into `segment`.
    pub(crate) fn memtables_may_point_into(&self, segment: u64) -> bool {
        let memtables = self.writes.memtables();
        memtables.iter().any(|m| m.may_point_into(segment))
    }

    /// Waits until the write group being committed (if any) has inserted its entries into
    /// the memtable: its value-log appends are then visible there.
    pub(crate) fn wait_for_write_group(&self) {
        self.writes.wait_for_write_group();
    }

    /// Deletes the files of deleted segments that no live snapshot can still read.
    pub fn delete_unreachable_segments(&self) -> Result<()> {
        let oldest = self.reads.snapshots().oldest();
        self.work
            .delete_unreachable(oldest, |segment| self.vlog.delete_segment(segment))
    }
}

/// The rewrites of one GC run.
struct Rewrites {
    /// The segment collected.
    forced: BTreeSet<u64>,
    report: GcReport,
    /// Outputs of this run: they hold no pointer into the segment, whatever their span.
    rewritten: HashSet<u64>,
    /// Pointers into the segment the rewrites left in place (damaged values).
    kept: u64,
}

impl Rewrites {
    /// True when `f` may point into the collected segment.
    fn may_point_into(&self, f: &Arc<TableFile>) -> bool {
        self.forced.iter().any(|&s| f.meta.may_point_into(s))
            && !self.rewritten.contains(&f.meta.file_id)
    }

    /// Runs `c` against `version`, relocating every pointer into the segment.
    fn compact(&mut self, db: &DbInner, c: &Compaction, version: &Version) -> Result<()> {
        if db.life.is_closed() {
            return Err(crate::Error::Closed);
        }
        let outcome = db.run_compaction_with(c, version, &self.forced)?;
        let inputs = c.inputs.iter().chain(&c.next_inputs);
        self.report.entries_scanned += inputs.map(|f| f.meta.entries).sum::<u64>();
        self.report.entries_relocated += outcome.values_relocated;
        self.report.tables_rewritten += outcome.edit.added.len() as u64;
        self.rewritten
            .extend(outcome.edit.added.iter().map(|(_, m)| m.file_id));
        self.kept += outcome.values_kept;
        Ok(())
    }
}

/// The in-place rewrite of `files` (of `level` >= 1, in key order) that GC runs next, or
/// `None` when there are none: leveled, the first run of consecutive files of the level
/// among them (outputs within its span overlap nothing else of the level); FLSM, all of
/// them with every file of their guards. The files are the compaction's `next_inputs`, so a
/// leveled rewrite splits into sub-compactions.
pub(super) fn in_place(
    version: &Version,
    level: usize,
    files: Vec<Arc<TableFile>>,
) -> Option<Compaction> {
    let first = files.first()?;
    let next_inputs = match version.style {
        CompactionStyle::Flsm => version.whole_slots(level, files),
        CompactionStyle::Leveled => {
            let all = &version.levels[level];
            let start = all
                .iter()
                .position(|f| f.meta.file_id == first.meta.file_id)?;
            let picked: HashSet<u64> = files.iter().map(|f| f.meta.file_id).collect();
            all[start..]
                .iter()
                .take_while(|f| picked.contains(&f.meta.file_id))
                .cloned()
                .collect()
        }
    };
    Some(Compaction {
        level,
        inputs: Vec::new(),
        next_inputs,
        output_level: level,
        allow_trivial_move: false,
        memtable: None,
    })
}
