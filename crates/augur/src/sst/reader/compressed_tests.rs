//! Format 6's compressed data blocks: tables whose blocks (slots and key suffixes) are stored
//! compressed read back exactly — point lookups through the fence and learned paths, with and
//! without the chunk cache, positions, cursors both ways, `verify` — under every read mode
//! and both codecs; damage to a compressed block or to its recorded raw length is
//! `Corruption` naming the file, never a panic or a wrong answer; tables without compression
//! (or with `compress_keys` off) store every block raw.

use super::Table;
use crate::cache::{CacheBudget, FileReads};
use crate::sst::tests::cursor_entries;
use crate::sst::{block_codec, Builder, BuilderOptions, Entry, TableCursor};
use crate::checksum::crc;
use crate::compression::{Compression, CODEC_NONE};
use crate::error::Error;
use crate::fs::{FileSystem, ReadMode, StdFs};
use crate::index::{IndexConfig, IndexKind};
use crate::key::{ValueKind, MAX_SEQNO};
use crate::sst::format::{FOOTER_LEN, FORMAT_VERSION};
use crate::vlog::ValuePointer;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Every read mode the directory `dir` supports (direct reads need `O_DIRECT`: not tmpfs).
fn modes(dir: &Path) -> Vec<ReadMode> {
    let probe = dir.join("probe");
    std::fs::write(&probe, vec![0u8; 4096]).unwrap();
    let direct = StdFs.open(&probe, ReadMode::Direct).is_ok();
    std::fs::remove_file(&probe).unwrap();
    let mut modes = vec![ReadMode::Mmap, ReadMode::Pread];
    if direct {
        modes.push(ReadMode::Direct);
    }
    modes
}

fn entry(key: &[u8], seqno: u64, kind: ValueKind, value: &[u8]) -> Entry {
    Entry {
        user_key: key.to_vec(),
        seqno,
        kind,
        value: value.to_vec(),
    }
}

/// Path-like keys (a long shared prefix, a varying middle, numbered tails) with every kind
/// of entry: inline values (some empty), value pointers, tombstones, and versions of one key.
fn path_entries(n: u64) -> Vec<Entry> {
    let mut out = Vec::new();
    for i in 0..n {
        let key = format!(
            "/usr/share/{}/lib{}/file-{i:05}.txt",
            ["doc", "locale", "man"][(i / 40) as usize % 3],
            i / 7
        )
        .into_bytes();
        let seqno = 5_000 + 3 * i;
        match i % 6 {
            0 => out.push(entry(&key, seqno, ValueKind::Delete, b"")),
            1 => {
                let p = ValuePointer {
                    segment: i / 50,
                    offset: i * 4096,
                    len: 4000,
                };
                out.push(entry(&key, seqno, ValueKind::Pointer, &p.encode()));
            }
            2 => {
                out.push(entry(&key, seqno + 2, ValueKind::Value, b"newer"));
                out.push(entry(&key, seqno + 1, ValueKind::Delete, b""));
                out.push(entry(&key, seqno, ValueKind::Value, b""));
            }
            _ => {
                let value = format!("value of {i} ").repeat(1 + (i % 4) as usize);
                out.push(entry(&key, seqno, ValueKind::Value, value.as_bytes()));
            }
        }
    }
    out.sort_by(|a, b| a.user_key.cmp(&b.user_key).then(b.seqno.cmp(&a.seqno)));
    out
}

/// Fixed-length keys (no key suffixes: `X = 0`) with inline values.
fn fixed_entries(n: u64) -> Vec<Entry> {
    (0..n)
        .map(|i| {
            let key = format!("user{:08}", i * 13).into_bytes();
            entry(&key, 100 + i, ValueKind::Value, format!("v{i}").as_bytes())
        })
        .collect()
}

fn write(path: &Path, entries: &[Entry], opts: BuilderOptions) {
    let mut b = Builder::new(StdFs.create(path).unwrap(), path.to_path_buf(), opts);
    for e in entries {
        b.add(&e.user_key, e.seqno, e.kind, &e.value).unwrap();
    }
    b.finish().unwrap();
}

