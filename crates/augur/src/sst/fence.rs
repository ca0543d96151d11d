//! The fence-pointer index: for every data block, its last internal key, where the block and
//! its chunk of the value section lie, and their checksums. This is the baseline index of the read
//! path (LevelDB's index block); learned indexes will later sit beside it behind one `Index`
//! trait whose `search` returns a position window, which is why [`FenceIndex::search`]
//! already answers in positions rather than blocks.
//!
//! Encoding, one record per block in block order (format 1):
//! `last_user_key (varint len + bytes) | last_trailer u64 | slots_crc u32 | values_end u64 |
//! values_crc u32`; format 2 adds where the block ends and how its value chunk is stored:
//! `last_user_key | last_trailer u64 | data_end u64 | block_crc u32 | values_end u64 |
//! values_crc u32 | codec u8 | raw_len u32`. Block `b`'s value chunk is
//! `[values_end(b-1), values_end(b))` of the value section (`values_end(-1) = 0`); in format 2
//! block `b` is `[data_end(b-1), data_end(b))` of the data section, its slots then its key
//! suffixes (format 1: its slots at `position × slot size`). Format 5 appends
//! `block_prefix_len u16`: the length of the prefix every key of the block shares, at least
//! the file's stripped prefix and at most the last key's length; its bytes are the last key's
//! first bytes, so the slots hold each key past it ([`FenceIndex::block_prefix`]). Format 6
//! appends `block_codec u8 | block_raw_len u32`: how the block itself is stored (0 raw, else
//! compressed with the codec of its low bits, packed as its high bit says,
//! `sst::block_codec`) and its length once decompressed; `block_crc` covers the stored bytes.
//! Format 7 stores the same fields compactly ([`Record::encode_compact`]): each last key past
//! the bytes it shares with the previous block's, the lengths of the block and its value
//! chunk instead of where they end, and every other number but the checksums and codecs as a
//! varint. The index is decoded once, when the table opens, so its form costs no lookup.
//!
//! Invariants checked on decode: one record per block of the properties, last keys strictly
//! increasing in internal order, `values_end` (and `data_end`) non-decreasing and ending at
//! the section's length, every block (its raw length in format 6) long enough for its slots
//! and no longer than its keys can make it, known codecs (and an uncompressed chunk's or
//! block's raw length equal to its stored length), the last record's key equal to the
//! table's largest key.

use crate::coding::{put_bytes, put_u16, put_u32, put_u64, put_varint, Decoder};
use crate::error::{Error, Result};
use crate::key::{compare, MAX_KEY_LEN};
use crate::index::projection::common_prefix_len;
use crate::sst::format::{
    BLOCK_PREFIX_FORMAT_VERSION, COMPACT_INDEX_FORMAT_VERSION, COMPRESSED_BLOCK_FORMAT_VERSION,
    INTERLEAVED_FORMAT_VERSION,
};
use crate::sst::properties::Properties;
use std::cmp::Ordering;
use std::ops::Range;
use std::path::Path;

/// Where one data block and its value chunk lie, and their checksums.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BlockMeta {
    /// Start of the block, relative to the data section.
    pub(crate) data_start: u64,
    /// End of the block (its slots, then its key suffixes, as stored), relative to the data
    /// section.
    pub(crate) data_end: u64,
    /// Masked CRC32C of the block's stored bytes (slots and suffixes, or their compressed
    /// form).
    pub(crate) slots_crc: u32,
    /// How the block is stored (`compression::Codec` byte; 0 = uncompressed, always before
    /// format 6).
    pub(crate) block_codec: u8,
    /// Length of the block once decompressed (its stored length when uncompressed).
    pub(crate) block_raw_len: u64,
    /// Start of the block's values, relative to the value section.
    pub(crate) values_start: u64,
    /// End of the block's values, relative to the value section.
    pub(crate) values_end: u64,
    /// Masked CRC32C of the block's value chunk, as stored.
    pub(crate) values_crc: u32,
    /// How the value chunk is stored (`compression::Codec` byte; 0 = uncompressed).
    pub(crate) codec: u8,
    /// Length of the value chunk once decompressed.
    pub(crate) raw_len: u32,
}

