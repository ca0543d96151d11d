//! Behaviour tests of the SSTable builder and reader: round trips in both read modes, MVCC
//! lookups, positions and iteration, the bloom filter, and corruption of every section.

use super::builder::TableSummary;
use super::*;
use crate::compression::Compression;
use crate::error::Error;
use crate::fs::{FileSystem, ReadMode, StdFs};
use crate::key::{ValueKind, MAX_SEQNO};
use crate::vlog::ValuePointer;
use proptest::prelude::*;
use std::path::{Path, PathBuf};
use std::sync::Arc;

const MODES: [ReadMode; 2] = [ReadMode::Mmap, ReadMode::Pread];

fn entry(key: &[u8], seqno: u64, kind: ValueKind, value: &[u8]) -> Entry {
    Entry {
        user_key: key.to_vec(),
        seqno,
        kind,
        value: value.to_vec(),
    }
}

fn opts(block_records: usize, bloom_bits_per_key: u32) -> BuilderOptions {
    BuilderOptions {
        block_records,
        bloom_bits_per_key,
        model: None,
        model_budget: None,
        ..BuilderOptions::default()
    }
}

/// Every entry a cursor yields from where it is positioned, as owned entries; the first
/// error ends the walk (and is the last item).
fn walk(c: &mut TableCursor) -> Vec<Result<Entry, Error>> {
    let mut out = Vec::new();
    while c.valid() {
        out.push(Ok(Entry {
            user_key: c.key().to_vec(),
            seqno: c.trailer() >> 8,
            kind: c.kind(),
            value: c.value().to_vec(),
        }));
        if let Err(e) = c.advance() {
            out.push(Err(e));
            break;
        }
    }
    out
}

/// All entries of `t` in one direction (`Err` items end the walk).
pub(super) fn cursor_entries(t: &Arc<Table>, forward: bool) -> Vec<Result<Entry, Error>> {
    let mut c = TableCursor::new(t.clone(), forward);
    match c.seek_to_first() {
        Ok(()) => walk(&mut c),
        Err(e) => vec![Err(e)],
    }
}

/// Writes `entries` to a table at `path`; with `stream` set, streaming after a sample of
/// `stream.0` entries with the hints `stream.1`.
fn write_table_streamed(
    path: &Path,
    entries: &[Entry],
    opts: BuilderOptions,
    stream: Option<(usize, LayoutHints)>,
) -> TableSummary {
    let file = StdFs.create(path).unwrap();
    let mut b = match stream {
        Some((sample, hints)) => {
            Builder::with_hints(file, path.to_path_buf(), opts, hints).with_sample_entries(sample)
        }
        None => Builder::new(file, path.to_path_buf(), opts),
    };
    for e in entries {
        b.add(&e.user_key, e.seqno, e.kind, &e.value).unwrap();
    }
    assert_eq!(b.entries(), entries.len() as u64);
    b.finish().unwrap()
}

/// The hints a flush would give for `entries` (exact bounds).
pub(super) fn exact_hints(entries: &[Entry]) -> LayoutHints {
    let values = ValueHints {
        max_inline_len: entries
            .iter()
            .filter(|e| e.kind == ValueKind::Value)
            .map(|e| e.value.len() as u32)
            .max(),
        pointers: entries.iter().any(|e| e.kind == ValueKind::Pointer),
    };
    LayoutHints {
        max_user_key: entries.last().map(|e| e.user_key.clone()),
        key_len: entries
            .iter()
            .map(|e| e.user_key.len())
            .min()
            .zip(entries.iter().map(|e| e.user_key.len()).max()),
        seqnos: entries
            .iter()
            .map(|e| e.seqno)
            .min()
            .zip(entries.iter().map(|e| e.seqno).max()),
        values: Some(values),
    }
}

fn open(path: &Path, mode: ReadMode) -> Result<Table, Error> {
    Table::open(&StdFs, path, 7, mode)
}

