//! [`ValueLog`]: the set of value-log segments of one database directory (WiscKey §3.2).
//!
//! Where it sits: the write path appends large values with [`ValueLog::append`] before
//! writing their WAL record; the read path resolves pointers with [`ValueLog::read`];
//! recovery checks replayed pointers with [`ValueLog::read_with_key`]; compactions copy
//! values into segments of their own (`log_output.rs`, [`ValueLog::read_stored`]); GC (in
//! the db layer) drops collected segments with [`ValueLog::delete_segment`]; `verify` walks
//! sealed segments with [`ValueLog::segment_entries`]. Garbage accounting and GC policy live
//! in the manifest/db code.
//!
//! Invariants:
//! - Once [`ValueLog::start_active`] ran, exactly one segment is active (appended to); it is
//!   read with `ReadMode::Pread` because it grows, and every appended byte is visible to
//!   reads after [`ValueLog::flush`]. Before it (a read-only database, or a database open
//!   still checking its files) nothing is written.
//! - Sealed segments are immutable; they are read with the configured mode (and, under
//!   `direct`, through the database's page cache). Those sealed by this process are synced
//!   (a rollover syncs a segment before it creates the next one).
//! - A segment found at open may end in bytes its last process only handed to the OS (a
//!   crash leaves its cache behind) only if it was active when that process stopped: a
//!   rollover syncs a segment before it creates the next. Such bytes matter only through the
//!   WAL records pointing at them, which the open replays. [`ValueLog::start_active`] keeps
//!   appending to the newest segment when it ends in a clean chain of entries, below the
//!   size limit (its first sync then syncs the whole file), and otherwise marks it unsynced
//!   before it starts a new segment; the caller marks the segments its replayed WAL records
//!   point into ([`ValueLog::note_unsynced`]), which covers an older active segment whose
//!   process stopped early (older builds started a segment at every open). The first
//!   [`ValueLog::sync`] syncs exactly the marked segments and the active one, so nothing made
//!   durable after it (the table an open writes from the replayed WALs, above all) points at
//!   bytes a power cut can take, and segments nobody wrote to since their last sync cost no
//!   fsync.
//! - Appends never follow bytes that are not a valid entry: a segment whose tail is torn,
//!   zero-filled or damaged is never appended to again.
//! - Segment ids only grow and are never reused: rollovers and compactions (which write
//!   segments of their own, `log_output.rs`) take them from one counter, under the `active`
//!   lock, so a segment whose creation a crash tore is the newest id anyone was handed; a new
//!   segment at open takes an id above every existing one and every one the manifest mentions.
//! - Segments a compaction reserved in the manifest but never installed (a crash in
//!   between) are orphans: [`ValueLog::open_existing_with_orphans`] does not open them and
//!   [`ValueLog::start_active`] removes them.
//!
//! Locking: `active` (the writer) is taken before `unsynced`, and either before `segments`
//! (the reader table); reads take only `segments`, briefly, to clone a reader handle.

use super::fetch::{read_parallel, FetchPool};
use super::segment::{
    parse_segment_file_name, segment_file_name, SegmentEntry, SegmentReader, SegmentWriter,
    ValueRequest, ValueSink, SEGMENT_HEADER_LEN,
};
use super::ValuePointer;
use crate::compression::Compression;
use crate::error::{Error, Result};
use crate::cache::FileReads;
use crate::fs::{FileSystem, ReadMode};
use parking_lot::{Mutex, RwLock};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

/// A snapshot of one segment's state, as reported by [`ValueLog::segments`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentInfo {
    /// The segment id (its file is `segment_file_name(id)`).
    pub id: u64,
    /// Bytes in the segment, header included (buffered bytes included for the active one).
    pub size_bytes: u64,
    /// False only for the active segment.
    pub sealed: bool,
}

/// What [`ValueLog::start_active`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActiveStart {
    /// The active segment's id.
    pub segment: u64,
    /// True if the newest existing segment was reused (appends continue after its last
    /// entry); false if a new segment was created.
    pub reused: bool,
    /// A segment shorter than its header (its creation was torn) that was removed. It never
    /// held an entry; the caller may record it as deleted.
    pub removed_stub: Option<u64>,
    /// Orphan segments (reserved by a compaction that never installed them) whose files were
    /// removed; nothing points into them.
    pub removed_orphans: Vec<u64>,
}

