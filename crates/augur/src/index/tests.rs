//! Property tests of every index type against the window contract of [`super`]: for random and
//! adversarial key sets and any query, `lo <= lb(key) < hi <= n + 1` and
//! `hi - lo <= max_window()`, with `max_window()` equal to the documented bound; encodings
//! round-trip; decoding damaged bytes never panics.

use super::*;
use proptest::prelude::*;
use std::path::PathBuf;

const DELTAS: [u32; 6] = [0, 1, 4, 8, 64, 1024];
const STRIDES: [u32; 4] = [1, 2, 64, 4096];

/// Builds the index `config` describes over `keys` (sorted), panicking on a builder error.
pub(super) fn build(config: &IndexConfig, keys: &[u64]) -> Box<dyn Index> {
    let mut b = builder(config);
    for &k in keys {
        b.add(k).expect("sorted keys are accepted");
    }
    b.finish().expect("a valid configuration")
}

fn plr(delta: u32) -> IndexConfig {
    IndexConfig {
        kind: IndexKind::Plr,
        error_bound: delta,
        ..IndexConfig::default()
    }
}

fn fence(stride: u32) -> IndexConfig {
    IndexConfig {
        kind: IndexKind::Fence,
        fence_stride: stride,
        ..IndexConfig::default()
    }
}

/// The queries of a key set: every present key, its neighbours, both extremes, and `extra`.
pub(super) fn queries(keys: &[u64], extra: &[u64]) -> Vec<u64> {
    let mut q = vec![0, 1, u64::MAX, u64::MAX - 1];
    for &k in keys {
        q.extend([k, k.wrapping_sub(1), k.wrapping_add(1)]);
    }
    q.extend_from_slice(extra);
    q
}

/// Checks the window contract for every query; returns a description of the first violation.
/// `max_window()` must equal [`documented_max_window`] when that is known before training.
pub(super) fn check(config: &IndexConfig, keys: &[u64], extra: &[u64]) -> Result<(), String> {
    let idx = build(config, keys);
    let n = keys.len() as u64;
    if idx.len() != n || idx.kind() != config.kind {
        return Err(format!("len {} kind {:?}", idx.len(), idx.kind()));
    }
    if let Some(bound) = documented_max_window(config) {
        if idx.max_window() != bound {
            return Err(format!(
                "max_window {} documented {bound}",
                idx.max_window()
            ));
        }
    }
    for key in queries(keys, extra) {
        let lb = keys.partition_point(|&k| k < key) as u64;
        let w = idx.search(key);
        if !(w.lo <= lb && lb < w.hi && w.hi <= n + 1) {
            return Err(format!("key {key}: lb {lb} not in {w:?} (n {n})"));
        }
        if w.len() > idx.max_window() {
            return Err(format!("key {key}: {w:?} wider than {}", idx.max_window()));
        }
    }
    Ok(())
}

/// Checks that encode → decode gives an index with identical answers, size and encoding.
pub(super) fn check_roundtrip(
    config: &IndexConfig,
    keys: &[u64],
    extra: &[u64],
) -> Result<(), String> {
    let idx = build(config, keys);
    let mut bytes = Vec::new();
    idx.encode(&mut bytes);
    let back = decode(&bytes, &PathBuf::from("t.sst"), 0).map_err(|e| e.to_string())?;
    let mut again = Vec::new();
    back.encode(&mut again);
    if again != bytes
        || back.size_bytes() != idx.size_bytes()
        || back.segments() != idx.segments()
        || back.len() != idx.len()
        || back.kind() != idx.kind()
        || back.max_window() != idx.max_window()
    {
        return Err(format!("decoded index differs: {back:?} vs {idx:?}"));
    }
    for key in queries(keys, extra) {
        if back.search(key) != idx.search(key) {
            return Err(format!(
                "key {key}: {:?} vs {:?}",
                back.search(key),
                idx.search(key)
            ));
        }
    }
    Ok(())
}

