//! Internal keys: a user key plus a trailer `(seqno << 8) | kind`, as in LevelDB.
//!
//! Internal order is user key ascending (bytewise), then seqno **descending**, so the newest
//! version of a key comes first and a lookup at snapshot `s` seeks to `(key, s)` and takes the
//! first entry of the same user key. Snapshots are sequence numbers.

use std::cmp::Ordering;

/// A sequence number: the position of a write in the total order of writes.
pub type SeqNo = u64;

/// Largest sequence number that fits in a trailer (56 bits).
pub const MAX_SEQNO: SeqNo = (1 << 56) - 1;

/// Longest user key accepted by the engine (bytes). Keys are stored in fixed-width SSTable
/// slots of the longest key in the file, so long keys cost space in their whole file.
pub const MAX_KEY_LEN: usize = 65_535;

/// What an internal entry holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum ValueKind {
    /// A tombstone: the key is deleted as of this seqno.
    Delete = 0,
    /// The value is stored inline (in the memtable, WAL record or SSTable value section).
    Value = 1,
    /// The value lives in the value log; the stored bytes are an encoded `ValuePointer`.
    Pointer = 2,
    /// An inline value with an expiry time: the stored bytes are the expiry (milliseconds
    /// since the Unix epoch, u64 little-endian) followed by the user's value
    /// ([`crate::expiry`]). Never separated into the value log. Once its time has passed
    /// the entry reads as a tombstone, and compaction rewrites it as one.
    ExpiringValue = 3,
}

impl ValueKind {
    /// Decodes a kind byte; `None` for an unknown kind (a corruption).
    pub fn from_u8(b: u8) -> Option<Self> {
        match b {
            0 => Some(ValueKind::Delete),
            1 => Some(ValueKind::Value),
            2 => Some(ValueKind::Pointer),
            3 => Some(ValueKind::ExpiringValue),
            _ => None,
        }
    }

    /// True for the kinds whose value is stored inline, in the memtable, WAL record or
    /// SSTable value chunk (`Value`, `ExpiringValue`).
    #[inline]
    pub fn is_inline(self) -> bool {
        matches!(self, ValueKind::Value | ValueKind::ExpiringValue)
    }
}

/// Packs a seqno and kind into the 8-byte trailer.
pub fn pack_trailer(seqno: SeqNo, kind: ValueKind) -> u64 {
    debug_assert!(seqno <= MAX_SEQNO);
    (seqno << 8) | kind as u64
}

/// Splits a trailer; `None` when the kind byte is unknown.
pub fn unpack_trailer(trailer: u64) -> Option<(SeqNo, ValueKind)> {
    Some((trailer >> 8, ValueKind::from_u8(trailer as u8)?))
}

/// An owned internal key.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct InternalKey {
    /// The user's key bytes.
    pub user_key: Vec<u8>,
    /// Sequence number of the write.
    pub seqno: SeqNo,
    /// What the entry holds.
    pub kind: ValueKind,
}

impl InternalKey {
    /// Builds an internal key.
    pub fn new(user_key: impl Into<Vec<u8>>, seqno: SeqNo, kind: ValueKind) -> Self {
        InternalKey {
            user_key: user_key.into(),
            seqno,
            kind,
        }
    }

    /// The packed trailer.
    pub fn trailer(&self) -> u64 {
        pack_trailer(self.seqno, self.kind)
    }
}

/// Compares two internal keys given as (user key, trailer): user key ascending, trailer
/// descending.
#[inline]
pub fn compare(a_key: &[u8], a_trailer: u64, b_key: &[u8], b_trailer: u64) -> Ordering {
    compare_user_keys(a_key, b_key).then(b_trailer.cmp(&a_trailer))
}

