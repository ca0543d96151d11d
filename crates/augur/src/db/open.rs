//! Opening a database: option checks, the directory lock, manifest recovery, value-log
//! opening, WAL replay into a memtable that is flushed straight to L0, a fresh WAL, and the
//! removal of files no version references (left behind by a crash).
//!
//! WAL replay policy (docs/format/wal.md): records are replayed in file order. A torn tail of
//! the newest WAL with records is dropped (the crash interrupted that write, which was not
//! acknowledged as synced); record-less WALs after it (left by a recovery that crashed) and
//! any WAL shorter than its header (a crash inside its creation) are ignored. A torn tail of
//! an older WAL, or mid-log corruption, is a `Corruption` error: older WALs were synced when
//! the memtable switched. A record whose value pointer does not
//! reach complete value-log bytes ends the replay there (its value-log write was lost in
//! the crash, so it and everything after it were not durable). Pointers into segments that
//! GC deleted are shadowed by their relocated copies and are skipped.
//!
//! Before the replay, the WALs the manifest records as live (docs/format/manifest.md, "Live
//! WALs") are checked: a missing one, or a closed one shorter than its synced size, lost
//! acknowledged writes and fails the open with `Corruption`, unless
//! `Options::accept_wal_loss` is set; then the loss is reported in `Db::wal_losses`, torn
//! tails of any WAL are dropped, and every surviving record is replayed.

use super::batch::decode_record;
use super::flush::write_table_from_memtable;
use super::{BgState, DbInner, MemState, SnapshotList};
use crate::error::{Error, Result};
use crate::filename::{self, FileKind};
use crate::fs::FileSystem;
use crate::key::ValueKind;
use crate::learning::learner::{Learner, LearnerOptions};
use crate::memtable::Memtable;
use crate::options::Options;
use crate::version::{Version, VersionEdit, VersionSet};
use crate::vlog::{ValueLog, ValuePointer};
use crate::wal::{read_log, LogKind, LogTail, LogWriter};
use parking_lot::{Condvar, Mutex};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;
use std::time::Duration;

