//! Tests of [`super`] (PLEX): the window contract on every key-set shape at the extremes of δ,
//! with the tuned locator and with every locator forced (CHT bins 2^4..2^12, leaf sizes 1..64,
//! radix tables), encodings, damaged encodings, large files, and the tuning's budget.

use super::super::plex_tune::budget_bytes;
use super::super::tests::{
    build, check, check_damaged, check_roundtrip, large_key_sets, leaf_shape, queries, shape,
};
use super::super::{decode, IndexConfig, IndexKind};
use super::*;
use proptest::prelude::*;
use std::path::PathBuf;

const DELTAS: [u32; 6] = [0, 1, 8, 64, 1024, 1 << 20];

fn plex(delta: u32) -> IndexConfig {
    IndexConfig {
        kind: IndexKind::Plex,
        error_bound: delta,
        ..IndexConfig::default()
    }
}

fn spline(delta: u32, keys: &[u64]) -> Spline {
    let mut b = SplineBuilder::new(delta);
    for &k in keys {
        b.add(k).expect("sorted");
    }
    b.finish().expect("valid")
}

/// The window contract of a PLEX index with a forced locator.
fn check_choice(delta: u32, keys: &[u64], choice: Choice, extra: &[u64]) -> Result<(), String> {
    let idx = PlexIndex::new(spline(delta, keys), choice);
    let n = keys.len() as u64;
    for key in queries(keys, extra) {
        let lb = keys.partition_point(|&k| k < key) as u64;
        let w = idx.search(key);
        if !(w.lo <= lb && lb < w.hi && w.hi <= n + 1 && w.len() <= 2 * u64::from(delta) + 1) {
            return Err(format!(
                "{choice:?} key {key}: lb {lb} not in {w:?} (n {n})"
            ));
        }
    }
    Ok(())
}

fn choices() -> impl Strategy<Value = Choice> {
    prop_oneof![
        (
            prop::sample::select(vec![4u32, 5, 8, 12]),
            prop::sample::select(vec![1u32, 2, 8, 64])
        )
            .prop_map(|(bin_bits, max_error)| Choice::Cht {
                bin_bits,
                max_error
            }),
        prop::sample::select(vec![1u32, 2, 6, 11]).prop_map(|bits| Choice::Radix { bits }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(160))]

    #[test]
    fn window_contains_lower_bound(
        shape in shape(),
        d in prop::sample::select(DELTAS.to_vec()),
        extra in prop::collection::vec(any::<u64>(), 0..64),
    ) {
        prop_assert_eq!(check(&plex(d), &shape.keys(), &extra), Ok(()));
    }

    #[test]
    fn forced_locators_keep_the_contract(
        shape in shape(),
        d in prop::sample::select(vec![0u32, 1, 8, 1024]),
        choice in choices(),
        extra in prop::collection::vec(any::<u64>(), 0..64),
    ) {
        prop_assert_eq!(check_choice(d, &shape.keys(), choice, &extra), Ok(()));
    }

    #[test]
    fn encoding_round_trips(
        shape in shape(),
        d in prop::sample::select(DELTAS.to_vec()),
        extra in prop::collection::vec(any::<u64>(), 0..64),
    ) {
        prop_assert_eq!(check_roundtrip(&plex(d), &shape.keys(), &extra), Ok(()));
    }

    #[test]
    fn damaged_encodings_never_panic(
        shape in leaf_shape(),
        d in prop::sample::select(DELTAS.to_vec()),
        flips in prop::collection::vec((any::<prop::sample::Index>(), 0u8..8), 1..4),
        cut in any::<prop::sample::Index>(),
    ) {
        prop_assert_eq!(check_damaged(&plex(d), &shape.keys(), &flips, cut), Ok(()));
    }
}

