//! The command table and dispatch: each command's name, arity and flags (what `COMMAND`
//! reports) and its parse function, the checks Redis makes before running one (unknown
//! command, wrong arity, authentication, queuing inside a transaction), and the commands,
//! grouped as Redis groups them: `strings.rs` (values), `hashes.rs` and `hash_walks.rs`
//! (hashes), `keys.rs` (the keyspace),
//! `expire.rs` (key expiry: EXPIRE, TTL, PERSIST and the options SET and GETEX share),
//! `transaction.rs` (MULTI, EXEC, DISCARD, WATCH, UNWATCH), `pubsub.rs` (Pub/Sub),
//! `connection.rs`, `client.rs` (CLIENT), `config.rs` (CONFIG) and `admin.rs` (the server
//! itself). `run.rs` runs a
//! pipeline's commands on keys as one run, and a transaction; `accounting.rs` counts what
//! each command did (`INFO commandstats`, `INFO errorstats`, the slow log).
//!
//! # A command: parse, then execute
//!
//! As Kvrocks gives each command a class with `Parse` and `Execute`, a command here is a
//! type with two functions: a parse function (named in the table) that turns the words
//! after the name into the typed command — Redis's syntax checks, no access to the store —
//! and [`Command::execute`], which runs it against the store and returns its result, a
//! [`Reply`] or a [`CmdError`]. Neither writes a byte: the caller encodes the result in one
//! place (`Out::result`, `reply.rs`), so every reply and every error, engine failures
//! included, is spelled there. Adding a command is a type, its parse and execute functions,
//! and one row of [`COMMANDS`]; its arity is checked once, from the row, before it parses
//! (`Call::check`).

mod accounting;
mod admin;
mod client;
mod config;
mod connection;
mod expire;
mod hash_walks;
mod hashes;
pub mod info;
mod keys;
mod pubsub;
mod replication;
mod run;
mod store;
mod strings;
mod transaction;
mod walk;

pub use crate::reply::{CmdError, Protocol, Reply};
use crate::state::{ClientInfo, Server};
use crate::stats::Tally;
pub use accounting::{commandstats_lines, subcommands};
pub use client::{held_by_pause, Replies};
use parking_lot::MutexGuard;
pub use pubsub::Subscriptions;
pub use run::execute_batch;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};
use std::time::Instant;
use store::Pending;
pub use transaction::{Transaction, Watching};

/// A command parsed from its arguments, ready to run (see the module doc).
pub trait Command {
    /// Runs the command against the store: its reply, or why it failed.
    fn execute(self, ctx: &mut Ctx<'_>) -> Result<Reply, CmdError>;
}

/// What a running command may change on its connection.
pub struct Ctx<'a> {
    /// The server.
    pub server: &'a Arc<Server>,
    /// The connection's own state.
    pub client: &'a mut Client,
    /// The writes of the pipelined run being executed (see `store.rs`), whose keys' locks
    /// are held for the whole run; `None` outside a run.
    pub pending: Option<Pending>,
}

impl<'a> Ctx<'a> {
    /// Locks `keys`' stripes for a command (none inside a run, which holds them all).
    pub fn lock_keys<K: AsRef<[u8]>>(&self, keys: &[K]) -> Vec<MutexGuard<'a, ()>> {
        let server: &'a Server = self.server;
        if self.pending.is_some() {
            return Vec::new();
        }
        server.lock_keys(keys)
    }
}

/// A connection's state that commands change.
pub struct Client {
    /// Its `CLIENT LIST` entry.
    pub info: Arc<ClientInfo>,
    /// AUTH succeeded (or no password is configured).
    pub authenticated: bool,
    /// Close the connection once the replies are written (QUIT, a protocol error).
    pub close: bool,
    /// `SHUTDOWN` asked the server to stop.
    pub shutdown: Option<Shutdown>,
    /// The transaction MULTI opened, queuing commands until EXEC or DISCARD; dropped with
    /// the connection.
    pub multi: Option<Transaction>,
    /// The protocol `HELLO` chose (RESP2 until then). Also in [`ClientInfo`] for `CLIENT
    /// LIST`; set both with [`Client::set_protocol`].
    pub protocol: Protocol,
    /// The keys `WATCH` watches, until EXEC, DISCARD or UNWATCH (unregistered when dropped,
    /// with the connection too).
    pub watching: Option<Watching>,
    /// Its commands' counts not yet added to the server's (`accounting.rs`).
    pub tally: Tally,
    /// Which replies are sent (`CLIENT REPLY`).
    pub replies: Replies,
    /// What a replica announced with `REPLCONF` before its `PSYNC`.
    pub replconf: ReplConf,
    /// `PSYNC` asked to become a replica's stream: the session hands the connection over
    /// (`replication::primary`) once the replies before it are written.
    pub handoff: Option<crate::replication::primary::Request>,
    /// The replication offset after this client's last write (`WAIT` waits for it).
    pub write_offset: u64,
    /// The channels and patterns it subscribes to (`None` until its first SUBSCRIBE or
    /// PSUBSCRIBE; unregistered when dropped, with the connection too).
    pub subscriptions: Option<Subscriptions>,
}

