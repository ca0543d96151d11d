//! The WAL written through a mapping (`fs/mapped_append.rs`, docs/format/wal.md
//! "Preallocation"): while written, a WAL is preallocated in 1 MiB windows, zero past its
//! records, and a crash of the process leaves it that way. These tests open "crash images":
//! copies of a database directory taken while its `Db` is still open (what a `SIGKILL` leaves:
//! the page cache's bytes, the WAL untrimmed).

mod common;

use augur::{Db, Options};
use common::{copy_dir, wal_numbers};
use std::path::{Path, PathBuf};

fn options() -> Options {
    Options {
        background_threads: false,
        ..Options::default()
    }
}

fn wal_path(dir: &Path, n: u64) -> PathBuf {
    dir.join(format!("{n:06}.wal"))
}

#[test]
fn a_killed_writer_leaves_a_zero_tail_that_ends_the_log() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let image = tmp.path().join("image");
    let db = Db::open(&dir, options()).unwrap();
    for i in 0..1000u32 {
        db.put(format!("key{i:05}").as_bytes(), [i as u8; 100])
            .unwrap();
    }
    let active = *wal_numbers(&dir).last().unwrap();
    let written = std::fs::read(wal_path(&dir, active)).unwrap();
    assert_eq!(
        written.len() % (1 << 20),
        0,
        "the WAL being written is preallocated in whole windows"
    );
    assert_eq!(written.last(), Some(&0));
    copy_dir(&dir, &image); // the crash image
    drop(db);
    // The clean close trimmed the WAL to its records.
    let trimmed = std::fs::metadata(wal_path(&dir, active)).unwrap().len();
    assert!(trimmed < written.len() as u64 && trimmed > 1000 * 100);

    let db = Db::open(&image, options()).expect("a zero tail is a torn tail");
    for i in 0..1000u32 {
        assert_eq!(
            db.get(format!("key{i:05}").as_bytes()).unwrap().as_deref(),
            Some(&[i as u8; 100][..]),
            "key{i:05}"
        );
    }
}

#[test]
fn a_new_wal_without_records_does_not_make_the_old_ones_zeros_synced_bytes() {
    // A memtable switch syncs the old WAL, creates the new one (preallocated: header and
    // zeros) and then records the old one's synced size in the manifest. A kill between the
    // last two steps leaves the old WAL untrimmed and recorded as active, followed by a WAL
    // longer than its header that holds no record. The old WAL is still the newest with
    // records: its zero tail is a torn tail, not damage inside synced bytes.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let image = tmp.path().join("image");
    let db = Db::open(&dir, options()).unwrap();
    db.put(b"k1", b"v1").unwrap();
    db.put(b"k2", b"v2").unwrap();
    db.sync().unwrap();
    copy_dir(&dir, &image); // the crash image
    drop(db);
    let active = *wal_numbers(&image).last().unwrap();
    let old = std::fs::read(wal_path(&image, active)).unwrap();
    let mut fresh = old[..20].to_vec(); // the file header (the same for every WAL)
    fresh.resize(1 << 20, 0);
    std::fs::write(wal_path(&image, active + 1), &fresh).unwrap();

    let db = Db::open(&image, options()).expect("the old WAL's zeros were never synced data");
    assert_eq!(db.get(b"k1").unwrap().as_deref(), Some(&b"v1"[..]));
    assert_eq!(db.get(b"k2").unwrap().as_deref(), Some(&b"v2"[..]));
}

#[test]
fn a_wal_killed_before_its_header_is_skipped_unless_recorded() {
    // `create_log` preallocates before `LogWriter::create` copies the header in: a kill in
    // between leaves a WAL of zeros. Unrecorded, it never held a record and is skipped.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    {
        let db = Db::open(&dir, options()).unwrap();
        db.put(b"k1", b"v1").unwrap();
    }
    let active = *wal_numbers(&dir).last().unwrap();
    std::fs::write(wal_path(&dir, active + 1), vec![0u8; 1 << 20]).unwrap();
    let db = Db::open(&dir, options()).expect("a WAL of zeros the manifest never recorded");
    assert_eq!(db.get(b"k1").unwrap().as_deref(), Some(&b"v1"[..]));
    drop(db);

    // Recorded (its header was synced before the manifest named it), a zeroed header is
    // damage: the open fails naming the WAL, it does not skip its writes.
    let image = tmp.path().join("image");
    let db = Db::open(&dir, options()).unwrap();
    db.put(b"k2", b"v2").unwrap();
    copy_dir(&dir, &image); // the crash image
    drop(db);
    let active = *wal_numbers(&image).last().unwrap();
    let path = wal_path(&image, active);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[..20].fill(0);
    std::fs::write(&path, bytes).unwrap();
    let err = Db::open(&image, options()).expect_err("a recorded WAL lost its header");
    assert!(
        err.to_string().contains(&format!("{active:06}.wal")),
        "{err}"
    );
}
