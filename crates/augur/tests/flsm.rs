//! PebblesDB's fragmented LSM (`CompactionStyle::Flsm`): the style is fixed at creation,
//! guard invariants hold through any sequence of writes, flushes, compactions and reopens
//! (property test), empty guards are removed without losing or resurrecting keys, and
//! seek-based compaction fires and lowers the files per guard.

use augur::fs::MemFs;
use augur::{CompactionStyle, Db, Error, FlsmOptions, Options};
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::sync::Arc;

fn options(fs: &MemFs) -> Options {
    Options {
        fs: Arc::new(fs.clone()),
        background_threads: false,
        compaction: Some(CompactionStyle::Flsm),
        memtable_size_bytes: 16 << 10,
        target_file_size_bytes: 4096,
        l0_compaction_trigger: 2,
        l0_slowdown_trigger: 4,
        l0_stop_trigger: 6,
        l1_max_bytes: 32 << 10,
        level_size_ratio: 4,
        num_levels: 4,
        block_records: 8,
        value_separation_threshold: usize::MAX,
        // Guards every 64 keys at L1, 32 at L2, 16 at L3: with entries of ~250 bytes
        // (`value`), 4 KiB files hold ~16 of them, so L3 sits at the floor that guard
        // spacing may not go below (one target file, `compaction::guards`).
        flsm: FlsmOptions {
            top_level_bits: 6,
            bit_decrement: 1,
            max_sstables_per_guard: 3,
            ..FlsmOptions::default()
        },
        ..Options::default()
    }
}

fn key(k: u32) -> Vec<u8> {
    format!("key{k:06}").into_bytes()
}

/// About 250 bytes: large enough that a 4 KiB file holds few entries, so guards may be
/// dense (guard spacing follows the entries a target file holds).
fn value(k: u32, round: u32) -> Vec<u8> {
    let pad = 200 + (k % 7) as usize * 9;
    format!("value-{k}-{round}-{}", "x".repeat(pad)).into_bytes()
}

/// Every key of `model` reads back, every other key of the space reads as absent, and a
/// full scan equals the model.
fn check(db: &Db, model: &BTreeMap<Vec<u8>, Vec<u8>>, space: u32, ctx: &str) {
    for k in 0..space {
        let got = db.get(key(k)).expect("get");
        assert_eq!(got.as_ref(), model.get(&key(k)), "{ctx}: get {k}");
    }
    let scanned: BTreeMap<Vec<u8>, Vec<u8>> =
        db.iter().collect::<augur::Result<_>>().expect("scan");
    assert_eq!(&scanned, model, "{ctx}: scan");
}

#[test]
fn the_style_is_fixed_at_creation() {
    let fs = MemFs::new();
    let db = Db::open("/db", options(&fs)).expect("create flsm");
    db.put(b"a", b"1").expect("put");
    drop(db);
    let leveled = Options {
        compaction: Some(CompactionStyle::Leveled),
        ..options(&fs)
    };
    match Db::open("/db", leveled.clone()) {
        Err(Error::InvalidArgument(m)) => {
            assert!(m.contains("flsm") && m.contains("leveled"), "{m}")
        }
        other => panic!("opening an FLSM database as leveled: {other:?}"),
    }
    let db = Db::open("/db", options(&fs)).expect("reopen flsm");
    assert_eq!(db.get(b"a").expect("get").as_deref(), Some(&b"1"[..]));
    drop(db);

    let fs = MemFs::new();
    drop(
        Db::open(
            "/db",
            Options {
                fs: Arc::new(fs.clone()),
                ..leveled
            },
        )
        .expect("leveled"),
    );
    assert!(matches!(
        Db::open("/db", options(&fs)),
        Err(Error::InvalidArgument(_))
    ));
}

