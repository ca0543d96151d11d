//! Tests of value-log segment files.

use super::*;
use crate::compression::Compression;
use crate::fs::{ReadMode, StdFs};

fn entry(i: usize) -> (Vec<u8>, Vec<u8>) {
    let key = format!("key-{i:05}").into_bytes();
    let value: Vec<u8> = (0..(i * 53) % 700).map(|j| (i + j) as u8).collect();
    (key, value)
}

/// Writes `n` entries into segment 7 of `dir`; returns their pointers and the file bytes.
fn write_segment(dir: &Path, n: usize) -> (Vec<ValuePointer>, Vec<u8>) {
    let mut w = SegmentWriter::create(&StdFs, dir, 7).unwrap();
    assert!(w.is_empty());
    let ptrs = (0..n)
        .map(|i| {
            let (k, v) = entry(i);
            w.append(&k, &v, Compression::None).unwrap()
        })
        .collect();
    w.sync().unwrap();
    let bytes = std::fs::read(w.path()).unwrap();
    assert_eq!(bytes.len() as u64, w.len());
    (ptrs, bytes)
}

fn segment_path(dir: &Path) -> PathBuf {
    dir.join(segment_file_name(7))
}

fn open(dir: &Path, mode: ReadMode) -> SegmentReader {
    SegmentReader::open(&StdFs, dir, 7, mode).unwrap()
}

fn collect(r: &SegmentReader) -> Result<Vec<SegmentEntry>> {
    r.entries().collect()
}

const MODES: [ReadMode; 3] = [ReadMode::Mmap, ReadMode::Pread, ReadMode::Direct];

#[test]
fn file_names() {
    assert_eq!(segment_file_name(7), "000007.vlog");
    assert_eq!(segment_file_name(12_345_678), "12345678.vlog");
    assert_eq!(parse_segment_file_name("000007.vlog"), Some(7));
    assert_eq!(parse_segment_file_name("12345678.vlog"), Some(12_345_678));
    for bad in [
        "7.vlog",
        "00007.vlog",
        "000007.log",
        "+00007.vlog",
        ".vlog",
        "x00007.vlog",
    ] {
        assert_eq!(parse_segment_file_name(bad), None, "{bad}");
    }
}

#[test]
fn empty_entry_header_is_never_all_zero() {
    assert_ne!(crc_parts(&[&[0u8; 8]]), 0);
}

#[test]
fn append_read_roundtrip_in_both_modes() {
    let dir = tempfile::tempdir().unwrap();
    let (ptrs, _) = write_segment(dir.path(), 200);
    for mode in MODES {
        let r = open(dir.path(), mode);
        for (i, ptr) in ptrs.iter().enumerate() {
            let (k, v) = entry(i);
            assert_eq!(ptr.segment, 7);
            assert_eq!(ptr.len as usize, v.len());
            assert_eq!(r.read(ptr, Some(&k)).unwrap(), v);
            assert_eq!(r.read(ptr, None).unwrap(), v);
        }
        let all = collect(&r).unwrap();
        assert_eq!(all.len(), 200);
        for (i, (ptr, k, v)) in all.into_iter().enumerate() {
            assert_eq!((ptr, (k, v)), (ptrs[i], entry(i)));
        }
    }
}

#[test]
fn empty_key_and_value_roundtrip() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = SegmentWriter::create(&StdFs, dir.path(), 7).unwrap();
    let p = w.append(b"", b"", Compression::None).unwrap();
    let q = w.append(b"k", b"", Compression::None).unwrap();
    w.flush().unwrap();
    let r = open(dir.path(), ReadMode::Pread);
    assert_eq!(r.read(&p, Some(b"")).unwrap(), b"");
    assert_eq!(r.read(&q, Some(b"k")).unwrap(), b"");
    assert_eq!(collect(&r).unwrap().len(), 2);
}

