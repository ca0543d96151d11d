//! `VersionEdit`: one atomic change to the set of live files and value-log state, as
//! recorded in the manifest (LevelDB's version edits, plus WiscKey value-log garbage).
//!
//! Encoding: a sequence of tagged fields (tag u8, then the field); see docs/format/manifest.md.

use crate::expiry::ExpirySummary;
use crate::coding::{put_bytes, put_u64, put_varint, Decoder};
use crate::key::{unpack_trailer, InternalKey};
use crate::vlog::SegmentSpan;

/// Metadata of one SSTable, as recorded in the manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileMeta {
    /// File number (name `NNNNNN.sst`).
    pub file_id: u64,
    /// Size in bytes.
    pub file_size: u64,
    /// Number of entries.
    pub entries: u64,
    /// Smallest internal key.
    pub smallest: InternalKey,
    /// Largest internal key.
    pub largest: InternalKey,
    /// The value-log segments its pointers point into (tag 14); `None` for a table recorded
    /// by an older build, which may point anywhere.
    pub value_segments: Option<SegmentSpan>,
    /// Its expiring values' count and times (tag 19); `None` for a table without any (or
    /// recorded by a build before expiry).
    pub expiry: Option<ExpirySummary>,
}

impl FileMeta {
    /// The manifest record of table `file_id`, built as `summary` says.
    pub fn of_table(file_id: u64, summary: &crate::sst::TableSummary) -> FileMeta {
        FileMeta {
            file_id,
            file_size: summary.file_size,
            entries: summary.entries,
            smallest: summary.smallest.clone(),
            largest: summary.largest.clone(),
            value_segments: Some(summary.value_segments),
            expiry: summary.expiry,
        }
    }

    /// True when the table may hold a pointer into value-log segment `segment`.
    pub fn may_point_into(&self, segment: u64) -> bool {
        self.value_segments.is_none_or(|s| s.contains(segment))
    }
}

/// A change to a version.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VersionEdit {
    /// WAL files with a smaller number are fully flushed and may be deleted.
    pub log_number: Option<u64>,
    /// Next unused file number.
    pub next_file_number: Option<u64>,
    /// Largest sequence number in the flushed files.
    pub last_seqno: Option<u64>,
    /// Files added, with their level.
    pub added: Vec<(usize, FileMeta)>,
    /// Files removed: (level, file id).
    pub deleted: Vec<(usize, u64)>,
    /// Garbage bytes to add to value-log segments: (segment, bytes).
    pub vlog_garbage: Vec<(u64, u64)>,
    /// Value-log segments removed by garbage collection (or removed by an open as empty or
    /// torn during creation): pointers into them are obsolete.
    pub vlog_deleted: Vec<u64>,
    /// Runs of consecutive deleted segments, as `(first id, number of ids)` with a number of
    /// at least 1: how a manifest snapshot records the deleted segments (tag 13), so it
    /// stays as small as the number of live segments.
    pub vlog_deleted_runs: Vec<(u64, u64)>,
    /// Value-log segments a compaction is about to write (tag 15): an open removes the ones
    /// no later edit installed, and never reuses their ids.
    pub vlog_reserved: Vec<u64>,
    /// Value-log segments a compaction wrote and synced, installed with its tables (tag 16):
    /// live from now on, with no garbage yet.
    pub vlog_installed: Vec<u64>,
    /// Sealed value-log segments with their final size in bytes (tag 17): a sealed segment
    /// never changes, so an open refuses one whose file has another size (a truncated
    /// segment would otherwise look emptier than it is to GC).
    pub vlog_sealed: Vec<(u64, u64)>,
    /// WALs created (the database must find each of them at open until a log number moves
    /// past it).
    pub wals_added: Vec<u64>,
    /// WALs closed by a memtable switch: (WAL number, bytes synced before it was closed).
    /// A closed WAL shorter than this at open lost synced writes.
    pub wals_closed: Vec<(u64, u64)>,
    /// The compaction style, as a code (`CompactionStyle::code`): written when a database
    /// is created and in every manifest snapshot. Absent in manifests of older builds
    /// (leveled).
    pub compaction_style: Option<u64>,
    /// FLSM guards committed: (level, guard key).
    pub guards_added: Vec<(usize, Vec<u8>)>,
    /// FLSM guards removed: (level, guard key).
    pub guards_removed: Vec<(usize, Vec<u8>)>,
    /// The snapshot edit a clean close writes as the only record of a fresh manifest (tag
    /// 18, no body): nothing may follow it in the file.
    pub closed_cleanly: bool,
}

