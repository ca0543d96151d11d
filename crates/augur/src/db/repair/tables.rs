//! Repair's table scan: every table is opened and verified in full; one that fails anywhere
//! is moved to `lost/` whole, with the first failure as the reason. A table that passes is
//! read once more, entry by entry, for what its manifest record needs (the value-log span
//! of its pointers, its expiring values' summary) and for what repair needs (its largest
//! seqno, the segments its pointers name).
//!
//! Readable blocks of a damaged table are not salvaged into a new table (LevelDB does):
//! a damaged block may have held the newest version of a key, or its tombstone, and
//! salvaging the rest would then bring back an older value or a deleted key silently. The
//! whole table in `lost/` can still be read with `augur dump sst --keys` up to the damage.

use super::Lost;
use crate::error::Result;
use crate::expiry::ExpirySummary;
use crate::filename;
use crate::fs::{FileSystem, ReadMode};
use crate::key::ValueKind;
use crate::sst::{Table, TableCursor};
use crate::version::FileMeta;
use crate::vlog::{SegmentSpan, ValuePointer};
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

/// A table that passed verification.
pub(super) struct ScannedTable {
    /// Its manifest record (with its current file number).
    pub meta: FileMeta,
    /// The largest seqno among its entries.
    pub max_seqno: u64,
    /// The segments its value pointers point into.
    pub pointed_segments: BTreeSet<u64>,
    /// Every value pointer's `(segment, offset)`: the value-log entries it keeps live.
    pub pointers: Vec<(u64, u64)>,
    /// The open table (read again by the ordering).
    pub table: Arc<Table>,
}

/// Opens and verifies every table of `ids` in `dir`; moves each one that fails to `lost/`.
///
/// # Errors
/// `Io` when a failed table cannot be moved.
pub(super) fn scan_tables(
    fs: &dyn FileSystem,
    dir: &Path,
    ids: &[u64],
    lost: &mut Lost<'_>,
) -> Result<Vec<ScannedTable>> {
    let mut kept = Vec::with_capacity(ids.len());
    for &id in ids {
        let path = filename::table_path(dir, id);
        match scan_table(fs, &path, id) {
            Ok(t) => kept.push(t),
            Err(e) => {
                lost.tables_failed += 1;
                lost.move_file(&path, format!("table failed verification: {e}"))?;
            }
        }
    }
    Ok(kept)
}

/// Opens, verifies and reads table `id` at `path`.
fn scan_table(fs: &dyn FileSystem, path: &Path, id: u64) -> Result<ScannedTable> {
    let table = Arc::new(Table::open_with(fs, path, id, ReadMode::Pread, false)?);
    table.verify()?;
    let mut max_seqno = 0;
    let mut span = SegmentSpan::EMPTY;
    let mut pointed_segments = BTreeSet::new();
    let mut pointers = Vec::new();
    let mut expiry: Option<ExpirySummary> = None;
    let mut cursor = TableCursor::new(table.clone(), true);
    cursor.seek_to_first()?;
    while cursor.valid() {
        max_seqno = max_seqno.max(cursor.trailer() >> 8);
        match cursor.kind() {
            ValueKind::Pointer => {
                if let Some(p) = ValuePointer::decode(cursor.value()) {
                    span.include(p.segment);
                    pointed_segments.insert(p.segment);
                    pointers.push((p.segment, p.offset));
                }
            }
            ValueKind::ExpiringValue => {
                if let Some((at, _)) = crate::expiry::split(cursor.value()) {
                    ExpirySummary::include(&mut expiry, at);
                }
            }
            ValueKind::Value | ValueKind::Delete => {}
        }
        cursor.advance()?;
    }
    let meta = FileMeta {
        file_id: id,
        file_size: table.file_size(),
        entries: table.entries(),
        smallest: table.smallest().clone(),
        largest: table.largest().clone(),
        value_segments: Some(span),
        expiry,
    };
    Ok(ScannedTable {
        meta,
        max_seqno,
        pointed_segments,
        pointers,
        table,
    })
}

/// The indexes of the tables whose user-key range overlaps another table's (only those can
/// share a key), in order.
pub(super) fn overlapping(tables: &[ScannedTable]) -> Vec<usize> {
    (0..tables.len())
        .filter(|&i| {
            let a = &tables[i].meta;
            tables.iter().enumerate().any(|(j, b)| {
                j != i
                    && a.smallest.user_key <= b.meta.largest.user_key
                    && b.meta.smallest.user_key <= a.largest.user_key
            })
        })
        .collect()
}
