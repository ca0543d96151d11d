//! A real `redis-sentinel` process for the tests that run Sentinel against augur-servers
//! (`sentinel.rs`, `failover.rs`): its own directory and generated `sentinel.conf`
//! (`sentinel monitor mymaster HOST PORT 2`), a log at verbose level (`log()` reads it for
//! a failure's message), and a few queries over [`Raw`](super::Raw). Killed when dropped.

use super::Raw;
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A redis-sentinel process (killed when dropped).
pub struct Sentinel {
    child: Child,
    /// Where it listens.
    pub addr: SocketAddr,
    dir: tempfile::TempDir,
}

impl Drop for Sentinel {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Sentinel {
    /// Starts a sentinel monitoring `master` as `mymaster` (quorum 2) on a free port, with
    /// `down-after-milliseconds` and `failover-timeout` as given, and waits until it
    /// accepts connections.
    pub fn start(master: SocketAddr, down_after_ms: u64, failover_timeout_ms: u64) -> Sentinel {
        let dir = tempfile::tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .unwrap()
            .port();
        let conf = dir.path().join("sentinel.conf");
        std::fs::write(
            &conf,
            format!(
                "port {port}\nbind 127.0.0.1\ndaemonize no\ndir {dir}\n\
                 logfile {dir}/sentinel.log\nloglevel verbose\n\
                 sentinel monitor mymaster {} {} 2\n\
                 sentinel down-after-milliseconds mymaster {down_after_ms}\n\
                 sentinel failover-timeout mymaster {failover_timeout_ms}\n",
                master.ip(),
                master.port(),
                dir = dir.path().display(),
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
        let sentinel = Sentinel { child, addr, dir };
        wait_for("the sentinel to answer", || {
            std::net::TcpStream::connect(addr).is_ok()
        });
        sentinel
    }

    /// `SENTINEL MASTER mymaster` as name-value pairs.
    pub fn master(&self) -> Vec<(String, String)> {
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
    pub fn other_sentinel_ports(&self) -> Vec<String> {
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

    /// The primary's address as this sentinel names it (`SENTINEL get-master-addr-by-name
    /// mymaster`); `None` when it names none.
    pub fn master_addr(&self) -> Option<SocketAddr> {
        let mut c = Raw::connect(self.addr);
        let reply = c.text(&["SENTINEL", "get-master-addr-by-name", "mymaster"]);
        let words: Vec<&str> = reply
            .split("\r\n")
            .filter(|l| !l.is_empty() && !l.starts_with(['*', '$']))
            .collect();
        format!("{}:{}", words.first()?, words.get(1)?).parse().ok()
    }

    /// Its log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("sentinel.log")).unwrap_or_default()
    }
}

/// The value of `name` in `SENTINEL MASTER`'s pairs.
pub fn field<'a>(pairs: &'a [(String, String)], name: &str) -> Option<&'a str> {
    pairs
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

/// Polls `check` until it holds (30 s at most).
pub fn wait_for(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}
