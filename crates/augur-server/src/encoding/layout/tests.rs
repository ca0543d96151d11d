//! Opening databases in every state: fresh, old (written before the layout, with user keys
//! and values in the reserved range), interrupted in the middle of a migration, read-only,
//! and from a newer server; and the versions' promise across reopens.

use super::*;
use crate::encoding::{decode, user_key, Value, USER_KEYS_END};
use augur::{Found, Options};
use std::collections::BTreeMap;

fn open(dir: &std::path::Path) -> Db {
    let options = Options {
        background_threads: false,
        ..Options::default()
    };
    Db::open(dir, options).unwrap()
}

fn open_read_only(dir: &std::path::Path) -> Db {
    let options = Options {
        read_only: true,
        ..Options::default()
    };
    Db::open(dir, options).unwrap()
}

/// A far-future expiry time (the tests never wait for it).
const LATER: u64 = 99_999_999_999_000;

/// What an old server wrote: user keys and values, including every reserved shape.
fn old_data() -> BTreeMap<Vec<u8>, (Vec<u8>, Option<u64>)> {
    let mut d = BTreeMap::new();
    let mut put = |k: &[u8], v: &[u8], at: Option<u64>| {
        d.insert(k.to_vec(), (v.to_vec(), at));
    };
    put(b"", b"the empty key", None);
    put(b"plain", b"value", None);
    put(b"binary", b"\xffstarts with 0xff", None);
    put(b"escaped-looking", b"\xff\x00already looks escaped", None);
    // 18 bytes shaped like a hash record.
    put(
        b"hash-looking",
        b"\xff\x01\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x02",
        None,
    );
    put(b"expiring", b"\xffx", Some(LATER));
    put(b"big", &[0xFF; 3000], None);
    put(b"\xff", b"key is 0xff", None);
    put(b"\xff\x00", b"\xff", None);
    put(b"\xff\x01", b"a user value at the record's key", None);
    put(
        b"\xff\x01augur",
        &[MAGIC.as_slice(), b"not at the record key"].concat(),
        None,
    );
    put(
        b"\xff\x02\x00\x00\x00\x01h",
        b"looks like a field",
        Some(LATER),
    );
    put(b"\xff\xff\xff", b"", None);
    d
}

fn write_old(db: &Db, data: &BTreeMap<Vec<u8>, (Vec<u8>, Option<u64>)>) {
    for (k, (v, at)) in data {
        match at {
            Some(at) => db.put_expiring(k, v, *at).unwrap(),
            None => db.put(k, v).unwrap(),
        }
    }
}

/// Every user key of the migrated database with its string value and expiry, read through
/// the layout; asserts that the reserved range holds only the record.
fn read_back(db: &Db) -> BTreeMap<Vec<u8>, (Vec<u8>, Option<u64>)> {
    let mut out = BTreeMap::new();
    let mut scan = db.scan::<&[u8], _>(..);
    while let Some((k, _)) = scan.next().unwrap() {
        if k >= USER_KEYS_END {
            assert_eq!(k, LAYOUT_KEY, "a stray key in the reserved range");
            continue;
        }
        let user = user_key(k).unwrap().into_owned();
        let Found { value, expire_at } = db.get_with_expiry(k).unwrap().unwrap();
        match decode(value).unwrap() {
            Value::String(v) => out.insert(user, (v, expire_at)),
            Value::Hash(h) => panic!("{user:?} read as a hash {h:?}"),
        };
    }
    out
}

fn record(db: &Db) -> Record {
    Record::decode(&db.get(LAYOUT_KEY).unwrap().unwrap())
        .unwrap()
        .unwrap()
}