/// Key-set shapes, each sorted (with duplicates where the shape has them).
#[derive(Debug, Clone)]
pub(super) enum Shape {
    Uniform(Vec<u64>),
    /// Runs of equal keys: (key, run length).
    Runs(Vec<(u64, usize)>),
    Dense {
        start: u64,
        len: u64,
    },
    Linear {
        start: u64,
        step: u64,
        len: u64,
    },
    Exponential {
        base_milli: u64,
        len: u64,
    },
    /// Clusters of consecutive keys separated by huge gaps.
    Clusters(Vec<(u64, u64)>),
    /// Keys bunched near 0 and near u64::MAX.
    Extremes {
        low: u64,
        high: u64,
    },
    Mixed(Vec<Shape>),
}

impl Shape {
    /// The shape's keys, sorted.
    pub(super) fn keys(&self) -> Vec<u64> {
        let mut keys = match self {
            Shape::Uniform(v) => v.clone(),
            Shape::Runs(runs) => runs
                .iter()
                .flat_map(|&(k, len)| std::iter::repeat_n(k, len))
                .collect(),
            Shape::Dense { start, len } => (0..*len).map(|i| start.saturating_add(i)).collect(),
            Shape::Linear { start, step, len } => (0..*len)
                .map(|i| start.saturating_add(i.saturating_mul(*step)))
                .collect(),
            Shape::Exponential { base_milli, len } => {
                let base = 1.0 + *base_milli as f64 / 1000.0;
                (0..*len).map(|i| base.powi(i as i32) as u64).collect()
            }
            Shape::Clusters(c) => c
                .iter()
                .flat_map(|&(start, len)| (0..len).map(move |i| start.saturating_add(i)))
                .collect(),
            Shape::Extremes { low, high } => {
                (0..*low).chain((0..*high).map(|i| u64::MAX - i)).collect()
            }
            Shape::Mixed(parts) => parts.iter().flat_map(Shape::keys).collect(),
        };
        keys.sort_unstable();
        keys
    }
}

/// One key-set shape (uniform, runs of duplicates, dense, linear, exponential, clusters,
/// extremes, a single key).
pub(super) fn leaf_shape() -> impl Strategy<Value = Shape> {
    prop_oneof![
        prop::collection::vec(any::<u64>(), 0..2000).prop_map(Shape::Uniform),
        prop::collection::vec((any::<u64>(), 1usize..40), 1..200).prop_map(Shape::Runs),
        // One long run (longer than most error bounds) amid a few other keys.
        (
            any::<u64>(),
            100usize..2500,
            prop::collection::vec(any::<u64>(), 0..50)
        )
            .prop_map(|(k, len, others)| {
                let mut runs = vec![(k, len)];
                runs.extend(others.into_iter().map(|o| (o, 1)));
                Shape::Runs(runs)
            }),
        (any::<u64>(), 1u64..3000).prop_map(|(start, len)| Shape::Dense { start, len }),
        (any::<u64>(), 1u64..1 << 50, 1u64..2000).prop_map(|(start, step, len)| Shape::Linear {
            start,
            step,
            len
        }),
        (1u64..500, 1u64..3000)
            .prop_map(|(base_milli, len)| Shape::Exponential { base_milli, len }),
        prop::collection::vec((any::<u64>(), 1u64..300), 1..12).prop_map(Shape::Clusters),
        (0u64..200, 0u64..200).prop_map(|(low, high)| Shape::Extremes { low, high }),
        any::<u64>().prop_map(|k| Shape::Uniform(vec![k])),
    ]
}

/// A leaf shape or a mix of two or three.
pub(super) fn shape() -> impl Strategy<Value = Shape> {
    prop_oneof![
        3 => leaf_shape(),
        1 => prop::collection::vec(leaf_shape(), 2..4).prop_map(Shape::Mixed),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(192))]

    #[test]
    fn plr_window_contains_lower_bound(
        shape in shape(),
        d in prop::sample::select(DELTAS.to_vec()),
        extra in prop::collection::vec(any::<u64>(), 0..64),
    ) {
        let keys = shape.keys();
        prop_assert_eq!(check(&plr(d), &keys, &extra), Ok(()));
    }

    #[test]
    fn fence_window_contains_lower_bound(
        shape in shape(),
        s in prop::sample::select(STRIDES.to_vec()),
        extra in prop::collection::vec(any::<u64>(), 0..64),
    ) {
        let keys = shape.keys();
        prop_assert_eq!(check(&fence(s), &keys, &extra), Ok(()));
    }

    #[test]
    fn encodings_round_trip(
        shape in shape(),
        d in prop::sample::select(DELTAS.to_vec()),
        s in prop::sample::select(STRIDES.to_vec()),
        extra in prop::collection::vec(any::<u64>(), 0..64),
    ) {
        let keys = shape.keys();
        prop_assert_eq!(check_roundtrip(&plr(d), &keys, &extra), Ok(()));
        prop_assert_eq!(check_roundtrip(&fence(s), &keys, &extra), Ok(()));
    }

    /// Truncated or bit-flipped encodings decode to an error or to an index whose searches
    /// do not panic; never a panic.
    #[test]
    fn damaged_encodings_never_panic(
        shape in leaf_shape(),
        d in prop::sample::select(DELTAS.to_vec()),
        s in prop::sample::select(STRIDES.to_vec()),
        flips in prop::collection::vec((any::<prop::sample::Index>(), 0u8..8), 1..4),
        cut in any::<prop::sample::Index>(),
    ) {
        let keys = shape.keys();
        for config in [plr(d), fence(s)] {
            prop_assert_eq!(check_damaged(&config, &keys, &flips, cut), Ok(()));
        }
    }
}

