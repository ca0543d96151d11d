//! Tests of the value-log manager.

use super::*;
use crate::fs::StdFs;

const MODES: [ReadMode; 3] = [ReadMode::Mmap, ReadMode::Pread, ReadMode::Direct];

fn fs() -> Arc<dyn FileSystem> {
    Arc::new(StdFs)
}

fn kv(i: usize) -> (Vec<u8>, Vec<u8>) {
    let key = format!("key-{i:05}").into_bytes();
    let value = vec![(i % 251) as u8; 50 + i % 150];
    (key, value)
}

fn fill(log: &ValueLog, range: std::ops::Range<usize>) -> Vec<(usize, ValuePointer)> {
    range
        .map(|i| {
            let (k, v) = kv(i);
            (i, log.append(&k, &v).unwrap())
        })
        .collect()
}

fn check_all(log: &ValueLog, ptrs: &[(usize, ValuePointer)]) {
    for (i, p) in ptrs {
        let (k, v) = kv(*i);
        assert_eq!(log.read(p).unwrap(), v, "entry {i} at {p:?}");
        assert_eq!(log.read_with_key(p, &k).unwrap(), v);
        assert!(log.is_valid(p));
    }
}

fn vlog_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".vlog"))
        .collect();
    names.sort();
    names
}

#[test]
fn is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<ValueLog>();
    assert_send_sync::<SegmentReader>();
}

#[test]
fn zero_segment_bytes_is_invalid() {
    let dir = tempfile::tempdir().unwrap();
    let err = ValueLog::open(fs(), dir.path(), ReadMode::Mmap, 0).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)));
}

#[test]
fn append_read_roundtrip_after_flush() {
    for mode in MODES {
        let dir = tempfile::tempdir().unwrap();
        let log = ValueLog::open(fs(), dir.path(), mode, 1 << 20).unwrap();
        assert_eq!(log.active_segment().unwrap(), 1);
        let ptrs = fill(&log, 0..100);
        log.flush().unwrap();
        check_all(&log, &ptrs);
        assert!(ptrs.iter().all(|(_, p)| p.segment == 1));
        let wrong_key = log.read_with_key(&ptrs[0].1, b"nope").unwrap_err();
        assert!(wrong_key.is_corruption());
    }
}

#[test]
fn rollover_at_segment_bytes() {
    for mode in MODES {
        let dir = tempfile::tempdir().unwrap();
        let segment_bytes = 2_000;
        let log = ValueLog::open(fs(), dir.path(), mode, segment_bytes).unwrap();
        let ptrs = fill(&log, 0..200);
        log.sync().unwrap();
        check_all(&log, &ptrs);

        let infos = log.segments();
        assert!(infos.len() > 5, "{infos:?}");
        let (last, sealed) = infos.split_last().unwrap();
        assert_eq!(last.id, log.active_segment().unwrap());
        assert!(!last.sealed);
        for (n, info) in sealed.iter().enumerate() {
            assert_eq!(info.id, n as u64 + 1, "ids are consecutive");
            assert!(info.sealed);
            assert!(info.size_bytes >= segment_bytes);
            // Sealed as soon as it reached the limit: without its last entry it was smaller.
            let last_entry = ptrs
                .iter()
                .rev()
                .find(|(_, p)| p.segment == info.id)
                .unwrap();
            assert!(last_entry.1.offset < segment_bytes);
            let on_disk = std::fs::metadata(log.segment_path(info.id)).unwrap().len();
            assert_eq!(on_disk, info.size_bytes);
            let entries = log.segment_entries(info.id).unwrap();
            let expected: Vec<_> = ptrs.iter().filter(|(_, p)| p.segment == info.id).collect();
            assert_eq!(entries.len(), expected.len());
            for ((ptr, k, v), (i, p)) in entries.iter().zip(expected) {
                assert_eq!(ptr, p);
                assert_eq!((k.clone(), v.clone()), kv(*i));
            }
        }
        assert_eq!(vlog_files(dir.path()).len(), infos.len());
    }
}

