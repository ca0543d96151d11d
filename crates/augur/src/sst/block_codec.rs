//! Compressed data blocks (format 6): how the builder packs a data block — its fixed-width
//! slots, then its key-suffix chunk — before compressing it with the values' codec, and how a
//! reader gets the block back, byte for byte what format 5 stores uncompressed.
//!
//! **Packing** (docs/format/sst.md "Version 6: compressed blocks"). LZ4 finds repeats of at
//! least 4 bytes. In a block of fixed-width slots what repeats is one field of neighbouring
//! slots — a key's length, the kind byte and high seqno bytes of the trailer, an inline
//! value's length — `S` bytes apart, with differing bytes between, so LZ4 finds little of it.
//! A packed block therefore stores the slot bytes **transposed** (Blosc's and HDF5's byte
//! "shuffle": byte `j` of every slot, then byte `j + 1` of every slot, …), so that a column
//! of equal or slowly changing bytes is one run, after replacing the two fields that grow
//! along a block — each key's offset in the suffix chunk and each inline value's offset in
//! the value chunk — by their **differences** from the previous slot's (a key's overflow
//! length, the previous value's length: often equal). The key bytes are arranged one of two
//! ways ([`Packing`]), whichever compresses the block smaller, recorded in the high bit of
//! the block's codec byte: transposed with the rest ([`Packing::Columns`]: sorted keys share
//! their first bytes, a run per column — best where neighbours share short prefixes, as
//! reversed domain names do) or as text ([`Packing::KeysInline`]: the fields past the head
//! transposed, then each key's head followed by its overflow — where keys repeat longer
//! strings, as paths do). Measured on the string key sets: docs/format/sst.md "Choosing the
//! packing".
//!
//! Invariants: a packed block has the raw block's length; [`unpack`] inverts [`pack`] for
//! every input of either packing; a stored block that does not decompress to exactly its
//! recorded raw length is `Corruption` naming the file and the block's offset, never a short
//! or padded block.

use crate::compression::{decompress_into, Compression, CODEC_NONE};
use crate::error::{Error, Result};
use crate::sst::slot::SlotLayout;
use std::path::Path;

/// The bit of a block's codec byte that says it is packed [`Packing::KeysInline`] (the low
/// bits are the codec).
pub(crate) const KEYS_INLINE: u8 = 0x80;

/// The largest codec a block's codec byte may name (`compression::CODEC_ZSTD`).
const MAX_CODEC: u8 = 2;

/// True when `byte` is a block codec byte this build reads: 0 (raw), or a known codec with or
/// without [`KEYS_INLINE`].
pub(crate) fn valid_codec_byte(byte: u8) -> bool {
    let codec = byte & !KEYS_INLINE;
    codec <= MAX_CODEC && (codec != CODEC_NONE || byte == CODEC_NONE)
}

/// How the key bytes of a packed block are arranged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Packing {
    /// Every slot byte transposed (after the delta fields are replaced by differences),
    /// then the suffix chunk as it is.
    Columns,
    /// The slot bytes past the head transposed (likewise), then, slot by slot, its head and
    /// its overflow — its piece of the suffix chunk, as the suffix offsets cut it.
    KeysInline,
}

/// The geometry of one data block: `slots` slots of `slot_bytes` bytes, then the suffix
/// chunk; where the fields that packing treats apart lie in a slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BlockShape {
    /// Slots in the block.
    pub(crate) slots: usize,
    /// Bytes of one slot.
    pub(crate) slot_bytes: usize,
    /// Width of the head field (the first bytes of a slot).
    pub(crate) head_bytes: usize,
    /// The key-length field: `(offset in the slot, width)`; width 0 without one.
    pub(crate) len_field: (usize, usize),
    /// The suffix-offset field: `(offset in the slot, width)`; width 0 without one.
    pub(crate) suffix_field: (usize, usize),
    /// The offset field of an inline value's reference: `(offset in the slot, width)`; width
    /// 0 without references.
    pub(crate) value_field: (usize, usize),
}

impl BlockShape {
    /// The shape of a block of `slots` slots in `layout`.
    pub(crate) fn of(layout: &SlotLayout, slots: usize) -> BlockShape {
        let p = layout.params;
        let head_bytes = layout.head_bytes();
        BlockShape {
            slots,
            slot_bytes: layout.slot,
            head_bytes,
            len_field: (head_bytes, usize::from(p.len_bytes)),
            suffix_field: (head_bytes + usize::from(p.len_bytes), usize::from(p.suffix_bytes)),
            value_field: (
                layout.ref_offset(),
                if p.ref_bytes == 0 { 0 } else { p.value_field_bytes() },
            ),
        }
    }

