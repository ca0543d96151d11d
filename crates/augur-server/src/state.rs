//! What every connection shares: the database, the configuration (fixed at start) and the
//! settings `CONFIG SET` changes (`settings.rs`), the connected clients (for `CLIENT LIST`,
//! `CLIENT KILL` and `maxclients`), `CLIENT PAUSE` (`pause.rs`), the counters and statistics
//! `INFO` reports (`stats.rs`) and the slow log (`slowlog.rs`), Pub/Sub's channels and
//! patterns (`pubsub.rs`), the key locks that make
//! read-modify-write commands and transactions atomic, the versions of watched keys
//! (`WATCH`), and the `SCAN` cursors (`cursor.rs`).
//!
//! Every lock here is taken alone (none is held while another is taken), except the key
//! locks, which a command holds while it runs and may take the others' under them.

use crate::config::Config;
use crate::cursor::Cursors;
use crate::encoding::filter::HashFieldFilter;
use crate::encoding::layout::{self, Migrated, Versions};
use crate::pause::Pause;
use crate::pubsub::{Mailbox, PubSub};
use crate::replication::Replication;
use crate::settings::Settings;
use crate::slowlog::SlowLog;
use crate::stats::{CommandStats, Rates, RecentMax};
use arc_swap::{ArcSwap, ArcSwapOption};
use augur::Db;
use parking_lot::{Mutex, MutexGuard};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU16, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};
use tokio::sync::Notify;

/// Stripes of the key locks: a key's lock is the stripe its hash picks.
const KEY_LOCK_STRIPES: usize = 1024;

/// Shards of the watched keys' map (`Watches`).
const WATCH_SHARDS: usize = 64;

/// The database a server serves, swappable: a replica's full sync replaces it whole
/// (`replication::replica`). Readers take a guard for one command ([`DbSlot::get`]); the
/// slot is empty only while a swap closes the old database and opens the new one, and a
/// command then gets `LOADING` (Redis's reply while it loads a dataset).
pub struct DbSlot {
    slot: ArcSwapOption<Db>,
}

/// One command's hold of the database (an `arc-swap` guard: no shared reference count).
pub struct DbRef(arc_swap::Guard<Option<Arc<Db>>>);

impl std::ops::Deref for DbRef {
    type Target = Db;

    fn deref(&self) -> &Db {
        match self.0.as_deref() {
            Some(db) => db,
            // A `DbRef` is only made from a filled slot (`DbSlot::get`).
            None => unreachable!("a DbRef holds a database"),
        }
    }
}

impl DbSlot {
    /// A slot holding `db`.
    pub fn new(db: Db) -> DbSlot {
        DbSlot {
            slot: ArcSwapOption::from_pointee(db),
        }
    }

    /// The database now.
    ///
    /// # Errors
    /// `Closed` while a swap is in progress (the reply is `LOADING`).
    pub fn get(&self) -> Result<DbRef, augur::Error> {
        let guard = self.slot.load();
        if guard.is_none() {
            return Err(augur::Error::Closed);
        }
        Ok(DbRef(guard))
    }

    /// Empties the slot, returning the database it held.
    pub fn take(&self) -> Option<Arc<Db>> {
        self.slot.swap(None)
    }

    /// Fills the slot with `db`.
    pub fn put(&self, db: Db) {
        self.slot.store(Some(Arc::new(db)));
    }

    /// Puts back a database [`DbSlot::take`] took.
    pub fn restore(&self, db: Arc<Db>) {
        self.slot.store(Some(db));
    }
}

