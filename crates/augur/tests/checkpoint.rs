//! `Db::checkpoint` (issue 44, item 1): a consistent, openable copy made while writes
//! continue, hard-linked where it can be.
//!
//! - a checkpoint opens and holds exactly what the model says, its files linked (same
//!   inodes) or, when asked, copied; both databases then live on independently;
//! - taken while a writer thread writes (random puts, deletes and overwrites, inline and
//!   separated values, flushes, compactions and GC running), it holds exactly the state
//!   after a prefix `p` of the writer's operations, with `p` at least the operations
//!   acknowledged before the call and at most those acknowledged after it returned, plus
//!   the one in flight (a differential check against a `BTreeMap` replay);
//! - value-log segments: after GC, with GC running beside it, and with the source's GC
//!   deleting a segment the checkpoint linked;
//! - FLSM, expiring values, and the refusals (an existing directory, one inside the
//!   database, a read-only database).

mod common;

use augur::{CheckpointOptions, Db, Error, ManualClock, Options};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// Everything `db` holds, in key order.
fn contents(db: &Db) -> Model {
    db.iter().map(|r| r.expect("scan")).collect()
}

/// Opens `dir` with `opts`, checks every checksum and returns its contents.
fn open_and_read(dir: &Path, opts: Options) -> Model {
    let db = Db::open(dir, opts).expect("open the checkpoint");
    db.verify().expect("verify the checkpoint");
    contents(&db)
}

/// Small memtables and segments, every value of 100 bytes or more separated: flushes,
/// compactions, rollovers and GC all happen in small workloads.
fn busy_options() -> Options {
    Options {
        memtable_size_bytes: 64 << 10,
        value_separation_threshold: 100,
        value_log_segment_bytes: 256 << 10,
        value_log_gc_ratio: 0.3,
        target_file_size_bytes: 64 << 10,
        l1_max_bytes: 256 << 10,
        ..Options::default()
    }
}

/// Operation `i` of the writer of `seed`: a put (inline or separated value) or a delete
/// of one of 500 keys. Values embed `i`, so every state names the operations it came from.
fn op(seed: u64, i: u64) -> (Vec<u8>, Option<Vec<u8>>) {
    let mut rng = StdRng::seed_from_u64(seed ^ (i << 20));
    let key = format!("key{:05}", rng.gen_range(0..500)).into_bytes();
    if rng.gen_ratio(1, 7) {
        return (key, None);
    }
    let len = if rng.gen_bool(0.5) { 20 } else { 300 };
    let mut value = format!("v{i}-").into_bytes();
    value.resize(len, b'a' + (i % 26) as u8);
    (key, Some(value))
}

fn apply(model: &mut Model, (key, value): (Vec<u8>, Option<Vec<u8>>)) {
    match value {
        Some(v) => model.insert(key, v),
        None => model.remove(&key),
    };
}

fn write_op(db: &Db, (key, value): (Vec<u8>, Option<Vec<u8>>)) {
    match value {
        Some(v) => db.put(key, v).expect("put"),
        None => db.delete(key).expect("delete"),
    }
}

/// The model after operations `0..n` of `seed`.
fn model_after(seed: u64, n: u64) -> Model {
    let mut m = Model::new();
    for i in 0..n {
        apply(&mut m, op(seed, i));
    }
    m
}

/// The inode of `path`, `None` when it does not exist.
fn inode(path: &Path) -> Option<u64> {
    std::fs::metadata(path).ok().map(|m| m.ino())
}

