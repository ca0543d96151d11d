//! The write path: validation → group commit (one leader writes the value-log entries, one
//! WAL record and one fsync for a whole group of concurrent writers) → memtable insert →
//! publication of the new sequence number.
//!
//! A write that must not wait ([`DbInner::try_write`], for callers on an event loop) is
//! handed back instead of waiting for room: a slowdown, a stall behind flushes and L0
//! compactions, or a memtable switch (which syncs the old WAL). While a leader makes room it
//! releases the queue lock and hands queued no-wait writers their batches back, so such a
//! writer waits at most for the queue lock and for the group being written.
//!
//! Ordering for durability (WiscKey §3.3): value-log bytes are handed to the OS (and synced,
//! when asked) before the WAL record that points at them, so a surviving WAL record never
//! points at missing value-log bytes; recovery checks it anyway.
//!
//! The state this path owns is the database's write part, [`WriteState`] (below): the writer
//! queue, the commit lock, the WAL and the memtables, and the last visible seqno.

use super::batch::{commit_ops, encode_record, BatchOp, LoggedEntry, WriteBatch};
use super::write_delay::{self, WriteDelay};
use super::DbInner;
use crate::error::{Error, Result};
use crate::filename;
use crate::key::{SeqNo, ValueKind, MAX_KEY_LEN};
use crate::memtable::Memtable;
use crate::version::{Version, VersionEdit};
use crate::vlog::{entry_bytes, ValuePointer};
use crate::wal::{LogKind, LogWriter};
use arc_swap::ArcSwap;
use parking_lot::{Condvar, Mutex};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// `d` in nanoseconds, saturating.
fn duration_ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Largest value accepted (bytes); values are addressed with 32-bit lengths.
pub const MAX_VALUE_LEN: usize = (u32::MAX as usize) / 2;

/// One separated write in this many (by seqno) checks whether a table holds its key
/// ([`DbInner::sample_overwrite`]).
const OVERWRITE_SAMPLE: u64 = 16;

/// A write group's entries are inserted into the memtable in key order when there are at
/// least this many of them and they are dense in it: at most [`SORTED_INSERT_GAP`] entries
/// of the memtable between two of them on average. Each insert then walks on from the last
/// one ([`crate::memtable::Inserter`]); sparse groups (a few writers' random keys into a
/// large memtable) gain nothing from it, measured slower by the walk's climb.
const SORTED_INSERT_MIN: usize = 4;

/// See [`SORTED_INSERT_MIN`].
const SORTED_INSERT_GAP: usize = 64;

/// Bytes a leader gathers into one group at most (LevelDB's 1 MiB).
const MAX_GROUP_BYTES: usize = 1 << 20;

/// The write part of a database: what the write path owns. Readers, flushes and GC reach
/// it through the methods below, never through its locks.
///
/// Lock order: `queue` → `committing` → `wal` → `mem` (then the version set's locks); a
/// queued [`Writer`]'s own lock and the write-delay account are leaves. A leader releases
/// `queue` while it commits its group, but keeps its place at the queue's front: no other
/// group commits meanwhile, and a memtable switch runs as a writer of its own turn.
pub(crate) struct WriteState {
    /// The FIFO of writers; the front one leads (group commit).
    queue: Mutex<WriteQueue>,
    /// Wakes queued writers: their turn came, or their write is done.
    queue_cv: Condvar,
    /// Held by a write group's leader from its value-log appends to its memtable inserts:
    /// GC takes it to see every pointer into a segment that was just sealed
    /// ([`WriteState::wait_for_write_group`]).
    committing: Mutex<()>,
    /// The WAL receiving writes (`None` in a read-only database).
    wal: Mutex<Option<LogWriter>>,
    /// The memtables and the WAL number of the active one.
    mem: Mutex<MemState>,
    /// `mem`'s memtables as readers search them, newest first; replaced (under `mem`)
    /// whenever they change, loaded by readers without a lock.
    readable: ArcSwap<Memtables>,
    /// Largest seqno visible to readers.
    last_seqno: AtomicU64,
    /// The smooth slowdown's account (`write_delay.rs`).
    delay: WriteDelay,
}

