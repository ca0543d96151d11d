//! Sorted runs: levels >= 1 seen as lists of files that do not overlap, which is what point
//! lookups, level cursors and range splitting search.
//!
//! Leveled: each level >= 1 is one run (empty levels included, so run `r` is level `r + 1`).
//! FLSM: the files of a guard may overlap, so a level becomes several runs, newest first.
//! Inside each slot (see `compaction::guards`) the files are taken newest first (by file
//! number: compactions run one at a time and each writes only data newer than what its
//! output level holds) and each goes to the first run after every newer file of the slot it
//! overlaps and that holds no file of the slot overlapping it. So a key's files come in run
//! order newest first, and a run's files never overlap (slots never do). A slot with `k`
//! files yields at most `k` runs; non-overlapping files of one slot (a rewritten last-level
//! guard) share a run.

use super::version::TableFile;
use crate::compaction::guards::files_by_slot;
use std::sync::Arc;

/// Files of one level that do not overlap, sorted by key.
#[derive(Debug, Clone)]
pub struct SortedRun {
    /// The level the files belong to (>= 1).
    pub level: usize,
    /// The files, sorted by smallest key, pairwise disjoint.
    pub files: Vec<Arc<TableFile>>,
    /// True when the run is the whole level (leveled), so level models apply to it.
    pub whole_level: bool,
}

impl SortedRun {
    /// True when a file of the run overlaps the inclusive user-key range (`None` =
    /// unbounded): one binary search, as the files are disjoint and sorted.
    pub fn overlaps(&self, lo: Option<&[u8]>, hi: Option<&[u8]>) -> bool {
        let i = lo.map_or(0, |lo| self.files.partition_point(|f| f.largest_key() < lo));
        self.files.get(i).is_some_and(|f| f.overlaps(lo, hi))
    }
}

/// The runs of leveled levels: one per level >= 1.
pub(crate) fn leveled_runs(levels: &[Vec<Arc<TableFile>>]) -> Vec<SortedRun> {
    levels
        .iter()
        .enumerate()
        .skip(1)
        .map(|(level, files)| SortedRun {
            level,
            files: files.clone(),
            whole_level: true,
        })
        .collect()
}

fn overlap(a: &TableFile, b: &TableFile) -> bool {
    a.smallest_key() <= b.largest_key() && b.smallest_key() <= a.largest_key()
}

/// The runs of fragmented level `level` (files sorted by smallest key), newest first.
pub(crate) fn guarded_runs(
    level: usize,
    guards: &[Vec<u8>],
    files: &[Arc<TableFile>],
) -> Vec<SortedRun> {
    let mut runs: Vec<Vec<Arc<TableFile>>> = Vec::new();
    for (_, mut slot_files) in files_by_slot(guards, files) {
        slot_files.sort_by_key(|f| std::cmp::Reverse(f.meta.file_id));
        // (run index, file) of the slot's files placed so far, newest first.
        let mut placed: Vec<(usize, &Arc<TableFile>)> = Vec::new();
        for f in &slot_files {
            // One run past the deepest newer file it overlaps: every overlapping file of
            // the slot is newer, so none of them can be in that run or later ones.
            let run = placed
                .iter()
                .filter(|(_, g)| overlap(g, f))
                .map(|(r, _)| r + 1)
                .max()
                .unwrap_or(0);
            placed.push((run, f));
            if runs.len() <= run {
                runs.resize(run + 1, Vec::new());
            }
            runs[run].push(f.clone());
        }
    }
    runs.into_iter()
        .map(|mut files| {
            files.sort_by(|a, b| a.meta.smallest.cmp(&b.meta.smallest));
            SortedRun {
                level,
                files,
                whole_level: false,
            }
        })
        .collect()
}
