//! Regression test of issue 40, finding 2: a table file replaced by another valid table of
//! the same database passed every checksum, so the open accepted it, scans silently
//! returned the other table's keys, and `verify` said OK. The manifest records each table's
//! size, entry count and key range; an open compares them with the file and refuses a
//! mismatch naming the file.

mod common;

use augur::{Db, Error, Options};
use common::files_with_extension;
use std::path::{Path, PathBuf};

fn options() -> Options {
    Options {
        background_threads: false,
        ..Options::default()
    }
}

/// `load; compact; load; flush`: one large table and one small one.
fn two_tables(dir: &Path) -> (PathBuf, PathBuf) {
    let db = Db::open(dir, options()).expect("open");
    for i in 0..10_000u32 {
        db.put(format!("k{i:07}"), format!("v{i}")).expect("put");
    }
    db.compact_range(None, None).expect("compact");
    for i in 0..10u32 {
        db.put(format!("z{i:07}"), format!("w{i}")).expect("put");
    }
    db.flush().expect("flush");
    drop(db);
    let mut t = files_with_extension(dir, "sst");
    assert_eq!(t.len(), 2, "{t:?}");
    t.sort_by_key(|p| std::fs::metadata(p).expect("meta").len());
    (t[1].clone(), t[0].clone())
}

fn assert_names(e: &Error, file: &Path) {
    match e {
        Error::Corruption {
            file: f, reason, ..
        } => {
            assert_eq!(f, file, "{e}");
            assert!(reason.contains("manifest records"), "{e}");
        }
        other => panic!("not a corruption naming {}: {other}", file.display()),
    }
}

#[test]
fn a_table_replaced_by_another_valid_table_is_refused() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("db");
    let (large, small) = two_tables(&dir);
    std::fs::copy(&small, &large).expect("swap");

    let e = Db::open(&dir, options()).expect_err("opened a swapped table");
    assert_names(&e, &large);
    let read_only = Options {
        read_only: true,
        ..options()
    };
    assert_names(&Db::open(&dir, read_only).expect_err("opened"), &large);
}

#[test]
fn a_table_replaced_by_one_of_the_same_size_is_refused() {
    // Same size, other keys: the entry count or the key range tells them apart.
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("db");
    let db = Db::open(&dir, options()).expect("open");
    for prefix in ["a", "b"] {
        for i in 0..500u32 {
            db.put(format!("{prefix}{i:07}"), format!("v{i:05}"))
                .expect("put");
        }
        db.flush().expect("flush");
    }
    drop(db);
    let t = files_with_extension(&dir, "sst");
    assert_eq!(t.len(), 2, "{t:?}");
    let len = |p: &Path| std::fs::metadata(p).expect("meta").len();
    assert_eq!(
        len(&t[0]),
        len(&t[1]),
        "the test needs two tables of one size"
    );
    std::fs::copy(&t[1], &t[0]).expect("swap");
    assert_names(&Db::open(&dir, options()).expect_err("opened"), &t[0]);
}
