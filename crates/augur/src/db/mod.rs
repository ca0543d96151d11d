//! The database handle: the public API and the state shared by foreground and background
//! work. Follow a `put` through `write.rs` (group commit → value log → WAL → memtable) and a
//! `get` through `read.rs` (memtable → immutable memtables → version → value log). Opening and
//! recovery are in `open.rs`; flush, compaction and value-log GC run from `background.rs`.

mod background;
mod batch;
mod checkpoint;
mod expiry;
mod flush;
mod gc;
mod lifecycle;
mod obsolete;
mod open;
mod pin;
mod read;
mod repair;
mod replay;
mod stats;
mod thread_priority;
mod verify;
mod write;
mod write_delay;

pub use write::TryWrite;

pub use batch::WriteBatch;
pub use checkpoint::{CheckpointInfo, CheckpointOptions};
pub use gc::GcReport;
pub use read::Found;
pub use repair::{repair, KeptSegment, KeptTable, LostFile, RecoveredWal, RepairReport, LOST_DIR};
pub use stats::{IndexMemory, LevelStats, Stats, ValueLogSegmentStats};

pub(crate) use crate::iter::{SnapshotGuard, SnapshotList};
// WAL records decoded outside the database too (`crate::inspect`).
pub(crate) use background::BackgroundState;
pub(crate) use batch::decode_record;
pub(crate) use lifecycle::Lifecycle;
pub(crate) use read::ReadState;
pub(crate) use write::{MemState, WriteState};

use crate::error::{Error, Result};
use crate::fs::FileLock;
use crate::iter::{
    owned_range, DbIterator, KeyRange, ParallelScanOptions, Registration, Scan, ScanOptions,
    Snapshot, Split,
};
use crate::key::SeqNo;
use crate::options::Options;
use crate::version::{Version, VersionEdit, VersionSet};
use crate::vlog::ValueLog;
use parking_lot::Mutex;
use std::ops::RangeBounds;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::JoinHandle;

/// Options of one write.
#[derive(Debug, Clone, Copy, Default)]
pub struct WriteOptions {
    /// Make the write durable (fsync of the value log and WAL) before returning. A write
    /// acknowledged with `sync = true` survives a crash; without it, a crash may lose a
    /// suffix of recent writes but never leaves a torn or reordered state.
    pub sync: bool,
}

/// Shared state of an open database: what never changes after the open (the directory, the
/// options as the user gave them, what the open recovered), the tree and the value log (each
/// with its own locks), and four parts, each owning its locks behind private fields and
/// reached through methods (LevelDB marks each field of `DBImpl` `GUARDED_BY` its mutex;
/// mini-lsm swaps one state snapshot; here each lock belongs to one part):
///
/// - [`WriteState`] (`write.rs`): the writer queue, the commit lock, the WAL, the memtables,
///   the last visible seqno;
/// - [`BackgroundState`] (`background.rs`): the threads' signals, the locks that serialize
///   units of work, flushes and GC runs, GC's bookkeeping, the compaction strategy (with
///   FLSM's seek statistics), the level models;
/// - [`ReadState`] (`read.rs`): what scans read through, the snapshot list, the lookup-step
///   sampling;
/// - [`Lifecycle`] (`lifecycle.rs`): closed, and poisoned by the first unrecoverable error.
///
/// **Lock order**, one total order over every lock of a database (a thread holding one takes
/// only locks further right):
///
/// `threads` (the [`Db`] handle's) → `gc` → `unit` → `flush` (background) → `queue` →
/// `committing` → `wal` → `mem` (write) → `manifest` → `current` (version set) → leaves.
///
/// A leaf is held while no other lock is taken: `poisoned`; the background part's
/// `gc_skipped`, `level_models` and `pending_deletions` (which deletes value-log files under
/// it); a queued writer's own lock and the write-delay account; the snapshot list; the
/// strategy's own locks (FLSM's round-robin cursors and seek statistics); the work signals.
/// The lower layers' locks come last and take none of these: the value log's, the tables'
/// caches and open-file bound, the learner's (told about each new version under
/// `manifest`). One exception, a try-lock, never waits: automatic GC try-locks `gc` while it
/// holds `unit`.
pub(crate) struct DbInner {
    /// The database directory.
    pub dir: PathBuf,
    /// The options as the user gave them (validated); the open never changes them.
    pub opts: Options,
    /// What the open found in the directory (the compaction style, the WAL losses it
    /// accepted), kept apart from `opts`.
    pub recovered: open::Recovered,
    /// The versions and the manifest (lock order inside: `manifest` → `current`).
    pub versions: VersionSet,
    /// The value log (its locks are leaves).
    pub vlog: Arc<ValueLog>,
    /// The write part.
    pub writes: WriteState,
    /// The background part.
    pub work: BackgroundState,
    /// The read part.
    pub reads: ReadState,
    /// Closed and poisoned.
    pub life: Lifecycle,
    /// Operation counters (atomics, no lock).
    pub counters: stats::Counters,
    /// The background learner and the learning statistics (its locks are leaves).
    pub learner: Arc<crate::learning::learner::Learner>,
    /// The directory lock (`None` in a read-only database, which takes none).
    pub _lock: Option<Box<dyn FileLock>>,
}

