//! The command table and dispatch: each command's name, arity and flags (what `COMMAND`
//! reports), the checks Redis makes before running one (unknown command, wrong arity,
//! authentication, queuing inside a transaction), and the handlers, grouped as Redis groups
//! them: `strings.rs` (values), `keys.rs` (the keyspace), `transaction.rs` (MULTI, EXEC,
//! DISCARD), `connection.rs` and `admin.rs` (the server itself).
//!
//! A handler writes its reply into the context's [`Out`] and never fails: errors are replies,
//! with Redis's texts.

mod admin;
mod connection;
pub mod info;
mod keys;
mod store;
mod strings;
mod transaction;

use crate::reply::Out;
use crate::state::{ClientInfo, Server};
use parking_lot::MutexGuard;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};
use store::Pending;
pub use transaction::Transaction;

/// What a running command may change on its connection.
pub struct Ctx<'a> {
    /// The server.
    pub server: &'a Arc<Server>,
    /// The connection's own state.
    pub client: &'a mut Client,
    /// Where replies go.
    pub out: &'a mut Out,
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

/// One command.
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
    /// The handler: the words after the name.
    pub run: fn(&mut Ctx<'_>, &[Vec<u8>]),
}

macro_rules! spec {
    ($name:literal, $arity:expr, $flags:expr, $keys:expr, $group:literal, $summary:literal, $run:path) => {
        Spec {
            name: $name,
            arity: $arity,
            flags: $flags,
            keys: $keys,
            group: $group,
            summary: $summary,
            run: $run,
        }
    };
}

