//! The settings `CONFIG SET` changes while the server runs (`commands/config.rs`): the
//! password, `maxclients`, the idle-client `timeout`, `appendfsync` (the sync policy), the
//! slow log's two thresholds, the client output buffer limits (Pub/Sub enforces its
//! class's: `pubsub.rs`), and what a replica tells Sentinel ([`ReplicaAnnounce`]: its
//! priority and the address it announces). Everything else in [`Config`] is fixed at start.
//!
//! Each setting is read where it acts, on every use, so a change applies at once: the
//! accept loop reads `maxclients` for each new connection, a write reads the sync policy
//! when it commits (a batch of writes that began under one policy may finish under the
//! other), a command reads the slow-log threshold once it has run, and a session waiting
//! for its client's next request reads the `timeout` when it starts waiting and again when
//! woken (`CONFIG SET timeout` wakes every session: `state::Server::wake_clients`). The password is checked when a client authenticates; a client that is
//! authenticated stays so when it changes, as in Redis.
//!
//! The engine's options are not here: the engine fixes them when the database opens
//! (`augur::Db::open`; nothing in its API changes one afterwards), so `CONFIG SET` refuses
//! them as immutable.

use crate::config::{Config, SyncPolicy};
use parking_lot::{Mutex, RwLock};
use std::sync::atomic::{AtomicI64, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Redis's default `slowlog-log-slower-than` (microseconds).
pub const SLOWLOG_SLOWER_THAN_US: i64 = 10_000;

/// Redis's default `slowlog-max-len`.
pub const SLOWLOG_MAX_LEN: usize = 128;

/// The run-time settings (see the module doc). Each is an atomic or behind its own lock,
/// taken alone.
pub struct Settings {
    /// The default user's password (`None`: no password, every client may run commands).
    password: RwLock<Option<Arc<str>>>,
    /// Most clients connected at once.
    maxclients: AtomicUsize,
    /// Seconds a client may stay idle (0: never disconnected).
    idle_timeout_secs: AtomicU64,
    /// The sync policy, as [`sync_code`].
    sync: AtomicU8,
    /// Commands that ran at least this long (µs) enter the slow log (negative: none).
    slowlog_slower_than_us: AtomicI64,
    /// Entries the slow log keeps.
    slowlog_max_len: AtomicUsize,
    /// `client-output-buffer-limit`, by class ([`ClientClass`] order).
    output_limits: RwLock<[OutputLimit; 3]>,
    /// What a replica announces to Sentinel.
    replica: Mutex<ReplicaAnnounce>,
}

/// A class of clients of `client-output-buffer-limit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientClass {
    /// Normal clients (Redis's default: no limit).
    Normal = 0,
    /// Replicas (`slave` / `replica`).
    Replica = 1,
    /// Clients subscribed to a channel or a pattern.
    PubSub = 2,
}

impl ClientClass {
    /// The classes in Redis's order, with the names `CONFIG GET` prints.
    pub const ALL: [(ClientClass, &'static str); 3] = [
        (ClientClass::Normal, "normal"),
        (ClientClass::Replica, "slave"),
        (ClientClass::PubSub, "pubsub"),
    ];
}

/// One class's output buffer limit (Redis's `client-output-buffer-limit <class> <hard>
/// <soft> <soft seconds>`): a client whose pending output reaches `hard_bytes` is
/// disconnected, and so is one that stays at or above `soft_bytes` for more than
/// `soft_secs` seconds. 0 turns a limit off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OutputLimit {
    /// The hard limit (bytes; 0: none).
    pub hard_bytes: u64,
    /// The soft limit (bytes; 0: none).
    pub soft_bytes: u64,
    /// How long the soft limit may be exceeded (seconds).
    pub soft_secs: u64,
}

/// Redis's defaults: normal clients unlimited, replicas 256 MiB / 64 MiB for 60 s, Pub/Sub
/// clients 32 MiB / 8 MiB for 60 s.
pub const DEFAULT_OUTPUT_LIMITS: [OutputLimit; 3] = [
    OutputLimit {
        hard_bytes: 0,
        soft_bytes: 0,
        soft_secs: 0,
    },
    OutputLimit {
        hard_bytes: 256 << 20,
        soft_bytes: 64 << 20,
        soft_secs: 60,
    },
    OutputLimit {
        hard_bytes: 32 << 20,
        soft_bytes: 8 << 20,
        soft_secs: 60,
    },
];

