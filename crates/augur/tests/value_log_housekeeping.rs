//! Value-log housekeeping (issue 28, item 5):
//! - an open keeps appending to the last segment when it ends in a complete entry below the
//!   size limit, so many short-lived opens make one segment, not one each; a segment whose
//!   tail a crash tore is never appended to again, and crashes while appending to a reused
//!   segment keep the durable-prefix contract;
//! - the manifest keeps the deleted segments as runs of consecutive ids, so its snapshot
//!   stays as small as the number of live segments after any number of GC runs, while an
//!   open still refuses a live segment that is missing and ignores obsolete ones;
//! - the first value-log sync after an open fsyncs the segments that may hold unsynced
//!   bytes, not every segment;
//! - automatic GC seals an active segment whose garbage passed the GC ratio and a quarter
//!   of the segment size, and collects it like any sealed one.

use augur::fs::{FaultFs, FaultMode, FaultOp, FileSystem};
use augur::version::VersionEdit;
use augur::wal::{read_log, LogKind};
use augur::{Db, Error, Options, WriteBatch, WriteOptions};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

const DIR: &str = "/db";

fn options(fs: &FaultFs) -> Options {
    Options {
        fs: Arc::new(fs.clone()),
        memtable_size_bytes: 16 << 10,
        target_file_size_bytes: 16 << 10,
        l1_max_bytes: 64 << 10,
        // Every value of these tests is separated into the value log.
        value_separation_threshold: 8,
        value_log_segment_bytes: 8 << 10,
        // Only explicit GC runs, so the tests control when segments go; values move only then.
        value_log_gc_ratio: 2.0,
        level_merge: false,
        background_threads: false,
        ..Options::default()
    }
}

fn value(key: u32, round: u32) -> Vec<u8> {
    format!("value-{key:04}-{round}-{}", "v".repeat(60)).into_bytes()
}

fn key(k: u32) -> Vec<u8> {
    format!("k{k:04}").into_bytes()
}

fn segment_files(fs: &FaultFs) -> Vec<String> {
    let mut v: Vec<String> = fs
        .list(Path::new(DIR))
        .unwrap()
        .into_iter()
        .filter(|n| n.ends_with(".vlog"))
        .collect();
    v.sort();
    v
}

fn segment_path(id: u64) -> PathBuf {
    Path::new(DIR).join(augur::vlog::segment_file_name(id))
}

fn put_synced(db: &Db, k: u32, round: u32) -> augur::Result<()> {
    let mut b = WriteBatch::new();
    b.put(key(k), value(k, round));
    db.write_opt(b, WriteOptions { sync: true })
}

fn check(db: &Db, model: &BTreeMap<u32, u32>, ctx: &str) {
    for (&k, &round) in model {
        assert_eq!(
            db.get(key(k)).unwrap(),
            Some(value(k, round)),
            "{ctx}: key {k}"
        );
    }
}

/// Opens and closes the database many times, a few writes each: one segment in the end.
#[test]
fn open_close_cycles_append_to_one_segment() {
    let fs = FaultFs::new();
    let options = |fs: &FaultFs| Options {
        value_log_segment_bytes: 1 << 20,
        ..options(fs)
    };
    let mut model = BTreeMap::new();
    for round in 0..40u32 {
        let db = Db::open(DIR, options(&fs)).unwrap();
        for k in round * 3..round * 3 + 3 {
            if k % 2 == 0 {
                put_synced(&db, k, round).unwrap();
            } else {
                db.put(key(k), value(k, round)).unwrap();
            }
            model.insert(k, round);
        }
        check(&db, &model, &format!("round {round}"));
        db.close().unwrap();
    }
    assert_eq!(segment_files(&fs), vec!["000001.vlog".to_string()]);
    let db = Db::open(DIR, options(&fs)).unwrap();
    check(&db, &model, "last open");
    db.verify().unwrap();
    drop(db);
    // Sessions that end in a power cut (no clean close) reuse it too.
    for round in 40..45u32 {
        let db = Db::open(DIR, options(&fs)).unwrap();
        put_synced(&db, round, round).unwrap();
        db.put(key(round + 100), value(round, round)).unwrap();
        model.insert(round, round);
        fs.crash();
        drop(db);
        fs.reset_faults();
    }
    let db = Db::open(DIR, options(&fs)).unwrap();
    check(&db, &model, "after crashes");
    assert_eq!(segment_files(&fs), vec!["000001.vlog".to_string()]);
}

