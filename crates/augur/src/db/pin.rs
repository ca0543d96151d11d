//! A consistent state of an open database, pinned for copying: what a checkpoint links or
//! copies into a new directory (`checkpoint.rs`) and what a backup copies into its shared
//! files (`crate::backup`).
//!
//! How it is taken (`DbInner::pin_state`), while writes continue:
//! 1. A read view is registered at the visible seqno. Value-log segments GC (or a
//!    compaction) deletes from now on keep their files until every reader at a seqno below
//!    the deletion is gone (`schedule_segment_deletions`), so every segment file the pinned
//!    version needs stays on disk while the state lives.
//! 2. The memtable is switched and every memtable up to that one is flushed (only those:
//!    later ones, which writers keep filling, are not waited for). Every write acknowledged
//!    before the call is then in a table. The copy holds no WAL: RocksDB's checkpoint
//!    flushes too unless its WAL is small; here it always does, so a copy is made of
//!    immutable files only and a replica or a backup can share them.
//! 3. The manifest's snapshot edit and the current version are taken together, under the
//!    manifest lock. The version holds its tables (`TableFile` removes an obsolete table's
//!    file only when the last version holding it goes). Flushes install memtables oldest
//!    first, so the version holds exactly the writes with seqno ≤ its recorded last seqno: a
//!    prefix of every writer's acknowledged writes.
//! 4. When a table of the version may point into the active value-log segment (or the
//!    version records garbage in it), the segment is sealed (synced, the next one started), so every segment the copy needs is
//!    immutable and can be linked; the value log is synced (segments an earlier process
//!    left unsynced) and the sealed sizes recorded in the source's manifest, so neither
//!    database ever appends to a file the two share.
//! 5. The copy's manifest is the snapshot edit, rewritten: no WAL (tags 8, 9), no segment
//!    reserved by a compaction in flight (15), every copied segment sealed at its size
//!    (17), a fresh manifest number, and marked closed cleanly (18): nothing follows it.
//!
//! A value-log segment is copied when the version records garbage or a sealed size for it,
//! or a table of the version may point into it; segments newer than the pinned version are
//! not. The segment sealed in step 4 may end in entries written after the pin, which no
//! table of the copy points to and its garbage count does not include (at most what
//! the writers appended between the pin and the seal).

use super::DbInner;
use crate::error::{Error, Result};
use crate::filename;
use crate::iter::SnapshotGuard;
use crate::key::SeqNo;
use crate::version::{Version, VersionEdit};
use crate::vlog::SegmentInfo;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;

/// One immutable file of a pinned state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PinnedFile {
    /// Its name in a database directory (`000012.sst`, `000003.vlog`).
    pub name: String,
    /// Where it is in the source database.
    pub path: PathBuf,
    /// Its size in bytes.
    pub size: u64,
}

/// A consistent state of a database, pinned while this lives (see the module doc): its
/// files stay on disk and unchanged. Holds a read view, so compactions keep the versions
/// it needs: drop it once the files are copied.
pub(crate) struct PinnedState {
    /// Keeps deleted value-log segments' files (module doc, step 1).
    _readers: SnapshotGuard,
    /// Keeps the tables' files.
    _version: Arc<Version>,
    /// The tables and value-log segments, tables first, each in id order.
    pub files: Vec<PinnedFile>,
    /// The one record of the copy's manifest.
    pub manifest: VersionEdit,
    /// The copy's manifest number (`MANIFEST-NNNNNN`).
    pub manifest_number: u64,
    /// The copy holds exactly the writes with a seqno up to this one.
    pub seqno: SeqNo,
}

impl std::fmt::Debug for PinnedState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PinnedState")
            .field("files", &self.files.len())
            .field("manifest_number", &self.manifest_number)
            .field("seqno", &self.seqno)
            .finish_non_exhaustive()
    }
}

impl PinnedState {
    /// The copy's manifest file name.
    pub fn manifest_name(&self) -> String {
        filename::manifest_name(self.manifest_number)
    }
}

impl DbInner {
    /// Pins the state a copy of the database holds (see the module doc).
    ///
    /// # Errors
    /// `ReadOnly` in a read-only database (it cannot flush; copy a database open for
    /// writing); `Closed`, `Poisoned`; `Io` from the flush or the seal, which poisons the
    /// database as those do; `Corruption` when a segment the version needs is missing.
    pub(crate) fn pin_state(&self) -> Result<PinnedState> {
        self.check_writable()?;
        let readers = self.register_current();
        self.flush_for_copy()?;
        let (mut edit, version) = self.versions.snapshot_with_version();
        let at_pin = self.vlog.segments();
        let tables = || version.levels.iter().flatten();
        if let Some(active) = self.vlog.active_segment() {
            let garbage = version.vlog_garbage.contains_key(&active);
            if garbage || tables().any(|f| f.meta.may_point_into(active)) {
                // A failed sync leaves the segment's tail unknown: poison, as a write would.
                self.vlog.seal(active).inspect_err(|e| self.poison(e))?;
            }
        }
        self.vlog.sync().inspect_err(|e| self.poison(e))?;
        let segments = self.segments_to_copy(&version, &at_pin)?;
        if segments
            .iter()
            .any(|(id, _)| !version.vlog_sealed.contains_key(id))
        {
            // Records the sizes of the segments just sealed (`DbInner::log_and_apply`).
            self.log_and_apply(VersionEdit::default())
                .inspect_err(|e| self.poison(e))?;
        }
        let mut files: Vec<PinnedFile> = tables()
            .map(|f| {
                let path = filename::table_path(&self.dir, f.meta.file_id);
                PinnedFile {
                    name: file_name(&path),
                    path,
                    size: f.meta.file_size,
                }
            })
            .collect();
        files.sort_by(|a, b| a.name.cmp(&b.name));
        files.extend(segments.iter().map(|(&id, &size)| {
            let path = self.vlog.segment_path(id);
            PinnedFile {
                name: file_name(&path),
                path,
                size,
            }
        }));
        let manifest_number = edit.next_file_number.unwrap_or(2);
        edit.next_file_number = Some(manifest_number + 1);
        edit.wals_added.clear();
        edit.wals_closed.clear();
        edit.vlog_reserved.clear();
        edit.vlog_garbage
            .retain(|(id, _)| segments.contains_key(id));
        edit.vlog_sealed = segments.iter().map(|(&id, &size)| (id, size)).collect();
        edit.closed_cleanly = true;
        let seqno = edit.last_seqno.unwrap_or(0);
        Ok(PinnedState {
            _readers: readers,
            _version: version,
            files,
            manifest: edit,
            manifest_number,
            seqno,
        })
    }

