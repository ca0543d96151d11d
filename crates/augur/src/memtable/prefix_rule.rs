//! [`PrefixRule`]: how the memtable's skiplist turns a key into the u64 prefix its links
//! carry (see [`super::skiplist`]). Invariant: the map is monotone over all byte strings, so
//! comparing prefixes never contradicts comparing keys; ties fall back to a key comparison.

/// How a list computes the key prefixes its links carry: a monotone map from keys to u64
/// (`a <= b` bytewise implies `prefix(a) <= prefix(b)`), so that ordering by it agrees with
/// bytewise ordering wherever two prefixes differ and most comparisons of a search are one
/// integer compare against the link that leads to the node.
///
/// Plain (no anchor): the key's first 8 bytes, zero-padded, big-endian (the learned indexes'
/// projection with no shared prefix). That tells nothing apart where keys share their first
/// 8 bytes (`counter:…`, `user:000…`): every step of a search then reads the successor's key,
/// a cache miss even where the step goes down a level. Anchored: a list made after another
/// memtable whose keys shared a prefix of at least [`ANCHOR_MIN`] bytes takes that prefix as
/// its anchor, and a key's prefix is its class in the top two bits — below every key
/// carrying the anchor (0), carrying it (1), above them (2) — then 62 bits: for a key
/// carrying the anchor, the 8 bytes after it; for any other key, its first 8 bytes (each
/// zero-padded and shifted right by two, which keeps the order).
#[derive(Debug, Clone, Default)]
pub(crate) struct PrefixRule {
    /// Empty: plain; else at least [`ANCHOR_MIN`] bytes.
    anchor: Vec<u8>,
}

/// The shortest shared prefix worth an anchor.
pub(crate) const ANCHOR_MIN: usize = 4;

/// The longest anchor kept (every prefix computation compares the key against it).
const ANCHOR_MAX: usize = 32;

/// The anchored classes' tags, in the top two bits of a prefix.
const BELOW: u64 = 0;
const CARRYING: u64 = 1 << 62;
const ABOVE: u64 = 2 << 62;

impl PrefixRule {
    /// The rule for keys expected to share `shared` (the previous memtable's common prefix):
    /// anchored when it is at least [`ANCHOR_MIN`] bytes long, plain otherwise.
    pub(crate) fn for_shared_prefix(shared: &[u8]) -> PrefixRule {
        if shared.len() < ANCHOR_MIN {
            return PrefixRule::default();
        }
        PrefixRule {
            anchor: shared[..shared.len().min(ANCHOR_MAX)].to_vec(),
        }
    }

    /// The prefix of `key`.
    #[inline]
    pub(crate) fn prefix(&self, key: &[u8]) -> u64 {
        let plain = |k: &[u8]| crate::index::projection::project(k, 0);
        let anchor = self.anchor.as_slice();
        if anchor.is_empty() {
            return plain(key);
        }
        let shared = key.iter().zip(anchor).take_while(|(a, b)| a == b).count();
        if shared == anchor.len() {
            CARRYING | plain(&key[shared..]) >> 2
        } else if key.get(shared) < anchor.get(shared) {
            BELOW | plain(key) >> 2 // a shorter key included
        } else {
            ABOVE | plain(key) >> 2
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Keys carrying the anchor are told apart by the 7 bytes after it (and the 8th's top
    /// six bits), keys of other families by their first 7.
    #[test]
    fn anchored_prefixes_tell_apart_the_bytes_after_the_anchor() {
        let rule = PrefixRule::for_shared_prefix(b"counter:0000");
        let p = |k: &[u8]| rule.prefix(k);
        assert!(p(b"counter:000012345670") < p(b"counter:000012345680"));
        assert!(p(b"counter:00001234567") < p(b"counter:000012345670"));
        assert!(p(b"counter:000") < p(b"counter:0000"));
        assert!(p(b"counter:1") > p(b"counter:00009999999999"));
        assert!(p(b"key:001") < p(b"key:002"));
        assert!(p(b"a") < p(b"counter:0000") && p(b"z") > p(b"counter:0000"));
    }

    proptest::proptest! {
        /// An anchored rule's prefixes are monotone over arbitrary byte strings.
        #[test]
        fn anchored_prefixes_are_monotone(
            anchor in proptest::collection::vec(proptest::sample::select(vec![0u8, 1, b'a', 255]), 0..8),
            a in proptest::collection::vec(proptest::sample::select(vec![0u8, 1, b'a', 255]), 0..14),
            b in proptest::collection::vec(proptest::sample::select(vec![0u8, 1, b'a', 255]), 0..14),
            carry in 0usize..3,
        ) {
            let rule = PrefixRule::for_shared_prefix(&anchor);
            let with = |k: &[u8]| match carry {
                0 => [anchor.as_slice(), k].concat(),
                1 => [anchor.get(..2).unwrap_or_default(), k].concat(),
                _ => k.to_vec(),
            };
            let (a, b) = (with(&a), b.clone());
            let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
            proptest::prop_assert!(rule.prefix(&lo) <= rule.prefix(&hi), "{:?} {:?}", lo, hi);
        }
    }
}
