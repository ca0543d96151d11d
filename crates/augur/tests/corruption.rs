//! The damage sweep (issue 23, in the style of RocksDB's corruption tests): every file type
//! of a cleanly closed database on the real file system — SSTables, value-log segments with
//! and without values that only the WALs point at, a WAL closed by a memtable switch and
//! the WAL the close recorded, the MANIFEST and CURRENT — damaged by bit flips and
//! truncations at sampled offsets, then opened.
//!
//! The damage model (docs/RELIABILITY.md): either the open fails with `Corruption` naming
//! the damaged file (or `UnsupportedVersion`), or every acknowledged key reads back exactly,
//! or its read fails with such an error. Never a panic, a hang, a wrong value, or a key
//! missing without an error: a clean close makes every write durable, so no damage may pass
//! for a crash's torn tail.
//!
//! `AUGUR_DAMAGE_SWEEP=full` (`scripts/damage_sweep.sh`) damages every file of each type
//! instead of the oldest and newest, at `AUGUR_DAMAGE_SAMPLES` (default 200) more offsets
//! drawn at random per file, besides the fixed ones.
//!
//! Each build round writes its tables with another codec (none, LZ4, zstd), so damage also
//! lands in compressed value chunks.
//!
//! Learning (issue 3): the database is built under `at-build`, each build round with the next
//! index type (PLR, fence, PGM), so SSTables carry several kinds of model; damage
//! case `i` is then opened under [`Learning::nth`]`(i)`, so the cases walk through every
//! learning policy × index type (`offline` learns the damaged database with `learn_all`).
//!
//! Read modes (issue 27): each damaged SSTable and value-log segment is opened under two of
//! the three read modes — `mmap`, `pread` and `direct` (`O_DIRECT` through the page cache,
//! whose budget case `i` takes from [`Reads::nth`]`(i)`: 0, 16 KiB, 1 MiB or 64 MiB) — the
//! pair turning with the damage, so each mode meets two damages in three and the sweep
//! opens as many copies as with two modes. The other file types, read by the open before
//! any table, open each case under that case's mode. The full sweep uses every mode.

mod common;

use augur::{Db, Error, LearningPolicy, Options, ReadMode, WriteBatch, WriteOptions};
use common::{Learning, Reads, INDEX_KINDS, READ_MODES};
use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// Keys written only to the newest WAL, in this order (and as many to the WAL before it).
const WAL_KEYS: usize = 40;

