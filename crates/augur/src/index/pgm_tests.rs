//! Tests of the PGM-index: the window contract at the error-bound extremes and the recursive
//! error's extremes, round trips, damaged encodings, large files, and the fitter's optimality.

use super::super::pgm_fit::{LevelFit, OptimalPla};
use super::super::tests::{
    build, check, check_damaged, check_roundtrip, large_key_sets, leaf_shape, shape,
};
use super::super::{builder, IndexConfig, IndexKind, IndexTuning};
use super::*;
use crate::error::Error;
use proptest::prelude::*;

const EPS: [u32; 6] = [0, 1, 4, 8, 64, 1024];
const EPS_REC: [u32; 5] = [1, 2, 4, 64, 1 << 20];

fn pgm(eps: u32, eps_rec: u32) -> IndexConfig {
    IndexConfig {
        kind: IndexKind::Pgm,
        error_bound: eps,
        tuning: IndexTuning {
            pgm_recursive_error: eps_rec,
            ..IndexTuning::default()
        },
        ..IndexConfig::default()
    }
}

fn plr(eps: u32) -> IndexConfig {
    IndexConfig {
        kind: IndexKind::Plr,
        error_bound: eps,
        ..IndexConfig::default()
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn window_contains_lower_bound(
        shape in shape(),
        e in prop::sample::select(EPS.to_vec()),
        r in prop::sample::select(EPS_REC.to_vec()),
        extra in prop::collection::vec(any::<u64>(), 0..64),
    ) {
        let keys = shape.keys();
        prop_assert_eq!(check(&pgm(e, r), &keys, &extra), Ok(()));
    }

    #[test]
    fn encoding_round_trips(
        shape in shape(),
        e in prop::sample::select(EPS.to_vec()),
        r in prop::sample::select(EPS_REC.to_vec()),
        extra in prop::collection::vec(any::<u64>(), 0..64),
    ) {
        let keys = shape.keys();
        prop_assert_eq!(check_roundtrip(&pgm(e, r), &keys, &extra), Ok(()));
    }

    #[test]
    fn damaged_encodings_never_panic(
        shape in leaf_shape(),
        e in prop::sample::select(EPS.to_vec()),
        r in prop::sample::select(EPS_REC.to_vec()),
        flips in prop::collection::vec((any::<prop::sample::Index>(), 0u8..8), 1..4),
        cut in any::<prop::sample::Index>(),
    ) {
        let keys = shape.keys();
        prop_assert_eq!(check_damaged(&pgm(e, r), &keys, &flips, cut), Ok(()));
    }

    /// The i64 slope tests taken in segments of small extent decide exactly as the i128
    /// ones: both fitters emit the same segments, whatever the keys' spread.
    #[test]
    fn narrow_and_wide_slope_tests_fit_alike(
        shape in leaf_shape(),
        e in prop::sample::select(EPS.to_vec()),
        shift in 0u32..40,
    ) {
        let keys: Vec<u64> = shape.keys().iter().map(|k| k >> shift).collect();
        let (mut fast, mut exact) = (LevelFit::new(e), LevelFit::wide_only(e));
        let mut left = keys.first().copied().unwrap_or(0);
        let mut prev = None;
        for (pos, &k) in (0u64..).zip(&keys) {
            if prev == Some(k) {
                continue;
            }
            fast.push_step(left, k, pos);
            exact.push_step(left, k, pos);
            left = k.wrapping_add(1);
            prev = Some(k);
        }
        prop_assert_eq!(fast.finish(), exact.finish());
    }

    /// The optimal PLA never needs more segments than Greedy-PLR's cone at the same bound,
    /// trained on the same points.
    #[test]
    fn no_more_segments_than_greedy(
        shape in leaf_shape(),
        e in prop::sample::select(EPS.to_vec()),
    ) {
        let keys = shape.keys();
        let optimal = build(&pgm(e, 4), &keys).segments();
        let greedy = build(&plr(e), &keys).segments();
        prop_assert!(optimal <= greedy, "pgm {} plr {}", optimal, greedy);
    }
}

/// Larger files than the property tests use, at every error bound and the recursive extremes.
#[test]
fn large_files_at_every_bound() {
    let (sets, extra) = large_key_sets(0x961);
    for keys in &sets {
        for e in EPS {
            for r in [1, 4, 1 << 20] {
                assert_eq!(check(&pgm(e, r), keys, &extra), Ok(()), "eps {e} rec {r}");
            }
        }
    }
}

#[test]
fn linear_keys_need_one_segment() {
    // Dense keys: lb is exactly linear, even ε = 0 needs one segment.
    for eps in [0, 1, 8, 64] {
        let idx = build(&pgm(eps, 4), &(1000..101_000u64).collect::<Vec<_>>());
        assert_eq!(idx.segments(), 1, "dense, eps {eps}");
    }
    // Sparse linear keys: lb is a staircase around a line, within 1 of it.
    for eps in [1, 8, 64] {
        let idx = build(
            &pgm(eps, 4),
            &(0..100_000u64).map(|i| 7 + i * 1000).collect::<Vec<_>>(),
        );
        assert_eq!(idx.segments(), 1, "eps {eps}");
    }
    // Stride 2^44 up to near u64::MAX, where f64 keys are lossy.
    let keys: Vec<u64> = (0..1_000_000u64).map(|i| i << 44).collect();
    let idx = build(&pgm(1, 4), &keys);
    assert_eq!(idx.segments(), 1);
    assert_eq!(check(&pgm(1, 4), &keys, &[]), Ok(()));
}

#[test]
fn pieces_need_one_segment_each_and_levels_shrink() {
    // 1000 linear pieces of 100 keys, each a random distance from the previous one.
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(3);
    let mut start = 0u64;
    let mut keys = Vec::new();
    for _ in 0..1000 {
        start += rng.gen_range(1_000_000..1_000_000_000);
        keys.extend((0..100u64).map(|i| start + i * 3));
    }
    let idx = build(&pgm(8, 1), &keys);
    // Within ε = 8, a gap step can be absorbed at either end of a piece: about one segment
    // per piece, far fewer than the 100 000 keys.
    assert!(
        (1000..=2000).contains(&idx.segments()),
        "{}",
        idx.segments()
    );
    let mut bytes = Vec::new();
    idx.encode(&mut bytes);
    let pgm = PgmIndex::decode_body(&bytes[2..]).expect("valid");
    assert!(pgm.levels() >= 3, "levels {}", pgm.levels());
    assert!(
        pgm.level(pgm.levels() - 1).0.len() <= 64,
        "a root of at most 64 keys"
    );
    assert!(pgm.level(pgm.levels() - 2).0.len() > 64);
    assert_eq!(check(&pgm_config_of(&pgm), &keys, &[]), Ok(()));
}

fn pgm_config_of(idx: &PgmIndex) -> IndexConfig {
    pgm(idx.error_bound(), idx.recursive_error_bound())
}

#[test]
fn optimal_beats_greedy_on_curved_keys() {
    let keys: Vec<u64> = (0..100_000u64).map(|i| i * i).collect();
    for eps in [1, 8, 64] {
        let optimal = build(&pgm(eps, 4), &keys).segments();
        let greedy = build(&plr(eps), &keys).segments();
        assert!(
            optimal * 10 < greedy * 9,
            "eps {eps}: pgm {optimal} plr {greedy}"
        );
    }
}

#[test]
fn duplicates_and_single_keys() {
    let keys: Vec<u64> = (0..1000u64)
        .flat_map(|i| std::iter::repeat_n(i * 10, 5))
        .collect();
    let idx = build(&pgm(8, 4), &keys);
    assert_eq!(idx.len(), 5000);
    assert_eq!(idx.segments(), 1);
    assert!(idx.search(10 * 500).contains(5 * 500));
    assert!(idx.search(10 * 500 + 1).contains(5 * 501));
    let idx = build(&pgm(0, 1), &[42]);
    assert_eq!(idx.segments(), 1);
    assert!(idx.search(42).contains(0));
    assert!(idx.search(43).contains(1));
    let idx = build(&pgm(0, 1), &[]);
    assert_eq!(idx.segments(), 0);
    assert_eq!(idx.search(5), Window { lo: 0, hi: 1 });
    let run = vec![u64::MAX; 3000];
    assert_eq!(check(&pgm(0, 1), &run, &[]), Ok(()));
}

/// At both ends of every step of `lb` the `f64` prediction of the emitted lines (capped as the
/// lookup caps it) is within ε + 2^-8: rounding stays far below the lookup's 1/64 slack.
#[test]
fn f64_predictions_stay_within_the_bound_at_fitted_points() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let mut uniform: Vec<u64> = (0..50_000).map(|_| rng.gen()).collect();
    uniform.sort_unstable();
    uniform.dedup();
    let high_dense: Vec<u64> = (0..50_000u64).map(|i| (1 << 62) + i * 3).collect();
    let top: Vec<u64> = (0..50_000u64).rev().map(|i| u64::MAX - i * i).collect();
    for keys in [uniform, high_dense, top] {
        for eps in [0u32, 1, 8, 1024] {
            let mut steps = Vec::new();
            let mut left = keys[0];
            for (pos, &k) in (0u64..).zip(&keys) {
                steps.push((left, k, pos));
                left = k.wrapping_add(1); // unused after the last key (u64::MAX in `top`)
            }
            let mut fit = LevelFit::new(eps);
            for &(l, r, y) in &steps {
                fit.push_step(l, r, y);
            }
            let segs = fit.finish();
            for &(l, r, y) in &steps {
                for x in [l, r] {
                    // The lookup's prediction: the owning segment's line, capped by the next
                    // segment's intercept.
                    let i = segs.partition_point(|s| s.key <= x) - 1;
                    let mut p = segs[i].intercept + segs[i].slope * (x - segs[i].key) as f64;
                    if let Some(next) = segs.get(i + 1) {
                        p = p.min(next.intercept);
                    }
                    let err = (p - y as f64).abs();
                    assert!(
                        err <= f64::from(eps) + 1.0 / 256.0,
                        "eps {eps}: point ({x}, {y}) predicted {p}"
                    );
                }
            }
        }
    }
}

