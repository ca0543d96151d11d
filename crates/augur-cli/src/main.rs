//! The `augur` command-line tool: data commands (put/get/del/scan/load), inspection
//! (stats/verify, and `dump` of one file), maintenance (flush/compact/gc), the built-in `bench` and, in builds with
//! the cargo feature `stress` (which needs the engine's `test-util`), `stress`.
//!
//! This file holds the argument definitions and the exit-status contract; each command
//! lives in its own module. Exit statuses: 0 success, 1 "key not found" (only `get`),
//! 3 the database is held by another process or handle, 4 a change asked of a
//! `--read-only` open, 5 a limit of the machine (the live-table limit), 2 any other error;
//! every error but "key not found" is printed as `error: <message>` on stderr
//! (`error.rs`).
#![deny(unsafe_code)]

mod backup;
mod commands;
mod dump;
mod engine;
mod load;
mod repair;
mod scan;
#[cfg(feature = "stress")]
mod stress;

// The input decoders and the error type live in the library (src/lib.rs), where the fuzz
// targets reach them; imported here so that `crate::codec` and `crate::error` name them.
use augur_cli::{codec, error};

use clap::{Args, Parser, Subcommand};
use error::CliError;
use std::path::PathBuf;
use std::process::ExitCode;

/// mimalloc: the engine allocates many small keys and values; glibc malloc spent a visible
/// share of benchmark time consolidating freed memtable nodes.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's `mi_option_purge_delay` (the same index in its v2 and v3 option enums).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Returns freed memory to the OS after 1 ms instead of mimalloc's 10 ms (100 ms for arena
/// pages). A flushed memtable is ~64 MiB of small allocations made by the writer and freed
/// by the flush thread; with the default delay much of it stayed resident while the next
/// memtables filled: 10M × 128-byte fillrandom (`--read-mode pread`) peaked at 235 MB with
/// the default and 210 MB with 1 ms, for 3% more CPU time and the same fill time (0 ms: 205
/// MB for 10% more CPU; two alternating runs each, docs/benchmarks/write-path.md).
#[expect(
    unsafe_code,
    reason = "one FFI call setting a mimalloc option; docs/UNSAFE.md"
)]
fn configure_allocator() {
    // SAFETY: `mi_option_set` stores one of mimalloc's option values; it is called first
    // thing in `main`, before this process starts any other thread.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 1) }
}

/// Augur: an embedded LSM-tree key-value store with key-value separation.
///
/// Keys and values on the command line are UTF-8 text unless `--hex` is given, which
/// switches both input and output to hexadecimal.
#[derive(Parser, Debug)]
#[command(name = "augur", version, about, long_about = None)]
pub struct Cli {
    /// Database directory (required by every command except `bench` and `dump`).
    #[arg(long, global = true, value_name = "PATH")]
    db: Option<PathBuf>,

    /// Keys and values given and printed as hexadecimal instead of UTF-8.
    #[arg(long, global = true)]
    hex: bool,

    /// Print one JSON object on stdout instead of human-readable output.
    #[arg(long)]
    json: bool,

    #[command(flatten)]
    engine: engine::EngineArgs,

    #[command(subcommand)]
    command: Command,
}

/// Output switch shared by the data and maintenance commands.
#[derive(Args, Debug, Clone, Copy)]
pub struct JsonFlag {
    /// Print one JSON object on stdout instead of human-readable output.
    #[arg(long)]
    json: bool,
}

