//! The entries a [`super::Builder`] holds before they are written: the sample it chooses the
//! slot layout from, then the block being filled. Keys are concatenated in one arena and the
//! inline values in another, so an entry costs its bytes plus a small fixed record.

use crate::index::projection::common_prefix_len;
use crate::sst::slot::POINTER_REF_BYTES;
use std::ops::Range;

/// What a held entry stores besides its key.
#[derive(Debug, Clone, Copy)]
pub(super) enum PendingValue {
    /// An inline value: its range in the value arena.
    Inline { start: usize, len: u32 },
    /// The encoded value pointer.
    Pointer([u8; POINTER_REF_BYTES]),
    /// A tombstone.
    Tombstone,
}

/// One held entry: where its key is in the key arena, its trailer and its value.
#[derive(Debug, Clone, Copy)]
pub(super) struct PendingEntry {
    key_start: usize,
    key_len: u16,
    pub(super) trailer: u64,
    pub(super) value: PendingValue,
}

/// Entries added but not yet written, in order.
#[derive(Debug, Default)]
pub(super) struct Pending {
    keys: Vec<u8>,
    pub(super) entries: Vec<PendingEntry>,
    /// The inline values of `entries`, concatenated in order.
    pub(super) values: Vec<u8>,
}

impl Pending {
    /// The user key of `e` (an entry of this buffer).
    pub(super) fn key(&self, e: &PendingEntry) -> &[u8] {
        self.keys
            .get(e.key_start..e.key_start + usize::from(e.key_len))
            .unwrap_or_default()
    }

    /// The first and last buffered keys (both empty when nothing is buffered).
    pub(super) fn first_and_last_key(&self) -> (&[u8], &[u8]) {
        match (self.entries.first(), self.entries.last()) {
            (Some(f), Some(l)) => (self.key(f), self.key(l)),
            _ => (&[][..], &[][..]),
        }
    }

    /// Each buffered key's length past its first `prefix` bytes (every key is at least
    /// `prefix` long: the callers' prefix is shared by all of them).
    pub(super) fn rest_lengths(&self, prefix: usize) -> Vec<u32> {
        self.entries
            .iter()
            .map(|e| (self.key(e).len() - prefix) as u32)
            .collect()
    }

    /// Each buffered key's length past the prefix its block shares (blocks of
    /// `block_records` entries from the first buffered one; the prefix is at least `prefix`,
    /// shared by every key, and exactly it when `block_prefixes` is off): what its slot
    /// stores (format 5).
    pub(super) fn block_rest_lengths(
        &self,
        prefix: usize,
        block_records: u32,
        block_prefixes: bool,
    ) -> Vec<u32> {
        let mut out = Vec::with_capacity(self.entries.len());
        for chunk in self.entries.chunks(block_records.max(1) as usize) {
            let shared = self.block_prefix_len(chunk, prefix, block_prefixes);
            out.extend(chunk.iter().map(|e| (self.key(e).len() - shared) as u32));
        }
        out
    }

    /// Length of the prefix the keys of `chunk` (consecutive entries of this buffer, sorted)
    /// share: that of its first and last keys, which every key between them shares too; at
    /// least the file's stripped prefix (`stripped`, shared by every key), and exactly it
    /// when block prefixes are off.
    pub(super) fn block_prefix_len(
        &self,
        chunk: &[PendingEntry],
        stripped: usize,
        enabled: bool,
    ) -> usize {
        match (chunk.first(), chunk.last()) {
            (Some(first), Some(last)) if enabled => {
                common_prefix_len(self.key(first), self.key(last)).max(stripped)
            }
            _ => stripped,
        }
    }

    /// Appends an entry. `value` is the inline value for `Inline` (whose `start` and `len`
    /// are set here), ignored otherwise. REQUIRES: `key` is at most `MAX_KEY_LEN` bytes and
    /// an inline value is below 4 GiB (the builder checked both).
    pub(super) fn push(&mut self, key: &[u8], trailer: u64, value: PendingValue, inline: &[u8]) {
        let value = match value {
            PendingValue::Inline { .. } => {
                let start = self.values.len();
                self.values.extend_from_slice(inline);
                PendingValue::Inline {
                    start,
                    len: inline.len() as u32,
                }
            }
            other => other,
        };
        self.entries.push(PendingEntry {
            key_start: self.keys.len(),
            key_len: key.len() as u16,
            trailer,
            value,
        });
        self.keys.extend_from_slice(key);
    }

    /// Number of entries held.
    pub(super) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Bytes of the keys held.
    pub(super) fn key_bytes(&self) -> usize {
        self.keys.len()
    }

    /// The range of the value arena that the inline values of `chunk` (consecutive entries
    /// of this buffer) occupy: they were added in order, so they are contiguous.
    pub(super) fn values_of(chunk: &[PendingEntry]) -> Range<usize> {
        let mut inline = chunk.iter().filter_map(|e| match e.value {
            PendingValue::Inline { start, len } => Some((start, start + len as usize)),
            _ => None,
        });
        let Some((start, mut end)) = inline.next() else {
            return 0..0;
        };
        for (_, e) in inline {
            end = e;
        }
        start..end
    }

    /// Drops every entry (keeping the buffers' capacity for the next block).
    pub(super) fn clear(&mut self) {
        self.keys.clear();
        self.entries.clear();
        self.values.clear();
    }

    /// Drops the first `n` entries, moving the rest (and their keys and values) to the front.
    pub(super) fn drain_front(&mut self, n: usize) {
        let n = n.min(self.entries.len());
        let Some(first_kept) = self.entries.get(n).copied() else {
            self.clear();
            return;
        };
        let key_shift = first_kept.key_start;
        let value_shift = Self::values_of(self.entries.get(n..).unwrap_or_default()).start;
        self.entries.drain(..n);
        self.keys.drain(..key_shift);
        if value_shift > 0 {
            self.values.drain(..value_shift);
        } else if Self::values_of(&self.entries).is_empty() {
            self.values.clear();
        }
        for e in &mut self.entries {
            e.key_start -= key_shift;
            if let PendingValue::Inline { start, .. } = &mut e.value {
                *start -= value_shift;
            }
        }
    }

    /// Bytes of memory the buffer holds (its capacity, not only what is in use).
    #[cfg(test)]
    pub(super) fn buffered_bytes(&self) -> usize {
        self.keys.capacity()
            + self.values.capacity()
            + self.entries.capacity() * std::mem::size_of::<PendingEntry>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drain_front_keeps_the_rest_addressable() {
        let mut p = Pending::default();
        let inline = PendingValue::Inline { start: 0, len: 0 };
        p.push(b"a", 1, inline, b"xx");
        p.push(b"bb", 2, PendingValue::Tombstone, b"");
        p.push(b"ccc", 3, inline, b"yyy");
        p.push(b"d", 4, PendingValue::Pointer([9; POINTER_REF_BYTES]), b"");
        p.drain_front(2);
        assert_eq!(p.len(), 2);
        assert_eq!(p.key(&p.entries[0]), b"ccc");
        assert_eq!(p.key(&p.entries[1]), b"d");
        assert_eq!(Pending::values_of(&p.entries), 0..3);
        assert_eq!(&p.values[..], b"yyy");
        p.drain_front(1);
        assert_eq!(p.key(&p.entries[0]), b"d");
        assert!(p.values.is_empty());
        p.drain_front(5);
        assert_eq!(p.len(), 0);
    }
}
