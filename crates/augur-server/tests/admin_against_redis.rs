//! The administration commands of issue 43's item 4 — CONFIG GET/SET/RESETSTAT/REWRITE/HELP,
//! CLIENT KILL/PAUSE/UNPAUSE/REPLY/NO-EVICT/LIST and their errors, SLOWLOG, and the
//! deterministic parts of INFO (empty and constant sections, `errorstats`, and
//! `commandstats` with the times masked) — sent as the same bytes to augur-server and to a
//! real redis-server 7.0 and compared byte for byte, under RESP2 and RESP3 (skipped with a
//! message when redis-server is not installed, as `against_redis.rs`).
//!
//! Each session is one pipeline on a fresh connection, closed by `CLIENT REPLY ON` and an
//! `ECHO` of a marker, so that sessions whose replies `CLIENT REPLY` suppresses still end;
//! replies are read up to the marker (or the connection's close).

mod common;

use common::{encode, Raw, RedisProcess, ServerProcess};
use std::net::SocketAddr;

/// The marker that ends a session's replies.
const END: &str = "__end_of_session__";

/// Runs each session (a list of commands) on a fresh connection at `addr`, speaking RESP3
/// when `resp3`; every reply as text, in order, a line per session's close when the server
/// closed it.
fn run(addr: SocketAddr, sessions: &[Vec<Vec<&str>>], resp3: bool) -> Vec<String> {
    let mut replies = Vec::new();
    for session in sessions {
        let mut c = Raw::connect(addr);
        if resp3 {
            // Refused (NOAUTH) when a password is set: the session then speaks RESP2.
            let hello = c.cmd(&[b"HELLO", b"3"]);
            let hello = String::from_utf8_lossy(&hello);
            replies.push(if hello.starts_with("%7\r\n") {
                "<hello>".to_string()
            } else {
                hello.into_owned()
            });
        }
        let mut bytes = Vec::new();
        let closing: [&[&str]; 2] = [&["CLIENT", "REPLY", "ON"], &["ECHO", END]];
        for words in session.iter().map(Vec::as_slice).chain(closing) {
            let words: Vec<&[u8]> = words.iter().map(|w| w.as_bytes()).collect();
            bytes.extend(encode(&words));
        }
        c.send(&bytes);
        let end = format!("${}\r\n{END}\r\n", END.len());
        loop {
            match c.reply() {
                None => {
                    replies.push("<closed>".to_string());
                    break;
                }
                Some(r) => {
                    let text = String::from_utf8_lossy(&r).into_owned();
                    if text == end {
                        break;
                    }
                    replies.push(text);
                }
            }
        }
    }
    replies
}

/// Compares `sessions` on both servers under both protocols.
fn same_as_redis(name: &str, sessions: &[Vec<Vec<&str>>], redis: SocketAddr, augur: SocketAddr) {
    for resp3 in [false, true] {
        let want = run(redis, sessions, resp3);
        let got = run(augur, sessions, resp3);
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g, w, "{name} (RESP3 {resp3}), reply {i}");
        }
        assert_eq!(got.len(), want.len(), "{name} (RESP3 {resp3}): {got:?}");
    }
}

/// Commands as word lists.
fn cmds<'a>(list: &[&[&'a str]]) -> Vec<Vec<&'a str>> {
    list.iter().map(|c| c.to_vec()).collect()
}

fn servers() -> Option<(RedisProcess, tempfile::TempDir, ServerProcess)> {
    let Some(redis) = RedisProcess::start() else {
        eprintln!("skipped: redis-server is not installed (apt-get install redis-server)");
        return None;
    };
    let tmp = tempfile::tempdir().unwrap();
    let augur = ServerProcess::start(&tmp.path().join("db"), &["--enable-flush"]);
    Some((redis, tmp, augur))
}

