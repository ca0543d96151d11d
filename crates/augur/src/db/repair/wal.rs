//! Repair's value log and WALs.
//!
//! Value log: every segment whose header reads is kept, damaged or not (tables point into
//! it, and the entries before any damage still read); one whose header is damaged, or a
//! segment shorter than its header, holds nothing readable and goes to `lost/`. The rebuilt
//! manifest records no garbage for the kept segments beyond what the WAL table's own flush
//! dropped: what older compactions counted is gone with the old manifest, so garbage starts
//! at 0 (conservative: GC collects nothing it should not; the space of values already
//! overwritten is reclaimed as compactions count their pointers again, or by `gc --all`).
//!
//! WALs: every WAL, in number order, is replayed into one memtable; each stops at its first
//! bad record (a torn or damaged record, a malformed batch, a value pointer that does not
//! lead to its value-log entry with its key). Nothing of a WAL after that point is kept, as
//! the engine's replay never keeps a record after a bad one. A WAL already flushed (a crash
//! before its removal, or a repair interrupted after writing its WAL table) holds writes a
//! kept table holds too: each such write is skipped (see `in_tables`), never duplicated.

use super::tables::ScannedTable;
use super::{file_name, KeptSegment, Lost, RecoveredWal};
use crate::cache::FileReads;
use crate::db::decode_record;
use crate::db::flush::{write_table_from_memtable, FlushedTable};
use crate::error::{Error, Result};
use crate::filename;
use crate::fs::{FileSystem, ReadMode};
use crate::key::{SeqNo, ValueKind};
use crate::memtable::Memtable;
use crate::options::Options;
use crate::vlog::{entry_bytes, parse_segment_file_name, ValueLog, ValuePointer};
use crate::wal::{read_log, LogKind, LogTail};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

/// The value log as repair found it.
pub(super) struct Segments {
    /// The segments, opened for reading.
    pub vlog: ValueLog,
    /// The kept segments by id.
    pub kept: BTreeMap<u64, KeptSegment>,
    /// Ids of segments moved to `lost/`.
    pub moved: Vec<u64>,
}

/// Opens the value-log segments of `dir`, moving each one with a damaged header (or shorter
/// than its header) to `lost/`.
///
/// # Errors
/// `Io` on file-system failures.
pub(super) fn open_segments(
    fs: Arc<dyn FileSystem>,
    dir: &Path,
    options: &Options,
    lost: &mut Lost<'_>,
) -> Result<Segments> {
    let mut moved = Vec::new();
    let vlog = loop {
        let opened = ValueLog::open_existing_with_orphans(
            fs.clone(),
            dir,
            FileReads::plain(ReadMode::Pread),
            options.value_log_segment_bytes,
            &|_| false,
        );
        let (file, why) = match opened {
            Ok(vlog) => break vlog,
            Err(Error::Corruption { file, reason, .. }) => (file, reason),
            Err(Error::UnsupportedVersion { file, version }) => (
                file,
                format!("unsupported segment format version {version}"),
            ),
            Err(e) => return Err(e),
        };
        let Some(id) = parse_segment_file_name(&file_name(&file)) else {
            return Err(Error::corruption(file, 0, why));
        };
        if moved.contains(&id) {
            return Err(Error::corruption(file, 0, why));
        }
        lost.move_file(&file, format!("value-log segment header unreadable: {why}"))?;
        moved.push(id);
    };
    let opened: BTreeSet<u64> = vlog.segments().iter().map(|s| s.id).collect();
    for name in fs.list(dir)? {
        if let Some(id) = parse_segment_file_name(&name) {
            if !opened.contains(&id) {
                lost.move_file(
                    &dir.join(&name),
                    "value-log segment shorter than its header: it never held an entry".into(),
                )?;
                moved.push(id);
            }
        }
    }
    let mut kept = BTreeMap::new();
    for s in vlog.segments() {
        let (entries, damage) = match vlog.segment_entries(s.id) {
            Ok(e) => (e.len() as u64, None),
            Err(e @ Error::Corruption { .. }) => (0, Some(e.to_string())),
            Err(e) => return Err(e),
        };
        kept.insert(
            s.id,
            KeptSegment {
                name: file_name(&vlog.segment_path(s.id)),
                bytes: s.size_bytes,
                entries,
                damage,
            },
        );
    }
    Ok(Segments { vlog, kept, moved })
}

/// The garbage of each kept, undamaged segment: the bytes of its entries no pointer of
/// `referenced` (`(segment, offset)`, every pointer of every kept table) leads to. Nothing
/// will ever point at such an entry again, so it is exactly the garbage GC needs to know
/// of; entries past damage are not counted (conservative).
///
/// # Errors
/// `Io` on read failures.
pub(super) fn unreferenced_bytes(
    segments: &Segments,
    mut referenced: Vec<(u64, u64)>,
) -> Result<Vec<(u64, u64)>> {
    referenced.sort_unstable();
    referenced.dedup();
    let mut out = Vec::new();
    for (&id, kept) in &segments.kept {
        if kept.damage.is_some() {
            continue;
        }
        let entries = match segments.vlog.segment_entries(id) {
            Ok(e) => e,
            Err(Error::Corruption { .. }) => continue,
            Err(e) => return Err(e),
        };
        let garbage: u64 = entries
            .iter()
            .filter(|(p, _, _)| referenced.binary_search(&(id, p.offset)).is_err())
            .map(|(p, key, _)| entry_bytes(key.len(), p))
            .sum();
        if garbage > 0 {
            out.push((id, garbage));
        }
    }
    Ok(out)
}

