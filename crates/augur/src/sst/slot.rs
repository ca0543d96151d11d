//! The fixed-width key slot: its per-file layout ([`SlotParams`], stored in the properties),
//! how a slot is encoded and decoded, and how a slot compares with a key being looked up.
//!
//! A slot is `head | len | suffix_at | trailer | reference`, each field of a width fixed per
//! file (docs/format/sst.md). The key it holds is `prefix ++ block_prefix ++ head[..min(rest,
//! H)] ++ overflow`, where `prefix` is the file's stripped common prefix (format 1 strips
//! nothing), `block_prefix` what the keys of the slot's block share past it (format 5; empty
//! before), `rest` the key's length after both, `H` the head width, and `overflow` the key's
//! bytes past the head, stored in its data block's suffix chunk at `suffix_at`. The head is
//! zero-padded.
//!
//! Invariant the read path relies on: comparing the real head bytes first, then the
//! overflows, orders slots exactly as their full keys (see [`compare_rest`]), so a search
//! reads the suffix chunk only when two heads tie.

use crate::coding::{put_u32, put_u64, Decoder};
use crate::key::{compare_user_keys, strip_key_prefix};
use std::cmp::Ordering;

/// Widest head the builder chooses on its own (wider heads only when asked for).
pub const MAX_AUTO_HEAD_BYTES: usize = 64;

/// Bytes of a reference field that can hold a value pointer (`segment u64 | offset u64 |
/// len u32`).
pub const POINTER_REF_BYTES: usize = 20;

/// The layout of every slot of one table. Format 1's layout is the special case
/// `prefix_len = 0, head_bytes = W, len_bytes = 2, suffix_bytes = 0, trailer_bytes = 8,
/// trailer_base = 0, ref_bytes = 20` with its own inline reference (`v1_refs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlotParams {
    /// Bytes stripped from the front of every key (the file's common prefix in format 2).
    pub prefix_len: u32,
    /// Width `H` of the head field.
    pub head_bytes: u32,
    /// Width of the key-length field (0, 1 or 2); 0 when every key is `fixed_rest_len` long
    /// after the prefix.
    pub len_bytes: u8,
    /// Length after the prefix of every key when `len_bytes == 0`.
    pub fixed_rest_len: u32,
    /// Width of the suffix-offset field (0 when no key overflows its head, else 2 or 4).
    pub suffix_bytes: u8,
    /// Width of the trailer field (1..=8): the trailer minus `trailer_base`, little-endian.
    pub trailer_bytes: u8,
    /// Added to every stored trailer (the file's smallest seqno, shifted past the kind).
    pub trailer_base: u64,
    /// Width of the reference field: 0, 4 or 8 (inline values: chunk offset and length,
    /// 2 or 4 bytes each), or 20 (value pointers, and inline values as 4 + 4 + zeros).
    pub ref_bytes: u8,
    /// Format 1's inline reference (`offset u64 | len u32 | crc u32 | 4 zero`, the offset
    /// relative to the value section) instead of format 2's (relative to the block's chunk).
    pub v1_refs: bool,
    /// Format 7's inline reference when `ref_bytes` is 2 or 4: the end of the value in its
    /// block's value chunk only, its start the previous slot's end (0 for a block's first
    /// slot); a tombstone's field holds the end of the values before it. Not stored: it
    /// follows from the format version.
    pub end_refs: bool,
}

impl SlotParams {
    /// Format 1's layout for key width `w`.
    pub fn v1(w: u32) -> SlotParams {
        SlotParams {
            prefix_len: 0,
            head_bytes: w,
            len_bytes: 2,
            fixed_rest_len: 0,
            suffix_bytes: 0,
            trailer_bytes: 8,
            trailer_base: 0,
            ref_bytes: POINTER_REF_BYTES as u8,
            v1_refs: true,
            end_refs: false,
        }
    }

    /// Bytes of one slot.
    pub fn slot_bytes(&self) -> u64 {
        u64::from(self.head_bytes)
            + u64::from(self.len_bytes)
            + u64::from(self.suffix_bytes)
            + u64::from(self.trailer_bytes)
            + u64::from(self.ref_bytes)
    }

