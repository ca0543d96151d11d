//! Tests of the RMI: the window contract for every u64 key over the shared key-set shapes, at
//! the parameter extremes (error bounds 0…1024, 1…2^20 leaves, linear and cubic roots), round
//! trips, damaged encodings, large files, and unit tests of the algorithm.

use super::super::rmi_fit::train;
use super::super::rmi_model::{cubic_is_monotone, Leaf, RmiIndex, Root, MAX_LEAVES};
use super::super::tests::{
    build, check, check_damaged, check_roundtrip, large_key_sets, leaf_shape, shape,
};
use super::super::{decode, Index, IndexConfig, IndexKind, IndexTuning, RmiRoot, Window};
use crate::error::Error;
use proptest::prelude::*;
use std::path::PathBuf;

const BOUNDS: [u32; 5] = [0, 1, 8, 64, 1024];
/// Leaf counts: automatic, the extremes and a few in between.
const LEAVES: [u32; 6] = [0, 1, 2, 7, 1024, MAX_LEAVES];
const ROOTS: [RmiRoot; 2] = [RmiRoot::Linear, RmiRoot::Cubic];

fn rmi(error_bound: u32, leaves: u32, root: RmiRoot) -> IndexConfig {
    IndexConfig {
        kind: IndexKind::Rmi,
        error_bound,
        tuning: IndexTuning {
            rmi_leaves: leaves,
            rmi_root: root,
            ..IndexTuning::default()
        },
        ..IndexConfig::default()
    }
}

fn config() -> impl Strategy<Value = IndexConfig> {
    (
        prop::sample::select(BOUNDS.to_vec()),
        prop::sample::select(LEAVES.to_vec()),
        prop::sample::select(ROOTS.to_vec()),
    )
        .prop_map(|(d, l, r)| rmi(d, l, r))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(160))]

    #[test]
    fn rmi_window_contains_lower_bound(
        shape in shape(),
        config in config(),
        extra in prop::collection::vec(any::<u64>(), 0..64),
    ) {
        let keys = shape.keys();
        prop_assert_eq!(check(&config, &keys, &extra), Ok(()));
    }

    #[test]
    fn rmi_round_trips(
        shape in shape(),
        config in config(),
        extra in prop::collection::vec(any::<u64>(), 0..64),
    ) {
        let keys = shape.keys();
        prop_assert_eq!(check_roundtrip(&config, &keys, &extra), Ok(()));
    }

    #[test]
    fn rmi_damaged_encodings_never_panic(
        shape in leaf_shape(),
        d in prop::sample::select(BOUNDS.to_vec()),
        l in prop::sample::select(vec![0u32, 1, 3, 64]),
        r in prop::sample::select(ROOTS.to_vec()),
        flips in prop::collection::vec((any::<prop::sample::Index>(), 0u8..8), 1..4),
        cut in any::<prop::sample::Index>(),
    ) {
        let keys = shape.keys();
        prop_assert_eq!(check_damaged(&rmi(d, l, r), &keys, &flips, cut), Ok(()));
    }

    /// Keys sampled from a few dense or sparse pieces, which a cubic root often fits and
    /// sometimes not (then it falls back to linear): every key of every gap still gets a
    /// window holding its lower bound.
    #[test]
    fn cubic_root_on_curved_keys(
        pieces in prop::collection::vec((1u64..1 << 40, 1u64..400), 1..6),
        power in 1u32..5,
        leaves in prop::sample::select(vec![1u32, 3, 50, 4096]),
        extra in prop::collection::vec(any::<u64>(), 0..64),
    ) {
        let mut keys: Vec<u64> = Vec::new();
        let mut base = 0u64;
        for (gap, len) in pieces {
            base = base.saturating_add(gap);
            keys.extend((0..len).map(|i| base.saturating_add(i.pow(power))));
            base = keys.last().copied().unwrap_or(base);
        }
        keys.sort_unstable();
        prop_assert_eq!(check(&rmi(8, leaves, RmiRoot::Cubic), &keys, &extra), Ok(()));
    }
}