#[test]
fn sealed_segment_is_readable_without_flush() {
    let dir = tempfile::tempdir().unwrap();
    let log = ValueLog::open(fs(), dir.path(), ReadMode::Mmap, 50).unwrap();
    let (k, v) = kv(3);
    let p = log.append(&k, &v).unwrap();
    assert_eq!(
        log.active_segment().unwrap(),
        2,
        "the first append filled segment 1"
    );
    assert_eq!(log.read(&p).unwrap(), v);
}

#[test]
fn reopen_keeps_appending_to_the_last_segment() {
    let dir = tempfile::tempdir().unwrap();
    let mut ptrs = {
        let log = ValueLog::open(fs(), dir.path(), ReadMode::Mmap, 3_000).unwrap();
        let ptrs = fill(&log, 0..100);
        log.sync().unwrap();
        ptrs
    };
    for (round, mode) in MODES.into_iter().enumerate() {
        let before = vlog_files(dir.path());
        let last = before.len() as u64;
        let log = ValueLog::open(fs(), dir.path(), mode, 3_000).unwrap();
        let infos = log.segments();
        // The last segment is below the limit and ends in a complete entry: it is active
        // again (nothing is created), the others are sealed.
        assert_eq!(log.active_segment(), Some(last));
        assert_eq!(vlog_files(dir.path()), before);
        assert_eq!(infos.iter().filter(|s| !s.sealed).count(), 1);
        assert!(infos.iter().all(|s| s.sealed || s.id == last));
        check_all(&log, &ptrs);
        // Appends continue after its last entry; a clean close does not sync them.
        let i = 1_000 + round;
        let (k, v) = kv(i);
        let p = log.append(&k, &v).unwrap();
        log.flush().unwrap();
        assert_eq!(p.segment, last);
        ptrs.push((i, p));
        check_all(&log, &ptrs);
    }
    let log = ValueLog::open(fs(), dir.path(), ReadMode::Mmap, 3_000).unwrap();
    let last = log.active_segment().unwrap();
    assert_eq!(vlog_files(dir.path()).len() as u64, last);
    let entries = log.segment_entries(last - 1).unwrap();
    assert!(!entries.is_empty());
    check_all(&log, &ptrs);
}

/// Many short-lived opens, each appending a little: one segment, not one per open.
#[test]
fn open_close_cycles_create_one_segment() {
    let dir = tempfile::tempdir().unwrap();
    let mut ptrs = Vec::new();
    for i in 0..50 {
        let log = ValueLog::open(fs(), dir.path(), ReadMode::Mmap, 1 << 20).unwrap();
        ptrs.extend(fill(&log, i..i + 1));
        if i % 2 == 0 {
            log.sync().unwrap();
        } else {
            log.flush().unwrap();
        }
    }
    assert_eq!(vlog_files(dir.path()), vec![segment_file_name(1)]);
    let log = ValueLog::open(fs(), dir.path(), ReadMode::Pread, 1 << 20).unwrap();
    check_all(&log, &ptrs);
    // The segment still rolls over at the limit.
    drop(log);
    let log = ValueLog::open(fs(), dir.path(), ReadMode::Pread, 2_000).unwrap();
    assert_eq!(log.active_segment(), Some(2), "segment 1 is over the new limit");
    check_all(&log, &ptrs);
}

