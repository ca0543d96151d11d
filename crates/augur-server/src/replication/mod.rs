//! Replication (issue 44): a primary streams its committed write groups, in the engine's
//! commit order, to replicas that apply them to their own databases; a new or lagging
//! replica first copies a checkpoint of the primary's database file by file. The wire
//! protocol is in `docs/replication.md`; from a client's and Redis Sentinel's side it is
//! Redis's: `REPLICAOF`/`SLAVEOF`, `ROLE`, `WAIT`, `INFO replication`, `-READONLY`.
//!
//! - `wire.rs`: the stream's bytes (batch frames, control frames, the full sync's files).
//! - `backlog.rs`: the newest window of the stream, with offsets, in memory.
//! - `primary.rs`: serving one replica after its `PSYNC` (full sync, then the stream; its
//!   acks).
//! - `replica.rs`: the link to the primary (handshake, full sync, apply, acks).
//! - `staging.rs`: a full sync's files on disk and the swap of the database directory.
//! - this file: the shared state ([`Replication`]): the role, the replication ids, the
//!   connected replicas, the commit listener that feeds the backlog, the replica's persisted
//!   position, and the `INFO`/`ROLE` views.
//!
//! Offsets: a stream offset counts the bytes of batch frames since the replication id began
//! (Redis's `master_repl_offset`). The backlog's end is this node's offset in both roles: a
//! primary's listener appends the groups it commits; a replica appends each frame it applied,
//! byte for byte, so a promoted replica's offsets continue its primary's and the other
//! replicas can `PSYNC` to it with the old id (`master_replid2`, as Redis's PSYNC2).
//!
//! Lock order: `apply_lock` → the engine's locks → `Backlog`'s lock (the listener runs under
//! the engine's commit lock); `ids`, `role`, `replicas` and `link` are leaves.

pub mod backlog;
pub mod primary;
pub mod replica;
pub mod staging;
pub mod wire;

use crate::config::Config;
use crate::encoding::REPL_STATE_KEY;
use crate::state::{random_hex_id, Server};
use augur::{CommitListener, CommitOp, Db};
use backlog::Backlog;
use parking_lot::{Condvar, Mutex};
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{watch, Notify};

/// Forty zeros: no id (Redis's `master_replid2` before any failover).
pub const NO_REPLID: &str = "0000000000000000000000000000000000000000";

/// The capability a replica announces (`REPLCONF capa augur1`): it speaks this stream.
pub const CAPA: &str = "augur1";

/// Magic of the replica's position record ([`REPL_STATE_KEY`]).
const STATE_MAGIC: &[u8] = b"augur-repl\x01";

/// A replica's position as stored in its database, in the same engine batch as the data it
/// applied: so a restart resumes exactly after the last batch that survived.
pub fn encode_position(replid: &str, offset: u64) -> Vec<u8> {
    let mut v = STATE_MAGIC.to_vec();
    v.extend_from_slice(replid.as_bytes());
    v.extend_from_slice(&offset.to_be_bytes());
    v
}

/// The `(replid, offset)` of a position record; `None` when it is not one.
pub fn decode_position(stored: &[u8]) -> Option<(String, u64)> {
    let rest = stored.strip_prefix(STATE_MAGIC)?;
    if rest.len() != 48 {
        return None;
    }
    let (id, offset) = rest.split_at(40);
    let id = std::str::from_utf8(id).ok()?.to_string();
    let mut o = [0u8; 8];
    o.copy_from_slice(offset);
    Some((id, u64::from_be_bytes(o)))
}

/// This node's part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Role {
    /// Takes writes and serves replicas.
    Primary,
    /// Replicates the primary at `host:port`.
    Replica {
        /// The primary's host.
        host: String,
        /// The primary's port.
        port: u16,
    },
}

/// The replication ids (Redis's PSYNC2 pair).
#[derive(Debug, Clone)]
pub struct Ids {
    /// The id of the history this node's offsets count (its own as a primary, its
    /// primary's as a replica).
    pub replid: String,
    /// The previous id after a promotion (or [`NO_REPLID`]): offsets below
    /// `second_offset` are the same history under it.
    pub replid2: String,
    /// The first offset that is not `replid2`'s (Redis prints it; -1 none).
    pub second_offset: i64,
}

