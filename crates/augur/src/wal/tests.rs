//! Tests of log framing: writer/reader roundtrip and the torn-tail policy.

use super::format::{FORMAT_VERSION, MAGIC};
use super::*;
use crate::checksum::crc_parts;
use crate::error::Error;
use crate::fs::StdFs;
use proptest::prelude::*;
use std::path::{Path, PathBuf};

fn payload(i: usize) -> Vec<u8> {
    // Sizes 0..=300, contents depend on i so records are distinguishable.
    (0..(i * 37) % 301).map(|j| (i * 31 + j) as u8).collect()
}

fn write_log(path: &Path, kind: LogKind, payloads: &[Vec<u8>]) -> Vec<u8> {
    let mut w = LogWriter::create(&StdFs, path, kind).unwrap();
    for p in payloads {
        w.add_record(p).unwrap();
    }
    w.sync().unwrap();
    let len = w.len();
    // A WAL on the real file system is preallocated while written; dropping the writer
    // trims it to its records.
    drop(w);
    assert_eq!(len, std::fs::metadata(path).unwrap().len());
    std::fs::read(path).unwrap()
}

/// Offsets of each record in a file written from `payloads`.
fn offsets(payloads: &[Vec<u8>]) -> Vec<u64> {
    let mut off = HEADER_LEN as u64;
    payloads
        .iter()
        .map(|p| {
            let o = off;
            off += (RECORD_HEADER_LEN + p.len()) as u64;
            o
        })
        .collect()
}

fn read(path: &Path, kind: LogKind) -> crate::Result<LogContents> {
    read_log(&StdFs, path, kind)
}

fn setup() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("000001.log");
    (dir, path)
}

#[test]
fn roundtrip_many_records_both_kinds() {
    let (_dir, path) = setup();
    let payloads: Vec<Vec<u8>> = (0..500).map(payload).collect();
    for kind in [LogKind::Wal, LogKind::Manifest] {
        write_log(&path, kind, &payloads);
        let got = read(&path, kind).unwrap();
        assert_eq!(got.tail, LogTail::Clean);
        let expected: Vec<(u64, Vec<u8>)> = offsets(&payloads)
            .into_iter()
            .zip(payloads.clone())
            .collect();
        assert_eq!(got.records, expected);
    }
}

#[test]
fn empty_log_has_no_records() {
    let (_dir, path) = setup();
    let w = LogWriter::create(&StdFs, &path, LogKind::Wal).unwrap();
    assert!(w.is_empty());
    assert_eq!(w.len(), HEADER_LEN as u64);
    assert_eq!(w.path(), path.as_path());
    // While written, the WAL may be preallocated: its zeros end the log like a torn tail.
    let got = read(&path, LogKind::Wal).unwrap();
    assert!(got.records.is_empty());
    assert!(matches!(
        got.tail,
        LogTail::Clean | LogTail::Torn { offset: 20, .. }
    ));
    drop(w);
    let got = read(&path, LogKind::Wal).unwrap();
    assert!(got.records.is_empty());
    assert_eq!(got.tail, LogTail::Clean);
}

#[test]
fn flush_makes_records_visible_to_readers() {
    let (_dir, path) = setup();
    let mut w = LogWriter::create(&StdFs, &path, LogKind::Wal).unwrap();
    w.add_record(b"one").unwrap();
    w.flush().unwrap();
    let got = read(&path, LogKind::Wal).unwrap();
    assert_eq!(got.records, vec![(HEADER_LEN as u64, b"one".to_vec())]);
}

#[test]
fn torn_tail_at_every_byte_of_last_record_keeps_prefix() {
    let (_dir, path) = setup();
    let payloads: Vec<Vec<u8>> = (1..6).map(payload).collect();
    let full = write_log(&path, LogKind::Wal, &payloads);
    let last = *offsets(&payloads).last().unwrap() as usize;
    let kept: Vec<Vec<u8>> = payloads[..payloads.len() - 1].to_vec();
    for cut in last..full.len() {
        std::fs::write(&path, &full[..cut]).unwrap();
        let got = read(&path, LogKind::Wal).unwrap();
        let got_payloads: Vec<Vec<u8>> = got.records.into_iter().map(|(_, p)| p).collect();
        assert_eq!(got_payloads, kept, "cut at {cut}");
        if cut == last {
            assert_eq!(got.tail, LogTail::Clean);
        } else {
            assert!(
                matches!(got.tail, LogTail::Torn { offset, .. } if offset == last as u64),
                "cut at {cut}: {:?}",
                got.tail
            );
        }
    }
}

