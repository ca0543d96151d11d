//! What a [`BackupEngine`] does: create, verify, restore, delete and purge (the order of
//! writes each follows is the crash argument of the module doc, `backup/mod.rs`).

use super::meta::{BackupFile, BackupMeta};
use super::{
    info_of, BackupCreated, BackupEngine, PurgeReport, RestoreReport, VerifyProblem, VerifyReport,
    META_DIR, SHARED_DIR,
};
use crate::db::Db;
use crate::error::{Error, Result};
use crate::fs::{checksum_file, copy_file, StagedDir};
use crate::version::{write_current, write_manifest_file};
use std::collections::HashSet;
use std::path::Path;

impl BackupEngine {
    /// Backs up `db` while it runs: pins a consistent state as a checkpoint does (flushing
    /// the memtable; see `Db::checkpoint`), copies every file no earlier backup holds into
    /// `shared/` (each read twice: once for its checksum, which names the copy, and once to
    /// copy it, checked against the first), writes the state's manifest there, and records
    /// the backup in `meta/` last. Returns the new backup and what it added.
    ///
    /// # Errors
    /// `Busy` when another process or handle changes the directory; those of
    /// `Db::checkpoint` (`ReadOnly`, `Closed`, `Poisoned`, `Io`); `Corruption` when a source
    /// file changed while it was copied; `Io` on file-system failures (the backup is then not
    /// recorded, and its copies are removed by the next change).
    pub fn create(&self, db: &Db) -> Result<BackupCreated> {
        let _lock = self.lock(true)?;
        self.clear_tmp()?;
        let id = self.ids()?.last().map_or(1, |last| last + 1);
        let created_unix_ms = db.now_unix_ms();
        let pinned = db.pin_state()?;
        let src = db.file_system();
        let fs = self.fs.as_ref();
        let tmp = self.tmp_dir();
        let mut files = Vec::with_capacity(pinned.files.len() + 1);
        let (mut new_files, mut new_bytes, mut reused_files) = (0, 0, 0);
        for f in &pinned.files {
            let sum = checksum_file(src, &f.path)?;
            if sum.bytes != f.size {
                return Err(Error::corruption(
                    &f.path,
                    sum.bytes,
                    format!("holds {} bytes; the database records {}", sum.bytes, f.size),
                ));
            }
            let file = BackupFile {
                name: f.name.clone(),
                size: sum.bytes,
                crc: sum.crc,
            };
            let dst = self.shared_path(&file);
            if fs.exists(&dst) && fs.size(&dst)? == file.size {
                reused_files += 1;
            } else {
                let staged = tmp.join(file.shared_name());
                let copied = copy_file(src, &f.path, fs, &staged, Some(file.size))?;
                if copied.crc != file.crc {
                    return Err(Error::corruption(
                        &f.path,
                        0,
                        "its bytes changed while the backup copied them",
                    ));
                }
                fs.rename(&staged, &dst)?;
                new_files += 1;
                new_bytes += file.size;
            }
            files.push(file);
        }
        let manifest = tmp.join(pinned.manifest_name());
        write_manifest_file(fs, &manifest, &pinned.manifest)?;
        let sum = checksum_file(fs, &manifest)?;
        let file = BackupFile {
            name: pinned.manifest_name(),
            size: sum.bytes,
            crc: sum.crc,
        };
        fs.rename(&manifest, &self.shared_path(&file))?;
        new_files += 1;
        new_bytes += file.size;
        files.push(file);
        let meta = BackupMeta {
            id,
            created_unix_ms,
            seqno: pinned.seqno,
            manifest_number: pinned.manifest_number,
            files,
        };
        drop(pinned);
        // Every file the metadata names is synced under its final name before it exists.
        fs.sync_dir(&self.dir.join(SHARED_DIR))?;
        let staged = tmp.join(format!("{id:08}.meta"));
        let mut out = fs.create(&staged)?;
        out.append(&meta.encode())?;
        out.sync()?;
        drop(out);
        fs.rename(&staged, &self.meta_path(id))?;
        fs.sync_dir(&self.dir.join(META_DIR))?;
        log::info!(
            "backup {id} of {}: {} files, {new_files} new ({new_bytes} bytes)",
            db.path().display(),
            meta.files.len()
        );
        Ok(BackupCreated {
            info: info_of(&meta),
            new_files,
            new_bytes,
            reused_files,
        })
    }

    /// Reads every file of backup `id` whole and checks it against the size and CRC32C its
    /// metadata records. Damage is reported in the result, not as an error.
    ///
    /// # Errors
    /// `InvalidArgument` for an unknown id; `Corruption` when its metadata file is damaged;
    /// `Busy` while the directory is being changed; `Io` on failures other than a missing
    /// or unreadable file.
    pub fn verify(&self, id: u64) -> Result<VerifyReport> {
        let _lock = self.lock(false)?;
        let meta = self.backup(id)?;
        let mut report = VerifyReport {
            id,
            files_checked: 0,
            bytes_checked: 0,
            problems: Vec::new(),
        };
        for f in &meta.files {
            let path = self.shared_path(f);
            let problem = |what: String| VerifyProblem {
                file: f.name.clone(),
                path: path.clone(),
                what,
            };
            if !self.fs.exists(&path) {
                report.problems.push(problem("missing".into()));
                continue;
            }
            match checksum_file(self.fs.as_ref(), &path) {
                Err(e) => report.problems.push(problem(format!("unreadable: {e}"))),
                Ok(sum) => {
                    report.files_checked += 1;
                    report.bytes_checked += sum.bytes;
                    if sum.bytes != f.size {
                        report.problems.push(problem(format!(
                            "holds {} bytes, {} recorded",
                            sum.bytes, f.size
                        )));
                    } else if sum.crc != f.crc {
                        report.problems.push(problem(format!(
                            "CRC32C {:08x}, {:08x} recorded",
                            sum.crc, f.crc
                        )));
                    }
                }
            }
        }
        Ok(report)
    }