/// The shared state of a running server.
pub struct Server {
    /// The database (swapped whole by a replica's full sync).
    pub db_slot: DbSlot,
    /// Issues the versions of new hashes (`encoding::layout`); replaced with the database,
    /// and when a replica is promoted.
    pub hash_versions: ArcSwap<Versions>,
    /// Replication: the role, the backlog, the replicas or the link to the primary.
    pub repl: Arc<Replication>,
    /// The configuration at start.
    pub config: Config,
    /// The settings `CONFIG SET` changes (which win over `config`'s).
    pub settings: Settings,
    /// When the server started.
    pub started: Instant,
    /// The clients connected now, by id.
    pub clients: Mutex<HashMap<u64, Arc<ClientInfo>>>,
    next_client_id: AtomicU64,
    /// Counters for `INFO stats`.
    pub counters: Counters,
    /// Per-command and per-error counts (`INFO commandstats`, `INFO errorstats`).
    pub command_stats: CommandStats,
    /// The instantaneous rates (`INFO stats`), sampled by the server's sampler task.
    pub rates: Rates,
    /// The largest client buffers of the last seconds (`INFO clients`).
    pub recent: RecentMax,
    /// The slow log.
    pub slowlog: SlowLog,
    /// Pub/Sub's channels and patterns and their subscribers.
    pub pubsub: PubSub,
    /// `CLIENT PAUSE`.
    pub pause: Pause,
    /// SAVE and BGSAVE statistics (`INFO persistence`; its own lock, taken alone).
    pub saves: Mutex<SaveStats>,
    /// Key-lock stripes, always locked in stripe order (`lock_keys`, `lock_all_keys`).
    key_locks: Vec<Mutex<()>>,
    /// The `SCAN` cursors issued (its own lock, never held with another).
    pub cursors: Cursors,
    /// The versions of the keys some client watches (`WATCH`).
    pub watches: Watches,
    /// Unix time of the last successful SAVE (or of the start).
    pub last_save: AtomicU64,
    /// A BGSAVE is running.
    pub bgsave_running: AtomicBool,
    /// Writes since the last sync (for `--sync everysec`).
    pub dirty: AtomicBool,
    /// The port the server listens on (known once bound).
    port: AtomicU16,
    /// The last exact key count (`DBSIZE`) and the sequence number it holds at: `INFO
    /// keyspace` reports it as exact while no write has come since.
    key_count: Mutex<Option<KeyCount>>,
    /// Redis's `run_id` and `master_replid`: 40 random hex digits per process.
    pub run_id: String,
}

/// An exact number of keys at a sequence number (`DBSIZE`'s count), with what `INFO
/// keyspace` says of their expiry times. It stays exact while no write comes and none of the
/// keys it counted expires.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KeyCount {
    /// The sequence number the count holds at.
    pub seqno: u64,
    /// Keys.
    pub keys: u64,
    /// Keys with an expiry time (`expires=`).
    pub expires: u64,
    /// The earliest of their expiry times (`u64::MAX` when none has one): the count is
    /// exact until then.
    pub earliest_expiry: u64,
    /// The sum of their expiry times (for `avg_ttl=`).
    pub expiry_sum: u128,
}

impl KeyCount {
    /// Counts one more key, expiring at `expire_at`.
    pub fn add(&mut self, expire_at: Option<u64>) {
        self.keys += 1;
        if let Some(at) = expire_at {
            self.expires += 1;
            self.earliest_expiry = self.earliest_expiry.min(at);
            self.expiry_sum += u128::from(at);
        }
    }

    /// An empty count at `seqno`.
    pub fn at(seqno: u64) -> KeyCount {
        KeyCount {
            seqno,
            earliest_expiry: u64::MAX,
            ..KeyCount::default()
        }
    }

    /// The average time to live of the keys with one at `now_ms` (ms; 0 without any), as
    /// Redis's `avg_ttl`.
    pub fn avg_ttl_ms(&self, now_ms: u64) -> u64 {
        if self.expires == 0 {
            return 0;
        }
        let mean = self.expiry_sum / u128::from(self.expires);
        u64::try_from(mean.saturating_sub(u128::from(now_ms))).unwrap_or(u64::MAX)
    }
}

/// What `INFO persistence` says of SAVE and BGSAVE.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SaveStats {
    /// `Counters::key_writes` when the last save began: `rdb_changes_since_last_save` is
    /// the count now less this.
    pub writes_at_save: u64,
    /// Saves that succeeded (`rdb_saves`).
    pub saves: u64,
    /// The last BGSAVE succeeded (or none ran).
    pub last_bgsave_ok: bool,
    /// Seconds the last BGSAVE took (-1: none ran).
    pub last_bgsave_secs: i64,
    /// When the running BGSAVE began.
    pub bgsave_started: Option<Instant>,
}

impl Default for SaveStats {
    fn default() -> Self {
        SaveStats {
            writes_at_save: 0,
            saves: 0,
            last_bgsave_ok: true,
            last_bgsave_secs: -1,
            bgsave_started: None,
        }
    }
}

