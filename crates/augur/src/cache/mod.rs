//! How the engine opens and caches the immutable files it reads (SSTables and sealed
//! value-log segments): [`FileReads`] combines the read mode, the bounded page cache of
//! direct mode ([`PageCache`]), the cache of decompressed value chunks ([`ChunkCache`]) and
//! the bound on open files ([`OpenFiles`]).
//!
//! - `mmap` and `pread` read through the kernel's page cache, as before; with
//!   `max_open_files` their descriptors or mappings are bounded (`open_files`).
//! - `direct` reads with `O_DIRECT` through [`CachedFile`]: the only copies of file pages in
//!   memory are the database's own cache's, so memory stays within `cache_bytes`.
//! - In every mode, point lookups of compressed values keep the value chunks they decompress
//!   in the chunk cache, so a hot lookup decompresses nothing. [`CacheBudget`] shares
//!   `cache_bytes` between the two caches.
//!
//! Reads in a scan or without cache fill ([`scanning`], [`without_cache_fill`]: `scope`)
//! reference and insert nothing in either cache beyond what the page cache's doc states.
//! Files that grow (the active value-log segment, WALs) are not opened here: they are read
//! through `pread`.

mod chunk_cache;
mod counter;
mod open_files;
mod page_cache;
mod scope;

pub use chunk_cache::{BlockLookup, CachedBlock, ChunkCache, ChunkCacheStats, Lookup, TableChunks};
pub use open_files::{OpenFiles, OpenFilesStats};
pub use page_cache::{CacheStats, CachedFile, PageCache};
/// The page size of the direct-read cache, for the engine's tests outside the crate.
#[cfg(feature = "test-util")]
pub use page_cache::PAGE_BYTES;
pub use scope::{scanning, without_cache_fill};

use crate::error::Result;
use crate::fs::{FileSystem, RandomAccessFile, ReadMode};
use open_files::{CountedMapping, LazyFile};
use std::path::Path;
use std::sync::Arc;

/// How a database's cache budget (`Options::cache_bytes`) is shared between the page cache
/// of direct reads and the decompressed-chunk cache.
///
/// - Under `mmap` and `pread` the kernel caches file pages, and the whole budget goes to
///   chunks (used only as far as compressed values are read: a database without them
///   allocates nothing).
/// - Under `direct` with compression on, a quarter ([`DIRECT_CHUNK_SHARE_DIVISOR`]) goes to
///   chunks and the rest to pages: a hot lookup then needs its slots' pages and its
///   decompressed chunk, not the compressed chunk's pages. With compression off, all of it
///   goes to pages (files written compressed earlier are still read correctly, decompressing
///   every time).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheBudget {
    /// Bytes of the page cache (direct mode; 0 otherwise).
    pub page_bytes: u64,
    /// Bytes of the chunk cache.
    pub chunk_bytes: u64,
}

/// A direct-mode budget gives chunks one part in this many when values are compressed.
pub const DIRECT_CHUNK_SHARE_DIVISOR: u64 = 4;

impl CacheBudget {
    /// The shares of `cache_bytes` for a database reading with `mode`, writing values
    /// compressed when `compressed` (see the type's doc). The shares add up to `cache_bytes`
    /// where both caches exist.
    pub fn split(mode: ReadMode, cache_bytes: u64, compressed: bool) -> CacheBudget {
        match mode {
            ReadMode::Direct if compressed => {
                let chunk_bytes = cache_bytes / DIRECT_CHUNK_SHARE_DIVISOR;
                CacheBudget {
                    page_bytes: cache_bytes - chunk_bytes,
                    chunk_bytes,
                }
            }
            ReadMode::Direct => CacheBudget {
                page_bytes: cache_bytes,
                chunk_bytes: 0,
            },
            _ => CacheBudget {
                page_bytes: 0,
                chunk_bytes: cache_bytes,
            },
        }
    }
}

/// How immutable files are opened and cached: the read mode, the page cache (direct mode),
/// the chunk cache and the open-file bound. Cheap to clone; clones share the caches and the
/// bound.
#[derive(Debug, Clone)]
pub struct FileReads {
    mode: ReadMode,
    cache: Option<Arc<PageCache>>,
    chunks: Option<Arc<ChunkCache>>,
    open_files: Option<Arc<OpenFiles>>,
}

/// The counters of a database's file reads.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadStats {
    /// The page cache's (direct mode only).
    pub cache: Option<CacheStats>,
    /// The decompressed-chunk cache's (when its budget is not 0).
    pub chunks: Option<ChunkCacheStats>,
    /// The open-file bound's (with `max_open_files` only).
    pub open_files: Option<OpenFilesStats>,
}

impl FileReads {
    /// Files read with `mode`, no cache and no bound (tests and tools reading one file).
    pub fn plain(mode: ReadMode) -> FileReads {
        FileReads {
            mode,
            cache: (mode == ReadMode::Direct).then(|| PageCache::new(0)),
            chunks: None,
            open_files: None,
        }
    }

    /// Files read with `mode`; under `Direct` through a page cache of `budget.page_bytes`;
    /// point lookups of compressed values through a chunk cache of `budget.chunk_bytes` (none
    /// when 0); with at most `max_open_files` descriptors or mappings when that is `Some`.
    pub fn new(mode: ReadMode, budget: CacheBudget, max_open_files: Option<usize>) -> FileReads {
        FileReads {
            mode,
            cache: (mode == ReadMode::Direct).then(|| PageCache::new(budget.page_bytes)),
            chunks: (budget.chunk_bytes > 0).then(|| ChunkCache::new(budget.chunk_bytes)),
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

    /// The decompressed-chunk cache that tables opened through these reads share, if any.
    pub fn chunks(&self) -> Option<&Arc<ChunkCache>> {
        self.chunks.as_ref()
    }

    /// The counters of the caches and the bound.
    pub fn stats(&self) -> ReadStats {
        ReadStats {
            cache: self.cache.as_ref().map(|c| c.stats()),
            chunks: self.chunks.as_ref().map(|f| f.stats()),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_goes_to_chunks_unless_direct_reads_need_pages() {
        let b = |mode, compressed| CacheBudget::split(mode, 64 << 20, compressed);
        for mode in [ReadMode::Mmap, ReadMode::Pread] {
            for compressed in [false, true] {
                assert_eq!(
                    b(mode, compressed),
                    CacheBudget {
                        page_bytes: 0,
                        chunk_bytes: 64 << 20
                    }
                );
            }
        }
        assert_eq!(
            b(ReadMode::Direct, false),
            CacheBudget {
                page_bytes: 64 << 20,
                chunk_bytes: 0
            }
        );
        assert_eq!(
            b(ReadMode::Direct, true),
            CacheBudget {
                page_bytes: 48 << 20,
                chunk_bytes: 16 << 20
            }
        );
        let odd = CacheBudget::split(ReadMode::Direct, 1001, true);
        assert_eq!(odd.page_bytes + odd.chunk_bytes, 1001);
    }

    #[test]
    fn reads_report_the_caches_they_hold() {
        let mmap = FileReads::new(ReadMode::Mmap, CacheBudget::split(ReadMode::Mmap, 1 << 20, false), None);
        let s = mmap.stats();
        assert!(s.cache.is_none());
        assert_eq!(s.chunks.map(|f| f.capacity_bytes), Some(1 << 20));
        let direct = FileReads::new(ReadMode::Direct, CacheBudget::split(ReadMode::Direct, 1 << 20, false), None);
        assert!(direct.stats().chunks.is_none() && direct.chunks().is_none());
        assert!(FileReads::plain(ReadMode::Mmap).chunks().is_none());
    }
}