/// What a replica announces with `REPLCONF` before `PSYNC`.
#[derive(Debug, Default, Clone, Copy)]
pub struct ReplConf {
    /// `REPLCONF listening-port`.
    pub listening_port: u16,
    /// `REPLCONF capa augur1`: it speaks augur-server's stream.
    pub augur: bool,
    /// `REPLCONF ip-address`: the address it announces (`replica-announce-ip`).
    pub ip: Option<std::net::IpAddr>,
}

impl Client {
    /// A new connection's state: RESP2, authenticated when no password is configured.
    pub fn new(info: Arc<ClientInfo>, authenticated: bool) -> Client {
        Client {
            info,
            authenticated,
            close: false,
            shutdown: None,
            multi: None,
            protocol: Protocol::Resp2,
            watching: None,
            tally: Tally::default(),
            replies: Replies::default(),
            replconf: ReplConf::default(),
            handoff: None,
            write_offset: 0,
            subscriptions: None,
        }
    }

    /// Whether it subscribes to a channel or a pattern.
    pub fn is_subscribed(&self) -> bool {
        self.subscriptions.as_ref().is_some_and(|s| s.count() > 0)
    }

    /// Switches the connection to `protocol` (`HELLO`).
    pub fn set_protocol(&mut self, protocol: Protocol) {
        self.protocol = protocol;
        let version = u8::try_from(protocol.version()).unwrap_or(2);
        self.info
            .resp
            .store(version, std::sync::atomic::Ordering::Relaxed);
    }
}

/// How `SHUTDOWN` stops the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shutdown {
    /// Flush the memtable to a table before closing (restarts replay nothing).
    Save,
    /// Close without the flush (the WAL keeps the writes; a clean close syncs it).
    NoSave,
}

/// Flags of a command (a subset of Redis's).
#[derive(Debug, Clone, Copy)]
pub struct Flags {
    /// Changes the keyspace.
    pub write: bool,
    /// Reads the keyspace only.
    pub readonly: bool,
    /// Server administration.
    pub admin: bool,
    /// Allowed before AUTH.
    pub noauth: bool,
    /// May wait on the engine for long (a full scan, a flush): always run off the I/O
    /// thread. Writes are not marked: under `--sync always` they run off the I/O thread
    /// (each waits for an fsync); otherwise they try the engine's no-wait write on the I/O
    /// thread and move off it only when that would wait (`strings::write`).
    pub blocking: bool,
    /// Refused inside a transaction (Redis's `no-multi`).
    pub no_multi: bool,
}

const fn flags(write: bool, readonly: bool, admin: bool, noauth: bool, blocking: bool) -> Flags {
    Flags {
        write,
        readonly,
        admin,
        noauth,
        blocking,
        no_multi: false,
    }
}

/// A write.
const WRITE: Flags = flags(true, false, false, false, false);
/// A write of every key (blocking).
const FLUSH: Flags = flags(true, false, false, false, true);
/// A point read.
const READ: Flags = flags(false, true, false, false, false);
/// A read that scans (blocking).
const SCAN: Flags = flags(false, true, false, false, true);
/// Neither.
const PLAIN: Flags = flags(false, false, false, false, false);
/// Allowed before AUTH.
const NOAUTH: Flags = flags(false, false, false, true, false);
/// Administration that may wait on the engine.
const ADMIN: Flags = flags(false, false, true, false, true);
/// The same, refused inside a transaction.
const ADMIN_NO_MULTI: Flags = Flags {
    no_multi: true,
    ..ADMIN
};
/// Administration that never waits.
const ADMIN_FAST: Flags = flags(false, false, true, false, false);
/// The same, refused inside a transaction.
const ADMIN_NO_MULTI_FAST: Flags = Flags {
    no_multi: true,
    ..ADMIN_FAST
};
/// Waits for other servers (`WAIT`): off the I/O thread.
const WAITS: Flags = flags(false, false, false, false, true);