/// [`options`] with 1 MiB segments and automatic GC at a garbage ratio of 0.5.
fn gc_options(fs: &FaultFs) -> Options {
    Options {
        value_log_segment_bytes: 1 << 20,
        value_log_gc_ratio: 0.5,
        ..options(fs)
    }
}

/// A database reopened for every batch of overwrites keeps its values, and their garbage,
/// in the active segment: an explicit GC run seals it and collects it (automatic GC leaves
/// an active segment with less garbage than a quarter of the segment size).
#[test]
fn explicit_gc_collects_garbage_in_the_active_segment() {
    let fs = FaultFs::new();
    let options = gc_options;
    let mut model = BTreeMap::new();
    for round in 0..3u32 {
        let db = Db::open(DIR, options(&fs)).unwrap();
        for k in 0..50 {
            db.put(key(k), value(k, round)).unwrap();
            model.insert(k, round);
        }
        db.compact_range(None, None).unwrap();
    }
    assert_eq!(segment_files(&fs), vec!["000001.vlog".to_string()]);
    let db = Db::open(DIR, options(&fs)).unwrap();
    let stats = db.stats().value_log;
    assert!(stats[0].active && stats[0].garbage_bytes > 0, "{stats:?}");
    let report = db.run_value_log_gc().unwrap();
    assert_eq!(report.segment, Some(1));
    assert_eq!(report.entries_relocated, 50);
    assert_eq!(db.run_value_log_gc().unwrap().segment, None);
    // The new active segment, and the one the rewrite relocated the live values to.
    assert_eq!(
        segment_files(&fs),
        vec!["000002.vlog".to_string(), "000003.vlog".to_string()]
    );
    check(&db, &model, "after GC");
    db.verify().unwrap();
    drop(db);
    let db = Db::open(DIR, options(&fs)).unwrap();
    check(&db, &model, "reopened");
}

/// The same pattern with more garbage: once the active segment's garbage reaches the GC
/// ratio and a quarter of the segment size, automatic GC seals it and, after the memtables
/// pointing into it are flushed, collects it, with no explicit GC run.
#[test]
fn automatic_gc_seals_an_active_segment_full_of_garbage() {
    let fs = FaultFs::new();
    let options = gc_options;
    let big = |k: u32, round: u32| format!("{k:04}-{round:03}-{}", "b".repeat(1000)).into_bytes();
    const KEYS: u32 = 50;
    const ROUNDS: u32 = 12;
    for round in 0..ROUNDS {
        let db = Db::open(DIR, options(&fs)).unwrap();
        for k in 0..KEYS {
            db.put(key(k), big(k, round)).unwrap();
        }
        db.compact_range(None, None).unwrap();
        db.close().unwrap();
    }
    // Every round appended ~50 KB and turned the previous round's into garbage: without
    // the seal, segment 1 would hold all 12 rounds (~610 KB, 11/12 garbage).
    let db = Db::open(DIR, options(&fs)).unwrap();
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    for k in 0..KEYS {
        assert_eq!(db.get(key(k)).unwrap(), Some(big(k, ROUNDS - 1)), "key {k}");
    }
    let segments = segment_files(&fs);
    assert!(
        !segments.contains(&"000001.vlog".to_string()),
        "segment 1 was never collected: {segments:?}"
    );
    let log_bytes: u64 = db.stats().value_log.iter().map(|s| s.bytes).sum();
    assert!(
        log_bytes < u64::from(KEYS * ROUNDS) * 1000 / 2,
        "{log_bytes} bytes of value log: {:?}",
        db.stats().value_log
    );
    db.verify().unwrap();
    drop(db);
    let db = Db::open(DIR, options(&fs)).unwrap();
    for k in 0..KEYS {
        assert_eq!(
            db.get(key(k)).unwrap(),
            Some(big(k, ROUNDS - 1)),
            "reopened: key {k}"
        );
    }
}

