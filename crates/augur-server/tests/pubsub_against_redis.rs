//! Pub/Sub against a real redis-server 7.0, byte for byte, under RESP2 and RESP3 (skipped
//! with a message when redis-server is not installed): the same script of steps runs on
//! both servers, each step sending commands on one of several connections, and every reply
//! and message each connection receives is compared. Subscribe and unsubscribe
//! confirmations and their counts, the null-channel shape of an UNSUBSCRIBE of nothing,
//! messages and pattern messages to several subscribers, PUBSUB's subcommands and errors,
//! the errors of RESP2's subscribed mode, PING's reply there, RESET, a PUBLISH to the
//! publisher's own channel (RESP3), CLIENT KILL TYPE pubsub.
//!
//! Each step ends with `PING <marker>` on its connection, and its replies are read up to the
//! marker's: a message published by an earlier step is in the connection's stream before
//! that reply on both servers (PUBLISH delivers before it answers). The scripts avoid what
//! Redis orders by hash table (several channels unsubscribed at once, several patterns
//! matching one message, PUBSUB CHANNELS of several).

mod common;

use common::{encode, Raw, RedisProcess, ServerProcess};
use std::net::SocketAddr;

/// The marker that ends a step's replies.
const MARKER: &str = "__end_of_step__";

/// One step: commands sent on connection `.0`.
type Step<'a> = (usize, Vec<Vec<&'a str>>);

