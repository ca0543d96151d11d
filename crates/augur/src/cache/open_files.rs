//! [`OpenFiles`]: the bound on open table files (`Options::max_open_files`, as LevelDB and
//! RocksDB name it), and [`LazyFile`], a file that holds a descriptor only while it is in
//! the bound's LRU.
//!
//! Without a bound every table keeps its descriptor (pread, direct) or its mapping (mmap)
//! for as long as it is live, so the number of live tables is capped by the kernel's limits
//! (`compaction::table_limit`). With a bound of `N`:
//! - under `pread` and `direct`, a table's file is a [`LazyFile`]: its descriptor is opened on
//!   the first read and kept in an LRU of at most `N` descriptors; a read of a file whose
//!   descriptor was evicted opens it again. The table's parsed sections (filter, fence index,
//!   model) stay in memory, so a reopen costs one `open` and no parsing;
//! - under `mmap`, the first `N` files opened are mapped (a [`CountedMapping`] gives its slot
//!   back when the table is dropped); a file opened while `N` mappings are live is read as a
//!   lazy `pread` file instead.
//!
//! A dropped [`LazyFile`] removes its descriptor from the LRU at once, so a deleted table's
//! space is freed when the table is.

use super::counter::Counter;
use crate::error::Result;
use crate::fs::{FileSystem, RandomAccessFile, ReadMode};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

/// Counts of an `OpenFiles` bound.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OpenFilesStats {
    /// The bound (`max_open_files`).
    pub limit: u64,
    /// Descriptors held by lazy files now.
    pub open: u64,
    /// Mapped files now (mmap mode).
    pub mapped: u64,
    /// Times a lazy file's descriptor was opened (first reads and reopens after eviction).
    pub opens: u64,
}

/// The bound on open table files: an LRU of descriptors and a count of mappings.
pub struct OpenFiles {
    limit: usize,
    handles: quick_cache::sync::Cache<u64, Arc<dyn RandomAccessFile>>,
    mapped: AtomicUsize,
    opens: Counter,
    /// The next lazy file's key in `handles` (never reused).
    next_id: AtomicU64,
}

impl std::fmt::Debug for OpenFiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenFiles")
            .field("limit", &self.limit)
            .finish_non_exhaustive()
    }
}

impl OpenFiles {
    /// A bound of `limit` open files (at least 1).
    pub fn new(limit: usize) -> Arc<OpenFiles> {
        let limit = limit.max(1);
        // Each shard holds limit / shards descriptors, so the shards together never pass
        // the limit; small limits use one shard.
        let shards = (limit / 64).clamp(1, 8).next_power_of_two().min(8);
        let options = quick_cache::OptionsBuilder::new()
            .estimated_items_capacity(limit)
            .weight_capacity((limit - limit % shards) as u64)
            .shards(shards)
            .build();
        let handles = match options {
            Ok(o) => quick_cache::sync::Cache::with_options(
                o,
                Default::default(),
                Default::default(),
                Default::default(),
            ),
            Err(_) => quick_cache::sync::Cache::new(limit),
        };
        Arc::new(OpenFiles {
            limit,
            handles,
            mapped: AtomicUsize::new(0),
            opens: Counter::default(),
            next_id: AtomicU64::new(1),
        })
    }

    /// The bound's counters.
    pub fn stats(&self) -> OpenFilesStats {
        OpenFilesStats {
            limit: self.limit as u64,
            open: self.handles.len() as u64,
            mapped: self.mapped.load(Ordering::Relaxed) as u64,
            opens: self.opens.get(),
        }
    }

    /// Takes one of the `limit` mapping slots; false when all are taken.
    fn try_map(&self) -> bool {
        self.mapped
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |m| {
                (m < self.limit).then_some(m + 1)
            })
            .is_ok()
    }
}

/// A mapped file that holds one of its [`OpenFiles`]' mapping slots until dropped.
pub(super) struct CountedMapping {
    inner: Arc<dyn RandomAccessFile>,
    files: Arc<OpenFiles>,
}

impl CountedMapping {
    /// Maps `path` through `fs` if a mapping slot is free; `None` when all are taken.
    pub(super) fn open(
        fs: &dyn FileSystem,
        path: &Path,
        files: &Arc<OpenFiles>,
    ) -> Result<Option<CountedMapping>> {
        if !files.try_map() {
            return Ok(None);
        }
        match fs.open(path, ReadMode::Mmap) {
            Ok(inner) => Ok(Some(CountedMapping {
                inner,
                files: files.clone(),
            })),
            Err(e) => {
                files.mapped.fetch_sub(1, Ordering::AcqRel);
                Err(e)
            }
        }
    }
}

impl Drop for CountedMapping {
    fn drop(&mut self) {
        self.files.mapped.fetch_sub(1, Ordering::AcqRel);
    }
}

impl RandomAccessFile for CountedMapping {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        self.inner.read_exact_at(offset, buf)
    }

    fn as_slice(&self) -> Option<&[u8]> {
        self.inner.as_slice()
    }

    fn mapped(&self) -> Option<bytes::Bytes> {
        self.inner.mapped()
    }

    fn len(&self) -> Result<u64> {
        self.inner.len()
    }
}

/// An immutable file whose descriptor is opened on demand and kept in its [`OpenFiles`]'
/// LRU.
pub(super) struct LazyFile {
    fs: Arc<dyn FileSystem>,
    path: PathBuf,
    mode: ReadMode,
    /// This file's key in the LRU (unique within its `OpenFiles`).
    id: u64,
    len: u64,
    files: Arc<OpenFiles>,
}

impl LazyFile {
    /// A lazy file for `path`, read through `mode` (`Pread` or `Direct`). Opens the file
    /// once to check that it can be, and keeps that descriptor in the LRU.
    ///
    /// # Errors
    /// As [`FileSystem::open`].
    pub(super) fn open(
        fs: &Arc<dyn FileSystem>,
        path: &Path,
        mode: ReadMode,
        files: &Arc<OpenFiles>,
    ) -> Result<LazyFile> {
        let id = files.next_id.fetch_add(1, Ordering::Relaxed);
        let handle = fs.open(path, mode)?;
        files.opens.add(1);
        let len = handle.len()?;
        files.handles.insert(id, handle);
        Ok(LazyFile {
            fs: fs.clone(),
            path: path.to_path_buf(),
            mode,
            id,
            len,
            files: files.clone(),
        })
    }

    /// The file's descriptor: from the LRU, or opened again.
    fn handle(&self) -> Result<Arc<dyn RandomAccessFile>> {
        if let Some(h) = self.files.handles.get(&self.id) {
            return Ok(h);
        }
        let h = self.fs.open(&self.path, self.mode)?;
        self.files.opens.add(1);
        self.files.handles.insert(self.id, h.clone());
        Ok(h)
    }
}

impl Drop for LazyFile {
    fn drop(&mut self) {
        self.files.handles.remove(&self.id);
    }
}

impl RandomAccessFile for LazyFile {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        self.handle()?.read_exact_at(offset, buf)
    }

    fn as_slice(&self) -> Option<&[u8]> {
        None
    }

    fn len(&self) -> Result<u64> {
        Ok(self.len)
    }
}
