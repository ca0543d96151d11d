//! `augur::backup::BackupEngine` (issue 44, item 1): incremental backups sharing unchanged
//! files, with list, verify, restore, delete and purge.
//!
//! - a second backup after a few writes copies only the files the first lacks (asserted in
//!   bytes: what it adds is the new tables, segments and manifest, and every other file is
//!   shared), and `list` shows the shared bytes;
//! - each backup restores to exactly the state it was taken at, while the source went on;
//! - `verify` finds a flipped byte and a missing file, and a restore of such a backup fails
//!   and leaves nothing behind;
//! - delete and purge remove exactly the files no remaining backup names, and the
//!   remaining backups still verify and restore;
//! - backups taken while a writer writes hold a prefix of its writes;
//! - refusals: a directory that is not a backup directory, a non-empty restore target, an
//!   unknown id, a directory another handle is changing.

use augur::backup::BackupEngine;
use augur::{Db, Error, Options};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn options() -> Options {
    Options {
        memtable_size_bytes: 64 << 10,
        value_separation_threshold: 100,
        value_log_segment_bytes: 256 << 10,
        target_file_size_bytes: 64 << 10,
        ..Options::default()
    }
}

fn contents(db: &Db) -> Model {
    db.iter().map(|r| r.expect("scan")).collect()
}

/// Puts `keys` keys named `{prefix}{i}`, every third value separated; returns them.
fn fill(db: &Db, prefix: &str, keys: u32, model: &mut Model) {
    for i in 0..keys {
        let k = format!("{prefix}{i:06}").into_bytes();
        let v = if i.is_multiple_of(3) {
            vec![b'v'; 300]
        } else {
            format!("value-{prefix}-{i}").into_bytes()
        };
        db.put(&k, &v).unwrap();
        model.insert(k, v);
    }
}

fn restore_and_read(engine: &BackupEngine, id: u64, target: &Path) -> Model {
    let report = engine.restore(id, target).unwrap();
    assert_eq!(report.id, id);
    let db = Db::open(target, options()).unwrap();
    db.verify().unwrap();
    contents(&db)
}

/// The names in `dir/shared`.
fn shared_files(backups: &Path) -> BTreeSet<String> {
    std::fs::read_dir(backups.join("shared"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect()
}

fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum()
}

#[test]
fn incremental_backups_share_files_and_each_restores_its_own_state() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, backups) = (tmp.path().join("db"), tmp.path().join("backups"));
    let db = Db::open(&src, options()).unwrap();
    let engine = BackupEngine::open(&backups).unwrap();
    let mut model = Model::new();
    fill(&db, "a", 20_000, &mut model);
    db.wait_for_compactions().unwrap();
    let first = engine.create(&db).unwrap();
    assert_eq!(first.info.id, 1);
    assert_eq!(first.reused_files, 0);
    assert_eq!(first.new_bytes, first.info.size_bytes);
    assert_eq!(first.new_bytes, dir_bytes(&backups.join("shared")));
    let model1 = model.clone();
    let before = shared_files(&backups);

    // A few writes: the next backup adds their table(s), the segment they went to, and a
    // manifest; everything else is shared.
    fill(&db, "b", 200, &mut model);
    let second = engine.create(&db).unwrap();
    assert_eq!(second.info.id, 2);
    let added: BTreeSet<String> = shared_files(&backups)
        .difference(&before)
        .cloned()
        .collect();
    assert_eq!(added.len() as u64, second.new_files, "{added:?}");
    let added_bytes: u64 = added
        .iter()
        .map(|n| {
            std::fs::metadata(backups.join("shared").join(n))
                .unwrap()
                .len()
        })
        .sum();
    assert_eq!(second.new_bytes, added_bytes);
    assert!(
        second.new_bytes * 5 < first.new_bytes,
        "the second backup adds only its new files: {second:?} vs {first:?}"
    );
    assert!(second.reused_files > 0);
    assert!(added.iter().any(|n| n.starts_with("MANIFEST-")));
    assert_eq!(
        dir_bytes(&backups.join("shared")),
        first.new_bytes + second.new_bytes
    );

    let list = engine.list().unwrap();
    assert_eq!(list.len(), 2);
    assert_eq!(list[0].id, 1);
    assert_eq!(list[1].seqno, 20_200);
    assert_eq!(
        list[1].shared_bytes,
        second.info.size_bytes - second.new_bytes,
        "every file the second did not add is shared with the first"
    );
    assert_eq!(list[0].shared_bytes, list[1].shared_bytes);
    for id in [1, 2] {
        let report = engine.verify(id).unwrap();
        assert!(report.is_ok(), "{report:?}");
        assert_eq!(report.bytes_checked, list[id as usize - 1].size_bytes);
    }

    // The source goes on (and compacts); each backup restores its own state.
    fill(&db, "c", 5_000, &mut model);
    db.compact_range(None, None).unwrap();
    assert_eq!(restore_and_read(&engine, 1, &tmp.path().join("r1")), model1);
    let mut model2 = model1.clone();
    fill(
        &Db::open(tmp.path().join("scratch"), options()).unwrap(),
        "b",
        200,
        &mut model2,
    );
    assert_eq!(restore_and_read(&engine, 2, &tmp.path().join("r2")), model2);
    // An empty existing directory is a fine target.
    std::fs::create_dir(tmp.path().join("r3")).unwrap();
    assert_eq!(restore_and_read(&engine, 2, &tmp.path().join("r3")), model2);
    assert_eq!(contents(&db), model);
}