#[test]
fn checkpoint_opens_with_the_data_its_files_linked_and_both_live_on() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, cp) = (tmp.path().join("db"), tmp.path().join("out/cp"));
    let db = Db::open(&src, busy_options()).unwrap();
    for i in 0..3_000 {
        write_op(&db, op(7, i));
    }
    let info = db.checkpoint(&cp).unwrap();
    let expected = model_after(7, 3_000);
    assert_eq!(info.seqno, 3_000, "one seqno per write");
    assert!(info.linked_files > 1, "{info:?}");
    assert_eq!(info.copied_files, 0, "{info:?}");
    assert!(
        info.written_bytes < 4096,
        "only the manifest and CURRENT: {info:?}"
    );
    let names = common::listing(&cp);
    assert!(
        names.keys().all(|n| n.ends_with(".sst")
            || n.ends_with(".vlog")
            || n.starts_with("MANIFEST-")
            || n == "CURRENT"),
        "no WAL, LOCK or temporary file: {names:?}"
    );
    assert!(names.keys().any(|n| n.ends_with(".vlog")), "{names:?}");
    // Background compactions may have removed some of the source's names since.
    let mut shared = 0;
    for name in names
        .keys()
        .filter(|n| n.ends_with(".sst") || n.ends_with(".vlog"))
    {
        if let Some(source) = inode(&src.join(name)) {
            assert_eq!(inode(&cp.join(name)), Some(source), "{name} is a link");
            shared += 1;
        }
    }
    // Every name the source still has is the same file; on a loaded machine compactions and
    // GC may have removed them all by now, so the count of links comes from the call.
    assert!(
        info.linked_files > 0 && info.copied_files == 0,
        "{info:?} ({shared} still shared)"
    );
    assert!(!tmp.path().join("out/cp.augur-tmp").exists());
    assert_eq!(contents(&db), expected);
    assert_eq!(open_and_read(&cp, busy_options()), expected);

    // Both go on independently: writes, compactions and GC in each leave the other intact.
    let copy = Db::open(&cp, busy_options()).unwrap();
    for i in 3_000..5_000 {
        write_op(&db, op(7, i));
        write_op(&copy, op(8, i));
    }
    for d in [&db, &copy] {
        d.flush().unwrap();
        d.compact_range(None, None).unwrap();
        while d.run_value_log_gc().unwrap().segment.is_some() {}
    }
    let mut copy_model = expected.clone();
    (3_000..5_000).for_each(|i| apply(&mut copy_model, op(8, i)));
    assert_eq!(contents(&db), model_after(7, 5_000));
    assert_eq!(contents(&copy), copy_model);
    drop((db, copy));
    assert_eq!(open_and_read(&src, busy_options()), model_after(7, 5_000));
    assert_eq!(open_and_read(&cp, busy_options()), copy_model);
}

#[test]
fn an_empty_database_checkpoints_to_an_empty_database() {
    let tmp = tempfile::tempdir().unwrap();
    let db = Db::open(tmp.path().join("db"), Options::default()).unwrap();
    let info = db.checkpoint(tmp.path().join("cp")).unwrap();
    assert_eq!(
        (info.seqno, info.linked_files, info.copied_files),
        (0, 0, 0)
    );
    let names: Vec<String> = common::listing(&tmp.path().join("cp"))
        .into_keys()
        .collect();
    assert_eq!(names.len(), 2, "a manifest and CURRENT: {names:?}");
    assert!(open_and_read(&tmp.path().join("cp"), Options::default()).is_empty());
}

#[test]
fn checkpoint_copies_every_file_when_asked() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, cp) = (tmp.path().join("db"), tmp.path().join("cp"));
    let db = Db::open(&src, busy_options()).unwrap();
    for i in 0..2_000 {
        write_op(&db, op(3, i));
    }
    let info = db
        .checkpoint_with(&cp, &CheckpointOptions { link_files: false })
        .unwrap();
    assert_eq!(info.linked_files, 0);
    assert!(info.copied_files > 1);
    let copied: u64 = common::listing(&cp).values().sum();
    assert_eq!(
        info.written_bytes, copied,
        "every byte of the copy was written"
    );
    for name in common::listing(&cp).keys().filter(|n| n.ends_with(".sst")) {
        assert_ne!(inode(&cp.join(name)), inode(&src.join(name)));
        assert!(inode(&cp.join(name)).is_some());
    }
    assert_eq!(open_and_read(&cp, busy_options()), model_after(3, 2_000));
}