/// One command.
#[derive(Debug)]
pub struct Spec {
    /// Lower-case name.
    pub name: &'static str,
    /// Redis's arity: `n > 0` exactly n words (the name included), `n < 0` at least `-n`.
    pub arity: i64,
    /// Flags.
    pub flags: Flags,
    /// Position of the first key (0: none), the last (-1: the last word), and the step.
    pub keys: (i64, i64, i64),
    /// Redis's command group (`COMMAND DOCS`).
    pub group: &'static str,
    /// One line for `COMMAND DOCS`.
    pub summary: &'static str,
    /// Parses the words after the name and executes the command (the table's parse
    /// function, then [`Command::execute`]).
    pub run: Run,
}

/// A command's parse-then-execute, as the table holds it.
pub type Run = fn(&mut Ctx<'_>, &[Vec<u8>]) -> Result<Reply, CmdError>;

/// One row of [`COMMANDS`]: `$parse` turns the arguments into a [`Command`].
macro_rules! spec {
    ($name:literal, $arity:expr, $flags:expr, $keys:expr, $group:literal, $summary:literal, $parse:path) => {
        Spec {
            name: $name,
            arity: $arity,
            flags: $flags,
            keys: $keys,
            group: $group,
            summary: $summary,
            run: |ctx, args| $parse(args)?.execute(ctx),
        }
    };
}

/// Every command the server knows.
#[rustfmt::skip]
pub static COMMANDS: &[Spec] = &[
    spec!("get", 2, READ, (1, 1, 1), "string", "Returns the value of a key.", strings::Get::parse),
    spec!("set", -3, WRITE, (1, 1, 1), "string", "Sets the value of a key (NX, XX, GET, EX, PX, EXAT, PXAT, KEEPTTL).", strings::Set::parse),
    spec!("setex", 4, WRITE, (1, 1, 1), "string", "Sets the value and the expiry of a key (seconds).", strings::Set::setex),
    spec!("psetex", 4, WRITE, (1, 1, 1), "string", "Sets the value and the expiry of a key (milliseconds).", strings::Set::psetex),
    spec!("getex", -2, WRITE, (1, 1, 1), "string", "Returns the value of a key and sets or removes its expiry.", strings::GetEx::parse),
    spec!("setnx", 3, WRITE, (1, 1, 1), "string", "Sets a key only when it does not exist.", strings::SetNx::parse),
    spec!("getset", 3, WRITE, (1, 1, 1), "string", "Sets a key and returns its previous value.", strings::GetSet::parse),
    spec!("mget", -2, READ, (1, -1, 1), "string", "Returns the values of several keys.", strings::MGet::parse),
    spec!("mset", -3, WRITE, (1, -1, 2), "string", "Sets several keys at once.", strings::MSet::parse),
    spec!("msetnx", -3, WRITE, (1, -1, 2), "string", "Sets several keys only when none exists.", strings::MSet::msetnx),
    spec!("strlen", 2, READ, (1, 1, 1), "string", "Returns the length of a value.", strings::StrLen::parse),
    spec!("getdel", 2, WRITE, (1, 1, 1), "string", "Returns a value and deletes its key.", strings::GetDel::parse),
    spec!("getrange", 4, READ, (1, 1, 1), "string", "Returns a substring of a value.", strings::GetRange::parse),
    spec!("setrange", 4, WRITE, (1, 1, 1), "string", "Overwrites part of a value at an offset.", strings::SetRange::parse),
    spec!("append", 3, WRITE, (1, 1, 1), "string", "Appends to a value.", strings::Append::parse),
    spec!("incr", 2, WRITE, (1, 1, 1), "string", "Adds 1 to an integer value.", strings::Add::incr),
    spec!("decr", 2, WRITE, (1, 1, 1), "string", "Subtracts 1 from an integer value.", strings::Add::decr),
    spec!("incrby", 3, WRITE, (1, 1, 1), "string", "Adds an integer to an integer value.", strings::Add::incrby),
    spec!("decrby", 3, WRITE, (1, 1, 1), "string", "Subtracts an integer from an integer value.", strings::Add::decrby),
    spec!("incrbyfloat", 3, WRITE, (1, 1, 1), "string", "Adds a number to a numeric value.", strings::IncrByFloat::parse),
    spec!("hset", -4, WRITE, (1, 1, 1), "hash", "Sets fields of a hash; returns how many were new.", hashes::HSet::parse),
    spec!("hmset", -4, WRITE, (1, 1, 1), "hash", "Sets fields of a hash (deprecated: HSET).", hashes::HSet::hmset),
    spec!("hsetnx", 4, WRITE, (1, 1, 1), "hash", "Sets a field of a hash only when it does not exist.", hashes::HSetNx::parse),
    spec!("hget", 3, READ, (1, 1, 1), "hash", "Returns the value of a field of a hash.", hashes::HGet::parse),
    spec!("hmget", -3, READ, (1, 1, 1), "hash", "Returns the values of fields of a hash.", hashes::HMGet::parse),
    spec!("hexists", 3, READ, (1, 1, 1), "hash", "Whether a field of a hash exists.", hashes::HGet::hexists),
    spec!("hstrlen", 3, READ, (1, 1, 1), "hash", "Returns the length of the value of a field of a hash.", hashes::HGet::hstrlen),
    spec!("hdel", -3, WRITE, (1, 1, 1), "hash", "Deletes fields of a hash (the key goes with its last field).", hashes::HDel::parse),
    spec!("hlen", 2, READ, (1, 1, 1), "hash", "Returns the number of fields of a hash.", hashes::HLen::parse),
    spec!("hincrby", 4, WRITE, (1, 1, 1), "hash", "Adds an integer to an integer field of a hash.", hashes::HIncrBy::parse),
    spec!("hincrbyfloat", 4, WRITE, (1, 1, 1), "hash", "Adds a number to a numeric field of a hash.", hashes::HIncrByFloat::parse),
    spec!("hgetall", 2, READ, (1, 1, 1), "hash", "Returns every field and value of a hash.", hash_walks::HGetAll::parse),
    spec!("hkeys", 2, READ, (1, 1, 1), "hash", "Returns every field of a hash.", hash_walks::HGetAll::hkeys),
    spec!("hvals", 2, READ, (1, 1, 1), "hash", "Returns every value of a hash.", hash_walks::HGetAll::hvals),
    spec!("hscan", -3, READ, (1, 1, 1), "hash", "Iterates over the fields of a hash (MATCH, COUNT).", hash_walks::HScan::parse),
    spec!("hrandfield", -2, READ, (1, 1, 1), "hash", "Returns random fields of a hash (count, WITHVALUES).", hash_walks::HRandField::parse),
    spec!("del", -2, WRITE, (1, -1, 1), "generic", "Deletes keys.", keys::Del::parse),
    spec!("unlink", -2, WRITE, (1, -1, 1), "generic", "Deletes keys.", keys::Del::parse),
    spec!("expire", -3, WRITE, (1, 1, 1), "generic", "Sets a key's time to live in seconds (NX, XX, GT, LT).", expire::Expire::seconds),
    spec!("pexpire", -3, WRITE, (1, 1, 1), "generic", "Sets a key's time to live in milliseconds (NX, XX, GT, LT).", expire::Expire::milliseconds),
    spec!("expireat", -3, WRITE, (1, 1, 1), "generic", "Sets a key's expiry time as a Unix time in seconds (NX, XX, GT, LT).", expire::Expire::at_seconds),
    spec!("pexpireat", -3, WRITE, (1, 1, 1), "generic", "Sets a key's expiry time as a Unix time in milliseconds (NX, XX, GT, LT).", expire::Expire::at_milliseconds),
    spec!("ttl", 2, READ, (1, 1, 1), "generic", "Returns a key's time to live in seconds (-1: none, -2: no key).", expire::Ttl::seconds_left),
    spec!("pttl", 2, READ, (1, 1, 1), "generic", "Returns a key's time to live in milliseconds (-1: none, -2: no key).", expire::Ttl::milliseconds_left),
    spec!("expiretime", 2, READ, (1, 1, 1), "generic", "Returns a key's expiry time as a Unix time in seconds.", expire::Ttl::at_seconds),
    spec!("pexpiretime", 2, READ, (1, 1, 1), "generic", "Returns a key's expiry time as a Unix time in milliseconds.", expire::Ttl::at_milliseconds),
    spec!("persist", 2, WRITE, (1, 1, 1), "generic", "Removes a key's expiry.", expire::Persist::parse),
    spec!("exists", -2, READ, (1, -1, 1), "generic", "Counts how many of the keys exist.", keys::Exists::parse),
    spec!("rename", 3, WRITE, (1, 2, 1), "generic", "Renames a key (its expiry time goes with it).", keys::Rename::parse),
    spec!("renamenx", 3, WRITE, (1, 2, 1), "generic", "Renames a key only when the new name is free.", keys::Rename::renamenx),
    spec!("copy", -3, WRITE, (1, 2, 1), "generic", "Copies a key's value and expiry time (REPLACE; DB 0 only).", keys::Copy::parse),
    spec!("type", 2, READ, (1, 1, 1), "generic", "Returns the type of a key: string, hash or none.", keys::Type::parse),
    spec!("scan", -2, SCAN, (0, 0, 0), "generic", "Iterates over the keys in key order.", keys::Scan::parse),
    spec!("keys", 2, SCAN, (0, 0, 0), "generic", "Returns the keys matching a pattern (a full scan).", keys::Keys::parse),
    spec!("dbsize", 1, SCAN, (0, 0, 0), "server", "Counts the keys (a full key scan).", no_args::<keys::DbSize>),
    spec!("flushdb", -1, FLUSH, (0, 0, 0), "server", "Deletes every key (when enabled).", keys::Flush::parse),
    spec!("flushall", -1, FLUSH, (0, 0, 0), "server", "Deletes every key (when enabled).", keys::Flush::parse),
    spec!("multi", 1, PLAIN, (0, 0, 0), "transactions", "Starts a transaction: later commands are queued.", no_args::<transaction::Multi>),
    spec!("exec", 1, PLAIN, (0, 0, 0), "transactions", "Runs the queued commands as one atomic step.", no_args::<transaction::Exec>),
    spec!("discard", 1, PLAIN, (0, 0, 0), "transactions", "Drops the queued commands.", no_args::<transaction::Discard>),
    spec!("watch", -2, PLAIN, (1, -1, 1), "transactions", "Makes the next EXEC run only if none of the keys changes meanwhile.", transaction::Watch::parse),
    spec!("unwatch", 1, PLAIN, (0, 0, 0), "transactions", "Forgets the watched keys.", no_args::<transaction::Unwatch>),
    spec!("subscribe", -2, PLAIN, (0, 0, 0), "pubsub", "Listens for messages on channels.", pubsub::Subscribe::channels),
    spec!("unsubscribe", -1, PLAIN, (0, 0, 0), "pubsub", "Stops listening on channels (all without arguments).", pubsub::Unsubscribe::channels),
    spec!("psubscribe", -2, PLAIN, (0, 0, 0), "pubsub", "Listens for messages on the channels matching glob patterns.", pubsub::Subscribe::patterns),
    spec!("punsubscribe", -1, PLAIN, (0, 0, 0), "pubsub", "Stops listening on patterns (all without arguments).", pubsub::Unsubscribe::patterns),
    spec!("publish", 3, PLAIN, (0, 0, 0), "pubsub", "Sends a message to a channel's subscribers; returns how many got it.", pubsub::Publish::parse),
    spec!("pubsub", -2, PLAIN, (0, 0, 0), "pubsub", "PUBSUB CHANNELS, NUMSUB and NUMPAT: the active channels and patterns.", pubsub::PubsubCmd::parse),
    spec!("ping", -1, PLAIN, (0, 0, 0), "connection", "Returns PONG, or the message.", connection::Ping::parse),
    spec!("echo", 2, PLAIN, (0, 0, 0), "connection", "Returns the message.", connection::Echo::parse),
    spec!("quit", -1, NOAUTH, (0, 0, 0), "connection", "Closes the connection.", no_args::<connection::Quit>),
    spec!("hello", -1, NOAUTH, (0, 0, 0), "connection", "Handshake: picks RESP2 or RESP3, may authenticate and name the connection.", connection::Hello::parse),
    spec!("auth", -2, NOAUTH, (0, 0, 0), "connection", "Authenticates the connection.", connection::Auth::parse),
    spec!("reset", 1, NOAUTH, (0, 0, 0), "connection", "Resets the connection: ends MULTI, WATCH and subscriptions, RESP2, no name.", no_args::<connection::Reset>),
    spec!("select", 2, PLAIN, (0, 0, 0), "connection", "Selects database 0 (the only one).", connection::Select::parse),
    spec!("client", -2, PLAIN, (0, 0, 0), "connection", "CLIENT ID, SETNAME, GETNAME, LIST, INFO, KILL, PAUSE, UNPAUSE, REPLY, NO-EVICT.", client::ClientCmd::parse),
    spec!("command", -1, PLAIN, (0, 0, 0), "server", "Describes the commands (COUNT, DOCS, INFO).", admin::CommandCmd::parse),
    spec!("config", -2, PLAIN, (0, 0, 0), "server", "CONFIG GET, SET, RESETSTAT and REWRITE of the server's settings.", config::ConfigCmd::parse),
    spec!("slowlog", -2, PLAIN, (0, 0, 0), "server", "SLOWLOG GET, LEN and RESET: the commands that ran long.", admin::SlowlogCmd::parse),
    spec!("info", -1, PLAIN, (0, 0, 0), "server", "Redis 7.0's sections (server, clients, memory, persistence, stats, replication, cpu, commandstats, errorstats, cluster, keyspace) and the engine's.", admin::Info::parse),
    spec!("save", 1, ADMIN_NO_MULTI, (0, 0, 0), "server", "Flushes the memtable and syncs.", no_args::<admin::Save>),
    spec!("bgsave", -1, ADMIN, (0, 0, 0), "server", "Flushes and syncs in the background.", admin::BgSave::parse),
    spec!("lastsave", 1, PLAIN, (0, 0, 0), "server", "Unix time of the last SAVE.", no_args::<admin::LastSave>),
    spec!("time", 1, PLAIN, (0, 0, 0), "server", "The server's time.", no_args::<admin::Time>),
    spec!("shutdown", -1, ADMIN_NO_MULTI, (0, 0, 0), "server", "Stops the server (SAVE or NOSAVE).", admin::ShutdownCmd::parse),
    spec!("replicaof", 3, ADMIN, (0, 0, 0), "server", "Replicates another server (host port), or stops (NO ONE): a replica becomes a primary.", replication::ReplicaOf::parse),
    spec!("slaveof", 3, ADMIN, (0, 0, 0), "server", "The same as REPLICAOF.", replication::ReplicaOf::parse),
    spec!("role", 1, PLAIN, (0, 0, 0), "server", "This server's role: master with its replicas, or slave with its link.", no_args::<replication::Role>),
    spec!("wait", 3, WAITS, (0, 0, 0), "generic", "Waits until replicas acknowledged this client's writes (or the timeout).", replication::Wait::parse),
    spec!("replconf", -1, ADMIN_FAST, (0, 0, 0), "server", "A replica's announcements before PSYNC (listening-port, capa).", replication::ReplConfCmd::parse),
    spec!("psync", -3, ADMIN_NO_MULTI_FAST, (0, 0, 0), "server", "A replica asks for the replication stream (augur-server replicas only).", replication::PSync::parse),
    spec!("sync", 1, ADMIN_NO_MULTI_FAST, (0, 0, 0), "server", "Refused: the old full-sync protocol (augur-server replicas use PSYNC).", no_args::<replication::OldSync>),
];

/// The parse function of a command without arguments (the table's arity allows none).
fn no_args<C: Default>(_args: &[Vec<u8>]) -> Result<C, CmdError> {
    Ok(C::default())
}

/// The spec of `name` (any case).
pub fn lookup(name: &[u8]) -> Option<&'static Spec> {
    static TABLE: OnceLock<HashMap<&'static str, &'static Spec>> = OnceLock::new();
    let table = TABLE.get_or_init(|| COMMANDS.iter().map(|s| (s.name, s)).collect());
    // Lower-cased on the stack: every command of every pipeline is looked up.
    let mut buf = [0u8; 32];
    let lower = buf.get_mut(..name.len())?;
    lower.copy_from_slice(name);
    lower.make_ascii_lowercase();
    table.get(std::str::from_utf8(lower).ok()?).copied()
}

