//! [`manifest`]: every version edit of a manifest, in file order with its offset, decoded by
//! the engine's own `VersionEdit::decode` (docs/format/manifest.md), and how the log ends;
//! [`current_manifest`]: the manifest a database directory's CURRENT names.
//!
//! Nothing is replayed or checked against the directory (an open does that); the edits are
//! shown as recorded. [`ManifestDump::segment_accounting`] sums what the edits say about one
//! value-log segment, as the open's replay does.

use super::{std_fs, FileEnd, KeyVersion};
use crate::error::{Error, Result};
use crate::expiry::ExpirySummary;
use crate::filename;
use crate::fs::FileSystem;
use crate::version::{CompactionStyle, VersionEdit};
use crate::wal::{decode_log, LogKind};
use std::path::{Path, PathBuf};

/// A manifest, edit by edit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestDump {
    /// The file read.
    pub path: PathBuf,
    /// Its size in bytes.
    pub file_bytes: u64,
    /// The edits up to where reading stopped, in file order.
    pub edits: Vec<ManifestEdit>,
    /// How the log ends. A record that passes its checksum but is no valid edit, and any
    /// byte after the one record of a manifest a clean close wrote, are `Damaged`.
    pub end: FileEnd,
}

/// One version edit, as recorded.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ManifestEdit {
    /// Offset of its record in the file.
    pub offset: u64,
    /// Bytes of the record's payload.
    pub len: u64,
    /// WALs numbered below it are flushed.
    pub log_number: Option<u64>,
    /// The next unused file number.
    pub next_file_number: Option<u64>,
    /// The largest seqno in flushed tables.
    pub last_seqno: Option<u64>,
    /// The compaction style's code (0 leveled, 1 FLSM; [`Self::compaction_style_name`]).
    pub compaction_style: Option<u64>,
    /// Tables added.
    pub added: Vec<AddedFile>,
    /// Tables removed.
    pub deleted: Vec<DeletedFile>,
    /// Garbage bytes added to value-log segments.
    pub vlog_garbage: Vec<SegmentBytes>,
    /// Value-log segments deleted, one id each (tag 7).
    pub vlog_deleted: Vec<u64>,
    /// Runs of deleted segments: `(first id, number of ids)` (tag 13).
    pub vlog_deleted_runs: Vec<(u64, u64)>,
    /// Segments a compaction reserved.
    pub vlog_reserved: Vec<u64>,
    /// Segments a compaction installed.
    pub vlog_installed: Vec<u64>,
    /// Sealed segments with their final size (`bytes`).
    pub vlog_sealed: Vec<SegmentBytes>,
    /// WALs created.
    pub wals_added: Vec<u64>,
    /// WALs closed with their synced bytes.
    pub wals_closed: Vec<WalClosed>,
    /// FLSM guards committed.
    pub guards_added: Vec<Guard>,
    /// FLSM guards removed.
    pub guards_removed: Vec<Guard>,
    /// The snapshot edit of a clean close (nothing may follow it).
    pub closed_cleanly: bool,
}

