//! What running a command counts, as Redis 7.0 counts it: its call and its time
//! (`INFO commandstats`: `calls`, `usec`, `failed_calls` when it answered an error,
//! `rejected_calls` when it was refused before running), the error replies by code
//! (`INFO errorstats`), and the slow log.
//!
//! A command is counted under its row of the table, on the connection's `Tally` (flushed to
//! the server's counts by [`flush`]); a subcommand of a container command (`CLIENT KILL`,
//! `CONFIG SET`) under its full name (`client|kill`), as Redis 7 names it; an unknown
//! subcommand not at all (Redis refuses it before it knows a command). A wrong number of
//! words for a subcommand is found by its parse and so counts as a failed call, where Redis
//! counts a rejected one.
//!
//! Time: from the command's start to its end on the server's clock. A pipelined run commits
//! its writes together after its last command (`run.rs`): the commit's time is shared
//! evenly among the run's commands ([`share_commit`]); a transaction's commit is in `EXEC`'s
//! time, which holds its commands' too (as in Redis).

use super::{admin, client, config, pubsub, Call, CmdError, Ctx, Spec, COMMANDS};
use crate::state::{Counters, Server};
use crate::stats::Counts;
use std::time::Duration;

/// The container commands and their subcommands (each counted as `name|sub`).
const CONTAINERS: [(&str, &[&str]); 5] = [
    ("pubsub", pubsub::SUBCOMMANDS),
    ("client", client::SUBCOMMANDS),
    ("config", config::SUBCOMMANDS),
    ("command", admin::COMMAND_SUBCOMMANDS),
    ("slowlog", admin::SLOWLOG_SUBCOMMANDS),
];

/// The subcommands of the container command `name` (`CLIENT`, `CONFIG`, `COMMAND`,
/// `SLOWLOG`, `PUBSUB`), lower case; empty for another command.
pub fn subcommands(name: &str) -> &'static [&'static str] {
    CONTAINERS
        .iter()
        .find(|(n, _)| *n == name)
        .map_or(&[], |(_, subs)| subs)
}

/// Where a call is counted.
enum Stat {
    /// Under its row of the table.
    Row(usize),
    /// Under a subcommand's full name.
    Named(String),
    /// Not at all (an unknown subcommand).
    Uncounted,
}

/// The row of `spec` in [`COMMANDS`] (specs live only there).
fn row_of(spec: &'static Spec) -> usize {
    let base = COMMANDS.as_ptr() as usize;
    (spec as *const Spec as usize).wrapping_sub(base) / std::mem::size_of::<Spec>()
}

fn stat_of(spec: &'static Spec, args: &[Vec<u8>]) -> Stat {
    // A command on keys is never a container: no search on the hot path.
    if spec.keys.0 != 0 {
        return Stat::Row(row_of(spec));
    }
    let Some((_, subs)) = CONTAINERS.iter().find(|(name, _)| *name == spec.name) else {
        return Stat::Row(row_of(spec));
    };
    let Some(sub) = args.first() else {
        return Stat::Row(row_of(spec));
    };
    match subs.iter().find(|s| sub.eq_ignore_ascii_case(s.as_bytes())) {
        Some(s) => Stat::Named(format!("{}|{s}", spec.name)),
        None => Stat::Uncounted,
    }
}

/// Counts `call`, which has just run for `took` (an error reply when `failed`), and logs
/// it in the slow log when it ran long enough.
pub(super) fn ran(ctx: &mut Ctx<'_>, call: Call<'_>, took: Duration, failed: bool) {
    let usec = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
    let server: &Server = ctx.server;
    match stat_of(call.spec, call.args()) {
        Stat::Row(row) => ctx
            .client
            .tally
            .add(&server.command_stats, row, usec, failed),
        Stat::Named(name) => {
            let counts = Counts {
                calls: 1,
                usec,
                failed: u64::from(failed),
                rejected: 0,
            };
            server.command_stats.add_named(&name, counts);
            Counters::add(&server.counters.commands, 1);
        }
        Stat::Uncounted => {}
    }
    let threshold = server.settings.slowlog_slower_than_us();
    // EXEC is not logged itself, its commands are (Redis's `CMD_SKIP_SLOWLOG`).
    if threshold >= 0
        && i64::try_from(usec).unwrap_or(i64::MAX) >= threshold
        && call.spec.name != "exec"
    {
        log_slow(ctx, call, usec);
    }
}