const TAG_LOG_NUMBER: u8 = 1;
const TAG_NEXT_FILE: u8 = 2;
const TAG_LAST_SEQNO: u8 = 3;
const TAG_ADD_FILE: u8 = 4;
const TAG_DELETE_FILE: u8 = 5;
const TAG_VLOG_GARBAGE: u8 = 6;
const TAG_VLOG_DELETED: u8 = 7;
const TAG_WAL_ADDED: u8 = 8;
const TAG_WAL_CLOSED: u8 = 9;
const TAG_COMPACTION_STYLE: u8 = 10;
const TAG_GUARD_ADDED: u8 = 11;
const TAG_GUARD_REMOVED: u8 = 12;
const TAG_VLOG_DELETED_RUN: u8 = 13;
const TAG_FILE_VALUE_SEGMENTS: u8 = 14;
const TAG_VLOG_RESERVED: u8 = 15;
const TAG_VLOG_INSTALLED: u8 = 16;
const TAG_VLOG_SEALED: u8 = 17;
const TAG_CLOSED_CLEANLY: u8 = 18;
const TAG_FILE_EXPIRY: u8 = 19;

fn put_ikey(out: &mut Vec<u8>, k: &InternalKey) {
    put_bytes(out, &k.user_key);
    put_u64(out, k.trailer());
}

fn get_ikey(d: &mut Decoder<'_>) -> Option<InternalKey> {
    let user_key = d.length_prefixed()?.to_vec();
    let (seqno, kind) = unpack_trailer(d.u64()?)?;
    Some(InternalKey {
        user_key,
        seqno,
        kind,
    })
}

