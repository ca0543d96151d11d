//! `Version`: an immutable snapshot of the LSM's files, level by level, plus value-log
//! garbage state. Readers clone an `Arc<Version>` and search it without locks.
//!
//! Invariants: L0 files are ordered newest first (by file id) and may overlap; files of a
//! level >= 1 are ordered by smallest key. Leveled: they do not overlap, and every version of
//! a user key at such a level lives in one file. FLSM: each level >= 1 has sorted guards, every
//! file lies inside one guard's slot, files of one slot may overlap, and the guards of level
//! `l` are a subset of level `l + 1`'s. Either way a newer version of a key is never in a
//! deeper level, and reads search `runs` (see `runs.rs`), never `levels`, at levels >= 1.

use super::guards::{file_fits, slot_of};
use super::level_model::LevelModel;
use super::runs::{guarded_runs, leveled_runs, SortedRun};
use super::segment_set::SegmentSet;
use super::style::CompactionStyle;
use super::table_file::TableFile;
use crate::error::Result;
use crate::index::projection::project;
use crate::key::SeqNo;
use crate::sst::filter::key_hash;
use crate::sst::Entry;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

/// FLSM: the shape of one guard's slot and the seeks that landed in it.
#[derive(Debug)]
pub struct SlotInfo {
    /// Files of the slot.
    pub files: u32,
    /// Sorted runs the slot's files span (1 when they do not overlap): what a lookup in the
    /// slot may probe, and what `max_sstables_per_guard` limits.
    pub depth: u32,
    /// The longest streak of consecutive seeks of its level that landed in this slot while
    /// the version was installed (seek-based compaction fires at the threshold).
    pub(crate) seeks: AtomicU32,
}

/// One more seek of a level landing in `slot`, given the level's streak `cur` (the slot of
/// the previous seek in the high 32 bits, the length of its streak in the low 32; 0: none):
/// the new packed streak and its length. Concurrent seeks may lose an update; the streak is
/// a heuristic, not a count.
pub(crate) fn seek_streak_step(cur: u64, slot: usize) -> (u64, u32) {
    let (last, len) = ((cur >> 32) as usize, cur as u32);
    let len = if len > 0 && last == slot {
        len.saturating_add(1)
    } else {
        1
    };
    (((slot as u64) << 32) | u64::from(len), len)
}

/// Sorted runs whose candidate file a point lookup finds before probing any of them (so
/// their filter lines load together); runs past it are searched as the lookup reaches them.
const PREFETCHED_RUNS: usize = 16;

/// The files of the tree at one point in time.
#[derive(Debug, Clone)]
pub struct Version {
    /// How levels >= 1 are organized.
    pub style: CompactionStyle,
    /// Files per level; see the module invariants.
    pub levels: Vec<Vec<Arc<TableFile>>>,
    /// FLSM: the sorted guard keys of each level (empty for L0 and under leveled).
    pub guards: Vec<Arc<Vec<Vec<u8>>>>,
    /// Levels >= 1 as sorted runs, shallowest level first, newest run of a level first
    /// (rebuilt by [`Version::rebuild_runs`] whenever files or guards change).
    pub runs: Vec<SortedRun>,
    /// FLSM: per level, per slot, its file count, depth and seek count (empty under
    /// leveled).
    pub slots: Arc<Vec<Vec<SlotInfo>>>,
    /// FLSM: per level, the current streak of consecutive seeks into one slot (packed, see
    /// [`seek_streak_step`]), or `None` for a level without a slot of overlapping files
    /// (where seeks need not even find their slot).
    pub(crate) seek_streaks: Arc<Vec<Option<AtomicU64>>>,
    /// Garbage bytes per live value-log segment (WiscKey GC input).
    pub vlog_garbage: BTreeMap<u64, u64>,
    /// Segments deleted by GC, or removed by an open as empty (pointers into them are
    /// obsolete), as runs of consecutive ids.
    pub vlog_deleted: SegmentSet,
    /// Segments reserved in the manifest by a compaction that has not installed them yet
    /// (after a crash: segments an open removes).
    pub vlog_reserved: BTreeSet<u64>,
    /// The final size of each live sealed segment the manifest recorded (segment id →
    /// bytes); an open checks every segment file against it.
    pub vlog_sealed: BTreeMap<u64, u64>,
    /// Level models (Bourbon level learning), per level; set at most once per version and
    /// carried to the next version while the level's files do not change.
    pub level_models: Vec<OnceLock<Arc<LevelModel>>>,
}