/// Keys `k000`, `k002`, … (even numbers only, so odd ones are absent) with a mix of kinds.
fn mixed_entries(n: u64) -> Vec<Entry> {
    (0..n)
        .map(|i| {
            let key = format!("k{:03}", 2 * i).into_bytes();
            match i % 5 {
                0 => entry(&key, 100 + i, ValueKind::Delete, b""),
                1 => {
                    let p = ValuePointer {
                        segment: i,
                        offset: i * 1000,
                        len: 4096,
                    };
                    entry(&key, 100 + i, ValueKind::Pointer, &p.encode())
                }
                _ => entry(
                    &key,
                    100 + i,
                    ValueKind::Value,
                    &vec![i as u8; i as usize % 37],
                ),
            }
        })
        .collect()
}

struct Fixture {
    _dir: tempfile::TempDir,
    path: PathBuf,
    entries: Vec<Entry>,
}

fn fixture(entries: Vec<Entry>, opts: BuilderOptions) -> Fixture {
    fixture_streamed(entries, opts, None)
}

fn fixture_streamed(
    entries: Vec<Entry>,
    opts: BuilderOptions,
    stream: Option<(usize, LayoutHints)>,
) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("000001.sst");
    let summary = write_table_streamed(&path, &entries, opts, stream);
    assert_eq!(summary.file_size, std::fs::metadata(&path).unwrap().len());
    assert_eq!(summary.entries, entries.len() as u64);
    Fixture {
        _dir: dir,
        path,
        entries,
    }
}

#[test]
fn table_is_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<Table>();
    check::<TableCursor>();
}

#[test]
fn get_present_and_absent_in_both_modes() {
    let f = fixture(mixed_entries(200), opts(16, 10));
    for mode in MODES {
        let t = open(&f.path, mode).unwrap();
        assert_eq!(t.entries(), 200);
        assert_eq!(t.file_id(), 7);
        assert_eq!(t.path(), f.path);
        assert_eq!(t.properties().blocks, 13);
        assert_eq!(t.smallest().user_key, b"k000");
        assert_eq!(t.largest().user_key, b"k398");
        for e in &f.entries {
            assert_eq!(t.get(&e.user_key, MAX_SEQNO).unwrap().as_ref(), Some(e));
            assert_eq!(t.get(&e.user_key, u64::MAX).unwrap().as_ref(), Some(e));
            assert!(t.may_contain(&e.user_key));
            // Older than the only version: invisible.
            assert_eq!(t.get(&e.user_key, e.seqno - 1).unwrap(), None);
        }
        for i in 0..200 {
            let absent = format!("k{:03}", 2 * i + 1).into_bytes();
            assert_eq!(t.get(&absent, MAX_SEQNO).unwrap(), None);
        }
        for absent in [&b""[..], b"a", b"k", b"k0", b"z", b"k3990"] {
            assert_eq!(t.get(absent, MAX_SEQNO).unwrap(), None);
        }
        t.verify().unwrap();
        let p = t.properties();
        assert_eq!((p.deletes, p.pointers, p.inline_values), (40, 40, 120));
        assert_eq!(p.key_width, 4);
        assert_eq!(p.common_prefix_len, 1);
        assert_eq!(p.pointer_value_bytes, 40 * 4096);
        assert!(t.index_size_bytes() > 0);
    }
}

#[test]
fn versions_are_visible_by_snapshot() {
    let p = ValuePointer {
        segment: 1,
        offset: 2,
        len: 3,
    };
    let entries = vec![
        entry(b"a", 1, ValueKind::Value, b"a1"),
        entry(b"b", 9, ValueKind::Value, b"v9"),
        entry(b"b", 7, ValueKind::Delete, b""),
        entry(b"b", 5, ValueKind::Value, b"v5"),
        entry(b"b", 3, ValueKind::Pointer, &p.encode()),
        entry(b"c", 2, ValueKind::Value, b"c2"),
    ];
    // Two slots per block so the versions of "b" span blocks.
    let f = fixture(entries.clone(), opts(2, 10));
    for mode in MODES {
        let t = open(&f.path, mode).unwrap();
        let at = |snap| t.get(b"b", snap).unwrap();
        assert_eq!(at(u64::MAX).as_ref(), Some(&entries[1]));
        assert_eq!(at(9).as_ref(), Some(&entries[1]));
        assert_eq!(at(8).as_ref(), Some(&entries[2]));
        assert_eq!(at(7).as_ref(), Some(&entries[2]));
        assert_eq!(at(6).as_ref(), Some(&entries[3]));
        assert_eq!(at(5).as_ref(), Some(&entries[3]));
        assert_eq!(at(4).as_ref(), Some(&entries[4]));
        let ptr = at(3).unwrap();
        assert_eq!(ValuePointer::decode(&ptr.value), Some(p));
        assert_eq!(at(2), None);
        assert_eq!(t.get(b"c", 1).unwrap(), None);
        assert_eq!(t.get(b"c", 2).unwrap().as_ref(), Some(&entries[5]));
    }
}

