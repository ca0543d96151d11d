//! What every connection shares: the database, the configuration, the connected clients (for
//! `CLIENT LIST` and `maxclients`), the counters `INFO` reports, the key locks that make
//! read-modify-write commands and transactions atomic, and the `SCAN` cursors (`cursor.rs`).

use crate::config::Config;
use crate::cursor::Cursors;
use augur::Db;
use parking_lot::{Mutex, MutexGuard};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU16, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// Stripes of the key locks: a key's lock is the stripe its hash picks.
const KEY_LOCK_STRIPES: usize = 1024;

/// The shared state of a running server.
pub struct Server {
    /// The database.
    pub db: Db,
    /// The configuration.
    pub config: Config,
    /// When the server started.
    pub started: Instant,
    /// The clients connected now, by id.
    pub clients: Mutex<HashMap<u64, Arc<ClientInfo>>>,
    next_client_id: AtomicU64,
    /// Counters for `INFO stats`.
    pub counters: Counters,
    /// Key-lock stripes, always locked in stripe order (`lock_keys`, `lock_all_keys`).
    key_locks: Vec<Mutex<()>>,
    /// The `SCAN` cursors issued (its own lock, never held with another).
    pub cursors: Cursors,
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

/// An exact number of keys at a sequence number.
#[derive(Debug, Clone, Copy)]
struct KeyCount {
    seqno: u64,
    keys: u64,
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
}

impl Counters {
    /// Adds `n` to counter `c`.
    pub fn add(c: &AtomicU64, n: u64) {
        c.fetch_add(n, Ordering::Relaxed);
    }
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
    /// Milliseconds since `connected` of its last command.
    pub last_command_ms: AtomicU64,
    /// The name of its last command.
    pub last_command: Mutex<String>,
    /// Bytes waiting in its input buffer.
    pub query_buffer: AtomicUsize,
    /// Its protocol version (2 or 3, `HELLO`).
    pub resp: AtomicU8,
}

impl ClientInfo {
    /// The `CLIENT LIST` line of this client.
    pub fn list_line(&self) -> String {
        let age = self.connected.elapsed();
        let idle = age
            .as_millis()
            .saturating_sub(u128::from(self.last_command_ms.load(Ordering::Relaxed)));
        format!(
            "id={} addr={} laddr={} fd=-1 name={} age={} idle={} flags=N db=0 sub=0 psub=0 \
             ssub=0 multi=-1 qbuf={} qbuf-free=0 argv-mem=0 multi-mem=0 obl=0 oll=0 omem=0 \
             tot-mem=0 events=r cmd={} user=default redir=-1 resp={}\n",
            self.id,
            self.addr,
            self.local_addr,
            String::from_utf8_lossy(&self.name.lock()),
            age.as_secs(),
            idle / 1000,
            self.query_buffer.load(Ordering::Relaxed),
            self.last_command.lock(),
            self.resp.load(Ordering::Relaxed),
        )
    }
}

impl Server {
    /// The state of a server over `db` configured by `config`.
    pub fn new(db: Db, config: Config) -> Server {
        Server {
            db,
            config,
            started: Instant::now(),
            clients: Mutex::new(HashMap::new()),
            next_client_id: AtomicU64::new(1),
            counters: Counters::default(),
            key_locks: (0..KEY_LOCK_STRIPES).map(|_| Mutex::new(())).collect(),
            cursors: Cursors::new(),
            last_save: AtomicU64::new(unix_seconds()),
            bgsave_running: AtomicBool::new(false),
            dirty: AtomicBool::new(false),
            port: AtomicU16::new(0),
            key_count: Mutex::new(None),
            run_id: random_hex_id(),
        }
    }

    /// Records that the database held exactly `keys` keys at sequence number `seqno`.
    pub fn note_key_count(&self, seqno: u64, keys: u64) {
        *self.key_count.lock() = Some(KeyCount { seqno, keys });
    }

    /// The exact number of keys, when the last count was taken at `seqno` (the current
    /// one: no write since).
    pub fn exact_key_count(&self, seqno: u64) -> Option<u64> {
        let count = (*self.key_count.lock())?;
        (count.seqno == seqno).then_some(count.keys)
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
}

fn stripe_of(key: &[u8]) -> usize {
    // FNV-1a: cheap, and spreads keys with shared prefixes.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in key {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    (h % KEY_LOCK_STRIPES as u64) as usize
}

/// 40 hex digits that differ between processes (Redis's run ids), from the standard
/// library's randomly keyed hasher: no dependency for an identifier that needs no
/// cryptographic strength.
fn random_hex_id() -> String {
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
