//! Format-2 key slots and value chunks on the read path (`sst/slot.rs`, `sst/reader.rs`,
//! `sst/cursor.rs`, `compression.rs`). The first input byte picks the mode (modulo 2):
//! - 0: structure-aware table: the header `layout bits model seqnos edits`, then entries,
//!   then `3 × (edits % 8)` bytes of damage. `layout` and `bits` are
//!   `sst_sections::options` (block size, value compression none/lz4/zstd:1, slot head width
//!   per file or 0..=9, filter bits); `model` `k + 8 × e` trains index type `k` (1..=7; else
//!   none) with error bound / stride `e % 8 + 1`; `seqnos` spaces the seqnos (so that the
//!   trailer field is 1 to 8 bytes wide). Each entry is a byte `b` (key length `b % 41`,
//!   kind `b / 41 % 3`: value, delete, pointer) and the key; a value entry then has a byte
//!   `v`: length `v % 64`, its bytes copied from the input (× 16 when bit 7 is set), or
//!   (bit 6) up to 4 input bytes repeated (compressible; × 600 with bit 7, so that a block's
//!   value chunk may outgrow the 2-byte reference fields). The engine's builder writes the
//!   table; each damage edit (position u16 LE, modulo the length of the data and value
//!   sections; xor mask) changes a byte of a data block or value chunk, never the footer or
//!   the sections `Table::open` checks.
//! - 1: the slot codec alone (`augur::fuzzing::Slots`): sorted distinct keys encoded as the
//!   slots of one block with a fuzzed layout (head width, length, suffix, trailer and
//!   reference field widths), then decoded and compared with probes; then damaged.
//!
//! Mode 0: the table opens (in both read modes: mapped, and pread through `MemFs`); every
//! `get`, `lower_bound`, `entry_at`, cursor scan (both directions) and cursor seek returns
//! `Ok` or a `Corruption` naming the file, never panics, and whatever it returns is what was
//! written (every byte of the data and value sections is under a block or chunk checksum, so
//! a damaged read errs or returns the original data); without damage every read succeeds
//! and `verify()` passes, with damage `verify()` fails. More precisely, `entry_at(i)` fails
//! exactly when entry `i`'s block (or, for an inline value, its block's value chunk) is
//! damaged, and a scan returns every entry before the first damaged block it enters, then
//! fails.
//! Mode 1: every slot decodes to its key, trailer and reference with zero head padding;
//! every probe (the keys, their neighbours, input slices) compares with every slot as with
//! the key it holds; a damaged block decodes or is rejected without panicking, and what
//! decodes is self-consistent.
#![no_main]

#[path = "common.rs"]
mod common;
#[path = "sst_sections.rs"]
#[allow(dead_code)]
mod sst_sections;

use augur::fs::{FileLock, FileSystem, MemFs, RandomAccessFile, ReadMode, WritableFile};
use augur::fuzzing::{choose_head, choose_head_bounded, Fence, Slots, SAMPLE_VALUE_BYTES};
use augur::index::{IndexConfig, IndexKind, IndexTuning};
use augur::key::{compare, unpack_trailer, ValueKind, MAX_KEY_LEN, MAX_SEQNO};
use augur::sst::{Footer, Properties, SlotParams, Table, TableCursor};
use augur::Error;
use libfuzzer_sys::fuzz_target;
use sst_sections::{file, Entry};
use std::cmp::Ordering;
use std::path::Path;
use std::sync::Arc;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    match mode % 2 {
        0 => table(rest),
        _ => slot_codec(rest),
    }
});

/// Longest key the inputs make (past the 24 bytes of `sst_sections::build_table`, so that
/// keys overflow automatic heads too).
const MAX_KEY: u8 = 40;

// ---------------------------------------------------------------------------------------
// Mode 0: tables.

