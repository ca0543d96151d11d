//! The server's configuration: command-line flags, optionally preceded by a TOML file
//! (`--config FILE`) whose keys are the same option names (`port = 6380`, `read_mode =
//! "pread"`, `level_models = true`). The file is turned into flags placed before the command
//! line's, so one parser checks both, and a flag given on the command line wins.
//!
//! Engine options are the CLI's (`augur_frontend::engine_args::EngineArgs`), with the same
//! names, values and defaults.

use crate::settings::{OutputLimit, ReplicaAnnounce, DEFAULT_OUTPUT_LIMITS};
use augur_frontend::engine_args::EngineArgs;
use clap::{CommandFactory, Parser, ValueEnum};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// When an acknowledged write is durable (Redis's `appendfsync`).
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncPolicy {
    /// Every write is synced before its reply: a `+OK` is on disk.
    Always,
    /// Writes are synced once a second: a power cut loses at most about a second of them.
    Everysec,
    /// Never synced by the server (the OS writes them back; a clean shutdown syncs).
    No,
}

impl SyncPolicy {
    /// The name used by flags and `INFO`.
    pub fn name(self) -> &'static str {
        match self {
            SyncPolicy::Always => "always",
            SyncPolicy::Everysec => "everysec",
            SyncPolicy::No => "no",
        }
    }
}

