//! The text of `INFO`: Redis's `section:` blocks of `field:value` lines (server, clients,
//! memory, persistence, stats, replication, keyspace) and an `augur` block with the
//! engine's statistics (levels, model memory, learned and baseline lookups).
//!
//! `# Replication` says what Redis 7.0 says of a master without replicas, with the fields
//! health checks and exporters read: HAProxy's `tcp-check expect string role:master`,
//! redis_exporter's `role`, `connected_slaves`, `master_repl_offset`, `master_replid`.

use crate::encoding::USER_KEYS_END;
use crate::state::{KeyCount, Server};
use std::fmt::Write;
use std::sync::atomic::Ordering;

/// The sections every `INFO` without arguments shows, in order.
const SECTIONS: [&str; 8] = [
    "server",
    "clients",
    "memory",
    "persistence",
    "stats",
    "replication",
    "keyspace",
    "augur",
];

/// `INFO` for the requested `sections` (lower case; none, `all`, `default` or `everything`
/// means every section).
pub fn render(server: &Server, sections: &[String]) -> String {
    let all = sections.is_empty()
        || sections
            .iter()
            .any(|s| s == "all" || s == "default" || s == "everything");
    let stats = server.db.stats();
    let mut out = String::new();
    for name in SECTIONS {
        if !all && !sections.iter().any(|s| s == name) {
            continue;
        }
        if !out.is_empty() {
            out.push_str("\r\n");
        }
        let title = name[..1].to_ascii_uppercase() + &name[1..];
        let _ = write!(out, "# {title}\r\n");
        let fields = match name {
            "server" => server_fields(server),
            "clients" => vec![
                ("connected_clients", server.connected_clients().to_string()),
                ("maxclients", server.config.maxclients.to_string()),
                ("blocked_clients", "0".into()),
                // Redis 7.4's fields (7.0 has none on WATCH).
                ("watching_clients", server.watches.clients().to_string()),
                ("total_watched_keys", server.watches.len().to_string()),
            ],
            "memory" => memory_fields(&stats),
            "persistence" => persistence_fields(server),
            "stats" => stats_fields(server),
            "replication" => replication_fields(server),
            "keyspace" => keyspace_fields(server, &stats),
            _ => augur_fields(&stats),
        };
        for (k, v) in fields {
            let _ = write!(out, "{k}:{v}\r\n");
        }
    }
    out
}