fn options(compression: Compression, head_bytes: Option<u32>, block_prefixes: bool) -> BuilderOptions {
    BuilderOptions {
        block_records: 16,
        compression,
        head_bytes,
        block_prefixes,
        ..BuilderOptions::default()
    }
}

/// The table at `path` opened with `mode`; through a chunk cache of `cache_bytes` when not 0.
fn open_with_cache(path: &Path, mode: ReadMode, cache_bytes: u64) -> (Table, FileReads) {
    let reads = if cache_bytes == 0 {
        FileReads::plain(mode)
    } else {
        FileReads::new(mode, CacheBudget::split(mode, cache_bytes, true), None)
    };
    let fs: Arc<dyn FileSystem> = Arc::new(StdFs);
    let t = Table::open_in(&fs, path, 7, &reads, true).unwrap();
    (t, reads)
}

/// Blocks of `t` stored compressed.
fn compressed_blocks(t: &Table) -> u64 {
    (0..t.properties().blocks)
        .filter(|&b| t.block_meta(b).unwrap().block_codec != CODEC_NONE)
        .count() as u64
}

/// Every read path of `t` gives back `entries`.
fn check_reads(t: &Table, entries: &[Entry], what: &str) {
    for (i, e) in entries.iter().enumerate() {
        assert_eq!(&t.entry_at(i as u64).unwrap(), e, "{what}: entry {i}");
        assert_eq!(t.lower_bound(&e.user_key, e.seqno).unwrap(), i as u64, "{what}: {i}");
        let newest = entries.iter().find(|x| x.user_key == e.user_key);
        assert_eq!(t.get(&e.user_key, MAX_SEQNO).unwrap().as_ref(), newest, "{what}: get {i}");
        assert_eq!(t.get(&e.user_key, e.seqno).unwrap().as_ref(), Some(e), "{what}: at {i}");
        let mut absent = e.user_key.clone();
        absent.push(b'!');
        if !entries.iter().any(|x| x.user_key == absent) {
            assert_eq!(t.get(&absent, MAX_SEQNO).unwrap(), None, "{what}: absent {i}");
        }
    }
    for absent in [&b""[..], b"/", b"/usr/share/zzz", b"\xff"] {
        assert_eq!(t.get(absent, MAX_SEQNO).unwrap(), None, "{what}");
    }
    t.verify().unwrap();
}

fn check_cursors(t: Arc<Table>, entries: &[Entry], what: &str) {
    let forward: Vec<Entry> = cursor_entries(&t, true).into_iter().map(Result::unwrap).collect();
    assert_eq!(forward, entries, "{what}: forward");
    let mut backward: Vec<Entry> =
        cursor_entries(&t, false).into_iter().map(Result::unwrap).collect();
    backward.reverse();
    assert_eq!(backward, entries, "{what}: backward");
    for (i, e) in entries.iter().enumerate().step_by(7) {
        let mut c = TableCursor::new(t.clone(), true);
        c.seek(&e.user_key, crate::key::pack_trailer(e.seqno, e.kind)).unwrap();
        assert!(c.valid());
        assert_eq!(c.key(), &e.user_key[..], "{what}: seek {i}");
        assert_eq!(c.value(), &e.value[..], "{what}: seek {i}");
    }
}

