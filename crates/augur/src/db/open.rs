//! Opening a database, in two phases.
//!
//! 1. **Read and check, writing nothing**: option checks, the directory lock, the manifest
//!    replay (`VersionSet::recover`), the value-log segments (`ValueLog::open_existing`), the
//!    WAL replay into a memtable (`replay.rs`, which applies the damage model of
//!    docs/RELIABILITY.md) and the check that no table the manifest forgot holds writes
//!    nothing else has (`obsolete.rs`). Any failure here leaves the directory as it was.
//! 2. **Commit** (never for `Options::read_only`): a fresh manifest, the active value-log
//!    segment (the newest one reused, or a new one), the replayed memtable flushed straight
//!    to an L0 table, a fresh WAL, and the removal of files no version references (left
//!    behind by a crash).
//!
//! A read-only open stops after phase 1 and serves reads from the recovered version and the
//! replayed memtable; it takes no lock, so it can run beside a writer (a file the writer
//! removes while the read-only open reads the directory makes it retry).

use super::flush::write_table_from_memtable;
use super::obsolete::{check_unreferenced_tables, remove_obsolete_files};
use super::replay::{replay_wals, Replayed};
use super::{BackgroundState, DbInner, Lifecycle, MemState, ReadState, WriteState};
use crate::cache::{CacheBudget, FileReads};
use crate::compaction::TableLimit;
use crate::error::{Error, Result};
use crate::filename::{self, FileKind};
use crate::fs::{FileLock, FileSystem};
use crate::iter::ReadContext;
use crate::key::SeqNo;
use crate::learning::learner::{Learner, LearnerOptions};
use crate::options::Options;
use crate::version::CompactionStyle;
use crate::version::{RecoveredState, Version, VersionEdit, VersionSet};
use crate::vlog::{ActiveStart, ValueLog, SEGMENT_HEADER_LEN};
use crate::wal::{LogKind, LogWriter};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// Attempts of a read-only open that a concurrent writer disturbed.
const READ_ONLY_ATTEMPTS: usize = 5;

/// What an open found in the directory, kept apart from the [`Options`] the user asked for
/// (which the open never changes).
#[derive(Debug)]
pub(crate) struct Recovered {
    /// The compaction style the database was created with, from its manifest
    /// (`Options::compaction` only asks for one, and an open refuses a conflicting ask).
    pub style: CompactionStyle,
    /// The WALs found missing or shorter than the manifest recorded whose lost writes
    /// `Options::accept_wal_loss` let the open drop, one line each.
    pub wal_losses: Vec<String>,
}

