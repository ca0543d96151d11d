//! Tests of [`super`] (RadixSpline): the window contract on every key-set shape at the
//! extremes of δ and of the radix bits, encodings, damaged encodings, large files, and small
//! unit tests of the table.

use super::super::tests::{
    build, check, check_damaged, check_roundtrip, large_key_sets, leaf_shape, shape,
};
use super::super::{decode, IndexConfig, IndexKind, IndexTuning};
use super::*;
use crate::error::Error;
use proptest::prelude::*;
use std::path::PathBuf;

const DELTAS: [u32; 6] = [0, 1, 8, 64, 1024, 1 << 20];
const BITS: [u32; 6] = [1, 2, 8, 12, 18, 24];

fn rs(delta: u32, bits: u32) -> IndexConfig {
    IndexConfig {
        kind: IndexKind::RadixSpline,
        error_bound: delta,
        tuning: IndexTuning {
            radix_bits: bits,
            ..IndexTuning::default()
        },
        ..IndexConfig::default()
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(160))]

    #[test]
    fn window_contains_lower_bound(
        shape in shape(),
        d in prop::sample::select(DELTAS.to_vec()),
        bits in prop::sample::select(BITS.to_vec()),
        extra in prop::collection::vec(any::<u64>(), 0..64),
    ) {
        prop_assert_eq!(check(&rs(d, bits), &shape.keys(), &extra), Ok(()));
    }

    #[test]
    fn encoding_round_trips(
        shape in shape(),
        d in prop::sample::select(DELTAS.to_vec()),
        bits in prop::sample::select(BITS.to_vec()),
        extra in prop::collection::vec(any::<u64>(), 0..64),
    ) {
        prop_assert_eq!(check_roundtrip(&rs(d, bits), &shape.keys(), &extra), Ok(()));
    }

    #[test]
    fn damaged_encodings_never_panic(
        shape in leaf_shape(),
        d in prop::sample::select(DELTAS.to_vec()),
        bits in prop::sample::select(BITS.to_vec()),
        flips in prop::collection::vec((any::<prop::sample::Index>(), 0u8..8), 1..4),
        cut in any::<prop::sample::Index>(),
    ) {
        prop_assert_eq!(check_damaged(&rs(d, bits), &shape.keys(), &flips, cut), Ok(()));
    }
}

/// 200k uniform keys, 100k dense keys above 2^60, a normal-like set, at every bound.
#[test]
fn large_files_at_every_bound() {
    let (sets, extra) = large_key_sets(0x5eed);
    for keys in &sets {
        for d in [0, 1, 8, 64, 1024] {
            for bits in [1, 18, 24] {
                assert_eq!(
                    check(&rs(d, bits), keys, &extra),
                    Ok(()),
                    "δ {d} bits {bits}"
                );
            }
        }
    }
}

#[test]
fn linear_keys_need_two_spline_points() {
    for d in [1, 8, 64] {
        let keys: Vec<u64> = (0..100_000u64).map(|i| (1 << 61) + i * 977).collect();
        let idx = build(&rs(d, 18), &keys);
        assert_eq!(idx.segments(), 2, "δ {d}");
        assert!(idx.size_bytes() < 200);
    }
}

#[test]
fn radix_bits_outside_the_range_are_rejected() {
    for bits in [0, 25, u32::MAX] {
        let mut b = super::super::builder(&rs(8, bits));
        assert!(matches!(b.add(1), Err(Error::InvalidArgument(_))), "{bits}");
        assert!(b.finish().is_err());
        let mut bytes = Vec::new();
        build(&rs(8, 18), &[1, 5, 9]).encode(&mut bytes);
        bytes[2..6].copy_from_slice(&bits.to_le_bytes());
        assert!(decode(&bytes, &PathBuf::from("t"), 0).is_err());
    }
}

#[test]
fn the_table_is_capped_by_the_spline_points() {
    assert_eq!(RadixTable::effective_bits(24, 1), 1);
    assert_eq!(RadixTable::effective_bits(24, 1000), 11);
    assert_eq!(RadixTable::effective_bits(4, 1000), 4);
    // δ = 0 on uniform keys: about two spline points per key; the table has ≤ 4 slots each.
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(1);
    let mut keys: Vec<u64> = (0..10_000).map(|_| rng.gen()).collect();
    keys.sort_unstable();
    let idx = build(&rs(0, 24), &keys);
    let m = idx.segments() as usize;
    assert!(m > 10_000);
    let spline_bytes = 16 * m;
    assert!(
        idx.size_bytes() <= spline_bytes + 16 * m + 256,
        "{}",
        idx.size_bytes()
    );
}

#[test]
fn radix_table_ranges() {
    let keys = [10u64, 11, 20, 300, 301, 1000];
    for bits in 1..=12 {
        let t = RadixTable::build(&keys, bits);
        for x in 11..=1000u64 {
            let j = keys.partition_point(|&k| k < x);
            let (lo, hi) = t.range(x);
            assert!(
                lo <= j && j <= hi,
                "bits {bits} x {x}: {j} not in [{lo}, {hi}]"
            );
        }
    }
}

#[test]
fn empty_and_single_key() {
    let idx = build(&rs(8, 18), &[]);
    assert_eq!(idx.search(7), Window { lo: 0, hi: 1 });
    let idx = build(&rs(8, 18), &[u64::MAX, u64::MAX]);
    assert_eq!(idx.search(u64::MAX), Window { lo: 0, hi: 1 });
    assert_eq!(idx.search(3), Window { lo: 0, hi: 1 });
}
