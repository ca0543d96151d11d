//! Differential tests: the same raw RESP bytes sent to augur-server and to a real
//! redis-server (started on a free port when installed; skipped with a message otherwise),
//! and the replies compared byte for byte, every scenario under RESP2 and again under RESP3
//! (each connection opening with `HELLO 3`). The sequences are deterministic in both
//! servers (no hash-ordered replies of several keys); the two server-specific values of
//! `HELLO`'s reply (the version and the client id) are masked. INCRBYFLOAT is compared on
//! edge cases and on random operands.

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