fn table(input: &[u8]) {
    let Some((&[layout, bits, model, seqnos, edits], rest)) = input.split_first_chunk::<5>() else {
        return;
    };
    let edit_bytes = 3 * usize::from(edits % 8);
    let (body, edits) = rest.split_at(rest.len().saturating_sub(edit_bytes));
    let raw = parse_entries(body);
    if raw.is_empty() {
        return;
    }
    let mut opts = sst_sections::options(layout, bits);
    opts.model = IndexKind::from_u8(model % 8).map(|kind| {
        let e = u32::from(model / 8 % 8) + 1;
        IndexConfig {
            kind,
            error_bound: e,
            fence_stride: e,
            tuning: IndexTuning {
                // A small radix table: the default (2^18 slots) costs an execution more
                // than the rest of it.
                radix_bits: 6,
                ..IndexTuning::default()
            },
        }
    });
    // Seqnos `base + (n - i) × stride`: distinct, descending within a key, below 2^52.
    let base = 1u64 << (3 * u32::from(seqnos % 16));
    let stride = 1u64 << (3 * u32::from(seqnos / 16));
    let n = raw.len() as u64;
    let (pristine, entries) =
        sst_sections::write_table(opts, raw, |i| base + (n - i as u64) * stride);
    let (footer, props) = sst_sections::footer_and_properties(&pristine)
        .expect("a built table has a footer")
        .expect("a built table's footer and properties decode");
    // The layout the builder chose.
    let rests: Vec<u32> = entries
        .iter()
        .map(|e| (e.key.len() - props.common_prefix_len as usize) as u32)
        .collect();
    // The builder's sample ends once it holds SAMPLE_VALUE_BYTES of inline values (fewer
    // than 64 entries never reach its other limits): the layout is then chosen from the
    // sample alone, with no hints (no stripped prefix, any later key length).
    let mut inline_bytes = 0;
    let sample = entries
        .iter()
        .position(|e| {
            if e.trailer & 0xff == ValueKind::Value as u64 {
                inline_bytes += e.value.len();
            }
            inline_bytes >= SAMPLE_VALUE_BYTES
        })
        .map_or(entries.len(), |last| last + 1);
    let streamed = sample < entries.len() || inline_bytes >= SAMPLE_VALUE_BYTES;
    let (entries_seen, rests_seen) = (&entries[..sample], &rests[..sample]);
    let longest = rests_seen.iter().copied().max().unwrap_or(0);
    let max_rest = if streamed { MAX_KEY_LEN as u32 } else { longest };
    // Format 5: with block prefixes allowed, the head chosen over each key's rest past its
    // block's shared prefix wins when it is narrower than the longest rest.
    let block_rests: Vec<u32> = entries_seen
        .chunks(opts.block_records)
        .flat_map(|block| {
            let (first, last) = (&block[0].key, &block[block.len() - 1].key);
            let shared = first.iter().zip(last).take_while(|(a, b)| a == b).count();
            let shared = shared.max(props.common_prefix_len as usize);
            block.iter().map(move |e| (e.key.len() - shared) as u32)
        })
        .collect();
    let auto_head = || {
        Some(choose_head_bounded(&block_rests, max_rest, longest))
            .filter(|&h| opts.block_prefixes && h < longest)
            .unwrap_or_else(|| choose_head_bounded(rests_seen, max_rest, longest))
    };
    let head = opts.head_bytes.map_or_else(auto_head, |h| h.min(longest));
    assert_eq!(
        props.slot.head_bytes, head,
        "head width differs from the option"
    );
    assert_eq!(props.slot.prefix_len, props.common_prefix_len);
    assert_eq!(props.entries, n);

    let mut damaged = pristine.clone();
    let span = footer.data.len + footer.values.len;
    if span > 0 {
        for e in edits.chunks_exact(3) {
            let pos = u64::from(u16::from_le_bytes([e[0], e[1]])) % span;
            damaged[pos as usize] ^= e[2];
        }
    }
    let changed = damaged != pristine;
    let damage = Damage::of(&pristine, &damaged, &footer, &props);
    let path = file();
    let mem = common::fs_with(path, &damaged);
    let mapped = MappedFs(common::fs_with(path, &damaged));
    for (fs, mode) in [
        (&mapped as &dyn FileSystem, ReadMode::Mmap),
        (&mem as &dyn FileSystem, ReadMode::Pread),
    ] {
        let table = match Table::open(fs, path, 11, mode) {
            Ok(t) => Arc::new(t),
            Err(e) => {
                panic!("{mode:?}: a table damaged only in data and values fails to open: {e}")
            }
        };
        let reads = Reads {
            table: &table,
            entries: &entries,
            changed,
            damage: &damage,
        };
        reads.check_all();
        // Damage anywhere in the data and value sections is caught by the full check.
        match table.verify() {
            Ok(()) => assert!(!changed, "{mode:?}: verify passed a damaged table"),
            Err(e) => {
                common::check_clean_error(&e, path);
                assert!(changed, "{mode:?}: verify failed an intact table: {e}");
            }
        }
    }
}

