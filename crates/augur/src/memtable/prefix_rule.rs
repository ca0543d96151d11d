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
/// its anchor; keys carrying it map to their first two bytes, then the 6 bytes after the
/// anchor; other keys with the anchor's first two bytes map below or above them, and every
/// other key keeps its plain prefix (their first two bytes differ, which orders them).
#[derive(Debug, Clone, Default)]
pub(crate) struct PrefixRule {
    /// Empty: plain; else at least [`ANCHOR_MIN`] bytes.
    anchor: Vec<u8>,
}

/// The shortest shared prefix worth an anchor (with it, the prefix reads key bytes up to
/// `anchor + 6`, two more than the plain 8).
pub(crate) const ANCHOR_MIN: usize = 4;

/// The longest anchor kept (every prefix computation compares the key against it).
const ANCHOR_MAX: usize = 32;

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
        let anchor = self.anchor.as_slice();
        let plain = crate::index::projection::project(key, 0);
        let (Some(head), Some(key_head)) = (anchor.first_chunk::<2>(), key.first_chunk::<2>())
        else {
            return plain;
        };
        if head != key_head {
            return plain;
        }
        let family = u64::from(u16::from_be_bytes(*head)) << 48;
        let shared = key.iter().zip(anchor).take_while(|(a, b)| a == b).count();
        if shared == anchor.len() {
            let rest = &key[shared..];
            let mut word = [0u8; 8];
            let take = rest.len().min(6);
            word[2..2 + take].copy_from_slice(&rest[..take]);
            family | u64::from_be_bytes(word)
        } else if key.get(shared) < anchor.get(shared) {
            family // before every key carrying the anchor (a shorter key included)
        } else {
            family | ((1 << 48) - 1) // after them
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