/// The keys where routing changes leaf (found by binary search over u64), and their
/// neighbours: the places where a window depends on the leaf clamps and on errors trained at
/// the far end of a step.
fn route_boundaries(idx: &RmiIndex, keys: &[u64]) -> Vec<u64> {
    let (Some(&first), Some(&last)) = (keys.first(), keys.last()) else {
        return Vec::new();
    };
    let last_leaf = idx.segments().saturating_sub(1);
    let route = |k: u64| idx.root().route(k - first, last_leaf);
    let mut out = Vec::new();
    let mut lo = first + 1; // smallest key not yet attributed
    while lo <= last {
        let j = route(lo);
        // The first key in (lo, last] routed past j, if any.
        let (mut a, mut b) = (lo, last);
        if route(b) == j {
            break;
        }
        while b - a > 1 {
            let mid = a + (b - a) / 2;
            if route(mid) == j {
                a = mid;
            } else {
                b = mid;
            }
        }
        out.extend([b - 1, b, b.saturating_add(1)]);
        lo = b;
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn windows_at_leaf_boundaries(
        shape in shape(),
        leaves in prop::sample::select(vec![2u32, 5, 64, 1000]),
        root in prop::sample::select(ROOTS.to_vec()),
    ) {
        let keys = shape.keys();
        let idx = train(&keys, leaves, root, 8);
        let extra = route_boundaries(&idx, &keys);
        prop_assert_eq!(check(&rmi(8, leaves, root), &keys, &extra), Ok(()));
    }
}

/// Larger files than the property tests use, at every error bound, leaf extreme and root.
#[test]
fn large_files_at_every_bound() {
    let (sets, extra) = large_key_sets(0x5eed);
    for keys in &sets {
        for root in ROOTS {
            for d in BOUNDS {
                assert_eq!(check(&rmi(d, 0, root), keys, &extra), Ok(()), "δ {d}");
            }
            for l in [1, 1000, MAX_LEAVES] {
                assert_eq!(check(&rmi(8, l, root), keys, &extra), Ok(()), "{l} leaves");
            }
        }
    }
}

fn index(keys: &[u64], leaves: u32, root: RmiRoot) -> RmiIndex {
    train(keys, leaves, root, 8)
}

#[test]
fn linear_keys_need_one_leaf() {
    let keys: Vec<u64> = (0..100_000u64).map(|i| 7 + i * 1000).collect();
    let idx = index(&keys, 1, RmiRoot::Linear);
    assert_eq!(idx.segments(), 1);
    // The corners (k − 999, lb) and (k, lb) of each step are within 1/2 of the fitted line.
    assert!(idx.max_window() <= 2, "{}", idx.max_window());
    let dense: Vec<u64> = (0..100_000u64).map(|i| (1 << 62) + i).collect();
    for root in ROOTS {
        let idx = index(&dense, 16, root);
        assert_eq!(idx.max_window(), 1, "{root:?}");
        assert_eq!(idx.search((1 << 62) + 500), Window { lo: 500, hi: 501 });
    }
}

#[test]
fn more_leaves_shrink_windows_on_uniform_keys() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(3);
    let mut keys: Vec<u64> = (0..100_000).map(|_| rng.gen()).collect();
    keys.sort_unstable();
    let few = index(&keys, 16, RmiRoot::Linear).max_window();
    let many = index(&keys, 16_384, RmiRoot::Linear).max_window();
    assert!(many < few, "{many} vs {few}");
    // Sized from the error bound: near 2δ + 1 on uniform data.
    for d in [8u32, 64] {
        let idx = train(&keys, 0, RmiRoot::Linear, d);
        let target = 2 * u64::from(d) + 1;
        assert!(
            idx.max_window() <= 4 * target,
            "δ {d}: {}",
            idx.max_window()
        );
    }
}

#[test]
fn cubic_root_is_kept_when_monotone_and_helps() {
    // Quadratic keys: a cubic root spreads them over the leaves far better than a line.
    let keys: Vec<u64> = (0..100_000u64).map(|i| i * i).collect();
    let cubic = index(&keys, 1000, RmiRoot::Cubic);
    assert!(
        matches!(cubic.root(), Root::Cubic { .. }),
        "{:?}",
        cubic.root()
    );
    let linear = index(&keys, 1000, RmiRoot::Linear);
    let occupied = |idx: &RmiIndex| {
        let leaves = idx.leaves();
        let ends = leaves.iter().skip(1).map(|l| l.start).chain([idx.len()]);
        leaves
            .iter()
            .zip(ends)
            .filter(|(l, e)| l.start < *e)
            .count()
    };
    let (c, l) = (occupied(&cubic), occupied(&linear));
    let (cw, lw) = (cubic.max_window(), linear.max_window());
    assert!(
        c > l && cw < lw,
        "occupied {c} vs {l}, max window {cw} vs {lw}"
    );
}