#[test]
fn an_existing_directory_one_inside_the_database_and_a_read_only_database_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("db");
    let db = Db::open(&src, Options::default()).unwrap();
    db.put("k", "v").unwrap();
    std::fs::create_dir(tmp.path().join("taken")).unwrap();
    let e = db.checkpoint(tmp.path().join("taken")).unwrap_err();
    assert!(
        matches!(&e, Error::InvalidArgument(m) if m.contains("already exists")),
        "{e}"
    );
    let e = db.checkpoint(src.join("inside")).unwrap_err();
    assert!(
        matches!(&e, Error::InvalidArgument(m) if m.contains("inside")),
        "{e}"
    );
    drop(db);
    let ro = Db::open(
        &src,
        Options {
            read_only: true,
            ..Options::default()
        },
    )
    .unwrap();
    let e = ro.checkpoint(tmp.path().join("ro")).unwrap_err();
    assert!(matches!(e, Error::ReadOnly { .. }), "{e}");
    assert!(!tmp.path().join("ro").exists());
}

/// Runs a writer thread of `seed` on `db` while `checkpoints` checkpoints are taken into
/// `root`, with value-log GC called in a loop on a third thread when `gc`; checks each
/// checkpoint against the prefix bounds of the module doc. Returns the writes' count.
fn checkpoints_during_writes(db: &Arc<Db>, root: &Path, seed: u64, checkpoints: u32, gc: bool) {
    let acked = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (db, acked, stop) = (db.clone(), acked.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut i = 0;
            while !stop.load(Ordering::Acquire) {
                write_op(&db, op(seed, i));
                i += 1;
                acked.store(i, Ordering::Release);
            }
        })
    };
    let collector = gc.then(|| {
        let (db, stop) = (db.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut collected = 0;
            while !stop.load(Ordering::Acquire) {
                if db.run_value_log_gc().expect("gc").segment.is_some() {
                    collected += 1;
                }
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
            collected
        })
    });
    let mut taken = Vec::new();
    for c in 0..checkpoints {
        while acked.load(Ordering::Acquire) < u64::from(c + 1) * 1_500 {
            std::thread::yield_now();
        }
        let dir = root.join(format!("cp{c}"));
        let before = acked.load(Ordering::Acquire);
        let info = db.checkpoint(&dir).expect("checkpoint");
        let after = acked.load(Ordering::Acquire);
        taken.push((dir, before, after, info.seqno));
    }
    stop.store(true, Ordering::Release);
    writer.join().unwrap();
    if let Some(c) = collector {
        let collected = c.join().unwrap();
        eprintln!("GC collected {collected} segments beside the checkpoints");
    }
    for (dir, before, after, seqno) in taken {
        let got = open_and_read(&dir, busy_options());
        // One seqno per operation: the checkpoint's seqno is its prefix.
        assert!(
            (before..=after + 1).contains(&seqno),
            "{}: seqno {seqno} outside [{before}, {}]",
            dir.display(),
            after + 1
        );
        assert_eq!(
            got,
            model_after(seed, seqno),
            "{}: not the state after the first {seqno} operations",
            dir.display()
        );
    }
}

#[test]
fn checkpoints_taken_while_a_writer_writes_hold_a_prefix_of_its_writes() {
    let tmp = tempfile::tempdir().unwrap();
    let db = Arc::new(Db::open(tmp.path().join("db"), busy_options()).unwrap());
    checkpoints_during_writes(&db, tmp.path(), 11, 6, false);
}

#[test]
fn checkpoints_taken_while_gc_runs_hold_a_prefix_and_every_segment_they_need() {
    let tmp = tempfile::tempdir().unwrap();
    let db = Arc::new(Db::open(tmp.path().join("db"), busy_options()).unwrap());
    checkpoints_during_writes(&db, tmp.path(), 12, 6, true);
}

