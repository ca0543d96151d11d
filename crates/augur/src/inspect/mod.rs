//! Inspection of one database file at a time, as RocksDB's `sst_dump` and `ldb` do: what a
//! manifest, WAL, value-log segment or SSTable holds, decoded into plain structs, with where
//! and why reading stopped when the file is torn or damaged.
//!
//! Where it sits: beside the database, not inside it. Each function reads ONE file through
//! the engine's own decoders (`wal::decode_log`, `VersionEdit::decode`, the WAL record
//! decoder of `db/batch.rs`, `SegmentReader`, `Table` and `TableCursor`), never opens the
//! database, takes no lock and writes nothing: it works on a database another process has
//! open. The CLI's `augur dump` prints these structs (`crates/augur-cli/src/dump/`).
//!
//! Damage is data here, not an error: a file that cannot be read at all (a bad header or
//! footer, a missing file) is an `Err`, but one that reads up to some offset is returned with
//! what was read and a [`FileEnd`] saying where and why reading stopped. Large files stream:
//! [`sst_entries`] and [`vlog_entries`] are iterators that hold one entry at a time. WALs and
//! manifests are read whole, as recovery reads them (both are bounded: a WAL by the memtable,
//! a manifest by its rewrite at every open).

mod manifest;
mod sst;
#[cfg(test)]
mod tests;
mod vlog;
mod wal;

pub use manifest::{
    current_manifest, manifest, AddedFile, DeletedFile, Guard, ManifestDump, ManifestEdit,
    SegmentAccounting, SegmentBytes, ValueSegments, WalClosed,
};
pub use sst::{
    sst, sst_entries, BlockInfo, ModelInfo, ModelSummary, SectionInfo, SlotInfo, SstDump,
    SstEntries, SstEntry, SstProperties,
};
pub use vlog::{vlog, vlog_entries, VlogDump, VlogEntries, VlogEntry};
pub use wal::{wal, WalDump, WalEntry, WalRecord};

use crate::key::ValueKind;
use crate::vlog::ValuePointer;

/// What an entry holds (its internal kind).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EntryKind {
    /// A tombstone.
    Delete,
    /// A value stored inline.
    Value,
    /// A pointer to a value in the value log.
    Pointer,
    /// An inline value with an expiry time.
    ExpiringValue,
}

impl EntryKind {
    /// The kind's name in the CLI's output: `delete`, `value`, `pointer`, `expiring`.
    pub fn name(self) -> &'static str {
        match self {
            EntryKind::Delete => "delete",
            EntryKind::Value => "value",
            EntryKind::Pointer => "pointer",
            EntryKind::ExpiringValue => "expiring",
        }
    }

    fn of(kind: ValueKind) -> EntryKind {
        match kind {
            ValueKind::Delete => EntryKind::Delete,
            ValueKind::Value => EntryKind::Value,
            ValueKind::Pointer => EntryKind::Pointer,
            ValueKind::ExpiringValue => EntryKind::ExpiringValue,
        }
    }
}

/// An internal key: user key, sequence number and kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyVersion {
    /// The user key.
    pub user_key: Vec<u8>,
    /// Sequence number of the write.
    pub seqno: u64,
    /// What the entry holds.
    pub kind: EntryKind,
}

impl KeyVersion {
    fn of(key: &crate::key::InternalKey) -> KeyVersion {
        KeyVersion {
            user_key: key.user_key.clone(),
            seqno: key.seqno,
            kind: EntryKind::of(key.kind),
        }
    }

    /// The key of a trailer `(seqno << 8) | kind`; `None` for an unknown kind.
    fn of_trailer(user_key: Vec<u8>, trailer: u64) -> Option<KeyVersion> {
        let (seqno, kind) = crate::key::unpack_trailer(trailer)?;
        Some(KeyVersion {
            user_key,
            seqno,
            kind: EntryKind::of(kind),
        })
    }
}

/// Where a separated value lives: a value-log segment, the entry's offset in it, and the
/// stored value's length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PointerInfo {
    /// Value-log segment id.
    pub segment: u64,
    /// Offset of the entry in the segment.
    pub offset: u64,
    /// Bytes of the stored value.
    pub len: u32,
}

