//! The compaction executor: merges the input files of a [`Compaction`] into new files of the
//! output level, or moves a file down when nothing overlaps it.
//!
//! Dropping rules (LevelDB, plus WiscKey garbage accounting):
//! - a version of a key is dropped when a newer version of the same key, itself visible to
//!   the oldest live snapshot (`seqno <= oldest_snapshot`), exists: nobody can read it;
//! - a tombstone is dropped when it is visible to the oldest snapshot and no deeper level can
//!   hold the key (nothing left to shadow);
//! - every dropped value pointer adds its entry's bytes to the garbage of its value-log segment.
//!
//! Outputs are cut at the target file size, but never between two versions of one user key,
//! so a level >= 1 holds all versions of a key in a single file.
//!
//! No compaction may raise the live table count past the limit the kernel's mapping (or
//! open-file) limit leaves (`table_limit.rs`): the one that would is refused with an
//! `InvalidArgument` naming the options to change, before the offending output is written,
//! and the outputs it wrote are removed.
//!
//! FLSM (`version.style`), in addition (see `guards.rs` and `flsm.rs`):
//! - outputs are also cut at every guard of the output level, so each lies in one slot; a
//!   slot holding more than a target file gets several files, cut at the target size;
//! - each distinct key of the merge that is a guard candidate (its hash, against the guard
//!   bits of every level: `top_level_bits` and `bit_decrement` floored at one target file of
//!   the inputs' measured bytes per entry, `GuardBits`) is committed as a guard at every
//!   level from its candidate level down to the last, except at levels above a file outside
//!   the compaction that straddles it (those wait for a later compaction that sees the key
//!   again — PebblesDB's uncommitted guards, kept implicit);
//! - a tombstone is kept while any file outside the compaction at the output level or below
//!   may hold the key (sibling fragments of the output guard included);
//! - when entries were dropped, guards whose last-level slot no longer intersects any file
//!   are removed from every level (empty guards).

use super::guards::{slot_of, slot_range, GuardBits, ASSUMED_ENTRY_BYTES};
use super::table_limit::TableLimit;
use super::{Compaction, CompactionStyle};
use crate::error::Result;
use crate::filename;
use crate::fs::FileSystem;
use crate::iter::merge::MergeCursor;
use crate::iter::source::Source;
use crate::key::{same_user_key, unpack_trailer, SeqNo, ValueKind};
use crate::options::Options;
use crate::sst::{Builder, BuilderOptions, ModelTime, TableCursor};
use crate::version::{FileMeta, Version, VersionEdit};
use crate::vlog::ValuePointer;
use std::collections::{BTreeMap, HashSet};
use std::path::Path;

/// Bytes of a value-log entry's header (crc, key length, value length).
const VLOG_ENTRY_HEADER_BYTES: u64 = 12;

/// What the executor needs from the database.
pub(crate) struct CompactionContext<'a> {
    pub fs: &'a dyn FileSystem,
    pub dir: &'a Path,
    pub opts: &'a Options,
    pub builder: BuilderOptions,
    /// Oldest seqno any reader may still read at.
    pub oldest_snapshot: SeqNo,
    /// Allocates file numbers.
    pub new_file_number: &'a dyn Fn() -> u64,
}

/// The result: the edit to apply and byte counts for statistics.
pub(crate) struct CompactionOutcome {
    pub edit: VersionEdit,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub entries_dropped: u64,
    /// What training the outputs' models cost (at-build learning).
    pub model_time: ModelTime,
    /// True when the outputs were appended to the next level without rewriting any of its
    /// files (FLSM fragments); false for merges that rewrite (leveled, the last level, in
    /// place).
    pub appended: bool,
}

