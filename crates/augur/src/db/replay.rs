//! WAL replay at open: the WALs the manifest has not seen flushed are read back into a
//! memtable, under the damage model of docs/RELIABILITY.md: only what a crash can leave
//! (bytes after the last sync) is dropped silently; any other loss of acknowledged writes is
//! `Corruption` naming the damaged file, or, with `Options::accept_wal_loss`, a listed loss.
//! Replay writes nothing; the open decides what to do with the result.
//!
//! What a crash can leave, and so what is dropped without an error (docs/format/wal.md):
//! - a WAL shorter than its header that the manifest does not record (its creation was
//!   interrupted; `LogWriter::create` syncs the header before the manifest records it);
//! - a torn tail of the newest WAL with records, past the bytes known to be synced;
//! - a record of such an unsynced tail whose value pointer leads to value-log bytes the
//!   crash took: the replay ends there (the record and everything after it were not
//!   durable).
//!
//! What only damage can leave, and is refused:
//! - a WAL the manifest records as live that is missing, shorter than its header, or (when
//!   closed) shorter than the bytes synced into it;
//! - a bad record before the end of a WAL's synced bytes: a closed WAL (closed by a memtable
//!   switch or a clean close, which record its synced size in the manifest), or any WAL
//!   followed by a WAL with records (synced when the next one was created);
//! - a bad record followed by a valid one (`LogTail::Damaged`);
//! - a record whose writes are not newer than every write replayed before it (the manifest's
//!   flushed ones, earlier records and WALs): a WAL replaced by another, or rolled back;
//! - a record in a WAL's synced bytes whose value pointer does not reach a complete, valid
//!   value-log entry: the value log is synced before a WAL is closed, so its bytes were
//!   durable. Pointers into segments GC deleted (recorded in the manifest) are shadowed by
//!   their relocated copies and skipped.

use super::batch::{decode_record, LoggedEntry};
use crate::error::{Error, Result};
use crate::filename::{self, FileKind};
use crate::fs::{FileSystem, ReadMode};
use crate::key::{SeqNo, ValueKind};
use crate::memtable::Memtable;
use crate::version::{RecoveredState, Version};
use crate::vlog::{ValueLog, ValuePointer};
use crate::wal::{read_log, LogKind, LogTail, HEADER_LEN, RECORD_HEADER_LEN};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// What the replay recovered.
pub(super) struct Replayed {
    /// The replayed writes.
    pub mem: Memtable,
    /// The largest seqno recovered (the manifest's, or a replayed write's).
    pub last_seqno: SeqNo,
    /// The losses `accept_wal_loss` let through, one line each.
    pub losses: Vec<String>,
    /// The value-log segments the replayed pointers point into: bytes an earlier process
    /// may not have synced, which the open syncs before it persists the replayed writes.
    pub segments: BTreeSet<u64>,
}

/// The damage found, and whether to fail on it or list it.
struct Losses {
    accept: bool,
    lines: Vec<String>,
}

impl Losses {
    /// A loss of acknowledged writes in `file` at `offset`: `Corruption` unless the caller
    /// accepts losses, then logged and listed.
    fn note(&mut self, file: &Path, offset: u64, what: String) -> Result<()> {
        if !self.accept {
            return Err(Error::corruption(
                file,
                offset,
                format!(
                    "{what}; its writes are lost. Open with Options::accept_wal_loss (CLI \
                     --accept-wal-loss) to drop them and open anyway"
                ),
            ));
        }
        log::warn!(
            "accept_wal_loss: {} at offset {offset}: {what}; its writes are dropped",
            file.display()
        );
        self.lines
            .push(format!("{} at offset {offset}: {what}", file.display()));
        Ok(())
    }
}