impl ManifestEdit {
    /// The name of the recorded compaction style (`leveled`, `flsm`); `None` without one
    /// or for an unknown code.
    pub fn compaction_style_name(&self) -> Option<&'static str> {
        CompactionStyle::from_code(self.compaction_style?).map(CompactionStyle::name)
    }

    fn of(offset: u64, len: u64, e: VersionEdit) -> ManifestEdit {
        let guards = |g: Vec<(usize, Vec<u8>)>| {
            g.into_iter()
                .map(|(level, key)| Guard { level, key })
                .collect()
        };
        let bytes = |v: Vec<(u64, u64)>| {
            v.into_iter()
                .map(|(segment, bytes)| SegmentBytes { segment, bytes })
                .collect()
        };
        ManifestEdit {
            offset,
            len,
            log_number: e.log_number,
            next_file_number: e.next_file_number,
            last_seqno: e.last_seqno,
            compaction_style: e.compaction_style,
            added: e
                .added
                .iter()
                .map(|(level, m)| AddedFile {
                    level: *level,
                    file_id: m.file_id,
                    file_size: m.file_size,
                    entries: m.entries,
                    smallest: KeyVersion::of(&m.smallest),
                    largest: KeyVersion::of(&m.largest),
                    value_segments: match m.value_segments {
                        None => ValueSegments::Unrecorded,
                        Some(s) if s.is_empty() => ValueSegments::None,
                        Some(s) => ValueSegments::Range {
                            first: s.min,
                            last: s.max,
                        },
                    },
                    expiry: m.expiry,
                })
                .collect(),
            deleted: e
                .deleted
                .iter()
                .map(|&(level, file_id)| DeletedFile { level, file_id })
                .collect(),
            vlog_garbage: bytes(e.vlog_garbage),
            vlog_deleted: e.vlog_deleted,
            vlog_deleted_runs: e.vlog_deleted_runs,
            vlog_reserved: e.vlog_reserved,
            vlog_installed: e.vlog_installed,
            vlog_sealed: bytes(e.vlog_sealed),
            wals_added: e.wals_added,
            wals_closed: e
                .wals_closed
                .into_iter()
                .map(|(wal, synced_bytes)| WalClosed { wal, synced_bytes })
                .collect(),
            guards_added: guards(e.guards_added),
            guards_removed: guards(e.guards_removed),
            closed_cleanly: e.closed_cleanly,
        }
    }

    /// True when the edit records `segment` as deleted (tag 7 or 13).
    fn deletes_segment(&self, segment: u64) -> bool {
        self.vlog_deleted.contains(&segment)
            || self
                .vlog_deleted_runs
                .iter()
                .any(|&(first, count)| segment >= first && segment - first < count)
    }
}

/// A table an edit adds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddedFile {
    /// Its level.
    pub level: usize,
    /// Its file number (`NNNNNN.sst`).
    pub file_id: u64,
    /// Its size in bytes.
    pub file_size: u64,
    /// Its number of entries.
    pub entries: u64,
    /// Its first internal key.
    pub smallest: KeyVersion,
    /// Its last internal key.
    pub largest: KeyVersion,
    /// The value-log segments its pointers point into (tag 14).
    pub value_segments: ValueSegments,
    /// Its expiring values' count and times (tag 19).
    pub expiry: Option<ExpirySummary>,
}

/// The value-log segments a table's pointers point into, as its manifest record says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueSegments {
    /// Not recorded (an older build): the table may point anywhere.
    Unrecorded,
    /// The table holds no pointer.
    None,
    /// Segments `first ..= last`.
    Range {
        /// The smallest segment id.
        first: u64,
        /// The largest segment id.
        last: u64,
    },
}

/// A table an edit removes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeletedFile {
    /// Its level.
    pub level: usize,
    /// Its file number.
    pub file_id: u64,
}

/// A number of bytes about a value-log segment: garbage added, or its sealed size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentBytes {
    /// The segment id.
    pub segment: u64,
    /// The bytes.
    pub bytes: u64,
}

/// A WAL closed by a memtable switch or a clean close.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WalClosed {
    /// The WAL's number.
    pub wal: u64,
    /// The bytes synced into it before it was closed.
    pub synced_bytes: u64,
}

/// An FLSM guard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Guard {
    /// Its level.
    pub level: usize,
    /// The guard key.
    pub key: Vec<u8>,
}

/// What a manifest's edits say about one value-log segment, summed as the open's replay
/// does: garbage counts while the segment is not deleted, and a deletion drops its garbage
/// and size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SegmentAccounting {
    /// Garbage bytes recorded for it (entry bytes no live pointer refers to).
    pub garbage_bytes: u64,
    /// True when an edit recorded it as deleted.
    pub deleted: bool,
    /// Its sealed size, when recorded.
    pub sealed_bytes: Option<u64>,
    /// True when a compaction reserved it and no edit installed or deleted it.
    pub reserved: bool,
    /// True when any edit names it.
    pub mentioned: bool,
}

