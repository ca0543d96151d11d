//! Tests of the FITing-Tree: the window contract at the error-bound and fanout extremes, round
//! trips, damaged encodings, large files, and the tree descent against a plain binary search.

use super::super::tests::{
    build, check, check_damaged, check_roundtrip, large_key_sets, leaf_shape, shape,
};
use super::super::{builder, IndexConfig, IndexKind, IndexTuning};
use super::*;
use crate::error::Error;
use proptest::prelude::*;

const DELTAS: [u32; 6] = [0, 1, 4, 8, 64, 1024];
const FANOUTS: [u32; 5] = [2, 3, 16, 64, 256];

fn fiting(delta: u32, fanout: u32) -> IndexConfig {
    IndexConfig {
        kind: IndexKind::Fiting,
        error_bound: delta,
        tuning: IndexTuning {
            fiting_fanout: fanout,
            ..IndexTuning::default()
        },
        ..IndexConfig::default()
    }
}

/// Builds and decodes back to the concrete type (to inspect the tree).
fn concrete(delta: u32, fanout: u32, keys: &[u64]) -> FitingIndex {
    let mut bytes = Vec::new();
    build(&fiting(delta, fanout), keys).encode(&mut bytes);
    FitingIndex::decode_body(&bytes[2..]).expect("valid")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn window_contains_lower_bound(
        shape in shape(),
        d in prop::sample::select(DELTAS.to_vec()),
        f in prop::sample::select(FANOUTS.to_vec()),
        extra in prop::collection::vec(any::<u64>(), 0..64),
    ) {
        let keys = shape.keys();
        prop_assert_eq!(check(&fiting(d, f), &keys, &extra), Ok(()));
    }

    #[test]
    fn encoding_round_trips(
        shape in shape(),
        d in prop::sample::select(DELTAS.to_vec()),
        f in prop::sample::select(FANOUTS.to_vec()),
        extra in prop::collection::vec(any::<u64>(), 0..64),
    ) {
        let keys = shape.keys();
        prop_assert_eq!(check_roundtrip(&fiting(d, f), &keys, &extra), Ok(()));
    }

    #[test]
    fn damaged_encodings_never_panic(
        shape in leaf_shape(),
        d in prop::sample::select(DELTAS.to_vec()),
        f in prop::sample::select(FANOUTS.to_vec()),
        flips in prop::collection::vec((any::<prop::sample::Index>(), 0u8..8), 1..4),
        cut in any::<prop::sample::Index>(),
    ) {
        let keys = shape.keys();
        prop_assert_eq!(check_damaged(&fiting(d, f), &keys, &flips, cut), Ok(()));
    }

    /// The tree descent finds the same segment as a binary search over all start keys, for
    /// every fanout (start keys in [first, last] are the only ones it is asked about).
    #[test]
    fn descent_matches_binary_search(
        starts in prop::collection::btree_set(any::<u64>(), 1..3000),
        f in 2u32..=256,
        probes in prop::collection::vec(any::<u64>(), 1..200),
    ) {
        let first = *starts.iter().next().expect("non-empty");
        let starts: Vec<u64> = starts.into_iter().collect();
        let segments = starts.iter().map(|&key| Segment { key, pos: 0, slope: 0.0 }).collect();
        let last = *starts.last().expect("non-empty");
        let idx = FitingIndex::new(PlrIndex::new(0, 1, first, last, segments), f);
        for x in probes.into_iter().chain(starts.iter().flat_map(|&k| [k, k.saturating_add(1)])) {
            if x < first {
                continue;
            }
            let expected = starts.partition_point(|&k| k <= x) - 1;
            prop_assert_eq!(idx.segment_for(x), expected, "x {} fanout {}", x, f);
        }
    }
}

/// Larger files than the property tests use, at every error bound and the fanout extremes.
#[test]
fn large_files_at_every_bound() {
    let (sets, extra) = large_key_sets(0xf17);
    for keys in &sets {
        for d in DELTAS {
            for f in [2, 16, 256] {
                assert_eq!(
                    check(&fiting(d, f), keys, &extra),
                    Ok(()),
                    "delta {d} fanout {f}"
                );
            }
        }
    }
}