/// One entry of the reader table.
struct Slot {
    reader: Arc<SegmentReader>,
    /// `Some(size)` once sealed; `None` for the active segment.
    sealed_size: Option<u64>,
}

/// The active segment's writer and whether a write to it has failed.
struct Active {
    writer: SegmentWriter,
    /// Set when an append, flush or sync failed: the segment's tail is then unknown, and
    /// appending after it could leave damage in the middle of the segment.
    failure: Option<Arc<Error>>,
    /// Length of the active segment known to be durable; [`ValueLog::sync`] skips the fsync
    /// when nothing was appended since.
    synced_len: u64,
}

impl Active {
    /// Fails with `Poisoned` once a write has failed.
    fn check(&self) -> Result<()> {
        match &self.failure {
            Some(first) => Err(Error::poisoned(
                format!("value-log segment {}", self.writer.id()),
                first.clone(),
            )),
            None => Ok(()),
        }
    }

    /// Records an I/O failure of `result`, so every later write is refused.
    fn note<T>(&mut self, result: Result<T>) -> Result<T> {
        if let Err(e @ Error::Io { .. }) = &result {
            self.failure = Some(Arc::new(e.clone()));
        }
        result
    }
}

/// The value log of one directory. `Send + Sync`; all methods take `&self`.
pub struct ValueLog {
    fs: Arc<dyn FileSystem>,
    dir: PathBuf,
    reads: FileReads,
    segment_bytes: u64,
    /// The active segment's writer (`None` until [`Self::start_active`]; always in a
    /// read-only database). Lock order: `active`, then `segments`.
    active: Mutex<Option<Active>>,
    /// The newest segment found at open, when it is shorter than its header (a crash tore
    /// its creation): removed by [`Self::start_active`].
    stub: Mutex<Option<u64>>,
    /// The next segment id to hand out (rollovers and compactions); taken under `active`.
    next_id: AtomicU64,
    /// Files of orphan segments found at open (see the module doc), removed by
    /// [`Self::start_active`].
    orphans: Mutex<Vec<u64>>,
    /// Readers of every live segment, the active one included.
    segments: RwLock<BTreeMap<u64, Slot>>,
    /// Sealed segments that may hold bytes no sync made durable yet (see the module doc);
    /// the next [`Self::sync`] syncs them. Lock order: after `active`.
    unsynced: Mutex<BTreeSet<u64>>,
    /// Threads reading scan batches in parallel (0: the scanning thread reads alone).
    fetch_threads: usize,
    /// Started by the first batch that uses it.
    fetch_pool: OnceLock<FetchPool>,
    /// How appended values are compressed.
    compression: Compression,
}

impl std::fmt::Debug for ValueLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ValueLog")
            .field("dir", &self.dir)
            .field("read_mode", &self.reads.mode())
            .field("segment_bytes", &self.segment_bytes)
            .finish_non_exhaustive()
    }
}

/// Smallest batch split among fetch threads (smaller ones cost more to hand out than to
/// read).
const MIN_PARALLEL_FETCH: usize = 8;

impl ValueLog {
    /// Reads scan batches with `threads` extra threads (0: none), started on first use.
    pub fn with_fetch_threads(mut self, threads: usize) -> Self {
        self.fetch_threads = threads;
        self
    }

    /// Compresses appended values with `compression` (each value on its own, when that
    /// saves an eighth of it).
    pub fn with_compression(mut self, compression: Compression) -> Self {
        self.compression = compression;
        self
    }

    /// Opens the value log in `dir` (created if missing) for writing: [`Self::open_existing`],
    /// then [`Self::start_active`] with no id the caller rules out (`min_new_id` 1, nothing
    /// deleted).
    ///
    /// # Errors
    /// As those two.
    #[cfg(test)]
    pub fn open(
        fs: Arc<dyn FileSystem>,
        dir: &Path,
        reads: impl Into<FileReads>,
        segment_bytes: u64,
    ) -> Result<ValueLog> {
        fs.create_dir_all(dir)?;
        let log = Self::open_existing(fs, dir, reads, segment_bytes)?;
        log.start_active(1, &|_| false)?;
        Ok(log)
    }

