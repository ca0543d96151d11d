//! A memtable's whole-key filter (RocksDB's `memtable_whole_key_filtering`): a blocked Bloom
//! filter over the user keys inserted, so that a point lookup of a key the memtable does not
//! hold — most lookups, once the data outgrows one memtable — costs one cache line instead of
//! a skiplist walk (about twenty dependent cache misses at a few hundred thousand entries).
//!
//! Layout: 512-bit blocks (one cache line); a key's 64-bit hash picks a block with its high
//! half and [`PROBES`] bits inside it with its low half (multiplicative stepping, as RocksDB's
//! `FastLocalBloom`). Bits are only ever set (`fetch_or`), never cleared.
//!
//! Concurrency: the single inserting writer sets a key's bits before it publishes the entry's
//! seqno (a `Release` store), so a reader whose snapshot includes the entry (read with
//! `Acquire`) sees the bits: no false negatives. A reader whose snapshot does not include it
//! ignores the entry whether or not its bits are set. Relaxed atomics suffice for the bits
//! themselves. The writer [`KeyFilter::locate`]s a key's block (a prefetch) before its
//! skiplist insert and sets the bits after it, so the block's cache miss overlaps the
//! skiplist's instead of adding to it.

use std::sync::atomic::{AtomicU64, Ordering};

/// Bits set per key: about 1% false positives at 10 bits per key.
const PROBES: u32 = 6;

/// 64-bit words per block (512 bits: one cache line).
const BLOCK_WORDS: usize = 8;

/// Bytes of memtable budget per bit of filter (64 MiB get 1 MiB of filter). A memtable
/// charges an entry its skiplist node (at least 40 bytes) and its value, so a full memtable
/// has at least 5 bits per key (about 10% false positives, for empty keys and values);
/// 16-byte keys with 100-byte values get 20 (under 0.2%).
const BUDGET_BYTES_PER_BIT: usize = 8;

/// Most filter bytes (a 1 GiB memtable gets a 16 MiB filter; larger ones share it).
const MAX_FILTER_BYTES: usize = 16 << 20;

/// A key's place in the filter: its block and the hash half that picks its bits.
#[derive(Debug, Clone, Copy)]
pub(crate) struct KeyBits {
    block: usize,
    h: u32,
}

/// The filter. See the module doc.
pub(crate) struct KeyFilter {
    blocks: Box<[Block]>,
}

/// One block: a cache line of bits.
#[repr(align(64))]
struct Block([AtomicU64; BLOCK_WORDS]);

impl KeyFilter {
    /// A filter for a memtable of `budget_bytes` (its `memtable_size_bytes`); at least one
    /// block.
    pub(crate) fn for_budget(budget_bytes: usize) -> Self {
        let bits = (budget_bytes / BUDGET_BYTES_PER_BIT).min(MAX_FILTER_BYTES * 8);
        let blocks = (bits / (BLOCK_WORDS * 64)).max(1);
        KeyFilter {
            blocks: (0..blocks)
                .map(|_| Block(std::array::from_fn(|_| AtomicU64::new(0))))
                .collect(),
        }
    }

    /// Notes `key` (call before the entry's seqno is published).
    #[cfg(test)]
    pub(crate) fn insert(&self, key: &[u8]) {
        self.set(self.locate(key));
    }

    /// Hashes `key` and asks the CPU to fetch its block; [`Self::set`] notes it.
    pub(crate) fn locate(&self, key: &[u8]) -> KeyBits {
        let bits = self.bits_of(key);
        crate::prefetch::prefetch_value(&self.blocks[bits.block]);
        bits
    }

    /// Sets the bits of a key [`Self::locate`] returned (call before the entry's seqno is
    /// published).
    pub(crate) fn set(&self, bits: KeyBits) {
        self.for_each_bit(bits, |word, mask| {
            // Skip the atomic write when the bit is set (repeated keys, dense filters).
            if word.load(Ordering::Relaxed) & mask == 0 {
                word.fetch_or(mask, Ordering::Relaxed);
            }
            true
        });
    }

    /// False when `key` was certainly never inserted.
    pub(crate) fn may_contain(&self, key: &[u8]) -> bool {
        self.for_each_bit(self.bits_of(key), |word, mask| {
            word.load(Ordering::Relaxed) & mask != 0
        })
    }

    /// Bytes of filter.
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> usize {
        self.blocks.len() * std::mem::size_of::<Block>()
    }

    /// Where `key`'s bits are: the high half of its hash picks the block (fast range
    /// reduction), the low half the bits.
    fn bits_of(&self, key: &[u8]) -> KeyBits {
        let hash = xxhash_rust::xxh3::xxh3_64(key);
        KeyBits {
            block: (((hash >> 32) * self.blocks.len() as u64) >> 32) as usize,
            h: hash as u32,
        }
    }

    /// Calls `f` with each of the key's bits (its word and mask) until `f` returns false;
    /// returns whether every call returned true.
    fn for_each_bit(&self, bits: KeyBits, mut f: impl FnMut(&AtomicU64, u64) -> bool) -> bool {
        let words = &self.blocks[bits.block].0;
        let mut h = bits.h;
        for _ in 0..PROBES {
            let bit = (h >> 23) as usize; // the top 9 bits: 0..512
            if !f(&words[bit >> 6], 1u64 << (bit & 63)) {
                return false;
            }
            h = h.wrapping_mul(0x9e37_79b9);
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inserted_keys_are_always_found() {
        let f = KeyFilter::for_budget(1 << 20);
        for i in 0..50_000u32 {
            f.insert(format!("key:{i:012}").as_bytes());
        }
        for i in 0..50_000u32 {
            assert!(f.may_contain(format!("key:{i:012}").as_bytes()), "{i}");
        }
    }

    #[test]
    fn absent_keys_are_mostly_rejected() {
        // A 1 MiB budget: 128 Kbit of filter. 2,048 keys is 64 bits per key, so nearly every
        // absent key is rejected; 16,384 keys is 8 bits per key (the fewest a full memtable
        // has): under 3.5%.
        for (budget, keys, most_false) in [(1 << 20, 2_048u32, 50u32), (1 << 20, 16_384, 3_500)] {
            let f = KeyFilter::for_budget(budget);
            for i in 0..keys {
                f.insert(format!("present:{i}").as_bytes());
            }
            let false_positives = (0..100_000u32)
                .filter(|i| f.may_contain(format!("absent:{i}").as_bytes()))
                .count() as u32;
            assert!(
                false_positives <= most_false,
                "{false_positives} of 100000 absent keys pass with {keys} keys in {} bytes",
                f.bytes()
            );
        }
    }

    #[test]
    fn a_tiny_budget_still_has_a_block() {
        let f = KeyFilter::for_budget(0);
        assert_eq!(f.bytes(), 64);
        f.insert(b"k");
        assert!(f.may_contain(b"k"));
    }
}
