//! MULTI, EXEC and DISCARD (issue 40, defect 7): Redis's replies, one atomic step at EXEC
//! (no other client's write lands between a transaction's commands, and no client sees half
//! of one), reads inside a transaction that see its earlier writes, and queued commands that
//! never run outside their transaction. WATCH (issue 43): optimistic increments by
//! concurrent clients lose nothing, and watched keys are forgotten with their connection
//! and bounded. `against_redis.rs` compares the same sequences with a real redis-server
//! byte for byte.

mod common;

use common::{expect, server, Raw};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The issue's example, sent as redis-cli sends a piped script (inline commands).
#[test]
fn the_issue_example_replies_as_redis() {
    let (_tmp, s) = server(&[]);
    let mut c = s.raw();
    c.send(b"DEL c\r\nMULTI\r\nINCR c\r\nINCR c\r\nEXEC\r\nGET c\r\n");
    let replies: Vec<String> = (0..6)
        .map(|_| String::from_utf8(c.reply().unwrap()).unwrap())
        .collect();
    assert_eq!(
        replies,
        [
            ":0\r\n",
            "+OK\r\n",
            "+QUEUED\r\n",
            "+QUEUED\r\n",
            "*2\r\n:1\r\n:2\r\n",
            "$1\r\n2\r\n"
        ]
    );
}

#[test]
fn multi_exec_and_discard_reply_as_redis() {
    let (_tmp, s) = server(&[]);
    let mut c = s.raw();
    expect(
        &mut c,
        &[
            (&["EXEC"], "-ERR EXEC without MULTI\r\n"),
            (&["DISCARD"], "-ERR DISCARD without MULTI\r\n"),
            (&["MULTI"], "+OK\r\n"),
            (&["MULTI"], "-ERR MULTI calls can not be nested\r\n"),
            (&["SET", "a", "1"], "+QUEUED\r\n"),
            (&["INCR", "a"], "+QUEUED\r\n"),
            (&["GET", "a"], "+QUEUED\r\n"),
            (&["EXEC"], "*3\r\n+OK\r\n:2\r\n$1\r\n2\r\n"),
            (&["MULTI"], "+OK\r\n"),
            (&["EXEC"], "*0\r\n"),
            // Runtime errors are elements of EXEC's reply; the other commands still run.
            (&["MULTI"], "+OK\r\n"),
            (&["SET", "s", "x"], "+QUEUED\r\n"),
            (&["INCR", "s"], "+QUEUED\r\n"),
            (&["SET", "k", "v", "NX", "XX"], "+QUEUED\r\n"),
            (&["MSET", "a", "1", "b"], "+QUEUED\r\n"),
            (&["APPEND", "s", "y"], "+QUEUED\r\n"),
            (
                &["EXEC"],
                "*5\r\n+OK\r\n-ERR value is not an integer or out of range\r\n-ERR syntax \
                 error\r\n-ERR wrong number of arguments for 'mset' command\r\n:2\r\n",
            ),
            // An unknown command or a wrong arity while queuing aborts the transaction.
            (&["MULTI"], "+OK\r\n"),
            (&["SET", "a", "100"], "+QUEUED\r\n"),
            (
                &["FOO", "bar"],
                "-ERR unknown command 'FOO', with args beginning with: 'bar' \r\n",
            ),
            (
                &["GET"],
                "-ERR wrong number of arguments for 'get' command\r\n",
            ),
            (
                &["EXEC"],
                "-EXECABORT Transaction discarded because of previous errors.\r\n",
            ),
            (&["GET", "a"], "$1\r\n2\r\n"),
            (&["EXEC"], "-ERR EXEC without MULTI\r\n"),
            (&["MULTI"], "+OK\r\n"),
            (
                &["EXEC", "x"],
                "-EXECABORT Transaction discarded because of: wrong number of arguments for \
                 'exec' command\r\n",
            ),
            (&["EXEC"], "-ERR EXEC without MULTI\r\n"),
            (&["MULTI"], "+OK\r\n"),
            (
                &["DISCARD", "x"],
                "-ERR wrong number of arguments for 'discard' command\r\n",
            ),
            (
                &["EXEC"],
                "-EXECABORT Transaction discarded because of previous errors.\r\n",
            ),
            // SAVE and SHUTDOWN are refused inside a transaction, as Redis refuses them.
            (&["MULTI"], "+OK\r\n"),
            (
                &["SAVE"],
                "-ERR Command not allowed inside a transaction\r\n",
            ),
            (
                &["SHUTDOWN", "NOSAVE"],
                "-ERR Command not allowed inside a transaction\r\n",
            ),
            (
                &["EXEC"],
                "-EXECABORT Transaction discarded because of previous errors.\r\n",
            ),
            (&["MULTI"], "+OK\r\n"),
            (&["SET", "d", "1"], "+QUEUED\r\n"),
            (&["DISCARD"], "+OK\r\n"),
            (&["GET", "d"], "$-1\r\n"),
            (&["PING"], "+PONG\r\n"),
        ],
    );
}

