//! Server commands: COMMAND, CONFIG GET, INFO, SAVE/BGSAVE/LASTSAVE, TIME and SHUTDOWN.

use super::{engine_error, is, printable, Ctx, Shutdown, Spec, COMMANDS};
use crate::glob;
use crate::state::unix_seconds;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// `COMMAND [COUNT | DOCS [name...] | INFO [name...] | LIST]`.
pub(super) fn command(ctx: &mut Ctx<'_>, a: &[Vec<u8>]) {
    let Some(sub) = a.first() else {
        ctx.out.array(COMMANDS.len());
        for spec in COMMANDS {
            command_info(ctx, spec);
        }
        return;
    };
    let named = |names: &[Vec<u8>]| -> Vec<Option<&'static Spec>> {
        names.iter().map(|n| super::lookup(n)).collect()
    };
    if is(sub, "count") && a.len() == 1 {
        ctx.out.int(COMMANDS.len() as i64);
    } else if is(sub, "list") && a.len() == 1 {
        let names: Vec<&str> = COMMANDS.iter().map(|s| s.name).collect();
        ctx.out.bulk_array(&names);
    } else if is(sub, "info") {
        let specs: Vec<Option<&'static Spec>> = if a.len() == 1 {
            COMMANDS.iter().map(Some).collect()
        } else {
            named(&a[1..])
        };
        ctx.out.array(specs.len());
        for spec in specs {
            match spec {
                Some(s) => command_info(ctx, s),
                None => ctx.out.null(),
            }
        }
    } else if is(sub, "docs") {
        let specs: Vec<&'static Spec> = if a.len() == 1 {
            COMMANDS.iter().collect()
        } else {
            named(&a[1..]).into_iter().flatten().collect()
        };
        // RESP2 has no maps: a map is an array of keys and values.
        ctx.out.array(specs.len() * 2);
        for s in specs {
            ctx.out.bulk(s.name.as_bytes());
            ctx.out.array(6);
            ctx.out.bulk(b"summary");
            ctx.out.bulk(s.summary.as_bytes());
            ctx.out.bulk(b"since");
            ctx.out.bulk(b"1.0.0");
            ctx.out.bulk(b"group");
            ctx.out.bulk(s.group.as_bytes());
        }
    } else {
        ctx.out.error(&format!(
            "ERR unknown subcommand or wrong number of arguments for '{}'. Try COMMAND HELP.",
            printable(sub, 64)
        ));
    }
}

/// One command's `COMMAND INFO` entry (Redis 7's ten fields).
fn command_info(ctx: &mut Ctx<'_>, s: &Spec) {
    let mut flags = Vec::new();
    if s.flags.write {
        flags.push("write");
    }
    if s.flags.readonly {
        flags.push("readonly");
    }
    if s.flags.admin {
        flags.push("admin");
    }
    if s.flags.noauth {
        flags.push("no_auth");
    }
    if s.flags.no_multi {
        flags.push("no_multi");
    }
    if !s.flags.blocking && (s.flags.readonly || s.flags.write) {
        flags.push("fast");
    }
    ctx.out.array(10);
    ctx.out.bulk(s.name.as_bytes());
    ctx.out.int(s.arity);
    ctx.out.array(flags.len());
    for f in flags {
        ctx.out.simple(f);
    }
    ctx.out.int(s.keys.0);
    ctx.out.int(s.keys.1);
    ctx.out.int(s.keys.2);
    ctx.out.array(0); // ACL categories
    ctx.out.array(0); // tips
    ctx.out.array(0); // key specs
    ctx.out.array(0); // subcommands
}