/// The newest segment is not reused when the caller rules out its id or one above it, or
/// when it is of an older format.
#[test]
fn reuse_respects_deleted_ids_min_new_id_and_format() {
    let dir = tempfile::tempdir().unwrap();
    drop(ValueLog::open(fs(), dir.path(), ReadMode::Mmap, 1 << 20).unwrap());
    type IsDeleted<'a> = &'a dyn Fn(u64) -> bool;
    let cases: [(u64, IsDeleted<'_>, (bool, u64)); 4] = [
        (1, &|_| false, (true, 1)),
        (2, &|_| false, (true, 1)),
        (3, &|_| false, (false, 3)),
        (1, &|id| id == 1, (false, 2)),
    ];
    for (min_new_id, is_deleted, expected) in cases {
        let log = ValueLog::open_existing(fs(), dir.path(), ReadMode::Mmap, 1 << 20).unwrap();
        let started = log.start_active(min_new_id, is_deleted).unwrap();
        let (reused, id) = expected;
        assert_eq!((started.reused, started.segment), (reused, id), "{min_new_id}");
        assert_eq!(started.removed_stub, None);
        drop(log);
        for extra in vlog_files(dir.path()).into_iter().skip(1) {
            std::fs::remove_file(dir.path().join(extra)).unwrap();
        }
    }
    // A format-1 segment (no codec byte) is never appended to.
    let path = dir.path().join(segment_file_name(1));
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[8..12].copy_from_slice(&1u32.to_le_bytes());
    let crc = crate::checksum::crc_parts(&[&bytes[..20]]);
    bytes[20..24].copy_from_slice(&crc.to_le_bytes());
    std::fs::write(&path, &bytes).unwrap();
    let log = ValueLog::open(fs(), dir.path(), ReadMode::Mmap, 1 << 20).unwrap();
    assert_eq!(log.active_segment(), Some(2));
}

/// Every segment found at open whose size is not recorded waits for the next sync, not only
/// the newest: the previous active segment 1 (unsynced) lies below a recorded segment 2 (a
/// compaction's). Recorded unsynced, a power cut shortened it and the next open refused.
#[test]
fn every_unrecorded_segment_found_at_open_is_synced_before_it_is_recorded() {
    let dir = tempfile::tempdir().unwrap();
    {
        let log = ValueLog::open(fs(), dir.path(), ReadMode::Mmap, 1 << 20).unwrap();
        fill(&log, 0..3);
        log.flush().unwrap();
    }
    SegmentWriter::create(fs().as_ref(), dir.path(), 2).unwrap().sync().unwrap();
    let log = ValueLog::open_existing(fs(), dir.path(), ReadMode::Mmap, 1 << 20).unwrap();
    let started = log.start_active(3, &|id| id == 2).unwrap();
    assert_eq!((started.reused, started.segment), (false, 3));
    assert_eq!(log.unsynced_segments(), vec![1]);
    log.sync().unwrap();
    assert!(log.unsynced_segments().is_empty());
}

/// A segment whose tail is not a complete entry (torn, zero-filled or damaged) is never
/// appended to: the next entry would follow bytes that are not an entry.
#[test]
fn a_segment_with_a_bad_tail_is_not_reused() {
    let cut = |bytes: &mut Vec<u8>, last: ValuePointer| bytes.truncate(last.offset as usize + 5);
    let zeros = |bytes: &mut Vec<u8>, _: ValuePointer| bytes.extend_from_slice(&[0; 100]);
    let flip = |bytes: &mut Vec<u8>, _: ValuePointer| {
        let n = bytes.len();
        bytes[n - 1] ^= 1;
    };
    let hole = |bytes: &mut Vec<u8>, last: ValuePointer| {
        // A zeroed entry followed by a valid one (a power cut that wrote a later page only).
        let at = last.offset as usize - 150;
        bytes[at..at + 20].fill(0);
    };
    type Damage<'a> = &'a dyn Fn(&mut Vec<u8>, ValuePointer);
    let damages: [Damage<'_>; 4] = [&cut, &zeros, &flip, &hole];
    for (n, damage) in damages.into_iter().enumerate() {
        let dir = tempfile::tempdir().unwrap();
        let ptrs = {
            let log = ValueLog::open(fs(), dir.path(), ReadMode::Mmap, 1 << 20).unwrap();
            let ptrs = fill(&log, 0..20);
            log.sync().unwrap();
            ptrs
        };
        let path = dir.path().join(segment_file_name(1));
        let mut bytes = std::fs::read(&path).unwrap();
        damage(&mut bytes, ptrs[19].1);
        std::fs::write(&path, &bytes).unwrap();
        let log = ValueLog::open(fs(), dir.path(), ReadMode::Mmap, 1 << 20).unwrap();
        assert_eq!(log.active_segment(), Some(2), "damage {n}");
        assert_eq!(std::fs::read(&path).unwrap(), bytes, "damage {n}: segment 1 untouched");
        assert_eq!(log.unsynced_segments(), vec![1], "damage {n}");
        check_all(&log, &ptrs[..10]);
    }
}

#[test]
fn reopen_with_torn_tail_keeps_the_durable_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let ptrs = {
        let log = ValueLog::open(fs(), dir.path(), ReadMode::Mmap, 1 << 20).unwrap();
        let ptrs = fill(&log, 0..10);
        log.sync().unwrap();
        ptrs
    };
    // Cut the last entry in half, as a crash during its append would.
    let path = dir.path().join(segment_file_name(1));
    let last = ptrs[9].1;
    let cut = last.offset + 10;
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(cut)
        .unwrap();
    let log = ValueLog::open(fs(), dir.path(), ReadMode::Mmap, 1 << 20).unwrap();
    check_all(&log, &ptrs[..9]);
    assert!(!log.is_valid(&last));
    assert_eq!(log.segment_entries(1).unwrap().len(), 9);
}

#[test]
fn is_valid_is_false_for_bad_pointers() {
    let dir = tempfile::tempdir().unwrap();
    let log = ValueLog::open(fs(), dir.path(), ReadMode::Pread, 1 << 20).unwrap();
    let ptrs = fill(&log, 0..5);
    log.flush().unwrap();
    let p = ptrs[4].1;
    let end = log.segments()[0].size_bytes;
    let bad = [
        ValuePointer { offset: end, ..p },
        ValuePointer {
            offset: end + 1000,
            ..p
        },
        ValuePointer {
            offset: u64::MAX,
            ..p
        },
        ValuePointer {
            len: p.len + 1,
            ..p
        },
        ValuePointer {
            offset: p.offset + 1,
            ..p
        },
        ValuePointer { segment: 99, ..p },
        ValuePointer { segment: 0, ..p },
    ];
    for b in bad {
        assert!(!log.is_valid(&b), "{b:?}");
        let err = log.read(&b).unwrap_err();
        assert!(err.is_corruption(), "{b:?}: {err:?}");
    }
    assert!(log.is_valid(&p));
}

#[test]
fn unflushed_bytes_of_the_active_segment_are_not_valid_yet() {
    let dir = tempfile::tempdir().unwrap();
    let log = ValueLog::open(fs(), dir.path(), ReadMode::Pread, 1 << 20).unwrap();
    let p = log.append(b"k", b"small").unwrap();
    // Still in the writer's user-space buffer: not visible, so not valid.
    assert!(!log.is_valid(&p));
    log.flush().unwrap();
    assert!(log.is_valid(&p));
}

#[test]
fn delete_segment_removes_sealed_segments_only() {
    let dir = tempfile::tempdir().unwrap();
    let log = ValueLog::open(fs(), dir.path(), ReadMode::Mmap, 1_000).unwrap();
    let ptrs = fill(&log, 0..50);
    log.flush().unwrap();
    let in_first: Vec<_> = ptrs.iter().filter(|(_, p)| p.segment == 1).collect();
    assert!(!in_first.is_empty());

    log.delete_segment(1).unwrap();
    assert!(!log.segment_path(1).exists());
    assert!(log.segments().iter().all(|s| s.id != 1));
    for (_, p) in &in_first {
        assert!(!log.is_valid(p));
        assert!(log.read(p).unwrap_err().is_corruption());
    }
    let rest: Vec<_> = ptrs
        .iter()
        .filter(|(_, p)| p.segment != 1)
        .copied()
        .collect();
    check_all(&log, &rest);

    let active = log.active_segment().unwrap();
    assert!(matches!(
        log.delete_segment(active),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        log.delete_segment(1),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        log.segment_entries(active),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        log.segment_entries(1),
        Err(Error::InvalidArgument(_))
    ));

    // A deleted id is never reused by a rollover or a reopen (the reopen keeps appending to
    // the last segment).
    drop(log);
    let log = ValueLog::open(fs(), dir.path(), ReadMode::Mmap, 1_000).unwrap();
    assert_eq!(log.active_segment().unwrap(), active);
}

#[test]
fn min_active_id_is_respected() {
    let dir = tempfile::tempdir().unwrap();
    let log = ValueLog::open_existing(fs(), dir.path(), ReadMode::Mmap, 1_000).unwrap();
    assert_eq!(
        log.active_segment(),
        None,
        "nothing written before start_active"
    );
    assert!(vlog_files(dir.path()).is_empty());
    let started = log.start_active(42, &|_| false).unwrap();
    assert_eq!((started.segment, started.reused), (42, false));
    assert_eq!(log.active_segment().unwrap(), 42);
    assert_eq!(vlog_files(dir.path()), vec!["000042.vlog".to_string()]);
}

#[test]
fn a_short_segment_before_the_newest_is_damage() {
    let dir = tempfile::tempdir().unwrap();
    {
        let log = ValueLog::open(fs(), dir.path(), ReadMode::Mmap, 1_000).unwrap();
        fill(&log, 0..20);
        log.sync().unwrap();
        assert!(log.active_segment().unwrap() > 1);
    }
    let first = dir.path().join(segment_file_name(1));
    std::fs::write(&first, b"AUGUR").unwrap();
    match ValueLog::open_existing(fs(), dir.path(), ReadMode::Mmap, 1_000) {
        Err(crate::Error::Corruption { file, .. }) => assert_eq!(file, first),
        other => panic!("expected a corruption naming segment 1, got {other:?}"),
    }
    assert_eq!(std::fs::read(&first).unwrap(), b"AUGUR", "nothing removed");
}

#[test]
fn open_removes_segment_torn_during_creation() {
    let dir = tempfile::tempdir().unwrap();
    drop(ValueLog::open(fs(), dir.path(), ReadMode::Mmap, 1_000).unwrap());
    std::fs::write(dir.path().join(segment_file_name(2)), b"AUGUR").unwrap();
    std::fs::write(dir.path().join("not-a-segment.txt"), b"x").unwrap();
    let log = ValueLog::open(fs(), dir.path(), ReadMode::Mmap, 1_000).unwrap();
    assert_eq!(log.active_segment().unwrap(), 3);
    assert_eq!(
        vlog_files(dir.path()),
        vec!["000001.vlog".to_string(), "000003.vlog".to_string()]
    );
}

#[test]
fn open_refuses_a_damaged_segment_header() {
    let dir = tempfile::tempdir().unwrap();
    drop(ValueLog::open(fs(), dir.path(), ReadMode::Mmap, 1_000).unwrap());
    let path = dir.path().join(segment_file_name(1));
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[3] ^= 0xff;
    std::fs::write(&path, &bytes).unwrap();
    let err = ValueLog::open(fs(), dir.path(), ReadMode::Mmap, 1_000).unwrap_err();
    assert!(matches!(err, Error::Corruption { offset: 0, ref file, .. } if *file == path));
}

#[test]
fn concurrent_appends_and_reads() {
    let dir = tempfile::tempdir().unwrap();
    let log = Arc::new(ValueLog::open(fs(), dir.path(), ReadMode::Mmap, 4_000).unwrap());
    let handles: Vec<_> = (0..4)
        .map(|t| {
            let log = Arc::clone(&log);
            std::thread::spawn(move || {
                let mut mine = Vec::new();
                for i in (t * 1000)..(t * 1000 + 50) {
                    let (k, v) = kv(i);
                    let p = log.append(&k, &v).unwrap();
                    log.flush().unwrap();
                    assert_eq!(log.read(&p).unwrap(), v);
                    mine.push((i, p));
                }
                mine
            })
        })
        .collect();
    let all: Vec<_> = handles
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    check_all(&log, &all);
    let total: usize = log
        .segments()
        .iter()
        .filter(|s| s.sealed)
        .map(|s| log.segment_entries(s.id).unwrap().len())
        .sum();
    let in_active = all
        .iter()
        .filter(|(_, p)| p.segment == log.active_segment().unwrap())
        .count();
    assert_eq!(total + in_active, all.len());
}

/// A file system whose writable files fail every write while `failing` is set.
struct FlakyFs {
    failing: Arc<std::sync::atomic::AtomicBool>,
}

struct FlakyFile {
    inner: Box<dyn crate::fs::WritableFile>,
    failing: Arc<std::sync::atomic::AtomicBool>,
}

impl FlakyFile {
    fn gate(&self) -> Result<()> {
        if self.failing.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(Error::io("injected", std::io::Error::other("injected")));
        }
        Ok(())
    }
}