/// `augur-server` flags.
#[derive(Parser, Debug, Clone)]
#[command(
    name = "augur-server",
    version,
    about = "A Redis-protocol (RESP2 and RESP3) server over an Augur database",
    args_override_self = true
)]
pub struct Args {
    /// Database directory (created if missing).
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,
    /// A TOML file of options (the flags' names, `_` or `-`); flags given on the command line
    /// win over it.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Address to listen on. Binding one that is not loopback needs a password (Redis's
    /// protected mode).
    #[arg(long, default_value = "127.0.0.1")]
    pub bind: IpAddr,
    /// TCP port (0: any free port; the ready line on stdout says which).
    #[arg(long, default_value_t = 6380)]
    pub port: u16,
    /// Password every client must give with AUTH (the default user's).
    #[arg(long, value_name = "PASSWORD", conflicts_with = "requirepass_file")]
    pub requirepass: Option<String>,
    /// A file whose first line is the password.
    #[arg(long, value_name = "FILE", alias = "requirepass_file")]
    pub requirepass_file: Option<PathBuf>,
    /// Most clients connected at once; more are refused with Redis's error.
    #[arg(long, default_value_t = 10_000)]
    pub maxclients: usize,
    /// Threads that serve connections (parse, run commands, reply; Redis's io-threads).
    /// Default: half the cores, at least 1 — the engine's flushes and compactions and the
    /// clients of a benchmark on the same machine need the rest (on 2 cores, 1 thread
    /// serves single requests 25–30% faster than 2; measured in docs/benchmarks/server.md).
    #[arg(long, value_name = "N", alias = "io_threads")]
    pub io_threads: Option<usize>,
    /// Largest bulk string a request may declare (Redis's proto-max-bulk-len).
    #[arg(long, value_name = "BYTES", default_value_t = 512 << 20, alias = "max_bulk_bytes")]
    pub max_bulk_bytes: usize,
    /// Largest request (one command with its arguments) a client may send, and so the most
    /// a client's input buffer holds (Redis's client-query-buffer-limit).
    #[arg(long, value_name = "BYTES", default_value_t = 1 << 30, alias = "max_request_bytes")]
    pub max_request_bytes: usize,
    /// Seconds a client may stay idle before it is disconnected (0: never).
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = 0,
        alias = "idle_timeout"
    )]
    pub idle_timeout: u64,
    /// When an acknowledged write is durable (Redis's appendfsync).
    #[arg(long, value_enum, default_value = "everysec")]
    pub sync: SyncPolicy,
    /// Allow FLUSHDB and FLUSHALL (refused otherwise: they delete every key).
    #[arg(long, alias = "enable_flush")]
    pub enable_flush: bool,
    /// Where BGSAVE writes a checkpoint of the database (a consistent, openable copy, hard
    /// links where the file system allows): `DIR/checkpoint-<unix ms>`, the older ones
    /// removed once it is complete. Without it BGSAVE only flushes and syncs, as SAVE does.
    #[arg(long, value_name = "DIR", alias = "checkpoint_dir")]
    pub checkpoint_dir: Option<PathBuf>,
    /// Commands that run at least this many microseconds enter the slow log (`SLOWLOG
    /// GET`; -1: none, 0: every command; Redis's slowlog-log-slower-than).
    #[arg(
        long,
        value_name = "MICROSECONDS",
        default_value_t = crate::settings::SLOWLOG_SLOWER_THAN_US,
        allow_negative_numbers = true,
        value_parser = clap::value_parser!(i64).range(-1..),
        alias = "slowlog_log_slower_than"
    )]
    pub slowlog_log_slower_than: i64,
    /// Entries the slow log keeps (Redis's slowlog-max-len).
    #[arg(
        long,
        value_name = "N",
        default_value_t = crate::settings::SLOWLOG_MAX_LEN,
        alias = "slowlog_max_len"
    )]
    pub slowlog_max_len: usize,
    /// Replicate the server at HOST PORT (Redis's replicaof; `REPLICAOF` changes it while
    /// running). One value `"HOST PORT"` (the config file's form) or two.
    #[arg(long, value_name = "HOST PORT", num_args = 1..=2)]
    pub replicaof: Vec<String>,
    /// Bytes of the replication stream a primary keeps for replicas that reconnect
    /// (Redis's repl-backlog-size; units `kb`, `mb`, `gb` accepted).
    #[arg(
        long,
        value_name = "BYTES",
        default_value = "64mb",
        alias = "repl_backlog_size"
    )]
    pub repl_backlog_size: String,
    /// Refuse writes from clients while a replica (Redis's replica-read-only: yes or no).
    #[arg(
        long,
        value_name = "yes|no",
        default_value = "yes",
        alias = "replica_read_only"
    )]
    pub replica_read_only: String,
    /// Output buffer limits by client class, as Redis's `client-output-buffer-limit`
    /// (`"pubsub 32mb 8mb 60"`: a Pub/Sub client whose undelivered messages reach 32 MiB,
    /// or stay above 8 MiB for 60 s, is disconnected). Classes not named keep Redis's
    /// defaults; only the `pubsub` class is enforced (normal clients get their replies as
    /// they read; replicas are fed from the replication backlog).
    #[arg(long, value_name = "LIMITS", alias = "client_output_buffer_limit")]
    pub client_output_buffer_limit: Option<String>,
    /// Sentinel promotes the replica with the lowest priority first; 0: never (Redis's
    /// replica-priority).
    #[arg(
        long,
        value_name = "N",
        default_value_t = 100,
        alias = "slave-priority",
        alias = "replica_priority",
        alias = "slave_priority",
        value_parser = clap::value_parser!(u32).range(0..=i32::MAX as i64)
    )]
    pub replica_priority: u32,
    /// The IP address a replica announces to its master and Sentinel instead of its
    /// connection's (Redis's replica-announce-ip).
    #[arg(
        long,
        value_name = "IP",
        alias = "slave-announce-ip",
        alias = "replica_announce_ip"
    )]
    pub replica_announce_ip: Option<String>,
    /// The port a replica announces instead of its listening port (0: that one; Redis's
    /// replica-announce-port).
    #[arg(
        long,
        value_name = "PORT",
        default_value_t = 0,
        alias = "slave-announce-port",
        alias = "replica_announce_port"
    )]
    pub replica_announce_port: u16,
    /// Whether Sentinel lists this server when it is a replica (yes or no; Redis's
    /// replica-announced).
    #[arg(
        long,
        value_name = "yes|no",
        default_value = "yes",
        action = clap::ArgAction::Set,
        value_parser = parse_yes_no,
        alias = "replica_announced"
    )]
    pub replica_announced: bool,
    /// Engine options, as the CLI's.
    #[command(flatten)]
    pub engine: EngineArgs,
}