impl Version {
    /// An empty leveled version with `num_levels` levels.
    #[cfg(test)]
    pub fn new(num_levels: usize) -> Self {
        Self::with_style(num_levels, CompactionStyle::Leveled)
    }

    /// An empty version with `num_levels` levels of the given style.
    pub fn with_style(num_levels: usize, style: CompactionStyle) -> Self {
        let mut v = Version {
            style,
            levels: vec![Vec::new(); num_levels],
            guards: (0..num_levels).map(|_| Arc::new(Vec::new())).collect(),
            runs: Vec::new(),
            slots: Arc::new(Vec::new()),
            seek_streaks: Arc::new(Vec::new()),
            vlog_garbage: BTreeMap::new(),
            vlog_deleted: SegmentSet::new(),
            vlog_reserved: BTreeSet::new(),
            vlog_sealed: BTreeMap::new(),
            level_models: vec![OnceLock::new(); num_levels],
        };
        v.rebuild_runs();
        v
    }

    /// Recomputes `runs` and `slots` (seek counts start over) from `levels` and `guards`.
    pub(crate) fn rebuild_runs(&mut self) {
        self.runs = match self.style {
            CompactionStyle::Leveled => leveled_runs(&self.levels),
            CompactionStyle::Flsm => (1..self.levels.len())
                .flat_map(|l| guarded_runs(l, &self.guards[l], &self.levels[l]))
                .collect(),
        };
        self.slots = Arc::new(match self.style {
            CompactionStyle::Leveled => Vec::new(),
            CompactionStyle::Flsm => {
                let mut slots: Vec<Vec<SlotInfo>> = self
                    .guards
                    .iter()
                    .map(|g| {
                        (0..=g.len())
                            .map(|_| SlotInfo {
                                files: 0,
                                depth: 0,
                                seeks: AtomicU32::new(0),
                            })
                            .collect()
                    })
                    .collect();
                // Runs of a level come newest first; the i-th run of a level has depth i + 1.
                let mut prev_level = 0;
                let mut depth = 0;
                for run in &self.runs {
                    depth = if run.level == prev_level {
                        depth + 1
                    } else {
                        1
                    };
                    prev_level = run.level;
                    let guards = &self.guards[run.level];
                    for f in &run.files {
                        if let Some(s) = slots[run.level].get_mut(slot_of(guards, f.smallest_key()))
                        {
                            s.files += 1;
                            s.depth = s.depth.max(depth);
                        }
                    }
                }
                slots
            }
        });
        self.seek_streaks = Arc::new(
            (0..self.levels.len())
                .map(|l| {
                    let crowded = self
                        .slots
                        .get(l)
                        .is_some_and(|s| s.iter().any(|s| s.depth >= 2));
                    crowded.then(|| AtomicU64::new(0))
                })
                .collect(),
        );
    }

    /// FLSM: the slot of `user_key` among the guards of `level`.
    pub fn slot(&self, level: usize, user_key: &[u8]) -> usize {
        self.guards.get(level).map_or(0, |g| slot_of(g, user_key))
    }

    /// FLSM: the files of `level` in slot `slot`, in key order.
    pub fn slot_files(&self, level: usize, slot: usize) -> Vec<Arc<TableFile>> {
        let (Some(files), Some(guards)) = (self.levels.get(level), self.guards.get(level)) else {
            return Vec::new();
        };
        files
            .iter()
            .filter(|f| slot_of(guards, f.smallest_key()) == slot)
            .cloned()
            .collect()
    }

    /// `files` of `level` widened, under FLSM at levels >= 1, to every file of the slots they
    /// are in: a compaction must take a slot's overlapping files together, or a rewritten
    /// (hence renumbered) older file would shadow a newer one left behind. Unchanged under
    /// leveled.
    pub fn whole_slots(&self, level: usize, files: Vec<Arc<TableFile>>) -> Vec<Arc<TableFile>> {
        if self.style != CompactionStyle::Flsm || level == 0 || files.is_empty() {
            return files;
        }
        let guards = &self.guards[level];
        let slots: BTreeSet<usize> = files
            .iter()
            .map(|f| slot_of(guards, f.smallest_key()))
            .collect();
        self.levels[level]
            .iter()
            .filter(|f| slots.contains(&slot_of(guards, f.smallest_key())))
            .cloned()
            .collect()
    }

