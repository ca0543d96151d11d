//! The text of `INFO`: Redis 7.0's sections of `field:value` lines, in Redis's order and
//! with its field names and formats, so that monitoring written for Redis reads them
//! (redis_exporter parses every `field:value` line under a `# Section` header; HAProxy's
//! health check expects `role:master`), and an `augur` section with the engine's statistics
//! (levels, model memory, learned and baseline lookups).
//!
//! A field is here only with a true value. Where Augur has Redis's quantity it is measured
//! (`keyspace_hits`, `total_commands_processed`, the instantaneous rates, `expired_keys`,
//! the commands' times); where Augur has no such thing the field is Redis's honest constant
//! for a server without it (`evicted_keys:0`: Augur never evicts; `pubsubshard_channels:0`:
//! no sharded Pub/Sub; `latest_fork_usec:0`:
//! it never forks; `aof_rewrites:0`: its log is never rewritten, flushes retire it); and a
//! field Augur cannot know is left out rather than invented: `mem_fragmentation_ratio`, the
//! `allocator_*` fields and `used_memory_dataset` need the allocator's count of allocated
//! bytes, which mimalloc does not keep in release builds; `hz`, `lru_clock`,
//! `redis_git_sha1`, `gcc_version` describe Redis's build and event loop; the `*_main_thread`
//! CPU times have no main thread to measure (the runtime's workers serve clients); the
//! `Latencystats` section needs latency histograms Augur does not keep.
//!
//! Where a field means something a little different, the code says so: `used_memory` is the
//! resident size (Redis's is the allocator's allocated bytes) and `used_memory_peak` the
//! peak resident size; `expired_keys` counts expired keys when compaction reclaims them
//! (`augur::Stats::expired_values`), not when they expire; `rdb_*` are about SAVE and
//! BGSAVE, which flush the memtable (there is no RDB file; the WAL is the
//! `aof_enabled:1` log). Fields Redis lacks are Augur's own and say so by their names or sit
//! where parsers ignore them (`augur_version`, `db_dir`, `appendfsync`, `protocol_errors`,
//! `write_waits`, `watching_clients`, `total_watched_keys`).
//!
//! `# Replication` is Redis 7.0's, field for field, for a primary and for a replica
//! (`replication::Replication::info_fields`): Redis Sentinel discovers replicas from a
//! primary's `slaveN:` lines and reads a replica's `master_link_status`, `slave_priority`
//! and `slave_repl_offset`; HAProxy checks `role:master`; redis_exporter reads `role`,
//! `connected_slaves`, `master_repl_offset`, `master_replid`.

use crate::encoding::USER_KEYS_END;
use crate::replication::Sync;
use crate::state::{KeyCount, Server};
use std::fmt::Write;
use std::sync::atomic::Ordering;
use std::sync::OnceLock;

/// Every section, in Redis 7.0's order (`augur` last).
const SECTIONS: [&str; 13] = [
    "server",
    "clients",
    "memory",
    "persistence",
    "stats",
    "replication",
    "cpu",
    "modules",
    "commandstats",
    "errorstats",
    "cluster",
    "keyspace",
    "augur",
];

/// The sections `INFO` and `INFO default` show: all but `commandstats` (Redis 7.0's default
/// set, with `augur`).
fn in_default(section: &str) -> bool {
    section != "commandstats"
}

/// A section's header as Redis spells it.
fn title(section: &str) -> String {
    match section {
        "cpu" => "CPU".into(),
        _ => section[..1].to_ascii_uppercase() + &section[1..],
    }
}

/// `INFO` for the requested `sections` (lower case): none or `default` for the default
/// set, `all` or `everything` for every section, any mix of names (each section once, in
/// Redis's order; an unknown name adds nothing).
pub fn render(server: &Server, sections: &[String]) -> String {
    let wanted = |name: &str| {
        if sections.is_empty() {
            return in_default(name);
        }
        sections.iter().any(|s| {
            s == name || s == "all" || s == "everything" || (s == "default" && in_default(name))
        })
    };
    // While a replica swaps its database in, the engine's figures read as zeros.
    let stats = server.db().map(|db| db.stats()).unwrap_or_default();
    let mut out = String::new();
    for name in SECTIONS {
        if !wanted(name) {
            continue;
        }
        if !out.is_empty() {
            out.push_str("\r\n");
        }
        let _ = write!(out, "# {}\r\n", title(name));
        let fields = match name {
            "server" => server_fields(server),
            "clients" => clients_fields(server),
            "memory" => memory_fields(&stats),
            "persistence" => persistence_fields(server),
            "stats" => stats_fields(server, &stats),
            "replication" => server.repl.info_fields(&server.settings.replica_announce()),
            "cpu" => cpu_fields(),
            "commandstats" => super::commandstats_lines(server),
            "errorstats" => errorstats_fields(server),
            "cluster" => vec![field("cluster_enabled", 0)],
            "keyspace" => keyspace_fields(server, &stats),
            "augur" => augur_fields(&stats),
            _ => Vec::new(), // modules: none
        };
        for (k, v) in fields {
            let _ = write!(out, "{k}:{v}\r\n");
        }
    }
    out
}