#[test]
fn verify_finds_a_flipped_byte_and_a_missing_file_and_restore_refuses_them() {
    let tmp = tempfile::tempdir().unwrap();
    let backups = tmp.path().join("backups");
    let db = Db::open(tmp.path().join("db"), options()).unwrap();
    let mut model = Model::new();
    fill(&db, "k", 5_000, &mut model);
    let engine = BackupEngine::open(&backups).unwrap();
    engine.create(&db).unwrap();
    let meta = engine.backup(1).unwrap();
    let shared = |name_end: &str| -> PathBuf {
        let f = meta
            .files
            .iter()
            .find(|f| f.name.ends_with(name_end))
            .unwrap();
        backups.join("shared").join(f.shared_name())
    };
    assert!(engine.verify(1).unwrap().is_ok());

    let table = shared(".sst");
    let mut bytes = std::fs::read(&table).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x01;
    std::fs::write(&table, &bytes).unwrap();
    let report = engine.verify(1).unwrap();
    assert_eq!(report.problems.len(), 1, "{report:?}");
    assert_eq!(report.problems[0].path, table);
    assert!(report.problems[0].what.contains("CRC32C"), "{report:?}");
    let e = engine.restore(1, tmp.path().join("r")).unwrap_err();
    assert!(
        matches!(&e, Error::Corruption { file, .. } if file == &table),
        "{e}"
    );
    assert!(!tmp.path().join("r").exists());
    assert!(
        !tmp.path().join("r.augur-tmp").exists(),
        "the staging is removed"
    );
    bytes[at] ^= 0x01;
    std::fs::write(&table, &bytes).unwrap();

    let segment = shared(".vlog");
    std::fs::remove_file(&segment).unwrap();
    let report = engine.verify(1).unwrap();
    assert_eq!(report.problems.len(), 1, "{report:?}");
    assert_eq!(report.problems[0].what, "missing");
    assert!(matches!(
        engine.restore(1, tmp.path().join("r")),
        Err(Error::Corruption { .. })
    ));
    assert!(!tmp.path().join("r").exists());

    // Truncation is found too.
    std::fs::write(&segment, b"short").unwrap();
    let report = engine.verify(1).unwrap();
    assert!(report.problems[0].what.contains("bytes"), "{report:?}");
}

#[test]
fn delete_and_purge_remove_exactly_what_no_backup_names() {
    let tmp = tempfile::tempdir().unwrap();
    let backups = tmp.path().join("backups");
    let db = Db::open(tmp.path().join("db"), options()).unwrap();
    let engine = BackupEngine::open(&backups).unwrap();
    let mut model = Model::new();
    let mut models = Vec::new();
    for round in 0..4 {
        fill(&db, &format!("r{round}-"), 3_000, &mut model);
        // Compactions replace files: later backups drop some of the earlier ones' files.
        db.compact_range(None, None).unwrap();
        engine.create(&db).unwrap();
        models.push(model.clone());
    }
    let named = |engine: &BackupEngine| -> BTreeSet<String> {
        engine
            .list()
            .unwrap()
            .iter()
            .flat_map(|b| engine.backup(b.id).unwrap().files)
            .map(|f| f.shared_name())
            .collect()
    };
    assert_eq!(shared_files(&backups), named(&engine));
    let report = engine.delete(2).unwrap();
    assert_eq!(report.deleted, vec![2]);
    assert_eq!(shared_files(&backups), named(&engine));
    assert!(
        report.files_removed >= 1,
        "its manifest at least: {report:?}"
    );
    let report = engine.purge(1).unwrap();
    assert_eq!(report.deleted, vec![1, 3]);
    assert_eq!(shared_files(&backups), named(&engine));
    assert_eq!(
        engine
            .list()
            .unwrap()
            .iter()
            .map(|b| b.id)
            .collect::<Vec<_>>(),
        vec![4]
    );
    assert!(engine.verify(4).unwrap().is_ok());
    assert_eq!(
        restore_and_read(&engine, 4, &tmp.path().join("r4")),
        models[3]
    );
    assert!(matches!(engine.delete(2), Err(Error::InvalidArgument(_))));
    // The next id follows the newest, never reusing a deleted one.
    assert_eq!(engine.create(&db).unwrap().info.id, 5);
}

