//! Byte layout constants of an SSTable and the codecs of its two fixed-size structures: the
//! footer and the 20-byte value reference inside each key slot. The full specification is
//! `docs/format/sst.md`; this file is its executable form.
//!
//! Invariants: the footer is exactly [`FOOTER_LEN`] bytes at the very end of the file, its
//! last 12 bytes are `format_version u32 | magic u64` in every format version (so a reader can
//! always tell "not an SSTable" from "a newer SSTable"), and every other footer byte is covered
//! by the footer checksum.

use crate::checksum::crc_parts;
use crate::coding::{get_u32, get_u64};
use crate::error::{Error, Result};
use std::path::Path;

/// Magic number at the end of every SSTable: the bytes `AUGURSST` read as a little-endian u64.
pub const MAGIC: u64 = u64::from_le_bytes(*b"AUGURSST");

/// The format version this build writes. Format 3 is format 2 with each data block's value
/// chunk written right after the block, inside the data section (the value section is
/// empty): a lookup's slots and value, and a scan's block and values, lie in one contiguous
/// stretch of the file, read with one device request under direct reads. Format 4 is format 3
/// with the longest inline value recorded in the properties. Format 5 is format 4 with each
/// block's shared key prefix stored once (its length in the block's fence record, its bytes
/// those of the block's last key): slots hold only what tells a block's keys apart. Format 6
/// is format 5 with each data block (slots and key suffixes) stored compressed with the
/// values' codec when that saves an eighth of its bytes (its codec and raw length in its fence
/// record; `sst::block_codec`). Format 7 is format 6 with compact fence records (each last
/// key past what it shares with the previous one, block and chunk lengths and other numbers as
/// varints; `sst::fence`), in a table without value pointers, inline references that hold
/// only their value's end (`slot::SlotParams::end_refs`), and 4-byte frame records in
/// compressed value chunks below 64 KiB (`compression::FrameRecords`).
pub const FORMAT_VERSION: u32 = 7;

/// The first format version whose value chunks are interleaved with the data blocks.
pub const INTERLEAVED_FORMAT_VERSION: u32 = 3;

/// The first format version whose properties record the longest inline value.
pub const MAX_INLINE_VALUE_FORMAT_VERSION: u32 = 4;

/// The first format version whose slots hold keys past their block's shared prefix.
pub const BLOCK_PREFIX_FORMAT_VERSION: u32 = 5;

/// The first format version whose data blocks may be stored compressed.
pub const COMPRESSED_BLOCK_FORMAT_VERSION: u32 = 6;

/// The first format version whose fence records are stored compactly.
pub const COMPACT_INDEX_FORMAT_VERSION: u32 = 7;

/// The first format version whose inline references (without value pointers) hold only
/// their value's end.
pub const END_REF_FORMAT_VERSION: u32 = 7;

/// The first format version whose compressed value chunks of at most 65535 raw bytes have
/// 4-byte frame records (`compression::FrameRecords`).
pub const NARROW_FRAME_FORMAT_VERSION: u32 = 7;

/// The oldest format version this build reads.
pub const MIN_FORMAT_VERSION: u32 = 1;

/// Checksum type recorded in the footer: masked CRC32C ([`crate::checksum::crc`]).
pub const CHECKSUM_MASKED_CRC32C: u8 = 1;

/// Bytes of the value reference at the end of every format-1 slot.
pub const REF_BYTES: usize = 20;

/// Bytes of one section record in the footer: `offset u64 | len u64 | crc u32`.
const SECTION_RECORD_BYTES: usize = 20;

/// Number of sections described by the footer.
const SECTION_COUNT: usize = 6;

/// Offset of the checksum-type byte inside the footer.
const CHECKSUM_TYPE_AT: usize = SECTION_COUNT * SECTION_RECORD_BYTES;

/// Offset of the footer checksum inside the footer (after 3 reserved zero bytes).
const FOOTER_CRC_AT: usize = CHECKSUM_TYPE_AT + 4;