/// One fence record (builder side).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Record<'k> {
    pub(crate) last_user_key: &'k [u8],
    /// The previous block's last user key (empty for the first block): format 7 stores
    /// `last_user_key` past the bytes the two share.
    pub(crate) prev_user_key: &'k [u8],
    /// Where the block starts in the data section (the previous block's `values_end`; 0 for
    /// the first): format 7 stores the block's length.
    pub(crate) data_start: u64,
    pub(crate) last_trailer: u64,
    pub(crate) data_end: u64,
    pub(crate) block_crc: u32,
    pub(crate) values_end: u64,
    pub(crate) values_crc: u32,
    pub(crate) codec: u8,
    pub(crate) raw_len: u32,
    /// Length of the block's shared key prefix (format 5; the file's stripped prefix or more).
    pub(crate) block_prefix_len: u16,
    /// How the block is stored (format 6; 0 = uncompressed).
    pub(crate) block_codec: u8,
    /// Length of the block once decompressed (format 6; its stored length when uncompressed).
    pub(crate) block_raw_len: u32,
}

impl Record<'_> {
    /// Appends the record to `buf` as format `version` (2 or later) writes it.
    pub(crate) fn encode_as(&self, version: u32, buf: &mut Vec<u8>) {
        if version >= COMPACT_INDEX_FORMAT_VERSION {
            self.encode_compact(buf);
            return;
        }
        self.encode_v2(buf);
        if version >= BLOCK_PREFIX_FORMAT_VERSION {
            put_u16(buf, self.block_prefix_len);
        }
        if version >= COMPRESSED_BLOCK_FORMAT_VERSION {
            buf.push(self.block_codec);
            put_u32(buf, self.block_raw_len);
        }
    }

    /// Appends the record to `buf` as the current format writes it.
    pub(crate) fn encode(&self, buf: &mut Vec<u8>) {
        self.encode_as(crate::sst::format::FORMAT_VERSION, buf);
    }

    /// Format 7's record: `shared varint | unshared varint | last_user_key[shared..] |
    /// last_trailer varint | block_len varint | block_crc u32 | values_len varint | values_crc
    /// u32 | codec u8 | raw_len varint | block_prefix_len varint | block_codec u8 |
    /// block_raw_len varint`, where `shared` is the length of the prefix the last key shares
    /// with the previous block's, `block_len = data_end − data_start` and `values_len =
    /// values_end − data_end` (the value chunk follows its block).
    fn encode_compact(&self, buf: &mut Vec<u8>) {
        let shared = common_prefix_len(self.prev_user_key, self.last_user_key);
        let unshared = self.last_user_key.get(shared..).unwrap_or_default();
        put_varint(buf, shared as u64);
        put_bytes(buf, unshared);
        put_varint(buf, self.last_trailer);
        put_varint(buf, self.data_end.saturating_sub(self.data_start));
        put_u32(buf, self.block_crc);
        put_varint(buf, self.values_end.saturating_sub(self.data_end));
        put_u32(buf, self.values_crc);
        buf.push(self.codec);
        put_varint(buf, u64::from(self.raw_len));
        put_varint(buf, u64::from(self.block_prefix_len));
        buf.push(self.block_codec);
        put_varint(buf, u64::from(self.block_raw_len));
    }

    /// The fields formats 2 to 6 share.
    fn encode_v2(&self, buf: &mut Vec<u8>) {
        put_bytes(buf, self.last_user_key);
        put_u64(buf, self.last_trailer);
        put_u64(buf, self.data_end);
        put_u32(buf, self.block_crc);
        put_u64(buf, self.values_end);
        put_u32(buf, self.values_crc);
        buf.push(self.codec);
        put_u32(buf, self.raw_len);
    }
}

