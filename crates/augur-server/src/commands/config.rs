//! `CONFIG GET | SET | RESETSTAT | REWRITE | HELP`, with Redis 7.0's names, replies and error
//! texts.
//!
//! `CONFIG SET` changes what can change while the server runs (`settings.rs`): `requirepass`,
//! `maxclients`, `timeout`, `appendfsync`, `slowlog-log-slower-than`, `slowlog-max-len`,
//! `client-output-buffer-limit`, and what a replica announces to Sentinel
//! (`replica-priority`, `replica-announce-ip`, `replica-announce-port`, `replica-announced`,
//! and the `slave-*` aliases of the first three, which `CONFIG GET` lists under both). It
//! takes several `name value` pairs and, as Redis 7.0, checks them all before it changes
//! any: an unknown name, an immutable one or a name given twice fails the whole command
//! with Redis's texts. The rest of what `CONFIG GET` shows cannot change: the server's
//! listening address, port, threads, limits and directory are fixed at start (`can't set
//! immutable config`, Redis's error for its own immutable parameters), and `save`,
//! `appendonly`, `maxmemory` and `maxmemory-policy` take only the value augur-server
//! works with (a client that sets `save ""` or `maxmemory 0` gets `OK`; another value gets
//! an error saying why). The engine's options are fixed when the database opens, so none is
//! here.
//!
//! `CONFIG REWRITE` writes the settings in effect, and `replicaof` (the primary replicated
//! now, removed on a primary), into the `--config` file (keeping its other lines and
//! comments), or fails with Redis's error when the server started without one.

use super::{is, printable, CmdError, Command, Ctx, Reply};
use crate::config::SyncPolicy;
use crate::glob;
use crate::settings::{self, ClientClass, OutputLimit};
use crate::state::Server;
use std::path::Path;

/// The subcommands (counted as `config|name` by `INFO commandstats`).
pub(super) const SUBCOMMANDS: &[&str] = &["get", "set", "resetstat", "rewrite", "help"];

/// `CONFIG <subcommand> …`.
pub(super) enum ConfigCmd<'a> {
    Get(&'a [Vec<u8>]),
    Set(&'a [Vec<u8>]),
    ResetStat,
    Rewrite,
    Help,
}

impl<'a> ConfigCmd<'a> {
    pub(super) fn parse(args: &'a [Vec<u8>]) -> Result<Self, CmdError> {
        let Some((sub, rest)) = args.split_first() else {
            return Err(CmdError::arity("config"));
        };
        let lower = String::from_utf8_lossy(sub).to_ascii_lowercase();
        // Redis 7.0's arities, counted without `CONFIG` and the subcommand.
        let (cmd, arity_ok) = match lower.as_str() {
            "get" => (ConfigCmd::Get(rest), !rest.is_empty()),
            "set" => (ConfigCmd::Set(rest), rest.len() >= 2),
            "resetstat" => (ConfigCmd::ResetStat, rest.is_empty()),
            "rewrite" => (ConfigCmd::Rewrite, rest.is_empty()),
            "help" => (ConfigCmd::Help, rest.is_empty()),
            _ => {
                return Err(CmdError::new(format!(
                    "ERR unknown subcommand '{}'. Try CONFIG HELP.",
                    printable(sub, 128)
                )))
            }
        };
        if !arity_ok {
            return Err(CmdError::arity(&format!("config|{lower}")));
        }
        Ok(cmd)
    }
}

/// How a parameter takes a new value.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Changed at run time.
    Mutable,
    /// Only its current value is accepted (augur-server works with no other).
    Fixed,
    /// Fixed at start.
    Immutable,
}

