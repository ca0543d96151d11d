//! The string tree's decoder and builder (index kind 8, `augur::index::string_tree`).
//!
//! The first input byte chooses the mode (modulo 3):
//! - 0: the rest is a model section body of kind 8 (the header is prepended). Decoding
//!   returns `Ok` or a clean `Corruption`/`UnsupportedVersion` naming the file, allocates at
//!   most `alloc_bound::bound` bytes for its input, and a decoded tree answers every byte
//!   probe with a window inside the file (`lo < hi <= n + 1`, at most `max_window` wide, never
//!   a panic) and re-encodes to bytes that decode to the same encoding.
//! - 1: structure-aware. The rest gives an error bound and run limit, then keys (split at a
//!   separator byte the input chooses, so they share prefixes of many depths and repeat);
//!   the tree is built over them sorted, and for every probe — each key, each key's
//!   prefixes and one-byte extensions, bytes before and after them all — the byte-key lower
//!   bound lies in `[lo, hi + run_limit)` (the contract of `string_tree.rs`); encode →
//!   decode → encode is the identity with equal answers.
//! - 2: damaged real encodings: the first half of the rest builds a tree as in mode 1, the
//!   second half edits its encoding (3-byte edits: position, xor mask; a last odd byte
//!   truncates), which is then checked as in mode 0.
#![no_main]

#[path = "alloc_bound.rs"]
mod alloc_bound;
#[path = "common.rs"]
#[allow(dead_code)]
mod common;
#[path = "index_model.rs"]
#[allow(dead_code)]
mod index_model;

use augur::index::string_tree::StringTree;
use augur::index::{self, Index, IndexKind};
use index_model::file;

#[global_allocator]
static ALLOC: alloc_bound::Counting = alloc_bound::Counting;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    match mode % 3 {
        0 => decode_arbitrary(rest),
        1 => {
            build_and_round_trip(rest);
        }
        _ => {
            let (build, edits) = rest.split_at(rest.len() / 2);
            if let Some(mut encoded) = build_and_round_trip(build) {
                index_model::apply_edits(&mut encoded, edits);
                decode_arbitrary(encoded.get(2..).unwrap_or_default());
            }
        }
    }
});

fn decode_arbitrary(body: &[u8]) {
    let mut bytes = vec![IndexKind::StringTree as u8, index::FORMAT_VERSION];
    bytes.extend_from_slice(body);
    let decoded = alloc_bound::check(bytes.len(), "string tree decode", || {
        index::decode(&bytes, file(), 7)
    });
    match decoded {
        Ok(ix) => {
            assert_eq!(ix.kind(), IndexKind::StringTree);
            let n = ix.len();
            for probe in probes_of(&bytes) {
                let w = ix.search_key(probe, &[]);
                assert!(w.lo < w.hi, "empty window {w:?} for {probe:?}");
                assert!(w.hi <= n + 1, "window {w:?} past n + 1 = {}", n + 1);
                assert!(
                    w.len() <= ix.max_window(),
                    "window {w:?} over max {}",
                    ix.max_window()
                );
            }
            index_model::check_stable_encoding(ix.as_ref());
        }
        Err(e) => common::check_clean_error(&e, file()),
    }
}

/// Byte probes for a decoded tree: the empty key, extremes, and slices of the input.
fn probes_of(bytes: &[u8]) -> Vec<&[u8]> {
    let mut probes: Vec<&[u8]> = vec![b"", b"\0", b"\xff\xff\xff\xff\xff\xff\xff\xff\xff"];
    probes.extend(bytes.chunks(11).take(48));
    probes.extend((1..bytes.len().min(24)).map(|i| &bytes[..i]));
    probes
}

/// Builds a tree from `rest` and checks it; returns its encoding (when it built).
fn build_and_round_trip(rest: &[u8]) -> Option<Vec<u8>> {
    let [params0, params1, separator, ref key_bytes @ ..] = *rest else {
        return None;
    };
    let delta = [0, 1, 2, 4, 8, 32][usize::from(params0) % 6];
    let run_limit = u32::from(params1 % 40) + 1;
    let mut keys: Vec<&[u8]> = key_bytes.split(|&b| b == separator).take(4096).collect();
    keys.sort_unstable();
    let tree = match StringTree::build(&keys, delta, run_limit) {
        Ok(t) => t,
        Err(augur::Error::InvalidArgument(_)) => return None,
        Err(e) => panic!("building over sorted keys failed: {e}"),
    };
    assert_eq!(tree.len(), keys.len() as u64);
    let mut encoded = Vec::new();
    tree.encode(&mut encoded);
    let decoded = index::decode(&encoded, file(), 0).expect("an encoded tree decodes");
    let mut again = Vec::new();
    decoded.encode(&mut again);
    assert_eq!(encoded, again, "encode → decode → encode changed the bytes");
    let mut probes: Vec<Vec<u8>> = vec![Vec::new(), vec![0xff; 12]];
    for k in keys.iter().take(512) {
        probes.push(k.to_vec());
        probes.extend((0..k.len()).map(|i| k[..i].to_vec()));
        for b in [0u8, 0x7f, 0xff] {
            let mut longer = k.to_vec();
            longer.push(b);
            probes.push(longer);
        }
        if let Some((&last, head)) = k.split_last() {
            let mut after = head.to_vec();
            after.push(last.saturating_add(1));
            probes.push(after);
        }
    }
    let n = keys.len() as u64;
    for q in &probes {
        let lb = keys.partition_point(|k| *k < q.as_slice()) as u64;
        let w = tree.search_rest(q);
        assert!(
            w.lo <= lb && lb < w.hi + u64::from(run_limit) && w.lo < w.hi && w.hi <= n + 1,
            "probe {q:?}: lower bound {lb} outside [{}, {} + run limit {run_limit}) of {n} keys",
            w.lo,
            w.hi
        );
        assert!(
            w.len() <= tree.max_window(),
            "window {w:?} > {}",
            tree.max_window()
        );
        assert_eq!(
            decoded.search_key(q, &[]),
            w,
            "the decoded tree answers otherwise"
        );
    }
    Some(encoded)
}
