//! Shared by the `index_*` targets, one per index type of the zoo (issue 13).
//!
//! The first input byte chooses the mode (modulo 3):
//! - 0: the rest is a model section body of this type (the header is prepended). Decoding
//!   returns `Ok` or a clean `Corruption`/`UnsupportedVersion` naming the file, allocates at
//!   most `alloc_bound::bound` bytes for its input, and a decoded index keeps the window contract for
//!   every probe (`hi - lo <= max_window`, `hi <= n + 1`, never a panic) and re-encodes to
//!   bytes that decode to the same encoding.
//! - 1: structure-aware. The rest gives a configuration and keys (8 bytes each, sorted);
//!   the index is built, and every key — present, absent, before and after them all — lies in
//!   its window (the contract of `augur::index`); encode → decode round-trips exactly and the
//!   decoded index answers the same windows.
//! - 2: damaged real encodings. The first half of the rest builds an index as in mode 1; the
//!   second half edits its encoding (3-byte edits: position, xor mask; a last odd byte
//!   truncates), which is then checked as in mode 0. Libfuzzer rarely reaches a valid
//!   encoding from random bytes; this starts from one.

use augur::index::{self, IndexConfig, IndexKind, IndexTuning, RmiRoot};
use std::path::Path;

pub fn file() -> &'static Path {
    Path::new("/db/000042.sst")
}

/// Runs one input against the index type `kind`.
pub fn run(kind: IndexKind, data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    match mode % 3 {
        0 => decode_arbitrary(kind, rest),
        1 => {
            build_and_round_trip(kind, rest);
        }
        _ => {
            let (build, edits) = rest.split_at(rest.len() / 2);
            if let Some(mut encoded) = build_and_round_trip(kind, build) {
                apply_edits(&mut encoded, edits);
                // Keep the header: mode 0 prepends it.
                decode_arbitrary(kind, encoded.get(2..).unwrap_or_default());
            }
        }
    }
}

fn decode_arbitrary(kind: IndexKind, body: &[u8]) {
    let mut bytes = vec![kind as u8, index::FORMAT_VERSION];
    bytes.extend_from_slice(body);
    let decoded = crate::alloc_bound::check(bytes.len(), "index decode", || {
        index::decode(&bytes, file(), 7)
    });
    match decoded {
        Ok(ix) => {
            assert_eq!(ix.kind(), kind);
            let n = ix.len();
            for key in probes(&bytes) {
                let w = ix.search(key);
                assert!(w.lo < w.hi, "empty window {w:?} for {key}");
                assert!(w.hi <= n + 1, "window {w:?} past n + 1 = {}", n + 1);
                assert!(
                    w.len() <= ix.max_window(),
                    "window {w:?} over max {}",
                    ix.max_window()
                );
            }
            check_stable_encoding(ix.as_ref());
        }
        Err(e) => crate::common::check_clean_error(&e, file()),
    }
}

/// Mode 2's damage: 3-byte edits of `encoded` (a little-endian u16 position, an xor mask;
/// positions past the end are skipped), and a last odd byte cuts that many bytes off.
pub fn apply_edits(encoded: &mut Vec<u8>, edits: &[u8]) {
    for e in edits.chunks_exact(3) {
        let pos = usize::from(u16::from_le_bytes([e[0], e[1]]));
        if let Some(b) = encoded.get_mut(pos) {
            *b ^= e[2];
        }
    }
    if edits.len() % 3 != 0 {
        let cut = usize::from(edits[edits.len() - 1]);
        encoded.truncate(encoded.len().saturating_sub(cut));
    }
}

/// Panics unless a decoded index's encoding decodes again to the same encoding.
pub fn check_stable_encoding(ix: &dyn index::Index) {
    let mut again = Vec::new();
    ix.encode(&mut again);
    let re = index::decode(&again, file(), 7).expect("a re-encoded index decodes");
    let mut twice = Vec::new();
    re.encode(&mut twice);
    assert_eq!(again, twice, "encode is not stable through decode");
}

