//! Tests of the builder alone: input checks, the size estimate, the layout chosen when
//! streaming (with and without hints, and entries outside them), and the memory bound.

use super::*;

struct NullFile(u64);
impl WritableFile for NullFile {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.0 += data.len() as u64;
        Ok(())
    }
    fn flush(&mut self) -> Result<()> {
        Ok(())
    }
    fn sync(&mut self) -> Result<()> {
        Ok(())
    }
    fn len(&self) -> u64 {
        self.0
    }
}

fn builder(block_records: usize) -> Builder {
    let opts = BuilderOptions {
        block_records,
        bloom_bits_per_key: 10,
        model: None,
        model_budget: None,
        ..BuilderOptions::default()
    };
    Builder::new(Box::new(NullFile(0)), PathBuf::from("t.sst"), opts)
}

fn is_invalid(r: Result<()>) -> bool {
    matches!(r, Err(Error::InvalidArgument(_)))
}

#[test]
fn rejects_bad_input_and_stays_usable() {
    let mut b = builder(4);
    b.add(b"b", 5, ValueKind::Value, b"v").unwrap();
    assert!(is_invalid(b.add(b"a", 9, ValueKind::Value, b"v")));
    assert!(is_invalid(b.add(b"b", 5, ValueKind::Delete, b"")));
    assert!(is_invalid(b.add(b"b", 6, ValueKind::Value, b"v")));
    assert!(is_invalid(b.add(b"c", 1, ValueKind::Pointer, b"short")));
    assert!(is_invalid(b.add(b"c", 1, ValueKind::Delete, b"x")));
    assert!(is_invalid(b.add(
        &vec![0; MAX_KEY_LEN + 1],
        1,
        ValueKind::Delete,
        b""
    )));
    assert!(is_invalid(b.add(
        b"c",
        MAX_SEQNO + 1,
        ValueKind::Delete,
        b""
    )));
    assert_eq!(b.entries(), 1);
    b.add(b"b", 4, ValueKind::Delete, b"").unwrap();
    let summary = b.finish().unwrap();
    assert_eq!(summary.entries, 2);
    assert_eq!(
        summary.largest,
        InternalKey::new(b"b".to_vec(), 4, ValueKind::Delete)
    );
}

#[test]
fn empty_and_bad_options_are_invalid() {
    assert!(matches!(
        builder(4).finish(),
        Err(Error::InvalidArgument(_))
    ));
    assert!(is_invalid(builder(0).add(b"a", 1, ValueKind::Delete, b"")));
}

#[test]
fn estimate_tracks_size() {
    let mut b = builder(8);
    for i in 0..1000u64 {
        b.add(&i.to_be_bytes(), 1, ValueKind::Value, &[7; 20])
            .unwrap();
    }
    let est = b.estimated_size_bytes();
    let real = b.finish().unwrap().file_size;
    assert!(
        est >= real && est < real + real / 10,
        "est {est} real {real}"
    );
}

use crate::fs::{FileSystem, ReadMode, StdFs};
use crate::sst::tests::exact_hints;
use crate::sst::{Entry, Table, TableCursor};
use std::sync::Arc;

fn value_entry(key: &[u8], seqno: u64, value: &[u8]) -> Entry {
    Entry {
        user_key: key.to_vec(),
        seqno,
        kind: ValueKind::Value,
        value: value.to_vec(),
    }
}

/// Builds `entries` into `path` with the sample ended after `sample` entries.
fn build_streamed(
    path: &std::path::Path,
    entries: &[Entry],
    opts: BuilderOptions,
    hints: LayoutHints,
    sample: usize,
) -> TableSummary {
    let file = StdFs.create(path).unwrap();
    let mut b =
        Builder::with_hints(file, path.to_path_buf(), opts, hints).with_sample_entries(sample);
    for e in entries {
        b.add(&e.user_key, e.seqno, e.kind, &e.value).unwrap();
    }
    b.finish().unwrap()
}

fn all_entries(t: Table) -> Vec<Entry> {
    let mut c = TableCursor::new(Arc::new(t), true);
    c.seek_to_first().unwrap();
    let mut out = Vec::new();
    while c.valid() {
        out.push(Entry {
            user_key: c.key().to_vec(),
            seqno: c.trailer() >> 8,
            kind: c.kind(),
            value: c.value().to_vec(),
        });
        c.advance().unwrap();
    }
    out
}