/// Offset of the format version inside the footer.
const VERSION_AT: usize = FOOTER_CRC_AT + 4;

/// Offset of the magic number inside the footer.
const MAGIC_AT: usize = VERSION_AT + 4;

/// Total size of the footer in bytes.
pub const FOOTER_LEN: usize = MAGIC_AT + 8;

/// One contiguous region of the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Section {
    /// Byte offset of the section's first byte in the file.
    pub offset: u64,
    /// Length in bytes (0 for an absent section).
    pub len: u64,
    /// Masked CRC32C of the section's bytes; 0 (unused) for the data and value sections,
    /// which are checksummed per block through the fence index instead.
    pub crc: u32,
}

impl Section {
    /// Offset one past the section's last byte (saturating; validated on decode).
    #[cfg(any(test, feature = "test-util"))]
    pub fn end(&self) -> u64 {
        self.offset.saturating_add(self.len)
    }
}

/// Where every section of a table lies, in file order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Footer {
    /// Key slots, grouped into data blocks. Always starts at offset 0.
    pub data: Section,
    /// Inline values, concatenated in entry order.
    pub values: Section,
    /// The bloom filter over user keys (empty when disabled).
    pub filter: Section,
    /// The fence-pointer index: one record per data block.
    pub index: Section,
    /// The serialized learned index; empty in format version 1.
    pub model: Section,
    /// Table properties.
    pub properties: Section,
    /// The file's format version ([`MIN_FORMAT_VERSION`]`..=`[`FORMAT_VERSION`]).
    pub version: u32,
}

impl Footer {
    fn sections(&self) -> [&Section; SECTION_COUNT] {
        [
            &self.data,
            &self.values,
            &self.filter,
            &self.index,
            &self.model,
            &self.properties,
        ]
    }

    /// Encodes the footer (including its checksum, `version` and magic).
    pub fn encode(&self) -> [u8; FOOTER_LEN] {
        let mut out = [0u8; FOOTER_LEN];
        let mut body = Vec::with_capacity(FOOTER_LEN);
        for s in self.sections() {
            body.extend_from_slice(&s.offset.to_le_bytes());
            body.extend_from_slice(&s.len.to_le_bytes());
            body.extend_from_slice(&s.crc.to_le_bytes());
        }
        body.push(CHECKSUM_MASKED_CRC32C);
        body.extend_from_slice(&[0u8; 3]);
        let mut tail = [0u8; 12];
        tail[..4].copy_from_slice(&self.version.to_le_bytes());
        tail[4..].copy_from_slice(&MAGIC.to_le_bytes());
        let footer_crc = crc_parts(&[&body, &tail]);
        body.extend_from_slice(&footer_crc.to_le_bytes());
        body.extend_from_slice(&tail);
        out.copy_from_slice(&body);
        out
    }