#[test]
fn pread_reader_sees_flushed_appends() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = SegmentWriter::create(&StdFs, dir.path(), 7).unwrap();
    let r = open(dir.path(), ReadMode::Pread);
    let p = w.append(b"a", b"first", Compression::None).unwrap();
    w.flush().unwrap();
    assert_eq!(r.read(&p, Some(b"a")).unwrap(), b"first");
    let q = w.append(b"b", b"second", Compression::None).unwrap();
    w.flush().unwrap();
    assert_eq!(r.read(&q, Some(b"b")).unwrap(), b"second");
}

#[test]
fn pointer_with_wrong_len_key_or_offset_is_corruption() {
    let dir = tempfile::tempdir().unwrap();
    let (ptrs, bytes) = write_segment(dir.path(), 10);
    for mode in MODES {
        let r = open(dir.path(), mode);
        let p = ptrs[3];
        let bad = [
            ValuePointer {
                len: p.len + 1,
                ..p
            },
            ValuePointer {
                len: p.len - 1,
                ..p
            },
            ValuePointer {
                offset: p.offset + 1,
                ..p
            },
            ValuePointer { offset: 0, ..p },
            ValuePointer {
                offset: bytes.len() as u64,
                ..p
            },
            ValuePointer {
                offset: u64::MAX - 3,
                ..p
            },
        ];
        for b in bad {
            let err = r.read(&b, None).unwrap_err();
            match err {
                Error::Corruption { file, offset, .. } => {
                    assert_eq!(file, segment_path(dir.path()));
                    assert_eq!(offset, b.offset);
                }
                other => panic!("{b:?}: {other:?}"),
            }
        }
        assert!(r.read(&p, Some(b"other key")).unwrap_err().is_corruption());
        let other_segment = ValuePointer { segment: 8, ..p };
        assert!(matches!(
            r.read(&other_segment, None),
            Err(Error::InvalidArgument(_))
        ));
    }
}

#[test]
fn bit_flip_is_corruption_for_read_and_entries() {
    let dir = tempfile::tempdir().unwrap();
    let (ptrs, bytes) = write_segment(dir.path(), 5);
    let p = ptrs[2];
    let end = ptrs[3].offset as usize;
    // Every byte of the entry except its length fields (a damaged length is caught too, but
    // as a length mismatch or an entry that runs elsewhere, tested below).
    let positions: Vec<usize> = (p.offset as usize..p.offset as usize + 4)
        .chain(p.offset as usize + ENTRY_HEADER_LEN..end)
        .collect();
    for pos in positions {
        let mut b = bytes.clone();
        b[pos] ^= 0x04;
        std::fs::write(segment_path(dir.path()), &b).unwrap();
        for mode in MODES {
            let r = open(dir.path(), mode);
            assert!(
                r.read(&p, None).unwrap_err().is_corruption(),
                "flip at {pos}"
            );
            assert_eq!(r.read(&ptrs[1], None).unwrap(), entry(1).1);
            let items: Vec<_> = r.entries().collect();
            assert_eq!(items.len(), 3, "two good entries then the error");
            match &items[2] {
                Err(Error::Corruption { offset, .. }) => assert_eq!(*offset, p.offset),
                other => panic!("flip at {pos}: {other:?}"),
            }
        }
    }
    // A damaged value length: read sees a mismatch with the pointer.
    let mut b = bytes.clone();
    b[p.offset as usize + 8] ^= 0x01;
    std::fs::write(segment_path(dir.path()), &b).unwrap();
    let r = open(dir.path(), ReadMode::Pread);
    assert!(r.read(&p, None).unwrap_err().is_corruption());
}

#[test]
fn torn_tail_is_ignored_by_entries() {
    let dir = tempfile::tempdir().unwrap();
    let (ptrs, bytes) = write_segment(dir.path(), 4);
    let last = ptrs[3].offset as usize;
    for cut in last..bytes.len() {
        std::fs::write(segment_path(dir.path()), &bytes[..cut]).unwrap();
        for mode in MODES {
            let r = open(dir.path(), mode);
            let all = collect(&r).unwrap();
            assert_eq!(all.len(), 3, "cut at {cut}");
            assert!(r.read(&ptrs[3], None).unwrap_err().is_corruption());
        }
    }
}

