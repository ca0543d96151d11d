//! Byte layout of log files: the file header and the record header (see `docs/format/wal.md`).

use crate::checksum::crc_parts;
use crate::coding::get_u32;

/// Magic bytes at the start of every log file (WAL and MANIFEST).
pub const MAGIC: [u8; 8] = *b"AUGURLOG";

/// Format version written by this build; readers refuse newer versions.
pub const FORMAT_VERSION: u32 = 1;

/// File header: magic (8) + version (4) + kind (4) + masked CRC32C of those 16 bytes (4).
pub const HEADER_LEN: usize = 20;

/// Record header: masked CRC32C (4) + payload length (4).
pub const RECORD_HEADER_LEN: usize = 8;

/// Which log a file is; stored in its header so a WAL is never replayed as a manifest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LogKind {
    /// A write-ahead log: one record per committed write batch.
    Wal,
    /// A manifest: one record per version edit.
    Manifest,
}

impl LogKind {
    /// The on-disk code of this kind.
    pub fn code(self) -> u32 {
        match self {
            LogKind::Wal => 1,
            LogKind::Manifest => 2,
        }
    }

    /// The kind with on-disk code `code`, if any.
    pub fn from_code(code: u32) -> Option<LogKind> {
        match code {
            1 => Some(LogKind::Wal),
            2 => Some(LogKind::Manifest),
            _ => None,
        }
    }

    /// Human name used in error messages.
    pub fn name(self) -> &'static str {
        match self {
            LogKind::Wal => "WAL",
            LogKind::Manifest => "MANIFEST",
        }
    }
}

/// Encodes the file header for a log of `kind`.
pub(crate) fn encode_header(kind: LogKind) -> [u8; HEADER_LEN] {
    let mut h = [0u8; HEADER_LEN];
    h[..8].copy_from_slice(&MAGIC);
    h[8..12].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
    h[12..16].copy_from_slice(&kind.code().to_le_bytes());
    let crc = crc_parts(&[&h[..16]]);
    h[16..].copy_from_slice(&crc.to_le_bytes());
    h
}

/// What is wrong with a file header, if anything.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum HeaderError {
    /// The file is shorter than a header.
    Short,
    /// Magic or checksum mismatch; the reason says which.
    Bad(&'static str),
    /// A valid header of a format version this build cannot read.
    Version(u32),
    /// A valid header of another kind of log.
    WrongKind(Option<LogKind>),
}

/// Checks the header at the start of `data` against the expected `kind`.
pub(crate) fn check_header(data: &[u8], kind: LogKind) -> Result<(), HeaderError> {
    let header = data.get(..HEADER_LEN).ok_or(HeaderError::Short)?;
    let body = header.get(..16).ok_or(HeaderError::Short)?;
    let stored_crc = get_u32(header, 16).ok_or(HeaderError::Short)?;
    if body.get(..8) != Some(&MAGIC[..]) {
        return Err(HeaderError::Bad("bad magic (not an Augur log file)"));
    }
    if crc_parts(&[body]) != stored_crc {
        return Err(HeaderError::Bad("file header checksum mismatch"));
    }
    let version = get_u32(header, 8).ok_or(HeaderError::Short)?;
    if version != FORMAT_VERSION {
        return Err(HeaderError::Version(version));
    }
    let code = get_u32(header, 12).ok_or(HeaderError::Short)?;
    match LogKind::from_code(code) {
        Some(k) if k == kind => Ok(()),
        other => Err(HeaderError::WrongKind(other)),
    }
}

/// Encodes a record header for `payload`. REQUIRES: `payload.len() <= u32::MAX`.
pub(crate) fn encode_record_header(payload: &[u8]) -> [u8; RECORD_HEADER_LEN] {
    let len_bytes = (payload.len() as u32).to_le_bytes();
    let crc = crc_parts(&[&len_bytes, payload]);
    let mut h = [0u8; RECORD_HEADER_LEN];
    h[..4].copy_from_slice(&crc.to_le_bytes());
    h[4..].copy_from_slice(&len_bytes);
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_roundtrip_and_kind_check() {
        let h = encode_header(LogKind::Wal);
        assert_eq!(check_header(&h, LogKind::Wal), Ok(()));
        assert_eq!(
            check_header(&h, LogKind::Manifest),
            Err(HeaderError::WrongKind(Some(LogKind::Wal)))
        );
        assert_eq!(
            check_header(&h[..19], LogKind::Wal),
            Err(HeaderError::Short)
        );
    }

    #[test]
    fn empty_record_header_is_never_all_zero() {
        // The reader treats an all-zero record header as "no record" (zero-filled tail);
        // that is only sound if a real empty record never encodes to zeros.
        assert_ne!(encode_record_header(&[]), [0u8; RECORD_HEADER_LEN]);
    }
}