impl WriteState {
    /// The write part of a database whose memtables are `mem`, logging to `wal` (`None`:
    /// read-only), with writes up to `last_seqno` visible.
    pub(super) fn new(mem: MemState, wal: Option<LogWriter>, last_seqno: SeqNo) -> WriteState {
        WriteState {
            queue: Mutex::default(),
            queue_cv: Condvar::new(),
            committing: Mutex::new(()),
            wal: Mutex::new(wal),
            readable: ArcSwap::from_pointee(mem.readable()),
            mem: Mutex::new(mem),
            last_seqno: AtomicU64::new(last_seqno),
            delay: WriteDelay::default(),
        }
    }

    /// Largest visible seqno.
    pub(super) fn visible_seqno(&self) -> SeqNo {
        self.last_seqno.load(Ordering::Acquire)
    }

    /// Every memtable, newest first (the active one, then the immutable ones).
    ///
    /// A reader that needs the files too loads the memtables first and the version after
    /// (`DbInner::read_view`): a flush installs its table's version before it drops the
    /// memtable, so a reader that no longer sees the memtable sees the table.
    pub(super) fn memtables(&self) -> Arc<Memtables> {
        self.readable.load_full()
    }

    /// [`WriteState::memtables`] borrowed for one short read: no lock and no reference
    /// count taken (a point read's cost). Hold the guard only for the read.
    #[inline]
    pub(super) fn memtables_now(&self) -> arc_swap::Guard<Arc<Memtables>> {
        self.readable.load()
    }

    /// Publishes `m`'s memtables to readers after they changed (REQUIRES: `m` is this
    /// state's `mem`, locked, so that publications follow the changes in order).
    fn publish(&self, m: &MemState) {
        self.readable.store(Arc::new(m.readable()));
    }

    /// The WAL number of the active memtable: every write committed before it became
    /// active is in a memtable logged to a lower number (or flushed).
    pub(super) fn active_wal_number(&self) -> u64 {
        self.mem.lock().wal_number
    }

    /// True while an immutable memtable waits for its flush.
    pub(super) fn has_immutable(&self) -> bool {
        !self.mem.lock().imm.is_empty()
    }

    /// The oldest immutable memtable, its WAL number and the number of the WAL after it
    /// (the log number once it is flushed), if any waits for its flush.
    pub(super) fn oldest_immutable(&self) -> Option<(Arc<Memtable>, u64, u64)> {
        let m = self.mem.lock();
        let (mem, wal_number) = m.imm.first()?;
        let next_log = m.imm.get(1).map_or(m.wal_number, |(_, n)| *n);
        Some((mem.clone(), *wal_number, next_log))
    }

    /// Drops `flushed` (the oldest immutable memtable, whose table is installed) from the
    /// memtables, if it is still there. Returns the bytes the memtables held just before:
    /// their most is reached just before one is released.
    pub(super) fn release_flushed(&self, flushed: &Arc<Memtable>) -> Option<u64> {
        let mut m = self.mem.lock();
        if !m
            .imm
            .first()
            .is_some_and(|(first, _)| Arc::ptr_eq(first, flushed))
        {
            return None;
        }
        let held = m.charged_bytes();
        m.imm.remove(0);
        self.publish(&m);
        Some(held)
    }

    /// Waits until the write group being committed (if any) has inserted its entries into
    /// the memtable: its value-log appends are then visible there.
    pub(super) fn wait_for_write_group(&self) {
        drop(self.committing.lock());
    }
}

/// Memtables and the WAL they are logged to.
pub(crate) struct MemState {
    /// The memtable receiving writes.
    pub mem: Arc<Memtable>,
    /// WAL file number of `mem`.
    pub wal_number: u64,
    /// Immutable memtables waiting for flush, oldest first, with their WAL numbers.
    pub imm: Vec<(Arc<Memtable>, u64)>,
}

/// The memtables a reader searches, newest first: the active one, then the immutable ones
/// from newest to oldest.
pub(crate) type Memtables = Vec<Arc<Memtable>>;

impl MemState {
    /// A state with an empty memtable (sized for `memtable_budget` bytes) logged to WAL
    /// `wal_number`.
    pub fn new(wal_number: u64, memtable_budget: usize) -> Self {
        Self::with_memtable(Arc::new(Memtable::with_budget(memtable_budget)), wal_number)
    }

    /// A state whose memtable is `mem`, logged to WAL `wal_number`.
    pub fn with_memtable(mem: Arc<Memtable>, wal_number: u64) -> Self {
        MemState {
            mem,
            wal_number,
            imm: Vec::new(),
        }
    }

