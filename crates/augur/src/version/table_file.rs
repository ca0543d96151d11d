//! [`TableFile`]: a live SSTable of a version — its manifest metadata and its open reader,
//! deleted from disk when the last version holding it is dropped after a compaction marked
//! it obsolete.

use super::edit::FileMeta;
use crate::error::{Error, Result};
use crate::fs::FileSystem;
use crate::sst::Table;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A live SSTable: its manifest metadata and its open reader. When the last reference is
/// dropped after compaction marked it obsolete, the file is deleted once its open table goes
/// too.
pub struct TableFile {
    /// Manifest metadata.
    pub meta: FileMeta,
    /// The open table.
    pub table: Arc<Table>,
    obsolete: AtomicBool,
    fs: Arc<dyn FileSystem>,
}

impl TableFile {
    /// Wraps an open table.
    pub fn new(meta: FileMeta, table: Arc<Table>, fs: Arc<dyn FileSystem>) -> Self {
        TableFile {
            meta,
            table,
            obsolete: AtomicBool::new(false),
            fs,
        }
    }

    /// Marks the file for deletion once no version or iterator references it.
    pub fn mark_obsolete(&self) {
        self.obsolete.store(true, Ordering::Release);
    }

    /// True once a version edit removed the file for good (it is deleted when the last
    /// reader lets go).
    pub fn is_obsolete(&self) -> bool {
        self.obsolete.load(Ordering::Acquire)
    }

    /// Smallest user key.
    pub fn smallest_key(&self) -> &[u8] {
        &self.meta.smallest.user_key
    }

    /// Largest user key.
    pub fn largest_key(&self) -> &[u8] {
        &self.meta.largest.user_key
    }

    /// True when `[lo, hi]` (user keys, inclusive; `None` = unbounded) overlaps the file.
    pub fn overlaps(&self, lo: Option<&[u8]>, hi: Option<&[u8]>) -> bool {
        lo.is_none_or(|lo| self.largest_key() >= lo)
            && hi.is_none_or(|hi| self.smallest_key() <= hi)
    }
}

/// Fails unless the open `table` is the file `meta` records: its size, entry count and
/// first and last internal keys must all match.
///
/// Every table file passes its own checksums, so a file replaced by another valid table (a
/// copy gone wrong, a backup restored over the wrong name) is only caught here: without the
/// check it would be read as the recorded one, and its missing keys would vanish without an
/// error (issue 40, finding 2).
///
/// # Errors
/// `Corruption` naming the table file and what differs.
pub fn check_table_matches(meta: &FileMeta, table: &Table) -> Result<()> {
    let mismatch = if table.file_size() != meta.file_size {
        Some(format!(
            "holds {} bytes, but the manifest records {}",
            table.file_size(),
            meta.file_size
        ))
    } else if table.entries() != meta.entries {
        Some(format!(
            "holds {} entries, but the manifest records {}",
            table.entries(),
            meta.entries
        ))
    } else if table.smallest() != &meta.smallest || table.largest() != &meta.largest {
        let show = |k: &crate::key::InternalKey| {
            format!("\"{}\"@{}", k.user_key.escape_ascii(), k.seqno)
        };
        Some(format!(
            "holds the keys {}..={}, but the manifest records {}..={}",
            show(table.smallest()),
            show(table.largest()),
            show(&meta.smallest),
            show(&meta.largest)
        ))
    } else {
        None
    };
    match mismatch {
        None => Ok(()),
        Some(what) => Err(Error::corruption(
            table.path(),
            0,
            format!("not the table the manifest records as file {}: it {what}", meta.file_id),
        )),
    }
}

impl Drop for TableFile {
    /// An obsolete file is deleted when its open table goes: scans hold the table itself
    /// (not this handle), and under `max_open_files` a table may have to reopen its file.
    fn drop(&mut self) {
        if self.obsolete.load(Ordering::Acquire) {
            self.table.remove_file_when_dropped(self.fs.clone());
        }
    }
}

impl std::fmt::Debug for TableFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableFile")
            .field("meta", &self.meta)
            .finish()
    }
}