/// Checks that truncated or bit-flipped encodings of the index `config` builds over `keys`
/// decode to an error or to an index whose searches stay in range; never a panic.
pub(super) fn check_damaged(
    config: &IndexConfig,
    keys: &[u64],
    flips: &[(prop::sample::Index, u8)],
    cut: prop::sample::Index,
) -> Result<(), String> {
    let mut bytes = Vec::new();
    build(config, keys).encode(&mut bytes);
    let truncated = &bytes[..cut.index(bytes.len())];
    if decode(truncated, &PathBuf::from("t"), 7).is_ok() {
        return Err(format!("truncation to {} bytes decoded", truncated.len()));
    }
    let mut flipped = bytes.clone();
    for (at, bit) in &flipped_positions(flips, bytes.len()) {
        flipped[*at] ^= 1 << bit;
    }
    if let Ok(idx) = decode(&flipped, &PathBuf::from("t"), 7) {
        for key in queries(keys, &[]).into_iter().take(300) {
            let w = idx.search(key);
            if !(w.lo < w.hi && w.hi <= idx.len() + 1) {
                return Err(format!("damaged index: key {key} gave {w:?}"));
            }
        }
    }
    Ok(())
}

fn flipped_positions(flips: &[(prop::sample::Index, u8)], len: usize) -> Vec<(usize, u8)> {
    flips.iter().map(|(i, bit)| (i.index(len), *bit)).collect()
}

/// Larger files than the property tests use, at every error bound and stride.
/// The key sets of every type's large-file test, from `seed`: 200k uniform random keys, 100k
/// dense keys above 2^60 (where u64 → f64 conversion is lossy), 100k normal-like keys (sums of
/// uniforms over the whole range); and 10k random queries.
pub(super) fn large_key_sets(seed: u64) -> ([Vec<u64>; 3], Vec<u64>) {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut uniform: Vec<u64> = (0..200_000).map(|_| rng.gen()).collect();
    uniform.sort_unstable();
    let high: Vec<u64> = (0..100_000u64).map(|i| (1 << 60) + i).collect();
    let mut normal: Vec<u64> = (0..100_000)
        .map(|_| (0..4).map(|_| rng.gen::<u64>() >> 2).sum())
        .collect();
    normal.sort_unstable();
    let extra: Vec<u64> = (0..10_000).map(|_| rng.gen()).collect();
    ([uniform, high, normal], extra)
}

#[test]
fn large_files_at_every_bound() {
    let (sets, extra) = large_key_sets(0x5eed);
    for keys in &sets {
        for d in DELTAS {
            assert_eq!(check(&plr(d), keys, &extra), Ok(()), "delta {d}");
        }
        for s in STRIDES {
            assert_eq!(check(&fence(s), keys, &extra), Ok(()), "stride {s}");
        }
    }
}