/// Every command the server knows.
#[rustfmt::skip]
pub static COMMANDS: &[Spec] = &[
    spec!("get", 2, READ, (1, 1, 1), "string", "Returns the value of a key.", strings::get),
    spec!("set", -3, WRITE, (1, 1, 1), "string", "Sets the value of a key (NX, XX, GET; no expiry).", strings::set),
    spec!("setnx", 3, WRITE, (1, 1, 1), "string", "Sets a key only when it does not exist.", strings::setnx),
    spec!("getset", 3, WRITE, (1, 1, 1), "string", "Sets a key and returns its previous value.", strings::getset),
    spec!("mget", -2, READ, (1, -1, 1), "string", "Returns the values of several keys.", strings::mget),
    spec!("mset", -3, WRITE, (1, -1, 2), "string", "Sets several keys at once.", strings::mset),
    spec!("msetnx", -3, WRITE, (1, -1, 2), "string", "Sets several keys only when none exists.", strings::msetnx),
    spec!("strlen", 2, READ, (1, 1, 1), "string", "Returns the length of a value.", strings::strlen),
    spec!("getdel", 2, WRITE, (1, 1, 1), "string", "Returns a value and deletes its key.", strings::getdel),
    spec!("getrange", 4, READ, (1, 1, 1), "string", "Returns a substring of a value.", strings::getrange),
    spec!("setrange", 4, WRITE, (1, 1, 1), "string", "Overwrites part of a value at an offset.", strings::setrange),
    spec!("append", 3, WRITE, (1, 1, 1), "string", "Appends to a value.", strings::append),
    spec!("incr", 2, WRITE, (1, 1, 1), "string", "Adds 1 to an integer value.", strings::incr),
    spec!("decr", 2, WRITE, (1, 1, 1), "string", "Subtracts 1 from an integer value.", strings::decr),
    spec!("incrby", 3, WRITE, (1, 1, 1), "string", "Adds an integer to an integer value.", strings::incrby),
    spec!("decrby", 3, WRITE, (1, 1, 1), "string", "Subtracts an integer from an integer value.", strings::decrby),
    spec!("incrbyfloat", 3, WRITE, (1, 1, 1), "string", "Adds a number to a numeric value.", strings::incrbyfloat),
    spec!("del", -2, WRITE, (1, -1, 1), "generic", "Deletes keys.", keys::del),
    spec!("unlink", -2, WRITE, (1, -1, 1), "generic", "Deletes keys.", keys::del),
    spec!("exists", -2, READ, (1, -1, 1), "generic", "Counts how many of the keys exist.", keys::exists),
    spec!("type", 2, READ, (1, 1, 1), "generic", "Returns the type of a key: string or none.", keys::type_of),
    spec!("scan", -2, SCAN, (0, 0, 0), "generic", "Iterates over the keys in key order.", keys::scan),
    spec!("keys", 2, SCAN, (0, 0, 0), "generic", "Returns the keys matching a pattern (a full scan).", keys::keys),
    spec!("dbsize", 1, SCAN, (0, 0, 0), "server", "Counts the keys (a full key scan).", keys::dbsize),
    spec!("flushdb", -1, FLUSH, (0, 0, 0), "server", "Deletes every key (when enabled).", keys::flush),
    spec!("flushall", -1, FLUSH, (0, 0, 0), "server", "Deletes every key (when enabled).", keys::flush),
    spec!("multi", 1, PLAIN, (0, 0, 0), "transactions", "Starts a transaction: later commands are queued.", transaction::multi),
    spec!("exec", 1, PLAIN, (0, 0, 0), "transactions", "Runs the queued commands as one atomic step.", transaction::exec),
    spec!("discard", 1, PLAIN, (0, 0, 0), "transactions", "Drops the queued commands.", transaction::discard),
    spec!("ping", -1, PLAIN, (0, 0, 0), "connection", "Returns PONG, or the message.", connection::ping),
    spec!("echo", 2, PLAIN, (0, 0, 0), "connection", "Returns the message.", connection::echo),
    spec!("quit", -1, NOAUTH, (0, 0, 0), "connection", "Closes the connection.", connection::quit),
    spec!("hello", -1, NOAUTH, (0, 0, 0), "connection", "Handshake: RESP2 only.", connection::hello),
    spec!("auth", -2, NOAUTH, (0, 0, 0), "connection", "Authenticates the connection.", connection::auth),
    spec!("select", 2, PLAIN, (0, 0, 0), "connection", "Selects database 0 (the only one).", connection::select),
    spec!("client", -2, PLAIN, (0, 0, 0), "connection", "CLIENT ID, SETNAME, GETNAME, LIST, INFO.", connection::client),
    spec!("command", -1, PLAIN, (0, 0, 0), "server", "Describes the commands (COUNT, DOCS, INFO).", admin::command),
    spec!("config", -2, PLAIN, (0, 0, 0), "server", "CONFIG GET of the server's settings.", admin::config),
    spec!("info", -1, PLAIN, (0, 0, 0), "server", "Server, clients, memory, persistence, stats, keyspace and engine sections.", admin::info),
    spec!("save", 1, ADMIN_NO_MULTI, (0, 0, 0), "server", "Flushes the memtable and syncs.", admin::save),
    spec!("bgsave", -1, ADMIN, (0, 0, 0), "server", "Flushes and syncs in the background.", admin::bgsave),
    spec!("lastsave", 1, PLAIN, (0, 0, 0), "server", "Unix time of the last SAVE.", admin::lastsave),
    spec!("time", 1, PLAIN, (0, 0, 0), "server", "The server's time.", admin::time),
    spec!("shutdown", -1, ADMIN_NO_MULTI, (0, 0, 0), "server", "Stops the server (SAVE or NOSAVE).", admin::shutdown),
];

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