/// An entry's value as a WAL record or a table stores it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValueInfo {
    /// What the entry holds.
    pub kind: EntryKind,
    /// Bytes of the user's value: an inline value's (an expiring value's without its
    /// expiry time), a pointer's stored length, 0 for a tombstone.
    pub len: u64,
    /// An expiring value's expiry time (milliseconds since the Unix epoch).
    pub expire_at_ms: Option<u64>,
    /// A pointer's target.
    pub pointer: Option<PointerInfo>,
    /// The user's value, when asked for and stored inline.
    pub bytes: Option<Vec<u8>>,
}

impl ValueInfo {
    /// The value of an entry of `kind` stored as `stored`, its bytes kept when `keep`;
    /// `None` when the stored bytes cannot be what the kind says (a pointer not 20 bytes
    /// long, an expiring value shorter than its time).
    fn decode(kind: ValueKind, stored: &[u8], keep: bool) -> Option<ValueInfo> {
        let mut v = ValueInfo {
            kind: EntryKind::of(kind),
            len: 0,
            expire_at_ms: None,
            pointer: None,
            bytes: None,
        };
        match kind {
            ValueKind::Delete => {}
            ValueKind::Value => {
                v.len = stored.len() as u64;
                v.bytes = keep.then(|| stored.to_vec());
            }
            ValueKind::ExpiringValue => {
                let (at, value) = crate::expiry::split(stored)?;
                v.len = value.len() as u64;
                v.expire_at_ms = Some(at);
                v.bytes = keep.then(|| value.to_vec());
            }
            ValueKind::Pointer => {
                let p = ValuePointer::decode(stored)?;
                v.len = u64::from(p.len);
                v.pointer = Some(PointerInfo {
                    segment: p.segment,
                    offset: p.offset,
                    len: p.len,
                });
            }
        }
        Some(v)
    }
}

/// How reading a file ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileEnd {
    /// Everything was read: the last record or entry ends at the end of the file.
    Clean,
    /// Zero bytes from `offset` to the end of the file: a preallocated WAL past its last
    /// record (docs/format/wal.md, "Preallocation") or a zero-filled segment tail. Not damage.
    ZeroFilled {
        /// Where the zeros start.
        offset: u64,
    },
    /// The record or entry at `offset` is incomplete or bad and nothing valid follows: the
    /// torn tail a crash during an append leaves, which recovery drops. Reading stopped there.
    Torn {
        /// Where the torn record starts.
        offset: u64,
        /// What is wrong with it.
        reason: String,
    },
    /// The record, entry or block at `offset` is damaged (no crash leaves it so): reading
    /// stopped there.
    Damaged {
        /// Where the damage starts.
        offset: u64,
        /// What is wrong.
        reason: String,
    },
}

impl FileEnd {
    /// True for [`FileEnd::Torn`] and [`FileEnd::Damaged`]: bytes of the file were not read.
    pub fn stopped_early(&self) -> bool {
        matches!(self, FileEnd::Torn { .. } | FileEnd::Damaged { .. })
    }

    /// The end of a log whose torn tail starts at `offset`: zero-filled when every byte from
    /// there on is zero.
    fn of_log(tail: crate::wal::LogTail, data: &[u8]) -> FileEnd {
        match tail {
            crate::wal::LogTail::Clean => FileEnd::Clean,
            crate::wal::LogTail::Torn { offset, reason } => {
                let rest = usize::try_from(offset).ok().and_then(|o| data.get(o..));
                if rest.is_some_and(|r| r.iter().all(|&b| b == 0)) {
                    FileEnd::ZeroFilled { offset }
                } else {
                    FileEnd::Torn { offset, reason }
                }
            }
            crate::wal::LogTail::Damaged { offset, reason } => FileEnd::Damaged { offset, reason },
        }
    }

    /// The damage a `Corruption` error describes; any other error as it is.
    fn of_error(e: crate::Error) -> crate::Result<FileEnd> {
        match e {
            crate::Error::Corruption { offset, reason, .. } => {
                Ok(FileEnd::Damaged { offset, reason })
            }
            e => Err(e),
        }
    }
}

/// The name of a compression codec byte: `none`, `lz4`, `zstd`, or `codec N`.
pub fn codec_name(codec: u8) -> String {
    match codec {
        crate::compression::CODEC_NONE => "none".into(),
        crate::compression::CODEC_LZ4 => "lz4".into(),
        crate::compression::CODEC_ZSTD => "zstd".into(),
        n => format!("codec {n}"),
    }
}

/// The file system inspection reads through: the real one.
fn std_fs() -> crate::fs::StdFs {
    crate::fs::StdFs
}
