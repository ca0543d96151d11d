//! Transactions: MULTI, EXEC and DISCARD, with Redis's semantics and texts.
//!
//! MULTI opens a queue on the connection (`Client::multi`). Every later command is checked as
//! it arrives, as Redis checks it (`execute` in `mod.rs`): an unknown name, a wrong arity, or
//! a command refused inside a transaction (SAVE, SHUTDOWN: Redis's `no-multi`) gets its error
//! and marks the transaction failed, so that EXEC answers `EXECABORT` and runs nothing; any
//! other command is queued with `+QUEUED`. MULTI, EXEC, DISCARD and QUIT run at once (a
//! nested MULTI is an error that does not fail the transaction; QUIT closes the connection,
//! which drops the queue).
//!
//! EXEC runs the queue as one step (`execute_transaction` in `mod.rs`), through the machinery
//! of a pipelined run (`store.rs`): the keys the commands name are locked for the whole step
//! (every key when one of them walks the keyspace), reads see the transaction's earlier
//! writes, and the writes are committed as one write batch after the last command, before
//! any reply is sent. Errors while running (INCR of a non-integer, a syntax error) are
//! elements of EXEC's reply and do not stop the other commands, as in Redis.
//!
//! A queued command lives only in its connection's [`Transaction`]: nothing reaches the
//! engine before EXEC, and a connection that closes drops its queue. WATCH is not
//! implemented: it is an unknown command, inside a transaction too (where it fails the
//! transaction; Redis would answer `ERR WATCH inside MULTI is not allowed` without failing it).

use super::run::execute_transaction;
use super::{Call, CmdError, Command, Ctx, Reply, Spec};

/// Commands that run at once inside a transaction instead of being queued.
const RUN_AT_ONCE: [&str; 4] = ["exec", "discard", "multi", "quit"];

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

/// `EXEC`: the queued commands' replies, or `EXECABORT` when one was refused while queuing.
#[derive(Default)]
pub(super) struct Exec;

impl Command for Exec {
    fn execute(self, ctx: &mut Ctx<'_>) -> Result<Reply, CmdError> {
        let Some(tx) = ctx.client.multi.take() else {
            return Err(CmdError::new("ERR EXEC without MULTI"));
        };
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
        execute_transaction(ctx, &calls)
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
