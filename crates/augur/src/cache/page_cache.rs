//! [`PageCache`]: the database's bounded cache of file pages under `ReadMode::Direct`, and
//! [`CachedFile`], a file whose reads go through it.
//!
//! The unit is a [`PAGE_BYTES`] page at an aligned offset (the last page of a file is
//! shorter), keyed by `(file, page number)`. `file` is a number drawn from the cache's own
//! counter each time a file is opened, never a file name or file number, so a page of a
//! deleted file can never answer a read of a later file with the same name; a dropped
//! [`CachedFile`] also removes its pages at once, so they stop taking room.
//!
//! Replacement is `quick_cache`'s CLOCK-Pro variant: a page enters on probation and is kept
//! only when it is read again, so pages read once cycle through the probation queue without
//! pushing out the hot set. A scan reads its pages several times in a row, so its reads run
//! under [`scanning`](super::scanning): its hits do not count as references, and what it
//! brings in stays on probation. Reads made under
//! [`without_cache_fill`](super::without_cache_fill) (compactions, GC, `verify`) use the
//! cached pages they find but insert none; they read ahead [`NO_FILL_READAHEAD_PAGES`] into a
//! per-thread buffer instead, since they walk files in order. Capacity is counted in bytes,
//! each page weighted by its length plus [`PAGE_OVERHEAD`], so what the cache holds stays
//! within its budget.
//!
//! A read of consecutive missing pages is one device read. Counters (hits, misses, device
//! reads and bytes) are striped per thread ([`super::counter`]).

use super::counter::Counter;
use super::scope;
use crate::error::{Error, Result};
use crate::fs::{RandomAccessFile, DIRECT_ALIGN};
use bytes::Bytes;
use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

/// Bytes per cached page: the direct-I/O alignment.
pub const PAGE_BYTES: usize = DIRECT_ALIGN;

/// Bytes charged per page beyond its data: the key, the handle and the cache's entry.
pub const PAGE_OVERHEAD: u64 = 96;

/// The most pages one device read fetches (256 KiB).
const MAX_RUN_PAGES: u64 = 64;

/// Key of a cached page: (file's cache number, page number).
type PageKey = (u64, u64);

/// Weighs a page by its bytes plus [`PAGE_OVERHEAD`].
#[derive(Debug, Clone, Copy)]
struct PageWeighter;

impl quick_cache::Weighter<PageKey, Bytes> for PageWeighter {
    fn weight(&self, _key: &PageKey, page: &Bytes) -> u64 {
        page.len() as u64 + PAGE_OVERHEAD
    }
}

/// Hit, miss and device-read counts of a `PageCache`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Bytes the cache may hold (its budget).
    pub capacity_bytes: u64,
    /// Bytes it holds now (pages plus their overhead).
    pub used_bytes: u64,
    /// Pages it holds now.
    pub pages: u64,
    /// Pages found in the cache.
    pub hits: u64,
    /// Pages read from the device.
    pub misses: u64,
    /// Device reads (one per run of consecutive missing pages).
    pub device_reads: u64,
    /// Bytes read from the device.
    pub device_bytes: u64,
}

impl CacheStats {
    /// Hits over lookups (0 when nothing was looked up).
    pub fn hit_ratio(&self) -> f64 {
        let all = self.hits + self.misses;
        if all == 0 {
            0.0
        } else {
            self.hits as f64 / all as f64
        }
    }
}

/// A bounded, sharded, scan-resistant cache of file pages.
pub struct PageCache {
    /// `None` when the budget is 0: every read goes to the device.
    pages: Option<quick_cache::sync::Cache<PageKey, Bytes, PageWeighter>>,
    capacity_bytes: u64,
    hits: Counter,
    misses: Counter,
    device_reads: Counter,
    device_bytes: Counter,
    /// The next open file's number in the keys (never reused).
    next_file: AtomicU64,
}

impl std::fmt::Debug for PageCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PageCache")
            .field("capacity_bytes", &self.capacity_bytes)
            .finish_non_exhaustive()
    }
}

/// The last run a thread read from the device without filling a cache.
struct NoFillRun {
    /// The cache whose file it was read from: file numbers are unique within a cache, and a
    /// thread may read files of several databases. Weak, so that a closed database's cache
    /// is not kept; while this is held its address is not reused, so comparing addresses is
    /// comparing caches.
    cache: Weak<PageCache>,
    /// The file's number in that cache.
    file: u64,
    /// The run's first page.
    first: u64,
    bytes: Vec<u8>,
}

thread_local! {
    /// The last run this thread read from the device without filling the cache. Reads that
    /// fill nothing (compactions, GC, `verify`) walk files in order, so the next read
    /// usually falls in it: read ahead once, not per page.
    static NO_FILL_RUN: RefCell<NoFillRun> = const {
        RefCell::new(NoFillRun {
            cache: Weak::new(),
            file: 0,
            first: 0,
            bytes: Vec::new(),
        })
    };
}