/// The subcommands.
#[derive(Subcommand, Debug)]
enum Command {
    /// Store VALUE under KEY.
    Put {
        /// The key.
        key: String,
        /// The value.
        value: String,
        /// Wait until the write is durable (fsync).
        #[arg(long)]
        sync: bool,
        /// The key expires this many seconds from now (fractions allowed): from then on it
        /// reads as absent, older values included, and compaction drops it.
        #[arg(long, value_name = "SECONDS", conflicts_with = "expire_at")]
        ttl: Option<f64>,
        /// The key expires at this time, in milliseconds since the Unix epoch.
        #[arg(long, value_name = "UNIX_MS")]
        expire_at: Option<u64>,
        #[command(flatten)]
        out: JsonFlag,
    },
    /// Print the milliseconds until KEY expires, or `none` when it never does. A missing
    /// key prints nothing on stdout, a message on stderr, and exits with status 1.
    Ttl {
        /// The key.
        key: String,
        #[command(flatten)]
        out: JsonFlag,
    },
    /// Print the value of KEY. A missing key prints nothing on stdout, a message on
    /// stderr, and exits with status 1.
    Get {
        /// The key.
        key: String,
        #[command(flatten)]
        out: JsonFlag,
    },
    /// Delete KEY (succeeds whether or not it exists).
    Del {
        /// The key.
        key: String,
        /// Wait until the delete is durable (fsync).
        #[arg(long)]
        sync: bool,
        #[command(flatten)]
        out: JsonFlag,
    },
    /// Print the entries in key order, one `key<TAB>value` line each, as they are read (a
    /// damaged entry ends the output there, with exit status 2).
    Scan(scan::ScanArgs),
    /// Bulk-load keys from an SOSD key file (--keys) or key,value lines (--csv).
    Load(load::LoadArgs),
    /// Print levels, files, sizes, value-log segments and garbage, and counters (the levels
    /// holding files and, when there were lookups, the learning table; --json is complete).
    Stats {
        /// Show every level and the learning table even when empty.
        #[arg(long)]
        all: bool,
        #[command(flatten)]
        out: JsonFlag,
    },
    /// Check every checksum of every live SSTable and value-log segment, and with
    /// --keys that every key of an SOSD file holds exactly the value `load` writes.
    Verify(load::VerifyArgs),
    /// Compact the whole key space down the levels.
    Compact {
        #[command(flatten)]
        out: JsonFlag,
    },
    /// Flush the memtable to an SSTable.
    Flush {
        #[command(flatten)]
        out: JsonFlag,
    },
    /// Print what one database file holds — `dump sst|manifest|wal|vlog FILE` — read
    /// without opening the database (no --db, no lock, nothing written), so beside a running
    /// process. A torn or damaged file prints what could be read, then where and why reading
    /// stopped, and exits with status 2.
    Dump(dump::DumpArgs),
    /// Rebuild the manifest of the database in DIR from the tables, WALs and value-log
    /// segments that check out, after the manifest or CURRENT was lost or damaged (LevelDB's
    /// RepairDB): prints what was kept and what was moved to DIR/lost/ and why; nothing is
    /// deleted. No --db: DIR is the database; the database must not be open.
    Repair {
        /// The database directory.
        dir: PathBuf,
        #[command(flatten)]
        out: JsonFlag,
    },
    /// Make a consistent, openable copy of the database of --db in DIR while it may be
    /// written (a new directory; tables and value-log segments hard-linked where the file
    /// system allows, copied otherwise or with --copy).
    Checkpoint(backup::CheckpointArgs),
    /// Incremental backups sharing unchanged files: `backup create|list|verify|restore|
    /// delete|purge BACKUP_DIR ...` (only `create` needs --db).
    Backup(backup::BackupArgs),
    /// Run value-log garbage collection on the segment with the most garbage.
    Gc {
        /// Repeat until no segment has garbage left.
        #[arg(long)]
        all: bool,
        #[command(flatten)]
        out: JsonFlag,
    },
    /// db_bench-style benchmark. With no flags: a short demo (200,000 16-byte keys with
    /// 64-byte values; fillrandom, flush, readrandom, readseq, stats), once with values inline
    /// and once separated into the value log.
    Bench(Box<augur_bench::BenchArgs>),
    /// db_stress-style test: threads of random writes, reads and snapshot scans over a
    /// bounded key space, each verified against an expected-state oracle kept beside the
    /// database (`<db>.expected`); at start the whole key space is verified against the
    /// oracle the previous (possibly killed) run left. See scripts/crash_test.sh.
    #[cfg(feature = "stress")]
    Stress(stress::StressArgs),
    /// db_stress-style test; not in this build: build with `--features stress` (it needs the
    /// engine's test utilities, which the shipped binary leaves out).
    #[cfg(not(feature = "stress"))]
    Stress {
        /// The arguments of `stress` (ignored: the command is not built in).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
        args: Vec<String>,
    },
}

/// The error of `augur stress` in a build without it.
#[cfg(not(feature = "stress"))]
const STRESS_NOT_BUILT: &str = "`augur stress` is not in this build: it needs the engine's \
test utilities, which the shipped binary leaves out; build with \
`cargo build --release -p augur-cli --features stress`";

