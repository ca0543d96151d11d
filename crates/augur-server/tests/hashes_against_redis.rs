//! Hashes against redis-server 7.0 (started on a free port when installed; skipped with a
//! message otherwise), under RESP2 and RESP3: every hash command's replies and errors, the
//! WRONGTYPE matrix (each string command on a hash, each hash command on a string), the
//! generic commands on hashes (TYPE, DEL, EXISTS, EXPIRE family, RENAME, COPY, SCAN TYPE,
//! KEYS, DBSIZE, FLUSHALL), transactions and WATCH, keys and values beginning with byte
//! 0xFF, hashes that actually expire, a full HSCAN of a large hash, and full SCANs (any
//! COUNT) over keys in and around the reserved range. Replies are
//! compared byte for byte except where Redis leaves the order open (a hash's fields) or
//! picks at random (HRANDFIELD): `common/differential.rs`. Random sequences are in
//! `hashes_random.rs`.

mod common;

use common::differential::{first_difference, run, words};
use common::{Raw, RedisProcess, ServerProcess};
use std::collections::BTreeSet;

type Words = Vec<Vec<u8>>;

fn cmds(list: &[&[&str]]) -> Vec<Words> {
    list.iter().map(|c| words(c)).collect()
}

/// Both servers, or `None` (with a message) when redis-server is not installed.
fn servers() -> Option<(RedisProcess, ServerProcess, tempfile::TempDir)> {
    let Some(redis) = RedisProcess::start() else {
        eprintln!("skipped: redis-server is not installed (apt-get install redis-server)");
        return None;
    };
    let tmp = tempfile::tempdir().unwrap();
    let augur = ServerProcess::start(&tmp.path().join("db"), &["--enable-flush"]);
    Some((redis, augur, tmp))
}

/// Runs `list` (after a FLUSHALL) on both servers in both protocols, one command per write
/// and all in one pipeline, and asserts the replies agree.
fn compare(redis: &RedisProcess, augur: &ServerProcess, name: &str, list: &[Words]) {
    let mut with_flush = vec![words(&["FLUSHALL"])];
    with_flush.extend_from_slice(list);
    for resp3 in [false, true] {
        for chunk in [1, 1000] {
            let each = move |_: usize| chunk;
            let want = run(redis.addr, &with_flush, resp3, &each, false);
            let got = run(augur.addr, &with_flush, resp3, &each, false);
            if let Some(d) = first_difference(&with_flush, &want, &got) {
                panic!(
                    "{name} (RESP{}, {chunk} per write): {d}",
                    if resp3 { 3 } else { 2 }
                );
            }
        }
    }
}