/// Counters reported by `INFO stats`.
#[derive(Default)]
pub struct Counters {
    /// Connections accepted.
    pub connections: AtomicU64,
    /// Connections refused at `maxclients`.
    pub rejected_connections: AtomicU64,
    /// Commands executed.
    pub commands: AtomicU64,
    /// Reads that found their key.
    pub hits: AtomicU64,
    /// Reads that did not.
    pub misses: AtomicU64,
    /// Bytes read from clients.
    pub input_bytes: AtomicU64,
    /// Bytes written to clients.
    pub output_bytes: AtomicU64,
    /// Connections closed for a protocol error or an oversized request.
    pub protocol_errors: AtomicU64,
    /// Writes that could not go through without waiting for room (a stall or a memtable
    /// switch) and moved off the I/O thread.
    pub write_waits: AtomicU64,
    /// Keys written or deleted by commands (each key of a committed write once), for
    /// `rdb_changes_since_last_save`; not reset by `CONFIG RESETSTAT` (Redis's `dirty`
    /// is not either).
    pub key_writes: AtomicU64,
    /// The engine's count of expired values (`augur::Stats::expired_values`) at the last
    /// `CONFIG RESETSTAT`: `expired_keys` is the count now less this.
    pub expired_base: AtomicU64,
}

impl Counters {
    /// Adds `n` to counter `c`.
    pub fn add(c: &AtomicU64, n: u64) {
        c.fetch_add(n, Ordering::Relaxed);
    }

    /// Zeroes the counters (`CONFIG RESETSTAT`); `expired_values` is the engine's count
    /// now, from which `expired_keys` counts again.
    pub fn reset(&self, expired_values: u64) {
        for c in [
            &self.connections,
            &self.rejected_connections,
            &self.commands,
            &self.hits,
            &self.misses,
            &self.input_bytes,
            &self.output_bytes,
            &self.protocol_errors,
            &self.write_waits,
        ] {
            c.store(0, Ordering::Relaxed);
        }
        self.expired_base.store(expired_values, Ordering::Relaxed);
    }
}

/// A client's last command (`NULL` before the first) and when it began.
#[derive(Debug, Clone, Copy)]
pub struct LastCommand {
    /// The command's name.
    pub name: &'static str,
    /// When it began.
    pub at: Instant,
}

/// What `CLIENT LIST` shows of a connection.
pub struct ClientInfo {
    /// The connection's id (`CLIENT ID`).
    pub id: u64,
    /// The client's address.
    pub addr: SocketAddr,
    /// The server's address of the connection.
    pub local_addr: SocketAddr,
    /// When it connected.
    pub connected: Instant,
    /// `CLIENT SETNAME`.
    pub name: Mutex<Vec<u8>>,
    /// Its last command and when it began (`CLIENT LIST`'s `cmd` and `idle`).
    pub last_command: Mutex<LastCommand>,
    /// Bytes waiting in its input buffer.
    pub query_buffer: AtomicUsize,
    /// Its protocol version (2 or 3, `HELLO`).
    pub resp: AtomicU8,
    /// Channels it subscribes to (`CLIENT LIST`'s `sub`).
    pub sub_channels: AtomicUsize,
    /// Patterns it subscribes to (`CLIENT LIST`'s `psub`).
    pub sub_patterns: AtomicUsize,
    /// Pub/Sub messages for it not yet written to its socket.
    pub mailbox: Mailbox,
    /// `CLIENT KILL` closed it: its session stops at once, whatever it waits for.
    killed: AtomicBool,
    /// Wakes its session wherever it waits (a read, a write, a pause): for a kill, the
    /// server's shutdown, or a new idle timeout. The session's one waiter, so a wake-up
    /// costs a waiting session one registration, and a wake-up sent while it runs is kept
    /// (`notify_one`'s permit) for its next wait.
    wake: Notify,
}

impl ClientInfo {
    /// A client that connected now from `addr` to the server's `local_addr`.
    pub fn new(id: u64, addr: SocketAddr, local_addr: SocketAddr) -> ClientInfo {
        ClientInfo {
            id,
            addr,
            local_addr,
            connected: Instant::now(),
            name: Mutex::new(Vec::new()),
            last_command: Mutex::new(LastCommand {
                name: "NULL",
                at: Instant::now(),
            }),
            query_buffer: AtomicUsize::new(0),
            resp: AtomicU8::new(2),
            sub_channels: AtomicUsize::new(0),
            sub_patterns: AtomicUsize::new(0),
            mailbox: Mailbox::default(),
            killed: AtomicBool::new(false),
            wake: Notify::new(),
        }
    }

    /// Marks the client killed and wakes its session, which closes the connection.
    pub fn kill(&self) {
        self.killed.store(true, Ordering::Release);
        self.wake.notify_one();
    }