#[test]
fn config_replies_byte_for_byte_as_redis() {
    let Some((redis, _tmp, augur)) = servers() else {
        return;
    };
    let errors = cmds(&[
        &["CONFIG", "SET", "foo", "bar"],
        &["CONFIG", "SET", "maxclients", "abc"],
        &["CONFIG", "SET", "maxclients", "0"],
        &["CONFIG", "SET", "maxclients", "-5"],
        &["CONFIG", "SET", "maxclients", "20000000000"],
        &["CONFIG", "SET", "maxclients", "+5"],
        &["CONFIG", "SET", "maxclients", "007"],
        &["CONFIG", "SET", "maxclients", "10k"],
        &["CONFIG", "SET", "MaxClients", "abc"],
        &["CONFIG", "SET", "maxclients", "100", "maxclients", "200"],
        &["CONFIG", "SET", "MAXCLIENTS", "100", "MaxClients", "200"],
        &["CONFIG", "SET", "maxclients", "100", "timeout"],
        &["CONFIG", "SET", "maxclients"],
        &["CONFIG", "SET", "timeout", "-1"],
        &["CONFIG", "SET", "timeout", "abc"],
        &["CONFIG", "SET", "timeout", "1.5"],
        &["CONFIG", "SET", "timeout", "10", "foo", "1"],
        &["CONFIG", "SET", "timeout", "abc", "foo", "1"],
        &["CONFIG", "SET", "databases", "4"],
        &["CONFIG", "SET", "databases", "4", "foo", "1"],
        &["CONFIG", "SET", "foo", "1", "databases", "4"],
        &["CONFIG", "SET", "io-threads", "2"],
        &["CONFIG", "SET", "appendfsync", "sometimes"],
        &["CONFIG", "SET", "slowlog-log-slower-than", "-5"],
        &["CONFIG", "SET", "slowlog-log-slower-than", "abc"],
        &["CONFIG", "SET", "slowlog-max-len", "-1"],
        &["CONFIG", "SET", "appendonly", "maybe"],
        &["CONFIG", "SET", "maxmemory-policy", "foo"],
        &["CONFIG", "REWRITE"],
        &["CONFIG", "REWRITE", "x"],
        &["CONFIG", "RESETSTAT", "x"],
        &["CONFIG", "FOO"],
        &["CONFIG", "foo", "bar"],
        &["CONFIG"],
        &["CONFIG", "GET"],
        &["CONFIG", "HELP"],
    ]);
    // Every change is read back, then undone (the defaults of both servers).
    let round_trips = cmds(&[
        &["CONFIG", "SET", "appendfsync", "ALWAYS"],
        &["CONFIG", "GET", "appendfsync"],
        &["CONFIG", "SET", "appendfsync", "no"],
        &["CONFIG", "GET", "appendfsync"],
        &["CONFIG", "SET", "appendfsync", "everysec"],
        &["CONFIG", "SET", "maxclients", "50", "timeout", "7"],
        // One name per GET: Redis answers several in its hash table's order.
        &["CONFIG", "GET", "maxclients"],
        &["CONFIG", "GET", "timeout"],
        &["CONFIG", "GET", "nope"],
        &["CONFIG", "SET", "maxclients", "10000", "timeout", "0"],
        &[
            "CONFIG",
            "SET",
            "slowlog-max-len",
            "5",
            "slowlog-log-slower-than",
            "-1",
        ],
        &["CONFIG", "GET", "slowlog-max-len"],
        &["CONFIG", "GET", "slowlog-log-slower-than"],
        &[
            "CONFIG",
            "SET",
            "slowlog-max-len",
            "128",
            "slowlog-log-slower-than",
            "10000",
        ],
        &["CONFIG", "GET", "requirepass"],
        &["CONFIG", "SET", "maxmemory", "0"],
        &["CONFIG", "SET", "maxmemory-policy", "noeviction"],
        &["CONFIG", "SET", "save", ""],
        &["CONFIG", "RESETSTAT"],
    ]);
    // A password set at run time: this connection stays authenticated, a new one must
    // AUTH, and removing it opens the server again.
    let password = vec![
        cmds(&[
            &["CONFIG", "SET", "requirepass", "s3cret"],
            &["SET", "a", "1"],
            &["CONFIG", "GET", "requirepass"],
        ]),
        cmds(&[
            &["GET", "a"],
            &["AUTH", "wrong"],
            &["AUTH", "s3cret"],
            &["GET", "a"],
            &["CONFIG", "SET", "requirepass", ""],
        ]),
        cmds(&[&["GET", "a"], &["AUTH", "x"], &["DEL", "a"]]),
    ];
    same_as_redis("CONFIG errors", &[errors], redis.addr, augur.addr);
    same_as_redis("CONFIG round trips", &[round_trips], redis.addr, augur.addr);
    same_as_redis("requirepass at run time", &password, redis.addr, augur.addr);
}

