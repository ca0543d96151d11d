//! The manifest as a file: what its edits record ([`RecordedState`]), reading and replaying
//! the manifest CURRENT names ([`read_manifest`]), writing a fresh manifest that holds one
//! snapshot edit ([`write_manifest`]), and pointing CURRENT at it ([`set_current`]).
//!
//! A manifest written by a clean close (`VersionSet::close_manifest`) holds its snapshot
//! edit marked `closed_cleanly` and nothing else: nobody appends to it, so any byte after
//! that record is damage, never a crash's torn append, and the open refuses it.

use super::edit::{FileMeta, VersionEdit};
use super::segment_set::SegmentSet;
use crate::error::{Error, Result};
use crate::filename;
use crate::fs::FileSystem;
use crate::wal::{read_log, LogContents, LogKind, LogTail, LogWriter};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// What a manifest records, accumulated edit by edit: replayed at open, and kept up to date
/// by every edit an open database logs, so a manifest holding one snapshot edit can be
/// written at any time ([`Self::snapshot_edit`]).
#[derive(Default)]
pub(super) struct RecordedState {
    pub(super) files: Vec<BTreeMap<u64, FileMeta>>,
    pub(super) garbage: BTreeMap<u64, u64>,
    pub(super) vlog_deleted: SegmentSet,
    /// Segments reserved by compactions and not installed yet.
    pub(super) vlog_reserved: BTreeSet<u64>,
    /// Final sizes of the live sealed segments.
    pub(super) vlog_sealed: BTreeMap<u64, u64>,
    /// Recorded WALs at or above `log_number`: number → synced bytes once closed.
    pub(super) wals: BTreeMap<u64, Option<u64>>,
    pub(super) log_number: u64,
    pub(super) next_file_number: u64,
    pub(super) last_seqno: u64,
    /// The recorded compaction style code (`None`: a manifest of an older build, leveled).
    pub(super) style: Option<u64>,
    /// FLSM guards per level.
    pub(super) guards: Vec<std::collections::BTreeSet<Vec<u8>>>,
}

impl RecordedState {
    /// Applies `edit`, read from `manifest` at `offset` (named by the errors).
    ///
    /// # Errors
    /// `Corruption` for a file or guard at a level beyond the configured number.
    pub(super) fn apply(&mut self, edit: &VersionEdit, manifest: &Path, offset: u64) -> Result<()> {
        if let Some(n) = edit.log_number {
            self.log_number = n;
        }
        if let Some(n) = edit.next_file_number {
            self.next_file_number = n;
        }
        if let Some(n) = edit.last_seqno {
            self.last_seqno = self.last_seqno.max(n);
        }
        for (level, id) in &edit.deleted {
            if let Some(l) = self.files.get_mut(*level) {
                l.remove(id);
            }
        }
        for (level, meta) in &edit.added {
            let l = self.files.get_mut(*level).ok_or_else(|| {
                Error::corruption(
                    manifest,
                    offset,
                    format!("file at level {level} beyond the configured num_levels"),
                )
            })?;
            l.insert(meta.file_id, meta.clone());
        }
        if let Some(style) = edit.compaction_style {
            self.style = Some(style);
        }
        for (level, key) in &edit.guards_removed {
            if let Some(g) = self.guards.get_mut(*level) {
                g.remove(key);
            }
        }
        for (level, key) in &edit.guards_added {
            let g = self.guards.get_mut(*level).ok_or_else(|| {
                Error::corruption(
                    manifest,
                    offset,
                    format!("guard at level {level} beyond the configured num_levels"),
                )
            })?;
            g.insert(key.clone());
        }
        apply_vlog_changes(
            &mut self.garbage,
            &mut self.vlog_deleted,
            &mut self.vlog_reserved,
            &mut self.vlog_sealed,
            edit,
        );
        for wal in &edit.wals_added {
            self.wals.entry(*wal).or_insert(None);
        }
        for (wal, synced) in &edit.wals_closed {
            self.wals.insert(*wal, Some(*synced));
        }
        // WALs below the log number are flushed: they may be deleted.
        self.wals = self.wals.split_off(&self.log_number);
        Ok(())
    }