#[test]
fn compressed_blocks_read_back_through_every_path() {
    let cases: [(&str, Vec<Entry>, Option<u32>, bool); 4] = [
        ("paths, suffixes, block prefixes", path_entries(300), None, true),
        ("paths, narrow head", path_entries(300), Some(3), true),
        ("paths, no block prefixes", path_entries(300), None, false),
        ("fixed keys, no suffixes", fixed_entries(400), None, true),
    ];
    let dir = tempfile::tempdir().unwrap();
    for (name, entries, head, prefixes) in cases {
        for compression in [Compression::Lz4, Compression::Zstd(3)] {
            let what = format!("{name}, {compression}");
            let path = dir.path().join(format!("{}.sst", what.replace([' ', ',', ':'], "_")));
            write(&path, &entries, options(compression, head, prefixes));
            for mode in modes(dir.path()) {
                for cache_bytes in [0, 4 << 20] {
                    let what = format!("{what}, {mode:?}, cache {cache_bytes}");
                    let (t, reads) = open_with_cache(&path, mode, cache_bytes);
                    assert_eq!(t.footer().version, FORMAT_VERSION);
                    let blocks = t.properties().blocks;
                    assert!(compressed_blocks(&t) * 4 >= blocks * 3, "{what}: most blocks compressed");
                    assert!(t.compressed_blocks);
                    check_reads(&t, &entries, &what);
                    // Twice: the second pass hits the cache.
                    check_reads(&t, &entries, &what);
                    if let Some(s) = reads.stats().chunks {
                        assert!(s.block_hits > 0 && s.block_misses > 0, "{what}: {s:?}");
                        assert!(s.block_misses <= 3 * blocks, "{what}: {s:?}");
                    }
                    let config = IndexConfig {
                        kind: IndexKind::Plr,
                        error_bound: 4,
                        fence_stride: 9,
                        tuning: Default::default(),
                    };
                    let report = t.learn(&config).unwrap();
                    assert!(report.installed && t.has_model(), "{what}");
                    check_reads(&t, &entries, &format!("{what}, learned"));
                    check_cursors(Arc::new(t), &entries, &what);
                }
            }
        }
    }
}

/// A scan's loads of compressed blocks use what the chunk cache holds but insert nothing.
#[test]
fn scans_do_not_fill_the_cache_with_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("scan.sst");
    let entries = path_entries(400);
    write(&path, &entries, options(Compression::Lz4, None, true));
    let (t, reads) = open_with_cache(&path, ReadMode::Mmap, 4 << 20);
    let t = Arc::new(t);
    for forward in [true, false] {
        let all = cursor_entries(&t, forward);
        assert!(all.len() == entries.len() && all.iter().all(Result::is_ok));
    }
    let s = reads.stats().chunks.unwrap();
    assert_eq!((s.inserts, s.chunks, s.block_hits, s.block_misses), (0, 0, 0, 0), "{s:?}");
    // Blocks cached by lookups serve scans too (no count, no reference).
    check_reads(&t, &entries, "lookups");
    let warm = reads.stats().chunks.unwrap();
    assert!(warm.chunks > 0, "{warm:?}");
    for forward in [true, false] {
        assert!(cursor_entries(&t, forward).iter().all(Result::is_ok));
    }
    assert_eq!(reads.stats().chunks.unwrap(), warm);
}

#[test]
fn without_compression_or_with_compress_keys_off_blocks_are_raw() {
    let dir = tempfile::tempdir().unwrap();
    let entries = path_entries(200);
    for (name, opts) in [
        ("none", options(Compression::None, None, true)),
        (
            "lz4, keys off",
            BuilderOptions {
                compress_keys: false,
                ..options(Compression::Lz4, None, true)
            },
        ),
    ] {
        let path = dir.path().join(format!("{}.sst", name.replace([' ', ','], "_")));
        write(&path, &entries, opts);
        let t = Table::open(&StdFs, &path, 7, ReadMode::Mmap).unwrap();
        assert_eq!(compressed_blocks(&t), 0, "{name}");
        assert!(!t.compressed_blocks && t.key_blocks.is_none(), "{name}");
        for b in 0..t.properties().blocks {
            let m = t.block_meta(b).unwrap();
            assert_eq!(m.block_raw_len, m.data_end - m.data_start, "{name}");
        }
        check_reads(&t, &entries, name);
    }
}

