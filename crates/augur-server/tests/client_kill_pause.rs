//! CLIENT KILL, CLIENT PAUSE and the settings CONFIG SET changes, on a real server process:
//! a killed client's connection closes at once even while it sits idle in a read (or is
//! held by a pause); `CLIENT PAUSE WRITE` holds writes (pipelined ones and EXEC of a
//! transaction that writes) while reads go on, and `CLIENT UNPAUSE` or the pause's end
//! releases them; `CONFIG SET timeout` closes clients already idle, `maxclients` refuses new
//! ones, and `CONFIG REWRITE` writes the settings into the `--config` file, which a restart
//! then reads — `replicaof` too, sent as Sentinel sends it (`MULTI`, `SLAVEOF`, `CONFIG
//! REWRITE`, `CLIENT KILL TYPE normal` and `pubsub`, `EXEC`).

mod common;

use common::{expect, server, Raw, ServerProcess};
use std::io::ErrorKind;
use std::time::{Duration, Instant};

/// Whether no byte arrives on `c` within `ms` (nothing is consumed).
fn silent_for(c: &mut Raw, ms: u64) -> bool {
    c.stream
        .set_read_timeout(Some(Duration::from_millis(ms)))
        .unwrap();
    let mut b = [0u8; 1];
    let silent = match c.stream.peek(&mut b) {
        Err(e) => matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut),
        Ok(_) => false,
    };
    c.stream.set_read_timeout(Some(common::TIMEOUT)).unwrap();
    silent
}

/// How long until the server closes `c` (it must within `within`).
fn closed_within(c: &mut Raw, within: Duration) -> Duration {
    let started = Instant::now();
    c.stream.set_read_timeout(Some(within)).unwrap();
    let closed = c.reply().is_none();
    assert!(closed, "the connection is still open");
    let took = started.elapsed();
    assert!(took < within, "closed only after {took:?}");
    took
}

fn client_id(c: &mut Raw) -> String {
    c.text(&["CLIENT", "ID"])
        .trim()
        .trim_start_matches(':')
        .to_string()
}

