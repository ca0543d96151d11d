//! Entry points for the fuzz targets of `fuzz/` (issue 13) into decoders that the public API
//! only runs inside [`crate::sst::Table::open`] and the table's read path: the SSTable filter
//! section (`sst/filter.rs`) and fence-pointer index section (`sst/fence.rs`), each on its
//! own, and their builders; the format-2 key slot codec (`sst/slot.rs`). Built only with the
//! `test-util` feature; not part of the API (the engine keeps these types crate-private, and
//! these wrappers expose only what a target checks).

use crate::error::Result;
use crate::sst::block_codec::{self, BlockShape};
use crate::sst::fence::{FenceIndex, SectionLens};
use crate::sst::filter::{key_hash, Bloom, FilterBuilder};
use crate::sst::slot::{self, Probe, SlotLayout};
use crate::sst::{Properties, SlotParams};
use std::cmp::Ordering;
use std::ops::Range;
use std::path::Path;

/// A decoded filter section.
#[derive(Debug)]
pub struct Filter(Bloom);

impl Filter {
    /// Decodes a non-empty filter section read from `offset` of `file`, as `Table::open` does.
    ///
    /// # Errors
    /// `Corruption` naming `file` when the section is malformed.
    pub fn decode(section: &[u8], file: &Path, offset: u64) -> Result<Filter> {
        Bloom::decode_section(section, file, offset).map(Filter)
    }

    /// False only when `user_key` was certainly not added.
    pub fn may_contain(&self, user_key: &[u8]) -> bool {
        self.0.may_contain(user_key)
    }

    /// [`Filter::may_contain`] through the read path's hash-once entry (with its prefetch).
    pub fn may_contain_prefetched(&self, user_key: &[u8]) -> bool {
        let h = key_hash(user_key);
        self.0.prefetch(h);
        self.0.may_contain_hash(h)
    }

    /// The section bytes this filter decodes from.
    pub fn encode(&self) -> Vec<u8> {
        self.0.encode()
    }

    /// Heap bytes held by the filter.
    pub fn size_bytes(&self) -> usize {
        self.0.size_bytes()
    }
}

/// The filter section the table builder writes for `keys` (each distinct user key once) at
/// `bits_per_key` (0: no filter, an empty section), and the size it predicted for it.
pub fn build_filter<'a>(
    bits_per_key: u32,
    keys: impl IntoIterator<Item = &'a [u8]>,
) -> (Vec<u8>, u64) {
    let mut b = FilterBuilder::new(bits_per_key);
    for k in keys {
        b.add(k);
    }
    (b.finish(), b.estimated_bytes())
}

/// A decoded fence-pointer index section.
#[derive(Debug)]
pub struct Fence(FenceIndex);

impl Fence {
    /// Decodes and validates the index section of a table of format `version` read from
    /// `offset` of `file`, against the table's properties and data- and value-section
    /// lengths, as `Table::open` does.
    ///
    /// # Errors
    /// `Corruption` naming `file` when the section is malformed or inconsistent.
    pub fn decode(
        bytes: &[u8],
        props: &Properties,
        (version, data_len, values_len): (u32, u64, u64),
        file: &Path,
        offset: u64,
    ) -> Result<Fence> {
        let lens = SectionLens {
            version,
            data_len,
            values_len,
        };
        FenceIndex::decode(bytes, props, lens, file, offset).map(Fence)
    }

    /// Positions of the block holding the first entry `>= (user_key, trailer)` in internal
    /// order (`entries..entries` when every entry is smaller).
    pub fn search(&self, user_key: &[u8], trailer: u64) -> Range<u64> {
        self.0.search(user_key, trailer)
    }

    /// Number of data blocks.
    pub fn block_count(&self) -> u64 {
        self.0.block_count()
    }

    /// The block holding position `pos`.
    pub fn block_of(&self, pos: u64) -> u64 {
        self.0.block_of(pos)
    }

    /// Positions of the slots of `block`.
    pub fn block_positions(&self, block: u64) -> Range<u64> {
        self.0.block_positions(block)
    }

    /// The last internal key `(user key, trailer)` of `block`.
    pub fn block_last_key(&self, block: u64) -> Option<(&[u8], u64)> {
        self.0.block_last_key(block)
    }