/// Which of Redis's sync counters (`INFO stats`).
#[derive(Debug, Clone, Copy)]
pub enum Sync {
    /// Full syncs served.
    Full,
    /// `PSYNC`s answered `+CONTINUE`.
    PartialOk,
    /// `PSYNC`s that asked to continue and got a full sync.
    PartialErr,
}

/// The states of a replica's link (`ROLE`'s words).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum LinkState {
    /// Waiting to connect (after a failure, a pause of a second).
    Connect = 0,
    /// Connecting.
    Connecting = 1,
    /// `PING`, `REPLCONF`, `PSYNC`.
    Handshake = 2,
    /// Receiving a full sync.
    Sync = 3,
    /// Streaming.
    Connected = 4,
}

impl LinkState {
    fn from_u8(v: u8) -> LinkState {
        match v {
            1 => LinkState::Connecting,
            2 => LinkState::Handshake,
            3 => LinkState::Sync,
            4 => LinkState::Connected,
            _ => LinkState::Connect,
        }
    }

    /// `ROLE`'s word for it.
    pub fn word(self) -> &'static str {
        match self {
            LinkState::Connect => "connect",
            LinkState::Connecting => "connecting",
            LinkState::Handshake => "handshake",
            LinkState::Sync => "sync",
            LinkState::Connected => "connected",
        }
    }
}

/// A replica's side of its link to the primary (for `INFO` and `ROLE`).
#[derive(Default)]
pub struct Link {
    state: AtomicU8,
    /// When bytes last came from the primary.
    last_io: Mutex<Option<Instant>>,
    /// When the link went down (`None`: never up, or up now).
    down_since: Mutex<Option<Instant>>,
    /// The primary's offset as its last heartbeat said (for the lag in bytes).
    pub primary_offset: AtomicU64,
    /// A full sync's bytes expected and received so far.
    pub sync_total_bytes: AtomicU64,
    /// See `sync_total_bytes`.
    pub sync_read_bytes: AtomicU64,
}

impl Link {
    /// The state now.
    pub fn state(&self) -> LinkState {
        LinkState::from_u8(self.state.load(Ordering::Acquire))
    }

    /// Moves to `state` (down-since is kept while not connected).
    pub fn set_state(&self, state: LinkState) {
        let was = self.state.swap(state as u8, Ordering::AcqRel);
        if state == LinkState::Connected {
            *self.down_since.lock() = None;
        } else if was == LinkState::Connected as u8 {
            *self.down_since.lock() = Some(Instant::now());
        }
    }

    /// Notes bytes from the primary.
    pub fn note_io(&self) {
        *self.last_io.lock() = Some(Instant::now());
    }
}

/// A replica connected to this primary.
pub struct ReplicaLink {
    /// Its client id.
    pub id: u64,
    /// Its address.
    pub ip: IpAddr,
    /// The port it listens on (`REPLCONF listening-port`).
    pub port: u16,
    /// 0 `wait_bgsave` (checkpointing), 1 `send_bulk` (files), 2 `online` (streaming).
    pub state: AtomicU8,
    /// The offset it last acknowledged.
    pub ack_offset: AtomicU64,
    /// When it last acknowledged.
    pub last_ack: Mutex<Instant>,
    /// Asks its sender for a `GETACK` now (`WAIT`).
    pub getack: Notify,
}

/// The replication state of a server (see the module doc).
pub struct Replication {
    /// The stream's newest window; its end is this node's offset.
    pub backlog: Backlog,
    ids: Mutex<Ids>,
    role: Mutex<Role>,
    /// The commit listener appends to the backlog: a primary once its first replica
    /// connected (or after a promotion); a replica's applier appends instead.
    accepting: AtomicBool,
    /// Bumped at every change of primary: a replica link of an older generation stops.
    generation: watch::Sender<u64>,
    /// Held while a replica applies a batch or swaps its database, and while the role
    /// changes: no batch is applied after a promotion.
    pub apply_lock: Mutex<()>,
    /// The replicas connected now.
    replicas: Mutex<Vec<Arc<ReplicaLink>>>,
    /// Woken when a replica acknowledges (`WAIT`).
    acks: (Mutex<()>, Condvar),
    /// The replica's link to its primary.
    pub link: Link,
    sync_full: AtomicU64,
    sync_partial_ok: AtomicU64,
    sync_partial_err: AtomicU64,
    /// Writes from clients are refused while a replica.
    read_only: bool,
    /// A replica connected, or this node followed a primary: Redis's backlog is active
    /// from then on (`repl_backlog_active`).
    backlog_used: AtomicBool,
    /// This node knows a history to continue (`PSYNC <replid> <offset+1>`, not `PSYNC ?
    /// -1`): a stored position, a full sync, or its own stream as a primary.
    has_position: AtomicBool,
}