/// Parses a byte count with Redis's optional units (`1024`, `64mb`, `1gb`; `k`, `m`, `g`
/// are powers of 1000, `kb`, `mb`, `gb` of 1024).
///
/// # Errors
/// A message naming the value.
pub fn parse_bytes(text: &str) -> Result<u64, String> {
    let lower = text.trim().to_ascii_lowercase();
    let digits = lower.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let unit = &lower[digits.len()..];
    let scale: u64 = match unit {
        "" | "b" => 1,
        "k" => 1_000,
        "kb" => 1 << 10,
        "m" => 1_000_000,
        "mb" => 1 << 20,
        "g" => 1_000_000_000,
        "gb" => 1 << 30,
        _ => return Err(format!("`{text}`: unknown unit (b, k, kb, m, mb, g, gb)")),
    };
    digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(scale))
        .ok_or_else(|| format!("`{text}` is not a byte count"))
}

/// `yes` or `no` (or `true` / `false`, as a TOML boolean becomes), any case.
fn parse_yes_no(value: &str) -> Result<bool, String> {
    match value.to_ascii_lowercase().as_str() {
        "yes" | "true" => Ok(true),
        "no" | "false" => Ok(false),
        _ => Err(format!("expected yes or no, not {value:?}")),
    }
}

/// The checked configuration.
#[derive(Debug, Clone)]
pub struct Config {
    /// Database directory.
    pub db: PathBuf,
    /// Listening address.
    pub bind: IpAddr,
    /// Listening port (0: any).
    pub port: u16,
    /// The default user's password, if any.
    pub password: Option<String>,
    /// The file the password was read from (`--requirepass-file`), if it was.
    pub password_file: Option<PathBuf>,
    /// The `--config` file, as an absolute path (`CONFIG REWRITE` rewrites it; `INFO`'s
    /// `config_file`).
    pub config_file: Option<PathBuf>,
    /// Most clients at once.
    pub maxclients: usize,
    /// Threads serving connections.
    pub io_threads: usize,
    /// Largest declared bulk.
    pub max_bulk_bytes: usize,
    /// Largest request.
    pub max_request_bytes: usize,
    /// Idle clients are disconnected after this long (`None`: never).
    pub idle_timeout: Option<Duration>,
    /// Durability of acknowledged writes.
    pub sync: SyncPolicy,
    /// FLUSHDB and FLUSHALL allowed.
    pub enable_flush: bool,
    /// Where BGSAVE writes its checkpoints (`None`: it only saves).
    pub checkpoint_dir: Option<PathBuf>,
    /// The slow log's threshold at start (µs; negative: off).
    pub slowlog_log_slower_than: i64,
    /// The slow log's length at start.
    pub slowlog_max_len: usize,
    /// The primary to replicate at start (`--replicaof`), host and port.
    pub replicaof: Option<(String, u16)>,
    /// Bytes of the replication backlog.
    pub repl_backlog_bytes: usize,
    /// Writes from clients are refused while a replica.
    pub replica_read_only: bool,
    /// Output buffer limits at start, by class (`settings::ClientClass` order).
    pub output_limits: [OutputLimit; 3],
    /// What the server announces to Sentinel as a replica, at start.
    pub replica: ReplicaAnnounce,
    /// Engine options.
    pub engine: EngineArgs,
}