/// Opens or creates the database in `dir`.
pub(super) fn open(dir: &Path, opts: Options) -> Result<DbInner> {
    opts.validate()?;
    let fs = opts.fs.clone();
    if opts.read_only {
        return open_read_only(dir, opts);
    }
    if !fs.exists(dir) {
        if !opts.create_if_missing {
            return Err(missing_database(dir));
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

    let Found {
        versions,
        recovered,
        vlog,
        replayed,
    } = read_and_check(dir, &opts)?;

    // Phase 2: commit.
    versions.start_manifest()?;
    let version = versions.current();
    // The replayed writes are about to be persisted in a table: the segments they point into
    // must be durable first (an earlier process may have stopped without syncing them).
    vlog.note_unsynced(replayed.segments.iter().copied());
    // Keep appending to the newest segment when possible; a new one never takes the id of a
    // segment the manifest still mentions. Segments a compaction reserved and never
    // installed are removed (`start_active`) and recorded as deleted.
    let min_new_segment = version
        .vlog_deleted
        .max()
        .into_iter()
        .chain(version.vlog_garbage.keys().copied())
        .chain(version.vlog_reserved.iter().copied())
        .chain(version.vlog_sealed.keys().copied())
        .max()
        .map_or(1, |m| m.saturating_add(1));
    let deleted = &version.vlog_deleted;
    let reserved = &version.vlog_reserved;
    // A segment recorded as sealed keeps its size for good: it is never appended to again.
    let sealed = &version.vlog_sealed;
    let started = vlog.start_active(min_new_segment, &|id| {
        deleted.contains(id) || reserved.contains(&id) || sealed.contains_key(&id)
    })?;
    // The edit below records the final size of every sealed segment the manifest does not
    // know yet, and the replayed writes' table points into segments an earlier process may
    // have stopped without syncing: both need those bytes durable first. (A segment can hold
    // entries no WAL record names, e.g. after a WAL append failed, so this holds with nothing
    // replayed too: recording a size a power cut then shortens refuses the next open.)
    vlog.sync()?;
    // Persist what the WALs held as an L0 table, then start a fresh WAL.
    let wal_number = versions.new_file_number();
    let mut edit = VersionEdit {
        log_number: Some(wal_number),
        last_seqno: Some(replayed.last_seqno),
        wals_added: vec![wal_number],
        vlog_deleted: removed_segments(&vlog, &version, started),
        vlog_sealed: super::unrecorded_sealed_segments(&vlog, &version),
        ..VersionEdit::default()
    };
    if !replayed.mem.is_empty() {
        let id = versions.new_file_number();
        // Nothing reads yet: every shadowed entry goes, its value counted as garbage.
        let oldest_snapshot = replayed.last_seqno;
        let table =
            write_table_from_memtable(fs.as_ref(), dir, id, &replayed.mem, &opts, oldest_snapshot)?;
        if let Some(t) = table {
            let flushed = t.into_edit();
            edit.added = flushed.added;
            edit.vlog_garbage = flushed.vlog_garbage;
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
    let mem = MemState::new(wal_number, opts.memtable_size_bytes);
    let replayed_to = (replayed.last_seqno, replayed.losses);
    let opened = Opened::new(versions, vlog, &recovered, replayed_to, mem);
    finish(dir, opts, opened, Some(wal), Some(lock))
}

/// The segments an open removes without GC, to record as deleted in its edit (so the
/// manifest's deleted segments stay runs of consecutive ids, see `version/segment_set.rs`):
/// the one whose creation a crash tore, every sealed segment that holds no entry (an open of
/// an older build started a segment at every open), and every segment a compaction reserved
/// but never installed (removed by `start_active` if it had a file; recording it drops the
/// reservation). Nothing points into them; the files left are removed once the edit is
/// durable (`remove_obsolete_files`).
///
/// An empty sealed segment a table may point into is kept: its size is either recorded (and
/// checked, so it held no entry) or unknown (a manifest of an older build), and then a
/// segment truncated to its header looks the same as an empty one.
fn removed_segments(vlog: &ValueLog, version: &Version, started: ActiveStart) -> Vec<u64> {
    let deleted = &version.vlog_deleted;
    let pointed_into = |id: u64| {
        !version.vlog_sealed.contains_key(&id)
            && version
                .levels
                .iter()
                .flatten()
                .any(|f| f.meta.may_point_into(id))
    };
    let empty = vlog.segments().into_iter().filter(|s| {
        s.sealed
            && s.size_bytes <= SEGMENT_HEADER_LEN as u64
            && !deleted.contains(s.id)
            && !pointed_into(s.id)
    });
    let mut ids: Vec<u64> = started
        .removed_stub
        .into_iter()
        .chain(empty.map(|s| s.id))
        .chain(version.vlog_reserved.iter().copied())
        .collect();
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// What phase 1 read and checked.
struct Found {
    versions: VersionSet,
    recovered: RecoveredState,
    vlog: ValueLog,
    replayed: Replayed,
}

/// Phase 1 (see the module doc): reads the manifest, the value-log segments and the WALs,
/// and checks them, writing nothing.
fn read_and_check(dir: &Path, opts: &Options) -> Result<Found> {
    let fs = opts.fs.clone();
    let table_limit = TableLimit::read(fs.as_ref(), opts.read_mode);
    let compressed = opts.compression != crate::compression::Compression::None;
    let budget = CacheBudget::split(opts.read_mode, opts.cache_bytes, compressed);
    let reads = FileReads::new(opts.read_mode, budget, opts.max_open_files);
    let (versions, recovered) = VersionSet::recover(
        fs.clone(),
        dir,
        reads.clone(),
        opts.learning.uses_models(),
        opts.num_levels,
        opts.compaction,
        &|tables| match reads.bounded() {
            true => Ok(()),
            false => table_limit.check_open(tables),
        },
    )?;
    let version = versions.current();
    let vlog = ValueLog::open_existing_with_orphans(
        fs.clone(),
        dir,
        reads.clone(),
        opts.value_log_segment_bytes,
        &|id| version.vlog_reserved.contains(&id),
    )?
    .with_fetch_threads(opts.scan_fetch_threads)
    .with_compression(opts.compression);
    check_garbage_segments(&version, &vlog)?;
    check_sealed_segments(&version, &vlog)?;
    let mut replayed = replay_wals(
        fs.as_ref(),
        dir,
        &recovered,
        &version,
        &vlog,
        opts.accept_wal_loss,
        opts.memtable_size_bytes,
    )?;
    if !opts.read_only {
        check_unreferenced_tables(
            fs.as_ref(),
            dir,
            &version,
            &recovered.manifest,
            replayed.last_seqno,
            opts.read_mode,
            opts.accept_wal_loss.then_some(&mut replayed.losses),
        )?;
    }
    Ok(Found {
        versions,
        recovered,
        vlog,
        replayed,
    })
}

/// Fails if a segment the manifest records garbage for is missing (or shorter than its
/// header). Such a segment is live: GC records a segment as deleted, which drops its garbage,
/// before it removes the file, and a segment that never held an entry has no garbage. So it
/// was lost to damage, and the values only it holds with it.
fn check_garbage_segments(version: &Version, vlog: &ValueLog) -> Result<()> {
    let segments = vlog.segments();
    for &id in version.vlog_garbage.keys() {
        if !segments.iter().any(|s| s.id == id) {
            return Err(Error::corruption(
                vlog.segment_path(id),
                0,
                "the manifest records garbage in this value-log segment, so it is live, but \
                 it is missing or shorter than its header (GC never deleted it)",
            ));
        }
    }
    Ok(())
}

/// Fails unless every segment whose final size the manifest records exists with exactly
/// that size. A sealed segment never changes until GC deletes it (which records the
/// deletion first), so a shorter file lost entries — and would look emptier than it is to
/// GC, which deletes a segment once its garbage reaches its bytes — and any other size is
/// damage too.
fn check_sealed_segments(version: &Version, vlog: &ValueLog) -> Result<()> {
    let segments = vlog.segments();
    for (&id, &recorded) in &version.vlog_sealed {
        let found = segments.iter().find(|s| s.id == id).map(|s| s.size_bytes);
        let why = match found {
            Some(size) if size == recorded => continue,
            Some(size) => format!(
                "this sealed value-log segment holds {size} bytes, but the manifest records \
                 {recorded} (a sealed segment never changes)"
            ),
            None => format!(
                "the manifest records this sealed value-log segment ({recorded} bytes), so it \
                 is live, but it is missing or shorter than its header (GC never deleted it)"
            ),
        };
        return Err(Error::corruption(vlog.segment_path(id), 0, why));
    }
    Ok(())
}

/// Opens `dir` for reading only (see the module doc).
fn open_read_only(dir: &Path, opts: Options) -> Result<DbInner> {
    let fs = opts.fs.clone();
    if !database_exists(fs.as_ref(), dir)? {
        return Err(missing_database(dir));
    }
    let mut attempt = 1;
    let found = loop {
        match read_and_check(dir, &opts) {
            Ok(found) => break found,
            // A writer may have replaced the manifest, or removed a WAL, table or segment
            // it had just made obsolete, between two reads of this open.
            Err(e @ (Error::Corruption { .. } | Error::Io { .. }))
                if attempt < READ_ONLY_ATTEMPTS =>
            {
                log::info!("read-only open of {} retried: {e}", dir.display());
                attempt += 1;
                std::thread::sleep(Duration::from_millis(20 * attempt as u64));
            }
            Err(e) => return Err(e),
        }
    };
    let Found {
        versions,
        recovered,
        vlog,
        replayed,
    } = found;
    // The replayed writes stay in memory, as the memtable reads see.
    let mem = MemState::with_memtable(Arc::new(replayed.mem), recovered.log_number);
    let replayed_to = (replayed.last_seqno, replayed.losses);
    let opened = Opened::new(versions, vlog, &recovered, replayed_to, mem);
    finish(dir, opts, opened, None, None)
}

/// What both kinds of open hand to [`finish`].
struct Opened {
    versions: VersionSet,
    vlog: ValueLog,
    mem: MemState,
    last_seqno: SeqNo,
    recovered: Recovered,
}

impl Opened {
    /// The state recovered from the manifest and the WALs (`replayed`: the largest seqno
    /// their replay recovered and the losses it let through), with the memtables `mem`.
    fn new(
        versions: VersionSet,
        vlog: ValueLog,
        recovered: &RecoveredState,
        replayed: (SeqNo, Vec<String>),
        mem: MemState,
    ) -> Opened {
        let (replayed_seqno, wal_losses) = replayed;
        Opened {
            versions,
            vlog,
            mem,
            last_seqno: replayed_seqno.max(recovered.last_seqno),
            recovered: Recovered {
                style: recovered.style,
                wal_losses,
            },
        }
    }
}

/// Builds the open database: starts the learner and assembles the shared state from its
/// parts (see `DbInner`). `wal` and `lock` are `None` for a read-only database.
fn finish(
    dir: &Path,
    opts: Options,
    opened: Opened,
    wal: Option<LogWriter>,
    lock: Option<Box<dyn FileLock>>,
) -> Result<DbInner> {
    let Opened {
        versions,
        vlog,
        mem,
        last_seqno,
        recovered,
    } = opened;
    let version = versions.current();
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

    let vlog = Arc::new(vlog);
    let style = recovered.style;
    let work = BackgroundState::new(style, &opts);
    let reads = ReadState::new(ReadContext {
        dir: dir.to_path_buf(),
        vlog: vlog.clone(),
        // Under leveled a level is one run: nothing to seek in parallel.
        parallel_seek_threads: match style {
            CompactionStyle::Flsm => opts.flsm.parallel_seek_threads,
            CompactionStyle::Leveled => 0,
        },
        seeks: work.strategy().seek_observer(),
        clock: opts.clock.clone(),
    });
    Ok(DbInner {
        dir: dir.to_path_buf(),
        recovered,
        versions,
        vlog,
        writes: WriteState::new(mem, wal, last_seqno),
        work,
        reads,
        life: Lifecycle::default(),
        counters: Default::default(),
        learner,
        _lock: lock,
        opts,
    })
}

/// The error for a database that does not exist, in the words of every front end.
fn missing_database(dir: &Path) -> Error {
    Error::InvalidArgument(format!(
        "no database at {} (Options::create_if_missing is false)",
        dir.display()
    ))
}

/// Fails when `dir` (which has no CURRENT) holds files Augur does not own.
fn refuse_foreign_directory(fs: &dyn FileSystem, dir: &Path) -> Result<()> {
    let names = fs.list(dir)?;
    // `lost/` is repair's (`repair/`): a repair interrupted before it wrote CURRENT leaves
    // it beside the database's files, which must be reported as such.
    let foreign = names
        .iter()
        .find(|n| filename::parse(n).is_none() && n.as_str() != super::repair::LOST_DIR);
    if let Some(foreign) = foreign {
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
    refuse_headless_database(fs, dir)?;
    if !opts.create_if_missing {
        return Err(missing_database(dir));
    }
    // Leftovers of a crash during creation (the first manifest without CURRENT, a temporary
    // CURRENT) are replaced.
    for n in fs.list(dir)? {
        if matches!(
            filename::parse(&n),
            Some(FileKind::Manifest(_) | FileKind::Temp)
        ) {
            fs.remove(&dir.join(n))?;
        }
    }
    VersionSet::create(fs, dir, opts.compaction.unwrap_or(CompactionStyle::Leveled))
}

/// Whether `dir` holds an Augur database: `true` when it has a CURRENT file, `false` when it
/// does not exist or holds nothing a database wrote beyond an interrupted creation (see
/// [`refuse_headless_database`]).
///
/// # Errors
/// `Corruption` naming CURRENT when CURRENT is missing but the directory holds a database's
/// files; `Io` when the directory cannot be listed.
pub(crate) fn database_exists(fs: &dyn FileSystem, dir: &Path) -> Result<bool> {
    if fs.exists(&filename::current_path(dir)) {
        return Ok(true);
    }
    if !fs.exists(dir) {
        return Ok(false);
    }
    refuse_headless_database(fs, dir)?;
    Ok(false)
}

/// Fails when `dir`, which has no CURRENT, holds files only a created database writes.
///
/// Creation writes the first manifest (`MANIFEST-000001`) and then CURRENT, before any WAL,
/// table or value-log segment exists, and CURRENT is only ever replaced by a rename, never
/// removed. So the only files a database directory can hold without CURRENT are the LOCK,
/// a temporary CURRENT and the first manifest, left by a crash during creation. Anything
/// else — a WAL (a database that never flushed keeps all its writes there), a table, a
/// value-log segment, a later manifest — means CURRENT was lost: starting an empty database
/// would overwrite the data, so the open refuses and names the newest manifest, which
/// CURRENT normally names.
fn refuse_headless_database(fs: &dyn FileSystem, dir: &Path) -> Result<()> {
    let mut names = fs.list(dir)?;
    names.sort();
    let data: Vec<&String> = names
        .iter()
        .filter(|n| match filename::parse(n) {
            Some(FileKind::Lock | FileKind::Temp | FileKind::Current) | None => false,
            Some(FileKind::Manifest(number)) => number != 1,
            Some(FileKind::Wal(_) | FileKind::Table(_) | FileKind::ValueLog(_)) => true,
        })
        .collect();
    if data.is_empty() {
        return Ok(());
    }
    const SHOWN: usize = 5;
    let mut listed = data
        .iter()
        .take(SHOWN)
        .map(|n| n.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    if data.len() > SHOWN {
        listed.push_str(&format!(" and {} more", data.len() - SHOWN));
    }
    let newest_manifest = names
        .iter()
        .filter_map(|n| match filename::parse(n) {
            Some(FileKind::Manifest(number)) => Some(number),
            _ => None,
        })
        .max();
    let hint = match newest_manifest {
        Some(number) => format!(
            "; CURRENT normally holds the line {}",
            filename::manifest_name(number)
        ),
        None => "; no manifest is left".to_string(),
    };
    Err(Error::corruption(
        filename::current_path(dir),
        0,
        format!(
            "CURRENT is missing but {} holds a database's files ({listed}): the database is \
             damaged, and an empty database will not be started over it{hint}; `augur \
             repair {}` (augur::repair) rebuilds a manifest from the files",
            dir.display(),
            dir.display()
        ),
    ))
}
