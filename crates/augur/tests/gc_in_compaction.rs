//! Value-log GC without the memtable detour (issue 28, item 4), checked against a `BTreeMap`
//! model:
//! - compactions relocate the values they meet in segments past `value_log_gc_ratio` into
//!   fresh segments, and a segment whose garbage reaches all its bytes is deleted without
//!   GC ever reading it;
//! - an explicit GC run rewrites the tables that point into the worst segment in place: the
//!   levels holding data stay the same and L0 does not grow;
//! - level merge leaves the last level's values in key order, so consecutive keys' values
//!   sit next to each other in the log.

use augur::fs::{FileSystem, MemFs};
use augur::{CompactionStyle, Db, Options};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

const DIR: &str = "/db";

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn options(fs: &MemFs) -> Options {
    Options {
        fs: Arc::new(fs.clone()),
        // About 360 entries (a node and a value pointer each) per memtable; the shapes the
        // tests assert hold from 30 to 32 KiB.
        memtable_size_bytes: 31 << 10,
        target_file_size_bytes: 8 << 10,
        l1_max_bytes: 32 << 10,
        value_separation_threshold: 0,
        value_log_segment_bytes: 24 << 10,
        value_log_gc_ratio: 0.5,
        level_merge: false,
        background_threads: false,
        ..Options::default()
    }
}

fn key(k: u32) -> Vec<u8> {
    format!("key{k:06}").into_bytes()
}

fn value(k: u32, round: u32) -> Vec<u8> {
    format!("v{k}-{round}-{}", "x".repeat(100 + (k as usize * 7) % 60)).into_bytes()
}

fn put(db: &Db, model: &mut Model, k: u32, round: u32) {
    db.put(key(k), value(k, round)).unwrap();
    model.insert(key(k), value(k, round));
}

fn check(db: &Db, model: &Model, ctx: &str) {
    let scanned: Model = db.iter().map(|r| r.unwrap()).collect();
    assert_eq!(scanned.len(), model.len(), "{ctx}: scan length");
    assert!(scanned == *model, "{ctx}: scan differs from the model");
    for (k, v) in model.iter().step_by(7) {
        assert_eq!(db.get(k).unwrap().as_ref(), Some(v), "{ctx}: get {k:?}");
    }
}

fn segment_files(fs: &MemFs) -> BTreeSet<u64> {
    fs.list(Path::new(DIR))
        .unwrap()
        .iter()
        .filter_map(|n| augur::vlog::parse_segment_file_name(n))
        .collect()
}

/// Sealed segments whose garbage ratio is at least `ratio`.
fn segments_past(db: &Db, ratio: f64) -> Vec<u64> {
    db.stats()
        .value_log
        .iter()
        .filter(|s| !s.active && s.garbage_bytes as f64 >= ratio * s.bytes as f64)
        .map(|s| s.id)
        .collect()
}

fn files_per_level(db: &Db) -> Vec<usize> {
    db.stats().levels.iter().map(|l| l.files).collect()
}

#[test]
fn compactions_relocate_values_and_delete_all_garbage_segments() {
    let fs = MemFs::new();
    let opts = Options {
        l0_compaction_trigger: 100,
        l0_slowdown_trigger: 100,
        l0_stop_trigger: 100,
        ..options(&fs)
    };
    let db = Db::open(DIR, opts.clone()).unwrap();
    // Automatic GC would collect these segments itself: this test is about compactions.
    db.hold_automatic_gc_for_test(true);
    let mut model = Model::new();
    for k in 0..600 {
        put(&db, &mut model, k, 0);
    }
    db.compact_range(None, None).unwrap();
    // Seven keys in ten overwritten: the first round's segments become 70% garbage once a
    // compaction drops the old pointers.
    for k in (0..600).filter(|k| k % 10 < 7) {
        put(&db, &mut model, k, 1);
    }
    db.compact_range(None, None).unwrap();
    let past = segments_past(&db, 0.5);
    assert!(past.len() >= 2, "too few segments past the ratio: {past:?}");
    assert_eq!(db.stats().values_relocated, 0);
    let files_before = segment_files(&fs);
    // A compaction over the whole range relocates the rest of their live values (one key in
    // ten is overwritten again, so L0 compacts into every file of the last level).
    for k in (0..600).filter(|k| k % 10 == 9) {
        put(&db, &mut model, k, 2);
    }
    db.compact_range(None, None).unwrap();
    let stats = db.stats();
    assert!(stats.values_relocated > 0, "{stats:?}");
    assert_eq!(stats.gc_runs, 0, "no GC run: compactions did it");
    let files_after = segment_files(&fs);
    for id in &past {
        assert!(files_before.contains(id));
        assert!(
            !files_after.contains(id),
            "segment {id} is all garbage and should be deleted (files {files_after:?})"
        );
    }
    assert!(
        files_after.iter().any(|id| !files_before.contains(id)),
        "the relocated values went to a new segment"
    );
    check(&db, &model, "after relocation");
    db.verify().unwrap();
    drop(db);
    let db = Db::open(DIR, opts).unwrap();
    check(&db, &model, "reopened");
    db.verify().unwrap();
}