/// What this server, as a replica, tells Redis Sentinel about itself (Redis's
/// `replica-priority`, `replica-announce-ip`, `replica-announce-port`,
/// `replica-announced`); for the replication code's `INFO replication` lines
/// (`slave_priority`, `slave_announced`) and its `REPLCONF listening-port / ip-address`.
/// Set from the flags or the `--config` file at start and by `CONFIG SET`; written back by
/// `CONFIG REWRITE`. Nothing here acts while the server is a master.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicaAnnounce {
    /// Sentinel promotes the replica with the lowest priority first; 0: never promoted
    /// (`replica-priority`, alias `slave-priority`; Redis's default 100).
    pub priority: u32,
    /// The IP address to announce instead of the connection's (`replica-announce-ip`;
    /// `None`: the connection's).
    pub ip: Option<String>,
    /// The port to announce instead of the listening one (`replica-announce-port`; 0: the
    /// listening port).
    pub port: u16,
    /// Whether Sentinel lists this replica (`replica-announced`; `SENTINEL REPLICAS`).
    pub announced: bool,
}

impl Default for ReplicaAnnounce {
    fn default() -> Self {
        ReplicaAnnounce {
            priority: 100,
            ip: None,
            port: 0,
            announced: true,
        }
    }
}

fn sync_code(policy: SyncPolicy) -> u8 {
    match policy {
        SyncPolicy::Always => 0,
        SyncPolicy::Everysec => 1,
        SyncPolicy::No => 2,
    }
}

impl Settings {
    /// The settings as `config` starts them.
    pub fn new(config: &Config) -> Settings {
        Settings {
            password: RwLock::new(config.password.as_deref().map(Arc::from)),
            maxclients: AtomicUsize::new(config.maxclients),
            idle_timeout_secs: AtomicU64::new(config.idle_timeout.map_or(0, |t| t.as_secs())),
            sync: AtomicU8::new(sync_code(config.sync)),
            slowlog_slower_than_us: AtomicI64::new(config.slowlog_log_slower_than),
            slowlog_max_len: AtomicUsize::new(config.slowlog_max_len),
            output_limits: RwLock::new(config.output_limits),
            replica: Mutex::new(config.replica.clone()),
        }
    }

    /// The output buffer limit of `class`.
    pub fn output_limit(&self, class: ClientClass) -> OutputLimit {
        self.output_limits.read()[class as usize]
    }

    /// Every class's output buffer limit ([`ClientClass::ALL`] order).
    pub fn output_limits(&self) -> [OutputLimit; 3] {
        *self.output_limits.read()
    }

    /// Sets the output buffer limit of `class` (applies from the next message delivered).
    pub fn set_output_limit(&self, class: ClientClass, limit: OutputLimit) {
        self.output_limits.write()[class as usize] = limit;
    }

    /// What a replica announces to Sentinel (see [`ReplicaAnnounce`]).
    pub fn replica_announce(&self) -> ReplicaAnnounce {
        self.replica.lock().clone()
    }

    /// Changes what a replica announces (`CONFIG SET replica-*`).
    pub fn update_replica_announce(&self, change: impl FnOnce(&mut ReplicaAnnounce)) {
        change(&mut self.replica.lock());
    }

    /// The password clients must give (`None`: none).
    pub fn password(&self) -> Option<Arc<str>> {
        self.password.read().clone()
    }

    /// Whether a client must authenticate before it runs commands.
    pub fn password_required(&self) -> bool {
        self.password.read().is_some()
    }

    /// Sets the password (`None` or empty: none, as Redis's `requirepass ""`).
    pub fn set_password(&self, password: Option<&str>) {
        *self.password.write() = password.filter(|p| !p.is_empty()).map(Arc::from);
    }

    /// Most clients connected at once.
    pub fn maxclients(&self) -> usize {
        self.maxclients.load(Ordering::Relaxed)
    }

    /// Sets `maxclients` (clients already connected beyond it stay).
    pub fn set_maxclients(&self, n: usize) {
        self.maxclients.store(n, Ordering::Relaxed);
    }

    /// How long a client may stay idle (`None`: forever).
    pub fn idle_timeout(&self) -> Option<Duration> {
        match self.idle_timeout_secs.load(Ordering::Relaxed) {
            0 => None,
            s => Some(Duration::from_secs(s)),
        }
    }

    /// Sets the idle timeout in seconds (0: none). Sessions already waiting take it up
    /// when woken (the caller wakes them: `state::Server::wake_clients`).
    pub fn set_idle_timeout_secs(&self, secs: u64) {
        self.idle_timeout_secs.store(secs, Ordering::Relaxed);
    }

    /// The sync policy.
    pub fn sync(&self) -> SyncPolicy {
        match self.sync.load(Ordering::Relaxed) {
            0 => SyncPolicy::Always,
            1 => SyncPolicy::Everysec,
            _ => SyncPolicy::No,
        }
    }