    /// Opens the existing `*.vlog` segments of `dir` for reading, with `read_mode`, and
    /// changes nothing on disk: there is no active segment until [`Self::start_active`]
    /// (a read-only database never starts one; appends fail until then).
    ///
    /// A segment file shorter than its header is left by a crash while it was being created
    /// (`SegmentWriter::create` syncs the header before anything can point into it), and then
    /// it is the newest segment: `start_active` removes it. One shorter than its header with
    /// a newer segment beside it was damaged after the fact, and is `Corruption`.
    ///
    /// # Errors
    /// `InvalidArgument` if `segment_bytes` is 0; `Corruption`/`UnsupportedVersion` if an
    /// existing segment's header is damaged or of another version, or a segment other than
    /// the newest is shorter than its header; `Io` on file-system failures.
    #[cfg(test)]
    pub fn open_existing(
        fs: Arc<dyn FileSystem>,
        dir: &Path,
        reads: impl Into<FileReads>,
        segment_bytes: u64,
    ) -> Result<ValueLog> {
        Self::open_existing_with_orphans(fs, dir, reads, segment_bytes, &|_| false)
    }

    /// [`Self::open_existing`], except that the segments `is_orphan` names (reserved in the
    /// manifest by a compaction that never installed them) are neither opened nor checked:
    /// their files, whatever they hold, are removed by [`Self::start_active`]. Their ids still
    /// count when the next id is chosen.
    ///
    /// # Errors
    /// As [`Self::open_existing`].
    pub fn open_existing_with_orphans(
        fs: Arc<dyn FileSystem>,
        dir: &Path,
        reads: impl Into<FileReads>,
        segment_bytes: u64,
        is_orphan: &dyn Fn(u64) -> bool,
    ) -> Result<ValueLog> {
        let reads = reads.into();
        if segment_bytes == 0 {
            return Err(Error::InvalidArgument(
                "value-log segment size must be at least 1 byte".into(),
            ));
        }
        let mut ids: Vec<u64> = fs
            .list(dir)?
            .iter()
            .filter_map(|name| parse_segment_file_name(name))
            .collect();
        ids.sort_unstable();
        let next_id = ids.last().map_or(1, |max| max.saturating_add(1));
        let (orphans, ids): (Vec<u64>, Vec<u64>) = ids.into_iter().partition(|&id| is_orphan(id));

        let mut slots = BTreeMap::new();
        let mut stub = None;
        for &id in &ids {
            let path = dir.join(segment_file_name(id));
            let size = fs.size(&path)?;
            if size < SEGMENT_HEADER_LEN as u64 {
                if ids.last() != Some(&id) {
                    return Err(Error::corruption(
                        &path,
                        0,
                        format!(
                            "segment of {size} bytes is shorter than its \
                             {SEGMENT_HEADER_LEN}-byte header, and newer segments exist: it \
                             was damaged (a crash can only tear the creation of the newest one)"
                        ),
                    ));
                }
                stub = Some(id);
                continue;
            }
            let reader = SegmentReader::open(fs.as_ref(), dir, id, reads.clone())?;
            let slot = Slot {
                reader: Arc::new(reader),
                sealed_size: Some(size),
            };
            slots.insert(id, slot);
        }

        Ok(ValueLog {
            fs,
            dir: dir.to_path_buf(),
            reads,
            segment_bytes,
            active: Mutex::new(None),
            stub: Mutex::new(stub),
            next_id: AtomicU64::new(next_id),
            orphans: Mutex::new(orphans),
            segments: RwLock::new(slots),
            unsynced: Mutex::new(BTreeSet::new()),
            fetch_threads: 0,
            fetch_pool: OnceLock::new(),
            compression: Compression::None,
        })
    }

