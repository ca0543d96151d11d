//! Shared by the server's integration tests: a real `augur-server` process on an ephemeral
//! loopback port (killed when dropped), and a raw RESP client that sends exact bytes and reads
//! exact replies. Every wait is bounded.

#![allow(dead_code)]

pub mod differential;
pub mod sentinel;
pub mod tree;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long any single wait of a test may take.
pub const TIMEOUT: Duration = Duration::from_secs(30);

/// A running server.
pub struct ServerProcess {
    pub child: Child,
    pub addr: SocketAddr,
    pub db: PathBuf,
}

impl ServerProcess {
    /// Starts `augur-server --db DB --port 0 ARGS...` and waits for its ready line.
    pub fn start(db: &Path, args: &[&str]) -> ServerProcess {
        Self::start_with_env(db, args, &[])
    }

    /// [`ServerProcess::start`] with environment variables set for the server.
    pub fn start_with_env(db: &Path, args: &[&str], env: &[(&str, &str)]) -> ServerProcess {
        let mut child = Command::new(env!("CARGO_BIN_EXE_augur-server"))
            .arg("--db")
            .arg(db)
            .args(["--port", "0"])
            .args(args)
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start augur-server");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = rx.recv_timeout(TIMEOUT).expect("the ready line");
        let addr = line
            .trim()
            .strip_prefix("augur-server ready on ")
            .unwrap_or_else(|| panic!("unexpected first line: {line:?}"))
            .parse()
            .expect("an address");
        ServerProcess {
            child,
            addr,
            db: db.to_path_buf(),
        }
    }

    /// A `redis` crate connection.
    pub fn redis(&self) -> redis::Connection {
        let client = redis::Client::open(format!("redis://{}/", self.addr)).expect("client");
        client
            .get_connection_with_timeout(TIMEOUT)
            .expect("connection")
    }

    /// A raw connection.
    pub fn raw(&self) -> Raw {
        Raw::connect(self.addr)
    }

    /// Resident memory of the server process (bytes).
    pub fn rss_bytes(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .unwrap_or(0)
            * 1024
    }

    /// Sends SIGTERM and waits for the process to exit; returns its exit code.
    pub fn terminate(mut self) -> Option<i32> {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let code = wait_exit(&mut self.child);
        std::mem::forget(self);
        code
    }

    /// Kills the process with SIGKILL and waits for it.
    pub fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        std::mem::forget(self);
    }
}