/// The entries of a table input (see the module doc), sorted by key (stable: versions of a
/// key keep their input order, newest first).
fn parse_entries(mut rest: &[u8]) -> Vec<(Vec<u8>, ValueKind, Vec<u8>)> {
    let mut raw = Vec::new();
    while let Some((&b, tail)) = rest
        .split_first()
        .filter(|_| raw.len() < sst_sections::MAX_ENTRIES)
    {
        let len = usize::from(b % (MAX_KEY + 1)).min(tail.len());
        let (key, tail) = tail.split_at(len);
        rest = tail;
        let (kind, value) = match b / (MAX_KEY + 1) % 3 {
            0 => {
                let (value, tail) = value_of(rest);
                rest = tail;
                (ValueKind::Value, value)
            }
            1 => (ValueKind::Delete, Vec::new()),
            _ => (ValueKind::Pointer, sst_sections::pointer(raw.len())),
        };
        raw.push((key.to_vec(), kind, value));
    }
    raw.sort_by(|a, b| a.0.cmp(&b.0));
    raw
}

/// A value read from the front of `input` (see the module doc), and the rest.
fn value_of(input: &[u8]) -> (Vec<u8>, &[u8]) {
    let Some((&v, rest)) = input.split_first() else {
        return (Vec::new(), input);
    };
    let len = usize::from(v % 64)
        * match (v & 0x80 != 0, v & 0x40 != 0) {
            (false, _) => 1,
            (true, false) => 16,
            (true, true) => 600,
        };
    if v & 0x40 != 0 {
        let (pattern, rest) = rest.split_at(rest.len().min(4));
        let value = match pattern {
            [] => vec![b'v'; len],
            p => p.iter().copied().cycle().take(len).collect(),
        };
        (value, rest)
    } else {
        let (value, rest) = rest.split_at(rest.len().min(len));
        (value.to_vec(), rest)
    }
}

/// The reads of one open table, checked against the entries written.
struct Reads<'a> {
    table: &'a Arc<Table>,
    entries: &'a [Entry],
    /// Whether any byte of the file differs from what the builder wrote: only then may a
    /// read fail.
    changed: bool,
    /// Which blocks and value chunks differ.
    damage: &'a Damage,
}

/// Which data blocks and value chunks of a table were damaged.
struct Damage {
    /// Per block: its bytes (slots and key suffixes) differ.
    data: Vec<bool>,
    /// Per block: its value chunk differs.
    chunk: Vec<bool>,
    /// Positions of each block's entries.
    positions: Vec<std::ops::Range<u64>>,
}