fn hash_commands() -> Vec<Words> {
    cmds(&[
        &["HSET", "h", "a", "1", "b", "2", "a", "3"],
        &["HGET", "h", "a"],
        &["HSET", "h", "a", "4"],
        &["HSET", "h"],
        &["HSET", "h", "a"],
        &["HSET", "h", "a", "1", "b"],
        &["HMSET", "h", "c", "3", "d", "4"],
        &["HMSET", "h", "c"],
        &["HSETNX", "h", "a", "9"],
        &["HSETNX", "h", "z", "9"],
        &["HSETNX", "new", "z", "9"],
        &["HSETNX", "h", "z"],
        &["HGET", "h", "nope"],
        &["HGET", "none", "a"],
        &["HGET", "h"],
        &["HMGET", "h", "a", "nope", "b", "a"],
        &["HMGET", "none", "a", "b"],
        &["HMGET", "h"],
        &["HLEN", "h"],
        &["HLEN", "none"],
        &["HEXISTS", "h", "a"],
        &["HEXISTS", "h", "nope"],
        &["HEXISTS", "none", "a"],
        &["HSTRLEN", "h", "a"],
        &["HSTRLEN", "h", "nope"],
        &["HSTRLEN", "none", "a"],
        &["HGETALL", "h"],
        &["HGETALL", "none"],
        &["HKEYS", "h"],
        &["HVALS", "h"],
        &["HKEYS", "none"],
        &["HVALS", "none"],
        &["HGETALL", "h", "x"],
        &["HINCRBY", "h", "a", "5"],
        &["HINCRBY", "h", "n", "-3"],
        &["HINCRBY", "h", "a", "x"],
        &["HINCRBY", "h", "a", "1.5"],
        &["HINCRBY", "h", "a", "9223372036854775807"],
        &["HINCRBY", "h", "n", "-9223372036854775808"],
        &["HINCRBY", "h", "m", "-9223372036854775808"],
        &["HINCRBY", "h", "m", "-1"],
        &[
            "HSET",
            "h",
            "sp",
            " 1",
            "big",
            "12345678901234567890",
            "neg0",
            "-0",
            "lead",
            "01",
        ],
        &["HINCRBY", "h", "sp", "1"],
        &["HINCRBY", "h", "big", "1"],
        &["HINCRBY", "h", "neg0", "1"],
        &["HINCRBY", "h", "lead", "1"],
        &["HINCRBYFLOAT", "h", "f", "0.1"],
        &["HINCRBYFLOAT", "h", "f", "0.2"],
        &["HINCRBYFLOAT", "h", "a", "1e17"],
        &["HINCRBYFLOAT", "h", "big", "0"],
        &["HINCRBYFLOAT", "h", "sp", "1"],
        &["HINCRBYFLOAT", "h", "f", "1e400"],
        &["HINCRBYFLOAT", "h", "f", "inf"],
        &["HINCRBYFLOAT", "h", "f", "-inf"],
        &["HINCRBYFLOAT", "h", "f", "nan"],
        &["HINCRBYFLOAT", "h", "f", "x"],
        &["HINCRBYFLOAT", "h", "f", "0x10"],
        &["HSET", "h", "huge", "1e4932"],
        &["HINCRBYFLOAT", "h", "huge", "1e4932"],
        &["HINCRBYFLOAT", "none2", "f", "-0"],
        &["HGETALL", "h"],
        &["HDEL", "h", "a", "nope", "a"],
        &["HDEL", "none", "a"],
        &["HDEL", "h"],
        &["HLEN", "h"],
        &[
            "HDEL", "h", "b", "c", "d", "z", "n", "m", "sp", "big", "neg0", "lead", "f", "huge",
        ],
        &["HLEN", "h"],
        &["EXISTS", "h"],
        &["TYPE", "h"],
        &["HGETALL", "h"],
        &["HGETALL", "none2"],
        &["HSET", "e", "", ""],
        &["HGET", "e", ""],
        &["HSTRLEN", "e", ""],
        &["HGETALL", "e"],
        &[
            "HSET",
            "\\xffkey",
            "\\xfffield",
            "\\xffvalue",
            "f\\xff",
            "\\xff\\x01",
        ],
        &["HGETALL", "\\xffkey"],
        &["HGET", "\\xffkey", "\\xfffield"],
        &["SET", "\\xff\\x01", "\\xff\\x00x"],
        &["GET", "\\xff\\x01"],
        &["SET", "\\xff", "\\xff"],
        &["KEYS", "*"],
        &["SCAN", "0", "MATCH", "\\xff*", "COUNT", "100"],
        &["TYPE", "\\xffkey"],
        &["DBSIZE"],
    ])
}

#[test]
fn hash_commands_reply_as_redis() {
    let Some((redis, augur, _tmp)) = servers() else {
        return;
    };
    compare(&redis, &augur, "hash commands", &hash_commands());
}

