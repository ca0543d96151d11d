//! Regression tests of issue 40, finding 8: after a clean close, damage to the manifest's
//! last record looked like a crash's torn append and was dropped without a word. A clean
//! close now rewrites the manifest whole as one record marked `closed_cleanly`; nobody
//! appends to it, so an open refuses anything after that record, and a damaged record
//! leaves no edit to recover from.

use augur::{Db, Error, Options};
use std::path::{Path, PathBuf};

fn manifest(dir: &Path) -> PathBuf {
    let name = std::fs::read_to_string(dir.join("CURRENT")).expect("CURRENT");
    dir.join(name.trim())
}

/// A database with tables, a WAL with writes and value-log entries, cleanly closed.
fn build(dir: &Path) {
    let db = Db::open(
        dir,
        Options {
            value_separation_threshold: 64,
            ..Options::default()
        },
    )
    .expect("open");
    for i in 0..500u32 {
        db.put(format!("k{i:05}"), vec![b'v'; 10 + (i as usize % 100)])
            .expect("put");
    }
    db.flush().expect("flush");
    for i in 500..600u32 {
        db.put(format!("k{i:05}"), b"wal").expect("put");
    }
    drop(db);
}

fn assert_refused(dir: &Path, manifest: &Path) {
    match Db::open(dir, Options::default()) {
        Err(Error::Corruption { file, .. }) => assert_eq!(&file, manifest),
        Err(other) => panic!("not a corruption naming the manifest: {other}"),
        Ok(_) => panic!("opened a database whose manifest was damaged after a clean close"),
    }
}

#[test]
fn a_torn_looking_manifest_tail_after_a_clean_close_is_refused() {
    let tmp = tempfile::tempdir().expect("tempdir");
    for cut in [1u64, 3, 8, 20] {
        let dir = tmp.path().join(format!("cut{cut}"));
        build(&dir);
        let m = manifest(&dir);
        let len = std::fs::metadata(&m).expect("meta").len();
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(&m)
            .expect("open manifest");
        file.set_len(len - cut).expect("truncate");
        drop(file);
        assert_refused(&dir, &m);
    }
}

#[test]
fn bytes_appended_to_a_cleanly_closed_manifest_are_refused() {
    let tmp = tempfile::tempdir().expect("tempdir");
    // A partial record (a length running past the end), zeros, and a whole valid record
    // (a copy of the manifest's own).
    for (i, tail) in [
        vec![0x12, 0x34, 0x56, 0x78, 0xff, 0x00, 0x00, 0x00, 0x01],
        vec![0; 64],
    ]
    .into_iter()
    .enumerate()
    {
        let dir = tmp.path().join(format!("tail{i}"));
        build(&dir);
        let m = manifest(&dir);
        let mut bytes = std::fs::read(&m).expect("read");
        bytes.extend_from_slice(&tail);
        std::fs::write(&m, bytes).expect("write");
        assert_refused(&dir, &m);
    }
    let dir = tmp.path().join("copy");
    build(&dir);
    let m = manifest(&dir);
    let mut bytes = std::fs::read(&m).expect("read");
    // The file header is 20 bytes (docs/format/wal.md); the rest is the one record.
    let record = bytes[20..].to_vec();
    bytes.extend_from_slice(&record);
    std::fs::write(&m, bytes).expect("write");
    assert_refused(&dir, &m);
}

#[test]
fn a_cleanly_closed_database_reopens_and_its_manifest_grows_again() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("db");
    build(&dir);
    for round in 0..3u32 {
        let db = Db::open(&dir, Options::default()).expect("open");
        assert_eq!(db.get("k00599").expect("get"), Some(b"wal".to_vec()));
        db.put(format!("round{round}"), b"x").expect("put");
        db.flush().expect("flush");
        drop(db);
        let manifests = std::fs::read_dir(&dir)
            .expect("read_dir")
            .filter(|e| {
                e.as_ref()
                    .expect("entry")
                    .file_name()
                    .to_string_lossy()
                    .starts_with("MANIFEST-")
            })
            .count();
        assert_eq!(manifests, 1, "the old manifests are removed");
    }
    let db = Db::open(&dir, Options::default()).expect("open");
    for round in 0..3u32 {
        assert_eq!(
            db.get(format!("round{round}")).expect("get"),
            Some(b"x".to_vec())
        );
    }
    db.verify().expect("verify");
}