/// WATCH inside MULTI is an error that does not fail the transaction (Redis's text), and a
/// WATCH of a wrong arity there fails it; UNWATCH inside MULTI is queued.
#[test]
fn watch_inside_multi_is_refused_as_redis_refuses_it() {
    let (_tmp, s) = server(&[]);
    let mut c = s.raw();
    expect(
        &mut c,
        &[
            (&["WATCH", "a"], "+OK\r\n"),
            (&["MULTI"], "+OK\r\n"),
            (
                &["WATCH", "a"],
                "-ERR WATCH inside MULTI is not allowed\r\n",
            ),
            (&["SET", "a", "1"], "+QUEUED\r\n"),
            (&["UNWATCH"], "+QUEUED\r\n"),
            (&["EXEC"], "*2\r\n+OK\r\n+OK\r\n"),
            (&["GET", "a"], "$1\r\n1\r\n"),
            (&["MULTI"], "+OK\r\n"),
            (
                &["WATCH"],
                "-ERR wrong number of arguments for 'watch' command\r\n",
            ),
            (&["SET", "a", "2"], "+QUEUED\r\n"),
            (
                &["EXEC"],
                "-EXECABORT Transaction discarded because of previous errors.\r\n",
            ),
            (&["GET", "a"], "$1\r\n1\r\n"),
        ],
    );
}

/// Reads inside a transaction see its earlier writes: point reads and the keyspace commands
/// (EXISTS, TYPE, DBSIZE, KEYS, SCAN), and FLUSHDB inside one.
#[test]
fn reads_inside_a_transaction_see_its_earlier_writes() {
    let (_tmp, s) = server(&["--enable-flush"]);
    let mut c = s.raw();
    expect(
        &mut c,
        &[
            (&["MSET", "old1", "a", "old2", "b"], "+OK\r\n"),
            (&["MULTI"], "+OK\r\n"),
            (&["SET", "new", "1"], "+QUEUED\r\n"),
            (&["DEL", "old1"], "+QUEUED\r\n"),
            (&["INCR", "new"], "+QUEUED\r\n"),
            (&["EXISTS", "new", "old1", "old2"], "+QUEUED\r\n"),
            (&["TYPE", "new"], "+QUEUED\r\n"),
            (&["DBSIZE"], "+QUEUED\r\n"),
            (&["KEYS", "*"], "+QUEUED\r\n"),
            (&["SCAN", "0", "COUNT", "10"], "+QUEUED\r\n"),
            (&["SCAN", "0", "MATCH", "n*"], "+QUEUED\r\n"),
            (&["GETDEL", "new"], "+QUEUED\r\n"),
            (&["DBSIZE"], "+QUEUED\r\n"),
            (
                &["EXEC"],
                concat!(
                    "*11\r\n+OK\r\n:1\r\n:2\r\n:2\r\n+string\r\n:2\r\n",
                    "*2\r\n$3\r\nnew\r\n$4\r\nold2\r\n",
                    "*2\r\n$1\r\n0\r\n*2\r\n$3\r\nnew\r\n$4\r\nold2\r\n",
                    "*2\r\n$1\r\n0\r\n*1\r\n$3\r\nnew\r\n",
                    "$1\r\n2\r\n:1\r\n",
                ),
            ),
            (&["KEYS", "*"], "*1\r\n$4\r\nold2\r\n"),
            (&["MULTI"], "+OK\r\n"),
            (&["SET", "x", "1"], "+QUEUED\r\n"),
            (&["FLUSHDB"], "+QUEUED\r\n"),
            (&["DBSIZE"], "+QUEUED\r\n"),
            (&["SET", "y", "2"], "+QUEUED\r\n"),
            (&["KEYS", "*"], "+QUEUED\r\n"),
            (
                &["EXEC"],
                "*5\r\n+OK\r\n+OK\r\n:0\r\n+OK\r\n*1\r\n$1\r\ny\r\n",
            ),
            (&["KEYS", "*"], "*1\r\n$1\r\ny\r\n"),
        ],
    );
}

