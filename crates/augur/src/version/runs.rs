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

use super::guards::files_by_slot;
use super::table_file::TableFile;
use crate::index::projection::project;
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
    /// `project(largest user key, 0)` of each file, in file order: the file search of a
    /// lookup runs over this flat array (one or two cache lines) instead of dereferencing
    /// every file it compares against.
    largest_prefixes: Vec<u64>,
}

impl SortedRun {
    /// A run of `files` (sorted by key, pairwise disjoint) of `level`.
    pub fn new(level: usize, files: Vec<Arc<TableFile>>, whole_level: bool) -> Self {
        let largest_prefixes = files.iter().map(|f| project(f.largest_key(), 0)).collect();
        SortedRun {
            level,
            files,
            whole_level,
            largest_prefixes,
        }
    }

    /// Index of the first file whose largest user key is `>= key` (the only file of the run
    /// that may hold `key`), or the file count; `key_prefix` is `project(key, 0)`. The
    /// projection is monotone, so prefixes decide every comparison except ties, which
    /// compare the bytes.
    #[inline]
    pub fn file_index(&self, key: &[u8], key_prefix: u64) -> usize {
        first_not_below(&self.largest_prefixes, key_prefix, |i| {
            self.files.get(i).is_some_and(|f| f.largest_key() < key)
        })
    }

    /// True when a file of the run overlaps the inclusive user-key range (`None` =
    /// unbounded): one search of the files' largest-key prefixes ([`Self::file_index`]), as
    /// the files are disjoint and sorted. Every scan asks this of every run.
    pub fn overlaps(&self, lo: Option<&[u8]>, hi: Option<&[u8]>) -> bool {
        let i = lo.map_or(0, |lo| self.file_index(lo, project(lo, 0)));
        self.files.get(i).is_some_and(|f| f.overlaps(lo, hi))
    }
}

/// The first `i` whose key is not below the probe: `prefixes` are the projections of sorted
/// keys, `key_prefix` the probe's, `below(i)` compares key `i` with the probe in full (only
/// called on equal prefixes).
#[inline]
fn first_not_below(prefixes: &[u64], key_prefix: u64, below: impl Fn(usize) -> bool) -> usize {
    let mut i = prefixes.partition_point(|&p| p < key_prefix);
    while prefixes.get(i) == Some(&key_prefix) && below(i) {
        i += 1;
    }
    i
}

/// The runs of leveled levels: one per level >= 1.
pub(crate) fn leveled_runs(levels: &[Vec<Arc<TableFile>>]) -> Vec<SortedRun> {
    levels
        .iter()
        .enumerate()
        .skip(1)
        .map(|(level, files)| SortedRun::new(level, files.clone(), true))
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
            SortedRun::new(level, files, false)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Short keys over a small alphabet with zero bytes, so equal prefixes, keys that are
    /// prefixes of others and trailing zeros all occur often.
    fn key() -> impl Strategy<Value = Vec<u8>> {
        proptest::collection::vec(
            prop_oneof![Just(0u8), Just(1u8), Just(0xff), any::<u8>()],
            0..12,
        )
    }

    fn search(keys: &[Vec<u8>], probe: &[u8]) -> usize {
        let prefixes: Vec<u64> = keys.iter().map(|k| project(k, 0)).collect();
        first_not_below(&prefixes, project(probe, 0), |i| keys[i].as_slice() < probe)
    }

    proptest! {
        #[test]
        fn prefix_search_finds_the_byte_lower_bound(
            mut keys in proptest::collection::vec(key(), 0..40),
            probe in key(),
        ) {
            keys.sort();
            keys.dedup();
            prop_assert_eq!(search(&keys, &probe), keys.partition_point(|k| k.as_slice() < probe.as_slice()));
            for k in &keys {
                prop_assert_eq!(search(&keys, k), keys.partition_point(|x| x < k));
            }
        }
    }

    #[test]
    fn prefix_search_edge_cases() {
        // Keys that tie on their 8-byte prefix, are prefixes of each other or end in zeros.
        let keys: Vec<Vec<u8>> = [
            &b""[..],
            b"\0",
            b"ab",
            b"ab\0",
            b"abcdefgh",
            b"abcdefgh\0",
            b"abcdefgh\x01",
            b"abcdefgi",
            b"\xff\xff\xff\xff\xff\xff\xff\xff",
            b"\xff\xff\xff\xff\xff\xff\xff\xff\0",
        ]
        .iter()
        .map(|k| k.to_vec())
        .collect();
        for (i, k) in keys.iter().enumerate() {
            assert_eq!(search(&keys, k), i, "{k:?}");
        }
        assert_eq!(search(&keys, b"abcdefgh\0\0"), 6);
        assert_eq!(search(&keys, &[0xff; 10]), keys.len());
    }
}