type Fields = Vec<(String, String)>;

fn field(name: &str, value: impl ToString) -> (String, String) {
    (name.to_string(), value.to_string())
}

/// `uname`'s system, release and machine, as Redis's `os` field shows them (Linux: from
/// `/proc`; elsewhere the OS and architecture names).
fn os_name() -> &'static str {
    static OS: OnceLock<String> = OnceLock::new();
    OS.get_or_init(|| {
        let read = |p: &str| {
            std::fs::read_to_string(p)
                .ok()
                .map(|s| s.trim().to_string())
        };
        match (
            read("/proc/sys/kernel/ostype"),
            read("/proc/sys/kernel/osrelease"),
        ) {
            (Some(system), Some(release)) => {
                format!("{system} {release} {}", std::env::consts::ARCH)
            }
            _ => format!("{} {}", std::env::consts::OS, std::env::consts::ARCH),
        }
    })
}

fn server_fields(server: &Server) -> Fields {
    let uptime = server.started.elapsed().as_secs();
    let now_us = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros());
    let mut f = vec![
        field("redis_version", crate::REDIS_VERSION),
        field("redis_mode", "standalone"),
        field("os", os_name()),
        field("arch_bits", usize::BITS),
    ];
    // Rust's `Instant` is clock_gettime(CLOCK_MONOTONIC) and Tokio's poller epoll, on Linux.
    if cfg!(target_os = "linux") {
        f.push(field("monotonic_clock", "POSIX clock_gettime"));
        f.push(field("multiplexing_api", "epoll"));
    }
    f.extend([
        field("process_id", std::process::id()),
        field("process_supervised", "no"),
        field("run_id", &server.run_id),
        field("tcp_port", server.port()),
        field("server_time_usec", now_us),
        field("uptime_in_seconds", uptime),
        field("uptime_in_days", uptime / 86_400),
        field(
            "executable",
            std::env::current_exe()
                .map(|p| p.display().to_string())
                .unwrap_or_default(),
        ),
        field(
            "config_file",
            server
                .config
                .config_file
                .as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_default(),
        ),
        field("io_threads_active", u8::from(server.config.io_threads > 1)),
        field("augur_version", env!("CARGO_PKG_VERSION")),
        field("db_dir", server.config.db.display()),
    ]);
    f
}

fn clients_fields(server: &Server) -> Fields {
    let (input, output) = server.recent.max();
    vec![
        field("connected_clients", server.connected_clients()),
        field("cluster_connections", 0),
        field("maxclients", server.settings.maxclients()),
        field("client_recent_max_input_buffer", input),
        field("client_recent_max_output_buffer", output),
        // No blocking commands (a client held by CLIENT PAUSE is not counted, as in Redis).
        field("blocked_clients", 0),
        field("tracking_clients", 0),
        field("clients_in_timeout_table", 0),
        // Redis 7.4's fields (7.0 has none on WATCH).
        field("watching_clients", server.watches.clients()),
        field("total_watched_keys", server.watches.len()),
    ]
}

/// Resident memory of this process in bytes (Linux `/proc/self/statm`; 0 elsewhere).
pub fn resident_bytes() -> u64 {
    let pages = std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| {
            s.split_whitespace()
                .nth(1)
                .and_then(|p| p.parse::<u64>().ok())
        })
        .unwrap_or(0);
    pages * 4096
}

/// A `kB` field of a `/proc` file (`VmHWM` of `/proc/self/status`, `MemTotal` of
/// `/proc/meminfo`), in bytes.
fn proc_kb(file: &str, name: &str) -> Option<u64> {
    let text = std::fs::read_to_string(file).ok()?;
    let line = text.lines().find_map(|l| l.strip_prefix(name))?;
    let kb = line.trim_start_matches(':').trim().trim_end_matches("kB");
    kb.trim().parse::<u64>().ok().map(|kb| kb * 1024)
}

/// Redis's `bytesToHuman`: `894B`, `1.50K`, `2.00M`, ….
fn human(bytes: u64) -> String {
    if bytes < 1024 {
        return format!("{bytes}B");
    }
    let units = ["K", "M", "G", "T", "P"];
    let mut v = bytes as f64 / 1024.0;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < units.len() {
        v /= 1024.0;
        u += 1;
    }
    format!("{v:.2}{}", units[u])
}