/// Waits (bounded) for `child` to exit.
pub fn wait_exit(child: &mut Child) -> Option<i32> {
    let deadline = Instant::now() + TIMEOUT;
    while Instant::now() < deadline {
        if let Ok(Some(status)) = child.try_wait() {
            return status.code();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("the server did not exit within {TIMEOUT:?}");
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A raw RESP connection.
pub struct Raw {
    pub stream: TcpStream,
    buf: Vec<u8>,
}

impl Raw {
    pub fn connect(addr: SocketAddr) -> Raw {
        Raw::from_stream(TcpStream::connect_timeout(&addr, TIMEOUT).expect("connect"))
    }

    /// A connection over `stream`, already connected.
    pub fn from_stream(stream: TcpStream) -> Raw {
        stream.set_read_timeout(Some(TIMEOUT)).expect("timeout");
        Raw {
            stream,
            buf: Vec::new(),
        }
    }

    /// [`Raw::text`], or `None` when the server closed the connection before replying (a
    /// `CLIENT KILL` from Sentinel, a server shutting down or killed).
    pub fn try_text(&mut self, words: &[&str]) -> Option<String> {
        let words: Vec<&[u8]> = words.iter().map(|w| w.as_bytes()).collect();
        if !self.send_until_closed(&encode(&words)) {
            return None;
        }
        self.reply()
            .map(|r| String::from_utf8_lossy(&r).into_owned())
    }

    /// Sends `words` as one multibulk command and returns its raw reply.
    pub fn cmd(&mut self, words: &[&[u8]]) -> Vec<u8> {
        self.send(&encode(words));
        self.reply().expect("a reply")
    }

    /// `cmd` for text words, the reply as text.
    pub fn text(&mut self, words: &[&str]) -> String {
        let words: Vec<&[u8]> = words.iter().map(|w| w.as_bytes()).collect();
        String::from_utf8_lossy(&self.cmd(&words)).into_owned()
    }

    pub fn send(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).expect("write");
    }

    /// Sends `bytes` to a server that may close the connection before it read them all (it
    /// refuses a request at its first bad byte). Returns false when the close cut the write
    /// short (a broken pipe or reset): the kernel may then also have discarded the replies
    /// sent before the close (a close with unread input is a TCP reset).
    pub fn send_until_closed(&mut self, bytes: &[u8]) -> bool {
        use std::io::ErrorKind::{BrokenPipe, ConnectionReset};
        match self.stream.write_all(bytes) {
            Ok(()) => true,
            Err(e) if matches!(e.kind(), BrokenPipe | ConnectionReset) => false,
            Err(e) => panic!("write: {e}"),
        }
    }

    /// The next complete reply, or `None` once the server closed the connection.
    pub fn reply(&mut self) -> Option<Vec<u8>> {
        loop {
            if let Some(n) = reply_len(&self.buf, 0) {
                return Some(self.buf.drain(..n).collect());
            }
            let mut chunk = [0u8; 65536];
            match self.stream.read(&mut chunk) {
                Ok(0) => return None,
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return None,
                Err(e) => panic!("read: {e}"),
            }
        }
    }

    /// True when the server closed the connection (after any pending replies).
    pub fn is_closed(&mut self) -> bool {
        while self.reply().is_some() {}
        true
    }
}

/// A command as a multibulk request.
pub fn encode(words: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", words.len()).into_bytes();
    for w in words {
        out.extend_from_slice(format!("${}\r\n", w.len()).as_bytes());
        out.extend_from_slice(w);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// The length of the complete reply at `at` in `buf`, if it is all there (RESP2 and the
/// RESP3 types).
fn reply_len(buf: &[u8], at: usize) -> Option<usize> {
    let line_end = buf.get(at..)?.windows(2).position(|w| w == b"\r\n")? + at;
    let head = std::str::from_utf8(buf.get(at + 1..line_end)?).ok()?;
    let after = line_end + 2;
    let elements = |n: i64, per: i64| -> Option<usize> {
        let mut pos = after;
        for _ in 0..(n * per).max(0) {
            pos += reply_len(buf, pos)?;
        }
        Some(pos - at)
    };
    match buf.get(at)? {
        b'+' | b'-' | b':' | b'_' | b',' | b'#' | b'(' => Some(after - at),
        b'$' | b'=' | b'!' => {
            let n: i64 = head.parse().ok()?;
            if n < 0 {
                return Some(after - at);
            }
            let end = after + n as usize + 2;
            (buf.len() >= end).then_some(end - at)
        }
        b'*' | b'~' | b'>' => elements(head.parse().ok()?, 1),
        b'%' => elements(head.parse().ok()?, 2),
        _ => panic!("not a reply: {:?}", String::from_utf8_lossy(&buf[at..])),
    }
}

/// True when `program` is on the PATH.
pub fn installed(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// A real `redis-server` on a free loopback port, with no persistence (killed when dropped):
/// the reference the differential tests compare augur-server with.
pub struct RedisProcess {
    child: Child,
    pub addr: SocketAddr,
    _dir: tempfile::TempDir,
}

impl RedisProcess {
    /// Starts redis-server and waits until it answers PING; `None` when it is not installed.
    pub fn start() -> Option<RedisProcess> {
        if !installed("redis-server") {
            return None;
        }
        // The port is free when checked; another process may take it before redis-server
        // binds it, so a server that exits at once is retried on another port.
        for _ in 0..5 {
            let dir = tempfile::tempdir().expect("a directory");
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .expect("a free port")
                .port();
            let mut child = Command::new("redis-server")
                .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
                .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
                .arg("--dir")
                .arg(dir.path())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("start redis-server");
            let addr: SocketAddr = ([127, 0, 0, 1], port).into();
            let deadline = Instant::now() + TIMEOUT;
            while Instant::now() < deadline {
                if let Ok(Some(_)) = child.try_wait() {
                    break;
                }
                if let Ok(stream) = TcpStream::connect(addr) {
                    // Another test's server may have taken the port between the check and
                    // redis-server's bind: the one answering must be this child.
                    // A connection that closes before its reply is such another server
                    // shutting down: retry on another port too.
                    let ours = Raw::from_stream(stream)
                        .try_text(&["INFO", "server"])
                        .is_some_and(|info| {
                            info.contains(&format!("process_id:{}\r\n", child.id()))
                        });
                    if !ours {
                        break;
                    }
                    let mut redis = RedisProcess {
                        child,
                        addr,
                        _dir: dir,
                    };
                    let mut c = redis.raw();
                    assert_eq!(c.cmd(&[b"PING"]), b"+PONG\r\n");
                    redis.child.try_wait().expect("redis-server is running");
                    return Some(redis);
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!("redis-server did not start");
    }

    /// A raw connection.
    pub fn raw(&self) -> Raw {
        Raw::connect(self.addr)
    }
}

impl Drop for RedisProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A server on a database in a fresh temporary directory (kept alive by the returned
/// `TempDir`), started with `args`.
pub fn server(args: &[&str]) -> (tempfile::TempDir, ServerProcess) {
    let tmp = tempfile::tempdir().unwrap();
    let s = ServerProcess::start(&tmp.path().join("db"), args);
    (tmp, s)
}

/// Checks each `(command words, raw reply)` pair in order on one connection.
pub fn expect(c: &mut Raw, cases: &[(&[&str], &str)]) {
    for (words, want) in cases {
        let got = c.text(words);
        assert_eq!(&got, want, "reply to {words:?}");
    }
}