/// Runs `steps` on `connections` fresh connections to `addr` (each in RESP3 first with
/// `resp3`); every reply and message received, per step, as text.
fn run(addr: SocketAddr, connections: usize, steps: &[Step<'_>], resp3: bool) -> Vec<String> {
    let mut conns: Vec<Raw> = (0..connections).map(|_| Raw::connect(addr)).collect();
    if resp3 {
        for c in &mut conns {
            let hello = c.cmd(&[b"HELLO", b"3"]);
            assert!(hello.starts_with(b"%7\r\n"), "{hello:?}");
        }
    }
    let mut seen = Vec::new();
    for (i, (conn, cmds)) in steps.iter().enumerate() {
        let c = &mut conns[*conn];
        let mut bytes = Vec::new();
        for words in cmds
            .iter()
            .map(Vec::as_slice)
            .chain([&["PING", MARKER][..]])
        {
            let words: Vec<&[u8]> = words.iter().map(|w| w.as_bytes()).collect();
            bytes.extend(encode(&words));
        }
        let _ = c.send_until_closed(&bytes);
        loop {
            match c.reply() {
                None => {
                    seen.push(format!("step {i} conn {conn}: <closed>"));
                    break;
                }
                Some(r) => {
                    let text = String::from_utf8_lossy(&r).into_owned();
                    if text.ends_with(&format!("{MARKER}\r\n")) {
                        seen.push(format!("step {i} conn {conn}: <end> {text:?}"));
                        break;
                    }
                    seen.push(format!("step {i} conn {conn}: {text:?}"));
                }
            }
        }
    }
    seen
}

/// Runs `steps` on both servers under both protocols (`resp3` decides which) and compares.
fn same_as_redis(name: &str, connections: usize, steps: &[Step<'_>], protocols: &[bool]) {
    let Some(redis) = RedisProcess::start() else {
        eprintln!("skipped: redis-server is not installed (apt-get install redis-server)");
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let augur = ServerProcess::start(&tmp.path().join("db"), &[]);
    for &resp3 in protocols {
        // The previous protocol's connections are gone on both servers before this one
        // starts (`CLIENT KILL TYPE normal` counts them otherwise).
        wait_for_no_other_client(redis.addr);
        wait_for_no_other_client(augur.addr);
        let want = run(redis.addr, connections, steps, resp3);
        let got = run(augur.addr, connections, steps, resp3);
        for (g, w) in got.iter().zip(&want) {
            assert_eq!(g, w, "{name} (RESP3 {resp3})");
        }
        assert_eq!(got.len(), want.len(), "{name} (RESP3 {resp3}): {got:#?}");
    }
}

/// Waits (up to 10 s) until the server at `addr` lists no client but the asking one.
fn wait_for_no_other_client(addr: std::net::SocketAddr) {
    use std::io::{Read, Write};
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while std::time::Instant::now() < deadline {
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.write_all(b"CLIENT LIST\r\nQUIT\r\n").unwrap();
        let mut text = String::new();
        let _ = s.read_to_string(&mut text);
        if text.matches("id=").count() <= 1 {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Commands as word lists.
fn cmds<'a>(list: &[&[&'a str]]) -> Vec<Vec<&'a str>> {
    list.iter().map(|c| c.to_vec()).collect()
}

#[test]
fn channels_patterns_and_counts() {
    let steps: Vec<Step<'_>> = vec![
        (0, cmds(&[&["SUBSCRIBE", "c1", "c2", "c1"]])),
        (1, cmds(&[&["PSUBSCRIBE", "c*", "c*"]])),
        (2, cmds(&[&["SUBSCRIBE", "c1"]])),
        (
            3,
            cmds(&[&["PUBLISH", "c1", "hello"], &["PUBLISH", "c2", ""]]),
        ),
        (
            3,
            cmds(&[
                &["PUBLISH", "other", "x"],
                &["PUBLISH", "c1", "bin\r\n\x00"],
            ]),
        ),
        (0, vec![]),
        (1, vec![]),
        (2, vec![]),
        (
            3,
            cmds(&[
                &["PUBSUB", "NUMSUB", "c1", "c2", "zz"],
                &["PUBSUB", "NUMSUB"],
                &["PUBSUB", "NUMPAT"],
                &["PUBSUB", "CHANNELS", "c2"],
                &["PUBSUB", "CHANNELS", "x*"],
                &["PUBSUB", "CHANNELS", "c[2]"],
            ]),
        ),
        (0, cmds(&[&["UNSUBSCRIBE", "c1"], &["UNSUBSCRIBE", "nope"]])),
        (0, cmds(&[&["UNSUBSCRIBE", "c2"], &["GET", "k"]])),
        (
            1,
            cmds(&[&["PUNSUBSCRIBE"], &["PUNSUBSCRIBE"], &["UNSUBSCRIBE"]]),
        ),
        (
            2,
            cmds(&[
                &["UNSUBSCRIBE"],
                &["UNSUBSCRIBE"],
                &["PUNSUBSCRIBE", "a", "b"],
            ]),
        ),
        (
            3,
            cmds(&[&["PUBLISH", "c1", "nobody"], &["PUBSUB", "NUMPAT"]]),
        ),
        // A channel and a pattern on one client: the message, then the pattern's.
        (0, cmds(&[&["SUBSCRIBE", "news"], &["PSUBSCRIBE", "n*"]])),
        (
            3,
            cmds(&[&["PUBLISH", "news", "both"], &["PUBLISH", "nab", "one"]]),
        ),
        (
            0,
            cmds(&[&["PUNSUBSCRIBE", "n*"], &["PUNSUBSCRIBE"], &["UNSUBSCRIBE"]]),
        ),
        // Binary names and patterns with classes and escapes.
        (1, cmds(&[&["PSUBSCRIBE", "h?llo", "x[a-c]y", "lit\\*"]])),
        (
            3,
            cmds(&[&["PUBLISH", "hallo", "1"], &["PUBLISH", "xby", "2"]]),
        ),
        (
            3,
            cmds(&[&["PUBLISH", "lit*", "3"], &["PUBLISH", "litx", "4"]]),
        ),
        (1, cmds(&[&["PUNSUBSCRIBE", "x[a-c]y", "lit\\*", "h?llo"]])),
    ];
    same_as_redis("channels and patterns", 4, &steps, &[false, true]);
}

#[test]
fn many_subscribers_get_every_message_in_order() {
    let mut steps: Vec<Step<'_>> = (0..4)
        .map(|c| (c, cmds(&[&["SUBSCRIBE", "news"]])))
        .collect();
    steps.push((
        4,
        cmds(&[
            &["PUBLISH", "news", "m1"],
            &["PUBLISH", "news", "m2"],
            &["PUBLISH", "news", "m3"],
        ]),
    ));
    steps.extend((0..4).map(|c| (c, vec![])));
    steps.push((2, cmds(&[&["UNSUBSCRIBE", "news"]])));
    steps.push((
        4,
        cmds(&[&["PUBLISH", "news", "m4"], &["PUBSUB", "NUMSUB", "news"]]),
    ));
    steps.extend((0..4).map(|c| (c, vec![])));
    same_as_redis("many subscribers", 5, &steps, &[false, true]);
}

#[test]
fn subscribed_mode_errors_in_resp2() {
    let steps: Vec<Step<'_>> = vec![
        (0, cmds(&[&["SUBSCRIBE", "x"]])),
        (
            0,
            cmds(&[
                &["GET", "k"],
                &["SET", "k", "v"],
                &["CLIENT", "LIST"],
                &["CLIENT", "ID"],
                &["CONFIG", "GET", "maxclients"],
                &["PUBSUB", "NUMPAT"],
                &["MULTI"],
                &["HELLO", "3"],
                &["FOO", "bar"],
                &["GET"],
                &["PUBLISH", "x", "y"],
                &["PING"],
                &["PING", "hi"],
                &["PING", "a", "b"],
                &["SUBSCRIBE"],
                &["PSUBSCRIBE", "p*"],
            ]),
        ),
        (
            1,
            cmds(&[&["PUBLISH", "x", "still"], &["INFO", "errorstats"]]),
        ),
        (0, cmds(&[&["RESET"], &["GET", "k"], &["PING"]])),
        (1, cmds(&[&["PUBLISH", "x", "gone"], &["PUBSUB", "NUMPAT"]])),
        (0, cmds(&[&["SUBSCRIBE", "q"], &["QUIT"]])),
        (1, cmds(&[&["PUBSUB", "NUMSUB", "q"]])),
    ];
    same_as_redis("subscribed mode (RESP2)", 2, &steps, &[false]);
}

