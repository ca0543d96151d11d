//! The settings `CONFIG SET` changes while the server runs (`commands/config.rs`): the
//! password, `maxclients`, the idle-client `timeout`, `appendfsync` (the sync policy) and the
//! slow log's two thresholds. Everything else in [`Config`] is fixed at start.
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
use parking_lot::RwLock;
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
        }
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
