//! The point-read path: memtable → immutable memtables (newest first) → the current
//! version's files (L0 newest first, then one file per level) → the value log when the
//! entry is a pointer. The first entry found for the key at the read's seqno decides.

use super::{DbInner, SnapshotGuard};
use crate::error::{Error, Result};
use crate::iter::{ReadView, ScanState};
use crate::key::{SeqNo, ValueKind};
use crate::sst::Entry;
use crate::stats::breakdown::{self, Step};
use crate::vlog::ValuePointer;
use std::sync::Arc;
use std::time::Instant;

impl DbInner {
    /// The state a scan at `snapshot` reads: the memtables and version captured now (after
    /// the snapshot was registered), with the database's read context.
    pub fn scan_state(&self, snapshot: Arc<SnapshotGuard>) -> Arc<ScanState> {
        let view = self.read_view();
        let closed = self.closed.load(std::sync::atomic::Ordering::Acquire);
        let seqno = snapshot.seqno();
        ScanState::new(self.read_ctx.clone(), view, seqno, snapshot, closed)
    }

    /// Captures the memtables and version atomically with respect to flushes (a flush
    /// installs its version before it drops the flushed memtable, under `mem`).
    pub fn read_view(&self) -> ReadView {
        let m = self.mem.lock();
        let memtables = m.readable.clone();
        let version = self.versions.current();
        drop(m);
        ReadView { memtables, version }
    }

    /// The newest internal entry of `key` visible at `seqno` (tombstones included).
    pub fn get_entry(&self, key: &[u8], seqno: SeqNo) -> Result<Option<Entry>> {
        let view = self.read_view();
        let in_memtables = breakdown::timed(Step::Memtable, || {
            view.memtables.iter().find_map(|mem| mem.get(key, seqno))
        });
        if let Some(e) = in_memtables {
            return Ok(Some(e));
        }
        breakdown::timed_files(|| view.version.get(key, seqno))
    }

    /// The user-visible value of `key` at `snapshot` (or now).
    pub fn get(&self, key: &[u8], snapshot: Option<SeqNo>) -> Result<Option<Vec<u8>>> {
        if self.closed.load(std::sync::atomic::Ordering::Acquire) {
            return Err(Error::Closed);
        }
        self.counters.note_get();
        let sampled = breakdown::begin().then(Instant::now);
        let result = self.get_with_retry(key, snapshot);
        if let Some(started) = sampled {
            self.breakdown.finish(started.elapsed().as_nanos() as u64);
        }
        result
    }

    fn get_with_retry(&self, key: &[u8], snapshot: Option<SeqNo>) -> Result<Option<Vec<u8>>> {
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

    /// The user value of an entry: `None` for a tombstone, the inline bytes, or the bytes read
    /// from the value log.
    pub fn resolve(&self, e: Entry) -> Result<Option<Vec<u8>>> {
        match e.kind {
            ValueKind::Delete => Ok(None),
            ValueKind::Value => Ok(Some(e.value)),
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
                    self.vlog.read_with_key(&ptr, &e.user_key).map(Some)
                })
            }
        }
    }
}

/// The value-log segment an entry's value is in, when it is a well-formed pointer.
fn pointer_segment(e: &Entry) -> Option<u64> {
    (e.kind == ValueKind::Pointer)
        .then(|| ValuePointer::decode(&e.value))
        .flatten()
        .map(|p| p.segment)
}