/// Appends one format-1 fence record to `buf` (tests write format-1 tables).
#[cfg(any(test, feature = "test-util"))]
pub(crate) fn encode_record(
    buf: &mut Vec<u8>,
    last_user_key: &[u8],
    last_trailer: u64,
    slots_crc: u32,
    values_end: u64,
    values_crc: u32,
) {
    put_bytes(buf, last_user_key);
    put_u64(buf, last_trailer);
    put_u32(buf, slots_crc);
    put_u64(buf, values_end);
    put_u32(buf, values_crc);
}

impl BlockMeta {
    /// Its bounds.
    pub(crate) fn span(&self) -> BlockSpan {
        BlockSpan {
            data_start: self.data_start,
            data_end: self.data_end,
            values_start: self.values_start,
            values_end: self.values_end,
        }
    }
}

/// The largest value-chunk codec byte a reader knows (`compression::Codec`).
pub(crate) const MAX_CODEC: u8 = 2;

/// What the fence index is checked against besides the properties.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SectionLens {
    /// The table's format version.
    pub(crate) version: u32,
    /// Length of the data section.
    pub(crate) data_len: u64,
    /// Length of the value section.
    pub(crate) values_len: u64,
}

/// What the index keeps in memory per block: the [`BlockMeta`] fields that do not follow
/// from the block before (where a block and its chunk start), 32 bytes instead of 48; the
/// index is pinned for every open table, so its size per block is memory that grows with
/// the data.
#[derive(Debug, Clone, Copy)]
struct StoredBlock {
    data_end: u64,
    values_end: u64,
    slots_crc: u32,
    values_crc: u32,
    raw_len: u32,
    codec: u8,
}

/// How a compressed table's block is stored (format 6), kept beside [`StoredBlock`] only by
/// tables with a compressed block.
#[derive(Debug, Clone, Copy)]
struct StoredCodec {
    raw_len: u32,
    codec: u8,
}

impl StoredBlock {
    /// Where a block starts in the data section, after the block `before` it (`None`: the
    /// first block): format 3 puts it where the previous block's value chunk ends, earlier
    /// formats where the previous block ends.
    fn data_start(before: Option<&StoredBlock>, interleaved: bool) -> u64 {
        before.map_or(0, |p| if interleaved { p.values_end } else { p.data_end })
    }

    /// Where a block's value chunk starts: right after the block (ending at `data_end`) in
    /// format 3, where the previous chunk ends in the value section of earlier formats.
    fn values_start(before: Option<&StoredBlock>, data_end: u64, interleaved: bool) -> u64 {
        if interleaved {
            data_end
        } else {
            before.map_or(0, |p| p.values_end)
        }
    }
}

/// The decoded fence-pointer index of one table.
#[derive(Debug)]
pub(crate) struct FenceIndex {
    entries: u64,
    block_records: u64,
    /// Format 3 and later: block `b`'s value chunk follows it in the data section and
    /// block `b + 1` starts where that chunk ends (see [`FenceIndex::meta`]).
    interleaved: bool,
    /// Last user keys of all blocks, concatenated; block `b`'s key ends at `key_ends[b]`
    /// (decode refuses a section whose keys pass 4 GiB).
    last_keys: Vec<u8>,
    key_ends: Vec<u32>,
    last_trailers: Vec<u64>,
    blocks: Vec<StoredBlock>,
    /// Format 5: per block, the bytes its keys share past the file's stripped prefix (its
    /// shared prefix is the stripped prefix and these bytes of its last key). Empty when no
    /// block has any, so older formats and files without them pay no memory access.
    prefix_exts: Vec<u16>,
    /// Length of the file's stripped prefix.
    stripped_len: usize,
    /// Format 6: per block, its codec and raw length. Empty when every block is stored
    /// uncompressed, so such tables keep format 5's memory and read path.
    block_codecs: Vec<StoredCodec>,
    /// When every block but the last is stored uncompressed with the same length and value
    /// chunk length (fixed-width keys and values: db_bench's, integer keys), those lengths:
    /// where such a block lies is computed ([`FenceIndex::uniform_span`]), so a lookup's
    /// slot address does not wait for its block's record to come from memory.
    uniform: Option<UniformBlocks>,
}