/// Replays the WALs of `dir` numbered at or above the manifest's log number (see the module
/// doc). `version` is the recovered version (for segments GC deleted); `vlog` reads the
/// value-log entries replayed pointers lead to.
///
/// # Errors
/// `Corruption` naming the damaged file for a loss of acknowledged writes (unless
/// `accept_loss`); `Io` on read failures.
pub(super) fn replay_wals(
    fs: &dyn FileSystem,
    dir: &Path,
    recovered: &RecoveredState,
    version: &Version,
    vlog: &ValueLog,
    accept_loss: bool,
    memtable_budget: usize,
) -> Result<Replayed> {
    let mut losses = Losses {
        accept: accept_loss,
        lines: Vec::new(),
    };
    // WALs whose loss is already listed: their damaged tail is that same loss.
    let short = check_live_wals(fs, dir, &recovered.live_wals, &mut losses)?;
    let mut replay = Replay {
        fs,
        version,
        vlog,
        losses,
        short,
        mem: Memtable::with_budget(memtable_budget),
        last_seqno: recovered.last_seqno,
        segments: BTreeSet::new(),
    };
    let mut wals: Vec<u64> = fs
        .list(dir)?
        .iter()
        .filter_map(|n| match filename::parse(n) {
            Some(FileKind::Wal(n)) if n >= recovered.log_number => Some(n),
            _ => None,
        })
        .collect();
    wals.sort_unstable();
    let sizes = wals
        .iter()
        .map(|&n| fs.size(&filename::wal_path(dir, n)))
        .collect::<Result<Vec<u64>>>()?;
    let header_len = HEADER_LEN as u64;
    let with_records = wals
        .iter()
        .zip(&sizes)
        .map(|(&n, &size)| has_records(fs, &filename::wal_path(dir, n), size))
        .collect::<Result<Vec<bool>>>()?;
    for (i, &number) in wals.iter().enumerate() {
        let path = filename::wal_path(dir, number);
        let size = sizes.get(i).copied().unwrap_or(0);
        // A WAL without its header that the manifest does not record was being created
        // when the process died: it never held a record, wherever it lies (regression tests
        // `regression_empty_wal_before_records`, `wal_preallocation`). One the manifest
        // records is a loss: shorter than its header, reported by `check_live_wals`; a
        // zeroed header, by reading it below.
        let recorded = recovered.live_wals.contains_key(&number);
        if size < header_len && recorded {
            continue;
        }
        if !recorded && creation_interrupted(fs, &path, size)? {
            log::info!(
                "skipping {} ({size} bytes): its creation was interrupted",
                path.display()
            );
            continue;
        }
        // Bytes known to be synced: a closed WAL's recorded size; a WAL followed by one
        // with records was synced whole when the next one was created. A WAL without
        // records may be longer than its header: one written through a mapping is
        // preallocated (`FileSystem::create_log`), zeros past its header until it is trimmed.
        let newest = !with_records.get(i + 1..).unwrap_or(&[]).contains(&true);
        let synced_len = match recovered.live_wals.get(&number).copied().flatten() {
            Some(len) => len,
            None if !newest => size,
            None => 0,
        };
        if replay.wal(number, &path, synced_len)? == Flow::Stop {
            break;
        }
    }
    Ok(Replayed {
        mem: replay.mem,
        last_seqno: replay.last_seqno,
        losses: replay.losses.lines,
        segments: replay.segments,
    })
}

/// Whether the replay goes on after a WAL.
#[derive(Debug, PartialEq, Eq)]
enum Flow {
    Go,
    /// A record of an unsynced tail lost its value-log bytes to a crash: nothing after it
    /// was durable.
    Stop,
}

/// The state of one replay.
struct Replay<'a> {
    fs: &'a dyn FileSystem,
    version: &'a Version,
    vlog: &'a ValueLog,
    losses: Losses,
    /// WALs `check_live_wals` found short (their damaged tail is that loss).
    short: BTreeSet<u64>,
    mem: Memtable,
    last_seqno: SeqNo,
    /// Segments the replayed pointers point into.
    segments: BTreeSet<u64>,
}

impl Replay<'_> {
    /// Replays WAL `number` at `path`, whose first `synced_len` bytes were synced.
    fn wal(&mut self, number: u64, path: &Path, synced_len: u64) -> Result<Flow> {
        let contents = match read_log(self.fs, path, LogKind::Wal) {
            Ok(c) => c,
            Err(Error::Corruption { offset, reason, .. }) => {
                self.losses
                    .note(path, offset, format!("unreadable WAL: {reason}"))?;
                return Ok(Flow::Go);
            }
            Err(e) => return Err(e),
        };
        match &contents.tail {
            LogTail::Clean => {}
            LogTail::Damaged { offset, reason } => {
                self.losses
                    .note(path, *offset, format!("damaged WAL record: {reason}"))?;
            }
            LogTail::Torn { offset, reason }
                if *offset < synced_len && !self.short.contains(&number) =>
            {
                self.losses.note(
                    path,
                    *offset,
                    format!(
                        "damaged WAL record within the {synced_len} bytes synced into the WAL: \
                         {reason}"
                    ),
                )?;
            }
            LogTail::Torn { offset, reason } => log::info!(
                "dropping the torn tail of {} at offset {offset}: {reason}",
                path.display()
            ),
        }
        for (offset, record) in &contents.records {
            let Some((first, entries)) = decode_record(record) else {
                self.losses
                    .note(path, *offset, "malformed write-batch record".into())?;
                return Ok(Flow::Go);
            };
            // Writes are logged in seqno order, across WALs too: a record not newer than the
            // writes before it belongs to another WAL (one copied over this one, or an older
            // copy of it), and this WAL's own records are gone.
            if !entries.is_empty() && first <= self.last_seqno {
                self.losses.note(
                    path,
                    *offset,
                    format!(
                        "the record's writes (from seqno {first}) are not newer than those \
                         before them (seqno {}): the WAL holds another WAL's records",
                        self.last_seqno
                    ),
                )?;
                continue;
            }
            match self.lost_value(path, *offset, synced_len, first, &entries)? {
                Some(Flow::Stop) => return Ok(Flow::Stop),
                Some(Flow::Go) => continue,
                None => {}
            }
            for (j, e) in entries.iter().enumerate() {
                let seqno = first + j as u64;
                if e.kind == ValueKind::Pointer {
                    match ValuePointer::decode(&e.value) {
                        Some(p) if self.version.vlog_deleted.contains(p.segment) => continue,
                        Some(p) => {
                            self.segments.insert(p.segment);
                        }
                        None => {}
                    }
                }
                self.mem.insert(&e.key, seqno, e.kind, &e.value);
                self.last_seqno = self.last_seqno.max(seqno);
            }
        }
        Ok(Flow::Go)
    }

    /// Checks the value pointers of the record at `offset` of `wal`: `None` when each leads
    /// to its value-log entry (or into a segment GC deleted); otherwise what to do without
    /// the record — stop (its bytes were unsynced: a crash took the value) or go on (a
    /// synced record's loss was noted, and accepted).
    fn lost_value(
        &mut self,
        wal: &Path,
        offset: u64,
        synced_len: u64,
        first: SeqNo,
        entries: &[LoggedEntry],
    ) -> Result<Option<Flow>> {
        for e in entries.iter().filter(|e| e.kind == ValueKind::Pointer) {
            let ptr = ValuePointer::decode(&e.value).ok_or_else(|| {
                Error::corruption(wal, offset, "malformed value pointer in WAL record")
            })?;
            if self.version.vlog_deleted.contains(ptr.segment) {
                continue;
            }
            // With the key: a pointer is valid only into the very entry it was written for,
            // never into another that took its place (docs/format/vlog.md, "Open").
            let (file, at, reason) = match self.vlog.read_with_key(&ptr, &e.key) {
                Ok(_) => continue,
                Err(Error::Corruption {
                    file,
                    offset,
                    reason,
                }) => (file, offset, reason),
                Err(e) => return Err(e),
            };
            if offset >= synced_len {
                log::info!(
                    "{} record at offset {offset} points at value-log bytes lost in a crash \
                     ({reason}); replay ends there",
                    wal.display()
                );
                return Ok(Some(Flow::Stop));
            }
            self.losses.note(
                &file,
                at,
                format!(
                    "{reason}, and the synced record at offset {offset} of {} (seqnos from \
                     {first}) points at it",
                    wal.display()
                ),
            )?;
            return Ok(Some(Flow::Go));
        }
        Ok(None)
    }
}