impl crate::fs::WritableFile for FlakyFile {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.gate()?;
        self.inner.append(data)
    }
    fn flush(&mut self) -> Result<()> {
        self.gate()?;
        self.inner.flush()
    }
    fn sync(&mut self) -> Result<()> {
        self.gate()?;
        self.inner.sync()
    }
    fn len(&self) -> u64 {
        self.inner.len()
    }
}

impl FileSystem for FlakyFs {
    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        StdFs.create_dir_all(dir)
    }
    fn create(&self, path: &Path) -> Result<Box<dyn crate::fs::WritableFile>> {
        Ok(Box::new(FlakyFile {
            inner: StdFs.create(path)?,
            failing: Arc::clone(&self.failing),
        }))
    }
    fn open_append(&self, path: &Path) -> Result<Box<dyn crate::fs::WritableFile>> {
        Ok(Box::new(FlakyFile {
            inner: StdFs.open_append(path)?,
            failing: Arc::clone(&self.failing),
        }))
    }
    fn open(&self, path: &Path, mode: ReadMode) -> Result<Arc<dyn crate::fs::RandomAccessFile>> {
        StdFs.open(path, mode)
    }
    fn read_all(&self, path: &Path) -> Result<Vec<u8>> {
        StdFs.read_all(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        StdFs.rename(from, to)
    }
    fn remove(&self, path: &Path) -> Result<()> {
        StdFs.remove(path)
    }
    fn list(&self, dir: &Path) -> Result<Vec<String>> {
        StdFs.list(dir)
    }
    fn exists(&self, path: &Path) -> bool {
        StdFs.exists(path)
    }
    fn size(&self, path: &Path) -> Result<u64> {
        StdFs.size(path)
    }
    fn sync_dir(&self, dir: &Path) -> Result<()> {
        StdFs.sync_dir(dir)
    }
    fn sync_file(&self, path: &Path) -> Result<()> {
        StdFs.sync_file(path)
    }
    fn lock(&self, path: &Path) -> Result<Box<dyn crate::fs::FileLock>> {
        StdFs.lock(path)
    }
}