/// `--replicaof`'s words: `[]` none, `["HOST PORT"]` or `["HOST", "PORT"]`; `NO ONE` is
/// none too.
fn parse_replicaof(words: &[String]) -> Result<Option<(String, u16)>, String> {
    let words: Vec<&str> = words.iter().flat_map(|w| w.split_whitespace()).collect();
    match words[..] {
        [] => Ok(None),
        [no, one] if no.eq_ignore_ascii_case("no") && one.eq_ignore_ascii_case("one") => Ok(None),
        [host, port] => match port.parse::<u16>() {
            Ok(p) if p > 0 => Ok(Some((host.to_string(), p))),
            _ => Err(format!("--replicaof: `{port}` is not a port")),
        },
        _ => Err("--replicaof takes HOST PORT".into()),
    }
}

impl Config {
    /// Parses the process's arguments (and the `--config` file they name).
    ///
    /// # Errors
    /// A message for a bad flag, an unreadable or malformed file, or a refused combination
    /// (a non-loopback address without a password).
    pub fn from_args(args: impl IntoIterator<Item = String>) -> Result<Config, String> {
        let args: Vec<String> = args.into_iter().collect();
        let first = Args::try_parse_from(&args).map_err(|e| e.to_string())?;
        let parsed = match &first.config {
            None => first,
            Some(file) => {
                let mut merged = vec![args.first().cloned().unwrap_or_default()];
                merged.extend(flags_of_toml(file)?);
                merged.extend(args.iter().skip(1).cloned());
                Args::try_parse_from(&merged).map_err(|e| e.to_string())?
            }
        };
        Config::check(parsed)
    }

    fn check(a: Args) -> Result<Config, String> {
        let db =
            a.db.ok_or("--db PATH is required (or `db = \"PATH\"` in the --config file)")?;
        let password = match (&a.requirepass, &a.requirepass_file) {
            (Some(p), _) => Some(p.clone()),
            (None, Some(file)) => {
                let text = std::fs::read_to_string(file)
                    .map_err(|e| format!("reading --requirepass-file {}: {e}", file.display()))?;
                let line = text.lines().next().unwrap_or("").to_string();
                if line.is_empty() {
                    return Err(format!(
                        "--requirepass-file {}: the first line (the password) is empty",
                        file.display()
                    ));
                }
                Some(line)
            }
            (None, None) => None,
        };
        if password.as_deref() == Some("") {
            return Err("--requirepass: the password is empty".into());
        }
        if !a.bind.is_loopback() && password.is_none() {
            return Err(format!(
                "refusing to listen on {} without a password (protected mode): clients beyond \
                 this machine could read and change every key. Give --requirepass (or \
                 --requirepass-file), or bind a loopback address",
                a.bind
            ));
        }
        if a.maxclients == 0 {
            return Err("--maxclients must be at least 1".into());
        }
        let io_threads = match a.io_threads {
            Some(0) => return Err("--io-threads must be at least 1".into()),
            Some(n) => n,
            None => std::thread::available_parallelism().map_or(1, |n| (n.get() / 2).max(1)),
        };
        if a.max_bulk_bytes == 0 || a.max_request_bytes < a.max_bulk_bytes.min(1 << 20) {
            return Err(
                "--max-bulk-bytes must be at least 1, and --max-request-bytes at least \
                 --max-bulk-bytes or 1 MiB, whichever is smaller"
                    .into(),
            );
        }
        // Checks the engine options now, with the CLI's messages.
        a.engine.options().validate().map_err(|e| e.to_string())?;
        let replicaof = parse_replicaof(&a.replicaof)?;
        let repl_backlog_bytes = parse_bytes(&a.repl_backlog_size)
            .map_err(|e| format!("--repl-backlog-size: {e}"))
            .and_then(|n| {
                usize::try_from(n)
                    .ok()
                    .filter(|&n| n >= 1)
                    .ok_or_else(|| "--repl-backlog-size must be at least 1 byte".to_string())
            })?;
        let replica_read_only = match a.replica_read_only.to_ascii_lowercase().as_str() {
            "yes" | "true" => true,
            "no" | "false" => false,
            other => return Err(format!("--replica-read-only: `{other}` is not yes or no")),
        };
        let mut output_limits = DEFAULT_OUTPUT_LIMITS;
        if let Some(text) = &a.client_output_buffer_limit {
            for (class, limit) in crate::settings::parse_output_limits(text)
                .map_err(|e| format!("--client-output-buffer-limit {text:?}: {e}"))?
            {
                output_limits[class as usize] = limit;
            }
        }
        let replica = ReplicaAnnounce {
            priority: a.replica_priority,
            ip: a.replica_announce_ip.filter(|ip| !ip.is_empty()),
            port: a.replica_announce_port,
            announced: a.replica_announced,
        };
        let config_file = a.config.map(|f| std::path::absolute(&f).unwrap_or(f));
        Ok(Config {
            db,
            bind: a.bind,
            port: a.port,
            password_file: a.requirepass_file.filter(|_| a.requirepass.is_none()),
            config_file,
            password,
            maxclients: a.maxclients,
            io_threads,
            max_bulk_bytes: a.max_bulk_bytes,
            max_request_bytes: a.max_request_bytes,
            idle_timeout: (a.idle_timeout > 0).then(|| Duration::from_secs(a.idle_timeout)),
            sync: a.sync,
            enable_flush: a.enable_flush,
            checkpoint_dir: a.checkpoint_dir,
            slowlog_log_slower_than: a.slowlog_log_slower_than,
            slowlog_max_len: a.slowlog_max_len,
            replicaof,
            repl_backlog_bytes,
            replica_read_only,
            output_limits,
            replica,
            engine: a.engine,
        })
    }
}