#[test]
fn checkpoint_after_value_log_gc_and_a_segment_the_source_deletes_later() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, cp) = (tmp.path().join("db"), tmp.path().join("cp"));
    let opts = Options {
        value_log_gc_ratio: 1.0, // GC only when asked
        ..busy_options()
    };
    let db = Db::open(&src, opts.clone()).unwrap();
    let mut model = Model::new();
    for round in 0..4u64 {
        for k in 0..400u64 {
            let v = vec![b'a' + round as u8; 400];
            db.put(format!("k{k:04}"), &v).unwrap();
            model.insert(format!("k{k:04}").into_bytes(), v);
        }
        db.flush().unwrap();
    }
    db.compact_range(None, None).unwrap();
    let report = db.run_value_log_gc().unwrap();
    assert!(
        report.segment.is_some(),
        "GC collected a segment: {report:?}"
    );
    db.checkpoint(&cp).unwrap();
    let linked_segments: Vec<String> = common::listing(&cp)
        .into_keys()
        .filter(|n| n.ends_with(".vlog"))
        .collect();
    assert!(!linked_segments.is_empty());
    // The source overwrites everything and collects every segment: the names it removes
    // include segments the checkpoint still holds.
    for k in 0..400u64 {
        db.put(format!("k{k:04}"), vec![b'z'; 400]).unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    while db.run_value_log_gc().unwrap().segment.is_some() {}
    let removed = linked_segments
        .iter()
        .filter(|n| !src.join(n).exists())
        .count();
    assert!(
        removed > 0,
        "the source removed a segment the checkpoint links"
    );
    drop(db);
    assert_eq!(open_and_read(&cp, opts.clone()), model);
    // The checkpoint's own GC works on its copy.
    let copy = Db::open(&cp, opts).unwrap();
    for k in 0..400u64 {
        copy.put(format!("k{k:04}"), "small").unwrap();
        model.insert(format!("k{k:04}").into_bytes(), b"small".to_vec());
    }
    copy.flush().unwrap();
    copy.compact_range(None, None).unwrap();
    while copy.run_value_log_gc().unwrap().segment.is_some() {}
    copy.verify().unwrap();
    assert_eq!(contents(&copy), model);
}

#[test]
fn flsm_checkpoint_keeps_its_guards_and_data() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, cp) = (tmp.path().join("db"), tmp.path().join("cp"));
    let opts = common::flsm_options(busy_options());
    let db = Db::open(&src, opts.clone()).unwrap();
    for i in 0..6_000 {
        write_op(&db, op(21, i));
    }
    db.wait_for_compactions().unwrap();
    let guards = db.guards();
    db.checkpoint(&cp).unwrap();
    let copy = Db::open(&cp, opts).unwrap();
    copy.verify().unwrap();
    assert_eq!(copy.guards(), guards);
    assert_eq!(contents(&copy), model_after(21, 6_000));
}

#[test]
fn expiring_values_keep_their_expiry_in_the_checkpoint() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, cp) = (tmp.path().join("db"), tmp.path().join("cp"));
    let clock = Arc::new(ManualClock::new(1_000_000));
    let opts = Options {
        clock: clock.clone(),
        ..busy_options()
    };
    let db = Db::open(&src, opts.clone()).unwrap();
    for i in 0..200u64 {
        db.put_expiring(format!("e{i:03}"), "soon", 1_000_000 + 1_000 + i)
            .unwrap();
        db.put(format!("p{i:03}"), "forever").unwrap();
    }
    db.checkpoint(&cp).unwrap();
    let copy = Db::open(&cp, opts).unwrap();
    assert_eq!(
        copy.get_with_expiry("e007").unwrap().unwrap().expire_at,
        Some(1_001_007)
    );
    clock.advance(1_100);
    assert_eq!(copy.get("e050").unwrap(), None);
    assert_eq!(copy.get("e150").unwrap().as_deref(), Some(&b"soon"[..]));
    assert_eq!(contents(&copy).len(), 200 + 99);
}
