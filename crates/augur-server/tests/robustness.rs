//! The server under load and abuse, on real processes: a pipeline of 10k commands, 200
//! concurrent clients, INCR from 16 clients, SCAN under concurrent inserts and deletes,
//! malformed RESP (the connection errors and closes, memory stays bounded, other clients are
//! undisturbed), maxclients, protected mode, SIGTERM, and SIGKILL under `--sync always`.

mod common;

use common::{encode, server, Raw, ServerProcess, TIMEOUT};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

#[test]
fn a_pipeline_of_10k_commands_gets_10k_replies_in_order() {
    let (_tmp, s) = server(&[]);
    let mut con = s.redis();
    let mut pipe = redis::pipe();
    for i in 0..5000 {
        pipe.cmd("SET").arg(format!("k{i:05}")).arg(i).ignore();
    }
    for i in 0..5000 {
        pipe.cmd("GET").arg(format!("k{i:05}"));
    }
    let values: Vec<i64> = pipe.query(&mut con).unwrap();
    assert_eq!(values, (0..5000).collect::<Vec<i64>>());
}

/// A pipeline of key commands runs as one run with its writes committed together: each
/// command must still see the ones before it (read-your-writes inside the run), and a
/// second connection sees the run's writes once the replies are back.
#[test]
fn a_pipeline_of_mixed_commands_on_the_same_keys_sees_its_own_writes_in_order() {
    let (_tmp, s) = server(&[]);
    let mut c = s.raw();
    let script: &[(&[&str], &str)] = &[
        (&["SET", "k", "1"], "+OK\r\n"),
        (&["INCR", "k"], ":2\r\n"),
        (&["INCRBY", "k", "10"], ":12\r\n"),
        (&["GET", "k"], "$2\r\n12\r\n"),
        (&["APPEND", "k", "x"], ":3\r\n"),
        (
            &["INCR", "k"],
            "-ERR value is not an integer or out of range\r\n",
        ),
        (&["SET", "k", "v", "NX"], "$-1\r\n"),
        (&["GETSET", "k", "w"], "$3\r\n12x\r\n"),
        (&["DEL", "k", "nothing"], ":1\r\n"),
        (&["EXISTS", "k"], ":0\r\n"),
        (&["SET", "k", "v", "NX"], "+OK\r\n"),
        (&["MSET", "a", "1", "b", "2"], "+OK\r\n"),
        (&["MSETNX", "b", "3", "c", "4"], ":0\r\n"),
        (
            &["MGET", "a", "b", "c", "k"],
            "*4\r\n$1\r\n1\r\n$1\r\n2\r\n$-1\r\n$1\r\nv\r\n",
        ),
        (&["GETDEL", "a"], "$1\r\n1\r\n"),
        (&["STRLEN", "a"], ":0\r\n"),
        (&["DECR", "a"], ":-1\r\n"),
    ];
    let mut pipeline = Vec::new();
    for (words, _) in script {
        let words: Vec<&[u8]> = words.iter().map(|w| w.as_bytes()).collect();
        pipeline.extend_from_slice(&common::encode(&words));
    }
    c.send(&pipeline);
    for (words, want) in script {
        let got = String::from_utf8_lossy(&c.reply().expect("a reply")).into_owned();
        assert_eq!(&got, want, "{words:?}");
    }
    let mut other = s.raw();
    assert_eq!(
        other.text(&["MGET", "a", "b", "k"]),
        "*3\r\n$2\r\n-1\r\n$1\r\n2\r\n$1\r\nv\r\n"
    );
}

#[test]
fn two_hundred_concurrent_clients() {
    let (_tmp, s) = server(&[]);
    let addr = s.addr;
    std::thread::scope(|scope| {
        for t in 0..200 {
            scope.spawn(move || {
                let mut c = Raw::connect(addr);
                for i in 0..50 {
                    let (k, v) = (format!("c{t}:{i}"), format!("v{t}.{i}"));
                    assert_eq!(c.text(&["SET", &k, &v]), "+OK\r\n");
                    let want = format!("${}\r\n{v}\r\n", v.len());
                    assert_eq!(c.text(&["GET", &k]), want);
                }
            });
        }
    });
    assert_eq!(s.raw().text(&["DBSIZE"]), ":10000\r\n");
}