/// A SCAN inside a transaction that stops before the end returns a cursor (whatever its
/// number) that resumes after EXEC at the transaction's own write.
#[test]
fn a_scan_inside_a_transaction_returns_a_usable_cursor() {
    let (_tmp, s) = server(&[]);
    let mut c = s.raw();
    assert_eq!(c.text(&["MSET", "a", "1", "b", "2"]), "+OK\r\n");
    assert_eq!(c.text(&["MULTI"]), "+OK\r\n");
    assert_eq!(c.text(&["SET", "c", "3"]), "+QUEUED\r\n");
    assert_eq!(c.text(&["SCAN", "0", "COUNT", "2"]), "+QUEUED\r\n");
    let exec = c.text(&["EXEC"]);
    let rest = exec
        .strip_prefix("*2\r\n+OK\r\n*2\r\n$")
        .unwrap_or_else(|| panic!("{exec:?}"));
    assert!(rest.ends_with("*2\r\n$1\r\na\r\n$1\r\nb\r\n"), "{exec:?}");
    let cursor = rest.split("\r\n").nth(1).unwrap();
    assert_eq!(
        c.text(&["SCAN", cursor]),
        "*2\r\n$1\r\n0\r\n*1\r\n$1\r\nc\r\n"
    );
}

/// Commands queued after MULTI run only at EXEC: another client does not see them before,
/// a DISCARD drops them, an aborted transaction drops them, and a connection closed in the
/// middle of a transaction drops them.
#[test]
fn a_queued_command_never_runs_outside_its_transaction() {
    let (_tmp, s) = server(&[]);
    let mut a = s.raw();
    let mut b = s.raw();
    assert_eq!(a.text(&["MULTI"]), "+OK\r\n");
    assert_eq!(a.text(&["SET", "k", "queued"]), "+QUEUED\r\n");
    assert_eq!(a.text(&["INCR", "n"]), "+QUEUED\r\n");
    assert_eq!(b.text(&["GET", "k"]), "$-1\r\n");
    assert_eq!(b.text(&["SET", "n", "10"]), "+OK\r\n");
    assert_eq!(a.text(&["EXEC"]), "*2\r\n+OK\r\n:11\r\n");
    assert_eq!(b.text(&["GET", "k"]), "$6\r\nqueued\r\n");
    // Closed mid-transaction: the queue is dropped with the connection.
    let mut c = s.raw();
    assert_eq!(c.text(&["MULTI"]), "+OK\r\n");
    assert_eq!(c.text(&["SET", "gone", "1"]), "+QUEUED\r\n");
    c.send(&common::encode(&[b"DEL", b"k"]));
    assert_eq!(c.reply().unwrap(), b"+QUEUED\r\n");
    drop(c);
    // QUIT inside a transaction closes the connection at once, dropping the queue.
    let mut q = s.raw();
    assert_eq!(q.text(&["MULTI"]), "+OK\r\n");
    assert_eq!(q.text(&["SET", "gone", "2"]), "+QUEUED\r\n");
    assert_eq!(q.text(&["QUIT"]), "+OK\r\n");
    assert!(q.is_closed());
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert_eq!(b.text(&["GET", "gone"]), "$-1\r\n");
    assert_eq!(b.text(&["GET", "k"]), "$6\r\nqueued\r\n");
}

