//! Server commands: COMMAND, INFO, SLOWLOG, SAVE/BGSAVE/LASTSAVE, TIME and SHUTDOWN (CONFIG is
//! `config.rs`).

use super::{is, printable, CmdError, Command, Ctx, Reply, Shutdown, Spec, COMMANDS};
use crate::state::unix_seconds;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// COMMAND's subcommands (counted as `command|name` by `INFO commandstats`).
pub(super) const COMMAND_SUBCOMMANDS: &[&str] = &["count", "list", "info", "docs"];

/// SLOWLOG's subcommands.
pub(super) const SLOWLOG_SUBCOMMANDS: &[&str] = &["get", "len", "reset", "help"];

/// `COMMAND [COUNT | DOCS [name...] | INFO [name...] | LIST]`.
pub(super) enum CommandCmd<'a> {
    /// Every command's `INFO` entry.
    All,
    Count,
    List,
    /// The named commands' entries (every command's when none is named).
    Info(&'a [Vec<u8>]),
    Docs(&'a [Vec<u8>]),
}

impl<'a> CommandCmd<'a> {
    pub(super) fn parse(args: &'a [Vec<u8>]) -> Result<Self, CmdError> {
        let Some((sub, names)) = args.split_first() else {
            return Ok(CommandCmd::All);
        };
        Ok(if is(sub, "count") && names.is_empty() {
            CommandCmd::Count
        } else if is(sub, "list") && names.is_empty() {
            CommandCmd::List
        } else if is(sub, "info") {
            CommandCmd::Info(names)
        } else if is(sub, "docs") {
            CommandCmd::Docs(names)
        } else if is(sub, "count") {
            return Err(CmdError::arity("command|count"));
        } else if is(sub, "list") {
            // COMMAND LIST FILTERBY …: not supported.
            return Err(CmdError::syntax());
        } else {
            return Err(CmdError::new(format!(
                "ERR unknown subcommand '{}'. Try COMMAND HELP.",
                printable(sub, 128)
            )));
        })
    }
}

impl Command for CommandCmd<'_> {
    fn execute(self, _ctx: &mut Ctx<'_>) -> Result<Reply, CmdError> {
        let named = |names: &[Vec<u8>]| -> Vec<Option<&'static Spec>> {
            names.iter().map(|n| super::lookup(n)).collect()
        };
        Ok(match self {
            CommandCmd::All => Reply::Array(COMMANDS.iter().map(command_info).collect()),
            CommandCmd::Count => Reply::Int(COMMANDS.len() as i64),
            CommandCmd::List => Reply::bulk_array(COMMANDS.iter().map(|s| s.name)),
            CommandCmd::Info(names) => {
                let specs: Vec<Option<&'static Spec>> = if names.is_empty() {
                    COMMANDS.iter().map(Some).collect()
                } else {
                    named(names)
                };
                Reply::Array(
                    specs
                        .into_iter()
                        .map(|s| s.map_or(Reply::Null, command_info))
                        .collect(),
                )
            }
            CommandCmd::Docs(names) => {
                let specs: Vec<&'static Spec> = if names.is_empty() {
                    COMMANDS.iter().collect()
                } else {
                    named(names).into_iter().flatten().collect()
                };
                let field = |name: &str, value: &str| (Reply::bulk(name), Reply::bulk(value));
                Reply::Map(
                    specs
                        .into_iter()
                        .map(|s| {
                            let docs = Reply::Map(vec![
                                field("summary", s.summary),
                                field("since", "1.0.0"),
                                field("group", s.group),
                            ]);
                            (Reply::bulk(s.name), docs)
                        })
                        .collect(),
                )
            }
        })
    }
}

/// One command's `COMMAND INFO` entry (Redis 7's ten fields).
fn command_info(s: &Spec) -> Reply {
    let mut flags = Vec::new();
    if s.flags.write {
        flags.push(Reply::Status("write"));
    }
    if s.flags.readonly {
        flags.push(Reply::Status("readonly"));
    }
    if s.flags.admin {
        flags.push(Reply::Status("admin"));
    }
    if s.flags.noauth {
        flags.push(Reply::Status("no_auth"));
    }
    if s.flags.no_multi {
        flags.push(Reply::Status("no_multi"));
    }
    if !s.flags.blocking && (s.flags.readonly || s.flags.write) {
        flags.push(Reply::Status("fast"));
    }
    // Sets in RESP3, as Redis 7.0 sends them (empty here but for the flags).
    let empty = || Reply::Set(vec![]);
    Reply::Array(vec![
        Reply::bulk(s.name),
        Reply::Int(s.arity),
        Reply::Set(flags),
        Reply::Int(s.keys.0),
        Reply::Int(s.keys.1),
        Reply::Int(s.keys.2),
        empty(), // ACL categories
        empty(), // tips
        empty(), // key specs
        empty(), // subcommands
    ])
}

