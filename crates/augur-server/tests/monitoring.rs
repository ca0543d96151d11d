//! INFO as monitoring reads it (issue 43, item 4): parsed as redis_exporter parses it
//! (every line a `# Section` header or `field:value`), with the fields redis_exporter and
//! HAProxy's `role:master` check read, each with Redis 7.0's name, section and format
//! (checked against a real redis-server's `INFO everything` when one is installed), and the
//! counters moving when they should: `keyspace_hits` after a hit, `total_commands_processed`
//! with each command, `expired_keys` once an expired key is reclaimed, the persistence,
//! error and command statistics, and `CONFIG RESETSTAT` zeroing them.

mod common;

use common::{server, Raw, RedisProcess};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// INFO's text as redis_exporter reads it: section → field → value. Panics on a line that
/// is neither empty, a `# Section` header nor `field:value` (the exporter would skip it, so
/// the field would be lost).
fn parse(text: &str) -> BTreeMap<String, BTreeMap<String, String>> {
    let mut sections: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    let mut current = String::new();
    assert!(text.ends_with("\r\n") || text.is_empty(), "{text:?}");
    for line in text.split("\r\n") {
        if line.is_empty() {
            continue;
        }
        if let Some(name) = line.strip_prefix("# ") {
            current = name.to_string();
            sections.entry(current.clone()).or_default();
            continue;
        }
        let (k, v) = line
            .split_once(':')
            .unwrap_or_else(|| panic!("not `field:value`: {line:?}"));
        assert!(!current.is_empty(), "a field before any section: {line:?}");
        assert!(
            !k.is_empty()
                && k.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"_|-".contains(&b)),
            "field name {k:?}"
        );
        let prev = sections
            .get_mut(&current)
            .unwrap()
            .insert(k.to_string(), v.to_string());
        assert!(prev.is_none(), "{k} twice");
    }
    sections
}

/// INFO's bulk text from a raw reply.
fn info(c: &mut Raw, words: &[&str]) -> String {
    let mut all = vec!["INFO"];
    all.extend(words);
    let reply = c.text(&all);
    let body = reply.split_once("\r\n").map_or("", |(_, b)| b);
    body.strip_suffix("\r\n").unwrap_or(body).to_string()
}

/// One field's value, as a number.
fn number(sections: &BTreeMap<String, BTreeMap<String, String>>, name: &str) -> f64 {
    let v = sections
        .values()
        .find_map(|s| s.get(name))
        .unwrap_or_else(|| panic!("no field {name}"));
    v.trim_end_matches('%')
        .parse()
        .unwrap_or_else(|_| panic!("{name}:{v} is not a number"))
}

/// The fields redis_exporter maps to metrics (its `metricMapGauges` and
/// `metricMapCounters` that a Redis 7.0 master without replicas reports), the labels of its
/// `instance_info`, and what HAProxy's check reads.
const EXPORTER_FIELDS: &[&str] = &[
    "redis_version",
    "redis_mode",
    "os",
    "tcp_port",
    "run_id",
    "process_id",
    "uptime_in_seconds",
    "connected_clients",
    "blocked_clients",
    "tracking_clients",
    "maxclients",
    "client_recent_max_input_buffer",
    "client_recent_max_output_buffer",
    "used_memory",
    "used_memory_rss",
    "used_memory_peak",
    "maxmemory",
    "maxmemory_policy",
    "loading",
    "rdb_changes_since_last_save",
    "rdb_bgsave_in_progress",
    "rdb_last_save_time",
    "rdb_last_bgsave_status",
    "rdb_last_bgsave_time_sec",
    "rdb_current_bgsave_time_sec",
    "aof_enabled",
    "aof_rewrite_in_progress",
    "aof_rewrite_scheduled",
    "aof_last_rewrite_time_sec",
    "aof_current_rewrite_time_sec",
    "aof_last_bgrewrite_status",
    "total_connections_received",
    "total_commands_processed",
    "instantaneous_ops_per_sec",
    "rejected_connections",
    "total_net_input_bytes",
    "total_net_output_bytes",
    "expired_keys",
    "evicted_keys",
    "keyspace_hits",
    "keyspace_misses",
    "pubsub_channels",
    "pubsub_patterns",
    "latest_fork_usec",
    "role",
    "connected_slaves",
    "master_replid",
    "master_repl_offset",
    "second_repl_offset",
    "repl_backlog_active",
    "repl_backlog_size",
    "repl_backlog_first_byte_offset",
    "repl_backlog_histlen",
    "sync_full",
    "sync_partial_ok",
    "sync_partial_err",
    "used_cpu_sys",
    "used_cpu_user",
    "used_cpu_sys_children",
    "used_cpu_user_children",
    "cluster_enabled",
];

