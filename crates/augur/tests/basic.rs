//! Basic behaviour of the public API: put/get/delete, batches, snapshots, iteration in both
//! directions, flush, compaction, reopen, value separation, errors for bad input.

use augur::{Db, Error, Options, WriteBatch};

fn small(sep: usize) -> Options {
    Options {
        memtable_size_bytes: 8 << 10,
        target_file_size_bytes: 16 << 10,
        l1_max_bytes: 64 << 10,
        value_separation_threshold: sep,
        value_log_segment_bytes: 32 << 10,
        ..Options::default()
    }
}

#[test]
fn put_get_delete_reopen() {
    for sep in [usize::MAX, 0, 16] {
        let dir = tempfile::tempdir().unwrap();
        {
            let db = Db::open(dir.path(), small(sep)).unwrap();
            for i in 0..2000u32 {
                db.put(
                    format!("key{i:05}"),
                    format!("value-{i}-{}", "x".repeat(i as usize % 40)),
                )
                .unwrap();
            }
            for i in (0..2000u32).step_by(3) {
                db.delete(format!("key{i:05}")).unwrap();
            }
            assert_eq!(db.get("key00001").unwrap().unwrap(), b"value-1-x");
            assert_eq!(db.get("key00000").unwrap(), None);
            db.flush().unwrap();
            db.compact_range(None, None).unwrap();
            assert_eq!(db.get("key00001").unwrap().unwrap(), b"value-1-x");
        }
        let db = Db::open(dir.path(), small(sep)).unwrap();
        for i in 0..2000u32 {
            let got = db.get(format!("key{i:05}")).unwrap();
            if i % 3 == 0 {
                assert_eq!(got, None, "key {i} sep {sep}");
            } else {
                let want = format!("value-{i}-{}", "x".repeat(i as usize % 40));
                assert_eq!(got.as_deref(), Some(want.as_bytes()), "key {i} sep {sep}");
            }
        }
        let all: Vec<_> = db.iter().map(|r| r.unwrap().0).collect();
        assert_eq!(all.len(), 2000 - 667);
        assert!(all.windows(2).all(|w| w[0] < w[1]));
        let mut back: Vec<_> = db.iter().rev().map(|r| r.unwrap().0).collect();
        back.reverse();
        assert_eq!(back, all);
        let (t, _) = db.verify().unwrap();
        assert!(t > 0);
    }
}

#[test]
fn batches_snapshots_and_ranges() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), small(8)).unwrap();
    let mut b = WriteBatch::new();
    b.put("a", "1").put("b", "2").put("c", "3");
    db.write(b).unwrap();
    let snap = db.snapshot();
    db.put("b", "22222222222").unwrap();
    db.delete("c").unwrap();
    assert_eq!(db.get_at("b", &snap).unwrap().unwrap(), b"2");
    assert_eq!(db.get_at("c", &snap).unwrap().unwrap(), b"3");
    assert_eq!(db.get("c").unwrap(), None);
    db.flush().unwrap();
    assert_eq!(db.get_at("c", &snap).unwrap().unwrap(), b"3");
    let r: Vec<_> = db.range("a".."c").map(|r| r.unwrap()).collect();
    assert_eq!(
        r,
        vec![
            (b"a".to_vec(), b"1".to_vec()),
            (b"b".to_vec(), b"22222222222".to_vec())
        ]
    );
    let r: Vec<_> = db
        .range_at::<&str, _>(.., &snap)
        .map(|r| r.unwrap().0)
        .collect();
    assert_eq!(r, vec![b"a".to_vec(), b"b".to_vec(), b"c".to_vec()]);
    let mut it = db.iter();
    assert_eq!(it.next().unwrap().unwrap().0, b"a");
    assert_eq!(it.next_back().unwrap().unwrap().0, b"b");
    assert!(it.next().is_none());
    assert!(it.next_back().is_none());
}

#[test]
fn bad_input_and_busy() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    assert!(matches!(
        db.put(vec![0u8; 70_000], "v"),
        Err(Error::InvalidArgument(_))
    ));
    db.put("", "empty key is allowed").unwrap();
    assert_eq!(db.get("").unwrap().unwrap(), b"empty key is allowed");
    assert!(matches!(
        Db::open(dir.path(), Options::default()),
        Err(Error::Busy(_))
    ));
    drop(db);
    let missing = dir.path().join("missing");
    let err = Db::open(
        &missing,
        Options {
            create_if_missing: false,
            ..Options::default()
        },
    )
    .unwrap_err();
    assert!(err.to_string().contains("create_if_missing"), "{err}");
    let foreign = tempfile::tempdir().unwrap();
    std::fs::write(foreign.path().join("notes.txt"), "hi").unwrap();
    let err = Db::open(foreign.path(), Options::default()).unwrap_err();
    assert!(err.to_string().contains("not an Augur database"), "{err}");
    let err = Db::open(
        dir.path().join("x"),
        Options {
            memtable_size_bytes: 1,
            ..Options::default()
        },
    )
    .unwrap_err();
    assert!(err.to_string().contains("memtable_size_bytes"));
}

/// `wait_for_compactions` returns once the tree has settled: after a burst of writes through
/// a tiny memtable, no immutable memtable is left unflushed and level 0 is below its
/// compaction trigger; every key is still readable.
#[test]
fn wait_for_compactions_settles_the_tree() {
    let dir = tempfile::tempdir().unwrap();
    let opts = small(usize::MAX);
    let trigger = opts.l0_compaction_trigger;
    let db = Db::open(dir.path(), opts).unwrap();
    for i in 0..20_000u32 {
        db.put(format!("key{i:08}").as_bytes(), [7u8; 40]).unwrap();
    }
    db.wait_for_compactions().unwrap();
    let s = db.stats();
    assert!(s.levels[0].files < trigger, "{:?}", s.levels[0]);
    assert!(
        s.levels.iter().skip(1).any(|l| l.files > 0),
        "compactions ran"
    );
    for i in (0..20_000u32).step_by(997) {
        assert!(db.get(format!("key{i:08}").as_bytes()).unwrap().is_some());
    }
    db.close().unwrap();
}

/// `wait_for_compactions` also waits for value-log GC: after overwriting separated values
/// (half of every sealed segment becomes garbage), no sealed segment is left at or above the
/// GC ratio, and every key reads its last value.
#[test]
fn wait_for_compactions_waits_for_value_log_gc() {
    let dir = tempfile::tempdir().unwrap();
    let opts = small(0);
    let ratio = opts.value_log_gc_ratio;
    let db = Db::open(dir.path(), opts).unwrap();
    for round in 0..3u8 {
        for i in 0..3_000u32 {
            db.put(format!("key{i:06}").as_bytes(), [round; 100])
                .unwrap();
        }
    }
    db.wait_for_compactions().unwrap();
    for seg in db.stats().value_log.iter().filter(|s| !s.active) {
        assert!(
            (seg.garbage_bytes as f64) < ratio * seg.bytes as f64,
            "segment {} still {} of {} bytes garbage",
            seg.id,
            seg.garbage_bytes,
            seg.bytes
        );
    }
    for i in (0..3_000u32).step_by(101) {
        let v = db.get(format!("key{i:06}").as_bytes()).unwrap().unwrap();
        assert_eq!(v, vec![2u8; 100]);
    }
    db.close().unwrap();
}
