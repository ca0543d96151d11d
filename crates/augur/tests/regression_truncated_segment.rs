//! Regression tests of issue 40, finding 3: a truncated value-log segment looked emptier
//! than it was, so GC (automatic, after any open) measured its garbage against the shorter
//! file, deleted it and recorded it as deleted, after which `verify` said OK while reads of
//! its values failed; a segment truncated to its header was removed by the next open the
//! same way. The manifest now records each sealed segment's final size and every open
//! checks it, and `verify` refuses a live pointer into a deleted segment.

mod common;

use augur::{Db, Error, Options};
use common::files_with_extension;
use std::path::Path;

const KEYS: u32 = 120;

fn options() -> Options {
    Options {
        background_threads: false,
        value_separation_threshold: 64,
        value_log_segment_bytes: 8 << 10,
        value_log_gc_ratio: 0.2,
        ..Options::default()
    }
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

fn value(i: u32, round: u32) -> Vec<u8> {
    let mut v = format!("r{round}.{i}|").into_bytes();
    v.resize(200, b'a' + (i % 26) as u8);
    v
}

/// A database with several sealed segments, the first of which holds garbage (its first
/// keys were overwritten and compacted), cleanly closed.
fn build(dir: &Path) {
    let db = Db::open(dir, options()).expect("open");
    for i in 0..KEYS {
        db.put(key(i), value(i, 0)).expect("put");
    }
    db.flush().expect("flush");
    for i in 0..10 {
        db.put(key(i), value(i, 1)).expect("put");
    }
    db.compact_range(None, None).expect("compact");
    drop(db);
    assert!(
        files_with_extension(dir, "vlog").len() >= 4,
        "{:?}",
        files_with_extension(dir, "vlog")
    );
}

fn assert_names(e: &Error, file: &Path) {
    match e {
        Error::Corruption { file: f, .. } => assert_eq!(f, file, "{e}"),
        other => panic!("not a corruption naming {}: {other}", file.display()),
    }
}

/// Opens `dir` and, if that works, runs GC and verify and reads every key: the damage must
/// be reported, and never turn into a clean `verify` with keys that cannot be read.
fn open_gc_verify_read(dir: &Path, damaged: &Path) {
    let db = match Db::open(dir, options()) {
        Ok(db) => db,
        Err(e) => return assert_names(&e, damaged),
    };
    let _ = db.run_value_log_gc();
    let verified = db.verify();
    let mut unreadable = Vec::new();
    for i in 0..KEYS {
        match db.get(key(i)) {
            Ok(Some(v)) => assert_eq!(v, value(i, u32::from(i < 10)), "key {i}"),
            other => unreadable.push((i, format!("{other:?}"))),
        }
    }
    assert!(
        verified.is_err() || unreadable.is_empty(),
        "verify said {verified:?} while keys cannot be read: {unreadable:?}"
    );
    panic!(
        "the open accepted a truncated segment (verify: {verified:?}, unreadable: {unreadable:?})"
    );
}

#[test]
fn a_truncated_sealed_segment_is_refused_before_gc_can_delete_it() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("db");
    build(&dir);
    let first = files_with_extension(&dir, "vlog")[0].clone();
    let len = std::fs::metadata(&first).expect("meta").len();
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&first)
        .expect("open segment");
    file.set_len(len / 2).expect("truncate");
    drop(file);
    open_gc_verify_read(&dir, &first);
    // A read-only open refuses it too, and nothing was removed.
    let read_only = Options {
        read_only: true,
        ..options()
    };
    assert_names(&Db::open(&dir, read_only).expect_err("opened"), &first);
    assert!(first.exists());
}

#[test]
fn a_segment_truncated_to_its_header_is_refused_not_removed() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("db");
    build(&dir);
    // A sealed segment without garbage (the second), truncated to its 24-byte header.
    let second = files_with_extension(&dir, "vlog")[1].clone();
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&second)
        .expect("open segment");
    file.set_len(24).expect("truncate");
    drop(file);
    open_gc_verify_read(&dir, &second);
    assert!(second.exists(), "the open removed the segment");
}

#[test]
fn a_whole_database_passes_and_its_segments_keep_their_sizes() {
    // The same build, undamaged: opens, GC and verify work, and a reopen after GC (which
    // deletes segments and records their deletion) still finds every recorded size.
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("db");
    build(&dir);
    for _ in 0..2 {
        let db = Db::open(&dir, options()).expect("open");
        db.run_value_log_gc().expect("gc");
        db.verify().expect("verify");
        for i in 0..KEYS {
            assert_eq!(
                db.get(key(i)).expect("get"),
                Some(value(i, u32::from(i < 10)))
            );
        }
    }
}