/// A request that names a known command with a valid number of words ([`Call::check`]).
#[derive(Clone, Copy)]
struct Call<'a> {
    /// Its row of the table.
    spec: &'static Spec,
    /// Its words, the name first.
    words: &'a [Vec<u8>],
}

/// Why Redis refuses a request before it runs, from the table alone.
enum Refusal {
    /// No such command: Redis's error text.
    Unknown(CmdError),
    /// A known command with the wrong number of words.
    Arity(&'static Spec),
}

impl<'a> Call<'a> {
    /// Looks `words[0]` up and checks the number of words against the command's arity:
    /// the one place arity is checked (a parse function sees only valid counts).
    fn check(words: &'a [Vec<u8>]) -> Result<Call<'a>, Refusal> {
        let Some((name, rest)) = words.split_first() else {
            return Err(Refusal::Unknown(unknown_command(b"", &[])));
        };
        let Some(spec) = lookup(name) else {
            return Err(Refusal::Unknown(unknown_command(name, rest)));
        };
        let n = words.len() as i64;
        if (spec.arity > 0 && n == spec.arity) || (spec.arity < 0 && n >= -spec.arity) {
            Ok(Call { spec, words })
        } else {
            Err(Refusal::Arity(spec))
        }
    }

    /// The words after the name.
    fn args(&self) -> &'a [Vec<u8>] {
        self.words.get(1..).unwrap_or_default()
    }

