//! [`EntryWalk`]: every entry of a segment with its offset, key, codec and lengths, and how
//! the segment ends — for inspection tools (`crate::inspect`), which report a torn tail where
//! [`SegmentReader::entries`] ends quietly. The rules are those of `entries`
//! (docs/format/vlog.md, "Scanning a segment"); only what is reported differs.

use super::{Parsed, SegmentReader, SEGMENT_HEADER_LEN};
use crate::error::{Error, Result};

/// One entry of a segment, as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryFacts {
    /// Offset of the entry (its header): what a value pointer to it holds.
    pub offset: u64,
    /// The key it was written under.
    pub key: Vec<u8>,
    /// How the value is stored: 0 raw, 1 LZ4, 2 zstd.
    pub codec: u8,
    /// Bytes of the stored value (a pointer's `len`).
    pub stored_len: u32,
    /// Bytes of the value once decompressed (checked by decompressing it).
    pub raw_len: u64,
}

/// How a walk over a segment ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WalkEnd {
    /// The last entry ends exactly at the end of the file.
    Clean,
    /// Zero bytes from `offset` to the end of the file (a zero-filled tail).
    ZeroFilled {
        /// Where the zeros start.
        offset: u64,
    },
    /// The entry at `offset` is incomplete, or damaged and the file's last: what a crash
    /// during an append leaves (an open's scan ends there quietly).
    Torn {
        /// Where the torn entry starts.
        offset: u64,
        /// What is wrong with it.
        reason: String,
    },
    /// The entry at `offset` is damaged and more bytes follow it: no crash leaves that.
    Damaged {
        /// Where the damaged entry starts.
        offset: u64,
        /// What is wrong with it.
        reason: String,
    },
}

/// What one step of a walk found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WalkStep {
    /// A valid entry.
    Entry(EntryFacts),
    /// The end of the walk; later steps find it again.
    End(WalkEnd),
}

/// Where a walk is: the next entry's offset, and the file length seen at its first step.
/// It holds no reader, so its owner may keep the reader beside it.
#[derive(Debug, Clone, Default)]
pub struct EntryWalk {
    offset: u64,
    file_len: Option<u64>,
    end: Option<WalkEnd>,
}

impl EntryWalk {
    /// A walk from the first entry.
    pub fn new() -> Self {
        EntryWalk {
            offset: SEGMENT_HEADER_LEN as u64,
            file_len: None,
            end: None,
        }
    }

    /// The next entry of `reader`'s segment, or how the segment ends. REQUIRES: the same
    /// reader at every step.
    ///
    /// # Errors
    /// `Io` when a read fails (the walk may be retried); damage is a [`WalkEnd`], not an
    /// error.
    pub fn step(&mut self, reader: &SegmentReader) -> Result<WalkStep> {
        if let Some(end) = &self.end {
            return Ok(WalkStep::End(end.clone()));
        }
        let file_len = match self.file_len {
            Some(l) => l,
            None => *self.file_len.insert(reader.file_len()?),
        };
        let offset = self.offset;
        let end = if offset >= file_len {
            WalkEnd::Clean
        } else {
            match reader.parse_entry(offset, file_len, None)? {
                Parsed::Valid {
                    key,
                    value,
                    codec,
                    next,
                } => {
                    let stored_len = value.len() as u32;
                    match reader.decoded(codec, value, offset) {
                        Ok(raw) => {
                            self.offset = next;
                            return Ok(WalkStep::Entry(EntryFacts {
                                offset,
                                key: key.into_owned(),
                                codec,
                                stored_len,
                                raw_len: raw.len() as u64,
                            }));
                        }
                        // A checksummed value that does not decompress is damage.
                        Err(Error::Corruption { reason, .. }) => WalkEnd::Damaged { offset, reason },
                        Err(e) => return Err(e),
                    }
                }
                Parsed::Incomplete => WalkEnd::Torn {
                    offset,
                    reason: "the file ends inside the entry".into(),
                },
                Parsed::Zero if reader.zeros_to_end(offset, file_len)? => {
                    WalkEnd::ZeroFilled { offset }
                }
                Parsed::Zero => WalkEnd::Damaged {
                    offset,
                    reason: "zero-filled entry header followed by non-zero bytes".into(),
                },
                Parsed::Bad { reason, next } if next == file_len => WalkEnd::Torn {
                    offset,
                    reason: format!("{reason} in the file's last entry"),
                },
                Parsed::Bad { reason, next } => WalkEnd::Damaged {
                    offset,
                    reason: format!("{reason}; {} more bytes follow the entry", file_len - next),
                },
            }
        };
        self.end = Some(end.clone());
        Ok(WalkStep::End(end))
    }
}