/// After damage, every read of the table at `path` (versions of a key included) fails with
/// `Corruption` or returns the right entry, and some read fails.
fn detected_or_correct(path: &Path, entries: &[Entry]) {
    for mode in modes(path.parent().unwrap()) {
        let t = Arc::new(Table::open(&StdFs, path, 7, mode).unwrap());
        assert!(t.verify().unwrap_err().is_corruption());
        let mut errors = 0;
        for (i, e) in entries.iter().enumerate() {
            match t.get(&e.user_key, e.seqno) {
                Ok(got) => assert_eq!(got.as_ref(), Some(e), "{mode:?}"),
                Err(err) => {
                    assert!(err.is_corruption(), "{err}");
                    errors += 1;
                }
            }
            match t.entry_at(i as u64) {
                Ok(got) => assert_eq!(&got, e, "{mode:?}"),
                Err(err) => assert!(err.is_corruption(), "{err}"),
            }
        }
        for (got, want) in cursor_entries(&t, true).into_iter().zip(entries) {
            match got {
                Ok(got) => assert_eq!(&got, want, "{mode:?}"),
                Err(err) => assert!(err.is_corruption(), "{err}"),
            }
        }
        assert!(errors > 0, "{mode:?}: no read noticed the damage");
    }
}

/// Where block 0's fence record ends in the index section (its key is under 128 bytes).
/// Where the first fence record's `block_codec` byte and its `block_raw_len` varint lie in
/// the index section of `good` (format 7's record: the raw length is its last field).
fn first_record_tail(good: &[u8], t: &Table) -> (usize, std::ops::Range<usize>) {
    let footer = t.footer();
    let index = &good[footer.index.offset as usize..][..footer.index.len as usize];
    let mut d = crate::coding::Decoder::new(index);
    d.varint().unwrap(); // shared
    d.length_prefixed().unwrap(); // the key
    d.varint().unwrap(); // trailer
    d.varint().unwrap(); // block_len
    d.u32().unwrap(); // block_crc
    d.varint().unwrap(); // values_len
    d.u32().unwrap(); // values_crc
    d.u8().unwrap(); // codec
    d.varint().unwrap(); // raw_len
    d.varint().unwrap(); // block_prefix_len
    let codec_at = d.position();
    d.u8().unwrap();
    let raw_at = d.position();
    d.varint().unwrap();
    (codec_at, raw_at..d.position())
}

/// Writes `v` into `field` as an LEB128 varint of exactly `field.len()` bytes (padded with
/// continuation bytes), or the largest value that many bytes hold when `v` needs more.
fn put_padded_varint(field: &mut [u8], v: u64) {
    let bits = 7 * field.len() as u32;
    let mut v = v.min((1u64 << bits) - 1);
    let last = field.len() - 1;
    for (i, b) in field.iter_mut().enumerate() {
        *b = (v & 0x7f) as u8 | if i < last { 0x80 } else { 0 };
        v >>= 7;
    }
}

/// A change to an index section.
type IndexEdit = Box<dyn Fn(&mut [u8])>;

/// `good` with `edit` applied to its index section, the index and footer checksums fixed.
fn with_index_edit(good: &[u8], t: &Table, edit: impl FnOnce(&mut [u8])) -> Vec<u8> {
    let mut bytes = good.to_vec();
    let mut footer = *t.footer();
    let (at, len) = (footer.index.offset as usize, footer.index.len as usize);
    edit(&mut bytes[at..at + len]);
    footer.index.crc = crc(&bytes[at..at + len]);
    let n = bytes.len();
    bytes[n - FOOTER_LEN..].copy_from_slice(&footer.encode());
    bytes
}

fn expect_corruption_at(
    r: Result<impl std::fmt::Debug, Error>,
    file: &Path,
    offset: Option<u64>,
    what: &str,
) {
    match r {
        Err(Error::Corruption { file: f, offset: o, .. }) => {
            assert_eq!(f, file, "{what}");
            if let Some(offset) = offset {
                assert_eq!(o, offset, "{what}");
            }
        }
        other => panic!("{what}: expected corruption, got {other:?}"),
    }
}