/// Runs one command (`args[0]` is its name) with Redis's checks first; inside a transaction
/// queues it instead (`transaction.rs`).
pub fn execute(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) {
    let Some(name) = args.first() else {
        return;
    };
    let Some(spec) = lookup(name) else {
        let text = unknown_command(name, &args[1..]);
        transaction::reject(ctx, None, &text);
        return;
    };
    if !ctx.client.authenticated && !spec.flags.noauth {
        transaction::reject(ctx, Some(spec), "NOAUTH Authentication required.");
        return;
    }
    if !arity_ok(spec, args.len()) {
        let text = format!("ERR wrong number of arguments for '{}' command", spec.name);
        transaction::reject(ctx, Some(spec), &text);
        return;
    }
    if ctx.client.multi.is_some() && transaction::queue(ctx, spec, args) {
        return;
    }
    crate::state::Counters::add(&ctx.server.counters.commands, 1);
    note_command(&ctx.client.info, ctx.server, spec.name);
    (spec.run)(ctx, &args[1..]);
}

/// Whether `n` words (the name included) fit `spec`'s arity.
fn arity_ok(spec: &Spec, n: usize) -> bool {
    let n = n as i64;
    (spec.arity > 0 && n == spec.arity) || (spec.arity < 0 && n >= -spec.arity)
}

/// Runs a client's batch of pipelined commands in order. Consecutive commands on keys (reads
/// and writes of the string commands, DEL, EXISTS, …) run as one run under all their keys'
/// locks, with their writes committed as one write batch at the run's end — one WAL record
/// and, under `--sync always`, one fsync for the run (`store.rs`). Inside a transaction no
/// run forms: each command is queued.
pub fn execute_batch(ctx: &mut Ctx<'_>, cmds: &[Vec<Vec<u8>>]) {
    let mut i = 0;
    while i < cmds.len() && !ctx.client.close {
        let run: Vec<Vec<&[u8]>> = if ctx.client.authenticated && ctx.client.multi.is_none() {
            cmds[i..].iter().map_while(|c| run_keys(c)).collect()
        } else {
            Vec::new()
        };
        if run.len() >= 2 {
            let n = run.len();
            execute_run(ctx, &cmds[i..i + n], &run.concat());
            i += n;
        } else {
            execute(ctx, &cmds[i]);
            i += 1;
        }
    }
}

/// Runs `cmds` as one run: their `keys` (from [`run_keys`]) locked once, their writes
/// committed together; if the commit fails, every command of the run gets its error.
fn execute_run(ctx: &mut Ctx<'_>, cmds: &[Vec<Vec<u8>>], keys: &[&[u8]]) {
    let server: &Server = ctx.server;
    let _locks = server.lock_keys(keys);
    let replies_from = ctx.out.buf.len();
    if let Err(error) = run_deferred(ctx, cmds) {
        // No reply of the run may claim a write that did not happen: each gets the error.
        ctx.out.buf.truncate(replies_from);
        for _ in cmds {
            ctx.out.buf.extend_from_slice(&error);
        }
    }
}

/// Runs a transaction's queued commands (checked when queued) as one step, EXEC's reply an
/// array of theirs: every key they name is locked for the whole step (every key when one of
/// them walks or flushes the keyspace), so no other client's write lands between them; their
/// writes are committed as one batch, which other clients see all at once. If the commit
/// fails, EXEC's reply is the error alone: nothing of the transaction was written.
fn execute_transaction(ctx: &mut Ctx<'_>, cmds: &[Vec<Vec<u8>>]) {
    let server: &Server = ctx.server;
    let _locks = match transaction_keys(cmds) {
        Some(keys) => server.lock_keys(&keys),
        None => server.lock_all_keys(),
    };
    let reply_from = ctx.out.buf.len();
    ctx.out.array(cmds.len());
    if let Err(error) = run_deferred(ctx, cmds) {
        ctx.out.buf.truncate(reply_from);
        ctx.out.buf.extend_from_slice(&error);
    }
}

