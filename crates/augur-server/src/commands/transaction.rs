//! Transactions: MULTI, EXEC, DISCARD, WATCH and UNWATCH, with Redis's semantics and texts.
//!
//! MULTI opens a queue on the connection (`Client::multi`). Every later command is checked as
//! it arrives, as Redis checks it (`execute` in `mod.rs`): an unknown name, a wrong arity, or
//! a command refused inside a transaction (SAVE, SHUTDOWN: Redis's `no-multi`) gets its error
//! and marks the transaction failed, so that EXEC answers `EXECABORT` and runs nothing; any
//! other command is queued with `+QUEUED`. MULTI, EXEC, DISCARD and QUIT run at once (a
//! nested MULTI is an error that does not fail the transaction; QUIT closes the connection,
//! which drops the queue; RESET drops it).
//!
//! EXEC runs the queue as one step (`execute_transaction` in `mod.rs`), through the machinery
//! of a pipelined run (`store.rs`): the keys the commands name are locked for the whole step
//! (every key when one of them walks the keyspace), reads see the transaction's earlier
//! writes, and the writes are committed as one write batch after the last command, before
//! any reply is sent. Errors while running (INCR of a non-integer, a syntax error) are
//! elements of EXEC's reply and do not stop the other commands, as in Redis.
//!
//! A queued command lives only in its connection's [`Transaction`]: nothing reaches the
//! engine before EXEC, and a connection that closes drops its queue.
//!
//! # WATCH
//!
//! `WATCH key...` makes the next EXEC conditional: EXEC runs nothing and answers a null
//! array (RESP2 `*-1`, RESP3 `_`) when a watched key was written, deleted, or expired since
//! it was watched, by any client (this one included), as Redis 7.0 does. The server keeps a
//! version per watched key (`state::Watches`), bumped by every write of the key on every
//! write path (`store.rs` commits all of them: SET, DEL, EXPIRE, PERSIST, FLUSHDB's deletes,
//! a transaction's writes…); a write that changes nothing (SET NX of an existing key, DEL of
//! a missing one, PERSIST of a key without expiry) writes nothing and bumps nothing, as
//! Redis does not signal it. Expiry needs no write: WATCH notes the expiry time of a key
//! that exists, and EXEC finds it changed once that time has passed (a key already
//! missing or expired when watched is changed only by a write, as in Redis). WATCH holds
//! its keys' locks while it reads them and EXEC holds them while it checks them and runs
//! the queue, so no write lands between the check and the transaction. EXEC (whatever its
//! outcome), DISCARD, UNWATCH and the connection's end forget the connection's watches;
//! WATCH inside MULTI is an error that does not fail the transaction; a connection's watched
//! keys are bounded by `--max-request-bytes`.

use super::run::execute_transaction;
use super::store::{now_ms, read_raw};
use super::{Call, CmdError, Command, Ctx, Reply, Spec};
use crate::state::Server;
use std::sync::Arc;

/// Commands that run at once inside a transaction instead of being queued.
const RUN_AT_ONCE: [&str; 6] = ["exec", "discard", "multi", "quit", "watch", "reset"];

/// Bytes a queued command counts for beyond its arguments (the bound is approximate).
const QUEUED_OVERHEAD_BYTES: usize = 16;

/// A command queued by a transaction: checked against the table when it was queued.
#[derive(Debug)]
struct Queued {
    spec: &'static Spec,
    words: Vec<Vec<u8>>,
}

/// A transaction being queued, between MULTI and EXEC or DISCARD.
#[derive(Debug, Default)]
pub struct Transaction {
    queue: Vec<Queued>,
    /// Bytes queued, bounded by `--max-request-bytes` (a client may not buffer more).
    queued_bytes: usize,
    /// A command was refused while queuing: EXEC aborts.
    failed: bool,
}

impl Transaction {
    /// Whether running the queue may wait on the engine (see `is_blocking` in `mod.rs`).
    pub fn is_blocking(&self, sync_always: bool) -> bool {
        self.queue
            .iter()
            .any(|q| super::is_blocking(&q.words, sync_always))
    }

    /// Whether a queued command writes (`CLIENT PAUSE WRITE` holds the EXEC).
    pub fn writes(&self) -> bool {
        self.queue.iter().any(|q| q.spec.flags.write)
    }
}