    /// Starts the active segment (see docs/format/vlog.md, "Open"): after removing a segment
    /// whose creation a crash tore (see [`Self::open_existing`]), it reuses the newest
    /// segment found at open when it can, and otherwise creates a new one and syncs the
    /// directory.
    ///
    /// The newest segment `n` is reused when `is_deleted(n)` is false, `n + 1 >= min_new_id`
    /// (no id above `n` is one the caller rules out, so a rollover from `n` creates a fresh
    /// id), it has the current format version, it is smaller than `segment_bytes`, and it is
    /// a clean chain of entries ([`SegmentReader::clean_end`]: reads the segment once).
    /// Appends then continue after its last byte; its bytes are synced by the first
    /// [`Self::sync`]. A new segment gets an id larger than every segment found at open and at
    /// least `min_new_id` (the manifest passes one more than the largest segment id it ever
    /// recorded, so an id whose file GC already deleted is never reused while metadata may
    /// still mention it). Every other segment found whose size `is_deleted` does not rule
    /// out (the caller's recorded sizes are durable) is marked unsynced.
    ///
    /// # Errors
    /// `InvalidArgument` if the log already has an active segment; `Io` on file-system
    /// failures.
    pub fn start_active(
        &self,
        min_new_id: u64,
        is_deleted: &dyn Fn(u64) -> bool,
    ) -> Result<ActiveStart> {
        let mut active = self.active.lock();
        if active.is_some() {
            return Err(Error::InvalidArgument(
                "the value log already has an active segment".into(),
            ));
        }
        let removed_stub = self.stub.lock().take();
        if let Some(id) = removed_stub {
            let path = self.segment_path(id);
            ::log::warn!(
                "removing {}: torn during creation, holds no entries",
                path.display()
            );
            self.fs.remove(&path)?;
        }
        let removed_orphans = std::mem::take(&mut *self.orphans.lock());
        for &id in &removed_orphans {
            let path = self.segment_path(id);
            ::log::info!(
                "removing {}: written by a compaction that did not complete",
                path.display()
            );
            self.fs.remove(&path)?;
        }
        let newest = self
            .segments
            .read()
            .last_key_value()
            .map(|(&id, slot)| (id, Arc::clone(&slot.reader)));
        let reusable = match (&newest, removed_stub) {
            (Some((id, reader)), None) => self.reusable(*id, reader, min_new_id, is_deleted)?,
            _ => false,
        };
        let newest = newest.map(|(id, _)| id);
        let writer = match newest {
            Some(id) if reusable => SegmentWriter::reopen(self.fs.as_ref(), &self.dir, id)?,
            _ => {
                self.next_id.fetch_max(min_new_id, Ordering::SeqCst);
                let next_id = self.take_id()?;
                let writer = SegmentWriter::create(self.fs.as_ref(), &self.dir, next_id)?;
                self.fs.sync_dir(&self.dir)?;
                writer
            }
        };
        let reused = reusable;
        let id = writer.id();
        // Every segment found at open whose size the caller has not recorded (`is_deleted`
        // covers the recorded ones) may hold bytes its last process never synced: the
        // previous active segment, and an older one when a compaction's segment was
        // installed above it, or when its entry's WAL record was lost (then no replayed
        // record marks it). The next sync syncs them before any edit records their sizes.
        {
            let segments = self.segments.read();
            let mut unsynced = self.unsynced.lock();
            unsynced.extend(segments.keys().copied().filter(|&s| s != id && !is_deleted(s)));
        }
        self.unsynced.lock().remove(&id);
        // A reused segment's reader was opened with the configured mode; it grows now.
        let reader = SegmentReader::open(self.fs.as_ref(), &self.dir, id, ReadMode::Pread)?;
        self.segments.write().insert(
            id,
            Slot {
                reader: Arc::new(reader),
                sealed_size: None,
            },
        );
        *active = Some(Active {
            // A reused segment may end in bytes its last process never synced: the first
            // sync syncs it whatever this process appends.
            synced_len: if reused { 0 } else { writer.len() },
            writer,
            failure: None,
        });
        self.next_id.fetch_max(id.saturating_add(1), Ordering::SeqCst);
        Ok(ActiveStart {
            segment: id,
            reused,
            removed_stub,
            removed_orphans,
        })
    }