/// Every string command on a hash, and every hash command on a string: WRONGTYPE where
/// Redis says it, with Redis's order of checks (arguments first for some, NX/GET for SET).
fn wrongtype() -> Vec<Words> {
    cmds(&[
        &["HSET", "h", "f", "v"],
        &["SET", "s", "v"],
        &["GET", "h"],
        &["SET", "h", "x", "GET"],
        &["SET", "h", "x", "NX", "GET"],
        &["SET", "h", "x", "NX"],
        &["SET", "h", "x", "XX", "KEEPTTL"],
        &["TYPE", "h"],
        &["HSET", "h", "f", "v"],
        &["GETSET", "h", "x"],
        &["MGET", "h", "s", "none"],
        &["STRLEN", "h"],
        &["APPEND", "h", "x"],
        &["INCR", "h"],
        &["DECR", "h"],
        &["INCRBY", "h", "x"],
        &["INCRBY", "h", "1"],
        &["DECRBY", "h", "1"],
        &["INCRBYFLOAT", "h", "1"],
        &["INCRBYFLOAT", "h", "x"],
        &["GETRANGE", "h", "0", "1"],
        &["GETRANGE", "h", "0", "x"],
        &["SETRANGE", "h", "0", "x"],
        &["SETRANGE", "h", "0", ""],
        &["SETRANGE", "h", "-1", "x"],
        &["GETDEL", "h"],
        &["GETEX", "h"],
        &["GETEX", "h", "EX", "10"],
        &["GETEX", "h", "EX", "0"],
        &["SETNX", "h", "v"],
        &["MSETNX", "h", "v", "q", "1"],
        &["HGET", "s", "f"],
        &["HMGET", "s", "f"],
        &["HGETALL", "s"],
        &["HKEYS", "s"],
        &["HVALS", "s"],
        &["HLEN", "s"],
        &["HEXISTS", "s", "f"],
        &["HSTRLEN", "s", "f"],
        &["HDEL", "s", "f"],
        &["HSET", "s", "f", "v"],
        &["HSET", "s", "f"],
        &["HMSET", "s", "f", "v"],
        &["HSETNX", "s", "f", "v"],
        &["HINCRBY", "s", "f", "1"],
        &["HINCRBY", "s", "f", "x"],
        &["HINCRBYFLOAT", "s", "f", "1"],
        &["HINCRBYFLOAT", "s", "f", "inf"],
        &["HSCAN", "s", "0"],
        &["HSCAN", "s", "x"],
        &["HSCAN", "s", "0", "COUNT", "0"],
        &["HRANDFIELD", "s"],
        &["HRANDFIELD", "s", "1"],
        &["HRANDFIELD", "s", "x"],
        &["HRANDFIELD", "s", "1", "WITHVALUES", "x"],
        &["TYPE", "s"],
        &["GET", "s"],
        &["MSET", "h", "now a string"],
        &["TYPE", "h"],
        &["HSET", "s2", "f", "v"],
        &["SET", "s2", "v"],
        &["GET", "s2"],
        &["HGET", "s2", "f"],
        &["HSET", "s3", "f", "v"],
        &["SETEX", "s3", "100", "v"],
        &["TYPE", "s3"],
        &["HSET", "s4", "f", "v"],
        &["SET", "s4", "v", "XX", "GET"],
        &["HSET", "s5", "f", "v"],
        &["INCRBYFLOAT", "s5", "x"],
    ])
}

#[test]
fn wrong_types_answer_wrongtype_as_redis() {
    let Some((redis, augur, _tmp)) = servers() else {
        return;
    };
    compare(&redis, &augur, "WRONGTYPE", &wrongtype());
}

