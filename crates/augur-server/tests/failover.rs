//! Failover under the real Redis Sentinel (issue 44): three augur-servers (a primary and two
//! replicas, each with a config file, so Sentinel's `CONFIG REWRITE` persists a role it
//! changes) and three `redis-sentinel`s (quorum 2, `down-after-milliseconds` 2000, as
//! `scripts/ha.sh` has it: at 1000 a busy 2-core CI machine once left the newly promoted
//! primary a second without a PING reply, and Sentinel failed over again). A writer
//! sets string keys (`user:N:profile`, `/srv/www/N/index.html`), each followed by `WAIT 1
//! 1000`, and keeps those at least one replica acknowledged; the primary is SIGKILLed in
//! the middle of the stream. Sentinel promotes a replica (polled through `SENTINEL
//! get-master-addr-by-name`); every acknowledged write is on it; writes continue there.
//! The old primary, restarted on its port as a primary, is turned by Sentinel into a
//! replica of the new one (`SLAVEOF` + `CONFIG REWRITE` inside `MULTI`), and its config file
//! then says so; finally all three nodes hold the same keys and values (SCAN + GET, key by
//! key), and redis-py's Sentinel client, as the README configures it, finds the new primary
//! and a replica (that step skipped when `python3` cannot import redis). Skipped with a
//! message when redis-sentinel is not installed.

mod common;

use common::sentinel::Sentinel;
use common::{installed, Raw, ServerProcess};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// One augur-server of the group: its database, config file and port survive restarts.
struct Node {
    db: PathBuf,
    config: PathBuf,
    port: u16,
    process: Option<ServerProcess>,
}

impl Node {
    /// Writes the node's config file (`replicaof` the primary's port, if any) and starts it.
    fn start_new(dir: &Path, name: &str, replicaof: Option<u16>) -> Node {
        let config = dir.join(format!("{name}.toml"));
        let mut text = format!("# {name} of tests/failover.rs\n");
        if let Some(port) = replicaof {
            text.push_str(&format!("replicaof = \"127.0.0.1 {port}\"\n"));
        }
        std::fs::write(&config, text).unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .unwrap()
            .port();
        let mut node = Node {
            db: dir.join(name),
            config,
            port,
            process: None,
        };
        node.start();
        node
    }

    /// Starts the server on its database, config file and port.
    fn start(&mut self) {
        let port = self.port.to_string();
        let config = self.config.to_str().unwrap().to_string();
        self.process = Some(ServerProcess::start(
            &self.db,
            &["--config", &config, "--port", &port],
        ));
    }

    fn addr(&self) -> SocketAddr {
        ([127, 0, 0, 1], self.port).into()
    }

    fn config_text(&self) -> String {
        std::fs::read_to_string(&self.config).unwrap()
    }
}