#[test]
fn zero_tail_and_damaged_last_entry_end_entries_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let (ptrs, bytes) = write_segment(dir.path(), 4);
    let mut zero_tail = bytes.clone();
    zero_tail.extend(std::iter::repeat_n(0u8, 100_000));
    let mut bad_last = bytes.clone();
    *bad_last.last_mut().unwrap() ^= 0x80;
    let mut zeroed_last = bytes.clone();
    for b in zeroed_last.iter_mut().skip(ptrs[3].offset as usize) {
        *b = 0;
    }
    for (name, b, expected) in [
        ("zero tail", zero_tail, 4),
        ("bad last", bad_last, 3),
        ("zeroed last", zeroed_last, 3),
    ] {
        std::fs::write(segment_path(dir.path()), &b).unwrap();
        for mode in MODES {
            let all = collect(&open(dir.path(), mode)).unwrap();
            assert_eq!(all.len(), expected, "{name}");
        }
    }
}

#[test]
fn zeroed_middle_entry_is_corruption() {
    let dir = tempfile::tempdir().unwrap();
    let (ptrs, mut bytes) = write_segment(dir.path(), 4);
    let (start, end) = (ptrs[1].offset as usize, ptrs[2].offset as usize);
    for b in &mut bytes[start..end] {
        *b = 0;
    }
    std::fs::write(segment_path(dir.path()), &bytes).unwrap();
    let r = open(dir.path(), ReadMode::Pread);
    let items: Vec<_> = r.entries().collect();
    assert_eq!(items.len(), 2);
    assert!(
        matches!(&items[1], Err(Error::Corruption { offset, .. }) if *offset == ptrs[1].offset)
    );
}

#[test]
fn huge_lengths_do_not_allocate_or_panic() {
    let dir = tempfile::tempdir().unwrap();
    let (ptrs, mut bytes) = write_segment(dir.path(), 1);
    let end = bytes.len() as u64;
    bytes.extend_from_slice(&1u32.to_le_bytes());
    bytes.extend_from_slice(&u32::MAX.to_le_bytes());
    bytes.extend_from_slice(&u32::MAX.to_le_bytes());
    bytes.extend_from_slice(b"junk");
    std::fs::write(segment_path(dir.path()), &bytes).unwrap();
    for mode in MODES {
        let r = open(dir.path(), mode);
        assert_eq!(collect(&r).unwrap().len(), 1);
        let huge = ValuePointer {
            segment: 7,
            offset: end,
            len: u32::MAX,
        };
        assert!(r.read(&huge, None).unwrap_err().is_corruption());
        assert_eq!(r.read(&ptrs[0], None).unwrap(), entry(0).1);
    }
}

#[test]
fn header_damage_is_rejected_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let (_, bytes) = write_segment(dir.path(), 1);
    for pos in 0..SEGMENT_HEADER_LEN {
        let mut b = bytes.clone();
        b[pos] ^= 0x01;
        std::fs::write(segment_path(dir.path()), &b).unwrap();
        for mode in MODES {
            let err = SegmentReader::open(&StdFs, dir.path(), 7, mode).unwrap_err();
            assert!(
                matches!(err, Error::Corruption { offset: 0, .. }),
                "{pos}: {err:?}"
            );
        }
    }
    std::fs::write(segment_path(dir.path()), &bytes[..10]).unwrap();
    assert!(SegmentReader::open(&StdFs, dir.path(), 7, ReadMode::Mmap)
        .unwrap_err()
        .is_corruption());
    // A valid header of another segment id under this name.
    std::fs::rename(segment_path(dir.path()), dir.path().join("000009.vlog")).unwrap();
    SegmentWriter::create(&StdFs, dir.path(), 9).unwrap();
    std::fs::rename(dir.path().join("000009.vlog"), segment_path(dir.path())).unwrap();
    assert!(SegmentReader::open(&StdFs, dir.path(), 7, ReadMode::Pread)
        .unwrap_err()
        .is_corruption());
}