type Fields = Vec<(&'static str, String)>;

fn server_fields(server: &Server) -> Fields {
    let uptime = server.started.elapsed().as_secs();
    vec![
        ("redis_version", crate::REDIS_VERSION.into()),
        ("augur_version", env!("CARGO_PKG_VERSION").into()),
        ("redis_mode", "standalone".into()),
        ("os", std::env::consts::OS.into()),
        ("arch_bits", (usize::BITS).to_string()),
        ("process_id", std::process::id().to_string()),
        ("run_id", server.run_id.clone()),
        ("tcp_port", server.port().to_string()),
        ("uptime_in_seconds", uptime.to_string()),
        ("uptime_in_days", (uptime / 86_400).to_string()),
        ("db_dir", server.config.db.display().to_string()),
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

fn human(bytes: u64) -> String {
    let units = ["B", "K", "M", "G", "T"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < units.len() {
        v /= 1024.0;
        u += 1;
    }
    format!("{v:.2}{}", units[u])
}

fn memory_fields(stats: &augur::Stats) -> Fields {
    let rss = resident_bytes();
    let model: u64 = stats.levels.iter().map(|l| l.model_bytes).sum();
    let index: u64 = stats.levels.iter().map(|l| l.index_bytes).sum();
    vec![
        ("used_memory", rss.to_string()),
        ("used_memory_human", human(rss)),
        ("used_memory_rss", rss.to_string()),
        ("used_memory_rss_human", human(rss)),
        ("maxmemory", "0".into()),
        ("augur_model_bytes", model.to_string()),
        ("augur_index_bytes", index.to_string()),
    ]
}

fn persistence_fields(server: &Server) -> Fields {
    vec![
        ("loading", "0".into()),
        (
            "rdb_bgsave_in_progress",
            u8::from(server.bgsave_running.load(Ordering::Acquire)).to_string(),
        ),
        (
            "rdb_last_save_time",
            server.last_save.load(Ordering::Acquire).to_string(),
        ),
        ("aof_enabled", "1".into()),
        ("appendfsync", server.config.sync.name().into()),
    ]
}

fn stats_fields(server: &Server) -> Fields {
    let c = &server.counters;
    let get = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed).to_string();
    vec![
        ("total_connections_received", get(&c.connections)),
        ("total_commands_processed", get(&c.commands)),
        ("rejected_connections", get(&c.rejected_connections)),
        ("keyspace_hits", get(&c.hits)),
        ("keyspace_misses", get(&c.misses)),
        ("total_net_input_bytes", get(&c.input_bytes)),
        ("total_net_output_bytes", get(&c.output_bytes)),
        ("protocol_errors", get(&c.protocol_errors)),
        ("write_waits", get(&c.write_waits)),
    ]
}

/// A master without replicas, as Redis 7.0 reports one.
fn replication_fields(server: &Server) -> Fields {
    vec![
        ("role", "master".into()),
        ("connected_slaves", "0".into()),
        ("master_failover_state", "no-failover".into()),
        ("master_replid", server.run_id.clone()),
        ("master_replid2", "0".repeat(40)),
        ("master_repl_offset", "0".into()),
        ("second_repl_offset", "-1".into()),
        ("repl_backlog_active", "0".into()),
        ("repl_backlog_size", "1048576".into()),
        ("repl_backlog_first_byte_offset", "0".into()),
        ("repl_backlog_histlen", "0".into()),
    ]
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
    let now = server.db.now_unix_ms();
    let (count, estimated) = match server.exact_key_count(stats.last_seqno, now) {
        Some(count) => (count, false),
        None => {
            let mut count = KeyCount::at(stats.last_seqno);
            count.keys = server.db.approximate_rank(USER_KEYS_END);
            (count, true)
        }
    };
    if count.keys == 0 {
        return Vec::new();
    }
    let mark = if estimated { ",keys_estimated=1" } else { "" };
    vec![(
        "db0",
        format!(
            "keys={},expires={},avg_ttl={}{mark}",
            count.keys,
            count.expires,
            count.avg_ttl_ms(now)
        ),
    )]
}

fn augur_fields(stats: &augur::Stats) -> Fields {
    let mut f: Fields = vec![
        ("compaction_style", stats.compaction_style.name().into()),
        ("writes", stats.writes.to_string()),
        ("gets", stats.gets.to_string()),
        ("flushes", stats.flushes.to_string()),
        ("compactions", stats.compactions.to_string()),
        ("write_stalls", stats.write_stalls.to_string()),
        ("value_log_segments", stats.value_log.len().to_string()),
        ("models_built", stats.models_built.to_string()),
        ("model_path_lookups", stats.model_path_lookups.to_string()),
        (
            "baseline_path_lookups",
            stats.baseline_path_lookups.to_string(),
        ),
        (
            "model_bytes",
            stats
                .levels
                .iter()
                .map(|l| l.model_bytes)
                .sum::<u64>()
                .to_string(),
        ),
    ];
    let total = stats.model_path_lookups + stats.baseline_path_lookups;
    if total > 0 {
        f.push((
            "learned_lookup_share",
            format!("{:.3}", stats.model_path_lookups as f64 / total as f64),
        ));
    }
    for l in stats.levels.iter().filter(|l| l.files > 0) {
        let name: &'static str = LEVEL_NAMES.get(l.level).copied().unwrap_or("level_more");
        f.push((
            name,
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

const LEVEL_NAMES: [&str; 16] = [
    "level_0", "level_1", "level_2", "level_3", "level_4", "level_5", "level_6", "level_7",
    "level_8", "level_9", "level_10", "level_11", "level_12", "level_13", "level_14", "level_15",
];