#[test]
fn estimate_tracks_size_when_streaming() {
    let entries: Vec<Entry> = (0..5000u64)
        .map(|i| value_entry(&(i * 3).to_be_bytes(), 9000 - i, &[7; 20]))
        .collect();
    for (hints, sample) in [(exact_hints(&entries), 100), (LayoutHints::default(), 64)] {
        let file = Box::new(NullFile(0));
        let mut b = Builder::with_hints(file, PathBuf::from("t.sst"), BuilderOptions::default(), hints)
            .with_sample_entries(sample);
        for e in &entries {
            b.add(&e.user_key, e.seqno, e.kind, &e.value).unwrap();
        }
        let est = b.estimated_size_bytes();
        let real = b.finish().unwrap().file_size;
        assert!(
            est >= real && est < real + real / 10,
            "est {est} real {real}"
        );
    }
}

#[test]
fn without_hints_a_streamed_table_takes_widths_that_store_anything() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("1.sst");
    let entries: Vec<Entry> = (0..300u64)
        .map(|i| value_entry(&(i * 5).to_be_bytes(), 1000 - i, &i.to_le_bytes()))
        .collect();
    build_streamed(&path, &entries, BuilderOptions::default(), LayoutHints::default(), 10);
    let t = Table::open(&StdFs, &path, 1, ReadMode::Mmap).unwrap();
    let slot = t.properties().slot;
    assert_eq!(
        (slot.prefix_len, slot.len_bytes, slot.trailer_bytes, slot.ref_bytes),
        (0, 2, 8, 20)
    );
    assert_eq!(slot.trailer_base, 0);
    t.verify().unwrap();
    assert_eq!(all_entries(t), entries);
}

#[test]
fn entries_outside_the_hints_are_refused_and_the_file_stays_valid() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("1.sst");
    let hints = LayoutHints {
        max_user_key: Some(b"k500".to_vec()),
        key_len: Some((4, 4)),
        seqnos: Some((100, 200)),
        values: Some(ValueHints {
            max_inline_len: Some(10),
            pointers: false,
        }),
    };
    let opts = BuilderOptions {
        block_records: 4,
        ..BuilderOptions::default()
    };
    let file = StdFs.create(&path).unwrap();
    let mut b = Builder::with_hints(file, path.clone(), opts, hints).with_sample_entries(8);
    let mut added = Vec::new();
    let mut add = |b: &mut Builder, e: Entry| {
        b.add(&e.user_key, e.seqno, e.kind, &e.value).unwrap();
        added.push(e);
    };
    for i in 0..10u64 {
        add(&mut b, value_entry(format!("k{i:03}").as_bytes(), 150, b"vvvvv"));
    }
    // The layout strips the prefix "k" (the sample's and the bound's), stores 3-byte rests
    // without a length field, seqnos 100 + up to 2 bytes, and 2-byte inline references
    // (format 7's value ends).
    let p = b.stream.as_ref().unwrap().0.params;
    assert_eq!(
        (p.prefix_len, p.len_bytes, p.fixed_rest_len, p.trailer_bytes, p.ref_bytes),
        (1, 0, 3, 2, 2)
    );
    let pointer = ValuePointer {
        segment: 1,
        offset: 2,
        len: 3,
    }
    .encode();
    for (key, seqno, kind, value) in [
        (&b"x100"[..], 150, ValueKind::Value, &b"v"[..]), // lacks the prefix
        (b"k0200", 150, ValueKind::Value, b"v"),           // longer than every key
        (b"k02", 150, ValueKind::Value, b"v"),             // shorter
        (b"k020", 99, ValueKind::Value, b"v"),             // below the smallest seqno
        (b"k020", 100 + 256, ValueKind::Value, b"v"),      // past the trailer field
        (b"k020", 150, ValueKind::Pointer, &pointer[..]),  // no room for a pointer
        (b"k020", 150, ValueKind::Value, &[1; 70_000][..]), // past a 4-byte reference
    ] {
        let before = b.entries();
        assert!(
            is_invalid(b.add(key, seqno, kind, value)),
            "{key:?} {seqno} {kind:?}"
        );
        assert_eq!(b.entries(), before);
    }
    // Outside the hints but within what the layout stores: accepted.
    add(&mut b, value_entry(b"k020", 100 + 255, &[2; 300]));
    add(&mut b, value_entry(b"k020", 101, b""));
    add(&mut b, value_entry(b"k999", 120, b"w"));
    b.finish().unwrap();
    for mode in [ReadMode::Mmap, ReadMode::Pread] {
        let t = Table::open(&StdFs, &path, 1, mode).unwrap();
        t.verify().unwrap();
        for e in &added {
            assert_eq!(t.get(&e.user_key, e.seqno).unwrap().as_ref(), Some(e));
        }
        assert_eq!(all_entries(t), added);
    }
}