#[test]
fn non_monotone_cubic_falls_back_to_linear() {
    // Two far clusters with a tiny one between: the least-squares cubic overshoots and
    // turns back, which routing must never do.
    let mut keys: Vec<u64> = (0..1000u64).collect();
    keys.extend((0..10u64).map(|i| (1 << 40) + i));
    keys.extend((0..1000u64).map(|i| (1 << 41) + i * 1000));
    let idx = index(&keys, 64, RmiRoot::Cubic);
    if let Root::Cubic { shift, coeffs } = idx.root() {
        assert!(cubic_is_monotone(
            coeffs,
            shift.input(keys[keys.len() - 1] - keys[0])
        ));
    }
    assert_eq!(
        check(&rmi(8, 64, RmiRoot::Cubic), &keys, &[1 << 39, 3 << 40]),
        Ok(())
    );
}

#[test]
fn monotonicity_check_is_exact() {
    // P(t) = t³ − 3·2^20·t² + ...: decreasing around t = 2^21 unless c1 is large enough.
    let c3 = 1i128;
    let c2 = -3 * (1i128 << 21);
    // Δ(t) ≈ 3t² − 6·2^21·t + c1 has minimum −3·2^42 + c1 at t = 2^21.
    let border = 3 * (1i128 << 42);
    let t_max = (1 << 24) - 1;
    assert!(!cubic_is_monotone(&[0, border - 10, c2, c3], t_max));
    assert!(cubic_is_monotone(&[0, border + 10, c2, c3], t_max));
    // Only the domain matters: decreasing beyond t_max is allowed.
    assert!(cubic_is_monotone(&[0, 1 << 30, 0, -1], 1000));
    assert!(!cubic_is_monotone(&[0, 1 << 30, 0, -1], 1 << 20));
    assert!(cubic_is_monotone(&[5, -5, 0, 0], 0));
    assert!(!cubic_is_monotone(&[5, -5, 0, 0], 1));
}

#[test]
fn empty_leaves_and_gaps_get_boundary_windows() {
    // Two clusters far apart with many leaves: most leaves are empty.
    let mut keys: Vec<u64> = (0..100u64).collect();
    keys.extend((0..100u64).map(|i| (1 << 50) + i));
    let idx = index(&keys, 4096, RmiRoot::Linear);
    assert_eq!(idx.search(1 << 45), Window { lo: 100, hi: 101 });
    assert!(idx.search(100).contains(100));
    assert!(idx.search((1 << 50) - 1).contains(100));
    assert_eq!(check(&rmi(8, 4096, RmiRoot::Linear), &keys, &[]), Ok(()));
}

#[test]
fn duplicates_single_and_empty() {
    let keys: Vec<u64> = (0..1000u64).flat_map(|i| [i * 10; 5]).collect();
    let idx = index(&keys, 10, RmiRoot::Linear);
    assert_eq!(idx.len(), 5000);
    assert!(idx.search(5000).contains(2500));
    assert!(idx.search(5001).contains(2505));
    let idx = index(&[42, 42, 42], 0, RmiRoot::Cubic);
    assert_eq!(idx.search(42), Window { lo: 0, hi: 1 });
    assert_eq!(idx.search(43), Window { lo: 3, hi: 4 });
    let idx = index(&[], 0, RmiRoot::Cubic);
    assert_eq!((idx.segments(), idx.len()), (0, 0));
    assert_eq!(idx.search(7), Window { lo: 0, hi: 1 });
    assert_eq!(idx.max_window(), 1);
}

