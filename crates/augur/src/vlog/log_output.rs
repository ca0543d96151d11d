//! Segments written by compactions (value relocation, `compaction/executor/relocate.rs`):
//! fresh ids from the log's counter, files created beside the write path's segments, and
//! readers added once the compaction synced them, before the version that points into them
//! is installed.
//!
//! Crash safety is the caller's: a compaction records each id in the manifest (a
//! reservation) before it creates the file, and the edit that installs the compaction's
//! tables installs its segments; an open removes reserved segments that were never installed
//! (docs/format/manifest.md, "Value-log segments written by compactions").

use super::{Slot, ValueLog};
use crate::error::{Error, Result};
use crate::vlog::{SegmentReader, SegmentWriter, StoredValue, ValuePointer};
use std::sync::atomic::Ordering;
use std::sync::Arc;

impl ValueLog {
    /// Hands out the next segment id. REQUIRES: the caller holds the `active` lock (so a
    /// rollover's new segment is created before any larger id is handed out).
    pub(super) fn take_id(&self) -> Result<u64> {
        let id = self.next_id.fetch_add(1, Ordering::SeqCst);
        if id == u64::MAX {
            return Err(Error::InvalidArgument(
                "value-log segment ids are exhausted".into(),
            ));
        }
        Ok(id)
    }

    /// A fresh segment id for a compaction's output segment, from the same counter as the
    /// rollovers (never reused).
    ///
    /// # Errors
    /// `InvalidArgument` when the ids are exhausted.
    pub fn allocate_segment_id(&self) -> Result<u64> {
        let _active = self.active.lock();
        self.take_id()
    }

    /// Creates the file of segment `id` (from [`Self::allocate_segment_id`]) for a
    /// compaction to append to; its header is synced. The caller syncs the entries and the
    /// directory, then makes it readable with [`Self::add_sealed`].
    ///
    /// # Errors
    /// `Io` if the file cannot be created or its header written and synced.
    pub fn create_segment(&self, id: u64) -> Result<SegmentWriter> {
        SegmentWriter::create(self.fs.as_ref(), &self.dir, id)
    }

    /// Makes the complete, synced segment `id` of `size_bytes` readable as a sealed segment
    /// (read with the configured mode). A no-op when it is already known.
    ///
    /// # Errors
    /// As [`SegmentReader::open`].
    pub fn add_sealed(&self, id: u64, size_bytes: u64) -> Result<()> {
        if self.segments.read().contains_key(&id) {
            return Ok(());
        }
        let reader = SegmentReader::open(self.fs.as_ref(), &self.dir, id, self.reads.clone())?;
        self.segments.write().entry(id).or_insert(Slot {
            reader: Arc::new(reader),
            sealed_size: Some(size_bytes),
        });
        Ok(())
    }

    /// Removes the file of a compaction's segment that will not be installed (the compaction
    /// failed), and forgets its reader if it had one. Missing files are fine.
    ///
    /// # Errors
    /// `Io` if an existing file cannot be removed.
    pub fn discard_segment(&self, id: u64) -> Result<()> {
        let is_active = self.active_segment() == Some(id);
        if is_active {
            return Err(Error::InvalidArgument(format!(
                "cannot discard the active value-log segment {id}"
            )));
        }
        self.segments.write().remove(&id);
        let path = self.segment_path(id);
        if self.fs.exists(&path) {
            self.fs.remove(&path)?;
        }
        Ok(())
    }

    /// The value `ptr` points at as stored (not decompressed), checked as
    /// [`Self::read_with_key`] checks it: what a relocation copies.
    ///
    /// # Errors
    /// As [`Self::read_with_key`].
    pub fn read_stored(&self, ptr: &ValuePointer, key: &[u8]) -> Result<StoredValue> {
        self.reader(ptr)?.read_stored(ptr, key)
    }
}
