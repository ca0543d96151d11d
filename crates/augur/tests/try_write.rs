//! `Db::try_write`: a write that would wait for room (a memtable switch, a stall) is handed
//! back untouched instead of waiting, and nothing is lost or applied twice when callers fall
//! back to `Db::write` with the batch they got back.

use augur::{Db, Options, TryWrite, WriteBatch};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

fn small_memtable() -> Options {
    Options {
        memtable_size_bytes: 64 << 10,
        ..Options::default()
    }
}

fn batch(pairs: &[(Vec<u8>, Vec<u8>)]) -> WriteBatch {
    let mut b = WriteBatch::new();
    for (k, v) in pairs {
        b.put(k, v);
    }
    b
}

#[test]
fn a_write_with_room_goes_through() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let written = db
        .try_write(batch(&[(b"k".to_vec(), b"v".to_vec())]))
        .unwrap();
    assert!(matches!(written, TryWrite::Written));
    assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
}

#[test]
fn a_full_memtable_hands_the_batch_back_until_a_write_that_may_wait_switches_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), small_memtable()).unwrap();
    let value = vec![7u8; 1000];
    let mut written = 0u32;
    let handed_back = loop {
        let pairs = vec![(format!("key{written:06}").into_bytes(), value.clone())];
        match db.try_write(batch(&pairs)).unwrap() {
            TryWrite::Written => written += 1,
            TryWrite::WouldWait(b) => break (b, pairs),
        }
        assert!(written < 10_000, "the memtable never filled");
    };
    // Everything written is there; the handed-back batch's key is not.
    assert!(
        written >= 50,
        "only {written} writes went through a 64 KiB memtable"
    );
    let (back, pairs) = handed_back;
    assert_eq!(db.get(&pairs[0].0).unwrap(), None);
    // The full memtable keeps refusing until a write that may wait makes room.
    let again = batch(&[(b"other".to_vec(), b"x".to_vec())]);
    assert!(matches!(
        db.try_write(again).unwrap(),
        TryWrite::WouldWait(_)
    ));
    db.write(back).unwrap();
    assert_eq!(db.get(&pairs[0].0).unwrap().as_deref(), Some(&value[..]));
    assert!(matches!(
        db.try_write(batch(&[(b"after".to_vec(), b"y".to_vec())]))
            .unwrap(),
        TryWrite::Written
    ));
    for i in 0..written {
        let key = format!("key{i:06}").into_bytes();
        assert_eq!(db.get(&key).unwrap().as_deref(), Some(&value[..]), "key{i}");
    }
    assert_eq!(db.get(b"other").unwrap(), None);
}

#[test]
fn concurrent_no_wait_writers_with_fallback_lose_and_repeat_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(Db::open(dir.path(), small_memtable()).unwrap());
    let handed_back = Arc::new(AtomicU64::new(0));
    let threads: Vec<_> = (0..4u32)
        .map(|t| {
            let db = db.clone();
            let handed_back = handed_back.clone();
            std::thread::spawn(move || {
                let mut model = BTreeMap::new();
                for i in 0..3_000u32 {
                    // Each key written twice: the second value must win.
                    let key = format!("t{t}-{:05}", i % 1_500).into_bytes();
                    let value = format!("{t}:{i}:{}", "v".repeat(100)).into_bytes();
                    let pairs = vec![(key.clone(), value.clone())];
                    // Half the writers may wait (they make room for the others).
                    let result = if (t + i) % 2 == 0 {
                        db.write(batch(&pairs))
                    } else {
                        match db.try_write(batch(&pairs)).unwrap() {
                            TryWrite::Written => Ok(()),
                            TryWrite::WouldWait(b) => {
                                handed_back.fetch_add(1, Ordering::Relaxed);
                                db.write(b)
                            }
                        }
                    };
                    result.unwrap();
                    model.insert(key, value);
                }
                model
            })
        })
        .collect();
    let mut model = BTreeMap::new();
    for t in threads {
        model.extend(t.join().unwrap());
    }
    assert!(
        handed_back.load(Ordering::Relaxed) > 0,
        "no write was handed back: the test did not reach a full memtable"
    );
    let stored: BTreeMap<Vec<u8>, Vec<u8>> = {
        let mut scan = db.scan::<&[u8], _>(..);
        let mut all = BTreeMap::new();
        while let Some((k, v)) = scan.next().unwrap() {
            all.insert(k.to_vec(), v.to_vec());
        }
        all
    };
    assert_eq!(stored.len(), model.len());
    assert!(stored == model, "the database differs from the model");
}