#[test]
fn failed_write_poisons_the_log_until_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let failing = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flaky: Arc<dyn FileSystem> = Arc::new(FlakyFs {
        failing: Arc::clone(&failing),
    });
    let log = ValueLog::open(Arc::clone(&flaky), dir.path(), ReadMode::Mmap, 1 << 20).unwrap();
    let ok = log.append(b"a", b"before").unwrap();
    log.sync().unwrap();

    failing.store(true, std::sync::atomic::Ordering::SeqCst);
    assert!(matches!(log.append(b"b", b"x"), Err(Error::Io { .. })));
    failing.store(false, std::sync::atomic::Ordering::SeqCst);
    // Every refusal carries the first failure, kind and all.
    for refused in [log.append(b"c", b"y").map(|_| ()), log.flush(), log.sync()] {
        match refused {
            Err(e @ Error::Poisoned { .. }) => {
                assert!(matches!(e.root_cause(), Error::Io { .. }), "{e:?}")
            }
            other => panic!("expected Poisoned, got {other:?}"),
        }
    }
    assert_eq!(log.read(&ok).unwrap(), b"before", "reads still work");
    // An oversized key is refused before any byte is written: no poisoning.
    let fresh = ValueLog::open(flaky, dir.path(), ReadMode::Mmap, 1 << 20).unwrap();
    let long_key = vec![0u8; crate::key::MAX_KEY_LEN + 1];
    assert!(matches!(
        fresh.append(&long_key, b"v"),
        Err(Error::InvalidArgument(_))
    ));
    let p = fresh.append(b"d", b"after reopen").unwrap();
    fresh.flush().unwrap();
    assert_eq!(fresh.read(&p).unwrap(), b"after reopen");
    assert_eq!(fresh.read(&ok).unwrap(), b"before");
}