#[test]
fn resp3_subscribers_run_any_command() {
    let steps: Vec<Step<'_>> = vec![
        (0, cmds(&[&["SUBSCRIBE", "x"]])),
        (
            0,
            cmds(&[
                &["SET", "k", "v"],
                &["GET", "k"],
                &["PING"],
                &["PUBLISH", "x", "to myself"],
                &["PUBSUB", "NUMSUB", "x"],
                &["DEL", "k"],
            ]),
        ),
        (1, cmds(&[&["PUBLISH", "x", "from 1"]])),
        (
            0,
            cmds(&[&["GET", "k"], &["UNSUBSCRIBE"], &["UNSUBSCRIBE"]]),
        ),
        (0, cmds(&[&["SUBSCRIBE", "y"], &["RESET"], &["PING"]])),
        (1, cmds(&[&["PUBLISH", "y", "nobody"]])),
    ];
    same_as_redis("RESP3 subscribers", 2, &steps, &[true]);
}

#[test]
fn pubsub_command_errors_and_shapes() {
    let steps: Vec<Step<'_>> = vec![(
        0,
        cmds(&[
            &["PUBSUB"],
            &["PUBSUB", "FOO"],
            &["PUBSUB", "HELP"],
            &["PUBSUB", "help"],
            &["PUBSUB", "NUMPAT", "x"],
            &["PUBSUB", "CHANNELS", "a", "b"],
            &["PUBSUB", "CHANNELS"],
            &["PUBSUB", "SHARDCHANNELS"],
            &["PUBSUB", "SHARDNUMSUB", "x", "y"],
            &["PUBLISH", "a"],
            &["PUBLISH", "a", "b", "c"],
            &["SUBSCRIBE"],
            &["PSUBSCRIBE"],
            &["UNSUBSCRIBE"],
            &["PUNSUBSCRIBE"],
            &["UNSUBSCRIBE", "a", "b"],
            &["MULTI"],
            &["PUBLISH", "a", "b"],
            &["PUBSUB", "NUMSUB", "a"],
            &["EXEC"],
        ]),
    )];
    same_as_redis("PUBSUB errors", 1, &steps, &[false, true]);
}