    /// Decodes and checks a footer read from `footer_offset` of `file` whose total size is
    /// `file_size`: magic, then version, then checksum, then that the sections tile the file
    /// in order (data at 0, each section starting where the previous ends, properties ending
    /// where the footer starts).
    ///
    /// # Errors
    /// `Corruption` for a bad magic, checksum or layout; `UnsupportedVersion` for another
    /// format version.
    pub fn decode(bytes: &[u8], file: &Path, footer_offset: u64) -> Result<Footer> {
        let at = |rel: usize| footer_offset + rel as u64;
        let corrupt = |rel: usize, why: &str| Error::corruption(file, at(rel), why);
        if bytes.len() != FOOTER_LEN {
            return Err(corrupt(0, "footer has the wrong length"));
        }
        let magic = get_u64(bytes, MAGIC_AT).ok_or_else(|| corrupt(MAGIC_AT, "short footer"))?;
        if magic != MAGIC {
            return Err(corrupt(MAGIC_AT, "bad magic: not an Augur SSTable"));
        }
        let version =
            get_u32(bytes, VERSION_AT).ok_or_else(|| corrupt(VERSION_AT, "short footer"))?;
        if !(MIN_FORMAT_VERSION..=FORMAT_VERSION).contains(&version) {
            return Err(Error::UnsupportedVersion {
                file: file.to_path_buf(),
                version,
            });
        }
        let stored_crc =
            get_u32(bytes, FOOTER_CRC_AT).ok_or_else(|| corrupt(FOOTER_CRC_AT, "short footer"))?;
        let body = bytes.get(..FOOTER_CRC_AT).unwrap_or_default();
        let tail = bytes.get(VERSION_AT..).unwrap_or_default();
        if crc_parts(&[body, tail]) != stored_crc {
            return Err(corrupt(0, "footer checksum mismatch"));
        }
        if bytes.get(CHECKSUM_TYPE_AT) != Some(&CHECKSUM_MASKED_CRC32C) {
            return Err(corrupt(CHECKSUM_TYPE_AT, "unknown checksum type"));
        }
        let mut sections = [Section::default(); SECTION_COUNT];
        for (i, s) in sections.iter_mut().enumerate() {
            let base = i * SECTION_RECORD_BYTES;
            let short = || corrupt(base, "short footer");
            s.offset = get_u64(bytes, base).ok_or_else(short)?;
            s.len = get_u64(bytes, base + 8).ok_or_else(short)?;
            s.crc = get_u32(bytes, base + 16).ok_or_else(short)?;
        }
        let [data, values, filter, index, model, properties] = sections;
        let footer = Footer {
            data,
            values,
            filter,
            index,
            model,
            properties,
            version,
        };
        let mut expected_offset = 0u64;
        for (i, s) in footer.sections().iter().enumerate() {
            if s.offset != expected_offset {
                return Err(corrupt(
                    i * SECTION_RECORD_BYTES,
                    "section does not start where the previous one ends",
                ));
            }
            expected_offset = s
                .offset
                .checked_add(s.len)
                .ok_or_else(|| corrupt(i * SECTION_RECORD_BYTES, "section length overflows"))?;
        }
        if expected_offset != footer_offset {
            return Err(corrupt(0, "sections do not end where the footer starts"));
        }
        Ok(footer)
    }
}

/// The reference stored in a slot of kind `Value`: where the inline value sits in the value
/// section and its checksum. Encoded as `offset u64 | len u32 | crc u32 | 4 zero bytes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InlineRef {
    /// Offset of the value relative to the start of the value section.
    pub offset: u64,
    /// Length of the value.
    pub len: u32,
    /// Masked CRC32C of the value bytes.
    pub crc: u32,
}

impl InlineRef {
    /// Encodes into the 20-byte slot reference (format 1; tests write format-1 tables).
    #[cfg(test)]
    pub fn encode(&self) -> [u8; REF_BYTES] {
        let mut b = [0u8; REF_BYTES];
        b[..8].copy_from_slice(&self.offset.to_le_bytes());
        b[8..12].copy_from_slice(&self.len.to_le_bytes());
        b[12..16].copy_from_slice(&self.crc.to_le_bytes());
        b
    }

    /// Decodes a 20-byte slot reference; `None` when `b` is short or the reserved bytes are
    /// not zero.
    pub fn decode(b: &[u8]) -> Option<InlineRef> {
        if b.len() != REF_BYTES || b.get(16..)? != [0u8; 4] {
            return None;
        }
        Some(InlineRef {
            offset: get_u64(b, 0)?,
            len: get_u32(b, 8)?,
            crc: get_u32(b, 12)?,
        })
    }
}

/// The reference stored in a format-2 slot of kind `Value`: where the inline value lies in
/// its block's value chunk (after decompression). Encoded as `offset | len`, each of
/// `field` bytes (2 or 4) little-endian, then zeros up to the reference width.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkRef {
    /// Offset of the value in its block's value chunk.
    pub offset: u32,
    /// Length of the value.
    pub len: u32,
}