/// Pages read ahead by a read that fills nothing (256 KiB).
const NO_FILL_READAHEAD_PAGES: u64 = 64;

impl PageCache {
    /// A cache holding at most `capacity_bytes` (0: nothing is cached).
    pub fn new(capacity_bytes: u64) -> Arc<PageCache> {
        let per_page = PAGE_BYTES as u64 + PAGE_OVERHEAD;
        let pages = (capacity_bytes >= per_page).then(|| {
            let items = usize::try_from(capacity_bytes / per_page).unwrap_or(usize::MAX);
            // No ghost entries: a page evicted and read again would come back straight into
            // the hot ring, and a scan larger than the cache re-reads the pages it just lost.
            // Lookups touch their pages more than once (the prefetch, then the reads), so
            // their pages are referenced and promoted without ghosts; a scan's are not.
            let options = quick_cache::OptionsBuilder::new()
                .estimated_items_capacity(items)
                .weight_capacity(capacity_bytes)
                .ghost_allocation(0.0)
                .build();
            match options {
                Ok(o) => quick_cache::sync::Cache::with_options(
                    o,
                    PageWeighter,
                    Default::default(),
                    Default::default(),
                ),
                Err(_) => quick_cache::sync::Cache::with_weighter(items, capacity_bytes, PageWeighter),
            }
        });
        Arc::new(PageCache {
            pages,
            capacity_bytes,
            hits: Counter::default(),
            misses: Counter::default(),
            device_reads: Counter::default(),
            device_bytes: Counter::default(),
            next_file: AtomicU64::new(1),
        })
    }

    /// The cache's counters and occupancy.
    pub fn stats(&self) -> CacheStats {
        CacheStats {
            capacity_bytes: self.capacity_bytes,
            used_bytes: self.pages.as_ref().map_or(0, |p| p.weight()),
            pages: self.pages.as_ref().map_or(0, |p| p.len() as u64),
            hits: self.hits.get(),
            misses: self.misses.get(),
            device_reads: self.device_reads.get(),
            device_bytes: self.device_bytes.get(),
        }
    }

    fn get(&self, key: PageKey) -> Option<Bytes> {
        let pages = self.pages.as_ref()?;
        if scope::in_scan() {
            pages.peek(&key)
        } else {
            pages.get(&key)
        }
    }

    fn contains(&self, key: PageKey) -> bool {
        self.pages.as_ref().is_some_and(|p| p.contains_key(&key))
    }

    fn insert(&self, key: PageKey, page: Bytes) {
        if let Some(p) = &self.pages {
            p.insert(key, page);
        }
    }

    fn remove(&self, key: PageKey) {
        if let Some(p) = &self.pages {
            p.remove(&key);
        }
    }
}

/// An immutable file read through a [`PageCache`]: every read is served page by page from
/// the cache, runs of missing pages read from `inner` with one aligned read each.
pub struct CachedFile {
    inner: Arc<dyn RandomAccessFile>,
    cache: Arc<PageCache>,
    /// This open file's number in the cache's keys (unique within the cache).
    file: u64,
    len: u64,
    path: PathBuf,
}

impl CachedFile {
    /// Wraps `inner` (the file at `path`, which must not change while open) with `cache`.
    ///
    /// # Errors
    /// `Io` when the file's length cannot be read.
    pub fn new(inner: Arc<dyn RandomAccessFile>, cache: Arc<PageCache>, path: &Path) -> Result<Self> {
        Ok(CachedFile {
            len: inner.len()?,
            inner,
            file: cache.next_file.fetch_add(1, Ordering::Relaxed),
            cache,
            path: path.to_path_buf(),
        })
    }

    /// Reads pages `[first, end)` (all missing from the cache, `end` within the file) with
    /// one device read, copies the part of `[offset, offset + buf.len())` they hold into
    /// `buf`, and caches them unless this thread reads without filling.
    fn read_run(&self, first: u64, end: u64, offset: u64, buf: &mut [u8]) -> Result<()> {
        let page = PAGE_BYTES as u64;
        let start = first * page;
        let stop = (end * page).min(self.len);
        let mut data = vec![0u8; (stop - start) as usize];
        self.inner.read_exact_at(start, &mut data)?;
        self.cache.misses.add(end - first);
        self.cache.device_reads.add(1);
        self.cache.device_bytes.add(data.len() as u64);
        copy_overlap(&data, start, offset, buf);
        if !scope::fills() || self.cache.pages.is_none() {
            return Ok(());
        }
        if end - first == 1 {
            self.cache.insert((self.file, first), Bytes::from(data));
        } else {
            for (i, chunk) in data.chunks(PAGE_BYTES).enumerate() {
                self.cache
                    .insert((self.file, first + i as u64), Bytes::copy_from_slice(chunk));
            }
        }
        Ok(())
    }