/// A transaction is one step for every other client: while one client runs transactions of
/// 50 INCRs, each sent as its own write, and others add 1000 at a time, EXEC's replies are
/// consecutive numbers, a reader only ever sees whole transactions (x mod 1000 a multiple of
/// 50), and no write is lost.
#[test]
fn a_transaction_is_atomic_and_isolated() {
    // Several I/O threads, so that other clients' commands run while EXEC does; under
    // `--sync always` each write also waits for its fsync off the I/O thread.
    for args in [
        &["--io-threads", "4"][..],
        &["--io-threads", "4", "--sync", "always"],
    ] {
        transactions_against_writers(args);
    }
}

/// Clients adding 1000 at a time to `x`.
const WRITERS: usize = 3;
/// Transactions run, and the INCRs of `x` in each.
const TRANSACTIONS: i64 = 100;
const INCRS: i64 = 50;

fn transactions_against_writers(args: &[&str]) {
    let (_tmp, s) = server(args);
    let addr = s.addr;
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..WRITERS)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut c = Raw::connect(addr);
                let add = common::encode(&[b"INCRBY", b"x", b"1000"]);
                let mut adds = 0i64;
                while !stop.load(Ordering::Relaxed) {
                    c.send(&add.repeat(16));
                    for _ in 0..16 {
                        assert!(c.reply().unwrap().starts_with(b":"));
                    }
                    adds += 16;
                }
                adds
            })
        })
        .collect();
    let reader = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut c = Raw::connect(addr);
            let mut reads = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let got = c.text(&["GET", "x"]);
                let value = got.strip_prefix('$').and_then(|r| r.split("\r\n").nth(1));
                if let Some(v) = value.filter(|_| got != "$-1\r\n") {
                    let v: i64 = v.parse().unwrap();
                    assert_eq!(
                        v % 1000 % INCRS,
                        0,
                        "a reader saw part of a transaction: {v}"
                    );
                }
                reads += 1;
            }
            reads
        })
    };
    let mut c = s.raw();
    for _ in 0..TRANSACTIONS {
        assert_eq!(c.text(&["MULTI"]), "+OK\r\n");
        for _ in 0..INCRS {
            assert_eq!(c.text(&["INCR", "x"]), "+QUEUED\r\n");
        }
        let exec = c.text(&["EXEC"]);
        let values: Vec<i64> = exec
            .split("\r\n")
            .filter_map(|l| l.strip_prefix(':'))
            .map(|v| v.parse().unwrap())
            .collect();
        assert!(exec.starts_with(&format!("*{INCRS}\r\n")), "{exec}");
        for w in values.windows(2) {
            assert_eq!(
                w[1],
                w[0] + 1,
                "a write landed inside a transaction: {exec}"
            );
        }
    }
    stop.store(true, Ordering::Relaxed);
    let adds: i64 = writers.into_iter().map(|w| w.join().unwrap()).sum();
    assert!(reader.join().unwrap() > 0);
    let want = (adds * 1000 + TRANSACTIONS * INCRS).to_string();
    assert_eq!(
        c.text(&["GET", "x"]),
        format!("${}\r\n{want}\r\n", want.len()),
        "a write was lost"
    );
}