#[test]
fn oversized_key_is_invalid_argument() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = SegmentWriter::create(&StdFs, dir.path(), 7).unwrap();
    let key = vec![b'k'; MAX_KEY_LEN + 1];
    assert!(matches!(
        w.append(&key, b"v", Compression::None),
        Err(Error::InvalidArgument(_))
    ));
    assert!(w.is_empty());
}

mod props {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// Any truncation of a segment scans as exactly the entries that fit before the cut,
        /// and every pointer reads back its value iff its entry fits.
        #[test]
        fn truncation_yields_a_prefix(
            entries in prop::collection::vec(
                (prop::collection::vec(any::<u8>(), 0..16), prop::collection::vec(any::<u8>(), 0..200)),
                0..16,
            ),
            cut_fraction in 0.0f64..=1.0,
        ) {
            let dir = tempfile::tempdir().unwrap();
            let mut w = SegmentWriter::create(&StdFs, dir.path(), 7).unwrap();
            let ptrs: Vec<ValuePointer> =
                entries.iter().map(|(k, v)| w.append(k, v, Compression::None).unwrap()).collect();
            w.sync().unwrap();
            let full = std::fs::read(w.path()).unwrap();
            let cut = SEGMENT_HEADER_LEN
                + ((full.len() - SEGMENT_HEADER_LEN) as f64 * cut_fraction) as usize;
            std::fs::write(w.path(), &full[..cut]).unwrap();
            let fits = |p: &ValuePointer, k: &[u8]| {
                p.offset as usize + ENTRY_HEADER_LEN + k.len() + p.len as usize <= cut
            };
            for mode in MODES {
                let r = open(dir.path(), mode);
                let scanned = collect(&r).unwrap();
                let expected: Vec<SegmentEntry> = ptrs
                    .iter()
                    .zip(&entries)
                    .filter(|(p, (k, _))| fits(p, k))
                    .map(|(p, (k, v))| (*p, k.clone(), v.clone()))
                    .collect();
                prop_assert_eq!(&scanned, &expected);
                for (p, (k, v)) in ptrs.iter().zip(&entries) {
                    match r.read(p, Some(k)) {
                        Ok(got) => prop_assert!(fits(p, k) && &got == v),
                        Err(e) => prop_assert!(!fits(p, k) && e.is_corruption()),
                    }
                }
            }
        }
    }
}

/// A compressible value of about `len` bytes.
fn compressible(i: usize, len: usize) -> Vec<u8> {
    format!("value {i} ").repeat(len / 8 + 1).into_bytes()
}

/// Values written compressed come back as written through every read path (single reads,
/// batch reads, the scan GC uses); their pointers record the stored (smaller) length; an
/// incompressible value is stored raw.
#[test]
fn compressed_values_round_trip_through_every_read_path() {
    for compression in [Compression::Lz4, Compression::Zstd(3)] {
        let dir = tempfile::tempdir().unwrap();
        let mut w = SegmentWriter::create(&StdFs, dir.path(), 7).unwrap();
        let mut written = Vec::new();
        for i in 0..40 {
            let key = format!("k{i:03}").into_bytes();
            let value = if i % 5 == 4 { entry(i).1 } else { compressible(i, 300 + i * 37) };
            let ptr = w.append(&key, &value, compression).unwrap();
            if i % 5 != 4 {
                assert!((ptr.len as usize) < value.len() / 2, "{compression}: stored {}", ptr.len);
            }
            written.push((ptr, key, value));
        }
        w.sync().unwrap();
        for mode in MODES {
            let r = open(dir.path(), mode);
            for (ptr, key, value) in &written {
                assert_eq!(&r.read(ptr, Some(key)).unwrap(), value);
                assert_eq!(&r.read(ptr, None).unwrap(), value);
            }
            let requests: Vec<ValueRequest<'_>> = written
                .iter()
                .enumerate()
                .map(|(slot, (ptr, key, _))| ValueRequest { slot, ptr: *ptr, key })
                .collect();
            let mut got = vec![Vec::new(); written.len()];
            r.read_values(&requests, &mut |slot, v, _| got[slot] = v.to_vec()).unwrap();
            for ((_, _, value), g) in written.iter().zip(&got) {
                assert_eq!(value, g);
            }
            let scanned = collect(&r).unwrap();
            assert_eq!(scanned, written, "{compression} {mode:?}");
        }
    }
}