#[test]
fn zero_filled_tail_is_dropped() {
    let (_dir, path) = setup();
    let payloads: Vec<Vec<u8>> = (1..4).map(payload).collect();
    let mut bytes = write_log(&path, LogKind::Wal, &payloads);
    let end = bytes.len() as u64;
    for zeros in [1usize, 7, 8, 9, 4096] {
        let mut b = bytes.clone();
        b.extend(std::iter::repeat_n(0u8, zeros));
        std::fs::write(&path, &b).unwrap();
        let got = read(&path, LogKind::Wal).unwrap();
        assert_eq!(got.records.len(), 3);
        assert!(matches!(got.tail, LogTail::Torn { offset, .. } if offset == end));
    }
    // The last record's bytes zeroed in place (the size was persisted, the data was not).
    let last = *offsets(&payloads).last().unwrap() as usize;
    for b in bytes.iter_mut().skip(last) {
        *b = 0;
    }
    std::fs::write(&path, &bytes).unwrap();
    let got = read(&path, LogKind::Wal).unwrap();
    assert_eq!(got.records.len(), 2);
    assert!(matches!(got.tail, LogTail::Torn { offset, .. } if offset == last as u64));
}

#[test]
fn bit_flip_in_middle_record_followed_by_valid_record_is_corruption() {
    let (_dir, path) = setup();
    let payloads: Vec<Vec<u8>> = (1..6).map(payload).collect();
    let bytes = write_log(&path, LogKind::Wal, &payloads);
    let offs = offsets(&payloads);
    let (start, end) = (offs[2] as usize, offs[3] as usize);
    // Flip bits in the checksum and in the payload (not in the length: a damaged length
    // points elsewhere and is indistinguishable from a torn tail, see docs/format/wal.md).
    let positions: Vec<usize> = (start..start + 4).chain(start + 8..end).collect();
    for pos in positions {
        let mut b = bytes.clone();
        b[pos] ^= 0x10;
        std::fs::write(&path, &b).unwrap();
        match read(&path, LogKind::Wal).and_then(|c| c.fail_on_damage(&path)) {
            Err(Error::Corruption { file, offset, .. }) => {
                assert_eq!(file, path);
                assert_eq!(offset, offs[2], "flip at {pos}");
            }
            other => panic!("flip at {pos}: expected corruption, got {other:?}"),
        }
    }
}

#[test]
fn bit_flip_in_last_record_is_a_torn_tail() {
    let (_dir, path) = setup();
    let payloads: Vec<Vec<u8>> = (1..4).map(payload).collect();
    let mut bytes = write_log(&path, LogKind::Wal, &payloads);
    let last = *bytes.last().unwrap();
    *bytes.last_mut().unwrap() = last ^ 1;
    std::fs::write(&path, &bytes).unwrap();
    let got = read(&path, LogKind::Wal).unwrap();
    assert_eq!(got.records.len(), 2);
    assert!(matches!(got.tail, LogTail::Torn { .. }));
}

#[test]
fn header_damage_is_corruption() {
    let (_dir, path) = setup();
    let bytes = write_log(&path, LogKind::Wal, &[b"x".to_vec()]);
    for pos in 0..HEADER_LEN {
        let mut b = bytes.clone();
        b[pos] ^= 0x01;
        std::fs::write(&path, &b).unwrap();
        let err = read(&path, LogKind::Wal).unwrap_err();
        assert!(
            matches!(err, Error::Corruption { offset: 0, .. }),
            "flip at {pos}: {err:?}"
        );
    }
    for len in [0, 1, HEADER_LEN - 1] {
        std::fs::write(&path, &bytes[..len]).unwrap();
        let err = read(&path, LogKind::Wal).unwrap_err();
        assert!(err.is_corruption(), "len {len}: {err:?}");
    }
}

#[test]
fn wrong_kind_is_corruption() {
    let (_dir, path) = setup();
    write_log(&path, LogKind::Manifest, &[b"edit".to_vec()]);
    let err = read(&path, LogKind::Wal).unwrap_err();
    assert!(err.is_corruption(), "{err:?}");
    assert!(err.to_string().contains("MANIFEST"), "{err}");
}

#[test]
fn newer_version_is_unsupported() {
    let (_dir, path) = setup();
    let mut header = Vec::new();
    header.extend_from_slice(&MAGIC);
    header.extend_from_slice(&(FORMAT_VERSION + 1).to_le_bytes());
    header.extend_from_slice(&LogKind::Wal.code().to_le_bytes());
    let crc = crc_parts(&[&header]);
    header.extend_from_slice(&crc.to_le_bytes());
    std::fs::write(&path, &header).unwrap();
    match read(&path, LogKind::Wal) {
        Err(Error::UnsupportedVersion { version, .. }) => assert_eq!(version, FORMAT_VERSION + 1),
        other => panic!("expected UnsupportedVersion, got {other:?}"),
    }
}