    /// Bytes of the block's slot area (the rest of the block is its suffix chunk).
    pub(crate) fn slots_len(&self) -> usize {
        self.slots.saturating_mul(self.slot_bytes)
    }

    /// `field` when packing treats it apart: 1 to 8 bytes wide, past the head, within the
    /// slot (the builder's layouts always are; any other shape packs it as plain bytes).
    fn usable(&self, field: (usize, usize)) -> Option<(usize, usize)> {
        let (at, width) = field;
        let ok = (1..=8).contains(&width)
            && at >= self.head_bytes.min(self.slot_bytes)
            && at.saturating_add(width) <= self.slot_bytes;
        ok.then_some(field)
    }

    /// Bytes of each slot kept apart from the transposed columns by `packing`.
    fn row_bytes(&self, packing: Packing) -> usize {
        match packing {
            Packing::Columns => 0,
            Packing::KeysInline => self.head_bytes.min(self.slot_bytes),
        }
    }
}

/// The mask of the low `width` (at most 8) bytes of a word.
#[inline]
fn low_bytes(width: usize) -> u64 {
    match width {
        0 => 0,
        w if w >= 8 => u64::MAX,
        w => (1u64 << (8 * w)) - 1,
    }
}

/// Reads the little-endian integer of `width` (at most 8) bytes at `at` of `bytes`: one
/// 8-byte load and a mask when 8 bytes are there (a copy of a variable length is a `memcpy`
/// call), else byte by byte; bytes past the end read as 0.
#[inline]
fn read_at(bytes: &[u8], at: usize, width: usize) -> u64 {
    if let Some(w) = bytes.get(at..).and_then(<[u8]>::first_chunk::<8>) {
        return u64::from_le_bytes(*w) & low_bytes(width);
    }
    (0..width.min(8)).fold(0, |v, i| {
        v | bytes.get(at + i).map_or(0, |&b| u64::from(b) << (8 * i))
    })
}

/// Replaces the suffix and value offset fields of every slot of `area` by their differences
/// from the previous slot's (`encode`; the first slot's from 0), modulo the field's width,
/// or undoes that. Fields packing does not treat apart ([`BlockShape::usable`]) are left
/// alone.
fn deltas(area: &mut [u8], shape: BlockShape, encode: bool) {
    if shape.slot_bytes == 0 {
        return;
    }
    let fields = [shape.suffix_field, shape.value_field];
    // A key's suffix offset is the previous one plus the previous key's overflow, which its
    // length field tells: predicted so, the stored difference is 0 in a well-formed block.
    let overlaps = |a: (usize, usize), b: (usize, usize)| a.0 < b.0 + b.1 && b.0 < a.0 + a.1;
    let len_field = shape
        .usable(shape.len_field)
        .filter(|&l| fields.iter().all(|&f| !overlaps(l, f)));
    let head = shape.head_bytes as u64;
    // (Undone in the reverse order, should the fields overlap.)
    let order: [usize; 2] = if encode { [0, 1] } else { [1, 0] };
    for i in order {
        let Some((at, width)) = fields.get(i).and_then(|&f| shape.usable(f)) else {
            continue;
        };
        let lengths = len_field.filter(|_| i == 0);
        let mask = low_bytes(width);
        let mut predicted = 0u64;
        for slot in area.chunks_exact_mut(shape.slot_bytes) {
            let overflow = lengths.map_or(0, |(l, w)| get(slot, l, w).saturating_sub(head));
            let v = get(slot, at, width);
            let (stored, original) = if encode {
                (v.wrapping_sub(predicted) & mask, v)
            } else {
                let original = v.wrapping_add(predicted) & mask;
                (original, original)
            };
            set(slot, at, width, stored);
            predicted = original.wrapping_add(overflow);
        }
    }
}

/// The little-endian integer of `width` (at most 8) bytes at `at` of `slot` (0 when it does
/// not fit): fixed-size reads for the widths slot fields have.
#[inline]
fn get(slot: &[u8], at: usize, width: usize) -> u64 {
    let Some(b) = slot.get(at..) else { return 0 };
    match width {
        1 => b.first().map_or(0, |&x| u64::from(x)),
        2 => b.first_chunk::<2>().map_or(0, |x| u64::from(u16::from_le_bytes(*x))),
        4 => b.first_chunk::<4>().map_or(0, |x| u64::from(u32::from_le_bytes(*x))),
        w => read_at(b, 0, w),
    }
}

