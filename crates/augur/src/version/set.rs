//! `VersionSet`: the current [`Version`], the manifest that makes every change durable, and
//! the file-number counter.
//!
//! Protocol (LevelDB): every change is a [`VersionEdit`] appended to the manifest and synced
//! *before* the new version is installed, so a crash never loses an acknowledged flush or
//! compaction, and never references a file that was not synced first (callers sync tables
//! before calling [`VersionSet::log_and_apply`]). At open, the manifest is replayed without
//! writing anything ([`VersionSet::recover`]); once the open's checks passed, a fresh
//! manifest holding one snapshot edit is written ([`VersionSet::start_manifest`]; never in a
//! read-only database) and CURRENT is switched to it atomically (write CURRENT.tmp, sync,
//! rename, sync the directory).

use super::edit::{FileMeta, VersionEdit};
use super::segment_set::SegmentSet;
use super::style::CompactionStyle;
use super::table_file::{check_table_matches, TableFile};
use super::version::Version;
use crate::error::{Error, Result};
use crate::filename;
use crate::cache::FileReads;
use crate::fs::FileSystem;
use crate::sst::Table;
use crate::wal::{read_log, LogKind, LogWriter};
use parking_lot::Mutex;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// State recovered from the manifest that the database needs besides the version.
#[derive(Debug, Clone)]
pub struct RecoveredState {
    /// WAL files numbered below this are flushed; replay the ones at or above.
    pub log_number: u64,
    /// Largest seqno recorded by flushes.
    pub last_seqno: u64,
    /// The WALs at or above `log_number` the manifest recorded, with the bytes synced into
    /// each closed one (`None`: the WAL was active, only its existence is known).
    pub live_wals: BTreeMap<u64, Option<u64>>,
    /// The compaction style the database was created with.
    pub style: CompactionStyle,
    /// The manifest that was replayed.
    pub manifest: PathBuf,
}

struct ManifestState {
    /// `None` until [`VersionSet::start_manifest`] (never, in a read-only database).
    writer: Option<LogWriter>,
    /// The snapshot edit `start_manifest` writes first, and the new manifest's number.
    pending: Option<(VersionEdit, u64)>,
    log_number: u64,
    last_seqno: u64,
}

/// Told about every installed version's file changes (the background learner).
pub trait VersionListener: Send + Sync {
    /// Called after a version is installed, with the manifest lock held (so calls arrive in
    /// version order); must not block. `added` holds every file the edit added (trivially
    /// moved ones included, at their new level); `removed` the files removed for good, with
    /// the level they left.
    fn files_changed(&self, added: &[(usize, Arc<TableFile>)], removed: &[(usize, Arc<TableFile>)]);
}

/// The versions of one database.
pub struct VersionSet {
    dir: PathBuf,
    fs: Arc<dyn FileSystem>,
    /// How table files are opened (mode, page cache, open-file bound).
    reads: FileReads,
    /// Whether tables are opened with their learned index in use.
    use_models: bool,
    current: Mutex<Arc<Version>>,
    /// Serializes manifest appends. Lock order: `manifest` before `current`.
    manifest: Mutex<ManifestState>,
    next_file_number: AtomicU64,
    listener: std::sync::OnceLock<Arc<dyn VersionListener>>,
}

/// Files and value-log state accumulated while replaying edits.
#[derive(Default)]
struct Replay {
    files: Vec<BTreeMap<u64, FileMeta>>,
    garbage: BTreeMap<u64, u64>,
    vlog_deleted: SegmentSet,
    /// Segments reserved by compactions and not installed yet.
    vlog_reserved: BTreeSet<u64>,
    /// Final sizes of the live sealed segments.
    vlog_sealed: BTreeMap<u64, u64>,
    /// Recorded WALs at or above `log_number`: number → synced bytes once closed.
    wals: BTreeMap<u64, Option<u64>>,
    log_number: u64,
    next_file_number: u64,
    last_seqno: u64,
    /// The recorded compaction style code (`None`: a manifest of an older build, leveled).
    style: Option<u64>,
    /// FLSM guards per level.
    guards: Vec<std::collections::BTreeSet<Vec<u8>>>,
}

impl Replay {
    fn apply(&mut self, edit: &VersionEdit, manifest: &Path, offset: u64) -> Result<()> {
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
    fn snapshot_edit(&self) -> VersionEdit {
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
        }
    }
}

fn sort_level(level: usize, files: &mut [Arc<TableFile>]) {
    if level == 0 {
        files.sort_by_key(|f| std::cmp::Reverse(f.meta.file_id));
    } else {
        files.sort_by(|a, b| a.meta.smallest.cmp(&b.meta.smallest));
    }
}

