//! Issue 40, finding 4: overwritten values never freed their disk without an explicit
//! compaction. Garbage is now counted wherever a pointer dies — a flush drops the versions
//! of a key no reader can see, as compaction does — and a memtable is switched once the
//! value-log bytes its own overwrites shadow reach its budget, so automatic GC sees the
//! garbage of an update-heavy workload and keeps its disk within twice its live bytes.

use augur::{Db, Options};
use std::path::Path;

/// Bytes of the files in `dir` whose names end with `suffix`.
fn bytes_of(dir: &Path, suffix: &str) -> u64 {
    std::fs::read_dir(dir)
        .expect("read_dir")
        .map(|e| e.expect("entry"))
        .filter(|e| e.file_name().to_string_lossy().ends_with(suffix))
        .map(|e| e.metadata().map_or(0, |m| m.len()))
        .sum()
}

fn value(key: u32, round: u32, len: usize) -> Vec<u8> {
    let mut v = format!("{key}.{round}|").into_bytes();
    v.resize(len, b'a' + (key % 26) as u8);
    v
}

#[test]
fn a_flush_counts_the_overwritten_values_it_drops_as_garbage() {
    // The user's case, scaled down: many overwrites of a few keys, then one flush, no
    // compaction. Before, the flush wrote every version and no garbage was recorded.
    let tmp = tempfile::tempdir().expect("tempdir");
    let db = Db::open(
        tmp.path(),
        Options {
            background_threads: false,
            value_separation_threshold: 64,
            ..Options::default()
        },
    )
    .expect("open");
    for i in 0..2_000u32 {
        db.put(format!("k{}", i % 10), value(i, 0, 1_000))
            .expect("put");
    }
    db.flush().expect("flush");
    let stats = db.stats();
    let garbage: u64 = stats.value_log.iter().map(|s| s.garbage_bytes).sum();
    // 1,990 of the 2,000 values are dead: each entry is its value plus a header and key.
    assert!(garbage >= 1_990 * 1_000, "garbage {garbage}: {stats:?}");
    assert_eq!(
        stats.levels[0].entries, 10,
        "the flush kept one version per key"
    );
    // An explicit GC frees it; reads still see the newest values.
    db.run_value_log_gc().expect("gc");
    for k in 0..10u32 {
        let newest = 1_990 + k;
        assert_eq!(
            db.get(format!("k{k}")).expect("get"),
            Some(value(newest, 0, 1_000))
        );
    }
}

#[test]
fn a_flush_keeps_the_versions_a_snapshot_reads() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let db = Db::open(
        tmp.path(),
        Options {
            background_threads: false,
            value_separation_threshold: 64,
            ..Options::default()
        },
    )
    .expect("open");
    db.put("k", value(1, 0, 500)).expect("put");
    let snapshot = db.snapshot();
    db.put("k", value(2, 0, 500)).expect("put");
    db.put("k", value(3, 0, 500)).expect("put");
    db.flush().expect("flush");
    // As in a compaction, nothing newer than the oldest snapshot is dropped.
    assert_eq!(db.stats().levels[0].entries, 3);
    assert_eq!(
        db.get_at("k", &snapshot).expect("get"),
        Some(value(1, 0, 500))
    );
    assert_eq!(db.get("k").expect("get"), Some(value(3, 0, 500)));
    db.verify().expect("verify");
}

#[test]
fn automatic_gc_keeps_an_update_heavy_workload_within_twice_its_live_bytes() {
    // 2,000 keys of 16 KiB values (33 MB live) overwritten 10 times, with background work
    // on and no explicit flush, compaction or GC. A 1 MiB memtable holds ~16,000 pointers,
    // 260 MB of values: before, it was switched only when full, its flush kept every
    // version, and the value log grew to 10x the live bytes.
    const KEYS: u32 = 2_000;
    const VALUE: usize = 16 << 10;
    const ROUNDS: u32 = 10;
    let tmp = tempfile::tempdir().expect("tempdir");
    let db = Db::open(
        tmp.path(),
        Options {
            memtable_size_bytes: 1 << 20,
            value_separation_threshold: 1_024,
            value_log_segment_bytes: 1 << 20,
            ..Options::default()
        },
    )
    .expect("open");
    let live = u64::from(KEYS) * VALUE as u64;
    let mut peak = 0;
    for round in 0..ROUNDS {
        for k in 0..KEYS {
            db.put(format!("key{k:06}"), value(k, round, VALUE))
                .expect("put");
            if k % 250 == 0 {
                peak = peak.max(bytes_of(tmp.path(), ".vlog"));
            }
        }
    }
    db.wait_for_compactions().expect("wait");
    let settled = bytes_of(tmp.path(), ".vlog");
    for k in (0..KEYS).step_by(97) {
        assert_eq!(
            db.get(format!("key{k:06}")).expect("get"),
            Some(value(k, ROUNDS - 1, VALUE))
        );
    }
    eprintln!(
        "live {live}, written {}, value log at its peak {peak} ({:.2}x live), settled \
         {settled} ({:.2}x live)",
        live * u64::from(ROUNDS),
        peak as f64 / live as f64,
        settled as f64 / live as f64
    );
    assert!(settled <= 2 * live, "settled at {settled} for {live} live");
    assert!(peak <= 2 * live, "peaked at {peak} for {live} live");
}
