//! Pub/Sub on a real server process, beyond what the byte-for-byte comparison covers:
//! messages from concurrent publishers all reach every subscriber, each publisher's in
//! order; a subscriber that stops reading is disconnected at its output buffer limit (hard,
//! and soft after its seconds) while the publishers go on; subscribers are listed and
//! counted (`CLIENT LIST`, `INFO`) and never timed out; the Sentinel settings are written by
//! `CONFIG REWRITE` and read back at a restart.

mod common;

use common::{server, Raw, ServerProcess};
use std::time::{Duration, Instant};

/// The fields of a message frame (`*3 message ch msg`), as text.
fn frame_fields(reply: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(reply);
    text.split("\r\n")
        .skip(1)
        .filter(|l| !l.starts_with('$') && !l.is_empty())
        .map(str::to_string)
        .collect()
}

#[test]
fn concurrent_publishers_reach_every_subscriber_in_order() {
    const PUBLISHERS: usize = 4;
    const EACH: usize = 500;
    const SUBSCRIBERS: usize = 3;
    let (_tmp, s) = server(&[]);
    let mut subs: Vec<Raw> = (0..SUBSCRIBERS)
        .map(|i| {
            let mut c = s.raw();
            if i == 2 {
                // One subscriber speaks RESP3 and gets pushes.
                assert!(c.cmd(&[b"HELLO", b"3"]).starts_with(b"%7"));
            }
            assert!(c.text(&["SUBSCRIBE", "feed"]).contains("subscribe"));
            c
        })
        .collect();
    let addr = s.addr;
    let publishers: Vec<_> = (0..PUBLISHERS)
        .map(|p| {
            std::thread::spawn(move || {
                let mut c = Raw::connect(addr);
                for i in 0..EACH {
                    let msg = format!("{p}:{i}");
                    let reply = c.text(&["PUBLISH", "feed", &msg]);
                    assert_eq!(reply, format!(":{SUBSCRIBERS}\r\n"));
                }
            })
        })
        .collect();
    for p in publishers {
        p.join().unwrap();
    }
    for (n, sub) in subs.iter_mut().enumerate() {
        let mut next = [0usize; PUBLISHERS];
        for _ in 0..PUBLISHERS * EACH {
            let reply = sub.reply().expect("a message");
            let kind = if n == 2 { b'>' } else { b'*' };
            assert_eq!(reply[0], kind);
            let fields = frame_fields(&reply);
            assert_eq!(fields[..2], ["message", "feed"], "{fields:?}");
            let (p, i) = fields[2].split_once(':').unwrap();
            let (p, i): (usize, usize) = (p.parse().unwrap(), i.parse().unwrap());
            assert_eq!(
                i, next[p],
                "subscriber {n}: publisher {p}'s messages out of order"
            );
            next[p] += 1;
        }
        assert_eq!(next, [EACH; PUBLISHERS]);
    }
}

/// Publishes `count` messages of `bytes` bytes on `channel` (pipelined), returning the
/// receivers each got.
fn publish_many(c: &mut Raw, channel: &str, bytes: usize, count: usize) -> Vec<String> {
    let msg = vec![b'x'; bytes];
    let mut out = Vec::new();
    for _ in 0..count {
        out.extend(common::encode(&[b"PUBLISH", channel.as_bytes(), &msg]));
    }
    c.send(&out);
    (0..count)
        .map(|_| String::from_utf8_lossy(&c.reply().unwrap()).into_owned())
        .collect()
}

fn numsub(c: &mut Raw, channel: &str) -> String {
    c.text(&["PUBSUB", "NUMSUB", channel])
}

