//! `Version`: an immutable snapshot of the LSM's files, level by level, plus value-log
//! garbage state. Readers clone an `Arc<Version>` and search it without locks.
//!
//! Invariants: L0 files are ordered newest first (by file id) and may overlap; files of a
//! level >= 1 are ordered by smallest key. Leveled: they do not overlap, and every version of
//! a user key at such a level lives in one file. FLSM: each level >= 1 has sorted guards, every
//! file lies inside one guard's slot, files of one slot may overlap, and the guards of level
//! `l` are a subset of level `l + 1`'s. Either way a newer version of a key is never in a
//! deeper level, and reads search `runs` (see `runs.rs`), never `levels`, at levels >= 1.
//!
//! A version is a value: it holds no atomics and no lazily filled cells. What is learned or
//! counted while a version is installed lives with its owner and names the version by its
//! [`number`](Version::number): FLSM's seek statistics (`compaction/flsm/seeks.rs`, owned by
//! the compaction strategy) and level models ([`LevelModels`], owned by the database's
//! background part).

use super::guards::{file_fits, slot_of};
use super::level_model::{LevelModel, LevelModels};
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
use std::sync::Arc;

/// FLSM: the shape of one guard's slot.
#[derive(Debug, Clone)]
pub struct SlotInfo {
    /// Files of the slot.
    pub files: u32,
    /// Sorted runs the slot's files span (1 when they do not overlap): what a lookup in the
    /// slot may probe, and what `max_sstables_per_guard` limits.
    pub depth: u32,
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
    /// FLSM: per level, per slot, its file count and depth (empty under leveled).
    pub slots: Arc<Vec<Vec<SlotInfo>>>,
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
    /// Which install this is: 0 for the version an open recovers, one more for each version
    /// installed after it. What is kept beside versions (FLSM's seek statistics, level
    /// models) names the version it belongs to by this number.
    pub number: u64,
    /// Per level, the [`number`](Self::number) of the version whose edit last changed the
    /// level's files (0: unchanged since the open). A level model trained on a level is
    /// valid for every version whose level has the same number.
    pub level_changed: Vec<u64>,
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
            vlog_garbage: BTreeMap::new(),
            vlog_deleted: SegmentSet::new(),
            vlog_reserved: BTreeSet::new(),
            vlog_sealed: BTreeMap::new(),
            number: 0,
            level_changed: vec![0; num_levels],
        };
        v.rebuild_runs();
        v
    }

    /// Recomputes `runs` and `slots` from `levels` and `guards`.
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
                            .map(|_| SlotInfo { files: 0, depth: 0 })
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
    /// included), searching L0 newest first and then one file per sorted run; a whole level
    /// with a model in `level_models` trained on its files is searched through that model.
    /// `level_model_lookups` is increased by the files searched through a level model (each
    /// also counts as a model-path lookup of its table).
    pub fn get(
        &self,
        user_key: &[u8],
        snapshot: SeqNo,
        level_models: Option<&LevelModels>,
        level_model_lookups: &mut u64,
    ) -> Result<Option<Entry>> {
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
            let level_model = match level_models {
                Some(models) if run.whole_level => self.level_model(models, run.level),
                _ => None,
            };
            let found = match level_model {
                Some(lm) => {
                    *level_model_lookups += 1;
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

    /// The model in `models` of `level`, if it was trained on this version's files there.
    pub fn level_model<'m>(&self, models: &'m LevelModels, level: usize) -> Option<&'m LevelModel> {
        models.get(level, &self.level_changed)
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