#[test]
fn varying_key_lengths_empty_key_and_single_entry() {
    let long = vec![b'x'; 300];
    let entries = vec![
        entry(b"", 4, ValueKind::Value, b"empty-key"),
        entry(b"", 2, ValueKind::Delete, b""),
        entry(b"\0", 1, ValueKind::Value, b"nul"),
        entry(b"\0\0", 1, ValueKind::Value, b""),
        entry(b"a", 1, ValueKind::Value, b"short"),
        entry(&long, 1, ValueKind::Value, b"long"),
        entry(b"y", 1, ValueKind::Value, &[9; 5000]),
    ];
    let f = fixture(entries.clone(), opts(3, 10));
    for mode in MODES {
        let t = open(&f.path, mode).unwrap();
        assert_eq!(t.properties().key_width, 300);
        assert_eq!(t.properties().common_prefix_len, 0);
        for e in entries.iter().filter(|e| e.seqno != 2) {
            assert_eq!(t.get(&e.user_key, MAX_SEQNO).unwrap().as_ref(), Some(e));
        }
        assert_eq!(t.get(b"", 3).unwrap().as_ref(), Some(&entries[1]));
        assert_eq!(t.get(b"", 1).unwrap(), None);
        // Padding must not make "\0" match "" or "\0\0".
        assert_eq!(t.get(b"\0\0\0", MAX_SEQNO).unwrap(), None);
        assert_eq!(t.get(&long[..299], MAX_SEQNO).unwrap(), None);
        let all: Vec<Entry> = cursor_entries(&Arc::new(t), true)
            .into_iter()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(all, entries);
    }

    for e in [
        entry(b"", 1, ValueKind::Delete, b""),
        entry(b"only", 1, ValueKind::Value, b"v"),
    ] {
        let f = fixture(vec![e.clone()], opts(64, 10));
        for mode in MODES {
            let t = open(&f.path, mode).unwrap();
            assert_eq!(t.entries(), 1);
            assert_eq!(t.get(&e.user_key, 1).unwrap().as_ref(), Some(&e));
            assert_eq!(t.get(b"zz", 1).unwrap(), None);
            assert_eq!(t.entry_at(0).unwrap(), e);
            assert_eq!(t.lower_bound(&e.user_key, 1).unwrap(), 0);
            assert_eq!(t.lower_bound(&e.user_key, 0).unwrap(), 1);
            t.verify().unwrap();
        }
    }
}

#[test]
fn entry_at_and_lower_bound() {
    let mut entries = Vec::new();
    for k in 0..40u64 {
        for s in (1..=3).rev() {
            entries.push(entry(
                &(k * 10).to_be_bytes(),
                k * 10 + s,
                ValueKind::Value,
                b"v",
            ));
        }
    }
    let f = fixture(entries.clone(), opts(7, 0));
    for mode in MODES {
        let t = open(&f.path, mode).unwrap();
        assert!(t.may_contain(b"anything"), "no filter: always maybe");
        for (i, e) in entries.iter().enumerate() {
            assert_eq!(&t.entry_at(i as u64).unwrap(), e);
            assert_eq!(t.lower_bound(&e.user_key, e.seqno).unwrap(), i as u64);
        }
        assert!(matches!(t.entry_at(120), Err(Error::InvalidArgument(_))));
        for k in 0..40u64 {
            let key = (k * 10).to_be_bytes();
            let first = 3 * k;
            assert_eq!(t.lower_bound(&key, u64::MAX).unwrap(), first);
            assert_eq!(t.lower_bound(&key, k * 10 + 2).unwrap(), first + 1);
            assert_eq!(t.lower_bound(&key, k * 10).unwrap(), first + 3);
            assert_eq!(
                t.lower_bound(&(k * 10 + 5).to_be_bytes(), 0).unwrap(),
                first + 3
            );
        }
        assert_eq!(t.lower_bound(&[0], 0).unwrap(), 0);
        assert_eq!(t.lower_bound(&[0xff; 9], 0).unwrap(), 120);
    }
}