/// Writes the low `width` (at most 8) bytes of `v` at `at` of `slot`, little-endian
/// (nothing that does not fit).
#[inline]
fn set(slot: &mut [u8], at: usize, width: usize, v: u64) {
    let Some(b) = slot.get_mut(at..) else { return };
    match width {
        1 => {
            if let Some(x) = b.first_mut() {
                *x = v as u8;
            }
        }
        2 => {
            if let Some(x) = b.first_chunk_mut::<2>() {
                *x = (v as u16).to_le_bytes();
            }
        }
        4 => {
            if let Some(x) = b.first_chunk_mut::<4>() {
                *x = (v as u32).to_le_bytes();
            }
        }
        w => {
            for (i, x) in b.iter_mut().take(w.min(8)).enumerate() {
                *x = (v >> (8 * i)) as u8;
            }
        }
    }
}

/// Where each slot's overflow starts in the suffix chunk of `suffix_len` bytes, from the
/// (original) suffix offsets of `area`, forced to tile the chunk: slot `i`'s piece is
/// `[ends[i], ends[i + 1])`, `ends[0] = 0`, each offset clamped between the previous one and
/// `suffix_len`, the last piece ending at `suffix_len`. For a block the builder wrote these
/// are exactly the overflows; for any other, some cut of the chunk that [`pack`] and
/// [`unpack`] agree on.
fn overflow_starts(area: &[u8], shape: BlockShape, suffix_len: usize) -> Vec<usize> {
    let field = shape.usable(shape.suffix_field);
    let mut ends = Vec::with_capacity(shape.slots + 1);
    let mut prev = 0usize;
    for (i, slot) in area.chunks_exact(shape.slot_bytes.max(1)).enumerate() {
        if let Some((at, width)) = field.filter(|_| i > 0) {
            let v = slot.get(at..at + width).map_or(0, |b| read_at(b, 0, width));
            prev = usize::try_from(v).unwrap_or(usize::MAX).clamp(prev, suffix_len);
        }
        ends.push(prev);
    }
    ends.push(suffix_len);
    ends
}

/// Writes the slot bytes `rows..slot_bytes` of the slots in `area` into `columns` as
/// columns: byte `rows + k` of slot `i` at `k × slots + i`. (Byte by byte: measured faster
/// than 8×8 tiles transposed in words.)
fn transpose(area: &[u8], columns: &mut [u8], shape: BlockShape, rows: usize) {
    for (k, column) in columns.chunks_exact_mut(shape.slots.max(1)).enumerate() {
        for (o, slot) in column.iter_mut().zip(area.chunks_exact(shape.slot_bytes.max(1))) {
            if let Some(&b) = slot.get(rows + k) {
                *o = b;
            }
        }
    }
}

/// Writes `columns` (as [`transpose`] lays them out) back into the slot bytes
/// `rows..slot_bytes` of `area`.
fn transpose_from(columns: &[u8], area: &mut [u8], shape: BlockShape, rows: usize) {
    for (k, column) in columns.chunks_exact(shape.slots.max(1)).enumerate() {
        for (slot, &b) in area.chunks_exact_mut(shape.slot_bytes.max(1)).zip(column) {
            if let Some(o) = slot.get_mut(rows + k) {
                *o = b;
            }
        }
    }
}

/// Appends to `out` (cleared first) the packed form of `raw`, a data block of `shape`, in
/// `packing` (see the module doc). A `raw` shorter than the slot area, or of a shape without
/// slot bytes, is copied as it is (the builder never passes one).
pub(crate) fn pack(raw: &[u8], shape: BlockShape, packing: Packing, out: &mut Vec<u8>) {
    out.clear();
    out.reserve(raw.len());
    let (Some((original, suffixes)), true) =
        (raw.split_at_checked(shape.slots_len()), shape.slots_len() > 0)
    else {
        out.extend_from_slice(raw);
        return;
    };
    let mut area = original.to_vec();
    deltas(&mut area, shape, true);
    let rows = shape.row_bytes(packing);
    let start = out.len();
    out.resize(start + (shape.slot_bytes - rows) * shape.slots, 0);
    if let Some(columns) = out.get_mut(start..) {
        transpose(&area, columns, shape, rows);
    }
    match packing {
        Packing::Columns => out.extend_from_slice(suffixes),
        Packing::KeysInline => {
            let starts = overflow_starts(original, shape, suffixes.len());
            for (slot, piece) in area.chunks_exact(shape.slot_bytes).zip(starts.windows(2)) {
                out.extend_from_slice(slot.get(..rows).unwrap_or_default());
                if let [from, to] = *piece {
                    out.extend_from_slice(suffixes.get(from..to).unwrap_or_default());
                }
            }
        }
    }
}

