//! Scale-out behind twemproxy (Debian's `nutcracker`): three augur-server shards and the
//! proxy in front of them; 100k keys written through the proxy, each shard holding a share,
//! every key read back through the proxy. Skipped (with a message) when nutcracker is not
//! installed.

mod common;

use common::{encode, Raw, ServerProcess, TIMEOUT};
use std::process::{Command, Stdio};
use std::time::Instant;

/// A port nothing listens on now (bound and released; the proxy takes it next).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

struct Proxy(std::process::Child);

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn three_shards_behind_twemproxy_hold_a_share_each_and_serve_every_key() {
    let installed = Command::new("sh")
        .args(["-c", "command -v nutcracker"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !installed {
        eprintln!("skipped: nutcracker is not installed (apt-get install nutcracker)");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let shards: Vec<ServerProcess> = (0..3)
        .map(|i| ServerProcess::start(&tmp.path().join(format!("shard{i}")), &[]))
        .collect();
    let port = free_port();
    let servers: String = shards
        .iter()
        .enumerate()
        .map(|(i, s)| format!("    - {}:1 shard{i}\n", s.addr))
        .collect();
    let conf = tmp.path().join("nutcracker.yml");
    std::fs::write(
        &conf,
        format!(
            "augur:\n  listen: 127.0.0.1:{port}\n  hash: fnv1a_64\n  distribution: ketama\n  \
             redis: true\n  auto_eject_hosts: false\n  timeout: 10000\n  servers:\n{servers}"
        ),
    )
    .unwrap();
    let _proxy = Proxy(
        Command::new("nutcracker")
            .arg("-c")
            .arg(&conf)
            .args(["-s", &free_port().to_string(), "-a", "127.0.0.1"])
            .arg("-o")
            .arg(tmp.path().join("nutcracker.log"))
            .stdout(Stdio::null())
            .spawn()
            .expect("start nutcracker"),
    );
    // A raw connection: the redis crate's handshake (CLIENT SETINFO) is one of the commands
    // twemproxy does not forward, and it closes the connection on them.
    let addr: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let deadline = Instant::now() + TIMEOUT;
    let mut con = loop {
        if let Ok(s) = std::net::TcpStream::connect(addr) {
            drop(s);
            break Raw::connect(addr);
        }
        assert!(
            Instant::now() < deadline,
            "the proxy never accepted a connection"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let n = 100_000;
    for chunk in (0..n).collect::<Vec<u32>>().chunks(1000) {
        let mut batch = Vec::new();
        for i in chunk {
            let (k, v) = (format!("key:{i}"), format!("value-{i}"));
            batch.extend(encode(&[b"SET", k.as_bytes(), v.as_bytes()]));
        }
        con.send(&batch);
        for _ in chunk {
            assert_eq!(con.reply().expect("a reply"), b"+OK\r\n");
        }
    }
    let counts: Vec<i64> = shards
        .iter()
        .map(|s| {
            let mut c = s.redis();
            redis::cmd("DBSIZE").query(&mut c).unwrap()
        })
        .collect();
    assert_eq!(counts.iter().sum::<i64>(), i64::from(n), "{counts:?}");
    for c in &counts {
        assert!(
            *c > i64::from(n) / 10,
            "a shard holds too small a share: {counts:?}"
        );
    }
    for chunk in (0..n).collect::<Vec<u32>>().chunks(500) {
        let keys: Vec<String> = chunk.iter().map(|i| format!("key:{i}")).collect();
        let mut words: Vec<&[u8]> = vec![b"MGET"];
        words.extend(keys.iter().map(|k| k.as_bytes()));
        let reply = con.cmd(&words);
        let want: String = format!("*{}\r\n", chunk.len())
            + &chunk
                .iter()
                .map(|i| {
                    let v = format!("value-{i}");
                    format!("${}\r\n{v}\r\n", v.len())
                })
                .collect::<String>();
        assert_eq!(String::from_utf8_lossy(&reply), want);
    }
}