    /// The edit that recreates this state from nothing.
    pub(super) fn snapshot_edit(&self) -> VersionEdit {
        VersionEdit {
            log_number: Some(self.log_number),
            next_file_number: Some(self.next_file_number),
            last_seqno: Some(self.last_seqno),
            added: self
                .files
                .iter()
                .enumerate()
                .flat_map(|(level, fs)| fs.values().map(move |m| (level, m.clone())))
                .collect(),
            deleted: Vec::new(),
            vlog_garbage: self.garbage.iter().map(|(s, b)| (*s, *b)).collect(),
            // Runs of one id keep the tag older builds read; longer runs take tag 13.
            vlog_deleted: self
                .vlog_deleted
                .runs()
                .filter(|&(_, count)| count == 1)
                .map(|(first, _)| first)
                .collect(),
            vlog_deleted_runs: self
                .vlog_deleted
                .runs()
                .filter(|&(_, count)| count > 1)
                .collect(),
            vlog_reserved: self.vlog_reserved.iter().copied().collect(),
            vlog_installed: Vec::new(),
            vlog_sealed: self.vlog_sealed.iter().map(|(s, b)| (*s, *b)).collect(),
            wals_added: self.wals.keys().copied().collect(),
            wals_closed: self
                .wals
                .iter()
                .filter_map(|(w, s)| s.map(|s| (*w, s)))
                .collect(),
            compaction_style: self.style,
            guards_added: self
                .guards
                .iter()
                .enumerate()
                .flat_map(|(level, g)| g.iter().map(move |k| (level, k.clone())))
                .collect(),
            guards_removed: Vec::new(),
            closed_cleanly: false,
        }
    }
}

/// Applies an edit's value-log changes to the garbage per segment, the deleted segments, the
/// reserved ones and the sealed sizes (manifest replay and `log_and_apply` alike): a
/// reservation is dropped when its segment is installed (which starts its garbage at 0) or
/// deleted; garbage that dropped pointers add to a segment already deleted is not recorded
/// (the segment is gone), nor is its size, and a deleted segment's garbage and size go with
/// it.
pub(super) fn apply_vlog_changes(
    garbage: &mut BTreeMap<u64, u64>,
    deleted: &mut SegmentSet,
    reserved: &mut BTreeSet<u64>,
    sealed: &mut BTreeMap<u64, u64>,
    edit: &VersionEdit,
) {
    reserved.extend(edit.vlog_reserved.iter().copied());
    for &seg in &edit.vlog_installed {
        reserved.remove(&seg);
        if !deleted.contains(seg) {
            garbage.entry(seg).or_default();
        }
    }
    for (seg, bytes) in &edit.vlog_garbage {
        if !deleted.contains(*seg) {
            *garbage.entry(*seg).or_default() += bytes;
        }
    }
    for &(seg, size) in &edit.vlog_sealed {
        if !deleted.contains(seg) {
            sealed.insert(seg, size);
        }
    }
    let runs = edit.vlog_deleted.iter().map(|&seg| (seg, 1));
    for (first, count) in runs.chain(edit.vlog_deleted_runs.iter().copied()) {
        deleted.insert_run(first, count);
        let end = first.saturating_add(count);
        let gone: Vec<u64> = garbage.range(first..end).map(|(&s, _)| s).collect();
        for seg in gone {
            garbage.remove(&seg);
        }
        let unreserved: Vec<u64> = reserved.range(first..end).copied().collect();
        for seg in unreserved {
            reserved.remove(&seg);
        }
        let unsealed: Vec<u64> = sealed.range(first..end).map(|(&s, _)| s).collect();
        for seg in unsealed {
            sealed.remove(&seg);
        }
    }
}

/// Reads the manifest CURRENT names and replays its edits (levels `0..num_levels`).
/// Returns the manifest's path and the replayed state.
///
/// # Errors
/// `Corruption` for a CURRENT that names no manifest, a damaged or malformed manifest, or
/// one whose edits are incomplete (`check_edits_complete`).
pub(super) fn read_manifest(
    fs: &dyn FileSystem,
    dir: &Path,
    num_levels: usize,
) -> Result<(PathBuf, RecordedState)> {
    let current = filename::current_path(dir);
    let text = fs.read_all(&current)?;
    let name = std::str::from_utf8(&text)
        .ok()
        .and_then(|s| s.strip_suffix('\n'))
        .filter(|s| matches!(filename::parse(s), Some(filename::FileKind::Manifest(_))))
        .ok_or_else(|| Error::corruption(&current, 0, "CURRENT does not name a manifest"))?;
    let manifest = dir.join(name);
    if !fs.exists(&manifest) {
        // CURRENT is replaced only after its manifest is durable: a damaged CURRENT.
        return Err(Error::corruption(
            &current,
            0,
            format!("CURRENT names {name}, which does not exist"),
        ));
    }
    let contents = read_log(fs, &manifest, LogKind::Manifest)?;
    contents.fail_on_damage(&manifest)?;
    refuse_bytes_after_clean_close(&manifest, &contents)?;
    let mut replay = RecordedState {
        files: vec![BTreeMap::new(); num_levels],
        guards: vec![std::collections::BTreeSet::new(); num_levels],
        ..RecordedState::default()
    };
    for (offset, record) in &contents.records {
        let edit = VersionEdit::decode(record)
            .ok_or_else(|| Error::corruption(&manifest, *offset, "malformed version edit"))?;
        replay.apply(&edit, &manifest, *offset)?;
    }
    if replay.next_file_number < 2 {
        return Err(Error::corruption(
            &manifest,
            0,
            "manifest has no file counter",
        ));
    }
    check_edits_complete(fs, dir, &manifest, replay.log_number)?;
    Ok((manifest, replay))
}