    /// Whether the newest segment found at open, `id`, may become the active one again (see
    /// [`Self::start_active`]).
    fn reusable(
        &self,
        id: u64,
        reader: &SegmentReader,
        min_new_id: u64,
        is_deleted: &dyn Fn(u64) -> bool,
    ) -> Result<bool> {
        if is_deleted(id)
            || id.saturating_add(1) < min_new_id
            || reader.format_version() != super::SEGMENT_FORMAT_VERSION
        {
            return Ok(false);
        }
        let size = reader.file_len()?;
        if size >= self.segment_bytes {
            return Ok(false);
        }
        // One pass over the segment; it need not stay in the page cache (direct mode).
        match crate::cache::without_cache_fill(|| reader.clean_end())? {
            Some(end) if end == size => Ok(true),
            _ => {
                ::log::info!(
                    "not reusing value-log segment {}: it does not end in a complete entry \
                     (a crash can tear its tail); a new segment follows it",
                    self.segment_path(id).display()
                );
                Ok(false)
            }
        }
    }

    /// Marks the sealed segments `ids` as possibly holding bytes no sync made durable yet,
    /// so the next [`Self::sync`] syncs them. An open marks the segments its replayed WAL
    /// records point into before it persists them in a table. Ids of the active segment or of
    /// no segment are ignored.
    pub fn note_unsynced(&self, ids: impl IntoIterator<Item = u64>) {
        let active = self.active.lock();
        let active_id = active.as_ref().map(|a| a.writer.id());
        let segments = self.segments.read();
        let mut unsynced = self.unsynced.lock();
        for id in ids {
            if Some(id) != active_id && segments.contains_key(&id) {
                unsynced.insert(id);
            }
        }
    }

    /// The sealed segments the next [`Self::sync`] will sync besides the active one.
    pub fn unsynced_segments(&self) -> Vec<u64> {
        self.unsynced.lock().iter().copied().collect()
    }

    /// Appends `(key, value)` to the active segment and returns its pointer. When the
    /// segment reaches `segment_bytes` it is sealed (synced, reader reopened with the
    /// configured mode) and the next segment is started (directory synced); the returned
    /// pointer is then into the just-sealed segment. The entry is readable after
    /// [`Self::flush`] (immediately, if this append sealed the segment).
    ///
    /// # Errors
    /// `InvalidArgument` for an oversized key or value; `Io` on a write, sync or create
    /// failure. A failed write or sync poisons the log: later appends, flushes and syncs
    /// return `Poisoned` (reopen to continue). If only creating the next
    /// segment failed, the entry is durable but the error is returned, and a later append
    /// retries the rollover.
    pub fn append(&self, key: &[u8], value: &[u8]) -> Result<ValuePointer> {
        let mut guard = self.active.lock();
        // No active segment: a read-only database's value log, which never starts one.
        let active = guard.as_mut().ok_or_else(|| Error::ReadOnly {
            dir: self.dir.clone(),
        })?;
        active.check()?;
        let appended = active.writer.append(key, value, self.compression);
        let ptr = active.note(appended)?;
        if active.writer.len() >= self.segment_bytes {
            self.roll(active)?;
        }
        Ok(ptr)
    }

    /// Seals segment `id` if it is the active segment and holds an entry, as a rollover at
    /// `segment_bytes` would (synced, reader reopened with the configured mode, the next
    /// segment created and the directory synced), so that GC can collect it. A no-op when
    /// `id` is sealed already (a concurrent append may have rolled it over) or unknown.
    ///
    /// # Errors
    /// As a rollover in [`Self::append`]: `Io`, and a failed sync poisons the log;
    /// `Poisoned` after an earlier failed write.
    pub fn seal(&self, id: u64) -> Result<()> {
        let mut guard = self.active.lock();
        let Some(active) = guard.as_mut() else {
            return Ok(());
        };
        if active.writer.id() != id || active.writer.is_empty() {
            return Ok(());
        }
        active.check()?;
        self.roll(active)
    }

    /// Seals the active segment and replaces it with a new one. REQUIRES: the caller holds
    /// the `active` lock (it passes the guarded state).
    fn roll(&self, active: &mut Active) -> Result<()> {
        let synced = active.writer.sync();
        active.note(synced)?;
        let sealed_id = active.writer.id();
        let sealed_size = active.writer.len();
        let sealed = SegmentReader::open(self.fs.as_ref(), &self.dir, sealed_id, self.reads.clone())?;
        let next_id = self.take_id()?;
        let next = SegmentWriter::create(self.fs.as_ref(), &self.dir, next_id)?;
        self.fs.sync_dir(&self.dir)?;
        let next_reader =
            SegmentReader::open(self.fs.as_ref(), &self.dir, next_id, ReadMode::Pread)?;
        {
            let mut segments = self.segments.write();
            segments.insert(
                sealed_id,
                Slot {
                    reader: Arc::new(sealed),
                    sealed_size: Some(sealed_size),
                },
            );
            segments.insert(
                next_id,
                Slot {
                    reader: Arc::new(next_reader),
                    sealed_size: None,
                },
            );
        }
        active.writer = next;
        active.synced_len = active.writer.len();
        Ok(())
    }