/// Batched reads (`read_values`) return every value to its slot — sequentially, coalesced
/// through pread, and split among fetch threads — across several segments, in any request
/// order; a damaged entry anywhere in the batch (a worker's chunk included) is `Corruption`.
#[test]
fn batched_reads_match_single_reads_and_report_damage() {
    for mode in MODES {
        for threads in [0, 1, 3] {
            let dir = tempfile::tempdir().unwrap();
            let log = ValueLog::open(fs(), dir.path(), mode, 16 << 10)
                .unwrap()
                .with_fetch_threads(threads);
            let ptrs = fill(&log, 0..400);
            log.flush().unwrap();
            assert!(vlog_files(dir.path()).len() > 3, "several segments");
            let keys: Vec<Vec<u8>> = (0..400).map(|i| kv(i).0).collect();
            // Every third entry, in reverse order: gaps, and sorting needed.
            let picked: Vec<usize> = (0..400).rev().step_by(3).collect();
            let mut requests: Vec<ValueRequest<'_>> = picked
                .iter()
                .map(|&i| ValueRequest {
                    slot: i,
                    ptr: ptrs[i].1,
                    key: &keys[i],
                })
                .collect();
            let mut got = vec![None; 400];
            log.read_values(&mut requests, &mut |slot, v, _| {
                got[slot] = Some(v.to_vec())
            })
            .unwrap();
            for (i, got) in got.iter().enumerate() {
                let want = picked.contains(&i).then(|| kv(i).1);
                assert_eq!(got, &want, "{mode:?} threads {threads} entry {i}");
            }
            // A wrong key for one late request: the batch fails with Corruption.
            let wrong = b"not-the-key".to_vec();
            let mut requests: Vec<ValueRequest<'_>> = (0..400)
                .map(|i| ValueRequest {
                    slot: i,
                    ptr: ptrs[i].1,
                    key: if i == 390 { &wrong } else { &keys[i] },
                })
                .collect();
            let err = log
                .read_values(&mut requests, &mut |_, _, _| {})
                .unwrap_err();
            assert!(err.is_corruption(), "{mode:?} threads {threads}: {err}");
        }
    }
}

