//! Crashes during a checkpoint, a backup, a purge and a restore, under the fault-injecting
//! file system (issue 44, item 1): a power cut at every counted file-system operation of
//! each (every create, write, sync, rename, link and removal, the source's flush and seal
//! included) must leave
//! - the source intact: it reopens, verifies and holds every write (all were synced before
//!   the copy began);
//! - the copy refused or ignored: a checkpoint directory either missing or whole (its
//!   staging directory never opens as a database holding less than the source did, and the
//!   next checkpoint removes it); a backup either listed and whole (it verifies and
//!   restores to the source's state) or not listed, its copies reclaimed by the next
//!   purge; a restore target missing or whole;
//! - everything working afterwards: the checkpoint, backup or restore repeated succeeds.
//!
//! Work runs inline (`background_threads = false`), so the n-th operation is the same one
//! in every run.

use augur::backup::BackupEngine;
use augur::fs::{FaultFs, FaultOp, FileSystem};
use augur::{Db, Options};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

const SRC: &str = "/db";
const CP: &str = "/out/cp";
const STAGING: &str = "/out/cp.augur-tmp";
const BACKUPS: &str = "/backups";

fn options(fs: &FaultFs) -> Options {
    Options {
        fs: Arc::new(fs.clone()),
        background_threads: false,
        memtable_size_bytes: 16 << 10,
        value_separation_threshold: 64,
        value_log_segment_bytes: 64 << 10,
        ..Options::default()
    }
}

fn contents(db: &Db) -> Model {
    db.iter().map(|r| r.expect("scan")).collect()
}

/// Writes `keys` more keys (`round` in their values; every other value separated) to
/// `model` and `db`, and syncs them.
fn write_round(db: &Db, model: &mut Model, round: u32, keys: u32) {
    for i in 0..keys {
        let k = format!("k{:05}", (i * 7 + round * 13) % 900).into_bytes();
        let mut v = format!("r{round}-{i}").into_bytes();
        if i.is_multiple_of(2) {
            v.resize(100, b'.');
        }
        db.put(&k, &v).unwrap();
        model.insert(k, v);
    }
    db.sync().unwrap();
}

/// A source database on a fresh `FaultFs`: tables, sealed and active segments, and synced
/// writes still in the memtable (so a copy must flush).
fn source() -> (FaultFs, Db, Model) {
    let fs = FaultFs::new();
    let db = Db::open(SRC, options(&fs)).unwrap();
    let mut model = Model::new();
    write_round(&db, &mut model, 0, 600);
    db.flush().unwrap();
    write_round(&db, &mut model, 1, 300);
    (fs, db, model)
}

/// Reopens the source after a crash: it verifies and holds `model`.
fn check_source(fs: &FaultFs, model: &Model, ctx: &str) -> Db {
    let db = Db::open(SRC, options(fs)).unwrap_or_else(|e| panic!("{ctx}: source: {e}"));
    db.verify()
        .unwrap_or_else(|e| panic!("{ctx}: source verify: {e}"));
    assert_eq!(&contents(&db), model, "{ctx}: source lost writes");
    db
}

/// Opens `dir` (never creating it): `None` when refused, else its verified contents.
fn try_open(fs: &FaultFs, dir: &str) -> Option<Model> {
    let opts = Options {
        create_if_missing: false,
        ..options(fs)
    };
    let db = Db::open(dir, opts).ok()?;
    db.verify().ok()?;
    Some(contents(&db))
}

/// Runs `op` on a fresh source (after `prepare`), counting the file-system operations it
/// performs; returns the count.
fn count_ops(prepare: &dyn Fn(&FaultFs, &Db, &mut Model), op: &dyn Fn(&FaultFs, &Db)) -> u64 {
    let (fs, db, mut model) = source();
    prepare(&fs, &db, &mut model);
    let before = fs.op_count(FaultOp::Any);
    op(&fs, &db);
    fs.op_count(FaultOp::Any) - before
}

