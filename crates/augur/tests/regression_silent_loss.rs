//! Regression tests of issue 23: damaged files that opened with no error and lost
//! acknowledged writes (or deleted what recovery needed), and a `verify` that missed it.
//! Each case is the user's reproduction, through the engine's API, on the real file system;
//! every one failed before its fix.
//!
//! The rule they pin down (docs/RELIABILITY.md, "Damage model"): only what a crash can
//! leave (bytes after the last sync) may be dropped silently; anything else fails the open
//! with a `Corruption` naming the damaged file, changes nothing on disk, and opens with
//! `Options::accept_wal_loss` only, listing what was dropped.

mod common;

use common::listing;

use augur::{Db, Error, Options, WriteBatch, WriteOptions};
use std::path::{Path, PathBuf};

const SYNC: WriteOptions = WriteOptions { sync: true };

fn separated() -> Options {
    Options {
        value_separation_threshold: 0,
        background_threads: false,
        ..Options::default()
    }
}

fn accepting(opts: Options) -> Options {
    Options {
        accept_wal_loss: true,
        ..opts
    }
}

/// The files of `dir` whose names end with `suffix`, sorted (oldest number first).
fn files(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = listing(dir)
        .into_keys()
        .filter(|n| n.ends_with(suffix))
        .map(|n| dir.join(n))
        .collect();
    v.sort();
    v
}

/// The value-log segments of `dir` that hold at least one entry (longer than the header).
fn segments_with_entries(dir: &Path) -> Vec<PathBuf> {
    files(dir, ".vlog")
        .into_iter()
        .filter(|p| std::fs::metadata(p).expect("metadata").len() > 24)
        .collect()
}

fn flip(path: &Path, at: usize, bit: u8) {
    let mut bytes = std::fs::read(path).expect("read");
    bytes[at] ^= 1 << bit;
    std::fs::write(path, bytes).expect("write");
}

fn truncate(path: &Path, len: u64) {
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .expect("open");
    f.set_len(len).expect("truncate");
}

/// The open failed with a `Corruption` naming `file`, and `dir` is as it was.
fn assert_refused(dir: &Path, opts: Options, file: &Path) {
    let before = listing(dir);
    match Db::open(dir, opts) {
        Err(Error::Corruption {
            file: f, reason, ..
        }) => {
            assert_eq!(f, file, "corruption reported in the wrong file: {reason}");
        }
        Err(e) => panic!("expected a corruption naming {}, got {e}", file.display()),
        Ok(db) => {
            let keys: Vec<_> = db.iter().filter_map(|r| r.ok()).map(|(k, _)| k).collect();
            panic!(
                "opened although {} is damaged; {} keys readable",
                file.display(),
                keys.len()
            )
        }
    }
    assert_eq!(
        listing(dir),
        before,
        "the failed open changed the directory"
    );
}

/// Case 1, the user's reproduction: two synced separated writes, each by its own process
/// (open, put, close), then the newest segment removed. The second write's WAL record
/// points into it; the open used to end the replay there, flush, and delete the WAL.
///
/// Since issue 28 an open keeps appending to the newest segment, so the first value fills
/// its segment (the smallest segment size) for the second write to land in the next one, as
/// each open's new segment did in the reproduction.
#[test]
fn a_removed_value_log_segment_under_unflushed_writes_fails_the_open() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let opts = || Options {
        value_log_segment_bytes: 4096,
        ..separated()
    };
    let first = vec![b'1'; 4096];
    for (k, v) in [("a", &first[..]), ("b", b"2")] {
        let db = Db::open(&dir, opts()).unwrap();
        let mut b = WriteBatch::new();
        b.put(k, v);
        db.write_opt(b, SYNC).unwrap();
    }
    assert_eq!(segments_with_entries(&dir).len(), 2);
    let newest = segments_with_entries(&dir).pop().expect("a segment");
    std::fs::remove_file(&newest).unwrap();
    assert_refused(&dir, opts(), &newest);
    assert_refused(&dir, opts(), &newest);

    let db = Db::open(&dir, accepting(opts())).expect("accepting the loss");
    assert_eq!(db.wal_losses().len(), 1, "{:?}", db.wal_losses());
    assert!(
        db.wal_losses()[0].contains(&*newest.to_string_lossy()),
        "{:?}",
        db.wal_losses()
    );
    assert_eq!(db.get("a").unwrap(), Some(first));
    assert_eq!(db.get("b").unwrap(), None);
}