    /// Parses and executes the command, counting it (`accounting.rs`).
    fn run(self, ctx: &mut Ctx<'_>) -> Result<Reply, CmdError> {
        self.run_at(ctx, Instant::now()).0
    }

    /// [`Call::run`] for a command that started at `started` (the end of the one before it
    /// in a run: one clock read per command); returns its result and when it ended.
    fn run_at(self, ctx: &mut Ctx<'_>, started: Instant) -> (Result<Reply, CmdError>, Instant) {
        note_command(&ctx.client.info, self.spec.name, started);
        let result = (self.spec.run)(ctx, self.args());
        let ended = Instant::now();
        let took = ended.saturating_duration_since(started);
        accounting::ran(ctx, self, took, result.is_err());
        (result, ended)
    }

    /// Whether the command may be part of a run: one on keys that reads or writes through
    /// `store.rs` (not a scan or a flush).
    fn joins_runs(&self) -> bool {
        let flags = self.spec.flags;
        !flags.blocking && (flags.write || flags.readonly) && self.spec.keys.0 >= 1
    }

    /// The keys of a command that may be part of a run ([`Call::joins_runs`]); `None`
    /// otherwise.
    fn run_keys(&self) -> Option<Vec<&'a [u8]>> {
        if !self.joins_runs() {
            return None;
        }
        let n = self.words.len() as i64;
        let (first, last, step) = self.spec.keys;
        let last = if last < 0 { n + last } else { last };
        let keys = (first..=last)
            .step_by(usize::try_from(step.max(1)).ok()?)
            .filter_map(|i| self.words.get(usize::try_from(i).ok()?))
            .map(|k| k.as_slice())
            .collect();
        Some(keys)
    }
}

