//! The real Redis Sentinel (`redis-sentinel`, Debian's 7.0; skipped with a message when it
//! is not installed) monitoring one augur-server as its master: each sentinel sees the
//! master up (`SENTINEL MASTER mymaster` reports `flags master`, never `s_down`, with the
//! server's run id and role), and two sentinels discover each other through the master's
//! `__sentinel__:hello` channel (each lists the other in `SENTINEL SENTINELS mymaster`).
//! Sentinel drives exactly what it needs here: `CLIENT SETNAME`, `PING`, `INFO`,
//! `SUBSCRIBE __sentinel__:hello` on one link and `PUBLISH __sentinel__:hello …` every 2 s
//! on the other. Waits poll with a deadline.

mod common;

use common::sentinel::{field, wait_for, Sentinel};
use common::{installed, ServerProcess};
use std::time::{Duration, Instant};

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
    let sentinels = [
        Sentinel::start(augur.addr, 5000, 180_000),
        Sentinel::start(augur.addr, 5000, 180_000),
    ];
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