impl DbInner {
    /// Fails with `Poisoned` (its source the first failure) after an unrecoverable error,
    /// `Closed` after close, and `ReadOnly` in a read-only database.
    pub fn check_writable(&self) -> Result<()> {
        if self.life.is_closed() {
            return Err(Error::Closed);
        }
        if self.opts.read_only {
            return Err(self.read_only());
        }
        match self.life.poisoned() {
            Some(first) => Err(Error::poisoned(
                format!("the database {}", self.dir.display()),
                first,
            )),
            None => Ok(()),
        }
    }

    /// The error of a change asked of a read-only database.
    pub fn read_only(&self) -> Error {
        Error::ReadOnly {
            dir: self.dir.clone(),
        }
    }

    /// Records an unrecoverable error; every later write fails. `Closed` is not one: work
    /// that stops because the database is closing (a GC run, a flush) did not fail.
    pub fn poison(&self, e: &Error) {
        if matches!(e, Error::Closed) {
            return;
        }
        self.life.poison(e);
        self.work.signal().notify_all();
    }

    /// Writes `edit` to the manifest and installs the version it makes
    /// ([`VersionSet::log_and_apply`], whose contract on failure holds), recording with it
    /// the size of every sealed value-log segment the manifest does not know yet (see
    /// [`unrecorded_sealed_segments`]). Every edit of an open database goes through here.
    pub fn log_and_apply(&self, mut edit: VersionEdit) -> Result<Arc<Version>> {
        edit.vlog_sealed = unrecorded_sealed_segments(&self.vlog, &self.versions.current());
        self.versions.log_and_apply(edit)
    }

    /// Whether background threads do the background work: as `Options::background_threads`
    /// asks, except in a read-only database, which does none.
    pub fn background_threads(&self) -> bool {
        self.opts.background_threads && !self.opts.read_only
    }

    /// Largest visible seqno.
    pub fn visible_seqno(&self) -> SeqNo {
        self.writes.visible_seqno()
    }

    /// The oldest seqno any reader may still read at.
    pub fn oldest_readable_seqno(&self) -> SeqNo {
        self.reads.snapshots().oldest_or(|| self.visible_seqno())
    }

    /// Registers a read view at the current visible seqno (atomically with respect to
    /// compaction and GC deciding what is still readable).
    pub fn register_current(&self) -> SnapshotGuard {
        SnapshotGuard::new_current(self.reads.snapshots().clone(), || self.visible_seqno())
    }

    /// What a scan reads at: `snapshot`'s registration, shared, or one of its own at the
    /// current seqno.
    fn registration(&self, snapshot: Option<&Snapshot>) -> Registration {
        match snapshot {
            Some(s) => s.guard().clone().into(),
            None => self.register_current().into(),
        }
    }
}