impl VersionSet {
    /// How table files are opened (mode, page cache, open-file bound); its counters.
    pub(crate) fn reads(&self) -> &FileReads {
        &self.reads
    }

    /// Creates the manifest and CURRENT of a new, empty database in `dir` with the given
    /// compaction style.
    pub fn create(fs: &dyn FileSystem, dir: &Path, style: CompactionStyle) -> Result<()> {
        let edit = VersionEdit {
            log_number: Some(0),
            next_file_number: Some(2),
            last_seqno: Some(0),
            compaction_style: Some(style.code()),
            ..VersionEdit::default()
        };
        let path = filename::manifest_path(dir, 1);
        let mut w = LogWriter::create(fs, &path, LogKind::Manifest)?;
        w.add_record(&edit.encode())?;
        w.sync()?;
        fs.sync_dir(dir)?;
        set_current(fs, dir, 1)
    }

    /// Replays the manifest named by CURRENT and opens every live table, writing nothing:
    /// call [`Self::start_manifest`] before the first [`Self::log_and_apply`]. Returns the
    /// set and what the WAL replay needs. `style` is the compaction style the caller asks
    /// for; `None` takes the one the database was created with.
    ///
    /// `check_table_count` is asked, before any table is opened, whether their number can be
    /// opened at all (the kernel's mapping or open-file limit).
    ///
    /// # Errors
    /// `InvalidArgument` when the database was created with another compaction style than
    /// `style`, or from `check_table_count`; `Corruption` for a damaged manifest or a missing
    /// table.
    pub fn recover(
        fs: Arc<dyn FileSystem>,
        dir: &Path,
        reads: FileReads,
        use_models: bool,
        num_levels: usize,
        style: Option<CompactionStyle>,
        check_table_count: &dyn Fn(u64) -> Result<()>,
    ) -> Result<(VersionSet, RecoveredState)> {
        let (manifest, mut replay) = read_manifest(fs.as_ref(), dir, num_levels)?;
        let recorded = match replay.style {
            None => CompactionStyle::Leveled,
            Some(code) => CompactionStyle::from_code(code).ok_or_else(|| {
                Error::corruption(&manifest, 0, format!("unknown compaction style {code}"))
            })?,
        };
        let style = match style {
            Some(asked) if asked != recorded => {
                return Err(Error::InvalidArgument(format!(
                    "the database in {} uses the {recorded} compaction style; it cannot be \
                     opened with compaction style {asked} (Options::compaction; CLI \
                     --compaction, Python compaction=). The style is fixed when a database \
                     is created: leave the option out to use the recorded one",
                    dir.display()
                )));
            }
            _ => recorded,
        };
        replay.style = Some(style.code());
        let mut version = Version::with_style(num_levels, style);
        for (level, g) in replay.guards.iter().enumerate() {
            version.guards[level] = Arc::new(g.iter().cloned().collect());
        }
        check_table_count(replay.files.iter().map(|l| l.len() as u64).sum())?;
        for (level, metas) in replay.files.iter().enumerate() {
            for meta in metas.values() {
                let file = open_table(&fs, dir, &manifest, meta, &reads, use_models)?;
                version.levels[level].push(Arc::new(file));
            }
            sort_level(level, &mut version.levels[level]);
        }
        version.vlog_garbage = replay.garbage.clone();
        version.vlog_deleted = replay.vlog_deleted.clone();
        version.vlog_reserved = replay.vlog_reserved.clone();
        version.vlog_sealed = replay.vlog_sealed.clone();
        version.rebuild_runs();

        // The number of the new manifest `start_manifest` writes, holding one snapshot edit.
        let number = replay.next_file_number;
        replay.next_file_number += 1;

        let state = RecoveredState {
            log_number: replay.log_number,
            last_seqno: replay.last_seqno,
            live_wals: replay.wals.clone(),
            style,
            manifest,
        };
        let set = VersionSet {
            dir: dir.to_path_buf(),
            fs,
            reads,
            use_models,
            current: Mutex::new(Arc::new(version)),
            manifest: Mutex::new(ManifestState {
                writer: None,
                pending: Some((replay.snapshot_edit(), number)),
                log_number: replay.log_number,
                last_seqno: replay.last_seqno,
            }),
            next_file_number: AtomicU64::new(replay.next_file_number),
            listener: std::sync::OnceLock::new(),
        };
        Ok((set, state))
    }

