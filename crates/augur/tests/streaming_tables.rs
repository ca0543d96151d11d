//! Tables bigger than the SSTable builder's sample, which flush and compaction write block by
//! block in a layout fixed from the sample and their hints (issue 28): keys of many lengths
//! sharing prefixes, overwrites and deletes, inline values long enough to need 8-byte
//! references, and value pointers mixed in after a reopen with a lower separation threshold
//! (compaction then merges inputs whose values were written under either threshold). After
//! every phase the database reads like a `BTreeMap` and verifies.

use augur::{CompactionStyle, Db, Options};
use std::collections::BTreeMap;

fn options(threshold: usize, style: CompactionStyle) -> Options {
    Options {
        memtable_size_bytes: 2 << 20,
        target_file_size_bytes: 1 << 20,
        l1_max_bytes: 4 << 20,
        value_separation_threshold: threshold,
        compaction: Some(style),
        ..Options::default()
    }
}

/// Key `i`: one of 16 prefixes of different lengths, then the number, then 0–40 filler bytes.
fn key(i: u64) -> Vec<u8> {
    let group = i % 16;
    let mut k = format!("{}{:07}", "g".repeat(1 + group as usize * 3), i / 16).into_bytes();
    k.extend(std::iter::repeat_n(b'~', (i * 7 % 41) as usize));
    k
}

/// Value of write `w` to key `i`: mostly short, now and then 1.5 KiB.
fn value(i: u64, w: u64) -> Vec<u8> {
    let len = if (i + w).is_multiple_of(97) {
        1500
    } else {
        ((i * 13 + w) % 90) as usize
    };
    vec![(i + w) as u8; len]
}

fn check(db: &Db, model: &BTreeMap<Vec<u8>, Vec<u8>>) {
    let all: Vec<(Vec<u8>, Vec<u8>)> = db.iter().map(|r| r.unwrap()).collect();
    assert_eq!(all.len(), model.len());
    assert!(all
        .iter()
        .zip(model)
        .all(|((k, v), (mk, mv))| k == mk && v == mv));
    for (k, v) in model.iter().step_by(37) {
        assert_eq!(db.get(k).unwrap().as_ref(), Some(v));
    }
    db.verify().unwrap();
}

#[test]
fn big_tables_read_back_through_flush_and_compaction() {
    for style in [CompactionStyle::Leveled, CompactionStyle::Flsm] {
        let dir = tempfile::tempdir().unwrap();
        let mut model = BTreeMap::new();
        let write = |db: &Db,
                     model: &mut BTreeMap<Vec<u8>, Vec<u8>>,
                     range: std::ops::Range<u64>,
                     w: u64| {
            for i in range {
                let k = key(i);
                if (i + w).is_multiple_of(11) {
                    db.delete(&k).unwrap();
                    model.remove(&k);
                } else {
                    let v = value(i, w);
                    db.put(&k, &v).unwrap();
                    model.insert(k, v);
                }
            }
        };
        // Every value inline: 1.5 KiB values make blocks of more than 64 KiB of values.
        {
            let db = Db::open(dir.path(), options(usize::MAX, style)).unwrap();
            write(&db, &mut model, 0..40_000, 0);
            write(&db, &mut model, 20_000..60_000, 1);
            db.flush().unwrap();
            db.wait_for_compactions().unwrap();
            check(&db, &model);
        }
        // Values of 64 bytes and more go to the value log; the tables hold inline values
        // longer than that from before.
        {
            let db = Db::open(dir.path(), options(64, style)).unwrap();
            check(&db, &model);
            write(&db, &mut model, 10_000..50_000, 2);
            db.flush().unwrap();
            db.compact_range(None, None).unwrap();
            check(&db, &model);
        }
        let db = Db::open(dir.path(), options(usize::MAX, style)).unwrap();
        write(&db, &mut model, 0..30_000, 3);
        db.compact_range(None, None).unwrap();
        check(&db, &model);
    }
}

/// The head widths of the tables in `dir`, in key order of their smallest key, with their
/// entry counts and smallest keys.
fn tables(dir: &std::path::Path) -> Vec<(Vec<u8>, u32, u64)> {
    let mut out: Vec<(Vec<u8>, u32, u64)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "sst"))
        .map(|p| {
            let d = augur::inspect::sst(&p).unwrap();
            let first = augur::inspect::sst_entries(&p, false)
                .unwrap()
                .next()
                .unwrap()
                .unwrap()
                .key;
            (first, d.properties.slot.head_bytes, d.properties.entries)
        })
        .collect();
    out.sort();
    out
}

/// A compaction output whose keys change shape partway (long keys told apart by their last
/// bytes, then short keys told apart at once) is ended where its layout stops fitting, and
/// the next output chooses a head that fits the new keys: the keys take far fewer bytes, and
/// everything reads back.
#[test]
fn a_compaction_output_ends_where_its_keys_change_shape() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        memtable_size_bytes: 64 << 20,
        target_file_size_bytes: 64 << 20,
        ..Options::default()
    };
    let db = Db::open(dir.path(), opts.clone()).unwrap();
    let stem = "s".repeat(60);
    let mut model = BTreeMap::new();
    let long = (0..20_000u64).map(|i| format!("a/{:05}/{stem}/{i:08}", i / 8).into_bytes());
    let short = (0..60_000u64).map(|i| format!("b/{i:07}").into_bytes());
    for (n, k) in long.chain(short).enumerate() {
        let v = format!("value {n}").into_bytes();
        db.put(&k, &v).unwrap();
        model.insert(k, v);
    }
    db.compact_range(None, None).unwrap();
    check(&db, &model);
    drop(db);
    let tables = tables(dir.path());
    assert!(tables.len() >= 2, "one output, not cut: {tables:?}");
    let first_short = tables.iter().find(|t| t.0.starts_with(b"b/")).unwrap();
    assert!(
        first_short.1 < tables[0].1 && first_short.1 <= 8,
        "the short keys' table keeps a wide head: {tables:?}"
    );
    assert_eq!(tables.iter().map(|t| t.2).sum::<u64>(), model.len() as u64);
    let db = Db::open(dir.path(), opts).unwrap();
    check(&db, &model);
}