/// Fills a database whose data spans several levels, with garbage in its segments.
fn layered(fs: &MemFs, style: CompactionStyle) -> (Db, Model) {
    let opts = Options {
        compaction: Some(style),
        dynamic_level_bytes: false,
        num_levels: 4,
        value_log_gc_ratio: 2.0,
        ..options(fs)
    };
    let db = Db::open(DIR, opts).unwrap();
    let mut model = Model::new();
    let mut rng = StdRng::seed_from_u64(7);
    let mut keys: Vec<u32> = (0..2500).collect();
    keys.shuffle(&mut rng);
    for &k in &keys {
        put(&db, &mut model, k, 0);
    }
    for round in 1..3 {
        for _ in 0..900 {
            let k = rng.gen_range(0..2500);
            if rng.gen_bool(0.1) {
                db.delete(key(k)).unwrap();
                model.remove(&key(k));
            } else {
                put(&db, &mut model, k, round);
            }
        }
    }
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    (db, model)
}

fn explicit_gc_keeps_the_shape(style: CompactionStyle) {
    let fs = MemFs::new();
    let (db, model) = layered(&fs, style);
    let before = files_per_level(&db);
    let deeper = before.iter().skip(1).filter(|&&n| n > 0).count();
    assert!(deeper >= 2, "{style}: data in too few levels: {before:?}");
    let segments_before = segment_files(&fs);
    let mut collected = Vec::new();
    for _ in 0..6 {
        let report = db.run_value_log_gc().unwrap();
        let Some(segment) = report.segment else {
            break;
        };
        assert!(report.tables_rewritten > 0 || report.entries_relocated == 0);
        collected.push(segment);
        let after = files_per_level(&db);
        assert!(
            after[0] <= before[0],
            "{style}: L0 grew: {before:?} -> {after:?}"
        );
        for (level, (&b, &a)) in before.iter().zip(&after).enumerate().skip(1) {
            assert_eq!(
                b > 0,
                a > 0,
                "{style}: level {level} changed shape: {before:?} -> {after:?}"
            );
        }
        check(
            &db,
            &model,
            &format!("{style}: after collecting segment {segment}"),
        );
    }
    assert!(
        collected.len() >= 2,
        "{style}: collected only {collected:?}"
    );
    let files = segment_files(&fs);
    for id in &collected {
        assert!(segments_before.contains(id) && !files.contains(id));
    }
    let stats = db.stats();
    assert_eq!(stats.gc_runs, collected.len() as u64);
    assert!(stats.gc_entries_relocated > 0);
    db.verify().unwrap();
}

#[test]
fn explicit_gc_rewrites_tables_in_place_leveled() {
    explicit_gc_keeps_the_shape(CompactionStyle::Leveled);
}

#[test]
fn explicit_gc_rewrites_tables_in_place_flsm() {
    explicit_gc_keeps_the_shape(CompactionStyle::Flsm);
}