    /// Restores backup `id` into `target` (missing, or an empty directory), on this
    /// engine's file system: every file copied and checked against its recorded checksum,
    /// CURRENT written last, the whole assembled in `<target>.augur-tmp` and renamed into
    /// place. The restored database opens like any other and holds exactly the backed-up
    /// writes.
    ///
    /// # Errors
    /// `InvalidArgument` for an unknown id or a `target` that exists and is not an empty
    /// directory; `Corruption` naming a shared file that is missing, of another size or
    /// checksum (nothing is left at `target`); `Busy`; `Io`.
    pub fn restore(&self, id: u64, target: impl AsRef<Path>) -> Result<RestoreReport> {
        let target = target.as_ref();
        let _lock = self.lock(false)?;
        let meta = self.backup(id)?;
        let fs = self.fs.as_ref();
        let staged = StagedDir::create(fs, target, true)?;
        let mut bytes = 0;
        for f in &meta.files {
            let path = self.shared_path(f);
            if !fs.exists(&path) {
                return Err(Error::corruption(
                    &path,
                    0,
                    format!("backup {id} needs this file, which is missing"),
                ));
            }
            let copied = copy_file(fs, &path, fs, &staged.path().join(&f.name), Some(f.size))?;
            if copied.crc != f.crc || fs.size(&path)? != f.size {
                return Err(Error::corruption(
                    &path,
                    0,
                    format!("not the file backup {id} recorded (its size or CRC32C differs)"),
                ));
            }
            bytes += copied.bytes;
        }
        fs.sync_dir(staged.path())?;
        write_current(fs, staged.path(), meta.manifest_number)?;
        staged.commit()?;
        Ok(RestoreReport {
            id,
            dir: target.to_path_buf(),
            seqno: meta.seqno,
            files: meta.files.len() as u64,
            bytes,
        })
    }

    /// Deletes backup `id` (its metadata, synced, first), then removes every shared file
    /// no remaining backup names.
    ///
    /// # Errors
    /// `InvalidArgument` for an unknown id; `Corruption` when a remaining backup's
    /// metadata is damaged (nothing shared is removed then); `Busy`; `Io`.
    pub fn delete(&self, id: u64) -> Result<PurgeReport> {
        let _lock = self.lock(false)?;
        let path = self.meta_path(id);
        if !self.fs.exists(&path) {
            return Err(Error::InvalidArgument(format!(
                "no backup {id} in {}",
                self.dir.display()
            )));
        }
        self.fs.remove(&path)?;
        self.fs.sync_dir(&self.dir.join(META_DIR))?;
        let mut report = self.collect_garbage()?;
        report.deleted = vec![id];
        Ok(report)
    }

    /// Deletes every backup but the newest `keep` (metadata first, synced), then removes
    /// every shared and temporary file no remaining backup names: also what an interrupted
    /// create left. `purge(usize::MAX)` only collects that garbage.
    ///
    /// # Errors
    /// As [`Self::delete`].
    pub fn purge(&self, keep: usize) -> Result<PurgeReport> {
        let _lock = self.lock(false)?;
        let ids = self.ids()?;
        let doomed: Vec<u64> = ids
            .iter()
            .copied()
            .take(ids.len().saturating_sub(keep))
            .collect();
        for &id in &doomed {
            self.fs.remove(&self.meta_path(id))?;
        }
        if !doomed.is_empty() {
            self.fs.sync_dir(&self.dir.join(META_DIR))?;
        }
        let mut report = self.collect_garbage()?;
        report.deleted = doomed;
        Ok(report)
    }

    /// Removes the shared files no backup names and every temporary file. REQUIRES: the
    /// lock held.
    fn collect_garbage(&self) -> Result<PurgeReport> {
        let referenced: HashSet<String> = self
            .read_all()?
            .iter()
            .flat_map(|m| m.files.iter().map(BackupFile::shared_name))
            .collect();
        let shared = self.dir.join(SHARED_DIR);
        let mut report = PurgeReport::default();
        for name in self.fs.list(&shared)? {
            if referenced.contains(&name) {
                continue;
            }
            let path = shared.join(&name);
            report.bytes_removed += self.fs.size(&path)?;
            self.fs.remove(&path)?;
            report.files_removed += 1;
        }
        self.fs.sync_dir(&shared)?;
        let (files, bytes) = self.clear_tmp()?;
        report.files_removed += files;
        report.bytes_removed += bytes;
        Ok(report)
    }

    /// Removes every file of `tmp/` (what an interrupted create left); returns how many
    /// and their bytes. REQUIRES: the lock held.
    fn clear_tmp(&self) -> Result<(u64, u64)> {
        let tmp = self.tmp_dir();
        let (mut files, mut bytes) = (0, 0);
        for name in self.fs.list(&tmp)? {
            let path = tmp.join(&name);
            bytes += self.fs.size(&path)?;
            self.fs.remove(&path)?;
            files += 1;
        }
        if files > 0 {
            self.fs.sync_dir(&tmp)?;
        }
        Ok((files, bytes))
    }
}