/// The commit listener: appends each committed group to the backlog while this node is a
/// primary (see `augur::CommitListener`).
#[derive(Debug)]
struct Listener(std::sync::Weak<Replication>);

impl CommitListener for Listener {
    fn on_commit(&self, first_seqno: u64, ops: &[CommitOp<'_>]) {
        let Some(repl) = self.0.upgrade() else {
            return;
        };
        if ops.is_empty() || !repl.accepting.load(Ordering::Acquire) {
            return;
        }
        let last = first_seqno + ops.len() as u64 - 1;
        repl.backlog
            .append(wire::encode_batch(first_seqno, ops), Some(last));
    }
}

impl std::fmt::Debug for Replication {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Replication")
            .field("role", &*self.role.lock())
            .finish_non_exhaustive()
    }
}

impl Replication {
    /// The state at start: a primary with a new id, or a replica of `--replicaof`.
    pub fn new(config: &Config) -> Arc<Replication> {
        let role = match &config.replicaof {
            Some((host, port)) => Role::Replica {
                host: host.clone(),
                port: *port,
            },
            None => Role::Primary,
        };
        Arc::new(Replication {
            backlog: Backlog::new(config.repl_backlog_bytes),
            ids: Mutex::new(Ids {
                replid: random_hex_id(),
                replid2: NO_REPLID.to_string(),
                second_offset: -1,
            }),
            role: Mutex::new(role),
            accepting: AtomicBool::new(false),
            generation: watch::channel(0).0,
            apply_lock: Mutex::new(()),
            replicas: Mutex::new(Vec::new()),
            acks: (Mutex::new(()), Condvar::new()),
            link: Link::default(),
            sync_full: AtomicU64::new(0),
            sync_partial_ok: AtomicU64::new(0),
            sync_partial_err: AtomicU64::new(0),
            read_only: config.replica_read_only,
            backlog_used: AtomicBool::new(false),
            has_position: AtomicBool::new(false),
        })
    }

    /// The engine's commit listener for this state.
    pub fn listener(self: &Arc<Self>) -> Arc<dyn CommitListener> {
        Arc::new(Listener(Arc::downgrade(self)))
    }

    /// After the database opened: a replica takes the position it stored (its primary's id
    /// and the offset it applied up to); a primary starts its stream at 0.
    pub fn restore(&self, db: &Db) {
        let seqno = db.snapshot().seqno();
        let stored = db
            .get(REPL_STATE_KEY)
            .ok()
            .flatten()
            .and_then(|v| decode_position(&v));
        match stored {
            Some((replid, offset)) if self.is_replica() => {
                self.ids.lock().replid = replid;
                self.has_position.store(true, Ordering::Relaxed);
                self.backlog.reset(offset, seqno);
            }
            _ => self.backlog.reset(0, seqno),
        }
    }

    /// Whether this node is a replica.
    pub fn is_replica(&self) -> bool {
        matches!(*self.role.lock(), Role::Replica { .. })
    }

    /// The role now.
    pub fn role(&self) -> Role {
        self.role.lock().clone()
    }

    /// The ids now.
    pub fn ids(&self) -> Ids {
        self.ids.lock().clone()
    }

    /// Whether a client's write is refused (`-READONLY`).
    pub fn refuses_writes(&self) -> bool {
        self.read_only && self.is_replica()
    }

    /// Whether this node has a history to continue (see `has_position`).
    pub fn has_position(&self) -> bool {
        self.has_position.load(Ordering::Relaxed)
    }

    /// This node's offset.
    pub fn offset(&self) -> u64 {
        self.backlog.offset()
    }