#[test]
fn iterator_forward_backward_and_mixed() {
    let f = fixture(mixed_entries(50), opts(4, 10));
    for mode in MODES {
        let t = Arc::new(open(&f.path, mode).unwrap());
        let all = |forward| -> Vec<Entry> {
            cursor_entries(&t, forward)
                .into_iter()
                .map(Result::unwrap)
                .collect()
        };
        assert_eq!(all(true), f.entries);
        let mut bwd = all(false);
        bwd.reverse();
        assert_eq!(bwd, f.entries);
        // Seeks land on the lower bound (forward) or just below it (backward), through
        // every position, and stepping from there covers the rest in order.
        for (i, e) in f.entries.iter().enumerate() {
            let trailer = crate::key::pack_trailer(e.seqno, e.kind);
            let mut c = TableCursor::new(t.clone(), true);
            c.seek(&e.user_key, trailer).unwrap();
            let rest: Vec<Entry> = walk(&mut c).into_iter().map(Result::unwrap).collect();
            assert_eq!(rest, f.entries[i..]);
            let mut c = TableCursor::new(t.clone(), false);
            c.seek(&e.user_key, trailer).unwrap();
            let mut below: Vec<Entry> = walk(&mut c).into_iter().map(Result::unwrap).collect();
            below.reverse();
            assert_eq!(below, f.entries[..i]);
        }
        let mut c = TableCursor::new(t.clone(), true);
        c.seek_to_position(48).unwrap();
        assert_eq!(walk(&mut c).len(), 2);
        c.seek_to_position(50).unwrap();
        assert!(!c.valid());
        let mut c = TableCursor::new(t.clone(), false);
        c.seek_to_position(2).unwrap();
        assert_eq!(walk(&mut c).len(), 3);
    }
}

#[test]
fn bloom_false_positive_rate_roughly_matches_bits_per_key() {
    let entries: Vec<Entry> = (0..5000u64)
        .map(|i| entry(&(2 * i).to_be_bytes(), 1, ValueKind::Delete, b""))
        .collect();
    let f = fixture(entries, opts(64, 10));
    let t = open(&f.path, ReadMode::Mmap).unwrap();
    let probes = 20_000u64;
    let fp = (0..probes)
        .filter(|i| t.may_contain(&(2 * i + 1).to_be_bytes()))
        .count();
    let rate = fp as f64 / probes as f64;
    // Theory for 10 bits/key, 7 probes: about 0.8%.
    assert!((0.002..0.02).contains(&rate), "false-positive rate {rate}");
}

#[test]
fn out_of_order_add_is_invalid_argument() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.sst");
    let mut b = Builder::new(StdFs.create(&path).unwrap(), path, opts(4, 10));
    b.add(b"m", 5, ValueKind::Value, b"v").unwrap();
    for (k, s) in [(&b"a"[..], 1), (b"m", 5), (b"m", 6)] {
        assert!(matches!(
            b.add(k, s, ValueKind::Value, b"v"),
            Err(Error::InvalidArgument(_))
        ));
    }
    b.add(b"m", 4, ValueKind::Value, b"v").unwrap();
    b.add(b"n", 9, ValueKind::Value, b"v").unwrap();
    assert_eq!(b.finish().unwrap().entries, 3);
}