    /// The value-section chunk `[start, end)` of `block`.
    pub fn value_chunk(&self, block: u64) -> Option<Range<u64>> {
        self.0.meta(block).map(|m| m.values_start..m.values_end)
    }

    /// The data-section bytes `[start, end)` of `block` (its slots, then its key suffixes).
    pub fn data_block(&self, block: u64) -> Option<Range<u64>> {
        self.0.meta(block).map(|m| m.data_start..m.data_end)
    }

    /// How the value chunk of `block` is stored: its codec byte and its raw (decompressed)
    /// length.
    pub fn value_codec(&self, block: u64) -> Option<(u8, u32)> {
        self.0.meta(block).map(|m| (m.codec, m.raw_len))
    }

    /// How `block` itself is stored (format 6; codec 0 before): its codec byte and its raw
    /// (decompressed) length.
    pub fn block_codec(&self, block: u64) -> Option<(u8, u64)> {
        self.0.meta(block).map(|m| (m.block_codec, m.block_raw_len))
    }

    /// The section bytes this index decodes from, as format `version` (every length in its
    /// shortest varint).
    pub fn encode(&self, version: u32) -> Vec<u8> {
        self.0.encode(version)
    }

    /// Heap bytes held by the index.
    pub fn size_bytes(&self) -> usize {
        self.0.size_bytes()
    }
}

/// A format-2 slot layout ([`SlotParams`] with its field offsets): how the table builder
/// encodes one key slot and how the read path decodes and compares it (`sst/slot.rs`).
#[derive(Debug, Clone, Copy)]
pub struct Slots(SlotLayout);

/// The fields of one decoded slot and its key's overflow, borrowed from the block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodedSlot<'a> {
    /// The real bytes of the head (the key's first `min(rest_len, head width)` bytes after
    /// the stripped prefix).
    pub head: &'a [u8],
    /// The key's bytes past the head, from the block's suffix chunk.
    pub overflow: &'a [u8],
    /// Length of the key after the stripped prefix.
    pub rest_len: usize,
    /// The full trailer `(seqno << 8) | kind`.
    pub trailer: u64,
    /// The reference field.
    pub reference: &'a [u8],
    /// The head field's padding (past the real head), which a valid slot holds as zeros.
    pub padding: &'a [u8],
}

impl Slots {
    /// The layout of `params` in a file whose longest key has `key_width` bytes.
    pub fn new(params: SlotParams, key_width: u32) -> Slots {
        Slots(SlotLayout::new(params, key_width))
    }

    /// Bytes of one slot.
    pub fn slot_bytes(&self) -> usize {
        self.0.slot
    }

    /// Appends the slot of a key whose bytes after the prefix are `rest`, its overflow at
    /// `suffix_at` of the block's suffix chunk, as the builder does. REQUIRES (the builder's
    /// choice of the layout guarantees them): `rest` fits the length field, `suffix_at` the
    /// suffix field, `trailer - trailer_base` the trailer field, and `reference` is
    /// `ref_bytes` long.
    pub fn encode(
        &self,
        out: &mut Vec<u8>,
        rest: &[u8],
        suffix_at: usize,
        trailer: u64,
        reference: &[u8],
    ) {
        self.0.encode(out, rest, suffix_at, trailer, reference);
    }

    /// Decodes the slot `slot` (one slot's bytes) of a block whose suffix chunk is
    /// `suffixes`, as the read path does; `None` where the read path reports corruption (an
    /// impossible length field, an overflow outside the chunk).
    pub fn decode<'a>(&self, slot: &'a [u8], suffixes: &'a [u8]) -> Option<DecodedSlot<'a>> {
        let raw = self.0.decode(slot, 0)?;
        let overflow = self.0.overflow(&raw, suffixes)?;
        Some(DecodedSlot {
            head: raw.head,
            overflow,
            rest_len: raw.rest_len,
            trailer: raw.trailer,
            reference: raw.reference,
            padding: self.0.head_padding(slot, &raw),
        })
    }

    /// Order of the key held by `slot` (of a block whose suffix chunk is `suffixes`) relative
    /// to `user_key`, in a file whose stripped prefix is `prefix`, as a lookup compares them
    /// (`Probe`: keys without the prefix are below or above every slot; otherwise head bytes
    /// first, then the overflow); `None` when the slot does not decode.
    pub fn key_order(
        &self,
        user_key: &[u8],
        prefix: &[u8],
        slot: &[u8],
        suffixes: &[u8],
    ) -> Option<Ordering> {
        let raw = self.0.decode(slot, 0)?;
        let overflow = self.0.overflow(&raw, suffixes)?;
        Some(Probe::new(user_key, prefix).key_order(self.0.head_bytes(), &raw, overflow))
    }
}