/// `CONFIG GET parameter...` (glob patterns, Redis's parameter names); CONFIG SET and the
/// other subcommands are refused: the configuration is fixed at start.
pub(super) fn config(ctx: &mut Ctx<'_>, a: &[Vec<u8>]) {
    let sub = &a[0];
    if !is(sub, "get") {
        ctx.out.error(&format!(
            "ERR CONFIG {} is not supported by augur-server: its configuration is fixed at \
             start (flags or the --config file)",
            printable(sub, 32).to_ascii_uppercase()
        ));
        return;
    }
    if a.len() < 2 {
        ctx.out
            .error("ERR wrong number of arguments for 'config|get' command");
        return;
    }
    let c = &ctx.server.config;
    let params: Vec<(&str, String)> = vec![
        ("bind", c.bind.to_string()),
        ("port", c.port.to_string()),
        ("databases", "1".into()),
        ("maxclients", c.maxclients.to_string()),
        ("io-threads", c.io_threads.to_string()),
        (
            "timeout",
            c.idle_timeout.map_or(0, |t| t.as_secs()).to_string(),
        ),
        ("save", String::new()),
        ("appendonly", "yes".into()),
        ("appendfsync", c.sync.name().into()),
        ("proto-max-bulk-len", c.max_bulk_bytes.to_string()),
        ("client-query-buffer-limit", c.max_request_bytes.to_string()),
        ("maxmemory", "0".into()),
        ("dir", c.db.display().to_string()),
        (
            "protected-mode",
            if c.bind.is_loopback() { "yes" } else { "no" }.into(),
        ),
    ];
    let mut hits: Vec<&(&str, String)> = Vec::new();
    for pattern in &a[1..] {
        let lower = pattern.to_ascii_lowercase();
        for p in &params {
            if glob::matches(&lower, p.0.as_bytes()) && !hits.iter().any(|h| h.0 == p.0) {
                hits.push(p);
            }
        }
    }
    ctx.out.array(hits.len() * 2);
    for (name, value) in hits {
        ctx.out.bulk(name.as_bytes());
        ctx.out.bulk(value.as_bytes());
    }
}

/// `INFO [section ...]`.
pub(super) fn info(ctx: &mut Ctx<'_>, a: &[Vec<u8>]) {
    let sections: Vec<String> = a
        .iter()
        .map(|s| String::from_utf8_lossy(s).to_ascii_lowercase())
        .collect();
    let text = super::info::render(ctx.server, &sections);
    ctx.out.bulk(text.as_bytes());
}

/// Flushes the memtable into a table and syncs: every write so far is in a synced table.
fn save_now(server: &crate::state::Server) -> augur::Result<()> {
    server.db.flush()?;
    server.db.sync()?;
    server.last_save.store(unix_seconds(), Ordering::Release);
    Ok(())
}

/// `SAVE`.
pub(super) fn save(ctx: &mut Ctx<'_>, _a: &[Vec<u8>]) {
    match save_now(ctx.server) {
        Ok(()) => ctx.out.ok(),
        Err(e) => engine_error(ctx.out, &e),
    }
}

/// `BGSAVE [SCHEDULE]`: the same, on a thread of its own.
pub(super) fn bgsave(ctx: &mut Ctx<'_>, a: &[Vec<u8>]) {
    if a.len() > 1 || a.first().is_some_and(|s| !is(s, "schedule")) {
        ctx.out.error("ERR syntax error");
        return;
    }
    let server = ctx.server;
    if server.bgsave_running.swap(true, Ordering::AcqRel) {
        ctx.out.error("ERR Background save already in progress");
        return;
    }
    let shared = Arc::clone(ctx.server);
    std::thread::spawn(move || {
        if let Err(e) = save_now(&shared) {
            log::warn!("BGSAVE failed: {e}");
        }
        shared.bgsave_running.store(false, Ordering::Release);
    });
    ctx.out.simple("Background saving started");
}

/// `LASTSAVE`.
pub(super) fn lastsave(ctx: &mut Ctx<'_>, _a: &[Vec<u8>]) {
    let t = ctx.server.last_save.load(Ordering::Acquire);
    ctx.out.int(i64::try_from(t).unwrap_or(i64::MAX));
}

/// `TIME`: seconds and microseconds.
pub(super) fn time(ctx: &mut Ctx<'_>, _a: &[Vec<u8>]) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    ctx.out.array(2);
    ctx.out.bulk(now.as_secs().to_string().as_bytes());
    ctx.out.bulk(now.subsec_micros().to_string().as_bytes());
}

/// `SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE]`: stops the server; like Redis, no reply on
/// success (the connection closes).
pub(super) fn shutdown(ctx: &mut Ctx<'_>, a: &[Vec<u8>]) {
    let mut how = Shutdown::Save;
    for opt in a {
        if is(opt, "nosave") {
            how = Shutdown::NoSave;
        } else if is(opt, "save") {
            how = Shutdown::Save;
        } else if !is(opt, "now") && !is(opt, "force") {
            ctx.out.error("ERR syntax error");
            return;
        }
    }
    ctx.client.shutdown = Some(how);
    ctx.client.close = true;
}