fn main() -> ExitCode {
    configure_allocator();
    augur_frontend::logger::init(log::Level::Warn);
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{}", e.message());
            ExitCode::from(e.exit_status())
        }
    }
}

fn run(cli: Cli) -> Result<(), CliError> {
    let codec = codec::Codec { hex: cli.hex };
    let top_json = cli.json;
    let json = |out: JsonFlag| top_json || out.json;
    if let Command::Bench(args) = &cli.command {
        let settings = augur_bench::EngineSettings {
            options: cli.engine.options(),
            value_separation_threshold: cli.engine.value_separation_threshold,
            read_mode: cli.engine.read_mode.map(|m| m.to_engine()),
            cache_bytes: cli.engine.cache_mb.map(|mb| mb.saturating_mul(1 << 20)),
            l0_triggers: augur_bench::L0Triggers {
                compaction: cli.engine.level0_file_num_compaction_trigger,
                slowdown: cli.engine.level0_slowdown_writes_trigger,
                stop: cli.engine.level0_stop_writes_trigger,
            },
        };
        return Ok(augur_bench::run(
            args,
            &settings,
            cli.db.as_deref(),
            top_json,
        )?);
    }
    if let Command::Dump(args) = &cli.command {
        return dump::run(args, codec, top_json, cli.db.as_deref());
    }
    if let Command::Repair { dir, out } = &cli.command {
        return repair::run(dir, &cli.engine.options(), json(*out));
    }
    if let Command::Backup(args) = &cli.command {
        if !args.needs_db() {
            return backup::run(args, top_json, unreachable_db);
        }
    }
    #[cfg(not(feature = "stress"))]
    if let Command::Stress { .. } = &cli.command {
        return Err(CliError::failed(STRESS_NOT_BUILT));
    }
    let dir = cli
        .db
        .clone()
        .ok_or_else(|| CliError::Failed("missing --db PATH".into()))?;
    let e = &cli.engine;
    match cli.command {
        Command::Put {
            key,
            value,
            sync,
            ttl,
            expire_at,
            out,
        } => {
            let db = engine::open(e, &dir, true)?;
            let expiry = commands::expiry(&db, ttl, expire_at)?;
            commands::put(&db, codec, &key, &value, expiry, sync, json(out))
        }
        Command::Ttl { key, out } => {
            commands::ttl(&engine::open(e, &dir, false)?, codec, &key, json(out))
        }
        Command::Get { key, out } => {
            commands::get(&engine::open(e, &dir, false)?, codec, &key, json(out))
        }
        Command::Del { key, sync, out } => {
            commands::del(&engine::open(e, &dir, false)?, codec, &key, sync, json(out))
        }
        Command::Scan(args) => {
            let j = json(args.out);
            scan::scan(&engine::open(e, &dir, false)?, codec, &args, j)
        }
        Command::Load(args) => {
            let j = json(args.out);
            load::load(&engine::open(e, &dir, true)?, codec, &args, j)
        }
        Command::Stats { all, out } => {
            commands::stats(&engine::open(e, &dir, false)?, all, json(out))
        }
        Command::Verify(args) => {
            let j = json(args.out);
            load::verify(&engine::open(e, &dir, false)?, &args, j)
        }
        Command::Compact { out } => commands::compact(&engine::open(e, &dir, false)?, json(out)),
        Command::Flush { out } => commands::flush(&engine::open(e, &dir, false)?, json(out)),
        Command::Gc { all, out } => commands::gc(&engine::open(e, &dir, false)?, all, json(out)),
        Command::Checkpoint(args) => {
            backup::checkpoint(&engine::open(e, &dir, false)?, &args, top_json)
        }
        Command::Backup(args) => backup::run(&args, top_json, || engine::open(e, &dir, false)),
        #[cfg(feature = "stress")]
        Command::Stress(args) => stress::run(&dir, e.options(), &args, top_json),
        #[cfg(not(feature = "stress"))]
        Command::Stress { .. } => Err(CliError::failed(STRESS_NOT_BUILT)),
        Command::Bench(_) | Command::Dump(_) | Command::Repair { .. } => Ok(()),
    }
}

/// The database of a backup command that needs none (never called: only `create` opens
/// one).
fn unreachable_db() -> Result<augur::Db, CliError> {
    Err(CliError::failed("this backup command takes no --db"))
}