    /// Bytes charged to the active memtable and those waiting for flush, together.
    pub fn charged_bytes(&self) -> u64 {
        let imm: usize = self.imm.iter().map(|(m, _)| m.approximate_bytes()).sum();
        (self.mem.approximate_bytes() + imm) as u64
    }

    /// `mem` then `imm`, newest first: what readers search.
    fn readable(&self) -> Memtables {
        let mut all = Vec::with_capacity(1 + self.imm.len());
        all.push(self.mem.clone());
        all.extend(self.imm.iter().rev().map(|(m, _)| m.clone()));
        all
    }
}

/// A writer waiting in the queue.
pub(crate) struct Writer {
    batch: WriteBatch,
    sync: bool,
    /// Committed alone, never gathered into another leader's group (a memtable switch
    /// queued as a writer).
    alone: bool,
    /// Hand the batch back rather than wait for room ([`DbInner::try_write`]).
    no_wait: bool,
    done: bool,
    result: Option<Result<()>>,
}

/// The FIFO of writers; the front one is the leader.
#[derive(Default)]
pub(crate) struct WriteQueue {
    queue: VecDeque<Arc<parking_lot::Mutex<Writer>>>,
    /// The leader is waiting for room (a slowdown, a stall or a memtable switch) with the
    /// queue unlocked: no-wait writers get their batches back at once.
    making_room: bool,
}

/// What a write that may not wait did.
#[derive(Debug)]
pub enum TryWrite {
    /// Committed.
    Written,
    /// Not written: committing it needs a wait. The batch, untouched, to write with a call
    /// that may wait.
    WouldWait(WriteBatch),
}

fn validate(batch: &WriteBatch) -> Result<()> {
    for op in &batch.ops {
        let (key, value_len) = match op {
            BatchOp::Put { key, value, .. } => (key, value.len()),
            BatchOp::Delete { key } => (key, 0),
        };
        if key.len() > MAX_KEY_LEN {
            return Err(Error::InvalidArgument(format!(
                "key of {} bytes exceeds the maximum of {MAX_KEY_LEN}",
                key.len()
            )));
        }
        if value_len > MAX_VALUE_LEN {
            return Err(Error::InvalidArgument(format!(
                "value of {value_len} bytes exceeds the maximum of {MAX_VALUE_LEN}"
            )));
        }
    }
    Ok(())
}

impl DbInner {
    /// Commits `batch`; see the module doc.
    pub fn write(&self, batch: WriteBatch, sync: bool) -> Result<()> {
        self.write_inner(batch, sync, false).map(|_| ())
    }

    /// Commits `batch` (not synced) unless that needs a wait for room; see the module doc.
    pub fn try_write(&self, batch: WriteBatch) -> Result<TryWrite> {
        Ok(match self.write_inner(batch, false, true)? {
            None => TryWrite::Written,
            Some(batch) => TryWrite::WouldWait(batch),
        })
    }