/// A key of 16 bytes (decimal, zero-padded) and a 100-byte value for entry `i`.
fn big_entry(i: u64) -> (Vec<u8>, Vec<u8>) {
    let key = format!("{:016}", i * 3).into_bytes();
    let value: Vec<u8> = i.to_le_bytes().iter().cycle().take(100).copied().collect();
    (key, value)
}

/// Issue 28: the builder's memory stays bounded by the sample and one block whatever the
/// table's size, and the streamed table reads back exactly.
#[test]
fn memory_stays_bounded_on_a_big_table() {
    const BOUND: usize = 2 << 20;
    let n: u64 = if cfg!(debug_assertions) { 200_000 } else { 2_000_000 };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("1.sst");
    let (first, _) = big_entry(0);
    let (last, _) = big_entry(n - 1);
    let hints = LayoutHints {
        max_user_key: Some(last.clone()),
        key_len: Some((16, 16)),
        seqnos: Some((1, n)),
        values: Some(ValueHints {
            max_inline_len: Some(100),
            pointers: false,
        }),
    };
    let file = StdFs.create(&path).unwrap();
    let mut b = Builder::with_hints(file, path.clone(), BuilderOptions::default(), hints);
    let mut most = 0;
    let mut after_sample = 0;
    for i in 0..n {
        let (key, value) = big_entry(i);
        b.add(&key, n - i, ValueKind::Value, &value).unwrap();
        most = most.max(b.buffered_bytes());
        if i == 4 * SAMPLE_ENTRIES as u64 {
            after_sample = most;
        }
    }
    eprintln!("{n} entries: the builder buffered at most {most} bytes");
    assert!(most <= BOUND, "{most} bytes buffered");
    // Nothing grows after the sample but the suffix buffer, by at most one block's overflow
    // (a later block may share a shorter prefix than the sample's, format 5).
    let block_overflow = BuilderOptions::default().block_records * 16;
    assert!(most <= after_sample + block_overflow, "{most} vs {after_sample}");
    let summary = b.finish().unwrap();
    assert_eq!(summary.entries, n);
    assert_eq!(summary.smallest.user_key, first);
    let t = Table::open(&StdFs, &path, 1, ReadMode::Mmap).unwrap();
    // The layout the whole file would get: the keys' common prefix stripped, the rest in the
    // head, no length field.
    let slot = t.properties().slot;
    let prefix = crate::index::projection::common_prefix_len(&first, &last) as u32;
    assert_eq!(
        (slot.prefix_len, slot.head_bytes, slot.len_bytes),
        (prefix, 16 - prefix, 0)
    );
    for i in (0..n).step_by(1009) {
        let (key, value) = big_entry(i);
        let got = t.get(&key, u64::MAX).unwrap().unwrap();
        assert_eq!((got.value, got.seqno), (value, n - i));
        // An absent key between two present ones.
        let absent = format!("{:016}", i * 3 + 1).into_bytes();
        assert_eq!(t.get(&absent, u64::MAX).unwrap(), None);
        assert_eq!(t.lower_bound(&absent, u64::MAX).unwrap(), i + 1);
        assert_eq!(t.lower_bound(&key, u64::MAX).unwrap(), i);
    }
    let mut c = TableCursor::new(Arc::new(t), true);
    c.seek_to_first().unwrap();
    let mut i = 0;
    while c.valid() {
        let (key, value) = big_entry(i);
        assert_eq!((c.key(), c.value(), c.trailer() >> 8), (&key[..], &value[..], n - i));
        c.advance().unwrap();
        i += 1;
    }
    assert_eq!(i, n);
}