/// Guard invariants checked from outside: sorted, level `l` a subset of level `l + 1`, none
/// at L0.
fn check_guards(db: &Db, ctx: &str) {
    db.check_structure()
        .unwrap_or_else(|e| panic!("{ctx}: {e}"));
    let guards = db.guards();
    assert!(guards[0].is_empty(), "{ctx}: L0 has guards");
    for l in 1..guards.len() {
        assert!(
            guards[l].windows(2).all(|w| w[0] < w[1]),
            "{ctx}: level {l}"
        );
        if l + 1 < guards.len() {
            for g in &guards[l] {
                assert!(
                    guards[l + 1].binary_search(g).is_ok(),
                    "{ctx}: guard of level {l} missing at level {}",
                    l + 1
                );
            }
        }
    }
}

#[derive(Debug, Clone)]
enum Op {
    Put(u32),
    Delete(u32),
    DeleteRange(u32, u32),
    Flush,
    Compact,
    Reopen,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        20 => (0u32..400).prop_map(Op::Put),
        6 => (0u32..400).prop_map(Op::Delete),
        1 => (0u32..400, 1u32..120).prop_map(|(a, n)| Op::DeleteRange(a, n)),
        2 => Just(Op::Flush),
        1 => Just(Op::Compact),
        1 => Just(Op::Reopen),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Whatever the operations: every file lies inside its guard, each level's guards are a
    /// subset of the next level's, no key is lost or resurrected as guards come and go, and
    /// a reopen restores the same guards.
    #[test]
    fn guard_invariants_hold(ops in proptest::collection::vec(op(), 50..400)) {
        let fs = MemFs::new();
        let mut db = Db::open("/db", options(&fs)).expect("open");
        let mut model = BTreeMap::new();
        for (round, op) in ops.iter().enumerate() {
            let round = round as u32;
            // Bulk puts between ops so flushes and compactions really happen.
            for k in (round * 37 % 400..400).step_by(53) {
                db.put(key(k), value(k, round)).expect("put");
                model.insert(key(k), value(k, round));
            }
            match op {
                Op::Put(k) => {
                    db.put(key(*k), value(*k, round)).expect("put");
                    model.insert(key(*k), value(*k, round));
                }
                Op::Delete(k) => {
                    db.delete(key(*k)).expect("delete");
                    model.remove(&key(*k));
                }
                Op::DeleteRange(a, n) => {
                    for k in *a..(*a + *n).min(400) {
                        db.delete(key(k)).expect("delete");
                        model.remove(&key(k));
                    }
                }
                Op::Flush => db.flush().expect("flush"),
                Op::Compact => db.compact_range(None, None).expect("compact"),
                Op::Reopen => {
                    let before = db.guards();
                    drop(db);
                    db = Db::open("/db", options(&fs)).expect("reopen");
                    prop_assert_eq!(db.guards(), before, "reopen changed the guards");
                }
            }
            check_guards(&db, &format!("after {op:?}"));
        }
        check(&db, &model, 400, "end");
        db.compact_range(None, None).expect("compact");
        check_guards(&db, "after the final compaction");
        check(&db, &model, 400, "after the final compaction");
    }
}

