//! Key expiry on a real server process (issue 43): what `against_redis.rs` cannot compare
//! with redis-server byte for byte. A key's expiry time survives a restart (a clean one, and
//! a kill with `--sync always`), exactly, and a key that expired does not come back; `INFO
//! keyspace` counts keys with a TTL (`expires=`) and never counts expired keys as exact.

mod common;

use common::{server, Raw, ServerProcess};
use std::time::{Duration, Instant};

/// The integer of a `:n` reply.
fn int(c: &mut Raw, words: &[&str]) -> i64 {
    let reply = c.text(words);
    reply
        .strip_prefix(':')
        .and_then(|r| r.strip_suffix("\r\n"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{words:?}: not an integer reply: {reply:?}"))
}

/// Sets the keys the restart test checks; returns when the short-lived ones were set.
fn set_keys(c: &mut Raw) -> Instant {
    assert_eq!(c.text(&["SET", "long", "v", "EX", "1000"]), "+OK\r\n");
    assert_eq!(c.text(&["SETEX", "setex", "2000", "w"]), "+OK\r\n");
    assert_eq!(c.text(&["SET", "plain", "p"]), "+OK\r\n");
    assert_eq!(c.text(&["SET", "persisted", "x", "EX", "1000"]), "+OK\r\n");
    assert_eq!(c.text(&["PERSIST", "persisted"]), ":1\r\n");
    assert_eq!(c.text(&["SET", "counter", "1", "PX", "3000000"]), "+OK\r\n");
    assert_eq!(c.text(&["INCR", "counter"]), ":2\r\n");
    let set = Instant::now();
    // Gone before the restart, and must stay gone.
    assert_eq!(c.text(&["SET", "gone", "v", "PX", "100"]), "+OK\r\n");
    // Alive at the restart, gone a little after.
    assert_eq!(c.text(&["SET", "soon", "v", "PX", "2000"]), "+OK\r\n");
    assert_eq!(c.text(&["SET", "old", "v"]), "+OK\r\n");
    assert_eq!(c.text(&["PEXPIRE", "old", "100"]), ":1\r\n");
    set
}

/// A key's TTL survives a restart exactly (its absolute expiry time is stored), and a key
/// that expired before the restart does not come back; one that expires after it goes then.
/// Both a clean stop (SIGTERM: the memtable is flushed into a table) and a kill under
/// `--sync always` (the WAL is replayed).
#[test]
fn a_ttl_survives_a_restart_and_an_expired_key_does_not_come_back() {
    for (how, args) in [("SIGTERM", &[][..]), ("SIGKILL", &["--sync", "always"][..])] {
        let tmp = tempfile::tempdir().unwrap();
        let db = tmp.path().join("db");
        let s = ServerProcess::start(&db, args);
        let mut c = s.raw();
        let set = set_keys(&mut c);
        let times: Vec<i64> = ["long", "setex", "counter", "soon"]
            .iter()
            .map(|k| int(&mut c, &["PEXPIRETIME", k]))
            .collect();
        std::thread::sleep(Duration::from_millis(200));
        assert_eq!(c.text(&["GET", "gone"]), "$-1\r\n");
        assert_eq!(c.text(&["GET", "old"]), "$-1\r\n");
        drop(c);
        if how == "SIGTERM" {
            assert_eq!(s.terminate(), Some(0));
        } else {
            s.kill();
        }
        let s = ServerProcess::start(&db, args);
        let mut c = s.raw();
        assert!(
            set.elapsed() < Duration::from_millis(2000),
            "{how}: the restart took too long for the test"
        );
        let after: Vec<i64> = ["long", "setex", "counter", "soon"]
            .iter()
            .map(|k| int(&mut c, &["PEXPIRETIME", k]))
            .collect();
        assert_eq!(
            after, times,
            "{how}: expiry times changed across the restart"
        );
        let ttl = int(&mut c, &["TTL", "long"]);
        assert!((998..=1000).contains(&ttl), "{how}: TTL long = {ttl}");
        assert_eq!(c.text(&["GET", "counter"]), "$1\r\n2\r\n", "{how}");
        assert_eq!(c.text(&["TTL", "plain"]), ":-1\r\n", "{how}");
        assert_eq!(c.text(&["TTL", "persisted"]), ":-1\r\n", "{how}");
        assert_eq!(c.text(&["GET", "persisted"]), "$1\r\nx\r\n", "{how}");
        for gone in ["gone", "old"] {
            assert_eq!(c.text(&["GET", gone]), "$-1\r\n", "{how}: {gone}");
            assert_eq!(c.text(&["TTL", gone]), ":-2\r\n", "{how}: {gone}");
        }
        assert_eq!(c.text(&["EXISTS", "soon"]), ":1\r\n", "{how}");
        // "soon" expires 2 s after it was set.
        let left = Duration::from_millis(2100).saturating_sub(set.elapsed());
        std::thread::sleep(left);
        assert_eq!(c.text(&["GET", "soon"]), "$-1\r\n", "{how}");
        assert_eq!(c.text(&["DBSIZE"]), ":5\r\n", "{how}");
        assert_eq!(
            c.text(&["KEYS", "*"]),
            "*5\r\n$7\r\ncounter\r\n$4\r\nlong\r\n$9\r\npersisted\r\n$5\r\nplain\r\n\
             $5\r\nsetex\r\n",
            "{how}"
        );
        // Saved into a table (and the server restarted once more): the same.
        assert_eq!(c.text(&["SAVE"]), "+OK\r\n");
        drop(c);
        assert_eq!(s.terminate(), Some(0));
        let s = ServerProcess::start(&db, args);
        let mut c = s.raw();
        assert_eq!(c.text(&["DBSIZE"]), ":5\r\n", "{how}");
        assert_eq!(int(&mut c, &["PEXPIRETIME", "long"]), times[0], "{how}");
    }
}

/// `db0:` of `INFO keyspace`.
fn keyspace(c: &mut Raw) -> String {
    let text = c.text(&["INFO", "keyspace"]);
    text.split("\r\n")
        .find(|l| l.starts_with("db0:"))
        .unwrap_or("")
        .to_string()
}

/// The value of `field=` in a keyspace line.
fn field(line: &str, name: &str) -> u64 {
    line.trim_start_matches("db0:")
        .split(',')
        .find_map(|f| f.strip_prefix(&format!("{name}=")))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in {line:?}"))
}

/// `INFO keyspace` after a DBSIZE: `expires=` counts the keys with a TTL and `avg_ttl=`
/// their average TTL; the count is exact only until the first of the counted keys expires
/// (then it is marked estimated, and the next DBSIZE counts without it).
#[test]
fn info_keyspace_counts_keys_with_a_ttl_and_never_expired_ones() {
    let (_tmp, s) = server(&[]);
    let mut c = s.raw();
    for i in 0..10 {
        let key = format!("k{i}");
        if i < 4 {
            assert_eq!(c.text(&["SET", &key, "v", "EX", "1000"]), "+OK\r\n");
        } else {
            assert_eq!(c.text(&["SET", &key, "v"]), "+OK\r\n");
        }
    }
    assert_eq!(c.text(&["DBSIZE"]), ":10\r\n");
    let line = keyspace(&mut c);
    assert!(line.starts_with("db0:keys=10,expires=4,avg_ttl="), "{line}");
    assert!(!line.contains("keys_estimated"), "{line}");
    let avg = field(&line, "avg_ttl");
    assert!((990_000..=1_000_000).contains(&avg), "{line}");

    assert_eq!(c.text(&["SET", "short", "v", "PX", "300"]), "+OK\r\n");
    assert!(keyspace(&mut c).ends_with(",keys_estimated=1"));
    assert_eq!(c.text(&["DBSIZE"]), ":11\r\n");
    let line = keyspace(&mut c);
    assert!(line.starts_with("db0:keys=11,expires=5,"), "{line}");
    std::thread::sleep(Duration::from_millis(400));
    // No write since, but a counted key expired: no longer exact.
    let line = keyspace(&mut c);
    assert!(line.ends_with(",keys_estimated=1"), "{line}");
    assert_eq!(c.text(&["DBSIZE"]), ":10\r\n");
    assert!(keyspace(&mut c).starts_with("db0:keys=10,expires=4,"));
    // A key whose TTL is removed no longer counts as expiring.
    assert_eq!(c.text(&["PERSIST", "k0"]), ":1\r\n");
    assert_eq!(c.text(&["DBSIZE"]), ":10\r\n");
    assert!(keyspace(&mut c).starts_with("db0:keys=10,expires=3,"));
    // Every key expired: DBSIZE 0 and no keyspace line, as Redis.
    for i in 0..10 {
        c.text(&["PEXPIRE", &format!("k{i}"), "1"]);
    }
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(c.text(&["DBSIZE"]), ":0\r\n");
    assert_eq!(keyspace(&mut c), "");
}