#[test]
fn info_parses_as_redis_exporter_reads_it_with_its_fields() {
    let (_tmp, s) = server(&[]);
    let mut c = s.raw();
    c.text(&["SET", "k", "v"]);
    c.text(&["GET", "k"]);
    c.text(&["NOSUCHCOMMAND"]);
    for words in [&[][..], &["default"], &["all"], &["everything"]] {
        let sections = parse(&info(&mut c, words));
        for name in EXPORTER_FIELDS {
            assert!(
                sections.values().any(|s| s.contains_key(*name)),
                "INFO {words:?} has no {name}"
            );
        }
        assert_eq!(sections["Replication"]["role"], "master");
        assert_eq!(sections["Replication"]["connected_slaves"], "0");
        assert!(sections.contains_key("CPU") && sections.contains_key("Errorstats"));
        assert_eq!(
            sections.contains_key("Commandstats"),
            !words.is_empty() && words[0] != "default",
            "{words:?}"
        );
    }
    // HAProxy: `tcp-check send INFO\ replication` then `expect string role:master`.
    assert!(info(&mut c, &["replication"]).contains("\r\nrole:master\r\n"));
    // The keyspace line redis_exporter parses (`keys=`, `expires=`, `avg_ttl=`).
    c.text(&["DBSIZE"]);
    let keyspace = parse(&info(&mut c, &["keyspace"]));
    assert_eq!(keyspace["Keyspace"]["db0"], "keys=1,expires=0,avg_ttl=0");
    // Commandstats in the exporter's 6.2+ format.
    let stats = parse(&info(&mut c, &["commandstats"]));
    let get = &stats["Commandstats"]["cmdstat_get"];
    let parts: Vec<&str> = get.split(',').collect();
    let names: Vec<&str> = parts.iter().map(|p| p.split('=').next().unwrap()).collect();
    assert_eq!(
        names,
        [
            "calls",
            "usec",
            "usec_per_call",
            "rejected_calls",
            "failed_calls"
        ]
    );
    for p in parts {
        let v = p.split_once('=').unwrap().1;
        assert!(v.parse::<f64>().is_ok(), "{get}");
    }
}

/// The shape of a value, to compare formats: an integer, a decimal with its number of
/// decimals, a percentage, a human size (`1.50M`, `0B`), or a word.
fn shape(v: &str) -> String {
    if v.parse::<i64>().is_ok() {
        return "int".into();
    }
    if let Some(p) = v.strip_suffix('%') {
        return format!("percent {}", shape(p));
    }
    if let Some((whole, frac)) = v.split_once('.') {
        if whole.parse::<i64>().is_ok() && frac.bytes().all(|b| b.is_ascii_digit()) {
            return format!("decimal {}", frac.len());
        }
        if let Some(n) = frac.strip_suffix(['K', 'M', 'G', 'T', 'P']) {
            if n.bytes().all(|b| b.is_ascii_digit()) {
                return "human".into();
            }
        }
    }
    if v.strip_suffix('B')
        .is_some_and(|n| n.parse::<u64>().is_ok())
    {
        return "human".into();
    }
    "word".into()
}

/// Fields augur-server adds (documented in `commands/info.rs`).
fn augur_only(section: &str, field: &str) -> bool {
    section == "Augur"
        || section == "Commandstats"
        || section == "Errorstats"
        || field.starts_with("augur_")
        || [
            "db_dir",
            "appendfsync",
            "protocol_errors",
            "write_waits",
            "watching_clients",
            "total_watched_keys",
        ]
        .contains(&field)
}

#[test]
fn info_fields_have_redis_names_sections_and_formats() {
    let Some(redis) = RedisProcess::start() else {
        eprintln!("skipped: redis-server is not installed (apt-get install redis-server)");
        return;
    };
    let (_tmp, s) = server(&[]);
    let mut a = s.raw();
    let mut r = redis.raw();
    for c in [&mut a, &mut r] {
        c.text(&["SET", "k", "v"]);
        c.text(&["GET", "k"]);
        c.text(&["GET"]);
        c.text(&["DBSIZE"]);
    }
    let ours = parse(&info(&mut a, &["everything"]));
    let theirs = parse(&info(&mut r, &["everything"]));
    let mut checked = 0;
    for (section, fields) in &ours {
        for (field, value) in fields {
            if augur_only(section, field) {
                continue;
            }
            let want = theirs
                .get(section)
                .and_then(|s| s.get(field))
                .unwrap_or_else(|| panic!("Redis 7.0 has no {field} in # {section}"));
            let (got_shape, want_shape) = (shape(value), shape(want));
            // A word where Redis has a word: the same word, except the fields that name
            // this process, machine or build.
            if want_shape == "word"
                && ![
                    "redis_version",
                    "os",
                    "run_id",
                    "executable",
                    "master_replid",
                    "config_file",
                    "monotonic_clock",
                ]
                .contains(&field.as_str())
                && section != "Keyspace"
            {
                assert_eq!(value, want, "{field}");
            }
            assert_eq!(got_shape, want_shape, "{field}: ours {value}, Redis {want}");
            checked += 1;
        }
    }
    assert!(checked > 80, "{checked} fields compared");
    // Every section, in Redis's order (augur's own last).
    let order = |text: &str| -> Vec<String> {
        text.split("\r\n")
            .filter_map(|l| l.strip_prefix("# "))
            .map(String::from)
            .collect()
    };
    let mut ours = order(&info(&mut a, &["everything"]));
    assert_eq!(ours.pop().as_deref(), Some("Augur"));
    let theirs: Vec<String> = order(&info(&mut r, &["everything"]))
        .into_iter()
        .filter(|s| s != "Latencystats")
        .collect();
    assert_eq!(ours, theirs);
}