    /// A sync counter.
    pub fn counter(&self, which: Sync) -> u64 {
        match which {
            Sync::Full => &self.sync_full,
            Sync::PartialOk => &self.sync_partial_ok,
            Sync::PartialErr => &self.sync_partial_err,
        }
        .load(Ordering::Relaxed)
    }

    /// Counts a sync.
    pub fn count(&self, which: Sync) {
        match which {
            Sync::Full => &self.sync_full,
            Sync::PartialOk => &self.sync_partial_ok,
            Sync::PartialErr => &self.sync_partial_err,
        }
        .fetch_add(1, Ordering::Relaxed);
    }

    /// The current generation, and a receiver that sees the next change.
    pub fn generation(&self) -> (u64, watch::Receiver<u64>) {
        let rx = self.generation.subscribe();
        let g = *rx.borrow();
        (g, rx)
    }

    fn bump_generation(&self) -> u64 {
        let mut next = 0;
        self.generation.send_modify(|g| {
            *g += 1;
            next = *g;
        });
        next
    }

    /// Stops the replica link (shutdown): no batch is applied after it returns.
    pub fn stop_link(&self) {
        let _applying = self.apply_lock.lock();
        self.bump_generation();
    }

    /// Registers a replica connected to this primary.
    pub fn add_replica(&self, link: Arc<ReplicaLink>) {
        self.backlog_used.store(true, Ordering::Relaxed);
        // The first replica starts the stream (Redis creates its backlog then): before it
        // a primary encodes nothing. Groups committed before this are in the checkpoint
        // the replica copies: it is taken after, and its flush waits for its turn in the
        // engine's writer queue, behind any group still in flight (`Db::checkpoint`). Their
        // seqnos are all below the first group appended, so the seqno marks stay exact.
        if !self.is_replica() {
            self.accepting.store(true, Ordering::Release);
        }
        self.replicas.lock().push(link);
    }

    /// Forgets a replica whose connection closed.
    pub fn remove_replica(&self, id: u64) {
        self.replicas.lock().retain(|r| r.id != id);
        self.acked();
    }

    /// The replicas connected now.
    pub fn replicas(&self) -> Vec<Arc<ReplicaLink>> {
        self.replicas.lock().clone()
    }

    /// Wakes `WAIT`s: a replica acknowledged (or left).
    pub fn acked(&self) {
        let _g = self.acks.0.lock();
        self.acks.1.notify_all();
    }

    /// `WAIT`: asks every replica to acknowledge now (and again every 100 ms), then waits
    /// until `wanted` of them acknowledged `offset` or `deadline` passes (`None`: forever,
    /// or until the server stops being a primary). Returns how many did. Blocks the calling thread.
    pub fn wait_for_acks(&self, offset: u64, wanted: usize, deadline: Option<Instant>) -> usize {
        let count = || {
            self.replicas
                .lock()
                .iter()
                .filter(|r| r.ack_offset.load(Ordering::Acquire) >= offset)
                .count()
        };
        let n = count();
        if n >= wanted {
            return n;
        }
        for r in self.replicas() {
            r.getack.notify_one();
        }
        let mut g = self.acks.0.lock();
        let mut asked = Instant::now();
        loop {
            let n = count();
            if n >= wanted || deadline.is_some_and(|d| Instant::now() >= d) || self.is_replica() {
                return n;
            }
            // Asks again every 100 ms (a replica that reconnected meanwhile missed the
            // first `GETACK`), rather than wait for the replicas' periodic acks.
            if asked.elapsed() >= Duration::from_millis(100) {
                for r in self.replicas() {
                    r.getack.notify_one();
                }
                asked = Instant::now();
            }
            // Bounded waits: a missed wake-up costs at most this.
            let step = Instant::now() + Duration::from_millis(100);
            let until = deadline.map_or(step, |d| d.min(step));
            self.acks.1.wait_until(&mut g, until);
        }
    }

