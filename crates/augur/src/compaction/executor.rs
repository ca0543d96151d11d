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

use super::Compaction;
use crate::error::Result;
use crate::filename;
use crate::fs::FileSystem;
use crate::iter::merge::MergeCursor;
use crate::iter::source::Source;
use crate::key::{same_user_key, unpack_trailer, SeqNo, ValueKind};
use crate::options::Options;
use crate::sst::{Builder, BuilderOptions, TableCursor};
use crate::version::{FileMeta, Version, VersionEdit};
use crate::vlog::ValuePointer;
use std::collections::BTreeMap;
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
    /// Nanoseconds spent training the outputs' models (at-build learning).
    pub model_train_ns: u64,
}

/// True when no level deeper than `output_level` may contain `user_key`.
fn is_base_level_for_key(version: &Version, output_level: usize, user_key: &[u8]) -> bool {
    version.levels.iter().skip(output_level + 1).all(|files| {
        !files
            .iter()
            .any(|f| f.smallest_key() <= user_key && user_key <= f.largest_key())
    })
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
            model_train_ns: 0,
        });
    }

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
    let mut model_train_ns = 0;

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
            if let Some((_, b)) = &builder {
                if b.estimated_size_bytes() >= ctx.opts.target_file_size_bytes {
                    if let Some((id, b)) = builder.take() {
                        outputs.push(finish(id, b, &mut model_train_ns)?);
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
                && is_base_level_for_key(version, c.output_level, user_key)
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
        outputs.push(finish(id, b, &mut model_train_ns)?);
    }
    if !outputs.is_empty() {
        ctx.fs.sync_dir(ctx.dir)?;
    }
    let bytes_written = outputs.iter().map(|m| m.file_size).sum();
    edit.added = outputs.into_iter().map(|m| (c.output_level, m)).collect();
    edit.vlog_garbage = garbage.into_iter().collect();
    Ok(CompactionOutcome {
        edit,
        bytes_read,
        bytes_written,
        entries_dropped,
        model_train_ns,
    })
}

fn finish(file_id: u64, b: Builder, model_train_ns: &mut u64) -> Result<FileMeta> {
    let s = b.finish()?;
    *model_train_ns += s.model_train_ns;
    Ok(FileMeta {
        file_id,
        file_size: s.file_size,
        entries: s.entries,
        smallest: s.smallest,
        largest: s.largest,
    })
}