    /// Width of each of the two fields of a format-2 inline reference, or of the one field
    /// of a format-7 end reference ([`Self::end_only_refs`]).
    pub(crate) fn value_field_bytes(&self) -> usize {
        match (self.end_only_refs(), self.ref_bytes) {
            (true, w) => usize::from(w),
            (false, 4) => 2,
            (false, _) => 4,
        }
    }

    /// Whether inline references hold only their value's end (format 7, a table without
    /// value pointers: `ref_bytes` 2 or 4). A table with pointers keeps `offset | len` in
    /// its 20-byte references.
    #[inline]
    pub(crate) fn end_only_refs(&self) -> bool {
        self.end_refs && matches!(self.ref_bytes, 2 | 4)
    }

    /// Appends the format-2 encoding (the properties section's tail).
    pub(crate) fn encode_v2(&self, b: &mut Vec<u8>) {
        put_u32(b, self.prefix_len);
        put_u32(b, self.head_bytes);
        b.push(self.len_bytes);
        put_u32(b, self.fixed_rest_len);
        b.push(self.suffix_bytes);
        b.push(self.trailer_bytes);
        put_u64(b, self.trailer_base);
        b.push(self.ref_bytes);
    }

    /// Decodes [`Self::encode_v2`]'s bytes (with end references when `end_refs`: format 7);
    /// `None` when short.
    pub(crate) fn decode_v2(d: &mut Decoder<'_>, end_refs: bool) -> Option<SlotParams> {
        Some(SlotParams {
            prefix_len: d.u32()?,
            head_bytes: d.u32()?,
            len_bytes: d.u8()?,
            fixed_rest_len: d.u32()?,
            suffix_bytes: d.u8()?,
            trailer_bytes: d.u8()?,
            trailer_base: d.u64()?,
            ref_bytes: d.u8()?,
            v1_refs: false,
            end_refs,
        })
    }

    /// Checks the widths against each other and the table's facts.
    pub(crate) fn validate(
        &self,
        key_width: u32,
        inline_values: u64,
        pointers: u64,
    ) -> std::result::Result<(), &'static str> {
        if self.prefix_len > key_width || self.head_bytes > key_width {
            return Err("slot head or prefix wider than the longest key");
        }
        if self.len_bytes > 2 || ![0, 2, 4].contains(&self.suffix_bytes) {
            return Err("bad slot field width");
        }
        if self.len_bytes == 0 && self.prefix_len + self.fixed_rest_len > key_width {
            return Err("fixed key length exceeds the key width");
        }
        if self.len_bytes != 0 && self.fixed_rest_len != 0 {
            return Err("fixed key length with a key-length field");
        }
        if !(1..=8).contains(&self.trailer_bytes) || self.trailer_base & 0xff != 0 {
            return Err("bad trailer field");
        }
        let widths: [u8; 4] = if self.end_refs { [0, 2, 4, 20] } else { [0, 4, 8, 20] };
        if !widths.contains(&self.ref_bytes) {
            return Err("bad reference width");
        }
        if (pointers > 0 && self.ref_bytes != 20) || (inline_values > 0 && self.ref_bytes == 0)
        {
            return Err("reference field too narrow for the table's entries");
        }
        Ok(())
    }
}

/// A [`SlotParams`] with its field offsets computed, for decoding.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SlotLayout {
    pub(crate) params: SlotParams,
    head: usize,
    len_at: usize,
    suffix_at: usize,
    trailer_at: usize,
    ref_at: usize,
    /// Bytes of one slot.
    pub(crate) slot: usize,
    /// Longest key length after the prefix the file can hold (its longest key's).
    max_rest: usize,
}

/// The fields of one slot, borrowed from its block.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RawSlot<'a> {
    /// The real bytes of the head: `head[..min(rest_len, H)]`.
    pub(crate) head: &'a [u8],
    /// Length of the key after the stripped prefix and its block's prefix.
    pub(crate) rest_len: usize,
    /// Offset of the overflow in the block's suffix chunk (meaningful when it overflows).
    pub(crate) suffix_at: usize,
    /// The full trailer `(seqno << 8) | kind`.
    pub(crate) trailer: u64,
    /// The reference field.
    pub(crate) reference: &'a [u8],
}