/// The hull buffers of one very long segment stay small (the dropped prefix is compacted).
#[test]
fn hull_memory_stays_bounded() {
    let mut fit = LevelFit::new(1 << 20);
    let mut rng_state = 1u64;
    let mut x = 0u64;
    for y in 0..1_000_000u64 {
        rng_state = rng_state.wrapping_mul(6364136223846793005).wrapping_add(1);
        x += 1 + (rng_state >> 54);
        fit.push_step(x, x, y);
    }
    assert!(fit.hull_capacity() < 100_000, "{}", fit.hull_capacity());
    assert_eq!(fit.finish().len(), 1);
}

#[test]
fn optimal_pla_rejects_only_infeasible_points() {
    // ε = 0: collinear points fit, the first off-line point closes the segment.
    let mut pla = OptimalPla::new(0);
    for i in 0..10 {
        assert!(pla.add(i * 2, i));
    }
    assert!(!pla.add(20, 11));
    let seg = pla.close();
    assert_eq!((seg.key, seg.slope, seg.intercept), (0, 0.5, 0.0));
    // ε = 1: a zigzag of amplitude 2 around a line fits exactly.
    let mut pla = OptimalPla::new(1);
    for i in 0..100u64 {
        assert!(pla.add(i, 10 * i + 2 * (i % 2)), "point {i}");
    }
    assert!(!pla.add(100, 1003));
}

