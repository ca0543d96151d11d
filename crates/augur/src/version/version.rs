//! `Version`: an immutable snapshot of the LSM's files, level by level, plus value-log
//! garbage state. Readers clone an `Arc<Version>` and search it without locks.
//!
//! Invariants: L0 files are ordered newest first (by file id) and may overlap; files of a
//! level >= 1 are ordered by smallest key and do not overlap, and every version of a user key
//! at such a level lives in one file. A newer version of a key is never in a deeper level.

use super::edit::FileMeta;
use crate::error::Result;
use crate::fs::FileSystem;
use crate::index::projection::project;
use crate::key::SeqNo;
use crate::learning::level_model::LevelModel;
use crate::sst::{Entry, Table};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

/// A live SSTable: its manifest metadata and its open reader. When the last reference is
/// dropped after compaction marked it obsolete, the file is deleted.
pub struct TableFile {
    /// Manifest metadata.
    pub meta: FileMeta,
    /// The open table.
    pub table: Arc<Table>,
    obsolete: AtomicBool,
    fs: Arc<dyn FileSystem>,
    path: PathBuf,
    /// The first 8 bytes of the largest user key, big-endian, zero-padded: ordered like the
    /// keys themselves except on ties, so finding a key's file compares integers and only
    /// falls back to a byte comparison on equal prefixes.
    largest_prefix: u64,
}

/// `a < b` for byte strings given their prefixes `project(a, 0)` and `project(b, 0)`: the
/// zero-padded big-endian prefixes order like the strings wherever they differ (the first
/// differing padded byte is either a real differing byte or a zero against a real byte of
/// the longer string, which then sorts after its prefix), so bytes are compared only on ties.
#[inline]
fn below(a: &[u8], a_prefix: u64, b: &[u8], b_prefix: u64) -> bool {
    match a_prefix.cmp(&b_prefix) {
        std::cmp::Ordering::Less => true,
        std::cmp::Ordering::Greater => false,
        std::cmp::Ordering::Equal => a < b,
    }
}

impl TableFile {
    /// Wraps an open table.
    pub fn new(meta: FileMeta, table: Arc<Table>, fs: Arc<dyn FileSystem>, path: PathBuf) -> Self {
        TableFile {
            largest_prefix: project(&meta.largest.user_key, 0),
            meta,
            table,
            obsolete: AtomicBool::new(false),
            fs,
            path,
        }
    }

    /// Marks the file for deletion once no version or iterator references it.
    pub fn mark_obsolete(&self) {
        self.obsolete.store(true, Ordering::Release);
    }

    /// True once a version edit removed the file for good (it is deleted when the last
    /// reader lets go).
    pub fn is_obsolete(&self) -> bool {
        self.obsolete.load(Ordering::Acquire)
    }

    /// Smallest user key.
    pub fn smallest_key(&self) -> &[u8] {
        &self.meta.smallest.user_key
    }

    /// Largest user key.
    pub fn largest_key(&self) -> &[u8] {
        &self.meta.largest.user_key
    }

    /// Whether the file's largest key is below `key`, whose prefix (`project(key, 0)`) is
    /// `key_prefix`: an integer comparison unless the prefixes are equal.
    #[inline]
    fn largest_below(&self, key: &[u8], key_prefix: u64) -> bool {
        below(self.largest_key(), self.largest_prefix, key, key_prefix)
    }

    /// True when `[lo, hi]` (user keys, inclusive; `None` = unbounded) overlaps the file.
    pub fn overlaps(&self, lo: Option<&[u8]>, hi: Option<&[u8]>) -> bool {
        lo.is_none_or(|lo| self.largest_key() >= lo)
            && hi.is_none_or(|hi| self.smallest_key() <= hi)
    }
}

impl Drop for TableFile {
    fn drop(&mut self) {
        if self.obsolete.load(Ordering::Acquire) {
            if let Err(e) = self.fs.remove(&self.path) {
                log::warn!(
                    "could not delete obsolete table {}: {e}",
                    self.path.display()
                );
            }
        }
    }
}

impl std::fmt::Debug for TableFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableFile")
            .field("meta", &self.meta)
            .finish()
    }
}

