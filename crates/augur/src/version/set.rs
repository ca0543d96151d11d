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
use super::manifest::{apply_vlog_changes, read_manifest, write_manifest, RecordedState};
use super::style::CompactionStyle;
use super::table_file::{check_table_matches, TableFile};
use super::version::Version;
use crate::error::{Error, Result};
use crate::filename;
use crate::cache::FileReads;
use crate::fs::FileSystem;
use crate::sst::Table;
use crate::wal::LogWriter;
use arc_swap::ArcSwap;
use parking_lot::Mutex;
use std::collections::BTreeMap;
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
    /// `None` until [`VersionSet::start_manifest`] (never, in a read-only database), and
    /// after [`VersionSet::close_manifest`].
    writer: Option<LogWriter>,
    /// The number `start_manifest` gives the new manifest.
    pending: Option<u64>,
    /// The manifest appended to (the one replayed, until `start_manifest`).
    path: PathBuf,
    /// What the manifest records, every logged edit applied.
    recorded: RecordedState,
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
    /// The current version, replaced only under `manifest` (installs are serialized);
    /// readers load it without a lock ([`VersionSet::current_now`]).
    current: ArcSwap<Version>,
    /// Serializes manifest appends and version installs.
    manifest: Mutex<ManifestState>,
    next_file_number: AtomicU64,
    listener: std::sync::OnceLock<Arc<dyn VersionListener>>,
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
        write_manifest(fs, dir, 1, &edit).map(drop)
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
        let next_file_number = replay.next_file_number;

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
            current: ArcSwap::from_pointee(version),
            manifest: Mutex::new(ManifestState {
                writer: None,
                pending: Some(number),
                path: state.manifest.clone(),
                recorded: replay,
            }),
            next_file_number: AtomicU64::new(next_file_number),
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
        let number = manifest
            .pending
            .take()
            .ok_or_else(|| Error::InvalidArgument("the manifest was started already".into()))?;
        let snapshot = manifest.recorded.snapshot_edit();
        manifest.writer = Some(write_manifest(
            self.fs.as_ref(),
            &self.dir,
            number,
            &snapshot,
        )?);
        manifest.path = filename::manifest_path(&self.dir, number);
        Ok(())
    }

    /// Ends the manifest at a clean close: writes a fresh manifest holding one snapshot edit
    /// marked `closed_cleanly` and points CURRENT at it, then removes the old one. No edit
    /// follows (the writer is gone, and [`Self::log_and_apply`] refuses), so the next open
    /// knows any byte after that record is damage (`manifest.rs`). A no-op when no manifest
    /// was started (read-only) or it was closed already.
    ///
    /// # Errors
    /// `Io` on write failures: CURRENT then still names the old manifest, whole, or the new
    /// one, whole (the rename is atomic).
    pub fn close_manifest(&self) -> Result<()> {
        let mut manifest = self.manifest.lock();
        if manifest.writer.take().is_none() {
            return Ok(());
        }
        let number = self.new_file_number();
        let mut snapshot = manifest.recorded.snapshot_edit();
        snapshot.next_file_number = Some(self.next_file_number.load(Ordering::SeqCst));
        snapshot.closed_cleanly = true;
        drop(write_manifest(self.fs.as_ref(), &self.dir, number, &snapshot)?);
        let old = std::mem::replace(
            &mut manifest.path,
            filename::manifest_path(&self.dir, number),
        );
        if let Err(e) = self.fs.remove(&old) {
            // The next open removes it.
            log::info!("could not remove the old manifest {}: {e}", old.display());
        }
        Ok(())
    }

    /// Installs the listener told about every later version change (only the first call
    /// takes effect).
    pub fn set_listener(&self, listener: Arc<dyn VersionListener>) {
        let _ = self.listener.set(listener);
    }

    /// The current version.
    pub fn current(&self) -> Arc<Version> {
        self.current.load_full()
    }

    /// The current version, borrowed for one short read: no lock and no reference count
    /// taken (a point read's cost). A replaced version stays alive while a guard holds it;
    /// hold the guard only for the read, never across blocking work.
    #[inline]
    pub fn current_now(&self) -> arc_swap::Guard<Arc<Version>> {
        self.current.load()
    }

    /// The state a copy of the database starts from, taken atomically: the snapshot edit
    /// that recreates what the manifest records (its next file number the counter's, so
    /// no file of any version has it) and the version it describes. Both change together,
    /// under the manifest lock, which this takes.
    pub fn snapshot_with_version(&self) -> (VersionEdit, Arc<Version>) {
        let manifest = self.manifest.lock();
        let mut edit = manifest.recorded.snapshot_edit();
        edit.next_file_number = Some(self.next_file_number.load(Ordering::SeqCst));
        let version = self.current();
        drop(manifest);
        (edit, version)
    }

    /// Allocates a file number.
    pub fn new_file_number(&self) -> u64 {
        self.next_file_number.fetch_add(1, Ordering::SeqCst)
    }

    /// The largest seqno recorded by flushes: no table of any version holds a larger one
    /// (compaction copies seqnos). Takes the manifest lock.
    pub fn last_seqno(&self) -> u64 {
        self.manifest.lock().recorded.last_seqno
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
            debug_assert!(n >= manifest.recorded.log_number);
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
                    let current = self.current.load();
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
        let writer = manifest.writer.as_mut().ok_or_else(|| Error::ReadOnly {
            dir: self.dir.clone(),
        })?;
        writer.add_record(&edit.encode())?;
        writer.sync()?;
        let path = manifest.path.clone();
        manifest.recorded.apply(&edit, &path, 0)?;

        // Installs are serialized by the manifest lock held here.
        let current = self.current.load_full();
        let mut next = Version::clone(&current);
        next.number = current.number + 1;
        let changed = edit.deleted.iter().map(|(l, _)| *l);
        for level in changed.chain(edit.added.iter().map(|(l, _)| *l)) {
            if let Some(n) = next.level_changed.get_mut(level) {
                *n = next.number;
            }
        }
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
        apply_vlog_changes(
            &mut next.vlog_garbage,
            &mut next.vlog_deleted,
            &mut next.vlog_reserved,
            &mut next.vlog_sealed,
            &edit,
        );
        let next = Arc::new(next);
        self.current.store(next.clone());
        drop(current);
        if let Some(listener) = self.listener.get() {
            if !added.is_empty() || !removed_files.is_empty() {
                listener.files_changed(&added, &removed_files);
            }
        }
        Ok(next)
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