/// Reads a little-endian integer of `width` (0..=8) bytes: one unaligned 8-byte load and a
/// mask when 8 bytes are there (a variable-length copy is a `memcpy` call, which cost a
/// fifth of a lookup), else byte by byte.
#[inline(always)]
fn read_le(bytes: &[u8], width: usize) -> u64 {
    if let Some(word) = bytes.first_chunk::<8>() {
        let v = u64::from_le_bytes(*word);
        return if width >= 8 {
            v
        } else {
            v & ((1u64 << (width * 8)) - 1)
        };
    }
    bytes
        .iter()
        .take(width.min(8))
        .enumerate()
        .fold(0, |v, (i, &b)| v | u64::from(b) << (8 * i))
}

/// Appends the low `width` bytes of `v`, little-endian.
fn put_le(out: &mut Vec<u8>, v: u64, width: usize) {
    out.extend_from_slice(&v.to_le_bytes()[..width.min(8)]);
}

impl SlotLayout {
    /// The layout of `params` in a file whose longest key has `key_width` bytes.
    pub(crate) fn new(params: SlotParams, key_width: u32) -> SlotLayout {
        let head = params.head_bytes as usize;
        let len_at = head;
        let suffix_at = len_at + usize::from(params.len_bytes);
        let trailer_at = suffix_at + usize::from(params.suffix_bytes);
        let ref_at = trailer_at + usize::from(params.trailer_bytes);
        let slot = ref_at + usize::from(params.ref_bytes);
        SlotLayout {
            params,
            head,
            len_at,
            suffix_at,
            trailer_at,
            ref_at,
            slot,
            max_rest: key_width.saturating_sub(params.prefix_len) as usize,
        }
    }

    /// Width of the head field.
    #[inline]
    pub(crate) fn head_bytes(&self) -> usize {
        self.head
    }

    /// Offset of the reference field in a slot.
    #[inline]
    pub(crate) fn ref_offset(&self) -> usize {
        self.ref_at
    }

    /// Bytes stripped from every key.
    #[inline]
    pub(crate) fn prefix_len(&self) -> usize {
        self.params.prefix_len as usize
    }

    /// Decodes the slot at the start of `slot` (the slot's bytes, possibly followed by more
    /// bytes of its block, which lets fields be read with whole-word loads), in a block
    /// whose keys share `prefix_ext` bytes past the stripped prefix; `None` when it is
    /// short, its length field is impossible (longer than the file's longest key, or than
    /// the head while nothing overflows) or its trailer overflows. Always inlined: it is the
    /// inner step of every slot search (left to the heuristics, the reader's `Table::slot`
    /// stopped inlining it once it grew a match over where a block's bytes are, and the
    /// 16-byte fence-path lookup took ~8% more CPU).
    #[inline(always)]
    pub(crate) fn decode<'a>(&self, slot: &'a [u8], prefix_ext: usize) -> Option<RawSlot<'a>> {
        let p = &self.params;
        let rest_len = match p.len_bytes {
            0 => (p.fixed_rest_len as usize).checked_sub(prefix_ext)?,
            w => read_le(slot.get(self.len_at..)?, usize::from(w)) as usize,
        };
        if rest_len + prefix_ext > self.max_rest || (rest_len > self.head && p.suffix_bytes == 0)
        {
            return None;
        }
        let suffix_at = read_le(slot.get(self.suffix_at..)?, usize::from(p.suffix_bytes));
        let stored = read_le(slot.get(self.trailer_at..)?, usize::from(p.trailer_bytes));
        Some(RawSlot {
            head: slot.get(..rest_len.min(self.head))?,
            rest_len,
            suffix_at: suffix_at as usize,
            trailer: stored.checked_add(p.trailer_base)?,
            reference: slot.get(self.ref_at..self.slot)?,
        })
    }

    /// The overflow of `raw` (its key's bytes past the head) in the block's suffix chunk;
    /// empty when the key fits its head, `None` when it lies outside the chunk.
    #[inline]
    pub(crate) fn overflow<'a>(&self, raw: &RawSlot<'_>, suffixes: &'a [u8]) -> Option<&'a [u8]> {
        if raw.rest_len <= self.head {
            return Some(&[]);
        }
        let len = raw.rest_len - self.head;
        suffixes.get(raw.suffix_at..raw.suffix_at.checked_add(len)?)
    }

    /// The head field's padding (the bytes past the key's real head), which must be zero.
    pub(crate) fn head_padding<'a>(&self, slot: &'a [u8], raw: &RawSlot<'_>) -> &'a [u8] {
        slot.get(raw.head.len()..self.head).unwrap_or_default()
    }

    /// Encodes one format-2 slot: `rest` is the key after the prefix (and, in format 5, after
    /// its block's prefix), `suffix_at` where its
    /// overflow goes in the block's suffix chunk, `reference` the reference field (`ref_bytes`
    /// long).
    pub(crate) fn encode(
        &self,
        out: &mut Vec<u8>,
        rest: &[u8],
        suffix_at: usize,
        trailer: u64,
        reference: &[u8],
    ) {
        let p = &self.params;
        let head = &rest[..rest.len().min(self.head)];
        out.extend_from_slice(head);
        out.resize(out.len() + self.head - head.len(), 0);
        put_le(out, rest.len() as u64, usize::from(p.len_bytes));
        put_le(out, suffix_at as u64, usize::from(p.suffix_bytes));
        put_le(
            out,
            trailer - p.trailer_base,
            usize::from(p.trailer_bytes),
        );
        out.extend_from_slice(reference);
    }
}