    /// Checks the structural invariants of the module doc: L0 newest first; levels >= 1
    /// sorted by smallest key; leveled levels disjoint; FLSM guards sorted and unique, each
    /// file inside one slot, level `l`'s guards a subset of level `l + 1`'s; every run
    /// disjoint and sorted. Returns the first violation.
    pub fn check_invariants(&self) -> std::result::Result<(), String> {
        let show = |k: &[u8]| String::from_utf8_lossy(k).into_owned();
        if self.levels[0]
            .windows(2)
            .any(|w| w[0].meta.file_id < w[1].meta.file_id)
        {
            return Err("L0 is not ordered newest first".into());
        }
        for (level, files) in self.levels.iter().enumerate().skip(1) {
            if files
                .windows(2)
                .any(|w| w[0].meta.smallest > w[1].meta.smallest)
            {
                return Err(format!("level {level} is not sorted by smallest key"));
            }
            let guards = &self.guards[level];
            if self.style == CompactionStyle::Leveled {
                if !guards.is_empty() {
                    return Err(format!("leveled level {level} has guards"));
                }
                if files
                    .windows(2)
                    .any(|w| w[0].largest_key() >= w[1].smallest_key())
                {
                    return Err(format!("leveled level {level} has overlapping files"));
                }
                continue;
            }
            if guards.windows(2).any(|w| w[0] >= w[1]) {
                return Err(format!("guards of level {level} are not sorted and unique"));
            }
            if let Some(f) = files.iter().find(|f| !file_fits(guards, f)) {
                return Err(format!(
                    "file {} [{}, {}] of level {level} straddles a guard",
                    f.meta.file_id,
                    show(f.smallest_key()),
                    show(f.largest_key())
                ));
            }
            if let Some(deeper) = self.guards.get(level + 1) {
                if let Some(g) = guards.iter().find(|g| deeper.binary_search(g).is_err()) {
                    return Err(format!(
                        "guard {} of level {level} is not a guard of level {}",
                        show(g),
                        level + 1
                    ));
                }
            }
        }
        if !self.guards[0].is_empty() {
            return Err("L0 has guards".into());
        }
        for (i, run) in self.runs.iter().enumerate() {
            if run
                .files
                .windows(2)
                .any(|w| w[0].largest_key() >= w[1].smallest_key())
            {
                return Err(format!(
                    "run {i} (level {}) has overlapping files",
                    run.level
                ));
            }
        }
        let in_runs: usize = self.runs.iter().map(|r| r.files.len()).sum();
        let in_levels: usize = self.levels.iter().skip(1).map(Vec::len).sum();
        if in_runs != in_levels {
            return Err(format!(
                "runs hold {in_runs} files, levels >= 1 hold {in_levels}"
            ));
        }
        Ok(())
    }

    /// FLSM seek-based compaction: notes a seek to `user_key` at every level >= 1. A slot is
    /// due once `threshold` consecutive seeks of its level landed in it while it held
    /// overlapping files (depth >= 2): a guard that a workload keeps seeking into is worth
    /// merging, while random seeks spread over many guards (which would otherwise compact
    /// everything, at the readers' expense) almost never make a streak. Returns true when a
    /// slot became due (the caller then wakes the background thread).
    pub(crate) fn note_seek(&self, user_key: &[u8], threshold: u32) -> bool {
        if threshold == 0 {
            return false;
        }
        let mut due = false;
        for (level, slots) in self.slots.iter().enumerate() {
            let Some(Some(streak)) = self.seek_streaks.get(level) else {
                continue;
            };
            let slot = self.slot(level, user_key);
            let Some(s) = slots.get(slot) else {
                continue;
            };
            if s.files == 0 {
                continue;
            }
            let (next, len) = seek_streak_step(streak.load(Ordering::Relaxed), slot);
            streak.store(next, Ordering::Relaxed);
            if s.depth >= 2 && len == threshold {
                s.seeks.fetch_max(len, Ordering::Relaxed);
                due = true;
            }
        }
        due
    }

    /// FLSM: the level and slot whose seek count reached `threshold`, shallowest first.
    pub(crate) fn seek_compaction_due(&self, threshold: u32) -> Option<(usize, usize)> {
        if threshold == 0 {
            return None;
        }
        self.slots.iter().enumerate().find_map(|(level, slots)| {
            slots
                .iter()
                .position(|s| s.depth >= 2 && s.seeks.load(Ordering::Relaxed) >= threshold)
                .map(|slot| (level, slot))
        })
    }

    /// Total bytes of the files of `level`.
    pub fn level_bytes(&self, level: usize) -> u64 {
        self.levels
            .get(level)
            .map_or(0, |fs| fs.iter().map(|f| f.meta.file_size).sum())
    }

