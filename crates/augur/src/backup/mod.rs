//! Incremental backups of an open database (RocksDB's `BackupEngine`): each backup is a
//! consistent copy as of one sequence number, and backups share the copies of the files
//! they have in common, so a backup after a few writes copies only the new tables and
//! value-log segments. On-disk layout and metadata format: docs/format/backup.md.
//!
//! Where it sits: above the database (`Db`), which pins the state a backup copies the way
//! a checkpoint does (`db/pin.rs`: flush, the version and the value-log segments it needs,
//! all immutable); the backup copies those files (never links them: a backup is meant to
//! outlive the disk, and a damaged shared file would damage both) into
//! `shared/`, each under a name made of its database name, size and CRC32C, writes the
//! copy's manifest there too, and then, last, the backup's metadata file in `meta/`.
//!
//! Crash safety: a backup exists once its metadata file does, and that file is renamed into
//! `meta/` only after every file it names is synced under its final name and `shared/` is
//! synced. A crash before leaves no metadata (the backup is not listed and cannot be
//! restored) and at most unreferenced files in `shared/` and `tmp/`, which the next
//! [`BackupEngine::create`], [`BackupEngine::delete`] or [`BackupEngine::purge`] removes
//! (`create` clears `tmp/`; the others collect every shared file no metadata names).
//! Deleting removes the metadata file (synced) before any shared file, so a crash never
//! leaves a listed backup missing a file. Every operation but `list` takes the directory's
//! `LOCK`; a second process gets `Busy`.

mod meta;
mod ops;

pub use meta::{BackupFile, BackupMeta};

use crate::error::{Error, Result};
use crate::fs::{parent_dir, FileLock, FileSystem, StdFs};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The metadata files, one per backup.
const META_DIR: &str = "meta";
/// The copies of the databases' files, shared between backups.
const SHARED_DIR: &str = "shared";
/// Files being written (a crash leaves them; the next change removes them).
const TMP_DIR: &str = "tmp";
/// Held while the directory is changed.
const LOCK_FILE: &str = "LOCK";

/// One backup, as [`BackupEngine::list`] shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackupInfo {
    /// The backup's id (ids grow; a restore names one).
    pub id: u64,
    /// When it was made, in milliseconds since the Unix epoch (on the database's clock).
    pub created_unix_ms: u64,
    /// It holds exactly the writes with a sequence number up to this one.
    pub seqno: u64,
    /// Its files: tables, value-log segments and the manifest.
    pub files: u64,
    /// Their bytes (what a restore writes).
    pub size_bytes: u64,
    /// The bytes of its files that another backup holds too (stored once).
    pub shared_bytes: u64,
}

/// What [`BackupEngine::create`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackupCreated {
    /// The new backup.
    pub info: BackupInfo,
    /// Files copied into `shared/` by this backup.
    pub new_files: u64,
    /// Their bytes: what this backup added to the directory.
    pub new_bytes: u64,
    /// Files an earlier backup had copied already (not written again).
    pub reused_files: u64,
}

/// A file of a backup that [`BackupEngine::verify`] found wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyProblem {
    /// The database file (`000012.sst`).
    pub file: String,
    /// Its copy in `shared/`.
    pub path: PathBuf,
    /// What is wrong: missing, another size, another checksum.
    pub what: String,
}

/// What [`BackupEngine::verify`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyReport {
    /// The backup.
    pub id: u64,
    /// Files read whole and checked against their recorded size and CRC32C.
    pub files_checked: u64,
    /// Bytes read.
    pub bytes_checked: u64,
    /// Every file that is missing or differs; empty when the backup is whole.
    pub problems: Vec<VerifyProblem>,
}

impl VerifyReport {
    /// True when every file is present with its recorded size and checksum.
    pub fn is_ok(&self) -> bool {
        self.problems.is_empty()
    }
}

/// What [`BackupEngine::restore`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RestoreReport {
    /// The backup restored.
    pub id: u64,
    /// The restored database's directory.
    pub dir: PathBuf,
    /// The sequence number it holds writes up to.
    pub seqno: u64,
    /// Files written (CURRENT aside).
    pub files: u64,
    /// Their bytes.
    pub bytes: u64,
}

/// What [`BackupEngine::delete`] and [`BackupEngine::purge`] removed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PurgeReport {
    /// The backups deleted, oldest first.
    pub deleted: Vec<u64>,
    /// Shared (and temporary) files removed because no backup names them any more.
    pub files_removed: u64,
    /// Their bytes.
    pub bytes_removed: u64,
}

/// A directory of backups (see the module doc). Cheap to open; every operation reads
/// what it needs from the directory, so several handles (and processes) may list at once,
/// while changes (create, delete, purge), verifications and restores take the directory's
/// lock (`Busy` while another holds it). Only `create` makes a missing directory.
pub struct BackupEngine {
    dir: PathBuf,
    fs: Arc<dyn FileSystem>,
}

impl std::fmt::Debug for BackupEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BackupEngine")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

impl BackupEngine {
    /// The backups in `dir` on the real file system (created by the first backup).
    ///
    /// # Errors
    /// As [`Self::open_with`].
    pub fn open(dir: impl AsRef<Path>) -> Result<BackupEngine> {
        Self::open_with(dir, Arc::new(StdFs))
    }