    /// Wakes the client's session, which looks again at what it waits for.
    pub fn wake(&self) {
        self.wake.notify_one();
    }

    /// Resolves when the session is woken ([`ClientInfo::kill`], [`ClientInfo::wake`]), at
    /// once when a wake-up came since the last one was taken.
    pub async fn woken(&self) {
        self.wake.notified().await;
    }

    /// Whether the client was killed.
    pub fn is_killed(&self) -> bool {
        self.killed.load(Ordering::Acquire)
    }

    /// Whether it subscribes to a channel or a pattern (Redis's Pub/Sub client type: `CLIENT
    /// KILL TYPE pubsub`, `flags=P`).
    pub fn is_pubsub(&self) -> bool {
        self.sub_channels.load(Ordering::Relaxed) + self.sub_patterns.load(Ordering::Relaxed) > 0
    }

    /// The `CLIENT LIST` line of this client.
    pub fn list_line(&self) -> String {
        let age = self.connected.elapsed();
        let last = *self.last_command.lock();
        format!(
            "id={} addr={} laddr={} fd=-1 name={} age={} idle={} flags={} db=0 sub={} psub={} \
             ssub=0 multi=-1 qbuf={} qbuf-free=0 argv-mem=0 multi-mem=0 obl=0 oll=0 omem={} \
             tot-mem=0 events=r cmd={} user=default redir=-1 resp={}\n",
            self.id,
            self.addr,
            self.local_addr,
            String::from_utf8_lossy(&self.name.lock()),
            age.as_secs(),
            last.at.elapsed().as_secs(),
            if self.is_pubsub() { "P" } else { "N" },
            self.sub_channels.load(Ordering::Relaxed),
            self.sub_patterns.load(Ordering::Relaxed),
            self.query_buffer.load(Ordering::Relaxed),
            self.mailbox.pending_bytes(),
            last.name,
            self.resp.load(Ordering::Relaxed),
        )
    }
}

impl Server {
    /// Opens the database `config` names, with the server's compaction filter (hash
    /// fields, `encoding::filter`), checks its layout and migrates a database written
    /// before hashes existed (`encoding::layout`), and returns the server's state and what
    /// the migration did.
    ///
    /// # Errors
    ///
    /// A message naming the database: the engine failed to open it, or it cannot be served
    /// (a newer server's layout; a read-only open of a database that needs migrating).
    pub fn open(config: Config) -> Result<(Server, Migrated), String> {
        crate::replication::staging::recover(&config.db)?;
        let repl = Replication::new(&config);
        // A primary's first replication id is its run id (a replica's becomes its
        // primary's below).
        let run_id = repl.ids().replid;
        let (db, versions, migrated) = open_db(&config, &config.db, &repl)?;
        repl.restore(&db);
        let mut server = Server::new(db, config, versions);
        server.repl = repl;
        server.run_id = run_id;
        Ok((server, migrated))
    }

    /// The state of a server over `db` (whose layout is checked), configured by `config`,
    /// issuing hash versions from `hash_versions`.
    pub fn new(db: Db, config: Config, hash_versions: Versions) -> Server {
        let repl = Replication::new(&config);
        let run_id = repl.ids().replid;
        Server {
            db_slot: DbSlot::new(db),
            repl,
            settings: Settings::new(&config),
            hash_versions: ArcSwap::from_pointee(hash_versions),
            config,
            started: Instant::now(),
            clients: Mutex::new(HashMap::new()),
            next_client_id: AtomicU64::new(1),
            counters: Counters::default(),
            command_stats: CommandStats::new(crate::commands::COMMANDS.len()),
            rates: Rates::default(),
            recent: RecentMax::default(),
            slowlog: SlowLog::default(),
            pubsub: PubSub::default(),
            pause: Pause::new(),
            saves: Mutex::new(SaveStats::default()),
            key_locks: (0..KEY_LOCK_STRIPES).map(|_| Mutex::new(())).collect(),
            cursors: Cursors::new(),
            watches: Watches::new(),
            last_save: AtomicU64::new(unix_seconds()),
            bgsave_running: AtomicBool::new(false),
            dirty: AtomicBool::new(false),
            port: AtomicU16::new(0),
            key_count: Mutex::new(None),
            run_id,
        }
    }

    /// The database now; see [`DbSlot::get`].
    ///
    /// # Errors
    /// `Closed` while a replica swaps its database.
    pub fn db(&self) -> Result<DbRef, augur::Error> {
        self.db_slot.get()
    }