/// The parameters, in the order `CONFIG GET *` lists them, with how each takes a value.
const PARAMS: &[(&str, Kind)] = &[
    ("bind", Kind::Immutable),
    ("port", Kind::Immutable),
    ("databases", Kind::Immutable),
    ("maxclients", Kind::Mutable),
    ("io-threads", Kind::Immutable),
    ("timeout", Kind::Mutable),
    ("save", Kind::Fixed),
    ("appendonly", Kind::Fixed),
    ("appendfsync", Kind::Mutable),
    ("proto-max-bulk-len", Kind::Immutable),
    ("client-query-buffer-limit", Kind::Immutable),
    ("maxmemory", Kind::Fixed),
    ("maxmemory-policy", Kind::Fixed),
    ("dir", Kind::Immutable),
    ("protected-mode", Kind::Immutable),
    ("requirepass", Kind::Mutable),
    ("slowlog-log-slower-than", Kind::Mutable),
    ("slowlog-max-len", Kind::Mutable),
    ("client-output-buffer-limit", Kind::Mutable),
    ("replica-priority", Kind::Mutable),
    ("slave-priority", Kind::Mutable),
    ("replica-announce-ip", Kind::Mutable),
    ("slave-announce-ip", Kind::Mutable),
    ("replica-announce-port", Kind::Mutable),
    ("slave-announce-port", Kind::Mutable),
    ("replica-announced", Kind::Mutable),
];

/// Redis's `maxmemory-policy` values (a valid one other than `noeviction` is refused with
/// another error than an invalid one).
const EVICTION_POLICIES: &str = "volatile-lru, volatile-lfu, volatile-random, volatile-ttl, \
                                 allkeys-lru, allkeys-lfu, allkeys-random, noeviction";

/// The current value of parameter `name` (one of [`PARAMS`]).
fn value_of(server: &Server, name: &str) -> String {
    let c = &server.config;
    let s = &server.settings;
    match name {
        "bind" => c.bind.to_string(),
        "port" => server.port().to_string(),
        "databases" => "1".into(),
        "maxclients" => s.maxclients().to_string(),
        "io-threads" => c.io_threads.to_string(),
        "timeout" => s.idle_timeout().map_or(0, |t| t.as_secs()).to_string(),
        "save" => String::new(),
        "appendonly" => "yes".into(),
        "appendfsync" => s.sync().name().into(),
        "proto-max-bulk-len" => c.max_bulk_bytes.to_string(),
        "client-query-buffer-limit" => c.max_request_bytes.to_string(),
        "maxmemory" => "0".into(),
        "maxmemory-policy" => "noeviction".into(),
        "dir" => c.db.display().to_string(),
        "protected-mode" => if c.bind.is_loopback() { "yes" } else { "no" }.into(),
        "requirepass" => s.password().as_deref().unwrap_or("").into(),
        "slowlog-log-slower-than" => s.slowlog_slower_than_us().to_string(),
        "slowlog-max-len" => s.slowlog_max_len().to_string(),
        "client-output-buffer-limit" => settings::format_output_limits(&s.output_limits()),
        "replica-priority" | "slave-priority" => s.replica_announce().priority.to_string(),
        "replica-announce-ip" | "slave-announce-ip" => s.replica_announce().ip.unwrap_or_default(),
        "replica-announce-port" | "slave-announce-port" => s.replica_announce().port.to_string(),
        "replica-announced" => yes_no(s.replica_announce().announced).into(),
        _ => String::new(),
    }
}

