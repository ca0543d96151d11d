//! Value-log garbage collection (WiscKey §3.3, done through the LSM instead of a tail
//! pointer): pick the sealed segment with the highest garbage ratio, re-append its live
//! entries through the write path, record the segment as deleted in the manifest, and delete
//! its file once no snapshot or iterator can reach it.
//!
//! Liveness is decided inside the write path (a relocation batch commits alone, so no
//! concurrent write of the same key can slip between the check and the rewrite): an entry is
//! live iff the newest entry of its key is a pointer to exactly it.
//!
//! Crash safety: relocations are synced before the manifest records the deletion, and the
//! file is removed only after that; a crash at any point leaves either the old entry or the
//! relocated one reachable. After a restart, WAL records pointing into a deleted segment are
//! known to be shadowed and are skipped.

use super::{DbInner, WriteBatch};
use crate::error::Result;
use crate::version::VersionEdit;

/// Live entries are relocated in batches of this many.
const RELOCATION_BATCH: usize = 256;

/// What one GC run did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GcReport {
    /// The segment collected, if one qualified.
    pub segment: Option<u64>,
    /// Entries read from it.
    pub entries_scanned: u64,
    /// Entries still live and rewritten.
    pub entries_relocated: u64,
    /// Size of the collected segment file.
    pub segment_bytes: u64,
}

impl DbInner {
    /// The sealed segment with the highest garbage ratio, if that ratio is at least
    /// `min_ratio` and it has any garbage; with `with_active`, the active segment competes
    /// too.
    pub fn worst_segment(&self, min_ratio: f64, with_active: bool) -> Option<(u64, u64)> {
        let version = self.versions.current();
        let active = self.vlog.active_segment().filter(|_| !with_active);
        let pending = self.pending_segment_deletions.lock();
        self.vlog
            .segments()
            .into_iter()
            .filter(|s| Some(s.id) != active && !pending.iter().any(|(p, _)| *p == s.id))
            .filter_map(|s| {
                let garbage = *version.vlog_garbage.get(&s.id)?;
                let ratio = garbage as f64 / s.size_bytes.max(1) as f64;
                (garbage > 0 && ratio >= min_ratio).then_some((s.id, s.size_bytes, ratio))
            })
            .max_by(|a, b| a.2.total_cmp(&b.2))
            .map(|(id, size, _)| (id, size))
    }

    /// Collects the worst segment if its garbage ratio is at least `min_ratio`. With
    /// `wait = false` it returns an empty report when another GC run is in progress (the
    /// automatic runs; inline mode may even re-enter from GC's own relocation writes).
    ///
    /// With `wait = true` (an explicit `Db::run_value_log_gc`) the active segment competes
    /// too, and is sealed first when it is the worst: an open keeps appending to the newest
    /// segment, so a database that is reopened often may hold all its values, and all its
    /// garbage, in the active segment until it reaches `value_log_segment_bytes`. Automatic
    /// runs collect sealed segments only.
    pub fn run_value_log_gc(&self, min_ratio: f64, wait: bool) -> Result<GcReport> {
        // GC reads the segment once: the page cache (direct mode) keeps the readers' pages.
        crate::cache::without_cache_fill(|| self.run_gc(min_ratio, wait))
    }

    fn run_gc(&self, min_ratio: f64, wait: bool) -> Result<GcReport> {
        self.check_writable()?;
        let _gc = if wait {
            self.gc_lock.lock()
        } else {
            match self.gc_lock.try_lock() {
                Some(g) => g,
                None => return Ok(GcReport::default()),
            }
        };
        self.delete_unreachable_segments()?;
        let Some((segment, segment_bytes)) = self.worst_segment(min_ratio, wait) else {
            return Ok(GcReport::default());
        };
        if self.vlog.active_segment() == Some(segment) {
            // A failed sync leaves the segment's tail unknown: poison, as a write would.
            self.vlog.seal(segment).inspect_err(|e| self.poison(e))?;
        }
        let mut report = GcReport {
            segment: Some(segment),
            segment_bytes,
            ..GcReport::default()
        };
        let entries = self.vlog.segment_entries(segment)?;
        for chunk in entries.chunks(RELOCATION_BATCH) {
            // A closing database abandons the run; the segment stays and is collected later.
            if self.closed.load(std::sync::atomic::Ordering::Acquire) {
                return Err(crate::Error::Closed);
            }
            let mut batch = WriteBatch::new();
            for (ptr, key, value) in chunk {
                batch.relocate(key.clone(), *ptr, value.clone());
            }
            report.entries_scanned += chunk.len() as u64;
            report.entries_relocated += self.write_relocation(batch)?;
        }
        // Every relocation is durable (relocation batches are synced): record the deletion.
        // A failed manifest write leaves the manifest's tail unknown (log_and_apply's
        // contract): appending later edits after it could lose them, so poison.
        self.versions
            .log_and_apply(VersionEdit {
                vlog_deleted: vec![segment],
                ..VersionEdit::default()
            })
            .inspect_err(|e| self.poison(e))?;
        self.pending_segment_deletions
            .lock()
            .push((segment, self.visible_seqno()));
        self.delete_unreachable_segments()?;
        self.counters.note_gc(report.entries_relocated);
        Ok(report)
    }

    /// Deletes the files of GC'd segments that no live snapshot can still read.
    pub fn delete_unreachable_segments(&self) -> Result<()> {
        let oldest = self.snapshots.oldest();
        let mut pending = self.pending_segment_deletions.lock();
        let mut keep = Vec::new();
        for (segment, seqno) in pending.drain(..) {
            if oldest.is_none_or(|o| o >= seqno) {
                self.vlog.delete_segment(segment)?;
            } else {
                keep.push((segment, seqno));
            }
        }
        *pending = keep;
        Ok(())
    }
}