impl Damage {
    /// Compares each block and chunk of `pristine` (as its index section places them) with
    /// `damaged`.
    fn of(pristine: &[u8], damaged: &[u8], footer: &Footer, props: &Properties) -> Damage {
        let index = sst_sections::slice(pristine, &footer.index);
        let lens = (footer.version, footer.data.len, footer.values.len);
        let fence = Fence::decode(index, props, lens, file(), footer.index.offset)
            .expect("a built index decodes");
        let differs = |base: u64, r: std::ops::Range<u64>| {
            let r = (base + r.start) as usize..(base + r.end) as usize;
            pristine[r.clone()] != damaged[r]
        };
        let blocks = 0..fence.block_count();
        // Chunk offsets are relative to the value section, or to the data section in format 3
        // (each chunk right after its block).
        let chunks_base = if footer.version >= 3 {
            footer.data.offset
        } else {
            footer.values.offset
        };
        Damage {
            data: blocks
                .clone()
                .map(|b| differs(footer.data.offset, fence.data_block(b).expect("block")))
                .collect(),
            chunk: blocks
                .clone()
                .map(|b| differs(chunks_base, fence.value_chunk(b).expect("chunk")))
                .collect(),
            positions: blocks.map(|b| fence.block_positions(b)).collect(),
        }
    }

    /// The block holding position `pos`.
    fn block_of(&self, pos: usize) -> usize {
        self.positions
            .iter()
            .position(|r| r.contains(&(pos as u64)))
            .expect("a position inside the table")
    }

    /// Whether a scan that enters block `b` fails there (it checks both parts).
    fn scan_fails(&self, b: usize) -> bool {
        self.data[b] || self.chunk[b]
    }
}

/// A read being checked, named in the messages of failed checks (formatted only then).
#[derive(Clone, Copy)]
struct Op<'k> {
    name: &'static str,
    key: &'k [u8],
    arg: u64,
}

impl<'k> Op<'k> {
    fn new(name: &'static str, key: &'k [u8], arg: u64) -> Op<'k> {
        Op { name, key, arg }
    }
}

impl std::fmt::Display for Op<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}({:?}, {})", self.name, self.key, self.arg)
    }
}

/// The trailer that sorts before every version of a key with seqno `<= snapshot`.
fn seek_trailer(snapshot: u64) -> u64 {
    (snapshot.min(MAX_SEQNO) << 8) | 0xff
}

fn seqno_of(e: &Entry) -> u64 {
    e.trailer >> 8
}