#[test]
fn decode_errors_name_the_file_and_offset() {
    let mut bytes = Vec::new();
    build(&plr(8), &[1, 2, 3, 50, 900]).encode(&mut bytes);
    bytes.pop();
    let err = decode(&bytes, &PathBuf::from("000007.sst"), 4096).expect_err("truncated");
    assert!(
        matches!(&err, Error::Corruption { file, offset: 4096, .. } if file.ends_with("000007.sst")),
        "{err}"
    );
    let err = decode(&[9, 1], &PathBuf::from("x"), 0).expect_err("unknown kind");
    assert!(
        matches!(err, Error::UnsupportedVersion { version: 0x901, .. }),
        "{err}"
    );
    let err = decode(&[2, 99], &PathBuf::from("x"), 0).expect_err("unknown version");
    assert!(
        matches!(err, Error::UnsupportedVersion { version: 99, .. }),
        "{err}"
    );
    assert!(decode(&[], &PathBuf::from("x"), 0).is_err_and(|e| e.is_corruption()));
}

#[test]
fn size_bytes_counts_the_buffers() {
    let keys: Vec<u64> = (0..10_000u64).map(|i| i * i).collect();
    let f = build(&fence(64), &keys);
    assert_eq!(f.segments(), 157);
    assert!(f.size_bytes() >= 157 * 8);
    let p = build(&plr(8), &keys);
    assert!(p.size_bytes() >= p.segments() as usize * 24);
    assert!(
        p.segments() < 157,
        "x² needs fewer PLR segments than 64-key fences"
    );
}

/// The reader's procedure of the module docs, over byte keys: search the projection's window
/// for `lb(x)`, then scan forward through the run of equal projections comparing bytes.
fn byte_lower_bound(idx: &dyn Index, keys: &[Vec<u8>], prefix: &[u8], query: &[u8]) -> usize {
    let proj = |i: usize| projection::project(&keys[i], prefix.len());
    let x = projection::project_bounded(query, prefix);
    let w = idx.search(x);
    let n = keys.len();
    let end = (w.hi as usize).min(n);
    let mut pos = (w.lo as usize..end).find(|&i| proj(i) >= x).unwrap_or(end);
    while pos < n && proj(pos) == x && keys[pos].as_slice() < query {
        pos += 1;
    }
    pos
}

/// Short byte strings over a small alphabet, so that projections collide often.
fn suffix() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(prop::sample::select(vec![0u8, 1, 0x80, 0xff]), 0..13)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Byte keys with a long common prefix, differing only after 8 bytes, equal projections,
    /// and duplicates (several versions of one key): the window plus the forward scan finds the
    /// byte-key lower bound of any query, for every index type.
    #[test]
    fn byte_keys_sharing_projections(
        prefix in prop::collection::vec(any::<u8>(), 0..12),
        suffixes in prop::collection::vec((suffix(), 1usize..4), 1..300),
        probes in prop::collection::vec(suffix(), 0..40),
        d in prop::sample::select(DELTAS.to_vec()),
        s in prop::sample::select(STRIDES.to_vec()),
    ) {
        let mut keys: Vec<Vec<u8>> = suffixes
            .iter()
            .flat_map(|(suf, versions)| {
                std::iter::repeat_n([prefix.as_slice(), suf].concat(), *versions)
            })
            .collect();
        keys.sort();
        let p = projection::common_prefix_len(&keys[0], &keys[keys.len() - 1]);
        let file_prefix = keys[0][..p].to_vec();
        let projected: Vec<u64> = keys.iter().map(|k| projection::project(k, p)).collect();
        let mut queries: Vec<Vec<u8>> = Vec::new();
        for k in &keys {
            queries.push(k.clone());
            queries.push([k.as_slice(), &[0]].concat());
            let mut smaller = k.clone();
            smaller.pop();
            queries.push(smaller);
        }
        for probe in &probes {
            queries.push([prefix.as_slice(), probe].concat());
            queries.push(probe.clone());
        }
        queries.push(Vec::new());
        queries.push(vec![0xff; 30]);
        let others = [IndexKind::Pgm, IndexKind::RadixSpline, IndexKind::Rmi, IndexKind::Fiting,
            IndexKind::Plex]
            .map(|kind| IndexConfig { kind, ..plr(d) });
        for config in [plr(d), fence(s)].into_iter().chain(others) {
            let idx = build(&config, &projected);
            for q in &queries {
                let expected = keys.partition_point(|k| k < q);
                prop_assert_eq!(
                    byte_lower_bound(idx.as_ref(), &keys, &file_prefix, q),
                    expected,
                    "query {:?} with {:?}", q, config
                );
            }
        }
    }
}