    /// Switches the sync policy. Safe at any time: a write is synced (or not) as the
    /// policy says when it commits, and the once-a-second task syncs what writes left
    /// unsynced whenever the policy is `everysec` (so switching from `no` to `everysec`
    /// syncs the writes made meanwhile within a second, and switching to `always` makes
    /// the next write's sync cover every earlier one: it syncs the whole log).
    pub fn set_sync(&self, policy: SyncPolicy) {
        self.sync.store(sync_code(policy), Ordering::Relaxed);
    }

    /// The slow-log threshold in microseconds (negative: the log is off).
    pub fn slowlog_slower_than_us(&self) -> i64 {
        self.slowlog_slower_than_us.load(Ordering::Relaxed)
    }

    /// Sets the slow-log threshold.
    pub fn set_slowlog_slower_than_us(&self, us: i64) {
        self.slowlog_slower_than_us.store(us, Ordering::Relaxed);
    }

    /// Entries the slow log keeps.
    pub fn slowlog_max_len(&self) -> usize {
        self.slowlog_max_len.load(Ordering::Relaxed)
    }

    /// Sets the slow log's length (the oldest entries beyond it go at the next entry).
    pub fn set_slowlog_max_len(&self, n: usize) {
        self.slowlog_max_len.store(n, Ordering::Relaxed);
    }
}

/// A memory amount as Redis's `memtoll` reads one (`0`, `100mb`, `1gb`, `1k` = 1000): bytes,
/// or `None`.
pub fn memory_bytes(value: &[u8]) -> Option<u64> {
    let text = std::str::from_utf8(value).ok()?.to_ascii_lowercase();
    let digits = text.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let unit = match &text[digits.len()..] {
        "" | "b" => 1,
        "k" => 1000,
        "kb" => 1024,
        "m" => 1_000_000,
        "mb" => 1 << 20,
        "g" => 1_000_000_000,
        "gb" => 1 << 30,
        _ => return None,
    };
    digits.parse::<u64>().ok()?.checked_mul(unit)
}

/// Parses `client-output-buffer-limit`'s value as Redis does: groups of `<class> <hard>
/// <soft> <soft seconds>` (classes `normal`, `replica` or `slave`, `pubsub`, any case;
/// amounts as [`memory_bytes`]); an empty value is no group.
///
/// # Errors
/// Redis's text for the first problem (the caller prefixes `CONFIG SET failed …`).
pub fn parse_output_limits(value: &str) -> Result<Vec<(ClientClass, OutputLimit)>, &'static str> {
    let words: Vec<&str> = value.split_ascii_whitespace().collect();
    if !words.len().is_multiple_of(4) {
        return Err("Wrong number of arguments in buffer limit configuration.");
    }
    words
        .chunks(4)
        .map(|group| {
            let class = match group[0].to_ascii_lowercase().as_str() {
                "normal" => ClientClass::Normal,
                "slave" | "replica" => ClientClass::Replica,
                "pubsub" => ClientClass::PubSub,
                _ => return Err("Invalid client class specified in buffer limit configuration."),
            };
            let bad = "Error in hard, soft or soft_seconds setting in buffer limit configuration.";
            let hard_bytes = memory_bytes(group[1].as_bytes()).ok_or(bad)?;
            let soft_bytes = memory_bytes(group[2].as_bytes()).ok_or(bad)?;
            let soft_secs = group[3].parse::<u64>().map_err(|_| bad)?;
            Ok((
                class,
                OutputLimit {
                    hard_bytes,
                    soft_bytes,
                    soft_secs,
                },
            ))
        })
        .collect()
}

/// `client-output-buffer-limit`'s value as `CONFIG GET` prints it (bytes, every class).
pub fn format_output_limits(limits: &[OutputLimit; 3]) -> String {
    ClientClass::ALL
        .iter()
        .map(|(class, name)| {
            let l = limits[*class as usize];
            format!("{name} {} {} {}", l.hard_bytes, l.soft_bytes, l.soft_secs)
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_limits_parse_as_redis() {
        let parsed = parse_output_limits("PUBSUB 1K 2mb 1 replica 4 5 6").unwrap();
        assert_eq!(parsed.len(), 2);
        assert_eq!(parsed[0].0, ClientClass::PubSub);
        assert_eq!(
            parsed[0].1,
            OutputLimit {
                hard_bytes: 1000,
                soft_bytes: 2 << 20,
                soft_secs: 1
            }
        );
        assert!(parse_output_limits("").unwrap().is_empty());
        assert!(parse_output_limits("pubsub 1 2").is_err());
        assert!(parse_output_limits("master 1 2 3").is_err());
        assert!(parse_output_limits("pubsub 1 2 -1").is_err());
        assert_eq!(
            format_output_limits(&DEFAULT_OUTPUT_LIMITS),
            "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60"
        );
    }
}
