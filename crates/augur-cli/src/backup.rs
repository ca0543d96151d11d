//! `augur checkpoint DIR` and `augur backup create|list|verify|restore|delete|purge`: the
//! engine's checkpoints (`Db::checkpoint`) and incremental backups
//! (`augur::backup::BackupEngine`) on the command line.
//!
//! `checkpoint` and `backup create` open the database given by `--db` (for writing: a copy
//! flushes the memtable; a database another process holds is `Busy`, exit status 3). The
//! other backup commands read only the backup directory and need no `--db`. `verify` exits
//! with status 2 when a file is missing or differs, after printing every problem.

use crate::codec::print_json;
use crate::error::CliError;
use crate::JsonFlag;
use augur::backup::{BackupEngine, BackupInfo, PurgeReport};
use augur::{CheckpointOptions, Db};
use clap::{Args, Subcommand};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Arguments of `checkpoint`.
#[derive(Args, Debug)]
pub struct CheckpointArgs {
    /// The directory to create (it must not exist; its missing parents are created).
    dir: PathBuf,
    /// Copy every file instead of hard-linking tables and value-log segments (links are
    /// used by default where the file system allows: the same device).
    #[arg(long)]
    copy: bool,
    #[command(flatten)]
    out: JsonFlag,
}

/// Arguments of `backup`.
#[derive(Args, Debug)]
pub struct BackupArgs {
    #[command(subcommand)]
    command: BackupCommand,
}

/// The backup commands.
#[derive(Subcommand, Debug)]
enum BackupCommand {
    /// Back up the database of --db into BACKUP_DIR (created if missing): a new backup id,
    /// copying only the files no earlier backup holds.
    Create {
        /// The backup directory.
        backup_dir: PathBuf,
        #[command(flatten)]
        out: JsonFlag,
    },
    /// List the backups: id, time, sequence number, files, bytes, bytes shared with
    /// other backups.
    List {
        /// The backup directory.
        backup_dir: PathBuf,
        #[command(flatten)]
        out: JsonFlag,
    },
    /// Read every file of backup ID and check its size and CRC32C; exit status 2 when any
    /// is missing or differs.
    Verify {
        /// The backup directory.
        backup_dir: PathBuf,
        /// The backup's id.
        id: u64,
        #[command(flatten)]
        out: JsonFlag,
    },
    /// Restore backup ID into TARGET (missing, or an empty directory): an ordinary database
    /// holding exactly the backed-up writes.
    Restore {
        /// The backup directory.
        backup_dir: PathBuf,
        /// The backup's id.
        id: u64,
        /// The directory to restore into.
        target: PathBuf,
        #[command(flatten)]
        out: JsonFlag,
    },
    /// Delete backup ID and the files no other backup holds.
    Delete {
        /// The backup directory.
        backup_dir: PathBuf,
        /// The backup's id.
        id: u64,
        #[command(flatten)]
        out: JsonFlag,
    },
    /// Delete all backups but the newest N, and every file no remaining backup holds
    /// (what an interrupted `create` left too).
    Purge {
        /// The backup directory.
        backup_dir: PathBuf,
        /// How many of the newest backups to keep.
        #[arg(long, value_name = "N")]
        keep: usize,
        #[command(flatten)]
        out: JsonFlag,
    },
}

impl BackupArgs {
    /// Whether the command backs up a database (and so needs `--db`).
    pub fn needs_db(&self) -> bool {
        matches!(self.command, BackupCommand::Create { .. })
    }
}

/// `checkpoint DIR [--copy]`.
pub fn checkpoint(db: &Db, args: &CheckpointArgs, top_json: bool) -> Result<(), CliError> {
    let started = Instant::now();
    let options = CheckpointOptions {
        link_files: !args.copy,
    };
    let info = db.checkpoint_with(&args.dir, &options)?;
    let seconds = started.elapsed().as_secs_f64();
    if top_json || args.out.json {
        print_json(&json!({
            "dir": info.dir.display().to_string(),
            "seqno": info.seqno,
            "linked_files": info.linked_files,
            "linked_bytes": info.linked_bytes,
            "copied_files": info.copied_files,
            "written_bytes": info.written_bytes,
            "seconds": seconds,
        }));
    } else {
        println!(
            "checkpoint {} at seqno {}: {} files linked ({} bytes), {} copied, {} bytes \
             written, {seconds:.3} s",
            info.dir.display(),
            info.seqno,
            info.linked_files,
            info.linked_bytes,
            info.copied_files,
            info.written_bytes
        );
    }
    Ok(())
}