/// Opens or creates the database in `dir`.
pub(super) fn open(dir: &Path, opts: Options) -> Result<DbInner> {
    opts.validate()?;
    let fs = opts.fs.clone();
    if !fs.exists(dir) {
        if !opts.create_if_missing {
            return Err(Error::InvalidArgument(format!(
                "database {} does not exist and create_if_missing is false",
                dir.display()
            )));
        }
        fs.create_dir_all(dir)?;
    }
    // Refuse a foreign directory before creating the LOCK file in it.
    if !fs.exists(&filename::current_path(dir)) {
        refuse_foreign_directory(fs.as_ref(), dir)?;
    }
    let lock = fs.lock(&filename::lock_path(dir))?;
    if fs.exists(&filename::current_path(dir)) {
        if opts.error_if_exists {
            return Err(Error::InvalidArgument(format!(
                "database {} already exists and error_if_exists is true",
                dir.display()
            )));
        }
    } else {
        create_new(fs.as_ref(), dir, &opts)?;
    }

    let (versions, recovered) = VersionSet::recover(
        fs.clone(),
        dir,
        opts.read_mode,
        opts.learning.uses_models(),
        opts.num_levels,
        opts.compaction,
    )?;
    let recovered_version = versions.current();
    // Never reuse the id of a segment the manifest still mentions.
    let min_segment = recovered_version
        .vlog_deleted
        .iter()
        .chain(recovered_version.vlog_garbage.keys())
        .max()
        .map_or(1, |m| m + 1);
    let vlog = ValueLog::open_with_min_active_id(
        fs.clone(),
        dir,
        opts.read_mode,
        opts.value_log_segment_bytes,
        min_segment,
    )?
    .with_fetch_threads(opts.scan_fetch_threads);

    let wal_losses = check_live_wals(fs.as_ref(), dir, &recovered.live_wals, opts.accept_wal_loss)?;
    let version = versions.current();
    let mem = Memtable::new();
    let mut last_seqno = recovered.last_seqno;
    let mut wals: Vec<u64> = list_files(fs.as_ref(), dir)?
        .into_iter()
        .filter_map(|k| match k {
            FileKind::Wal(n) if n >= recovered.log_number => Some(n),
            _ => None,
        })
        .collect();
    wals.sort_unstable();
    let wal_sizes = wals
        .iter()
        .map(|&n| fs.size(&filename::wal_path(dir, n)))
        .collect::<Result<Vec<u64>>>()?;
    let header_len = crate::wal::HEADER_LEN as u64;
    'replay: for (i, &number) in wals.iter().enumerate() {
        let path = filename::wal_path(dir, number);
        // The newest WAL holding records may end torn. WALs after it hold no record: a
        // memtable switch created them after syncing this one, or a recovery interrupted
        // by a crash created them before recording the new log number.
        let newest = wal_sizes
            .get(i + 1..)
            .unwrap_or(&[])
            .iter()
            .all(|&s| s <= header_len);
        // A WAL shorter than its header was being created when the process died
        // (`LogWriter::create` syncs the header before any record is added to it or to a
        // later WAL): it never held a record, wherever it lies. Skip it, even before a WAL
        // with records (a SIGKILL loop left one there; regression test
        // `regression_empty_wal_before_records`). A WAL that held records and lost them is
        // caught above by the live-WAL checks, not by its length.
        let size = wal_sizes.get(i).copied().unwrap_or(0);
        if size < header_len {
            log::info!(
                "skipping {} ({size} bytes): its creation was interrupted",
                path.display()
            );
            continue;
        }
        let contents = read_log(fs.as_ref(), &path, LogKind::Wal)?;
        if let LogTail::Torn { offset, reason } = &contents.tail {
            if !newest && opts.accept_wal_loss {
                log::warn!(
                    "accept_wal_loss: dropping the damaged tail of {} at offset {offset}: {reason}",
                    path.display()
                );
            } else if !newest {
                return Err(Error::corruption(
                    &path,
                    *offset,
                    format!("damaged record in a WAL that was synced: {reason}"),
                ));
            }
            log::info!(
                "dropping the torn tail of {} at offset {offset}: {reason}",
                path.display()
            );
        }
        for (offset, record) in &contents.records {
            let (first, entries) = decode_record(record)
                .ok_or_else(|| Error::corruption(&path, *offset, "malformed write-batch record"))?;
            for e in &entries {
                if e.kind == ValueKind::Pointer
                    && !pointer_is_replayable(&vlog, &version, &e.value, &path, *offset)?
                {
                    log::info!(
                        "WAL {} record at offset {offset} points at value-log bytes lost in a crash; replay ends there",
                        path.display()
                    );
                    break 'replay;
                }
            }
            for (j, e) in entries.iter().enumerate() {
                let seqno = first + j as u64;
                if e.kind == ValueKind::Pointer && pointer_is_deleted(&version, &e.value) {
                    continue;
                }
                mem.insert(&e.key, seqno, e.kind, &e.value);
                last_seqno = last_seqno.max(seqno);
            }
        }
    }

    // Persist what the WALs held as an L0 table, then start a fresh WAL.
    let wal_number = versions.new_file_number();
    let mut edit = VersionEdit {
        log_number: Some(wal_number),
        last_seqno: Some(last_seqno),
        wals_added: vec![wal_number],
        ..VersionEdit::default()
    };
    if !mem.is_empty() {
        vlog.sync()?;
        let id = versions.new_file_number();
        if let Some((meta, _)) = write_table_from_memtable(fs.as_ref(), dir, id, &mem, &opts)? {
            edit.added.push((0, meta));
        }
    }
    let wal = LogWriter::create(
        fs.as_ref(),
        &filename::wal_path(dir, wal_number),
        LogKind::Wal,
    )?;
    fs.sync_dir(dir)?;
    let version = versions.log_and_apply(edit)?;
    remove_obsolete_files(fs.as_ref(), dir, &version, wal_number, &vlog)?;
    let learner = Learner::start(LearnerOptions {
        policy: opts.learning,
        configs: (0..opts.num_levels)
            .map(|l| opts.index_config_at(l))
            .collect(),
        auto: opts.auto_index.then_some(opts.model_memory_budget),
        wait: Duration::from_millis(opts.learning_wait_ms),
        threads: opts.learning_threads,
        lazy_reads: opts.lazy_learning_reads,
        lazy_reads_per_key: opts.lazy_learning_reads_per_key,
        num_levels: opts.num_levels,
    })?;
    versions.set_listener(learner.clone());
    learner.announce_existing(&version);

    Ok(DbInner {
        dir: dir.to_path_buf(),
        versions,
        vlog,
        mem: Mutex::new(MemState::new(wal_number)),
        wal: Mutex::new(wal),
        writers: Mutex::new(Default::default()),
        writers_cv: Condvar::new(),
        last_seqno: AtomicU64::new(last_seqno),
        snapshots: Arc::new(SnapshotList::default()),
        bg: Mutex::new(BgState::default()),
        bg_cv: Condvar::new(),
        bg_work: Mutex::new(()),
        poisoned: Mutex::new(None),
        pending_segment_deletions: Mutex::new(Vec::new()),
        counters: Default::default(),
        breakdown: Default::default(),
        strategy: crate::compaction::strategy_for(opts.compaction),
        gc_lock: Mutex::new(()),
        gc_running: AtomicBool::new(false),
        gc_thread: Mutex::new(None),
        relocated: AtomicU64::new(0),
        closed: AtomicBool::new(false),
        learner,
        wal_losses,
        _lock: lock,
        opts,
    })
}