    /// The backups in `dir` on `fs`, where restores write too. Nothing is written.
    ///
    /// # Errors
    /// `InvalidArgument` when `dir` exists and holds anything a backup directory does not
    /// (a database directory given by mistake, say); `Io` when it cannot be listed.
    pub fn open_with(dir: impl AsRef<Path>, fs: Arc<dyn FileSystem>) -> Result<BackupEngine> {
        let dir = dir.as_ref().to_path_buf();
        if fs.exists(&dir) {
            let names = fs.list(&dir)?;
            let ours = [META_DIR, SHARED_DIR, TMP_DIR, LOCK_FILE];
            if let Some(foreign) = names.iter().find(|n| !ours.contains(&n.as_str())) {
                return Err(Error::InvalidArgument(format!(
                    "{} is not a backup directory: it holds {foreign:?} (a backup directory \
                     holds only meta/, shared/, tmp/ and LOCK)",
                    dir.display()
                )));
            }
        }
        Ok(BackupEngine { dir, fs })
    }

    /// The backup directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// Every backup, oldest first.
    ///
    /// # Errors
    /// `Corruption` (or `UnsupportedVersion`) naming a damaged metadata file; `Io`.
    pub fn list(&self) -> Result<Vec<BackupInfo>> {
        let metas = self.read_all()?;
        let mut holders: HashMap<String, u64> = HashMap::new();
        for m in &metas {
            for f in &m.files {
                *holders.entry(f.shared_name()).or_default() += 1;
            }
        }
        Ok(metas
            .iter()
            .map(|m| BackupInfo {
                shared_bytes: m
                    .files
                    .iter()
                    .filter(|f| holders.get(&f.shared_name()).is_some_and(|&n| n > 1))
                    .map(|f| f.size)
                    .sum(),
                ..info_of(m)
            })
            .collect())
    }

    /// The metadata of backup `id`.
    ///
    /// # Errors
    /// `InvalidArgument` when there is no such backup; `Corruption` or
    /// `UnsupportedVersion` when its metadata file is damaged; `Io`.
    pub fn backup(&self, id: u64) -> Result<BackupMeta> {
        let path = self.meta_path(id);
        if !self.fs.exists(&path) {
            return Err(Error::InvalidArgument(format!(
                "no backup {id} in {}",
                self.dir.display()
            )));
        }
        let meta = BackupMeta::decode(&path, &self.fs.read_all(&path)?)?;
        if meta.id != id {
            return Err(Error::corruption(
                &path,
                0,
                format!(
                    "backup metadata of backup {} under the name of {id}",
                    meta.id
                ),
            ));
        }
        Ok(meta)
    }

    /// The ids of the backups, ascending (from the metadata files' names).
    fn ids(&self) -> Result<Vec<u64>> {
        let meta = self.dir.join(META_DIR);
        if !self.fs.exists(&meta) {
            return Ok(Vec::new());
        }
        let mut ids: Vec<u64> = self
            .fs
            .list(&meta)?
            .iter()
            .filter_map(|n| parse_id(n))
            .collect();
        ids.sort_unstable();
        Ok(ids)
    }

    /// Every backup's metadata, oldest first.
    fn read_all(&self) -> Result<Vec<BackupMeta>> {
        self.ids()?.into_iter().map(|id| self.backup(id)).collect()
    }

    fn meta_path(&self, id: u64) -> PathBuf {
        self.dir.join(META_DIR).join(format!("{id:08}"))
    }

    fn shared_path(&self, file: &BackupFile) -> PathBuf {
        self.dir.join(SHARED_DIR).join(file.shared_name())
    }

    fn tmp_dir(&self) -> PathBuf {
        self.dir.join(TMP_DIR)
    }

    /// Takes the directory's lock, creating its missing parts (and, with `create`, the
    /// directory itself).
    ///
    /// # Errors
    /// `InvalidArgument` when the directory is missing and `create` is not set; `Busy`.
    fn lock(&self, create: bool) -> Result<Box<dyn FileLock>> {
        if !create && !self.fs.exists(&self.dir) {
            return Err(Error::InvalidArgument(format!(
                "no backup directory at {}",
                self.dir.display()
            )));
        }
        if !self.fs.exists(&self.dir) {
            self.fs.create_dir_all(&self.dir)?;
            self.fs.sync_dir(&parent_dir(&self.dir))?;
        }
        for part in [META_DIR, SHARED_DIR, TMP_DIR] {
            let path = self.dir.join(part);
            if !self.fs.exists(&path) {
                self.fs.create_dir_all(&path)?;
                self.fs.sync_dir(&self.dir)?;
            }
        }
        self.fs
            .lock(&self.dir.join(LOCK_FILE))
            .map_err(|e| match e {
                Error::Busy(_) => Error::Busy(format!(
                    "the backup directory {} is being changed by another process or handle",
                    self.dir.display()
                )),
                other => other,
            })
    }
}

/// A backup's id from its metadata file's name (decimal digits only).
fn parse_id(name: &str) -> Option<u64> {
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    name.parse().ok()
}

/// The listing of `m`, its shared bytes not counted.
fn info_of(m: &BackupMeta) -> BackupInfo {
    BackupInfo {
        id: m.id,
        created_unix_ms: m.created_unix_ms,
        seqno: m.seqno,
        files: m.files.len() as u64,
        size_bytes: m.size_bytes(),
        shared_bytes: 0,
    }
}
