//! Names of the files in a database directory.
//!
//! ```text
//! LOCK               exclusive lock of the directory (held while open)
//! CURRENT            name of the live manifest, replaced atomically by rename
//! MANIFEST-000007    version edits (log framing)
//! 000012.wal         write-ahead log of one memtable
//! 000013.sst         SSTable
//! 000002.vlog        value-log segment (its own numbering)
//! ```

use std::path::{Path, PathBuf};

/// What a file in the directory is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// Write-ahead log with its file number.
    Wal(u64),
    /// SSTable with its file number.
    Table(u64),
    /// Manifest with its file number.
    Manifest(u64),
    /// Value-log segment with its id.
    ValueLog(u64),
    /// The CURRENT pointer.
    Current,
    /// The LOCK file.
    Lock,
    /// A temporary file (CURRENT.tmp) left by a crash.
    Temp,
}

/// Path of the write-ahead log `number`.
pub fn wal_path(dir: &Path, number: u64) -> PathBuf {
    dir.join(format!("{number:06}.wal"))
}

/// Path of the SSTable `number`.
pub fn table_path(dir: &Path, number: u64) -> PathBuf {
    dir.join(format!("{number:06}.sst"))
}

/// Path of the manifest `number`.
pub fn manifest_path(dir: &Path, number: u64) -> PathBuf {
    dir.join(manifest_name(number))
}

/// File name of the manifest `number`.
pub fn manifest_name(number: u64) -> String {
    format!("MANIFEST-{number:06}")
}

/// Path of CURRENT.
pub fn current_path(dir: &Path) -> PathBuf {
    dir.join("CURRENT")
}

/// Path of the temporary file CURRENT is written to before the rename.
pub fn current_temp_path(dir: &Path) -> PathBuf {
    dir.join("CURRENT.tmp")
}

/// Path of LOCK.
pub fn lock_path(dir: &Path) -> PathBuf {
    dir.join("LOCK")
}

/// True when `name` is the name of a file Augur keeps in a database directory (a table, WAL,
/// value-log segment, manifest, CURRENT, LOCK or a temporary file of its own).
pub fn is_database_file(name: &str) -> bool {
    parse(name).is_some()
}

/// Classifies a file name; `None` for names Augur does not own.
pub fn parse(name: &str) -> Option<FileKind> {
    match name {
        "CURRENT" => return Some(FileKind::Current),
        "LOCK" => return Some(FileKind::Lock),
        "CURRENT.tmp" => return Some(FileKind::Temp),
        _ => {}
    }
    if let Some(n) = name.strip_prefix("MANIFEST-") {
        return parse_number(n).map(FileKind::Manifest);
    }
    let (stem, ext) = name.rsplit_once('.')?;
    let n = parse_number(stem)?;
    match ext {
        "wal" => Some(FileKind::Wal(n)),
        "sst" => Some(FileKind::Table(n)),
        "vlog" => Some(FileKind::ValueLog(n)),
        _ => None,
    }
}

fn parse_number(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_roundtrip() {
        let d = Path::new("/x");
        for (p, k) in [
            (wal_path(d, 3), FileKind::Wal(3)),
            (table_path(d, 1234567), FileKind::Table(1234567)),
            (manifest_path(d, 9), FileKind::Manifest(9)),
            (current_path(d), FileKind::Current),
            (lock_path(d), FileKind::Lock),
        ] {
            let name = p.file_name().unwrap().to_str().unwrap();
            assert_eq!(parse(name), Some(k));
        }
        assert_eq!(parse("000001.vlog"), Some(FileKind::ValueLog(1)));
        assert_eq!(parse("foo.sst"), None);
        assert_eq!(parse("MANIFEST-"), None);
        assert_eq!(parse("notes.txt"), None);
    }
}