#[test]
fn guards_are_committed_and_empty_ones_removed_without_losing_keys() {
    let fs = MemFs::new();
    let db = Db::open("/db", options(&fs)).expect("open");
    let mut model = BTreeMap::new();
    for round in 0..4 {
        for k in 0..600 {
            db.put(key(k), value(k, round)).expect("put");
            model.insert(key(k), value(k, round));
        }
    }
    db.compact_range(None, None).expect("compact");
    check_guards(&db, "after load");
    let last = db.guards().len() - 1;
    let before = db.guards()[last].len();
    assert!(before >= 10, "only {before} guards at the last level");
    assert!(
        db.guards()[1].len() < before,
        "level 1 is as fine as the last"
    );
    check(&db, &model, 600, "after load");

    // Delete the upper half of the key space: its guards become empty and go.
    for k in 300..600 {
        db.delete(key(k)).expect("delete");
        model.remove(&key(k));
    }
    db.compact_range(None, None).expect("compact");
    check_guards(&db, "after deletes");
    let after = db.guards();
    assert!(
        after[last].len() < before,
        "no guard was removed ({} before, {} after)",
        before,
        after[last].len()
    );
    let upper = key(300);
    assert!(
        after[last].iter().filter(|g| **g > upper).count() <= 1,
        "guards above the deleted range's start remain: {:?}",
        after[last].iter().filter(|g| **g > upper).count()
    );
    check(&db, &model, 600, "after deletes");

    // The removed guards' range fills again: nothing resurrected, new keys readable.
    for k in (300..600).step_by(3) {
        db.put(key(k), value(k, 9)).expect("put");
        model.insert(key(k), value(k, 9));
    }
    db.compact_range(None, None).expect("compact");
    check_guards(&db, "after refill");
    check(&db, &model, 600, "after refill");
    drop(db);
    let db = Db::open("/db", options(&fs)).expect("reopen");
    check_guards(&db, "after reopen");
    check(&db, &model, 600, "after reopen");
}

#[test]
fn seek_based_compaction_fires_and_reduces_files_per_guard() {
    let fs = MemFs::new();
    let opts = Options {
        // Each flush is compacted into L1 as fragments; nothing else moves them down.
        l0_compaction_trigger: 1,
        l1_max_bytes: 1 << 30,
        flsm: FlsmOptions {
            top_level_bits: 30,
            max_sstables_per_guard: 64,
            seek_compaction_threshold: 5,
            ..options(&fs).flsm
        },
        ..options(&fs)
    };
    let db = Db::open("/db", opts.clone()).expect("open");
    for round in 0..4 {
        for k in 0..200 {
            db.put(key(k), value(k, round)).expect("put");
        }
        db.flush().expect("flush");
    }
    db.wait_for_compactions().expect("settle");
    let s = db.stats();
    let depth_before = s.levels[1].max_guard_depth;
    let files_before = s.levels[1].files;
    assert!(
        depth_before >= 2,
        "L1 has no overlapping fragments: {:?}",
        s.levels[1]
    );
    let compactions_before = s.compactions;

    // Seeks into the crowded guard.
    for i in 0..5 {
        let mut it = db.range(key(i * 10)..);
        assert!(it.next().is_some(), "seek {i} found nothing");
    }
    db.wait_for_compactions().expect("seek compaction");
    let s = db.stats();
    assert!(
        s.compactions > compactions_before,
        "no seek-based compaction ran"
    );
    assert!(
        s.levels[1].max_guard_depth < depth_before,
        "L1 depth {} -> {}",
        depth_before,
        s.levels[1].max_guard_depth
    );
    assert!(
        s.levels[1].files < files_before,
        "L1 files {files_before} -> {}",
        s.levels[1].files
    );
    let mut model = BTreeMap::new();
    for k in 0..200 {
        model.insert(key(k), value(k, 3));
    }
    check(&db, &model, 200, "after seek compaction");

    // With the threshold at 0, seeks never compact.
    drop(db);
    let fs2 = MemFs::new();
    let off = Options {
        fs: Arc::new(fs2.clone()),
        flsm: FlsmOptions {
            seek_compaction_threshold: 0,
            ..opts.flsm.clone()
        },
        ..opts
    };
    let db = Db::open("/db", off).expect("open");
    for round in 0..4 {
        for k in 0..200 {
            db.put(key(k), value(k, round)).expect("put");
        }
        db.flush().expect("flush");
    }
    db.wait_for_compactions().expect("settle");
    let before = db.stats().compactions;
    for i in 0..50 {
        let mut it = db.range(key(i)..);
        assert!(it.next().is_some());
    }
    db.wait_for_compactions().expect("settle");
    assert_eq!(
        db.stats().compactions,
        before,
        "seeks compacted with the threshold at 0"
    );
}