    /// `REPLICAOF host port` (a change of primary, or a primary becoming a replica): stops
    /// the current link, disconnects this node's replicas, and starts a link to the new
    /// primary. Writes stop reaching the backlog at once; the position this node resumes
    /// from is its own offset under its id (a demoted primary can `PSYNC`-continue to a
    /// promoted replica that holds its id as `master_replid2`).
    pub fn replicate(server: &Arc<Server>, host: String, port: u16) {
        let repl = &server.repl;
        {
            let _applying = repl.apply_lock.lock();
            if !repl.is_replica() {
                // A demoted primary continues its own history.
                repl.has_position.store(true, Ordering::Relaxed);
            }
            repl.accepting.store(false, Ordering::Release);
            *repl.role.lock() = Role::Replica { host, port };
            repl.bump_generation();
            repl.link.set_state(LinkState::Connect);
        }
        let ids: Vec<u64> = repl.replicas().iter().map(|r| r.id).collect();
        server.kill_clients(|c| ids.contains(&c.id));
        start(server);
    }

    /// `REPLICAOF NO ONE`: stops the link (no batch is applied after this returns), takes a
    /// new id keeping the old one as `master_replid2` (so the other replicas continue from
    /// their offsets), and takes writes again. The hash-version allocator is rebuilt from the
    /// replicated layout record (`encoding::layout`), whose ceiling covers every version the
    /// old primary issued.
    ///
    /// # Errors
    /// The engine's, when the layout record cannot be read or raised.
    pub fn promote(server: &Server) -> Result<(), augur::Error> {
        let repl = &server.repl;
        let _applying = repl.apply_lock.lock();
        if !repl.is_replica() {
            return Ok(());
        }
        repl.bump_generation();
        {
            let mut ids = repl.ids.lock();
            ids.replid2 = std::mem::replace(&mut ids.replid, random_hex_id());
            ids.second_offset = i64::try_from(repl.offset()).unwrap_or(i64::MAX) + 1;
        }
        *repl.role.lock() = Role::Primary;
        repl.backlog_used.store(true, Ordering::Relaxed);
        repl.link.set_state(LinkState::Connect);
        repl.accepting.store(true, Ordering::Release);
        let db = server.db()?;
        repl.backlog.mark(db.snapshot().seqno());
        match crate::encoding::layout::prepare(&db, false) {
            Ok((versions, _)) => server.hash_versions.store(Arc::new(versions)),
            Err(e) => {
                return Err(augur::Error::InvalidArgument(format!(
                    "promotion: the layout record: {e}"
                )))
            }
        }
        log::info!(
            "promoted to primary (REPLICAOF NO ONE) at offset {}",
            repl.offset()
        );
        Ok(())
    }

    /// A primary's answer to `PSYNC replid offset`: whether it continues from `offset`
    /// (this id, or the previous one up to where it ended) with the bytes in the backlog.
    pub fn can_continue(&self, replid: &str, offset: u64) -> bool {
        let ids = self.ids.lock();
        let known = replid == ids.replid
            || (replid == ids.replid2
                && i64::try_from(offset).is_ok_and(|o| o <= ids.second_offset));
        known && self.backlog.holds(offset)
    }

    /// Adopts a new primary's id after a `+CONTINUE <id>` (the old id becomes the
    /// previous one, as Redis's replicas do after a failover).
    pub fn adopt_id(&self, replid: &str) {
        let mut ids = self.ids.lock();
        if ids.replid != replid {
            ids.replid2 = std::mem::replace(&mut ids.replid, replid.to_string());
            ids.second_offset = i64::try_from(self.backlog.offset()).unwrap_or(i64::MAX) + 1;
        }
    }

    /// Takes a full sync's id (the old ones are forgotten, as Redis does).
    pub fn set_id(&self, replid: &str) {
        self.has_position.store(true, Ordering::Relaxed);
        let mut ids = self.ids.lock();
        ids.replid = replid.to_string();
        ids.replid2 = NO_REPLID.to_string();
        ids.second_offset = -1;
    }