/// The generic commands on hashes, transactions over them, HSCAN and HRANDFIELD.
fn generic() -> Vec<Words> {
    cmds(&[
        &["HSET", "h", "a", "1", "b", "2"],
        &["EXISTS", "h", "h", "none"],
        &["TTL", "h"],
        &["EXPIREAT", "h", "99999999999"],
        &["EXPIRETIME", "h"],
        &["PEXPIREAT", "h", "99999999999999", "GT"],
        &["PEXPIRETIME", "h"],
        &["HSET", "h", "c", "3"],
        &["HDEL", "h", "c"],
        &["HINCRBY", "h", "a", "1"],
        &["PEXPIRETIME", "h"],
        &["EXPIRE", "h", "100", "NX"],
        &["PERSIST", "h"],
        &["PERSIST", "h"],
        &["TTL", "h"],
        &["PEXPIREAT", "h", "99999999999999"],
        &["RENAME", "h", "h2"],
        &["EXISTS", "h"],
        &["HGETALL", "h2"],
        &["PEXPIRETIME", "h2"],
        &["HSET", "h3", "x", "y"],
        &["RENAME", "h2", "h3"],
        &["HGETALL", "h3"],
        &["RENAMENX", "h3", "h3"],
        &["SET", "s", "v"],
        &["RENAMENX", "h3", "s"],
        &["RENAME", "s", "h3"],
        &["TYPE", "h3"],
        &["HSET", "h4", "a", "1"],
        &["COPY", "h4", "h5"],
        &["HSET", "h4", "b", "2"],
        &["HGETALL", "h5"],
        &["HGETALL", "h4"],
        &["COPY", "h4", "h5"],
        &["COPY", "h4", "h5", "REPLACE"],
        &["HGETALL", "h5"],
        &["COPY", "h4", "s"],
        &["SET", "s", "v"],
        &["COPY", "s", "h5", "REPLACE"],
        &["TYPE", "h5"],
        &["HSET", "h6", "a", "1"],
        &["KEYS", "*"],
        &["DBSIZE"],
        &["SCAN", "0", "COUNT", "100", "TYPE", "hash"],
        &["SCAN", "0", "COUNT", "100", "TYPE", "string"],
        &["SCAN", "0", "COUNT", "100", "TYPE", "Hash"],
        &["SCAN", "0", "COUNT", "100", "TYPE", "list"],
        &["SCAN", "0", "COUNT", "100", "MATCH", "h*", "TYPE", "hash"],
        &["DEL", "h4", "h6", "none"],
        &["UNLINK", "h3"],
        &["DBSIZE"],
        &["HSET", "t", "a", "1", "b", "2", "c", "3"],
        &["MULTI"],
        &["HSET", "t", "d", "4"],
        &["HGETALL", "t"],
        &["HDEL", "t", "a", "b", "c", "d"],
        &["EXISTS", "t"],
        &["HSET", "t", "e", "5"],
        &["HINCRBY", "t", "e", "1"],
        &["HINCRBYFLOAT", "t", "e", "0.5"],
        &["GET", "t"],
        &["HLEN", "t"],
        &["TYPE", "t"],
        &["SCAN", "0", "COUNT", "100", "TYPE", "hash"],
        &["EXEC"],
        &["MULTI"],
        &["HSET", "t", "f"],
        &["HGET", "t", "e"],
        &["EXEC"],
        &["HGETALL", "t"],
        &["MULTI"],
        &["DEL", "t"],
        &["HSET", "t", "fresh", "1"],
        &["HGETALL", "t"],
        &["EXEC"],
        &["HGETALL", "t"],
        &["HSET", "r", "a", "1", "b", "2", "c", "3"],
        &["HRANDFIELD", "r"],
        &["HRANDFIELD", "r", "0"],
        &["HRANDFIELD", "r", "2"],
        &["HRANDFIELD", "r", "3"],
        &["HRANDFIELD", "r", "5"],
        &["HRANDFIELD", "r", "5", "WITHVALUES"],
        &["HRANDFIELD", "r", "-5"],
        &["HRANDFIELD", "r", "-5", "WITHVALUES"],
        &["HRANDFIELD", "r", "2", "withvalues"],
        &["HRANDFIELD", "r", "-9223372036854775808"],
        &["HRANDFIELD", "r", "-4611686018427387904", "WITHVALUES"],
        &["HRANDFIELD", "r", "4611686018427387904", "WITHVALUES"],
        &["HRANDFIELD", "r", "1", "WITHVALUES", "x"],
        &["HRANDFIELD", "r", "1", "x"],
        &["HRANDFIELD", "none", "5"],
        &["HRANDFIELD", "none"],
        &["HRANDFIELD", "none", "1", "WITHVALUES"],
        &["HRANDFIELD"],
        &["HSCAN", "r", "0"],
        &["HSCAN", "r", "0", "MATCH", "[ab]"],
        &["HSCAN", "r", "0", "COUNT", "1"],
        &["HSCAN", "r", "0", "COUNT", "0"],
        &["HSCAN", "r", "0", "COUNT", "x"],
        &["HSCAN", "r", "0", "COUNT"],
        &["HSCAN", "r", "0", "TYPE", "hash"],
        &["HSCAN", "r", "x"],
        &["HSCAN", "none", "0", "COUNT", "0"],
        &["HSCAN", "none", "x"],
        &["HSCAN", "r"],
        &["FLUSHALL"],
        &["DBSIZE"],
        &["HGETALL", "r"],
        &["HSET", "r", "z", "1"],
        &["HGETALL", "r"],
    ])
}