/// Builds a database whose segment 1 holds 20 synced values, and reopens it (segment 1 is
/// reused). Returns the open database and its model.
fn reopened_base(fs: &FaultFs) -> (Db, BTreeMap<u32, u32>) {
    let mut model = BTreeMap::new();
    let db = Db::open(DIR, options(fs)).unwrap();
    for k in 0..20 {
        put_synced(&db, k, 0).unwrap();
        model.insert(k, 0);
    }
    db.close().unwrap();
    drop(db);
    let db = Db::open(DIR, options(fs)).unwrap();
    assert_eq!(segment_files(fs), vec!["000001.vlog".to_string()]);
    (db, model)
}

/// A power cut at every operation of synced writes into a reused segment, then a reopen
/// that appends more: every acknowledged write survives, the one in flight is all or
/// nothing, and the segments stay clean chains of entries (`verify` walks them).
#[test]
fn power_cut_while_appending_to_a_reused_segment() {
    let workload = |db: &Db, model: &mut BTreeMap<u32, u32>| -> augur::Result<()> {
        for k in 10..40 {
            put_synced(db, k, 1)?;
            model.insert(k, 1);
        }
        Ok(())
    };
    let dry = FaultFs::new();
    let (db, mut model) = reopened_base(&dry);
    let before = dry.op_count(FaultOp::Any);
    workload(&db, &mut model).unwrap();
    let total = dry.op_count(FaultOp::Any) - before;
    drop(db);
    for n in 1..=total {
        let fs = FaultFs::new();
        let (db, mut model) = reopened_base(&fs);
        fs.crash_at(FaultOp::Any, n);
        let acked = model.clone();
        let mut acknowledged = acked.clone();
        assert!(workload(&db, &mut acknowledged).is_err(), "n = {n}");
        drop(db);
        fs.reset_faults();
        let ctx = format!("crash at op {n} of {total}");
        let db = Db::open(DIR, options(&fs)).unwrap_or_else(|e| panic!("{ctx}: {e}"));
        check(&db, &acknowledged, &ctx);
        // The write in flight: either its new value or the old one.
        let in_flight = (10..40).find(|k| acknowledged.get(k) != Some(&1));
        if let Some(k) = in_flight {
            let got = db.get(key(k)).unwrap();
            let old = acked.get(&k).map(|&r| value(k, r));
            assert!(got == Some(value(k, 1)) || got == old, "{ctx}: key {k}");
            model = acknowledged;
            if got == Some(value(k, 1)) {
                model.insert(k, 1);
            }
        } else {
            model = acknowledged;
        }
        // Append more after the recovery, then a clean reopen.
        for k in 40..50 {
            put_synced(&db, k, 2).unwrap();
            model.insert(k, 2);
        }
        db.verify().unwrap_or_else(|e| panic!("{ctx}: {e}"));
        drop(db);
        let db = Db::open(DIR, options(&fs)).unwrap();
        check(&db, &model, &ctx);
        db.verify().unwrap_or_else(|e| panic!("{ctx}: {e}"));
        assert!(
            segment_files(&fs).len() <= 2,
            "{ctx}: {:?}",
            segment_files(&fs)
        );
    }
}