fn connected_clients(c: &mut Raw) -> u64 {
    let info = c.text(&["INFO", "clients"]);
    info.lines()
        .find_map(|l| l.strip_prefix("connected_clients:"))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn a_killed_client_closes_at_once_even_idle_in_a_read() {
    let (_tmp, s) = server(&[]);
    let mut admin = s.raw();
    // By id, while the victim waits for its next request.
    let mut idle = s.raw();
    let id = client_id(&mut idle);
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(admin.text(&["CLIENT", "KILL", "ID", &id]), ":1\r\n");
    let took = closed_within(&mut idle, Duration::from_secs(2));
    assert!(took < Duration::from_millis(500), "{took:?}");
    assert!(!admin
        .text(&["CLIENT", "LIST"])
        .contains(&format!("id={id} ")));
    assert_eq!(connected_clients(&mut admin), 1);
    // Halfway through a request (its first bytes buffered), by address, the old form.
    let mut partial = s.raw();
    partial.send(b"*2\r\n$3\r\nGET\r\n$1");
    std::thread::sleep(Duration::from_millis(50));
    let addr = partial.stream.local_addr().unwrap().to_string();
    assert_eq!(admin.text(&["CLIENT", "KILL", &addr]), "+OK\r\n");
    closed_within(&mut partial, Duration::from_secs(2));
    assert_eq!(
        admin.text(&["CLIENT", "KILL", &addr]),
        "-ERR No such client\r\n"
    );
    // The filters: ADDR, LADDR, TYPE normal, USER default, MAXAGE; SKIPME yes by default.
    let server_addr = s.addr.to_string();
    let forms: [&[&str]; 5] = [
        &["ADDR", "<victim>"],
        &["LADDR", &server_addr],
        &["TYPE", "normal"],
        &["USER", "default"],
        &["MAXAGE", "0"],
    ];
    for form in forms {
        let mut victims: Vec<Raw> = (0..2).map(|_| s.raw()).collect();
        for v in &mut victims {
            assert_eq!(v.text(&["PING"]), "+PONG\r\n");
        }
        // MAXAGE 0 takes clients older than 0 s.
        std::thread::sleep(Duration::from_millis(1100));
        let victim = victims[0].stream.local_addr().unwrap().to_string();
        let mut words = vec!["CLIENT", "KILL"];
        words.extend(
            form.iter()
                .map(|w| if *w == "<victim>" { &victim } else { *w }),
        );
        let want = if form[0] == "ADDR" { 1 } else { 2 };
        assert_eq!(admin.text(&words), format!(":{want}\r\n"), "{form:?}");
        for v in victims.iter_mut().take(want) {
            closed_within(v, Duration::from_secs(2));
        }
        if want == 1 {
            assert_eq!(victims[1].text(&["PING"]), "+PONG\r\n", "{form:?}");
        }
        assert_eq!(admin.text(&["PING"]), "+PONG\r\n", "SKIPME yes: {form:?}");
    }
    // SKIPME no with a filter that takes every client: the caller too, after its reply.
    let mut other = s.raw();
    assert_eq!(other.text(&["PING"]), "+PONG\r\n");
    assert_eq!(
        admin.text(&["CLIENT", "KILL", "TYPE", "normal", "SKIPME", "no"]),
        ":2\r\n"
    );
    closed_within(&mut admin, Duration::from_secs(2));
    closed_within(&mut other, Duration::from_secs(2));
}

#[test]
fn pause_write_holds_writes_while_reads_go_on_until_unpause() {
    let (_tmp, s) = server(&[]);
    let mut admin = s.raw();
    let mut writer = s.raw();
    let mut reader = s.raw();
    let mut tx = s.raw();
    expect(&mut writer, &[(&["SET", "k", "0"], "+OK\r\n")]);
    expect(&mut tx, &[(&["MULTI"], "+OK\r\n")]);
    assert_eq!(
        admin.text(&["CLIENT", "PAUSE", "60000", "WRITE"]),
        "+OK\r\n"
    );
    // A pipeline: the read before the write is answered, the write and what follows wait.
    writer.send(&common::encode(&[b"GET", b"k"]));
    writer.send(&common::encode(&[b"SET", b"k", b"1"]));
    writer.send(&common::encode(&[b"GET", b"k"]));
    assert_eq!(writer.reply().unwrap(), b"$1\r\n0\r\n");
    assert!(
        silent_for(&mut writer, 300),
        "a write ran during PAUSE WRITE"
    );
    // Reads, and commands that do not write, go on.
    expect(
        &mut reader,
        &[
            (&["GET", "k"], "$1\r\n0\r\n"),
            (&["EXISTS", "k"], ":1\r\n"),
            (&["PING"], "+PONG\r\n"),
        ],
    );
    // A transaction: a write is held already when queued, as in Redis 7.0.
    tx.send(&common::encode(&[b"INCR", b"k"]));
    assert!(
        silent_for(&mut tx, 200),
        "a write was queued during PAUSE WRITE"
    );
    // A transaction of reads runs.
    expect(
        &mut reader,
        &[
            (&["MULTI"], "+OK\r\n"),
            (&["GET", "k"], "+QUEUED\r\n"),
            (&["EXEC"], "*1\r\n$1\r\n0\r\n"),
        ],
    );
    let unpaused = Instant::now();
    assert_eq!(admin.text(&["CLIENT", "UNPAUSE"]), "+OK\r\n");
    assert_eq!(writer.reply().unwrap(), b"+OK\r\n");
    assert_eq!(writer.reply().unwrap(), b"$1\r\n1\r\n");
    assert_eq!(tx.reply().unwrap(), b"+QUEUED\r\n");
    assert!(unpaused.elapsed() < Duration::from_secs(2));
    // EXEC of a transaction that writes is held by a new pause; its end releases it.
    assert_eq!(admin.text(&["CLIENT", "PAUSE", "400", "WRITE"]), "+OK\r\n");
    let paused = Instant::now();
    assert_eq!(tx.text(&["EXEC"]), "*1\r\n:2\r\n");
    assert!(
        paused.elapsed() >= Duration::from_millis(300),
        "EXEC ran paused"
    );
    // A client held by a pause is killed at once.
    assert_eq!(
        admin.text(&["CLIENT", "PAUSE", "60000", "WRITE"]),
        "+OK\r\n"
    );
    let mut held = s.raw();
    let id = client_id(&mut held);
    held.send(&common::encode(&[b"SET", b"x", b"1"]));
    assert!(silent_for(&mut held, 200));
    assert_eq!(admin.text(&["CLIENT", "KILL", "ID", &id]), ":1\r\n");
    closed_within(&mut held, Duration::from_secs(2));
    assert_eq!(admin.text(&["CLIENT", "UNPAUSE"]), "+OK\r\n");
    assert_eq!(reader.text(&["EXISTS", "x"]), ":0\r\n");
}

#[test]
fn pause_all_holds_every_command_until_it_ends() {
    let (_tmp, s) = server(&[]);
    let mut admin = s.raw();
    let mut other = s.raw();
    assert_eq!(admin.text(&["CLIENT", "PAUSE", "500", "ALL"]), "+OK\r\n");
    let paused = Instant::now();
    // Every command of every client waits, the pauser's and UNPAUSE included (Redis 7.0).
    other.send(&common::encode(&[b"PING"]));
    admin.send(&common::encode(&[b"CLIENT", b"UNPAUSE"]));
    assert!(silent_for(&mut other, 250));
    assert_eq!(other.reply().unwrap(), b"+PONG\r\n");
    assert_eq!(admin.reply().unwrap(), b"+OK\r\n");
    let waited = paused.elapsed();
    assert!(waited >= Duration::from_millis(450), "{waited:?}");
    assert!(waited < Duration::from_secs(3), "{waited:?}");
    // A weaker, shorter pause does not shorten or weaken an active one.
    assert_eq!(admin.text(&["CLIENT", "PAUSE", "600", "ALL"]), "+OK\r\n");
    let paused = Instant::now();
    admin.send(&common::encode(&[b"CLIENT", b"PAUSE", b"1", b"WRITE"]));
    assert_eq!(admin.reply().unwrap(), b"+OK\r\n"); // itself held until the end
    assert!(paused.elapsed() >= Duration::from_millis(500));
    assert_eq!(other.text(&["PING"]), "+PONG\r\n");
}

#[test]
fn config_set_timeout_and_maxclients_apply_to_clients_already_there() {
    let (_tmp, s) = server(&[]);
    let mut admin = s.raw();
    let mut idle = s.raw();
    assert_eq!(idle.text(&["PING"]), "+PONG\r\n");
    assert_eq!(
        admin.text(&["CONFIG", "SET", "timeout", "1"]),
        "+OK\r\n",
        "timeout"
    );
    // The idle client (waiting since before the change) is closed about a second after
    // its last request; the admin, kept busy, stays.
    let started = Instant::now();
    while started.elapsed() < Duration::from_millis(1500) {
        assert_eq!(admin.text(&["PING"]), "+PONG\r\n");
        std::thread::sleep(Duration::from_millis(200));
    }
    closed_within(&mut idle, Duration::from_secs(3));
    assert_eq!(admin.text(&["CONFIG", "SET", "timeout", "0"]), "+OK\r\n");
    // maxclients: new connections past it are refused with Redis's error.
    assert_eq!(admin.text(&["CONFIG", "SET", "maxclients", "2"]), "+OK\r\n");
    let mut second = s.raw();
    assert_eq!(second.text(&["PING"]), "+PONG\r\n");
    let mut third = s.raw();
    assert_eq!(
        third.reply().unwrap(),
        b"-ERR max number of clients reached\r\n"
    );
    assert_eq!(admin.text(&["CONFIG", "SET", "maxclients", "3"]), "+OK\r\n");
    let mut third = s.raw();
    assert_eq!(third.text(&["PING"]), "+PONG\r\n");
}

#[test]
fn config_rewrite_writes_the_settings_a_restart_reads() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("augur.toml");
    std::fs::write(
        &file,
        "# kept: a comment\nenable_flush = true\nmaxclients = 500\n\n[server]\nidle-timeout = 3\n",
    )
    .unwrap();
    let db = tmp.path().join("db");
    let f = file.to_str().unwrap();
    let s = ServerProcess::start(&db, &["--config", f]);
    let mut c = s.raw();
    expect(
        &mut c,
        &[
            (
                &["CONFIG", "GET", "maxclients"],
                "*2\r\n$10\r\nmaxclients\r\n$3\r\n500\r\n",
            ),
            (
                &["CONFIG", "GET", "timeout"],
                "*2\r\n$7\r\ntimeout\r\n$1\r\n3\r\n",
            ),
            (
                &[
                    "CONFIG",
                    "SET",
                    "maxclients",
                    "77",
                    "timeout",
                    "0",
                    "appendfsync",
                    "always",
                    "slowlog-max-len",
                    "9",
                    "requirepass",
                    "pw",
                ],
                "+OK\r\n",
            ),
            (&["CONFIG", "REWRITE"], "+OK\r\n"),
        ],
    );
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.starts_with("# kept: a comment\n"), "{text}");
    assert!(text.contains("maxclients = 77"), "{text}");
    assert!(text.contains("idle-timeout = 0"), "{text}");
    assert!(text.contains("sync = \"always\""), "{text}");
    assert!(text.contains("slowlog_max_len = 9"), "{text}");
    assert!(text.contains("requirepass = \"pw\""), "{text}");
    drop(c);
    s.terminate();
    let s = ServerProcess::start(&db, &["--config", f]);
    let mut c = s.raw();
    expect(
        &mut c,
        &[
            (&["PING"], "-NOAUTH Authentication required.\r\n"),
            (&["AUTH", "pw"], "+OK\r\n"),
            (
                &["CONFIG", "GET", "maxclients"],
                "*2\r\n$10\r\nmaxclients\r\n$2\r\n77\r\n",
            ),
            (
                &["CONFIG", "GET", "appendfsync"],
                "*2\r\n$11\r\nappendfsync\r\n$6\r\nalways\r\n",
            ),
            (
                &["CONFIG", "GET", "slowlog-max-len"],
                "*2\r\n$15\r\nslowlog-max-len\r\n$1\r\n9\r\n",
            ),
            (&["CONFIG", "SET", "requirepass", ""], "+OK\r\n"),
            (&["CONFIG", "REWRITE"], "+OK\r\n"),
        ],
    );
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(!text.contains("requirepass"), "{text}");
    // A password from --requirepass-file is rewritten into that file.
    let pw_file = tmp.path().join("pw");
    std::fs::write(&pw_file, "first\n").unwrap();
    drop(c);
    s.terminate();
    let pw = pw_file.to_str().unwrap();
    let s = ServerProcess::start(&db, &["--config", f, "--requirepass-file", pw]);
    let mut c = s.raw();
    expect(
        &mut c,
        &[
            (&["AUTH", "first"], "+OK\r\n"),
            (&["CONFIG", "SET", "requirepass", "second"], "+OK\r\n"),
            (&["CONFIG", "REWRITE"], "+OK\r\n"),
        ],
    );
    assert_eq!(std::fs::read_to_string(&pw_file).unwrap(), "second\n");
    assert!(!std::fs::read_to_string(&file)
        .unwrap()
        .contains("requirepass"));
}

