//! Shared by the fuzz targets: put the input into a file of an in-memory file system, and
//! the contract every decoder of a file keeps — it returns `Ok`, or a `Corruption` that
//! names that very file (or `UnsupportedVersion` for it); any other error or a panic is a
//! finding.

use augur::fs::{FileSystem, MemFs};
use augur::Error;
use std::path::Path;

/// A memory file system holding `data` at `path` (synced).
pub fn fs_with(path: &Path, data: &[u8]) -> MemFs {
    let fs = MemFs::new();
    if let Some(dir) = path.parent() {
        fs.create_dir_all(dir).expect("mkdir");
    }
    let mut f = fs.create(path).expect("create");
    f.append(data).expect("append");
    f.sync().expect("sync");
    fs
}

/// Panics unless `e` is a clean error about `path`.
pub fn check_clean_error(e: &Error, path: &Path) {
    match e {
        Error::Corruption { file, .. } | Error::UnsupportedVersion { file, .. } => {
            assert_eq!(file, path, "error names another file: {e}")
        }
        other => panic!("not a clean corruption error: {other}"),
    }
}