    /// Commits `batch`, or with `no_wait` hands it back (`Ok(Some)`) when that needs a wait.
    fn write_inner(
        &self,
        batch: WriteBatch,
        sync: bool,
        no_wait: bool,
    ) -> Result<Option<WriteBatch>> {
        validate(&batch)?;
        self.check_writable()?;
        if batch.is_empty() {
            return Ok(None);
        }
        let mut q = self.writes.queue.lock();
        if no_wait && q.making_room {
            return Ok(Some(batch));
        }
        let me = Arc::new(parking_lot::Mutex::new(Writer {
            batch,
            sync,
            alone: false,
            no_wait,
            done: false,
            result: None,
        }));
        q.queue.push_back(me.clone());
        loop {
            {
                let mut w = me.lock();
                if w.done {
                    return match w.result.take() {
                        // Handed back by a leader making room.
                        None => Ok(Some(std::mem::take(&mut w.batch))),
                        Some(result) => result.map(|()| None),
                    };
                }
            }
            if q.queue.front().is_some_and(|f| Arc::ptr_eq(f, &me)) {
                break;
            }
            self.writes.queue_cv.wait(&mut q);
        }
        // Leader. A group before this one may have failed and poisoned the database since
        // this writer's first check: its WAL record may be torn, nothing may follow it.
        let room = match self
            .check_writable()
            .and_then(|()| self.make_room_for_write(&mut q, no_wait))
        {
            Ok(true) => Ok(()),
            Ok(false) => {
                // Would wait: leave the queue; the next writer leads.
                q.queue.pop_front();
                self.writes.queue_cv.notify_all();
                return Ok(Some(std::mem::take(&mut me.lock().batch)));
            }
            Err(e) => Err(e),
        };
        let mut group_len = 1;
        let result = room.and_then(|()| {
            let group = collect_group(&q.queue);
            group_len = group.len();
            parking_lot::MutexGuard::unlocked(&mut q, || self.write_group(&group))
        });
        // The followers' batches were not written either: each gets the failure itself (a
        // clone, kind and all), or — when it poisoned the database — the `Poisoned` every
        // later writer gets, whose source is that first failure.
        let follower_result = match &result {
            Ok(()) => Ok(()),
            Err(e) => Err(self.check_writable().err().unwrap_or_else(|| e.clone())),
        };
        for _ in 0..group_len {
            if let Some(w) = q.queue.pop_front() {
                let mut w = w.lock();
                w.done = true;
                w.result = Some(follower_result.clone());
            }
        }
        self.writes.queue_cv.notify_all();
        drop(q);
        // With background threads, work is requested where it arises (memtable switch) and
        // the background thread loops until none is due; inline mode does it here.
        if result.is_ok() && !self.background_threads() && !no_wait {
            self.run_pending_work_inline()?;
        }
        result.map(|()| None)
    }

