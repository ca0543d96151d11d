//! Expiring values (`Db::put_expiring`, `Db::put_with_ttl`, `WriteBatch::put_expiring`):
//! hidden from every read path once their time has passed (older versions of the key
//! included), dropped by compaction, never brought back by a reopen, a compaction or a
//! value-log GC, and stored inline whatever their size. The time is a `ManualClock`, so no
//! test waits.

use augur::{Db, ManualClock, Options, ScanOptions, WriteBatch};
use std::sync::Arc;
use std::time::Duration;

const T0: u64 = 1_700_000_000_000;

fn opts(clock: &Arc<ManualClock>, separation: usize) -> Options {
    Options {
        memtable_size_bytes: 16 << 10,
        target_file_size_bytes: 16 << 10,
        l1_max_bytes: 64 << 10,
        value_separation_threshold: separation,
        value_log_segment_bytes: 32 << 10,
        clock: clock.clone(),
        ..Options::default()
    }
}

fn key(i: u32) -> String {
    format!("key{i:05}")
}

/// Every pair of a forward scan, a backward scan (both through `Db::scan_with`) and an
/// owned iteration, checked to agree; the forward pairs.
fn all_pairs(db: &Db) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut forward = Vec::new();
    let mut scan = db.scan::<&[u8], _>(..);
    while let Some((k, v)) = scan.next().unwrap() {
        forward.push((k.to_vec(), v.to_vec()));
    }
    let reverse = ScanOptions {
        reverse: true,
        ..ScanOptions::default()
    };
    let mut backward = Vec::new();
    let mut scan = db.scan_with::<&[u8], _>(.., &reverse);
    while let Some((k, v)) = scan.next().unwrap() {
        backward.push((k.to_vec(), v.to_vec()));
    }
    backward.reverse();
    assert_eq!(forward, backward, "forward and backward scans differ");
    let owned: Vec<_> = db.iter().map(|r| r.unwrap()).collect();
    assert_eq!(forward, owned, "scan and iterator differ");
    forward
}

#[test]
fn a_value_reads_until_its_time_and_then_as_deleted() {
    let clock = Arc::new(ManualClock::new(T0));
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), opts(&clock, usize::MAX)).unwrap();
    db.put_with_ttl("a", "1", Duration::from_millis(100))
        .unwrap();
    db.put("b", "2").unwrap();
    let found = db.get_with_expiry("a").unwrap().unwrap();
    assert_eq!(
        (found.value.as_slice(), found.expire_at),
        (&b"1"[..], Some(T0 + 100))
    );
    assert_eq!(db.get_with_expiry("b").unwrap().unwrap().expire_at, None);
    clock.advance(99);
    assert_eq!(db.get("a").unwrap().as_deref(), Some(&b"1"[..]));
    clock.advance(1);
    assert_eq!(db.get("a").unwrap(), None, "expired at its time");
    assert_eq!(db.get_with_expiry("a").unwrap(), None);
    assert_eq!(all_pairs(&db), vec![(b"b".to_vec(), b"2".to_vec())]);
    // A time already past: the key is absent at once.
    db.put_expiring("c", "3", T0).unwrap();
    assert_eq!(db.get("c").unwrap(), None);
    // A plain put clears the expiry.
    db.put_expiring("d", "4", T0 + 1_000).unwrap();
    db.put("d", "5").unwrap();
    clock.advance(10_000);
    assert_eq!(db.get("d").unwrap().as_deref(), Some(&b"5"[..]));
}

#[test]
fn an_expired_value_hides_older_versions_through_flush_compaction_and_reopen() {
    for separation in [usize::MAX, 0] {
        let clock = Arc::new(ManualClock::new(T0));
        let dir = tempfile::tempdir().unwrap();
        {
            let db = Db::open(dir.path(), opts(&clock, separation)).unwrap();
            for i in 0..400 {
                db.put(key(i), format!("old-{i}")).unwrap();
            }
            db.flush().unwrap();
            db.compact_range(None, None).unwrap();
            // Newer expiring versions of the even keys, in the memtable, then flushed on
            // top of the old versions (which are in a lower level).
            let mut batch = WriteBatch::new();
            for i in (0..400).step_by(2) {
                batch.put_expiring(key(i), format!("new-{i}"), T0 + 500);
            }
            db.write(batch).unwrap();
            assert_eq!(db.get(key(2)).unwrap().as_deref(), Some(&b"new-2"[..]));
            clock.advance(500);
            assert_eq!(db.get(key(2)).unwrap(), None, "separation {separation}");
            db.flush().unwrap();
            assert_eq!(db.get(key(2)).unwrap(), None, "after flush");
            assert_eq!(all_pairs(&db).len(), 200);
        }
        // Reopened (the WAL and the flushed table replayed), then compacted: the expired
        // versions become tombstones, so the old versions below never come back.
        let db = Db::open(dir.path(), opts(&clock, separation)).unwrap();
        assert_eq!(db.get(key(2)).unwrap(), None, "after reopen");
        db.compact_range(None, None).unwrap();
        db.run_value_log_gc().unwrap();
        for i in 0..400 {
            let got = db.get(key(i)).unwrap();
            if i % 2 == 0 {
                assert_eq!(got, None, "key {i} separation {separation}");
            } else {
                assert_eq!(got, Some(format!("old-{i}").into_bytes()));
            }
        }
        let pairs = all_pairs(&db);
        assert_eq!(pairs.len(), 200);
        assert!(pairs.iter().all(|(_, v)| v.starts_with(b"old-")));
        // Once compacted into the last level nothing is left of the expired keys.
        let entries: u64 = db.stats().levels.iter().map(|l| l.entries).sum();
        assert_eq!(entries, 200, "separation {separation}");
        db.verify().unwrap();
    }
}

