//! A database written by the SSTable format v1 code (the fixture in `tests/fixtures/v1-db`,
//! committed before format v2 work began) must keep opening, reading and compacting in every
//! later release: the compatibility promise of the format issue ("version 1 files must still
//! open and read; compaction rewrites them"). The same holds for format 2
//! (`tests/fixtures/v2-db`, written by the same plan with the format-2 code, commit f1ec7d7,
//! before format 3 interleaved the value chunks with the blocks), and for format 3
//! (`tests/fixtures/v3-db`, the same plan with the format-3 code, commit 5a94b90, before
//! format 4 recorded the longest inline value in the properties: a compaction of these
//! tables still finds it by reading their blocks), for format 4 (`tests/fixtures/v4-db`,
//! commit 56c5919, before format 5 stored each block's shared prefix once), and for format 5
//! (`tests/fixtures/v5-db`, commit f122775, before format 6 compressed the data blocks), and
//! for format 6 (`tests/fixtures/v6-db`, commit 9b37bb7, before format 7 stored the fence
//! records compactly; written with `compression: Lz4` added to the plan's options, so its
//! tables hold compressed data blocks and value chunks).
//!
//! The fixture holds tables of four index types (fence below L0; PLR, PGM and RadixSpline in
//! L0: each phase reopened with another `--index`), short and long keys (a 200-byte shared prefix), values
//! inline and in the value log, overwrites and deletes across tables, and writes left in the
//! WAL at a clean close. Its contents are a deterministic function of the phase plan below,
//! so the test rebuilds the expected state instead of storing it.
//!
//! Regenerate (only with the v1 code, never after the format changed):
//! `AUGUR_WRITE_V1_FIXTURE=1 cargo test --release -p augur --test format_v1_fixture -- --ignored`
//! (the v2 and v3 fixtures: the same command in a checkout of their commit, with
//! `fixture_dir` pointed at `v2-db` or `v3-db`; later ones with `AUGUR_FIXTURE_NAME=v4-db`,
//! `v5-db`, …).

mod common;

use augur::index::IndexKind;
use augur::{Db, Options};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/v1-db")
}

fn fixture_v2_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/v2-db")
}

fn fixture_v3_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/v3-db")
}

fn fixture_v4_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/v4-db")
}

fn fixture_v5_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/v5-db")
}

fn fixture_v6_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/v6-db")
}

/// A deterministic xorshift stream (the fixture must be reproducible from this file).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// One operation: a put (`Some`) or a delete (`None`).
type Op = (Vec<u8>, Option<Vec<u8>>);

/// The key of number `i`: short text keys, 16-byte binary keys and, for every 40th, a long key
/// behind a 200-byte shared prefix.
fn key(i: u64) -> Vec<u8> {
    match i % 40 {
        0 => {
            let mut k = vec![b'p'; 200];
            k.extend_from_slice(format!("/long/{i:06}").as_bytes());
            k
        }
        1..=9 => {
            let mut k = b"bin".to_vec();
            k.extend_from_slice(&(i.wrapping_mul(0x9E37_79B9_7F4A_7C15)).to_be_bytes());
            k.extend_from_slice(&[0, 0xff, (i % 251) as u8]);
            k
        }
        _ => format!("user:{i:05}:name").into_bytes(),
    }
}

/// A value of 1–300 bytes (those of 64 bytes or more go to the value log in the fixture).
fn value(rng: &mut Rng, i: u64, round: u32) -> Vec<u8> {
    let len = 1 + rng.below(300) as usize;
    let mut v = format!("r{round}:{i}:").into_bytes();
    v.resize(len.max(v.len()), b'a' + (i % 26) as u8);
    v
}

/// The phases: each opens the database with an index type, applies its ops, and flushes (the
/// last one leaves its ops in the WAL).
fn phases() -> Vec<(IndexKind, Vec<Op>, bool)> {
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    let mut out = Vec::new();
    let kinds = [
        IndexKind::Fence,
        IndexKind::Plr,
        IndexKind::Pgm,
        IndexKind::RadixSpline,
    ];
    for (round, kind) in kinds.into_iter().enumerate() {
        let mut ops = Vec::new();
        for _ in 0..700 {
            let i = rng.below(2_000);
            if rng.below(8) == 0 {
                ops.push((key(i), None));
            } else {
                let v = value(&mut rng, i, round as u32);
                ops.push((key(i), Some(v)));
            }
        }
        out.push((kind, ops, true));
    }
    let mut tail = Vec::new();
    for _ in 0..60 {
        let i = rng.below(2_000);
        let v = value(&mut rng, i, 9);
        tail.push((key(i), Some(v)));
    }
    tail.push((key(7), None));
    out.push((IndexKind::Plr, tail, false));
    out
}

