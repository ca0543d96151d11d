//! Leveled compaction into the last level writes every entry that all snapshots see with
//! seqno 0 (as RocksDB does at the bottommost level), so a settled last level's trailers take
//! one byte and compress to nothing; entries a snapshot still distinguishes keep their
//! seqnos, and reads at every snapshot stay right.

use augur::{inspect, Db, Options};
use std::path::PathBuf;

fn options() -> Options {
    Options {
        memtable_size_bytes: 32 << 10,
        target_file_size_bytes: 64 << 10,
        value_separation_threshold: usize::MAX,
        ..Options::default()
    }
}

fn tables(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut t: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "sst"))
        .collect();
    t.sort();
    t
}

/// The tables of `db` (in `dir`) once the obsolete ones are gone: a compaction's inputs are
/// deleted when the last reader lets go of them, which a busy machine may delay past the
/// call that waited for the compaction.
fn live_tables(db: &Db, dir: &std::path::Path) -> Vec<PathBuf> {
    let live = || db.stats().levels.iter().map(|l| l.files).sum::<usize>();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let t = tables(dir);
        if t.len() == live() || std::time::Instant::now() > deadline {
            return t;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// The seqnos of every entry of every live table of the database.
fn seqnos(db: &Db, dir: &std::path::Path) -> Vec<u64> {
    let mut out = Vec::new();
    for t in live_tables(db, dir) {
        for e in inspect::sst_entries(&t, false).unwrap() {
            out.push(e.unwrap().seqno);
        }
    }
    out
}

#[test]
fn a_settled_last_level_has_seqno_zero_and_one_byte_trailers() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options()).unwrap();
    for round in 0..3 {
        for i in 0..2_000u32 {
            db.put(format!("key{i:05}"), format!("v{round}-{i}"))
                .unwrap();
        }
    }
    db.compact_range(None, None).unwrap();
    let s = seqnos(&db, dir.path());
    assert_eq!(s.len(), 2_000);
    assert!(s.iter().all(|&q| q == 0), "every entry at seqno 0");
    for t in tables(dir.path()) {
        assert_eq!(inspect::sst(&t).unwrap().properties.slot.trailer_bytes, 1);
    }
    assert_eq!(db.get("key00007").unwrap().as_deref(), Some(&b"v2-7"[..]));
    // A newer version above the zeroed one wins, before and after it is compacted down.
    db.put("key00007", "newest").unwrap();
    db.flush().unwrap();
    assert_eq!(db.get("key00007").unwrap().as_deref(), Some(&b"newest"[..]));
    db.compact_range(None, None).unwrap();
    assert_eq!(db.get("key00007").unwrap().as_deref(), Some(&b"newest"[..]));
    db.verify().unwrap();
}

#[test]
fn entries_a_snapshot_distinguishes_keep_their_seqnos() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options()).unwrap();
    for i in 0..1_000u32 {
        db.put(format!("key{i:05}"), "old").unwrap();
    }
    let snap = db.snapshot();
    for i in 0..1_000u32 {
        db.put(format!("key{i:05}"), "new").unwrap();
    }
    db.compact_range(None, None).unwrap();
    let s = seqnos(&db, dir.path());
    // The old versions are seen by the snapshot and the new ones by no snapshot older than
    // them: each key keeps both, the old at 0 (every snapshot sees it), the new with its
    // own seqno (the snapshot does not see it).
    assert_eq!(s.len(), 2_000);
    assert_eq!(s.iter().filter(|&&q| q == 0).count(), 1_000);
    assert_eq!(
        db.get_at("key00003", &snap).unwrap().as_deref(),
        Some(&b"old"[..])
    );
    assert_eq!(db.get("key00003").unwrap().as_deref(), Some(&b"new"[..]));
    let at_snap: Vec<_> = db
        .range_at::<&[u8], _>(.., &snap)
        .map(|r| r.unwrap().1)
        .collect();
    assert!(at_snap.len() == 1_000 && at_snap.iter().all(|v| v == b"old"));
    drop(snap);
    assert_eq!(db.get("key00003").unwrap().as_deref(), Some(&b"new"[..]));
    db.verify().unwrap();
}
