//! The point-read path: memtable → immutable memtables (newest first) → the current
//! version's files (L0 newest first, then one file per level) → the value log when the
//! entry is a pointer. The first entry found for the key at the read's seqno decides.
//!
//! What readers share is the database's read part, [`ReadState`] (below); the memtables and
//! the last visible seqno belong to the write part, the level models to the background part.

use super::{DbInner, SnapshotList};
use crate::error::{Error, Result};
use crate::iter::{ReadContext, ReadView, Registration, ScanState};
use crate::key::{SeqNo, ValueKind};
use crate::sst::Entry;
use crate::stats::breakdown::{self, BreakdownTotals, Step};
use crate::vlog::ValuePointer;
use std::sync::Arc;
use std::time::Instant;

/// The read part of a database: what readers share. Its one lock is the snapshot list's, a
/// leaf.
pub(crate) struct ReadState {
    /// What scans read besides their memtables and version (the value log, FLSM's read
    /// options and seek observer).
    ctx: Arc<ReadContext>,
    /// The live snapshots (and iterators' implicit ones), which compaction and GC keep
    /// readable.
    snapshots: Arc<SnapshotList>,
    /// Sampled per-step lookup times (Bourbon Figure 8).
    breakdown: BreakdownTotals,
}

impl ReadState {
    /// The read part of a database whose scans read through `ctx`.
    pub(super) fn new(ctx: ReadContext) -> ReadState {
        ReadState {
            ctx: Arc::new(ctx),
            snapshots: Arc::default(),
            breakdown: BreakdownTotals::default(),
        }
    }

    /// The live snapshots.
    pub(super) fn snapshots(&self) -> &Arc<SnapshotList> {
        &self.snapshots
    }

    /// The sampled lookup-step times.
    pub(super) fn breakdown(&self) -> &BreakdownTotals {
        &self.breakdown
    }
}

impl DbInner {
    /// The state a scan at `snapshot` reads: the memtables and version captured now (after
    /// the snapshot was registered), with the database's read context.
    pub fn scan_state(&self, snapshot: impl Into<Registration>) -> Arc<ScanState> {
        let view = self.read_view();
        let closed = self.life.is_closed();
        ScanState::new(self.reads.ctx.clone(), view, snapshot.into(), closed)
    }

    /// Captures the memtables, then the version: one consistent state. A flush installs its
    /// table's version before it drops the flushed memtable, so a reader that no longer sees
    /// the memtable sees the table (and one that sees both reads the same entries twice).
    pub fn read_view(&self) -> ReadView {
        let memtables = self.writes.memtables();
        let version = self.versions.current();
        ReadView { memtables, version }
    }

    /// The newest internal entry of `key` visible at `seqno` (tombstones included). The
    /// memtables and the version are borrowed (no lock, no reference count), memtables
    /// first, for the reason [`DbInner::read_view`] gives.
    pub fn get_entry(&self, key: &[u8], seqno: SeqNo) -> Result<Option<Entry>> {
        let memtables = self.writes.memtables_now();
        let in_memtables = breakdown::timed(Step::Memtable, || {
            memtables.iter().find_map(|mem| mem.get(key, seqno))
        });
        drop(memtables);
        if let Some(e) = in_memtables {
            return Ok(Some(e));
        }
        let version = self.versions.current_now();
        let level_models = self.opts.level_models.then(|| self.work.level_models());
        let mut via_level_model = 0;
        let found = breakdown::timed_files(|| {
            version.get(key, seqno, level_models.as_deref(), &mut via_level_model)
        });
        if via_level_model > 0 {
            self.counters.note_level_model_lookups(via_level_model);
        }
        found
    }

    /// The user-visible value of `key` at `snapshot` (or now).
    pub fn get(&self, key: &[u8], snapshot: Option<SeqNo>) -> Result<Option<Vec<u8>>> {
        Ok(self.get_expiring(key, snapshot)?.map(|found| found.value))
    }