/// A key being looked up, relative to a file's stripped prefix: every key of the file starts
/// with the prefix, so a key that does not is below or above all of them.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Probe<'k> {
    /// The key sorts before every key of the file.
    Below,
    /// The key sorts after every key of the file.
    Above,
    /// The key starts with the prefix; these are its bytes after it.
    Rest(&'k [u8]),
}

impl<'k> Probe<'k> {
    /// `user_key` against the stripped prefix `prefix`.
    #[inline]
    pub(crate) fn new(user_key: &'k [u8], prefix: &[u8]) -> Probe<'k> {
        match strip_key_prefix(user_key, prefix) {
            Some(rest) => Probe::Rest(rest),
            None => match compare_user_keys(user_key, prefix) {
                Ordering::Less => Probe::Below,
                _ => Probe::Above,
            },
        }
    }

    /// This key against the keys of a block that share `block_prefix` past the stripped
    /// prefix (format 5): below or above all of them when its rest does not start with it,
    /// else its bytes past it. Unchanged for an empty block prefix.
    #[inline]
    pub(crate) fn past(&self, block_prefix: &[u8]) -> Probe<'k> {
        match *self {
            Probe::Rest(rest) if !block_prefix.is_empty() => Probe::new(rest, block_prefix),
            other => other,
        }
    }

    /// Order of the slot's user key (head + overflow) relative to this key.
    #[inline]
    pub(crate) fn key_order(&self, head_bytes: usize, raw: &RawSlot<'_>, overflow: &[u8]) -> Ordering {
        match self {
            Probe::Below => Ordering::Greater,
            Probe::Above => Ordering::Less,
            Probe::Rest(rest) => compare_rest(head_bytes, raw.head, overflow, raw.rest_len, rest),
        }
    }

    /// Order of the slot's internal key relative to `(this key, trailer)`.
    #[inline]
    pub(crate) fn order(
        &self,
        head_bytes: usize,
        raw: &RawSlot<'_>,
        overflow: &[u8],
        trailer: u64,
    ) -> Ordering {
        self.key_order(head_bytes, raw, overflow)
            .then(trailer.cmp(&raw.trailer))
    }
}

/// Order of a stored key (real head bytes `head`, `overflow`, `rest_len` bytes after the
/// prefix) relative to the key `rest` (after the same prefix), for a head of `head_bytes`:
/// heads first, then overflows. Equal to the byte order of the two keys: if the heads differ
/// they decide (a head shorter than `H` is the whole key); if they are equal, both keys have
/// `min(len, H)` equal bytes and the overflows (empty for a key within its head) decide.
#[inline]
pub(crate) fn compare_rest(
    head_bytes: usize,
    head: &[u8],
    overflow: &[u8],
    rest_len: usize,
    rest: &[u8],
) -> Ordering {
    let (probe_head, probe_over) = rest.split_at(rest.len().min(head_bytes));
    compare_user_keys(head, probe_head)
        .then_with(|| compare_user_keys(overflow, probe_over))
        .then(rest_len.cmp(&rest.len()))
}

