//! Log record framing shared by the write-ahead log and the manifest.
//!
//! Where it sits: on the write path every batch is framed as one record and appended to the
//! WAL before it reaches the memtable; every version edit is one record of the MANIFEST.
//! Recovery reads these files back with [`read_log`].
//!
//! Format (specified in `docs/format/wal.md`): a 20-byte file header (magic, format version,
//! [`LogKind`], masked CRC32C of the three), then records `[crc u32][len u32][payload]` with
//! `crc = crc_parts(len bytes, payload)`.
//!
//! Invariants:
//! - A writer only appends; the header is written and synced by [`LogWriter::create`].
//! - The reader never panics and never allocates more than the file's size: a length field
//!   is trusted only after it is checked against the bytes that are actually there.
//! - Torn-tail policy: the first bad record ends the log (crash during an append) unless a
//!   valid record starts exactly where the bad record's length says it ends, which no torn
//!   append can produce; that is mid-log corruption and an error.

mod format;
mod reader;
mod writer;

#[cfg(test)]
mod tests;

pub use format::{LogKind, HEADER_LEN, RECORD_HEADER_LEN};
pub use reader::{decode_log, read_log, LogContents, LogTail};
pub use writer::LogWriter;
