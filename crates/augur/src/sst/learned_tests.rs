//! The model path of table lookups against the baseline path: for tables built with a learned
//! index (PLR at several error bounds, fence pointers over projections), every `get` and
//! `lower_bound` gives exactly what the same file gives without its model, and what a sorted
//! `Vec` gives — for adversarial byte keys: long shared prefixes, keys that differ only after
//! byte 8 of the suffix (equal projections), the empty key, many versions of one key.

use super::*;
use crate::fs::{FileSystem, ReadMode, StdFs};
use crate::index::chooser::ModelBudget;
use crate::index::{IndexConfig, IndexKind};
use crate::key::{ValueKind, MAX_SEQNO};
use proptest::prelude::*;
use std::collections::BTreeSet;

fn key_strategy() -> impl Strategy<Value = Vec<u8>> {
    // A shared 12-byte prefix plus a short suffix over a tiny alphabet produces long runs of
    // equal projections; a few keys stray outside the prefix.
    prop_oneof![
        8 => proptest::collection::vec(prop_oneof![Just(0u8), Just(1u8), Just(0xffu8)], 0..14)
            .prop_map(|s| { let mut k = b"common-prefx".to_vec(); k.extend(s); k }),
        1 => proptest::collection::vec(any::<u8>(), 0..4),
    ]
}

fn build(
    entries: &[Entry],
    model: Option<IndexConfig>,
    model_budget: Option<ModelBudget>,
    dir: &std::path::Path,
    stream: Option<(usize, bool)>,
    block_records: usize,
) -> std::path::PathBuf {
    let name = format!(
        "{}-{:?}-{}.sst",
        model.map_or(0, |m| m.error_bound + 1),
        model.map(|m| m.kind),
        model_budget.map_or("fixed".to_string(), |b| b.to_string())
    );
    let path = dir.join(name);
    let opts = BuilderOptions {
        block_records,
        bloom_bits_per_key: 10,
        model,
        model_budget,
        ..BuilderOptions::default()
    };
    let file = StdFs.create(&path).unwrap();
    // Streamed after a sample of `sample` entries, with exact hints or none.
    let mut b = match stream {
        Some((sample, hinted)) => {
            let hints = if hinted {
                super::tests::exact_hints(entries)
            } else {
                LayoutHints::default()
            };
            Builder::with_hints(file, path.clone(), opts, hints).with_sample_entries(sample)
        }
        None => Builder::new(file, path.clone(), opts),
    };
    for e in entries {
        b.add(&e.user_key, e.seqno, e.kind, &e.value).unwrap();
    }
    b.finish().unwrap();
    path
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn model_path_equals_baseline_path(
        keys in proptest::collection::btree_set(key_strategy(), 1..120),
        versions in proptest::collection::vec(1u64..4, 1..120),
        probes in proptest::collection::vec(key_strategy(), 0..40),
        snapshots in proptest::collection::vec(0u64..400, 1..4),
        stream in proptest::option::of((1usize..9, any::<bool>())),
        // Small blocks: windows cross them; large: a window lies in one block, where the
        // reader counts slots by their first head bytes (`lower_bound_by_heads`).
        block_records in prop_oneof![Just(4usize), Just(64)],
    ) {
        // Entries in internal order: each key gets 1–3 versions with descending seqnos
        // (10_000 + …), the middle one a tombstone.
        let mut entries = Vec::new();
        let mut next_seqno = 10_500u64;
        for (i, k) in keys.iter().enumerate() {
            for v in 0..versions[i % versions.len()] {
                next_seqno -= 1;
                let (kind, value) = if v == 1 {
                    (ValueKind::Delete, Vec::new())
                } else {
                    (ValueKind::Value, next_seqno.to_le_bytes().to_vec())
                };
                entries.push(Entry { user_key: k.clone(), seqno: next_seqno, kind, value });
            }
            next_seqno = 10_500 - (i as u64 + 1) % 7 * 60;
        }
        let dir = tempfile::tempdir().unwrap();
        let baseline_path = build(&entries, None, None, dir.path(), stream, block_records);
        let baseline = Table::open(&StdFs, &baseline_path, 1, ReadMode::Mmap).unwrap();
        let mut all_probes: BTreeSet<Vec<u8>> = keys.clone();
        all_probes.extend(probes);
        all_probes.insert(Vec::new());
        all_probes.insert(vec![0xff; 20]);
        let plr = |error_bound| IndexConfig { kind: IndexKind::Plr, error_bound, fence_stride: 4, tuning: Default::default() };
        for (config, budget) in [
            (plr(0), None),
            (plr(1), None),
            (plr(8), None),
            (IndexConfig { kind: IndexKind::Fence, error_bound: 8, fence_stride: 3, tuning: Default::default() }, None),
            // The model chooser (`--index=auto`) under each kind of budget.
            (plr(1), Some(ModelBudget::FencePointers)),
            (plr(8), Some(ModelBudget::Unlimited)),
            (plr(2), Some(ModelBudget::BytesPerKey(0.0))),
        ] {
            let path = build(&entries, Some(config), budget, dir.path(), stream, block_records);
            for mode in [ReadMode::Mmap, ReadMode::Pread] {
                let learned = Table::open(&StdFs, &path, 2, mode).unwrap();
                // The chooser may keep the table's own fence path (no model); a fixed kind
                // always trains one.
                prop_assert!(learned.has_model() || budget.is_some());
                let unlearned = Table::open_with(&StdFs, &path, 2, mode, false).unwrap();
                prop_assert!(!unlearned.has_model());
                // A model learned after open from the file's own slots is the at-build one.
                let late = Table::open(&StdFs, &baseline_path, 3, mode).unwrap();
                prop_assert!(!late.has_model());
                let report = late.learn_with(&config, budget).unwrap();
                prop_assert_eq!(report.installed, learned.has_model());
                prop_assert_eq!(late.has_model(), learned.has_model());
                prop_assert_eq!(report.keys, entries.len() as u64);
                prop_assert_eq!(late.model_kind(), learned.model_kind());
                prop_assert_eq!(late.model_segments(), learned.model_segments());
                prop_assert_eq!(late.model_size_bytes(), learned.model_size_bytes());
                for probe in &all_probes {
                    for &snap in snapshots.iter().chain([&MAX_SEQNO, &0]) {
                        let snap = snap + 10_000;
                        let want = baseline.get(probe, snap).unwrap();
                        prop_assert_eq!(&learned.get(probe, snap).unwrap(), &want, "{:?} {:?}", config, probe);
                        prop_assert_eq!(&unlearned.get(probe, snap).unwrap(), &want);
                        prop_assert_eq!(&late.get(probe, snap).unwrap(), &want);
                        let want_pos = entries.partition_point(|e| {
                            crate::key::compare(&e.user_key, crate::key::pack_trailer(e.seqno, e.kind),
                                probe, (snap.min(MAX_SEQNO) << 8) | 0xff) == std::cmp::Ordering::Less
                        }) as u64;
                        prop_assert_eq!(learned.lower_bound(probe, snap).unwrap(), want_pos, "{:?} {:?}", config, probe);
                        prop_assert_eq!(baseline.lower_bound(probe, snap).unwrap(), want_pos);
                        prop_assert_eq!(late.lower_bound(probe, snap).unwrap(), want_pos);
                    }
                }
            }
        }
    }
}

