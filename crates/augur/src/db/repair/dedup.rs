//! Tables holding the same writes: merged into one.
//!
//! A crash can leave a compaction's inputs beside its outputs (the inputs are removed only
//! after the edit that drops them, the outputs are written before the edit that adds them),
//! and with the manifest gone repair cannot tell which were live. Kept side by side, the
//! same entry (user key and seqno) would live in two tables: reads are right either way,
//! but a compaction merging them drops one copy as shadowed and counts its value-log entry
//! as garbage while the other copy still points at it, so a segment could come to look all
//! garbage and be deleted with a live value in it.
//!
//! So tables sharing any entry are grouped (transitively), and each group is rewritten as
//! one table holding every distinct entry of the group once (every version kept: nothing is
//! dropped, no garbage counted); the originals go to `lost/`. A group is held in memory
//! while it is rewritten.

use super::tables::{scan_tables, ScannedTable};
use super::{table_name, Lost};
use crate::db::flush::write_table_from_memtable;
use crate::error::Result;
use crate::filename;
use crate::fs::FileSystem;
use crate::memtable::Memtable;
use crate::options::Options;
use crate::sst::TableCursor;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::path::Path;

/// Replaces each group of `tables` sharing entries by one table (ids from `counter`),
/// moving the originals to `lost/`.
///
/// # Errors
/// `Corruption`/`Io` when a table fails while it is read again; `Io` on write failures.
pub(super) fn merge_duplicates(
    fs: &dyn FileSystem,
    dir: &Path,
    tables: Vec<ScannedTable>,
    options: &Options,
    counter: &mut u64,
    lost: &mut Lost<'_>,
) -> Result<Vec<ScannedTable>> {
    let groups = duplicate_groups(&tables)?;
    if groups.is_empty() {
        return Ok(tables);
    }
    let mut slots: Vec<Option<ScannedTable>> = tables.into_iter().map(Some).collect();
    let mut out = Vec::new();
    for group in groups {
        let members: Vec<ScannedTable> = group.iter().filter_map(|&i| slots[i].take()).collect();
        let mem = Memtable::with_budget(options.memtable_size_bytes);
        for t in &members {
            let mut cursor = TableCursor::new(t.table.clone(), true);
            cursor.seek_to_first()?;
            while cursor.valid() {
                // A second entry of the same key and seqno is ignored by the memtable.
                mem.insert(
                    cursor.key(),
                    cursor.trailer() >> 8,
                    cursor.kind(),
                    cursor.value(),
                );
                cursor.advance()?;
            }
        }
        let id = *counter;
        *counter += 1;
        // Oldest snapshot 0: no version is shadowed for every reader, so none is dropped.
        if write_table_from_memtable(fs, dir, id, &mem, options, 0)?.is_none() {
            continue;
        }
        drop(mem);
        out.extend(scan_tables(fs, dir, &[id], lost)?);
        let names: Vec<String> = members.iter().map(|t| table_name(t.meta.file_id)).collect();
        for t in members {
            let name = table_name(t.meta.file_id);
            let others: Vec<&String> = names.iter().filter(|n| **n != name).collect();
            let path = filename::table_path(dir, t.meta.file_id);
            drop(t);
            lost.move_file(
                &path,
                format!(
                    "it shares writes with {others:?} (a compaction's leftover): merged \
                     into {}",
                    table_name(id)
                ),
            )?;
        }
    }
    out.extend(slots.into_iter().flatten());
    Ok(out)
}

/// An entry's user key and seqno (ordered as internal keys: seqno descending) and the
/// index of the cursor it came from.
type InternalAt = (Vec<u8>, Reverse<u64>, usize);

/// The groups (each of at least two table indexes) of tables sharing an entry.
fn duplicate_groups(tables: &[ScannedTable]) -> Result<Vec<Vec<usize>>> {
    let overlapping = super::tables::overlapping(tables);
    let mut parent: Vec<usize> = (0..tables.len()).collect();
    fn root(parent: &mut [usize], mut i: usize) -> usize {
        while parent[i] != i {
            parent[i] = parent[parent[i]];
            i = parent[i];
        }
        i
    }
    let mut cursors = Vec::with_capacity(overlapping.len());
    // Internal-key order: user key ascending, seqno descending.
    let mut heap: BinaryHeap<Reverse<InternalAt>> = BinaryHeap::new();
    for (c, &i) in overlapping.iter().enumerate() {
        let mut cursor = TableCursor::new(tables[i].table.clone(), true);
        cursor.seek_to_first()?;
        if cursor.valid() {
            heap.push(Reverse((
                cursor.key().to_vec(),
                Reverse(cursor.trailer() >> 8),
                c,
            )));
        }
        cursors.push(cursor);
    }
    let mut any = false;
    while let Some(Reverse((key, seqno, c))) = heap.pop() {
        let mut same = vec![c];
        while let Some(Reverse((k, s, _))) = heap.peek() {
            if *k != key || *s != seqno {
                break;
            }
            if let Some(Reverse((_, _, other))) = heap.pop() {
                same.push(other);
            }
        }
        for &c in &same[1..] {
            let (a, b) = (
                root(&mut parent, overlapping[same[0]]),
                root(&mut parent, overlapping[c]),
            );
            if a != b {
                parent[b] = a;
                any = true;
            }
        }
        for c in same {
            let cursor = &mut cursors[c];
            cursor.advance()?;
            if cursor.valid() {
                heap.push(Reverse((
                    cursor.key().to_vec(),
                    Reverse(cursor.trailer() >> 8),
                    c,
                )));
            }
        }
    }
    if !any {
        return Ok(Vec::new());
    }
    let mut groups: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for i in 0..tables.len() {
        let r = root(&mut parent, i);
        groups.entry(r).or_default().push(i);
    }
    Ok(groups.into_values().filter(|g| g.len() > 1).collect())
}