/// The `redis` crate's atomic pipeline (MULTI … EXEC in one write, as redis-py's
/// `pipeline(transaction=True)` sends it), also under `--sync always`, where every write
/// waits for its fsync off the I/O thread.
#[test]
fn client_library_transactions_work() {
    for args in [&[][..], &["--sync", "always"]] {
        let (_tmp, s) = server(args);
        let mut con = s.redis();
        let (a, n, got): (String, i64, Vec<String>) = redis::pipe()
            .atomic()
            .cmd("SET")
            .arg("a")
            .arg("1")
            .cmd("INCRBY")
            .arg("a")
            .arg(41)
            .cmd("MGET")
            .arg("a")
            .arg("a")
            .query(&mut con)
            .unwrap();
        assert_eq!(
            (a.as_str(), n, got),
            ("OK", 42, vec!["42".into(), "42".into()])
        );
        let failed: redis::RedisResult<(i64,)> = redis::pipe()
            .atomic()
            .cmd("INCR")
            .arg("a")
            .cmd("NOSUCHCOMMAND")
            .query(&mut con);
        assert!(failed.is_err());
        let v: i64 = redis::cmd("GET").arg("a").query(&mut con).unwrap();
        assert_eq!(v, 42, "an aborted transaction wrote");
    }
}

/// The number in `INFO clients`' `field:` line.
fn info_clients(c: &mut Raw, field: &str) -> u64 {
    let text = c.text(&["INFO", "clients"]);
    text.split("\r\n")
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {field} in {text}"))
}

/// WATCH's check-and-set under contention: clients that each increment one key by
/// WATCH, GET, MULTI, SET, EXEC (retrying on a null EXEC) lose no increment, while other
/// clients INCR it directly and run INCRs with a TTL (INCR keeps it, rewriting the value:
/// a write the watchers must see); some EXECs are aborted. Several I/O threads, so that
/// the clients really run at once.
#[test]
fn watch_check_and_set_loses_no_increment() {
    let (_tmp, s) = server(&["--io-threads", "4"]);
    let addr = s.addr;
    const CAS_CLIENTS: usize = 4;
    const CAS_INCREMENTS: i64 = 60;
    const INCR_CLIENTS: usize = 2;
    const INCRS: i64 = 200;
    let mut c = s.raw();
    assert_eq!(c.text(&["SET", "n", "0", "EX", "1000"]), "+OK\r\n");
    let cas: Vec<_> = (0..CAS_CLIENTS)
        .map(|_| {
            std::thread::spawn(move || {
                let mut c = Raw::connect(addr);
                let mut aborted = 0u64;
                for _ in 0..CAS_INCREMENTS {
                    loop {
                        assert_eq!(c.text(&["WATCH", "n"]), "+OK\r\n");
                        let got = c.text(&["GET", "n"]);
                        let value: i64 = got
                            .lines()
                            .nth(1)
                            .and_then(|v| v.parse().ok())
                            .unwrap_or_else(|| panic!("GET n: {got:?}"));
                        assert_eq!(c.text(&["MULTI"]), "+OK\r\n");
                        let next = (value + 1).to_string();
                        assert_eq!(c.text(&["SET", "n", &next, "KEEPTTL"]), "+QUEUED\r\n");
                        match c.text(&["EXEC"]).as_str() {
                            "*1\r\n+OK\r\n" => break,
                            "*-1\r\n" => aborted += 1,
                            other => panic!("EXEC: {other:?}"),
                        }
                    }
                }
                aborted
            })
        })
        .collect();
    let incr: Vec<_> = (0..INCR_CLIENTS)
        .map(|_| {
            std::thread::spawn(move || {
                let mut c = Raw::connect(addr);
                for _ in 0..INCRS {
                    assert!(c.text(&["INCR", "n"]).starts_with(':'));
                }
            })
        })
        .collect();
    let aborted: u64 = cas.into_iter().map(|t| t.join().unwrap()).sum();
    for t in incr {
        t.join().unwrap();
    }
    let want = CAS_CLIENTS as i64 * CAS_INCREMENTS + INCR_CLIENTS as i64 * INCRS;
    assert_eq!(
        c.text(&["GET", "n"]),
        format!("${}\r\n{want}\r\n", want.to_string().len())
    );
    let ttl = c.text(&["TTL", "n"]);
    let left: i64 = ttl.trim_start_matches(':').trim_end().parse().unwrap_or(-3);
    assert!((900..=1000).contains(&left), "the TTL was kept: {ttl}");
    eprintln!("{aborted} EXECs aborted by a concurrent write");
    // Every watching connection has closed: nothing is watched any more.
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert_eq!(info_clients(&mut c, "total_watched_keys"), 0);
    assert_eq!(info_clients(&mut c, "watching_clients"), 0);
}