#[test]
fn automatic_leaf_count_follows_the_error_bound() {
    let keys: Vec<u64> = (0..10_000u64).map(|i| i * 3).collect();
    assert_eq!(train(&keys, 0, RmiRoot::Linear, 0).segments(), 10_000);
    assert_eq!(train(&keys, 0, RmiRoot::Linear, 9).segments(), 1000);
    assert_eq!(train(&keys, 0, RmiRoot::Linear, 1 << 20).segments(), 1);
    assert_eq!(train(&[5], 0, RmiRoot::Linear, 0).segments(), 1);
}

#[test]
fn rejects_bad_leaf_counts_and_order() {
    let mut b = super::builder(&rmi(8, MAX_LEAVES + 1, RmiRoot::Linear));
    assert!(matches!(b.add(1), Err(Error::InvalidArgument(_))));
    assert!(b.finish().is_err());
    let b = super::builder(&rmi(8, u32::MAX, RmiRoot::Cubic));
    assert!(matches!(b.finish(), Err(Error::InvalidArgument(_))));
    let mut b = super::builder(&rmi(8, 4, RmiRoot::Linear));
    b.add(5).expect("first");
    assert!(matches!(b.add(4), Err(Error::InvalidArgument(_))));
    assert!(b.add(6).is_err(), "a failed builder stays failed");
    assert!(b.finish().is_err());
}

#[test]
fn size_bytes_counts_the_leaves() {
    let keys: Vec<u64> = (0..10_000u64).map(|i| i * i).collect();
    let idx = build(&rmi(8, 100, RmiRoot::Linear), &keys);
    assert_eq!(
        idx.size_bytes(),
        std::mem::size_of::<RmiIndex>() + 100 * std::mem::size_of::<Leaf>()
    );
    assert_eq!(std::mem::size_of::<Leaf>(), 32);
}

#[test]
fn decode_rejects_invalid_models() {
    let keys: Vec<u64> = (0..1000u64).map(|i| i * i).collect();
    let mut bytes = Vec::new();
    build(&rmi(8, 4, RmiRoot::Linear), &keys).encode(&mut bytes);
    let file = PathBuf::from("r");
    assert!(decode(&bytes, &file, 0).is_ok());
    // Header 2, n at 2, first at 10, last at 18, count at 26, root kind at 30, root at 31..47,
    // leaf 0 at 47 (intercept, slope at 55, start at 63, below, above), leaf 1 at 79.
    let with = |at: usize, value: &[u8]| {
        let mut b = bytes.clone();
        b[at..at + value.len()].copy_from_slice(value);
        decode(&b, &file, 0)
    };
    assert!(with(26, &0u32.to_le_bytes()).is_err(), "0 leaves for n > 0");
    assert!(with(26, &(MAX_LEAVES + 1).to_le_bytes()).is_err());
    assert!(with(30, &[2]).is_err(), "unknown root kind");
    assert!(
        with(39, &(-1.0f64).to_le_bytes()).is_err(),
        "negative root slope"
    );
    assert!(
        with(31, &f64::NAN.to_le_bytes()).is_err(),
        "NaN root intercept"
    );
    assert!(
        with(47, &f64::INFINITY.to_le_bytes()).is_err(),
        "infinite leaf line"
    );
    assert!(
        with(55, &(-0.5f64).to_le_bytes()).is_err(),
        "negative leaf slope"
    );
    assert!(
        with(63, &1u64.to_le_bytes()).is_err(),
        "first leaf must start at 0"
    );
    assert!(
        with(63 + 32, &5000u64.to_le_bytes()).is_err(),
        "start beyond n"
    );
    // A cubic whose coefficients are out of bounds, or decreasing.
    let mut cubic = Vec::new();
    build(&rmi(8, 4, RmiRoot::Cubic), &keys).encode(&mut cubic);
    assert_eq!(cubic[30], 1, "x² keys keep their cubic root");
    let mut b = cubic.clone();
    b[31 + 16 * 3 + 8..31 + 16 * 4].copy_from_slice(&(1u64 << 60).to_le_bytes());
    assert!(decode(&b, &file, 0).is_err(), "c3 out of bounds");
    let mut b = cubic.clone();
    b[31 + 16..31 + 32].copy_from_slice(&(-(1i128 << 99)).to_le_bytes());
    assert!(decode(&b, &file, 0).is_err(), "decreasing cubic");
}
