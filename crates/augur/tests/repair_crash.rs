//! Crashes during `augur::repair`, under the fault-injecting file system: a power cut at
//! every counted file-system operation of a repair (of a database whose manifest and
//! CURRENT were lost, holding tables, value-log segments and a WAL) must leave a directory
//! that an open either refuses or opens whole, and a second repair must then finish the
//! job: the database opens, verifies and holds every write. Nothing is ever deleted, so
//! no crash point can lose a write.

use augur::fs::{FaultFs, FaultOp, FileSystem};
use augur::{repair, Db, Options};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

const DIR: &str = "/db";

fn options(fs: &FaultFs) -> Options {
    Options {
        fs: Arc::new(fs.clone()),
        background_threads: false,
        create_if_missing: false,
        memtable_size_bytes: 16 << 10,
        value_separation_threshold: 64,
        value_log_segment_bytes: 16 << 10,
        ..Options::default()
    }
}

fn contents(db: &Db) -> Model {
    db.iter().map(|r| r.expect("scan")).collect()
}

/// A database (tables, segments, a WAL with synced writes) without manifest and CURRENT.
fn headless() -> (FaultFs, Model) {
    let fs = FaultFs::new();
    let db = Db::open(
        DIR,
        Options {
            create_if_missing: true,
            ..options(&fs)
        },
    )
    .expect("open");
    let mut model = Model::new();
    for round in 0..3u32 {
        for i in 0..150u32 {
            let k = format!("k{:04}", (i * 7 + round * 13) % 200).into_bytes();
            let mut v = format!("r{round}-{i}").into_bytes();
            if i.is_multiple_of(2) {
                v.resize(100, b'.');
            }
            db.put(&k, &v).expect("put");
            model.insert(k, v);
        }
        if round < 2 {
            db.flush().expect("flush");
        }
    }
    db.sync().expect("sync");
    drop(db);
    for name in fs.list(Path::new(DIR)).expect("list") {
        if name == "CURRENT" || name.starts_with("MANIFEST-") {
            fs.remove(&Path::new(DIR).join(name)).expect("remove");
        }
    }
    fs.sync_dir(Path::new(DIR)).expect("sync dir");
    (fs, model)
}

/// Opens the database: `None` when refused, else its verified contents.
fn try_open(fs: &FaultFs) -> Option<Model> {
    let db = Db::open(DIR, options(fs)).ok()?;
    db.verify().expect("an opened database verifies");
    Some(contents(&db))
}

#[test]
fn a_crash_at_any_point_of_a_repair_loses_nothing() {
    let (fs, model) = headless();
    let before = fs.op_count(FaultOp::Any);
    repair(Path::new(DIR), &options(&fs)).expect("repair");
    let total = fs.op_count(FaultOp::Any) - before;
    assert_eq!(try_open(&fs).as_ref(), Some(&model));
    assert!(total >= 10, "{total} operations");
    let mut refused = 0;
    for n in 1..=total {
        let ctx = format!("crash at #{n} of {total}");
        let (fs, model) = headless();
        fs.crash_at(FaultOp::Any, n);
        assert!(
            repair(Path::new(DIR), &options(&fs)).is_err(),
            "{ctx}: the repair passed its crash"
        );
        fs.reset_faults();
        match try_open(&fs) {
            Some(got) => assert_eq!(got, model, "{ctx}: opened short"),
            None => refused += 1,
        }
        repair(Path::new(DIR), &options(&fs))
            .unwrap_or_else(|e| panic!("{ctx}: the second repair: {e}"));
        assert_eq!(
            try_open(&fs).as_ref(),
            Some(&model),
            "{ctx}: after the second repair"
        );
    }
    eprintln!("{total} crash points, {refused} refused until repaired again");
}