/// Batched reads of a mapped segment check each entry's CRC once (`segment/verified.rs`): a
/// second pass returns the same values, an entry damaged before it was ever read is still
/// `Corruption`, and a single `read` checks the CRC every time.
#[test]
fn mapped_batches_verify_each_entry_once_and_catch_unread_damage() {
    let dir = tempfile::tempdir().unwrap();
    let log = ValueLog::open(fs(), dir.path(), ReadMode::Mmap, 1 << 20).unwrap();
    let ptrs = fill(&log, 0..300);
    // Seal the segment so that a reopened log maps it.
    drop(log);
    let log = ValueLog::open(fs(), dir.path(), ReadMode::Mmap, 1 << 20).unwrap();
    let keys: Vec<Vec<u8>> = (0..300).map(|i| kv(i).0).collect();
    let batch = |range: std::ops::Range<usize>| {
        let mut requests: Vec<ValueRequest<'_>> = range
            .map(|i| ValueRequest {
                slot: i,
                ptr: ptrs[i].1,
                key: &keys[i],
            })
            .collect();
        let mut got = vec![None; 300];
        log.read_values(&mut requests, &mut |slot, v, _| {
            got[slot] = Some(v.to_vec())
        })
        .map(|()| got)
    };
    for pass in 0..2 {
        let got = batch(0..200).unwrap();
        for (i, g) in got.iter().enumerate().take(200) {
            assert_eq!(g.as_deref(), Some(&kv(i).1[..]), "pass {pass} entry {i}");
        }
    }
    // Damage the value of entry 250, never read so far.
    let p = ptrs[250].1;
    let path = dir
        .path()
        .join(crate::vlog::segment::segment_file_name(p.segment));
    // In place (no truncation: the segment is mapped).
    let at = p.offset + (crate::vlog::segment::ENTRY_HEADER_LEN + keys[250].len()) as u64;
    let byte = std::fs::read(&path).unwrap()[usize::try_from(at).unwrap()];
    {
        use std::io::{Seek, SeekFrom, Write};
        let mut f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        f.seek(SeekFrom::Start(at)).unwrap();
        f.write_all(&[byte ^ 0x40]).unwrap();
    }
    let err = batch(240..260).unwrap_err();
    assert!(err.is_corruption(), "{err}");
    assert!(log.read(&p).unwrap_err().is_corruption());
}