/// Keys to probe a decoded index with: the extremes and words of the input.
fn probes(bytes: &[u8]) -> Vec<u64> {
    let mut keys = vec![0, 1, u64::MAX, u64::MAX / 2];
    keys.extend(bytes.chunks(8).take(64).map(|c| {
        let mut w = [0u8; 8];
        w[..c.len()].copy_from_slice(c);
        u64::from_le_bytes(w)
    }));
    keys
}

/// Builds an index from `rest` and checks it; returns its encoding (when it built).
fn build_and_round_trip(kind: IndexKind, rest: &[u8]) -> Option<Vec<u8>> {
    if rest.len() < 4 {
        return None;
    }
    let (params, key_bytes) = rest.split_at(4);
    let config = IndexConfig {
        kind,
        error_bound: [0, 1, 2, 8, 32, 255][usize::from(params[0]) % 6],
        fence_stride: u32::from(params[0] % 64) + 1,
        tuning: IndexTuning {
            pgm_recursive_error: u32::from(params[1] % 8) + 1,
            radix_bits: u32::from(params[1] % 24) + 1,
            rmi_leaves: u32::from(params[2]) * 4,
            rmi_root: if params[2] % 2 == 0 {
                RmiRoot::Linear
            } else {
                RmiRoot::Cubic
            },
            fiting_fanout: u32::from(params[3]).clamp(2, 256),
            // Only string trees read it; this target builds over projections.
            string_run_limit: index::string_tree::DEFAULT_RUN_LIMIT,
        },
    };
    // Narrow keys (a shift chosen by the input) make duplicates and dense runs likely.
    let shift = u32::from(params[3] % 64);
    let mut keys: Vec<u64> = key_bytes
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])) >> shift)
        .collect();
    keys.sort_unstable();
    let mut b = index::builder(&config);
    for &k in &keys {
        b.add(k).expect("sorted keys are accepted");
    }
    let ix = match b.finish() {
        Ok(ix) => ix,
        // Only a configuration the type rejects (e.g. an error bound of 0 where it needs
        // one) may fail, and then as InvalidArgument.
        Err(augur::Error::InvalidArgument(_)) => return None,
        Err(e) => panic!("building over sorted keys failed: {e}"),
    };
    assert_eq!(ix.len(), keys.len() as u64);
    let mut encoded = Vec::new();
    ix.encode(&mut encoded);
    let decoded = index::decode(&encoded, file(), 0).expect("an encoded index decodes");
    let mut again = Vec::new();
    decoded.encode(&mut again);
    assert_eq!(encoded, again, "encode → decode → encode changed the bytes");
    // The probes, each once and in ascending order: 0, every key, its neighbours ±1 (a
    // wrapped neighbour is an extreme), u64::MAX. Repeated keys (common with narrow keys) and
    // neighbouring keys give the same probes, and a search is deterministic, so each index is
    // asked once per probe and the two answers compared: searches dominate an execution's
    // cost. A candidate not above the last probe pushed was pushed already (keys ascend, so
    // it is one of the previous key's probes).
    let mut probe: Vec<u64> = vec![0];
    for &k in &keys {
        for c in [k.checked_sub(1), Some(k), k.checked_add(1)]
            .into_iter()
            .flatten()
        {
            if c > probe[probe.len() - 1] {
                probe.push(c);
            }
        }
    }
    if probe[probe.len() - 1] != u64::MAX {
        probe.push(u64::MAX);
    }
    // The probes ascend, so their lower bounds do: one merge instead of a binary search each.
    let mut lb = 0;
    for key in probe {
        while keys.get(lb).is_some_and(|&k| k < key) {
            lb += 1;
        }
        let lb = lb as u64;
        let (w_built, w_decoded) = (ix.search(key), decoded.search(key));
        for (name, index, w) in [("built", &ix, w_built), ("decoded", &decoded, w_decoded)] {
            assert!(
                w.contains(lb),
                "{name} {kind:?}: window {w:?} misses lower bound {lb} of {key}"
            );
            assert!(
                w.len() <= index.max_window(),
                "{name}: window {w:?} too wide"
            );
            assert!(w.hi <= keys.len() as u64 + 1);
        }
        assert_eq!(w_built, w_decoded, "decoded index answers differently");
    }
    Some(encoded)
}
