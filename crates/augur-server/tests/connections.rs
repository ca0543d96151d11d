//! What connections cost the server (issue 43): idle connections hold no buffers, memory
//! taken by large requests goes back once their connections close, and the listening
//! socket queues a burst of connects as Redis's does (a backlog of 511). Bounds are
//! generous and no assertion is about time: waits are for a condition, bounded.

mod common;

use common::{server, Raw, ServerProcess};
use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

const MIB: u64 = 1 << 20;

/// How many file descriptors this process may still open (its soft limit, less a margin
/// for the test harness).
fn descriptor_budget() -> usize {
    let limits = std::fs::read_to_string("/proc/self/limits").unwrap_or_default();
    limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .and_then(|l| l.split_whitespace().nth(3))
        .and_then(|soft| soft.parse::<usize>().ok())
        .unwrap_or(1024)
        .saturating_sub(200)
}

/// Polls `check` until it holds, for at most `limit`; returns whether it did.
fn eventually(limit: Duration, mut check: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if check() {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `connected_clients` from `INFO clients`.
fn connected_clients(c: &mut Raw) -> usize {
    let info = c.text(&["INFO", "clients"]);
    info.split("\r\n")
        .find_map(|l| l.strip_prefix("connected_clients:"))
        .and_then(|n| n.parse().ok())
        .unwrap_or(usize::MAX)
}

/// Idle connections that each ran a command hold no read or reply buffer (they held 80 KiB
/// each: 809 MB for 10,000), and their memory goes back when they close.
#[test]
fn idle_connections_hold_no_buffers() {
    let (_tmp, s) = server(&[]);
    let n = descriptor_budget().min(2000);
    assert!(n >= 500, "too few file descriptors for the test: {n}");
    let mut control = s.raw();
    assert_eq!(control.text(&["PING"]), "+PONG\r\n");
    let before = s.rss_bytes();
    let mut idle: Vec<Raw> = (0..n).map(|_| s.raw()).collect();
    for c in &mut idle {
        assert_eq!(c.text(&["PING"]), "+PONG\r\n");
    }
    assert_eq!(connected_clients(&mut control), n + 1);
    let held = s.rss_bytes().saturating_sub(before);
    let per_connection = held / n as u64;
    eprintln!("{n} idle connections: {held} bytes of RSS, {per_connection} per connection");
    // A task and its socket's state take a few KiB; a 16 KiB read buffer alone would fail.
    assert!(
        per_connection < 12 << 10,
        "{per_connection} bytes per idle connection"
    );
    drop(idle);
    assert!(eventually(Duration::from_secs(30), || {
        connected_clients(&mut control) == 1
    }));
}

/// Clients that each sent most of a large request grow their input buffers; when they
/// leave, the memory goes back to the system (issue 43: 50 such clients left 434 MB).
#[test]
fn memory_of_large_requests_returns_after_their_clients_leave() {
    let (_tmp, s) = server(&[]);
    let mut control = s.raw();
    assert_eq!(control.text(&["PING"]), "+PONG\r\n");
    let baseline = s.rss_bytes();
    const CLIENTS: usize = 20;
    const BULK: usize = 8 << 20;
    let sent = BULK - 1024; // the request stays incomplete
    let mut senders: Vec<TcpStream> = (0..CLIENTS)
        .map(|_| {
            let mut c = TcpStream::connect(s.addr).expect("connect");
            c.write_all(format!("*2\r\n$4\r\nECHO\r\n${BULK}\r\n").as_bytes())
                .expect("write");
            c
        })
        .collect();
    let chunk = vec![b'x'; 1 << 20];
    for c in &mut senders {
        let mut left = sent;
        while left > 0 {
            let n = left.min(chunk.len());
            c.write_all(&chunk[..n]).expect("write");
            left -= n;
        }
    }
    // Every byte is in the server's buffers once CLIENT LIST says so.
    let buffered = |c: &mut Raw| -> usize {
        let list = c.text(&["CLIENT", "LIST"]);
        list.split_whitespace()
            .filter_map(|f| f.strip_prefix("qbuf="))
            .filter_map(|n| n.parse::<usize>().ok())
            .sum()
    };
    assert!(
        eventually(Duration::from_secs(30), || buffered(&mut control)
            >= CLIENTS * sent),
        "the server did not buffer the requests"
    );
    let peak = s.rss_bytes();
    eprintln!(
        "RSS: {} MiB before, {} MiB holding {CLIENTS} requests of 8 MiB",
        baseline / MIB,
        peak / MIB
    );
    assert!(
        peak > baseline + 100 * MIB,
        "the requests did not grow the server"
    );
    drop(senders);
    assert!(eventually(Duration::from_secs(30), || {
        connected_clients(&mut control) == 1
    }));
    let returned = eventually(Duration::from_secs(10), || {
        s.rss_bytes() < baseline + 48 * MIB
    });
    let after = s.rss_bytes();
    eprintln!("RSS after they left: {} MiB", after / MIB);
    assert!(
        returned,
        "RSS stayed at {} MiB after the clients left (baseline {} MiB)",
        after / MIB,
        baseline / MIB
    );
}

/// The listening socket's backlog is Redis's 511 (it was the runtime's default), as `ss`
/// shows it (a listening socket's Send-Q); skipped without `ss`.
#[test]
fn the_listen_backlog_is_redis_511() {
    if !common::installed("ss") {
        eprintln!("skipped: ss (iproute2) is not installed");
        return;
    }
    let (_tmp, s) = server(&[]);
    let out = std::process::Command::new("ss")
        .args(["-Hltn", &format!("sport = :{}", s.addr.port())])
        .output()
        .expect("ss");
    let text = String::from_utf8_lossy(&out.stdout);
    let backlog: Vec<u32> = text
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2)?.parse().ok())
        .collect();
    let somaxconn: u32 = std::fs::read_to_string("/proc/sys/net/core/somaxconn")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(4096);
    assert_eq!(backlog, vec![511.min(somaxconn)], "{text}");
}

/// A burst of short connections (connect, PING, close) is served, each one, and the server
/// is left with only the connections still open.
#[test]
fn a_burst_of_short_connections_is_served() {
    let (_tmp, s): (_, ServerProcess) = server(&[]);
    for _ in 0..1000 {
        let mut c = Raw::connect(s.addr);
        assert_eq!(c.text(&["PING"]), "+PONG\r\n");
    }
    let mut control = s.raw();
    assert!(eventually(Duration::from_secs(30), || {
        connected_clients(&mut control) == 1
    }));
    let info = control.text(&["INFO", "stats"]);
    assert!(
        info.contains("\r\ntotal_connections_received:1001\r\n"),
        "{info}"
    );
}