    /// Hands the active segment's buffered bytes to the OS, so reads see them.
    ///
    /// # Errors
    /// `Io` on a write failure; `Poisoned` after an earlier failed write.
    pub fn flush(&self) -> Result<()> {
        let mut guard = self.active.lock();
        let Some(active) = guard.as_mut() else {
            return Ok(());
        };
        active.check()?;
        let flushed = active.writer.flush();
        active.note(flushed)
    }

    /// Makes every appended entry durable (segments sealed by this process already are),
    /// and the segments marked unsynced (see the module doc): one fsync per segment written
    /// since its last sync, none when nothing was.
    ///
    /// # Errors
    /// `Io` on a write or fsync failure; `Poisoned` after an earlier failed write.
    pub fn sync(&self) -> Result<()> {
        let mut guard = self.active.lock();
        let Some(active) = guard.as_mut() else {
            return Ok(());
        };
        active.check()?;
        {
            let mut unsynced = self.unsynced.lock();
            while let Some(&id) = unsynced.first() {
                self.fs.sync_file(&self.segment_path(id))?;
                unsynced.remove(&id);
            }
        }
        if active.writer.len() == active.synced_len {
            return Ok(());
        }
        let synced = active.writer.sync();
        active.note(synced)?;
        active.synced_len = active.writer.len();
        Ok(())
    }

    /// Whether segment `id` is live, sealed or active: false for one deleted (by GC, or a
    /// compaction that left it all garbage) and for an id no segment ever had.
    pub fn is_live(&self, id: u64) -> bool {
        self.segments.read().contains_key(&id)
    }

    fn reader(&self, ptr: &ValuePointer) -> Result<Arc<SegmentReader>> {
        let segments = self.segments.read();
        match segments.get(&ptr.segment) {
            Some(slot) => Ok(Arc::clone(&slot.reader)),
            None => Err(Error::corruption(
                self.segment_path(ptr.segment),
                ptr.offset,
                "value pointer into a value-log segment that does not exist",
            )),
        }
    }

    /// Reads the value `ptr` points at, verifying the entry's checksum and length.
    ///
    /// # Errors
    /// `Corruption` naming the segment file and offset if the segment does not exist or the
    /// entry is incomplete, damaged, or of another length; `Io` on read failures.
    #[cfg(test)]
    pub fn read(&self, ptr: &ValuePointer) -> Result<Vec<u8>> {
        self.reader(ptr)?.read(ptr, None)
    }

    /// Like [`Self::read`], and also checks that the entry was written under `key` (GC and
    /// `verify` use this to catch pointers that point at the wrong entry).
    ///
    /// # Errors
    /// As [`Self::read`]; a different key is `Corruption`.
    pub fn read_with_key(&self, ptr: &ValuePointer, key: &[u8]) -> Result<Vec<u8>> {
        self.reader(ptr)?.read(ptr, Some(key))
    }