#[test]
fn backups_taken_while_a_writer_writes_hold_a_prefix_of_its_writes() {
    let tmp = tempfile::tempdir().unwrap();
    let db = Arc::new(Db::open(tmp.path().join("db"), options()).unwrap());
    let engine = BackupEngine::open(tmp.path().join("backups")).unwrap();
    let acked = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (db, acked, stop) = (db.clone(), acked.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut i = 0u64;
            while !stop.load(Ordering::Acquire) {
                let v = if i.is_multiple_of(4) {
                    vec![b'x'; 200]
                } else {
                    i.to_be_bytes().to_vec()
                };
                db.put(format!("w{i:08}"), v).unwrap();
                i += 1;
                acked.store(i, Ordering::Release);
            }
        })
    };
    let mut taken = Vec::new();
    for round in 1..=4u64 {
        while acked.load(Ordering::Acquire) < round * 2_000 {
            std::thread::yield_now();
        }
        let before = acked.load(Ordering::Acquire);
        let b = engine.create(&db).unwrap();
        taken.push((
            b.info.id,
            before,
            acked.load(Ordering::Acquire),
            b.info.seqno,
        ));
    }
    stop.store(true, Ordering::Release);
    writer.join().unwrap();
    for (id, before, after, seqno) in taken {
        assert!(
            (before..=after + 1).contains(&seqno),
            "{id}: {seqno} vs [{before}, {after}]"
        );
        let got = restore_and_read(&engine, id, &tmp.path().join(format!("r{id}")));
        let keys: Vec<Vec<u8>> = (0..seqno)
            .map(|i| format!("w{i:08}").into_bytes())
            .collect();
        assert_eq!(
            got.keys().cloned().collect::<Vec<_>>(),
            keys,
            "backup {id}: exactly the first {seqno} writes"
        );
    }
}

#[test]
fn refusals_are_clear() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("db");
    let db = Db::open(&src, options()).unwrap();
    db.put("k", "v").unwrap();
    let e = BackupEngine::open(&src).unwrap_err();
    assert!(
        matches!(&e, Error::InvalidArgument(m) if m.contains("not a backup directory")),
        "{e}"
    );
    let backups = tmp.path().join("backups");
    let engine = BackupEngine::open(&backups).unwrap();
    assert!(engine.list().unwrap().is_empty());
    let e = engine.verify(1).unwrap_err();
    assert!(
        matches!(&e, Error::InvalidArgument(m) if m.contains("no backup directory")),
        "{e}"
    );
    assert!(
        !backups.exists(),
        "verify of a missing directory creates nothing"
    );
    engine.create(&db).unwrap();
    let full = tmp.path().join("full");
    std::fs::create_dir(&full).unwrap();
    std::fs::write(full.join("x"), b"keep").unwrap();
    let e = engine.restore(1, &full).unwrap_err();
    assert!(
        matches!(&e, Error::InvalidArgument(m) if m.contains("not an empty")),
        "{e}"
    );
    assert_eq!(std::fs::read(full.join("x")).unwrap(), b"keep");
    assert!(matches!(
        engine.restore(9, tmp.path().join("r")),
        Err(Error::InvalidArgument(_))
    ));
    // Another handle changing the directory.
    let held = augur::fs::FileSystem::lock(&augur::fs::StdFs, &backups.join("LOCK")).unwrap();
    let e = engine.create(&db).unwrap_err();
    assert!(matches!(e, Error::Busy(_)), "{e}");
    drop(held);
    engine.create(&db).unwrap();
}