#[test]
fn compaction_drops_expired_values() {
    let clock = Arc::new(ManualClock::new(T0));
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), opts(&clock, usize::MAX)).unwrap();
    for i in 0..2_000 {
        db.put_expiring(key(i), "v".repeat(100), T0 + 60_000)
            .unwrap();
    }
    db.put("kept", "k").unwrap();
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    let size = |db: &Db| db.stats().levels.iter().map(|l| l.bytes).sum::<u64>();
    let before = size(&db);
    assert_eq!(all_pairs(&db).len(), 2_001);
    clock.advance(60_000);
    assert_eq!(all_pairs(&db), vec![(b"kept".to_vec(), b"k".to_vec())]);
    db.compact_range(None, None).unwrap();
    let after = size(&db);
    assert!(after * 20 < before, "{after} bytes left of {before}");
    let entries: u64 = db.stats().levels.iter().map(|l| l.entries).sum();
    assert_eq!(entries, 1);
}

/// `Stats::expired_values` counts each key whose newest version a compaction found expired,
/// once: not a version a newer one of the same compaction replaced, not an unexpired one,
/// and not again when a later compaction meets the tombstone it left.
#[test]
fn compaction_counts_each_expired_key_once() {
    let clock = Arc::new(ManualClock::new(T0));
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), opts(&clock, usize::MAX)).unwrap();
    for i in 0..100 {
        db.put_expiring(key(i), "v", T0 + 1_000).unwrap();
    }
    // Key 0 is replaced by a version that never expires, key 1 by a later expiry.
    db.put(key(0), "kept").unwrap();
    db.put_expiring(key(1), "later", T0 + 5_000).unwrap();
    db.put_expiring("unexpired", "u", T0 + 60_000).unwrap();
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    assert_eq!(db.stats().expired_values, 0, "nothing had expired");
    clock.advance(1_000);
    db.put("z", "flushed later").unwrap();
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    assert_eq!(db.stats().expired_values, 98, "keys 2..100");
    clock.advance(4_000);
    db.put("z", "again").unwrap();
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    assert_eq!(
        db.stats().expired_values,
        99,
        "key 1 too, the others not twice"
    );
}

#[test]
fn expiring_values_stay_inline_whatever_their_size() {
    let clock = Arc::new(ManualClock::new(T0));
    let dir = tempfile::tempdir().unwrap();
    // Every plain value is separated; the expiring ones must not be.
    let db = Db::open(dir.path(), opts(&clock, 0)).unwrap();
    let big = vec![7u8; 5_000];
    for i in 0..50 {
        db.put_expiring(key(i), &big, T0 + 1_000).unwrap();
    }
    assert_eq!(db.stats().value_log_bytes_written, 0);
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    assert_eq!(db.get(key(7)).unwrap().as_deref(), Some(&big[..]));
    let found = db.get_with_expiry(key(7)).unwrap().unwrap();
    assert_eq!(found.expire_at, Some(T0 + 1_000));
    assert_eq!(all_pairs(&db).len(), 50);
    clock.advance(1_000);
    assert!(all_pairs(&db).is_empty());
    db.verify().unwrap();
}