#[test]
fn ceil_position_matches_ceil() {
    for x in [-1.5, -0.0, 0.0, 0.25, 1.0, 2.0, 2.1, 1e15 + 0.5, 3.0e18] {
        assert_eq!(ceil_position(x), f64::ceil(x).max(0.0) as u64, "{x}");
    }
    assert_eq!(ceil_position(f64::NAN), 0);
    assert_eq!(ceil_position(1e30), u64::MAX);
}

/// Encodes the index `config` builds from `keys` fed in `chunks` (lengths, cycled) through
/// `add_all`, or one by one through `add` when `chunks` is empty.
fn encoded(config: &IndexConfig, keys: &[u64], chunks: &[usize]) -> Vec<u8> {
    let mut b = builder(config);
    if chunks.is_empty() {
        for &k in keys {
            b.add(k).expect("sorted keys are accepted");
        }
    } else {
        let mut rest = keys;
        for &len in chunks.iter().cycle() {
            if rest.is_empty() {
                break;
            }
            let (chunk, tail) = rest.split_at(len.min(rest.len()));
            b.add_all(chunk).expect("sorted keys are accepted");
            rest = tail;
        }
    }
    let mut out = Vec::new();
    b.finish().expect("a valid configuration").encode(&mut out);
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// The batch path (`add_all`, which the table builder and the learner use) builds exactly
    /// the model of `add` per key, for every index type, however the keys are split —
    /// duplicates across chunk boundaries and empty chunks included.
    #[test]
    fn add_all_builds_what_add_builds(
        shape in shape(),
        d in prop::sample::select(DELTAS.to_vec()),
        chunks in prop::collection::vec(0usize..300, 1..6),
    ) {
        let keys = shape.keys();
        // (The string tree trains from keys, not projections: `string_tree_tests.rs`.)
        for kind in IndexKind::ALL.into_iter().filter(|&k| k != IndexKind::StringTree) {
            let config = IndexConfig { kind, error_bound: d, ..IndexConfig::default() };
            let chunks: Vec<usize> = chunks.iter().map(|&c| c.max(usize::from(chunks.len() == 1))).collect();
            prop_assert_eq!(encoded(&config, &keys, &[]), encoded(&config, &keys, &chunks), "{:?}", kind);
        }
    }
}

/// A batch out of order fails as `add` would at the first bad key, and the builder stays
/// failed; a batch after a failure fails too.
#[test]
fn add_all_rejects_unsorted_batches_like_add() {
    for kind in IndexKind::ALL
        .into_iter()
        .filter(|&k| k != IndexKind::StringTree)
    {
        let config = IndexConfig {
            kind,
            ..IndexConfig::default()
        };
        let mut b = builder(&config);
        b.add_all(&[1, 5, 9]).expect("sorted");
        let err = b.add_all(&[10, 12, 11]).expect_err("11 after 12");
        assert!(err.to_string().contains("11 after 12"), "{kind:?}: {err}");
        assert!(
            b.add_all(&[20]).is_err(),
            "{kind:?}: failed builders stay failed"
        );
        let mut b = builder(&config);
        b.add_all(&[7]).expect("sorted");
        assert!(
            b.add_all(&[6, 8]).is_err(),
            "{kind:?}: a batch below the previous key"
        );
        assert!(b.finish().is_err(), "{kind:?}");
    }
}

/// A random walk of `n` steps of `lb` for the fused-step tests of the fitters: the start key,
/// then `(a, b, y)` per step with `a < b` after the previous `b` (gaps up to `spread`) and
/// `y` growing by 1–3.
pub(super) fn random_steps(
    rng: &mut rand::rngs::StdRng,
    spread: u64,
    n: usize,
) -> (u64, Vec<(u64, u64, u64)>) {
    use rand::Rng;
    let start = rng.gen_range(0..1000u64);
    let (mut x, mut y) = (start, 0u64);
    let steps = (0..n)
        .map(|_| {
            let a = x + 1 + rng.gen_range(0..spread);
            let b = a + 1 + rng.gen_range(0..spread);
            y += rng.gen_range(1..4);
            x = b;
            (a, b, y)
        })
        .collect();
    (start, steps)
}