/// Checks the WALs the manifest records as live: each must exist, and a closed one must
/// hold at least the bytes synced into it. Without `accept_loss` the first loss is a
/// `Corruption` naming the WAL; with it, the losses are logged and returned, one line each.
fn check_live_wals(
    fs: &dyn FileSystem,
    dir: &Path,
    live: &std::collections::BTreeMap<u64, Option<u64>>,
    accept_loss: bool,
) -> Result<Vec<String>> {
    let mut losses = Vec::new();
    for (&number, &synced) in live {
        let path = filename::wal_path(dir, number);
        let loss = if !fs.exists(&path) {
            let what = match synced {
                Some(s) => format!("{s} synced bytes"),
                None => "the active WAL's writes".to_string(),
            };
            Some((
                0,
                format!(
                    "WAL {number} is missing: the manifest records it as live ({what}, not yet \
                     flushed to a table)"
                ),
            ))
        } else if let Some(s) = synced {
            let size = fs.size(&path)?;
            (size < s).then(|| {
                (
                    size,
                    format!(
                        "WAL {number} holds {size} bytes, fewer than the {s} bytes synced into \
                         it before it was closed"
                    ),
                )
            })
        } else {
            None
        };
        let Some((offset, what)) = loss else {
            continue;
        };
        if !accept_loss {
            return Err(Error::corruption(
                &path,
                offset,
                format!(
                    "{what}; its writes are lost. Open with Options::accept_wal_loss (CLI \
                     --accept-wal-loss) to drop them and open anyway"
                ),
            ));
        }
        log::warn!(
            "accept_wal_loss: {}: {what}; its lost writes are dropped",
            path.display()
        );
        losses.push(format!("{}: {what}", path.display()));
    }
    Ok(losses)
}

/// Fails when `dir` (which has no CURRENT) holds files Augur does not own.
fn refuse_foreign_directory(fs: &dyn FileSystem, dir: &Path) -> Result<()> {
    let names = fs.list(dir)?;
    if let Some(foreign) = names.iter().find(|n| filename::parse(n).is_none()) {
        return Err(Error::InvalidArgument(format!(
            "{} is not an Augur database (no CURRENT file, and it holds other files such as {foreign:?})",
            dir.display(),
        )));
    }
    Ok(())
}

