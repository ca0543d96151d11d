//! Value-log garbage collection: compaction accounts dropped pointers as garbage, GC
//! relocates live entries and deletes the segment, snapshots keep what they can read.

use augur::fs::MemFs;
use augur::{Db, Options};
use std::sync::Arc;

fn opts(fs: &MemFs) -> Options {
    Options {
        fs: Arc::new(fs.clone()),
        memtable_size_bytes: 16 << 10,
        target_file_size_bytes: 16 << 10,
        l1_max_bytes: 64 << 10,
        value_separation_threshold: 0,
        value_log_segment_bytes: 16 << 10,
        // Only explicit GC runs, so the test controls when segments go.
        value_log_gc_ratio: 2.0,
        background_threads: false,
        ..Options::default()
    }
}

fn value(k: u32, round: u32) -> Vec<u8> {
    format!("value-{k}-round-{round}-{}", "p".repeat(100)).into_bytes()
}

fn segment_files(fs: &MemFs) -> Vec<String> {
    use augur::fs::FileSystem;
    let mut v: Vec<String> = fs
        .list(std::path::Path::new("/db"))
        .unwrap()
        .into_iter()
        .filter(|n| n.ends_with(".vlog"))
        .collect();
    v.sort();
    v
}

fn segment_bytes(fs: &MemFs) -> u64 {
    use augur::fs::FileSystem;
    segment_files(fs)
        .iter()
        .map(|n| fs.size(&std::path::Path::new("/db").join(n)).unwrap())
        .sum()
}

#[test]
fn gc_reclaims_garbage_and_respects_snapshots() {
    let fs = MemFs::new();
    let db = Db::open("/db", opts(&fs)).unwrap();
    for round in 0..3 {
        for k in 0..200 {
            db.put(format!("k{k:04}"), value(k, round)).unwrap();
        }
    }
    // The snapshot sees round 2, which the last round turns into garbage for everyone else.
    let snap = db.snapshot();
    for k in 0..200 {
        db.put(format!("k{k:04}"), value(k, 3)).unwrap();
    }
    db.compact_range(None, None).unwrap();
    let stats = db.stats();
    let garbage: u64 = stats.value_log.iter().map(|s| s.garbage_bytes).sum();
    assert!(
        garbage > 0,
        "compaction must count dropped pointers as garbage"
    );

    let bytes_before = segment_bytes(&fs);
    let mut collected = Vec::new();
    loop {
        let r = db.run_value_log_gc().unwrap();
        match r.segment {
            Some(s) => collected.push(s),
            None => break,
        }
        assert!(collected.len() < 1000, "GC does not converge");
    }
    assert!(!collected.is_empty());
    // Both the snapshot (round 2, garbage to the latest state) and the latest state read
    // correctly: no segment a reader can reach was deleted.
    for k in 0..200 {
        assert_eq!(
            db.get_at(format!("k{k:04}"), &snap).unwrap().unwrap(),
            value(k, 2)
        );
        assert_eq!(db.get(format!("k{k:04}")).unwrap().unwrap(), value(k, 3));
    }
    let snap_range: Vec<_> = db
        .range_at::<&str, _>(.., &snap)
        .map(|r| r.unwrap().1)
        .collect();
    assert_eq!(snap_range.len(), 200);
    assert!(snap_range
        .iter()
        .enumerate()
        .all(|(k, v)| *v == value(k as u32, 2)));
    drop(snap);
    // The next GC call deletes the files no snapshot can reach any more.
    db.run_value_log_gc().unwrap();
    for s in &collected {
        assert!(
            !segment_files(&fs)
                .iter()
                .any(|f| f == &format!("{s:06}.vlog")),
            "segment {s} should be deleted once no snapshot needs it"
        );
    }
    // (Flushes and compactions count garbage as pointers die, and delete segments that
    // became all garbage on the way: GC frees bytes, not necessarily files.)
    assert!(segment_bytes(&fs) < bytes_before);
    assert!(db.stats().gc_runs >= collected.len() as u64);
    drop(db);
    // Everything survives a reopen (WAL replay skips pointers into deleted segments).
    let db = Db::open("/db", opts(&fs)).unwrap();
    for k in 0..200 {
        assert_eq!(db.get(format!("k{k:04}")).unwrap().unwrap(), value(k, 3));
    }
    let (_, vlog_entries) = db.verify().unwrap();
    assert!(vlog_entries >= 200);
}