/// After damage, every read either fails with `Corruption` or returns the right entry.
fn assert_detected_or_correct(path: &Path, entries: &[Entry], open_must_fail: bool) {
    for mode in MODES {
        let t = match open(path, mode) {
            Err(e) => {
                assert!(e.is_corruption(), "{mode:?}: {e}");
                continue;
            }
            Ok(_) if open_must_fail => panic!("{mode:?}: open accepted a damaged small section"),
            Ok(t) => Arc::new(t),
        };
        let err = t.verify().expect_err("verify must notice the damage");
        assert!(err.is_corruption(), "{err}");
        let mut errors = 0;
        for (i, e) in entries.iter().enumerate() {
            match t.get(&e.user_key, MAX_SEQNO) {
                Ok(got) => assert_eq!(got.as_ref(), Some(e)),
                Err(err) => {
                    assert!(err.is_corruption(), "{err}");
                    errors += 1;
                }
            }
            match t.entry_at(i as u64) {
                Ok(got) => assert_eq!(&got, e),
                Err(err) => assert!(err.is_corruption(), "{err}"),
            }
        }
        for (got, want) in cursor_entries(&t, true).into_iter().zip(entries) {
            match got {
                Ok(got) => assert_eq!(&got, want),
                Err(err) => assert!(err.is_corruption(), "{err}"),
            }
        }
        assert!(errors > 0, "{mode:?}: no read noticed the damage");
    }
}

#[test]
fn bit_flip_in_every_section_is_detected() {
    let f = fixture(mixed_entries(60), opts(8, 10));
    let good = std::fs::read(&f.path).unwrap();
    let t = open(&f.path, ReadMode::Pread).unwrap();
    let footer = *t.footer();
    // Format 3 keeps each value chunk after its block, inside the data section.
    let meta = t.block_meta(0).unwrap();
    let first_chunk = Section {
        offset: t.value_chunk_offset(&meta),
        len: meta.values_end - meta.values_start,
        crc: 0,
    };
    let damaged = f.path.with_extension("bad");
    let footer_start = good.len() - FOOTER_LEN;
    let cases: [(&str, Section, bool); 5] = [
        ("data", footer.data, false),
        ("values", first_chunk, false),
        ("filter", footer.filter, true),
        ("index", footer.index, true),
        ("properties", footer.properties, true),
    ];
    for (name, s, open_must_fail) in cases {
        assert!(s.len > 0, "{name} is empty");
        for rel in [0, s.len / 2, s.len - 1] {
            let mut bytes = good.clone();
            bytes[(s.offset + rel) as usize] ^= 0x10;
            std::fs::write(&damaged, &bytes).unwrap();
            assert_detected_or_correct(&damaged, &f.entries, open_must_fail);
        }
    }
    // Footer: every byte outside the version field (which reads as another version).
    for at in
        (footer_start..good.len()).filter(|&i| !(good.len() - 12..good.len() - 8).contains(&i))
    {
        let mut bytes = good.clone();
        bytes[at] ^= 0x01;
        std::fs::write(&damaged, &bytes).unwrap();
        for mode in MODES {
            let err = open(&damaged, mode).unwrap_err();
            assert!(err.is_corruption(), "footer byte {at}: {err}");
        }
    }
}

/// Entries whose inline values compress well, so every block's value chunk is stored
/// compressed.
fn compressible_entries(n: u64) -> Vec<Entry> {
    (0..n)
        .map(|i| {
            let value = format!("value {i:04} ").repeat(1 + (i % 5) as usize).into_bytes();
            entry(format!("key{i:05}").as_bytes(), 1000 - i, ValueKind::Value, &value)
        })
        .collect()
}

/// A damaged compressed value chunk is `Corruption` naming the file and the chunk's offset
/// (the checksum covers the stored bytes), for every codec and read mode; the rest of the
/// table stays readable.
#[test]
fn damaged_compressed_chunks_are_corruption_naming_file_and_offset() {
    for compression in [Compression::Lz4, Compression::Zstd(3)] {
        let f = fixture(compressible_entries(64), BuilderOptions { compression, ..opts(16, 10) });
        let t = open(&f.path, ReadMode::Pread).unwrap();
        let chunk_at = t.value_chunk_offset(&t.block_meta(0).unwrap());
        assert!(
            t.stored_value_bytes() < t.properties().raw_value_bytes / 2,
            "{compression}: chunks are compressed"
        );
        t.verify().unwrap();
        let good = std::fs::read(&f.path).unwrap();
        let damaged = f.path.with_extension("bad");
        let mut bytes = good.clone();
        bytes[chunk_at as usize + 1] ^= 0x20;
        std::fs::write(&damaged, &bytes).unwrap();
        for mode in MODES {
            let t = open(&damaged, mode).unwrap();
            let err = t.get(&f.entries[0].user_key, MAX_SEQNO).unwrap_err();
            match &err {
                Error::Corruption { file, offset, .. } => {
                    assert_eq!(file, &damaged, "{err}");
                    assert_eq!(*offset, chunk_at, "{err}");
                }
                other => panic!("{compression} {mode:?}: {other}"),
            }
            // Block 1 has a chunk of its own.
            assert_eq!(t.get(&f.entries[20].user_key, MAX_SEQNO).unwrap().as_ref(), Some(&f.entries[20]));
            assert!(t.verify().unwrap_err().is_corruption());
        }
        assert_detected_or_correct(&damaged, &f.entries, false);
    }
}

