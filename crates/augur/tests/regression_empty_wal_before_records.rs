//! Issue 13 finding (`tests/stress_kill.rs`, session 9: "file of 0 bytes is shorter than the
//! 20-byte WAL header" at an open after a SIGKILL). File numbers are handed out in memory and
//! persisted with the next manifest edit; a compaction numbers its outputs as it writes them
//! and logs them at its end, while a memtable switch takes a higher number for its new WAL. A
//! kill inside that WAL's creation leaves it with 0 bytes while the manifest's next file
//! number is below it: the next open hands out the lower numbers again (its fresh WAL gets
//! records) and a later switch goes past the orphan, so a 0-byte WAL lies *before* WALs with
//! records, and the open refused the database.
//!
//! The contract: a WAL shorter than its header never held a record (`LogWriter::create`
//! syncs the header before any record is written to it or to any later WAL), so it is
//! skipped wherever it lies; losses of WAL content are caught by the manifest's live-WAL
//! checks, not by this file's length.

use augur::{Db, Options};
use std::path::Path;

fn wal_numbers(dir: &Path) -> Vec<u64> {
    let mut n: Vec<u64> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            name.strip_suffix(".wal")?.parse().ok()
        })
        .collect();
    n.sort_unstable();
    n
}

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
    // The state the SIGKILL loop left: the WAL the manifest names as the log holds nothing
    // (0 bytes: its creation was interrupted) and the writes are in the next one.
    let active = wal_numbers(&dir).last().copied().unwrap();
    let path = |n: u64| dir.join(format!("{n:06}.wal"));
    std::fs::rename(path(active), path(active + 1)).unwrap();
    std::fs::write(path(active), b"").unwrap();
    let db = Db::open(&dir, options()).expect("an empty WAL before one with records");
    assert_eq!(db.get(b"k1").unwrap().as_deref(), Some(&b"v1"[..]));
    assert_eq!(db.get(b"k2").unwrap().as_deref(), Some(&b"v2"[..]));
}