#[test]
fn rejects_bad_configuration_and_decreasing_keys() {
    let mut b = builder(&pgm(8, 0));
    assert!(matches!(b.add(1), Err(Error::InvalidArgument(_))));
    assert!(b.finish().is_err());
    let mut b = builder(&pgm(8, 4));
    b.add(5).expect("first");
    b.add(5).expect("duplicate");
    assert!(matches!(b.add(4), Err(Error::InvalidArgument(_))));
    assert!(b.finish().is_err());
}

#[test]
fn decode_rejects_inconsistent_levels() {
    let keys: Vec<u64> = (0..5000u64).map(|i| i * i * i).collect();
    let mut bytes = Vec::new();
    build(&pgm(2, 1), &keys).encode(&mut bytes);
    let body = &bytes[2..];
    assert!(PgmIndex::decode_body(body).is_ok());
    // Level count field at offset 32: claim one more level.
    let mut more = body.to_vec();
    more[32] += 1;
    assert!(PgmIndex::decode_body(&more).is_err());
    // Recursive error 0.
    let mut zero = body.to_vec();
    zero[4..8].copy_from_slice(&[0; 4]);
    assert!(PgmIndex::decode_body(&zero).is_err());
    // A NaN slope in the first segment.
    let levels = usize::from(body[32]);
    let seg0 = 36 + 8 * levels;
    let mut nan = body.to_vec();
    nan[seg0 + 8..seg0 + 16].copy_from_slice(&f64::NAN.to_bits().to_le_bytes());
    assert!(PgmIndex::decode_body(&nan).is_err());
    // Trailing bytes.
    let mut long = body.to_vec();
    long.push(0);
    assert!(PgmIndex::decode_body(&long).is_err());
}