/// `INFO [section ...]`.
pub(super) struct Info {
    sections: Vec<String>,
}

impl Info {
    pub(super) fn parse(args: &[Vec<u8>]) -> Result<Self, CmdError> {
        let sections = args
            .iter()
            .map(|s| String::from_utf8_lossy(s).to_ascii_lowercase())
            .collect();
        Ok(Info { sections })
    }
}

impl Command for Info {
    fn execute(self, ctx: &mut Ctx<'_>) -> Result<Reply, CmdError> {
        let text = super::info::render(ctx.server, &self.sections);
        Ok(Reply::Verbatim(text.into_bytes()))
    }
}

/// Flushes the memtable into a table and syncs: every write so far is in a synced table.
fn save_now(server: &crate::state::Server) -> augur::Result<()> {
    // The writes counted before the flush are the ones it saves (a write racing it counts
    // as one since the save, which errs on the safe side).
    let writes = server.counters.key_writes.load(Ordering::Acquire);
    let db = server.db()?;
    db.flush()?;
    db.sync()?;
    server.last_save.store(unix_seconds(), Ordering::Release);
    let mut saves = server.saves.lock();
    saves.writes_at_save = writes;
    saves.saves += 1;
    Ok(())
}

/// `SAVE`.
#[derive(Default)]
pub(super) struct Save;

impl Command for Save {
    fn execute(self, ctx: &mut Ctx<'_>) -> Result<Reply, CmdError> {
        save_now(ctx.server)?;
        Ok(Reply::Ok)
    }
}

/// Saves, then — with `--checkpoint-dir` — writes a checkpoint there
/// (`checkpoint-<unix ms>`) and removes the older ones once it is complete: the directory
/// always holds at least one whole checkpoint after the first BGSAVE.
fn bgsave_now(server: &crate::state::Server) -> augur::Result<()> {
    save_now(server)?;
    let Some(dir) = &server.config.checkpoint_dir else {
        return Ok(());
    };
    std::fs::create_dir_all(dir).map_err(|e| {
        augur::Error::io(
            format!("creating the checkpoint directory {}", dir.display()),
            e,
        )
    })?;
    let unix_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    let name = format!("checkpoint-{unix_ms}");
    let info = server.db()?.checkpoint(dir.join(&name))?;
    log::info!(
        "BGSAVE: checkpoint {} at seqno {}",
        dir.join(&name).display(),
        info.seqno
    );
    let older = std::fs::read_dir(dir)
        .map_err(|e| augur::Error::io(format!("listing {}", dir.display()), e))?
        .filter_map(|entry| entry.ok())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("checkpoint-") && *n != name && !n.ends_with(".augur-tmp"));
    for old in older.collect::<Vec<_>>() {
        if let Err(e) = std::fs::remove_dir_all(dir.join(&old)) {
            log::warn!("BGSAVE: could not remove the older checkpoint {old}: {e}");
        }
    }
    Ok(())
}

/// `BGSAVE [SCHEDULE]`: [`save_now`] on a thread of its own, and a checkpoint with
/// `--checkpoint-dir`.
pub(super) struct BgSave;

impl BgSave {
    pub(super) fn parse(args: &[Vec<u8>]) -> Result<Self, CmdError> {
        if args.len() > 1 || args.first().is_some_and(|s| !is(s, "schedule")) {
            return Err(CmdError::syntax());
        }
        Ok(BgSave)
    }
}

impl Command for BgSave {
    fn execute(self, ctx: &mut Ctx<'_>) -> Result<Reply, CmdError> {
        let server = ctx.server;
        if server.bgsave_running.swap(true, Ordering::AcqRel) {
            return Err(CmdError::new("ERR Background save already in progress"));
        }
        let shared = Arc::clone(ctx.server);
        let started = std::time::Instant::now();
        server.saves.lock().bgsave_started = Some(started);
        std::thread::spawn(move || {
            let saved = bgsave_now(&shared);
            if let Err(e) = &saved {
                log::warn!("BGSAVE failed: {e}");
            }
            {
                let mut saves = shared.saves.lock();
                saves.last_bgsave_ok = saved.is_ok();
                saves.last_bgsave_secs =
                    i64::try_from(started.elapsed().as_secs()).unwrap_or(i64::MAX);
                saves.bgsave_started = None;
            }
            shared.bgsave_running.store(false, Ordering::Release);
        });
        Ok(Reply::Status("Background saving started"))
    }
}

/// `LASTSAVE`.
#[derive(Default)]
pub(super) struct LastSave;

