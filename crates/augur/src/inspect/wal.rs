//! [`wal`]: every record of a write-ahead log with its offset, first seqno and entries,
//! decoded by the engine's own record decoder (`db/batch.rs`; docs/format/wal.md), and where
//! a torn or damaged tail begins.
//!
//! A WAL on Linux is preallocated and zero past its last record while its database has it
//! open: that tail is [`FileEnd::ZeroFilled`], not damage. Nothing is checked against the
//! manifest or the value log (the open does that): a pointer is shown as recorded.

use super::{std_fs, FileEnd, ValueInfo};
use crate::db::decode_record;
use crate::error::Result;
use crate::fs::FileSystem;
use crate::wal::{decode_log, LogKind};
use std::path::{Path, PathBuf};

/// A WAL, record by record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalDump {
    /// The file read.
    pub path: PathBuf,
    /// Its size in bytes.
    pub file_bytes: u64,
    /// The records up to where reading stopped, in file order.
    pub records: Vec<WalRecord>,
    /// How the log ends. A record that passes its checksum but is no valid commit group is
    /// `Damaged` at its offset.
    pub end: FileEnd,
}

/// One record: a commit group of one or more write batches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalRecord {
    /// Offset of the record (its header) in the file.
    pub offset: u64,
    /// Bytes of its payload.
    pub len: u64,
    /// The seqno of its first entry; entry `i` has `first_seqno + i`.
    pub first_seqno: u64,
    /// Its entries, in order.
    pub entries: Vec<WalEntry>,
}

/// One entry of a record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalEntry {
    /// Its sequence number.
    pub seqno: u64,
    /// The user key.
    pub key: Vec<u8>,
    /// What it writes.
    pub value: ValueInfo,
}

impl WalDump {
    /// Number of entries in all records.
    pub fn entry_count(&self) -> u64 {
        self.records.iter().map(|r| r.entries.len() as u64).sum()
    }
}

/// Reads the WAL at `path`: every record up to where reading stopped, each entry's value
/// bytes only when `values`. Reads the file once and writes nothing.
///
/// # Errors
/// `Io` when the file cannot be read; `Corruption` (offset 0) for a short or damaged file
/// header or one of another kind of log; `UnsupportedVersion` for a newer log format.
pub fn wal(path: &Path, values: bool) -> Result<WalDump> {
    let data = std_fs().read_all(path)?;
    let contents = decode_log(&data, path, LogKind::Wal)?;
    let mut end = FileEnd::of_log(contents.tail, &data);
    let mut records = Vec::with_capacity(contents.records.len());
    for (offset, payload) in &contents.records {
        match decode(*offset, payload, values) {
            Some(r) => records.push(r),
            None => {
                end = FileEnd::Damaged {
                    offset: *offset,
                    reason: "malformed commit group (the record's checksum is right)".into(),
                };
                break;
            }
        }
    }
    Ok(WalDump {
        path: path.to_path_buf(),
        file_bytes: data.len() as u64,
        records,
        end,
    })
}

/// The record at `offset` holding `payload`; `None` when malformed.
fn decode(offset: u64, payload: &[u8], values: bool) -> Option<WalRecord> {
    let (first_seqno, logged) = decode_record(payload)?;
    let mut entries = Vec::with_capacity(logged.len());
    for (i, e) in logged.into_iter().enumerate() {
        entries.push(WalEntry {
            seqno: first_seqno.checked_add(i as u64)?,
            value: ValueInfo::decode(e.kind, &e.value, values)?,
            key: e.key,
        });
    }
    Some(WalRecord {
        offset,
        len: payload.len() as u64,
        first_seqno,
        entries,
    })
}