#[test]
fn generic_commands_and_transactions_cover_hashes_as_redis() {
    let Some((redis, augur, _tmp)) = servers() else {
        return;
    };
    compare(&redis, &augur, "generic commands on hashes", &generic());
}

/// Steps on two connections: `(connection, command)`, and pauses.
enum Step {
    On(usize, &'static [&'static str]),
    Sleep(u64),
}

/// Runs `steps` on the server at `addr` (flushed first); every reply as text.
fn run_steps(addr: std::net::SocketAddr, steps: &[Step], resp3: bool) -> Vec<String> {
    Raw::connect(addr).cmd(&[b"FLUSHALL"]);
    let mut conns: Vec<Raw> = (0..2)
        .map(|_| {
            let mut c = Raw::connect(addr);
            if resp3 {
                c.cmd(&[b"HELLO", b"3"]);
            }
            c
        })
        .collect();
    let mut out = Vec::new();
    for step in steps {
        match step {
            Step::Sleep(ms) => std::thread::sleep(std::time::Duration::from_millis(*ms)),
            Step::On(n, cmd) => {
                let w = words(cmd);
                let reply = conns[*n].cmd(&w.iter().map(Vec::as_slice).collect::<Vec<_>>());
                let node = common::tree::parse(&reply);
                let norm = common::differential::Norm::of(&w, false);
                out.push(format!("{n} {cmd:?}: {}", norm.apply(node)));
            }
        }
    }
    out
}