    /// Writes one group: value log, WAL, memtable, then publishes the seqnos.
    fn write_group(&self, group: &[Arc<parking_lot::Mutex<Writer>>]) -> Result<()> {
        // Value-log GC waits on this lock to see this group's pointers in the memtable.
        let _committing = self.writes.committing.lock();
        let first_seqno = self.visible_seqno() + 1;
        let ops: usize = group.iter().map(|w| w.lock().batch.ops.len()).sum();
        let mut entries: Vec<LoggedEntry> = Vec::with_capacity(ops);
        let mut sync = false;
        let mut separated = false;
        let mut user_bytes = 0u64;
        // The user's bytes of separated values, kept for the commit listener (which is told
        // values, not pointers); untouched while no listener is set.
        let listening = self.opts.commit_listener.is_some();
        let mut separated_values: Vec<Vec<u8>> = Vec::new();
        for w in group {
            let mut w = w.lock();
            sync |= w.sync;
            // The writer waits until the group is done, so its batch can be consumed.
            let batch = std::mem::take(&mut w.batch);
            for op in batch.ops {
                match op {
                    BatchOp::Put {
                        key,
                        value,
                        expire_at: Some(at),
                    } => {
                        user_bytes += (key.len() + value.len()) as u64;
                        entries.push(LoggedEntry {
                            kind: ValueKind::ExpiringValue,
                            value: crate::expiry::encode(at, &value),
                            key,
                        });
                    }
                    BatchOp::Put {
                        key,
                        value,
                        expire_at: None,
                    } => {
                        user_bytes += (key.len() + value.len()) as u64;
                        if value.len() >= self.opts.value_separation_threshold {
                            entries.push(self.separate(key, &value)?);
                            separated = true;
                            if listening {
                                separated_values.push(value);
                            }
                        } else {
                            entries.push(LoggedEntry {
                                kind: ValueKind::Value,
                                key,
                                value,
                            });
                        }
                    }
                    BatchOp::Delete { key } => {
                        user_bytes += key.len() as u64;
                        entries.push(LoggedEntry {
                            kind: ValueKind::Delete,
                            key,
                            value: Vec::new(),
                        })
                    }
                }
            }
        }
        if entries.is_empty() {
            return Ok(());
        }
        let vlog_bytes: u64 = entries
            .iter()
            .filter(|e| e.kind == ValueKind::Pointer)
            .filter_map(|e| Some(entry_bytes(e.key.len(), &ValuePointer::decode(&e.value)?)))
            .sum();
        let mut record = Vec::new();
        encode_record(first_seqno, &entries, &mut record);
        let logged = (|| {
            if sync {
                // Even when this group separated nothing: earlier unsynced groups may have
                // appended value-log bytes that the WAL records synced below point at.
                self.vlog.sync()?;
            } else if separated {
                self.vlog.flush()?;
            }
            let mut guard = self.writes.wal.lock();
            let wal = guard.as_mut().ok_or_else(|| self.no_wal())?;
            wal.add_record(&record)?;
            if sync {
                wal.sync()
            } else {
                wal.flush()
            }
        })();
        if let Err(e) = logged {
            self.poison(&e);
            return Err(e);
        }
        let mem = self.writes.mem.lock().mem.clone();
        let count = entries.len() as u64;
        let mut sampled_version = None;
        let mut insert = |inserter: &mut crate::memtable::Inserter<'_>, i: usize| {
            let e = &entries[i];
            let seqno = first_seqno + i as u64;
            inserter.insert(&e.key, seqno, e.kind, &e.value);
            if e.kind == ValueKind::Pointer && seqno.is_multiple_of(OVERWRITE_SAMPLE) {
                let version = sampled_version.get_or_insert_with(|| self.versions.current());
                self.sample_overwrite(&mem, version, e);
            }
        };
        if entries.len() >= SORTED_INSERT_MIN && entries.len() * SORTED_INSERT_GAP >= mem.len() {
            // In key order (stable: one key's entries keep their seqno order), so that each
            // insert walks on from the last one instead of descending the whole skiplist
            // (a replica applying a primary's stream, a bulk load's batches). The group's
            // seqnos are published only after the last insert, so no reader sees the order.
            let mut order: Vec<usize> = (0..entries.len()).collect();
            order.sort_by(|&a, &b| entries[a].key.cmp(&entries[b].key));
            let mut inserter = mem.inserter();
            for i in order {
                insert(&mut inserter, i);
            }
        } else {
            for i in 0..entries.len() {
                insert(&mut mem.inserter(), i);
            }
        }
        if let Some(listener) = &self.opts.commit_listener {
            // Under the commit lock, before the seqnos are published: in commit order, and
            // before any reader (a checkpoint's pin included) can see the group.
            listener.on_commit(first_seqno, &commit_ops(&entries, &separated_values));
        }
        self.counters.note_write(count, record.len() as u64);
        self.counters.note_user_bytes(user_bytes);
        self.counters.note_vlog_bytes(vlog_bytes);
        self.writes
            .last_seqno
            .store(first_seqno + count - 1, Ordering::Release);
        Ok(())
    }

    /// One sampled separated write (one in [`OVERWRITE_SAMPLE`]): when a table may hold its
    /// key, the write probably makes the value there garbage — which no GC sees until the
    /// memtable is flushed and compacted with that table — so the memtable is charged
    /// [`OVERWRITE_SAMPLE`] times this value's bytes (the older value's size is unknown;
    /// this one's stands for it). An update-heavy workload then switches memtables at their
    /// budget of hidden garbage instead of piling up value-log bytes (issue 40, finding 4);
    /// inserts of new keys pay one filter probe per sample.
    fn sample_overwrite(&self, mem: &Memtable, version: &Version, e: &LoggedEntry) {
        if !version.may_hold(&e.key) {
            return;
        }
        if let Some(p) = ValuePointer::decode(&e.value) {
            let bytes = crate::vlog::entry_bytes(e.key.len(), &p);
            mem.note_overwritten_value_bytes(bytes * OVERWRITE_SAMPLE);
        }
    }

    /// Appends `value` to the value log and returns the WAL entry pointing at it. A value-log
    /// failure poisons the database: the log's tail is in an unknown state.
    fn separate(&self, key: Vec<u8>, value: &[u8]) -> Result<LoggedEntry> {
        let ptr = self
            .vlog
            .append(&key, value)
            .inspect_err(|e| self.poison(e))?;
        Ok(LoggedEntry {
            kind: ValueKind::Pointer,
            key,
            value: ptr.encode().to_vec(),
        })
    }

    /// Syncs the value log, then the WAL, holding the WAL lock so that no record lands in
    /// between (`Db::sync`).
    ///
    /// # Errors
    /// As [`Db::sync`](crate::Db::sync).
    pub fn sync_logs(&self) -> Result<()> {
        self.check_writable()?;
        let mut guard = self.writes.wal.lock();
        let wal = guard.as_mut().ok_or_else(|| self.no_wal())?;
        let synced = self.vlog.sync().and_then(|()| wal.sync());
        synced.inspect_err(|e| self.poison(e))
    }

    /// The end of a clean close: makes every acknowledged write durable (value log, then
    /// WAL) and records the WAL's synced size in the manifest, as a memtable switch does.
    /// The next open then takes any damage to the WAL, or to the value-log entries it points
    /// at, for the loss it is, not for a crash's torn tail (docs/RELIABILITY.md). Then the
    /// manifest is rewritten whole and marked closed (`VersionSet::close_manifest`), so
    /// damage to its last record is refused too. A WAL without records needs no edit; a
    /// poisoned database only hands its buffered bytes to the OS (its state on disk is
    /// unknown); a read-only one has no WAL.
    ///
    /// # Errors
    /// `Io` on a write or sync failure.
    pub fn close_logs(&self) -> Result<()> {
        let mut guard = self.writes.wal.lock();
        let Some(wal) = guard.as_mut() else {
            return Ok(());
        };
        if self.life.is_poisoned() {
            let flushed = wal.flush();
            self.vlog.flush()?;
            return flushed;
        }
        if wal.is_empty() {
            wal.flush()?;
        } else {
            self.vlog.sync()?;
            wal.sync()?;
            let synced = wal.len();
            let number = self.writes.mem.lock().wal_number;
            self.log_and_apply(VersionEdit {
                wals_closed: vec![(number, synced)],
                ..VersionEdit::default()
            })?;
        }
        // The manifest rewritten whole, marked closed: the next open refuses any damage
        // after it instead of taking it for a crash's torn append.
        self.versions.close_manifest()
    }

    /// The error of a write to a database without a WAL (a read-only one).
    fn no_wal(&self) -> Error {
        self.read_only()
    }

    /// Ensures the memtable has room: switches to a new memtable and WAL when full, and
    /// slows down or stops writes while flushes and L0 compactions are behind. Returns true
    /// when there is room; false, without waiting, when there is none and `no_wait`.
    fn make_room_for_write(
        &self,
        q: &mut parking_lot::MutexGuard<'_, WriteQueue>,
        no_wait: bool,
    ) -> Result<bool> {
        let mut delayed = false;
        loop {
            self.check_writable()?;
            let l0_files = self.versions.current().levels[0].len();
            if !delayed && self.background_threads() {
                // Smooth slowdown: pay what the previous writes owe at L0's rate.
                match write_delay::slowdown_rate(l0_files, &self.opts) {
                    None => self.writes.delay.reset(),
                    Some(rate) => {
                        let total = self.counters.user_bytes();
                        let owed = self.writes.delay.owed(total, rate, Instant::now());
                        if !owed.is_zero() {
                            if no_wait {
                                return Ok(false);
                            }
                            self.wait_for_room(q, || {
                                std::thread::sleep(owed);
                                Ok(())
                            })?;
                            self.counters.note_slowdown(duration_ns(owed));
                        }
                        delayed = true;
                        continue;
                    }
                }
            }
            let (mem_full, imm_count) = {
                let m = self.writes.mem.lock();
                // A memtable is full at its budget of memory, or of value-log garbage its
                // writes hold back from GC (see `Memtable::garbage_value_bytes`).
                let budget = self.opts.memtable_size_bytes;
                (
                    m.mem.approximate_bytes() >= budget
                        || m.mem.garbage_value_bytes() >= budget as u64,
                    m.imm.len(),
                )
            };
            if !mem_full {
                return Ok(true);
            }
            if no_wait {
                return Ok(false);
            }
            if imm_count >= self.opts.max_immutable_memtables
                || l0_files >= self.opts.l0_stop_trigger
            {
                if self.background_threads() {
                    let started = Instant::now();
                    self.wait_for_room(q, || {
                        self.wait_for_background_progress();
                        Ok(())
                    })?;
                    self.counters.note_stall(duration_ns(started.elapsed()));
                } else {
                    self.wait_for_room(q, || self.run_pending_work_inline())?;
                }
                continue;
            }
            // The leader stays at the queue's front, so no other group runs meanwhile.
            self.wait_for_room(q, || self.switch_memtable().inspect_err(|e| self.poison(e)))?;
            return Ok(true);
        }
    }

    /// Runs `wait` with the queue unlocked and marked as making room, after handing every
    /// queued no-wait writer its batch back.
    fn wait_for_room(
        &self,
        q: &mut parking_lot::MutexGuard<'_, WriteQueue>,
        wait: impl FnOnce() -> Result<()>,
    ) -> Result<()> {
        let leader = q.queue.pop_front();
        q.queue.retain(|w| {
            let mut w = w.lock();
            if w.no_wait {
                w.done = true; // `result: None`: handed back
            }
            !w.no_wait
        });
        if let Some(leader) = leader {
            q.queue.push_front(leader);
        }
        self.writes.queue_cv.notify_all();
        q.making_room = true;
        let result = parking_lot::MutexGuard::unlocked(q, wait);
        q.making_room = false;
        result
    }

    /// Makes the current memtable immutable and starts a new one with a new WAL. The old WAL
    /// is synced first, so that later synced writes never survive a crash that loses earlier
    /// unsynced ones (recovery must yield a prefix).
    pub fn switch_memtable(&self) -> Result<()> {
        // Make the old WAL (and the value-log bytes it points at) durable before the new WAL
        // exists: only the newest WAL may have a torn tail after a crash.
        self.vlog.sync()?;
        let mut guard = self.writes.wal.lock();
        let wal = guard.as_mut().ok_or_else(|| self.no_wal())?;
        wal.sync()?;
        let synced = wal.len();
        let number = self.versions.new_file_number();
        let path = filename::wal_path(&self.dir, number);
        *wal = LogWriter::create(self.opts.fs.as_ref(), &path, LogKind::Wal)?;
        self.opts.fs.sync_dir(&self.dir)?;
        // Record the closed WAL's synced size and the new WAL, so that an open finding
        // either missing (or the old one short) fails instead of losing writes silently.
        let closed = self.writes.mem.lock().wal_number;
        self.log_and_apply(VersionEdit {
            wals_added: vec![number],
            wals_closed: vec![(closed, synced)],
            ..VersionEdit::default()
        })?;
        let mut m = self.writes.mem.lock();
        let fresh = Memtable::after(self.opts.memtable_size_bytes, Some(&m.mem));
        let old = std::mem::replace(&mut m.mem, Arc::new(fresh));
        let old_number = std::mem::replace(&mut m.wal_number, number);
        m.imm.push((old, old_number));
        self.writes.publish(&m);
        self.counters.note_memtable_bytes(m.charged_bytes());
        drop(m);
        drop(guard);
        self.request_background_work();
        Ok(())
    }
}