#[test]
fn pread_mode_verifies_every_block_read() {
    let f = fixture(mixed_entries(40), opts(8, 10));
    let t = open(&f.path, ReadMode::Pread).unwrap();
    let key = &f.entries[0].user_key;
    assert!(t.get(key, MAX_SEQNO).unwrap().is_some());
    // Damage block 0 in place after it was read once: the next read must notice.
    let mut bytes = std::fs::read(&f.path).unwrap();
    bytes[3] ^= 0x40;
    std::fs::write(&f.path, &bytes).unwrap();
    assert!(t.get(key, MAX_SEQNO).unwrap_err().is_corruption());
    assert!(t.entry_at(1).unwrap_err().is_corruption());
    // Other blocks are still readable.
    assert_eq!(t.entry_at(8).unwrap(), f.entries[8]);
}

#[test]
fn truncation_is_corruption() {
    let f = fixture(mixed_entries(30), opts(8, 10));
    let good = std::fs::read(&f.path).unwrap();
    let damaged = f.path.with_extension("short");
    let n = good.len();
    for len in [
        0,
        1,
        FOOTER_LEN - 1,
        FOOTER_LEN,
        n / 3,
        n / 2,
        n - FOOTER_LEN,
        n - 1,
    ] {
        std::fs::write(&damaged, &good[..len]).unwrap();
        for mode in MODES {
            let err = open(&damaged, mode).unwrap_err();
            match err {
                Error::Corruption { ref file, .. } => assert_eq!(file, &damaged),
                other => panic!("truncated to {len}: {other}"),
            }
        }
    }
    // Appended garbage moves the footer: also rejected.
    let mut long = good.clone();
    long.extend_from_slice(&[0u8; 7]);
    std::fs::write(&damaged, &long).unwrap();
    assert!(open(&damaged, ReadMode::Mmap).unwrap_err().is_corruption());
}

#[test]
fn the_longest_inline_value_comes_from_the_properties_or_a_search() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("long.sst");
    // Values of 1..=120 bytes, the longest (300) in the middle; a delete and a pointer too.
    let mut entries: Vec<Entry> = (0..200u64)
        .map(|i| {
            let len = if i == 97 { 300 } else { 1 + (i * 7) % 120 };
            entry(format!("k{i:04}").as_bytes(), 10 + i, ValueKind::Value, &vec![b'v'; len as usize])
        })
        .collect();
    entries[5].kind = ValueKind::Delete;
    entries[5].value.clear();
    write_table_streamed(&path, &entries, opts(8, 0), None);
    for mode in MODES {
        let mut t = open(&path, mode).unwrap();
        assert_eq!(t.properties().max_inline_value_len, Some(300));
        assert_eq!(t.longest_inline_value(100).unwrap(), 300, "exact, whatever the cap");
        t.forget_max_inline_value_len();
        // Without the property: an upper bound, exact up to the cap.
        let bound = t.longest_inline_value(1000).unwrap();
        assert!((300..=1000).contains(&bound), "bound {bound}");
        assert!(t.longest_inline_value(100).unwrap() > 100);
        assert_eq!(t.longest_inline_value(299).unwrap(), 300);
    }
}