fn options(index: IndexKind) -> Options {
    Options {
        index,
        memtable_size_bytes: 48 << 10,
        target_file_size_bytes: 64 << 10,
        value_separation_threshold: 64,
        // Flushes stay in L0 (one table per flush, each with its phase's index type); the
        // first phase is compacted down explicitly.
        l0_compaction_trigger: 100,
        l0_slowdown_trigger: 200,
        l0_stop_trigger: 300,
        ..Options::default()
    }
}

/// The state the phases leave.
fn expected() -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut model = BTreeMap::new();
    for (_, ops, _) in phases() {
        for (k, v) in ops {
            match v {
                Some(v) => model.insert(k, v),
                None => model.remove(&k),
            };
        }
    }
    model
}

fn check(db: &Db, model: &BTreeMap<Vec<u8>, Vec<u8>>, when: &str) {
    for i in 0..2_000 {
        let k = key(i);
        assert_eq!(
            db.get(&k).unwrap().as_deref(),
            model.get(&k).map(|v| v.as_slice()),
            "{when}: key {i}"
        );
    }
    let mut scan = db.scan::<&[u8], _>(..);
    let mut seen = BTreeMap::new();
    while let Some((k, v)) = scan.next().unwrap() {
        seen.insert(k.to_vec(), v.to_vec());
    }
    assert!(seen == *model, "{when}: a full scan differs from the model");
}

#[test]
fn a_v1_database_opens_reads_and_compacts() {
    opens_reads_and_compacts(&fixture_dir(), 1);
}

#[test]
fn a_v2_database_opens_reads_and_compacts() {
    opens_reads_and_compacts(&fixture_v2_dir(), 2);
}

#[test]
fn a_v3_database_opens_reads_and_compacts() {
    opens_reads_and_compacts(&fixture_v3_dir(), 3);
}

#[test]
fn a_v4_database_opens_reads_and_compacts() {
    opens_reads_and_compacts(&fixture_v4_dir(), 4);
}

#[test]
fn a_v5_database_opens_reads_and_compacts() {
    opens_reads_and_compacts(&fixture_v5_dir(), 5);
}

#[test]
fn a_v6_database_opens_reads_and_compacts() {
    opens_reads_and_compacts(&fixture_v6_dir(), 6);
}

/// The fixture in `fixture` (tables of format `version` only) reads as the plan wrote it,
/// verifies, compacts into the current format and reads the same after a reopen, under
/// every read mode.
fn opens_reads_and_compacts(fixture: &Path, version: u32) {
    assert!(table_versions(fixture).iter().all(|&v| v == version));
    for mode in [
        augur::ReadMode::Mmap,
        augur::ReadMode::Pread,
        augur::ReadMode::Direct,
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("db");
        common::copy_dir(fixture, &dir);
        let opts = || Options {
            read_mode: mode,
            cache_bytes: 256 << 10,
            ..Options::default()
        };
        let model = expected();
        {
            let db = Db::open(&dir, opts()).unwrap();
            check(&db, &model, "as written");
            db.verify().unwrap();
            db.compact_range(None, None).unwrap();
            check(&db, &model, "after a full compaction");
            db.close().unwrap();
        }
        let versions = table_versions(&dir);
        assert!(
            versions.iter().all(|&v| v == augur::sst::FORMAT_VERSION),
            "{mode:?}: {versions:?}"
        );
        let db = Db::open(&dir, opts()).unwrap();
        check(&db, &model, "reopened after the compaction");
        db.verify().unwrap();
    }
}