/// Bytes needed to store `v` (at least 1).
pub(crate) fn width_of(v: u64) -> u8 {
    (8 - (v.leading_zeros() / 8) as u8).max(1)
}

/// Bytes the chosen head may cost beyond the smallest layout, as a fraction (1/20 = 5%) of
/// that layout's key bytes: a wider head lets more lookups compare and confirm keys without
/// reading their overflow from the suffix chunk (a dependent cache miss). On keys of 16–128
/// bytes the cheapest head (8 bytes) made lookups ~30% slower than a 24–48-byte one that
/// cost under 3% more bytes (docs/benchmarks/format-v2.md).
const HEAD_SLACK_DIVISOR: u64 = 20;

/// The head width for keys of the given lengths after the prefix (`rest_lens`): the widest
/// among `[min(8, longest), min(longest, MAX_AUTO_HEAD)]` whose slot-plus-overflow bytes are
/// within [`HEAD_SLACK_DIVISOR`] of the smallest. Every head byte costs one byte per key,
/// every key longer than the head stores its excess in the suffix chunk, and any overflow at
/// all adds a suffix-offset field to every slot.
#[cfg(any(test, feature = "test-util"))]
pub(crate) fn choose_head(rest_lens: &[u32]) -> u32 {
    let longest = rest_lens.iter().copied().max().unwrap_or(0);
    choose_head_bounded(rest_lens, longest, longest)
}