#[test]
fn a_crash_at_any_point_of_a_checkpoint_leaves_the_source_whole_and_no_partial_copy() {
    let checkpoint = |_: &FaultFs, db: &Db| {
        db.checkpoint(CP).unwrap();
    };
    let total = count_ops(&|_, _, _| {}, &checkpoint);
    assert!(total >= 10, "{total} operations");
    let mut outcomes = BTreeMap::new();
    for n in 1..=total {
        let ctx = format!("crash at #{n} of {total}");
        let (fs, db, model) = source();
        fs.crash_at(FaultOp::Any, n);
        let result = db.checkpoint(CP);
        assert!(result.is_err(), "{ctx}: the checkpoint passed its crash");
        drop(db);
        fs.reset_faults();
        let db = check_source(&fs, &model, &ctx);
        let made = match try_open(&fs, CP) {
            Some(got) => {
                assert_eq!(
                    got, model,
                    "{ctx}: the checkpoint is not the source's state"
                );
                "whole"
            }
            None => {
                assert!(!fs.exists(Path::new(CP)), "{ctx}: a partial checkpoint");
                match try_open(&fs, STAGING) {
                    // Complete but for its rename: the same state.
                    Some(got) => {
                        assert_eq!(got, model, "{ctx}: the staging directory opened short");
                        "staged, whole"
                    }
                    None => "missing",
                }
            }
        };
        *outcomes.entry(made).or_insert(0) += 1;
        if made != "whole" {
            // The next checkpoint clears the staging directory and succeeds.
            db.checkpoint(CP)
                .unwrap_or_else(|e| panic!("{ctx}: a checkpoint after the crash: {e}"));
            assert!(!fs.exists(Path::new(STAGING)), "{ctx}");
            drop(db);
            assert_eq!(try_open(&fs, CP).as_ref(), Some(&model), "{ctx}");
        }
    }
    eprintln!("{total} crash points: {outcomes:?}");
    assert!(outcomes.get("missing").copied().unwrap_or(0) > total / 2);
}

/// The shared files of the backup directory and those its listed backups name.
fn shared_and_named(fs: &FaultFs, engine: &BackupEngine) -> (BTreeSet<String>, BTreeSet<String>) {
    let shared = fs
        .list(&Path::new(BACKUPS).join("shared"))
        .unwrap()
        .into_iter()
        .collect();
    let named = engine
        .list()
        .unwrap()
        .iter()
        .flat_map(|b| engine.backup(b.id).unwrap().files)
        .map(|f| f.shared_name())
        .collect();
    (shared, named)
}

/// Checks every listed backup of `engine` verifies and restores to `models[id - 1]`.
fn check_backups(fs: &FaultFs, engine: &BackupEngine, models: &[Model], ctx: &str) {
    for b in engine.list().unwrap() {
        let report = engine.verify(b.id).unwrap();
        assert!(report.is_ok(), "{ctx}: backup {} damaged: {report:?}", b.id);
        let target = format!("/restored/{}-{}", b.id, fs.op_count(FaultOp::Any));
        engine.restore(b.id, &target).unwrap();
        assert_eq!(
            try_open(fs, &target).as_ref(),
            models.get(b.id as usize - 1),
            "{ctx}: backup {} restores another state",
            b.id
        );
    }
}

/// A source with one backup made, and synced writes after it (the second backup's).
fn with_first_backup(fs: &FaultFs, db: &Db, model: &mut Model) {
    let engine = BackupEngine::open_with(BACKUPS, Arc::new(fs.clone())).unwrap();
    engine.create(db).unwrap();
    write_round(db, model, 2, 200);
}