#[test]
fn client_kill_type_pubsub_kills_subscribers_only() {
    let steps: Vec<Step<'_>> = vec![
        (0, cmds(&[&["SUBSCRIBE", "a"]])),
        (1, cmds(&[&["PSUBSCRIBE", "a*"]])),
        (2, cmds(&[&["SUBSCRIBE", "b"], &["UNSUBSCRIBE", "b"]])),
        (
            3,
            cmds(&[
                &["CLIENT", "KILL", "TYPE", "pubsub"],
                &["PUBLISH", "a", "x"],
            ]),
        ),
        (0, vec![]),
        (1, vec![]),
        (2, cmds(&[&["GET", "k"]])),
        (
            3,
            cmds(&[
                &["CLIENT", "KILL", "TYPE", "pubsub"],
                &["PUBSUB", "NUMPAT"],
                &["CLIENT", "KILL", "TYPE", "normal"],
            ]),
        ),
        (2, vec![]),
        (
            3,
            cmds(&[&["CLIENT", "KILL", "TYPE", "PubSub", "SKIPME", "no"]]),
        ),
    ];
    same_as_redis("CLIENT KILL TYPE pubsub", 4, &steps, &[false, true]);
}

#[test]
fn sentinel_settings_round_trip_as_redis() {
    let steps: Vec<Step<'_>> = vec![(
        0,
        cmds(&[
            &["CONFIG", "GET", "replica-priority"],
            &["CONFIG", "GET", "slave-priority"],
            &["CONFIG", "GET", "replica-announced"],
            &["CONFIG", "GET", "replica-announce-port"],
            &["CONFIG", "GET", "slave-announce-ip"],
            &["CONFIG", "SET", "replica-priority", "-1"],
            &["CONFIG", "SET", "replica-priority", "abc"],
            &["CONFIG", "SET", "replica-priority", "2147483648"],
            &["CONFIG", "SET", "slave-priority", "7"],
            &["CONFIG", "GET", "replica-priority"],
            &["CONFIG", "SET", "replica-announce-port", "65536"],
            &["CONFIG", "SET", "replica-announce-port", "7000"],
            &["CONFIG", "GET", "slave-announce-port"],
            &["CONFIG", "SET", "replica-announce-ip", "10.0.0.1"],
            &["CONFIG", "GET", "replica-announce-ip"],
            &["CONFIG", "SET", "replica-announce-ip", ""],
            &["CONFIG", "GET", "replica-announce-ip"],
            &["CONFIG", "SET", "replica-announced", "maybe"],
            &["CONFIG", "SET", "replica-announced", "NO"],
            &["CONFIG", "GET", "replica-announced"],
            &["CONFIG", "GET", "client-output-buffer-limit"],
            &[
                "CONFIG",
                "SET",
                "client-output-buffer-limit",
                "pubsub 1mb 0",
            ],
            &["CONFIG", "SET", "client-output-buffer-limit", "foo 1 1 1"],
            &[
                "CONFIG",
                "SET",
                "client-output-buffer-limit",
                "pubsub x 1 1",
            ],
            &[
                "CONFIG",
                "SET",
                "client-output-buffer-limit",
                "pubsub 1 2 -1",
            ],
            &[
                "CONFIG",
                "SET",
                "client-output-buffer-limit",
                "PUBSUB 1K 2kb 1 replica 4 5 6",
            ],
            &["CONFIG", "GET", "client-output-buffer-limit"],
            &[
                "CONFIG",
                "SET",
                "client-output-buffer-limit",
                "slave 268435456 67108864 60 pubsub 32mb 8mb 60",
                "replica-priority",
                "100",
                "replica-announced",
                "yes",
                "replica-announce-port",
                "0",
            ],
            &["CONFIG", "GET", "client-output-buffer-limit"],
            // Sentinel's failover transaction, SLAVEOF aside (the replication branch's).
            &["MULTI"],
            &["CONFIG", "REWRITE"],
            &["CLIENT", "KILL", "TYPE", "normal"],
            &["CLIENT", "KILL", "TYPE", "pubsub"],
            &["EXEC"],
        ]),
    )];
    same_as_redis("Sentinel's settings", 1, &steps, &[false, true]);
}
