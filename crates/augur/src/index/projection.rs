//! Key projection: maps the byte keys of one sorted file to u64 numbers that an [`super::Index`]
//! can model (DESIGN.md, "Key projection"; Bourbon only handles fixed-size integer keys).
//!
//! Per file, the common prefix of all its keys is stripped (it is the common prefix of the
//! first and last key, since every key between two keys sharing a prefix shares it too), and
//! the next 8 bytes are read big-endian, zero-padded. The projection is monotone — `a <= b`
//! bytewise implies `project(a) <= project(b)` for keys carrying the prefix — but not
//! injective: keys equal in their first `prefix_len + 8` bytes collide, and so do `b"a"` and
//! `b"a\0"`. Callers handle ties as the [`super`] module docs describe.

/// Length of the longest common prefix of `first` and `last`. For the first and last key of a
/// sorted file, this is the common prefix of all its keys.
pub fn common_prefix_len(first: &[u8], last: &[u8]) -> usize {
    first.iter().zip(last).take_while(|(a, b)| a == b).count()
}

/// Projects `key`: skips `prefix_len` bytes and reads the next 8 bytes big-endian, padding
/// with zero bytes. A key of at most `prefix_len` bytes projects to 0.
///
/// REQUIRES (for monotonicity): the keys compared share their first `prefix_len` bytes. For
/// lookup keys that may not, use [`project_bounded`].
#[inline]
pub fn project(key: &[u8], prefix_len: usize) -> u64 {
    let rest = key.get(prefix_len..).unwrap_or_default();
    if let Some(head) = rest.first_chunk::<8>() {
        return u64::from_be_bytes(*head);
    }
    let mut word = [0u8; 8];
    for (dst, src) in word.iter_mut().zip(rest) {
        *dst = *src;
    }
    u64::from_be_bytes(word)
}

/// Projects any byte key against a file whose keys all start with `prefix`: keys starting with
/// `prefix` project as [`project`]; keys ordered before every such key project to 0, keys
/// ordered after every such key to `u64::MAX`. Monotone over all byte strings, so a reader can
/// project a lookup key without first checking it against the file's key range.
#[inline]
pub fn project_bounded(key: &[u8], prefix: &[u8]) -> u64 {
    // Prefixes are short: a byte loop beats a `memcmp` call on the lookup path.
    let shared = key.iter().zip(prefix).take_while(|(a, b)| a == b).count();
    if shared == prefix.len() {
        project(key, prefix.len())
    } else if key.get(shared) < prefix.get(shared) {
        0
    } else {
        u64::MAX
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn examples() {
        assert_eq!(common_prefix_len(b"user:0001", b"user:0999"), 6);
        assert_eq!(common_prefix_len(b"abc", b"abc"), 3);
        assert_eq!(common_prefix_len(b"", b"abc"), 0);
        assert_eq!(common_prefix_len(b"ab", b"abc"), 2);
        assert_eq!(
            project(b"user:0001", 6),
            u64::from_be_bytes(*b"001\0\0\0\0\0")
        );
        assert_eq!(project(b"ab", 2), 0);
        assert_eq!(project(b"a", 2), 0);
        assert_eq!(
            project(&[1, 2, 3, 4, 5, 6, 7, 8, 9], 0),
            0x0102_0304_0506_0708
        );
        assert_eq!(project(&[0xff; 8], 0), u64::MAX);
        assert_eq!(project_bounded(b"aa", b"ab"), 0);
        assert_eq!(project_bounded(b"a", b"ab"), 0);
        assert_eq!(project_bounded(b"ac", b"ab"), u64::MAX);
        assert_eq!(project_bounded(b"ab\x01", b"ab"), 1 << 56);
    }

    /// Short keys over a small alphabet, so that prefixes and ties are common.
    fn key() -> impl Strategy<Value = Vec<u8>> {
        prop::collection::vec(
            prop::sample::select(vec![0u8, 1, 0x7f, 0x80, 0xfe, 0xff]),
            0..14,
        )
    }

    proptest! {
        /// a <= b implies project(a) <= project(b) for keys sharing the stripped prefix, with
        /// the prefix taken from a sorted "file" holding both.
        #[test]
        fn projection_is_monotone(mut keys in prop::collection::vec(key(), 2..20)) {
            keys.sort();
            let (Some(first), Some(last)) = (keys.first(), keys.last()) else { unreachable!() };
            let p = common_prefix_len(first, last);
            for k in &keys {
                prop_assert!(k.starts_with(&first[..p]));
            }
            for pair in keys.windows(2) {
                prop_assert!(project(&pair[0], p) <= project(&pair[1], p));
            }
        }

        /// project_bounded is monotone over arbitrary pairs of byte strings.
        #[test]
        fn bounded_projection_is_monotone(a in key(), b in key(), prefix in key()) {
            let (a, b) = if a <= b { (a, b) } else { (b, a) };
            prop_assert!(project_bounded(&a, &prefix) <= project_bounded(&b, &prefix));
        }

        /// Different projections order keys exactly: project(a) < project(b) implies a < b.
        #[test]
        fn distinct_projections_order_keys(a in key(), b in key(), p in 0usize..4) {
            let prefix = vec![7u8; p];
            let a = [prefix.as_slice(), &a].concat();
            let b = [prefix.as_slice(), &b].concat();
            if project(&a, p) < project(&b, p) {
                prop_assert!(a < b);
            }
        }
    }
}