/// Bytewise order of two user keys (`a.cmp(b)`), comparing 8 bytes at a time as big-endian
/// words: on the lookup path keys are short, and a `memcmp` call per probe costs more than
/// the comparison itself.
#[inline]
pub fn compare_user_keys(mut a: &[u8], mut b: &[u8]) -> Ordering {
    while let (Some((x, a_rest)), Some((y, b_rest))) =
        (a.split_first_chunk::<8>(), b.split_first_chunk::<8>())
    {
        let (x, y) = (u64::from_be_bytes(*x), u64::from_be_bytes(*y));
        if x != y {
            return x.cmp(&y);
        }
        (a, b) = (a_rest, b_rest);
    }
    // Fewer than 8 bytes left in one of them: compare up to 8 more bytes as zero-padded
    // words (a `memcmp` call for a short tail cost a sixth of a string-key lookup), then
    // the lengths. Padded words that differ differ at a real byte of both, or where the
    // shorter one has ended and the other has a non-zero byte: in both cases the byte
    // order. Equal words mean the shorter one (under 8 bytes) is a prefix of the other.
    tail_word(a)
        .cmp(&tail_word(b))
        .then(a.len().cmp(&b.len()))
}

/// The first (up to) 8 bytes of `t` as a big-endian word, zero-padded.
#[inline(always)]
fn tail_word(t: &[u8]) -> u64 {
    if let Some(word) = t.first_chunk::<8>() {
        return u64::from_be_bytes(*word);
    }
    t.iter()
        .enumerate()
        .fold(0, |v, (i, &byte)| v | u64::from(byte) << (56 - 8 * i))
}

/// `a == b` for user keys, 8 bytes at a time (no `memcmp` call for short keys): scans and
/// compaction test every entry against the previous key.
#[inline]
pub fn same_user_key(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && compare_user_keys(a, b) == Ordering::Equal
}

/// `key` without `prefix` when it starts with it (`<[u8]>::strip_prefix`), 8 bytes at a
/// time: every lookup strips a file's and a block's prefix, and a `memcmp` call for a short
/// prefix costs more than the comparison.
#[inline]
pub fn strip_key_prefix<'k>(key: &'k [u8], prefix: &[u8]) -> Option<&'k [u8]> {
    let (head, rest) = key.split_at_checked(prefix.len())?;
    same_user_key(head, prefix).then_some(rest)
}

impl Ord for InternalKey {
    fn cmp(&self, other: &Self) -> Ordering {
        compare(
            &self.user_key,
            self.trailer(),
            &other.user_key,
            other.trailer(),
        )
    }
}

impl PartialOrd for InternalKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newest_first() {
        let a = InternalKey::new(b"k".to_vec(), 5, ValueKind::Value);
        let b = InternalKey::new(b"k".to_vec(), 3, ValueKind::Value);
        let c = InternalKey::new(b"l".to_vec(), 9, ValueKind::Value);
        assert!(a < b && b < c);
        assert_eq!(unpack_trailer(a.trailer()), Some((5, ValueKind::Value)));
        assert_eq!(unpack_trailer(7 << 8 | 9), None);
    }

    proptest::proptest! {
        #[test]
        fn word_compare_matches_bytewise_order(
            a in proptest::collection::vec(0u8..4, 0..24),
            b in proptest::collection::vec(0u8..4, 0..24),
        ) {
            proptest::prop_assert_eq!(compare_user_keys(&a, &b), a.cmp(&b));
            proptest::prop_assert_eq!(compare_user_keys(&a, &a), Ordering::Equal);
        }

        #[test]
        fn word_prefix_strip_matches_the_slice_method(
            key in proptest::collection::vec(0u8..3, 0..24),
            prefix in proptest::collection::vec(0u8..3, 0..12),
        ) {
            proptest::prop_assert_eq!(strip_key_prefix(&key, &prefix), key.strip_prefix(&prefix[..]));
            // Every prefix of the key itself strips.
            let cut = prefix.len().min(key.len());
            proptest::prop_assert_eq!(strip_key_prefix(&key, &key[..cut]), Some(&key[cut..]));
        }
    }
}