    /// Starts a fresh manifest holding one snapshot edit of the recovered state, and points
    /// CURRENT at it (the first write of an open, after every check passed).
    ///
    /// # Errors
    /// `InvalidArgument` when the manifest was started already; `Io` on write failures.
    pub fn start_manifest(&self) -> Result<()> {
        let mut manifest = self.manifest.lock();
        let (snapshot, number) = manifest
            .pending
            .take()
            .ok_or_else(|| Error::InvalidArgument("the manifest was started already".into()))?;
        let path = filename::manifest_path(&self.dir, number);
        let mut writer = LogWriter::create(self.fs.as_ref(), &path, LogKind::Manifest)?;
        writer.add_record(&snapshot.encode())?;
        writer.sync()?;
        self.fs.sync_dir(&self.dir)?;
        set_current(self.fs.as_ref(), &self.dir, number)?;
        manifest.writer = Some(writer);
        Ok(())
    }

    /// Installs the listener told about every later version change (only the first call
    /// takes effect).
    pub fn set_listener(&self, listener: Arc<dyn VersionListener>) {
        let _ = self.listener.set(listener);
    }

    /// The current version.
    pub fn current(&self) -> Arc<Version> {
        self.current.lock().clone()
    }

    /// Allocates a file number.
    pub fn new_file_number(&self) -> u64 {
        self.next_file_number.fetch_add(1, Ordering::SeqCst)
    }

    /// The largest seqno recorded by flushes: no table of any version holds a larger one
    /// (compaction copies seqnos). Takes the manifest lock.
    pub fn last_seqno(&self) -> u64 {
        self.manifest.lock().last_seqno
    }

    /// The WAL number below which logs are flushed.
    pub fn log_number(&self) -> u64 {
        self.manifest.lock().log_number
    }

    /// Writes `edit` to the manifest, syncs it, and installs the resulting version. Added
    /// files must already be synced. Removed files are marked obsolete (deleted when no
    /// reader holds them).
    ///
    /// # Errors
    /// On a manifest write/sync failure the version is unchanged; the caller must treat the
    /// database as poisoned, as the manifest's state on disk is unknown (the edit may be
    /// whole in the file and applied by the next open). Every later call fails as well (the
    /// manifest's `LogWriter` refuses after a failure): an edit built on the version without
    /// the failed one must never follow it in the file.
    pub fn log_and_apply(&self, mut edit: VersionEdit) -> Result<Arc<Version>> {
        let mut manifest = self.manifest.lock();
        edit.next_file_number = Some(self.next_file_number.load(Ordering::SeqCst));
        if let Some(n) = edit.log_number {
            debug_assert!(n >= manifest.log_number);
        }
        // Open the new tables before touching the manifest, so a bad table fails cleanly.
        // A trivially moved file keeps its open table: its lookup statistics, its opening
        // time and any model learned in the background stay with it.
        let mut added = Vec::with_capacity(edit.added.len());
        for (level, meta) in &edit.added {
            let path = filename::table_path(&self.dir, meta.file_id);
            let moved = edit.deleted.iter().any(|(_, id)| *id == meta.file_id);
            let existing = moved
                .then(|| {
                    let current = self.current.lock();
                    current
                        .levels
                        .iter()
                        .flatten()
                        .find(|f| f.meta.file_id == meta.file_id)
                        .map(|f| f.table.clone())
                })
                .flatten();
            let table = match existing {
                Some(t) => t,
                None => {
                    let table =
                        Table::open_in(&self.fs, &path, meta.file_id, &self.reads, self.use_models)?;
                    check_table_matches(meta, &table)?;
                    Arc::new(table)
                }
            };
            added.push((
                *level,
                Arc::new(TableFile::new(meta.clone(), table, self.fs.clone())),
            ));
        }
        let writer = manifest.writer.as_mut().ok_or_else(|| {
            Error::InvalidArgument("the database is open for reading only".into())
        })?;
        writer.add_record(&edit.encode())?;
        writer.sync()?;
        if let Some(n) = edit.log_number {
            manifest.log_number = n;
        }
        if let Some(n) = edit.last_seqno {
            manifest.last_seqno = manifest.last_seqno.max(n);
        }

        let mut current = self.current.lock();
        let mut next = Version::clone(&current);
        let mut removed_files = Vec::new();
        for (level, id) in &edit.deleted {
            if let Some(files) = next.levels.get_mut(*level) {
                if let Some(pos) = files.iter().position(|f| f.meta.file_id == *id) {
                    let removed = files.remove(pos);
                    // A trivial move deletes and re-adds the same file: it stays live.
                    if !edit.added.iter().any(|(_, m)| m.file_id == *id) {
                        removed.mark_obsolete();
                        removed_files.push((*level, removed));
                    }
                }
            }
        }
        for (level, file) in &added {
            if let Some(files) = next.levels.get_mut(*level) {
                files.push(file.clone());
            }
        }
        for (level, files) in next.levels.iter_mut().enumerate() {
            sort_level(level, files);
        }
        apply_guards(&mut next, &edit);
        next.rebuild_runs();
        // A level model is only valid for the files it was trained on.
        for (slot, files) in next.level_models.iter_mut().zip(&next.levels) {
            if slot.get().is_some_and(|m| !m.matches(files)) {
                *slot = std::sync::OnceLock::new();
            }
        }
        apply_vlog_changes(
            &mut next.vlog_garbage,
            &mut next.vlog_deleted,
            &mut next.vlog_reserved,
            &mut next.vlog_sealed,
            &edit,
        );
        let next = Arc::new(next);
        *current = next.clone();
        drop(current);
        if let Some(listener) = self.listener.get() {
            if !added.is_empty() || !removed_files.is_empty() {
                listener.files_changed(&added, &removed_files);
            }
        }
        Ok(next)
    }
}

