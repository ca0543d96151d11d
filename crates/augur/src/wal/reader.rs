//! [`read_log`]: reads a whole WAL or MANIFEST file and applies the torn-tail policy.

use super::format::{check_header, HeaderError, LogKind, HEADER_LEN, RECORD_HEADER_LEN};
use crate::checksum::crc_parts;
use crate::coding::get_u32;
use crate::error::{Error, Result};
use crate::fs::FileSystem;
use std::path::Path;

/// Everything recovered from a log file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogContents {
    /// The valid records in file order, each with the byte offset of its record header.
    pub records: Vec<(u64, Vec<u8>)>,
    /// How the file ended.
    pub tail: LogTail,
}

/// How a log file ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogTail {
    /// The last record ended exactly at the end of the file.
    Clean,
    /// The bytes from `offset` to the end of the file are the torn tail of an interrupted
    /// append and were dropped. A writer reopening this log should truncate it at `offset`
    /// (or, as Augur does, start a new log).
    Torn {
        /// Offset of the first dropped byte (the start of the bad record).
        offset: u64,
        /// Why the record there is not valid.
        reason: String,
    },
    /// The record at `offset` is bad but valid data follows it (see [`read_log`]): damage
    /// in the middle of the log, which an interrupted append cannot leave. The records
    /// before it are returned; whoever reads the log decides whether that is an error
    /// ([`LogContents::fail_on_damage`]) or a loss it may accept.
    Damaged {
        /// Offset of the bad record.
        offset: u64,
        /// Why the record there is not valid, and where valid data follows.
        reason: String,
    },
}

impl LogContents {
    /// Fails with `Corruption` naming `path` when the log is [`LogTail::Damaged`].
    ///
    /// # Errors
    /// `Corruption` at the bad record's offset.
    pub fn fail_on_damage(&self, path: &Path) -> Result<()> {
        match &self.tail {
            LogTail::Damaged { offset, reason } => {
                Err(Error::corruption(path, *offset, reason.clone()))
            }
            _ => Ok(()),
        }
    }
}

/// The result of decoding the record that starts at some offset.
enum Parsed<'a> {
    /// A complete record with a valid checksum; `next` is where the following record starts.
    Valid { payload: &'a [u8], next: usize },
    /// Something is wrong; `next` is where the record's length field says it ends (`None`
    /// when that is past the end of the file or the header itself is cut).
    Bad {
        reason: &'static str,
        next: Option<usize>,
    },
}

/// Decodes the record at `pos` of `data` without trusting its length field.
fn parse_record(data: &[u8], pos: usize) -> Parsed<'_> {
    let (Some(crc), Some(len)) = (get_u32(data, pos), get_u32(data, pos.saturating_add(4))) else {
        return Parsed::Bad {
            reason: "file ends inside a record header",
            next: None,
        };
    };
    let payload_start = pos.saturating_add(RECORD_HEADER_LEN);
    let end = usize::try_from(len)
        .ok()
        .and_then(|l| payload_start.checked_add(l));
    // Checked against the bytes actually present before anything is allocated or sliced.
    let Some(payload) = end.and_then(|end| data.get(payload_start..end)) else {
        return Parsed::Bad {
            reason: "file ends inside a record payload",
            next: None,
        };
    };
    let next = payload_start + payload.len();
    if crc == 0 && len == 0 {
        return Parsed::Bad {
            reason: "zero-filled record header",
            next: Some(next),
        };
    }
    if crc_parts(&[&len.to_le_bytes(), payload]) != crc {
        return Parsed::Bad {
            reason: "record checksum mismatch",
            next: Some(next),
        };
    }
    Parsed::Valid { payload, next }
}

/// Reads a whole log file of the given `kind`.
///
/// Torn-tail policy (see `docs/format/wal.md`): records are read in order; the first record
/// that is incomplete (the file ends inside its header or payload), has an all-zero header,
/// or fails its checksum ends the log, and it and everything after it are reported as
/// [`LogTail::Torn`] — unless a valid record starts exactly where the bad record's length
/// says it ends (or, in a manifest, anywhere after it). A torn append cannot produce that,
/// so it is mid-log corruption, reported as [`LogTail::Damaged`] with the records before it.
///
/// # Errors
/// - `Corruption` at offset 0 for a missing, short or damaged file header, or a header of
///   the other log kind;
/// - `UnsupportedVersion` for a valid header of another format version;
/// - `Io` if the file cannot be read.
pub fn read_log(fs: &dyn FileSystem, path: &Path, kind: LogKind) -> Result<LogContents> {
    let data = fs.read_all(path)?;
    decode_log(&data, path, kind)
}

/// [`read_log`] of a file's bytes already read (`path` names it in errors): inspection
/// tools (`crate::inspect`) look at the bytes of a torn tail too.
///
/// # Errors
/// As [`read_log`], but no `Io`.
pub fn decode_log(data: &[u8], path: &Path, kind: LogKind) -> Result<LogContents> {
    match check_header(data, kind) {
        Ok(()) => {}
        Err(HeaderError::Short) => {
            return Err(Error::corruption(
                path,
                0,
                format!(
                    "file of {} bytes is shorter than the {HEADER_LEN}-byte {} header",
                    data.len(),
                    kind.name()
                ),
            ))
        }
        Err(HeaderError::Bad(reason)) => return Err(Error::corruption(path, 0, reason)),
        Err(HeaderError::Version(version)) => {
            return Err(Error::UnsupportedVersion {
                file: path.to_path_buf(),
                version,
            })
        }
        Err(HeaderError::WrongKind(found)) => {
            let found = found.map_or("an unknown kind of log", LogKind::name);
            return Err(Error::corruption(
                path,
                0,
                format!("expected a {} file, found {found}", kind.name()),
            ));
        }
    }

    let mut records = Vec::new();
    let mut pos = HEADER_LEN;
    while pos < data.len() {
        match parse_record(data, pos) {
            Parsed::Valid { payload, next } => {
                records.push((pos as u64, payload.to_vec()));
                pos = next;
            }
            Parsed::Bad { reason, next } => {
                if let Some(next) = next {
                    if let Parsed::Valid { .. } = parse_record(data, next) {
                        return Ok(LogContents {
                            records,
                            tail: LogTail::Damaged {
                                offset: pos as u64,
                                reason: format!(
                                    "{reason}, followed by a valid record at offset {next}"
                                ),
                            },
                        });
                    }
                }
                // A manifest is synced after every record, so only its last record can be
                // torn: a valid record anywhere after a bad one is damage (e.g. a flipped
                // length field), and dropping it as a tail would silently lose edits.
                if kind == LogKind::Manifest {
                    let valid_later = (pos + 1..data.len())
                        .find(|&p| matches!(parse_record(data, p), Parsed::Valid { .. }));
                    if let Some(at) = valid_later {
                        return Ok(LogContents {
                            records,
                            tail: LogTail::Damaged {
                                offset: pos as u64,
                                reason: format!(
                                    "{reason}, and a valid record follows at offset {at}"
                                ),
                            },
                        });
                    }
                }
                return Ok(LogContents {
                    records,
                    tail: LogTail::Torn {
                        offset: pos as u64,
                        reason: reason.to_string(),
                    },
                });
            }
        }
    }
    Ok(LogContents {
        records,
        tail: LogTail::Clean,
    })
}
