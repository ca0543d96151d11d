//! The properties section: table-wide facts the reader needs before touching a data block
//! (entry count, key width `W`, block size) and statistics for compaction, learning and the
//! CLI (counts by kind, raw bytes, key range, common prefix for key projection).
//!
//! Invariant checked on decode: the numbers are mutually consistent (kind counts sum to the
//! entry count, the block count matches `entries / block_records`, keys fit in `W`), so the
//! reader can compute slot offsets from them without further checks.

use crate::coding::{put_bytes, put_u32, put_u64, Decoder};
use crate::error::{Error, Result};
use crate::key::{unpack_trailer, InternalKey, MAX_KEY_LEN};
use crate::sst::format::{END_REF_FORMAT_VERSION, MAX_INLINE_VALUE_FORMAT_VERSION};
use crate::sst::slot::SlotParams;
use std::path::Path;

/// Facts about one table, stored in its properties section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Properties {
    /// Number of entries (slots).
    pub entries: u64,
    /// `W`: the fixed key width of every slot, the longest user key in the file.
    pub key_width: u32,
    /// Slots per data block (the last block may hold fewer).
    pub block_records: u32,
    /// Number of data blocks.
    pub blocks: u64,
    /// Length of the longest prefix shared by every user key in the file.
    pub common_prefix_len: u32,
    /// Bloom filter bits per key the table was built with (0: no filter).
    pub bloom_bits_per_key: u32,
    /// Entries of kind `Delete`.
    pub deletes: u64,
    /// Entries of kind `Value` (inline values).
    pub inline_values: u64,
    /// Entries of kind `Pointer` (values in the value log).
    pub pointers: u64,
    /// Sum of user-key lengths.
    pub raw_key_bytes: u64,
    /// Sum of inline value lengths (the value section's size).
    pub raw_value_bytes: u64,
    /// Sum of the lengths of the values that pointer entries refer to in the value log.
    pub pointer_value_bytes: u64,
    /// The first internal key of the table.
    pub smallest: InternalKey,
    /// The last internal key of the table.
    pub largest: InternalKey,
    /// The layout of the key slots (format 1: [`SlotParams::v1`] of `key_width`).
    pub slot: SlotParams,
    /// Length of the longest inline value (0 without inline values); `None` in files before
    /// [`MAX_INLINE_VALUE_FORMAT_VERSION`], which do not record it. A compaction sizes its
    /// outputs' value references from it instead of reading every input slot.
    pub max_inline_value_len: Option<u32>,
}

impl Properties {
    /// Bytes of one key slot.
    pub fn slot_bytes(&self) -> u64 {
        self.slot.slot_bytes()
    }