#[test]
fn incr_from_16_clients_adds_up_exactly() {
    let (_tmp, s) = server(&[]);
    let addr = s.addr;
    std::thread::scope(|scope| {
        for _ in 0..16 {
            scope.spawn(move || {
                let mut c = Raw::connect(addr);
                // Pipelined, to interleave as much as possible.
                let mut batch = Vec::new();
                for _ in 0..500 {
                    batch.extend(encode(&[b"INCR", b"counter"]));
                    batch.extend(encode(&[b"INCRBY", b"counter", b"2"]));
                    batch.extend(encode(&[b"APPEND", b"log", b"x"]));
                }
                c.send(&batch);
                for _ in 0..1500 {
                    let r = c.reply().expect("reply");
                    assert_eq!(r[0], b':', "{}", String::from_utf8_lossy(&r));
                }
            });
        }
    });
    let mut c = s.raw();
    assert_eq!(c.text(&["GET", "counter"]), "$5\r\n24000\r\n");
    assert_eq!(c.text(&["STRLEN", "log"]), ":8000\r\n");
}

#[test]
fn scan_returns_every_key_present_for_the_whole_scan_exactly_once() {
    let (_tmp, s) = server(&[]);
    let mut setup = s.raw();
    let stable: Vec<String> = (0..3000).map(|i| format!("key:{:06}", i * 7)).collect();
    for chunk in stable.chunks(500) {
        let mut words: Vec<&str> = vec!["MSET"];
        for k in chunk {
            words.push(k);
            words.push("v");
        }
        assert_eq!(setup.text(&words), "+OK\r\n");
    }
    let stop = Arc::new(AtomicBool::new(false));
    let addr = s.addr;
    let churn = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut c = Raw::connect(addr);
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                // Keys between the stable ones, inserted and deleted.
                let churn_key = |i: u64| format!("key:{:06}", (i * 13) % 3000 * 7 + 3);
                c.text(&["SET", &churn_key(i), "churn"]);
                if i % 2 == 1 {
                    c.text(&["DEL", &churn_key(i - 1)]);
                }
                i += 1;
            }
        })
    };
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut cursor = "0".to_string();
    let mut calls = 0;
    loop {
        calls += 1;
        assert!(calls < 100_000, "the scan did not end");
        let mut con = s.redis();
        let (next, keys): (String, Vec<String>) = redis::cmd("SCAN")
            .arg(&cursor)
            .arg("COUNT")
            .arg(25)
            .query(&mut con)
            .unwrap();
        for k in keys {
            *seen.entry(k).or_default() += 1;
        }
        if next == "0" {
            break;
        }
        cursor = next;
    }
    stop.store(true, Ordering::Relaxed);
    churn.join().unwrap();
    for k in &stable {
        assert_eq!(
            seen.get(k),
            Some(&1),
            "{k} returned {:?} times",
            seen.get(k)
        );
    }
    assert!(seen.values().all(|&n| n == 1), "a key was returned twice");
    assert!(calls > 10);
}

/// Malformed requests: each gets an error reply and its connection closes; the server's
/// memory stays bounded and a bystander client is undisturbed.
#[test]
fn malformed_resp_is_refused_and_the_server_stays_bounded() {
    let (_tmp, s) = server(&[
        "--max-bulk-bytes",
        "1048576",
        "--max-request-bytes",
        "4194304",
    ]);
    let mut bystander = s.raw();
    assert_eq!(bystander.text(&["SET", "safe", "1"]), "+OK\r\n");
    let rss_before = s.rss_bytes();
    let cases: Vec<(&str, Vec<u8>)> = vec![
        (
            "a 1 GB declared bulk",
            b"*2\r\n$3\r\nGET\r\n$1073741824\r\n".to_vec(),
        ),
        (
            "a negative bulk length",
            b"*2\r\n$3\r\nGET\r\n$-5\r\nab\r\n".to_vec(),
        ),
        ("a huge multibulk count", b"*99999999999\r\n".to_vec()),
        (
            "a multibulk count that is not a number",
            b"*abc\r\n".to_vec(),
        ),
        ("no dollar", b"*1\r\n:3\r\nfoo\r\n".to_vec()),
        (
            "a bulk length that is not a number",
            b"*1\r\n$x\r\n".to_vec(),
        ),
        ("an unbalanced quote", b"SET \"a b\r\n".to_vec()),
        ("an unterminated inline command", vec![b'a'; 200_000]),
        ("a request past the bound", {
            // Six bulks of 1 MiB (each within --max-bulk-bytes), 6 MiB in all.
            let mut v = b"*7\r\n$4\r\nMSET\r\n".to_vec();
            for _ in 0..6 {
                v.extend(b"$1048576\r\n");
                v.extend(vec![b'x'; 1048576]);
                v.extend(b"\r\n");
            }
            v
        }),
    ];
    for (what, bytes) in &cases {
        let mut c = s.raw();
        let sent_all = c.send_until_closed(bytes);
        let mut replies = Vec::new();
        while let Some(r) = c.reply() {
            replies.push(String::from_utf8_lossy(&r).into_owned());
        }
        let last = replies.last().map(String::as_str).unwrap_or("");
        // Every case ends in an error reply and a closed connection (the reply may be lost
        // to the TCP reset when the server closed before the client finished writing).
        assert!(
            last.starts_with("-ERR Protocol error") || (!sent_all && replies.is_empty()),
            "{what}: replies {replies:?}"
        );
        assert_eq!(
            bystander.text(&["GET", "safe"]),
            "$1\r\n1\r\n",
            "after {what}"
        );
    }
    // Random bytes, many times: errors or replies, never a hang or a crash.
    let mut rng_state = 0x2545_f491_4f6c_dd1du64;
    for _ in 0..200 {
        let mut c = s.raw();
        let len = (rng_state % 300) as usize + 1;
        let bytes: Vec<u8> = (0..len)
            .map(|_| {
                rng_state ^= rng_state << 13;
                rng_state ^= rng_state >> 7;
                rng_state ^= rng_state << 17;
                rng_state as u8
            })
            .collect();
        c.send(&bytes);
        let _ = c.stream.shutdown(std::net::Shutdown::Write);
        while c.reply().is_some() {}
    }
    assert_eq!(bystander.text(&["GET", "safe"]), "$1\r\n1\r\n");
    let rss_after = s.rss_bytes();
    assert!(
        rss_after < rss_before + (64 << 20),
        "RSS grew from {rss_before} to {rss_after} bytes"
    );
}

