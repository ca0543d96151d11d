//! Differential tests: the same raw RESP bytes sent to augur-server and to a real
//! redis-server (started on a free port when installed; skipped with a message otherwise),
//! and the replies compared byte for byte, every scenario under RESP2 and again under RESP3
//! (each connection opening with `HELLO 3`). The sequences are deterministic in both
//! servers (no hash-ordered replies of several keys); the two server-specific values of
//! `HELLO`'s reply (the version and the client id) are masked. INCRBYFLOAT is compared on
//! edge cases and on random operands.
//!
//! Expiry and WATCH (issue 43) are compared the same way, with steps on several
//! connections interleaved (a WATCH on one, a write on another) and pauses where a key must
//! actually expire (PX 100, then 250 ms). Times that depend on the clock are compared only
//! where both servers must agree: TTL of keys set with many seconds left (rounded to
//! seconds), EXPIRETIME and PEXPIRETIME of absolute times, -1 and -2.

mod common;

use common::{encode, Raw, RedisProcess, ServerProcess};
use rand::{Rng, SeedableRng};

/// One write to the socket and how many replies it gets.
struct Write {
    bytes: Vec<u8>,
    replies: usize,
}

/// Commands sent in one write (a pipeline, as redis-py sends a transaction).
fn pipelined(cmds: &[&[&str]]) -> Write {
    let bytes = cmds
        .iter()
        .flat_map(|words| {
            let words: Vec<&[u8]> = words.iter().map(|w| w.as_bytes()).collect();
            encode(&words)
        })
        .collect();
    Write {
        bytes,
        replies: cmds.len(),
    }
}

/// Commands sent one write each, each reply read before the next command is sent.
fn one_by_one(cmds: &[&[&str]]) -> Vec<Write> {
    cmds.iter().map(|c| pipelined(&[c])).collect()
}

/// Inline commands (as `printf '…' | redis-cli` would type them), in one write.
fn inline(text: &str, replies: usize) -> Write {
    Write {
        bytes: text.as_bytes().to_vec(),
        replies,
    }
}

/// A named scenario: sessions run one after another, each on a fresh connection.
struct Scenario {
    name: &'static str,
    sessions: Vec<Vec<Write>>,
}

/// The protocol each connection of a run speaks from its start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Protocol {
    Resp2,
    /// Each connection sends `HELLO 3` first (its reply is checked, not compared).
    Resp3,
}

/// Runs `scenario` on the server at `addr` (emptied first), returning every reply in order,
/// `HELLO`'s server-specific values masked.
fn run(addr: std::net::SocketAddr, scenario: &Scenario, protocol: Protocol) -> Vec<String> {
    let mut setup = Raw::connect(addr);
    assert_eq!(setup.cmd(&[b"FLUSHALL"]), b"+OK\r\n");
    let mut replies = Vec::new();
    for session in &scenario.sessions {
        let mut c = Raw::connect(addr);
        if protocol == Protocol::Resp3 {
            let hello = c.cmd(&[b"HELLO", b"3"]);
            assert!(hello.starts_with(b"%7\r\n"), "{hello:?}");
        }
        for write in session {
            c.send(&write.bytes);
            for _ in 0..write.replies {
                let reply = c.reply().unwrap_or_else(|| b"<closed>".to_vec());
                replies.push(mask_hello(&String::from_utf8_lossy(&reply)));
            }
        }
    }
    replies
}

/// One step of an interleaved scenario.
enum Step {
    /// A write on connection `n` (opened at its first step) and its replies.
    On(usize, Write),
    /// A pause, for keys to expire.
    Sleep(u64),
}

/// Commands sent one write each on connection `conn`.
fn on(conn: usize, cmds: &[&[&str]]) -> Vec<Step> {
    one_by_one(cmds)
        .into_iter()
        .map(|w| Step::On(conn, w))
        .collect()
}

/// A named scenario of steps on several connections.
struct Interleaved {
    name: &'static str,
    steps: Vec<Step>,
}

/// Runs `scenario` on the server at `addr` (emptied first), returning every reply in order.
fn run_interleaved(
    addr: std::net::SocketAddr,
    scenario: &Interleaved,
    protocol: Protocol,
) -> Vec<String> {
    let mut setup = Raw::connect(addr);
    assert_eq!(setup.cmd(&[b"FLUSHALL"]), b"+OK\r\n");
    let mut conns: Vec<Option<Raw>> = Vec::new();
    let mut replies = Vec::new();
    for step in &scenario.steps {
        match step {
            Step::Sleep(ms) => std::thread::sleep(std::time::Duration::from_millis(*ms)),
            Step::On(n, write) => {
                if conns.len() <= *n {
                    conns.resize_with(n + 1, || None);
                }
                let c = conns[*n].get_or_insert_with(|| {
                    let mut c = Raw::connect(addr);
                    if protocol == Protocol::Resp3 {
                        let hello = c.cmd(&[b"HELLO", b"3"]);
                        assert!(hello.starts_with(b"%7\r\n"), "{hello:?}");
                    }
                    c
                });
                c.send(&write.bytes);
                for _ in 0..write.replies {
                    let reply = c.reply().unwrap_or_else(|| b"<closed>".to_vec());
                    replies.push(format!("{n}: {}", String::from_utf8_lossy(&reply)));
                }
            }
        }
    }
    replies
}

/// `reply` with the values that differ between servers in a `HELLO` reply (the version
/// after `version`, the client id after `id`) replaced by placeholders, wherever they are
/// (an EXEC's reply may hold one).
fn mask_hello(reply: &str) -> String {
    let mut out = String::new();
    let mut rest = reply;
    let next = |text: &str| -> Option<usize> {
        let version = text.find("$7\r\nversion\r\n$");
        let id = text.find("$2\r\nid\r\n:");
        version.into_iter().chain(id).min()
    };
    while let Some(at) = next(rest) {
        let (head, tail) = rest.split_at(at);
        out.push_str(head);
        let (key, value_kind) = if tail.starts_with("$7") {
            ("$7\r\nversion\r\n", "<version>")
        } else {
            ("$2\r\nid\r\n", "<id>")
        };
        let after_key = &tail[key.len()..];
        // The value: a bulk (`$n\r\ntext\r\n`) or an integer line (`:n\r\n`).
        let value_len = if after_key.starts_with('$') {
            let line = after_key.find("\r\n").unwrap_or(after_key.len());
            let n: usize = after_key[1..line].parse().unwrap_or(0);
            line + 2 + n + 2
        } else {
            after_key.find("\r\n").map_or(after_key.len(), |l| l + 2)
        };
        out.push_str(key);
        out.push_str(value_kind);
        rest = &after_key[value_len.min(after_key.len())..];
    }
    out.push_str(rest);
    out
}