    /// Encodes the section body (format 1's when the slot layout is format 1's).
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(128 + self.smallest.user_key.len() * 2);
        put_u64(&mut b, self.entries);
        put_u32(&mut b, self.key_width);
        put_u32(&mut b, self.block_records);
        put_u64(&mut b, self.blocks);
        put_u32(&mut b, self.common_prefix_len);
        put_u32(&mut b, self.bloom_bits_per_key);
        put_u64(&mut b, self.deletes);
        put_u64(&mut b, self.inline_values);
        put_u64(&mut b, self.pointers);
        put_u64(&mut b, self.raw_key_bytes);
        put_u64(&mut b, self.raw_value_bytes);
        put_u64(&mut b, self.pointer_value_bytes);
        for k in [&self.smallest, &self.largest] {
            put_bytes(&mut b, &k.user_key);
            put_u64(&mut b, k.trailer());
        }
        if !self.slot.v1_refs {
            self.slot.encode_v2(&mut b);
        }
        if let Some(len) = self.max_inline_value_len {
            put_u32(&mut b, len);
        }
        b
    }

    /// Decodes and validates the section body of a file of format `version` read from
    /// `offset` of `file`.
    ///
    /// # Errors
    /// `Corruption` when the body is short, has trailing bytes or is inconsistent.
    pub fn decode(bytes: &[u8], version: u32, file: &Path, offset: u64) -> Result<Properties> {
        let corrupt = |why: &str| Error::corruption(file, offset, format!("properties: {why}"));
        let mut d = Decoder::new(bytes);
        let short = || corrupt("section is truncated");
        let entries = d.u64().ok_or_else(short)?;
        let key_width = d.u32().ok_or_else(short)?;
        let block_records = d.u32().ok_or_else(short)?;
        let blocks = d.u64().ok_or_else(short)?;
        let common_prefix_len = d.u32().ok_or_else(short)?;
        let bloom_bits_per_key = d.u32().ok_or_else(short)?;
        let deletes = d.u64().ok_or_else(short)?;
        let inline_values = d.u64().ok_or_else(short)?;
        let pointers = d.u64().ok_or_else(short)?;
        let raw_key_bytes = d.u64().ok_or_else(short)?;
        let raw_value_bytes = d.u64().ok_or_else(short)?;
        let pointer_value_bytes = d.u64().ok_or_else(short)?;
        let mut keys = Vec::with_capacity(2);
        for _ in 0..2 {
            let user_key = d.length_prefixed().ok_or_else(short)?.to_vec();
            let trailer = d.u64().ok_or_else(short)?;
            let (seqno, kind) =
                unpack_trailer(trailer).ok_or_else(|| corrupt("bad key kind in key range"))?;
            keys.push(InternalKey::new(user_key, seqno, kind));
        }
        let slot = if version == 1 {
            SlotParams::v1(key_width)
        } else {
            SlotParams::decode_v2(&mut d, version >= END_REF_FORMAT_VERSION).ok_or_else(short)?
        };
        let max_inline_value_len = if version >= MAX_INLINE_VALUE_FORMAT_VERSION {
            Some(d.u32().ok_or_else(short)?)
        } else {
            None
        };
        if !d.is_empty() {
            return Err(corrupt("trailing bytes"));
        }
        let largest = keys.pop().ok_or_else(short)?;
        let smallest = keys.pop().ok_or_else(short)?;
        let props = Properties {
            entries,
            key_width,
            block_records,
            blocks,
            common_prefix_len,
            bloom_bits_per_key,
            deletes,
            inline_values,
            pointers,
            raw_key_bytes,
            raw_value_bytes,
            pointer_value_bytes,
            smallest,
            largest,
            slot,
            max_inline_value_len,
        };
        props.validate().map_err(corrupt)?;
        Ok(props)
    }

    fn validate(&self) -> std::result::Result<(), &'static str> {
        if self.entries == 0 {
            return Err("a table has at least one entry");
        }
        if self.key_width as usize > MAX_KEY_LEN {
            return Err("key width exceeds the maximum key length");
        }
        if self.block_records == 0 {
            return Err("zero records per block");
        }
        if self.blocks != self.entries.div_ceil(u64::from(self.block_records)) {
            return Err("block count does not match entries and block size");
        }
        let kinds = self
            .deletes
            .checked_add(self.inline_values)
            .and_then(|s| s.checked_add(self.pointers));
        if kinds != Some(self.entries) {
            return Err("counts by kind do not sum to the entry count");
        }
        let w = self.key_width as usize;
        if self.smallest.user_key.len() > w || self.largest.user_key.len() > w {
            return Err("key range longer than the key width");
        }
        if self.common_prefix_len as usize > w {
            return Err("common prefix longer than the key width");
        }
        if self.smallest > self.largest {
            return Err("smallest key is after largest key");
        }
        if let Some(len) = self.max_inline_value_len {
            let len = u64::from(len);
            if (self.inline_values == 0 && len > 0) || len > self.raw_value_bytes {
                return Err("longest inline value does not fit the inline values");
            }
        }
        if !self.slot.v1_refs {
            let p = self.slot.prefix_len as usize;
            if p != self.common_prefix_len as usize {
                return Err("stripped prefix differs from the common prefix");
            }
            let (small, large) = (&self.smallest.user_key, &self.largest.user_key);
            if small.len() < p || large.get(..p) != small.get(..p) {
                return Err("key range does not share the stripped prefix");
            }
        }
        self.slot
            .validate(self.key_width, self.inline_values, self.pointers)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::ValueKind;

    fn sample() -> Properties {
        Properties {
            entries: 10,
            key_width: 5,
            block_records: 4,
            blocks: 3,
            common_prefix_len: 1,
            bloom_bits_per_key: 10,
            deletes: 2,
            inline_values: 5,
            pointers: 3,
            raw_key_bytes: 40,
            raw_value_bytes: 99,
            pointer_value_bytes: 12345,
            smallest: InternalKey::new(b"a".to_vec(), 9, ValueKind::Value),
            largest: InternalKey::new(b"azzzz".to_vec(), 1, ValueKind::Delete),
            slot: SlotParams::v1(5),
            max_inline_value_len: None,
        }
    }

    fn sample_v2() -> Properties {
        let mut p = sample();
        p.slot = SlotParams {
            prefix_len: 1,
            head_bytes: 3,
            len_bytes: 1,
            fixed_rest_len: 0,
            suffix_bytes: 2,
            trailer_bytes: 3,
            trailer_base: 5 << 8,
            ref_bytes: 20,
            v1_refs: false,
            end_refs: false,
        };
        p
    }

    #[test]
    fn roundtrip() {
        let p = sample();
        let got = Properties::decode(&p.encode(), 1, Path::new("x"), 0).unwrap();
        assert_eq!(got, p);
        assert_eq!(got.slot_bytes(), 35);
        let p = sample_v2();
        let got = Properties::decode(&p.encode(), 2, Path::new("x"), 0).unwrap();
        assert_eq!(got, p);
        assert_eq!(got.slot_bytes(), 3 + 1 + 2 + 3 + 20);
        // The slot layout must fit the entries: pointers need a 20-byte reference.
        let mut p = sample_v2();
        p.slot.ref_bytes = 8;
        assert!(Properties::decode(&p.encode(), 2, Path::new("x"), 0).is_err());
        // Version 7 reads a 2-byte reference as an end reference; earlier versions refuse it.
        let mut p = sample_v2();
        (p.inline_values, p.pointers, p.pointer_value_bytes) = (8, 0, 0);
        p.max_inline_value_len = Some(10);
        p.slot.ref_bytes = 2;
        p.slot.end_refs = true;
        let got = Properties::decode(&p.encode(), 7, Path::new("x"), 0).unwrap();
        assert_eq!(got, p);
        assert!(got.slot.end_only_refs());
        assert!(Properties::decode(&p.encode(), 6, Path::new("x"), 0).is_err());
    }

    #[test]
    fn the_longest_inline_value_is_recorded_from_version_4() {
        let path = Path::new("x");
        let mut p = sample_v2();
        p.max_inline_value_len = Some(40);
        let got = Properties::decode(&p.encode(), 4, path, 0).unwrap();
        assert_eq!(got.max_inline_value_len, Some(40));
        assert_eq!(got, p);
        // Version 3 has no such field: its bytes are trailing there, and missing in 4.
        assert!(Properties::decode(&p.encode(), 3, path, 0).is_err());
        assert!(Properties::decode(&sample_v2().encode(), 4, path, 0).is_err());
        assert_eq!(
            Properties::decode(&sample_v2().encode(), 3, path, 0)
                .unwrap()
                .max_inline_value_len,
            None
        );
        // Longer than all inline bytes together, or set without inline values: corrupt.
        p.max_inline_value_len = Some(100);
        assert!(Properties::decode(&p.encode(), 4, path, 0).is_err());
        let mut p = sample_v2();
        p.inline_values = 0;
        p.deletes = 7;
        p.max_inline_value_len = Some(1);
        assert!(Properties::decode(&p.encode(), 4, path, 0).is_err());
    }

    #[test]
    fn rejects_inconsistent_or_short() {
        let path = Path::new("x");
        for (p, version) in [(sample(), 1), (sample_v2(), 2)] {
            let enc = p.encode();
            for cut in 0..enc.len() {
                assert!(Properties::decode(&enc[..cut], version, path, 0).is_err());
            }
            let mut long = enc.clone();
            long.push(0);
            assert!(Properties::decode(&long, version, path, 0).is_err());
        }
        let mut p = sample();
        p.blocks = 2;
        assert!(Properties::decode(&p.encode(), 1, path, 0).is_err());
        let mut p = sample();
        p.deletes = 3;
        assert!(Properties::decode(&p.encode(), 1, path, 0).is_err());
        let mut p = sample();
        p.key_width = 2;
        assert!(Properties::decode(&p.encode(), 1, path, 0).is_err());
    }
}