/// The suite's options under learning configuration `l`, read with `read_mode` (through a
/// page cache of `l.reads.cache_bytes` when that is `Direct`).
fn options(read_mode: ReadMode, l: &Learning) -> Options {
    let o = l.apply(Options {
        background_threads: false,
        memtable_size_bytes: 8 << 10,
        target_file_size_bytes: 8 << 10,
        l1_max_bytes: 32 << 10,
        value_separation_threshold: 64,
        value_log_segment_bytes: 16 << 10,
        value_log_gc_ratio: 1.0,
        block_records: 16,
        ..Options::default()
    });
    Options { read_mode, ..o }
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

fn wal_key(prefix: &str, i: usize) -> Vec<u8> {
    format!("{prefix}{i:04}").into_bytes()
}

/// A value for the WALs' key `i`: separated (into the newest value-log segment, which only
/// the WALs point at) for every other key.
fn wal_value(prefix: &str, i: usize) -> Vec<u8> {
    let mut v = format!("{prefix}-value-{i}").into_bytes();
    if i % 2 == 1 {
        v.resize(120, b'w');
    }
    v
}

/// Builds the database in `dir`: SSTables on two levels holding inline values, value
/// pointers and tombstones, several value-log segments, and a WAL holding `WAL_KEYS`
/// inline puts of fresh keys. Returns the model.
fn build(dir: &Path) -> Model {
    let mut model = Model::new();
    // Each round writes its tables with another codec: uncompressed, LZ4, zstd.
    let build_options = |round: u32| Options {
        compression: [
            augur::Compression::None,
            augur::Compression::Lz4,
            augur::Compression::Zstd(1),
        ][round as usize % 3],
        ..options(ReadMode::Mmap, &build_learning(round))
    };
    let mut db = Db::open(dir, build_options(0)).expect("open");
    for round in 0..3 {
        if round > 0 {
            drop(db);
            db = Db::open(dir, build_options(round)).expect("open");
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
    let (raw, stored) = stats.levels.iter().fold((0, 0), |(r, s), l| {
        (r + l.raw_value_bytes, s + l.stored_value_bytes)
    });
    assert!(
        stored < raw,
        "some value chunks are compressed: {stored} of {raw}"
    );
    assert!(stats.value_log.len() >= 3, "{stats:?}");
    // A WAL closed by a memtable switch and never flushed (as a crash inside a flush
    // leaves it), then the active WAL, which the clean close records; both hold values
    // that only they point at.
    db.hold_flushes_for_test(true);
    for (prefix, switch) in [("closed", true), ("wal", false)] {
        for i in 0..WAL_KEYS {
            let mut b = WriteBatch::new();
            let key = wal_key(prefix, i);
            let value = wal_value(prefix, i);
            b.put(&key, &value);
            db.write_opt(b, WriteOptions { sync: i % 8 == 7 })
                .expect("put");
            model.insert(key, value);
        }
        if switch {
            db.switch_memtable_for_test().expect("switch");
        }
    }
    drop(db);
    model
}

#[derive(Debug, Clone)]
enum Damage {
    Flip(u64),
    Truncate(u64),
    /// The file is deleted.
    Remove,
    /// The file's bytes are replaced by another file's (another valid table, an older copy).
    Replace {
        from: String,
        bytes: Vec<u8>,
    },
}

fn damage(path: &Path, d: &Damage) {
    let mut bytes = std::fs::read(path).expect("read");
    match d {
        Damage::Flip(at) => {
            let i = *at as usize;
            bytes[i] ^= 1 << (at % 8);
        }
        Damage::Truncate(len) => bytes.truncate(*len as usize),
        Damage::Remove => return std::fs::remove_file(path).expect("remove"),
        Damage::Replace { bytes: other, .. } => bytes.clone_from(other),
    }
    std::fs::write(path, bytes).expect("write");
}

/// Whether `AUGUR_DAMAGE_SWEEP=full` asks for the long sweep.
fn full_sweep() -> bool {
    std::env::var("AUGUR_DAMAGE_SWEEP").is_ok_and(|v| v == "full")
}

/// Bit flips and truncations for a file of `len` bytes: around the headers, spread
/// through the middle, and around the footer; in the full sweep, also at random offsets
/// (seeded by the file's name).
fn damages(len: u64, name: &str) -> Vec<Damage> {
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
    if full_sweep() && len > 0 {
        use rand::{Rng, SeedableRng};
        let samples: usize = std::env::var("AUGUR_DAMAGE_SAMPLES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(200);
        let seed = name
            .bytes()
            .fold(0u64, |h, b| h.wrapping_mul(31) ^ u64::from(b));
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        for i in 0..samples {
            let at = rng.gen_range(0..len);
            out.push(if i % 3 == 2 {
                Damage::Truncate(at)
            } else {
                Damage::Flip(at)
            });
        }
    }
    out
}

/// An error is clean if it is `Corruption` naming `file` (as the file it reports, or in its
/// reason: a removed manifest is reported in the CURRENT that names it), or
/// `UnsupportedVersion`.
fn check_error(e: &Error, file: &Path, ctx: &str) {
    match e {
        Error::Corruption {
            file: f, reason, ..
        } => assert!(
            f.file_name() == file.file_name()
                || file
                    .file_name()
                    .is_some_and(|n| reason.contains(n.to_string_lossy().as_ref())),
            "{ctx}: corruption reported in {} instead of the damaged file: {e}",
            f.display()
        ),
        Error::UnsupportedVersion { .. } => {}
        other => panic!("{ctx}: not a clean corruption error: {other}"),
    }
}

/// Opens the damaged database and reads everything.
fn check_damaged(
    dir: &Path,
    file: &Path,
    model: &Model,
    mode: ReadMode,
    learning: &Learning,
    ctx: &str,
) {
    let db = match Db::open(dir, options(mode, learning)) {
        Ok(db) => db,
        Err(e) => return check_error(&e, file, ctx),
    };
    if let Err(e) = learning.after_open(&db) {
        check_error(&e, file, ctx);
    }
    for (k, v) in model {
        match db.get(k) {
            Ok(Some(got)) => assert_eq!(&got, v, "{ctx}: wrong value for {k:?}"),
            Ok(None) => panic!(
                "{ctx}: key {} is missing without an error",
                String::from_utf8_lossy(k)
            ),
            Err(e) => check_error(&e, file, ctx),
        }
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
    gc_after_damage(&db, file, model, ctx);
}

/// Value-log GC run on the damaged database must never make the damage disappear: it fails
/// naming the damaged file, or every key still reads back exactly (or fails naming it), and
/// when any read fails, `verify` fails too (issue 40: GC deleted a truncated segment, after
/// which `verify` said OK while reads failed).
fn gc_after_damage(db: &Db, file: &Path, model: &Model, ctx: &str) {
    if let Err(e) = db.run_value_log_gc() {
        return check_error(&e, file, ctx);
    }
    let mut failed = false;
    for (k, v) in model {
        match db.get(k) {
            Ok(Some(got)) => assert_eq!(&got, v, "{ctx}: wrong value after GC for {k:?}"),
            Ok(None) => panic!(
                "{ctx}: key {} is missing after GC without an error",
                String::from_utf8_lossy(k)
            ),
            Err(e) => {
                check_error(&e, file, ctx);
                failed = true;
            }
        }
    }
    match db.verify() {
        Ok(_) => assert!(!failed, "{ctx}: verify passed after GC while reads fail"),
        Err(e) => check_error(&e, file, ctx),
    }
}

/// The read modes each damaged copy is opened with.
#[derive(Debug, Clone, Copy)]
enum Modes {
    /// Two of [`READ_MODES`], turning with the damage (all of them in the full sweep).
    Two,
    /// The case's own ([`Reads::nth`], cycling through all of them over the cases).
    OfCase,
}

/// Damages every file of `kind` (matched by `select` on the name) in a copy of `pristine`
/// in each way of [`damages`], then checks the outcome under each mode of `modes`.
fn run_file_type(select: impl Fn(&str) -> bool, modes: Modes, min_files: usize) {
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
    // The first and last file of the type (oldest and newest), or every one.
    let mut chosen = vec![names[0].clone()];
    if full_sweep() {
        chosen.clone_from(&names);
    } else if names.len() > 1 {
        chosen.push(names[names.len() - 1].clone());
    }
    let work = tmp.path().join("work");
    let mut cases = 0;
    for name in &chosen {
        let len = std::fs::metadata(pristine.join(name)).expect("meta").len();
        let mut kinds = damages(len, name);
        // Another file of the type in its place (a swapped table, a segment copied over
        // another), and the file removed.
        if let Some(other) = names.iter().find(|n| *n != name) {
            kinds.push(Damage::Replace {
                from: other.clone(),
                bytes: std::fs::read(pristine.join(other)).expect("read"),
            });
        }
        kinds.push(Damage::Remove);
        for (j, d) in kinds.into_iter().enumerate() {
            let modes = match modes {
                Modes::Two if full_sweep() => READ_MODES.to_vec(),
                Modes::Two => vec![READ_MODES[j % 3], READ_MODES[(j + 1) % 3]],
                Modes::OfCase => vec![Reads::nth(cases).mode],
            };
            for mode in modes {
                let learning = Learning::nth(cases);
                let what = match &d {
                    Damage::Replace { from, .. } => format!("replaced by {from}"),
                    other => format!("{other:?}"),
                };
                let ctx = format!("{name} ({len} bytes) {what} {mode:?} {learning:?}");
                common::copy_dir(&pristine, &work);
                let file = work.join(name);
                damage(&file, &d);
                let outcome = catch_unwind(AssertUnwindSafe(|| {
                    check_damaged(&work, &file, &model, mode, &learning, &ctx)
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
    for mode in READ_MODES {
        check_damaged(
            &pristine,
            &PathBuf::new(),
            &model,
            mode,
            &build_learning(0),
            &format!("pristine {mode:?}"),
        );
    }
}

#[test]
fn damaged_wal() {
    // The WAL a memtable switch closed and the one the close recorded.
    run_file_type(|n| n.ends_with(".wal"), Modes::OfCase, 2);
}

#[test]
fn damaged_sstable() {
    run_file_type(|n| n.ends_with(".sst"), Modes::Two, 2);
}

#[test]
fn damaged_manifest() {
    run_file_type(|n| n.starts_with("MANIFEST-"), Modes::OfCase, 1);
}

#[test]
fn damaged_current() {
    run_file_type(|n| n == "CURRENT", Modes::OfCase, 1);
}

#[test]
fn damaged_value_log_segment() {
    run_file_type(|n| n.ends_with(".vlog"), Modes::Two, 3);
}

/// A database that never flushed (every write in its WAL and value log), cleanly closed;
/// returns the model and the CURRENT it had while open (an older copy: a clean close
/// rewrites the manifest).
fn build_wal_only(dir: &Path) -> (Model, Vec<u8>) {
    let mut model = Model::new();
    let db = Db::open(dir, options(ReadMode::Mmap, &build_learning(0))).expect("open");
    let opts = Options {
        memtable_size_bytes: 1 << 20,
        ..options(ReadMode::Mmap, &build_learning(0))
    };
    drop(db);
    let db = Db::open(dir, opts).expect("open");
    for i in 0..200 {
        let key = wal_key("only", i);
        let value = wal_value("only", i);
        db.put(&key, &value).expect("put");
        model.insert(key, value);
    }
    let older_current = std::fs::read(dir.join("CURRENT")).expect("CURRENT");
    drop(db);
    let tables = std::fs::read_dir(dir)
        .expect("read_dir")
        .filter(|e| {
            e.as_ref()
                .expect("entry")
                .path()
                .extension()
                .is_some_and(|x| x == "sst")
        })
        .count();
    assert_eq!(tables, 0, "the database flushed");
    (model, older_current)
}

#[test]
fn damaged_current_of_a_wal_only_database() {
    // Issue 40: a missing (or damaged) CURRENT beside a WAL holding every write must never
    // let an open start an empty database over it.
    let tmp = tempfile::tempdir().expect("tempdir");
    let pristine = tmp.path().join("pristine");
    let (model, older) = build_wal_only(&pristine);
    let current = pristine.join("CURRENT");
    let len = std::fs::metadata(&current).expect("meta").len();
    let mut kinds = damages(len, "CURRENT");
    kinds.push(Damage::Remove);
    kinds.push(Damage::Replace {
        from: "an older CURRENT".into(),
        bytes: older,
    });
    let work = tmp.path().join("work");
    for (i, d) in (0u64..).zip(kinds) {
        let learning = Learning::nth(i);
        let mode = Reads::nth(i).mode;
        let what = match &d {
            Damage::Replace { from, .. } => format!("replaced by {from}"),
            other => format!("{other:?}"),
        };
        let ctx = format!("CURRENT of a WAL-only database, {what} {mode:?}");
        common::copy_dir(&pristine, &work);
        let file = work.join("CURRENT");
        damage(&file, &d);
        check_damaged(&work, &file, &model, mode, &learning, &ctx);
        // Whatever the outcome, no open may have replaced the WAL's writes.
        if let Ok(db) = Db::open(&work, options(mode, &learning)) {
            for (k, v) in &model {
                assert_eq!(db.get(k).expect("get").as_ref(), Some(v), "{ctx}");
            }
        }
    }
}