/// The flags a TOML file stands for: `key = value` becomes `--key value`, `key = true`
/// becomes `--key` (and `false` nothing) for a switch, `--key true` (`false`) for a flag
/// that takes a value (`replica_announced = false`), a table `[engine]` or `[server]` is
/// flattened.
fn flags_of_toml(file: &Path) -> Result<Vec<String>, String> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| format!("reading --config {}: {e}", file.display()))?;
    let table: toml::Table = text
        .parse()
        .map_err(|e| format!("--config {}: {e}", file.display()))?;
    let mut flags = Vec::new();
    add_flags(&table, file, &mut flags)?;
    Ok(flags)
}

fn add_flags(table: &toml::Table, file: &Path, flags: &mut Vec<String>) -> Result<(), String> {
    for (key, value) in table {
        if key == "config" {
            return Err(format!(
                "--config {}: a config file cannot name another",
                file.display()
            ));
        }
        let flag = format!("--{}", key.replace('_', "-"));
        match value {
            toml::Value::Table(inner) => add_flags(inner, file, flags)?,
            toml::Value::Boolean(b) if takes_value(&flag) => {
                flags.push(flag);
                flags.push(b.to_string());
            }
            toml::Value::Boolean(true) => flags.push(flag),
            toml::Value::Boolean(false) => {}
            toml::Value::String(s) => {
                flags.push(flag);
                flags.push(s.clone());
            }
            toml::Value::Integer(i) => {
                flags.push(flag);
                flags.push(i.to_string());
            }
            toml::Value::Float(f) => {
                flags.push(flag);
                flags.push(f.to_string());
            }
            other => {
                return Err(format!(
                    "--config {}: `{key}` must be a string, number or boolean, not {}",
                    file.display(),
                    other.type_str()
                ))
            }
        }
    }
    Ok(())
}

