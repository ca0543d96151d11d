//! Issue 40 follow-up (CI failure of `augur stress --faults --power-cuts`): an open that
//! starts a new value-log segment seals the one it found and records its size in the
//! manifest. When nothing was replayed from the WAL the open did not sync that segment, so
//! the recorded size could include bytes only the OS held: after a power cut the file was
//! shorter than recorded, and every later open refused the database ("this sealed value-log
//! segment holds 24 bytes, but the manifest records 45").
//!
//! The contract: a sealed segment's size is recorded only once its bytes are durable.

mod common;

use augur::fs::{FaultFs, FaultMode, FaultOp};
use augur::{Db, Options};

fn options(fs: &FaultFs) -> Options {
    common::separated_on(fs)
}

/// A write whose value reached the value log but whose WAL record did not (the value-log
/// append tore, so the segment also ends in a partial entry and cannot be appended to):
/// the next open finds no WAL record, seals the segment and starts another.
#[test]
fn a_power_cut_after_an_open_that_sealed_an_unsynced_segment_keeps_the_database_open() {
    let fs = FaultFs::new();
    let db = Db::open("/db", options(&fs)).unwrap();
    db.put(b"durable", b"value-0000-xxxxxxxxxxxxxxxx").unwrap();
    db.flush().unwrap();
    fs.fail_at(FaultOp::Write, 1, FaultMode::Tear);
    assert!(db
        .put(b"torn", b"value-0001-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx")
        .is_err());
    drop(db);
    // A restart without a power cut: the torn bytes are still in the OS cache.
    fs.reset_faults();
    let db = Db::open("/db", options(&fs)).unwrap();
    assert_eq!(db.get(b"torn").unwrap(), None);
    drop(db);
    // The power cut right after that open returned.
    fs.crash();
    fs.reset_faults();
    let db = Db::open("/db", options(&fs)).expect("the open after the power cut");
    assert_eq!(
        db.get(b"durable").unwrap().as_deref(),
        Some(&b"value-0000-xxxxxxxxxxxxxxxx"[..])
    );
    assert_eq!(db.get(b"torn").unwrap(), None);
    db.verify().unwrap();
}