/// Creates an empty database in `dir`, refusing a directory that holds foreign files.
fn create_new(fs: &dyn FileSystem, dir: &Path, opts: &Options) -> Result<()> {
    refuse_foreign_directory(fs, dir)?;
    let names = fs.list(dir)?;
    if names
        .iter()
        .any(|n| matches!(filename::parse(n), Some(FileKind::Table(_))))
    {
        return Err(Error::corruption(
            filename::current_path(dir),
            0,
            "CURRENT is missing but SSTables exist; refusing to start an empty database over them",
        ));
    }
    if !opts.create_if_missing {
        return Err(Error::InvalidArgument(format!(
            "{} is not an Augur database and create_if_missing is false",
            dir.display()
        )));
    }
    // Leftovers of a crash during creation (a manifest without CURRENT) are replaced.
    for n in &names {
        if matches!(
            filename::parse(n),
            Some(FileKind::Manifest(_) | FileKind::Temp | FileKind::Wal(_))
        ) {
            fs.remove(&dir.join(n))?;
        }
    }
    VersionSet::create(fs, dir, opts.compaction)
}

fn list_files(fs: &dyn FileSystem, dir: &Path) -> Result<Vec<FileKind>> {
    Ok(fs
        .list(dir)?
        .iter()
        .filter_map(|n| filename::parse(n))
        .collect())
}

fn pointer_is_deleted(version: &Version, value: &[u8]) -> bool {
    ValuePointer::decode(value).is_some_and(|p| version.vlog_deleted.contains(&p.segment))
}

/// A WAL pointer may be replayed if its segment was GC'd (skipped later) or it reaches a
/// complete, valid value-log entry.
fn pointer_is_replayable(
    vlog: &ValueLog,
    version: &Version,
    value: &[u8],
    wal: &Path,
    offset: u64,
) -> Result<bool> {
    let ptr = ValuePointer::decode(value)
        .ok_or_else(|| Error::corruption(wal, offset, "malformed value pointer in WAL record"))?;
    Ok(version.vlog_deleted.contains(&ptr.segment) || vlog.is_valid(&ptr))
}

/// Deletes WALs older than `wal_number`, tables no version references, old manifests, a
/// stray CURRENT.tmp and value-log segments GC already deleted in the manifest.
fn remove_obsolete_files(
    fs: &dyn FileSystem,
    dir: &Path,
    version: &Version,
    wal_number: u64,
    vlog: &ValueLog,
) -> Result<()> {
    let live_tables: std::collections::HashSet<u64> = version
        .levels
        .iter()
        .flatten()
        .map(|f| f.meta.file_id)
        .collect();
    let current = String::from_utf8_lossy(&fs.read_all(&filename::current_path(dir))?)
        .trim_end()
        .to_string();
    for name in fs.list(dir)? {
        let obsolete = match filename::parse(&name) {
            Some(FileKind::Wal(n)) => n < wal_number,
            Some(FileKind::Table(n)) => !live_tables.contains(&n),
            Some(FileKind::Manifest(_)) => name != current,
            Some(FileKind::Temp) => true,
            Some(FileKind::ValueLog(id)) => {
                if version.vlog_deleted.contains(&id) {
                    vlog.delete_segment(id)?;
                }
                false
            }
            _ => false,
        };
        if obsolete {
            fs.remove(&dir.join(&name))?;
        }
    }
    // Sealed segments holding no entry (left by an open with no separated write) go too.
    let active = vlog.active_segment();
    for s in vlog.segments() {
        if s.id != active && s.size_bytes <= crate::vlog::SEGMENT_HEADER_LEN as u64 {
            vlog.delete_segment(s.id)?;
        }
    }
    fs.sync_dir(dir)
}