/// Automatic GC collects the segments compactions leave behind: after random overwrites and
/// `wait_for_compactions`, no sealed segment is past the ratio, and the contents match the
/// model through a reopen.
#[test]
fn automatic_gc_leaves_no_segment_past_the_ratio() {
    let fs = MemFs::new();
    let opts = options(&fs);
    let db = Db::open(DIR, opts.clone()).unwrap();
    let mut model = Model::new();
    let mut rng = StdRng::seed_from_u64(11);
    for round in 0..6 {
        for _ in 0..800 {
            let k = rng.gen_range(0..700);
            if rng.gen_bool(0.05) {
                db.delete(key(k)).unwrap();
                model.remove(&key(k));
            } else {
                put(&db, &mut model, k, round);
            }
        }
    }
    db.wait_for_compactions().unwrap();
    assert!(
        segments_past(&db, 0.5).is_empty(),
        "{:?}",
        db.stats().value_log
    );
    assert!(db.stats().gc_runs + db.stats().values_relocated > 0);
    check(&db, &model, "after automatic GC");
    db.verify().unwrap();
    drop(db);
    let db = Db::open(DIR, opts).unwrap();
    check(&db, &model, "reopened");
}

/// Where the last level's values sit, as fractions of its pointers (in key order): those
/// that continue the previous key's pointer forward in the same segment within 64 KiB
/// (`consecutive`), and those that come after the previous pointer into the same segment,
/// whatever lies between (`per_segment`: a segment's values in key order; merges that each
/// rewrite their new values leave a few such key-ordered streams interleaved).
struct Order {
    consecutive: f64,
    per_segment: f64,
}

fn last_level_order(db: &Db) -> Order {
    let last = db.stats().levels.len() - 1;
    let pointers = db.value_pointers_for_test(last).unwrap();
    assert!(pointers.len() > 100, "only {} pointers", pointers.len());
    let pairs = (pointers.len() - 1) as f64;
    let consecutive = pointers
        .windows(2)
        .filter(|w| {
            let (a, b) = (&w[0].1, &w[1].1);
            a.segment == b.segment && b.offset > a.offset && b.offset - a.offset <= 64 << 10
        })
        .count() as f64
        / pairs;
    let mut last_in: BTreeMap<u64, u64> = BTreeMap::new();
    let mut forward = 0usize;
    let mut followed = 0usize;
    for (_, p) in &pointers {
        if let Some(prev) = last_in.insert(p.segment, p.offset) {
            followed += 1;
            if p.offset > prev {
                forward += 1;
            }
        }
    }
    Order {
        consecutive,
        per_segment: forward as f64 / followed.max(1) as f64,
    }
}

fn random_fill(level_merge: bool) -> (MemFs, Db, Model) {
    let fs = MemFs::new();
    let opts = Options {
        level_merge,
        value_log_gc_ratio: 2.0,
        ..options(&fs)
    };
    let db = Db::open(DIR, opts).unwrap();
    let mut model = Model::new();
    let mut keys: Vec<u32> = (0..3000).collect();
    keys.shuffle(&mut StdRng::seed_from_u64(3));
    for &k in &keys {
        put(&db, &mut model, k, 0);
    }
    db.compact_range(None, None).unwrap();
    (fs, db, model)
}

#[test]
fn level_merge_puts_the_last_level_in_key_order() {
    let (_fs, scattered, model) = random_fill(false);
    let off = last_level_order(&scattered);
    assert!(
        off.consecutive < 0.1 && off.per_segment < 0.7,
        "a random fill is scattered ({}, {})",
        off.consecutive,
        off.per_segment
    );
    check(&scattered, &model, "level merge off");

    let (fs, db, model) = random_fill(true);
    let on = last_level_order(&db);
    assert!(
        on.per_segment > 0.97 && on.consecutive > 3.0 * off.consecutive.max(0.05),
        "level merge leaves the values out of order ({}, {})",
        on.consecutive,
        on.per_segment
    );
    assert!(db.stats().values_relocated >= 3000);
    check(&db, &model, "level merge on");
    db.verify().unwrap();

    // New values merged into an ordered range: below the threshold they stay where they
    // are, and the range stays mostly in order; the values rewritten earlier are not
    // rewritten again.
    let relocated = db.stats().values_relocated;
    let mut model = model;
    for k in (0..3000).step_by(50) {
        put(&db, &mut model, k, 1);
    }
    db.compact_range(None, None).unwrap();
    let moved = db.stats().values_relocated - relocated;
    assert!(moved < 3000 / 10, "{moved} values rewritten again");
    assert!(last_level_order(&db).per_segment > 0.95);
    check(&db, &model, "after a small merge");
    drop(db);
    let db = Db::open(
        DIR,
        Options {
            level_merge: true,
            ..options(&fs)
        },
    )
    .unwrap();
    check(&db, &model, "reopened");
    db.verify().unwrap();
}