impl ChunkRef {
    /// Appends the encoding: `ref_bytes` bytes with fields of `field` bytes.
    pub fn encode(&self, out: &mut Vec<u8>, field: usize, ref_bytes: usize) {
        let start = out.len();
        out.extend_from_slice(&self.offset.to_le_bytes()[..field]);
        out.extend_from_slice(&self.len.to_le_bytes()[..field]);
        out.resize(start + ref_bytes, 0);
    }

    /// Decodes a reference field with fields of `field` bytes; `None` when it is short or
    /// its padding is not zero.
    #[inline]
    pub fn decode(b: &[u8], field: usize) -> Option<ChunkRef> {
        // Every slot's `next` decodes one: the common shape (fields of at most 4 bytes in a
        // reference of 8 or more) reads the fields as one word and ORs the padding together,
        // without a branch per byte.
        if let (Some(head), 1..=4) = (b.first_chunk::<8>(), field) {
            let word = u64::from_le_bytes(*head);
            let bits = 8 * field as u32;
            let mask = (1u64 << bits) - 1;
            let tail = b.get(8..).unwrap_or_default();
            let padding = word.checked_shr(2 * bits).unwrap_or(0) | tail.iter().fold(0, |a, &x| a | u64::from(x));
            return (padding == 0).then_some(ChunkRef {
                offset: (word & mask) as u32,
                len: ((word >> bits) & mask) as u32,
            });
        }
        let (fields, padding) = b.split_at_checked(2 * field)?;
        if padding.iter().any(|&x| x != 0) {
            return None;
        }
        let le = |bytes: &[u8]| {
            let mut w = [0u8; 4];
            w.get_mut(..bytes.len())?.copy_from_slice(bytes);
            Some(u32::from_le_bytes(w))
        };
        Some(ChunkRef {
            offset: le(fields.get(..field)?)?,
            len: le(fields.get(field..)?)?,
        })
    }
}

