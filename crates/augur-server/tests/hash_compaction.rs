//! The fields of hashes that are gone — deleted, overwritten by a string, emptied by HDEL,
//! renamed away, expired, recreated under a new version, flushed — are dropped by
//! compaction, and only they: a real server writes the hashes, stops, and the database is
//! reopened in this process as the server opens it (`Server::open`, which installs the
//! field filter), compacted, and read raw. Before the compaction the garbage is still there
//! (DEL wrote only the record), so the test fails without the filter. Then a restarted
//! server reads every live hash whole, and an old database (written before the layout)
//! opens with its strings intact.

mod common;

use augur_server::config::Config;
use augur_server::encoding::{decode, engine_key, parse_field_key, Value, FIELDS};
use augur_server::state::Server;
use common::{Raw, ServerProcess};
use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::Path;

/// Field keys in the database, by (user key, version).
fn field_keys(db: &augur::Db) -> BTreeMap<(Vec<u8>, u64), usize> {
    let mut out = BTreeMap::new();
    let mut end = FIELDS.to_vec();
    end[1] += 1;
    let mut scan = db.scan((Bound::Included(FIELDS.to_vec()), Bound::Excluded(end)));
    while let Some((k, _)) = scan.next().unwrap() {
        let f = parse_field_key(k).expect("a field key");
        *out.entry((f.user.to_vec(), f.version)).or_default() += 1;
    }
    out
}

/// The version of the hash at `user` now, if it is a hash.
fn version_of(db: &augur::Db, user: &[u8]) -> Option<u64> {
    match decode(db.get(engine_key(user)).unwrap()?).unwrap() {
        Value::Hash(meta) => Some(meta.version),
        Value::String(_) => None,
    }
}

fn open(dir: &Path) -> Server {
    let args = ["augur-server", "--db", dir.to_str().unwrap()];
    let config = Config::from_args(args.iter().map(|s| s.to_string())).unwrap();
    Server::open(config).unwrap().0
}

fn hset(c: &mut Raw, key: &str, fields: std::ops::Range<u32>) {
    for chunk in fields.collect::<Vec<_>>().chunks(50) {
        let mut words: Vec<Vec<u8>> = vec![b"HSET".to_vec(), key.as_bytes().to_vec()];
        for i in chunk {
            words.push(format!("field:{i:04}").into_bytes());
            // Some values large enough for the value log.
            let len = if i % 7 == 0 { 1500 } else { 20 };
            words.push(vec![b'v'; len]);
        }
        let refs: Vec<&[u8]> = words.iter().map(Vec::as_slice).collect();
        let reply = c.cmd(&refs);
        assert!(reply.starts_with(b":"), "{reply:?}");
    }
}