/// WATCH of a hash: every write of it aborts EXEC (a field's change, the record's, its
/// expiry), writes that change nothing do not; and hashes that actually expire vanish from
/// every command.
#[test]
fn watch_and_expiry_cover_hashes_as_redis() {
    let Some((redis, augur, _tmp)) = servers() else {
        return;
    };
    let mut steps = vec![Step::On(0, &["HSET", "h", "a", "1", "b", "2"])];
    let writes: &[&'static [&'static str]] = &[
        &["HSET", "h", "a", "1"],
        &["HSET", "h", "c", "3"],
        &["HDEL", "h", "c"],
        &["HDEL", "h", "nope"],
        &["HSETNX", "h", "a", "9"],
        &["HSETNX", "h", "c", "3"],
        &["HINCRBY", "h", "a", "1"],
        &["HINCRBYFLOAT", "h", "a", "1"],
        &["HINCRBY", "h", "a", "x"],
        &["HGET", "h", "a"],
        &["EXPIRE", "h", "100"],
        &["PERSIST", "h"],
        &["PERSIST", "h"],
        &["HMSET", "h", "a", "1"],
        &["RENAME", "h", "g"],
        &["RENAME", "g", "h"],
        &["COPY", "h", "g"],
        &["COPY", "g", "h", "REPLACE"],
        &["SET", "h", "s"],
        &["HSET", "h", "a", "1"],
        &["DEL", "h"],
        &["HSET", "h", "a", "1"],
        &["HDEL", "h", "a"],
        &["HSET", "h", "a", "1"],
    ];
    for write in writes {
        steps.push(Step::On(0, &["WATCH", "h"]));
        steps.push(Step::On(1, write));
        steps.push(Step::On(0, &["MULTI"]));
        steps.push(Step::On(0, &["HGETALL", "h"]));
        steps.push(Step::On(0, &["EXEC"]));
    }
    // Hashes that expire: gone from every read path, and a WATCH of one aborts.
    steps.extend([
        Step::On(0, &["HSET", "x", "a", "1"]),
        Step::On(0, &["PEXPIRE", "x", "100"]),
        Step::On(0, &["HSET", "y", "a", "1", "b", "2"]),
        Step::On(0, &["EXPIRE", "y", "1000"]),
        Step::On(0, &["HSET", "y", "c", "3"]),
        Step::On(0, &["HSET", "z", "a", "1"]),
        Step::On(0, &["PEXPIRE", "z", "100"]),
        Step::On(0, &["PERSIST", "z"]),
        Step::On(0, &["HSET", "w", "a", "1"]),
        Step::On(0, &["PEXPIRE", "w", "100"]),
        Step::On(1, &["WATCH", "w"]),
        Step::Sleep(250),
        Step::On(1, &["MULTI"]),
        Step::On(1, &["PING"]),
        Step::On(1, &["EXEC"]),
        Step::On(0, &["HGETALL", "x"]),
        Step::On(0, &["HLEN", "x"]),
        Step::On(0, &["HGET", "x", "a"]),
        Step::On(0, &["EXISTS", "x", "w"]),
        Step::On(0, &["TYPE", "x"]),
        Step::On(0, &["TTL", "x"]),
        Step::On(0, &["KEYS", "*"]),
        Step::On(0, &["DBSIZE"]),
        Step::On(0, &["SCAN", "0", "COUNT", "100", "TYPE", "hash"]),
        Step::On(0, &["HSET", "x", "b", "2"]),
        Step::On(0, &["HGETALL", "x"]),
        Step::On(0, &["TTL", "x"]),
        Step::On(0, &["HLEN", "y"]),
        Step::On(0, &["HGETALL", "z"]),
    ]);
    for resp3 in [false, true] {
        let want = run_steps(redis.addr, &steps, resp3);
        let got = run_steps(augur.addr, &steps, resp3);
        for (w, g) in want.iter().zip(&got) {
            assert_eq!(g, w, "RESP{}", if resp3 { 3 } else { 2 });
        }
        assert_eq!(got.len(), want.len());
    }
}

/// The pairs of a full HSCAN of `key` (COUNT `count`), checking that the scan ends.
fn hscan_all(c: &mut Raw, key: &str, count: &str) -> BTreeSet<(Vec<u8>, Vec<u8>)> {
    let mut cursor = "0".to_string();
    let mut pairs = BTreeSet::new();
    for _ in 0..10_000 {
        let reply = c.cmd(&[
            b"HSCAN",
            key.as_bytes(),
            cursor.as_bytes(),
            b"COUNT",
            count.as_bytes(),
        ]);
        let node = common::tree::parse(&reply);
        let items = node.items().expect("an array");
        let common::tree::Node::Bulk(_, Some(next)) = &items[0] else {
            panic!("{node:?}")
        };
        let fields = items[1].items().expect("fields");
        for pair in fields.chunks(2) {
            let (common::tree::Node::Bulk(_, Some(f)), common::tree::Node::Bulk(_, Some(v))) =
                (&pair[0], &pair[1])
            else {
                panic!("{pair:?}")
            };
            pairs.insert((f.clone(), v.clone()));
        }
        cursor = String::from_utf8(next.clone()).unwrap();
        if cursor == "0" {
            return pairs;
        }
    }
    panic!("HSCAN did not end");
}