impl VersionEdit {
    /// Serializes the edit.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for (tag, v) in [
            (TAG_LOG_NUMBER, self.log_number),
            (TAG_NEXT_FILE, self.next_file_number),
            (TAG_LAST_SEQNO, self.last_seqno),
            (TAG_COMPACTION_STYLE, self.compaction_style),
        ] {
            if let Some(v) = v {
                out.push(tag);
                put_varint(&mut out, v);
            }
        }
        for (level, f) in &self.added {
            out.push(TAG_ADD_FILE);
            put_varint(&mut out, *level as u64);
            put_varint(&mut out, f.file_id);
            put_varint(&mut out, f.file_size);
            put_varint(&mut out, f.entries);
            put_ikey(&mut out, &f.smallest);
            put_ikey(&mut out, &f.largest);
            if let Some(span) = f.value_segments {
                out.push(TAG_FILE_VALUE_SEGMENTS);
                put_varint(&mut out, f.file_id);
                // `first, count`; a count of 0 is a table without pointers.
                let (first, count) = if span.is_empty() {
                    (0, 0)
                } else {
                    (span.min, (span.max - span.min).saturating_add(1))
                };
                put_varint(&mut out, first);
                put_varint(&mut out, count);
            }
            if let Some(x) = f.expiry {
                out.push(TAG_FILE_EXPIRY);
                put_varint(&mut out, f.file_id);
                put_varint(&mut out, x.entries);
                put_varint(&mut out, x.earliest);
                put_varint(&mut out, x.latest);
            }
        }
        for (level, id) in &self.deleted {
            out.push(TAG_DELETE_FILE);
            put_varint(&mut out, *level as u64);
            put_varint(&mut out, *id);
        }
        for (seg, bytes) in &self.vlog_garbage {
            out.push(TAG_VLOG_GARBAGE);
            put_varint(&mut out, *seg);
            put_varint(&mut out, *bytes);
        }
        for seg in &self.vlog_deleted {
            out.push(TAG_VLOG_DELETED);
            put_varint(&mut out, *seg);
        }
        for (first, count) in &self.vlog_deleted_runs {
            out.push(TAG_VLOG_DELETED_RUN);
            put_varint(&mut out, *first);
            put_varint(&mut out, *count);
        }
        for (tag, ids) in [
            (TAG_VLOG_RESERVED, &self.vlog_reserved),
            (TAG_VLOG_INSTALLED, &self.vlog_installed),
        ] {
            for seg in ids {
                out.push(tag);
                put_varint(&mut out, *seg);
            }
        }
        for (seg, size) in &self.vlog_sealed {
            out.push(TAG_VLOG_SEALED);
            put_varint(&mut out, *seg);
            put_varint(&mut out, *size);
        }
        for wal in &self.wals_added {
            out.push(TAG_WAL_ADDED);
            put_varint(&mut out, *wal);
        }
        for (wal, synced) in &self.wals_closed {
            out.push(TAG_WAL_CLOSED);
            put_varint(&mut out, *wal);
            put_varint(&mut out, *synced);
        }
        if self.closed_cleanly {
            out.push(TAG_CLOSED_CLEANLY);
        }
        for (tag, guards) in [
            (TAG_GUARD_ADDED, &self.guards_added),
            (TAG_GUARD_REMOVED, &self.guards_removed),
        ] {
            for (level, key) in guards {
                out.push(tag);
                put_varint(&mut out, *level as u64);
                put_bytes(&mut out, key);
            }
        }
        out
    }

    /// Parses an edit; `None` when malformed.
    pub fn decode(buf: &[u8]) -> Option<VersionEdit> {
        let mut d = Decoder::new(buf);
        let mut e = VersionEdit::default();
        while !d.is_empty() {
            let tag = d.u8()?;
            match tag {
                TAG_LOG_NUMBER => e.log_number = Some(d.varint()?),
                TAG_NEXT_FILE => e.next_file_number = Some(d.varint()?),
                TAG_LAST_SEQNO => e.last_seqno = Some(d.varint()?),
                TAG_ADD_FILE => {
                    let level = usize::try_from(d.varint()?).ok()?;
                    let meta = FileMeta {
                        file_id: d.varint()?,
                        file_size: d.varint()?,
                        entries: d.varint()?,
                        smallest: get_ikey(&mut d)?,
                        largest: get_ikey(&mut d)?,
                        value_segments: None,
                        expiry: None,
                    };
                    e.added.push((level, meta));
                }
                TAG_FILE_VALUE_SEGMENTS => {
                    let (file_id, first, count) = (d.varint()?, d.varint()?, d.varint()?);
                    let span = match count {
                        0 => SegmentSpan::EMPTY,
                        n => SegmentSpan {
                            min: first,
                            max: first.checked_add(n - 1)?,
                        },
                    };
                    // It describes a file this edit added (the record follows it).
                    let (_, meta) = e.added.iter_mut().rev().find(|(_, m)| m.file_id == file_id)?;
                    meta.value_segments = Some(span);
                }
                TAG_FILE_EXPIRY => {
                    let file_id = d.varint()?;
                    let x = ExpirySummary {
                        entries: d.varint()?,
                        earliest: d.varint()?,
                        latest: d.varint()?,
                    };
                    if x.entries == 0 || x.earliest > x.latest {
                        return None;
                    }
                    let (_, meta) = e.added.iter_mut().rev().find(|(_, m)| m.file_id == file_id)?;
                    meta.expiry = Some(x);
                }
                TAG_VLOG_RESERVED => e.vlog_reserved.push(d.varint()?),
                TAG_VLOG_INSTALLED => e.vlog_installed.push(d.varint()?),
                TAG_VLOG_SEALED => e.vlog_sealed.push((d.varint()?, d.varint()?)),
                TAG_CLOSED_CLEANLY => e.closed_cleanly = true,
                TAG_DELETE_FILE => {
                    let level = usize::try_from(d.varint()?).ok()?;
                    e.deleted.push((level, d.varint()?));
                }
                TAG_VLOG_GARBAGE => e.vlog_garbage.push((d.varint()?, d.varint()?)),
                TAG_VLOG_DELETED => e.vlog_deleted.push(d.varint()?),
                TAG_VLOG_DELETED_RUN => {
                    let (first, count) = (d.varint()?, d.varint()?);
                    // An empty run, or one past the largest id, is not one an encoder writes.
                    if count == 0 || first.checked_add(count).is_none() {
                        return None;
                    }
                    e.vlog_deleted_runs.push((first, count));
                }
                TAG_WAL_ADDED => e.wals_added.push(d.varint()?),
                TAG_WAL_CLOSED => e.wals_closed.push((d.varint()?, d.varint()?)),
                TAG_COMPACTION_STYLE => e.compaction_style = Some(d.varint()?),
                TAG_GUARD_ADDED | TAG_GUARD_REMOVED => {
                    let level = usize::try_from(d.varint()?).ok()?;
                    let key = d.length_prefixed()?.to_vec();
                    if tag == TAG_GUARD_ADDED {
                        e.guards_added.push((level, key));
                    } else {
                        e.guards_removed.push((level, key));
                    }
                }
                _ => return None,
            }
        }
        Some(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::ValueKind;

    #[test]
    fn roundtrip() {
        let e = VersionEdit {
            log_number: Some(5),
            next_file_number: Some(9),
            last_seqno: Some(1 << 40),
            added: vec![(
                2,
                FileMeta {
                    file_id: 7,
                    file_size: 4096,
                    entries: 10,
                    smallest: InternalKey::new(b"a".to_vec(), 3, ValueKind::Value),
                    largest: InternalKey::new(b"z".to_vec(), 1, ValueKind::Delete),
                    value_segments: Some(SegmentSpan { min: 4, max: 9 }),
                    expiry: Some(ExpirySummary {
                        entries: 3,
                        earliest: 1 << 40,
                        latest: (1 << 40) + 5,
                    }),
                },
            )],
            deleted: vec![(1, 3), (0, 4)],
            vlog_garbage: vec![(1, 100)],
            vlog_deleted: vec![0],
            vlog_deleted_runs: vec![(1, 1), (40, 1 << 20)],
            vlog_reserved: vec![41, 42],
            vlog_installed: vec![41],
            vlog_sealed: vec![(2, 24), (41, 1 << 36)],
            wals_added: vec![11, 12],
            wals_closed: vec![(11, 1 << 33)],
            compaction_style: Some(1),
            guards_added: vec![(1, b"g".to_vec()), (6, Vec::new())],
            guards_removed: vec![(3, b"\xff\x00".to_vec())],
            closed_cleanly: true,
        };
        let buf = e.encode();
        assert_eq!(VersionEdit::decode(&buf), Some(e));
        assert_eq!(VersionEdit::decode(&buf[..buf.len() - 1]), None);
        assert_eq!(VersionEdit::decode(&[99]), None);
        assert_eq!(VersionEdit::decode(&[]), Some(VersionEdit::default()));
        // A run of no segment, or one past the largest id, is malformed.
        assert_eq!(VersionEdit::decode(&[13, 5, 0]), None);
        let mut past_max = vec![13];
        put_varint(&mut past_max, u64::MAX);
        put_varint(&mut past_max, 1);
        assert_eq!(VersionEdit::decode(&past_max), None);
    }

    #[test]
    fn value_segment_spans_roundtrip_and_need_their_file() {
        let meta = |id, value_segments| FileMeta {
            file_id: id,
            file_size: 1,
            entries: 1,
            smallest: InternalKey::new(b"a".to_vec(), 1, ValueKind::Value),
            largest: InternalKey::new(b"a".to_vec(), 1, ValueKind::Value),
            value_segments,
            expiry: None,
        };
        let e = VersionEdit {
            added: vec![
                (1, meta(3, None)),
                (1, meta(4, Some(SegmentSpan::EMPTY))),
                (2, meta(5, Some(SegmentSpan { min: 7, max: 7 }))),
                (
                    2,
                    meta(
                        6,
                        Some(SegmentSpan {
                            min: 0,
                            max: u64::MAX - 1,
                        }),
                    ),
                ),
            ],
            ..VersionEdit::default()
        };
        assert_eq!(VersionEdit::decode(&e.encode()), Some(e.clone()));
        assert!(e.added[0].1.may_point_into(99));
        assert!(!e.added[1].1.may_point_into(0));
        assert!(e.added[2].1.may_point_into(7) && !e.added[2].1.may_point_into(8));
        // A span for a file the edit does not add is malformed.
        assert_eq!(VersionEdit::decode(&[14, 9, 1, 1]), None);
    }
}