    /// Now in milliseconds since the Unix epoch, on the database's clock (the system's
    /// while a swap is in progress).
    pub fn now_ms(&self) -> u64 {
        match self.db() {
            Ok(db) => db.now_unix_ms(),
            Err(_) => SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
        }
    }

    /// Forgets what was known of the database's contents (a swapped-in database).
    pub fn forget_key_count(&self) {
        *self.key_count.lock() = None;
    }

    /// Records an exact count of the keys (`DBSIZE`'s).
    pub fn note_key_count(&self, count: KeyCount) {
        *self.key_count.lock() = Some(count);
    }

    /// The last exact count of the keys, when it still holds: taken at `seqno` (the current
    /// one: no write since) and none of its keys has expired at `now_ms`.
    pub fn exact_key_count(&self, seqno: u64, now_ms: u64) -> Option<KeyCount> {
        let count = (*self.key_count.lock())?;
        (count.seqno == seqno && now_ms < count.earliest_expiry).then_some(count)
    }

    /// The port the server listens on.
    pub fn port(&self) -> u16 {
        self.port.load(Ordering::Relaxed)
    }

    /// Records the port the listener got.
    pub fn set_port(&self, port: u16) {
        self.port.store(port, Ordering::Relaxed);
    }

    /// A new client id.
    pub fn new_client_id(&self) -> u64 {
        self.next_client_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Locks the stripes of `keys` (in stripe order, each once) for a read-modify-write or a
    /// write that must not interleave with one. Held while the command runs.
    pub fn lock_keys<'a, K: AsRef<[u8]>>(&'a self, keys: &[K]) -> Vec<MutexGuard<'a, ()>> {
        let mut stripes: Vec<usize> = keys.iter().map(|k| stripe_of(k.as_ref())).collect();
        stripes.sort_unstable();
        stripes.dedup();
        stripes
            .into_iter()
            .filter_map(|s| self.key_locks.get(s).map(Mutex::lock))
            .collect()
    }

    /// Locks every stripe (in stripe order), for a transaction that reads or writes the
    /// whole keyspace (SCAN, KEYS, DBSIZE, FLUSHDB inside MULTI): no other client's write of
    /// any key can land while it runs.
    pub fn lock_all_keys(&self) -> Vec<MutexGuard<'_, ()>> {
        self.key_locks.iter().map(Mutex::lock).collect()
    }

    /// Clients connected now.
    pub fn connected_clients(&self) -> usize {
        self.clients.lock().len()
    }

    /// Wakes every connected client's session (`ClientInfo::wake`): the server is stopping,
    /// or the idle timeout changed.
    pub fn wake_clients(&self) {
        for c in self.clients.lock().values() {
            c.wake();
        }
    }

    /// Kills the clients `select` picks among those connected (`CLIENT KILL`): each leaves
    /// the client list at once and its session closes the connection. Returns the clients
    /// killed.
    pub fn kill_clients(&self, select: impl Fn(&ClientInfo) -> bool) -> Vec<Arc<ClientInfo>> {
        let mut clients = self.clients.lock();
        let ids: Vec<u64> = clients
            .values()
            .filter(|c| select(c))
            .map(|c| c.id)
            .collect();
        let killed: Vec<Arc<ClientInfo>> = ids.iter().filter_map(|id| clients.remove(id)).collect();
        drop(clients);
        for c in &killed {
            c.kill();
            if c.is_pubsub() {
                self.pubsub.remove_client(c.id);
            }
        }
        killed
    }
}

/// Opens the database at `path` as the server serves it: `config`'s engine options, the
/// hash-field compaction filter, the replication commit listener; then checks and, if
/// needed, migrates its layout (`encoding::layout`). A replica's full sync opens the copy
/// it received this way too.
///
/// # Errors
/// A message naming the directory.
pub fn open_db(
    config: &Config,
    path: &std::path::Path,
    repl: &Arc<Replication>,
) -> Result<(Db, Versions, Migrated), String> {
    let mut options = config.engine.options();
    options.create_if_missing = !config.engine.no_create;
    options.compaction_filter = Some(Arc::new(HashFieldFilter));
    options.commit_listener = Some(repl.listener());
    let dir = path.display().to_string();
    let db = Db::open(path, options).map_err(|e| format!("opening {dir}: {e}"))?;
    let (versions, migrated) =
        layout::prepare(&db, config.engine.read_only).map_err(|e| format!("opening {dir}: {e}"))?;
    Ok((db, versions, migrated))
}

