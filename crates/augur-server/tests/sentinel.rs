//! The real Redis Sentinel (`redis-sentinel`, Debian's 7.0; skipped with a message when it
//! is not installed) monitoring one augur-server as its master: each sentinel sees the
//! master up (`SENTINEL MASTER mymaster` reports `flags master`, never `s_down`, with the
//! server's run id and role), and two sentinels discover each other through the master's
//! `__sentinel__:hello` channel (each lists the other in `SENTINEL SENTINELS mymaster`).
//! Sentinel drives exactly what it needs here: `CLIENT SETNAME`, `PING`, `INFO`,
//! `SUBSCRIBE __sentinel__:hello` on one link and `PUBLISH __sentinel__:hello …` every 2 s
//! on the other. Waits poll with a deadline.

mod common;

use common::{installed, Raw, ServerProcess};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A redis-sentinel process (killed when dropped).
struct Sentinel {
    child: Child,
    addr: SocketAddr,
    _dir: tempfile::TempDir,
}

impl Drop for Sentinel {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Sentinel {
    /// Starts a sentinel monitoring `master` as `mymaster` (quorum 2) on a free port, and
    /// waits until it answers PING.
    fn start(master: SocketAddr) -> Sentinel {
        let dir = tempfile::tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .unwrap()
            .port();
        let conf = dir.path().join("sentinel.conf");
        std::fs::write(
            &conf,
            format!(
                "port {port}\nbind 127.0.0.1\ndaemonize no\ndir {}\n\
                 sentinel monitor mymaster {} {} 2\n\
                 sentinel down-after-milliseconds mymaster 5000\n",
                dir.path().display(),
                master.ip(),
                master.port()
            ),
        )
        .unwrap();
        let child = Command::new("redis-sentinel")
            .arg(&conf)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start redis-sentinel");
        let addr: SocketAddr = ([127, 0, 0, 1], port).into();
        let sentinel = Sentinel {
            child,
            addr,
            _dir: dir,
        };
        wait_for("the sentinel to answer", || {
            std::net::TcpStream::connect(addr).is_ok()
        });
        sentinel
    }

    /// `SENTINEL MASTER mymaster` as name-value pairs.
    fn master(&self) -> Vec<(String, String)> {
        let mut c = Raw::connect(self.addr);
        let reply = c.text(&["SENTINEL", "MASTER", "mymaster"]);
        let values: Vec<String> = reply
            .split("\r\n")
            .skip(1)
            .filter(|l| !l.starts_with('$') && !l.is_empty())
            .map(str::to_string)
            .collect();
        values
            .chunks(2)
            .filter_map(|p| Some((p.first()?.clone(), p.get(1)?.clone())))
            .collect()
    }

    /// The ports of the other sentinels it knows (`SENTINEL SENTINELS mymaster`).
    fn other_sentinel_ports(&self) -> Vec<String> {
        let mut c = Raw::connect(self.addr);
        let reply = c.text(&["SENTINEL", "SENTINELS", "mymaster"]);
        // `$4 port $5 26380`: the value two lines after the name.
        let lines: Vec<&str> = reply.split("\r\n").collect();
        lines
            .windows(3)
            .filter(|w| w[0] == "port")
            .map(|w| w[2].to_string())
            .collect()
    }
}

fn field<'a>(pairs: &'a [(String, String)], name: &str) -> Option<&'a str> {
    pairs
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

/// Polls `check` until it holds (30 s at most).
fn wait_for(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn two_sentinels_monitor_augur_and_discover_each_other() {
    if !installed("redis-sentinel") {
        eprintln!("skipped: redis-sentinel is not installed (apt-get install redis-sentinel)");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let augur = ServerProcess::start(&tmp.path().join("db"), &[]);
    let mut c = augur.raw();
    let info = c.text(&["INFO", "server"]);
    let run_id = info
        .lines()
        .find_map(|l| l.strip_prefix("run_id:"))
        .unwrap()
        .to_string();
    let sentinels = [Sentinel::start(augur.addr), Sentinel::start(augur.addr)];
    let started = Instant::now();
    for s in &sentinels {
        wait_for("the sentinel to see the master", || {
            let m = s.master();
            field(&m, "role-reported") == Some("master")
                && field(&m, "runid") == Some(run_id.as_str())
        });
    }
    // Discovery: each sentinel's hello, published on the master every 2 s, reaches the
    // other through its subscription.
    for (i, s) in sentinels.iter().enumerate() {
        let other = sentinels[1 - i].addr.port().to_string();
        wait_for("the other sentinel's hello", || {
            s.other_sentinel_ports().contains(&other)
        });
        let m = s.master();
        assert_eq!(field(&m, "flags"), Some("master"), "{m:?}");
        assert_eq!(field(&m, "num-other-sentinels"), Some("1"), "{m:?}");
    }
    eprintln!("sentinels discovered each other in {:?}", started.elapsed());
    // The master sees them: two Pub/Sub links (named by Sentinel) on the hello channel.
    let numsub = c.text(&["PUBSUB", "NUMSUB", "__sentinel__:hello"]);
    assert!(numsub.ends_with(":2\r\n"), "{numsub}");
    let pubsub_clients = c.text(&["CLIENT", "LIST", "TYPE", "pubsub"]);
    assert_eq!(
        pubsub_clients.matches("-pubsub age=").count(),
        2,
        "{pubsub_clients}"
    );
    // Still up a while later: no subjective down state from missed PINGs.
    std::thread::sleep(Duration::from_secs(1));
    for s in &sentinels {
        let m = s.master();
        assert_eq!(field(&m, "flags"), Some("master"), "{m:?}");
    }
}