/// Redis's spelling of a boolean parameter.
fn yes_no(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

/// One checked change.
enum Change {
    Password(Option<String>),
    MaxClients(usize),
    Timeout(u64),
    Sync(SyncPolicy),
    SlowerThan(i64),
    SlowlogLen(usize),
    OutputLimits(Vec<(ClientClass, OutputLimit)>),
    Priority(u32),
    AnnounceIp(Option<String>),
    AnnouncePort(u16),
    Announced(bool),
    /// A fixed parameter set to its value: nothing to do.
    Same,
}

/// A value error, in Redis's words: `CONFIG SET failed (possibly related to argument
/// '<name>') - <why>`.
fn failed(name: &str, why: &str) -> CmdError {
    CmdError::new(format!(
        "ERR CONFIG SET failed (possibly related to argument '{name}') - {why}"
    ))
}

/// An integer in `min..=max`, parsed as Redis's `string2ll` parses one.
fn integer(name: &str, value: &[u8], min: i64, max: i64) -> Result<i64, CmdError> {
    let n = super::parse_i64(value)
        .map_err(|_| failed(name, "argument couldn't be parsed into an integer"))?;
    if n < min || n > max {
        return Err(failed(
            name,
            &format!("argument must be between {min} and {max} inclusive"),
        ));
    }
    Ok(n)
}

/// Checks `value` for parameter `name` (canonical, [`Kind::Mutable`] or [`Kind::Fixed`]).
fn check(server: &Server, name: &str, value: &[u8]) -> Result<Change, CmdError> {
    let text = String::from_utf8_lossy(value);
    Ok(match name {
        "requirepass" => {
            if value.is_empty() && !server.config.bind.is_loopback() {
                return Err(failed(
                    name,
                    &format!(
                        "refusing to remove the password while listening on {} (protected \
                         mode: clients beyond this machine could read and change every key)",
                        server.config.bind
                    ),
                ));
            }
            Change::Password((!value.is_empty()).then(|| text.into_owned()))
        }
        "maxclients" => Change::MaxClients(
            usize::try_from(integer(name, value, 1, u32::MAX.into())?).unwrap_or(usize::MAX),
        ),
        "timeout" => {
            Change::Timeout(u64::try_from(integer(name, value, 0, i32::MAX.into())?).unwrap_or(0))
        }
        "slowlog-log-slower-than" => Change::SlowerThan(integer(name, value, -1, i64::MAX)?),
        "slowlog-max-len" => Change::SlowlogLen(
            usize::try_from(integer(name, value, 0, i64::MAX)?).unwrap_or(usize::MAX),
        ),
        "client-output-buffer-limit" => Change::OutputLimits(
            settings::parse_output_limits(&text).map_err(|why| failed(name, why))?,
        ),
        "replica-priority" | "slave-priority" => {
            Change::Priority(u32::try_from(integer(name, value, 0, i32::MAX.into())?).unwrap_or(0))
        }
        "replica-announce-ip" | "slave-announce-ip" => {
            Change::AnnounceIp((!value.is_empty()).then(|| text.into_owned()))
        }
        "replica-announce-port" | "slave-announce-port" => Change::AnnouncePort(
            u16::try_from(integer(name, value, 0, u16::MAX.into())?).unwrap_or(0),
        ),
        "replica-announced" => Change::Announced(if is(value, "yes") {
            true
        } else if is(value, "no") {
            false
        } else {
            return Err(failed(name, "argument must be 'yes' or 'no'"));
        }),
        "appendfsync" => Change::Sync(match text.to_ascii_lowercase().as_str() {
            "always" => SyncPolicy::Always,
            "everysec" => SyncPolicy::Everysec,
            "no" => SyncPolicy::No,
            _ => {
                return Err(failed(
                    name,
                    "argument(s) must be one of the following: everysec, always, no",
                ))
            }
        }),
        "appendonly" => {
            if is(value, "yes") {
                Change::Same
            } else if is(value, "no") {
                return Err(failed(
                    name,
                    "augur-server always logs writes ahead (its WAL cannot be turned off)",
                ));
            } else {
                return Err(failed(name, "argument must be 'yes' or 'no'"));
            }
        }
        "save" => {
            if !value.iter().all(u8::is_ascii_whitespace) {
                return Err(failed(
                    name,
                    "augur-server takes no scheduled snapshots (its WAL keeps every write; \
                     SAVE and BGSAVE flush the memtable): only \"\" is accepted",
                ));
            }
            Change::Same
        }
        "maxmemory" => match crate::settings::memory_bytes(value) {
            Some(0) => Change::Same,
            Some(_) => {
                return Err(failed(
                    name,
                    "augur-server keeps its keys on disk and never evicts them: only 0 (no \
                     limit) is accepted",
                ))
            }
            None => return Err(failed(name, "argument must be a memory value")),
        },
        "maxmemory-policy" => {
            let lower = text.to_ascii_lowercase();
            if lower == "noeviction" {
                Change::Same
            } else if EVICTION_POLICIES.split(", ").any(|p| p == lower) {
                return Err(failed(
                    name,
                    "augur-server never evicts keys: only noeviction is accepted",
                ));
            } else {
                return Err(failed(
                    name,
                    &format!("argument(s) must be one of the following: {EVICTION_POLICIES}"),
                ));
            }
        }
        _ => return Err(failed(name, "can't set immutable config")),
    })
}

/// `CONFIG SET name value [name value ...]`, checked whole before anything changes.
fn set(server: &Server, args: &[Vec<u8>]) -> Result<Reply, CmdError> {
    if !args.len().is_multiple_of(2) {
        return Err(CmdError::syntax());
    }
    // First pass, as Redis's: names. The first unknown name wins over later errors, an
    // earlier immutable or repeated name over a later unknown one.
    let mut unknown: Option<&[u8]> = None;
    let mut refused: Option<CmdError> = None;
    let mut named: Vec<(&'static str, &[u8])> = Vec::new();
    for pair in args.chunks(2) {
        let (typed, value) = (&pair[0], &pair[1]);
        let lower = String::from_utf8_lossy(typed).to_ascii_lowercase();
        let Some(&(name, kind)) = PARAMS.iter().find(|(n, _)| *n == lower) else {
            if refused.is_none() && unknown.is_none() {
                unknown = Some(typed);
            }
            continue;
        };
        if unknown.is_some() || refused.is_some() {
            continue;
        }
        let shown = printable(typed, 128);
        if kind == Kind::Immutable {
            refused = Some(failed(&shown, "can't set immutable config"));
        } else if named.iter().any(|(n, _)| *n == name) {
            refused = Some(failed(&shown, "duplicate parameter"));
        }
        named.push((name, value));
    }
    if let Some(typed) = unknown {
        return Err(CmdError::new(format!(
            "ERR Unknown option or number of arguments for CONFIG SET - '{}'",
            printable(typed, 128)
        )));
    }
    if let Some(e) = refused {
        return Err(e);
    }
    // Second pass: values, all checked before any applies.
    let changes = named
        .iter()
        .map(|(name, value)| check(server, name, value))
        .collect::<Result<Vec<Change>, CmdError>>()?;
    let s = &server.settings;
    for change in changes {
        match change {
            Change::Password(p) => s.set_password(p.as_deref()),
            Change::MaxClients(n) => s.set_maxclients(n),
            Change::Timeout(secs) => {
                s.set_idle_timeout_secs(secs);
                server.wake_clients(); // the waiting sessions take it up
            }
            Change::Sync(policy) => s.set_sync(policy),
            Change::SlowerThan(us) => s.set_slowlog_slower_than_us(us),
            Change::SlowlogLen(n) => s.set_slowlog_max_len(n),
            Change::OutputLimits(limits) => {
                for (class, limit) in limits {
                    s.set_output_limit(class, limit);
                }
            }
            Change::Priority(p) => s.update_replica_announce(|r| r.priority = p),
            Change::AnnounceIp(ip) => s.update_replica_announce(|r| r.ip = ip),
            Change::AnnouncePort(port) => s.update_replica_announce(|r| r.port = port),
            Change::Announced(yes) => s.update_replica_announce(|r| r.announced = yes),
            Change::Same => {}
        }
    }
    Ok(Reply::Ok)
}

/// `CONFIG GET pattern...`: every parameter a pattern matches, once, in the table's order
/// per pattern.
fn get(server: &Server, patterns: &[Vec<u8>]) -> Reply {
    let mut hits: Vec<&'static str> = Vec::new();
    for pattern in patterns {
        let lower = pattern.to_ascii_lowercase();
        for (name, _) in PARAMS {
            if glob::matches(&lower, name.as_bytes()) && !hits.contains(name) {
                hits.push(name);
            }
        }
    }
    Reply::Map(
        hits.into_iter()
            .map(|name| (Reply::bulk(name), Reply::bulk(value_of(server, name))))
            .collect(),
    )
}

/// `CONFIG RESETSTAT`: zeroes what `INFO` counts (Redis's `resetServerStats`: the stats
/// counters, the command and error statistics, the peak memory). The slow log stays.
fn reset_stats(server: &Server) {
    server
        .counters
        .reset(server.db().map_or(0, |db| db.stats().expired_values));
    server.command_stats.reset();
    // The peak resident size (`used_memory_peak`) starts again from the current one
    // (Linux: "5" resets VmHWM); elsewhere it is left.
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// `CONFIG REWRITE`: the settings in effect written into the `--config` file.
fn rewrite(server: &Server) -> Result<Reply, CmdError> {
    let Some(file) = &server.config.config_file else {
        return Err(CmdError::new(
            "ERR The server is running without a config file",
        ));
    };
    rewrite_file(server, file)
        .map_err(|e| CmdError::new(format!("ERR Rewriting config file: {e}")))?;
    Ok(Reply::Ok)
}

/// Rewrites `file` (a TOML file of the flags' names): each run-time setting's key, wherever
/// it is (the top level or a table, spelt with `_` or `-`), takes the value in effect;
/// a setting absent from the file is added at the top level when its value is not the
/// default; `replicaof` is the primary this node replicates now (removed on a primary).
/// Other keys, tables and comments stay. The new file replaces the old one whole
/// (written beside it, synced, renamed). A password read from `--requirepass-file` is
/// written into that file, never into the config file.
fn rewrite_file(server: &Server, file: &Path) -> std::io::Result<()> {
    let text = std::fs::read_to_string(file)?;
    let mut doc: toml_edit::DocumentMut = text
        .parse()
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, format!("{e}")))?;
    let s = &server.settings;
    let timeout = s.idle_timeout().map_or(0, |t| t.as_secs());
    let defaults =
        crate::config::Config::from_args(["augur-server", "--db", "."].map(String::from))
            .map_err(std::io::Error::other)?;
    let int = |n: u64| toml_edit::value(i64::try_from(n).unwrap_or(i64::MAX));
    let replica = s.replica_announce();
    let limits = s.output_limits();
    let mut settings: Vec<(&str, Option<toml_edit::Item>, bool)> = vec![
        (
            "replica_priority",
            Some(int(u64::from(replica.priority))),
            replica.priority != defaults.replica.priority,
        ),
        (
            "replica_announce_ip",
            replica.ip.as_deref().map(toml_edit::value),
            replica.ip.is_some(),
        ),
        (
            "replica_announce_port",
            Some(int(u64::from(replica.port))),
            replica.port != defaults.replica.port,
        ),
        (
            "replica_announced",
            Some(toml_edit::value(replica.announced)),
            replica.announced != defaults.replica.announced,
        ),
        (
            "client_output_buffer_limit",
            Some(toml_edit::value(settings::format_output_limits(&limits))),
            limits != defaults.output_limits,
        ),
        (
            "maxclients",
            Some(int(s.maxclients() as u64)),
            s.maxclients() != defaults.maxclients,
        ),
        ("idle_timeout", Some(int(timeout)), timeout != 0),
        (
            "sync",
            Some(toml_edit::value(s.sync().name())),
            s.sync() != defaults.sync,
        ),
        (
            "slowlog_log_slower_than",
            Some(toml_edit::value(s.slowlog_slower_than_us())),
            s.slowlog_slower_than_us() != defaults.slowlog_log_slower_than,
        ),
        (
            "slowlog_max_len",
            Some(int(s.slowlog_max_len() as u64)),
            s.slowlog_max_len() != defaults.slowlog_max_len,
        ),
    ];
    // The primary being replicated, as Redis rewrites `replicaof`: Sentinel sends
    // `SLAVEOF` then `CONFIG REWRITE`, so a reconfigured node restarts in its new role.
    let replicaof = match server.repl.role() {
        crate::replication::Role::Replica { host, port } => Some(format!("{host} {port}")),
        crate::replication::Role::Primary => None,
    };
    let is_replica = replicaof.is_some();
    settings.push((
        "replicaof",
        replicaof.as_deref().map(toml_edit::value),
        is_replica,
    ));
    let password = s.password();
    match &server.config.password_file {
        Some(pw_file) => match &password {
            Some(p) => write_replacing(pw_file, format!("{p}\n").as_bytes())?,
            None => {
                return Err(std::io::Error::other(format!(
                    "the password was removed, but it comes from --requirepass-file {} \
                     (remove that option instead)",
                    pw_file.display()
                )))
            }
        },
        None => settings.push((
            "requirepass",
            password.as_deref().map(toml_edit::value),
            password.is_some(),
        )),
    }
    for (key, value, differs) in settings {
        set_key(doc.as_table_mut(), key, value, differs);
    }
    write_replacing(file, doc.to_string().as_bytes())
}

/// Sets `key` (`_` or `-` spelling, or an alias's: `slave_priority` for `replica_priority`)
/// in `root` or in the table holding it; removes it for `None`; adds it to `root` when
/// absent and `add`.
fn set_key(root: &mut toml_edit::Table, key: &str, value: Option<toml_edit::Item>, add: bool) {
    let alias = key
        .strip_prefix("replica_")
        .map(|rest| format!("slave_{rest}"));
    let spellings: Vec<String> = std::iter::once(key.to_string())
        .chain(alias)
        .flat_map(|k| [k.replace('_', "-"), k])
        .collect();
    for (_, item) in root.iter_mut() {
        let Some(table) = item.as_table_mut() else {
            continue;
        };
        if let Some(k) = spellings.iter().find(|k| table.contains_key(k)) {
            match value {
                Some(v) => table[k.as_str()] = v,
                None => drop(table.remove(k)),
            }
            return;
        }
    }
    match (spellings.iter().find(|k| root.contains_key(k)), value) {
        (Some(k), Some(v)) => root[k.as_str()] = v,
        (Some(k), None) => drop(root.remove(k)),
        (None, Some(v)) if add => root[key] = v,
        (None, _) => {}
    }
}

/// Replaces `file` with `bytes`: written beside it, synced, renamed over it.
fn write_replacing(file: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut name = file.file_name().unwrap_or_default().to_os_string();
    name.push(".rewrite-tmp");
    let tmp = file.with_file_name(name);
    let mut f = std::fs::File::create(&tmp)?;
    if let Ok(meta) = std::fs::metadata(file) {
        let _ = f.set_permissions(meta.permissions());
    }
    f.write_all(bytes)?;
    f.sync_all()?;
    drop(f);
    std::fs::rename(&tmp, file)
}

/// `CONFIG HELP`: Redis 7.0's text.
fn help() -> Reply {
    const LINES: &[&str] = &[
        "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "GET <pattern>",
        "    Return parameters matching the glob-like <pattern> and their values.",
        "SET <directive> <value>",
        "    Set the configuration <directive> to <value>.",
        "RESETSTAT",
        "    Reset statistics reported by the INFO command.",
        "REWRITE",
        "    Rewrite the configuration file.",
        "HELP",
        "    Prints this help.",
    ];
    Reply::Array(LINES.iter().map(|l| Reply::Status(l)).collect())
}

impl Command for ConfigCmd<'_> {
    fn execute(self, ctx: &mut Ctx<'_>) -> Result<Reply, CmdError> {
        let server: &Server = ctx.server;
        match self {
            ConfigCmd::Get(patterns) => Ok(get(server, patterns)),
            ConfigCmd::Set(args) => set(server, args),
            ConfigCmd::ResetStat => {
                reset_stats(server);
                Ok(Reply::Ok)
            }
            ConfigCmd::Rewrite => rewrite(server),
            ConfigCmd::Help => Ok(help()),
        }
    }
}
