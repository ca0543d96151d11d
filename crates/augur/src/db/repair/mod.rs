//! `repair`: rebuilds a database's manifest from the files it finds after the manifest (or
//! CURRENT) is lost or damaged, in the spirit of LevelDB's `RepairDB` (`docs/repair.md`).
//!
//! What it does, in order (each step crash-safe: a crash leaves a directory that either
//! opens as before or is refused by an open, and running repair again finishes the job):
//!
//! 1. Takes the directory's LOCK (a running database makes it fail with `Busy`), reads the
//!    compaction style from whatever old manifest records are readable.
//! 2. Opens the value-log segments; one whose header is damaged (so no entry of it can be
//!    read) goes to `lost/`. Damage inside a segment is reported and the segment kept: the
//!    values before the damage are still readable, and tables point into it.
//! 3. Opens and verifies every table in full (`Table::verify`: every section and block
//!    checksum, every entry in order, counts against the properties); a table that fails
//!    goes to `lost/` whole (no salvage of its readable blocks: see `tables.rs`).
//! 4. Replays every WAL into one memtable, stopping in each WAL at the first bad record (a
//!    bad checksum, a malformed batch, a value pointer that does not reach its value-log
//!    entry) and skipping writes a kept table holds, and writes it as a new table
//!    (`wal.rs`).
//! 5. Merges tables sharing writes into one (`dedup.rs`): no write is held twice.
//! 6. Orders the kept tables so that, for every user key held by two of them, the one with
//!    the newer version is read first, and renumbers them when their file numbers disagree
//!    with that order (`order.rs`): every kept table is placed at level 0, which is read
//!    newest file number first.
//! 7. Moves the WALs, old manifests, CURRENT and temporary files to `lost/`.
//! 8. Writes a fresh manifest holding one snapshot edit (all tables at L0, the largest
//!    seqno found, each segment's garbage recomputed, the value-log segments missing below
//!    the largest id anything names recorded as deleted so their ids are never reused),
//!    syncs it, and points CURRENT at it by a rename.
//!
//! Invariants: nothing is ever deleted (a file repair does not keep is moved into
//! `DIR/lost/`, renamed with a numeric suffix if that name is taken); the new manifest's
//! last seqno is at least every kept entry's; every table the manifest names passed its
//! full verification.

mod dedup;
mod order;
mod tables;
mod wal;

use crate::error::{Error, Result};
use crate::filename::{self, FileKind};
use crate::fs::FileSystem;
use crate::options::Options;
use crate::version::{write_current, write_manifest_file, CompactionStyle, VersionEdit};
use crate::wal::{read_log, LogKind};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The directory, inside the database directory, that repair moves files into.
pub const LOST_DIR: &str = "lost";

/// A table repair kept in the rebuilt manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptTable {
    /// Its file name in the database directory now.
    pub name: String,
    /// Its name before repair renumbered it (to give level 0 the right read order), if it
    /// did.
    pub renamed_from: Option<String>,
    /// Entries it holds.
    pub entries: u64,
    /// Its size in bytes.
    pub bytes: u64,
    /// The largest sequence number among its entries.
    pub max_seqno: u64,
    /// True for the table repair wrote from the WALs' records.
    pub from_wal: bool,
}

/// A WAL repair replayed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecoveredWal {
    /// Its file name (it is in `lost/` now).
    pub name: String,
    /// Records replayed.
    pub records: u64,
    /// Entries (writes) replayed.
    pub entries: u64,
    /// Entries skipped because a kept table holds the same write (a WAL already flushed).
    pub already_in_tables: u64,
    /// Where and why the replay stopped before the WAL's end: `(offset, reason)`; `None`
    /// when it was read to its end (a torn last record, a crash's leftover, is reported
    /// here too).
    pub stopped: Option<(u64, String)>,
}

/// A value-log segment repair kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptSegment {
    /// Its file name.
    pub name: String,
    /// Its size in bytes.
    pub bytes: u64,
    /// Entries readable in it.
    pub entries: u64,
    /// Damage found inside it (the entries past it cannot be read), if any.
    pub damage: Option<String>,
}

/// A file repair moved into `lost/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LostFile {
    /// Its name in the database directory.
    pub name: String,
    /// Its path now, inside `lost/`.
    pub moved_to: PathBuf,
    /// Why it was not kept.
    pub reason: String,
}