/// [`choose_head`] for a sample of a file's keys (`rest_lens`, what the slots store of each)
/// when the file's keys may be up to `max_rest` long after the prefix (`max_rest` at least
/// the sample's longest): a head narrower than `max_rest` pays the suffix-offset field in
/// every slot, whether or not a key of the sample overflows it. Candidates stay within
/// `widest` (at most the longest key after the file's prefix: a head is never wider than the
/// file's longest key; the sample's longest stored rest when that is all that is known).
/// With `max_rest` and `widest` the sample's longest, this is [`choose_head`].
pub(crate) fn choose_head_bounded(rest_lens: &[u32], max_rest: u32, widest: u32) -> u32 {
    let longest = widest as usize;
    let hi = longest.min(MAX_AUTO_HEAD_BYTES);
    let lo = longest.min(8);
    // longer[h] = keys longer than h, for h in 0..=hi.
    let mut longer = vec![0u64; hi + 2];
    let mut excess_at_lo = 0u64;
    for &r in rest_lens {
        let r = r as usize;
        longer[r.min(hi + 1)] += 1;
        excess_at_lo += r.saturating_sub(lo) as u64;
    }
    let mut above = 0u64;
    for slot in longer.iter_mut().rev() {
        let here = *slot;
        *slot = above;
        above += here;
    }
    let n = rest_lens.len() as u64;
    let mut costs = Vec::with_capacity(hi + 1 - lo);
    let mut excess = excess_at_lo;
    for (h, &overflowing) in longer.iter().enumerate().take(hi + 1).skip(lo) {
        let suffix_field = if overflowing > 0 || (h as u64) < u64::from(max_rest) {
            2
        } else {
            0
        };
        costs.push((h, n * (h as u64 + suffix_field) + excess));
        excess -= overflowing;
    }
    let cheapest = costs.iter().map(|&(_, c)| c).min().unwrap_or(0);
    let allowed = cheapest + cheapest / HEAD_SLACK_DIVISOR;
    costs
        .iter()
        .rev()
        .find(|&&(_, c)| c <= allowed)
        .map_or(lo, |&(h, _)| h) as u32
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Encodes `keys` (sorted, with the common prefix `prefix`) as format-2 slots and a
    /// suffix chunk, with head `h`.
    fn encode_all(keys: &[Vec<u8>], prefix: usize, h: u32) -> (SlotLayout, Vec<u8>, Vec<u8>) {
        let max_rest = keys.iter().map(|k| k.len() - prefix).max().unwrap_or(0);
        let params = SlotParams {
            prefix_len: prefix as u32,
            head_bytes: h,
            len_bytes: 2,
            fixed_rest_len: 0,
            suffix_bytes: if max_rest > h as usize { 4 } else { 0 },
            trailer_bytes: 2,
            trailer_base: 7 << 8,
            ref_bytes: 0,
            v1_refs: false,
            end_refs: false,
        };
        let layout = SlotLayout::new(params, u32::MAX);
        let (mut slots, mut suffixes) = (Vec::new(), Vec::new());
        for (i, k) in keys.iter().enumerate() {
            let rest = &k[prefix..];
            layout.encode(&mut slots, rest, suffixes.len(), ((7 + i as u64) << 8) | 1, &[]);
            suffixes.extend_from_slice(rest.get(h as usize..).unwrap_or_default());
        }
        (layout, slots, suffixes)
    }

    fn key_at(layout: &SlotLayout, slots: &[u8], suffixes: &[u8], prefix: &[u8], i: usize) -> Vec<u8> {
        let raw = layout.decode(&slots[i * layout.slot..(i + 1) * layout.slot], 0).unwrap();
        let over = layout.overflow(&raw, suffixes).unwrap();
        [prefix, raw.head, over].concat()
    }

    fn check(mut keys: Vec<Vec<u8>>, probes: Vec<Vec<u8>>, h: u32) {
        keys.sort();
        keys.dedup();
        let prefix_len = match (keys.first(), keys.last()) {
            (Some(a), Some(b)) => a.iter().zip(b).take_while(|(x, y)| x == y).count(),
            _ => return,
        };
        let prefix = keys[0][..prefix_len].to_vec();
        let (layout, slots, suffixes) = encode_all(&keys, prefix_len, h);
        for (i, k) in keys.iter().enumerate() {
            assert_eq!(&key_at(&layout, &slots, &suffixes, &prefix, i), k);
            let raw = layout.decode(&slots[i * layout.slot..(i + 1) * layout.slot], 0).unwrap();
            assert_eq!(raw.trailer, ((7 + i as u64) << 8) | 1);
        }
        for probe in keys.iter().chain(probes.iter()) {
            let p = Probe::new(probe, &prefix);
            for (i, k) in keys.iter().enumerate() {
                let raw = layout.decode(&slots[i * layout.slot..(i + 1) * layout.slot], 0).unwrap();
                let over = layout.overflow(&raw, &suffixes).unwrap();
                assert_eq!(
                    p.key_order(layout.head_bytes(), &raw, over),
                    k.as_slice().cmp(probe.as_slice()),
                    "key {k:?} probe {probe:?} head {h}"
                );
            }
        }
    }

    /// Format 5: the keys' common prefix past a file prefix of `file_prefix` bytes is the
    /// block prefix; slots hold the rests past both, and every probe, matched with the
    /// block prefix first (`Probe::past`), compares with each slot as with the key it holds.
    fn check_block_prefix(mut keys: Vec<Vec<u8>>, probes: Vec<Vec<u8>>, h: u32, file_prefix: usize) {
        keys.sort();
        keys.dedup();
        let (Some(first), Some(last)) = (keys.first(), keys.last()) else {
            return;
        };
        let shared = first.iter().zip(last).take_while(|(x, y)| x == y).count();
        let p = file_prefix.min(shared);
        let prefix = first[..p].to_vec();
        let block_prefix = first[p..shared].to_vec();
        let rests: Vec<Vec<u8>> = keys.iter().map(|k| k[shared..].to_vec()).collect();
        let (layout, slots, suffixes) = encode_all(&rests, 0, h);
        for probe in keys.iter().chain(probes.iter()) {
            let probe_in_block = Probe::new(probe, &prefix).past(&block_prefix);
            for (i, k) in keys.iter().enumerate() {
                let raw = layout
                    .decode(&slots[i * layout.slot..(i + 1) * layout.slot], 0)
                    .unwrap();
                let over = layout.overflow(&raw, &suffixes).unwrap();
                assert_eq!(
                    probe_in_block.key_order(layout.head_bytes(), &raw, over),
                    k.as_slice().cmp(probe.as_slice()),
                    "key {k:?} probe {probe:?} head {h} prefix {prefix:?} block {block_prefix:?}"
                );
            }
        }
    }

    fn key_strategy() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            proptest::collection::vec(0u8..4, 0..12),
            proptest::collection::vec(any::<u8>(), 0..40),
            // Long shared prefixes; keys that differ only after byte 200.
            (proptest::collection::vec(0u8..3, 0..6)).prop_map(|tail| {
                let mut k = vec![b'p'; 200];
                k.extend(tail);
                k
            }),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        /// Heads order like keys, every key round-trips, and a probe (present or absent)
        /// compares with every slot as with the key it holds.
        #[test]
        fn heads_order_like_keys(
            keys in proptest::collection::vec(key_strategy(), 1..40),
            probes in proptest::collection::vec(key_strategy(), 0..10),
            h in prop_oneof![Just(0u32), Just(1), Just(8), Just(9), 0u32..24],
        ) {
            check(keys, probes, h);
        }

        #[test]
        fn block_prefixes_order_like_keys(
            keys in proptest::collection::vec(key_strategy(), 1..40),
            probes in proptest::collection::vec(key_strategy(), 0..10),
            h in prop_oneof![Just(0u32), Just(1), Just(8), 0u32..24],
            file_prefix in 0usize..4,
        ) {
            check_block_prefix(keys, probes, h, file_prefix);
        }
    }

    #[test]
    fn edge_lengths_round_trip() {
        for len in [0usize, 1, 8, 9, 255, 65_535] {
            let mut next = vec![b'a'; len];
            if let Some(last) = next.last_mut() {
                *last = b'c';
            }
            let keys = vec![vec![b'a'; len], next, vec![b'b'; len.min(300)]];
            for h in [0, 1, 8, 9, 64] {
                check(keys.clone(), vec![vec![], vec![b'a'; len + 2]], h);
            }
        }
    }

    #[test]
    fn head_choice_follows_the_lengths() {
        assert_eq!(choose_head(&[16; 100]), 16);
        assert_eq!(choose_head(&[]), 0);
        assert_eq!(choose_head(&[3, 3]), 3);
        // Mostly short keys and a rare long one: the head stays short.
        let mut lens = vec![10u32; 1000];
        lens.push(250);
        assert_eq!(choose_head(&lens), 10);
        // Longer than the automatic cap: the head stops at the cap.
        assert_eq!(choose_head(&[200; 10]), MAX_AUTO_HEAD_BYTES as u32);
        // Lengths spread evenly over 8..=104: the cheapest head is 8 bytes, and the widest
        // within 5% of it is chosen.
        let spread: Vec<u32> = (0..9700).map(|i| 8 + i % 97).collect();
        let h = choose_head(&spread);
        assert!((24..=48).contains(&h), "{h}");
    }

    #[test]
    fn bounded_head_choice_pays_for_possible_overflow() {
        // The sample's keys are 11 bytes, but the file's may be 40: every head below 40 pays
        // the suffix-offset field, so the widest head within 5% of the cheapest is still 11.
        assert_eq!(choose_head_bounded(&[11; 100], 40, 11), 11);
        assert_eq!(choose_head_bounded(&[11; 100], 11, 11), choose_head(&[11; 100]));
        // With the bound equal to the sample's longest, the plain choice.
        let spread: Vec<u32> = (0..9700).map(|i| 8 + i % 97).collect();
        assert_eq!(choose_head_bounded(&spread, 104, 104), choose_head(&spread));
        assert_eq!(choose_head_bounded(&[], 10, 0), 0);
        // Stored rests of 3 bytes (past block prefixes) in keys of 6 after the file's
        // prefix: a 6-byte head needs no suffix field, which a 3-byte head pays in every slot.
        assert_eq!(choose_head_bounded(&[3; 100], 6, 6), 6);
    }

    #[test]
    fn widths() {
        assert_eq!(width_of(0), 1);
        assert_eq!(width_of(255), 1);
        assert_eq!(width_of(256), 2);
        assert_eq!(width_of(u64::MAX), 8);
    }
}
