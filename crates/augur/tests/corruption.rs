//! Damaged files of every type (WAL, SSTable, MANIFEST, CURRENT, value-log segment): bit
//! flips and truncations at several offsets of a closed database on the real file system.
//!
//! The outcome of opening and reading everything (point reads, a full scan, `verify`) must
//! be either the right data or a clean error: `Error::Corruption` naming the damaged file,
//! or `UnsupportedVersion`. Never a panic, a hang, or a wrong value (a read returns the
//! right value or an error, never a different value, and never "missing" for a key that
//! exists).
//!
//! Exception, by the documented WAL policy (docs/format/wal.md, db/open.rs): damage in the
//! newest WAL may be taken for a torn tail, so the writes it holds may come back as a
//! prefix. The database is built so that the newest WAL holds only inline puts of fresh
//! keys, which makes "a prefix of them" easy to check.
//!
//! Learning (issue 3): the database is built under `at-build`, each build round with the next
//! index type (PLR, fence, PGM), so SSTables carry several kinds of model; damage
//! case `i` is then opened under [`Learning::nth`]`(i)`, so the cases walk through every
//! learning policy × index type (`offline` learns the damaged database with `learn_all`).

mod common;

use augur::{Db, Error, LearningPolicy, Options, ReadMode, WriteBatch, WriteOptions};
use common::{Learning, INDEX_KINDS};
use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// Keys written only to the newest WAL, in this order.
const WAL_KEYS: usize = 40;

fn options(read_mode: ReadMode, l: &Learning) -> Options {
    l.apply(Options {
        background_threads: false,
        memtable_size_bytes: 8 << 10,
        target_file_size_bytes: 8 << 10,
        l1_max_bytes: 32 << 10,
        value_separation_threshold: 64,
        value_log_segment_bytes: 16 << 10,
        value_log_gc_ratio: 1.0,
        block_records: 16,
        read_mode,
        ..Options::default()
    })
}

/// The learning options of build round `round`: models built with the files, the index
/// types in turn.
fn build_learning(round: u32) -> Learning {
    Learning {
        policy: LearningPolicy::AtBuild,
        index: INDEX_KINDS[round as usize % INDEX_KINDS.len()],
        ..Learning::of(&Options::default())
    }
}

fn wal_key(i: usize) -> Vec<u8> {
    format!("wal{i:04}").into_bytes()
}

/// Builds the database in `dir`: SSTables on two levels holding inline values, value
/// pointers and tombstones, several value-log segments, and a WAL holding `WAL_KEYS`
/// inline puts of fresh keys. Returns the model.
fn build(dir: &Path) -> Model {
    let mut model = Model::new();
    let mut db = Db::open(dir, options(ReadMode::Mmap, &build_learning(0))).expect("open");
    for round in 0..3 {
        if round > 0 {
            drop(db);
            db = Db::open(dir, options(ReadMode::Mmap, &build_learning(round))).expect("open");
        }
        for i in 0..400u32 {
            if (i + round) % 7 == 0 {
                continue;
            }
            let key = format!("key{i:05}").into_bytes();
            let len = if i % 2 == 0 {
                20
            } else {
                100 + (i as usize % 150)
            };
            let mut value = format!("r{round}.{i}|").into_bytes();
            value.resize(len, b'a' + (i % 26) as u8);
            db.put(&key, &value).expect("put");
            model.insert(key, value);
        }
        for i in (round..400).step_by(11) {
            let key = format!("key{i:05}").into_bytes();
            db.delete(&key).expect("delete");
            model.remove(&key);
        }
        db.flush().expect("flush");
        if round == 1 {
            db.compact_range(None, None).expect("compact");
        }
    }
    let stats = db.stats();
    assert!(stats.levels[0].files > 0 && stats.levels.iter().skip(1).any(|l| l.files > 0));
    assert!(stats.value_log.len() >= 3, "{stats:?}");
    for i in 0..WAL_KEYS {
        let mut b = WriteBatch::new();
        let value = format!("wal-value-{i}");
        b.put(wal_key(i), &value);
        db.write_opt(b, WriteOptions { sync: true }).expect("put");
        model.insert(wal_key(i), value.into_bytes());
    }
    drop(db);
    model
}

