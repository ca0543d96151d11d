//! Files no version references, at open: the check that none of them holds writes nothing
//! else has (which would mean the manifest lost edits), and their removal.
//!
//! A crash leaves unreferenced tables behind (a flush or compaction whose manifest edit
//! was torn); their writes are still in the WALs the open replays, or in the compaction's
//! inputs, so every seqno they hold is at most the recovered last seqno. A manifest that
//! lost synced edits (truncated or damaged at a record boundary) forgets tables whose writes
//! exist nowhere else, and they hold seqnos above it: the open refuses, and deletes nothing.

use crate::error::{Error, Result};
use crate::filename::{self, FileKind};
use crate::fs::{FileSystem, ReadMode};
use crate::key::SeqNo;
use crate::sst::{Table, TableCursor};
use crate::version::Version;
use crate::vlog::ValueLog;
use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;

/// The ids of the tables `version` references.
fn live_tables(version: &Version) -> HashSet<u64> {
    version
        .levels
        .iter()
        .flatten()
        .map(|f| f.meta.file_id)
        .collect()
}

/// Fails when a table in `dir` that `version` does not reference holds a write with a seqno
/// above `last_seqno` (the largest the manifest and the replayed WALs know). A table that
/// cannot be read is a torn output of a crash and passes. With `accept_loss` (the open
/// already dropped lost WAL writes, whose seqnos such a table may hold) the table is
/// listed in `losses` instead, and removed with the other obsolete files.
///
/// # Errors
/// `Corruption` naming `manifest`; `Io` when the directory cannot be listed.
pub(super) fn check_unreferenced_tables(
    fs: &dyn FileSystem,
    dir: &Path,
    version: &Version,
    manifest: &Path,
    last_seqno: SeqNo,
    read_mode: ReadMode,
    accept_loss: Option<&mut Vec<String>>,
) -> Result<()> {
    let mut accept_loss = accept_loss;
    let live = live_tables(version);
    for name in fs.list(dir)? {
        let Some(FileKind::Table(id)) = filename::parse(&name) else {
            continue;
        };
        if live.contains(&id) {
            continue;
        }
        let path = dir.join(&name);
        let Ok(table) = Table::open_with(fs, &path, id, read_mode, false) else {
            continue;
        };
        let Some(seqno) = first_seqno_above(table, last_seqno) else {
            continue;
        };
        if let Some(losses) = accept_loss.as_deref_mut() {
            let what = format!(
                "{}: not in the manifest, holds a write with seqno {seqno}, newer than the \
                 {last_seqno} recovered; removed",
                path.display()
            );
            log::warn!("accept_wal_loss: {what}");
            losses.push(what);
            continue;
        }
        {
            return Err(Error::corruption(
                manifest,
                0,
                format!(
                    "the manifest does not name table {}, which holds a write with seqno \
                     {seqno}, newer than any the manifest and the WALs record ({last_seqno}): \
                     the manifest lost edits. Refusing to open (and to delete the table)",
                    path.display()
                ),
            ));
        }
    }
    Ok(())
}

/// The first seqno above `last_seqno` in `table`, if any (a read error ends the walk).
fn first_seqno_above(table: Table, last_seqno: SeqNo) -> Option<SeqNo> {
    let mut cursor = TableCursor::new(Arc::new(table), true);
    cursor.seek_to_first().ok()?;
    while cursor.valid() {
        let seqno = cursor.trailer() >> 8;
        if seqno > last_seqno {
            return Some(seqno);
        }
        cursor.advance().ok()?;
    }
    None
}

/// Deletes WALs older than `wal_number`, tables no version references, old manifests, a
/// stray CURRENT.tmp and value-log segments the manifest records as deleted (by GC, or by
/// the open as empty). REQUIRES: [`check_unreferenced_tables`] passed.
///
/// # Errors
/// `Io` on file-system failures.
pub(super) fn remove_obsolete_files(
    fs: &dyn FileSystem,
    dir: &Path,
    version: &Version,
    wal_number: u64,
    vlog: &ValueLog,
) -> Result<()> {
    let live = live_tables(version);
    let current = String::from_utf8_lossy(&fs.read_all(&filename::current_path(dir))?)
        .trim_end()
        .to_string();
    for name in fs.list(dir)? {
        let obsolete = match filename::parse(&name) {
            Some(FileKind::Wal(n)) => n < wal_number,
            Some(FileKind::Table(n)) => !live.contains(&n),
            Some(FileKind::Manifest(_)) => name != current,
            Some(FileKind::Temp) => true,
            Some(FileKind::ValueLog(id)) => {
                if version.vlog_deleted.contains(id) {
                    vlog.delete_segment(id)?;
                }
                false
            }
            _ => false,
        };
        if obsolete {
            fs.remove(&dir.join(&name))?;
        }
    }
    fs.sync_dir(dir)
}