/// True when no file outside the compaction at `output_level` or deeper may contain
/// `user_key`. (Leveled: every output-level file that overlaps is an input.)
fn is_base_level_for_key(
    version: &Version,
    inputs: &HashSet<u64>,
    output_level: usize,
    user_key: &[u8],
) -> bool {
    // Leveled: every output-level file that overlaps is an input, so the search starts one
    // level deeper (as before FLSM); FLSM: sibling fragments at the output level count.
    let first = if version.style == CompactionStyle::Flsm {
        output_level
    } else {
        output_level + 1
    };
    version.levels.iter().skip(first).all(|files| {
        !files.iter().any(|f| {
            f.smallest_key() <= user_key
                && user_key <= f.largest_key()
                && !inputs.contains(&f.meta.file_id)
        })
    })
}

/// FLSM: true when a file of `level` outside the compaction straddles `key` (starts below
/// it and reaches it), so `key` cannot become a guard there yet.
fn straddled(version: &Version, inputs: &HashSet<u64>, level: usize, key: &[u8]) -> bool {
    let files = &version.levels[level];
    let guards = &version.guards[level];
    let (start, _) = slot_range(guards, slot_of(guards, key));
    let lo = start.map_or(0, |s| files.partition_point(|f| f.smallest_key() < s));
    let hi = files.partition_point(|f| f.smallest_key() < key);
    files[lo..hi.max(lo)]
        .iter()
        .any(|f| f.largest_key() >= key && !inputs.contains(&f.meta.file_id))
}

/// FLSM: the guards `key` is committed as by this compaction, as (level, key) pairs.
fn new_guards(
    version: &Version,
    bits: &GuardBits,
    inputs: &HashSet<u64>,
    key: &[u8],
) -> Vec<(usize, Vec<u8>)> {
    let last = version.levels.len() - 1;
    let Some(first) = bits.candidate_level(key).filter(|&l| l <= last) else {
        return Vec::new();
    };
    let from = (first..=last)
        .rev()
        .find(|&l| straddled(version, inputs, l, key))
        .map_or(first, |l| l + 1);
    (from..=last)
        .filter(|&l| {
            version.guards[l]
                .binary_search_by(|g| g.as_slice().cmp(key))
                .is_err()
        })
        .map(|l| (l, key.to_vec()))
        .collect()
}

/// FLSM: the guards (of any level) whose last-level slot intersects no file once the edit
/// is applied, among the last level's guards in `[lo, hi]`.
fn empty_guards(
    version: &Version,
    inputs: &HashSet<u64>,
    outputs: &[FileMeta],
    added: &[(usize, Vec<u8>)],
    lo: &[u8],
    hi: &[u8],
) -> Vec<Vec<u8>> {
    let last = version.levels.len() - 1;
    let mut spans: Vec<(&[u8], &[u8])> = version
        .levels
        .iter()
        .skip(1)
        .flatten()
        .filter(|f| !inputs.contains(&f.meta.file_id))
        .map(|f| (f.smallest_key(), f.largest_key()))
        .chain(
            outputs
                .iter()
                .map(|m| (&m.smallest.user_key[..], &m.largest.user_key[..])),
        )
        .collect();
    spans.sort();
    // The union of the spans, as disjoint sorted intervals.
    let mut union: Vec<(&[u8], &[u8])> = Vec::new();
    for (a, b) in spans {
        match union.last_mut() {
            Some((_, e)) if a <= *e => *e = (*e).max(b),
            _ => union.push((a, b)),
        }
    }
    let mut guards: Vec<&[u8]> = version.guards[last].iter().map(Vec::as_slice).collect();
    guards.extend(
        added
            .iter()
            .filter(|(l, _)| *l == last)
            .map(|(_, k)| k.as_slice()),
    );
    guards.sort();
    guards.dedup();
    let mut out = Vec::new();
    for (i, g) in guards.iter().enumerate() {
        if *g < lo || *g > hi {
            continue;
        }
        let next = guards.get(i + 1).copied();
        // The first interval ending at or after g; it intersects [g, next) if it starts
        // before next.
        let j = union.partition_point(|(_, e)| *e < *g);
        let occupied = union
            .get(j)
            .is_some_and(|(a, _)| next.is_none_or(|n| *a < n));
        if !occupied {
            out.push(g.to_vec());
        }
    }
    out
}

