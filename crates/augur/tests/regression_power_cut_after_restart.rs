//! Issue 13 finding (`augur stress --faults` with power cuts, session 9): a process that
//! stops without syncing (a clean close hands the value log and WAL to the OS; a crash leaves
//! them in its cache) is followed by an open that replays the WAL into a synced L0 table.
//! That table's value pointers reach into the previous process's value-log segment, whose
//! tail the OS had never written to disk. A power cut then kept the table and lost the tail:
//! every read of such a key failed with "value pointer points past the end of the segment".
//!
//! The contract: everything an open finds is durable once the open returns (it persisted
//! the WALs' content), so a power cut right after it must keep it all.

mod common;

use augur::fs::FaultFs;
use augur::{Db, Options, WriteBatch, WriteOptions};

fn options(fs: &FaultFs) -> Options {
    common::separated_on(fs)
}

fn value(i: u32) -> Vec<u8> {
    format!("value-{i:04}-{}", "x".repeat(40)).into_bytes()
}

/// A clean close hands the logs to the OS without syncing them (on the in-memory file
/// system a killed process leaves the same: appended bytes are in its "OS cache").
#[test]
fn a_power_cut_after_a_restart_keeps_what_the_open_found() {
    let fs = FaultFs::new();
    let db = Db::open("/db", options(&fs)).unwrap();
    // One synced write, so the segment also has a durable part.
    let mut b = WriteBatch::new();
    b.put(b"k-synced", value(0));
    db.write_opt(b, WriteOptions { sync: true }).unwrap();
    for i in 1..50u32 {
        db.put(format!("k{i:04}"), value(i)).unwrap();
    }
    db.close().unwrap();
    drop(db);
    // A restart: the OS still holds what the process handed it.
    fs.reset_faults();
    let db = Db::open("/db", options(&fs)).unwrap();
    assert_eq!(db.get(b"k0049").unwrap(), Some(value(49)));
    drop(db);
    // The power cut, after the open persisted the replayed writes.
    fs.crash();
    fs.reset_faults();
    let db = Db::open("/db", options(&fs)).unwrap();
    assert_eq!(db.get(b"k-synced").unwrap(), Some(value(0)));
    for i in 1..50u32 {
        assert_eq!(
            db.get(format!("k{i:04}")).unwrap(),
            Some(value(i)),
            "key {i} after the power cut"
        );
    }
    db.verify().unwrap();
}