/// Fixed-width decimal ids under a shared prefix, some absent, with versions: the keys a
/// radix projection reads as numbers.
fn decimal_keys() -> impl Strategy<Value = Vec<Vec<u8>>> {
    (
        prop::collection::vec((0u32..5000, 1usize..3), 1..400),
        prop::sample::select(vec![4usize, 7, 12]),
    )
        .prop_map(|(ids, width)| {
            let mut keys: Vec<Vec<u8>> = ids
                .iter()
                .flat_map(|&(id, versions)| {
                    std::iter::repeat_n(format!("key:{id:0width$}").into_bytes(), versions)
                })
                .collect();
            keys.sort();
            keys
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// PLR over byte keys (`plr_over_keys`, which may fit a radix projection): for any query,
    /// present or absent, with or without the file's prefix, `lo <= lb`, and every key from
    /// `hi` up to `lb` shares the query's projection (the run the reader scans past `hi`);
    /// the encoding round-trips to the same windows.
    #[test]
    fn plr_over_byte_keys_keeps_the_window_contract(
        keys in prop_oneof![
            decimal_keys(),
            prop::collection::vec(suffix(), 1..200).prop_map(|mut k| { k.sort(); k }),
        ],
        probes in prop::collection::vec(
            prop::collection::vec(prop::sample::select(b"key:0123456789\x00\xff".to_vec()), 0..16),
            0..40,
        ),
        d in prop::sample::select(DELTAS.to_vec()),
    ) {
        let p = projection::common_prefix_len(&keys[0], &keys[keys.len() - 1]);
        let prefix = keys[0][..p].to_vec();
        let rests: Vec<&[u8]> = keys.iter().map(|k| &k[p..]).collect();
        let idx = chooser::plr_over_keys(&rests, &plr(d)).unwrap();
        let mut bytes = Vec::new();
        idx.encode(&mut bytes);
        let decoded = decode(&bytes, &PathBuf::from("t"), 0).unwrap();
        let radix = match idx.kind() {
            IndexKind::Plr => bytes[1] == plr_model::RADIX_FORMAT_VERSION,
            _ => false,
        };
        let project = |k: &[u8]| -> u64 {
            if radix {
                let mut d = crate::coding::Decoder::new(&bytes[2..]);
                radix_projection::RadixProjection::decode(&mut d).unwrap().project_bounded(k, &prefix)
            } else {
                projection::project_bounded(k, &prefix)
            }
        };
        let mut queries: Vec<Vec<u8>> = keys.clone();
        queries.extend(keys.iter().map(|k| [k.as_slice(), b"0"].concat()));
        queries.extend(keys.iter().map(|k| k[..k.len().saturating_sub(1)].to_vec()));
        queries.extend(probes);
        queries.push(Vec::new());
        for q in &queries {
            let w = idx.search_key(q, &prefix);
            prop_assert_eq!(w, decoded.search_key(q, &prefix));
            let lb = keys.partition_point(|k| k < q) as u64;
            prop_assert!(w.lo <= lb && w.lo < w.hi, "{:?}: {:?} lb {}", q, w, lb);
            if idx.kind() == IndexKind::Plr {
                prop_assert!(w.hi - w.lo <= idx.max_window());
                for i in w.hi.max(1) - 1..lb {
                    prop_assert_eq!(project(&keys[i as usize]), project(q), "{:?} run", q);
                }
            }
        }
    }
}

#[test]
fn decimal_ids_fit_a_few_segments_through_the_radix_projection() {
    // Every id of a range, two versions each: the byte projection has a step per ten ids.
    let keys: Vec<Vec<u8>> = (1_000_000..1_200_000u32)
        .flat_map(|id| std::iter::repeat_n(format!("{id:012}").into_bytes(), 2))
        .collect();
    let rests: Vec<&[u8]> = keys.iter().map(|k| &k[5..]).collect();
    let idx = chooser::plr_over_keys(&rests, &plr(8)).unwrap();
    let mut bytes = Vec::new();
    idx.encode(&mut bytes);
    assert_eq!(bytes[1], plr_model::RADIX_FORMAT_VERSION);
    assert!(idx.segments() <= 4, "{} segments", idx.segments());
    let projected: Vec<u64> = rests.iter().map(|k| projection::project(k, 0)).collect();
    let bytewise = build(&plr(8), &projected);
    assert!(
        bytewise.segments() > 1000,
        "{} segments",
        bytewise.segments()
    );
}