/// A compressed value that passes its checksum but does not decompress (a writer bug, or
/// damage that kept the CRC) is `Corruption` naming the segment and the entry's offset, on
/// every read path — never a panic or a short value.
#[test]
fn a_compressed_value_that_does_not_decompress_is_corruption() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = SegmentWriter::create(&StdFs, dir.path(), 7).unwrap();
    let good = w.append(b"a", &compressible(1, 500), Compression::Lz4).unwrap();
    w.sync().unwrap();
    let offset = w.len();
    drop(w);
    // A hand-made entry: codec LZ4, raw length 1000, bytes that are no LZ4 block, good CRC.
    let key = b"bad";
    let mut stored = 1000u32.to_le_bytes().to_vec();
    stored.extend_from_slice(&[0xff; 40]);
    let mut header = [0u8; ENTRY_HEADER_LEN];
    header[4..8].copy_from_slice(&(key.len() as u32 | 1 << 24).to_le_bytes());
    header[8..12].copy_from_slice(&(stored.len() as u32).to_le_bytes());
    let crc = crc_parts(&[&header[4..], key, &stored]);
    header[..4].copy_from_slice(&crc.to_le_bytes());
    let mut bytes = std::fs::read(segment_path(dir.path())).unwrap();
    bytes.extend_from_slice(&header);
    bytes.extend_from_slice(key);
    bytes.extend_from_slice(&stored);
    std::fs::write(segment_path(dir.path()), &bytes).unwrap();
    let bad = ValuePointer { segment: 7, offset, len: stored.len() as u32 };
    for mode in MODES {
        let r = open(dir.path(), mode);
        assert_eq!(r.read(&good, Some(b"a")).unwrap(), compressible(1, 500));
        for expected in [Some(&key[..]), None] {
            match r.read(&bad, expected).unwrap_err() {
                Error::Corruption { file, offset: at, .. } => {
                    assert_eq!(file, segment_path(dir.path()));
                    assert_eq!(at, offset);
                }
                other => panic!("{mode:?}: {other}"),
            }
        }
        let scanned: Vec<_> = r.entries().collect();
        assert_eq!(scanned.len(), 2);
        assert!(scanned[1].as_ref().unwrap_err().is_corruption());
    }
}