/// A process that dies in the middle of a value-log append leaves a torn entry at the end of
/// the segment (in the OS cache). The next open does not append after it: it starts a new
/// segment, and GC can still walk the torn one.
#[test]
fn a_torn_append_is_never_followed_by_new_entries() {
    let fs = FaultFs::new();
    let (db, mut model) = reopened_base(&fs);
    let segment = fs.read_all(&segment_path(1)).unwrap();
    // The first counted write of the put is the value-log entry's header: torn.
    fs.fail_at(FaultOp::Write, 1, FaultMode::Tear);
    assert!(db.put(key(100), value(100, 0)).is_err());
    drop(db);
    fs.reset_faults();
    let torn = fs.read_all(&segment_path(1)).unwrap();
    assert!(torn.len() > segment.len(), "the torn bytes are in the file");
    let db = Db::open(DIR, options(&fs)).unwrap();
    assert_eq!(
        segment_files(&fs),
        vec!["000001.vlog".to_string(), "000002.vlog".to_string()]
    );
    assert_eq!(
        fs.read_all(&segment_path(1)).unwrap(),
        torn,
        "left as it was"
    );
    for k in 20..30 {
        db.put(key(k), value(k, 1)).unwrap();
        model.insert(k, 1);
    }
    check(&db, &model, "after the torn append");
    // Every entry of segment 1 is garbage once its keys are overwritten: GC collects it.
    for k in 0..20 {
        db.put(key(k), value(k, 2)).unwrap();
        model.insert(k, 2);
    }
    db.compact_range(None, None).unwrap();
    let report = db.run_value_log_gc().unwrap();
    assert_eq!(report.segment, Some(1));
    db.verify().unwrap();
    drop(db);
    let db = Db::open(DIR, options(&fs)).unwrap();
    check(&db, &model, "reopened");
    assert_eq!(segment_files(&fs), vec!["000002.vlog".to_string()]);
}

/// The deleted-segment records of the manifest's snapshot: (single ids, runs, ids covered).
fn manifest_deleted(fs: &FaultFs) -> (usize, usize, u64) {
    let current = fs.read_all(&Path::new(DIR).join("CURRENT")).unwrap();
    let name = String::from_utf8(current).unwrap();
    let path = Path::new(DIR).join(name.trim_end());
    let contents = read_log(fs, &path, LogKind::Manifest).unwrap();
    let (_, first) = contents.records.first().expect("a snapshot edit");
    let snapshot = VersionEdit::decode(first).unwrap();
    let covered = snapshot.vlog_deleted.len() as u64
        + snapshot
            .vlog_deleted_runs
            .iter()
            .map(|(_, n)| n)
            .sum::<u64>();
    (
        snapshot.vlog_deleted.len(),
        snapshot.vlog_deleted_runs.len(),
        covered,
    )
}

/// One GC cycle: every key overwritten, compaction turns the old values into garbage, GC
/// collects every segment with garbage.
fn gc_cycle(db: &Db, model: &mut BTreeMap<u32, u32>, round: u32) {
    for k in 0..150 {
        db.put(key(k), value(k, round)).unwrap();
        model.insert(k, round);
    }
    db.compact_range(None, None).unwrap();
    while db.run_value_log_gc().unwrap().segment.is_some() {}
}

#[test]
fn gc_cycles_keep_the_manifest_deleted_list_bounded() {
    let fs = FaultFs::new();
    let mut model = BTreeMap::new();
    let mut db = Db::open(DIR, options(&fs)).unwrap();
    let mut records_at_10 = 0;
    for round in 0..40u32 {
        gc_cycle(&db, &mut model, round);
        if round % 5 == 4 {
            drop(db);
            db = Db::open(DIR, options(&fs)).unwrap();
            let (singles, runs, covered) = manifest_deleted(&fs);
            let live = db.stats().value_log.len();
            assert!(
                singles + runs <= live + 1,
                "round {round}: {singles} ids and {runs} runs for {live} live segments"
            );
            if round == 9 {
                records_at_10 = singles + runs;
                assert!(covered >= 10, "GC deleted segments: {covered}");
            }
            if round == 39 {
                assert!(covered >= 40, "GC deleted segments: {covered}");
                assert!(
                    singles + runs <= records_at_10.max(live + 1),
                    "{singles} + {runs} records after 40 rounds, {records_at_10} after 10"
                );
            }
        }
    }
    check(&db, &model, "after the GC cycles");
    db.verify().unwrap();
}

