//! `Version`: an immutable snapshot of the LSM's files, level by level, plus value-log
//! garbage state. Readers clone an `Arc<Version>` and search it without locks.
//!
//! Invariants: L0 files are ordered newest first (by file id) and may overlap; files of a
//! level >= 1 are ordered by smallest key and do not overlap, and every version of a user key
//! at such a level lives in one file. A newer version of a key is never in a deeper level.

use super::edit::FileMeta;
use crate::error::Result;
use crate::fs::FileSystem;
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
}

impl TableFile {
    /// Wraps an open table.
    pub fn new(meta: FileMeta, table: Arc<Table>, fs: Arc<dyn FileSystem>, path: PathBuf) -> Self {
        TableFile {
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
        for level in 1..self.levels.len() {
            let files = &self.levels[level];
            let i = files.partition_point(|f| f.largest_key() < user_key);
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