#[test]
fn huge_length_field_is_a_torn_tail_without_allocation() {
    let (_dir, path) = setup();
    let mut bytes = write_log(&path, LogKind::Wal, &[b"ok".to_vec()]);
    let end = bytes.len() as u64;
    bytes.extend_from_slice(&0xdead_beef_u32.to_le_bytes());
    bytes.extend_from_slice(&u32::MAX.to_le_bytes());
    bytes.extend_from_slice(b"some bytes");
    std::fs::write(&path, &bytes).unwrap();
    let got = read(&path, LogKind::Wal).unwrap();
    assert_eq!(got.records, vec![(HEADER_LEN as u64, b"ok".to_vec())]);
    assert!(matches!(got.tail, LogTail::Torn { offset, .. } if offset == end));
}

#[test]
fn missing_file_is_io_error() {
    let (_dir, path) = setup();
    assert!(matches!(read(&path, LogKind::Wal), Err(Error::Io { .. })));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Any truncation of a log yields exactly the records that fit entirely before the cut.
    #[test]
    fn truncation_yields_a_prefix(
        payloads in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..64), 0..20),
        cut_fraction in 0.0f64..=1.0,
    ) {
        let (_dir, path) = setup();
        let full = write_log(&path, LogKind::Wal, &payloads);
        let cut = HEADER_LEN + ((full.len() - HEADER_LEN) as f64 * cut_fraction) as usize;
        std::fs::write(&path, &full[..cut]).unwrap();
        let got = read(&path, LogKind::Wal).unwrap();
        let offs = offsets(&payloads);
        let expected: Vec<(u64, Vec<u8>)> = offs
            .iter()
            .zip(&payloads)
            .filter(|(o, p)| **o as usize + RECORD_HEADER_LEN + p.len() <= cut)
            .map(|(o, p)| (*o, p.clone()))
            .collect();
        let complete = expected.len() == payloads.len()
            || offs.get(expected.len()).is_some_and(|o| *o as usize == cut);
        prop_assert_eq!(got.records, expected);
        prop_assert_eq!(got.tail == LogTail::Clean, complete);
    }
}

/// A failed append leaves a torn record at the tail: the writer refuses every later append,
/// flush and sync, so the torn record stays a droppable tail (never corruption in the middle
/// of the log) and is never synced and counted as durable.
#[test]
fn a_writer_refuses_every_call_after_a_failed_append() {
    use crate::fs::{FaultFs, FaultMode, FaultOp, FileSystem};
    for (kind, mode) in [
        (LogKind::Wal, FaultMode::Tear),
        (LogKind::Manifest, FaultMode::Tear),
        (LogKind::Wal, FaultMode::Error),
    ] {
        let fs = FaultFs::new();
        fs.create_dir_all(Path::new("/db")).unwrap();
        let path = Path::new("/db/000001.log");
        let mut w = LogWriter::create(&fs, path, kind).unwrap();
        w.add_record(b"first").unwrap();
        w.sync().unwrap();
        // The payload's append (the record's second) fails.
        fs.fail_at(FaultOp::Write, 2, mode);
        assert!(matches!(w.add_record(&[7; 64]), Err(Error::Io { .. })));
        let len = w.len();
        for refused in [w.add_record(b"after"), w.flush(), w.sync()] {
            match refused {
                Err(e @ Error::Poisoned { .. }) => {
                    assert!(e.to_string().contains("not written to again"), "{e}");
                    assert!(matches!(e.root_cause(), Error::Io { .. }), "{e:?}");
                }
                other => panic!("{kind:?} {mode:?}: expected Poisoned, got {other:?}"),
            }
        }
        assert_eq!(w.len(), len, "a refused call wrote bytes");
        let got = read_log(&fs, path, kind).unwrap();
        assert_eq!(got.records, vec![(HEADER_LEN as u64, b"first".to_vec())]);
        // A torn payload leaves the record's header and part of it; a failed one, the
        // header alone: both a torn tail.
        let first_end = (HEADER_LEN + RECORD_HEADER_LEN + 5) as u64;
        assert!(len > first_end, "{kind:?} {mode:?}: nothing of the record was written");
        assert!(
            matches!(got.tail, LogTail::Torn { offset, .. } if offset == first_end),
            "{kind:?} {mode:?}: {:?}",
            got.tail
        );
    }
}