/// Runs one request (`words[0]` is the command's name) with Redis's checks first: unknown
/// command, authentication, arity; inside a transaction queues it instead
/// (`transaction.rs`). The result is the request's reply, for the caller to encode.
pub fn execute(ctx: &mut Ctx<'_>, words: &[Vec<u8>]) -> Result<Reply, CmdError> {
    if words.is_empty() {
        return Ok(Reply::Nothing);
    }
    let checked = Call::check(words);
    let spec = match &checked {
        Ok(call) => call.spec,
        Err(Refusal::Arity(spec)) => spec,
        Err(Refusal::Unknown(e)) => return Err(transaction::reject(ctx, None, e.clone())),
    };
    let args = words.get(1..).unwrap_or_default();
    if !ctx.client.authenticated && !spec.flags.noauth && ctx.server.settings.password_required() {
        accounting::rejected(ctx.server, spec, args);
        let e = CmdError::new("NOAUTH Authentication required.");
        return Err(transaction::reject(ctx, Some(spec), e));
    }
    let call = match checked {
        Ok(call) => call,
        Err(_) => {
            accounting::rejected(ctx.server, spec, args);
            return Err(transaction::reject(
                ctx,
                Some(spec),
                CmdError::arity(spec.name),
            ));
        }
    };
    if spec.flags.write && ctx.server.repl.refuses_writes() {
        accounting::rejected(ctx.server, spec, args);
        let e = CmdError::new("READONLY You can't write against a read only replica.");
        return Err(transaction::reject(ctx, Some(spec), e));
    }
    if ctx.client.subscriptions.is_some() {
        if let Some(e) = pubsub::refusal_in_subscribed_mode(ctx, spec, args) {
            return Err(transaction::reject(ctx, Some(spec), e));
        }
    }
    if ctx.client.multi.is_some() {
        if let Some(queued) = transaction::queue(ctx, call) {
            return queued;
        }
    }
    call.run(ctx)
}