impl ChunkRef {
    /// Decodes a format-7 end reference (`reference`: the value's end, `field` bytes), with
    /// `prev` the previous slot's field in the same block (`None` for a block's first slot:
    /// the value starts at 0); `None` when a field is not `field` bytes long or the end lies
    /// before the start.
    #[inline]
    pub fn decode_end(reference: &[u8], prev: Option<&[u8]>, field: usize) -> Option<ChunkRef> {
        let le = |bytes: &[u8]| -> Option<u32> {
            match *bytes {
                [a, b] if field == 2 => Some(u32::from(u16::from_le_bytes([a, b]))),
                [a, b, c, d] if field == 4 => Some(u32::from_le_bytes([a, b, c, d])),
                _ => None,
            }
        };
        let end = le(reference)?;
        let start = match prev {
            Some(p) => le(p)?,
            None => 0,
        };
        Some(ChunkRef {
            offset: start,
            len: end.checked_sub(start)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn end_refs_decode_from_two_fields() {
        for field in [2usize, 4] {
            let enc = |v: u32| v.to_le_bytes()[..field].to_vec();
            assert_eq!(
                ChunkRef::decode_end(&enc(7), None, field),
                Some(ChunkRef { offset: 0, len: 7 })
            );
            assert_eq!(
                ChunkRef::decode_end(&enc(30), Some(&enc(7)), field),
                Some(ChunkRef { offset: 7, len: 23 })
            );
            // An empty value (or a tombstone's field) repeats the end before it.
            assert_eq!(
                ChunkRef::decode_end(&enc(7), Some(&enc(7)), field),
                Some(ChunkRef { offset: 7, len: 0 })
            );
            assert_eq!(ChunkRef::decode_end(&enc(6), Some(&enc(7)), field), None);
            assert_eq!(ChunkRef::decode_end(&enc(6)[1..], None, field), None);
            assert_eq!(ChunkRef::decode_end(&enc(6), Some(&[1]), field), None);
        }
    }

    fn sample() -> Footer {
        let mut f = Footer::default();
        let lens = [100u64, 20, 0, 33, 0, 50];
        let mut off = 0;
        let mut secs = [Section::default(); SECTION_COUNT];
        for (s, len) in secs.iter_mut().zip(lens) {
            *s = Section {
                offset: off,
                len,
                crc: len as u32 * 7,
            };
            off += len;
        }
        [f.data, f.values, f.filter, f.index, f.model, f.properties] = secs;
        f.version = FORMAT_VERSION;
        f
    }

    #[test]
    fn chunk_refs_decode_as_encoded_and_refuse_padding() {
        for field in [1usize, 2, 3, 4] {
            for ref_bytes in [2 * field, 8, 12, 20] {
                if ref_bytes < 2 * field {
                    continue;
                }
                let max = ((1u64 << (8 * field)) - 1) as u32;
                for (offset, len) in [(0, 0), (1, 2), (max, max), (max / 3, 7)] {
                    let r = ChunkRef { offset, len };
                    let mut out = Vec::new();
                    r.encode(&mut out, field, ref_bytes);
                    assert_eq!(out.len(), ref_bytes);
                    assert_eq!(ChunkRef::decode(&out, field), Some(r), "{field} {ref_bytes}");
                    for i in 2 * field..ref_bytes {
                        let mut bad = out.clone();
                        bad[i] = 1;
                        assert_eq!(ChunkRef::decode(&bad, field), None, "padding byte {i}");
                    }
                    assert_eq!(ChunkRef::decode(&out[..2 * field - 1], field), None);
                }
            }
        }
    }

    #[test]
    fn footer_roundtrip_and_checks() {
        let f = sample();
        let bytes = f.encode();
        let p = Path::new("t.sst");
        assert_eq!(Footer::decode(&bytes, p, 203).unwrap(), f);
        // Wrong footer position: sections do not reach it.
        assert!(Footer::decode(&bytes, p, 204).unwrap_err().is_corruption());
        for bit in 0..FOOTER_LEN * 8 {
            let mut b = bytes;
            b[bit / 8] ^= 1 << (bit % 8);
            let err = Footer::decode(&b, p, 203).unwrap_err();
            let in_version = (VERSION_AT * 8..MAGIC_AT * 8).contains(&bit);
            let version = get_u32(&b, VERSION_AT).unwrap_or(0);
            if in_version && !(MIN_FORMAT_VERSION..=FORMAT_VERSION).contains(&version) {
                assert!(matches!(err, Error::UnsupportedVersion { .. }), "bit {bit}");
            } else {
                // Another supported version reads on and fails the checksum.
                assert!(err.is_corruption(), "bit {bit}");
            }
        }
    }

    #[test]
    fn inline_ref_roundtrip() {
        let r = InlineRef {
            offset: 1 << 33,
            len: 9,
            crc: 0xdead_beef,
        };
        assert_eq!(InlineRef::decode(&r.encode()), Some(r));
        let mut b = r.encode();
        b[19] = 1;
        assert_eq!(InlineRef::decode(&b), None);
        assert_eq!(InlineRef::decode(&b[..19]), None);
    }

    #[test]
    fn chunk_ref_roundtrip() {
        for (field, width) in [(2, 4), (4, 8), (4, 20)] {
            let r = ChunkRef {
                offset: 513,
                len: 77,
            };
            let mut b = Vec::new();
            r.encode(&mut b, field, width);
            assert_eq!(b.len(), width);
            assert_eq!(ChunkRef::decode(&b, field), Some(r));
            if width > 2 * field {
                b[width - 1] = 1;
                assert_eq!(ChunkRef::decode(&b, field), None);
            }
        }
        assert_eq!(ChunkRef::decode(&[1, 2, 3], 2), None);
    }
}