fn scenarios() -> Vec<Scenario> {
    let tx_incr: &[&[&str]] = &[
        &["MULTI"],
        &["SET", "a", "1"],
        &["INCR", "a"],
        &["GET", "a"],
        &["EXEC"],
    ];
    vec![
        Scenario {
            name: "the issue's example",
            sessions: vec![vec![inline(
                "DEL c\r\nMULTI\r\nINCR c\r\nINCR c\r\nEXEC\r\nGET c\r\n",
                6,
            )]],
        },
        Scenario {
            name: "a transaction pipelined in one write (redis-py)",
            sessions: vec![vec![pipelined(tx_incr)]],
        },
        Scenario {
            name: "a transaction, one command per write",
            sessions: vec![one_by_one(tx_incr)],
        },
        Scenario {
            name: "pipelined commands around a transaction",
            sessions: vec![vec![pipelined(&[
                &["SET", "a", "1"],
                &["INCR", "a"],
                &["MULTI"],
                &["INCR", "a"],
                &["GET", "a"],
                &["MSET", "b", "1", "c", "2"],
                &["EXEC"],
                &["INCR", "a"],
                &["MGET", "a", "b", "c"],
            ])]],
        },
        Scenario {
            name: "EXEC and DISCARD without MULTI, nested MULTI, empty transaction",
            sessions: vec![one_by_one(&[
                &["EXEC"],
                &["DISCARD"],
                &["MULTI"],
                &["MULTI"],
                &["SET", "a", "1"],
                &["EXEC"],
                &["MULTI"],
                &["EXEC"],
                &["GET", "a"],
            ])],
        },
        Scenario {
            name: "errors while queuing abort the transaction",
            sessions: vec![vec![
                pipelined(&[
                    &["SET", "a", "0"],
                    &["MULTI"],
                    &["SET", "a", "1"],
                    &["FOO", "bar", "baz"],
                    &["GET"],
                    &["INCR", "a"],
                    &["EXEC"],
                    &["GET", "a"],
                ]),
                pipelined(&[&["MULTI"], &["EXEC", "x"], &["EXEC"]]),
                pipelined(&[&["MULTI"], &["DISCARD", "x"], &["EXEC"]]),
                pipelined(&[&["MULTI"], &["MULTI", "x"], &["EXEC"]]),
                pipelined(&[
                    &["MULTI"],
                    &["SAVE"],
                    &["SHUTDOWN", "NOSAVE"],
                    &["SET", "a", "9"],
                    &["EXEC"],
                    &["GET", "a"],
                ]),
            ]],
        },
        Scenario {
            name: "runtime errors are elements of EXEC's reply",
            sessions: vec![vec![pipelined(&[
                &["MULTI"],
                &["SET", "s", "x"],
                &["INCR", "s"],
                &["SET", "k", "v", "NX", "XX"],
                &["MSET", "a", "1", "b"],
                &["INCRBY", "s", "nope"],
                &["INCRBYFLOAT", "s", "1"],
                &["GETRANGE", "s", "0", "x"],
                &["APPEND", "s", "y"],
                &["GET", "s"],
                &["PING", "a", "b"],
                &["EXEC"],
            ])]],
        },
        Scenario {
            name: "DISCARD drops the queue",
            sessions: vec![one_by_one(&[
                &["MULTI"],
                &["SET", "d", "1"],
                &["DISCARD"],
                &["GET", "d"],
                &["EXEC"],
            ])],
        },
        Scenario {
            name: "QUIT inside a transaction closes and drops the queue",
            sessions: vec![
                one_by_one(&[&["MULTI"], &["SET", "q", "1"], &["QUIT"]]),
                one_by_one(&[&["GET", "q"]]),
            ],
        },
        Scenario {
            name: "reads inside a transaction see its writes",
            sessions: vec![vec![pipelined(&[
                &["SET", "old", "x"],
                &["MULTI"],
                &["SET", "only", "1"],
                &["DEL", "old"],
                &["EXISTS", "only", "old"],
                &["TYPE", "only"],
                &["DBSIZE"],
                &["KEYS", "o*"],
                &["SCAN", "0", "MATCH", "o*", "COUNT", "100"],
                &["STRLEN", "only"],
                &["SETRANGE", "only", "3", "z"],
                &["GETRANGE", "only", "0", "-1"],
                &["GETDEL", "only"],
                &["DBSIZE"],
                &["EXEC"],
                &["DBSIZE"],
            ])]],
        },
        Scenario {
            name: "FLUSHDB inside a transaction",
            sessions: vec![vec![pipelined(&[
                &["SET", "x", "1"],
                &["MULTI"],
                &["SET", "y", "2"],
                &["FLUSHDB"],
                &["DBSIZE"],
                &["SET", "z", "3"],
                &["EXEC"],
                &["DBSIZE"],
                &["GET", "z"],
            ])]],
        },
        Scenario {
            name: "string commands inside a transaction",
            sessions: vec![vec![pipelined(&[
                &["MULTI"],
                &["MSET", "a", "1", "b", "2"],
                &["MSETNX", "b", "3", "c", "4"],
                &["SETNX", "c", "5"],
                &["GETSET", "c", "6"],
                &["SET", "a", "7", "GET"],
                &["SET", "a", "8", "XX"],
                &["DECRBY", "a", "3"],
                &["INCRBYFLOAT", "a", "0.5"],
                &["MGET", "a", "b", "c", "none"],
                &["DEL", "a", "b", "none"],
                &["UNLINK", "c"],
                &["ECHO", "hi"],
                &["PING"],
                &["SELECT", "0"],
                &["CLIENT", "SETNAME", "tx"],
                &["CLIENT", "GETNAME"],
                &["EXEC"],
            ])]],
        },
        Scenario {
            name: "nulls and empty collections (RESP3's `_`, `%0`)",
            sessions: vec![one_by_one(&[
                &["GET", "none"],
                &["MGET", "none", "a", "none"],
                &["SET", "a", "1"],
                &["SET", "a", "2", "NX"],
                &["SET", "b", "2", "XX"],
                &["SET", "c", "3", "GET"],
                &["SET", "c", "4", "NX", "GET"],
                &["GETDEL", "none"],
                &["GETSET", "d", "1"],
                &["CLIENT", "GETNAME"],
                &["CONFIG", "GET", "no-such-parameter"],
                &["COMMAND", "INFO", "no-such-command"],
                &["KEYS", "none*"],
                &["SCAN", "0", "MATCH", "none*"],
                &["GETRANGE", "none", "0", "-1"],
                &["MULTI"],
                &["GET", "none"],
                &["SET", "a", "3", "NX"],
                &["EXEC"],
            ])],
        },
        Scenario {
            name: "HELLO's errors and options",
            sessions: vec![one_by_one(&[
                &["HELLO", "4"],
                &["HELLO", "1"],
                &["HELLO", "-1"],
                &["HELLO", "abc"],
                &["HELLO", "03"],
                &["HELLO", "3.0"],
                &["HELLO", "99999999999999999999"],
                &["HELLO", "3", "FOO"],
                &["HELLO", "3", "AUTH", "default"],
                &["HELLO", "3", "SETNAME"],
                &["HELLO", "3", "SETNAME", "a b"],
                &["GET", "none"],
                &["HELLO", "3", "AUTH", "nouser", "x"],
                &["HELLO", "3", "AUTH", "default", "any", "SETNAME", "named"],
                &["CLIENT", "GETNAME"],
                &["GET", "none"],
                &["HELLO", "2", "SETNAME", ""],
                &["CLIENT", "GETNAME"],
                &["GET", "none"],
                &["HELLO"],
                &["AUTH", "x"],
                &["AUTH", "default", "x"],
                &["AUTH", "nouser", "x"],
                &["AUTH", "a", "b", "c"],
            ])],
        },
        Scenario {
            name: "HELLO switches protocols, inside a transaction too",
            sessions: vec![
                one_by_one(&[
                    &["HELLO", "3"],
                    &["GET", "none"],
                    &["HELLO", "2"],
                    &["GET", "none"],
                ]),
                vec![pipelined(&[
                    &["MULTI"],
                    &["GET", "none"],
                    &["HELLO", "3"],
                    &["MGET", "none"],
                    &["HELLO", "2"],
                    &["GET", "none"],
                    &["EXEC"],
                    &["GET", "none"],
                ])],
            ],
        },
        Scenario {
            name: "INCRBYFLOAT as issue 43 reported it",
            sessions: vec![one_by_one(&[
                &["SET", "f", "0.1"],
                &["INCRBYFLOAT", "f", "0.2"],
                &["GET", "f"],
                &["SET", "f", "12345678901234567890"],
                &["INCRBYFLOAT", "f", "0"],
                &["SET", "f", "1e17"],
                &["INCRBYFLOAT", "f", "1"],
                &["INCRBYFLOAT", "f", "0x10"],
                &["INCRBYFLOAT", "f", "1e400"],
                &["INCRBYFLOAT", "f", "inf"],
                &["INCRBYFLOAT", "f", "nan"],
                &["INCRBYFLOAT", "f", " 1"],
                &["INCRBYFLOAT", "f", "1 "],
                &["INCRBYFLOAT", "new", "-0"],
                &["GET", "f"],
            ])],
        },
        Scenario {
            name: "SET's expiry options, their conflicts and their errors",
            sessions: vec![one_by_one(&[
                &["SET", "k", "v", "EX", "100"],
                &["TTL", "k"],
                &["SET", "k", "v", "EX", "10", "EX", "200"],
                &["TTL", "k"],
                &["SET", "k", "v", "px", "300000"],
                &["TTL", "k"],
                &["SET", "k", "v", "EXAT", "99999999999"],
                &["EXPIRETIME", "k"],
                &["PEXPIRETIME", "k"],
                &["SET", "k", "v", "PXAT", "99999999999999"],
                &["PEXPIRETIME", "k"],
                &["SET", "k", "v", "EX", "10", "PX", "20"],
                &["SET", "k", "v", "KEEPTTL", "EX", "10"],
                &["SET", "k", "v", "EX", "10", "KEEPTTL"],
                &["SET", "k", "v", "EXAT", "10", "PXAT", "20"],
                &["SET", "k", "v", "KEEPTTL", "KEEPTTL"],
                &["PEXPIRETIME", "k"],
                &["SET", "k", "v", "NX", "NX"],
                &["SET", "k", "v", "GET", "GET"],
                &["SET", "k", "v", "PERSIST"],
                &["SET", "k", "v", "EX"],
                &["SET", "k", "v", "EX", "0"],
                &["SET", "k", "v", "EX", "-1"],
                &["SET", "k", "v", "PX", "0"],
                &["SET", "k", "v", "EXAT", "0"],
                &["SET", "k", "v", "PXAT", "-5"],
                &["SET", "k", "v", "EX", "abc"],
                &["SET", "k", "v", "EX", "1.5"],
                &["SET", "k", "v", "EX", "10", "foo"],
                &["SET", "k", "v", "foo", "EX", "abc"],
                &["SET", "k", "v", "EX", "abc", "foo"],
                &["SET", "k", "v", "EX", "9223372036854775807"],
                &["SET", "k", "v", "EX", "9223372036854775"],
                &["SET", "k", "v", "EX", "9223372036854774"],
                &["SET", "k", "v", "PX", "9223372036854775807"],
                &["SET", "k", "v", "NX", "EX", "0"],
                &["SET", "k", "v", "PXAT", "9223372036854775807"],
                &["PEXPIRETIME", "k"],
                &["EXPIRETIME", "k"],
                &["SET", "k", "v2", "ex", "100", "nx", "get"],
                &["SET", "k", "v2", "xx", "ex", "100", "get"],
                &["TTL", "k"],
                &["SET", "k", "v3", "GET", "KEEPTTL"],
                &["TTL", "k"],
                &["SET", "k", "v4"],
                &["TTL", "k"],
                &["SET", "n", "v", "XX", "EX", "100"],
                &["TTL", "n"],
                &["SET", "n", "v", "NX", "PX", "100000", "GET"],
                &["TTL", "n"],
                &["SET", "gone", "v", "PXAT", "1"],
                &["GET", "gone"],
                &["SET", "gone", "v", "EXAT", "1", "GET"],
                &["EXISTS", "gone"],
            ])],
        },
        Scenario {
            name: "GETEX, SETEX and PSETEX",
            sessions: vec![one_by_one(&[
                &["GETEX", "none"],
                &["GETEX", "none", "EX", "-1"],
                &["GETEX", "none", "EX", "abc"],
                &["GETEX", "none", "FOO"],
                &["GETEX", "none", "EX"],
                &["GETEX"],
                &["SET", "k", "v"],
                &["GETEX", "k"],
                &["TTL", "k"],
                &["GETEX", "k", "EX", "-1"],
                &["GETEX", "k", "EX", "0"],
                &["GETEX", "k", "EXAT", "0"],
                &["GETEX", "k", "EX", "abc"],
                &["GETEX", "k", "PX", "9223372036854775807"],
                &["GETEX", "k", "EX", "100"],
                &["TTL", "k"],
                &["GETEX", "k"],
                &["TTL", "k"],
                &["GETEX", "k", "PERSIST"],
                &["TTL", "k"],
                &["GETEX", "k", "PERSIST", "persist"],
                &["GETEX", "k", "PERSIST", "EX", "10"],
                &["GETEX", "k", "EX", "10", "PERSIST"],
                &["GETEX", "k", "EX", "10", "PX", "10"],
                &["GETEX", "k", "EX", "10", "EX", "200"],
                &["TTL", "k"],
                &["GETEX", "k", "pxat", "99999999999999"],
                &["PEXPIRETIME", "k"],
                &["GETEX", "k", "exat", "99999999999"],
                &["EXPIRETIME", "k"],
                &["GETEX", "k", "KEEPTTL"],
                &["GETEX", "k", "NX"],
                &["GETEX", "k", "GET"],
                &["GETEX", "k", "EXAT", "1"],
                &["EXISTS", "k"],
                &["SET", "k", "v"],
                &["GETEX", "k", "PXAT", "1"],
                &["GET", "k"],
                &["SETEX", "k", "0", "v"],
                &["SETEX", "k", "-1", "v"],
                &["SETEX", "k", "abc", "v"],
                &["SETEX", "k", "9223372036854775", "v"],
                &["SETEX", "k", "100", "v"],
                &["TTL", "k"],
                &["GET", "k"],
                &["PSETEX", "k", "0", "v"],
                &["PSETEX", "k", "9223372036854775807", "v"],
                &["PSETEX", "k", "200000", "w"],
                &["TTL", "k"],
                &["GET", "k"],
                &["SETEX", "k", "10"],
                &["PSETEX", "k", "10", "v", "x"],
            ])],
        },
        Scenario {
            name: "EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT: options, errors, times in the past",
            sessions: vec![one_by_one(&[
                &["EXPIRE", "none", "10"],
                &["EXPIRE", "none", "abc"],
                &["EXPIRE", "none", "10", "foo"],
                &["EXPIRE", "none", "10", "NX", "XX"],
                &["EXPIRE", "none", "10", "gt", "lt"],
                &["EXPIRE", "none", "10", "nx", "gt"],
                &["EXPIRE", "none", "10", "LT", "nx"],
                &["EXPIRE", "none", "10", "nx", "nx"],
                &["EXPIRE", "none", "10", "Foo", "bar"],
                &["EXPIRE", "none", "abc", "foo"],
                &["EXPIRE", "none", "9223372036854775807"],
                &["EXPIRE", "none", "-9223372036854775808"],
                &["PEXPIRE", "none", "9223372036854775807"],
                &["PEXPIREAT", "none", "9223372036854775807"],
                &["EXPIREAT", "none", "9223372036854775807"],
                &["EXPIREAT", "none", "9223372036854775"],
                &["EXPIREAT", "none", "9223372036854776"],
                &["EXPIREAT", "none", "-9223372036854775"],
                &["EXPIREAT", "none", "-9223372036854776"],
                &["PEXPIRE", "none", "-9223372036854775808"],
                &["EXPIRE"],
                &["EXPIRE", "k"],
                &["SET", "k", "v"],
                &["EXPIRE", "k", "100", "XX"],
                &["EXPIRE", "k", "100", "GT"],
                &["EXPIRE", "k", "100", "LT"],
                &["TTL", "k"],
                &["EXPIRE", "k", "200", "NX"],
                &["EXPIRE", "k", "200", "GT"],
                &["TTL", "k"],
                &["EXPIRE", "k", "50", "GT"],
                &["EXPIRE", "k", "300", "LT"],
                &["EXPIRE", "k", "50", "LT"],
                &["TTL", "k"],
                &["EXPIRE", "k", "60", "XX"],
                &["TTL", "k"],
                &["EXPIRE", "k", "70", "xx", "gt"],
                &["TTL", "k"],
                // Equal times (absolute: a relative one moves with the clock).
                &["PEXPIREAT", "k", "99999999990000", "XX"],
                &["PEXPIREAT", "k", "99999999990000", "XX", "GT"],
                &["PEXPIREAT", "k", "99999999990000", "LT"],
                &["EXPIREAT", "k", "99999999990", "GT"],
                &["PEXPIREAT", "k", "99999999990001", "xx", "gt"],
                &["PEXPIRETIME", "k"],
                &["PEXPIREAT", "k", "99999999990000", "lt"],
                &["PEXPIRETIME", "k"],
                &["PEXPIRE", "k", "100000", "nx"],
                &["PEXPIRE", "k", "100000", "xx"],
                &["TTL", "k"],
                &["EXPIRE", "k", "9223372036854775"],
                &["EXPIRE", "k", "9223372036854774"],
                &["TTL", "k"],
                &["EXPIREAT", "k", "99999999999"],
                &["EXPIRETIME", "k"],
                &["PEXPIRETIME", "k"],
                &["PEXPIREAT", "k", "99999999999499"],
                &["EXPIRETIME", "k"],
                &["PEXPIREAT", "k", "99999999999500"],
                &["EXPIRETIME", "k"],
                &["PEXPIREAT", "k", "9223372036854775807"],
                &["EXPIRETIME", "k"],
                &["PEXPIRETIME", "k"],
                &["EXPIRE", "k", "0"],
                &["EXISTS", "k"],
                &["SET", "k", "v"],
                &["EXPIRE", "k", "-10"],
                &["GET", "k"],
                &["SET", "k", "v"],
                &["EXPIRE", "k", "100"],
                &["EXPIRE", "k", "-1", "LT"],
                &["EXISTS", "k"],
                &["SET", "k", "v"],
                &["EXPIRE", "k", "-1", "GT"],
                &["EXPIRE", "k", "-1", "LT"],
                &["EXISTS", "k"],
                &["SET", "k", "v"],
                &["PEXPIREAT", "k", "1"],
                &["EXISTS", "k"],
                &["SET", "k", "v"],
                &["EXPIREAT", "k", "-9223372036854775"],
                &["EXISTS", "k"],
                &["SET", "k", "v"],
                &["PEXPIRE", "k", "-9223372036854775808"],
                &["EXISTS", "k"],
            ])],
        },
        Scenario {
            name: "TTL, PTTL, EXPIRETIME, PEXPIRETIME and PERSIST",
            sessions: vec![one_by_one(&[
                &["TTL", "none"],
                &["PTTL", "none"],
                &["EXPIRETIME", "none"],
                &["PEXPIRETIME", "none"],
                &["PERSIST", "none"],
                &["SET", "k", "v"],
                &["TTL", "k"],
                &["PTTL", "k"],
                &["EXPIRETIME", "k"],
                &["PEXPIRETIME", "k"],
                &["PERSIST", "k"],
                &["EXPIRE", "k", "1000"],
                &["TTL", "k"],
                &["PERSIST", "k"],
                &["PERSIST", "k"],
                &["TTL", "k"],
                &["GET", "k"],
                &["TTL"],
                &["TTL", "a", "b"],
                &["PTTL"],
                &["EXPIRETIME", "a", "b"],
                &["PEXPIRETIME"],
                &["PERSIST"],
                &["PERSIST", "a", "b"],
            ])],
        },
        Scenario {
            name: "which commands keep a TTL and which clear it",
            sessions: vec![one_by_one(&[
                &["SET", "n", "1", "EX", "100"],
                &["INCR", "n"],
                &["TTL", "n"],
                &["INCRBY", "n", "5"],
                &["DECR", "n"],
                &["DECRBY", "n", "2"],
                &["TTL", "n"],
                &["INCRBYFLOAT", "n", "1.5"],
                &["TTL", "n"],
                &["APPEND", "n", "x"],
                &["TTL", "n"],
                &["SETRANGE", "n", "0", "y"],
                &["TTL", "n"],
                &["SETRANGE", "n", "1", ""],
                &["TTL", "n"],
                &["GETRANGE", "n", "0", "-1"],
                &["STRLEN", "n"],
                &["TTL", "n"],
                &["GETSET", "n", "z"],
                &["TTL", "n"],
                &["SET", "n", "1", "EX", "100"],
                &["MSET", "n", "2", "m", "3"],
                &["TTL", "n"],
                &["SET", "n", "1", "EX", "100"],
                &["SET", "n", "2", "KEEPTTL"],
                &["TTL", "n"],
                &["SET", "n", "3", "XX"],
                &["TTL", "n"],
                &["SET", "n", "1", "EX", "100"],
                &["SET", "n", "2", "NX", "EX", "50"],
                &["SETNX", "n", "5"],
                &["MSETNX", "n", "6", "o", "7"],
                &["TTL", "n"],
                &["GETDEL", "n"],
                &["TTL", "n"],
                &["SET", "n", "1", "EX", "100"],
                &["DEL", "n"],
                &["SET", "n", "1"],
                &["TTL", "n"],
                &["INCR", "new"],
                &["TTL", "new"],
                &["INCRBY", "n", "x"],
                &["TTL", "n"],
            ])],
        },
        Scenario {
            name: "RENAME, RENAMENX and COPY move and copy a TTL",
            sessions: vec![one_by_one(&[
                &["RENAME", "none", "x"],
                &["RENAMENX", "none", "x"],
                &["RENAME", "none", "none"],
                &["SET", "a", "1", "EX", "100"],
                &["RENAME", "a", "a"],
                &["RENAMENX", "a", "a"],
                &["TTL", "a"],
                &["RENAME", "a", "b"],
                &["TTL", "b"],
                &["EXISTS", "a"],
                &["SET", "c", "2"],
                &["RENAME", "c", "b"],
                &["TTL", "b"],
                &["GET", "b"],
                &["SET", "a", "1", "PXAT", "99999999999999"],
                &["RENAMENX", "a", "b"],
                &["RENAMENX", "a", "d"],
                &["PEXPIRETIME", "d"],
                &["RENAME"],
                &["RENAME", "a", "b", "c"],
                &["RENAMENX", "a"],
                &["COPY", "none", "x"],
                &["COPY", "d", "d"],
                &["COPY", "d", "e"],
                &["PEXPIRETIME", "e"],
                &["GET", "e"],
                &["COPY", "d", "e"],
                &["SET", "g", "1"],
                &["COPY", "g", "e"],
                &["COPY", "g", "e", "REPLACE"],
                &["TTL", "e"],
                &["COPY", "d", "e", "replace", "replace"],
                &["PEXPIRETIME", "e"],
                &["COPY", "d", "f", "DB", "0"],
                &["COPY", "d", "f", "DB", "x"],
                &["COPY", "d", "f", "DB", "99999999999"],
                &["COPY", "d", "f", "DB", "-1"],
                &["COPY", "d", "f", "DB"],
                &["COPY", "d", "f", "FOO"],
                &["COPY", "d", "d", "FOO"],
                &["COPY"],
                &["COPY", "a"],
                &["MGET", "a", "b", "c", "d", "e", "f", "g"],
            ])],
        },
        Scenario {
            name: "expiry inside a pipelined run and a transaction",
            sessions: vec![vec![
                pipelined(&[
                    &["SET", "a", "1", "PX", "100000"],
                    &["TTL", "a"],
                    &["INCR", "a"],
                    &["TTL", "a"],
                    &["GET", "a"],
                    &["SET", "a", "5"],
                    &["TTL", "a"],
                    &["SET", "b", "1", "EX", "100"],
                    &["DBSIZE"],
                    &["EXPIRE", "b", "-1"],
                    &["EXISTS", "b"],
                    &["GET", "b"],
                    &["TTL", "b"],
                    &["SET", "c", "1", "PXAT", "1"],
                    &["GET", "c"],
                    &["KEYS", "*"],
                    &["GETEX", "a", "EX", "100"],
                    &["TTL", "a"],
                    &["PERSIST", "a"],
                    &["TTL", "a"],
                    &["GETEX", "a", "PXAT", "1"],
                    &["EXISTS", "a"],
                    &["DBSIZE"],
                ]),
                pipelined(&[
                    &["SET", "t", "1"],
                    &["MULTI"],
                    &["EXPIRE", "t", "100"],
                    &["TTL", "t"],
                    &["SET", "u", "2", "EX", "100"],
                    &["TTL", "u"],
                    &["PERSIST", "t"],
                    &["TTL", "t"],
                    &["SETEX", "v", "100", "3"],
                    &["PEXPIRE", "v", "0"],
                    &["EXISTS", "v"],
                    &["SCAN", "0", "MATCH", "[tv]", "COUNT", "100"],
                    &["DBSIZE"],
                    &["EXPIRE", "t", "abc"],
                    &["GETEX", "u", "EX", "0"],
                    &["EXEC"],
                    &["TTL", "t"],
                    &["TTL", "u"],
                    &["EXISTS", "v"],
                ]),
            ]],
        },
    ]
}

