//! Offline-style verification of a live database: every checksum of every live SSTable and
//! value-log segment, and the target of every value pointer the tables and memtables hold.

use super::DbInner;
use crate::error::{Error, Result};
use crate::key::ValueKind;
use crate::sst::TableCursor;
use crate::version::SegmentSet;
use crate::vlog::ValuePointer;

impl DbInner {
    /// Verifies all live tables and value-log segments; returns (table entries, value-log
    /// entries) checked.
    ///
    /// Besides every checksum, each value pointer of a live table or memtable must lead to
    /// an existing segment and an entry with a valid checksum, the right length and the
    /// pointer's key (pointers into segments GC deleted are shadowed by relocated copies and
    /// skipped), and each segment the manifest records garbage for must exist. A segment's
    /// walk tolerates a torn last entry (an unsynced append), so this is what catches damage
    /// to a live value at a segment's end.
    pub fn verify(&self) -> Result<(u64, u64)> {
        // Every page is read once: the page cache (direct mode) keeps the readers' pages.
        crate::cache::without_cache_fill(|| self.verify_all())
    }

    fn verify_all(&self) -> Result<(u64, u64)> {
        let version = self.versions.current();
        self.vlog.flush()?;
        let mut table_entries = 0;
        for f in version.levels.iter().flatten() {
            f.table.verify()?;
            table_entries += f.table.entries();
            let mut cursor = TableCursor::new(f.table.clone(), true);
            cursor.seek_to_first()?;
            while cursor.valid() {
                if cursor.kind() == ValueKind::Pointer {
                    self.verify_pointer(cursor.key(), cursor.value(), &version.vlog_deleted)?;
                }
                cursor.advance()?;
            }
        }
        let memtables = self.mem.lock().readable.clone();
        for mem in memtables.iter() {
            let mut failure = None;
            mem.for_each(|key, _, kind, value| {
                if kind == ValueKind::Pointer && failure.is_none() {
                    failure = self.verify_pointer(key, value, &version.vlog_deleted).err();
                }
                Ok(())
            })?;
            if let Some(e) = failure {
                return Err(e);
            }
        }
        let segments = self.vlog.segments();
        // GC may have deleted a segment since `version` was taken: ask the current version.
        let deleted_now = self.versions.current().vlog_deleted.clone();
        for &id in version.vlog_garbage.keys() {
            if !segments.iter().any(|s| s.id == id) && !deleted_now.contains(id) {
                return Err(Error::corruption(
                    self.vlog.segment_path(id),
                    0,
                    "the manifest records garbage in this value-log segment, but it does not \
                     exist (GC never deleted it)",
                ));
            }
        }
        let mut vlog_entries = 0;
        let active = self.vlog.active_segment();
        for s in segments {
            if Some(s.id) == active {
                continue;
            }
            match self.vlog.segment_entries(s.id) {
                Ok(entries) => vlog_entries += entries.len() as u64,
                // GC deleted it since the listing: nothing left to verify.
                Err(_) if !self.vlog.segments().iter().any(|x| x.id == s.id) => {}
                Err(e) => return Err(e),
            }
        }
        Ok((table_entries, vlog_entries))
    }

    /// The value pointer of the newest entry of every key of `level`'s files that holds one
    /// (tests inspect where values live).
    #[cfg(feature = "test-util")]
    pub fn value_pointers(&self, level: usize) -> Result<Vec<(Vec<u8>, ValuePointer)>> {
        let version = self.versions.current();
        let mut out = Vec::new();
        for f in version.levels.get(level).into_iter().flatten() {
            let mut cursor = TableCursor::new(f.table.clone(), true);
            cursor.seek_to_first()?;
            let mut last: Option<Vec<u8>> = None;
            while cursor.valid() {
                if last.as_deref() != Some(cursor.key()) {
                    last = Some(cursor.key().to_vec());
                    if cursor.kind() == ValueKind::Pointer {
                        if let Some(p) = ValuePointer::decode(cursor.value()) {
                            out.push((cursor.key().to_vec(), p));
                        }
                    }
                }
                cursor.advance()?;
            }
        }
        Ok(out)
    }

    /// The segments some entry of a live table or memtable points into.
    #[cfg(feature = "test-util")]
    pub fn referenced_segments(&self) -> Result<std::collections::BTreeSet<u64>> {
        let (version, memtables) = {
            let m = self.mem.lock();
            (self.versions.current(), m.readable.clone())
        };
        let mut out = std::collections::BTreeSet::new();
        for f in version.levels.iter().flatten() {
            let mut cursor = TableCursor::new(f.table.clone(), true);
            cursor.seek_to_first()?;
            while cursor.valid() {
                if cursor.kind() == ValueKind::Pointer {
                    out.extend(ValuePointer::decode(cursor.value()).map(|p| p.segment));
                }
                cursor.advance()?;
            }
        }
        for mem in memtables.iter() {
            mem.for_each(|_, _, kind, value| {
                if kind == ValueKind::Pointer {
                    out.extend(ValuePointer::decode(value).map(|p| p.segment));
                }
                Ok::<(), crate::Error>(())
            })?;
        }
        Ok(out)
    }

    /// Checks that the value pointer `value` of `key` leads to its entry.
    fn verify_pointer(&self, key: &[u8], value: &[u8], deleted: &SegmentSet) -> Result<()> {
        let ptr = ValuePointer::decode(value).ok_or_else(|| {
            Error::corruption(&self.dir, 0, "malformed value pointer in a live entry")
        })?;
        if deleted.contains(ptr.segment) {
            return Ok(());
        }
        match self.vlog.read_with_key(&ptr, key) {
            Ok(_) => Ok(()),
            // GC deleted the segment since this version was taken.
            Err(_) if self.versions.current().vlog_deleted.contains(ptr.segment) => Ok(()),
            Err(e) => Err(e),
        }
    }
}