/// Redis's error for an unknown command: the name and the first arguments, quoted.
fn unknown_command(name: &[u8], rest: &[Vec<u8>]) -> CmdError {
    let mut text = format!(
        "ERR unknown command '{}', with args beginning with: ",
        printable(name, 128)
    );
    for a in rest.iter().take(16) {
        text.push_str(&format!("'{}' ", printable(a, 128)));
    }
    CmdError::new(text)
}

/// `bytes` as text for an error message: at most `max` characters, control characters
/// replaced (a reply line must not contain CR or LF).
pub fn printable(bytes: &[u8], max: usize) -> String {
    String::from_utf8_lossy(bytes)
        .chars()
        .take(max)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

fn note_command(info: &ClientInfo, name: &'static str, now: Instant) {
    *info.last_command.lock() = crate::state::LastCommand { name, at: now };
}

/// Whether the command `words` should run off the I/O thread: it may wait on the engine for
/// long (see [`Flags::blocking`]), it writes and every write waits for an fsync, or it is
/// `CONFIG REWRITE` (which fsyncs the config file; the rest of `CONFIG` never waits).
pub fn is_blocking(words: &[Vec<u8>], sync_always: bool) -> bool {
    let rewrite = matches!(words, [name, sub, ..] if is(name, "config") && is(sub, "rewrite"));
    rewrite
        || words
            .first()
            .and_then(|n| lookup(n))
            .is_some_and(|s| s.flags.blocking || (s.flags.write && sync_always))
}

/// Whether a batch should run off the I/O thread: one of its commands is blocking, or the
/// client's open transaction holds one (an EXEC in the batch would run it).
pub fn batch_is_blocking(client: &Client, cmds: &[Vec<Vec<u8>>], sync_always: bool) -> bool {
    cmds.iter().any(|c| is_blocking(c, sync_always))
        || client
            .multi
            .as_ref()
            .is_some_and(|t| t.is_blocking(sync_always))
}

/// Case-insensitive comparison of an argument with an option name.
pub fn is(arg: &[u8], name: &str) -> bool {
    arg.eq_ignore_ascii_case(name.as_bytes())
}

/// An integer argument, or Redis's error.
pub fn parse_i64(arg: &[u8]) -> Result<i64, CmdError> {
    std::str::from_utf8(arg)
        .ok()
        .filter(|s| !(s.starts_with('+') || (s.len() > 1 && s.starts_with('0'))))
        .filter(|s| !s.starts_with("-0"))
        .and_then(|s| s.parse::<i64>().ok())
        .ok_or_else(CmdError::not_an_integer)
}

#[cfg(test)]
mod tests {
    use super::is_blocking;

    fn words(line: &str) -> Vec<Vec<u8>> {
        line.split(' ').map(|w| w.as_bytes().to_vec()).collect()
    }

    #[test]
    fn commands_that_may_wait_run_off_the_io_thread() {
        for (line, always, want) in [
            ("config rewrite", false, true),
            ("CONFIG Rewrite", false, true),
            ("config get maxclients", false, false),
            ("config set maxclients 10", false, false),
            ("config", false, false),
            ("replicaof no one", false, true),
            ("get k", false, false),
            ("set k v", false, false),
            ("set k v", true, true),
            ("nosuchcommand rewrite", false, false),
        ] {
            assert_eq!(
                is_blocking(&words(line), always),
                want,
                "{line} (sync always: {always})"
            );
        }
    }
}