/// What [`repair`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepairReport {
    /// The database directory.
    pub dir: PathBuf,
    /// The manifest repair wrote (CURRENT names it).
    pub manifest: String,
    /// The compaction style the manifest records.
    pub style: CompactionStyle,
    /// The largest sequence number of any kept entry (the manifest's last seqno).
    pub last_seqno: u64,
    /// The tables in the manifest, newest first (all at level 0).
    pub tables: Vec<KeptTable>,
    /// The WALs replayed into a table.
    pub wals: Vec<RecoveredWal>,
    /// The value-log segments kept.
    pub segments: Vec<KeptSegment>,
    /// Segment ids recorded as deleted: missing below the largest id found or pointed at.
    pub segments_missing: Vec<u64>,
    /// The files moved into `lost/`, with the reason.
    pub lost: Vec<LostFile>,
    /// Findings that did not change what was kept: value pointers into missing segments,
    /// tables whose newest-first order could not be decided.
    pub warnings: Vec<String>,
}

/// Rebuilds the manifest of the database in `dir` from the tables, WALs and value-log
/// segments found there (see the module doc and docs/repair.md). `options` gives the file
/// system, the number of levels, the table format settings of the table written from the
/// WALs, and the compaction style when no old manifest record tells it.
///
/// # Errors
/// `InvalidArgument` when `dir` does not exist, or when `options.compaction` names another
/// style than the old manifest records; `ReadOnly` when `options.read_only` is set; `Busy` when a process has the database open; `Io`
/// on file-system failures (the directory is then left as a later repair can finish).
pub fn repair(dir: &Path, options: &Options) -> Result<RepairReport> {
    options.validate()?;
    if options.read_only {
        // Repair writes a manifest and moves files: never under a read-only ask.
        return Err(Error::ReadOnly {
            dir: dir.to_path_buf(),
        });
    }
    let fs = options.fs.clone();
    if !fs.exists(dir) {
        return Err(Error::InvalidArgument(format!(
            "no database directory at {}",
            dir.display()
        )));
    }
    let _lock = fs.lock(&filename::lock_path(dir))?;
    let found = Listing::read(fs.as_ref(), dir)?;
    let style = recorded_style(fs.as_ref(), dir, &found, options)?;
    let mut lost = Lost::new(fs.as_ref(), dir);
    let mut counter = found.max_number + 1;

    let segments = wal::open_segments(fs.clone(), dir, options, &mut lost)?;
    let mut scanned = tables::scan_tables(fs.as_ref(), dir, &found.tables, &mut lost)?;
    let replayed = wal::replay_wals(
        fs.as_ref(),
        dir,
        &found.wals,
        &segments.vlog,
        options.memtable_size_bytes,
        &scanned,
    )?;
    let wal_table = match replayed.write_table(fs.as_ref(), dir, counter, options)? {
        Some(flushed) => {
            counter += 1;
            let id = flushed.meta.file_id;
            let before = scanned.len();
            scanned.extend(tables::scan_tables(fs.as_ref(), dir, &[id], &mut lost)?);
            (scanned.len() > before).then_some(id)
        }
        None => None,
    };

    let mut warnings = Vec::new();
    let scanned =
        dedup::merge_duplicates(fs.as_ref(), dir, scanned, options, &mut counter, &mut lost)?;
    let ordered = order::newest_first(scanned, &mut warnings)?;
    let placed = order::renumber(fs.as_ref(), dir, ordered, &mut counter)?;

    let present: BTreeSet<u64> = segments.kept.keys().copied().collect();
    let mut pointed: BTreeSet<u64> = replayed.segments.clone();
    for t in &placed {
        pointed.extend(t.scanned.pointed_segments.iter().copied());
        let missing: Vec<u64> = t
            .scanned
            .pointed_segments
            .iter()
            .copied()
            .filter(|s| !present.contains(s))
            .collect();
        if !missing.is_empty() {
            warnings.push(format!(
                "{} holds value pointers into missing value-log segment(s) {missing:?}: \
                 those values are lost (`verify` reports each live one)",
                filename::table_path(dir, t.scanned.meta.file_id).display()
            ));
        }
    }
    let top = present
        .iter()
        .chain(pointed.iter())
        .chain(segments.moved.iter())
        .copied()
        .max()
        .unwrap_or(0);
    let segments_missing: Vec<u64> = (1..=top).filter(|s| !present.contains(s)).collect();

    for &number in &found.wals {
        let why = match wal_table {
            Some(id) => format!("replayed into {}", table_name(id)),
            None => "replayed: it held no record to keep".to_string(),
        };
        lost.move_file(&filename::wal_path(dir, number), why)?;
    }
    for name in &found.manifests_and_current {
        lost.move_file(
            &dir.join(name),
            "replaced by the manifest repair wrote".into(),
        )?;
    }

    let vlog_garbage = if lost.tables_failed > 0 {
        warnings.push(
            "no value-log garbage recorded: a table moved to lost/ may point into any \
             segment, and its values stay until compactions count garbage again"
                .into(),
        );
        Vec::new()
    } else {
        let referenced = placed
            .iter()
            .flat_map(|t| t.scanned.pointers.iter().copied());
        wal::unreferenced_bytes(&segments, referenced.collect())?
    };
    let last_seqno = placed
        .iter()
        .map(|t| t.scanned.max_seqno)
        .max()
        .unwrap_or(0);
    let manifest_number = counter;
    counter += 1;
    let edit = VersionEdit {
        // Every WAL is in lost/: the next open's WAL is numbered from `counter` on.
        log_number: Some(counter),
        next_file_number: Some(counter),
        last_seqno: Some(last_seqno),
        added: placed.iter().map(|t| (0, t.scanned.meta.clone())).collect(),
        vlog_garbage,
        vlog_deleted_runs: runs(&segments_missing),
        compaction_style: Some(style.code()),
        ..VersionEdit::default()
    };
    fs.sync_dir(dir)?;
    write_manifest_file(
        fs.as_ref(),
        &filename::manifest_path(dir, manifest_number),
        &edit,
    )?;
    fs.sync_dir(dir)?;
    write_current(fs.as_ref(), dir, manifest_number)?;
    lost.sync()?;

    let tables = placed
        .iter()
        .map(|t| KeptTable {
            name: table_name(t.scanned.meta.file_id),
            renamed_from: t.renamed_from.map(table_name),
            entries: t.scanned.meta.entries,
            bytes: t.scanned.meta.file_size,
            max_seqno: t.scanned.max_seqno,
            from_wal: wal_table == Some(t.original_id),
        })
        .collect();
    let report = RepairReport {
        dir: dir.to_path_buf(),
        manifest: filename::manifest_name(manifest_number),
        style,
        last_seqno,
        tables,
        wals: replayed.reports,
        segments: segments.kept.into_values().collect(),
        segments_missing,
        lost: lost.moved,
        warnings,
    };
    log::info!(
        "repair of {}: {} tables kept, {} files moved to {LOST_DIR}/",
        dir.display(),
        report.tables.len(),
        report.lost.len()
    );
    Ok(report)
}