/// Writes into `out` the block that `packed` is the packed form of in `packing` ([`pack`]'s
/// inverse). REQUIRES: `out.len() == packed.len()` (otherwise `out` gets some of the bytes);
/// a `packed` shorter than the slot area, or of a shape without slot bytes, is copied as it
/// is.
pub(crate) fn unpack(packed: &[u8], shape: BlockShape, packing: Packing, out: &mut [u8]) {
    let area_len = shape.slots_len();
    let (true, Some((area, suffixes))) = (
        packed.len() >= area_len && area_len > 0,
        out.split_at_mut_checked(area_len),
    ) else {
        for (o, &b) in out.iter_mut().zip(packed) {
            *o = b;
        }
        return;
    };
    let rows = shape.row_bytes(packing);
    let (columns, rest) = packed.split_at((shape.slot_bytes - rows) * shape.slots);
    transpose_from(columns, area, shape, rows);
    // (The delta fields lie past the heads: undone before the heads are placed.)
    deltas(area, shape, false);
    match packing {
        Packing::Columns => {
            let n = suffixes.len().min(rest.len());
            if let (Some(o), Some(b)) = (suffixes.get_mut(..n), rest.get(..n)) {
                o.copy_from_slice(b);
            }
        }
        Packing::KeysInline => {
            let starts = overflow_starts(area, shape, suffixes.len());
            let mut rest = rest;
            for (slot, piece) in area.chunks_exact_mut(shape.slot_bytes).zip(starts.windows(2)) {
                let (head, tail) = rest.split_at(rows.min(rest.len()));
                if let Some(o) = slot.get_mut(..head.len()) {
                    o.copy_from_slice(head);
                }
                let (from, to) = match *piece {
                    [from, to] => (from, to),
                    _ => (0, 0),
                };
                let (overflow, tail) = tail.split_at((to - from).min(tail.len()));
                if let Some(o) = suffixes.get_mut(from..from + overflow.len()) {
                    o.copy_from_slice(overflow);
                }
                rest = tail;
            }
        }
    }
}

/// Compresses `raw`, a data block of `shape`, into `out` (cleared first), packed both ways
/// and compressed with `compression` (the packed blocks and the other candidate in
/// `scratch`), and returns the codec byte to record: the codec of the smaller, with
/// [`KEYS_INLINE`] when it is packed that way. [`CODEC_NONE`] (and `out` left empty) when
/// compression is off, fails, or neither saves an eighth of the block's bytes — the caller
/// then stores `raw` itself.
pub(crate) fn compress(
    compression: Compression,
    raw: &[u8],
    shape: BlockShape,
    scratch: &mut [Vec<u8>; 2],
    out: &mut Vec<u8>,
) -> u8 {
    out.clear();
    if compression == Compression::None || raw.is_empty() {
        return CODEC_NONE;
    }
    let [packed, other] = scratch;
    pack(raw, shape, Packing::Columns, packed);
    let columns = compression.compress(packed, out);
    pack(raw, shape, Packing::KeysInline, packed);
    let inline = compression.compress(packed, other);
    if inline != CODEC_NONE && (columns == CODEC_NONE || other.len() < out.len()) {
        std::mem::swap(out, other);
        return inline | KEYS_INLINE;
    }
    columns
}