/// Adds `call` to the slow log, its secrets redacted as Redis redacts them.
fn log_slow(ctx: &Ctx<'_>, call: Call<'_>, usec: u64) {
    const REDACTED: &[u8] = b"(redacted)";
    let words = call.words;
    let is_set = words.get(1).is_some_and(|w| w.eq_ignore_ascii_case(b"set"));
    let shown: Vec<&[u8]> = words
        .iter()
        .enumerate()
        .map(|(i, word)| {
            let after = |n: usize, what: &[u8]| {
                i.checked_sub(n)
                    .and_then(|p| words.get(p))
                    .is_some_and(|w| w.eq_ignore_ascii_case(what))
            };
            let secret = match call.spec.name {
                "auth" => i >= 1,
                // HELLO … AUTH user password …: both.
                "hello" => after(1, b"auth") || after(2, b"auth"),
                // CONFIG SET … requirepass value …: the value.
                "config" => is_set && i >= 3 && i % 2 == 1 && after(1, b"requirepass"),
                _ => false,
            };
            if secret {
                REDACTED
            } else {
                word.as_slice()
            }
        })
        .collect();
    let info = &ctx.client.info;
    let max_len = ctx.server.settings.slowlog_max_len();
    if max_len > 0 {
        ctx.server.slowlog.push(
            &shown,
            usec,
            info.addr.to_string(),
            info.name.lock().clone(),
            max_len,
        );
    }
}

/// Counts a refusal of `spec` before it ran (wrong arity, not authenticated, refused
/// inside a transaction): its `rejected_calls`.
pub(super) fn rejected(server: &Server, spec: &'static Spec, args: &[Vec<u8>]) {
    let counts = Counts {
        rejected: 1,
        ..Counts::default()
    };
    match stat_of(spec, args) {
        Stat::Row(row) => server.command_stats.add(row, counts),
        Stat::Named(name) => server.command_stats.add_named(&name, counts),
        Stat::Uncounted => {}
    }
}

/// Counts an error reply (`INFO errorstats` by its code, the first word of its text).
pub(super) fn error(server: &Server, e: &CmdError) {
    let text = e.text();
    let code = text.split(' ').next().unwrap_or("ERR");
    server.command_stats.note_error(code);
}

/// Shares `usec`, the time of a run's commit, evenly among the run's `calls`.
pub(super) fn share_commit(ctx: &mut Ctx<'_>, calls: &[Call<'_>], usec: u64) {
    let Some(share) = usec.checked_div(calls.len() as u64) else {
        return;
    };
    for call in calls {
        ctx.client.tally.add_time(row_of(call.spec), share);
    }
}

/// Adds the connection's tally to the server's counts.
pub(super) fn flush(ctx: &mut Ctx<'_>) {
    let server: &Server = ctx.server;
    let calls = ctx.client.tally.take_calls();
    if calls > 0 {
        Counters::add(&server.counters.commands, calls);
    }
    ctx.client.tally.flush(&server.command_stats);
}

/// `INFO commandstats`' lines: `cmdstat_<name>:calls=…,usec=…,usec_per_call=…,
/// rejected_calls=…,failed_calls=…` for every command that was called or refused, table
/// order first, then the subcommands by name.
pub fn commandstats_lines(server: &Server) -> Vec<(String, String)> {
    let stats = &server.command_stats;
    let rows = COMMANDS
        .iter()
        .enumerate()
        .map(|(i, spec)| (spec.name.to_string(), stats.row(i)));
    rows.chain(stats.named())
        .filter(|(_, c)| c.calls > 0 || c.rejected > 0 || c.failed > 0)
        .map(|(name, c)| {
            let per_call = if c.calls == 0 {
                0.0
            } else {
                c.usec as f64 / c.calls as f64
            };
            (
                format!("cmdstat_{name}"),
                format!(
                    "calls={},usec={},usec_per_call={per_call:.2},rejected_calls={},failed_calls={}",
                    c.calls, c.usec, c.rejected, c.failed
                ),
            )
        })
        .collect()
}
