//! Server commands: COMMAND, CONFIG GET, INFO, SAVE/BGSAVE/LASTSAVE, TIME and SHUTDOWN.

use super::{is, printable, CmdError, Command, Ctx, Reply, Shutdown, Spec, COMMANDS};
use crate::glob;
use crate::state::unix_seconds;
use std::sync::atomic::Ordering;
use std::sync::Arc;

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
        } else {
            return Err(CmdError::new(format!(
                "ERR unknown subcommand or wrong number of arguments for '{}'. Try COMMAND \
                 HELP.",
                printable(sub, 64)
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

/// `CONFIG GET parameter...` (glob patterns, Redis's parameter names); CONFIG SET and the
/// other subcommands are refused: the configuration is fixed at start.
pub(super) struct ConfigGet<'a> {
    patterns: &'a [Vec<u8>],
}

impl<'a> ConfigGet<'a> {
    pub(super) fn parse(args: &'a [Vec<u8>]) -> Result<Self, CmdError> {
        let Some((sub, patterns)) = args.split_first() else {
            return Err(CmdError::arity("config"));
        };
        if !is(sub, "get") {
            return Err(CmdError::new(format!(
                "ERR CONFIG {} is not supported by augur-server: its configuration is fixed \
                 at start (flags or the --config file)",
                printable(sub, 32).to_ascii_uppercase()
            )));
        }
        if patterns.is_empty() {
            return Err(CmdError::arity("config|get"));
        }
        Ok(ConfigGet { patterns })
    }
}

impl Command for ConfigGet<'_> {
    fn execute(self, ctx: &mut Ctx<'_>) -> Result<Reply, CmdError> {
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
        for pattern in self.patterns {
            let lower = pattern.to_ascii_lowercase();
            for p in &params {
                if glob::matches(&lower, p.0.as_bytes()) && !hits.iter().any(|h| h.0 == p.0) {
                    hits.push(p);
                }
            }
        }
        Ok(Reply::Map(
            hits.into_iter()
                .map(|(name, value)| (Reply::bulk(*name), Reply::bulk(value.as_str())))
                .collect(),
        ))
    }
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
    server.db.flush()?;
    server.db.sync()?;
    server.last_save.store(unix_seconds(), Ordering::Release);
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

/// `BGSAVE [SCHEDULE]`: the same, on a thread of its own.
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
        std::thread::spawn(move || {
            if let Err(e) = save_now(&shared) {
                log::warn!("BGSAVE failed: {e}");
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