    /// Reads the values of many pointers at once (a range scan's batch): sorts `requests` by
    /// segment and offset, takes each segment's reader once, and reads each segment's entries
    /// in file order (coalesced reads through `pread`, see `SegmentReader::read_values`). With
    /// fetch threads ([`Self::with_fetch_threads`]) and at least `MIN_PARALLEL_FETCH`
    /// requests, contiguous chunks of the sorted batch are read in parallel. Every entry is
    /// checked as [`Self::read_with_key`] checks it; `sink` receives each value with its
    /// request's slot, and the segment's mapping when the value is borrowed from it.
    ///
    /// # Errors
    /// As [`Self::read_with_key`], for the first request that fails.
    pub fn read_values(
        &self,
        requests: &mut [ValueRequest<'_>],
        sink: &mut ValueSink<'_>,
    ) -> Result<()> {
        requests.sort_unstable_by_key(|r| (r.ptr.segment, r.ptr.offset));
        if self.fetch_threads > 0 && requests.len() >= MIN_PARALLEL_FETCH {
            let pool = self
                .fetch_pool
                .get_or_init(|| FetchPool::start(self.fetch_threads));
            if pool.threads() > 0 {
                return read_parallel(pool, requests, &|ptr| self.reader(ptr), sink);
            }
        }
        let mut rest = &requests[..];
        while let Some(first) = rest.first() {
            let n = rest.partition_point(|r| r.ptr.segment == first.ptr.segment);
            let (group, tail) = rest.split_at(n);
            self.reader(&first.ptr)?.read_values(group, sink)?;
            rest = tail;
        }
        Ok(())
    }

    /// True if `ptr` refers to a complete, checksum-valid entry of the right length in an
    /// existing segment (whatever its key: WAL replay uses [`Self::read_with_key`]).
    #[cfg(test)]
    pub fn is_valid(&self, ptr: &ValuePointer) -> bool {
        self.read(ptr).is_ok()
    }

    /// Id of the active segment (`None` before [`Self::start_active`], and in a read-only
    /// database).
    pub fn active_segment(&self) -> Option<u64> {
        self.active.lock().as_ref().map(|a| a.writer.id())
    }

    /// Every live segment in id order (the active one is the newest write-path segment, but
    /// a compaction's segment may have a larger id).
    pub fn segments(&self) -> Vec<SegmentInfo> {
        let active = self.active.lock();
        let segments = self.segments.read();
        segments
            .iter()
            .map(|(&id, slot)| SegmentInfo {
                id,
                size_bytes: slot
                    .sealed_size
                    .or_else(|| active.as_ref().map(|a| a.writer.len()))
                    .unwrap_or(0),
                sealed: slot.sealed_size.is_some(),
            })
            .collect()
    }

    fn sealed_reader(&self, id: u64) -> Result<Arc<SegmentReader>> {
        let segments = self.segments.read();
        match segments.get(&id) {
            None => Err(Error::InvalidArgument(format!(
                "value-log segment {id} does not exist"
            ))),
            Some(Slot {
                sealed_size: None, ..
            }) => Err(Error::InvalidArgument(format!(
                "value-log segment {id} is the active segment"
            ))),
            Some(slot) => Ok(Arc::clone(&slot.reader)),
        }
    }

    /// All complete, valid entries of sealed segment `id`, in file order (for `verify`). A torn
    /// tail (from a crash before the segment was sealed) is skipped.
    ///
    /// # Errors
    /// `InvalidArgument` if `id` is the active segment or does not exist; `Corruption` if
    /// the segment is damaged before its end; `Io` on read failures.
    pub fn segment_entries(&self, id: u64) -> Result<Vec<SegmentEntry>> {
        self.sealed_reader(id)?.entries().collect()
    }

    /// Removes sealed segment `id`'s file and syncs the directory. Readers already holding
    /// the segment (in-flight reads) finish normally; later reads of it are `Corruption`.
    /// The caller ensures no snapshot or iterator can still reach the segment.
    ///
    /// # Errors
    /// `InvalidArgument` if `id` is the active segment or does not exist; `Io` if the file
    /// cannot be removed (the segment then stays readable) or the directory synced.
    pub fn delete_segment(&self, id: u64) -> Result<()> {
        self.unsynced.lock().remove(&id);
        {
            let mut segments = self.segments.write();
            match segments.get(&id) {
                None => {
                    return Err(Error::InvalidArgument(format!(
                        "value-log segment {id} does not exist"
                    )))
                }
                Some(Slot {
                    sealed_size: None, ..
                }) => {
                    return Err(Error::InvalidArgument(format!(
                        "cannot delete the active value-log segment {id}"
                    )))
                }
                Some(_) => {}
            }
            self.fs.remove(&self.segment_path(id))?;
            segments.remove(&id);
        }
        self.fs.sync_dir(&self.dir)
    }

    /// Path of segment `id`'s file (whether or not it exists).
    pub fn segment_path(&self, id: u64) -> PathBuf {
        self.dir.join(segment_file_name(id))
    }
}

#[path = "log_output.rs"]
mod output;

#[cfg(test)]
#[path = "log_tests.rs"]
mod tests;