/// The sealed segments of `vlog` whose final size `version` does not record, with that size.
///
/// A segment's size is final once it is sealed and synced (a rollover or `ValueLog::seal`
/// syncs it; a compaction's segment is sealed when it is added; one found at open is synced
/// by the open or the next `ValueLog::sync`), and the next edit records it, so an open
/// can tell a truncated segment from a whole one; the first open of a database from an older
/// build records what it finds. Sizes only ever repeat the same value, so two edits racing
/// to record one are harmless.
pub(crate) fn unrecorded_sealed_segments(vlog: &ValueLog, version: &Version) -> Vec<(u64, u64)> {
    // A segment an earlier process may have left unsynced waits for the next sync: recorded
    // now, a power cut could shorten it below its recorded size.
    let unsynced = vlog.unsynced_segments();
    vlog.segments()
        .into_iter()
        .filter(|s| {
            s.sealed
                && !unsynced.contains(&s.id)
                && !version.vlog_sealed.contains_key(&s.id)
                && !version.vlog_deleted.contains(s.id)
                // A compaction's segment is recorded once installed (an open removes an
                // uninstalled one).
                && !version.vlog_reserved.contains(&s.id)
        })
        .map(|s| (s.id, s.size_bytes))
        .collect()
}

/// An open database. Cheap to share between threads (`Db` is `Send + Sync`; wrap it in an
/// `Arc` or use scoped threads). Dropping it flushes nothing extra but stops background
/// work cleanly: every acknowledged write is already in the WAL.
pub struct Db {
    inner: Arc<DbInner>,
    /// The background threads: compaction (and flushes when there is no flush thread),
    /// and the flush thread. First in the lock order (see [`DbInner`]): `close` joins the
    /// threads under it.
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl Db {
    /// Opens (or, with `create_if_missing`, creates) the database in `path`.
    ///
    /// # Errors
    /// `InvalidArgument` for bad options, a missing database without `create_if_missing`,
    /// an existing one with `error_if_exists`, or a directory that is not an Augur database;
    /// `Busy` when another handle or process has it open; `Corruption` when a file is damaged;
    /// `ResourceLimit` when it holds more tables than the kernel's mapping or open-files
    /// limit lets it open (the message names the limit and `max_open_files`).
    pub fn open(path: impl AsRef<Path>, opts: Options) -> Result<Db> {
        let inner = Arc::new(open::open(path.as_ref(), opts)?);
        let mut background = Vec::new();
        if inner.background_threads() {
            let bg = inner.clone();
            let handle = std::thread::Builder::new()
                .name("augur-bg".into())
                .spawn(move || background::run(&bg))
                .map_err(|e| Error::io("starting the background thread", e))?;
            background.push(handle);
        }
        if inner.has_flush_thread() {
            let bg = inner.clone();
            let spawned = std::thread::Builder::new()
                .name("augur-flush".into())
                .spawn(move || background::run_flushes(&bg));
            match spawned {
                Ok(handle) => background.push(handle),
                Err(e) => {
                    inner.work.shut_down();
                    for h in background {
                        let _ = h.join();
                    }
                    return Err(Error::io("starting the flush thread", e));
                }
            }
        }
        let db = Db {
            inner,
            threads: Mutex::new(background),
        };
        db.inner.request_background_work();
        Ok(db)
    }

    /// Whether `path` holds an Augur database (on the real file system): `true` when it has
    /// a CURRENT file; `false` when it does not exist, is empty, or holds only what a
    /// creation interrupted by a crash leaves (a create replaces that).
    ///
    /// # Errors
    /// `Corruption` naming CURRENT when CURRENT is missing but the directory holds a
    /// database's WALs, tables, value-log segments or manifests (an open refuses such a
    /// directory too, rather than start an empty database over the data); `Io` when it
    /// cannot be listed.
    pub fn exists(path: impl AsRef<Path>) -> Result<bool> {
        open::database_exists(&crate::fs::StdFs, path.as_ref())
    }

    /// The database directory.
    pub fn path(&self) -> &Path {
        &self.inner.dir
    }

    /// The WALs this open found missing or shorter than the manifest recorded, one line
    /// each, whose lost writes were dropped because `Options::accept_wal_loss` was set
    /// (without it such an open fails with `Corruption`). Empty after a clean open.
    pub fn wal_losses(&self) -> &[String] {
        &self.inner.recovered.wal_losses
    }

    /// The value of `key`, or `None`.
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        self.inner.get(key.as_ref(), None)
    }

    /// The value of `key` with its expiry time (`None` for a value that never expires), or
    /// `None` when the key is absent or has expired.
    pub fn get_with_expiry(&self, key: impl AsRef<[u8]>) -> Result<Option<Found>> {
        self.inner.get_expiring(key.as_ref(), None)
    }