/// The file name of table `id`.
fn table_name(id: u64) -> String {
    file_name(&filename::table_path(Path::new(""), id))
}

/// The last component of `path`, as text.
fn file_name(path: &Path) -> String {
    path.file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
}

/// `ids` (sorted, unique) as runs of consecutive ids: `(first, count)`.
fn runs(ids: &[u64]) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = Vec::new();
    for &id in ids {
        match out.last_mut() {
            Some((first, count)) if *first + *count == id => *count += 1,
            _ => out.push((id, 1)),
        }
    }
    out
}

/// The database's files, by kind.
struct Listing {
    /// Table file numbers.
    tables: Vec<u64>,
    /// WAL numbers, ascending.
    wals: Vec<u64>,
    /// Manifests, CURRENT and temporary files, by name.
    manifests_and_current: Vec<String>,
    /// Manifest numbers, newest first.
    manifest_numbers: Vec<u64>,
    /// The largest file number of any table, WAL or manifest (0 without any).
    max_number: u64,
}

impl Listing {
    fn read(fs: &dyn FileSystem, dir: &Path) -> Result<Listing> {
        let mut names = fs.list(dir)?;
        names.sort();
        let mut l = Listing {
            tables: Vec::new(),
            wals: Vec::new(),
            manifests_and_current: Vec::new(),
            manifest_numbers: Vec::new(),
            max_number: 0,
        };
        for name in names {
            match filename::parse(&name) {
                Some(FileKind::Table(n)) => {
                    l.tables.push(n);
                    l.max_number = l.max_number.max(n);
                }
                Some(FileKind::Wal(n)) => {
                    l.wals.push(n);
                    l.max_number = l.max_number.max(n);
                }
                Some(FileKind::Manifest(n)) => {
                    l.manifest_numbers.push(n);
                    l.max_number = l.max_number.max(n);
                    l.manifests_and_current.push(name);
                }
                Some(FileKind::Current | FileKind::Temp) => l.manifests_and_current.push(name),
                Some(FileKind::ValueLog(_) | FileKind::Lock) | None => {}
            }
        }
        l.tables.sort_unstable();
        l.wals.sort_unstable();
        l.manifest_numbers.sort_unstable_by(|a, b| b.cmp(a));
        Ok(l)
    }
}