/// `clean_end` agrees with the scan GC uses: a segment is a clean chain exactly when
/// `entries` yields every entry without an error and the last one ends at the end of the
/// file — for cuts anywhere (inside headers, keys and values of entries larger than the
/// 1 MiB read chunk) and for damage, under every read mode.
#[test]
fn clean_end_agrees_with_the_entry_scan() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = SegmentWriter::create(&StdFs, dir.path(), 7).unwrap();
    let mut ends = vec![SEGMENT_HEADER_LEN as u64];
    for i in 0..24usize {
        let len = match i {
            3 => (1 << 20) + 333,
            11 => 3 << 20,
            _ => (i * 97) % 5000,
        };
        let value: Vec<u8> = (0..len).map(|j| (i * 7 + j) as u8).collect();
        // Large values stored raw, so entries cross the 1 MiB read chunks.
        let codec = if len > 5000 { Compression::None } else { Compression::Lz4 };
        w.append(format!("key-{i}").as_bytes(), &value, codec)
            .unwrap();
        ends.push(w.len());
    }
    w.sync().unwrap();
    let full = std::fs::read(w.path()).unwrap();
    assert!(ends.windows(2).any(|w| w[1] - w[0] > 3 << 20));
    let path = segment_path(dir.path());
    let scan_is_clean = |r: &SegmentReader, len: u64| {
        let entries = collect(r);
        entries.is_ok_and(|e| e.last().map_or(SEGMENT_HEADER_LEN as u64, |(p, k, _)| {
            p.offset + ENTRY_HEADER_LEN as u64 + k.len() as u64 + u64::from(p.len)
        }) == len)
    };
    let mut cuts: Vec<u64> = ends.clone();
    cuts.extend(ends.windows(2).flat_map(|w| [w[0] + 5, w[0] + 14, (w[0] + w[1]) / 2, w[1] - 1]));
    cuts.push(10);
    for (n, cut) in cuts.into_iter().enumerate() {
        std::fs::write(&path, &full[..cut as usize]).unwrap();
        let mode = MODES[n % MODES.len()];
        let Ok(r) = SegmentReader::open(&StdFs, dir.path(), 7, mode) else {
            assert!(cut < SEGMENT_HEADER_LEN as u64);
            continue;
        };
        let clean = r.clean_end().unwrap();
        let boundary = ends.contains(&cut);
        assert_eq!(clean, boundary.then_some(cut), "cut at {cut} ({mode:?})");
        assert_eq!(scan_is_clean(&r, cut), boundary, "cut at {cut}");
    }
    // Damage: a flipped bit in the middle, zeros after the end, a zeroed header before more.
    let mid = ends[15] as usize + 20;
    let mut flipped = full.clone();
    flipped[mid] ^= 0x10;
    let mut zeros = full.clone();
    zeros.extend_from_slice(&[0; 64]);
    let mut hole = full.clone();
    hole[ends[20] as usize..ends[20] as usize + 12].fill(0);
    for (what, bytes) in [("flip", flipped), ("zeros", zeros), ("hole", hole)] {
        std::fs::write(&path, &bytes).unwrap();
        for mode in MODES {
            let r = open(dir.path(), mode);
            assert_eq!(r.clean_end().unwrap(), None, "{what} ({mode:?})");
        }
    }
}

/// Values copied as stored (what compaction relocation does) read back exactly, compressed
/// or not, keep their stored length, and are checked against the key like any read.
#[test]
fn stored_values_copy_between_segments_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let mut src = SegmentWriter::create(&StdFs, dir.path(), 3).unwrap();
    let compressible = vec![b'z'; 600];
    let entries: Vec<(Vec<u8>, Vec<u8>, Compression)> = vec![
        (b"raw".to_vec(), entry(5).1, Compression::None),
        (b"lz4".to_vec(), compressible.clone(), Compression::Lz4),
        (b"zstd".to_vec(), compressible, Compression::Zstd(3)),
        (Vec::new(), Vec::new(), Compression::None),
    ];
    let ptrs: Vec<ValuePointer> = entries
        .iter()
        .map(|(k, v, c)| src.append(k, v, *c).unwrap())
        .collect();
    src.sync().unwrap();
    for mode in MODES {
        let reader = SegmentReader::open(&StdFs, dir.path(), 3, mode).unwrap();
        let mut dst = SegmentWriter::create(&StdFs, dir.path(), 4).unwrap();
        let mut copied = Vec::new();
        for ((k, v, c), p) in entries.iter().zip(&ptrs) {
            let stored = reader.read_stored(p, k).unwrap();
            assert_eq!(stored.codec == CODEC_NONE, *c == Compression::None || v.is_empty());
            let q = dst.append_stored(k, &stored).unwrap();
            assert_eq!(q.len, p.len, "{mode:?}");
            copied.push(q);
        }
        dst.sync().unwrap();
        let copy = SegmentReader::open(&StdFs, dir.path(), 4, mode).unwrap();
        for ((k, v, _), q) in entries.iter().zip(&copied) {
            assert_eq!(copy.read(q, Some(k)).unwrap(), *v, "{mode:?}");
        }
        assert_eq!(collect(&copy).unwrap().len(), entries.len());
        // The key is checked, and a pointer into another segment refused.
        assert!(matches!(
            reader.read_stored(&ptrs[0], b"other"),
            Err(Error::Corruption { .. })
        ));
        assert!(matches!(
            copy.read_stored(&ptrs[0], b"raw"),
            Err(Error::InvalidArgument(_))
        ));
    }
}