    /// Index of the first file of run `run` whose largest user key is `>= user_key` (the
    /// only file of the run that may hold it), or the run's file count: 8-byte prefix
    /// comparisons, bytes only on ties.
    pub(crate) fn file_index(&self, run: usize, user_key: &[u8]) -> usize {
        let key_prefix = project(user_key, 0);
        self.runs
            .get(run)
            .map_or(0, |r| r.file_index(user_key, key_prefix))
    }

    /// The newest entry of `user_key` visible at `snapshot` in the files (tombstones
    /// included), searching L0 newest first and then one file per sorted run.
    pub fn get(&self, user_key: &[u8], snapshot: SeqNo) -> Result<Option<Entry>> {
        let hash = key_hash(user_key);
        let covers = |f: &TableFile| f.smallest_key() <= user_key && user_key <= f.largest_key();
        let l0 = self.levels.first().map_or(&[][..], Vec::as_slice);
        // The filter lines of every file that may hold the key (L0's and each run's) are
        // loaded at once (each is a likely cache miss) before the first probe.
        for f in l0.iter().take(PREFETCHED_RUNS) {
            if covers(f) {
                f.table.prefetch_filter(hash);
            }
        }
        let key_prefix = project(user_key, 0);
        let mut candidates = [usize::MAX; PREFETCHED_RUNS];
        for (slot, run) in candidates.iter_mut().zip(&self.runs) {
            let i = run.file_index(user_key, key_prefix);
            if let Some(f) = run.files.get(i).filter(|f| f.smallest_key() <= user_key) {
                f.table.prefetch_filter(hash);
                *slot = i;
            }
        }
        for f in l0 {
            if covers(f) {
                if let Some(e) = f.table.get_hashed(user_key, hash, snapshot)? {
                    return Ok(Some(e));
                }
            }
        }
        for (r, run) in self.runs.iter().enumerate() {
            let files = &run.files;
            let i = match candidates.get(r) {
                Some(&i) => i,
                None => run.file_index(user_key, key_prefix),
            };
            let Some(f) = files.get(i).filter(|f| f.smallest_key() <= user_key) else {
                continue;
            };
            let level_model = if run.whole_level {
                self.level_models.get(run.level).and_then(OnceLock::get)
            } else {
                None
            };
            let found = match level_model {
                Some(lm) => {
                    let (lo, hi) = lm.window_in_file(i, user_key);
                    f.table.get_in_window(user_key, hash, snapshot, lo, hi)?
                }
                None => f.table.get_hashed(user_key, hash, snapshot)?,
            };
            if found.is_some() {
                return Ok(found);
            }
        }
        Ok(None)
    }

    /// True when some file may hold an entry of `user_key`: its key range covers the key
    /// and its filter does not rule it out (no block is read). The write path samples it to
    /// estimate how much of what it writes overwrites values the tables hold.
    pub fn may_hold(&self, user_key: &[u8]) -> bool {
        let covers = |f: &TableFile| f.smallest_key() <= user_key && user_key <= f.largest_key();
        let l0 = self.levels.first().map_or(&[][..], Vec::as_slice);
        if l0.iter().any(|f| covers(f) && f.table.may_contain(user_key)) {
            return true;
        }
        let key_prefix = project(user_key, 0);
        self.runs.iter().any(|run| {
            let i = run.file_index(user_key, key_prefix);
            run.files
                .get(i)
                .is_some_and(|f| f.smallest_key() <= user_key && f.table.may_contain(user_key))
        })
    }

    /// Files of `level` overlapping the inclusive user-key range.
    pub fn overlapping(
        &self,
        level: usize,
        lo: Option<&[u8]>,
        hi: Option<&[u8]>,
    ) -> Vec<Arc<TableFile>> {
        self.levels
            .get(level)
            .map(|fs| fs.iter().filter(|f| f.overlaps(lo, hi)).cloned().collect())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seek_streaks_count_consecutive_seeks_into_one_slot_only() {
        let mut cur = 0;
        let mut lens = Vec::new();
        for slot in [3, 3, 3, 7, 3, 3, 0, 0] {
            let (next, len) = seek_streak_step(cur, slot);
            cur = next;
            lens.push(len);
        }
        assert_eq!(lens, [1, 2, 3, 1, 1, 2, 1, 2]);
        // Slot 0 with an empty streak starts at 1 (the packed 0 means "no streak").
        assert_eq!(seek_streak_step(0, 0).1, 1);
    }
}