/// Watched keys are counted once however many clients watch them, forgotten by EXEC,
/// DISCARD, UNWATCH and a connection's close, and a connection's watched keys are bounded by
/// `--max-request-bytes`.
#[test]
fn watched_keys_are_forgotten_and_bounded() {
    let (_tmp, s) = server(&["--max-bulk-bytes", "100", "--max-request-bytes", "1000"]);
    let mut a = s.raw();
    let mut b = s.raw();
    let mut info = s.raw();
    assert_eq!(a.text(&["WATCH", "x", "y", "x"]), "+OK\r\n");
    assert_eq!(b.text(&["WATCH", "x", "z"]), "+OK\r\n");
    assert_eq!(info_clients(&mut info, "total_watched_keys"), 3);
    assert_eq!(info_clients(&mut info, "watching_clients"), 2);
    assert_eq!(a.text(&["UNWATCH"]), "+OK\r\n");
    assert_eq!(info_clients(&mut info, "total_watched_keys"), 2);
    assert_eq!(b.text(&["MULTI"]), "+OK\r\n");
    assert_eq!(b.text(&["EXEC"]), "*0\r\n");
    assert_eq!(info_clients(&mut info, "total_watched_keys"), 0);
    assert_eq!(info_clients(&mut info, "watching_clients"), 0);
    assert_eq!(a.text(&["WATCH", "x"]), "+OK\r\n");
    assert_eq!(a.text(&["MULTI"]), "+OK\r\n");
    assert_eq!(a.text(&["DISCARD"]), "+OK\r\n");
    assert_eq!(info_clients(&mut info, "total_watched_keys"), 0);
    assert_eq!(b.text(&["WATCH", "x", "y"]), "+OK\r\n");
    drop(b);
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert_eq!(info_clients(&mut info, "total_watched_keys"), 0);
    // 1000 bytes of watched keys (48 bytes each beyond the key): refused past them, with
    // nothing of the refused WATCH kept; the keys watched before stay watched.
    let keys: Vec<String> = (0..10).map(|i| format!("key-{i:05}")).collect();
    let words: Vec<&str> = std::iter::once("WATCH")
        .chain(keys.iter().map(String::as_str))
        .collect();
    assert_eq!(a.text(&words[..11]), "+OK\r\n");
    assert_eq!(info_clients(&mut info, "total_watched_keys"), 10);
    let long = ["a", "b", "c", "d"].map(|c| c.repeat(90));
    assert_eq!(
        a.text(&[
            "WATCH",
            "one-more-key",
            &long[0],
            &long[1],
            &long[2],
            &long[3]
        ]),
        "-ERR the watched keys exceed --max-request-bytes (1000 bytes)\r\n"
    );
    assert_eq!(info_clients(&mut info, "total_watched_keys"), 10);
    assert_eq!(a.text(&["WATCH", "key-00001"]), "+OK\r\n");
    assert_eq!(info.text(&["SET", "key-00003", "v"]), "+OK\r\n");
    assert_eq!(a.text(&["MULTI"]), "+OK\r\n");
    assert_eq!(a.text(&["EXEC"]), "*-1\r\n");
    assert_eq!(info_clients(&mut info, "total_watched_keys"), 0);
}