/// Applies an edit's value-log changes to the garbage per segment, the deleted segments, the
/// reserved ones and the sealed sizes (manifest replay and `log_and_apply` alike): a
/// reservation is dropped when its segment is installed (which starts its garbage at 0) or
/// deleted; garbage that dropped pointers add to a segment already deleted is not recorded
/// (the segment is gone), nor is its size, and a deleted segment's garbage and size go with
/// it.
fn apply_vlog_changes(
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

/// Applies an edit's guard changes to `v`'s guard lists (kept sorted).
fn apply_guards(v: &mut Version, edit: &VersionEdit) {
    if edit.guards_added.is_empty() && edit.guards_removed.is_empty() {
        return;
    }
    for (level, guards) in v.guards.iter_mut().enumerate() {
        let removed = edit.guards_removed.iter().filter(|(l, _)| *l == level);
        let added = edit.guards_added.iter().filter(|(l, _)| *l == level);
        if removed.clone().next().is_none() && added.clone().next().is_none() {
            continue;
        }
        let mut set: std::collections::BTreeSet<Vec<u8>> = guards.iter().cloned().collect();
        for (_, k) in removed {
            set.remove(k);
        }
        for (_, k) in added {
            set.insert(k.clone());
        }
        *guards = Arc::new(set.into_iter().collect());
    }
}

/// Reads the manifest CURRENT names and replays its edits (levels `0..num_levels`).
/// Returns the manifest's path and the replayed state.
///
/// # Errors
/// `Corruption` for a CURRENT that names no manifest, a damaged or malformed manifest, or
/// one whose edits are incomplete (`check_edits_complete`).
fn read_manifest(fs: &dyn FileSystem, dir: &Path, num_levels: usize) -> Result<(PathBuf, Replay)> {
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
    let mut replay = Replay {
        files: vec![BTreeMap::new(); num_levels],
        guards: vec![std::collections::BTreeSet::new(); num_levels],
        ..Replay::default()
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

/// Opens the table `meta` describes, which `manifest` lists.
///
/// # Errors
/// `Corruption` naming the manifest when the table is missing (tables are removed only after
/// an edit drops them: edits were lost), or naming the table when it is damaged.
fn open_table(
    fs: &Arc<dyn FileSystem>,
    dir: &Path,
    manifest: &Path,
    meta: &FileMeta,
    reads: &FileReads,
    use_models: bool,
) -> Result<TableFile> {
    let path = filename::table_path(dir, meta.file_id);
    if !fs.exists(&path) {
        return Err(Error::corruption(
            manifest,
            0,
            format!("references table {} which does not exist", path.display()),
        ));
    }
    let table = Table::open_in(fs, &path, meta.file_id, reads, use_models)?;
    check_table_matches(meta, &table)?;
    Ok(TableFile::new(meta.clone(), Arc::new(table), fs.clone()))
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
                        "edits are missing: the log number names WAL {log_number}, which was \
                         removed, and WAL {n} holds records"
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Points CURRENT at manifest `number` atomically.
fn set_current(fs: &dyn FileSystem, dir: &Path, number: u64) -> Result<()> {
    let tmp = filename::current_temp_path(dir);
    let mut w = fs.create(&tmp)?;
    w.append(format!("{}\n", filename::manifest_name(number)).as_bytes())?;
    w.sync()?;
    drop(w);
    fs.rename(&tmp, &filename::current_path(dir))?;
    fs.sync_dir(dir)
}