/// A table streamed with exact hints reads the same as the one built with the layout chosen
/// from all its entries (the approach before streaming), and is barely larger.
#[test]
fn streamed_and_exact_tables_read_the_same() {
    let dir = tempfile::tempdir().unwrap();
    // Keys of 6 to 40 bytes with a shared prefix, two versions each, mixed kinds.
    let mut entries = Vec::new();
    for i in 0..20_000u64 {
        let mut key = format!("user:{:08}", i * 7).into_bytes();
        key.extend(std::iter::repeat_n(b'x', (i % 28) as usize));
        let pointer = ValuePointer {
            segment: i,
            offset: i,
            len: 100,
        }
        .encode();
        entries.push(value_entry(&key, 50_000 - 2 * i, &[i as u8; 12]));
        let older = match i % 3 {
            0 => Entry {
                kind: ValueKind::Delete,
                value: Vec::new(),
                ..value_entry(&key, 50_000 - 2 * i - 1, b"")
            },
            1 => Entry {
                kind: ValueKind::Pointer,
                value: pointer.to_vec(),
                ..value_entry(&key, 50_000 - 2 * i - 1, b"")
            },
            _ => value_entry(&key, 50_000 - 2 * i - 1, &[3; 40]),
        };
        entries.push(older);
    }
    let exact = dir.path().join("exact.sst");
    let streamed = dir.path().join("streamed.sst");
    let opts = BuilderOptions::default();
    let exact_size =
        build_streamed(&exact, &entries, opts, LayoutHints::default(), usize::MAX).file_size;
    let streamed_size = build_streamed(&streamed, &entries, opts, exact_hints(&entries), 4096).file_size;
    assert!(
        streamed_size <= exact_size + exact_size / 50,
        "streamed {streamed_size} exact {exact_size}"
    );
    let a = Table::open(&StdFs, &exact, 1, ReadMode::Mmap).unwrap();
    let b = Table::open(&StdFs, &streamed, 2, ReadMode::Pread).unwrap();
    b.verify().unwrap();
    for (i, e) in entries.iter().enumerate().step_by(97) {
        for snap in [u64::MAX, e.seqno, e.seqno - 1] {
            assert_eq!(b.get(&e.user_key, snap).unwrap(), a.get(&e.user_key, snap).unwrap());
            assert_eq!(
                b.lower_bound(&e.user_key, snap).unwrap(),
                a.lower_bound(&e.user_key, snap).unwrap()
            );
        }
        assert_eq!(b.lower_bound(&e.user_key, e.seqno).unwrap(), i as u64);
        let mut absent = e.user_key.clone();
        absent.push(0);
        assert_eq!(b.get(&absent, u64::MAX).unwrap(), None);
        assert_eq!(
            b.lower_bound(&absent, u64::MAX).unwrap(),
            a.lower_bound(&absent, u64::MAX).unwrap()
        );
    }
    assert_eq!(all_entries(b), entries);
}

/// Keys whose distinguishing bytes lie past a long shared stem (`a/<stem>/<i>`), then keys
/// that differ early and are short (`b/<i>`): a head chosen for the first kind is far too
/// wide for the second.
fn two_shapes(first: u64, second: u64) -> Vec<Vec<u8>> {
    let stem = "x".repeat(40);
    let mut keys: Vec<Vec<u8>> = (0..first)
        .map(|i| format!("a/{:05}/{stem}/{:08}", i / 8, i).into_bytes())
        .collect();
    keys.extend((0..second).map(|i| format!("b/{i:07}").into_bytes()));
    keys
}

fn drifted_after(keys: &[Vec<u8>], sample: usize) -> (bool, bool) {
    let mut b = builder(16).with_sample_entries(sample);
    let mut drifted_before_second = None;
    for k in keys {
        if k.starts_with(b"b/") && drifted_before_second.is_none() {
            drifted_before_second = Some(b.layout_drifted());
        }
        b.add(k, 1, ValueKind::Value, b"value").unwrap();
    }
    let after = b.layout_drifted();
    (drifted_before_second.unwrap_or(after), after)
}

#[test]
fn a_layout_drifts_when_the_keys_change_shape() {
    // The head is chosen from `a/…` keys, whose last bytes tell them apart: the `b/…` keys,
    // a quarter of their length, waste most of it.
    let window = super::layout::DRIFT_WINDOW_ENTRIES as u64;
    let keys = two_shapes(2 * window + 100, 3 * window);
    let (before, after) = drifted_after(&keys, 1000);
    assert!(!before, "no drift while the keys keep the sample's shape");
    assert!(after, "keys of a new shape are seen as drifted");
}

#[test]
fn a_layout_does_not_drift_on_keys_of_one_shape() {
    let keys = two_shapes(4 * super::layout::DRIFT_WINDOW_ENTRIES as u64, 0);
    assert_eq!(drifted_after(&keys, 1000), (false, false));
    // Nor does a table that ends within its sample.
    let mut b = builder(16);
    for k in two_shapes(100, 100) {
        b.add(&k, 1, ValueKind::Value, b"value").unwrap();
    }
    assert!(!b.layout_drifted());
}