impl Command for LastSave {
    fn execute(self, ctx: &mut Ctx<'_>) -> Result<Reply, CmdError> {
        let t = ctx.server.last_save.load(Ordering::Acquire);
        Ok(Reply::Int(i64::try_from(t).unwrap_or(i64::MAX)))
    }
}

/// `TIME`: seconds and microseconds.
#[derive(Default)]
pub(super) struct Time;

impl Command for Time {
    fn execute(self, _ctx: &mut Ctx<'_>) -> Result<Reply, CmdError> {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        Ok(Reply::bulk_array([
            now.as_secs().to_string(),
            now.subsec_micros().to_string(),
        ]))
    }
}

/// `SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE]`: stops the server; like Redis, no reply on
/// success (the connection closes).
pub(super) struct ShutdownCmd(Shutdown);

impl ShutdownCmd {
    pub(super) fn parse(args: &[Vec<u8>]) -> Result<Self, CmdError> {
        let mut how = Shutdown::Save;
        for opt in args {
            if is(opt, "nosave") {
                how = Shutdown::NoSave;
            } else if is(opt, "save") {
                how = Shutdown::Save;
            } else if !is(opt, "now") && !is(opt, "force") {
                return Err(CmdError::syntax());
            }
        }
        Ok(ShutdownCmd(how))
    }
}

impl Command for ShutdownCmd {
    fn execute(self, ctx: &mut Ctx<'_>) -> Result<Reply, CmdError> {
        ctx.client.shutdown = Some(self.0);
        ctx.client.close = true;
        Ok(Reply::Nothing)
    }
}

/// `SLOWLOG GET [count] | LEN | RESET | HELP`, with Redis 7.0's texts.
pub(super) enum SlowlogCmd {
    /// The newest entries (`None`: all of them).
    Get(Option<usize>),
    Len,
    Reset,
    Help,
}

impl SlowlogCmd {
    pub(super) fn parse(args: &[Vec<u8>]) -> Result<Self, CmdError> {
        let Some((sub, rest)) = args.split_first() else {
            return Err(CmdError::arity("slowlog"));
        };
        let lower = String::from_utf8_lossy(sub).to_ascii_lowercase();
        if !SLOWLOG_SUBCOMMANDS.contains(&lower.as_str()) {
            return Err(CmdError::new(format!(
                "ERR unknown subcommand '{}'. Try SLOWLOG HELP.",
                printable(sub, 128)
            )));
        }
        if lower != "get" && !rest.is_empty() {
            return Err(CmdError::arity(&format!("slowlog|{lower}")));
        }
        Ok(match (lower.as_str(), rest) {
            ("get", []) => SlowlogCmd::Get(Some(10)),
            ("get", [count]) => {
                let n = super::parse_i64(count)
                    .ok()
                    .filter(|&n| n >= -1)
                    .ok_or_else(|| {
                        CmdError::new("ERR count should be greater than or equal to -1")
                    })?;
                SlowlogCmd::Get(usize::try_from(n).ok())
            }
            ("get", _) => {
                return Err(CmdError::new(format!(
                    "ERR unknown subcommand or wrong number of arguments for '{}'. Try \
                     SLOWLOG HELP.",
                    printable(sub, 128)
                )))
            }
            ("len", _) => SlowlogCmd::Len,
            ("reset", _) => SlowlogCmd::Reset,
            _ => SlowlogCmd::Help,
        })
    }
}

impl Command for SlowlogCmd {
    fn execute(self, ctx: &mut Ctx<'_>) -> Result<Reply, CmdError> {
        let log = &ctx.server.slowlog;
        let int = |n: u64| Reply::Int(i64::try_from(n).unwrap_or(i64::MAX));
        Ok(match self {
            SlowlogCmd::Get(count) => Reply::Array(
                log.newest(count)
                    .into_iter()
                    .map(|e| {
                        Reply::Array(vec![
                            int(e.id),
                            int(e.unix_time),
                            int(e.usec),
                            Reply::bulk_array(e.args),
                            Reply::bulk(e.addr),
                            Reply::bulk(e.name),
                        ])
                    })
                    .collect(),
            ),
            SlowlogCmd::Len => int(log.len() as u64),
            SlowlogCmd::Reset => {
                log.reset();
                Reply::Ok
            }
            SlowlogCmd::Help => Reply::Array(
                [
                    "SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                    "GET [<count>]",
                    "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
                    "    Entries are made of:",
                    "    id, timestamp, time in microseconds, arguments array, client IP and port,",
                    "    client name",
                    "LEN",
                    "    Return the length of the slowlog.",
                    "RESET",
                    "    Reset the slowlog.",
                    "HELP",
                    "    Prints this help.",
                ]
                .into_iter()
                .map(Reply::Status)
                .collect(),
            ),
        })
    }
}