/// `backup ...`; `db` opens the database of `--db` for `create`.
pub fn run(
    args: &BackupArgs,
    top_json: bool,
    db: impl FnOnce() -> Result<Db, CliError>,
) -> Result<(), CliError> {
    let json = |out: &JsonFlag| top_json || out.json;
    match &args.command {
        BackupCommand::Create { backup_dir, out } => {
            let db = db()?;
            let engine = BackupEngine::open(backup_dir)?;
            let started = Instant::now();
            let made = engine.create(&db)?;
            let seconds = started.elapsed().as_secs_f64();
            if json(out) {
                let mut v = info_json(&made.info);
                v["new_files"] = json!(made.new_files);
                v["new_bytes"] = json!(made.new_bytes);
                v["reused_files"] = json!(made.reused_files);
                v["seconds"] = json!(seconds);
                print_json(&v);
            } else {
                println!(
                    "backup {} at seqno {}: {} files ({} bytes), {} new ({} bytes), {} \
                     shared with earlier backups, {seconds:.3} s",
                    made.info.id,
                    made.info.seqno,
                    made.info.files,
                    made.info.size_bytes,
                    made.new_files,
                    made.new_bytes,
                    made.reused_files
                );
            }
        }
        BackupCommand::List { backup_dir, out } => {
            let list = engine_of(backup_dir)?.list()?;
            if json(out) {
                print_json(&json!({"backups": list.iter().map(info_json).collect::<Vec<_>>()}));
            } else if list.is_empty() {
                println!("no backups in {}", backup_dir.display());
            } else {
                println!(
                    "{:>6}  {:<24}  {:>12}  {:>6}  {:>14}  {:>14}",
                    "id", "created (UTC)", "seqno", "files", "bytes", "shared bytes"
                );
                for b in &list {
                    println!(
                        "{:>6}  {:<24}  {:>12}  {:>6}  {:>14}  {:>14}",
                        b.id,
                        utc(b.created_unix_ms),
                        b.seqno,
                        b.files,
                        b.size_bytes,
                        b.shared_bytes
                    );
                }
            }
        }
        BackupCommand::Verify {
            backup_dir,
            id,
            out,
        } => {
            let report = engine_of(backup_dir)?.verify(*id)?;
            if json(out) {
                let problems: Vec<Value> = report
                    .problems
                    .iter()
                    .map(|p| json!({"file": p.file, "path": p.path.display().to_string(), "problem": p.what}))
                    .collect();
                print_json(&json!({
                    "id": report.id, "ok": report.is_ok(), "files_checked": report.files_checked,
                    "bytes_checked": report.bytes_checked, "problems": problems,
                }));
            } else {
                for p in &report.problems {
                    println!("{} ({}): {}", p.file, p.path.display(), p.what);
                }
                println!(
                    "backup {}: {} files, {} bytes checked, {} problems",
                    report.id,
                    report.files_checked,
                    report.bytes_checked,
                    report.problems.len()
                );
            }
            if !report.is_ok() {
                return Err(CliError::failed(format!(
                    "backup {id} in {} is damaged: {} of its files are missing or differ",
                    backup_dir.display(),
                    report.problems.len()
                )));
            }
        }
        BackupCommand::Restore {
            backup_dir,
            id,
            target,
            out,
        } => {
            let started = Instant::now();
            let r = engine_of(backup_dir)?.restore(*id, target)?;
            let seconds = started.elapsed().as_secs_f64();
            if json(out) {
                print_json(&json!({
                    "id": r.id, "dir": r.dir.display().to_string(), "seqno": r.seqno,
                    "files": r.files, "bytes": r.bytes, "seconds": seconds,
                }));
            } else {
                println!(
                    "restored backup {} (seqno {}) into {}: {} files, {} bytes, {seconds:.3} s",
                    r.id,
                    r.seqno,
                    r.dir.display(),
                    r.files,
                    r.bytes
                );
            }
        }
        BackupCommand::Delete {
            backup_dir,
            id,
            out,
        } => print_purge(&engine_of(backup_dir)?.delete(*id)?, json(out)),
        BackupCommand::Purge {
            backup_dir,
            keep,
            out,
        } => print_purge(&engine_of(backup_dir)?.purge(*keep)?, json(out)),
    }
    Ok(())
}

/// The backups of an existing directory (`list` and the others never create one).
fn engine_of(dir: &Path) -> Result<BackupEngine, CliError> {
    if !dir.is_dir() {
        return Err(CliError::failed(format!(
            "no backup directory at {} (`augur --db DB backup create {}` makes one)",
            dir.display(),
            dir.display()
        )));
    }
    Ok(BackupEngine::open(dir)?)
}

fn info_json(b: &BackupInfo) -> Value {
    json!({
        "id": b.id, "created_unix_ms": b.created_unix_ms, "seqno": b.seqno,
        "files": b.files, "size_bytes": b.size_bytes, "shared_bytes": b.shared_bytes,
    })
}

fn print_purge(r: &PurgeReport, json: bool) {
    if json {
        print_json(&json!({
            "deleted": r.deleted, "files_removed": r.files_removed,
            "bytes_removed": r.bytes_removed,
        }));
    } else {
        let ids: Vec<String> = r.deleted.iter().map(u64::to_string).collect();
        println!(
            "deleted backups [{}]; removed {} files ({} bytes) no backup holds",
            ids.join(", "),
            r.files_removed,
            r.bytes_removed
        );
    }
}

/// `YYYY-MM-DD HH:MM:SS.mmm` (UTC) of a time in milliseconds since the Unix epoch.
fn utc(unix_ms: u64) -> String {
    let secs = unix_ms / 1000;
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}.{:03}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        unix_ms % 1000
    )
}

#[cfg(test)]
mod tests {
    use super::utc;

    #[test]
    fn utc_times() {
        assert_eq!(utc(0), "1970-01-01 00:00:00.000");
        assert_eq!(utc(951_782_400_123), "2000-02-29 00:00:00.123");
        assert_eq!(utc(1_700_000_000_000), "2023-11-14 22:13:20.000");
    }
}