/// `MULTI`.
#[derive(Default)]
pub(super) struct Multi;

impl Command for Multi {
    fn execute(self, ctx: &mut Ctx<'_>) -> Result<Reply, CmdError> {
        if ctx.client.multi.is_some() {
            return Err(CmdError::new("ERR MULTI calls can not be nested"));
        }
        ctx.client.multi = Some(Transaction::default());
        Ok(Reply::Ok)
    }
}

/// `EXEC`: the queued commands' replies, `EXECABORT` when one was refused while queuing, or
/// a null array when a watched key changed.
#[derive(Default)]
pub(super) struct Exec;

impl Command for Exec {
    fn execute(self, ctx: &mut Ctx<'_>) -> Result<Reply, CmdError> {
        let Some(tx) = ctx.client.multi.take() else {
            return Err(CmdError::new("ERR EXEC without MULTI"));
        };
        // Forgotten once EXEC returns, whatever it answers.
        let watching = ctx.client.watching.take();
        if tx.failed {
            return Err(CmdError::new(
                "EXECABORT Transaction discarded because of previous errors.",
            ));
        }
        let calls: Vec<Call<'_>> = tx
            .queue
            .iter()
            .map(|q| Call {
                spec: q.spec,
                words: &q.words,
            })
            .collect();
        execute_transaction(ctx, &calls, watching.as_ref())
    }
}

/// `DISCARD`: drops the queued commands.
#[derive(Default)]
pub(super) struct Discard;

impl Command for Discard {
    fn execute(self, ctx: &mut Ctx<'_>) -> Result<Reply, CmdError> {
        if ctx.client.multi.take().is_none() {
            return Err(CmdError::new("ERR DISCARD without MULTI"));
        }
        ctx.client.watching = None;
        Ok(Reply::Ok)
    }
}

/// Refuses a command before it runs, with `error` (unknown command, NOAUTH, wrong arity),
/// and returns the error to reply with: inside a transaction this fails the transaction, and
/// an EXEC refused so (a wrong arity) aborts it at once with Redis's
/// `EXECABORT … because of: <error>`.
pub(super) fn reject(ctx: &mut Ctx<'_>, spec: Option<&Spec>, error: CmdError) -> CmdError {
    let Some(tx) = ctx.client.multi.as_mut() else {
        return error;
    };
    if spec.is_some_and(|s| s.name == "exec") {
        ctx.client.multi = None;
        ctx.client.watching = None;
        let text = error.text();
        let reason = text.strip_prefix("ERR ").unwrap_or(&text);
        return CmdError::new(format!(
            "EXECABORT Transaction discarded because of: {reason}"
        ));
    }
    tx.failed = true;
    error
}

/// Inside a transaction: queues `call` with `+QUEUED`, or refuses it. `None` for the
/// commands that run at once instead.
pub(super) fn queue(ctx: &mut Ctx<'_>, call: Call<'_>) -> Option<Result<Reply, CmdError>> {
    let spec = call.spec;
    if RUN_AT_ONCE.contains(&spec.name) {
        return None;
    }
    if spec.flags.no_multi {
        super::accounting::rejected(ctx.server, spec, call.args());
        let e = CmdError::new("ERR Command not allowed inside a transaction");
        return Some(Err(reject(ctx, Some(spec), e)));
    }
    let bytes: usize = call
        .words
        .iter()
        .map(|a| a.len() + QUEUED_OVERHEAD_BYTES)
        .sum();
    let limit = ctx.server.config.max_request_bytes;
    let tx = ctx.client.multi.as_mut()?;
    if tx.queued_bytes.saturating_add(bytes) > limit {
        super::accounting::rejected(ctx.server, spec, call.args());
        let e = CmdError::new(format!(
            "ERR the transaction's queued commands exceed --max-request-bytes ({limit} bytes)"
        ));
        return Some(Err(reject(ctx, Some(spec), e)));
    }
    tx.queued_bytes += bytes;
    tx.queue.push(Queued {
        spec,
        words: call.words.to_vec(),
    });
    Some(Ok(Reply::Status("QUEUED")))
}