/// Polls INFO until `field` reaches `at_least` (within 20 s); its value.
fn wait_for(c: &mut Raw, field: &str, at_least: f64) -> f64 {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let v = number(&parse(&info(c, &["everything"])), field);
        if v >= at_least || Instant::now() > deadline {
            return v;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn info_counters_move_when_they_should() {
    // One L0 table triggers a compaction, which reclaims expired keys: `expired_keys`.
    let (_tmp, s) = server(&["--level0-file-num-compaction-trigger", "1"]);
    let mut c = s.raw();
    let all = |c: &mut Raw| parse(&info(c, &["everything"]));
    let before = all(&mut c);
    let n = |s: &BTreeMap<String, BTreeMap<String, String>>, f| number(s, f);
    c.text(&["SET", "k", "v"]);
    c.text(&["GET", "k"]);
    c.text(&["GET", "missing"]);
    c.text(&["INCR", "k"]);
    c.text(&["GET"]);
    let after = all(&mut c);
    assert_eq!(
        n(&after, "keyspace_hits") - n(&before, "keyspace_hits"),
        2.0
    ); // GET, INCR
    assert_eq!(
        n(&after, "keyspace_misses") - n(&before, "keyspace_misses"),
        1.0
    );
    // SET, GET, GET, INCR and the first INFO (the second is counted after it answers).
    let processed = n(&after, "total_commands_processed") - n(&before, "total_commands_processed");
    assert_eq!(processed, 5.0);
    assert_eq!(
        n(&after, "total_error_replies") - n(&before, "total_error_replies"),
        2.0
    );
    assert_eq!(after["Errorstats"]["errorstat_ERR"], "count=2");
    assert!(after["Commandstats"]["cmdstat_incr"].contains(",failed_calls=1"));
    assert!(after["Commandstats"]["cmdstat_get"].starts_with("calls=2,"));
    assert!(after["Commandstats"]["cmdstat_get"].contains(",rejected_calls=1,"));
    assert!(n(&after, "total_net_input_bytes") > n(&before, "total_net_input_bytes"));
    assert!(n(&after, "total_net_output_bytes") > n(&before, "total_net_output_bytes"));
    assert!(n(&after, "client_recent_max_input_buffer") > 0.0);
    assert!(
        n(&after, "used_memory") > 0.0 && n(&after, "used_memory_peak") >= n(&after, "used_memory")
    );
    assert_eq!(n(&after, "rdb_changes_since_last_save"), 1.0); // SET (the INCR failed)
    let mut other = s.raw();
    assert_eq!(other.text(&["PING"]), "+PONG\r\n"); // accepted
    let clients = all(&mut c);
    assert_eq!(n(&clients, "connected_clients"), 2.0);
    assert_eq!(n(&clients, "total_connections_received"), 2.0);
    // SAVE: rdb_saves, rdb_last_save_time, and no change since.
    assert_eq!(c.text(&["SAVE"]), "+OK\r\n");
    let saved = all(&mut c);
    assert_eq!(n(&saved, "rdb_saves"), 1.0);
    assert_eq!(n(&saved, "rdb_changes_since_last_save"), 0.0);
    assert_eq!(saved["Persistence"]["rdb_last_bgsave_status"], "ok");
    assert!(n(&saved, "rdb_last_save_time") >= n(&before, "rdb_last_save_time"));
    // A burst of commands shows in instantaneous_ops_per_sec (sampled every 100 ms).
    let burst = Instant::now();
    while burst.elapsed() < Duration::from_millis(700) {
        c.text(&["PING"]);
    }
    assert!(n(&all(&mut c), "instantaneous_ops_per_sec") > 0.0);
    // Expiry: a key set with PX 100 expires; the compaction after the SAVE's flush
    // reclaims it, and expired_keys counts it.
    assert_eq!(n(&saved, "expired_keys"), 0.0);
    assert_eq!(c.text(&["SET", "gone", "v", "PX", "100"]), "+OK\r\n");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(c.text(&["SAVE"]), "+OK\r\n");
    assert_eq!(wait_for(&mut c, "expired_keys", 1.0), 1.0);
    // CONFIG RESETSTAT zeroes the counters and the statistics.
    assert_eq!(c.text(&["CONFIG", "RESETSTAT"]), "+OK\r\n");
    let reset = all(&mut c);
    for f in [
        "keyspace_hits",
        "keyspace_misses",
        "total_error_replies",
        "expired_keys",
        "total_connections_received",
        "rejected_connections",
    ] {
        assert_eq!(n(&reset, f), 0.0, "{f}");
    }
    assert_eq!(n(&reset, "total_commands_processed"), 1.0); // the RESETSTAT
    assert!(reset["Errorstats"].is_empty());
    assert_eq!(
        reset["Commandstats"].len(),
        1,
        "{:?}",
        reset["Commandstats"]
    );
}