impl DbInner {
    /// Makes the active memtable immutable (if it holds anything) as a writer of its own
    /// turn: a leader releases the queue lock while it writes its group, so holding that lock
    /// is not enough — switching then could leave the group's entries in a memtable already
    /// being flushed (and lose them when its WAL is deleted). Waiting to be the queue's front
    /// writer guarantees no group is in flight (LevelDB forces compactions through its writer
    /// queue for the same reason).
    pub fn switch_memtable_in_turn(&self) -> Result<()> {
        let me = Arc::new(parking_lot::Mutex::new(Writer {
            batch: WriteBatch::new(),
            sync: false,
            alone: true,
            no_wait: false,
            done: false,
            result: None,
        }));
        let mut q = self.writes.queue.lock();
        q.queue.push_back(me.clone());
        while !q.queue.front().is_some_and(|f| Arc::ptr_eq(f, &me)) {
            self.writes.queue_cv.wait(&mut q);
        }
        let result = self.check_writable().and_then(|()| {
            if self.writes.mem.lock().mem.is_empty() {
                Ok(())
            } else {
                self.switch_memtable().inspect_err(|e| self.poison(e))
            }
        });
        q.queue.pop_front();
        self.writes.queue_cv.notify_all();
        result
    }
}

/// The writers the leader commits together: consecutive normal batches up to
/// `MAX_GROUP_BYTES`; a writer marked `alone` always alone.
fn collect_group(
    queue: &VecDeque<Arc<parking_lot::Mutex<Writer>>>,
) -> Vec<Arc<parking_lot::Mutex<Writer>>> {
    let mut group = Vec::new();
    let mut bytes = 0;
    for (i, w) in queue.iter().enumerate() {
        let g = w.lock();
        if i > 0 && (g.alone || bytes + g.batch.approximate_bytes > MAX_GROUP_BYTES) {
            break;
        }
        bytes += g.batch.approximate_bytes;
        let alone = g.alone;
        drop(g);
        group.push(w.clone());
        if alone {
            break;
        }
    }
    group
}