/// Scenarios on several connections, and with keys that must actually expire.
fn interleaved_scenarios() -> Vec<Interleaved> {
    let tx = |conn: usize, cmds: &[&[&str]]| -> Vec<Step> {
        let mut steps = on(conn, &[&["MULTI"]]);
        steps.extend(on(conn, cmds));
        steps.extend(on(conn, &[&["EXEC"]]));
        steps
    };
    let get_k = |conn: usize| tx(conn, &[&["GET", "k"]]);
    let mut watch = Vec::new();
    // Modified by another client: EXEC answers a null array and runs nothing.
    watch.extend(on(0, &[&["WATCH", "k"]]));
    watch.extend(on(1, &[&["SET", "k", "1"]]));
    watch.extend(tx(0, &[&["SET", "k", "mine"]]));
    watch.extend(on(0, &[&["GET", "k"]]));
    // Not modified: EXEC runs; a missing key that stays missing too.
    watch.extend(on(0, &[&["WATCH", "k", "nokey", "k"]]));
    watch.extend(get_k(0));
    // EXEC cleared the watches: a later write does not abort the next transaction.
    watch.extend(on(1, &[&["SET", "k", "2"]]));
    watch.extend(get_k(0));
    // UNWATCH clears them.
    watch.extend(on(0, &[&["WATCH", "k"]]));
    watch.extend(on(1, &[&["SET", "k", "3"]]));
    watch.extend(on(0, &[&["UNWATCH"]]));
    watch.extend(get_k(0));
    // So does DISCARD.
    watch.extend(on(0, &[&["WATCH", "k"], &["MULTI"], &["DISCARD"]]));
    watch.extend(on(1, &[&["SET", "k", "4"]]));
    watch.extend(get_k(0));
    // EXEC without MULTI does not.
    watch.extend(on(0, &[&["WATCH", "k"], &["EXEC"]]));
    watch.extend(on(1, &[&["SET", "k", "5"]]));
    watch.extend(get_k(0));
    // The client's own write counts.
    watch.extend(on(0, &[&["WATCH", "k"], &["SET", "k", "6"]]));
    watch.extend(get_k(0));
    // Writes that change nothing do not.
    watch.extend(on(0, &[&["WATCH", "k", "nokey"]]));
    watch.extend(on(
        1,
        &[
            &["SET", "k", "x", "NX"],
            &["SET", "nokey", "x", "XX"],
            &["EXPIRE", "k", "10", "XX"],
            &["EXPIRE", "nokey", "10"],
            &["PERSIST", "k"],
            &["GETEX", "k"],
            &["GETEX", "k", "PERSIST"],
            &["DEL", "nokey"],
            &["GETDEL", "nokey"],
            &["SETRANGE", "k", "0", ""],
            &["SETRANGE", "nokey", "0", ""],
            &["MSETNX", "k", "1", "nokey", "2"],
            &["INCR", "k", "x"],
            &["GET", "k"],
        ],
    ));
    watch.extend(get_k(0));
    // Each kind of write does, its expiry included.
    for write in [
        &["DEL", "k"][..],
        &["SET", "k", "7"],
        &["EXPIRE", "k", "100"],
        &["PERSIST", "k"],
        &["GETEX", "k", "PX", "100000"],
        &["GETEX", "k", "PERSIST"],
        &["SET", "k", "7"],
        &["APPEND", "k", ""],
        &["SETRANGE", "k", "0", "8"],
        &["INCR", "k"],
        &["INCRBYFLOAT", "k", "0.5"],
        &["GETSET", "k", "9"],
        &["MSET", "other", "1", "k", "10"],
        &["SET", "k", "11", "KEEPTTL"],
        &["SETEX", "k", "100", "12"],
        &["EXPIRE", "k", "-1"],
        &["APPEND", "k", ""],
        &["GETDEL", "k"],
        &["SETNX", "k", "13"],
        &["UNLINK", "k"],
        &["MSETNX", "k", "14"],
        &["RENAME", "k", "moved"],
        &["RENAME", "moved", "k"],
        &["SET", "other", "1"],
        &["COPY", "other", "k"],
        &["COPY", "other", "k", "REPLACE"],
        &["RENAMENX", "k", "other"],
        &["RENAMENX", "k", "fresh"],
        &["SET", "k", "15"],
        &["FLUSHALL"],
    ] {
        watch.extend(on(0, &[&["WATCH", "k"]]));
        watch.extend(on(1, &[write]));
        watch.extend(get_k(0));
    }
    // FLUSHALL touches only the watched keys that existed.
    watch.extend(on(0, &[&["WATCH", "nokey"]]));
    watch.extend(on(1, &[&["FLUSHALL"]]));
    watch.extend(get_k(0));
    // WATCH inside MULTI is an error that does not abort; its arity error does.
    watch.extend(on(0, &[&["WATCH", "k"], &["MULTI"], &["WATCH", "k"]]));
    watch.extend(on(0, &[&["GET", "k"], &["UNWATCH"], &["EXEC"]]));
    watch.extend(on(0, &[&["MULTI"], &["WATCH"], &["EXEC"], &["WATCH"]]));
    watch.extend(on(0, &[&["UNWATCH", "x"]]));
    // EXECABORT wins over a changed watched key, and clears the watches.
    watch.extend(on(0, &[&["WATCH", "k"]]));
    watch.extend(on(1, &[&["SET", "k", "15"]]));
    watch.extend(on(0, &[&["MULTI"], &["NOSUCHCOMMAND"], &["EXEC"]]));
    watch.extend(get_k(0));
    // A transaction's own writes of its watched keys do not abort it.
    watch.extend(on(0, &[&["WATCH", "k"]]));
    watch.extend(tx(0, &[&["INCR", "k"], &["INCR", "k"]]));
    // Two clients watching one key: the first EXEC wins, the second is aborted.
    watch.extend(on(0, &[&["WATCH", "k"]]));
    watch.extend(on(1, &[&["WATCH", "k"]]));
    watch.extend(tx(0, &[&["INCR", "k"]]));
    watch.extend(tx(1, &[&["INCR", "k"]]));
    watch.extend(on(1, &[&["GET", "k"]]));

    // Keys set with PX 100 (each way; in one pipeline, so that none expires before the
    // pipeline's end even on a loaded machine) are gone 250 ms later, from every read path.
    let mut expiry = vec![Step::On(
        0,
        pipelined(&[
            &["SET", "a", "1", "PX", "100"],
            &["SETEX", "keep", "1000", "x"],
            &["PSETEX", "b", "100", "2"],
            &["SET", "c", "3"],
            &["PEXPIRE", "c", "100"],
            &["SET", "d", "4"],
            &["GETEX", "d", "PX", "100"],
            &["SET", "e", "5", "PX", "100"],
            &["INCR", "e"],
            &["APPEND", "e", "x"],
            &["SET", "f", "6", "PX", "100"],
            &["SET", "f", "7", "KEEPTTL"],
            &["SET", "g", "8", "PX", "100"],
            &["SET", "g", "9"],
            &["SET", "h", "10", "PX", "100"],
            &["PERSIST", "h"],
            &["DBSIZE"],
        ]),
    )];
    expiry.push(Step::Sleep(250));
    expiry.extend(on(
        0,
        &[
            &["GET", "a"],
            &["MGET", "a", "b", "c", "d", "e", "f", "g", "h"],
            &["EXISTS", "a", "b", "c", "d", "e", "f", "g", "h"],
            &["TTL", "a"],
            &["PTTL", "b"],
            &["EXPIRETIME", "c"],
            &["TYPE", "d"],
            &["STRLEN", "e"],
            &["DBSIZE"],
            &["KEYS", "[a-f]"],
            &["KEYS", "k*"],
            &["SCAN", "0", "MATCH", "[a-f]", "COUNT", "100"],
            &["SCAN", "0", "MATCH", "*ee*", "COUNT", "100"],
            &["EXPIRE", "a", "100"],
            &["PERSIST", "b"],
            &["GETEX", "c", "PERSIST"],
            &["GETDEL", "d"],
            &["SET", "e", "new", "XX"],
            &["SET", "f", "new", "NX"],
            &["INCR", "a"],
            &["TTL", "a"],
            &["APPEND", "b", "x"],
            &["TTL", "b"],
            &["DEL", "keep", "g", "h", "c"],
            &["DBSIZE"],
        ],
    ));
    // Watched while it had a TTL that passes before EXEC: EXEC is aborted. Watched once it
    // had already expired: nothing changes, EXEC runs.
    let mut watch_expiry = vec![Step::On(
        0,
        pipelined(&[&["SET", "t", "v", "PX", "100"], &["WATCH", "t"]]),
    )];
    watch_expiry.push(Step::Sleep(250));
    watch_expiry.extend(tx(0, &[&["GET", "t"]]));
    watch_expiry.extend(on(0, &[&["SET", "t", "v", "PX", "20"]]));
    watch_expiry.push(Step::Sleep(60));
    watch_expiry.extend(on(0, &[&["WATCH", "t"]]));
    watch_expiry.extend(tx(0, &[&["GET", "t"]]));
    // A long TTL that does not pass: EXEC runs.
    watch_expiry.extend(on(0, &[&["SET", "t", "v", "EX", "100"], &["WATCH", "t"]]));
    watch_expiry.push(Step::Sleep(60));
    watch_expiry.extend(tx(0, &[&["TTL", "t"]]));
    // Another client's EXPIRE of a watched key aborts, even to a later time.
    watch_expiry.extend(on(0, &[&["WATCH", "t"]]));
    watch_expiry.extend(on(1, &[&["EXPIRE", "t", "200", "GT"]]));
    watch_expiry.extend(tx(0, &[&["TTL", "t"]]));
    vec![
        Interleaved {
            name: "WATCH on two connections",
            steps: watch,
        },
        Interleaved {
            name: "keys that expire, on every command",
            steps: expiry,
        },
        Interleaved {
            name: "WATCH and expiry",
            steps: watch_expiry,
        },
    ]
}

