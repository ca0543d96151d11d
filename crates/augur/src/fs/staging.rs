//! [`StagedDir`]: a directory assembled under a temporary name beside its target and renamed
//! into place only once complete, so the target either does not exist or holds everything
//! (RocksDB's checkpoint staging directory). A checkpoint and a restore build their database
//! this way: a crash leaves at most the staging directory, which nothing opens by its name
//! and the next attempt removes.

use super::FileSystem;
use crate::error::{Error, Result};
use std::path::{Path, PathBuf};

/// Appended to the target's name to name its staging directory.
pub const STAGING_SUFFIX: &str = ".augur-tmp";

/// A directory being assembled (see the module doc). Dropping it uncommitted removes what
/// was placed in it, as far as it can (a crash leaves it to the next attempt).
pub struct StagedDir<'a> {
    fs: &'a dyn FileSystem,
    staging: PathBuf,
    target: PathBuf,
    committed: bool,
}

impl std::fmt::Debug for StagedDir<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StagedDir")
            .field("staging", &self.staging)
            .field("target", &self.target)
            .finish_non_exhaustive()
    }
}

/// The directory holding `path` (`.` for a bare name).
pub fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// The staging directory of `target`: `<target>.augur-tmp` beside it.
pub fn staging_path(target: &Path) -> Option<PathBuf> {
    let name = target.file_name()?;
    let mut staged = name.to_os_string();
    staged.push(STAGING_SUFFIX);
    Some(parent_dir(target).join(staged))
}

impl<'a> StagedDir<'a> {
    /// Starts assembling `target`: fails unless `target` is missing (or, with
    /// `allow_empty_target`, an empty directory), removes a staging directory an earlier
    /// attempt left (its files; one holding a subdirectory is refused), and creates an
    /// empty one, with the target's missing parents.
    ///
    /// # Errors
    /// `InvalidArgument` when `target` exists (and is not an allowed empty directory), has
    /// no file name, or the leftover staging directory holds a subdirectory; `Io` on
    /// file-system failures.
    pub fn create(
        fs: &'a dyn FileSystem,
        target: &Path,
        allow_empty_target: bool,
    ) -> Result<StagedDir<'a>> {
        let staging = staging_path(target).ok_or_else(|| {
            Error::InvalidArgument(format!("{} names no directory", target.display()))
        })?;
        if fs.exists(target) {
            let empty = allow_empty_target && fs.list(target).is_ok_and(|n| n.is_empty());
            if !empty {
                return Err(Error::InvalidArgument(format!(
                    "{} already exists{}",
                    target.display(),
                    if allow_empty_target {
                        " and is not an empty directory"
                    } else {
                        ""
                    }
                )));
            }
        }
        if fs.exists(&staging) {
            log::info!(
                "removing {}, left by an interrupted attempt",
                staging.display()
            );
            empty_directory(fs, &staging)?;
        } else {
            fs.create_dir_all(&staging)?;
            fs.sync_dir(&parent_dir(&staging))?;
        }
        Ok(StagedDir {
            fs,
            staging,
            target: target.to_path_buf(),
            committed: false,
        })
    }

    /// The staging directory, where the caller places the files.
    pub fn path(&self) -> &Path {
        &self.staging
    }

    /// Makes the assembled directory the target: syncs the staging directory, renames it to
    /// the target (removing the target first when it is an allowed empty directory) and
    /// syncs the parent. REQUIRES: every file placed is synced.
    ///
    /// # Errors
    /// `Io` on file-system failures (the target then either does not exist or is whole).
    pub fn commit(mut self) -> Result<()> {
        self.fs.sync_dir(&self.staging)?;
        if self.fs.exists(&self.target) {
            self.fs.remove_dir(&self.target)?;
        }
        self.fs.rename_dir(&self.staging, &self.target)?;
        self.committed = true;
        self.fs.sync_dir(&parent_dir(&self.target))
    }
}

impl Drop for StagedDir<'_> {
    fn drop(&mut self) {
        if self.committed {
            return;
        }
        let removed = empty_directory(self.fs, &self.staging)
            .and_then(|()| self.fs.remove_dir(&self.staging));
        if let Err(e) = removed {
            log::info!(
                "could not remove the staging directory {}: {e}",
                self.staging.display()
            );
        }
    }
}

/// Removes every file of `dir` and syncs it.
///
/// # Errors
/// `InvalidArgument` when it holds a subdirectory; `Io` on failures.
fn empty_directory(fs: &dyn FileSystem, dir: &Path) -> Result<()> {
    for name in fs.list(dir)? {
        let path = dir.join(&name);
        if fs.list(&path).is_ok() {
            return Err(Error::InvalidArgument(format!(
                "{} holds the directory {name}, which Augur never makes there: remove it by hand",
                dir.display()
            )));
        }
        fs.remove(&path)?;
    }
    fs.sync_dir(dir)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::MemFs;

    fn put(fs: &MemFs, path: &Path) {
        let mut w = fs.create(path).unwrap();
        w.append(b"x").unwrap();
        w.sync().unwrap();
    }

    #[test]
    fn commits_whole_or_leaves_nothing() {
        let fs = MemFs::new();
        let target = Path::new("/out/cp");
        {
            let staged = StagedDir::create(&fs, target, false).unwrap();
            put(&fs, &staged.path().join("a"));
            assert_eq!(staged.path(), Path::new("/out/cp.augur-tmp"));
        }
        assert!(
            !fs.exists(Path::new("/out/cp.augur-tmp")),
            "dropped: removed"
        );
        assert!(!fs.exists(target));
        let staged = StagedDir::create(&fs, target, false).unwrap();
        put(&fs, &staged.path().join("a"));
        staged.commit().unwrap();
        assert_eq!(fs.list(target).unwrap(), vec!["a"]);
        assert!(matches!(
            StagedDir::create(&fs, target, false),
            Err(Error::InvalidArgument(_))
        ));
        assert!(matches!(
            StagedDir::create(&fs, target, true),
            Err(Error::InvalidArgument(_))
        ));
    }

    #[test]
    fn leftovers_are_cleared_and_empty_targets_allowed_when_asked() {
        let fs = MemFs::new();
        fs.create_dir_all(Path::new("/r.augur-tmp")).unwrap();
        put(&fs, Path::new("/r.augur-tmp/stale"));
        fs.create_dir_all(Path::new("/r")).unwrap();
        let staged = StagedDir::create(&fs, Path::new("/r"), true).unwrap();
        assert!(fs.list(staged.path()).unwrap().is_empty());
        put(&fs, &staged.path().join("new"));
        staged.commit().unwrap();
        assert_eq!(fs.list(Path::new("/r")).unwrap(), vec!["new"]);
        fs.create_dir_all(Path::new("/s.augur-tmp/sub")).unwrap();
        assert!(StagedDir::create(&fs, Path::new("/s"), false).is_err());
        // A bare name is staged beside it, in the current directory.
        assert_eq!(
            staging_path(Path::new("cp")).unwrap(),
            Path::new("./cp.augur-tmp")
        );
    }
}