impl Reads<'_> {
    /// `Ok` passes `r` on; an error must be a clean corruption of a damaged table.
    fn ok<T>(&self, r: augur::Result<T>, what: Op<'_>) -> Option<T> {
        match r {
            Ok(v) => Some(v),
            Err(e) => {
                common::check_clean_error(&e, file());
                assert!(self.changed, "{what} failed on an intact table: {e}");
                None
            }
        }
    }

    fn same(&self, got: &augur::sst::Entry, want: &Entry, what: Op<'_>) {
        assert_eq!(got.user_key, want.key, "{what}: another key");
        assert_eq!(
            augur::key::pack_trailer(got.seqno, got.kind),
            want.trailer,
            "{what}: another seqno or kind"
        );
        assert_eq!(got.value, want.value, "{what}: another value");
    }

    /// Position of the first entry `>= (key, trailer)`.
    fn lower_bound(&self, key: &[u8], trailer: u64) -> usize {
        self.entries
            .partition_point(|e| compare(&e.key, e.trailer, key, trailer) == Ordering::Less)
    }

    /// What `get(key, snapshot)` must return: the newest version at most `snapshot`.
    fn expected_get(&self, key: &[u8], snapshot: u64) -> Option<&Entry> {
        self.entries
            .get(self.lower_bound(key, seek_trailer(snapshot)))
            .filter(|e| e.key == key)
    }

    fn check_all(&self) {
        let n = self.entries.len();
        for (i, want) in self.entries.iter().enumerate() {
            let what = Op::new("entry_at", b"", i as u64);
            let got = self.ok(self.table.entry_at(i as u64), what);
            if let Some(got) = &got {
                self.same(got, want, what);
            }
            // Reading entry `i` reads its block, and its value chunk when it holds an inline
            // value: it fails exactly when one of those is damaged.
            let b = self.damage.block_of(i);
            let inline = unpack_trailer(want.trailer).map(|(_, k)| k) == Some(ValueKind::Value);
            let damaged = self.damage.data[b] || (inline && self.damage.chunk[b]);
            assert_eq!(
                got.is_none(),
                damaged,
                "{what}: block {b} damaged: data {}, chunk {}",
                self.damage.data[b],
                self.damage.chunk[b]
            );
        }
        match self.table.entry_at(n as u64) {
            Err(Error::InvalidArgument(_)) => {}
            other => panic!("entry_at past the end: {other:?}"),
        }
        let mut keys = 0;
        for (i, e) in self.entries.iter().enumerate() {
            let first = i == 0 || self.entries[i - 1].key != e.key;
            let snapshots = [if first { u64::MAX } else { seqno_of(e) }, seqno_of(e) - 1];
            for snapshot in snapshots {
                self.check_get(&e.key, snapshot);
            }
            if first {
                keys += 1;
            }
            // Absent keys around every other key (each lookup costs a block read).
            if first && keys % 2 == 1 {
                for probe in neighbours(&e.key) {
                    self.check_get(&probe, u64::MAX);
                    self.check_lower_bound(&probe, u64::MAX);
                }
            }
            self.check_lower_bound(&e.key, seqno_of(e));
        }
        for probe in [&b""[..], &[0xff; MAX_KEY as usize + 1][..]] {
            self.check_get(probe, u64::MAX);
            self.check_lower_bound(probe, 0);
        }
        self.scan(true);
        self.scan(false);
        // Cursor seeks (each loads a block and its value chunk): every eighth entry, the
        // neighbours of every sixteenth, the empty key.
        let mut probes: Vec<(Vec<u8>, u64)> = vec![(Vec::new(), u64::MAX)];
        for (i, e) in self.entries.iter().enumerate().skip(3).step_by(8) {
            probes.push((e.key.clone(), e.trailer));
            if i % 16 == 3 {
                probes.extend(neighbours(&e.key).map(|k| (k, u64::MAX)));
            }
        }
        for (key, trailer) in &probes {
            self.seek(key, *trailer, true);
            self.seek(key, *trailer, false);
        }
    }

    fn check_get(&self, key: &[u8], snapshot: u64) {
        let what = Op::new("get", key, snapshot);
        let Some(got) = self.ok(self.table.get(key, snapshot), what) else {
            return;
        };
        match (got, self.expected_get(key, snapshot)) {
            (None, None) => {}
            (Some(got), Some(want)) => self.same(&got, want, what),
            (got, want) => panic!(
                "{what}: returned {got:?}, wrote {:?}",
                want.map(|w| (&w.key, w.trailer, &w.value))
            ),
        }
    }

    fn check_lower_bound(&self, key: &[u8], snapshot: u64) {
        let what = Op::new("lower_bound", key, snapshot);
        if let Some(p) = self.ok(self.table.lower_bound(key, snapshot), what) {
            assert_eq!(
                p,
                self.lower_bound(key, seek_trailer(snapshot)) as u64,
                "{what}: wrong position"
            );
        }
    }

    /// Checks the cursor's current entry against entry `pos`.
    fn at(&self, c: &TableCursor, pos: usize, what: Op<'_>) {
        assert_eq!(c.position(), pos as u64, "{what}: at another position");
        let want = &self.entries[pos];
        assert_eq!(c.key(), &want.key[..], "{what}: another key at {pos}");
        assert_eq!(
            c.trailer(),
            want.trailer,
            "{what}: another trailer at {pos}"
        );
        let kind = unpack_trailer(want.trailer).map(|(_, k)| k);
        assert_eq!(Some(c.kind()), kind, "{what}: another kind at {pos}");
        assert_eq!(c.value(), &want.value[..], "{what}: another value at {pos}");
    }

    /// A whole scan in one direction: every entry in order, or an error (then it stops).
    fn scan(&self, forward: bool) {
        let name = if forward { "scan" } else { "scan backward" };
        let what = Op::new(name, b"", 0);
        let n = self.entries.len();
        let mut c = TableCursor::new(Arc::clone(self.table), forward);
        // The scan reads block after block, and fails at the first damaged one.
        let blocks = self.damage.positions.len();
        let order: Vec<usize> = if forward {
            (0..blocks).collect()
        } else {
            (0..blocks).rev().collect()
        };
        let expected = order
            .iter()
            .take_while(|&&b| !self.damage.scan_fails(b))
            .map(|&b| self.damage.positions[b].end - self.damage.positions[b].start)
            .sum::<u64>() as usize;
        let mut seen = 0;
        let mut failed = false;
        if self.ok(c.seek_to_first(), what).is_none() {
            failed = true;
        } else {
            while c.valid() {
                let pos = if forward { seen } else { n - 1 - seen };
                self.at(&c, pos, what);
                seen += 1;
                if self.ok(c.advance(), what).is_none() {
                    assert!(!c.valid(), "{what}: valid after an error");
                    failed = true;
                    break;
                }
            }
        }
        assert_eq!(seen, expected, "{what}: stopped at another entry");
        assert_eq!(failed, expected < n, "{what}: ended without an error");
    }

    fn seek(&self, key: &[u8], trailer: u64, forward: bool) {
        let name = if forward { "seek" } else { "seek backward" };
        let what = Op::new(name, key, trailer);
        let mut c = TableCursor::new(Arc::clone(self.table), forward);
        if self.ok(c.seek(key, trailer), what).is_none() {
            assert!(!c.valid(), "{what}: valid after an error");
            return;
        }
        let lb = self.lower_bound(key, trailer);
        let want = if forward { lb } else { lb.wrapping_sub(1) };
        if want < self.entries.len() {
            assert!(c.valid(), "{what}: not positioned at entry {want}");
            self.at(&c, want, what);
            // One step on.
            if self.ok(c.advance(), what).is_some() {
                let next = if forward {
                    want + 1
                } else {
                    want.wrapping_sub(1)
                };
                if next < self.entries.len() {
                    self.at(&c, next, what);
                } else {
                    assert!(!c.valid(), "{what}: valid past the end");
                }
            }
        } else {
            assert!(!c.valid(), "{what}: positioned past the end");
        }
    }
}

