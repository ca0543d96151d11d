//! How a client's batch of pipelined commands runs: one command at a time, except that
//! consecutive commands on keys (reads and writes of the string commands, DEL, EXISTS, …)
//! run as one run under all their keys' locks, with their writes committed as one write
//! batch at the run's end — one WAL record and, under `--sync always`, one fsync for the run
//! (`store.rs`). A transaction's EXEC runs its queue the same way. Inside a transaction no
//! run forms: each command is queued.
//!
//! Results are held until the run's commit: if it fails, no reply may claim a write that did
//! not happen, so every command of the run gets the commit's error (EXEC: its reply is the
//! error alone).

use super::store::{self, Pending};
use super::transaction::Watching;
use super::{accounting, execute, Call, CmdError, Ctx, Protocol, Reply};
use crate::reply::Out;
use crate::state::Server;
use std::time::Instant;

/// Runs a client's batch of pipelined commands in order, their replies encoded into `out`
/// (as `CLIENT REPLY` lets them), and returns how many ran: all of them, unless `CLIENT
/// PAUSE` holds one, which the caller runs again once the pause lets it
/// (`super::held_by_pause`). While no pause is active this costs one atomic load per
/// command or run.
pub fn execute_batch(ctx: &mut Ctx<'_>, out: &mut Out, cmds: &[Vec<Vec<u8>>]) -> usize {
    out.protocol = ctx.client.protocol;
    let mut i = 0;
    while i < cmds.len() && !ctx.client.close {
        let paused = ctx.server.pause.is_active();
        if paused && super::held_by_pause(ctx.server, ctx.client, &cmds[i]).is_some() {
            break;
        }
        // No runs while a pause is active, nor in RESP2's subscribed mode: each command is
        // checked on its own.
        let run: Vec<Call<'_>> = if ctx.client.authenticated
            && ctx.client.multi.is_none()
            && !paused
            && (ctx.client.subscriptions.is_none() || ctx.client.protocol == Protocol::Resp3)
        {
            cmds[i..]
                .iter()
                .map_while(|c| Call::check(c).ok().filter(Call::joins_runs))
                .collect()
        } else {
            Vec::new()
        };
        if run.len() >= 2 {
            i += run.len();
            for result in execute_run(ctx, &run) {
                emit(ctx, out, result);
            }
        } else {
            // Counts so far are shared first: an INFO in the pipeline sees them.
            accounting::flush(ctx);
            let result = execute(ctx, &cmds[i]);
            out.protocol = ctx.client.protocol; // HELLO answers in the protocol it chose
                                                // A PUBLISH to a channel the client itself listens to: the message goes out
                                                // before PUBLISH's reply, as Redis writes it (other messages wait for the batch's
                                                // end: `session.rs`).
            if ctx.client.subscriptions.is_some()
                && cmds[i]
                    .first()
                    .is_some_and(|n| super::pubsub::is_publish(n))
            {
                ctx.client.info.mailbox.drain_into(&mut out.buf);
            }
            emit(ctx, out, result);
            i += 1;
        }
    }
    accounting::flush(ctx);
    i
}

/// Encodes a command's result into `out` unless `CLIENT REPLY` suppresses it, counting an
/// error reply either way (as Redis does).
fn emit(ctx: &mut Ctx<'_>, out: &mut Out, result: Result<Reply, CmdError>) {
    if let Err(e) = &result {
        accounting::error(ctx.server, e);
    }
    if ctx.client.replies.send_this() {
        out.result(result);
    }
}

/// Runs `calls` as one run: their keys locked once, their writes committed together; if
/// the commit fails, every command of the run gets its error.
fn execute_run(ctx: &mut Ctx<'_>, calls: &[Call<'_>]) -> Vec<Result<Reply, CmdError>> {
    let keys: Vec<&[u8]> = calls.iter().flat_map(|c| c.run_keys()).flatten().collect();
    let server: &Server = ctx.server;
    let _locks = server.lock_keys(&keys);
    match run_deferred(ctx, calls) {
        Ok((results, commit_usec)) => {
            accounting::share_commit(ctx, calls, commit_usec);
            results.into_iter().map(|(result, _)| result).collect()
        }
        Err(error) => calls.iter().map(|_| Err(error.clone())).collect(),
    }
}

/// Runs a transaction's queued commands (checked when queued) as one step, EXEC's reply an
/// array of theirs: every key they name is locked for the whole step (every key when one of
/// them walks or flushes the keyspace), so no other client's write lands between them; their
/// writes are committed as one batch, which other clients see all at once. If the commit
/// fails, EXEC's reply is the error alone: nothing of the transaction was written.
///
/// With `watching` (WATCH), its keys are locked too and checked first: when one changed,
/// nothing runs and the reply is a null array.
pub(super) fn execute_transaction(
    ctx: &mut Ctx<'_>,
    calls: &[Call<'_>],
    watching: Option<&Watching>,
) -> Result<Reply, CmdError> {
    let server: &Server = ctx.server;
    let keys = transaction_keys(calls).map(|mut keys| {
        keys.extend(watching.into_iter().flat_map(Watching::keys));
        keys
    });
    let _locks = match keys {
        Some(keys) => server.lock_keys(&keys),
        None => server.lock_all_keys(),
    };
    if watching.is_some_and(|w| w.changed(server.now_ms())) {
        return Ok(Reply::NullArray);
    }
    let before = ctx.client.protocol;
    let (results, _) = run_deferred(ctx, calls)?;
    // A queued HELLO switches protocols: each element in the protocol its command left.
    let switched = results.iter().any(|(_, p)| *p != before);
    Ok(Reply::Array(
        results
            .into_iter()
            .map(|(result, protocol)| {
                if let Err(e) = &result {
                    accounting::error(server, e);
                }
                let reply = Reply::from_result(result);
                if switched {
                    Reply::In(protocol, Box::new(reply))
                } else {
                    reply
                }
            })
            .collect(),
    ))
}

/// A command's result and the connection's protocol once it ran.
type Ran = (Result<Reply, CmdError>, Protocol);

/// Runs `calls` with their writes deferred (`ctx.pending`) and commits them at the end. The
/// caller holds the locks. Each result comes with the connection's protocol once its
/// command ran, and the commit's time (µs) with them; `Err` is the commit's error.
fn run_deferred(ctx: &mut Ctx<'_>, calls: &[Call<'_>]) -> Result<(Vec<Ran>, u64), CmdError> {
    ctx.pending = Some(Pending::default());
    // Each command starts when the one before it ended: one clock read per command.
    let mut clock = Instant::now();
    let results = calls
        .iter()
        .map(|call| {
            let (result, ended) = call.run_at(ctx, clock);
            clock = ended;
            (result, ctx.client.protocol)
        })
        .collect();
    let pending = ctx.pending.take().unwrap_or_default();
    store::commit_pending(ctx, pending)?;
    let usec = u64::try_from(clock.elapsed().as_micros()).unwrap_or(u64::MAX);
    Ok((results, usec))
}

/// The keys a transaction's commands name, or `None` when one of them reads or writes the
/// whole keyspace (SCAN, KEYS, DBSIZE, FLUSHDB: every key must be locked).
fn transaction_keys<'a>(calls: &[Call<'a>]) -> Option<Vec<&'a [u8]>> {
    let mut keys = Vec::new();
    for call in calls {
        match call.run_keys() {
            Some(k) => keys.extend(k),
            None if call.spec.flags.write || call.spec.flags.readonly => return None,
            None => {}
        }
    }
    Some(keys)
}