/// The keys a connection watches (`WATCH`), each with its version and expiry time when
/// watched. Registered in the server's [`Watches`](crate::state::Watches) while this lives:
/// dropping it (EXEC, DISCARD, UNWATCH, the connection's end) unregisters every key.
pub struct Watching {
    server: Arc<Server>,
    keys: Vec<WatchedKey>,
    /// Bytes of the keys, bounded by `--max-request-bytes`.
    bytes: usize,
}

/// A watched key as it was when watched.
#[derive(Debug)]
struct WatchedKey {
    key: Vec<u8>,
    version: u64,
    /// When the key (present when watched) expires; `None` for a key without an expiry or
    /// missing (already expired keys included).
    expire_at: Option<u64>,
}

impl Watching {
    fn new(server: Arc<Server>) -> Watching {
        server.watches.client_started();
        Watching {
            server,
            keys: Vec::new(),
            bytes: 0,
        }
    }

    /// The watched keys.
    pub(super) fn keys(&self) -> impl Iterator<Item = &[u8]> {
        self.keys.iter().map(|w| w.key.as_slice())
    }

    /// Whether a watched key changed since it was watched, at `now_ms`: written (its
    /// version moved) or expired (it had an expiry time, now past). The caller holds the
    /// keys' locks.
    pub(super) fn changed(&self, now_ms: u64) -> bool {
        self.keys.iter().any(|w| {
            self.server.watches.version(&w.key) != w.version
                || w.expire_at.is_some_and(|at| at <= now_ms)
        })
    }
}

impl Drop for Watching {
    fn drop(&mut self) {
        for w in &self.keys {
            self.server.watches.unwatch(&w.key);
        }
        self.server.watches.client_stopped();
    }
}

/// `WATCH key...`.
pub(super) struct Watch<'a> {
    keys: &'a [Vec<u8>],
}

impl<'a> Watch<'a> {
    pub(super) fn parse(args: &'a [Vec<u8>]) -> Result<Self, CmdError> {
        Ok(Watch { keys: args })
    }
}

impl Command for Watch<'_> {
    fn execute(self, ctx: &mut Ctx<'_>) -> Result<Reply, CmdError> {
        if ctx.client.multi.is_some() {
            return Err(CmdError::new("ERR WATCH inside MULTI is not allowed"));
        }
        let limit = ctx.server.config.max_request_bytes;
        let watched = ctx.client.watching.as_ref();
        let mut new: Vec<&[u8]> = Vec::new();
        for key in self.keys {
            let known = watched.is_some_and(|w| w.keys().any(|k| k == key.as_slice()));
            if !known && !new.contains(&key.as_slice()) {
                new.push(key);
            }
        }
        let bytes = watched.map_or(0, |w| w.bytes)
            + new
                .iter()
                .map(|k| k.len() + WATCHED_OVERHEAD_BYTES)
                .sum::<usize>();
        if bytes > limit {
            return Err(CmdError::new(format!(
                "ERR the watched keys exceed --max-request-bytes ({limit} bytes)"
            )));
        }
        let _locks = ctx.lock_keys(&new);
        let now = now_ms(ctx);
        let mut expiry = Vec::with_capacity(new.len());
        for key in &new {
            let entry = read_raw(ctx, key)?;
            expiry.push(entry.and_then(|e| e.expire_at).filter(|&at| at > now));
        }
        // Registered only once every read succeeded: nothing to undo on an error.
        let keys: Vec<WatchedKey> = new
            .into_iter()
            .zip(expiry)
            .map(|(key, expire_at)| WatchedKey {
                key: key.to_vec(),
                version: ctx.server.watches.watch(key),
                expire_at,
            })
            .collect();
        let server = Arc::clone(ctx.server);
        let watching = ctx
            .client
            .watching
            .get_or_insert_with(|| Watching::new(server));
        watching.keys.extend(keys);
        watching.bytes = bytes;
        Ok(Reply::Ok)
    }
}

/// Bytes a watched key counts for beyond its own.
const WATCHED_OVERHEAD_BYTES: usize = 48;

/// `UNWATCH`: forgets the connection's watched keys.
#[derive(Default)]
pub(super) struct Unwatch;

impl Command for Unwatch {
    fn execute(self, ctx: &mut Ctx<'_>) -> Result<Reply, CmdError> {
        ctx.client.watching = None;
        Ok(Reply::Ok)
    }
}