/// The v1 fixture's own checks (kept as first written).
#[test]
fn the_v1_database_as_first_tested() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    common::copy_dir(&fixture_dir(), &dir);
    let model = expected();
    assert!(model.len() > 1_000, "the plan writes a real database");
    {
        let db = Db::open(&dir, Options::default()).unwrap();
        check(&db, &model, "as written");
        db.verify().unwrap();
        db.compact_range(None, None).unwrap();
        check(&db, &model, "after a full compaction");
        db.verify().unwrap();
        db.close().unwrap();
    }
    let db = Db::open(&dir, Options::default()).unwrap();
    check(&db, &model, "reopened after the compaction");
}

/// The format version of every table in `dir`.
fn table_versions(dir: &Path) -> Vec<u32> {
    let mut versions = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "sst") {
            let table =
                augur::sst::Table::open(&augur::fs::StdFs, &path, 0, augur::ReadMode::Pread)
                    .unwrap();
            versions.push(table.footer().version);
        }
    }
    versions
}

/// A database holding format-1 tables beside tables of the current format (written by this
/// build, with compressed value chunks) reads, reopens and compacts into the current format
/// only.
#[test]
fn a_mixed_v1_v2_database_reopens_and_compacts() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    common::copy_dir(&fixture_dir(), &dir);
    let mut model = expected();
    assert!(table_versions(&dir).iter().all(|&v| v == 1));
    let opts = || Options {
        compression: augur::Compression::Lz4,
        ..options(IndexKind::Plr)
    };
    {
        let db = Db::open(&dir, opts()).unwrap();
        let mut rng = Rng(0xfeed_0002);
        for _ in 0..900 {
            let i = rng.below(2_000);
            if rng.below(6) == 0 {
                db.delete(key(i)).unwrap();
                model.remove(&key(i));
            } else {
                // Compressible values, some inline and some in the value log.
                let v = format!("v2:{i}:")
                    .repeat(1 + rng.below(12) as usize)
                    .into_bytes();
                db.put(key(i), &v).unwrap();
                model.insert(key(i), v);
            }
        }
        db.flush().unwrap();
        let stats = db.stats();
        let (raw, stored) = stats.levels.iter().fold((0, 0), |(r, s), l| {
            (r + l.raw_value_bytes, s + l.stored_value_bytes)
        });
        assert!(
            stored < raw,
            "compressible values are stored compressed: {stored} of {raw}"
        );
        db.close().unwrap();
    }
    let versions = table_versions(&dir);
    assert!(
        versions.contains(&1) && versions.contains(&augur::sst::FORMAT_VERSION),
        "{versions:?}"
    );
    {
        let db = Db::open(&dir, opts()).unwrap();
        check(&db, &model, "mixed, reopened");
        db.verify().unwrap();
        db.compact_range(None, None).unwrap();
        check(&db, &model, "mixed, after a full compaction");
        db.verify().unwrap();
        db.close().unwrap();
    }
    let versions = table_versions(&dir);
    assert!(
        versions.iter().all(|&v| v == augur::sst::FORMAT_VERSION),
        "{versions:?}"
    );
    let db = Db::open(&dir, Options::default()).unwrap();
    check(
        &db,
        &model,
        "compacted into the current format, reopened without compression",
    );
}

/// Writes the fixture (see the module doc); ignored, and a no-op without the variable.
#[test]
#[ignore]
fn write_the_v1_fixture() {
    if std::env::var_os("AUGUR_WRITE_V1_FIXTURE").is_none() {
        return;
    }
    // `AUGUR_FIXTURE_NAME=v4-db` writes another version's fixture (with that version's code).
    let dir = std::env::var_os("AUGUR_FIXTURE_NAME").map_or_else(fixture_dir, |name| {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(name)
    });
    let _ = std::fs::remove_dir_all(&dir);
    for (phase, (index, ops, flush)) in phases().into_iter().enumerate() {
        let db = Db::open(&dir, options(index)).unwrap();
        for (k, v) in ops {
            match v {
                Some(v) => db.put(&k, &v).unwrap(),
                None => db.delete(&k).unwrap(),
            }
        }
        if flush {
            db.flush().unwrap();
        }
        if phase == 0 {
            // The fence-indexed tables go below L0.
            db.compact_range(None, None).unwrap();
        }
        db.close().unwrap();
    }
    // The lock file is not part of the fixture.
    let _ = std::fs::remove_file(dir.join("LOCK"));
}