/// Runs `cmds` with their writes deferred (`ctx.pending`) and commits them at the end. The
/// caller holds the locks. `Err` holds the commit's error reply (not left in `out`; the
/// commands' replies are, for the caller to replace).
fn run_deferred(ctx: &mut Ctx<'_>, cmds: &[Vec<Vec<u8>>]) -> Result<(), Vec<u8>> {
    ctx.pending = Some(Pending::default());
    for cmd in cmds {
        execute(ctx, cmd);
    }
    let pending = ctx.pending.take().unwrap_or_default();
    let error_from = ctx.out.buf.len();
    if store::commit_pending(ctx, pending) {
        return Ok(());
    }
    let error = ctx.out.buf.split_off(error_from).to_vec();
    Err(error)
}

/// The keys a transaction's commands name, or `None` when one of them reads or writes the
/// whole keyspace (SCAN, KEYS, DBSIZE, FLUSHDB: every key must be locked).
fn transaction_keys(cmds: &[Vec<Vec<u8>>]) -> Option<Vec<&[u8]>> {
    let mut keys = Vec::new();
    for cmd in cmds {
        match run_keys(cmd) {
            Some(k) => keys.extend(k),
            None => {
                let spec = cmd.first().and_then(|n| lookup(n))?;
                if spec.flags.write || spec.flags.readonly {
                    return None;
                }
            }
        }
    }
    Some(keys)
}

/// The keys of `args` when it can be part of a run: a known command on keys that reads or
/// writes through `store.rs` (not a scan or a flush), with a valid arity; `None` otherwise.
fn run_keys(args: &[Vec<u8>]) -> Option<Vec<&[u8]>> {
    let spec = lookup(args.first()?)?;
    let n = args.len() as i64;
    let (first, last, step) = spec.keys;
    if !arity_ok(spec, args.len())
        || spec.flags.blocking
        || !(spec.flags.write || spec.flags.readonly)
        || first < 1
    {
        return None;
    }
    let last = if last < 0 { n + last } else { last };
    let keys = (first..=last)
        .step_by(usize::try_from(step.max(1)).ok()?)
        .filter_map(|i| args.get(usize::try_from(i).ok()?))
        .map(|k| k.as_slice())
        .collect();
    Some(keys)
}

/// Redis's error for an unknown command: the name and the first arguments, quoted.
fn unknown_command(name: &[u8], rest: &[Vec<u8>]) -> String {
    let mut text = format!(
        "ERR unknown command '{}', with args beginning with: ",
        printable(name, 128)
    );
    for a in rest.iter().take(16) {
        text.push_str(&format!("'{}' ", printable(a, 128)));
    }
    text
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

fn note_command(info: &ClientInfo, server: &Server, name: &str) {
    let _ = server;
    let ms = u64::try_from(info.connected.elapsed().as_millis()).unwrap_or(u64::MAX);
    info.last_command_ms
        .store(ms, std::sync::atomic::Ordering::Relaxed);
    let mut last = info.last_command.lock();
    if last.as_str() != name {
        last.clear();
        last.push_str(name);
    }
}

/// Whether the command `args` should run off the I/O thread: it may wait on the engine for
/// long (see [`Flags::blocking`]), or it writes and every write waits for an fsync.
pub fn is_blocking(args: &[Vec<u8>], sync_always: bool) -> bool {
    args.first()
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

/// The reply to an engine failure.
pub fn engine_error(out: &mut Out, e: &augur::Error) {
    let text = printable(e.to_string().as_bytes(), 1000);
    out.error(&format!("ERR {text}"));
}

/// Case-insensitive comparison of an argument with an option name.
pub fn is(arg: &[u8], name: &str) -> bool {
    arg.eq_ignore_ascii_case(name.as_bytes())
}

/// An integer argument, or Redis's error reply.
pub fn parse_i64(out: &mut Out, arg: &[u8]) -> Option<i64> {
    let parsed = std::str::from_utf8(arg)
        .ok()
        .filter(|s| !(s.starts_with('+') || (s.len() > 1 && s.starts_with('0'))))
        .filter(|s| !s.starts_with("-0"))
        .and_then(|s| s.parse::<i64>().ok());
    if parsed.is_none() {
        out.error("ERR value is not an integer or out of range");
    }
    parsed
}