/// The common stored lengths of a table's blocks but the last ([`FenceIndex::uniform_span`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct UniformBlocks {
    /// Stored length of each block (slots and key suffixes).
    data_len: u64,
    /// Stored length of each value chunk.
    values_len: u64,
}

/// Where a block and its value chunk lie (the bounds of [`BlockMeta`] without its
/// checksums and codecs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BlockSpan {
    /// Start of the block, relative to the data section.
    pub(crate) data_start: u64,
    /// End of the block, relative to the data section.
    pub(crate) data_end: u64,
    /// Start of the block's values, relative to the value section.
    pub(crate) values_start: u64,
    /// End of the block's values, relative to the value section.
    pub(crate) values_end: u64,
}

impl FenceIndex {
    /// Decodes and validates the index section read from `offset` of `file`, a table of
    /// format `version` whose value section is `values_len` bytes and data section
    /// `data_len` bytes.
    ///
    /// # Errors
    /// `Corruption` when the section is malformed or inconsistent with `props` or with the
    /// section lengths.
    pub(crate) fn decode(
        bytes: &[u8],
        props: &Properties,
        sections: SectionLens,
        file: &Path,
        offset: u64,
    ) -> Result<FenceIndex> {
        let corrupt = |at: usize, why: &str| {
            Error::corruption(file, offset + at as u64, format!("fence index: {why}"))
        };
        let capacity = usize::try_from(props.blocks.min(bytes.len() as u64)).unwrap_or(0);
        let interleaved = sections.version >= INTERLEAVED_FORMAT_VERSION;
        let mut index = FenceIndex {
            entries: props.entries,
            block_records: u64::from(props.block_records),
            interleaved,
            last_keys: Vec::new(),
            key_ends: Vec::with_capacity(capacity),
            last_trailers: Vec::with_capacity(capacity),
            blocks: Vec::with_capacity(capacity),
            prefix_exts: Vec::new(),
            stripped_len: props.slot.prefix_len as usize,
            block_codecs: Vec::new(),
            uniform: None,
        };
        let block_prefixes = sections.version >= BLOCK_PREFIX_FORMAT_VERSION;
        let mut exts = Vec::with_capacity(if block_prefixes { capacity } else { 0 });
        let compressed_blocks = sections.version >= COMPRESSED_BLOCK_FORMAT_VERSION;
        let mut codecs = Vec::with_capacity(if compressed_blocks { capacity } else { 0 });
        let key_width = u64::from(props.key_width);
        let slot_bytes = props.slot_bytes();
        let v1 = sections.version == 1;
        // Format 3: block b's value chunk follows it in the data section, and block b + 1
        // starts where that chunk ends; offsets of both are relative to the data section.
        let values_len = if interleaved {
            if sections.values_len != 0 {
                return Err(corrupt(0, "interleaved table with a non-empty value section"));
            }
            sections.data_len
        } else {
            sections.values_len
        };
        let compact = sections.version >= COMPACT_INDEX_FORMAT_VERSION;
        let mut key = Vec::new();
        let mut d = Decoder::new(bytes);
        while !d.is_empty() {
            let before = index.blocks.last().copied();
            let data_start = StoredBlock::data_start(before.as_ref(), interleaved);
            let at = d.position();
            let short = || corrupt(at, "record is truncated");
            let varint_u32 = |d: &mut Decoder<'_>| {
                u32::try_from(d.varint().ok_or_else(short)?)
                    .map_err(|_| corrupt(at, "field exceeds 32 bits"))
            };
            if compact {
                let shared = d.varint().ok_or_else(short)?;
                if shared > key.len() as u64 {
                    return Err(corrupt(at, "shares more than the previous last key"));
                }
                key.truncate(shared as usize);
            } else {
                key.clear();
            }
            key.extend_from_slice(d.length_prefixed().ok_or_else(short)?);
            let trailer = if compact { d.varint() } else { d.u64() }.ok_or_else(short)?;
            let positions = index.block_positions(index.blocks.len() as u64);
            let slots_len = (positions.end - positions.start).saturating_mul(slot_bytes);
            let data_end = if v1 {
                data_start.saturating_add(slots_len)
            } else if compact {
                data_start.saturating_add(d.varint().ok_or_else(short)?)
            } else {
                d.u64().ok_or_else(short)?
            };
            let slots_crc = d.u32().ok_or_else(short)?;
            let values_start = StoredBlock::values_start(before.as_ref(), data_end, interleaved);
            let values_end = if compact {
                values_start.saturating_add(d.varint().ok_or_else(short)?)
            } else {
                d.u64().ok_or_else(short)?
            };
            let values_crc = d.u32().ok_or_else(short)?;
            let (codec, raw_len) = if v1 {
                let len = values_end.saturating_sub(values_start);
                (0, u32::try_from(len).map_err(|_| corrupt(at, "value chunk too long"))?)
            } else if compact {
                (d.u8().ok_or_else(short)?, varint_u32(&mut d)?)
            } else {
                (d.u8().ok_or_else(short)?, d.u32().ok_or_else(short)?)
            };
            if block_prefixes {
                let len = if compact {
                    u16::try_from(d.varint().ok_or_else(short)?)
                        .map_err(|_| corrupt(at, "block prefix longer than a key"))?
                } else {
                    d.u16().ok_or_else(short)?
                };
                let len = usize::from(len);
                if len < index.stripped_len || len > key.len() {
                    return Err(corrupt(at, "block prefix outside the stripped prefix and last key"));
                }
                exts.push((len - index.stripped_len) as u16);
            }
            let block_codec = if compressed_blocks {
                let codec = d.u8().ok_or_else(short)?;
                let raw_len = if compact {
                    varint_u32(&mut d)?
                } else {
                    d.u32().ok_or_else(short)?
                };
                codecs.push(StoredCodec { raw_len, codec });
                Some((codec, u64::from(raw_len)))
            } else {
                None
            };
            if key.len() > MAX_KEY_LEN || key.len() > props.key_width as usize {
                return Err(corrupt(at, "last key longer than the key width"));
            }
            if let Some((prev_key, prev_trailer)) = index.last_key(index.blocks.len() as u64) {
                if compare(prev_key, prev_trailer, &key, trailer) != Ordering::Less {
                    return Err(corrupt(at, "last keys are not increasing"));
                }
            }
            if values_end < values_start || values_end > values_len {
                return Err(corrupt(at, "value chunk bounds out of order"));
            }
            if data_end < data_start || data_end > sections.data_len {
                return Err(corrupt(at, "data block bounds out of order"));
            }
            let block_stored = data_end - data_start;
            let (block_codec, block_raw) = block_codec.unwrap_or((0, block_stored));
            if !crate::sst::block_codec::valid_codec_byte(block_codec)
                || (block_codec == 0 && block_raw != block_stored)
                || (block_codec != 0 && block_stored == 0)
            {
                return Err(corrupt(at, "bad data block codec or length"));
            }
            if block_raw < slots_len {
                return Err(corrupt(at, "data block bounds out of order"));
            }
            // Without key suffixes a block is its slots alone (readers compute its offset).
            if props.slot.suffix_bytes == 0 && block_raw != slots_len {
                return Err(corrupt(at, "data block longer than its slots"));
            }
            // A key's overflow is shorter than the longest key: what a compressed block may
            // claim (and a reader allocate) is bounded by its slots.
            let count = positions.end - positions.start;
            if block_codec != 0
                && block_raw > slots_len.saturating_add(count.saturating_mul(key_width))
            {
                return Err(corrupt(at, "compressed data block longer than its keys"));
            }
            let stored_len = values_end - values_start;
            if codec > MAX_CODEC
                || (codec == 0 && u64::from(raw_len) != stored_len)
                || (codec != 0 && (stored_len == 0 || raw_len == 0))
            {
                return Err(corrupt(at, "bad value chunk codec or length"));
            }
            index.last_keys.extend_from_slice(&key);
            let key_end = u32::try_from(index.last_keys.len())
                .map_err(|_| corrupt(at, "last keys pass 4 GiB"))?;
            index.key_ends.push(key_end);
            index.last_trailers.push(trailer);
            index.blocks.push(StoredBlock {
                data_end,
                values_end,
                slots_crc,
                values_crc,
                raw_len,
                codec,
            });
        }
        if index.blocks.len() as u64 != props.blocks {
            return Err(corrupt(0, "record count differs from the block count"));
        }
        if exts.iter().any(|&e| e != 0) {
            index.prefix_exts = exts;
        }
        if codecs.iter().any(|c| c.codec != 0) {
            index.block_codecs = codecs;
        }
        let last = index.blocks.last();
        if !interleaved && last.map_or(0, |b| b.values_end) != sections.values_len {
            return Err(corrupt(0, "value chunks do not cover the value section"));
        }
        if StoredBlock::data_start(last, interleaved) != sections.data_len {
            return Err(corrupt(0, "data blocks do not cover the data section"));
        }
        let largest = &props.largest;
        if index.last_key(props.blocks) != Some((&largest.user_key[..], largest.trailer())) {
            return Err(corrupt(0, "last key differs from the table's largest key"));
        }
        index.uniform = index.find_uniform();
        Ok(index)
    }

    /// [`UniformBlocks`] when every block but the last has the same stored lengths and
    /// nothing is compressed; checked against the records, so a computed span always equals
    /// the recorded one.
    fn find_uniform(&self) -> Option<UniformBlocks> {
        if !self.block_codecs.is_empty() || self.blocks.iter().any(|b| b.codec != 0) {
            return None;
        }
        let first = self.meta(0)?;
        let uniform = UniformBlocks {
            data_len: first.data_end - first.data_start,
            values_len: first.values_end - first.values_start,
        };
        let but_last = self.block_count().checked_sub(1)?;
        (0..but_last)
            .all(|b| {
                self.meta(b)
                    .is_some_and(|m| Some(m.span()) == self.computed_span(uniform, b))
            })
            .then_some(uniform)
    }

    /// Block `block`'s span in a table of `uniform` blocks, by arithmetic.
    fn computed_span(&self, uniform: UniformBlocks, block: u64) -> Option<BlockSpan> {
        let UniformBlocks { data_len, values_len } = uniform;
        Some(if self.interleaved {
            let data_start = block.checked_mul(data_len.checked_add(values_len)?)?;
            let data_end = data_start.checked_add(data_len)?;
            BlockSpan {
                data_start,
                data_end,
                values_start: data_end,
                values_end: data_end.checked_add(values_len)?,
            }
        } else {
            let data_start = block.checked_mul(data_len)?;
            let values_start = block.checked_mul(values_len)?;
            BlockSpan {
                data_start,
                data_end: data_start.checked_add(data_len)?,
                values_start,
                values_end: values_start.checked_add(values_len)?,
            }
        })
    }

    /// Where `block` and its value chunk lie, computed without touching its record when the
    /// table's blocks are uniform and `block` is not the last; `None` otherwise (read the
    /// record: [`FenceIndex::meta`]).
    #[inline]
    pub(crate) fn uniform_span(&self, block: u64) -> Option<BlockSpan> {
        let uniform = self.uniform?;
        if block.checked_add(1)? >= self.block_count() {
            return None;
        }
        self.computed_span(uniform, block)
    }

    /// Hints that `block`'s record (and the one before it, which says where it starts) will
    /// be read soon.
    #[inline]
    pub(crate) fn prefetch_meta(&self, block: u64) {
        let Ok(b) = usize::try_from(block) else { return };
        if let Some(this) = self.blocks.get(b) {
            crate::prefetch::prefetch_value(this);
        }
        if let Some(before) = b.checked_sub(1).and_then(|p| self.blocks.get(p)) {
            crate::prefetch::prefetch_value(before);
        }
    }

    /// Last internal key `(user key, trailer)` of the block before `end_block`, i.e. of block
    /// `end_block - 1`; `None` for 0 or out of range.
    fn last_key(&self, end_block: u64) -> Option<(&[u8], u64)> {
        let b = usize::try_from(end_block.checked_sub(1)?).ok()?;
        let start = match b.checked_sub(1) {
            Some(prev) => *self.key_ends.get(prev)? as usize,
            None => 0,
        };
        let end = *self.key_ends.get(b)? as usize;
        Some((self.last_keys.get(start..end)?, *self.last_trailers.get(b)?))
    }

    /// Bytes of block `block`'s shared key prefix past the file's stripped prefix (0 before
    /// format 5): its slots hold each key past `stripped ++` [`FenceIndex::block_prefix`].
    #[inline]
    pub(crate) fn block_prefix_ext(&self, block: u64) -> usize {
        if self.prefix_exts.is_empty() {
            return 0;
        }
        usize::try_from(block)
            .ok()
            .and_then(|b| self.prefix_exts.get(b))
            .map_or(0, |&e| usize::from(e))
    }

    /// The bytes block `block`'s keys share past the file's stripped prefix (empty before
    /// format 5): its last key's, past the stripped prefix, [`Self::block_prefix_ext`] long.
    #[inline]
    pub(crate) fn block_prefix(&self, block: u64) -> &[u8] {
        let ext = self.block_prefix_ext(block);
        if ext == 0 {
            return &[];
        }
        self.block_last_key(block)
            .and_then(|(k, _)| k.get(self.stripped_len..self.stripped_len + ext))
            .unwrap_or_default()
    }

    /// The last internal key of block `block`.
    pub(crate) fn block_last_key(&self, block: u64) -> Option<(&[u8], u64)> {
        self.last_key(block.checked_add(1)?)
    }

    /// Position window `[lo, hi)` that contains the first entry `>= (user_key, trailer)` in
    /// internal order: the slots of the first block whose last key is `>=` the target. When
    /// every entry is smaller, returns the empty window `[entries, entries)` (the lower bound
    /// is then `entries`). O(log blocks) key comparisons, no allocation.
    pub(crate) fn search(&self, user_key: &[u8], trailer: u64) -> Range<u64> {
        let (mut lo, mut hi) = (0u64, self.block_count());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let below = self
                .block_last_key(mid)
                .is_some_and(|(k, t)| compare(k, t, user_key, trailer) == Ordering::Less);
            if below {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        self.block_positions(lo)
    }

    /// True when some data block is stored compressed (format 6).
    pub(crate) fn has_compressed_blocks(&self) -> bool {
        !self.block_codecs.is_empty()
    }

    /// Sum of the raw (decompressed) lengths of the value chunks.
    pub(crate) fn raw_value_bytes(&self) -> u64 {
        self.blocks.iter().map(|b| u64::from(b.raw_len)).sum()
    }

    /// Stored (possibly compressed) bytes of all value chunks.
    pub(crate) fn stored_value_bytes(&self) -> u64 {
        (0..self.block_count())
            .filter_map(|b| self.meta(b))
            .map(|m| m.values_end - m.values_start)
            .sum()
    }

    /// Number of data blocks.
    pub(crate) fn block_count(&self) -> u64 {
        self.blocks.len() as u64
    }

    /// Entries per block (the last block may hold fewer).
    pub(crate) fn block_records(&self) -> u64 {
        self.block_records
    }

    /// The block holding position `pos`.
    pub(crate) fn block_of(&self, pos: u64) -> u64 {
        pos / self.block_records
    }

    /// Positions of the slots of `block` (empty at `entries` past the last block).
    pub(crate) fn block_positions(&self, block: u64) -> Range<u64> {
        let start = block.saturating_mul(self.block_records).min(self.entries);
        let end = start.saturating_add(self.block_records).min(self.entries);
        start..end
    }

    /// Checksums and bounds of `block` and of its value chunk; where they start follows from
    /// the block before (`StoredBlock::data_start`, `StoredBlock::values_start`).
    pub(crate) fn meta(&self, block: u64) -> Option<BlockMeta> {
        let b = usize::try_from(block).ok()?;
        let this = self.blocks.get(b)?;
        let before = b.checked_sub(1).and_then(|p| self.blocks.get(p));
        let data_start = StoredBlock::data_start(before, self.interleaved);
        let (block_codec, block_raw_len) = match self.block_codecs.get(b) {
            Some(c) => (c.codec, u64::from(c.raw_len)),
            None => (0, this.data_end - data_start),
        };
        Some(BlockMeta {
            data_start,
            data_end: this.data_end,
            slots_crc: this.slots_crc,
            block_codec,
            block_raw_len,
            values_start: StoredBlock::values_start(before, this.data_end, self.interleaved),
            values_end: this.values_end,
            values_crc: this.values_crc,
            codec: this.codec,
            raw_len: this.raw_len,
        })
    }

    /// The section this index decodes from (written as format `version`), with every length
    /// in its shortest varint: equal to the builder's bytes for a section it wrote.
    #[cfg(any(test, feature = "test-util"))]
    pub(crate) fn encode(&self, version: u32) -> Vec<u8> {
        let mut out = Vec::new();
        for (b, meta) in self.blocks.iter().enumerate() {
            if let Some((key, trailer)) = self.block_last_key(b as u64) {
                if version == 1 {
                    encode_record(
                        &mut out,
                        key,
                        trailer,
                        meta.slots_crc,
                        meta.values_end,
                        meta.values_crc,
                    );
                } else {
                    let prev = b
                        .checked_sub(1)
                        .and_then(|p| self.block_last_key(p as u64))
                        .map_or(&[][..], |(k, _)| k);
                    let data_start = self.meta(b as u64).map_or(0, |m| m.data_start);
                    Record {
                        last_user_key: key,
                        prev_user_key: prev,
                        data_start,
                        last_trailer: trailer,
                        data_end: meta.data_end,
                        block_crc: meta.slots_crc,
                        values_end: meta.values_end,
                        values_crc: meta.values_crc,
                        codec: meta.codec,
                        raw_len: meta.raw_len,
                        block_prefix_len: (self.stripped_len + self.block_prefix_ext(b as u64))
                            as u16,
                        block_codec: self.block_codecs.get(b).map_or(0, |c| c.codec),
                        block_raw_len: self.meta(b as u64).map_or(0, |m| m.block_raw_len as u32),
                    }
                    .encode_as(version, &mut out);
                }
            }
        }
        out
    }

    /// Heap bytes held by the index (model memory accounting).
    pub(crate) fn size_bytes(&self) -> usize {
        self.last_keys.len()
            + self.key_ends.len() * std::mem::size_of::<u32>()
            + self.last_trailers.len() * 8
            + self.blocks.len() * std::mem::size_of::<StoredBlock>()
            + self.prefix_exts.len() * std::mem::size_of::<u16>()
            + self.block_codecs.len() * std::mem::size_of::<StoredCodec>()
    }
}

#[cfg(test)]
#[path = "fence_tests.rs"]
mod tests;