/// `INFO replication`'s fields (empty when the node does not answer, or closes the connection
/// first: Sentinel sends `CLIENT KILL TYPE normal` to each node it reconfigures).
fn replication(addr: SocketAddr) -> BTreeMap<String, String> {
    let Ok(stream) = std::net::TcpStream::connect(addr) else {
        return BTreeMap::new();
    };
    let Some(info) = Raw::from_stream(stream).try_text(&["INFO", "replication"]) else {
        return BTreeMap::new();
    };
    info.lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// True when `addr` is a replica of `primary` with its link up.
fn replicates(addr: SocketAddr, primary: u16) -> bool {
    let info = replication(addr);
    info.get("role").map(String::as_str) == Some("slave")
        && info.get("master_port") == Some(&primary.to_string())
        && info.get("master_link_status").map(String::as_str) == Some("up")
}

/// Polls `check` until it holds; on timeout fails with the sentinels' logs.
fn wait_for(what: &str, limit: Duration, sentinels: &[Sentinel], mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !check() {
        if Instant::now() > deadline {
            for (i, s) in sentinels.iter().enumerate() {
                eprintln!("---- sentinel {i} log:\n{}", s.log());
            }
            panic!("timed out after {limit:?} waiting for {what}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A write the writer made: its key, value, and how many replicas `WAIT 1 1000` counted.
struct Write {
    key: String,
    value: String,
    acked: i64,
}

/// The `i`th key: profiles and paths alternate.
fn key(i: usize) -> String {
    if i.is_multiple_of(2) {
        format!("user:{}:profile", 1000 + i * 7)
    } else {
        format!("/srv/www/site{}/{}/index.html", i % 13, i)
    }
}

/// Writes keys `from..to` to `addr`, each with `WAIT 1 1000`, until done or the connection
/// drops; counts writes in `done`.
fn write_keys(
    addr: SocketAddr,
    from: usize,
    to: usize,
    tag: &str,
    done: &AtomicUsize,
) -> Vec<Write> {
    let mut c = Raw::connect(addr);
    let mut out = Vec::new();
    for i in from..to {
        let key = key(i);
        let value = format!("{tag}:{i}:{}", "v".repeat(i % 50));
        match c.try_text(&["SET", &key, &value]) {
            Some(r) if r == "+OK\r\n" => {}
            Some(r) => panic!("SET {key}: {r}"),
            None => break,
        }
        let Some(r) = c.try_text(&["WAIT", "1", "1000"]) else {
            break;
        };
        let acked = r
            .trim_start_matches(':')
            .trim()
            .parse()
            .expect("WAIT's count");
        out.push(Write { key, value, acked });
        done.fetch_add(1, Ordering::SeqCst);
    }
    out
}

/// The README's redis-py client: `Sentinel([...]).master_for("mymaster")` writes and
/// `WAIT`s, `slave_for` reads it back; prints the primary's port.
const CLIENT: &str = r#"
import sys
from redis.sentinel import Sentinel

ports = [int(p) for p in sys.argv[1:]]
sentinel = Sentinel([("127.0.0.1", p) for p in ports], socket_timeout=0.5)
r = sentinel.master_for("mymaster", socket_timeout=0.5)
assert r.set("user:1234:profile", "from redis-py") is True
assert r.wait(2, 5000) == 2
ro = sentinel.slave_for("mymaster", socket_timeout=0.5)
assert ro.get("user:1234:profile") == b"from redis-py"
print(sentinel.discover_master("mymaster")[1])
"#;

/// Runs [`CLIENT`] against `sentinels`; the primary's port it found, or `None` (with a
/// message) when `python3` cannot import redis.
fn redis_py_client(sentinels: &[Sentinel]) -> Option<u16> {
    let python = std::env::var("AUGUR_TEST_PYTHON").unwrap_or_else(|_| "python3".into());
    let probe = Command::new(&python)
        .args(["-c", "import redis.sentinel"])
        .output();
    if !probe.is_ok_and(|o| o.status.success()) {
        eprintln!("redis-py step skipped: {python} cannot import redis");
        return None;
    }
    let ports: Vec<String> = sentinels
        .iter()
        .map(|s| s.addr.port().to_string())
        .collect();
    let out = Command::new(&python)
        .args(["-c", CLIENT])
        .args(&ports)
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "redis-py's Sentinel client failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().parse().ok()
}

/// Every key and its value (SCAN + GET).
fn dump(addr: SocketAddr) -> BTreeMap<String, String> {
    let mut con = redis::Client::open(format!("redis://{addr}/"))
        .unwrap()
        .get_connection_with_timeout(common::TIMEOUT)
        .unwrap();
    let keys: Vec<String> = redis::cmd("SCAN")
        .cursor_arg(0)
        .arg("COUNT")
        .arg(1000)
        .clone()
        .iter(&mut con)
        .unwrap()
        .collect();
    keys.into_iter()
        .map(|k| {
            let v: String = redis::cmd("GET").arg(&k).query(&mut con).unwrap();
            (k, v)
        })
        .collect()
}

#[test]
fn sentinel_fails_over_to_a_replica_that_holds_every_acknowledged_write() {
    if !installed("redis-sentinel") {
        eprintln!("skipped: redis-sentinel is not installed (apt-get install redis-sentinel)");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let mut primary = Node::start_new(tmp.path(), "node1", None);
    let replicas = [
        Node::start_new(tmp.path(), "node2", Some(primary.port)),
        Node::start_new(tmp.path(), "node3", Some(primary.port)),
    ];
    for r in &replicas {
        wait_for("the replica's link", common::TIMEOUT, &[], || {
            replicates(r.addr(), primary.port)
        });
    }
    let sentinels: Vec<Sentinel> = (0..3)
        .map(|_| Sentinel::start(primary.addr(), 2000, 5000))
        .collect();
    for s in &sentinels {
        wait_for(
            "each sentinel to know the group",
            common::TIMEOUT,
            &sentinels,
            || {
                let m = s.master();
                let f = |n| common::sentinel::field(&m, n).map(str::to_string);
                f("num-slaves").as_deref() == Some("2")
                    && f("num-other-sentinels").as_deref() == Some("2")
            },
        );
    }

    // Writes, and a SIGKILL of the primary in the middle of them.
    let done = Arc::new(AtomicUsize::new(0));
    let writer = {
        let done = Arc::clone(&done);
        let addr = primary.addr();
        std::thread::spawn(move || write_keys(addr, 0, 1_000_000, "first", &done))
    };
    wait_for("writes", common::TIMEOUT, &sentinels, || {
        done.load(Ordering::SeqCst) >= 300
    });
    primary.process.take().unwrap().kill();
    let killed = Instant::now();
    let first = writer.join().unwrap();
    let acked: Vec<&Write> = first.iter().filter(|w| w.acked >= 1).collect();
    assert!(acked.len() >= 300, "{} acknowledged writes", acked.len());

    // Sentinel promotes a replica.
    let mut new_primary = None;
    wait_for(
        "Sentinel to name a new primary",
        Duration::from_secs(60),
        &sentinels,
        || {
            new_primary = sentinels
                .iter()
                .filter_map(Sentinel::master_addr)
                .find(|a| a.port() != primary.port);
            new_primary.is_some()
        },
    );
    let new_addr = new_primary.unwrap();
    let named = killed.elapsed();
    wait_for(
        "the new primary to take writes",
        common::TIMEOUT,
        &sentinels,
        || {
            Raw::connect(new_addr)
                .try_text(&["SET", "ha:probe", "1"])
                .as_deref()
                == Some("+OK\r\n")
        },
    );
    eprintln!(
        "failover: {named:?} until a sentinel named {new_addr}, {:?} until it took a write; \
         {} writes before the kill, {} acknowledged",
        killed.elapsed(),
        first.len(),
        acked.len()
    );
    let on_new = dump(new_addr);
    let lost: Vec<&str> = acked
        .iter()
        .filter(|w| on_new.get(&w.key) != Some(&w.value))
        .map(|w| w.key.as_str())
        .collect();
    assert!(lost.is_empty(), "acknowledged writes lost: {lost:?}");

    // Writes continue on the new primary (once Sentinel pointed the other replica at it):
    // new keys and overwrites of old ones.
    let other = replicas.iter().find(|r| r.port != new_addr.port()).unwrap();
    wait_for(
        "the other replica's link",
        common::TIMEOUT,
        &sentinels,
        || replicates(other.addr(), new_addr.port()),
    );
    let done = AtomicUsize::new(0);
    let second = write_keys(
        new_addr,
        first.len() - 100,
        first.len() + 200,
        "second",
        &done,
    );
    assert_eq!(second.len(), 300);

    // The old primary comes back as a primary; Sentinel turns it into a replica of the new
    // one and has it rewrite its config file.
    primary.start();
    wait_for(
        "the old primary to replicate the new one",
        Duration::from_secs(60),
        &sentinels,
        || replicates(primary.addr(), new_addr.port()),
    );
    let text = primary.config_text();
    assert!(
        text.contains(&format!("replicaof = \"127.0.0.1 {}\"", new_addr.port())),
        "{text}"
    );
    let promoted = replicas
        .iter()
        .find(|r| r.port == new_addr.port())
        .expect("a replica was promoted");
    assert!(
        !promoted.config_text().contains("replicaof"),
        "{}",
        promoted.config_text()
    );

    // Converged: the same keys and values on all three.
    let mut c = Raw::connect(new_addr);
    assert_eq!(c.text(&["SET", "ha:last", "1"]), "+OK\r\n");
    assert_eq!(c.text(&["WAIT", "2", "10000"]), ":2\r\n");
    let want = dump(new_addr);
    assert!(want.len() > 400, "{} keys", want.len());
    for w in &second {
        assert_eq!(want.get(&w.key), Some(&w.value), "{}", w.key);
    }
    for node in [&primary, &replicas[0], &replicas[1]] {
        let got = dump(node.addr());
        let differ: Vec<&String> = want
            .keys()
            .chain(got.keys())
            .filter(|k| want.get(*k) != got.get(*k))
            .collect();
        assert!(differ.is_empty(), "node on {}: {differ:?}", node.port);
    }
    if let Some(port) = redis_py_client(&sentinels) {
        assert_eq!(port, new_addr.port());
    }
}