thread_local! {
    /// The packed block a reader decompresses into before unpacking it, reused by the
    /// thread's next block.
    static PACKED: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The raw block (slots, then suffix chunk) of a block of `shape` stored as `stored` with the
/// codec byte `codec` (LZ4 or zstd, with or without [`KEYS_INLINE`]), which must decompress
/// to exactly `raw_len` bytes, at least the slot area.
///
/// # Errors
/// `Corruption` naming `file` and `offset` (where the stored block starts) for an unknown or
/// absent codec, a raw length shorter than the slot area, or a block that does not decompress
/// to exactly `raw_len` bytes.
pub(crate) fn decompress(
    stored: &[u8],
    codec: u8,
    raw_len: usize,
    shape: BlockShape,
    file: &Path,
    offset: u64,
) -> Result<Vec<u8>> {
    if codec == CODEC_NONE || !valid_codec_byte(codec) {
        return Err(Error::corruption(
            file,
            offset,
            format!("data block codec byte {codec:#x} is not a compressed block's"),
        ));
    }
    if raw_len < shape.slots_len() {
        return Err(Error::corruption(
            file,
            offset,
            "compressed data block shorter than its slots",
        ));
    }
    let packing = if codec & KEYS_INLINE != 0 {
        Packing::KeysInline
    } else {
        Packing::Columns
    };
    PACKED.with(|packed| {
        let mut packed = packed.borrow_mut();
        packed.clear();
        packed.resize(raw_len, 0);
        decompress_into(stored, codec & !KEYS_INLINE, &mut packed, file, offset)?;
        let mut raw = vec![0u8; raw_len];
        unpack(&packed, shape, packing, &mut raw);
        Ok(raw)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Slots of 4 bytes: a 2-byte head, a 1-byte suffix offset, a 1-byte value offset.
    fn shape(slots: usize) -> BlockShape {
        BlockShape {
            slots,
            slot_bytes: 4,
            head_bytes: 2,
            len_field: (2, 0),
            suffix_field: (2, 1),
            value_field: (3, 1),
        }
    }

    #[test]
    fn packing_transposes_the_slots_and_keeps_or_inlines_the_suffixes() {
        // Three slots (head "ab", "ac", "ad"; overflows "x", "", "yz"; values at 0, 5, 10),
        // then the 3-byte suffix chunk.
        let raw = [b'a', b'b', 0, 0, b'a', b'c', 1, 5, b'a', b'd', 1, 10, b'x', b'y', b'z'];
        let mut packed = Vec::new();
        pack(&raw, shape(3), Packing::Columns, &mut packed);
        assert_eq!(
            packed,
            [b'a', b'a', b'a', b'b', b'c', b'd', 0, 1, 0, 0, 5, 5, b'x', b'y', b'z']
        );
        pack(&raw, shape(3), Packing::KeysInline, &mut packed);
        assert_eq!(
            packed,
            [0, 1, 0, 0, 5, 5, b'a', b'b', b'x', b'a', b'c', b'a', b'd', b'y', b'z']
        );
        for packing in [Packing::Columns, Packing::KeysInline] {
            pack(&raw, shape(3), packing, &mut packed);
            let mut back = vec![0; raw.len()];
            unpack(&packed, shape(3), packing, &mut back);
            assert_eq!(back, raw, "{packing:?}");
        }
    }

    /// With a length field, a suffix offset is stored as its difference from the previous
    /// offset plus the previous key's overflow: 0 throughout a well-formed block.
    #[test]
    fn suffix_offsets_are_predicted_from_key_lengths() {
        // Slots of 4 bytes: a 1-byte head, a 1-byte length, a 1-byte suffix offset, a
        // 1-byte value offset. Keys of rest lengths 3, 1, 4: overflows 2, 0, 3.
        let s = BlockShape {
            slots: 3,
            slot_bytes: 4,
            head_bytes: 1,
            len_field: (1, 1),
            suffix_field: (2, 1),
            value_field: (3, 1),
        };
        let raw = [b'a', 3, 0, 0, b'b', 1, 2, 7, b'c', 4, 2, 9, b'x', b'y', b'z', b'z', b'z'];
        let mut packed = Vec::new();
        pack(&raw, s, Packing::Columns, &mut packed);
        assert_eq!(&packed[6..9], [0, 0, 0], "suffix offsets predicted exactly");
        assert_eq!(&packed[9..12], [0, 7, 2], "value offsets as differences");
        let mut back = vec![0; raw.len()];
        unpack(&packed, s, Packing::Columns, &mut back);
        assert_eq!(back, raw);
    }

    #[test]
    fn a_block_decompresses_to_its_raw_bytes_or_fails_cleanly() {
        let s = BlockShape {
            slots: 64,
            slot_bytes: 12,
            head_bytes: 8,
            len_field: (8, 0),
            suffix_field: (8, 0),
            value_field: (10, 2),
        };
        let raw: Vec<u8> = (0..64u32)
            .flat_map(|i| {
                let mut slot = format!("key{:05}", i * 7).into_bytes();
                slot.extend_from_slice(&[1, (i % 3) as u8, (i * 100) as u8, ((i * 100) >> 8) as u8]);
                slot
            })
            .collect();
        let path = Path::new("t.sst");
        for c in [Compression::Lz4, Compression::Zstd(3)] {
            let (mut scratch, mut out) = ([Vec::new(), Vec::new()], Vec::new());
            let codec = compress(c, &raw, s, &mut scratch, &mut out);
            assert_eq!(codec & !KEYS_INLINE, c.codec(), "{c}");
            assert!(out.len() < raw.len() / 2, "{c}: {} of {}", out.len(), raw.len());
            assert_eq!(decompress(&out, codec, raw.len(), s, path, 9).unwrap(), raw);
            for wrong in [raw.len() - 1, raw.len() + 1, s.slots_len() - 1] {
                let e = decompress(&out, codec, wrong, s, path, 9).unwrap_err();
                assert!(e.is_corruption(), "{c} {wrong}: {e}");
            }
            let mut bad = out.clone();
            bad.truncate(out.len() / 2);
            assert!(decompress(&bad, codec, raw.len(), s, path, 9).is_err());
            for byte in [CODEC_NONE, 7, KEYS_INLINE, KEYS_INLINE | 3] {
                assert!(decompress(&out, byte, raw.len(), s, path, 9).is_err(), "{byte}");
            }
        }
        let (mut scratch, mut out) = ([Vec::new(), Vec::new()], Vec::new());
        assert_eq!(compress(Compression::None, &raw, s, &mut scratch, &mut out), CODEC_NONE);
        // Random bytes do not save an eighth: stored raw.
        let noise: Vec<u8> = (0..768u64)
            .map(|i| (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as u8)
            .collect();
        assert_eq!(
            compress(Compression::Lz4, &noise, s, &mut scratch, &mut out),
            CODEC_NONE
        );
        assert!(out.is_empty());
    }

    #[test]
    fn columns_are_the_slot_bytes_transposed() {
        for slots in 0..18 {
            for slot_bytes in 0..20 {
                let s = BlockShape {
                    slots,
                    slot_bytes,
                    head_bytes: 0,
                    len_field: (0, 0),
                    suffix_field: (0, 0),
                    value_field: (0, 0),
                };
                let raw: Vec<u8> = (0..slots * slot_bytes).map(|i| (i * 7 + 3) as u8).collect();
                let mut packed = Vec::new();
                pack(&raw, s, Packing::Columns, &mut packed);
                for (k, column) in packed.chunks(slots.max(1)).enumerate() {
                    for (i, &b) in column.iter().enumerate() {
                        assert_eq!(b, raw[i * slot_bytes + k], "{slots}×{slot_bytes}");
                    }
                }
                let mut back = vec![0; raw.len()];
                unpack(&packed, s, Packing::Columns, &mut back);
                assert_eq!(back, raw, "{slots}×{slot_bytes}");
            }
        }
    }

    #[test]
    fn codec_bytes() {
        for (byte, ok) in [(0, true), (1, true), (2, true), (3, false), (0x80, false), (0x81, true), (0x82, true), (0x83, false), (0xff, false)] {
            assert_eq!(valid_codec_byte(byte), ok, "{byte:#x}");
        }
    }

    proptest! {
        /// Either packing is undone exactly, for any bytes and any field placement, even
        /// suffix offsets that do not tile the chunk.
        #[test]
        fn unpack_inverts_pack(
            slots in 0usize..20,
            slot_bytes in 0usize..12,
            head_bytes in 0usize..14,
            len_field in (0usize..14, 0usize..3),
            suffix_field in (0usize..14, 0usize..5),
            value_field in (0usize..14, 0usize..9),
            extra in proptest::collection::vec(any::<u8>(), 0..40),
            seed in any::<u64>(),
        ) {
            let s = BlockShape { slots, slot_bytes, head_bytes, len_field, suffix_field, value_field };
            let mut raw: Vec<u8> = (0..s.slots_len() as u64)
                .map(|i| (seed.wrapping_add(i).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 59) as u8)
                .collect();
            raw.extend_from_slice(&extra);
            for packing in [Packing::Columns, Packing::KeysInline] {
                let mut packed = Vec::new();
                pack(&raw, s, packing, &mut packed);
                prop_assert_eq!(packed.len(), raw.len());
                let mut back = vec![0; raw.len()];
                unpack(&packed, s, packing, &mut back);
                prop_assert_eq!(&back, &raw);
            }
        }
    }
}

