//! Which entries of a mapped value-log segment have passed their checksum, so that a scan
//! checks each entry once per mapping instead of at every read — the value-log counterpart
//! of the data blocks' verify-once rule (`sst/reader.rs`): a mapped sealed segment never
//! changes, so an entry whose CRC matched once still matches (damage done to the file
//! afterwards is found by `verify`, as for blocks).
//!
//! One bit per 8-byte granule of the segment, keyed by the entry's first byte: every entry is
//! at least `ENTRY_HEADER_LEN` (12) bytes long, so no two entries start in one granule and a
//! bit names exactly one entry. Memory: 1/64 of the segment's size (1 MiB for a 64 MiB
//! segment), allocated at the first batch read of the segment.

use std::sync::atomic::{AtomicU64, Ordering};

/// Bytes per bit. Must not exceed the smallest entry (`ENTRY_HEADER_LEN`).
const GRANULE: u64 = 8;
const _: () = assert!(GRANULE as usize <= super::ENTRY_HEADER_LEN);

/// The set of entry offsets of one mapped segment whose checksum was verified.
pub(super) struct VerifiedEntries {
    bits: Box<[AtomicU64]>,
}

impl VerifiedEntries {
    /// An empty set for a segment of `len` bytes.
    pub(super) fn new(len: usize) -> Self {
        let granules = (len as u64).div_ceil(GRANULE);
        let words = usize::try_from(granules.div_ceil(64)).unwrap_or(0);
        VerifiedEntries {
            bits: std::iter::repeat_with(|| AtomicU64::new(0))
                .take(words)
                .collect(),
        }
    }

    fn slot(&self, offset: u64) -> Option<(&AtomicU64, u64)> {
        let granule = offset / GRANULE;
        let word = self.bits.get(usize::try_from(granule / 64).ok()?)?;
        Some((word, 1u64 << (granule % 64)))
    }

    /// Whether the entry starting at `offset` was verified.
    pub(super) fn contains(&self, offset: u64) -> bool {
        self.slot(offset)
            .is_some_and(|(word, bit)| word.load(Ordering::Relaxed) & bit != 0)
    }

    /// Records that the entry starting at `offset` passed its checksum (offsets beyond the
    /// segment are ignored: they are never contained).
    pub(super) fn insert(&self, offset: u64) {
        if let Some((word, bit)) = self.slot(offset) {
            word.fetch_or(bit, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adjacent_smallest_entries_have_their_own_bits() {
        let set = VerifiedEntries::new(1000);
        // Entries of 12 bytes back to back: 24, 36, 48, ...
        let offsets: Vec<u64> = (0..70).map(|i| 24 + 12 * i).collect();
        for (i, &o) in offsets.iter().enumerate() {
            assert!(!set.contains(o));
            if i % 2 == 0 {
                set.insert(o);
            }
        }
        for (i, &o) in offsets.iter().enumerate() {
            assert_eq!(set.contains(o), i % 2 == 0, "offset {o}");
        }
        set.insert(5000);
        assert!(!set.contains(5000), "beyond the segment");
        assert!(!VerifiedEntries::new(0).contains(0));
    }
}
