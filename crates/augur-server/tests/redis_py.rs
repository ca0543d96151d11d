//! redis-py with its defaults against the server (issue 43: redis-py 8 speaks RESP3 by
//! default, opens each connection with `HELLO 3`, and got `NOPROTO`). Runs the Python
//! named by `AUGUR_TEST_PYTHON` (default `python3`); skipped with a message when it or
//! redis-py is missing. `scripts/test.sh` installs redis-py into its environment and runs
//! this test again with that interpreter. Expiry and WATCH (issue 43) through redis-py's own
//! helpers (`set(ex=)`, `getex`, `transaction`, `WatchError`); hashes through `hset(mapping=)`,
//! `hgetall` (a dict in both protocols), `hscan_iter`, `hrandfield`, and WRONGTYPE as
//! `ResponseError`.

mod common;

use common::server;
use std::process::Command;

/// The client's session: every reply checked as redis-py parses it.
const SCRIPT: &str = r#"
import sys
import redis

host, port = sys.argv[1], int(sys.argv[2])
r = redis.Redis(host=host, port=port)  # redis-py's defaults
conn = r.connection_pool.get_connection()
protocol = int(getattr(conn, "protocol", 2) or 2)
r.connection_pool.release(conn)

assert r.ping() is True
assert r.set("k", "v") is True
assert r.get("k") == b"v"
assert r.get("missing") is None
assert r.mget("k", "missing") == [b"v", None]
assert r.set("k", "w", nx=True) is None
assert r.set("k", "w", get=True) == b"v"
assert r.incrbyfloat("f", 0.1) == 0.1
assert r.incrbyfloat("f", 0.2) == 0.3
assert r.get("f") == b"0.3", r.get("f")
assert r.incr("n") == 1 and r.decrby("n", 5) == -4
assert r.config_get("appendonly") == {"appendonly": "yes"}, r.config_get("appendonly")
info = r.info()
assert info["role"] == "master" and info["connected_slaves"] == 0, info
assert r.info("replication")["master_repl_offset"] == 0
assert r.dbsize() == 3
assert r.info("keyspace")["db0"]["keys"] == 3, r.info("keyspace")
assert r.client_setname("py") is True and r.client_getname() == "py"
me = [c for c in r.client_list() if c["name"] == "py"]
assert len(me) == 1 and me[0]["resp"] == str(protocol), me
with r.pipeline(transaction=True) as p:
    p.set("a", 1).incr("a").get("a").get("missing")
    assert p.execute() == [True, 2, b"2", None]
assert sorted(r.scan_iter(match="[afk]*")) == [b"a", b"f", b"k"]
# Expiry (issue 43).
assert r.set("t", "v", ex=100) is True and r.ttl("t") == 100
assert r.expire("t", 200, gt=True) is True and r.ttl("t") == 200
assert r.expire("t", 300, lt=True) is False
assert 0 < r.pttl("t") <= 200000
assert r.persist("t") is True and r.ttl("t") == -1 and r.ttl("missing") == -2
assert r.setex("t", 50, "w") is True and r.getex("t", persist=True) == b"w" and r.ttl("t") == -1
assert r.getex("t", exat=99999999999) == b"w" and r.expiretime("t") == 99999999999
assert r.psetex("gone", 1, "x") is True
import time
time.sleep(0.05)
assert r.get("gone") is None and r.exists("gone") == 0
# WATCH: the transaction helper retries on a concurrent change (WatchError).
r.set("w", 1)
other = redis.Redis(host=host, port=port)
calls = []
def double(pipe):
    value = int(pipe.get("w"))
    if not calls:
        other.incr("w")  # changes the watched key once: the first EXEC is aborted
    calls.append(value)
    pipe.multi()
    pipe.set("w", value * 2)
assert r.transaction(double, "w") == [True]
assert calls == [1, 2] and r.get("w") == b"4", (calls, r.get("w"))
with r.pipeline() as p:
    p.watch("w")
    other.set("w", 5)
    p.multi()
    p.set("w", 6)
    try:
        p.execute()
        raise AssertionError("EXEC should have been aborted")
    except redis.WatchError:
        pass
assert r.get("w") == b"5"
# Hashes (issue 43).
assert r.hset("hh", mapping={"a": 1, "b": "x"}) == 2
assert r.hget("hh", "a") == b"1" and r.hget("hh", "nope") is None
assert r.hgetall("hh") == {b"a": b"1", b"b": b"x"}, r.hgetall("hh")
assert r.hincrby("hh", "a", 5) == 6 and r.hincrbyfloat("hh", "f", 0.1) == 0.1
assert r.hlen("hh") == 3 and r.hexists("hh", "b") and sorted(r.hkeys("hh")) == [b"a", b"b", b"f"]
assert r.hmget("hh", ["a", "nope"]) == [b"6", None]
assert dict(r.hscan_iter("hh")) == r.hgetall("hh")
assert r.hrandfield("hh") in (b"a", b"b", b"f")
picks = r.hrandfield("hh", 2, withvalues=True)
assert len(picks) == 4, picks  # redis-py flattens RESP3 pairs too
assert r.type("hh") in (b"hash", "hash")
for wrong in (lambda: r.get("hh"), lambda: r.hget("k", "f"), lambda: r.incr("hh")):
    try:
        wrong()
        raise AssertionError("no WRONGTYPE")
    except redis.ResponseError as e:
        assert str(e).startswith("WRONGTYPE"), e
assert r.expire("hh", 100) is True and r.ttl("hh") == 100
assert sorted(r.scan_iter(_type="hash")) == [b"hh"]
assert r.delete("hh") == 1 and r.hgetall("hh") == {} and r.exists("hh") == 0
hello = r.execute_command("HELLO", protocol)
proto = hello.get(b"proto", hello.get("proto")) if isinstance(hello, dict) else None
assert isinstance(hello, dict) == (protocol == 3), hello
assert protocol == 2 or proto == 3, hello
print("redis-py", redis.__version__, "protocol", protocol)
"#;

#[test]
fn redis_py_with_its_defaults_works() {
    let python = std::env::var("AUGUR_TEST_PYTHON").unwrap_or_else(|_| "python3".into());
    let probe = Command::new(&python)
        .args(["-c", "import redis; print(redis.__version__)"])
        .output();
    let version = match probe {
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout).trim().to_string(),
        _ => {
            eprintln!("skipped: {python} cannot import redis (pip install 'redis>=5')");
            return;
        }
    };
    let (_tmp, s) = server(&[]);
    let out = Command::new(&python)
        .args([
            "-c",
            SCRIPT,
            &s.addr.ip().to_string(),
            &s.addr.port().to_string(),
        ])
        .output()
        .expect("run python");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "redis-py {version} failed:\n{stdout}\n{stderr}"
    );
    eprintln!("{}", stdout.trim());
    // redis-py 8 and later default to RESP3: that is the case of the issue.
    let major: u32 = version
        .split('.')
        .next()
        .and_then(|m| m.parse().ok())
        .unwrap_or(0);
    if major >= 8 {
        assert!(stdout.contains("protocol 3"), "{stdout}");
    }
}