    /// The value of `key` as of `snapshot`.
    pub fn get_at(&self, key: impl AsRef<[u8]>, snapshot: &Snapshot) -> Result<Option<Vec<u8>>> {
        self.inner.get(key.as_ref(), Some(snapshot.seqno()))
    }

    /// Stores `value` under `key` (not synced; see [`WriteOptions`]). Any byte string up to
    /// 65,535 bytes is a key, the empty one included; values up to 2 GiB.
    pub fn put(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        let mut b = WriteBatch::new();
        b.put(key, value);
        self.write(b)
    }

    /// Stores `value` under `key` until `expire_at_unix_ms` (milliseconds since the Unix
    /// epoch, on [`Options::clock`](crate::Options::clock)); from then on the key reads as
    /// deleted and compaction drops it (not synced). See [`WriteBatch::put_expiring`].
    pub fn put_expiring(
        &self,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        expire_at_unix_ms: u64,
    ) -> Result<()> {
        let mut b = WriteBatch::new();
        b.put_expiring(key, value, expire_at_unix_ms);
        self.write(b)
    }

    /// Stores `value` under `key` for `ttl` from now, on the database's clock (not
    /// synced). See [`Db::put_expiring`].
    pub fn put_with_ttl(
        &self,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        ttl: std::time::Duration,
    ) -> Result<()> {
        let ttl_ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX);
        let at = self.now_unix_ms().saturating_add(ttl_ms);
        self.put_expiring(key, value, at)
    }

    /// Now on the clock expiry is judged by ([`Options::clock`](crate::Options::clock)), in
    /// milliseconds since the Unix epoch.
    pub fn now_unix_ms(&self) -> u64 {
        self.inner.opts.clock.now_unix_ms()
    }

    /// Deletes `key` (not synced).
    pub fn delete(&self, key: impl AsRef<[u8]>) -> Result<()> {
        let mut b = WriteBatch::new();
        b.delete(key);
        self.write(b)
    }

    /// Applies `batch` atomically (not synced).
    pub fn write(&self, batch: WriteBatch) -> Result<()> {
        self.write_opt(batch, WriteOptions::default())
    }

    /// Applies `batch` atomically with `options` (e.g. `sync`).
    ///
    /// # Errors
    /// `InvalidArgument` for an oversized key (over 65,535 bytes) or value; `ReadOnly` in a
    /// read-only database; `Io` when the log cannot be written, which poisons the database;
    /// `Poisoned` after an earlier failed write or background job, its source that first
    /// failure (a writer whose batch joined a group that failed gets the group's failure so,
    /// as do the writers after it).
    pub fn write_opt(&self, batch: WriteBatch, options: WriteOptions) -> Result<()> {
        self.inner.write(batch, options.sync)
    }

    /// Applies `batch` atomically (not synced) unless that would wait: for a write
    /// slowdown or stall (flushes and L0 compactions behind), or for a memtable switch (which
    /// syncs the old WAL). Then the batch is handed back untouched in
    /// [`TryWrite::WouldWait`], to be written with [`Self::write`] from a thread that may
    /// block. For callers on an event loop: a write that goes through costs no thread
    /// hand-off. It may still wait briefly for the group of writes being committed.
    ///
    /// # Errors
    /// As [`Self::write_opt`].
    pub fn try_write(&self, batch: WriteBatch) -> Result<TryWrite> {
        self.inner.try_write(batch)
    }

    /// A snapshot of the current state.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot::new(self.inner.register_current())
    }

    /// Iterates over all keys in order (forward with `next`, backward with `next_back`).
    pub fn iter(&self) -> DbIterator {
        self.range::<&[u8], _>(..)
    }

    /// Iterates over the keys within `range`, yielding owned pairs. For scans without a
    /// copy per pair, see [`Db::scan`].
    pub fn range<K: AsRef<[u8]>, R: RangeBounds<K>>(&self, range: R) -> DbIterator {
        self.iterator(self.inner.registration(None), owned_range(&range))
    }

    /// Iterates over the keys within `range` as of `snapshot`.
    pub fn range_at<K: AsRef<[u8]>, R: RangeBounds<K>>(
        &self,
        range: R,
        snapshot: &Snapshot,
    ) -> DbIterator {
        self.iterator(self.inner.registration(Some(snapshot)), owned_range(&range))
    }

    fn iterator(&self, guard: Registration, range: KeyRange) -> DbIterator {
        let state = self.inner.scan_state(guard);
        DbIterator::new(state, range, self.inner.opts.scan_readahead)
    }

    /// A zero-copy forward scan of `range` at the current state: each pair borrows the
    /// scan until the next call ([`Scan::next`]).
    pub fn scan<K: AsRef<[u8]>, R: RangeBounds<K>>(&self, range: R) -> Scan {
        self.scan_with(range, &ScanOptions::default())
    }

    /// A zero-copy scan of `range` with `options` (direction, snapshot, readahead).
    pub fn scan_with<K: AsRef<[u8]>, R: RangeBounds<K>>(
        &self,
        range: R,
        options: &ScanOptions,
    ) -> Scan {
        let state = self
            .inner
            .scan_state(self.inner.registration(options.snapshot.as_ref()));
        let readahead = options
            .value_readahead
            .unwrap_or(self.inner.opts.scan_readahead);
        let scan = Scan::new(state, owned_range(&range), !options.reverse, readahead);
        if options.keys_only {
            scan.keys_only()
        } else {
            scan
        }
    }

    /// Scans `range` in parallel: cuts it into partitions (`options.split`: equal key-space
    /// intervals, or equal entry counts estimated from the files' learned indexes), scans
    /// them on `options.threads` threads over one snapshot, and calls `work` once per
    /// partition with its index and a zero-copy [`Scan`] of it. Returns `work`'s results in
    /// key order (reverse key order with `options.reverse`): concatenating what each
    /// partition's scan yields gives exactly what one [`Db::scan`] of the range yields. `work`
    /// runs concurrently on different partitions.
    ///
    /// ```no_run
    /// # fn main() -> augur::Result<()> {
    /// # let db = augur::Db::open("/tmp/db", augur::Options::default())?;
    /// let counts = db.scan_parallel::<&[u8], _, _, _>(.., &Default::default(), |_, scan| {
    ///     let mut n = 0u64;
    ///     while scan.next()?.is_some() {
    ///         n += 1;
    ///     }
    ///     Ok(n)
    /// })?;
    /// println!("{} entries", counts.iter().sum::<u64>());
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// `InvalidArgument` for 0 threads or more than 4096 threads or partitions; the first
    /// error of a partition's scan or of `work` (the remaining partitions are then skipped).
    pub fn scan_parallel<K, R, T, F>(
        &self,
        range: R,
        options: &ParallelScanOptions,
        work: F,
    ) -> Result<Vec<T>>
    where
        K: AsRef<[u8]>,
        R: RangeBounds<K>,
        T: Send,
        F: Fn(usize, &mut Scan) -> Result<T> + Sync,
    {
        let count = options.partition_count()?;
        let state = self
            .inner
            .scan_state(self.inner.registration(options.snapshot.as_ref()));
        let range = owned_range(&range);
        let partitions = crate::iter::split(&state, &range, count, options.split);
        let readahead = options
            .value_readahead
            .unwrap_or(self.inner.opts.scan_readahead);
        let mut results = crate::iter::run_parallel(
            &state,
            partitions,
            options.threads,
            !options.reverse,
            readahead,
            &work,
        )?;
        if options.reverse {
            results.reverse();
        }
        Ok(results)
    }

    /// An estimate of how many entries lie below `key` now: every version and tombstone
    /// (expired values included) in the memtables and tables whose key sorts before `key`,
    /// from the tables' indexes (learned models' windows, fence pointers) and the
    /// memtables' key ranges (interpolated). Reads no data block; O(tables). For sizing and
    /// reporting (an application's count of its own keys below a reserved range), never
    /// for correctness.
    pub fn approximate_rank(&self, key: impl AsRef<[u8]>) -> u64 {
        let state = self.inner.scan_state(self.inner.register_current());
        crate::iter::rank_below(&state, key.as_ref())
    }

    /// The partitions [`Db::scan_parallel`] would cut `range` into at the current state:
    /// at most `partitions` sub-ranges in key order that tile the range exactly.
    pub fn scan_partitions<K: AsRef<[u8]>, R: RangeBounds<K>>(
        &self,
        range: R,
        partitions: usize,
        split: Split,
    ) -> Vec<KeyRange> {
        let state = self.inner.scan_state(self.inner.register_current());
        crate::iter::split(
            &state,
            &owned_range(&range),
            partitions.clamp(1, 4096),
            split,
        )
    }

    /// Makes every write acknowledged so far durable: syncs the value log, then the WAL (what
    /// [`WriteOptions::sync`] does for one write; a server's once-a-second sync, Redis's
    /// `appendfsync everysec`, calls this).
    ///
    /// # Errors
    /// `Io` on a failed sync, which poisons the database (the state on disk is unknown);
    /// `Closed`, `Poisoned`, or `ReadOnly` in a read-only database.
    pub fn sync(&self) -> Result<()> {
        self.inner.sync_logs()
    }

    /// Flushes the memtable to an SSTable and waits until every immutable memtable is flushed.
    pub fn flush(&self) -> Result<()> {
        self.inner.flush_and_wait()
    }

    /// Waits until the background work a burst of writes left behind is done: no immutable
    /// memtable waits for its flush, no compaction is due and no value-log GC is running or
    /// due (RocksDB's `WaitForCompact`), and the tables compactions replaced are deleted
    /// (unless a snapshot or scan still reads them). Returns the error that stopped
    /// background work, if any.
    pub fn wait_for_compactions(&self) -> Result<()> {
        self.inner.wait_for_compactions()
    }

    /// Compacts every file overlapping the user-key range `[begin, end]` (`None` =
    /// unbounded) down the levels, dropping shadowed versions and tombstones that no
    /// snapshot can see.
    pub fn compact_range(&self, begin: Option<&[u8]>, end: Option<&[u8]>) -> Result<()> {
        self.inner.compact_range(begin, end)
    }

    /// Runs value-log garbage collection on the segment with the most garbage (if any has
    /// garbage), the active segment included: it is sealed first (an open keeps appending to
    /// the newest segment, so a database reopened often can hold all its garbage there).
    /// The memtables are flushed if they may point into it, then the tables that may are
    /// rewritten in place with its live values moved to a fresh segment, and it is deleted
    /// (its file once no snapshot or iterator can read it). Returns what was done;
    /// `GcReport::segment` is `None` when no segment has garbage.
    ///
    /// # Errors
    /// As a compaction's; an I/O failure poisons the database. `ReadOnly` in a read-only
    /// database.
    pub fn run_value_log_gc(&self) -> Result<GcReport> {
        self.inner.run_value_log_gc()
    }

    /// Counters and the shape of the tree.
    pub fn stats(&self) -> Stats {
        self.inner.stats()
    }

    /// Learns a model for every live SSTable that has none, on the calling thread, and
    /// returns how many models were installed. The `offline` policy's one learning pass
    /// (files created later are not learned); allowed under every policy but `never`.
    /// Models learned this way are not persisted: a restart needs another pass. With
    /// `Options::level_models`, it then also trains the model of every sorted level that
    /// lacks one (these are not counted in the result).
    ///
    /// # Errors
    /// `InvalidArgument` under the `never` policy; `Corruption` from a damaged file.
    pub fn learn_all(&self) -> Result<u64> {
        let learned = self
            .inner
            .learner
            .learn_all(&self.inner.versions.current())?;
        // Level models are set only by a holder of the background part's `unit`.
        let _work = self.inner.work.unit_turn();
        let version = self.inner.versions.current();
        while self.inner.train_one_level_model(&version)? {}
        Ok(learned)
    }

    /// Checks every checksum of every live SSTable and value-log segment, after the tree's
    /// structural invariants ([`Db::check_structure`]). Returns the number of table entries
    /// and value-log entries checked.
    pub fn verify(&self) -> Result<(u64, u64)> {
        self.check_structure()?;
        self.inner.verify()
    }

    /// Checks the current version's structural invariants without reading data: file
    /// order per level, disjoint sorted runs and, under FLSM, that every file lies inside
    /// one guard and each level's guards are a subset of the next level's.
    ///
    /// # Errors
    /// `Corruption` naming the first violation.
    pub fn check_structure(&self) -> Result<()> {
        self.inner
            .versions
            .current()
            .check_invariants()
            .map_err(|why| Error::corruption(&self.inner.dir, 0, why))
    }

    /// Test support (feature `test-util`): while `held`, immutable memtables are not
    /// flushed, so the WALs of switched memtables stay closed but unflushed, as a crash
    /// inside a flush leaves them. Writes that fill more memtables than
    /// `Options::max_immutable_memtables` then wait for ever.
    #[cfg(feature = "test-util")]
    #[doc(hidden)]
    pub fn hold_flushes_for_test(&self, held: bool) {
        self.inner.work.hold_flushes(held);
    }

    /// Test support (feature `test-util`): while `held`, automatic value-log GC does not run
    /// (compactions still relocate values out of segments past the GC ratio), so a test can
    /// tell what compactions alone do.
    #[cfg(feature = "test-util")]
    #[doc(hidden)]
    pub fn hold_automatic_gc_for_test(&self, held: bool) {
        self.inner.work.hold_automatic_gc(held);
    }

    /// Test support (feature `test-util`): the value pointer of the newest entry of every
    /// key of `level`'s files that holds one, in the order of the level's files (key order
    /// for a leveled level >= 1).
    ///
    /// # Errors
    /// `Corruption` or `Io` when a table cannot be read.
    #[cfg(feature = "test-util")]
    #[doc(hidden)]
    pub fn value_pointers_for_test(
        &self,
        level: usize,
    ) -> Result<Vec<(Vec<u8>, crate::vlog::ValuePointer)>> {
        self.inner.value_pointers(level)
    }

    /// Test support (feature `test-util`): the value-log segments some entry of a live table
    /// or memtable (any version, tombstones aside) points into.
    ///
    /// # Errors
    /// `Corruption` or `Io` when a table cannot be read.
    #[cfg(feature = "test-util")]
    #[doc(hidden)]
    pub fn referenced_segments_for_test(&self) -> Result<std::collections::BTreeSet<u64>> {
        self.inner.referenced_segments()
    }

    /// Test support (feature `test-util`): makes the memtable immutable behind a new WAL
    /// without flushing it (see [`Db::hold_flushes_for_test`]).
    ///
    /// # Errors
    /// As a write.
    #[cfg(feature = "test-util")]
    #[doc(hidden)]
    pub fn switch_memtable_for_test(&self) -> Result<()> {
        self.inner.check_writable()?;
        self.inner.switch_memtable_in_turn()
    }

    /// FLSM: the committed guard keys of each level (empty lists under leveled).
    pub fn guards(&self) -> Vec<Vec<Vec<u8>>> {
        let version = self.inner.versions.current();
        version.guards.iter().map(|g| g.as_ref().clone()).collect()
    }

    /// Stops background work and releases the directory lock. Called by `drop`.
    pub fn close(&self) -> Result<()> {
        if !self.inner.life.close() {
            return Ok(());
        }
        self.inner.work.shut_down();
        for h in std::mem::take(&mut *self.threads.lock()) {
            let _ = h.join();
        }
        self.inner.learner.shutdown();
        self.inner.close_logs()
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        if let Err(e) = self.close() {
            log::warn!("error while closing the database: {e}");
        }
    }
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Db").field("dir", &self.inner.dir).finish()
    }
}

#[cfg(test)]
mod tests {
    use crate::{Db, Error, Options};

    #[test]
    fn work_stopped_by_a_close_does_not_poison_the_database() {
        // A GC run or flush that meets the close returns `Closed`, which the background
        // thread hands to `poison` like any failure: it logged "database poisoned: database
        // is closed" at every close of a Python database, and skipped the clean close's
        // record of the WAL's size.
        let tmp = tempfile::tempdir().expect("tempdir");
        let db = Db::open(tmp.path(), Options::default()).expect("open");
        db.inner.poison(&Error::Closed);
        assert!(!db.inner.life.is_poisoned());
        db.put(b"k", b"v").expect("a write after it");
        db.inner.poison(&Error::InvalidArgument("a failure".into()));
        assert!(db.put(b"k", b"v").is_err());
    }
}