/// Fails when a manifest a clean close wrote (its first record is marked `closed_cleanly`)
/// holds anything after that record: a clean close writes the file whole and nobody appends
/// to it, so a second record, or bytes that look like a torn append, are damage.
fn refuse_bytes_after_clean_close(manifest: &Path, contents: &LogContents) -> Result<()> {
    let closed_cleanly = contents
        .records
        .first()
        .and_then(|(_, record)| VersionEdit::decode(record))
        .is_some_and(|e| e.closed_cleanly);
    if !closed_cleanly {
        return Ok(());
    }
    let extra = match (&contents.tail, contents.records.get(1)) {
        (_, Some((offset, _))) => Some((*offset, "a second record".to_string())),
        (LogTail::Torn { offset, reason }, None) => Some((*offset, format!("bytes ({reason})"))),
        _ => None,
    };
    match extra {
        None => Ok(()),
        Some((offset, what)) => Err(Error::corruption(
            manifest,
            offset,
            format!(
                "the database was closed cleanly, which writes this manifest whole as one \
                 record, yet {what} follow it: damage, not a torn append"
            ),
        )),
    }
}

/// Fails if the manifest's log number names a WAL that is gone while a later WAL holds
/// records. A WAL is removed only after a synced edit moved the log number past it, so this
/// means edits were lost: damage in the manifest that looked like a torn last record.
fn check_edits_complete(
    fs: &dyn FileSystem,
    dir: &Path,
    manifest: &Path,
    log_number: u64,
) -> Result<()> {
    if fs.exists(&filename::wal_path(dir, log_number)) {
        return Ok(());
    }
    for name in fs.list(dir)? {
        if let Some(filename::FileKind::Wal(n)) = filename::parse(&name) {
            if n > log_number && fs.size(&dir.join(&name))? > crate::wal::HEADER_LEN as u64 {
                return Err(Error::corruption(
                    manifest,
                    0,
                    format!(
                        "edits are missing, or a WAL was removed: the log number names WAL \
                         {log_number} ({}), which does not exist, and WAL {n} holds records",
                        filename::wal_path(dir, log_number)
                            .file_name()
                            .map_or_else(String::new, |f| f.to_string_lossy().into_owned())
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Points CURRENT at manifest `number` atomically.
pub(super) fn set_current(fs: &dyn FileSystem, dir: &Path, number: u64) -> Result<()> {
    let tmp = filename::current_temp_path(dir);
    let mut w = fs.create(&tmp)?;
    w.append(format!("{}\n", filename::manifest_name(number)).as_bytes())?;
    w.sync()?;
    drop(w);
    fs.rename(&tmp, &filename::current_path(dir))?;
    fs.sync_dir(dir)
}

/// Writes the manifest file `path` (named `MANIFEST-NNNNNN`, anywhere) holding the one
/// record `snapshot`, and syncs it; CURRENT and the directory are the caller's. What a
/// checkpoint or a backup writes for the state it copies. Returns the file's size.
///
/// # Errors
/// `Io` on write failures.
pub(crate) fn write_manifest_file(
    fs: &dyn FileSystem,
    path: &Path,
    snapshot: &VersionEdit,
) -> Result<u64> {
    let mut writer = LogWriter::create(fs, path, LogKind::Manifest)?;
    writer.add_record(&snapshot.encode())?;
    writer.sync()?;
    Ok(writer.len())
}

/// Points CURRENT in `dir` at manifest `number` atomically (CURRENT.tmp, sync, rename,
/// directory sync), for a directory being assembled (a checkpoint, a restore).
///
/// # Errors
/// `Io` on write failures.
pub(crate) fn write_current(fs: &dyn FileSystem, dir: &Path, number: u64) -> Result<()> {
    set_current(fs, dir, number)
}

/// Writes manifest `number` holding the one record `snapshot`, syncs it and the directory,
/// and points CURRENT at it. Returns its writer, to append later edits to.
///
/// # Errors
/// `Io` on write failures (CURRENT still names the previous manifest unless its rename
/// happened).
pub(super) fn write_manifest(
    fs: &dyn FileSystem,
    dir: &Path,
    number: u64,
    snapshot: &VersionEdit,
) -> Result<LogWriter> {
    let path = filename::manifest_path(dir, number);
    let mut writer = LogWriter::create(fs, &path, LogKind::Manifest)?;
    writer.add_record(&snapshot.encode())?;
    writer.sync()?;
    fs.sync_dir(dir)?;
    set_current(fs, dir, number)?;
    Ok(writer)
}
