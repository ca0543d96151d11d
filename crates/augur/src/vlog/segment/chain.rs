//! [`SegmentReader::clean_end`]: whether a segment is a clean chain of entries up to its
//! last byte, the test an open applies before it keeps appending to the newest segment
//! (docs/format/vlog.md, "Open").
//!
//! The walk reads the segment in large sequential chunks and checks each entry in memory: a
//! 64 MiB segment of 100-byte values is half a million entries, which entry-by-entry reads
//! (two `pread`s each) took seconds to walk. The rules are those of
//! [`SegmentReader::entries`]: an entry is valid when it is complete, its key length and codec
//! are in range and its checksum matches; anything else ends the chain.

use super::{split_key_field, SegmentReader, ENTRY_HEADER_LEN, SEGMENT_HEADER_LEN};
use crate::checksum::crc_parts;
use crate::coding::get_u32;
use crate::compression::{CODEC_NONE, CODEC_ZSTD};
use crate::error::Result;
use crate::key::MAX_KEY_LEN;
use std::borrow::Cow;

/// Bytes read at a time (more when one entry is larger).
const CHUNK_BYTES: u64 = 1 << 20;

/// What the bytes at an entry position hold.
#[derive(Debug, PartialEq, Eq)]
enum Check {
    /// A valid entry of this many bytes.
    Valid(u64),
    /// The entry needs this many bytes, more than are at hand.
    Short(u64),
    /// Not an entry: an all-zero header, a length or codec out of range, a bad checksum.
    Invalid,
}

/// Checks the entry at the start of `bytes` of a segment of format `version`.
fn check_entry(bytes: &[u8], version: u32) -> Check {
    let (Some(crc), Some(key_field), Some(value_len)) =
        (get_u32(bytes, 0), get_u32(bytes, 4), get_u32(bytes, 8))
    else {
        return Check::Short(ENTRY_HEADER_LEN as u64);
    };
    if crc == 0 && key_field == 0 && value_len == 0 {
        return Check::Invalid;
    }
    let (codec, key_len) = if version >= 2 {
        split_key_field(key_field)
    } else {
        (CODEC_NONE, key_field)
    };
    if key_len as usize > MAX_KEY_LEN || codec > CODEC_ZSTD {
        return Check::Invalid;
    }
    let total = ENTRY_HEADER_LEN as u64 + u64::from(key_len) + u64::from(value_len);
    let entry = usize::try_from(total).ok().and_then(|n| bytes.get(..n));
    let Some(entry) = entry else {
        return Check::Short(total);
    };
    let (lens, body) = (
        entry.get(4..ENTRY_HEADER_LEN).unwrap_or_default(),
        entry.get(ENTRY_HEADER_LEN..).unwrap_or_default(),
    );
    let (key, value) = body.split_at(key_len as usize);
    if crc_parts(&[lens, key, value]) == crc {
        Check::Valid(total)
    } else {
        Check::Invalid
    }
}

impl SegmentReader {
    /// The file's length if the segment is a clean chain of entries: every entry from the
    /// header on is complete with a valid checksum and the last one ends exactly at the end
    /// of the file. `None` if anything else follows the last valid entry (a torn tail, zeros
    /// or damage): appending there would leave bytes that are not an entry in the middle of
    /// the segment. Reads the segment once, in chunks of 1 MiB (values are checked, not
    /// decompressed); never allocates more than the file holds.
    ///
    /// # Errors
    /// `Io` on read failures.
    pub fn clean_end(&self) -> Result<Option<u64>> {
        let file_len = self.file_len()?;
        let mut offset = SEGMENT_HEADER_LEN as u64;
        if file_len < offset {
            return Ok(None);
        }
        // `chunk` holds the file's bytes from `chunk_start`.
        let mut chunk: Cow<'_, [u8]> = Cow::Borrowed(&[]);
        let mut chunk_start = offset;
        while offset < file_len {
            let at = usize::try_from(offset - chunk_start).unwrap_or(usize::MAX);
            match check_entry(chunk.get(at..).unwrap_or_default(), self.version) {
                Check::Valid(len) => offset += len,
                Check::Invalid => return Ok(None),
                Check::Short(need) => {
                    let left = file_len - offset;
                    if need > left {
                        return Ok(None);
                    }
                    if at == 0 && chunk.len() as u64 >= need {
                        // Cannot happen (the entry would have been checked); never loop.
                        return Ok(None);
                    }
                    let n = need.max(CHUNK_BYTES).min(left);
                    let Some(bytes) = self.read_at(offset, n as usize)? else {
                        return Ok(None);
                    };
                    chunk = bytes;
                    chunk_start = offset;
                }
            }
        }
        Ok((offset == file_len).then_some(file_len))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_entry_rules() {
        let mut entry = Vec::new();
        let (key, value) = (b"key".as_slice(), b"value".as_slice());
        let mut lens = Vec::new();
        lens.extend_from_slice(&(key.len() as u32).to_le_bytes());
        lens.extend_from_slice(&(value.len() as u32).to_le_bytes());
        entry.extend_from_slice(&crc_parts(&[&lens, key, value]).to_le_bytes());
        entry.extend_from_slice(&lens);
        entry.extend_from_slice(key);
        entry.extend_from_slice(value);
        let n = entry.len() as u64;
        assert_eq!(check_entry(&entry, 2), Check::Valid(n));
        assert_eq!(check_entry(&entry[..5], 2), Check::Short(12));
        assert_eq!(check_entry(&entry[..n as usize - 1], 2), Check::Short(n));
        assert_eq!(check_entry(&[0; 40], 2), Check::Invalid);
        let mut bad = entry.clone();
        bad[14] ^= 1;
        assert_eq!(check_entry(&bad, 2), Check::Invalid);
        let mut codec = entry.clone();
        codec[7] = 9;
        assert_eq!(check_entry(&codec, 2), Check::Invalid);
        // Format 1 has no codec byte: the same bits are part of the key length.
        assert_eq!(check_entry(&codec, 1), Check::Invalid);
        assert_eq!(check_entry(&entry, 1), Check::Valid(n));
    }
}