#[test]
fn scenarios_reply_byte_for_byte_as_redis_in_resp2_and_resp3() {
    let Some(redis) = RedisProcess::start() else {
        eprintln!("skipped: redis-server is not installed (apt-get install redis-server)");
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let augur = ServerProcess::start(&tmp.path().join("db"), &["--enable-flush"]);
    for protocol in [Protocol::Resp2, Protocol::Resp3] {
        for scenario in scenarios() {
            let want = run(redis.addr, &scenario, protocol);
            let got = run(augur.addr, &scenario, protocol);
            assert_eq!(got, want, "{} ({protocol:?})", scenario.name);
        }
        for scenario in interleaved_scenarios() {
            let want = run_interleaved(redis.addr, &scenario, protocol);
            let got = run_interleaved(augur.addr, &scenario, protocol);
            for (i, (got, want)) in got.iter().zip(&want).enumerate() {
                assert_eq!(got, want, "{} ({protocol:?}), reply {i}", scenario.name);
            }
            assert_eq!(got.len(), want.len(), "{}", scenario.name);
        }
    }
}

/// Replies to one pipeline of `(command words)` on a fresh connection.
fn pipeline_replies(addr: std::net::SocketAddr, cmds: &[Vec<Vec<u8>>]) -> Vec<String> {
    let mut c = Raw::connect(addr);
    let mut replies = Vec::with_capacity(cmds.len());
    // In slices, so neither side's socket buffers fill up while the other waits.
    for chunk in cmds.chunks(200) {
        let bytes: Vec<u8> = chunk
            .iter()
            .flat_map(|words| {
                let words: Vec<&[u8]> = words.iter().map(Vec::as_slice).collect();
                encode(&words)
            })
            .collect();
        c.send(&bytes);
        for _ in chunk {
            let reply = c.reply().expect("a reply");
            replies.push(String::from_utf8_lossy(&reply).into_owned());
        }
    }
    replies
}

/// A random number as a client might write one: integers and decimals of many sizes,
/// exponents near and past the edges of `long double`, hexadecimal, signs, and a few
/// strings that are not numbers.
fn random_number(rng: &mut rand::rngs::StdRng) -> String {
    let digits = |rng: &mut rand::rngs::StdRng, len: std::ops::Range<usize>| -> String {
        let n = rng.gen_range(len);
        (0..n)
            .map(|_| char::from(b'0' + rng.gen_range(0..10u8)))
            .collect()
    };
    let sign = if rng.gen_bool(0.3) { "-" } else { "" };
    match rng.gen_range(0..10) {
        0 => format!("{sign}{}", rng.gen_range(0..1000)),
        1 => format!("{sign}{}", digits(rng, 1..30)),
        2 | 3 => format!("{sign}{}.{}", digits(rng, 1..12), digits(rng, 1..22)),
        4 => format!(
            "{sign}{}.{}e{}",
            digits(rng, 1..2),
            digits(rng, 1..20),
            rng.gen_range(-30..30)
        ),
        5 => format!(
            "{sign}{}e{}",
            digits(rng, 1..25),
            rng.gen_range(-4960..4940)
        ),
        6 => format!("{sign}0.{}", digits(rng, 15..25)),
        7 => format!(
            "{sign}0x{:x}.{:x}p{}",
            rng.gen::<u64>(),
            rng.gen::<u16>(),
            rng.gen_range(-70..70)
        ),
        8 => format!(
            "{sign}{}",
            rng.gen::<f64>() * 10f64.powi(rng.gen_range(-20..20))
        ),
        _ => [
            "1e", " 1", "1 ", "nan", "inf", "-inf", "0x", ".", "+.5", "1e-5000", "0e-99999",
        ][rng.gen_range(0..11)]
        .to_string(),
    }
}

/// INCRBYFLOAT on random stored values and increments, and chains of increments on one
/// key (each reading back the text the previous one wrote): byte for byte as Redis 7.0.
#[test]
fn incrbyfloat_matches_redis_on_random_operands() {
    let Some(redis) = RedisProcess::start() else {
        eprintln!("skipped: redis-server is not installed (apt-get install redis-server)");
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let augur = ServerProcess::start(&tmp.path().join("db"), &["--enable-flush"]);
    let mut rng = rand::rngs::StdRng::seed_from_u64(43);
    let mut cmds: Vec<Vec<Vec<u8>>> = Vec::new();
    let cmd = |words: &[&str]| words.iter().map(|w| w.as_bytes().to_vec()).collect();
    for i in 0..3000 {
        let key = format!("f{}", i % 50);
        if i % 5 == 0 {
            cmds.push(cmd(&["SET", &key, &random_number(&mut rng)]));
        }
        cmds.push(cmd(&["INCRBYFLOAT", &key, &random_number(&mut rng)]));
    }
    for i in 0..50 {
        cmds.push(cmd(&["GET", &format!("f{i}")]));
    }
    let want = pipeline_replies(redis.addr, &cmds);
    let got = pipeline_replies(augur.addr, &cmds);
    let mut differences = 0;
    for ((words, want), got) in cmds.iter().zip(&want).zip(&got) {
        if want != got {
            differences += 1;
            if differences <= 10 {
                let words: Vec<_> = words.iter().map(|w| String::from_utf8_lossy(w)).collect();
                eprintln!("{words:?}: redis {want:?}, augur {got:?}");
            }
        }
    }
    let successes = want.iter().filter(|r| r.starts_with('$')).count();
    assert!(successes > 1500, "too few valid operations: {successes}");
    assert_eq!(
        differences,
        0,
        "{differences} of {} replies differ",
        cmds.len()
    );
}