/// A hash too large to be returned in one HSCAN call: a full scan returns every field
/// (Redis may return a field twice; the sets agree), and the big hash's other replies agree.
#[test]
fn a_large_hash_scans_and_reads_as_redis() {
    let Some((redis, augur, _tmp)) = servers() else {
        return;
    };
    let mut list = Vec::new();
    for i in 0..600 {
        list.push(words(&[
            "HSET",
            "big",
            &format!("field:{i:04}"),
            &"v".repeat(i % 90),
        ]));
    }
    list.extend(cmds(&[
        &["HLEN", "big"],
        &["HGETALL", "big"],
        &["HKEYS", "big"],
        &["HDEL", "big", "field:0001", "field:0599"],
        &["HRANDFIELD", "big", "1000", "WITHVALUES"],
        &["HSTRLEN", "big", "field:0089"],
    ]));
    compare(&redis, &augur, "a large hash", &list);
    let (mut r, mut a) = (Raw::connect(redis.addr), Raw::connect(augur.addr));
    for count in ["1", "7", "100", "1000"] {
        let want = hscan_all(&mut r, "big", count);
        assert_eq!(want.len(), 598);
        assert_eq!(hscan_all(&mut a, "big", count), want, "COUNT {count}");
    }
}

/// The keys of a full SCAN (COUNT `count`, further options `opts`), checking that it ends.
fn scan_all(c: &mut Raw, count: &str, opts: &[&[u8]]) -> BTreeSet<Vec<u8>> {
    let mut cursor = b"0".to_vec();
    let mut keys = BTreeSet::new();
    for _ in 0..10_000 {
        let mut words: Vec<&[u8]> = vec![b"SCAN", &cursor, b"COUNT", count.as_bytes()];
        words.extend_from_slice(opts);
        let node = common::tree::parse(&c.cmd(&words));
        let items = node.items().expect("an array");
        let common::tree::Node::Bulk(_, Some(next)) = &items[0] else {
            panic!("{node:?}")
        };
        for k in items[1].items().expect("keys") {
            let common::tree::Node::Bulk(_, Some(k)) = k else {
                panic!("{k:?}")
            };
            keys.insert(k.clone());
        }
        cursor = next.clone();
        if cursor == b"0" {
            return keys;
        }
    }
    panic!("SCAN did not end");
}

/// Key walks over strings and hashes whose keys begin with the bytes the layout reserves:
/// every SCAN (any COUNT, MATCH, TYPE) and KEYS returns exactly Redis's keys, never a field
/// or the layout record.
#[test]
fn key_walks_show_user_keys_only() {
    let Some((redis, augur, _tmp)) = servers() else {
        return;
    };
    let mut list = vec![words(&["FLUSHALL"])];
    for (i, k) in [
        "a",
        "\\xff",
        "\\xff\\x00",
        "\\xff\\x01",
        "\\xff\\x02",
        "\\xff\\xff",
        "z",
    ]
    .iter()
    .enumerate()
    {
        list.push(words(&["SET", &format!("{k}s"), "v"]));
        list.push(words(&[
            "HSET",
            &format!("{k}h"),
            "f",
            &i.to_string(),
            "g",
            "\\xff",
        ]));
    }
    let each = |_: usize| 1000;
    let want = run(redis.addr, &list, false, &each, false);
    assert_eq!(run(augur.addr, &list, false, &each, false), want);
    let (mut r, mut a) = (Raw::connect(redis.addr), Raw::connect(augur.addr));
    for count in ["1", "2", "3", "100"] {
        for opts in [
            &[][..],
            &[&b"TYPE"[..], b"hash"],
            &[b"TYPE", b"string"],
            &[b"MATCH", b"\xff*"],
            &[b"MATCH", b"\xff\x01*"],
        ] {
            let want = scan_all(&mut r, count, opts);
            assert_eq!(
                scan_all(&mut a, count, opts),
                want,
                "COUNT {count} {opts:?}"
            );
        }
    }
    assert_eq!(scan_all(&mut a, "100", &[]).len(), 14);
    for pattern in [&b"*"[..], b"\xff*", b"*h", b"\xff\x02*"] {
        let want = common::tree::parse(&r.cmd(&[b"KEYS", pattern])).sort_items();
        let got = common::tree::parse(&a.cmd(&[b"KEYS", pattern])).sort_items();
        assert_eq!(got, want, "KEYS {pattern:?}");
    }
    assert_eq!(a.text(&["DBSIZE"]), ":14\r\n");
}
