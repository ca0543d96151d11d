//! Checkpoints (`Db::checkpoint`): a consistent, openable copy of the database as of one
//! sequence number, made while writes continue (RocksDB's `Checkpoint`).
//!
//! The state is pinned as `pin.rs` describes (flush, then the version and the value-log
//! segments it needs, all immutable). The copy is assembled in `<dir>.augur-tmp`
//! ([`StagedDir`]): each table and segment hard-linked where the file system allows (same
//! device) and copied otherwise, a fresh manifest describing the pinned version, then
//! CURRENT, last; the directory is then renamed to `dir`. So `dir` either does not exist or
//! holds a whole database; a crash leaves at most the staging directory, which an open of
//! it refuses while it lacks CURRENT (its tables and segments without CURRENT are a damaged
//! database, `open.rs`) and which the next checkpoint to `dir` removes. No LOCK, WAL or
//! temporary file is copied: the copy's first open creates its own.
//!
//! Links are safe because every linked file is immutable in both databases: tables always,
//! and segments because both manifests record them as sealed (an open never appends to a
//! sealed segment); removing one name (a compaction, GC) leaves the other.

use super::pin::PinnedState;
use super::Db;
use crate::error::{Error, Result};
use crate::fs::{link_or_copy, Placed, StagedDir};
use crate::key::SeqNo;
use crate::version::{write_current, write_manifest_file};
use std::path::{Path, PathBuf};

/// How [`Db::checkpoint_with`] places files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckpointOptions {
    /// Hard-link tables and value-log segments where the file system allows it (`true`,
    /// the default); copy every file when `false` (or when a link fails: another device, a
    /// file system without links).
    pub link_files: bool,
}

impl Default for CheckpointOptions {
    fn default() -> Self {
        CheckpointOptions { link_files: true }
    }
}

/// What a checkpoint made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointInfo {
    /// The checkpoint's directory.
    pub dir: PathBuf,
    /// The checkpoint holds exactly the writes with a sequence number up to this one: every
    /// write acknowledged before the call, and a prefix of those made during it.
    pub seqno: SeqNo,
    /// Tables and value-log segments hard-linked to the source's.
    pub linked_files: u64,
    /// Their bytes (shared with the source, not written).
    pub linked_bytes: u64,
    /// Tables and value-log segments copied.
    pub copied_files: u64,
    /// Bytes written: the copies, the manifest and CURRENT.
    pub written_bytes: u64,
}

impl Db {
    /// Makes a consistent, openable copy of the database in `dir` (which must not exist;
    /// its missing parents are created), hard-linking files where the file system allows;
    /// see [`Db::checkpoint_with`].
    ///
    /// # Errors
    /// As [`Db::checkpoint_with`].
    pub fn checkpoint(&self, dir: impl AsRef<Path>) -> Result<CheckpointInfo> {
        self.checkpoint_with(dir, &CheckpointOptions::default())
    }

    /// Makes a consistent, openable copy of the database in `dir` while writes continue:
    /// the memtable is flushed, and the copy holds the tables and value-log segments of the
    /// version after that flush (linked or copied as `options` says), a manifest describing
    /// it and CURRENT; no WAL. It holds every write acknowledged before the call and a
    /// prefix of those made during it ([`CheckpointInfo::seqno`]). `dir` appears only once
    /// complete and synced: a crash leaves it missing (and at most `<dir>.augur-tmp`, which
    /// does not open and the next checkpoint to `dir` removes). The copy is a database of
    /// its own: open it like any other. Thread-safe; it runs beside writes, reads and
    /// background work, which it slows only by its flush (and, with separated values, a
    /// seal of the active value-log segment).
    ///
    /// # Errors
    /// `InvalidArgument` when `dir` exists or lies inside the database directory;
    /// `ReadOnly` in a read-only database (it cannot flush); `Closed`, `Poisoned`; `Io` on
    /// file-system failures (a failed flush or seal poisons the database, as it does
    /// elsewhere; a failed copy leaves the database as it was).
    pub fn checkpoint_with(
        &self,
        dir: impl AsRef<Path>,
        options: &CheckpointOptions,
    ) -> Result<CheckpointInfo> {
        let target = dir.as_ref();
        let inner = &self.inner;
        if target.starts_with(&inner.dir) {
            return Err(Error::InvalidArgument(format!(
                "the checkpoint directory {} lies inside the database directory {}",
                target.display(),
                inner.dir.display()
            )));
        }
        let fs = inner.opts.fs.as_ref();
        if fs.exists(target) {
            return Err(Error::InvalidArgument(format!(
                "the checkpoint directory {} already exists: a checkpoint makes a new directory",
                target.display()
            )));
        }
        let pinned = inner.pin_state()?;
        let staged = StagedDir::create(fs, target, false)?;
        let mut info = CheckpointInfo {
            dir: target.to_path_buf(),
            seqno: pinned.seqno,
            linked_files: 0,
            linked_bytes: 0,
            copied_files: 0,
            written_bytes: 0,
        };
        place_files(fs, &pinned, staged.path(), options, &mut info)?;
        drop(pinned);
        staged.commit()?;
        log::info!(
            "checkpoint {} at seqno {}: {} files linked, {} copied, {} bytes written",
            target.display(),
            info.seqno,
            info.linked_files,
            info.copied_files,
            info.written_bytes
        );
        Ok(info)
    }
}

impl Db {
    /// Pins a consistent state for a copy (`pin.rs`): what a backup copies.
    ///
    /// # Errors
    /// As `DbInner::pin_state`.
    pub(crate) fn pin_state(&self) -> Result<PinnedState> {
        self.inner.pin_state()
    }

    /// The file system the database's files live on.
    pub(crate) fn file_system(&self) -> &dyn crate::fs::FileSystem {
        self.inner.opts.fs.as_ref()
    }
}

/// Links or copies the pinned files into `dir`, then writes the manifest and CURRENT.
fn place_files(
    fs: &dyn crate::fs::FileSystem,
    pinned: &PinnedState,
    dir: &Path,
    options: &CheckpointOptions,
    info: &mut CheckpointInfo,
) -> Result<()> {
    for file in &pinned.files {
        match link_or_copy(fs, &file.path, &dir.join(&file.name), options.link_files)? {
            Placed::Linked => {
                info.linked_files += 1;
                info.linked_bytes += file.size;
            }
            Placed::Copied(bytes) => {
                info.copied_files += 1;
                info.written_bytes += bytes;
            }
        }
    }
    let manifest = dir.join(pinned.manifest_name());
    info.written_bytes += write_manifest_file(fs, &manifest, &pinned.manifest)?;
    // The tables, segments and manifest are durable under their names before CURRENT
    // names the manifest.
    fs.sync_dir(dir)?;
    write_current(fs, dir, pinned.manifest_number)?;
    info.written_bytes += pinned.manifest_name().len() as u64 + 1;
    Ok(())
}