#[test]
fn a_crash_at_any_point_of_a_backup_leaves_it_unlisted_and_its_copies_reclaimed() {
    let engine_on = |fs: &FaultFs| BackupEngine::open_with(BACKUPS, Arc::new(fs.clone())).unwrap();
    let create = |fs: &FaultFs, db: &Db| {
        engine_on(fs).create(db).unwrap();
    };
    let total = count_ops(&with_first_backup, &create);
    assert!(total >= 10, "{total} operations");
    let mut listed_whole = 0;
    for n in 1..=total {
        let ctx = format!("crash at #{n} of {total}");
        let (fs, db, mut model) = source();
        let first = model.clone();
        with_first_backup(&fs, &db, &mut model);
        fs.crash_at(FaultOp::Any, n);
        assert!(
            engine_on(&fs).create(&db).is_err(),
            "{ctx}: passed its crash"
        );
        drop(db);
        fs.reset_faults();
        let db = check_source(&fs, &model, &ctx);
        let engine = engine_on(&fs);
        let ids: Vec<u64> = engine.list().unwrap().iter().map(|b| b.id).collect();
        match ids.as_slice() {
            [1] => {}
            [1, 2] => listed_whole += 1,
            other => panic!("{ctx}: backups {other:?}"),
        }
        check_backups(&fs, &engine, &[first.clone(), model.clone()], &ctx);
        // The next change reclaims what the interrupted backup copied.
        engine.purge(usize::MAX).unwrap();
        let (shared, named) = shared_and_named(&fs, &engine);
        assert_eq!(shared, named, "{ctx}: files no backup names are left");
        assert!(fs.list(&Path::new(BACKUPS).join("tmp")).unwrap().is_empty());
        let again = engine.create(&db).unwrap();
        assert_eq!(again.info.id, ids.len() as u64 + 1, "{ctx}");
        assert!(engine.verify(again.info.id).unwrap().is_ok(), "{ctx}");
    }
    assert!(listed_whole < total / 2, "{listed_whole} of {total}");
}

#[test]
fn a_crash_during_purge_or_restore_never_damages_a_listed_backup() {
    // Three backups of three states, then `purge(1)` (and a restore) cut at every operation.
    let prepare = |fs: &FaultFs, db: &Db, model: &mut Model, models: &mut Vec<Model>| {
        let engine = BackupEngine::open_with(BACKUPS, Arc::new(fs.clone())).unwrap();
        for round in 3..6 {
            write_round(db, model, round, 250);
            db.compact_range(None, None).unwrap();
            engine.create(db).unwrap();
            models.push(model.clone());
        }
    };
    let fresh = || {
        let (fs, db, mut model) = source();
        let mut models = Vec::new();
        prepare(&fs, &db, &mut model, &mut models);
        (fs, db, models)
    };
    let engine_on = |fs: &FaultFs| BackupEngine::open_with(BACKUPS, Arc::new(fs.clone())).unwrap();
    for (what, run) in [
        (
            "purge",
            &(|fs: &FaultFs| engine_on(fs).purge(1).map(drop))
                as &dyn Fn(&FaultFs) -> augur::Result<()>,
        ),
        ("restore", &|fs: &FaultFs| {
            engine_on(fs).restore(2, "/r").map(drop)
        }),
    ] {
        let total = {
            let (fs, _db, _) = fresh();
            let before = fs.op_count(FaultOp::Any);
            run(&fs).unwrap();
            fs.op_count(FaultOp::Any) - before
        };
        assert!(total >= 3, "{what}: {total} operations");
        for n in 1..=total {
            let ctx = format!("{what}: crash at #{n} of {total}");
            let (fs, db, models) = fresh();
            drop(db);
            fs.crash_at(FaultOp::Any, n);
            assert!(run(&fs).is_err(), "{ctx}: passed its crash");
            fs.reset_faults();
            let engine = engine_on(&fs);
            let ids: Vec<u64> = engine.list().unwrap().iter().map(|b| b.id).collect();
            assert!(ids.ends_with(&[3]), "{ctx}: {ids:?}");
            check_backups(&fs, &engine, &models, &ctx);
            if what == "restore" {
                match try_open(&fs, "/r") {
                    Some(got) => assert_eq!(&got, &models[1], "{ctx}"),
                    None => assert!(!fs.exists(Path::new("/r")), "{ctx}: a partial restore"),
                }
            }
            engine.purge(1).unwrap();
            let (shared, named) = shared_and_named(&fs, &engine);
            assert_eq!(shared, named, "{ctx}");
            check_backups(&fs, &engine, &models, &ctx);
        }
    }
}
