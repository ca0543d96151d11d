//! A replica's full sync on disk: the primary's files are written into a staging directory
//! next to the database (`<db>.repl-sync`), and only once every file arrived whole (each
//! checked against its CRC32C and synced) is the database directory swapped for it:
//! `<db>` → `<db>.repl-old`, `<db>.repl-sync` → `<db>`, the parent synced, the old copy
//! removed. A primary serving a full sync writes its checkpoint to `<db>.repl-ckpt-<id>`.
//!
//! Crash safety ([`recover`], run before the database opens): a crash before the first
//! rename leaves the old database whole (the staging directory is discarded); between the
//! two renames, `<db>` is missing and `<db>.repl-old` is put back (the old, complete data);
//! after the second, `<db>` is the new copy and the leftovers are removed. Never half a copy.

use std::path::{Path, PathBuf};

fn sibling(db: &Path, suffix: &str) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Where a replica stages a full sync.
pub fn staging_path(db: &Path) -> PathBuf {
    sibling(db, ".repl-sync")
}

/// Where the database sits during a swap.
pub fn old_path(db: &Path) -> PathBuf {
    sibling(db, ".repl-old")
}

/// Where a primary checkpoints for the replica with client id `id`.
pub fn checkpoint_path(db: &Path, id: u64) -> PathBuf {
    sibling(db, &format!(".repl-ckpt-{id}"))
}

fn remove(dir: &Path) -> Result<(), String> {
    match std::fs::remove_dir_all(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(format!("removing {}: {e}", dir.display())),
    }
}

/// Empties (or creates) the staging directory for a new full sync.
///
/// # Errors
/// A message naming the directory.
pub fn fresh_staging(db: &Path) -> Result<PathBuf, String> {
    let dir = staging_path(db);
    remove(&dir)?;
    std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    Ok(dir)
}

/// Syncs a directory (its entries are durable).
///
/// # Errors
/// The file system's.
pub fn sync_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}

fn parent(db: &Path) -> PathBuf {
    match db.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Puts the database back together after a crash (see the module doc) and removes a full
/// sync's and a primary's leftovers. Run before the database opens.
///
/// # Errors
/// A message naming what could not be renamed or removed.
pub fn recover(db: &Path) -> Result<(), String> {
    let old = old_path(db);
    if !db.exists() && old.exists() {
        std::fs::rename(&old, db)
            .map_err(|e| format!("restoring {} after a swap: {e}", db.display()))?;
        log::warn!(
            "a full sync's swap was interrupted: {} restored from {}",
            db.display(),
            old.display()
        );
    }
    remove(&old)?;
    if staging_path(db).exists() {
        log::info!(
            "discarding an unfinished full sync in {}",
            staging_path(db).display()
        );
    }
    remove(&staging_path(db))?;
    let prefix = format!(
        "{}.repl-ckpt-",
        db.file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default()
    );
    if let Ok(entries) = std::fs::read_dir(parent(db)) {
        for entry in entries.flatten() {
            if entry.file_name().to_string_lossy().starts_with(&prefix) {
                remove(&entry.path())?;
            }
        }
    }
    Ok(())
}

/// Swaps the staged copy in for the database (REQUIRES: the database is closed).
///
/// # Errors
/// A message naming the rename or sync that failed.
pub fn swap_in(db: &Path, staged: &Path) -> Result<(), String> {
    let old = old_path(db);
    remove(&old)?;
    if db.exists() {
        std::fs::rename(db, &old).map_err(|e| format!("moving {} aside: {e}", db.display()))?;
    }
    std::fs::rename(staged, db)
        .map_err(|e| format!("moving {} to {}: {e}", staged.display(), db.display()))?;
    sync_dir(&parent(db)).map_err(|e| format!("syncing {}: {e}", parent(db).display()))?;
    remove(&old)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn recover_puts_back_the_old_copy_and_drops_leftovers() {
        let tmp = tempfile::tempdir().unwrap();
        let db = tmp.path().join("db");
        std::fs::create_dir_all(old_path(&db)).unwrap();
        std::fs::write(old_path(&db).join("CURRENT"), "old").unwrap();
        std::fs::create_dir_all(staging_path(&db)).unwrap();
        std::fs::create_dir_all(checkpoint_path(&db, 7)).unwrap();
        recover(&db).unwrap();
        assert_eq!(std::fs::read_to_string(db.join("CURRENT")).unwrap(), "old");
        assert!(!staging_path(&db).exists() && !old_path(&db).exists());
        assert!(!checkpoint_path(&db, 7).exists());
        let staged = fresh_staging(&db).unwrap();
        std::fs::write(staged.join("CURRENT"), "new").unwrap();
        swap_in(&db, &staged).unwrap();
        assert_eq!(std::fs::read_to_string(db.join("CURRENT")).unwrap(), "new");
        assert!(!old_path(&db).exists() && !staged.exists());
    }
}
