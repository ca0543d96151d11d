//! How the engine opens the immutable files it reads (SSTables and sealed value-log
//! segments): [`FileReads`] combines the read mode, the bounded page cache of direct mode
//! ([`PageCache`]) and the bound on open files ([`OpenFiles`]).
//!
//! - `mmap` and `pread` read through the kernel's page cache, as before; with
//!   `max_open_files` their descriptors or mappings are bounded (`open_files`).
//! - `direct` reads with `O_DIRECT` through [`CachedFile`]: the only copies of file pages in
//!   memory are the database's own cache's, so memory stays within `cache_bytes`.
//!
//! Files that grow (the active value-log segment, WALs) are not opened here: they are read
//! through `pread`.

mod counter;
mod open_files;
mod page_cache;

pub use counter::Counter;
pub use open_files::{OpenFiles, OpenFilesStats};
pub use page_cache::{scanning, without_cache_fill, CacheStats, CachedFile, PageCache, PAGE_BYTES};

use crate::error::Result;
use crate::fs::{FileSystem, RandomAccessFile, ReadMode};
use open_files::{CountedMapping, LazyFile};
use std::path::Path;
use std::sync::Arc;

/// How immutable files are opened: the read mode, the page cache (direct mode) and the
/// open-file bound. Cheap to clone; clones share the cache and the bound.
#[derive(Debug, Clone)]
pub struct FileReads {
    mode: ReadMode,
    cache: Option<Arc<PageCache>>,
    open_files: Option<Arc<OpenFiles>>,
}

/// The counters of a database's file reads.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadStats {
    /// The page cache's (direct mode only).
    pub cache: Option<CacheStats>,
    /// The open-file bound's (with `max_open_files` only).
    pub open_files: Option<OpenFilesStats>,
}

impl FileReads {
    /// Files read with `mode`, no cache and no bound (tests and tools reading one file).
    pub fn plain(mode: ReadMode) -> FileReads {
        FileReads {
            mode,
            cache: (mode == ReadMode::Direct).then(|| PageCache::new(0)),
            open_files: None,
        }
    }

    /// Files read with `mode`; under `Direct` through a page cache of `cache_bytes`; with at
    /// most `max_open_files` descriptors or mappings when that is `Some`.
    pub fn new(mode: ReadMode, cache_bytes: u64, max_open_files: Option<usize>) -> FileReads {
        FileReads {
            mode,
            cache: (mode == ReadMode::Direct).then(|| PageCache::new(cache_bytes)),
            open_files: max_open_files.map(OpenFiles::new),
        }
    }

    /// The read mode.
    pub fn mode(&self) -> ReadMode {
        self.mode
    }

    /// True when open files are bounded (`max_open_files`): the kernel's limits on
    /// mappings and descriptors then do not bound the number of live tables.
    pub fn bounded(&self) -> bool {
        self.open_files.is_some()
    }

    /// True when reads come through the page cache: a block checked once stays trusted
    /// (as with a mapping), so lookups read only the slots they need.
    pub fn cached(&self) -> bool {
        self.cache.is_some()
    }

    /// The counters of the cache and the bound.
    pub fn stats(&self) -> ReadStats {
        ReadStats {
            cache: self.cache.as_ref().map(|c| c.stats()),
            open_files: self.open_files.as_ref().map(|f| f.stats()),
        }
    }

    /// Opens the immutable file `path` for reading with the mode and the cache, outside the
    /// open-file bound (value-log segments: few and large).
    ///
    /// # Errors
    /// As [`FileSystem::open`]; `InvalidArgument` where the file system refuses `O_DIRECT`.
    pub fn open_unbounded(&self, fs: &dyn FileSystem, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        let file = fs.open(path, self.mode)?;
        match &self.cache {
            Some(cache) => Ok(Arc::new(CachedFile::new(file, cache.clone(), path)?)),
            None => Ok(file),
        }
    }

    /// Opens the immutable table file `path` for reading, within the open-file bound.
    ///
    /// # Errors
    /// As [`FileSystem::open`]; `InvalidArgument` where the file system refuses `O_DIRECT`.
    pub fn open(&self, fs: &Arc<dyn FileSystem>, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        let file: Arc<dyn RandomAccessFile> = match (self.mode, &self.open_files) {
            (mode, None) => fs.open(path, mode)?,
            (ReadMode::Mmap, Some(files)) => match CountedMapping::open(fs.as_ref(), path, files)? {
                Some(mapping) => Arc::new(mapping),
                None => Arc::new(LazyFile::open(fs, path, ReadMode::Pread, files)?),
            },
            (mode, Some(files)) => Arc::new(LazyFile::open(fs, path, mode, files)?),
        };
        match &self.cache {
            Some(cache) => Ok(Arc::new(CachedFile::new(file, cache.clone(), path)?)),
            None => Ok(file),
        }
    }
}

impl From<ReadMode> for FileReads {
    /// [`FileReads::plain`].
    fn from(mode: ReadMode) -> FileReads {
        FileReads::plain(mode)
    }
}