#[test]
fn client_replies_byte_for_byte_as_redis() {
    let Some((redis, _tmp, augur)) = servers() else {
        return;
    };
    let errors = cmds(&[
        &["CLIENT", "FOO"],
        &["CLIENT", "ID", "x"],
        &["CLIENT", "GETNAME", "x"],
        &["CLIENT", "SETNAME"],
        &["CLIENT"],
        &["CLIENT", "INFO", "x"],
        &["CLIENT", "LIST", "TYPE", "foo"],
        &["CLIENT", "LIST", "TYPE", "master"],
        &["CLIENT", "LIST", "TYPE", "pubsub"],
        &["CLIENT", "LIST", "x"],
        &["CLIENT", "LIST", "ID", "abc"],
        &["CLIENT", "LIST", "ID", "99999"],
        &["CLIENT", "KILL"],
        &["CLIENT", "KILL", "1.2.3.4:5"],
        &["CLIENT", "KILL", "ID", "0"],
        &["CLIENT", "KILL", "ID", "abc"],
        &["CLIENT", "KILL", "ID", "99999"],
        &["CLIENT", "KILL", "ID", "99999", "SKIPME", "no"],
        &["CLIENT", "KILL", "TYPE", "foo"],
        &["CLIENT", "KILL", "TYPE", "master"],
        &["CLIENT", "KILL", "TYPE", "replica"],
        &["CLIENT", "KILL", "TYPE", "slave"],
        &["CLIENT", "KILL", "TYPE", "pubsub"],
        &["CLIENT", "KILL", "TYPE", "normal", "SKIPME", "maybe"],
        &["CLIENT", "KILL", "USER", "nobody"],
        &["CLIENT", "KILL", "ADDR", "1.2.3.4:5"],
        &["CLIENT", "KILL", "LADDR", "1.2.3.4:5"],
        &["CLIENT", "KILL", "ADDR", "1.2.3.4:5", "ID", "0"],
        &["CLIENT", "KILL", "ID", "5", "TYPE"],
        &["CLIENT", "KILL", "FOO", "bar"],
        &["CLIENT", "KILL", "1.2.3.4:5", "extra"],
        &["CLIENT", "PAUSE"],
        &["CLIENT", "PAUSE", "abc"],
        &["CLIENT", "PAUSE", "-1"],
        &["CLIENT", "PAUSE", "10", "FOO"],
        &["CLIENT", "PAUSE", "abc", "FOO"],
        &["CLIENT", "PAUSE", "10", "WRITE", "ALL"],
        &["CLIENT", "PAUSE", "0"],
        &["CLIENT", "PAUSE", "0", "write"],
        &["CLIENT", "UNPAUSE"],
        &["CLIENT", "UNPAUSE", "x"],
        &["CLIENT", "NO-EVICT"],
        &["CLIENT", "NO-EVICT", "on"],
        &["CLIENT", "NO-EVICT", "OFF"],
        &["CLIENT", "NO-EVICT", "maybe"],
        &["CLIENT", "REPLY"],
        &["CLIENT", "REPLY", "foo"],
    ]);
    let reply_modes = cmds(&[
        &["SET", "a", "1"],
        &["CLIENT", "REPLY", "OFF"],
        &["SET", "a", "2"],
        &["GET", "a"],
        &["FOO"],
        &["CLIENT", "REPLY", "SKIP"],
        &["GET", "a"],
        &["CLIENT", "REPLY", "ON"],
        &["GET", "a"],
        &["CLIENT", "REPLY", "SKIP"],
        &["INCR", "a"],
        &["GET", "a"],
        &["CLIENT", "REPLY", "SKIP"],
        &["CLIENT", "REPLY", "SKIP"],
        &["GET", "a"],
        &["GET", "a"],
        &["DEL", "a"],
    ]);
    // The old form kills the caller itself (its reply first); the filters skip it unless
    // SKIPME no.
    let kill_self = vec![cmds(&[
        &["CLIENT", "SETNAME", "me"],
        &["CLIENT", "KILL", "LADDR", "1.2.3.4:5", "SKIPME", "no"],
        &["CLIENT", "KILL", "TYPE", "master", "SKIPME", "no"],
        &["CLIENT", "GETNAME"],
    ])];
    same_as_redis("CLIENT errors", &[errors], redis.addr, augur.addr);
    same_as_redis("CLIENT REPLY", &[reply_modes], redis.addr, augur.addr);
    same_as_redis("CLIENT KILL SKIPME", &kill_self, redis.addr, augur.addr);
}