    /// The user-visible value of `key` at `snapshot` (or now), with its expiry time.
    pub fn get_expiring(&self, key: &[u8], snapshot: Option<SeqNo>) -> Result<Option<Found>> {
        if self.life.is_closed() {
            return Err(Error::Closed);
        }
        self.counters.note_get();
        let sampled = breakdown::begin().then(Instant::now);
        let result = self.get_with_retry(key, snapshot);
        if let Some(started) = sampled {
            self.reads
                .breakdown
                .finish(started.elapsed().as_nanos() as u64);
        }
        result
    }

    /// [`DbInner::get_expiring`] without the closed check and the statistics (reads of the
    /// engine's own, such as the compaction filter's).
    pub(super) fn get_with_retry(
        &self,
        key: &[u8],
        snapshot: Option<SeqNo>,
    ) -> Result<Option<Found>> {
        let mut retried = false;
        loop {
            let seqno = snapshot.unwrap_or_else(|| self.visible_seqno());
            let Some(entry) = self.get_entry(key, seqno)? else {
                return Ok(None);
            };
            let segment = pointer_segment(&entry);
            match self.resolve(entry) {
                Ok(value) => return Ok(value),
                Err(e) if !retried && snapshot.is_none() && self.is_stale(segment) => {
                    log::debug!("get read a stale value pointer, reading again: {e}");
                    retried = true;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Whether a failed read of a value in `segment` is explained by a stale version, so
    /// that reading again can succeed: the segment is no longer live. A read without a
    /// snapshot holds no registration, so value-log GC or a compaction that relocated the
    /// value may delete its segment after the read captured the version holding the old
    /// pointer; read again at the current seqno, the key's entry points at the relocated
    /// copy. A failure in a live segment (a damaged entry, an I/O error) or outside the
    /// value log is what it says, and is never retried: a second read could only hide it.
    fn is_stale(&self, segment: Option<u64>) -> bool {
        segment.is_some_and(|s| !self.vlog.is_live(s))
    }

    /// The user value of an entry: `None` for a tombstone or an expired value, the inline
    /// bytes, or the bytes read from the value log.
    pub fn resolve(&self, e: Entry) -> Result<Option<Found>> {
        let found = |value| {
            Some(Found {
                value,
                expire_at: None,
            })
        };
        match e.kind {
            ValueKind::Delete => Ok(None),
            ValueKind::Value => Ok(found(e.value)),
            ValueKind::ExpiringValue => {
                let now = self.opts.clock.now_unix_ms();
                match crate::expiry::split(&e.value) {
                    Some((at, _)) if crate::expiry::has_expired(at, now) => Ok(None),
                    Some((at, _)) => {
                        let mut value = e.value;
                        value.drain(..crate::expiry::EXPIRY_BYTES);
                        Ok(Some(Found {
                            value,
                            expire_at: Some(at),
                        }))
                    }
                    None => Err(Error::corruption(
                        &self.dir,
                        0,
                        format!(
                            "expiring value of key {:?} shorter than its expiry time",
                            e.user_key
                        ),
                    )),
                }
            }
            ValueKind::Pointer => {
                let ptr = ValuePointer::decode(&e.value).ok_or_else(|| {
                    Error::corruption(
                        &self.dir,
                        0,
                        format!("malformed value pointer for key {:?}", e.user_key),
                    )
                })?;
                // Checking the entry's key costs one comparison and guarantees a damaged
                // pointer can never return another key's value.
                breakdown::timed(Step::ReadValue, || {
                    self.vlog.read_with_key(&ptr, &e.user_key).map(found)
                })
            }
        }
    }
}

/// A value found by a point read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// The user's value.
    pub value: Vec<u8>,
    /// When it expires (milliseconds since the Unix epoch), for a value written with an
    /// expiry; `None` for a value that never expires.
    pub expire_at: Option<u64>,
}

/// The value-log segment an entry's value is in, when it is a well-formed pointer.
fn pointer_segment(e: &Entry) -> Option<u64> {
    (e.kind == ValueKind::Pointer)
        .then(|| ValuePointer::decode(&e.value))
        .flatten()
        .map(|p| p.segment)
}