/// Keys next to `key`: its successor `key\0`, the key cut short by one byte, the key with
/// its last byte one less and one more.
fn neighbours(key: &[u8]) -> impl Iterator<Item = Vec<u8>> + '_ {
    let mut next = key.to_vec();
    next.push(0);
    let cut = key.get(..key.len().saturating_sub(1)).map(<[u8]>::to_vec);
    let bump = |d: i8| {
        let mut k = key.to_vec();
        let last = k.last_mut()?;
        *last = last.wrapping_add_signed(d);
        Some(k)
    };
    [Some(next), cut, bump(-1), bump(1)].into_iter().flatten()
}

// ---------------------------------------------------------------------------------------
// Mode 1: the slot codec alone.

fn slot_codec(input: &[u8]) {
    let Some((&[shape, widths, trailer_w, edits], rest)) = input.split_first_chunk::<4>() else {
        return;
    };
    let edit_bytes = 3 * usize::from(edits % 8);
    let (body, edits) = rest.split_at(rest.len().saturating_sub(edit_bytes));
    let mut keys: Vec<&[u8]> = Vec::new();
    let mut r = body;
    while let Some((&len, tail)) = r.split_first().filter(|_| keys.len() < 64) {
        let len = usize::from(len % (MAX_KEY + 1)).min(tail.len());
        keys.push(&tail[..len]);
        r = &tail[len..];
    }
    keys.sort();
    keys.dedup();
    let (Some(first), Some(last)) = (keys.first(), keys.last()) else {
        return;
    };
    let common = first.iter().zip(*last).take_while(|(a, b)| a == b).count();
    // Any prefix every key shares may be stripped (the builder strips the longest).
    let prefix_len = common.min(usize::from(shape % 16));
    let prefix = &first[..prefix_len];
    let rests: Vec<&[u8]> = keys.iter().map(|k| &k[prefix_len..]).collect();
    let longest = rests.iter().map(|r| r.len()).max().unwrap_or(0);
    let shortest = rests.iter().map(|r| r.len()).min().unwrap_or(0);
    // The file's key width: a valid layout's head is at most that wide.
    let key_width = prefix_len + longest;
    let head = match shape / 16 {
        0 => choose_head(&rests.iter().map(|r| r.len() as u32).collect::<Vec<_>>()) as usize,
        h => usize::from(h - 1).min(key_width),
    };
    let overflow_total: usize = rests.iter().map(|r| r.len().saturating_sub(head)).sum();
    let len_bytes = match (shortest == longest, widths & 1) {
        (true, 0) => 0,
        (_, 0) if longest <= 255 => 1,
        _ => 2,
    };
    let suffix_bytes = match (overflow_total, widths & 2) {
        (0, 0) => 0,
        (t, 0) if t <= usize::from(u16::MAX) => 2,
        _ => 4,
    };
    // Format 7's end references (bit 4) are 2 or 4 bytes; the codec carries them as bytes.
    let end_refs = widths & 16 != 0;
    let ref_widths = if end_refs { [0u8, 2, 4, 20] } else { [0u8, 4, 8, 20] };
    let ref_bytes = ref_widths[usize::from(widths / 4 % 4)];
    // Trailers `base + i`, in a field of `trailer_bytes`.
    let trailer_bytes = trailer_w % 8 + 1;
    let base = (u64::from(trailer_w) << 8) & (MAX_SEQNO << 8);
    let params = SlotParams {
        prefix_len: prefix_len as u32,
        head_bytes: head as u32,
        len_bytes,
        fixed_rest_len: if len_bytes == 0 { longest as u32 } else { 0 },
        suffix_bytes,
        trailer_bytes,
        trailer_base: base,
        ref_bytes,
        v1_refs: false,
        end_refs,
    };
    let slots = Slots::new(params, key_width as u32);
    let size = slots.slot_bytes();
    let (mut block, mut suffixes) = (Vec::new(), Vec::new());
    let trailer_of = |i: usize| base + (i as u64 % (1 << (8 * trailer_bytes.min(7))));
    let reference_of = |i: usize| -> Vec<u8> {
        (0..usize::from(ref_bytes))
            .map(|j| (i * 31 + j) as u8)
            .collect()
    };
    for (i, rest) in rests.iter().enumerate() {
        slots.encode(
            &mut block,
            rest,
            suffixes.len(),
            trailer_of(i),
            &reference_of(i),
        );
        suffixes.extend_from_slice(rest.get(head..).unwrap_or_default());
    }
    assert_eq!(block.len(), size * keys.len(), "slots of another size");
    let mut probes: Vec<Vec<u8>> = Vec::new();
    for k in keys.iter().step_by(2) {
        probes.push(k.to_vec());
        probes.extend(neighbours(k));
    }
    probes.extend(body.chunks(9).take(8).map(<[u8]>::to_vec));
    probes.push(Vec::new());
    for (i, (key, rest)) in keys.iter().zip(&rests).enumerate() {
        let slot = &block[i * size..(i + 1) * size];
        let d = slots
            .decode(slot, &suffixes)
            .unwrap_or_else(|| panic!("slot {i} of key {key:?} does not decode"));
        assert_eq!(
            [d.head, d.overflow].concat(),
            *rest,
            "slot {i}: another key"
        );
        assert_eq!(d.rest_len, rest.len());
        assert_eq!(d.trailer, trailer_of(i), "slot {i}: another trailer");
        assert_eq!(
            d.reference,
            &reference_of(i)[..],
            "slot {i}: another reference"
        );
        assert!(
            d.padding.iter().all(|&b| b == 0),
            "slot {i}: non-zero padding"
        );
        for probe in &probes {
            assert_eq!(
                slots.key_order(probe, prefix, slot, &suffixes),
                Some(key.cmp(&probe.as_slice())),
                "slot {i} ({key:?}) against {probe:?}, head {head}, prefix {prefix:?}"
            );
        }
    }
    // Damaged: anything decodes consistently or not at all.
    let mut bytes = [block, suffixes].concat();
    let slots_len = size * keys.len();
    let len = bytes.len().max(1);
    for e in edits.chunks_exact(3) {
        let pos = usize::from(u16::from_le_bytes([e[0], e[1]]));
        if let Some(b) = bytes.get_mut(pos % len) {
            *b ^= e[2];
        }
    }
    let (slot_bytes, suffixes) = bytes.split_at(slots_len);
    for slot in slot_bytes.chunks_exact(size.max(1)).take(keys.len()) {
        if let Some(d) = slots.decode(slot, suffixes) {
            assert_eq!(d.head.len(), d.rest_len.min(head));
            assert_eq!(d.overflow.len(), d.rest_len.saturating_sub(head));
            assert_eq!(d.reference.len(), usize::from(ref_bytes));
            for probe in probes.iter().take(4) {
                let held = [prefix, d.head, d.overflow].concat();
                assert_eq!(
                    slots.key_order(probe, prefix, slot, suffixes),
                    Some(held.as_slice().cmp(probe.as_slice())),
                    "damaged slot holding {held:?} against {probe:?}"
                );
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// A memory file system whose files open as mappings.

/// [`MemFs`], but a file opened with [`ReadMode::Mmap`] is served as a mapping
/// (`RandomAccessFile::as_slice` and `mapped`): the read path's zero-copy branch, with its
/// verify-once bitsets and the cursor's reads straight from the mapping, which `MemFs`
/// (pread only) never takes.
struct MappedFs(MemFs);

/// An immutable in-memory file served as a mapping.
struct MappedFile(bytes::Bytes);

impl RandomAccessFile for MappedFile {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> augur::Result<()> {
        let src = usize::try_from(offset)
            .ok()
            .and_then(|start| self.0.get(start..start.checked_add(buf.len())?));
        match src {
            Some(src) => {
                buf.copy_from_slice(src);
                Ok(())
            }
            None => Err(Error::io(
                "reading a mapped file",
                std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "past the end"),
            )),
        }
    }

    fn as_slice(&self) -> Option<&[u8]> {
        Some(&self.0)
    }

    fn mapped(&self) -> Option<bytes::Bytes> {
        Some(self.0.clone())
    }

    fn len(&self) -> augur::Result<u64> {
        Ok(self.0.len() as u64)
    }
}

impl FileSystem for MappedFs {
    fn create_dir_all(&self, dir: &Path) -> augur::Result<()> {
        self.0.create_dir_all(dir)
    }
    fn create(&self, path: &Path) -> augur::Result<Box<dyn WritableFile>> {
        self.0.create(path)
    }
    fn open_append(&self, path: &Path) -> augur::Result<Box<dyn WritableFile>> {
        self.0.open_append(path)
    }
    fn open(&self, path: &Path, mode: ReadMode) -> augur::Result<Arc<dyn RandomAccessFile>> {
        match mode {
            ReadMode::Mmap => Ok(Arc::new(MappedFile(self.0.read_all(path)?.into()))),
            _ => self.0.open(path, mode),
        }
    }
    fn read_all(&self, path: &Path) -> augur::Result<Vec<u8>> {
        self.0.read_all(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> augur::Result<()> {
        self.0.rename(from, to)
    }
    fn remove(&self, path: &Path) -> augur::Result<()> {
        self.0.remove(path)
    }
    fn list(&self, dir: &Path) -> augur::Result<Vec<String>> {
        self.0.list(dir)
    }
    fn exists(&self, path: &Path) -> bool {
        self.0.exists(path)
    }
    fn size(&self, path: &Path) -> augur::Result<u64> {
        self.0.size(path)
    }
    fn sync_dir(&self, dir: &Path) -> augur::Result<()> {
        self.0.sync_dir(dir)
    }
    fn sync_file(&self, path: &Path) -> augur::Result<()> {
        self.0.sync_file(path)
    }
    fn lock(&self, path: &Path) -> augur::Result<Box<dyn FileLock>> {
        self.0.lock(path)
    }
}