#[test]
fn an_old_database_is_migrated_without_changing_what_it_holds() {
    let dir = tempfile::tempdir().unwrap();
    let data = old_data();
    {
        let db = open(dir.path());
        write_old(&db, &data);
        db.flush().unwrap();
    }
    let db = open(dir.path());
    let (_, migrated) = prepare(&db, false).unwrap();
    assert_eq!(migrated.keys, 6);
    assert_eq!(migrated.values, 5);
    assert_eq!(read_back(&db), data);
    assert_eq!(record(&db).migrating, None);
    // A second open finds a ready database and changes nothing.
    drop(db);
    let db = open(dir.path());
    let (_, again) = prepare(&db, false).unwrap();
    assert_eq!(again, Migrated::default());
    assert_eq!(read_back(&db), data);
}

#[test]
fn a_migration_interrupted_between_batches_resumes_without_escaping_twice() {
    let dir = tempfile::tempdir().unwrap();
    let mut data = old_data();
    for i in 0..3 * BATCH_ENTRIES as u32 {
        let v = if i % 2 == 0 {
            format!("\u{ff}{i}")
        } else {
            format!("{i}")
        };
        let mut value = v.into_bytes();
        if i % 2 == 0 {
            value[0] = 0xFF;
        }
        data.insert(format!("k{i:06}").into_bytes(), (value, None));
    }
    {
        let db = open(dir.path());
        write_old(&db, &data);
        let err = prepare_with(&db, false, Some(1)).unwrap_err();
        assert!(matches!(err, LayoutError::Stopped), "{err}");
        assert!(record(&db).migrating.is_some());
    }
    // A read-only open refuses the half-migrated database.
    {
        let db = open_read_only(dir.path());
        let err = prepare(&db, true).err().unwrap();
        assert!(matches!(err, LayoutError::NeedsMigration), "{err}");
    }
    let db = open(dir.path());
    let (_, migrated) = prepare(&db, false).unwrap();
    assert_eq!(migrated.keys, 0);
    assert!(migrated.values > 0 && migrated.values < 3 * BATCH_ENTRIES as u64 / 2);
    assert_eq!(read_back(&db), data);
}

#[test]
fn read_only_opens_refuse_old_databases_and_accept_empty_ones() {
    let dir = tempfile::tempdir().unwrap();
    drop(open(dir.path()));
    let db = open_read_only(dir.path());
    assert!(prepare(&db, true).is_ok());
    drop(db);
    {
        let db = open(dir.path());
        db.put("k", "v").unwrap();
    }
    let db = open_read_only(dir.path());
    let err = prepare(&db, true).err().unwrap();
    assert!(err.to_string().contains("without --read-only"), "{err}");
}

#[test]
fn newer_and_damaged_records_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut newer = MAGIC.to_vec();
    newer.extend_from_slice(&(LAYOUT + 1).to_be_bytes());
    db.put(LAYOUT_KEY, &newer).unwrap();
    let err = prepare(&db, false).err().unwrap();
    assert!(matches!(err, LayoutError::Newer(2)), "{err}");
    let mut damaged = MAGIC.to_vec();
    damaged.extend_from_slice(&LAYOUT.to_be_bytes());
    damaged.push(7);
    db.put(LAYOUT_KEY, &damaged).unwrap();
    let err = prepare(&db, false).err().unwrap();
    assert!(matches!(err, LayoutError::Unreadable(_)), "{err}");
}

#[test]
fn versions_are_never_issued_twice_across_reopens_and_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let mut seen = Vec::new();
    for _ in 0..3 {
        let db = open(dir.path());
        let (versions, _) = prepare(&db, false).unwrap();
        for _ in 0..5 {
            seen.push(versions.next(&db).unwrap());
        }
        // A used-up block raises the ceiling before the next version.
        *versions.state.lock() = (record(&db).version_ceiling - 1, record(&db).version_ceiling);
        let last = versions.next(&db).unwrap();
        let next = versions.next(&db).unwrap();
        assert_eq!(next, last + 1);
        assert!(record(&db).version_ceiling > next);
        seen.extend([last, next]);
    }
    let mut sorted = seen.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted.len(), seen.len(), "{seen:?}");
    assert_eq!(seen, sorted, "versions went backwards: {seen:?}");
}
