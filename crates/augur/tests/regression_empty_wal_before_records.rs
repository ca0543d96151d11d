//! Issue 13 finding (`tests/stress_kill.rs`, session 9: "file of 0 bytes is shorter than the
//! 20-byte WAL header" at an open after a SIGKILL). File numbers are handed out in memory and
//! persisted with the next manifest edit; a compaction numbers its outputs as it writes them
//! and logs them at its end, while a memtable switch takes a higher number for its new WAL. A
//! kill inside that WAL's creation leaves it with 0 bytes while the manifest's next file
//! number is below it: the next open hands out the lower numbers again (its fresh WAL gets
//! records) and a later switch goes past the orphan, so a 0-byte WAL lies *before* WALs with
//! records, and the open refused the database.
//!
//! The contract: a WAL shorter than its header that the manifest does not record never held
//! a record (`LogWriter::create` syncs the header before the manifest records the WAL and
//! before any record is written to it or to any later WAL), so it is skipped wherever it
//! lies; one the manifest records lost its header to damage, and fails the open (issue 23,
//! `tests/regression_silent_loss.rs`).

mod common;

use augur::{Db, Options};
use common::wal_numbers;

#[test]
fn an_empty_wal_followed_by_one_with_records_is_skipped() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let options = || Options {
        background_threads: false,
        ..Options::default()
    };
    {
        let db = Db::open(&dir, options()).unwrap();
        db.put(b"k1", b"v1").unwrap();
        db.put(b"k2", b"v2").unwrap();
    }
    // A later session's WAL, with newer writes: made in a copy of the database, whose open
    // persists the first session's writes and logs the new one in a fresh WAL.
    let donor = tmp.path().join("donor");
    common::copy_dir(&dir, &donor);
    {
        let db = Db::open(&donor, options()).unwrap();
        db.put(b"k3", b"v3").unwrap();
    }
    let donor_wal = wal_numbers(&donor).last().copied().unwrap();
    // The state the SIGKILL loop left: a WAL of 0 bytes that the manifest never recorded
    // (its creation was interrupted, before the switch's manifest edit) lies before a WAL
    // with records (the later session's, newer than the first session's).
    let active = wal_numbers(&dir).last().copied().unwrap();
    let path = |n: u64| dir.join(format!("{n:06}.wal"));
    std::fs::write(path(active + 1), b"").unwrap();
    std::fs::copy(donor.join(format!("{donor_wal:06}.wal")), path(active + 2)).unwrap();
    let db = Db::open(&dir, options()).expect("an empty WAL before one with records");
    assert_eq!(db.get(b"k1").unwrap().as_deref(), Some(&b"v1"[..]));
    assert_eq!(db.get(b"k2").unwrap().as_deref(), Some(&b"v2"[..]));
    assert_eq!(db.get(b"k3").unwrap().as_deref(), Some(&b"v3"[..]));
}