#[test]
fn same_segments_as_plr() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(5);
    let mut keys: Vec<u64> = (0..50_000).map(|_| rng.gen()).collect();
    keys.sort_unstable();
    for d in [0, 8, 64] {
        let plr = IndexConfig {
            kind: IndexKind::Plr,
            error_bound: d,
            ..IndexConfig::default()
        };
        let f = build(&fiting(d, 16), &keys);
        let p = build(&plr, &keys);
        assert_eq!(f.segments(), p.segments(), "delta {d}");
        // Same model, same windows: only the segment search differs.
        for &k in keys.iter().step_by(97) {
            assert_eq!(f.search(k + 1), p.search(k + 1));
        }
    }
}

#[test]
fn linear_keys_need_one_segment_and_no_tree() {
    let keys: Vec<u64> = (0..100_000u64).map(|i| 7 + i * 1000).collect();
    for d in [1, 8, 64] {
        let idx = concrete(d, 2, &keys);
        assert_eq!(idx.segments(), 1, "delta {d}");
        assert_eq!(idx.inner_levels(), 0);
    }
}

#[test]
fn tree_height_follows_the_fanout() {
    // Squares: with δ = 0 about one segment per two keys.
    let keys: Vec<u64> = (0..20_000u64).map(|i| i * i).collect();
    let segments = concrete(0, 2, &keys).segments() as usize;
    assert!(segments > 10_000, "{segments}");
    for f in [2u32, 3, 16, 256] {
        let idx = concrete(0, f, &keys);
        // Levels above the m starts: the smallest h with m ≤ F^(h+1).
        let mut h = 0;
        let mut cap = f as usize;
        while cap < segments {
            cap = cap.saturating_mul(f as usize);
            h += 1;
        }
        assert_eq!(idx.inner_levels(), h, "fanout {f}");
        assert!(
            idx.inner.len() <= segments / (f as usize - 1) + h,
            "fanout {f}"
        );
        assert_eq!(check(&fiting(0, f), &keys, &[]), Ok(()));
    }
}

#[test]
fn duplicates_single_and_empty() {
    let keys: Vec<u64> = (0..1000u64)
        .flat_map(|i| std::iter::repeat_n(i * 10, 5))
        .collect();
    let idx = build(&fiting(8, 2), &keys);
    assert_eq!(idx.len(), 5000);
    assert!(idx.search(10 * 500).contains(5 * 500));
    assert!(idx.search(10 * 500 + 1).contains(5 * 501));
    let idx = build(&fiting(0, 2), &[42]);
    assert_eq!(idx.segments(), 1);
    assert!(idx.search(42).contains(0));
    assert!(idx.search(43).contains(1));
    let idx = build(&fiting(0, 256), &[]);
    assert_eq!(idx.segments(), 0);
    assert_eq!(idx.search(5), Window { lo: 0, hi: 1 });
}

#[test]
fn rejects_bad_fanouts_and_decreasing_keys() {
    for f in [0, 1, 257, u32::MAX] {
        let mut b = builder(&fiting(8, f));
        assert!(
            matches!(b.add(1), Err(Error::InvalidArgument(_))),
            "fanout {f}"
        );
        assert!(b.finish().is_err());
        let b = builder(&fiting(8, f));
        assert!(matches!(b.finish(), Err(Error::InvalidArgument(_))));
    }
    let mut b = builder(&fiting(8, 16));
    b.add(5).expect("first");
    b.add(5).expect("duplicate");
    assert!(matches!(b.add(4), Err(Error::InvalidArgument(_))));
    assert!(b.finish().is_err());
}

#[test]
fn decode_rejects_bad_fields() {
    let keys: Vec<u64> = (0..5000u64).map(|i| i * i * i).collect();
    let mut bytes = Vec::new();
    build(&fiting(2, 4), &keys).encode(&mut bytes);
    let body = &bytes[2..];
    assert!(FitingIndex::decode_body(body).is_ok());
    for fanout in [0u32, 1, 257] {
        let mut bad = body.to_vec();
        bad[0..4].copy_from_slice(&fanout.to_le_bytes());
        assert!(FitingIndex::decode_body(&bad).is_err(), "fanout {fanout}");
    }
    // A negative slope in the first segment (segments start at offset 40).
    let mut neg = body.to_vec();
    neg[56..64].copy_from_slice(&(-1.0f64).to_bits().to_le_bytes());
    assert!(FitingIndex::decode_body(&neg).is_err());
    let mut long = body.to_vec();
    long.push(0);
    assert!(FitingIndex::decode_body(&long).is_err());
}
