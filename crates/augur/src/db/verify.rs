//! Offline-style verification of a live database: every checksum of every live SSTable and
//! value-log segment, and the target of every value pointer the tables and memtables hold.

use super::DbInner;
use crate::error::{Error, Result};
use crate::key::{SeqNo, ValueKind, MAX_SEQNO};
use crate::sst::TableCursor;
use crate::version::Version;
use crate::vlog::ValuePointer;

impl DbInner {
    /// Verifies all live tables and value-log segments; returns (table entries, value-log
    /// entries) checked.
    ///
    /// Besides every checksum, each value pointer of a live table or memtable must lead to
    /// an existing segment and an entry with a valid checksum, the right length and the
    /// pointer's key (a pointer into a segment GC deleted passes only when a newer entry of
    /// its key shadows it), each segment the manifest records garbage for must exist, and
    /// each sealed segment must have the size the manifest records. A segment's
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
                    let seqno = cursor.trailer() >> 8;
                    self.verify_pointer(cursor.key(), seqno, cursor.value(), &version)?;
                }
                cursor.advance()?;
            }
        }
        let memtables = self.writes.memtables();
        for mem in memtables.iter() {
            let mut failure = None;
            mem.for_each(|key, seqno, kind, value| {
                if kind == ValueKind::Pointer && failure.is_none() {
                    failure = self.verify_pointer(key, seqno, value, &version).err();
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
        // Each sealed segment still has the size the manifest recorded (an open checked it;
        // this sees a file damaged since).
        for (&id, &recorded) in &version.vlog_sealed {
            let path = self.vlog.segment_path(id);
            match self.opts.fs.size(&path) {
                Ok(size) if size == recorded => {}
                _ if self.versions.current().vlog_deleted.contains(id) => {}
                Ok(size) => {
                    return Err(Error::corruption(
                        path,
                        0,
                        format!(
                            "this sealed value-log segment holds {size} bytes, but the \
                             manifest records {recorded}"
                        ),
                    ))
                }
                Err(e) => return Err(e),
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
        let crate::iter::ReadView { memtables, version } = self.read_view();
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

    /// Checks that the value pointer `value` of `key`'s entry at `seqno`, read from
    /// `version` or a memtable, leads to its entry.
    ///
    /// GC relocates every pointer into a segment before it deletes it, so a pointer into a
    /// segment deleted in `version` is damage — unless a newer entry of the key shadows it:
    /// the GC of older builds re-appended live values as new writes and left the old entries
    /// behind until compaction dropped them.
    fn verify_pointer(
        &self,
        key: &[u8],
        seqno: SeqNo,
        value: &[u8],
        version: &Version,
    ) -> Result<()> {
        let ptr = ValuePointer::decode(value).ok_or_else(|| {
            Error::corruption(&self.dir, 0, "malformed value pointer in a live entry")
        })?;
        if version.vlog_deleted.contains(ptr.segment) {
            return self.check_shadowed(key, seqno, &ptr);
        }
        match self.vlog.read_with_key(&ptr, key) {
            Ok(_) => Ok(()),
            // GC deleted the segment since `version` was taken (it relocated the value).
            Err(_) if self.versions.current().vlog_deleted.contains(ptr.segment) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Fails unless a newer entry of `key` than the one at `seqno` (which points into the
    /// deleted segment of `ptr`) exists.
    fn check_shadowed(&self, key: &[u8], seqno: SeqNo, ptr: &ValuePointer) -> Result<()> {
        match self.get_entry(key, MAX_SEQNO)? {
            Some(newest) if newest.seqno > seqno => Ok(()),
            _ => Err(Error::corruption(
                self.vlog.segment_path(ptr.segment),
                ptr.offset,
                format!(
                    "the live entry of key \"{}\" (seqno {seqno}) points into this value-log \
                     segment, which the manifest records as deleted",
                    key.escape_ascii()
                ),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::version::VersionEdit;
    use crate::vlog::ValuePointer;
    use crate::{Db, Error, Options};

    fn options() -> Options {
        Options {
            background_threads: false,
            value_separation_threshold: 8,
            value_log_segment_bytes: 4 << 10,
            ..Options::default()
        }
    }

    /// The segment the newest value of `key` lives in.
    fn segment_of(db: &Db, key: &[u8]) -> u64 {
        let entry = db
            .inner
            .get_entry(key, crate::key::MAX_SEQNO)
            .expect("get")
            .expect("entry");
        ValuePointer::decode(&entry.value).expect("pointer").segment
    }

    #[test]
    fn a_live_pointer_into_a_deleted_segment_fails_verify() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let db = Db::open(tmp.path(), options()).expect("open");
        db.put(b"k", vec![b'v'; 100]).expect("put");
        db.flush().expect("flush");
        let segment = segment_of(&db, b"k");
        // The manifest says the segment is gone while a table still points into it (the
        // file is still there, so only the record tells).
        db.inner
            .log_and_apply(VersionEdit {
                vlog_deleted: vec![segment],
                ..VersionEdit::default()
            })
            .expect("edit");
        match db.verify() {
            Err(Error::Corruption { file, .. }) => {
                assert_eq!(file, db.inner.vlog.segment_path(segment));
            }
            other => panic!("verify: {other:?}"),
        }
    }

    #[test]
    fn a_shadowed_pointer_into_a_deleted_segment_passes_verify() {
        // Older builds' GC re-appended live values as new writes and left the old entries.
        let tmp = tempfile::tempdir().expect("tempdir");
        let db = Db::open(tmp.path(), options()).expect("open");
        db.put(b"k", vec![b'v'; 100]).expect("put");
        db.flush().expect("flush");
        let old = segment_of(&db, b"k");
        for _ in 0..60 {
            db.put(b"filler", vec![b'f'; 100]).expect("put");
        }
        db.put(b"k", vec![b'w'; 100]).expect("put");
        db.flush().expect("flush");
        assert_ne!(
            segment_of(&db, b"k"),
            old,
            "the newer value is in a newer segment"
        );
        db.inner
            .log_and_apply(VersionEdit {
                vlog_deleted: vec![old],
                ..VersionEdit::default()
            })
            .expect("edit");
        db.verify().expect("verify");
    }
}