fn memory_fields(stats: &augur::Stats) -> Fields {
    let rss = resident_bytes();
    // The peak resident size (VmHWM; CONFIG RESETSTAT resets it), never below the current.
    let peak = proc_kb("/proc/self/status", "VmHWM").unwrap_or(0).max(rss);
    let model: u64 = stats.levels.iter().map(|l| l.model_bytes).sum();
    let index: u64 = stats.levels.iter().map(|l| l.index_bytes).sum();
    let mut f = vec![
        field("used_memory", rss),
        field("used_memory_human", human(rss)),
        field("used_memory_rss", rss),
        field("used_memory_rss_human", human(rss)),
        field("used_memory_peak", peak),
        field("used_memory_peak_human", human(peak)),
        field(
            "used_memory_peak_perc",
            format!("{:.2}%", rss as f64 * 100.0 / peak.max(1) as f64),
        ),
    ];
    if let Some(total) = proc_kb("/proc/meminfo", "MemTotal") {
        f.push(field("total_system_memory", total));
        f.push(field("total_system_memory_human", human(total)));
    }
    f.extend([
        // Keys live on disk and are never evicted: no limit, no eviction policy.
        field("maxmemory", 0),
        field("maxmemory_human", human(0)),
        field("maxmemory_policy", "noeviction"),
        field("augur_model_bytes", model),
        field("augur_index_bytes", index),
    ]);
    f
}

fn persistence_fields(server: &Server) -> Fields {
    let saves = *server.saves.lock();
    let running = server.bgsave_running.load(Ordering::Acquire);
    let current = saves.bgsave_started.filter(|_| running).map_or(-1, |t| {
        i64::try_from(t.elapsed().as_secs()).unwrap_or(i64::MAX)
    });
    vec![
        // Clients are served only once the database is open.
        field("loading", 0),
        field("async_loading", 0),
        field(
            "rdb_changes_since_last_save",
            server
                .counters
                .key_writes
                .load(Ordering::Relaxed)
                .saturating_sub(saves.writes_at_save),
        ),
        field("rdb_bgsave_in_progress", u8::from(running)),
        field(
            "rdb_last_save_time",
            server.last_save.load(Ordering::Acquire),
        ),
        field(
            "rdb_last_bgsave_status",
            if saves.last_bgsave_ok { "ok" } else { "err" },
        ),
        field("rdb_last_bgsave_time_sec", saves.last_bgsave_secs),
        field("rdb_current_bgsave_time_sec", current),
        field("rdb_saves", saves.saves),
        // The WAL logs every write ahead (Redis's AOF); it is never rewritten.
        field("aof_enabled", 1),
        field("aof_rewrite_in_progress", 0),
        field("aof_rewrite_scheduled", 0),
        field("aof_last_rewrite_time_sec", -1),
        field("aof_current_rewrite_time_sec", -1),
        field("aof_last_bgrewrite_status", "ok"),
        field("aof_rewrites", 0),
        field("appendfsync", server.settings.sync().name()),
    ]
}

fn stats_fields(server: &Server, stats: &augur::Stats) -> Fields {
    let c = &server.counters;
    let get = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
    let [ops, input, output] = server.rates.per_second();
    let kbps = |bytes: u64| format!("{:.2}", bytes as f64 / 1024.0);
    let expired = stats.expired_values.saturating_sub(get(&c.expired_base));
    vec![
        field("total_connections_received", get(&c.connections)),
        field("total_commands_processed", get(&c.commands)),
        field("instantaneous_ops_per_sec", ops),
        field("total_net_input_bytes", get(&c.input_bytes)),
        field("total_net_output_bytes", get(&c.output_bytes)),
        field("total_net_repl_input_bytes", 0),
        field("total_net_repl_output_bytes", 0),
        field("instantaneous_input_kbps", kbps(input)),
        field("instantaneous_output_kbps", kbps(output)),
        field("instantaneous_input_repl_kbps", "0.00"),
        field("instantaneous_output_repl_kbps", "0.00"),
        field("rejected_connections", get(&c.rejected_connections)),
        field("sync_full", server.repl.counter(Sync::Full)),
        field("sync_partial_ok", server.repl.counter(Sync::PartialOk)),
        field("sync_partial_err", server.repl.counter(Sync::PartialErr)),
        field("expired_keys", expired),
        field("evicted_keys", 0),
        field("evicted_clients", 0),
        field("keyspace_hits", get(&c.hits)),
        field("keyspace_misses", get(&c.misses)),
        field("pubsub_channels", server.pubsub.channel_count()),
        field("pubsub_patterns", server.pubsub.pattern_count()),
        field("pubsubshard_channels", 0),
        field("latest_fork_usec", 0),
        field("total_forks", 0),
        field("total_error_replies", server.command_stats.error_replies()),
        field("protocol_errors", get(&c.protocol_errors)),
        field("write_waits", get(&c.write_waits)),
    ]
}