/// Whether `flag` (`--name`, or one of its aliases) takes a value rather than being a switch.
fn takes_value(flag: &str) -> bool {
    let name = flag.trim_start_matches("--");
    Args::command().get_arguments().any(|a| {
        let named = a.get_long() == Some(name)
            || a.get_all_aliases()
                .is_some_and(|aliases| aliases.contains(&name));
        named && a.get_action().takes_values()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Config, String> {
        Config::from_args(
            std::iter::once("augur-server")
                .chain(args.iter().copied())
                .map(String::from),
        )
    }

    #[test]
    fn defaults_and_protected_mode() {
        let c = parse(&["--db", "/tmp/x"]).unwrap();
        assert_eq!((c.port, c.sync), (6380, SyncPolicy::Everysec));
        assert!(c.bind.is_loopback() && c.password.is_none());
        let e = parse(&["--db", "/tmp/x", "--bind", "0.0.0.0"]).unwrap_err();
        assert!(e.contains("protected mode"), "{e}");
        let c = parse(&["--db", "/tmp/x", "--bind", "0.0.0.0", "--requirepass", "s"]).unwrap();
        assert_eq!(c.password.as_deref(), Some("s"));
        assert!(parse(&[]).unwrap_err().contains("--db"));
        assert!(parse(&["--db", "/x", "--memtable-mb", "0"]).is_err());
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert_eq!(c.io_threads, (cores / 2).max(1));
        let c = parse(&["--db", "/x", "--io-threads", "3"]).unwrap();
        assert_eq!(c.io_threads, 3);
        let e = parse(&["--db", "/x", "--io-threads", "0"]).unwrap_err();
        assert!(e.contains("--io-threads must be at least 1"), "{e}");
    }

    #[test]
    fn a_toml_file_gives_flags_that_the_command_line_overrides() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("augur.toml");
        std::fs::write(
            &file,
            "db = \"/tmp/from-file\"\nport = 7000\nsync = \"always\"\nenable_flush = true\n\
             [engine]\nread_mode = \"pread\"\nlevel_models = true\n",
        )
        .unwrap();
        let f = file.to_str().unwrap();
        let c = parse(&["--config", f]).unwrap();
        assert_eq!(c.db, PathBuf::from("/tmp/from-file"));
        assert_eq!(
            (c.port, c.sync, c.enable_flush),
            (7000, SyncPolicy::Always, true)
        );
        assert!(c.engine.level_models);
        let c = parse(&["--config", f, "--port", "7001", "--sync", "no"]).unwrap();
        assert_eq!((c.port, c.sync), (7001, SyncPolicy::No));
        std::fs::write(
            &file,
            "db = \"/x\"\nslave_priority = 7\nreplica_announced = false\n\
             replica-announce-ip = \"10.0.0.1\"\nclient_output_buffer_limit = \"pubsub 1mb 0 0\"\n",
        )
        .unwrap();
        let c = parse(&["--config", f]).unwrap();
        assert_eq!(
            (
                c.replica.priority,
                c.replica.announced,
                c.replica.ip.as_deref()
            ),
            (7, false, Some("10.0.0.1"))
        );
        assert_eq!(c.output_limits[2].hard_bytes, 1 << 20);
        let c = parse(&["--config", f, "--replica-announced", "yes"]).unwrap();
        assert!(c.replica.announced);
        std::fs::write(&file, "port = [1, 2]\n").unwrap();
        assert!(parse(&["--db", "/x", "--config", f])
            .unwrap_err()
            .contains("`port`"));
        std::fs::write(
            &file,
            "replicaof = \"10.0.0.1 6379\"\nrepl_backlog_size = \"1mb\"\n",
        )
        .unwrap();
        let c = parse(&["--db", "/x", "--config", f]).unwrap();
        assert_eq!(c.replicaof, Some(("10.0.0.1".to_string(), 6379)));
        assert_eq!(c.repl_backlog_bytes, 1 << 20);
        let c = parse(&["--db", "/x", "--replicaof", "h", "7000"]).unwrap();
        assert_eq!(c.replicaof, Some(("h".to_string(), 7000)));
        assert!(c.replica_read_only);
        assert!(parse(&["--db", "/x", "--replicaof", "h", "x"]).is_err());
        std::fs::write(&file, "no_such_option = 1\n").unwrap();
        assert!(parse(&["--db", "/x", "--config", f]).is_err());
    }
}