/// The compaction style: the one the newest readable record of an old manifest records
/// (every snapshot and the creating edit carry it), else `options.compaction`, else leveled.
///
/// # Errors
/// `InvalidArgument` when `options.compaction` asks for another style than the recorded
/// one: the tables of an FLSM database must not be reorganized as leveled, nor the reverse,
/// without the user saying so (open refuses the same).
fn recorded_style(
    fs: &dyn FileSystem,
    dir: &Path,
    found: &Listing,
    options: &Options,
) -> Result<CompactionStyle> {
    let mut recorded = None;
    'manifests: for &n in &found.manifest_numbers {
        let path = filename::manifest_path(dir, n);
        let Ok(contents) = read_log(fs, &path, LogKind::Manifest) else {
            continue;
        };
        for (_, record) in contents.records.iter().rev() {
            let style = VersionEdit::decode(record)
                .and_then(|e| e.compaction_style)
                .and_then(CompactionStyle::from_code);
            if style.is_some() {
                recorded = style;
                break 'manifests;
            }
        }
    }
    match (recorded, options.compaction) {
        (Some(r), Some(asked)) if r != asked => Err(Error::InvalidArgument(format!(
            "the manifest of {} records the {r} compaction style, and repair was asked for \
             {asked} (Options::compaction; CLI --compaction): leave the option out to keep \
             the recorded one",
            dir.display()
        ))),
        (Some(r), _) => Ok(r),
        (None, asked) => Ok(asked.unwrap_or(CompactionStyle::Leveled)),
    }
}

/// Moves files into `DIR/lost/` and remembers what it moved.
pub(super) struct Lost<'a> {
    fs: &'a dyn FileSystem,
    dir: PathBuf,
    moved: Vec<LostFile>,
    /// Tables moved because they failed verification.
    tables_failed: usize,
}

impl<'a> Lost<'a> {
    fn new(fs: &'a dyn FileSystem, dir: &Path) -> Lost<'a> {
        Lost {
            fs,
            dir: dir.join(LOST_DIR),
            moved: Vec::new(),
            tables_failed: 0,
        }
    }

    /// Moves `path` into `lost/` (as `NAME`, or `NAME.N` when that is taken), for `reason`.
    ///
    /// # Errors
    /// `Io` when the directory cannot be made or the rename fails.
    pub(super) fn move_file(&mut self, path: &Path, reason: String) -> Result<()> {
        self.fs.create_dir_all(&self.dir)?;
        let name = file_name(path);
        let mut target = self.dir.join(&name);
        let mut n = 1;
        while self.fs.exists(&target) {
            target = self.dir.join(format!("{name}.{n}"));
            n += 1;
        }
        self.fs.rename(path, &target)?;
        // Durable in its new place before anything depends on its absence here.
        self.fs.sync_dir(&self.dir)?;
        self.fs
            .sync_dir(self.dir.parent().unwrap_or(Path::new(".")))?;
        log::info!(
            "repair: moved {} to {}: {reason}",
            path.display(),
            target.display()
        );
        self.moved.push(LostFile {
            name,
            moved_to: target,
            reason,
        });
        Ok(())
    }

    /// Syncs `lost/` and the database directory once something was moved.
    fn sync(&self) -> Result<()> {
        if self.moved.is_empty() {
            return Ok(());
        }
        self.fs.sync_dir(&self.dir)?;
        self.fs
            .sync_dir(self.dir.parent().unwrap_or(Path::new(".")))
    }
}

#[cfg(test)]
mod tests {
    use super::runs;

    #[test]
    fn runs_of_ids() {
        assert_eq!(runs(&[]), vec![]);
        assert_eq!(runs(&[1, 2, 3, 5, 7, 8]), vec![(1, 3), (5, 1), (7, 2)]);
    }
}