#[test]
fn bad_magic_and_wrong_version() {
    let f = fixture(mixed_entries(10), opts(8, 10));
    let good = std::fs::read(&f.path).unwrap();
    let n = good.len();
    let damaged = f.path.with_extension("other");

    let mut bytes = good.clone();
    bytes[n - 1] ^= 0xff;
    std::fs::write(&damaged, &bytes).unwrap();
    let err = open(&damaged, ReadMode::Mmap).unwrap_err();
    assert!(err.to_string().contains("magic"), "{err}");

    let mut bytes = good.clone();
    bytes[n - 12..n - 8].copy_from_slice(&(FORMAT_VERSION + 1).to_le_bytes());
    std::fs::write(&damaged, &bytes).unwrap();
    for mode in MODES {
        match open(&damaged, mode).unwrap_err() {
            Error::UnsupportedVersion { version, file } => {
                assert_eq!(version, FORMAT_VERSION + 1);
                assert_eq!(file, damaged);
            }
            other => panic!("{other}"),
        }
    }
}

/// A random table: distinct user keys from a small alphabet (so prefixes collide and lengths
/// vary), each with 1–3 versions of random kinds.
/// Directories of path-like keys: long shared prefixes that differ at varying depths, so
/// blocks share more than the file does and store their own prefixes (format 5).
const DIRS: [&[u8]; 5] = [
    b"",
    b"usr/share/doc/libfoo-dev/examples/",
    b"usr/share/doc/libfoo-dev/html/search/",
    b"usr/share/locale/de/LC_MESSAGES/",
    b"usr/share/locale/de/LC_TIME/zz",
];

/// A short key over a small alphabet, or one below a directory of [`DIRS`].
fn arb_key() -> impl Strategy<Value = Vec<u8>> {
    (0usize..DIRS.len(), prop::collection::vec(0u8..3, 0..6)).prop_map(|(dir, tail)| {
        let mut key = DIRS[dir].to_vec();
        key.extend(tail);
        key
    })
}