/// CPU time of the process and of its waited-for children (Linux `/proc/self/stat`, in the
/// kernel's clock ticks of 1/100 s, as `USER_HZ` is on Linux; none elsewhere), as Redis
/// formats it: seconds with six decimals.
fn cpu_fields() -> Fields {
    let Some(stat) = std::fs::read_to_string("/proc/self/stat").ok() else {
        return Vec::new();
    };
    // The fields after the command name, which is in parentheses and may hold spaces.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let ticks: Vec<u64> = rest
        .split_whitespace()
        .skip(11) // state … cmajflt: fields 3 to 13
        .take(4)
        .filter_map(|t| t.parse().ok())
        .collect();
    let [utime, stime, cutime, cstime] = ticks[..] else {
        return Vec::new();
    };
    let secs = |t: u64| format!("{}.{:06}", t / 100, (t % 100) * 10_000);
    vec![
        field("used_cpu_sys", secs(stime)),
        field("used_cpu_user", secs(utime)),
        field("used_cpu_sys_children", secs(cstime)),
        field("used_cpu_user_children", secs(cutime)),
    ]
}

fn errorstats_fields(server: &Server) -> Fields {
    server
        .command_stats
        .errors()
        .into_iter()
        .map(|(code, n)| (format!("errorstat_{code}"), format!("count={n}")))
        .collect()
}

/// Redis's `db0:keys=…` line (none for a database known to be empty, as Redis: counted
/// empty, or never written). The count is exact when no write came since the last `DBSIZE`
/// (which counts by a key scan and remembers its count) and none of the keys it counted has
/// expired since; `expires=` is then the number of those keys with an expiry time and
/// `avg_ttl=` their average time to live now (ms; Redis estimates it by sampling). Otherwise
/// the count is an estimate, the engine's entries below the server's own keys
/// (`Db::approximate_rank(USER_KEYS_END)`: user keys' versions, tombstones and expired
/// values included, hash fields and the layout record not), `expires=` and `avg_ttl=` are
/// 0 (not known without a scan), and the line says so with a further field,
/// `keys_estimated=1`: Redis's line is `key=value` pairs, which parsers read by name (Redis
/// 7.4 added `subexpiry` the same way), so they read `keys` still. No line when the count
/// (or the estimate) is 0.
fn keyspace_fields(server: &Server, stats: &augur::Stats) -> Fields {
    let now = server.now_ms();
    let (count, estimated) = match server.exact_key_count(stats.last_seqno, now) {
        Some(count) => (count, false),
        None => {
            let mut count = KeyCount::at(stats.last_seqno);
            count.keys = server
                .db()
                .map_or(0, |db| db.approximate_rank(USER_KEYS_END));
            (count, true)
        }
    };
    if count.keys == 0 {
        return Vec::new();
    }
    let mark = if estimated { ",keys_estimated=1" } else { "" };
    vec![(
        "db0".to_string(),
        format!(
            "keys={},expires={},avg_ttl={}{mark}",
            count.keys,
            count.expires,
            count.avg_ttl_ms(now)
        ),
    )]
}

fn augur_fields(stats: &augur::Stats) -> Fields {
    let model_bytes: u64 = stats.levels.iter().map(|l| l.model_bytes).sum();
    let mut f: Fields = vec![
        field("compaction_style", stats.compaction_style.name()),
        field("writes", stats.writes),
        field("gets", stats.gets),
        field("flushes", stats.flushes),
        field("compactions", stats.compactions),
        field("write_stalls", stats.write_stalls),
        field("value_log_segments", stats.value_log.len()),
        field("models_built", stats.models_built),
        field("model_path_lookups", stats.model_path_lookups),
        field("baseline_path_lookups", stats.baseline_path_lookups),
        field("model_bytes", model_bytes),
        field("expired_values", stats.expired_values),
    ];
    let total = stats.model_path_lookups + stats.baseline_path_lookups;
    if total > 0 {
        f.push(field(
            "learned_lookup_share",
            format!("{:.3}", stats.model_path_lookups as f64 / total as f64),
        ));
    }
    for l in stats.levels.iter().filter(|l| l.files > 0) {
        f.push((
            format!("level_{}", l.level),
            format!(
                "files={},bytes={},entries={},files_with_model={},model_bytes={},model_lookups={},baseline_lookups={}",
                l.files,
                l.bytes,
                l.entries,
                l.files_with_model,
                l.model_bytes,
                l.model_path_lookups,
                l.baseline_path_lookups
            ),
        ));
    }
    f
}