/// Runs `c` against `version`; the caller applies the returned edit.
pub(crate) fn execute(
    c: &Compaction,
    version: &Version,
    ctx: &CompactionContext<'_>,
) -> Result<CompactionOutcome> {
    let mut edit = VersionEdit::default();
    for f in &c.inputs {
        edit.deleted.push((c.level, f.meta.file_id));
    }
    for f in &c.next_inputs {
        edit.deleted.push((c.output_level, f.meta.file_id));
    }
    if c.is_trivial_move() {
        let f = &c.inputs[0];
        edit.added.push((c.output_level, f.meta.clone()));
        return Ok(CompactionOutcome {
            edit,
            bytes_read: 0,
            bytes_written: 0,
            entries_dropped: 0,
            model_time: ModelTime::default(),
            appended: false,
        });
    }

    let flsm = version.style == CompactionStyle::Flsm;
    let input_ids: HashSet<u64> = c
        .inputs
        .iter()
        .chain(&c.next_inputs)
        .map(|f| f.meta.file_id)
        .collect();
    // FLSM: the guard bits of every level, floored at one target file of the inputs' bytes
    // per entry (`guards.rs`).
    let guard_bits = flsm.then(|| {
        let (bytes, entries) =
            c.inputs
                .iter()
                .chain(&c.next_inputs)
                .fold((0u64, 0u64), |(b, e), f| {
                    (
                        b.saturating_add(f.meta.file_size),
                        e.saturating_add(f.meta.entries),
                    )
                });
        let bytes_per_entry = bytes.checked_div(entries).unwrap_or(ASSUMED_ENTRY_BYTES);
        GuardBits::new(
            &ctx.opts.flsm,
            ctx.opts.target_file_size_bytes,
            bytes_per_entry,
            version.levels.len() - 1,
        )
    });
    // The live-table limit, read once the compaction is about to write more files than it
    // removes.
    let live_before: u64 = version.levels.iter().map(|l| l.len() as u64).sum();
    let removed = input_ids.len() as u64;
    let mut table_limit: Option<TableLimit> = None;
    // FLSM: the output level's guards (committed ones; new ones are cut at as they come)
    // and the upper end of the current output's slot.
    let out_guards: &[Vec<u8>] = if flsm {
        &version.guards[c.output_level]
    } else {
        &[]
    };
    let mut slot_end: Option<&[u8]> = None;
    let mut guards_added: Vec<(usize, Vec<u8>)> = Vec::new();
    let mut sources: Vec<Source> = Vec::new();
    let mut bytes_read = 0;
    for f in c.inputs.iter().chain(&c.next_inputs) {
        bytes_read += f.meta.file_size;
        sources.push(Source::Table(TableCursor::new(f.table.clone(), true)));
    }
    let mut merged = MergeCursor::new(sources, true);
    merged.seek_to_first()?;

    let mut garbage: BTreeMap<u64, u64> = BTreeMap::new();
    let mut outputs: Vec<FileMeta> = Vec::new();
    let mut builder: Option<(u64, Builder)> = None;
    let mut current_key: Vec<u8> = Vec::new();
    let mut has_key = false;
    // Seqno of the previous (newer) entry of the current key; MAX when it is the first.
    let mut last_seqno_for_key = SeqNo::MAX;
    let mut entries_dropped = 0;
    let mut model_time = ModelTime::default();

    while merged.valid() {
        let user_key = merged.key();
        let Some((seqno, kind)) = unpack_trailer(merged.trailer()) else {
            // Every source validated its trailers while decoding them.
            merged.advance()?;
            continue;
        };
        let new_key = !has_key || !same_user_key(&current_key, user_key);
        if new_key {
            // A key boundary: the only place an output may be cut.
            let mut guard_here = false;
            if let Some(bits) = &guard_bits {
                let added = new_guards(version, bits, &input_ids, user_key);
                guard_here = added.iter().any(|(l, _)| *l == c.output_level)
                    || slot_end.is_some_and(|end| user_key >= end);
                guards_added.extend(added);
            }
            if let Some((_, b)) = &builder {
                if guard_here || b.estimated_size_bytes() >= ctx.opts.target_file_size_bytes {
                    if let Some((id, b)) = builder.take() {
                        outputs.push(finish(id, b, &mut model_time)?);
                    }
                }
            }
            current_key.clear();
            current_key.extend_from_slice(user_key);
            has_key = true;
            last_seqno_for_key = SeqNo::MAX;
        }
        let drop = if last_seqno_for_key <= ctx.oldest_snapshot {
            true // shadowed by a newer version every reader sees
        } else {
            kind == ValueKind::Delete
                && seqno <= ctx.oldest_snapshot
                && is_base_level_for_key(version, &input_ids, c.output_level, user_key)
        };
        last_seqno_for_key = seqno;
        if drop {
            entries_dropped += 1;
            if kind == ValueKind::Pointer {
                if let Some(p) = ValuePointer::decode(merged.value()) {
                    *garbage.entry(p.segment).or_default() +=
                        VLOG_ENTRY_HEADER_BYTES + user_key.len() as u64 + u64::from(p.len);
                }
            }
            merged.advance()?;
            continue;
        }
        if builder.is_none() {
            let outputs_after = outputs.len() as u64 + 1;
            if outputs_after > removed {
                let limit =
                    table_limit.get_or_insert_with(|| TableLimit::read(ctx.fs, ctx.opts.read_mode));
                let live_after = live_before.saturating_sub(removed) + outputs_after;
                if let Err(e) = limit.check(live_before, live_after, ctx.opts) {
                    for m in &outputs {
                        // Best effort: an output left behind is not referenced by the
                        // manifest and is removed as obsolete at the next open.
                        let _ = ctx.fs.remove(&filename::table_path(ctx.dir, m.file_id));
                    }
                    return Err(e);
                }
            }
            if flsm {
                slot_end = out_guards
                    .get(slot_of(out_guards, user_key))
                    .map(Vec::as_slice);
            }
            let id = (ctx.new_file_number)();
            let path = filename::table_path(ctx.dir, id);
            builder = Some((id, Builder::new(ctx.fs.create(&path)?, path, ctx.builder)));
        }
        if let Some((_, b)) = builder.as_mut() {
            b.add(merged.key(), seqno, kind, merged.value())?;
        }
        merged.advance()?;
    }
    if let Some((id, b)) = builder.take() {
        outputs.push(finish(id, b, &mut model_time)?);
    }
    if !outputs.is_empty() {
        ctx.fs.sync_dir(ctx.dir)?;
    }
    let bytes_written = outputs.iter().map(|m| m.file_size).sum();
    if flsm && entries_dropped > 0 {
        let lo = c
            .inputs
            .iter()
            .chain(&c.next_inputs)
            .map(|f| f.smallest_key())
            .min();
        let hi = c
            .inputs
            .iter()
            .chain(&c.next_inputs)
            .map(|f| f.largest_key())
            .max();
        if let (Some(lo), Some(hi)) = (lo, hi) {
            for g in empty_guards(version, &input_ids, &outputs, &guards_added, lo, hi) {
                guards_added.retain(|(_, k)| *k != g);
                for (level, guards) in version.guards.iter().enumerate() {
                    if guards.binary_search(&g).is_ok() {
                        edit.guards_removed.push((level, g.clone()));
                    }
                }
            }
        }
    }
    edit.guards_added = guards_added;
    edit.added = outputs.into_iter().map(|m| (c.output_level, m)).collect();
    edit.vlog_garbage = garbage.into_iter().collect();
    Ok(CompactionOutcome {
        edit,
        bytes_read,
        bytes_written,
        entries_dropped,
        model_time,
        appended: flsm && c.output_level > c.level && c.next_inputs.is_empty(),
    })
}

fn finish(file_id: u64, b: Builder, model_time: &mut ModelTime) -> Result<FileMeta> {
    let s = b.finish()?;
    model_time.add(s.model_time);
    Ok(FileMeta {
        file_id,
        file_size: s.file_size,
        entries: s.entries,
        smallest: s.smallest,
        largest: s.largest,
    })
}
