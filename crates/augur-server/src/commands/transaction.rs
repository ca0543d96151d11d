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

use super::{Ctx, Spec};

/// Commands that run at once inside a transaction instead of being queued.
const RUN_AT_ONCE: [&str; 4] = ["exec", "discard", "multi", "quit"];

/// Bytes a queued command counts for beyond its arguments (the bound is approximate).
const QUEUED_OVERHEAD_BYTES: usize = 16;

/// A transaction being queued, between MULTI and EXEC or DISCARD.
#[derive(Debug, Default)]
pub struct Transaction {
    queue: Vec<Vec<Vec<u8>>>,
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
            .any(|c| super::is_blocking(c, sync_always))
    }
}

/// `MULTI`.
pub(super) fn multi(ctx: &mut Ctx<'_>, _a: &[Vec<u8>]) {
    if ctx.client.multi.is_some() {
        ctx.out.error("ERR MULTI calls can not be nested");
        return;
    }
    ctx.client.multi = Some(Transaction::default());
    ctx.out.ok();
}

/// `EXEC`: the queued commands' replies, or `EXECABORT` when one was refused while queuing.
pub(super) fn exec(ctx: &mut Ctx<'_>, _a: &[Vec<u8>]) {
    let Some(tx) = ctx.client.multi.take() else {
        ctx.out.error("ERR EXEC without MULTI");
        return;
    };
    if tx.failed {
        ctx.out
            .error("EXECABORT Transaction discarded because of previous errors.");
        return;
    }
    super::execute_transaction(ctx, &tx.queue);
}

/// `DISCARD`: drops the queued commands.
pub(super) fn discard(ctx: &mut Ctx<'_>, _a: &[Vec<u8>]) {
    if ctx.client.multi.take().is_none() {
        ctx.out.error("ERR DISCARD without MULTI");
        return;
    }
    ctx.out.ok();
}

/// Refuses a command before it runs (`error` is the full text, `ERR …`): inside a
/// transaction this fails the transaction, and an EXEC refused so (a wrong arity) aborts it
/// at once with Redis's `EXECABORT … because of: <error>`.
pub(super) fn reject(ctx: &mut Ctx<'_>, spec: Option<&Spec>, error: &str) {
    let Some(tx) = ctx.client.multi.as_mut() else {
        ctx.out.error(error);
        return;
    };
    if spec.is_some_and(|s| s.name == "exec") {
        ctx.client.multi = None;
        let reason = error.strip_prefix("ERR ").unwrap_or(error);
        ctx.out.error(&format!(
            "EXECABORT Transaction discarded because of: {reason}"
        ));
        return;
    }
    tx.failed = true;
    ctx.out.error(error);
}

/// Inside a transaction: queues `args` (a known command with a valid arity) with `+QUEUED`,
/// or refuses it. Returns false for the commands that run at once instead.
pub(super) fn queue(ctx: &mut Ctx<'_>, spec: &Spec, args: &[Vec<u8>]) -> bool {
    if RUN_AT_ONCE.contains(&spec.name) {
        return false;
    }
    if spec.flags.no_multi {
        reject(
            ctx,
            Some(spec),
            "ERR Command not allowed inside a transaction",
        );
        return true;
    }
    let bytes: usize = args.iter().map(|a| a.len() + QUEUED_OVERHEAD_BYTES).sum();
    let limit = ctx.server.config.max_request_bytes;
    let Some(tx) = ctx.client.multi.as_mut() else {
        return false;
    };
    if tx.queued_bytes.saturating_add(bytes) > limit {
        let text = format!(
            "ERR the transaction's queued commands exceed --max-request-bytes ({limit} bytes)"
        );
        reject(ctx, Some(spec), &text);
        return true;
    }
    tx.queued_bytes += bytes;
    tx.queue.push(args.to_vec());
    ctx.out.simple("QUEUED");
    true
}