impl ManifestDump {
    /// What the edits read say about value-log segment `segment`.
    pub fn segment_accounting(&self, segment: u64) -> SegmentAccounting {
        let mut a = SegmentAccounting::default();
        for e in &self.edits {
            let mut named = false;
            if e.vlog_reserved.contains(&segment) {
                a.reserved = true;
                named = true;
            }
            if e.vlog_installed.contains(&segment) {
                a.reserved = false;
                named = true;
            }
            for g in e.vlog_garbage.iter().filter(|g| g.segment == segment) {
                named = true;
                if !a.deleted {
                    a.garbage_bytes += g.bytes;
                }
            }
            for s in e.vlog_sealed.iter().filter(|s| s.segment == segment) {
                named = true;
                if !a.deleted {
                    a.sealed_bytes = Some(s.bytes);
                }
            }
            if e.deletes_segment(segment) {
                named = true;
                a = SegmentAccounting {
                    deleted: true,
                    ..SegmentAccounting::default()
                };
            }
            a.mentioned |= named;
        }
        a
    }
}

/// The manifest the CURRENT file of database directory `dir` names.
///
/// # Errors
/// `Io` when CURRENT cannot be read; `Corruption` when it names no manifest.
pub fn current_manifest(dir: &Path) -> Result<PathBuf> {
    let current = filename::current_path(dir);
    let text = std_fs().read_all(&current)?;
    let name = std::str::from_utf8(&text)
        .ok()
        .and_then(|s| s.strip_suffix('\n'))
        .filter(|s| matches!(filename::parse(s), Some(filename::FileKind::Manifest(_))))
        .ok_or_else(|| Error::corruption(&current, 0, "CURRENT does not name a manifest"))?;
    Ok(dir.join(name))
}

/// Reads the manifest at `path`: every edit up to where reading stopped, with its offset.
/// Reads the file once and writes nothing.
///
/// # Errors
/// `Io` when the file cannot be read; `Corruption` (offset 0) for a short or damaged file
/// header or one of another kind of log; `UnsupportedVersion` for a newer log format.
pub fn manifest(path: &Path) -> Result<ManifestDump> {
    let data = std_fs().read_all(path)?;
    let contents = decode_log(&data, path, LogKind::Manifest)?;
    let mut end = FileEnd::of_log(contents.tail, &data);
    let mut edits = Vec::with_capacity(contents.records.len());
    for (offset, record) in &contents.records {
        if edits
            .first()
            .is_some_and(|first: &ManifestEdit| first.closed_cleanly)
        {
            end = FileEnd::Damaged {
                offset: *offset,
                reason: "a second record after the snapshot a clean close wrote, which \
                         nothing follows"
                    .into(),
            };
            break;
        }
        let Some(edit) = VersionEdit::decode(record) else {
            end = FileEnd::Damaged {
                offset: *offset,
                reason: "malformed version edit (the record's checksum is right)".into(),
            };
            break;
        };
        edits.push(ManifestEdit::of(*offset, record.len() as u64, edit));
    }
    // A manifest's first record, its snapshot, is synced before CURRENT names the file
    // (`write_manifest`): no crash tears it.
    if let (true, FileEnd::Torn { offset, reason }) = (edits.is_empty(), &end) {
        end = FileEnd::Damaged {
            offset: *offset,
            reason: format!(
                "{reason} in the first record, the snapshot every manifest starts with (synced \
                 before CURRENT names the file): damage, not a torn append"
            ),
        };
    }
    // A clean close writes its manifest whole: bytes after its one record are damage.
    if edits.first().is_some_and(|first| first.closed_cleanly) {
        let after = match &end {
            FileEnd::Torn { offset, reason } => Some((*offset, reason.clone())),
            FileEnd::ZeroFilled { offset } => Some((*offset, "zero bytes".to_string())),
            FileEnd::Clean | FileEnd::Damaged { .. } => None,
        };
        if let Some((offset, what)) = after {
            end = FileEnd::Damaged {
                offset,
                reason: format!(
                    "bytes after the snapshot a clean close wrote ({what}): damage, not a \
                     torn append"
                ),
            };
        }
    }
    Ok(ManifestDump {
        path: path.to_path_buf(),
        file_bytes: data.len() as u64,
        edits,
        end,
    })
}
