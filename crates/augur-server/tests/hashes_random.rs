//! Random command sequences over hashes, strings, expiry and transactions, against
//! redis-server 7.0 (skipped with a message when it is not installed): the same seeded
//! sequence is sent to both servers in pipelined writes of random sizes (so pipelined runs,
//! with their merged pending writes, are exercised), under RESP2 and RESP3, and every reply
//! is compared (byte for byte, except a hash's field order, HRANDFIELD's picks and times on
//! each server's own clock: `common/differential.rs`); then every key's final state (type,
//! value or fields, expiry) is compared. Keys and values include byte 0xFF, and every
//! command meets keys of the other type (WRONGTYPE).

mod common;

use common::differential::{first_difference, run, words};
use common::{RedisProcess, ServerProcess};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

type Words = Vec<Vec<u8>>;

const KEYS: &[&str] = &["h1", "h2", "h3", "s1", "s2", "\\xffh", "\\xff\\x01", "k"];
const FIELDS: &[&str] = &["f1", "f2", "f3", "f4", "", "\\xff", "\\xff\\x02f"];

fn pick<'a>(rng: &mut StdRng, from: &[&'a str]) -> &'a str {
    from[rng.gen_range(0..from.len())]
}

fn value(rng: &mut StdRng) -> String {
    match rng.gen_range(0..9) {
        0 => String::new(),
        1 => rng.gen_range(-20..100).to_string(),
        2 => format!("{}.{}", rng.gen_range(-5..5), rng.gen_range(0..99)),
        3 => "\\xffbinary".into(),
        4 => "x".repeat(rng.gen_range(60..80)),
        5 => "9223372036854775807".into(),
        _ => format!("v{}", rng.gen_range(0..10)),
    }
}

/// One random command (no MULTI/EXEC: `sequence` adds those).
fn command(rng: &mut StdRng) -> Vec<String> {
    let k = pick(rng, KEYS).to_string();
    let k2 = pick(rng, KEYS).to_string();
    let f = pick(rng, FIELDS).to_string();
    let f2 = pick(rng, FIELDS).to_string();
    let v = value(rng);
    let n = rng.gen_range(-5..8).to_string();
    let s = |w: &[&str]| w.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    match rng.gen_range(0..60) {
        0..=5 => s(&["HSET", &k, &f, &v]),
        6 => s(&["HSET", &k, &f, &v, &f2, &value(rng)]),
        7 => s(&["HMSET", &k, &f, &v]),
        8 => s(&["HSETNX", &k, &f, &v]),
        9..=11 => s(&["HGET", &k, &f]),
        12 => s(&["HMGET", &k, &f, &f2]),
        13 | 14 => s(&["HDEL", &k, &f]),
        15 => s(&["HDEL", &k, &f, &f2]),
        16 => s(&["HLEN", &k]),
        17 => s(&["HEXISTS", &k, &f]),
        18 => s(&["HSTRLEN", &k, &f]),
        19 | 20 => s(&["HINCRBY", &k, &f, &n]),
        21 => s(&["HINCRBYFLOAT", &k, &f, &format!("{n}.25")]),
        22 | 23 => s(&["HGETALL", &k]),
        24 => s(&["HKEYS", &k]),
        25 => s(&["HVALS", &k]),
        26 => s(&["HSCAN", &k, "0", "COUNT", "1000"]),
        27 => s(&["HSCAN", &k, "0", "MATCH", "f*", "COUNT", "1000"]),
        28 => s(&["HRANDFIELD", &k]),
        29 => s(&["HRANDFIELD", &k, &n]),
        30 => s(&["HRANDFIELD", &k, &n, "WITHVALUES"]),
        31..=33 => s(&["SET", &k, &v]),
        34 => s(&["SET", &k, &v, "GET"]),
        35 => s(&["SET", &k, &v, "NX"]),
        36 => s(&["GET", &k]),
        37 => s(&["MGET", &k, &k2]),
        38 => s(&["APPEND", &k, &v]),
        39 => s(&["INCR", &k]),
        40 => s(&["STRLEN", &k]),
        41 => s(&["GETDEL", &k]),
        42 => s(&["SETRANGE", &k, "1", &v]),
        43 => s(&["DEL", &k]),
        44 => s(&["DEL", &k, &k2]),
        45 => s(&["EXISTS", &k, &k2]),
        46 => s(&["TYPE", &k]),
        // GT and LT only with absolute times: a relative time depends on each server's
        // clock (two EXPIREs in one millisecond set equal times).
        47 => s(&["EXPIRE", &k, "1000", pick(rng, &["NX", "XX"])]),
        48 => {
            let at = (99_999_999_990_000u64 + rng.gen_range(0..5u64)).to_string();
            s(&["PEXPIREAT", &k, &at, pick(rng, &["NX", "XX", "GT", "LT"])])
        }
        49 => s(&["EXPIREAT", &k, "1"]),
        50 => s(&["PERSIST", &k]),
        51 => s(&["TTL", &k]),
        52 => s(&["PEXPIRETIME", &k]),
        53 => s(&["RENAME", &k, &k2]),
        54 => s(&["RENAMENX", &k, &k2]),
        55 => s(&["COPY", &k, &k2, "REPLACE"]),
        56 => s(&["DBSIZE"]),
        57 => s(&["KEYS", "*"]),
        58 => s(&[
            "SCAN",
            "0",
            "COUNT",
            "1000",
            "TYPE",
            pick(rng, &["hash", "string"]),
        ]),
        _ => s(&["GETEX", &k, "PERSIST"]),
    }
}