#[test]
fn damaged_compressed_blocks_are_corruption() {
    let dir = tempfile::tempdir().unwrap();
    let entries = path_entries(200);
    for compression in [Compression::Lz4, Compression::Zstd(3)] {
        let path = dir.path().join(format!("{compression}.sst").replace(':', "_"));
        write(&path, &entries, options(compression, None, true));
        let t = Table::open(&StdFs, &path, 7, ReadMode::Pread).unwrap();
        let meta = t.block_meta(0).unwrap();
        assert_ne!(meta.block_codec, CODEC_NONE, "{compression}");
        let good = std::fs::read(&path).unwrap();
        let damaged: PathBuf = path.with_extension("bad");
        let block_at = meta.data_start;
        let stored = (meta.data_end - meta.data_start) as usize;

        // A bit flip anywhere in the stored block: its checksum, naming the block.
        for rel in [0, stored / 2, stored - 1] {
            let mut bytes = good.clone();
            bytes[block_at as usize + rel] ^= 0x08;
            std::fs::write(&damaged, &bytes).unwrap();
            for mode in modes(dir.path()) {
                let what = format!("{compression} {mode:?}: bit flip at {rel}");
                let (t, _reads) = open_with_cache(&damaged, mode, 1 << 20);
                let first = &entries[0].user_key;
                expect_corruption_at(t.get(first, MAX_SEQNO), &damaged, Some(block_at), &what);
                expect_corruption_at(t.entry_at(0), &damaged, Some(block_at), &what);
                expect_corruption_at(t.verify(), &damaged, None, &what);
            }
            detected_or_correct(&damaged, &entries);
        }

        // The recorded raw length off by one either way, or below the slots; the codec byte
        // changed. Each is refused at open or is a clean `Corruption` on reading the block —
        // but for the packing bit alone (the index's checksum is what guards the codec byte:
        // unpacked the other way the block is garbage, which `verify` reports; reads may
        // return wrong answers, never panic).
        let (codec_at, raw_at) = first_record_tail(&good, &t);
        let raw = meta.block_raw_len as u32;
        let slots = (t.fence.block_positions(0).end * t.layout.slot as u64) as u32;
        let mut edits: Vec<(String, IndexEdit)> = Vec::new();
        for wrong in [raw - 1, raw + 1, slots - 1, u32::MAX] {
            edits.push((
                format!("raw length {wrong}"),
                {
                    let raw_at = raw_at.clone();
                    Box::new(move |index: &mut [u8]| {
                        put_padded_varint(&mut index[raw_at.clone()], u64::from(wrong))
                    })
                },
            ));
        }
        for codec in [0u8, 1, 2, 3, 0x80, 0x81, 0x82, 0x83] {
            if codec != meta.block_codec {
                edits.push((
                    format!("codec {codec:#x}"),
                    Box::new(move |index: &mut [u8]| index[codec_at] = codec),
                ));
            }
        }
        let packing_only = |name: &str| {
            let flipped = meta.block_codec ^ block_codec::KEYS_INLINE;
            name == format!("codec {flipped:#x}")
        };
        for (edit_name, edit) in edits {
            let bytes = with_index_edit(&good, &t, |index| edit(index));
            std::fs::write(&damaged, &bytes).unwrap();
            for mode in modes(dir.path()) {
                let what = format!("{compression} {mode:?}: {edit_name}");
                let reads = FileReads::new(mode, CacheBudget::split(mode, 1 << 20, true), None);
                let fs: Arc<dyn FileSystem> = Arc::new(StdFs);
                match Table::open_in(&fs, &damaged, 7, &reads, true) {
                    Err(e) => expect_corruption_at(Err::<(), _>(e), &damaged, None, &what),
                    Ok(t) if packing_only(&edit_name) => {
                        expect_corruption_at(t.verify(), &damaged, None, &what);
                        let _ = t.get(&entries[0].user_key, MAX_SEQNO);
                        let t = Arc::new(t);
                        let _ = cursor_entries(&t, true);
                        let _ = cursor_entries(&t, false);
                    }
                    Ok(t) => {
                        let first = &entries[0].user_key;
                        let at = Some(block_at);
                        expect_corruption_at(t.get(first, MAX_SEQNO), &damaged, at, &what);
                        expect_corruption_at(t.verify(), &damaged, None, &what);
                        let mut c = TableCursor::new(Arc::new(t), true);
                        expect_corruption_at(c.seek_to_first(), &damaged, at, &what);
                    }
                }
            }
        }
    }
}