    /// `INFO replication`'s fields, as Redis 7.0 prints them.
    pub fn info_fields(
        &self,
        announce: &crate::settings::ReplicaAnnounce,
    ) -> Vec<(String, String)> {
        let f = |k: &str, v: &dyn ToString| (k.to_string(), v.to_string());
        let mut out = Vec::new();
        let offset = self.offset();
        match self.role() {
            Role::Primary => {
                out.push(f("role", &"master"));
            }
            Role::Replica { host, port } => {
                let state = self.link.state();
                let up = state == LinkState::Connected;
                let secs = |t: Option<Instant>| t.map_or(-1, |t| t.elapsed().as_secs() as i64);
                out.push(f("role", &"slave"));
                out.push(f("master_host", &host));
                out.push(f("master_port", &port));
                out.push(f("master_link_status", &if up { "up" } else { "down" }));
                let last_io = if up {
                    secs(*self.link.last_io.lock())
                } else {
                    -1
                };
                out.push(f("master_last_io_seconds_ago", &last_io));
                out.push(f(
                    "master_sync_in_progress",
                    &u8::from(state == LinkState::Sync),
                ));
                out.push(f("slave_read_repl_offset", &offset));
                out.push(f("slave_repl_offset", &offset));
                if state == LinkState::Sync {
                    let total = self.link.sync_total_bytes.load(Ordering::Relaxed);
                    let read = self.link.sync_read_bytes.load(Ordering::Relaxed);
                    out.push(f("master_sync_total_bytes", &total));
                    out.push(f("master_sync_read_bytes", &read));
                    out.push(f("master_sync_left_bytes", &total.saturating_sub(read)));
                    let perc = read as f64 * 100.0 / total.max(1) as f64;
                    out.push(f("master_sync_perc", &format!("{perc:.2}")));
                    out.push(f(
                        "master_sync_last_io_seconds_ago",
                        &secs(*self.link.last_io.lock()),
                    ));
                }
                if !up {
                    out.push(f(
                        "master_link_down_since_seconds",
                        &secs(*self.link.down_since.lock()),
                    ));
                }
                out.push(f("slave_priority", &announce.priority));
                out.push(f("slave_read_only", &u8::from(self.read_only)));
                out.push(f("replica_announced", &u8::from(announce.announced)));
            }
        }
        let replicas = self.replicas();
        out.push(f("connected_slaves", &replicas.len()));
        for (i, r) in replicas.iter().enumerate() {
            let state = match r.state.load(Ordering::Acquire) {
                0 => "wait_bgsave",
                1 => "send_bulk",
                _ => "online",
            };
            out.push((
                format!("slave{i}"),
                format!(
                    "ip={},port={},state={state},offset={},lag={}",
                    r.ip,
                    r.port,
                    r.ack_offset.load(Ordering::Acquire),
                    r.last_ack.lock().elapsed().as_secs()
                ),
            ));
        }
        let ids = self.ids();
        let (start, histlen, limit) = self.backlog.window();
        let active = self.backlog_used.load(Ordering::Relaxed) || self.is_replica();
        // Redis creates its backlog with the first replica (or sync): before, 0s.
        let (first, histlen) = if active { (start + 1, histlen) } else { (0, 0) };
        out.push(f("master_failover_state", &"no-failover"));
        out.push(f("master_replid", &ids.replid));
        out.push(f("master_replid2", &ids.replid2));
        out.push(f("master_repl_offset", &offset));
        out.push(f("second_repl_offset", &ids.second_offset));
        out.push(f("repl_backlog_active", &u8::from(active)));
        out.push(f("repl_backlog_size", &limit));
        out.push(f("repl_backlog_first_byte_offset", &first));
        out.push(f("repl_backlog_histlen", &histlen));
        if self.is_replica() {
            // Augur's own: how far the replica is behind its primary's last heartbeat.
            let primary = self.link.primary_offset.load(Ordering::Relaxed);
            out.push(f("augur_repl_lag_bytes", &primary.saturating_sub(offset)));
        }
        out
    }
}

/// Starts the link to the primary when this node is a replica (at start, and after
/// `REPLICAOF host port`). Must be called inside the Tokio runtime.
pub fn start(server: &Arc<Server>) {
    if let Role::Replica { host, port } = server.repl.role() {
        let (generation, stop) = server.repl.generation();
        tokio::spawn(replica::run(server.clone(), host, port, generation, stop));
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_position_round_trips() {
        let id = "a".repeat(40);
        let v = encode_position(&id, 12345);
        assert_eq!(decode_position(&v), Some((id, 12345)));
        assert_eq!(decode_position(b"augur-repl\x01short"), None);
        assert_eq!(decode_position(b"something else"), None);
    }
}