/// `CLIENT KILL` of the caller by its own id or address: `:1` (or `+OK`), then the close.
#[test]
fn client_kill_of_the_caller_replies_then_closes_as_redis() {
    let Some((redis, _tmp, augur)) = servers() else {
        return;
    };
    for addr in [redis.addr, augur.addr] {
        for form in ["id", "addr", "old"] {
            let mut c = Raw::connect(addr);
            let id = c.text(&["CLIENT", "ID"]);
            let id = id.trim().trim_start_matches(':').to_string();
            let me = c.stream.local_addr().unwrap().to_string();
            let reply = match form {
                "id" => c.text(&["CLIENT", "KILL", "ID", &id, "SKIPME", "no"]),
                "addr" => c.text(&["CLIENT", "KILL", "ADDR", &me, "SKIPME", "no"]),
                _ => c.text(&["CLIENT", "KILL", &me]),
            };
            let want = if form == "old" { "+OK\r\n" } else { ":1\r\n" };
            assert_eq!(reply, want, "{form} at {addr}");
            assert!(
                c.reply().is_none(),
                "{form} at {addr}: closed after the reply"
            );
            let mut c = Raw::connect(addr);
            let reply = c.text(&["CLIENT", "KILL", "ID", &id]);
            assert_eq!(
                reply, ":0\r\n",
                "{form} at {addr}: the killed client is gone"
            );
        }
    }
}

#[test]
fn slowlog_replies_byte_for_byte_as_redis() {
    let Some((redis, _tmp, augur)) = servers() else {
        return;
    };
    let errors = cmds(&[
        &["SLOWLOG"],
        &["SLOWLOG", "FOO"],
        &["SLOWLOG", "GET", "-2"],
        &["SLOWLOG", "GET", "abc"],
        &["SLOWLOG", "GET", "1", "2"],
        &["SLOWLOG", "LEN", "x"],
        &["SLOWLOG", "RESET", "x"],
        &["SLOWLOG", "HELP"],
        &["SLOWLOG", "RESET"],
        &["SLOWLOG", "LEN"],
        &["SLOWLOG", "GET"],
        &["SLOWLOG", "GET", "-1"],
    ]);
    same_as_redis("SLOWLOG errors", &[errors], redis.addr, augur.addr);
    // Every command logged: the entries' arguments (trimmed and redacted as Redis does) and
    // client names match; ids, times, durations and addresses are masked.
    let long = "x".repeat(200);
    let many: Vec<String> = (0..40).map(|i| i.to_string()).collect();
    let mut mset: Vec<&str> = vec!["MSET"];
    mset.extend(many.iter().map(String::as_str));
    let logged = vec![
        cmds(&[&["CONFIG", "SET", "slowlog-log-slower-than", "0"]]),
        cmds(&[
            &["SLOWLOG", "RESET"],
            &["CLIENT", "SETNAME", "slow"],
            &["SET", "k", &long],
            &mset,
            &["AUTH", "default", "pw"],
            &["CONFIG", "SET", "requirepass", "", "maxclients", "10000"],
            &["MULTI"],
            &["INCR", "n"],
            &["EXEC"],
            &["FLUSHALL"],
            &["CONFIG", "SET", "slowlog-log-slower-than", "-1"],
        ]),
        cmds(&[
            &["SLOWLOG", "LEN"],
            &["SLOWLOG", "GET", "-1"],
            &["SLOWLOG", "GET", "2"],
            &["CONFIG", "SET", "slowlog-log-slower-than", "10000"],
        ]),
    ];
    for resp3 in [false, true] {
        let masked = |addr| -> Vec<String> {
            run(addr, &logged, resp3)
                .iter()
                .map(|r| mask_slowlog(r))
                .collect()
        };
        assert_eq!(masked(augur.addr), masked(redis.addr), "RESP3 {resp3}");
    }
}