#[test]
fn learn_installs_once_counts_paths_and_respects_disabled_models() {
    let dir = tempfile::tempdir().unwrap();
    let entries: Vec<Entry> = (0u64..100)
        .map(|i| Entry {
            user_key: (i * 7).to_be_bytes().to_vec(),
            seqno: 1,
            kind: ValueKind::Value,
            value: vec![1],
        })
        .collect();
    let path = build(&entries, None, None, dir.path(), None, 4);
    let config = IndexConfig::default();
    let disabled = Table::open_with(&StdFs, &path, 1, ReadMode::Pread, false).unwrap();
    assert!(disabled.learn(&config).is_err());
    let t = Table::open(&StdFs, &path, 1, ReadMode::Pread).unwrap();
    assert!(t.get(&7u64.to_be_bytes(), MAX_SEQNO).unwrap().is_some());
    let first = t.learn(&config).unwrap();
    assert!(first.installed);
    assert_eq!(first.keys, 100);
    assert!(first.segments >= 1 && first.model_bytes > 0);
    assert!(!t.learn(&config).unwrap().installed);
    assert!(t.get(&14u64.to_be_bytes(), MAX_SEQNO).unwrap().is_some());
    assert!(t.get(&15u64.to_be_bytes(), MAX_SEQNO).unwrap().is_none());
    let c = t.lookup_counts();
    assert_eq!((c.baseline_lookups(), c.model_lookups()), (1, 2));
    assert_eq!(t.lookups(), (2, 1));
}
