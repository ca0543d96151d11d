//! The order of the kept tables at level 0.
//!
//! Level 0 is read newest file number first, and a read stops at the first file holding the
//! key. So for every user key held by two kept tables, the table with the newer version
//! (larger seqno) must have the larger file number. Before the manifest was lost that order
//! came from the levels; file numbers alone do not give it (a compaction into L2 writes files
//! numbered above L0 files holding newer writes), and neither does any one seqno per table
//! (a table's largest seqno can belong to a key no other table holds).
//!
//! So the order is computed from the keys: one merged pass over the tables whose key ranges
//! overlap another's finds, for every user key held by several, which holds it newest, and
//! adds "newer than" edges; a topological sort of those edges (ties: larger largest seqno,
//! then larger file number, first) is the order. When the file numbers already descend
//! along it nothing is renamed; otherwise every kept table is renamed to a fresh number in
//! that order (a rename, never a copy or a deletion). A cycle (no valid LSM leaves one; a
//! table copied from another database could) is broken by the largest seqno and reported.

use super::tables::ScannedTable;
use crate::error::Result;
use crate::filename;
use crate::fs::FileSystem;
use crate::sst::TableCursor;
use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap};
use std::path::Path;

/// A kept table with its place: its final file number is `scanned.meta.file_id`.
pub(super) struct Placed {
    /// The table (its metadata carries the final number).
    pub scanned: ScannedTable,
    /// The number it had when repair found it (or wrote it).
    pub original_id: u64,
    /// The number it had before repair renamed it, if it did.
    pub renamed_from: Option<u64>,
}

/// Sorts `tables` newest first (see the module doc).
///
/// # Errors
/// `Corruption`/`Io` when a table fails while it is read again.
pub(super) fn newest_first(
    tables: Vec<ScannedTable>,
    warnings: &mut Vec<String>,
) -> Result<Vec<ScannedTable>> {
    let n = tables.len();
    let edges = newer_than_edges(&tables)?;
    let mut newer_count = vec![0usize; n];
    let mut older: Vec<Vec<usize>> = vec![Vec::new(); n];
    for &(newer, old) in &edges {
        newer_count[old] += 1;
        older[newer].push(old);
    }
    let rank = |i: usize| (tables[i].max_seqno, tables[i].meta.file_id, i);
    let mut ready: BinaryHeap<(u64, u64, usize)> =
        (0..n).filter(|&i| newer_count[i] == 0).map(rank).collect();
    let mut placed = vec![false; n];
    let mut order = Vec::with_capacity(n);
    while order.len() < n {
        let i = match ready.pop() {
            Some((_, _, i)) => i,
            None => {
                // A cycle: take the unplaced table with the largest seqno.
                let Some(i) = (0..n).filter(|&i| !placed[i]).max_by_key(|&i| rank(i)) else {
                    break;
                };
                warnings.push(format!(
                    "table {} holds some keys newer and some older than other tables: no \
                     read order serves every key; it is placed by its largest seqno",
                    tables[i].meta.file_id
                ));
                i
            }
        };
        if placed[i] {
            continue;
        }
        placed[i] = true;
        order.push(i);
        for &o in &older[i] {
            newer_count[o] = newer_count[o].saturating_sub(1);
            if newer_count[o] == 0 && !placed[o] {
                ready.push(rank(o));
            }
        }
    }
    let mut slots: Vec<Option<ScannedTable>> = tables.into_iter().map(Some).collect();
    Ok(order.into_iter().filter_map(|i| slots[i].take()).collect())
}

/// The "newer than" edges `(newer, older)` between tables sharing a user key.
fn newer_than_edges(tables: &[ScannedTable]) -> Result<BTreeSet<(usize, usize)>> {
    // Only tables whose key range overlaps another's can share a key.
    let overlapping = super::tables::overlapping(tables);
    let mut cursors = Vec::with_capacity(overlapping.len());
    let mut heap: BinaryHeap<Reverse<(Vec<u8>, usize)>> = BinaryHeap::new();
    for (c, &i) in overlapping.iter().enumerate() {
        let mut cursor = TableCursor::new(tables[i].table.clone(), true);
        cursor.seek_to_first()?;
        if cursor.valid() {
            heap.push(Reverse((cursor.key().to_vec(), c)));
        }
        cursors.push(cursor);
    }
    let mut edges = BTreeSet::new();
    let mut holders: Vec<(u64, usize)> = Vec::new();
    while let Some(Reverse((key, c))) = heap.pop() {
        holders.clear();
        let mut group = vec![c];
        while let Some(Reverse((k, _))) = heap.peek() {
            if *k != key {
                break;
            }
            if let Some(Reverse((_, other))) = heap.pop() {
                group.push(other);
            }
        }
        for &c in &group {
            let cursor = &mut cursors[c];
            // A table's entries of one key are newest first.
            holders.push((cursor.trailer() >> 8, overlapping[c]));
            while cursor.valid() && cursor.key() == key.as_slice() {
                cursor.advance()?;
            }
            if cursor.valid() {
                heap.push(Reverse((cursor.key().to_vec(), c)));
            }
        }
        if holders.len() < 2 {
            continue;
        }
        holders.sort_unstable_by(|a, b| b.cmp(a));
        // Every holder of one seqno tier is newer than every holder of the next lower one.
        let mut tier_start = 0;
        while tier_start < holders.len() {
            let seqno = holders[tier_start].0;
            let tier_end = holders[tier_start..]
                .iter()
                .position(|h| h.0 != seqno)
                .map_or(holders.len(), |p| tier_start + p);
            let next_seqno = holders.get(tier_end).map(|h| h.0);
            let next_end = match next_seqno {
                Some(s) => holders[tier_end..]
                    .iter()
                    .position(|h| h.0 != s)
                    .map_or(holders.len(), |p| tier_end + p),
                None => tier_end,
            };
            for &(_, newer) in &holders[tier_start..tier_end] {
                for &(_, old) in &holders[tier_end..next_end] {
                    if newer != old {
                        edges.insert((newer, old));
                    }
                }
            }
            tier_start = tier_end;
        }
    }
    Ok(edges)
}

/// Gives the tables of `ordered` (newest first) file numbers that descend along the order:
/// their own when they already do, otherwise fresh ones from `counter` (renaming the files).
///
/// # Errors
/// `Io` when a rename fails (the tables renamed before it keep their new names; a later
/// repair orders them again).
pub(super) fn renumber(
    fs: &dyn FileSystem,
    dir: &Path,
    ordered: Vec<ScannedTable>,
    counter: &mut u64,
) -> Result<Vec<Placed>> {
    let descending = ordered
        .windows(2)
        .all(|w| w[0].meta.file_id > w[1].meta.file_id);
    if descending {
        return Ok(ordered
            .into_iter()
            .map(|scanned| Placed {
                original_id: scanned.meta.file_id,
                scanned,
                renamed_from: None,
            })
            .collect());
    }
    let n = ordered.len() as u64;
    let first = *counter;
    *counter += n;
    let mut placed = Vec::with_capacity(ordered.len());
    for (i, mut scanned) in ordered.into_iter().enumerate() {
        let old = scanned.meta.file_id;
        // The newest table gets the largest number.
        let new = first + (n - 1 - i as u64);
        fs.rename(
            &filename::table_path(dir, old),
            &filename::table_path(dir, new),
        )?;
        log::info!("repair: renumbered table {old} as {new} (level 0 read order)");
        scanned.meta.file_id = new;
        placed.push(Placed {
            scanned,
            original_id: old,
            renamed_from: Some(old),
        });
    }
    fs.sync_dir(dir)?;
    Ok(placed)
}