/// A SLOWLOG GET reply with each entry's id, time, duration and client address masked.
fn mask_slowlog(reply: &str) -> String {
    if !reply.starts_with('*') {
        return reply.to_string();
    }
    let lines: Vec<&str> = reply.split("\r\n").collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        // An entry: `*6`, then three integers (id, time, duration), the arguments, the
        // address (a bulk) and the name.
        if line == "*6" && lines.get(i + 1).is_some_and(|l| l.starts_with(':')) {
            out.extend(["*6", ":<id>", ":<time>", ":<usec>"]);
            i += 4;
            let n: usize = lines[i][1..].parse().unwrap();
            out.push(lines[i]);
            out.extend(&lines[i + 1..i + 1 + 2 * n]);
            i += 1 + 2 * n;
            out.extend(["$<len>", "<addr>"]);
            i += 2;
            continue;
        }
        out.push(line);
        i += 1;
    }
    out.join("\r\n")
}

#[test]
fn info_and_its_statistics_reply_byte_for_byte_as_redis() {
    let Some((redis, _tmp, augur)) = servers() else {
        return;
    };
    let constant = cmds(&[
        &["FLUSHALL"],
        &["INFO", "foo"],
        &["INFO", "keyspace"],
        &["INFO", "cluster"],
        &["INFO", "modules"],
        &["INFO", "Cluster", "KEYSPACE"],
        &["INFO", "cluster", "cluster"],
    ]);
    same_as_redis(
        "INFO constant sections",
        &[constant],
        redis.addr,
        augur.addr,
    );
    // After CONFIG RESETSTAT: the error replies by code, and the commands' counts (their
    // times masked, their lines sorted: Redis lists them in hash order).
    let counted = vec![cmds(&[
        &["CONFIG", "RESETSTAT"],
        &["GET"],
        &["FOO"],
        &["SET", "a", "x"],
        &["INCR", "a"],
        &["GET", "a"],
        &["AUTH", "x"],
        &["MULTI"],
        &["SET", "b"],
        &["EXEC"],
        &["MULTI"],
        &["INCR", "a"],
        &["SET", "b", "1"],
        &["EXEC"],
        &["CLIENT", "FOO"],
        &["CLIENT", "SETNAME", "x"],
        &["CONFIG", "GET", "maxclients"],
        &["DEL", "a", "b"],
        &["INFO", "errorstats"],
        &["INFO", "commandstats"],
    ])];
    for resp3 in [false, true] {
        let masked = |addr| -> Vec<String> {
            run(addr, &counted, resp3)
                .iter()
                .map(|r| {
                    if r.contains("# Commandstats") {
                        mask_commandstats(r)
                    } else {
                        r.clone()
                    }
                })
                .collect()
        };
        assert_eq!(masked(augur.addr), masked(redis.addr), "RESP3 {resp3}");
    }
    // The stats' totals after RESETSTAT (the command itself counts; INFO not yet).
    let totals = |addr: SocketAddr| -> Vec<String> {
        let mut c = Raw::connect(addr);
        for words in [
            &["CONFIG", "RESETSTAT"][..],
            &["GET"],
            &["SET", "a", "1"],
            &["GET", "a"],
        ] {
            c.text(words);
        }
        let info = c.text(&["INFO", "stats"]);
        info.split("\r\n")
            .filter(|l| {
                l.starts_with("total_commands_processed:")
                    || l.starts_with("total_error_replies:")
                    || l.starts_with("keyspace_")
                    || l.starts_with("evicted_keys:")
                    || l.starts_with("sync_")
            })
            .map(String::from)
            .collect()
    };
    assert_eq!(totals(augur.addr), totals(redis.addr));
}

/// `INFO commandstats`' text with each `usec=` and `usec_per_call=` masked and the lines
/// sorted.
fn mask_commandstats(reply: &str) -> String {
    let mut lines: Vec<String> = reply
        .split("\r\n")
        .filter(|l| l.starts_with("cmdstat_"))
        .map(|l| {
            l.split(',')
                .map(|part| {
                    if part.starts_with("usec=") || part.starts_with("usec_per_call=") {
                        part.split('=').next().unwrap().to_string() + "=<t>"
                    } else {
                        part.to_string()
                    }
                })
                .collect::<Vec<_>>()
                .join(",")
        })
        .collect();
    lines.sort();
    lines.join("\n")
}