/// 200k uniform keys, 100k dense keys above 2^60, a normal-like set and a skewed set, at
/// every bound, with the tuned locator and the extreme CHTs.
#[test]
fn large_files_at_every_bound() {
    use rand::{Rng, SeedableRng};
    let (sets, extra) = large_key_sets(0x5eed);
    let mut rng = rand::rngs::StdRng::seed_from_u64(0x5eed);
    // Log-normal-like skew: exp of a normal, so most keys crowd near the bottom.
    let mut skewed: Vec<u64> = (0..100_000)
        .map(|_| {
            let z: f64 = (0..4).map(|_| rng.gen::<f64>()).sum::<f64>() - 2.0;
            (z * 12.0).exp2() as u64 * 1000 + rng.gen_range(0..1000)
        })
        .collect();
    skewed.sort_unstable();
    for keys in sets.iter().chain([&skewed]) {
        for d in [0, 1, 8, 64, 1024] {
            assert_eq!(check(&plex(d), keys, &extra), Ok(()), "δ {d}");
        }
        for choice in [
            Choice::Cht {
                bin_bits: 4,
                max_error: 1,
            },
            Choice::Cht {
                bin_bits: 12,
                max_error: 64,
            },
        ] {
            assert_eq!(check_choice(8, keys, choice, &extra), Ok(()));
        }
    }
}

/// The tuned locator stays within the space budget, and skew makes the tuner pick a CHT.
#[test]
fn tuning_respects_the_budget_and_adapts_to_skew() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(5);
    let mut uniform: Vec<u64> = (0..100_000).map(|_| rng.gen()).collect();
    uniform.sort_unstable();
    // 99% of the keys in [0, 2^24), 1% spread over the whole u64 range: a radix table's slots
    // are as wide as the range allows, so the dense part falls into one slot.
    let mut skewed: Vec<u64> = (0..100_000)
        .map(|i| {
            if i % 100 == 0 {
                rng.gen()
            } else {
                rng.gen_range(0..1 << 24)
            }
        })
        .collect();
    skewed.sort_unstable();
    let mut chosen = Vec::new();
    for keys in [&uniform, &skewed] {
        for d in [0, 8, 64] {
            let mut b = Box::new(PlexBuilder {
                spline: SplineBuilder::new(d),
            });
            for &k in keys.iter() {
                b.spline.add(k).expect("sorted");
            }
            let s = b.spline.finish().expect("valid");
            let choice = plex_tune::tune(&s.keys, &s.pos);
            let m = s.keys.len();
            let idx = PlexIndex::new(s, choice);
            assert!(
                idx.locator.heap_bytes() <= budget_bytes(m),
                "{}",
                idx.locator()
            );
            chosen.push((d, idx.cht().is_some(), idx.locator()));
        }
    }
    assert!(
        chosen[3..].iter().any(|c| c.1),
        "skewed keys should get a CHT: {chosen:?}"
    );
}

#[test]
fn linear_keys_need_two_spline_points() {
    let keys: Vec<u64> = (0..100_000u64).map(|i| (1 << 61) + i * 977).collect();
    for d in [1, 8, 64] {
        assert_eq!(build(&plex(d), &keys).segments(), 2, "δ {d}");
    }
}

#[test]
fn bad_locator_parameters_are_rejected() {
    let keys: Vec<u64> = (0..5000u64).map(|i| i * i).collect();
    let mut bytes = Vec::new();
    build(&plex(0), &keys).encode(&mut bytes);
    for (tag, bits, max_error) in [
        (2u8, 4u8, 8u32),
        (1, 3, 8),
        (1, 13, 8),
        (1, 8, 0),
        (0, 25, 0),
        (0, 4, 1),
    ] {
        let mut b = bytes.clone();
        b[2] = tag;
        b[3] = bits;
        b[4..8].copy_from_slice(&max_error.to_le_bytes());
        assert!(
            decode(&b, &PathBuf::from("t"), 0).is_err(),
            "{tag} {bits} {max_error}"
        );
    }
}