#[test]
fn compaction_drops_the_fields_of_gone_hashes_and_keeps_live_ones() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    // What each hash should hold after everything: its live fields.
    let live: &[(&str, usize)] = &[("live", 90), ("renamed:new", 50), ("recreated", 10)];
    {
        let s = ServerProcess::start(&dir, &[]);
        let mut c = s.raw();
        for key in ["deleted", "overwritten", "expired", "live", "flushed:no"] {
            hset(&mut c, key, 0..100);
        }
        hset(&mut c, "renamed", 0..50);
        hset(&mut c, "recreated", 0..50);
        hset(&mut c, "emptied", 0..5);
        // Into tables, so compaction (not the memtable) meets the fields.
        assert_eq!(c.text(&["SAVE"]), "+OK\r\n");
        assert_eq!(c.text(&["DEL", "deleted"]), ":1\r\n");
        assert_eq!(c.text(&["SET", "overwritten", "a string"]), "+OK\r\n");
        assert_eq!(c.text(&["PEXPIRE", "expired", "50"]), ":1\r\n");
        let fields: Vec<String> = (0..10).map(|i| format!("field:{i:04}")).collect();
        let mut hdel: Vec<&str> = vec!["HDEL", "live"];
        hdel.extend(fields.iter().map(String::as_str));
        assert_eq!(c.text(&hdel), ":10\r\n");
        assert_eq!(c.text(&["RENAME", "renamed", "renamed:new"]), "+OK\r\n");
        assert_eq!(c.text(&["DEL", "recreated"]), ":1\r\n");
        hset(&mut c, "recreated", 0..10);
        let mut hdel: Vec<&str> = vec!["HDEL", "emptied"];
        hdel.extend(fields[..5].iter().map(String::as_str));
        assert_eq!(c.text(&hdel), ":5\r\n");
        assert_eq!(c.text(&["EXISTS", "emptied"]), ":0\r\n");
        assert_eq!(c.text(&["RENAME", "flushed:no", "gone-too"]), "+OK\r\n");
        assert_eq!(c.text(&["DEL", "gone-too"]), ":1\r\n");
        assert_eq!(c.text(&["SAVE"]), "+OK\r\n");
        std::thread::sleep(std::time::Duration::from_millis(100));
        assert_eq!(s.terminate(), Some(0));
    }
    let server = open(&dir);
    let db_ref = server.db().unwrap();
    let db = &*db_ref;
    let before = field_keys(db);
    let total_before: usize = before.values().sum();
    // The garbage is there: DEL and the rest wrote only records (HDEL of live fields wrote
    // tombstones, which compaction keeps or drops by the engine's rules).
    assert!(
        total_before > 600,
        "{total_before} field keys before the compaction"
    );
    db.compact_range(None, None).unwrap();
    let after = field_keys(db);
    for ((user, version), n) in &after {
        assert_eq!(
            version_of(db, user),
            Some(*version),
            "{n} fields of {:?} version {version} survived without their hash",
            String::from_utf8_lossy(user)
        );
    }
    let by_key: BTreeMap<String, usize> = after
        .iter()
        .map(|((u, _), n)| (String::from_utf8_lossy(u).into_owned(), *n))
        .collect();
    let want: BTreeMap<String, usize> = live.iter().map(|(k, n)| (k.to_string(), *n)).collect();
    assert_eq!(by_key, want);
    assert!(db.stats().compaction_entries_dropped as usize >= total_before - 150);
    drop(db_ref); // the guard holds the database open too
    drop(server);

    // The live hashes read whole after a restart; the others are gone.
    let s = ServerProcess::start(&dir, &[]);
    let mut c = s.raw();
    for (key, n) in live {
        assert_eq!(c.text(&["HLEN", key]), format!(":{n}\r\n"));
        let all = c.cmd(&[b"HGETALL", key.as_bytes()]);
        assert!(
            all.starts_with(format!("*{}\r\n", 2 * n).as_bytes()),
            "{key}"
        );
    }
    assert_eq!(c.text(&["TYPE", "overwritten"]), "+string\r\n");
    assert_eq!(c.text(&["DBSIZE"]), ":4\r\n");
}

/// A database written by the server before this layout (a string per key, stored as is,
/// any bytes) opens with every string, value and expiry intact, including keys and values
/// that begin with the bytes the layout reserves, and the keys walks show them all.
#[test]
fn an_old_layout_database_opens_with_its_strings_intact() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let old: Vec<(Vec<u8>, Vec<u8>)> = vec![
        (b"plain".to_vec(), b"value".to_vec()),
        (
            b"binary".to_vec(),
            b"\xff\x01looks like a hash record".to_vec(),
        ),
        (b"\xff".to_vec(), b"\xff".to_vec()),
        (b"\xff\x01".to_vec(), b"the layout record's key".to_vec()),
        (
            b"\xff\x02\x00\x00\x00\x01k".to_vec(),
            b"a field key's shape".to_vec(),
        ),
    ];
    {
        let db = augur::Db::open(&dir, augur::Options::default()).unwrap();
        for (k, v) in &old {
            db.put(k, v).unwrap();
        }
        db.put_expiring("expiring", b"\xff", 99_999_999_999_000)
            .unwrap();
    }
    let s = ServerProcess::start(&dir, &[]);
    let mut c = s.raw();
    for (k, v) in &old {
        let mut want = format!("${}\r\n", v.len()).into_bytes();
        want.extend_from_slice(v);
        want.extend_from_slice(b"\r\n");
        assert_eq!(c.cmd(&[b"GET", k]), want, "{k:?}");
        assert_eq!(c.cmd(&[b"TYPE", k]), b"+string\r\n");
    }
    assert_eq!(c.text(&["PEXPIRETIME", "expiring"]), ":99999999999000\r\n");
    assert_eq!(c.cmd(&[b"GET", b"expiring"]), b"$1\r\n\xff\r\n");
    assert_eq!(c.text(&["DBSIZE"]), ":6\r\n");
    let keys = c.cmd(&[b"KEYS", b"*"]);
    assert!(keys.starts_with(b"*6\r\n"), "{keys:?}");
    // A hash now works beside them, and a restart changes nothing.
    assert_eq!(c.text(&["HSET", "h", "f", "v"]), ":1\r\n");
    drop(c);
    assert_eq!(s.terminate(), Some(0));
    let s = ServerProcess::start(&dir, &[]);
    let mut c = s.raw();
    assert_eq!(
        c.cmd(&[b"GET", b"\xff\x01"]),
        b"$23\r\nthe layout record's key\r\n"
    );
    assert_eq!(c.text(&["HGET", "h", "f"]), "$1\r\nv\r\n");
    assert_eq!(c.text(&["DBSIZE"]), ":7\r\n");
}