/// Waits (bounded) until `check` holds.
fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A fresh server whose Pub/Sub clients are held to `limits` (the `pubsub` class of
/// `client-output-buffer-limit`, set at run time), and the connection that set them.
fn server_with_pubsub_limit(limits: &str) -> (tempfile::TempDir, ServerProcess, Raw) {
    let (tmp, s) = server(&[]);
    let mut admin = s.raw();
    let set = ["CONFIG", "SET", "client-output-buffer-limit", limits];
    assert_eq!(admin.text(&set), "+OK\r\n");
    (tmp, s, admin)
}

#[test]
fn a_subscriber_that_stops_reading_is_disconnected_at_the_hard_limit() {
    let (_tmp, s, mut admin) = server_with_pubsub_limit("pubsub 4mb 0 0");
    let mut slow = s.raw();
    slow.text(&["SUBSCRIBE", "firehose"]);
    let mut fast = s.raw();
    fast.text(&["SUBSCRIBE", "firehose"]);
    let mut publisher = s.raw();
    // 64 MiB in 64 KiB messages, pipelined four at a time: far beyond the limit and the
    // sockets' buffers. The fast subscriber reads as they come (on its own thread; the
    // publisher lets it stay at most a few batches behind, as a subscriber that keeps up
    // does), the slow one never reads.
    let fast_got = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = fast_got.clone();
    let reader = std::thread::spawn(move || {
        for _ in 0..1024 {
            fast.reply()
                .expect("the fast subscriber keeps its connection");
            counter.fetch_add(1, std::sync::atomic::Ordering::Release);
        }
        fast
    });
    let started = Instant::now();
    let mut receivers = Vec::new();
    for batch in 0..256 {
        let deadline = Instant::now() + Duration::from_secs(20);
        while fast_got.load(std::sync::atomic::Ordering::Acquire) + 16 < batch * 4 {
            assert!(
                Instant::now() < deadline,
                "the fast subscriber stopped reading"
            );
            std::thread::yield_now();
        }
        receivers.extend(publish_many(&mut publisher, "firehose", 64 << 10, 4));
    }
    let took = started.elapsed();
    let mut fast = reader.join().unwrap();
    // Every publish reached the fast one; the slow one counted until it was cut off.
    assert_eq!(receivers.first().map(String::as_str), Some(":2\r\n"));
    assert_eq!(receivers.last().map(String::as_str), Some(":1\r\n"));
    eventually("the slow subscriber to leave", || {
        numsub(&mut admin, "firehose") == "*2\r\n$8\r\nfirehose\r\n:1\r\n"
    });
    assert!(took < Duration::from_secs(20), "publishing took {took:?}");
    // The slow subscriber finds its connection closed once it reads what was sent.
    slow.stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    assert!(slow.is_closed());
    // The server did not keep 64 MiB for it.
    assert!(
        s.rss_bytes() < 200 << 20,
        "{} bytes resident",
        s.rss_bytes()
    );
    assert_eq!(fast.text(&["PING"]), "*2\r\n$4\r\npong\r\n$0\r\n\r\n");
}

#[test]
fn a_subscriber_over_the_soft_limit_for_its_seconds_is_disconnected() {
    let (_tmp, s, mut admin) = server_with_pubsub_limit("pubsub 0 256kb 1");
    let mut slow = s.raw();
    slow.text(&["SUBSCRIBE", "c"]);
    let mut publisher = s.raw();
    // Over 256 KiB (beyond the sockets' buffers), then still over it 2 s later.
    let mut publish_until_pending = || {
        publish_many(&mut publisher, "c", 64 << 10, 256);
    };
    publish_until_pending();
    assert_eq!(numsub(&mut admin, "c"), "*2\r\n$1\r\nc\r\n:1\r\n");
    std::thread::sleep(Duration::from_millis(2100));
    publish_until_pending();
    eventually("the soft limit's disconnection", || {
        numsub(&mut admin, "c") == "*2\r\n$1\r\nc\r\n:0\r\n"
    });
}

#[test]
fn subscribers_are_listed_counted_and_never_timed_out() {
    let (_tmp, s) = server(&[]);
    let mut admin = s.raw();
    let mut sub = s.raw();
    sub.text(&["SUBSCRIBE", "a", "b"]);
    sub.reply().unwrap(); // b's confirmation
    sub.text(&["PSUBSCRIBE", "p*"]);
    let mut normal = s.raw();
    assert_eq!(normal.text(&["PING"]), "+PONG\r\n");
    let list = admin.text(&["CLIENT", "LIST", "TYPE", "pubsub"]);
    assert_eq!(list.matches("id=").count(), 1, "{list}");
    assert!(list.contains(" flags=P db=0 sub=2 psub=1 "), "{list}");
    let normal_list = admin.text(&["CLIENT", "LIST", "TYPE", "normal"]);
    assert_eq!(normal_list.matches("id=").count(), 2, "{normal_list}");
    assert!(!normal_list.contains("flags=P"));
    let stats = admin.text(&["INFO", "stats"]);
    assert!(stats.contains("\r\npubsub_channels:2\r\n"), "{stats}");
    assert!(stats.contains("\r\npubsub_patterns:1\r\n"), "{stats}");
    // The idle timeout closes the normal clients, not the subscriber.
    admin.text(&["CONFIG", "SET", "timeout", "1"]);
    std::thread::sleep(Duration::from_millis(2500));
    assert!(normal.is_closed());
    assert!(admin.is_closed());
    let mut admin = s.raw();
    assert_eq!(admin.text(&["PUBLISH", "a", "still here"]), ":1\r\n");
    assert_eq!(
        sub.reply().unwrap(),
        b"*3\r\n$7\r\nmessage\r\n$1\r\na\r\n$10\r\nstill here\r\n"
    );
    admin.text(&["CONFIG", "SET", "timeout", "0"]);
    // A subscriber's connection that ends leaves no channel behind.
    drop(sub);
    eventually("the channels to go", || {
        admin
            .text(&["INFO", "stats"])
            .contains("\r\npubsub_channels:0\r\npubsub_patterns:0\r\n")
    });
}

#[test]
fn config_rewrite_keeps_the_sentinel_settings() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("augur.toml");
    std::fs::write(&file, "# Sentinel's settings\nslave_priority = 50\n").unwrap();
    let db = tmp.path().join("db");
    let args = ["--config", file.to_str().unwrap()];
    let s = ServerProcess::start(&db, &args);
    let mut c = s.raw();
    assert_eq!(
        c.text(&["CONFIG", "GET", "replica-priority"]),
        "*2\r\n$16\r\nreplica-priority\r\n$2\r\n50\r\n"
    );
    let set = [
        "CONFIG",
        "SET",
        "replica-priority",
        "7",
        "replica-announce-ip",
        "10.0.0.5",
        "replica-announce-port",
        "7001",
        "replica-announced",
        "no",
        "client-output-buffer-limit",
        "pubsub 1mb 512kb 10",
    ];
    assert_eq!(c.text(&set), "+OK\r\n");
    assert_eq!(c.text(&["CONFIG", "REWRITE"]), "+OK\r\n");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        text.starts_with("# Sentinel's settings\nslave_priority = 7\n"),
        "{text}"
    );
    assert!(text.contains("replica_announced = false"), "{text}");
    s.terminate();
    let s = ServerProcess::start(&db, &args);
    let mut c = s.raw();
    for (name, value) in [
        ("slave-priority", "7"),
        ("replica-announce-ip", "10.0.0.5"),
        ("replica-announce-port", "7001"),
        ("replica-announced", "no"),
        (
            "client-output-buffer-limit",
            "normal 0 0 0 slave 268435456 67108864 60 pubsub 1048576 524288 10",
        ),
    ] {
        let want = format!(
            "*2\r\n${}\r\n{name}\r\n${}\r\n{value}\r\n",
            name.len(),
            value.len()
        );
        assert_eq!(c.text(&["CONFIG", "GET", name]), want);
    }
    // Back to the defaults: the rewrite removes what it added.
    let reset = [
        "CONFIG",
        "SET",
        "replica-priority",
        "100",
        "replica-announce-ip",
        "",
        "replica-announce-port",
        "0",
        "replica-announced",
        "yes",
    ];
    assert_eq!(c.text(&reset), "+OK\r\n");
    assert_eq!(c.text(&["CONFIG", "REWRITE"]), "+OK\r\n");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(!text.contains("announce_ip"), "{text}");
    assert!(text.contains("slave_priority = 100"), "{text}");
}