/// The files of the tree at one point in time.
#[derive(Debug, Clone)]
pub struct Version {
    /// Files per level; see the module invariants.
    pub levels: Vec<Vec<Arc<TableFile>>>,
    /// Garbage bytes per live value-log segment (WiscKey GC input).
    pub vlog_garbage: BTreeMap<u64, u64>,
    /// Segments deleted by GC (pointers into them are obsolete).
    pub vlog_deleted: BTreeSet<u64>,
    /// Level models (Bourbon level learning), per level; set at most once per version and
    /// carried to the next version while the level's files do not change.
    pub level_models: Vec<OnceLock<Arc<LevelModel>>>,
}

impl Version {
    /// An empty version with `num_levels` levels.
    pub fn new(num_levels: usize) -> Self {
        Version {
            levels: vec![Vec::new(); num_levels],
            vlog_garbage: BTreeMap::new(),
            vlog_deleted: BTreeSet::new(),
            level_models: vec![OnceLock::new(); num_levels],
        }
    }

    /// Total bytes of the files of `level`.
    pub fn level_bytes(&self, level: usize) -> u64 {
        self.levels
            .get(level)
            .map_or(0, |fs| fs.iter().map(|f| f.meta.file_size).sum())
    }

    /// Index of the first file of sorted `level` (>= 1) whose largest user key is `>=
    /// user_key` (the only file that may hold it), or the level's file count: 8-byte prefix
    /// comparisons, bytes only on ties.
    pub(crate) fn file_index(&self, level: usize, user_key: &[u8]) -> usize {
        let key_prefix = project(user_key, 0);
        self.levels.get(level).map_or(0, |files| {
            files.partition_point(|f| f.largest_below(user_key, key_prefix))
        })
    }

    /// Index of the file of sorted `level` (>= 1) that may hold `user_key`.
    pub fn find_file(&self, level: usize, user_key: &[u8]) -> Option<&Arc<TableFile>> {
        let files = self.levels.get(level)?;
        let i = files.partition_point(|f| f.largest_key() < user_key);
        files.get(i).filter(|f| f.smallest_key() <= user_key)
    }

    /// The newest entry of `user_key` visible at `snapshot` in the files (tombstones
    /// included), searching L0 newest first and then one file per deeper level.
    pub fn get(&self, user_key: &[u8], snapshot: SeqNo) -> Result<Option<Entry>> {
        if let Some(l0) = self.levels.first() {
            for f in l0 {
                if f.smallest_key() <= user_key && user_key <= f.largest_key() {
                    if let Some(e) = f.table.get(user_key, snapshot)? {
                        return Ok(Some(e));
                    }
                }
            }
        }
        let key_prefix = project(user_key, 0);
        for level in 1..self.levels.len() {
            let files = &self.levels[level];
            let i = files.partition_point(|f| f.largest_below(user_key, key_prefix));
            let Some(f) = files.get(i).filter(|f| f.smallest_key() <= user_key) else {
                continue;
            };
            let found = match self.level_models.get(level).and_then(OnceLock::get) {
                Some(lm) => {
                    let (lo, hi) = lm.window_in_file(i, user_key);
                    f.table.get_in_window(user_key, snapshot, lo, hi)?
                }
                None => f.table.get(user_key, snapshot)?,
            };
            if found.is_some() {
                return Ok(found);
            }
        }
        Ok(None)
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

    /// Number of files per level.
    pub fn files_per_level(&self) -> Vec<usize> {
        self.levels.iter().map(Vec::len).collect()
    }
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

    proptest! {
        #[test]
        fn prefix_comparison_orders_like_bytes(a in key(), b in key()) {
            prop_assert_eq!(below(&a, project(&a, 0), &b, project(&b, 0)), a < b);
        }
    }

    #[test]
    fn prefix_comparison_edge_cases() {
        let cases: [(&[u8], &[u8]); 5] = [
            (b"", b"\0"),
            (b"ab", b"ab\0"),
            (b"abcdefgh", b"abcdefgh\0"),
            (b"abcdefgh\x01", b"abcdefgi"),
            (
                b"\xff\xff\xff\xff\xff\xff\xff\xff",
                b"\xff\xff\xff\xff\xff\xff\xff\xff\0",
            ),
        ];
        for (a, b) in cases {
            assert!(below(a, project(a, 0), b, project(b, 0)), "{a:?} < {b:?}");
            assert!(
                !below(b, project(b, 0), a, project(a, 0)),
                "not {b:?} < {a:?}"
            );
            assert!(!below(a, project(a, 0), a, project(a, 0)));
        }
    }
}
