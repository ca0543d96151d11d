//! The commit listener (`Options::commit_listener`): every committed write group reaches it
//! once, in sequence-number order, with the user's logical operations (separated values as
//! their bytes, expiring values with their absolute expiry time), even with many concurrent
//! writers; replaying what it saw into a fresh database yields the same contents.

use augur::{CommitKind, CommitListener, CommitOp, Db, Options, WriteBatch};
use parking_lot::Mutex;
use std::sync::Arc;

/// One recorded operation: kind, key, value.
type Recorded = (CommitKind, Vec<u8>, Vec<u8>);

/// Records every call.
#[derive(Debug, Default)]
struct Recorder {
    groups: Mutex<Vec<(u64, Vec<Recorded>)>>,
}

impl CommitListener for Recorder {
    fn on_commit(&self, first_seqno: u64, ops: &[CommitOp<'_>]) {
        let ops = ops
            .iter()
            .map(|o| (o.kind, o.key.to_vec(), o.value.to_vec()))
            .collect();
        self.groups.lock().push((first_seqno, ops));
    }
}

fn options(listener: Option<Arc<Recorder>>) -> Options {
    Options {
        value_separation_threshold: 64,
        commit_listener: listener.map(|l| l as Arc<dyn CommitListener>),
        ..Options::default()
    }
}

#[test]
fn groups_arrive_in_commit_order_with_logical_values() {
    let tmp = tempfile::tempdir().unwrap();
    let recorder = Arc::new(Recorder::default());
    let db = Arc::new(Db::open(tmp.path().join("db"), options(Some(recorder.clone()))).unwrap());
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let db = db.clone();
            std::thread::spawn(move || {
                for i in 0..500u32 {
                    let key = format!("k{t}-{}", i % 97);
                    let mut b = WriteBatch::new();
                    match i % 4 {
                        0 => b.put(&key, vec![t as u8; 200]), // separated
                        1 => b.put_expiring(&key, b"soon", 4_000_000_000_000),
                        2 => b.delete(&key),
                        _ => b.put(&key, format!("v{i}")).put(format!("{key}/2"), b"x"),
                    };
                    db.write(b).unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let groups = recorder.groups.lock().clone();
    // In order, without gaps (no internal writes here), every op once.
    let mut next = groups.first().map_or(1, |g| g.0);
    let mut ops = 0;
    for (first, group) in &groups {
        assert_eq!(*first, next, "groups are contiguous and ordered");
        next += group.len() as u64;
        ops += group.len();
    }
    assert_eq!(ops, 4 * 500 + 4 * 125);
    assert_eq!(next - 1, db.snapshot().seqno());
    let all: Vec<&Recorded> = groups.iter().flat_map(|g| &g.1).collect();
    assert!(all
        .iter()
        .any(|(k, _, v)| *k == CommitKind::Put && v.len() == 200));
    assert!(all
        .iter()
        .any(|(k, _, v)| *k == CommitKind::PutExpiring(4_000_000_000_000) && v == b"soon"));
    assert!(all
        .iter()
        .all(|(k, _, v)| *k != CommitKind::Delete || v.is_empty()));

    // Replaying the stream into a fresh database gives the same contents.
    let copy = Db::open(tmp.path().join("copy"), options(None)).unwrap();
    for (_, group) in &groups {
        let mut b = WriteBatch::new();
        for (kind, key, value) in group {
            match kind {
                CommitKind::Put => b.put(key, value),
                CommitKind::PutExpiring(at) => b.put_expiring(key, value, *at),
                CommitKind::Delete => b.delete(key),
            };
        }
        copy.write(b).unwrap();
    }
    let dump = |db: &Db| -> Vec<(Vec<u8>, Vec<u8>)> { db.iter().map(|r| r.unwrap()).collect() };
    assert_eq!(dump(&db), dump(&copy));
}

#[test]
fn flushes_and_compactions_are_not_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let recorder = Arc::new(Recorder::default());
    let db = Db::open(tmp.path().join("db"), options(Some(recorder.clone()))).unwrap();
    for i in 0..100u32 {
        db.put(format!("k{i}"), vec![1u8; 100]).unwrap();
    }
    let before = recorder.groups.lock().len();
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    db.run_value_log_gc().unwrap();
    assert_eq!(recorder.groups.lock().len(), before);
    assert_eq!(before, 100);
}
