//! Tests of the string tree (`string_tree.rs`): the byte-key window contract for keys of
//! every shape (shared prefixes of any depth, small alphabets, zero bytes, keys that are
//! prefixes of others, versions of one key), the encoding, and what the tree does with the
//! key shapes it exists for.

use super::string_tree::{project_at, StringTree};
use super::*;
use proptest::prelude::*;

/// A tree over `keys` (sorted) with PLR nodes of error bound `delta`.
fn tree(keys: &[Vec<u8>], delta: u32, run_limit: u32) -> StringTree {
    let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
    StringTree::build(&refs, delta, run_limit).expect("build")
}

/// Checks the contract for `query` (module doc of `string_tree.rs`).
fn check_window(t: &StringTree, keys: &[Vec<u8>], query: &[u8]) -> Result<(), TestCaseError> {
    let n = keys.len() as u64;
    let lb = keys.partition_point(|k| k.as_slice() < query) as u64;
    let w = t.search_rest(query);
    let reach = w.hi + u64::from(t.run_limit());
    prop_assert!(
        w.lo <= lb && lb < reach && w.hi <= n + 1 && w.lo < w.hi,
        "query {:?}: lower bound {} outside [{}, {} + run limit) of {} keys",
        query,
        lb,
        w.lo,
        w.hi,
        n
    );
    prop_assert!(
        w.len() <= t.max_window(),
        "window {:?} > {}",
        w,
        t.max_window()
    );
    Ok(())
}

/// Keys built from a few path-like components, so they share prefixes of many depths.
fn structured_key() -> impl Strategy<Value = Vec<u8>> {
    let part = prop::sample::select(vec![
        &b"usr/"[..],
        b"share/",
        b"icons/Papirus/",
        b"48x48/",
        b"a",
        b"b",
        b"\0",
        b"\xff",
        b"00000000",
        b"x/y/z/",
    ]);
    prop::collection::vec(part, 0..8).prop_map(|parts| parts.concat())
}

/// Short keys over a tiny alphabet with zero bytes: projections collide at every depth.
fn tiny_key() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(prop::sample::select(vec![0u8, 1, 0xff]), 0..20)
}

fn key_set(key: BoxedStrategy<Vec<u8>>) -> impl Strategy<Value = Vec<Vec<u8>>> {
    prop::collection::vec((key, 1usize..4), 1..400).prop_map(|ks| {
        let mut keys: Vec<Vec<u8>> = ks
            .into_iter()
            .flat_map(|(k, versions)| std::iter::repeat_n(k, versions))
            .collect();
        keys.sort();
        keys
    })
}

/// Every key, its neighbours (one byte more, one less, a zero appended), and some absent
/// keys.
fn queries(keys: &[Vec<u8>], extra: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let mut q: Vec<Vec<u8>> = Vec::new();
    for k in keys {
        q.push(k.clone());
        q.push([k.as_slice(), &[0]].concat());
        q.push([k.as_slice(), &[0xff, 0xff]].concat());
        let mut shorter = k.clone();
        shorter.pop();
        q.push(shorter);
        if let Some(last) = k.last() {
            let mut bumped = k.clone();
            *bumped.last_mut().expect("non-empty") = last.wrapping_add(1);
            q.push(bumped);
        }
    }
    q.extend(extra.iter().cloned());
    q.push(Vec::new());
    q.push(vec![0xff; 40]);
    q
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// The window holds the byte-key lower bound of every query, present or absent, within
    /// `max_window`, for keys sharing prefixes of every depth.
    #[test]
    fn window_holds_the_byte_lower_bound_of_any_key(
        keys in key_set(structured_key().boxed()),
        probes in prop::collection::vec(structured_key(), 0..30),
        delta in prop::sample::select(vec![0u32, 1, 4, 8]),
        run_limit in prop::sample::select(vec![1u32, 2, 16]),
    ) {
        let t = tree(&keys, delta, run_limit);
        for q in queries(&keys, &probes) {
            check_window(&t, &keys, &q)?;
        }
    }

    /// The same over a tiny alphabet with zero bytes (keys that are prefixes of others and
    /// equal after zero padding), through the encoding too.
    #[test]
    fn zero_bytes_and_prefix_keys_and_the_encoding(
        keys in key_set(tiny_key().boxed()),
        probes in prop::collection::vec(tiny_key(), 0..30),
        delta in prop::sample::select(vec![0u32, 2, 8]),
        run_limit in prop::sample::select(vec![1u32, 3, 16]),
    ) {
        let t = tree(&keys, delta, run_limit);
        let mut bytes = Vec::new();
        t.encode(&mut bytes);
        let decoded = decode(&bytes, std::path::Path::new("t"), 0).expect("decode");
        prop_assert_eq!(decoded.kind(), IndexKind::StringTree);
        prop_assert_eq!(decoded.len(), keys.len() as u64);
        let mut again = Vec::new();
        decoded.encode(&mut again);
        prop_assert_eq!(&again, &bytes);
        for q in queries(&keys, &probes) {
            check_window(&t, &keys, &q)?;
            prop_assert_eq!(decoded.search_key(&q, &[]), t.search_rest(&q));
        }
    }

    /// Damaged encodings decode to an error or to a tree that still answers every query
    /// with windows inside the file: never a panic.
    #[test]
    fn damaged_encodings_never_panic(
        keys in key_set(structured_key().boxed()),
        flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
        cut in any::<prop::sample::Index>(),
    ) {
        let t = tree(&keys, 4, 4);
        let mut bytes = Vec::new();
        t.encode(&mut bytes);
        let mut damaged = bytes.clone();
        for (at, x) in &flips {
            let i = at.index(damaged.len());
            damaged[i] ^= x | 1;
        }
        let n = keys.len() as u64;
        for candidate in [damaged, bytes[..cut.index(bytes.len())].to_vec()] {
            if let Ok(idx) = decode(&candidate, std::path::Path::new("t"), 0) {
                for q in queries(&keys, &[]) {
                    let w = idx.search_key(&q, &[]);
                    prop_assert!(w.lo < w.hi && w.hi <= idx.len() + 1, "{:?} of {}", w, n);
                }
            }
        }
    }
}