#[derive(Debug, Clone, Copy)]
enum Damage {
    Flip(u64),
    Truncate(u64),
}

fn damage(path: &Path, d: Damage) {
    let mut bytes = std::fs::read(path).expect("read");
    match d {
        Damage::Flip(at) => {
            let i = at as usize;
            bytes[i] ^= 1 << (at % 8);
        }
        Damage::Truncate(len) => bytes.truncate(len as usize),
    }
    std::fs::write(path, bytes).expect("write");
}

/// Bit flips and truncations for a file of `len` bytes: around the headers, spread
/// through the middle, and around the footer.
fn damages(len: u64) -> Vec<Damage> {
    let mut flips: Vec<u64> = vec![0, 3, 8, 11, 12, 15, 16, 19, 20, 21, 23, 24, 27, 31, 40];
    flips.extend((1..12).map(|k| len * k / 12));
    flips.extend([1, 2, 4, 8, 9, 16, 17, 24, 33, 48, 64, 100].map(|d| len.saturating_sub(d)));
    let mut truncs: Vec<u64> = vec![0, 1, 7, 12, 19, 20, 23, 24, 30];
    truncs.extend([len / 3, len / 2, 2 * len / 3]);
    truncs.extend([1, 4, 8, 16, 40, 64].map(|d| len.saturating_sub(d)));
    let mut out = Vec::new();
    flips.sort_unstable();
    flips.dedup();
    truncs.sort_unstable();
    truncs.dedup();
    out.extend(flips.into_iter().filter(|&o| o < len).map(Damage::Flip));
    out.extend(
        truncs
            .into_iter()
            .filter(|&o| o < len)
            .map(Damage::Truncate),
    );
    out
}

fn copy_dir(from: &Path, to: &Path) {
    if to.exists() {
        std::fs::remove_dir_all(to).expect("clean");
    }
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read_dir") {
        let entry = entry.expect("entry");
        std::fs::copy(entry.path(), to.join(entry.file_name())).expect("copy");
    }
}

/// An error is clean if it is `Corruption` naming `file`, or `UnsupportedVersion`.
fn check_error(e: &Error, file: &Path, ctx: &str) {
    match e {
        Error::Corruption { file: f, .. } => assert!(
            f.file_name() == file.file_name(),
            "{ctx}: corruption reported in {} instead of the damaged file: {e}",
            f.display()
        ),
        Error::UnsupportedVersion { .. } => {}
        other => panic!("{ctx}: not a clean corruption error: {other}"),
    }
}

/// Opens the damaged database and reads everything. `prefix_ok`: the damaged file is the
/// newest WAL, so its writes may come back as a prefix.
fn check_damaged(
    dir: &Path,
    file: &Path,
    model: &Model,
    mode: ReadMode,
    learning: &Learning,
    prefix_ok: bool,
    ctx: &str,
) {
    let db = match Db::open(dir, options(mode, learning)) {
        Ok(db) => db,
        Err(e) => return check_error(&e, file, ctx),
    };
    if let Err(e) = learning.after_open(&db) {
        check_error(&e, file, ctx);
    }
    // Newest-WAL keys found (Some(true)), missing (Some(false)) or unreadable (None).
    let mut wal_present: Vec<Option<bool>> = vec![None; WAL_KEYS];
    for (k, v) in model {
        let wal_index = std::str::from_utf8(k)
            .ok()
            .and_then(|s| s.strip_prefix("wal"))
            .and_then(|n| n.parse::<usize>().ok());
        match db.get(k) {
            Ok(Some(got)) => {
                assert_eq!(&got, v, "{ctx}: wrong value for {k:?}");
                if let Some(i) = wal_index {
                    wal_present[i] = Some(true);
                }
            }
            Ok(None) => match wal_index {
                Some(i) if prefix_ok => wal_present[i] = Some(false),
                _ => panic!(
                    "{ctx}: key {} is missing without an error",
                    String::from_utf8_lossy(k)
                ),
            },
            Err(e) => check_error(&e, file, ctx),
        }
    }
    // The WAL's writes that came back are a prefix of them.
    if let Some(gap) = wal_present.iter().position(|p| *p == Some(false)) {
        assert!(
            wal_present[gap..].iter().all(|p| *p != Some(true)),
            "{ctx}: recovered WAL writes are not a prefix: {wal_present:?}"
        );
    }
    // A full scan: every item is right, until an error ends it.
    let mut scanned = 0usize;
    for item in db.iter() {
        match item {
            Ok((k, v)) => {
                assert_eq!(model.get(&k), Some(&v), "{ctx}: scan returned a wrong pair");
                scanned += 1;
            }
            Err(e) => {
                check_error(&e, file, ctx);
                break;
            }
        }
    }
    assert!(scanned <= model.len());
    if let Err(e) = db.verify() {
        check_error(&e, file, ctx);
    }
}