    /// Serves page `p` (of the pages `p..=last` a read needs, missing from the cache) from
    /// this thread's last no-fill run, reading a new run of at least
    /// [`NO_FILL_READAHEAD_PAGES`] first when it does not hold `p`; copies what the run holds
    /// of `[offset, offset + buf.len())` and returns the first page it did not cover.
    fn read_without_fill(&self, p: u64, last: u64, offset: u64, buf: &mut [u8]) -> Result<u64> {
        let page = PAGE_BYTES as u64;
        NO_FILL_RUN.with(|cell| {
            let mut run = cell.borrow_mut();
            let NoFillRun {
                cache,
                file,
                first,
                bytes,
            } = &mut *run;
            let held = *file == self.file
                && std::ptr::eq(cache.as_ptr(), Arc::as_ptr(&self.cache))
                && p >= *first
                && p < *first + (bytes.len() as u64).div_ceil(page);
            if !held {
                let end = (p + NO_FILL_READAHEAD_PAGES.max(last + 1 - p)).min(self.len.div_ceil(page));
                let (start, stop) = (p * page, (end * page).min(self.len));
                // No file until the read succeeds: a failed read leaves no stale run.
                *file = 0;
                bytes.resize((stop - start) as usize, 0);
                self.inner.read_exact_at(start, bytes)?;
                self.cache.misses.add(end - p);
                self.cache.device_reads.add(1);
                self.cache.device_bytes.add(stop - start);
                (*cache, *file, *first) = (Arc::downgrade(&self.cache), self.file, p);
            }
            copy_overlap(bytes, *first * page, offset, buf);
            Ok((*first + (bytes.len() as u64).div_ceil(page)).min(last + 1))
        })
    }

    /// End (exclusive) of the run of missing pages starting at the missing page `p`: up to
    /// `last` and at most [`MAX_RUN_PAGES`] long.
    fn missing_run_end(&self, p: u64, last: u64) -> u64 {
        let mut end = p + 1;
        while end <= last && end - p < MAX_RUN_PAGES && !self.cache.contains((self.file, end)) {
            end += 1;
        }
        end
    }

    fn eof(&self) -> Error {
        Error::io(
            format!("reading {}", self.path.display()),
            std::io::Error::from(std::io::ErrorKind::UnexpectedEof),
        )
    }
}

/// Copies the part of `src` (which starts at file offset `src_at`) that overlaps the range
/// `buf` stands for (starting at file offset `dst_at`).
fn copy_overlap(src: &[u8], src_at: u64, dst_at: u64, buf: &mut [u8]) {
    let from = src_at.max(dst_at);
    let to = (src_at + src.len() as u64).min(dst_at + buf.len() as u64);
    if from >= to {
        return;
    }
    let (s, d, n) = (
        (from - src_at) as usize,
        (from - dst_at) as usize,
        (to - from) as usize,
    );
    buf[d..d + n].copy_from_slice(&src[s..s + n]);
}

impl RandomAccessFile for CachedFile {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        if buf.is_empty() {
            return Ok(());
        }
        let end = offset
            .checked_add(buf.len() as u64)
            .filter(|&e| e <= self.len)
            .ok_or_else(|| self.eof())?;
        let page = PAGE_BYTES as u64;
        let last = (end - 1) / page;
        let mut p = offset / page;
        while p <= last {
            if let Some(bytes) = self.cache.get((self.file, p)) {
                self.cache.hits.add(1);
                copy_overlap(&bytes, p * page, offset, buf);
                p += 1;
                continue;
            }
            if !scope::fills() {
                p = self.read_without_fill(p, last, offset, buf)?;
                continue;
            }
            let run_end = self.missing_run_end(p, last);
            self.read_run(p, run_end, offset, buf)?;
            p = run_end;
        }
        Ok(())
    }

    fn as_slice(&self) -> Option<&[u8]> {
        None
    }

    fn len(&self) -> Result<u64> {
        Ok(self.len)
    }

    /// Reads the missing pages of the range into the cache, each run of consecutive missing
    /// pages with one device request (nothing when this thread reads without filling).
    fn prefetch(&self, offset: u64, len: u64) {
        if len == 0 || !scope::fills() || self.cache.pages.is_none() {
            return;
        }
        let end = offset.saturating_add(len).min(self.len);
        if end <= offset {
            return;
        }
        let page = PAGE_BYTES as u64;
        let last = (end - 1) / page;
        let mut p = offset / page;
        while p <= last {
            if self.cache.contains((self.file, p)) {
                p += 1;
                continue;
            }
            let run_end = self.missing_run_end(p, last);
            if self.read_run(p, run_end, 0, &mut []).is_err() {
                return;
            }
            p = run_end;
        }
    }
}

impl Drop for CachedFile {
    /// Removes the file's pages: they can never be read again.
    fn drop(&mut self) {
        if self.cache.pages.is_some() {
            for p in 0..self.len.div_ceil(PAGE_BYTES as u64) {
                self.cache.remove((self.file, p));
            }
        }
    }
}