fn arb_entries() -> impl Strategy<Value = Vec<Entry>> {
    // Values: random bytes, or a random piece repeated (compressible).
    let value = prop_oneof![
        prop::collection::vec(any::<u8>(), 0..12),
        (prop::collection::vec(any::<u8>(), 1..6), 1usize..40).prop_map(|(v, n)| v.repeat(n)),
    ];
    let versions = prop::collection::vec((0u8..3, value), 1..4);
    prop::collection::btree_map(arb_key(), versions, 1..60).prop_map(
        |map| {
            let mut out = Vec::new();
            let mut seqno = 1000u64;
            for (key, versions) in map {
                for (kind, mut value) in versions {
                    seqno -= 1;
                    let kind = match kind {
                        0 => {
                            value.clear();
                            ValueKind::Delete
                        }
                        1 => ValueKind::Value,
                        _ => {
                            value.resize(ValuePointer::ENCODED_LEN, 7);
                            ValueKind::Pointer
                        }
                    };
                    out.push(entry(&key, seqno, kind, &value));
                }
                seqno -= 1;
            }
            out
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn matches_a_sorted_vec_model(
        entries in arb_entries(),
        block_records in 1usize..9,
        bloom in prop::sample::select(vec![0u32, 10]),
        probes in prop::collection::vec((arb_key(), 0u64..1100), 20),
        mmap in any::<bool>(),
        compression in prop::sample::select(vec![
            Compression::None, Compression::Lz4, Compression::Zstd(1)]),
        head_bytes in prop::option::of(0u32..8),
        stream in prop::option::of((1usize..12, any::<bool>())),
    ) {
        // Streamed after a sample of a few entries, with exact hints or none.
        let stream = stream.map(|(sample, hinted)| {
            (sample, if hinted { exact_hints(&entries) } else { LayoutHints::default() })
        });
        let f = fixture_streamed(entries.clone(), BuilderOptions {
            compression,
            head_bytes,
            ..opts(block_records, bloom)
        }, stream);
        let mode = if mmap { ReadMode::Mmap } else { ReadMode::Pread };
        let t = open(&f.path, mode).unwrap();
        let newest_visible = |key: &[u8], snap: u64| {
            entries.iter().find(|e| e.user_key == key && e.seqno <= snap)
        };
        let model_lower_bound = |key: &[u8], snap: u64| {
            entries.partition_point(|e| (&e.user_key[..], std::cmp::Reverse(e.seqno))
                < (key, std::cmp::Reverse(snap)))
        };
        for e in &entries {
            prop_assert_eq!(t.get(&e.user_key, u64::MAX)?,
                newest_visible(&e.user_key, u64::MAX).cloned());
            prop_assert_eq!(t.get(&e.user_key, e.seqno)?, Some(e.clone()));
        }
        for (key, snap) in &probes {
            prop_assert_eq!(t.get(key, *snap)?, newest_visible(key, *snap).cloned());
            prop_assert_eq!(t.lower_bound(key, *snap)?, model_lower_bound(key, *snap) as u64);
        }
        t.verify()?;
        let scanned: Vec<Entry> = cursor_entries(&Arc::new(t), true)
            .into_iter()
            .collect::<Result<_, _>>()?;
        prop_assert_eq!(scanned, entries);
    }
}

/// Path-like keys: files in directories whose names share long prefixes, so a block's keys
/// share much more than the file's keys do.
fn path_entries(n: u64) -> Vec<Entry> {
    let mut keys: Vec<Vec<u8>> = (0..n)
        .map(|i| {
            format!(
                "usr/share/{}/pkg-{:03}/doc/file-{:05}.txt",
                ["doc", "locale", "man/man3"][(i % 3) as usize],
                i / 97,
                i * 7
            )
            .into_bytes()
        })
        .collect();
    keys.sort();
    keys.iter()
        .enumerate()
        .map(|(i, k)| entry(k, 10 + i as u64, ValueKind::Value, &[i as u8; 9]))
        .collect()
}

/// Format 5: blocks of path keys store their shared prefix once. Exact and streamed layouts
/// both choose a head narrower than the keys, every block but the boundaries has a prefix
/// of its own, the file is smaller than with block prefixes off, and every read path
/// (get, lower bound of present and absent keys, both cursor directions, verify) answers as
/// with them off.
#[test]
fn blocks_store_their_shared_prefix_once() {
    let entries = path_entries(3000);
    for stream in [None, Some((700, exact_hints(&entries)))] {
        let with = fixture_streamed(entries.clone(), opts(16, 10), stream.clone());
        let without = fixture_streamed(
            entries.clone(),
            BuilderOptions {
                block_prefixes: false,
                ..opts(16, 10)
            },
            stream.clone(),
        );
        let (t, t0) = (open(&with.path, ReadMode::Mmap).unwrap(), open(&without.path, ReadMode::Mmap).unwrap());
        let blocks = t.properties().blocks;
        let with_prefix = (0..blocks).filter(|&b| t.block_prefix(b).len() > 10).count() as u64;
        assert!(with_prefix * 4 >= blocks * 3, "{with_prefix} of {blocks} blocks");
        assert!((0..blocks).all(|b| t0.block_prefix(b).is_empty()));
        assert!(t.properties().slot.head_bytes < t0.properties().slot.head_bytes);
        let (size, size0) = (
            std::fs::metadata(&with.path).unwrap().len(),
            std::fs::metadata(&without.path).unwrap().len(),
        );
        assert!(size * 4 < size0 * 3, "{size} vs {size0} bytes");
        for (i, e) in entries.iter().enumerate() {
            assert_eq!(t.get(&e.user_key, u64::MAX).unwrap().as_ref(), Some(e));
            assert_eq!(t.lower_bound(&e.user_key, u64::MAX).unwrap(), i as u64);
            // Absent keys: just past this one, and a sibling that shares its directory.
            let mut past = e.user_key.clone();
            past.push(0);
            assert_eq!(t.get(&past, u64::MAX).unwrap(), None);
            assert_eq!(t.lower_bound(&past, u64::MAX).unwrap(), i as u64 + 1);
            let mut sibling = e.user_key.clone();
            sibling.truncate(sibling.len() - 5);
            assert_eq!(
                t.lower_bound(&sibling, u64::MAX).unwrap(),
                t0.lower_bound(&sibling, u64::MAX).unwrap()
            );
        }
        t.verify().unwrap();
        let t = Arc::new(t);
        for forward in [true, false] {
            let scanned: Vec<Entry> = cursor_entries(&t, forward)
                .into_iter()
                .collect::<Result<_, _>>()
                .unwrap();
            let mut expected = entries.clone();
            if !forward {
                expected.reverse();
            }
            assert_eq!(scanned, expected);
        }
    }
}
