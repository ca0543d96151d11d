//! The compaction filter (`Options::compaction_filter`): compaction drops the values of the
//! keys under the filter's prefix that it calls garbage, judging by the database's current
//! state, and nothing else: keys outside the prefix are never offered to it, tombstones are
//! never dropped by it, one verdict covers its group of keys, and without a filter nothing
//! changes.
//!
//! The model is augur-server's hashes: items `g/<owner>/<item>` live while their owner record
//! `o/<owner>` reads `live`.

use augur::{CompactionFilter, Db, Options, ReadLatest, Verdict};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Items of an owner whose record is missing or not `live` are garbage.
#[derive(Debug, Default)]
struct OwnerFilter {
    judged: AtomicUsize,
    /// Keys offered outside the prefix (must stay 0).
    strays: AtomicUsize,
}

impl CompactionFilter for OwnerFilter {
    fn prefix(&self) -> &[u8] {
        b"g/"
    }

    fn judge(&self, key: &[u8], read: ReadLatest<'_>) -> Verdict {
        self.judged.fetch_add(1, Ordering::Relaxed);
        let Some(rest) = key.strip_prefix(b"g/") else {
            self.strays.fetch_add(1, Ordering::Relaxed);
            return Verdict {
                garbage: false,
                scope_bytes: 0,
            };
        };
        let Some(slash) = rest.iter().position(|&b| b == b'/') else {
            return Verdict {
                garbage: false,
                scope_bytes: 0,
            };
        };
        let owner = &rest[..slash];
        let record = read(&[b"o/", owner].concat());
        let garbage = match record {
            Ok(Some(v)) => v != b"live",
            Ok(None) => true,
            Err(_) => false,
        };
        Verdict {
            garbage,
            scope_bytes: 2 + slash + 1,
        }
    }
}

fn opts(filter: Option<Arc<OwnerFilter>>) -> Options {
    Options {
        memtable_size_bytes: 16 << 10,
        target_file_size_bytes: 16 << 10,
        l1_max_bytes: 64 << 10,
        background_threads: false,
        compaction_filter: filter.map(|f| f as Arc<dyn CompactionFilter>),
        ..Options::default()
    }
}

fn item(owner: u32, i: u32) -> String {
    format!("g/{owner}/{i:04}")
}

/// Every key of the database, raw.
fn keys(db: &Db) -> Vec<String> {
    let mut out = Vec::new();
    let mut scan = db.scan::<&[u8], _>(..);
    while let Some((k, _)) = scan.next().unwrap() {
        out.push(String::from_utf8(k.to_vec()).unwrap());
    }
    out
}

/// Owners 1..=4 with 200 items each (values both inline and in the value log), and keys
/// outside the prefix that look like items of dead owners.
fn fill(db: &Db) {
    for owner in 1..=4 {
        db.put(format!("o/{owner}"), "live").unwrap();
        for i in 0..200 {
            let value = if i % 10 == 0 {
                vec![b'v'; 2000]
            } else {
                vec![b'v'; 20]
            };
            db.put(item(owner, i), value).unwrap();
        }
    }
    for i in 0..50 {
        db.put(format!("x/2/{i}"), "outside the prefix").unwrap();
    }
    db.flush().unwrap();
}

#[test]
fn compaction_drops_the_items_of_dead_owners_and_only_them() {
    let filter = Arc::new(OwnerFilter::default());
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), opts(Some(filter.clone()))).unwrap();
    fill(&db);
    // Owner 2 deleted, owner 3's record overwritten, owner 4's rewritten live; one item of
    // owner 1 deleted (its tombstone must keep hiding it).
    db.delete("o/2").unwrap();
    db.put("o/3", "dead").unwrap();
    db.put("o/4", "live").unwrap();
    db.delete(item(1, 7)).unwrap();
    // Before a compaction the items are still there: only compaction drops them.
    assert_eq!(
        keys(&db).iter().filter(|k| k.starts_with("g/2/")).count(),
        200
    );
    let dropped_before = db.stats().compaction_entries_dropped;
    db.compact_range(None, None).unwrap();
    let left = keys(&db);
    for owner in [2, 3] {
        let prefix = format!("g/{owner}/");
        assert!(
            !left.iter().any(|k| k.starts_with(&prefix)),
            "items of dead owner {owner} survived"
        );
    }
    for owner in [1, 4] {
        let prefix = format!("g/{owner}/");
        let n = left.iter().filter(|k| k.starts_with(&prefix)).count();
        assert_eq!(n, if owner == 1 { 199 } else { 200 }, "owner {owner}");
    }
    assert!(!left.contains(&item(1, 7)), "a deleted item came back");
    assert_eq!(left.iter().filter(|k| k.starts_with("x/")).count(), 50);
    assert!(db.stats().compaction_entries_dropped - dropped_before >= 400);
    assert_eq!(filter.strays.load(Ordering::Relaxed), 0);
    // One verdict per owner's group and merge pass, not one per item.
    let judged = filter.judged.load(Ordering::Relaxed);
    assert!(
        judged > 0 && judged < 200,
        "{judged} verdicts for 800 items"
    );
    // The drop survives a reopen (it was written, not just hidden).
    drop(db);
    let db = Db::open(dir.path(), opts(Some(filter))).unwrap();
    assert_eq!(keys(&db), left);
}

/// A verdict about one key (scope 0) covers that key alone, never a longer key it is a
/// prefix of.
#[test]
fn a_verdict_about_one_key_covers_no_other() {
    #[derive(Debug)]
    struct DropShort;
    impl CompactionFilter for DropShort {
        fn prefix(&self) -> &[u8] {
            b"k"
        }
        fn judge(&self, key: &[u8], _read: ReadLatest<'_>) -> Verdict {
            Verdict {
                garbage: key == b"k",
                scope_bytes: 0,
            }
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let options = Options {
        compaction_filter: Some(Arc::new(DropShort)),
        ..opts(None)
    };
    let db = Db::open(dir.path(), options).unwrap();
    for k in ["k", "k1", "k2", "kk"] {
        db.put(k, "v").unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    assert_eq!(keys(&db), ["k1", "k2", "kk"]);
}

/// Without a filter the same history keeps every item.
#[test]
fn without_a_filter_compaction_keeps_every_item() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), opts(None)).unwrap();
    fill(&db);
    db.delete("o/2").unwrap();
    db.compact_range(None, None).unwrap();
    let left = keys(&db);
    assert_eq!(left.iter().filter(|k| k.starts_with("g/")).count(), 800);
}