#[test]
fn snapshots_and_open_iterators_hide_what_expires_later() {
    let clock = Arc::new(ManualClock::new(T0));
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), opts(&clock, usize::MAX)).unwrap();
    db.put_expiring("a", "1", T0 + 10).unwrap();
    db.put("b", "2").unwrap();
    let snap = db.snapshot();
    db.delete("b").unwrap();
    assert_eq!(db.get_at("a", &snap).unwrap().as_deref(), Some(&b"1"[..]));
    clock.advance(10);
    // Expiry is judged now, not at the snapshot's time.
    assert_eq!(db.get_at("a", &snap).unwrap(), None);
    let at_snap: Vec<_> = db
        .range_at::<&[u8], _>(.., &snap)
        .map(|r| r.unwrap().0)
        .collect();
    assert_eq!(at_snap, vec![b"b".to_vec()]);
}

#[test]
fn the_background_thread_reclaims_tables_dense_with_expired_values_unasked() {
    let clock = Arc::new(ManualClock::new(T0));
    let dir = tempfile::tempdir().unwrap();
    let options = Options {
        background_threads: true,
        expiry_check_interval_ms: 10,
        ..opts(&clock, usize::MAX)
    };
    let db = Db::open(dir.path(), options).unwrap();
    for i in 0..3_000 {
        db.put_expiring(key(i), "v".repeat(64), T0 + 1_000 + u64::from(i % 100))
            .unwrap();
    }
    db.compact_range(None, None).unwrap();
    let entries = |db: &Db| db.stats().levels.iter().map(|l| l.entries).sum::<u64>();
    assert_eq!(entries(&db), 3_000, "nothing has expired yet");
    clock.advance(2_000);
    // No write, flush or compaction is asked for: the periodic check finds the tables.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while entries(&db) > 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "{} entries left after 30 s",
            entries(&db)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(all_pairs(&db).is_empty());
}

/// A quiet database's last flushes stay in L0 (fewer files than the compaction trigger):
/// once their values expire, the periodic check merges them down and nothing is left.
#[test]
fn the_background_thread_reclaims_expired_values_left_in_l0() {
    let clock = Arc::new(ManualClock::new(T0));
    let dir = tempfile::tempdir().unwrap();
    let options = Options {
        background_threads: true,
        expiry_check_interval_ms: 10,
        memtable_size_bytes: 1 << 20,
        ..opts(&clock, usize::MAX)
    };
    let db = Db::open(dir.path(), options).unwrap();
    for batch in 0..2u32 {
        for i in 0..1_000 {
            db.put_expiring(key(batch * 1_000 + i), "v".repeat(64), T0 + 1_000)
                .unwrap();
        }
        db.flush().unwrap();
    }
    let l0 = |db: &Db| db.stats().levels[0].files;
    let entries = |db: &Db| db.stats().levels.iter().map(|l| l.entries).sum::<u64>();
    assert_eq!(l0(&db), 2, "two flushes, below the L0 trigger");
    assert_eq!(entries(&db), 2_000);
    clock.advance(2_000);
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while entries(&db) > 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "{} entries ({} L0 files) left after 30 s",
            entries(&db),
            l0(&db)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(l0(&db), 0);
    assert!(all_pairs(&db).is_empty());
}

/// `Scan::expire_at` tells each pair's expiry time, in forward and backward scans, keys-only
/// scans, and scans whose readahead batches separated values (where expiring values, always
/// inline, sit between pointers), from the memtable and from tables.
#[test]
fn scans_tell_each_pair_its_expiry_time() {
    for separation in [usize::MAX, 0] {
        let clock = Arc::new(ManualClock::new(T0));
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), opts(&clock, separation)).unwrap();
        let expected = |i: u32| i.is_multiple_of(3).then(|| T0 + 1_000 + u64::from(i));
        let write = |db: &Db, range: std::ops::Range<u32>| {
            let mut batch = WriteBatch::new();
            for i in range {
                match expected(i) {
                    Some(at) => batch.put_expiring(key(i), format!("v{i}"), at),
                    None => batch.put(key(i), format!("v{i}")),
                };
            }
            db.write(batch).unwrap();
        };
        write(&db, 0..150);
        db.flush().unwrap();
        write(&db, 150..300); // in the memtable
        for keys_only in [false, true] {
            for reverse in [false, true] {
                let options = ScanOptions {
                    keys_only,
                    reverse,
                    ..ScanOptions::default()
                };
                let mut scan = db.scan_with::<&[u8], _>(.., &options);
                assert_eq!(scan.expire_at(), None);
                let mut seen = 0;
                while let Some((k, _)) = scan.next().unwrap() {
                    let i: u32 = std::str::from_utf8(&k[3..]).unwrap().parse().unwrap();
                    assert_eq!(
                        scan.expire_at(),
                        expected(i),
                        "key {i}, separation {separation}, keys_only {keys_only}, \
                         reverse {reverse}"
                    );
                    seen += 1;
                }
                assert_eq!(seen, 300);
                assert_eq!(scan.expire_at(), None, "after the last pair");
            }
        }
    }
}