/// Where a data block's fields lie, as format 6's packing sees them (`sst/block_codec.rs`):
/// `slots` slots of `slot_bytes` bytes, each starting with a `head_bytes`-byte head, with a
/// key-length field, a suffix-offset field and an inline-value offset field (`(offset in the
/// slot, width)`, width 0: none), then the key-suffix chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyBlockShape {
    /// Slots in the block.
    pub slots: usize,
    /// Bytes of one slot.
    pub slot_bytes: usize,
    /// Width of the head field.
    pub head_bytes: usize,
    /// The key-length field.
    pub len_field: (usize, usize),
    /// The suffix-offset field.
    pub suffix_field: (usize, usize),
    /// The offset field of an inline value's reference.
    pub value_field: (usize, usize),
}

impl KeyBlockShape {
    fn shape(self) -> BlockShape {
        BlockShape {
            slots: self.slots,
            slot_bytes: self.slot_bytes,
            head_bytes: self.head_bytes,
            len_field: self.len_field,
            suffix_field: self.suffix_field,
            value_field: self.value_field,
        }
    }
}

/// The packed form of `raw`, a data block of `shape`, that format 6 compresses: the slot
/// area transposed (offset fields as differences), then the suffix chunk (`keys_inline`
/// false), or the slots past their heads transposed, then each head and its overflow.
pub fn pack_block(raw: &[u8], shape: KeyBlockShape, keys_inline: bool) -> Vec<u8> {
    let mut out = Vec::new();
    block_codec::pack(raw, shape.shape(), packing(keys_inline), &mut out);
    out
}

/// The block `packed` is the packed form of ([`pack_block`]'s inverse).
pub fn unpack_block(packed: &[u8], shape: KeyBlockShape, keys_inline: bool) -> Vec<u8> {
    let mut out = vec![0; packed.len()];
    block_codec::unpack(packed, shape.shape(), packing(keys_inline), &mut out);
    out
}

fn packing(keys_inline: bool) -> block_codec::Packing {
    if keys_inline {
        block_codec::Packing::KeysInline
    } else {
        block_codec::Packing::Columns
    }
}

/// A data block compressed as the table builder compresses it (format 6): the codec byte to
/// record (0 and no bytes: stored raw; the high bit: packed with its keys inline) and the
/// stored bytes.
pub fn compress_block(
    compression: crate::Compression,
    raw: &[u8],
    shape: KeyBlockShape,
) -> (u8, Vec<u8>) {
    let (mut scratch, mut out) = ([Vec::new(), Vec::new()], Vec::new());
    let codec = block_codec::compress(compression, raw, shape.shape(), &mut scratch, &mut out);
    (codec, out)
}

/// The raw block of a compressed data block stored as `stored` with the codec byte `codec`,
/// of `raw_len` bytes, as a reader decodes it (read from `offset` of `file`).
///
/// # Errors
/// `Corruption` naming `file` as the reader reports it.
pub fn decompress_block(
    stored: &[u8],
    codec: u8,
    raw_len: usize,
    shape: KeyBlockShape,
    file: &Path,
    offset: u64,
) -> Result<Vec<u8>> {
    block_codec::decompress(stored, codec, raw_len, shape.shape(), file, offset)
}

/// Inline-value bytes at which a table builder's sample ends (its layout is then chosen from
/// the sample and the hints, and later entries stream).
pub const SAMPLE_VALUE_BYTES: usize = crate::sst::SAMPLE_VALUE_BYTES;

/// The head width the builder chooses on its own for stored key rests `stored` (past the
/// stripped prefix, or past each block's prefix in format 5) when the file's keys are up to
/// `max_rest` long past the stripped prefix and the head may be up to `widest` wide.
pub fn choose_head_bounded(stored: &[u32], max_rest: u32, widest: u32) -> u32 {
    slot::choose_head_bounded(stored, max_rest, widest)
}

/// The head width the builder chooses on its own for keys of these lengths after the
/// stripped prefix.
pub fn choose_head(rest_lens: &[u32]) -> u32 {
    slot::choose_head(rest_lens)
}