fn stripe_of(key: &[u8]) -> usize {
    (fnv1a(key) % KEY_LOCK_STRIPES as u64) as usize
}

/// FNV-1a: cheap, and spreads keys with shared prefixes.
fn fnv1a(key: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in key {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The keys some client watches, each with a version that every write of the key bumps
/// (`WATCH`, `commands/transaction.rs`). Only watched keys are here, each once however many
/// clients watch it, and a key leaves when its last watcher stops watching it (EXEC,
/// DISCARD, UNWATCH, or its connection closing): the map holds no more keys than the
/// clients' watch lists together, each bounded (`Watching`). A write of an unwatched key costs
/// one atomic load while nothing is watched, one shard lookup otherwise.
pub struct Watches {
    shards: Vec<Mutex<HashMap<Vec<u8>, WatchedKey>>>,
    /// Keys in the map (all shards).
    keys: AtomicUsize,
    /// Connections watching at least one key.
    clients: AtomicUsize,
}

/// A watched key's version and how many clients watch it.
#[derive(Debug, Clone, Copy)]
struct WatchedKey {
    watchers: u64,
    version: u64,
}

impl Watches {
    fn new() -> Watches {
        Watches {
            shards: (0..WATCH_SHARDS)
                .map(|_| Mutex::new(HashMap::new()))
                .collect(),
            keys: AtomicUsize::new(0),
            clients: AtomicUsize::new(0),
        }
    }

    /// Counts a connection that starts watching (`INFO clients`' `watching_clients`).
    pub fn client_started(&self) {
        self.clients.fetch_add(1, Ordering::AcqRel);
    }

    /// Counts a connection that stopped watching.
    pub fn client_stopped(&self) {
        self.clients.fetch_sub(1, Ordering::AcqRel);
    }

    /// Connections watching at least one key.
    pub fn clients(&self) -> usize {
        self.clients.load(Ordering::Acquire)
    }

    fn shard(&self, key: &[u8]) -> &Mutex<HashMap<Vec<u8>, WatchedKey>> {
        let i = (fnv1a(key) >> 32) as usize % WATCH_SHARDS;
        &self.shards[i]
    }

    /// Adds a watcher of `key`; returns the key's version now.
    pub fn watch(&self, key: &[u8]) -> u64 {
        let mut shard = self.shard(key).lock();
        let entry = shard.entry(key.to_vec()).or_insert_with(|| {
            self.keys.fetch_add(1, Ordering::AcqRel);
            WatchedKey {
                watchers: 0,
                version: 0,
            }
        });
        entry.watchers += 1;
        entry.version
    }

    /// Removes a watcher of `key` (the key leaves the map with its last watcher).
    pub fn unwatch(&self, key: &[u8]) {
        let mut shard = self.shard(key).lock();
        if let Some(entry) = shard.get_mut(key) {
            entry.watchers = entry.watchers.saturating_sub(1);
            if entry.watchers == 0 {
                shard.remove(key);
                self.keys.fetch_sub(1, Ordering::AcqRel);
            }
        }
    }

    /// The version of a watched `key` (0 for a key nobody watches).
    pub fn version(&self, key: &[u8]) -> u64 {
        self.shard(key).lock().get(key).map_or(0, |e| e.version)
    }

    /// Records a write of `key`: a new version when it is watched.
    pub fn touch(&self, key: &[u8]) {
        if self.keys.load(Ordering::Acquire) == 0 {
            return;
        }
        if let Some(entry) = self.shard(key).lock().get_mut(key) {
            entry.version += 1;
        }
    }

    /// Keys watched now, each once (`INFO clients`' `total_watched_keys`).
    pub fn len(&self) -> usize {
        self.keys.load(Ordering::Acquire)
    }

    /// Whether no key is watched.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// 40 hex digits that differ between processes (Redis's run ids), from the standard
/// library's randomly keyed hasher: no dependency for an identifier that needs no
/// cryptographic strength.
pub fn random_hex_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    let state = std::collections::hash_map::RandomState::new();
    (0u64..3)
        .map(|i| {
            let mut h = state.build_hasher();
            h.write_u64(i);
            h.write_u128(
                SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos()),
            );
            format!("{:016x}", h.finish())
        })
        .collect::<String>()
        .chars()
        .take(40)
        .collect()
}

/// Seconds since the Unix epoch.
pub fn unix_seconds() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