/// The file prefix: keys outside it order before or after the whole file.
#[test]
fn keys_outside_the_file_prefix() {
    let keys: Vec<Vec<u8>> = (0..100u32)
        .map(|i| format!("{i:05}").into_bytes())
        .collect();
    let t = tree(&keys, 4, 8);
    let with = |k: &[u8]| t.search_key(&[b"pre/", k].concat(), b"pre/");
    assert_eq!(with(b"00000").lo, 0);
    assert_eq!(t.search_key(b"pra", b"pre/"), Window { lo: 0, hi: 1 });
    assert_eq!(t.search_key(b"pre", b"pre/"), Window { lo: 0, hi: 1 });
    assert_eq!(t.search_key(b"prf", b"pre/"), Window { lo: 100, hi: 101 });
    let w = with(b"00050");
    assert!(w.lo <= 50 && 50 < w.hi, "{w:?}");
}

/// The projection orders a key that ends before its extensions, and ties keys that go on
/// past the chunk.
#[test]
fn projection_is_monotone_and_length_aware() {
    assert!(project_at(b"ab", 0) < project_at(b"ab\0", 0));
    assert!(project_at(b"ab\0", 0) < project_at(b"ab\0\0", 0));
    assert!(project_at(b"abcdefg", 0) < project_at(b"abcdefgh", 0));
    assert_eq!(project_at(b"abcdefgh", 0), project_at(b"abcdefgz", 0));
    assert!(project_at(b"abcdefgz", 0) < project_at(b"abcdefh", 0));
    assert_eq!(project_at(b"xxab", 2), project_at(b"ab", 0));
    let mut keys: Vec<Vec<u8>> = vec![
        b"".to_vec(),
        b"\0".to_vec(),
        b"\0\0".to_vec(),
        b"a".to_vec(),
        b"a\0".to_vec(),
        b"abcdefg".to_vec(),
        b"abcdefg\0".to_vec(),
        b"abcdefgzzz".to_vec(),
        b"abcdefh".to_vec(),
    ];
    keys.sort();
    for w in keys.windows(2) {
        assert!(project_at(&w[0], 0) <= project_at(&w[1], 0), "{w:?}");
    }
}

/// The projection read as one word (keys with 8 or more bytes past the depth) is the byte
/// layout the module documents: the next 7 bytes, then how many bytes follow (at most 8),
/// for every length and depth, and for a depth past the key's end.
#[test]
fn projection_matches_its_byte_layout_at_every_length() {
    let key: Vec<u8> = (0..24u8).map(|i| i.wrapping_mul(37) ^ 0xA5).collect();
    for len in 0..key.len() {
        for depth in 0..=len + 2 {
            let rest = key[..len].get(depth..).unwrap_or_default();
            let mut want = [0u8; 8];
            for (w, b) in want.iter_mut().zip(rest.iter().take(7)) {
                *w = *b;
            }
            want[7] = rest.len().min(8) as u8;
            assert_eq!(
                project_at(&key[..len], depth),
                u64::from_be_bytes(want),
                "length {len}, depth {depth}"
            );
        }
    }
}

/// Keys that share most of their bytes (paths under a few directories, composite keys with
/// zero-padded numbers): the tree splits the runs a single projection cannot, and its
/// windows stay at most a model window plus the run limit wide.
#[test]
fn deep_shared_prefixes_get_children() {
    let mut keys: Vec<Vec<u8>> = Vec::new();
    for dir in [
        "usr/share/icons/Papirus/48x48/apps/",
        "usr/share/texlive/texmf-dist/tex/",
    ] {
        for i in 0..3000 {
            keys.push(format!("{dir}file-{i:06}.svg").into_bytes());
        }
    }
    for i in 0..3000 {
        keys.push(format!("user:{i:012}:profile").into_bytes());
    }
    keys.sort();
    let t = tree(&keys, 8, 16);
    assert!(t.max_window() <= 2 * 8 + 1, "{}", t.max_window());
    assert!(t.segments() >= 3, "{}", t.segments());
    for (i, k) in keys.iter().enumerate() {
        let w = t.search_rest(k);
        let i = i as u64;
        assert!(w.lo <= i && i < w.hi + 16, "{i}: {w:?}");
    }
}

/// Bad inputs are refused.
#[test]
fn refuses_unsorted_keys_and_bad_parameters() {
    let keys: Vec<&[u8]> = vec![b"b", b"a"];
    assert!(StringTree::build(&keys, 8, 16).is_err());
    assert!(StringTree::build(&[b"a"], 8, 0).is_err());
    // An empty tree answers with the only window there is.
    let empty = StringTree::build(&[], 8, 16).expect("empty");
    assert_eq!(empty.search_rest(b"x"), Window { lo: 0, hi: 1 });
}