/// A segment found at open may end in bytes its last writer never synced: the first sync
/// of the new log makes them durable, so a power cut after it keeps them — whether the open
/// reuses the segment or starts a new one after it.
#[test]
fn first_sync_makes_the_newest_segment_found_at_open_durable() {
    use crate::fs::FaultFs;
    for reuse in [true, false] {
        let fault = FaultFs::new();
        let fs: Arc<dyn FileSystem> = Arc::new(fault.clone());
        let dir = Path::new("/db");
        let log = ValueLog::open(Arc::clone(&fs), dir, ReadMode::Pread, 1 << 20).unwrap();
        let ptrs = fill(&log, 0..20);
        log.flush().unwrap();
        drop(log);
        // A restart without a power cut: the bytes are still there, not durable.
        fault.reset_faults();
        let log = ValueLog::open_existing(Arc::clone(&fs), dir, ReadMode::Pread, 1 << 20)
            .unwrap();
        let started = log.start_active(if reuse { 1 } else { 3 }, &|_| false).unwrap();
        assert_eq!(started.reused, reuse);
        check_all(&log, &ptrs);
        log.sync().unwrap();
        drop(log);
        fault.crash();
        fault.reset_faults();
        let log = ValueLog::open(Arc::clone(&fs), dir, ReadMode::Pread, 1 << 20).unwrap();
        check_all(&log, &ptrs);
    }
}

/// The first sync after an open fsyncs only what may hold unsynced bytes — the active
/// segment and the segments marked unsynced — not every segment found (issue 28).
#[test]
fn first_sync_after_open_syncs_only_unsynced_segments() {
    use crate::fs::{FaultFs, FaultOp};
    let fault = FaultFs::new();
    let fs: Arc<dyn FileSystem> = Arc::new(fault.clone());
    let dir = Path::new("/db");
    let log = ValueLog::open(Arc::clone(&fs), dir, ReadMode::Pread, 2_000).unwrap();
    let ptrs = fill(&log, 0..200);
    log.sync().unwrap();
    let segments = log.segments().len() as u64;
    assert!(segments > 10, "{segments}");
    drop(log);
    fault.reset_faults();

    // Reused: the first sync syncs the active segment only, later ones nothing. (The sealed
    // segments' sizes are recorded, as a database's manifest records them: an unrecorded
    // one would be synced too.)
    let log = ValueLog::open_existing(Arc::clone(&fs), dir, ReadMode::Pread, 2_000).unwrap();
    log.start_active(1, &|id| id < segments).unwrap();
    assert_eq!(log.active_segment(), Some(segments));
    assert!(log.unsynced_segments().is_empty());
    let syncs = fault.op_count(FaultOp::Sync);
    log.sync().unwrap();
    assert_eq!(fault.op_count(FaultOp::Sync), syncs + 1);
    log.sync().unwrap();
    assert_eq!(fault.op_count(FaultOp::Sync), syncs + 1);
    // Segments marked unsynced (an open's replayed pointers) are synced once each; the active
    // segment and unknown ids are ignored.
    log.note_unsynced([3, 5, segments, 999]);
    assert_eq!(log.unsynced_segments(), vec![3, 5]);
    log.delete_segment(5).unwrap();
    let syncs = fault.op_count(FaultOp::Sync);
    log.sync().unwrap();
    assert_eq!(fault.op_count(FaultOp::Sync), syncs + 1, "segment 3 only");
    log.sync().unwrap();
    assert_eq!(fault.op_count(FaultOp::Sync), syncs + 1);
    check_all(&log, &ptrs.iter().filter(|(_, p)| p.segment != 5).copied().collect::<Vec<_>>());
}