/// After many GC cycles: an obsolete segment's leftover file is removed at open; a live
/// segment that is missing fails the open with `Corruption` naming it — one the WAL points
/// into, or one the manifest records garbage for.
#[test]
fn after_gc_cycles_missing_live_segments_are_refused_and_obsolete_ones_ignored() {
    let fs = FaultFs::new();
    let mut model = BTreeMap::new();
    let db = Db::open(DIR, options(&fs)).unwrap();
    for round in 0..12u32 {
        gc_cycle(&db, &mut model, round);
    }
    // Keep a copy of a segment that the next cycle's GC deletes.
    let doomed = db
        .stats()
        .value_log
        .iter()
        .find(|s| !s.active)
        .map(|s| s.id)
        .expect("a sealed segment");
    let copy = fs.read_all(&segment_path(doomed)).unwrap();
    gc_cycle(&db, &mut model, 12);
    assert!(!fs.exists(&segment_path(doomed)), "GC deleted {doomed}");
    drop(db);
    // Its file comes back (as if a crash undid the removal): obsolete, removed at open.
    let mut w = fs.create(&segment_path(doomed)).unwrap();
    w.append(&copy).unwrap();
    w.sync().unwrap();
    let db = Db::open(DIR, options(&fs)).unwrap();
    assert!(!fs.exists(&segment_path(doomed)));
    check(&db, &model, "obsolete segment ignored");

    // Garbage in sealed segments (overwrites compacted, no GC), then writes only the WAL
    // holds, pointing into the active segment; a clean close.
    for k in 0..150 {
        db.put(key(k), value(k, 13)).unwrap();
        model.insert(k, 13);
    }
    db.compact_range(None, None).unwrap();
    for k in 0..5 {
        db.put(key(k), value(k, 14)).unwrap();
        model.insert(k, 14);
    }
    let stats = db.stats().value_log;
    let active = stats.iter().find(|s| s.active).unwrap().id;
    let with_garbage = stats
        .iter()
        .find(|s| !s.active && s.garbage_bytes > 0)
        .expect("a sealed segment with garbage")
        .id;
    db.close().unwrap();
    drop(db);

    for missing in [active, with_garbage] {
        let path = segment_path(missing);
        let saved = fs.read_all(&path).unwrap();
        fs.remove(&path).unwrap();
        match Db::open(DIR, options(&fs)) {
            Err(Error::Corruption { file, .. }) => assert_eq!(file, path),
            Err(e) => panic!("segment {missing}: expected a corruption naming it, got {e}"),
            Ok(_) => panic!("segment {missing} is missing, yet the open succeeded"),
        }
        let mut w = fs.create(&path).unwrap();
        w.append(&saved).unwrap();
        w.sync().unwrap();
    }
    let db = Db::open(DIR, options(&fs)).unwrap();
    check(&db, &model, "segments restored");
    db.verify().unwrap();
}

/// The first synced write after an open fsyncs the active segment and the WAL, not every
/// segment the open found. (Each session compacts everything before it ends, so the next
/// open replays nothing and does not sync the value log itself, and no write compacts.)
#[test]
fn first_sync_after_open_does_not_sync_every_segment() {
    let fs = FaultFs::new();
    let db = Db::open(DIR, options(&fs)).unwrap();
    for k in 0..400 {
        db.put(key(k), value(k, 0)).unwrap();
    }
    db.compact_range(None, None).unwrap();
    db.close().unwrap();
    drop(db);
    let segments = segment_files(&fs).len();
    assert!(segments >= 5, "{segments} segments");
    for crash in [false, true] {
        if crash {
            fs.crash();
        }
        fs.reset_faults();
        let db = Db::open(DIR, options(&fs)).unwrap();
        let syncs = fs.op_count(FaultOp::Sync);
        put_synced(&db, 1_000, 0).unwrap();
        let used = fs.op_count(FaultOp::Sync) - syncs;
        assert!(
            used <= 2,
            "crash {crash}: {used} syncs for one synced write beside {segments} segments"
        );
        db.compact_range(None, None).unwrap();
        drop(db);
    }
}
