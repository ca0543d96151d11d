//! Value relocation inside compaction: value-log GC without a detour through the memtable
//! (RocksDB BlobDB's garbage collection during compaction) and Titan's level merge
//! (`level_merge.rs`).
//!
//! Where it sits: the executor hands every output entry's value to its merge's [`Relocator`]
//! before the table builder. A pointer into a segment chosen for relocation (its garbage
//! ratio reached `Options::value_log_gc_ratio` when the compaction started, or GC collects
//! it), or one out of key order in a level merge, is replaced by a pointer to a copy of its
//! entry appended to a value-log segment of the merge's own; the old entry's bytes count as
//! garbage of its segment, exactly as a dropped pointer's do, so the accounting can reach
//! "everything in the segment is garbage" and the segment is deleted without being read.
//!
//! Each (sub-)merge writes its own segments, one after another, each up to
//! `value_log_segment_bytes`: sub-compactions run on parallel threads and share nothing, and
//! each segment holds one key-ordered stream. Values are copied as stored (a compressed value
//! is not decompressed), so a relocated pointer keeps its length.
//!
//! Crash safety: a segment's id is reserved in the manifest (synced) before its file is
//! created; the merge syncs each segment when it finishes it; the executor syncs the
//! directory with the tables', and the edit that installs the tables installs the segments.
//! An open removes reserved segments no edit installed (`ValueLog::start_active`).

use super::level_merge::Streams;
use crate::error::{Error, Result};
use crate::version::SegmentSet;
use crate::vlog::{entry_bytes, SegmentWriter, ValueLog, ValuePointer};
use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

/// What a compaction relocates, decided when it starts (the database's part; see the module
/// doc).
pub(crate) struct ValueRelocation<'a> {
    /// The value log values are read from and appended to.
    pub vlog: &'a ValueLog,
    /// Sealed segments whose every output pointer is relocated.
    pub segments: BTreeSet<u64>,
    /// Level merge, when the compaction writes the last level: a merge rewrites its
    /// out-of-order pointers when more than this fraction of its pointers is out of order.
    pub level_merge_threshold: Option<f64>,
    /// Size at which an output segment is finished and the next one started.
    pub segment_bytes: u64,
    /// Allocates a fresh segment id and records its reservation in the manifest (synced).
    pub reserve: &'a (dyn Fn() -> Result<u64> + Sync),
}

impl ValueRelocation<'_> {
    /// True when no pointer can be relocated.
    pub(super) fn is_idle(&self) -> bool {
        self.segments.is_empty() && self.level_merge_threshold.is_none()
    }
}

/// One merge's relocations: its output segments and what it moved.
pub(super) struct Relocator<'a> {
    plan: &'a ValueRelocation<'a>,
    /// Segments deleted (their pointers are obsolete and never read).
    deleted: &'a SegmentSet,
    /// Level merge is on for this merge ([`Self::decide_level_merge`]).
    merging: bool,
    streams: Streams,
    /// The segment being written.
    writer: Option<SegmentWriter>,
    /// Every segment id reserved, finished or not (what a failed compaction removes).
    pub(super) reserved: Vec<u64>,
    /// Finished and synced segments: (id, size in bytes).
    pub(super) written: Vec<(u64, u64)>,
    /// Values relocated, and the bytes their new entries take.
    pub(super) relocated: u64,
    pub(super) relocated_bytes: u64,
    /// Pointers into `plan.segments` left in place (their value is damaged): those segments
    /// stay referenced.
    pub(super) kept: u64,
}

impl<'a> Relocator<'a> {
    /// A relocator following `plan`, for a merge whose version deleted `deleted`.
    pub(super) fn new(plan: &'a ValueRelocation<'a>, deleted: &'a SegmentSet) -> Self {
        Relocator {
            plan,
            deleted,
            merging: false,
            streams: Streams::default(),
            writer: None,
            reserved: Vec::new(),
            written: Vec::new(),
            relocated: 0,
            relocated_bytes: 0,
            kept: 0,
        }
    }

    /// The level-merge threshold, when this merge may level-merge.
    pub(super) fn level_merge_threshold(&self) -> Option<f64> {
        self.plan.level_merge_threshold
    }

    /// Turns level merge on when the merge's pointer `counts` say it pays
    /// ([`PointerCounts::level_merge_pays`](super::level_merge::PointerCounts::level_merge_pays)).
    pub(super) fn decide_level_merge(&mut self, counts: &super::level_merge::PointerCounts) {
        self.merging = self
            .plan
            .level_merge_threshold
            .is_some_and(|t| counts.level_merge_pays(t));
    }

    /// The value to write for an output entry of `key` whose value is the pointer `value`:
    /// the pointer itself, or a pointer to a relocated copy (its old entry then counted in
    /// `garbage`).
    ///
    /// # Errors
    /// `Corruption` when the old entry cannot be read; `Io` when the copy cannot be written
    /// (or its segment reserved).
    pub(super) fn output<'v>(
        &mut self,
        key: &[u8],
        value: &'v [u8],
        garbage: &mut BTreeMap<u64, u64>,
    ) -> Result<Cow<'v, [u8]>> {
        let Some(p) = ValuePointer::decode(value) else {
            return Ok(Cow::Borrowed(value));
        };
        if self.deleted.contains(p.segment) {
            return Ok(Cow::Borrowed(value));
        }
        let in_order = self.streams.continues(&p);
        self.streams.note(&p, key.len());
        if !self.plan.segments.contains(&p.segment) && (in_order || !self.merging) {
            return Ok(Cow::Borrowed(value));
        }
        let stored = match self.plan.vlog.read_stored(&p, key) {
            Ok(stored) => stored,
            // A damaged value stays where it is (the compaction does not fail on it; reads
            // and `verify` report it), and so does its segment.
            Err(e @ Error::Corruption { .. }) => {
                log::warn!("not relocating the value of {key:?}: {e}");
                if self.plan.segments.contains(&p.segment) {
                    self.kept += 1;
                }
                return Ok(Cow::Borrowed(value));
            }
            Err(e) => return Err(e),
        };
        let mut writer = match self.writer.take() {
            Some(w) => w,
            None => {
                let id = (self.plan.reserve)()?;
                self.reserved.push(id);
                self.plan.vlog.create_segment(id)?
            }
        };
        let q = writer.append_stored(key, &stored)?;
        *garbage.entry(p.segment).or_default() += entry_bytes(key.len(), &p);
        self.relocated += 1;
        self.relocated_bytes += entry_bytes(key.len(), &q);
        if writer.len() >= self.plan.segment_bytes {
            self.seal(writer)?;
        } else {
            self.writer = Some(writer);
        }
        Ok(Cow::Owned(q.encode().to_vec()))
    }

    /// Finishes the segment being written (synced).
    ///
    /// # Errors
    /// `Io` when the sync fails.
    pub(super) fn finish(&mut self) -> Result<()> {
        match self.writer.take() {
            Some(w) => self.seal(w),
            None => Ok(()),
        }
    }

    fn seal(&mut self, mut writer: SegmentWriter) -> Result<()> {
        writer.sync()?;
        self.written.push((writer.id(), writer.len()));
        Ok(())
    }
}
