//! Replication between real augur-server processes (issue 44, item 2): a replica converges
//! key by key with its primary (strings, expiring keys, hashes, deletes, separated values);
//! a replica killed and restarted within the backlog resumes (`sync_partial_ok`), beyond it
//! syncs in full (`sync_full`); a primary killed in the middle of a full sync leaves the
//! replica serving its old, complete data; `-READONLY`, `WAIT` (after every one of a
//! stream of writes, answered without waiting for a periodic ack), `ROLE`, promotion by
//! `REPLICAOF NO ONE` (the demoted primary continues from the promoted one); and the names
//! of `INFO replication`'s fields and `ROLE`'s shape against a real redis-server 7.0 pair
//! (skipped when redis-server is not installed).

mod common;

use common::{installed, Raw, ServerProcess, TIMEOUT};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Waits (bounded) until `check` holds.
fn wait_until(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + TIMEOUT;
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `INFO section`'s fields.
fn info(addr: SocketAddr, section: &str) -> BTreeMap<String, String> {
    let mut c = Raw::connect(addr);
    let text = c.text(&["INFO", section]);
    text.lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn field(addr: SocketAddr, section: &str, name: &str) -> String {
    info(addr, section).get(name).cloned().unwrap_or_default()
}

/// Starts a replica of `primary` on `db` (extra `args`).
fn replica_of(db: &std::path::Path, primary: SocketAddr, args: &[&str]) -> ServerProcess {
    let port = primary.port().to_string();
    let mut all = vec!["--replicaof", "127.0.0.1", port.as_str()];
    all.extend_from_slice(args);
    ServerProcess::start(db, &all)
}

fn link_up(replica: SocketAddr) -> bool {
    field(replica, "replication", "master_link_status") == "up"
}

/// Every user key with its type, value (hash: its fields) and absolute expiry time.
fn dump(addr: SocketAddr) -> BTreeMap<Vec<u8>, String> {
    let mut con = redis::Client::open(format!("redis://{addr}/"))
        .unwrap()
        .get_connection_with_timeout(TIMEOUT)
        .unwrap();
    let keys: Vec<Vec<u8>> = redis::cmd("KEYS").arg("*").query(&mut con).unwrap();
    let mut out = BTreeMap::new();
    for k in keys {
        let kind: String = redis::cmd("TYPE").arg(&k).query(&mut con).unwrap();
        let value = match kind.as_str() {
            "hash" => {
                let h: BTreeMap<Vec<u8>, Vec<u8>> =
                    redis::cmd("HGETALL").arg(&k).query(&mut con).unwrap();
                format!("{h:?}")
            }
            _ => {
                let v: Option<Vec<u8>> = redis::cmd("GET").arg(&k).query(&mut con).unwrap();
                format!("{v:?}")
            }
        };
        let at: i64 = redis::cmd("PEXPIRETIME").arg(&k).query(&mut con).unwrap();
        out.insert(k, format!("{kind} {value} expires {at}"));
    }
    out
}

/// Writes a mix of every kind of write, `round` making the keys and values differ.
fn write_mix(addr: SocketAddr, round: u32) {
    let mut c = Raw::connect(addr);
    for i in 0..200u32 {
        let key = format!("s:{round}:{i}");
        match i % 8 {
            0 => assert_eq!(c.text(&["SET", &key, &"x".repeat(3000)]), "+OK\r\n"), // separated
            1 => assert_eq!(c.text(&["SET", &key, "v", "EX", "1000"]), "+OK\r\n"),
            2 => assert!(c
                .text(&["HSET", &format!("h:{round}:{i}"), "a", "1", "b", "2"])
                .starts_with(':')),
            3 => assert!(c
                .text(&["HDEL", &format!("h:{round}:{}", i - 1), "a"])
                .starts_with(':')),
            4 => assert!(c
                .text(&["DEL", &format!("s:{round}:{}", i - 4)])
                .starts_with(':')),
            5 => assert!(c
                .text(&["PEXPIRE", &format!("h:{round}:{}", i - 3), "500000"])
                .starts_with(':')),
            6 => assert!(c.text(&["INCRBY", "counter", "3"]).starts_with(':')),
            _ => assert_eq!(
                c.text(&["MSET", &key, "1", &format!("\u{ff}{key}"), "2"]),
                "+OK\r\n"
            ),
        }
    }
}

#[test]
fn a_replica_converges_key_by_key() {
    let tmp = tempfile::tempdir().unwrap();
    let primary = ServerProcess::start(&tmp.path().join("p"), &[]);
    write_mix(primary.addr, 0); // reaches the replica by the full sync
    let replica = replica_of(&tmp.path().join("r"), primary.addr, &[]);
    wait_until("the link", || link_up(replica.addr));
    write_mix(primary.addr, 1); // by the stream
    let mut c = primary.raw();
    assert_eq!(c.text(&["WAIT", "1", "10000"]), ":1\r\n");
    let want = dump(primary.addr);
    assert!(want.len() > 150, "{} keys", want.len());
    assert_eq!(dump(replica.addr), want);
    // The hidden position record is not a key.
    let mut r = replica.raw();
    assert_eq!(r.text(&["DBSIZE"]), c.text(&["DBSIZE"]));
    let offset = field(primary.addr, "replication", "master_repl_offset");
    assert_eq!(
        field(replica.addr, "replication", "slave_repl_offset"),
        offset
    );
    assert_eq!(field(primary.addr, "stats", "sync_full"), "1");
}

#[test]
fn a_restarted_replica_resumes_within_the_backlog_and_resyncs_beyond_it() {
    let tmp = tempfile::tempdir().unwrap();
    let primary = ServerProcess::start(&tmp.path().join("p"), &["--repl-backlog-size", "64kb"]);
    let rdb = tmp.path().join("r");
    write_mix(primary.addr, 0);
    let replica = replica_of(&rdb, primary.addr, &[]);
    wait_until("the link", || link_up(replica.addr));
    replica.kill();
    // A few writes: within the window.
    let mut c = primary.raw();
    for i in 0..20 {
        assert_eq!(c.text(&["SET", &format!("after:{i}"), "v"]), "+OK\r\n");
    }
    let replica = replica_of(&rdb, primary.addr, &[]);
    wait_until("the link", || link_up(replica.addr));
    assert_eq!(c.text(&["WAIT", "1", "10000"]), ":1\r\n");
    assert_eq!(field(primary.addr, "stats", "sync_partial_ok"), "1");
    assert_eq!(field(primary.addr, "stats", "sync_full"), "1");
    assert_eq!(dump(replica.addr), dump(primary.addr));
    replica.kill();
    // Many writes: the window moves past the replica's offset.
    for i in 0..200 {
        assert_eq!(
            c.text(&["SET", &format!("far:{i}"), &"y".repeat(1000)]),
            "+OK\r\n"
        );
    }
    let replica = replica_of(&rdb, primary.addr, &[]);
    wait_until("the link", || link_up(replica.addr));
    assert_eq!(c.text(&["WAIT", "1", "10000"]), ":1\r\n");
    assert_eq!(field(primary.addr, "stats", "sync_full"), "2");
    assert_eq!(field(primary.addr, "stats", "sync_partial_err"), "1");
    assert_eq!(dump(replica.addr), dump(primary.addr));
}

#[test]
fn a_primary_killed_during_a_full_sync_leaves_the_old_data() {
    let tmp = tempfile::tempdir().unwrap();
    let first = ServerProcess::start(&tmp.path().join("p1"), &[]);
    let mut c = first.raw();
    for i in 0..100 {
        assert_eq!(
            c.text(&["SET", &format!("old:{i}"), &format!("{i}")]),
            "+OK\r\n"
        );
    }
    let rdb = tmp.path().join("r");
    let replica = replica_of(&rdb, first.addr, &[]);
    wait_until("the link", || link_up(replica.addr));
    assert_eq!(c.text(&["WAIT", "1", "10000"]), ":1\r\n");
    let old = dump(replica.addr);
    assert_eq!(old.len(), 100);
    // A second primary with a few MiB, sent slowly: 1 MiB a chunk, 300 ms between chunks.
    let second = ServerProcess::start_with_env(
        &tmp.path().join("p2"),
        &[],
        &[("AUGUR_TEST_REPL_CHUNK_DELAY_MS", "300")],
    );
    let mut c2 = second.raw();
    for i in 0..3000 {
        assert_eq!(
            c2.text(&["SET", &format!("new:{i}"), &"z".repeat(2000)]),
            "+OK\r\n"
        );
    }
    let mut r = replica.raw();
    let port = second.addr.port().to_string();
    assert_eq!(r.text(&["REPLICAOF", "127.0.0.1", &port]), "+OK\r\n");
    wait_until("the full sync's first bytes", || {
        let i = info(replica.addr, "replication");
        i.get("master_sync_in_progress").map(String::as_str) == Some("1")
            && i.get("master_sync_read_bytes").is_some_and(|b| b != "0")
    });
    second.kill();
    // Still the old data, whole, while the link retries and after.
    assert_eq!(dump(replica.addr), old);
    wait_until("the link to give up", || {
        field(replica.addr, "replication", "master_sync_in_progress") == "0"
    });
    assert_eq!(dump(replica.addr), old);
    // A restart discards the staging directory and serves the old data too.
    replica.kill();
    let replica = ServerProcess::start(&rdb, &[]);
    assert!(!tmp.path().join("r.repl-sync").exists());
    assert_eq!(dump(replica.addr), old);
}

#[test]
fn readonly_wait_role_and_promotion() {
    let tmp = tempfile::tempdir().unwrap();
    let primary = ServerProcess::start(&tmp.path().join("p"), &[]);
    let replica = replica_of(&tmp.path().join("r"), primary.addr, &[]);
    wait_until("the link", || link_up(replica.addr));
    let mut p = primary.raw();
    let mut r = replica.raw();
    assert_eq!(
        r.text(&["SET", "k", "v"]),
        "-READONLY You can't write against a read only replica.\r\n"
    );
    assert_eq!(r.text(&["GET", "k"]), "$-1\r\n");
    assert!(r
        .text(&["WAIT", "0", "0"])
        .starts_with("-ERR WAIT cannot be used with replica"));
    assert_eq!(p.text(&["SET", "k", "v"]), "+OK\r\n");
    assert_eq!(p.text(&["WAIT", "1", "10000"]), ":1\r\n");
    assert_eq!(r.text(&["GET", "k"]), "$1\r\nv\r\n");
    // ROLE on both sides.
    let offset = field(primary.addr, "replication", "master_repl_offset");
    let role = p.text(&["ROLE"]);
    let rport = field(replica.addr, "server", "tcp_port");
    wait_until("the replica's ack", || {
        p.text(&["ROLE"])
            == format!(
                "*3\r\n$6\r\nmaster\r\n:{offset}\r\n*1\r\n*3\r\n$9\r\n127.0.0.1\r\n${}\r\n{rport}\r\n${}\r\n{offset}\r\n",
                rport.len(),
                offset.len()
            )
    });
    assert!(role.starts_with("*3\r\n$6\r\nmaster\r\n"), "{role}");
    let pport = primary.addr.port().to_string();
    assert_eq!(
        r.text(&["ROLE"]),
        format!(
            "*5\r\n$5\r\nslave\r\n$9\r\n127.0.0.1\r\n:{pport}\r\n$9\r\nconnected\r\n:{offset}\r\n"
        )
    );
    let slave0 = field(primary.addr, "replication", "slave0");
    assert!(
        slave0.starts_with(&format!(
            "ip=127.0.0.1,port={rport},state=online,offset={offset},lag="
        )),
        "{slave0}"
    );
    // Promotion: writes are taken, the data and the old id are kept.
    let old_id = field(primary.addr, "replication", "master_replid");
    assert_eq!(r.text(&["REPLICAOF", "NO", "ONE"]), "+OK\r\n");
    assert!(r.text(&["ROLE"]).starts_with("*3\r\n$6\r\nmaster\r\n"));
    assert_eq!(r.text(&["SET", "k2", "v2"]), "+OK\r\n");
    assert_eq!(r.text(&["GET", "k"]), "$1\r\nv\r\n");
    let promoted = info(replica.addr, "replication");
    assert_eq!(promoted["master_replid2"], old_id);
    assert_ne!(promoted["master_replid"], old_id);
    // The old primary follows the promoted one without a full sync (PSYNC on the old id).
    let port = replica.addr.port().to_string();
    assert_eq!(p.text(&["SLAVEOF", "127.0.0.1", &port]), "+OK\r\n");
    wait_until("the demoted primary's link", || link_up(primary.addr));
    assert_eq!(r.text(&["WAIT", "1", "10000"]), ":1\r\n");
    assert_eq!(p.text(&["GET", "k2"]), "$2\r\nv2\r\n");
    assert_eq!(field(replica.addr, "stats", "sync_partial_ok"), "1");
    assert_eq!(field(replica.addr, "stats", "sync_full"), "0");
    // WAIT with its replica gone: 0 once the timeout passes.
    primary.kill();
    wait_until("the replica to leave", || {
        field(replica.addr, "replication", "connected_slaves") == "0"
    });
    assert_eq!(r.text(&["SET", "k3", "v3"]), "+OK\r\n");
    let started = Instant::now();
    assert_eq!(r.text(&["WAIT", "1", "300"]), ":0\r\n");
    assert!(started.elapsed() >= Duration::from_millis(290));
}

/// A redis-server with `args`, killed when dropped.
struct Redis(Child, SocketAddr, #[allow(dead_code)] tempfile::TempDir);

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn redis(args: &[&str]) -> Redis {
    let dir = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let child = Command::new("redis-server")
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(["--save", "", "--appendonly", "no"])
        .arg("--dir")
        .arg(dir.path())
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    wait_until("redis-server", || {
        std::net::TcpStream::connect(addr).is_ok()
    });
    Redis(child, addr, dir)
}

/// The field names of `INFO replication` (a `slaveN` line's keys too), Augur's own left out.
fn names(addr: SocketAddr) -> Vec<String> {
    info(addr, "replication")
        .into_iter()
        .filter(|(k, _)| !k.starts_with("augur_"))
        .map(|(k, v)| {
            if k.starts_with("slave") && v.contains("ip=") {
                let keys: Vec<&str> = v
                    .split(',')
                    .filter_map(|p| p.split_once('='))
                    .map(|p| p.0)
                    .collect();
                format!("{k}:{}", keys.join(","))
            } else {
                k
            }
        })
        .collect()
}

/// `ROLE`'s reply with its numbers and addresses masked.
fn role_shape(addr: SocketAddr) -> String {
    let mut c = Raw::connect(addr);
    let reply = c.text(&["ROLE"]);
    reply
        .split("\r\n")
        .map(|line| match line.as_bytes().first() {
            Some(b':') => ":N".to_string(),
            Some(b'$') => "$N".to_string(),
            _ if line.chars().all(|c| c.is_ascii_digit() || c == '.') => "X".to_string(),
            _ => line.to_string(),
        })
        .collect::<Vec<_>>()
        .join("|")
}

#[test]
fn role_and_info_replication_match_redis() {
    if !installed("redis-server") {
        eprintln!("redis-server is not installed: skipping the comparison");
        return;
    }
    let master = redis(&[]);
    let rport = master.1.port().to_string();
    let slave = redis(&["--replicaof", "127.0.0.1", &rport]);
    wait_until("redis's link", || link_up(slave.1));
    let mut c = Raw::connect(master.1);
    assert_eq!(c.text(&["SET", "k", "v"]), "+OK\r\n");
    assert_eq!(c.text(&["WAIT", "1", "10000"]), ":1\r\n");

    let tmp = tempfile::tempdir().unwrap();
    let primary = ServerProcess::start(&tmp.path().join("p"), &[]);
    let replica = replica_of(&tmp.path().join("r"), primary.addr, &[]);
    wait_until("the link", || link_up(replica.addr));
    let mut p = primary.raw();
    assert_eq!(p.text(&["SET", "k", "v"]), "+OK\r\n");
    assert_eq!(p.text(&["WAIT", "1", "10000"]), ":1\r\n");

    assert_eq!(
        names(primary.addr),
        names(master.1),
        "a primary's INFO replication"
    );
    assert_eq!(
        names(replica.addr),
        names(slave.1),
        "a replica's INFO replication"
    );
    assert_eq!(
        role_shape(primary.addr),
        role_shape(master.1),
        "a primary's ROLE"
    );
    assert_eq!(
        role_shape(replica.addr),
        role_shape(slave.1),
        "a replica's ROLE"
    );
    let slave_lines = |addr| {
        info(addr, "replication").get("slave0").map(|v| {
            v.split(',')
                .filter_map(|p| p.split_once('='))
                .map(|p| p.0.to_string())
                .collect::<Vec<_>>()
        })
    };
    assert_eq!(slave_lines(primary.addr), slave_lines(master.1));
}

#[test]
fn wait_after_each_write_returns_as_soon_as_the_replicas_have_it() {
    // A `GETACK` sent ahead of the write's frame was acked short of it, and `WAIT` then
    // waited for the replica's periodic ack (a second): about one WAIT in a hundred.
    let tmp = tempfile::tempdir().unwrap();
    let primary = ServerProcess::start(&tmp.path().join("p"), &[]);
    let replicas = [
        replica_of(&tmp.path().join("r1"), primary.addr, &[]),
        replica_of(&tmp.path().join("r2"), primary.addr, &[]),
    ];
    for r in &replicas {
        wait_until("the link", || link_up(r.addr));
    }
    let mut c = primary.raw();
    let mut slowest = Duration::ZERO;
    for i in 0..1000 {
        let key = format!("user:{i}:profile");
        assert_eq!(c.text(&["SET", &key, "v"]), "+OK\r\n");
        let started = Instant::now();
        let acked = c.text(&["WAIT", "1", "5000"]);
        slowest = slowest.max(started.elapsed());
        assert_ne!(acked, ":0\r\n", "write {i}");
    }
    assert!(
        slowest < Duration::from_millis(500),
        "slowest WAIT {slowest:?}"
    );
}