/// What the WALs held.
pub(super) struct Replayed {
    mem: Memtable,
    last_seqno: SeqNo,
    /// One report per WAL.
    pub reports: Vec<RecoveredWal>,
    /// The segments the replayed pointers point into.
    pub segments: BTreeSet<u64>,
}

impl Replayed {
    /// Writes the replayed writes as table `id` in `dir` (synced); `None` when there were
    /// none.
    ///
    /// # Errors
    /// `Io` on write failures.
    pub(super) fn write_table(
        &self,
        fs: &dyn FileSystem,
        dir: &Path,
        id: u64,
        options: &Options,
    ) -> Result<Option<FlushedTable>> {
        write_table_from_memtable(fs, dir, id, &self.mem, options, self.last_seqno)
    }
}

/// Replays the WALs `numbers` of `dir` (ascending), each up to its first bad record.
///
/// # Errors
/// `Io` on read failures.
pub(super) fn replay_wals(
    fs: &dyn FileSystem,
    dir: &Path,
    numbers: &[u64],
    vlog: &ValueLog,
    memtable_budget: usize,
    tables: &[ScannedTable],
) -> Result<Replayed> {
    let mut out = Replayed {
        mem: Memtable::with_budget(memtable_budget),
        last_seqno: 0,
        reports: Vec::new(),
        segments: BTreeSet::new(),
    };
    for &number in numbers {
        let path = filename::wal_path(dir, number);
        let mut report = RecoveredWal {
            name: file_name(&path),
            records: 0,
            entries: 0,
            already_in_tables: 0,
            stopped: None,
        };
        let contents = match read_log(fs, &path, LogKind::Wal) {
            Ok(c) => c,
            Err(Error::Corruption { offset, reason, .. }) => {
                report.stopped = Some((offset, format!("unreadable WAL: {reason}")));
                out.reports.push(report);
                continue;
            }
            Err(e) => return Err(e),
        };
        let end = match &contents.tail {
            LogTail::Clean => None,
            LogTail::Torn { offset, reason } => Some((*offset, format!("torn record: {reason}"))),
            LogTail::Damaged { offset, reason } => {
                Some((*offset, format!("damaged record: {reason}")))
            }
        };
        report.stopped = end.clone();
        let stop_at = end.map_or(u64::MAX, |(o, _)| o);
        for (offset, record) in contents.records.iter().filter(|(o, _)| *o < stop_at) {
            let Some((first, entries)) = decode_record(record) else {
                report.stopped = Some((*offset, "malformed write-batch record".into()));
                break;
            };
            if let Some(why) = lost_value(vlog, &entries) {
                report.stopped = Some((*offset, why));
                break;
            }
            for (j, e) in entries.iter().enumerate() {
                let seqno = first + j as u64;
                if in_tables(tables, &e.key, seqno)? {
                    report.already_in_tables += 1;
                    continue;
                }
                if e.kind == ValueKind::Pointer {
                    out.segments
                        .extend(ValuePointer::decode(&e.value).map(|p| p.segment));
                }
                out.mem.insert(&e.key, seqno, e.kind, &e.value);
                out.last_seqno = out.last_seqno.max(seqno);
            }
            report.records += 1;
            report.entries += entries.len() as u64;
        }
        out.reports.push(report);
    }
    Ok(out)
}

/// Whether a kept table holds the write of `key` at `seqno` already: a WAL whose removal a
/// crash interrupted after its flush. Replaying it again would make two tables hold the
/// same entry, and a compaction merging them drops one copy as shadowed and counts its
/// value-log entry as garbage while the other copy still points at it: the segment could
/// then look all garbage and be deleted with a live value in it.
fn in_tables(tables: &[ScannedTable], key: &[u8], seqno: SeqNo) -> Result<bool> {
    for t in tables {
        let m = &t.meta;
        if m.smallest.user_key.as_slice() <= key && key <= m.largest.user_key.as_slice() {
            let hash = crate::sst::filter::key_hash(key);
            if let Some(e) = t.table.get_hashed(key, hash, seqno)? {
                if e.seqno == seqno {
                    return Ok(true);
                }
            }
        }
    }
    Ok(false)
}

/// Why a record's value pointers do not all lead to their value-log entries, if they do
/// not.
fn lost_value(vlog: &ValueLog, entries: &[crate::db::batch::LoggedEntry]) -> Option<String> {
    for e in entries.iter().filter(|e| e.kind == ValueKind::Pointer) {
        let Some(ptr) = ValuePointer::decode(&e.value) else {
            return Some("malformed value pointer".into());
        };
        if let Err(err) = vlog.read_with_key(&ptr, &e.key) {
            return Some(format!(
                "value pointer into segment {} does not lead to its entry: {err}",
                ptr.segment
            ));
        }
    }
    None
}
