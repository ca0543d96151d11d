//! Regression tests of issue 40, finding 1: a database whose writes are all in its WAL (it
//! never flushed) lost its CURRENT file, and the next open started an empty database over
//! it, rewriting the WAL, with no error. CURRENT is written at creation before any other
//! file but the first manifest and is only ever replaced by a rename, so a directory
//! holding WALs, tables, value-log segments or later manifests without CURRENT is a
//! damaged database: every open refuses it naming CURRENT and changes nothing on disk.

mod common;

use augur::{Db, Error, Options};
use common::listing;
use std::path::Path;

fn key(i: u32) -> Vec<u8> {
    format!("k{i:07}").into_bytes()
}

fn value(i: u32) -> Vec<u8> {
    let mut v = format!("v{i}").into_bytes();
    // Every fourth value is separated into the value log.
    if i.is_multiple_of(4) {
        v.resize(200, b'x');
    }
    v
}

const KEYS: u32 = 2_000;

/// A database whose writes are all in its WAL (and the value log): never flushed.
fn wal_only(dir: &Path) {
    let db = Db::open(
        dir,
        Options {
            value_separation_threshold: 100,
            ..Options::default()
        },
    )
    .expect("open");
    for i in 0..KEYS {
        db.put(key(i), value(i)).expect("put");
    }
    db.sync().expect("sync");
    drop(db);
    let names = listing(dir);
    assert!(
        !names.keys().any(|n| n.ends_with(".sst")),
        "the database was flushed: {names:?}"
    );
}

fn assert_refused(e: &Error, dir: &Path) {
    match e {
        Error::Corruption { file, reason, .. } => {
            assert_eq!(file, &dir.join("CURRENT"), "{e}");
            assert!(reason.contains("damaged"), "{e}");
            assert!(reason.contains(".wal"), "the message names the files: {e}");
        }
        other => panic!("not a corruption naming CURRENT: {other}"),
    }
}

#[test]
fn missing_current_on_a_wal_only_database_is_refused_by_every_open() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("db");
    wal_only(&dir);
    let current = std::fs::read(dir.join("CURRENT")).expect("CURRENT");
    std::fs::remove_file(dir.join("CURRENT")).expect("rm CURRENT");
    let before = listing(&dir);

    // A read-write open that may create (the CLI's `put`, Python's `augur.open()`).
    let e = Db::open(&dir, Options::default()).expect_err("created over the data");
    assert_refused(&e, &dir);
    // An open that may not create, and a read-only one: damaged, not "no database".
    let no_create = Options {
        create_if_missing: false,
        ..Options::default()
    };
    assert_refused(&Db::open(&dir, no_create).expect_err("opened"), &dir);
    let read_only = Options {
        read_only: true,
        ..Options::default()
    };
    assert_refused(&Db::open(&dir, read_only).expect_err("opened"), &dir);
    assert_refused(&Db::exists(&dir).expect_err("exists"), &dir);
    assert_eq!(
        listing(&dir),
        before,
        "a refused open changed the directory"
    );

    // CURRENT put back: every write is there.
    std::fs::write(dir.join("CURRENT"), current).expect("restore CURRENT");
    assert!(Db::exists(&dir).expect("exists"));
    let db = Db::open(&dir, Options::default()).expect("open");
    for i in 0..KEYS {
        assert_eq!(db.get(key(i)).expect("get"), Some(value(i)), "key {i}");
    }
}

#[test]
fn the_refusal_names_the_newest_manifest() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("db");
    wal_only(&dir);
    let current = std::fs::read_to_string(dir.join("CURRENT")).expect("CURRENT");
    std::fs::remove_file(dir.join("CURRENT")).expect("rm CURRENT");
    let e = Db::open(&dir, Options::default()).expect_err("opened");
    assert!(
        e.to_string().contains(current.trim()),
        "the hint names {}: {e}",
        current.trim()
    );
}

#[test]
fn each_kind_of_database_file_without_current_is_refused() {
    let tmp = tempfile::tempdir().expect("tempdir");
    for name in ["000007.wal", "000008.sst", "000002.vlog", "MANIFEST-000004"] {
        let dir = tmp.path().join(name);
        std::fs::create_dir_all(&dir).expect("mkdir");
        std::fs::write(dir.join(name), b"x").expect("write");
        let e = Db::open(&dir, Options::default()).expect_err(name);
        assert!(
            matches!(&e, Error::Corruption { file, .. } if file == &dir.join("CURRENT")),
            "{name}: {e}"
        );
        assert!(e.to_string().contains(name), "{name}: {e}");
        assert_eq!(std::fs::read(dir.join(name)).expect("read"), b"x");
    }
}

#[test]
fn an_interrupted_creation_is_still_replaced() {
    // Creation writes MANIFEST-000001 (and CURRENT.tmp) before CURRENT: a crash there
    // leaves no data, and the next open creates the database.
    let tmp = tempfile::tempdir().expect("tempdir");
    let interrupted = tmp.path().join("interrupted");
    std::fs::create_dir_all(&interrupted).expect("mkdir");
    // (Its bytes do not matter: nothing reads a manifest CURRENT does not name.)
    std::fs::write(interrupted.join("MANIFEST-000001"), b"torn").expect("manifest");
    std::fs::write(interrupted.join("CURRENT.tmp"), b"MANIFEST-000001\n").expect("tmp");
    assert!(!Db::exists(&interrupted).expect("exists"));
    let db = Db::open(&interrupted, Options::default()).expect("create over leftovers");
    db.put(b"a", b"b").expect("put");
    drop(db);
    let db = Db::open(&interrupted, Options::default()).expect("reopen");
    assert_eq!(db.get(b"a").expect("get"), Some(b"b".to_vec()));
    // No directory, an empty one: no database, not an error.
    assert!(!Db::exists(tmp.path().join("nothing")).expect("exists"));
    std::fs::create_dir_all(tmp.path().join("empty")).expect("mkdir");
    assert!(!Db::exists(tmp.path().join("empty")).expect("exists"));
}