    /// Switches the memtable and waits until it and every older one are flushed (not the
    /// ones writers fill meanwhile).
    fn flush_for_copy(&self) -> Result<()> {
        self.switch_memtable_in_turn()?;
        let active = self.writes.active_wal_number();
        loop {
            self.check_writable()?;
            match self.writes.oldest_immutable() {
                Some((_, wal_number, _)) if wal_number < active => {}
                _ => return Ok(()),
            }
            if self.background_threads() {
                self.request_background_work();
                self.wait_for_background_progress();
            } else {
                let _w = self.work.unit_turn();
                self.flush_one().inspect_err(|e| self.poison(e))?;
            }
        }
    }

    /// The value-log segments of `version` a copy needs, with their sizes: among those live
    /// when it was pinned (`at_pin`), every one it records garbage or a sealed size for, or
    /// that a table of it may point into. Each must be sealed by now.
    ///
    /// # Errors
    /// `Corruption` when one is missing or not sealed, or its size differs from the one
    /// the version records.
    fn segments_to_copy(
        &self,
        version: &Version,
        at_pin: &[SegmentInfo],
    ) -> Result<BTreeMap<u64, u64>> {
        let known: BTreeSet<u64> = version
            .vlog_garbage
            .keys()
            .chain(version.vlog_sealed.keys())
            .copied()
            .collect();
        let now: BTreeMap<u64, SegmentInfo> = self
            .vlog
            .segments()
            .into_iter()
            .map(|s| (s.id, s))
            .collect();
        let mut wanted = BTreeMap::new();
        for id in at_pin.iter().map(|s| s.id).chain(known.iter().copied()) {
            if wanted.contains_key(&id)
                || version.vlog_deleted.contains(id)
                || version.vlog_reserved.contains(&id)
            {
                continue;
            }
            let pointed = version
                .levels
                .iter()
                .flatten()
                .any(|f| f.meta.may_point_into(id));
            if !known.contains(&id) && !pointed {
                continue;
            }
            let problem = match now.get(&id) {
                None => "is missing".to_string(),
                Some(s) if !s.sealed => "is still being appended to".to_string(),
                Some(s) => match version.vlog_sealed.get(&id) {
                    Some(&recorded) if recorded != s.size_bytes => format!(
                        "holds {} bytes, but the manifest records {recorded}",
                        s.size_bytes
                    ),
                    _ => {
                        wanted.insert(id, s.size_bytes);
                        continue;
                    }
                },
            };
            return Err(Error::corruption(
                self.vlog.segment_path(id),
                0,
                format!("the value-log segment a copy of the database needs {problem}"),
            ));
        }
        Ok(wanted)
    }
}

/// The file name of `path` (a path this module built from a file name).
fn file_name(path: &std::path::Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use crate::{Db, Options};

    #[test]
    fn a_pinned_state_keeps_the_segments_gc_deletes_until_dropped() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let opts = Options {
            value_separation_threshold: 10,
            value_log_gc_ratio: 1.0,
            background_threads: false,
            ..Options::default()
        };
        let db = Db::open(tmp.path(), opts).expect("open");
        // Half the values overwritten in the same segment: the flush of the pin counts the
        // shadowed ones as garbage, which makes the segment GC's pick.
        for k in 0..150 {
            db.put(format!("k{:03}", k % 100), [b'a'; 200])
                .expect("put");
        }
        let pinned = db.inner.pin_state().expect("pin");
        let segments: Vec<_> = pinned
            .files
            .iter()
            .filter(|f| f.name.ends_with(".vlog"))
            .collect();
        assert_eq!(segments.len(), 1, "{:?}", pinned.files);
        assert_eq!(pinned.manifest.vlog_sealed.len(), 1);
        assert!(pinned.manifest.wals_added.is_empty() && pinned.manifest.closed_cleanly);
        assert_eq!(pinned.seqno, 150);
        let report = db.run_value_log_gc().expect("gc");
        assert!(report.segment.is_some(), "{report:?}");
        let version = db.inner.versions.current();
        let id = crate::vlog::parse_segment_file_name(&segments[0].name).expect("id");
        assert!(version.vlog_deleted.contains(id), "GC deleted it");
        for f in &pinned.files {
            assert!(
                f.path.exists(),
                "{} was removed while pinned",
                f.path.display()
            );
        }
        let path = segments[0].path.clone();
        drop(pinned);
        db.run_value_log_gc().expect("gc");
        assert!(!path.exists(), "removed once unpinned");
    }
}