/// Writes `n` separated values with synced batches of 100 and closes: every write is in
/// the WAL (no flush), its value in the newest segment.
fn load_unflushed(dir: &Path, n: u32) -> Vec<(Vec<u8>, Vec<u8>)> {
    let db = Db::open(dir, separated()).unwrap();
    let mut model = Vec::new();
    for chunk in (0..n).collect::<Vec<_>>().chunks(100) {
        let mut b = WriteBatch::new();
        for &i in chunk {
            let (k, v) = (
                format!("key{i:06}").into_bytes(),
                format!("value-{i}").into_bytes(),
            );
            b.put(&k, &v);
            model.push((k, v));
        }
        db.write_opt(b, SYNC).unwrap();
    }
    assert_eq!(db.stats().levels.iter().map(|l| l.files).sum::<usize>(), 0);
    model
}

/// Case 1: a byte flipped in the middle of the segment, or the segment truncated to 0 or
/// 100 bytes, under a synced load still in the WAL. It used to open with the writes before
/// the damage only.
#[test]
fn a_damaged_value_log_segment_under_unflushed_writes_fails_the_open() {
    let tmp = tempfile::tempdir().unwrap();
    let pristine = tmp.path().join("pristine");
    let model = load_unflushed(&pristine, 2000);
    let segment_name = segments_with_entries(&pristine)
        .pop()
        .expect("a segment")
        .file_name()
        .unwrap()
        .to_owned();
    for damage in ["flip", "truncate 0", "truncate 100"] {
        let dir = tmp.path().join(damage.replace(' ', "-"));
        common::copy_dir(&pristine, &dir);
        let segment = dir.join(&segment_name);
        let len = std::fs::metadata(&segment).unwrap().len();
        match damage {
            "flip" => flip(&segment, len as usize / 2, 3),
            "truncate 0" => truncate(&segment, 0),
            _ => truncate(&segment, 100),
        }
        assert_refused(&dir, separated(), &segment);
        let db = Db::open(&dir, accepting(separated())).expect("accepting the loss");
        assert!(!db.wal_losses().is_empty(), "{damage}");
        // What comes back is right; what is gone was listed.
        for (k, v) in &model {
            if let Some(got) = db.get(k).unwrap() {
                assert_eq!(&got, v, "{damage}");
            }
        }
    }
    // The pristine copy opens with every write.
    let db = Db::open(&pristine, separated()).unwrap();
    for (k, v) in &model {
        assert_eq!(db.get(k).unwrap().as_ref(), Some(v));
    }
}

/// Case 2: a database written by one process (its manifest holds every edit since the
/// creation) with every write flushed and an empty WAL, its manifest truncated. A size that
/// kept only the first edits used to open an empty database and delete every table.
#[test]
fn a_truncated_manifest_never_opens_without_the_tables_it_lost() {
    let tmp = tempfile::tempdir().unwrap();
    let pristine = tmp.path().join("pristine");
    let opts = Options {
        memtable_size_bytes: 64 << 10,
        background_threads: false,
        ..Options::default()
    };
    let n = 5000u32;
    {
        let db = Db::open(&pristine, opts.clone()).unwrap();
        for i in 0..n {
            db.put(
                format!("key{i:06}"),
                format!("value-{i}-{}", "x".repeat(30)),
            )
            .unwrap();
        }
        db.flush().unwrap();
    }
    let manifest = files(&pristine, "")
        .into_iter()
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("MANIFEST-")
        })
        .unwrap();
    let manifest_name = manifest.file_name().unwrap().to_owned();
    let len = std::fs::metadata(&manifest).unwrap().len();
    let work = tmp.path().join("work");
    let mut refused = 0;
    for size in 0..len {
        let _ = std::fs::remove_dir_all(&work);
        common::copy_dir(&pristine, &work);
        let tables = files(&work, ".sst");
        truncate(&work.join(&manifest_name), size);
        match Db::open(&work, opts.clone()) {
            Err(_) => {
                refused += 1;
                assert_eq!(files(&work, ".sst"), tables, "size {size}: tables deleted");
            }
            Ok(db) => {
                for i in 0..n {
                    let got = db.get(format!("key{i:06}")).unwrap();
                    assert!(got.is_some(), "size {size}: key {i} lost without an error");
                }
            }
        }
    }
    assert!(refused > 0);
}

/// Case 3: the active WAL truncated to 0 bytes (a WAL the manifest records always has its
/// synced header), after two synced writes each by its own process.
#[test]
fn an_active_wal_truncated_to_nothing_fails_the_open() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let opts = Options {
        background_threads: false,
        ..Options::default()
    };
    for (k, v) in [("a", "1"), ("b", "2")] {
        let db = Db::open(&dir, opts.clone()).unwrap();
        let mut b = WriteBatch::new();
        b.put(k, v);
        db.write_opt(b, SYNC).unwrap();
    }
    let active = files(&dir, ".wal").pop().expect("a WAL");
    truncate(&active, 0);
    assert_refused(&dir, opts.clone(), &active);
    let db = Db::open(&dir, accepting(opts)).expect("accepting the loss");
    assert_eq!(db.wal_losses().len(), 1, "{:?}", db.wal_losses());
    assert_eq!(db.get("a").unwrap().as_deref(), Some(&b"1"[..]));
}