/// True when the WAL at `path` (of `size` bytes) lacks its header: shorter than it, or, for a
/// WAL preallocated before its header was copied in (`FileSystem::create_log`; a process
/// killed in between leaves zeros), all zero where it goes. `LogWriter::create` syncs the
/// header before the manifest records the WAL or any record is written, so such a WAL never
/// held a record unless the manifest records it.
fn creation_interrupted(fs: &dyn FileSystem, path: &Path, size: u64) -> Result<bool> {
    let header_len = HEADER_LEN as u64;
    Ok(size < header_len || all_zero(fs, path, 0, header_len)?)
}

/// True when the WAL at `path` (of `size` bytes) holds anything past its header: bytes of a
/// first record header that are not all zero (a preallocated WAL without records is its
/// header and zeros).
fn has_records(fs: &dyn FileSystem, path: &Path, size: u64) -> Result<bool> {
    let header_len = HEADER_LEN as u64;
    let n = size
        .saturating_sub(header_len)
        .min(RECORD_HEADER_LEN as u64);
    Ok(n > 0 && !all_zero(fs, path, header_len, n)?)
}

/// True when the `len` (at most a file header's) bytes of the file at `path` from `offset`
/// are all zero.
fn all_zero(fs: &dyn FileSystem, path: &Path, offset: u64, len: u64) -> Result<bool> {
    let mut buf = [0u8; HEADER_LEN];
    let buf = &mut buf[..len.min(HEADER_LEN as u64) as usize];
    fs.open(path, ReadMode::Pread)?.read_exact_at(offset, buf)?;
    Ok(buf.iter().all(|&b| b == 0))
}

/// Checks the WALs the manifest records as live: each must exist and hold its header, and a
/// closed one must hold at least the bytes synced into it. Returns the WALs found short.
fn check_live_wals(
    fs: &dyn FileSystem,
    dir: &Path,
    live: &BTreeMap<u64, Option<u64>>,
    losses: &mut Losses,
) -> Result<BTreeSet<u64>> {
    let mut short = BTreeSet::new();
    for (&number, &synced) in live {
        let path = filename::wal_path(dir, number);
        let what = match synced {
            Some(s) => format!("{s} synced bytes"),
            None => "the active WAL's writes".to_string(),
        };
        if !fs.exists(&path) {
            losses.note(
                &path,
                0,
                format!(
                    "WAL {number} is missing: the manifest records it as live ({what}, not yet \
                     flushed to a table)"
                ),
            )?;
            continue;
        }
        let size = fs.size(&path)?;
        if let Some(s) = synced.filter(|&s| size < s) {
            short.insert(number);
            losses.note(
                &path,
                size,
                format!(
                    "WAL {number} holds {size} bytes, fewer than the {s} bytes synced into it \
                     before it was closed"
                ),
            )?;
        } else if size < HEADER_LEN as u64 {
            short.insert(number);
            losses.note(
                &path,
                size,
                format!(
                    "WAL {number} holds {size} bytes, less than its {HEADER_LEN}-byte header, \
                     which was synced before the manifest recorded it ({what})"
                ),
            )?;
        }
    }
    Ok(short)
}