#[test]
fn clients_past_maxclients_are_refused() {
    let (_tmp, s) = server(&["--maxclients", "3"]);
    let mut held: Vec<Raw> = (0..3).map(|_| s.raw()).collect();
    for c in &mut held {
        assert_eq!(c.text(&["PING"]), "+PONG\r\n");
    }
    let mut extra = s.raw();
    assert_eq!(
        String::from_utf8_lossy(&extra.reply().expect("an error")),
        "-ERR max number of clients reached\r\n"
    );
    drop(held.pop());
    // The slot is free again once the server sees the close.
    let deadline = std::time::Instant::now() + TIMEOUT;
    loop {
        let mut c = s.raw();
        c.send(&encode(&[b"PING"]));
        if c.reply().is_some_and(|r| r == b"+PONG\r\n") {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the slot never freed");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn protected_mode_refuses_a_public_address_without_a_password() {
    let tmp = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_augur-server"))
        .arg("--db")
        .arg(tmp.path().join("db"))
        .args(["--bind", "0.0.0.0", "--port", "0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("protected mode"));
}

#[test]
fn sigterm_finishes_and_closes_the_database() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let s = ServerProcess::start(&db, &["--sync", "no"]);
    let mut c = s.raw();
    for i in 0..1000 {
        c.text(&["SET", &format!("k{i}"), "v"]);
    }
    assert_eq!(s.terminate(), Some(0));
    let s = ServerProcess::start(&db, &[]);
    assert_eq!(s.raw().text(&["DBSIZE"]), ":1000\r\n");
}

/// `--sync always`: a `+OK` is on disk. SIGKILL during a write load from 4 clients, restart,
/// and every acknowledged key is there with its value.
#[test]
fn sigkill_under_sync_always_loses_no_acknowledged_write() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let s = ServerProcess::start(&db, &["--sync", "always", "--memtable-mb", "1"]);
    let acked: Arc<Mutex<BTreeSet<(u32, u32)>>> = Arc::default();
    let addr = s.addr;
    let writers: Vec<_> = (0..4u32)
        .map(|t| {
            let acked = acked.clone();
            std::thread::spawn(move || {
                let mut c = Raw::connect(addr);
                for i in 0.. {
                    let k = format!("t{t}:{i:07}");
                    c.send(&encode(&[
                        b"SET",
                        k.as_bytes(),
                        format!("{i}-{}", "v".repeat(200)).as_bytes(),
                    ]));
                    match c.reply() {
                        Some(r) if r == b"+OK\r\n" => {
                            acked.lock().unwrap().insert((t, i));
                        }
                        _ => return,
                    }
                }
            })
        })
        .collect();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    s.kill();
    for w in writers {
        w.join().unwrap();
    }
    let acked = acked.lock().unwrap().clone();
    assert!(
        acked.len() > 100,
        "only {} writes acknowledged",
        acked.len()
    );
    let s = ServerProcess::start(&db, &[]);
    let mut c = s.raw();
    for (t, i) in &acked {
        let v = format!("{i}-{}", "v".repeat(200));
        assert_eq!(
            c.text(&["GET", &format!("t{t}:{i:07}")]),
            format!("${}\r\n{v}\r\n", v.len()),
            "acknowledged write t{t}:{i} lost"
        );
    }
}