/// Damages every file of `kind` (matched by `select` on the name) in a copy of `pristine`
/// in each way of [`damages`], then checks the outcome.
fn run_file_type(select: impl Fn(&str) -> bool, modes: &[ReadMode], min_files: usize) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let pristine = tmp.path().join("pristine");
    let model = build(&pristine);
    let mut names: Vec<String> = std::fs::read_dir(&pristine)
        .expect("read_dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| select(n))
        .collect();
    names.sort();
    assert!(names.len() >= min_files, "only {names:?}");
    // The first and last file of the type (oldest and newest).
    let mut chosen = vec![names[0].clone()];
    if names.len() > 1 {
        chosen.push(names[names.len() - 1].clone());
    }
    let newest_wal = names.iter().filter(|n| n.ends_with(".wal")).max().cloned();
    let work = tmp.path().join("work");
    let mut cases = 0;
    for name in &chosen {
        let len = std::fs::metadata(pristine.join(name)).expect("meta").len();
        for d in damages(len) {
            for &mode in modes {
                let learning = Learning::nth(cases);
                let ctx = format!("{name} ({len} bytes) {d:?} {mode:?} {learning:?}");
                copy_dir(&pristine, &work);
                let file = work.join(name);
                damage(&file, d);
                let prefix_ok = newest_wal.as_deref() == Some(name.as_str());
                let outcome = catch_unwind(AssertUnwindSafe(|| {
                    check_damaged(&work, &file, &model, mode, &learning, prefix_ok, &ctx)
                }));
                if let Err(panic) = outcome {
                    std::panic::resume_unwind(panic);
                }
                cases += 1;
            }
        }
    }
    assert!(cases >= 20, "only {cases} cases");
    // The pristine copy itself is intact (the checks above can fail).
    check_damaged(
        &pristine,
        &PathBuf::new(),
        &model,
        ReadMode::Mmap,
        &build_learning(0),
        false,
        "pristine",
    );
}

#[test]
fn damaged_wal() {
    run_file_type(|n| n.ends_with(".wal"), &[ReadMode::Mmap], 1);
}

#[test]
fn damaged_sstable() {
    run_file_type(
        |n| n.ends_with(".sst"),
        &[ReadMode::Mmap, ReadMode::Pread],
        2,
    );
}

#[test]
fn damaged_manifest() {
    run_file_type(|n| n.starts_with("MANIFEST-"), &[ReadMode::Mmap], 1);
}

#[test]
fn damaged_current() {
    run_file_type(|n| n == "CURRENT", &[ReadMode::Mmap], 1);
}

#[test]
fn damaged_value_log_segment() {
    run_file_type(
        |n| n.ends_with(".vlog"),
        &[ReadMode::Mmap, ReadMode::Pread],
        3,
    );
}