/// A sequence of `len` commands, with transactions (MULTI, a few commands, EXEC or
/// DISCARD; now and then a command with a wrong arity, which aborts it).
fn sequence(seed: u64, len: usize) -> Vec<Words> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut out = vec![words(&["FLUSHALL"])];
    while out.len() < len {
        if rng.gen_bool(0.08) {
            out.push(words(&["MULTI"]));
            for _ in 0..rng.gen_range(1..5) {
                let c = command(&mut rng);
                out.push(words(&c.iter().map(String::as_str).collect::<Vec<_>>()));
            }
            if rng.gen_bool(0.05) {
                out.push(words(&["HSET", "h1", "f1"]));
            }
            out.push(words(&[if rng.gen_bool(0.9) { "EXEC" } else { "DISCARD" }]));
        } else {
            let c = command(&mut rng);
            out.push(words(&c.iter().map(String::as_str).collect::<Vec<_>>()));
        }
    }
    // The final state of every key.
    for k in KEYS {
        for w in [
            &["TYPE", k][..],
            &["HGETALL", k],
            &["HLEN", k],
            &["PEXPIRETIME", k],
        ] {
            out.push(words(w));
        }
        out.push(words(&["MGET", k]));
    }
    out.push(words(&["DBSIZE"]));
    out
}

#[test]
fn random_sequences_reply_as_redis() {
    let Some(redis) = RedisProcess::start() else {
        eprintln!("skipped: redis-server is not installed (apt-get install redis-server)");
        return;
    };
    let seeds: u64 = std::env::var("AUGUR_HASH_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(6);
    for seed in 0..seeds {
        // A fresh database per seed: a few keys rewritten thousands of times leave long
        // runs of versions in the memtable that every key walk steps over.
        let tmp = tempfile::tempdir().unwrap();
        let augur = ServerProcess::start(&tmp.path().join("db"), &["--enable-flush"]);
        let cmds = sequence(seed, 1500);
        for resp3 in [false, true] {
            // Pipelined writes of 1 to 40 commands, the same cuts on both servers.
            let cuts = move |i: usize| {
                let mut r = StdRng::seed_from_u64(seed ^ (i as u64).wrapping_mul(0x9E37));
                if r.gen_bool(0.3) {
                    1
                } else {
                    r.gen_range(1..40)
                }
            };
            let want = run(redis.addr, &cmds, resp3, &cuts, true);
            let got = run(augur.addr, &cmds, resp3, &cuts, true);
            if let Some(d) = first_difference(&cmds, &want, &got) {
                panic!("seed {seed} RESP{}: {d}", if resp3 { 3 } else { 2 });
            }
            let errors = want.iter().filter(|r| r.starts_with("-WRONGTYPE")).count();
            assert!(errors > 20, "seed {seed}: only {errors} WRONGTYPE replies");
        }
    }
}