#[test]
fn config_rewrite_persists_a_replicaof_sent_as_sentinel_sends_it() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("augur.toml");
    std::fs::write(&file, "# a node\n").unwrap();
    let db = tmp.path().join("db");
    let f = file.to_str().unwrap();
    let s = ServerProcess::start(&db, &["--config", f]);
    let mut other = s.raw();
    assert_eq!(other.text(&["PING"]), "+PONG\r\n");
    // Sentinel's reconfiguration: one transaction that also drops the normal clients.
    let mut c = s.raw();
    expect(
        &mut c,
        &[
            (&["MULTI"], "+OK\r\n"),
            (&["SLAVEOF", "127.0.0.1", "1"], "+QUEUED\r\n"),
            (&["CONFIG", "REWRITE"], "+QUEUED\r\n"),
            (&["CLIENT", "KILL", "TYPE", "normal"], "+QUEUED\r\n"),
            (&["CLIENT", "KILL", "TYPE", "pubsub"], "+QUEUED\r\n"),
            (&["EXEC"], "*4\r\n+OK\r\n+OK\r\n:1\r\n:0\r\n"),
        ],
    );
    assert!(other.is_closed());
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains("# a node\n"), "{text}");
    assert!(text.contains("replicaof = \"127.0.0.1 1\""), "{text}");
    drop(c);
    s.terminate();
    // A restart reads it back; promotion and a rewrite remove it.
    let s = ServerProcess::start(&db, &["--config", f]);
    let mut c = s.raw();
    assert!(c
        .text(&["ROLE"])
        .starts_with("*5\r\n$5\r\nslave\r\n$9\r\n127.0.0.1\r\n:1\r\n"));
    expect(
        &mut c,
        &[
            (&["REPLICAOF", "NO", "ONE"], "+OK\r\n"),
            (&["CONFIG", "REWRITE"], "+OK\r\n"),
        ],
    );
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(!text.contains("replicaof"), "{text}");
}