/// Writes `n` small keys (`key0000`…) into a new database at `dir` without background
/// threads and drops it: the writes stay in its WAL. Returns the options it used.
fn wal_of_puts(dir: &Path, n: u32) -> Options {
    let opts = Options {
        background_threads: false,
        ..Options::default()
    };
    let db = Db::open(dir, opts.clone()).unwrap();
    for i in 0..n {
        db.put(format!("key{i:04}"), format!("value-{i}")).unwrap();
    }
    opts
}

/// Case 3: a flipped bit in the length field of the first record of a WAL holding many
/// records. The reader took the record for a torn tail and dropped the whole WAL.
#[test]
fn a_flipped_length_of_the_first_wal_record_fails_the_open() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let opts = wal_of_puts(&dir, 500);
    let active = files(&dir, ".wal").pop().expect("a WAL");
    // Header (20 bytes), then the first record's crc (4) and length (4).
    for bit in [0, 5, 7] {
        let work = tmp.path().join(format!("bit{bit}"));
        common::copy_dir(&dir, &work);
        let wal = work.join(active.file_name().unwrap());
        flip(&wal, 24, bit);
        assert_refused(&work, opts.clone(), &wal);
    }
    for bit in [1, 6] {
        let work = tmp.path().join(format!("high{bit}"));
        common::copy_dir(&dir, &work);
        let wal = work.join(active.file_name().unwrap());
        flip(&wal, 26, bit);
        assert_refused(&work, opts.clone(), &wal);
    }
}

/// Case 4: after a flush, the last byte of the value-log segment flipped, or the segment
/// removed: reads fail, and `verify` must fail too (it said OK).
#[test]
fn verify_checks_every_live_value_pointer() {
    let tmp = tempfile::tempdir().unwrap();
    let pristine = tmp.path().join("pristine");
    {
        let db = Db::open(&pristine, separated()).unwrap();
        for i in 0..300 {
            db.put(format!("key{i:04}"), format!("value-{i}")).unwrap();
        }
        db.flush().unwrap();
    }
    let segment = segments_with_entries(&pristine)
        .pop()
        .expect("a segment")
        .file_name()
        .unwrap()
        .to_owned();
    for damage in ["flip last byte", "remove"] {
        let dir = tmp.path().join(damage.replace(' ', "-"));
        common::copy_dir(&pristine, &dir);
        let path = dir.join(&segment);
        if damage == "remove" {
            std::fs::remove_file(&path).unwrap();
        } else {
            let len = std::fs::metadata(&path).unwrap().len();
            flip(&path, len as usize - 1, 0);
        }
        let db = match Db::open(&dir, separated()) {
            Ok(db) => db,
            Err(Error::Corruption { file, .. }) => {
                assert_eq!(file, path, "{damage}");
                continue;
            }
            Err(e) => panic!("{damage}: {e}"),
        };
        match db.verify() {
            Err(Error::Corruption { file, .. }) => assert_eq!(file, path, "{damage}"),
            Err(e) => panic!("{damage}: {e}"),
            Ok(counts) => panic!("{damage}: verify said OK ({counts:?})"),
        }
    }
}

/// Case 7: a checksum error in the middle of a closed WAL blocked the open even with
/// `accept_wal_loss`. Now it fails without it, and with it opens with the records before
/// the damage and lists the loss.
#[test]
fn a_damaged_record_in_the_middle_of_a_closed_wal_opens_when_the_loss_is_accepted() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let opts = wal_of_puts(&dir, 200);
    let wal = files(&dir, ".wal").pop().expect("a WAL");
    let len = std::fs::metadata(&wal).unwrap().len();
    // A payload byte of a record in the middle (records are ~30 bytes): its checksum fails
    // and the next record is valid.
    flip(&wal, len as usize / 2, 2);
    assert_refused(&dir, opts.clone(), &wal);
    let db = Db::open(&dir, accepting(opts)).expect("accepting the loss");
    assert_eq!(db.wal_losses().len(), 1, "{:?}", db.wal_losses());
    assert!(db.wal_losses()[0].contains("damaged WAL record"));
    let present: Vec<u32> = (0..200)
        .filter(|i| db.get(format!("key{i:04}")).unwrap().is_some())
        .collect();
    assert!(
        !present.is_empty() && present.len() < 200,
        "{} present",
        present.len()
    );
    assert_eq!(present, (0..present.len() as u32).collect::<Vec<_>>());
}
