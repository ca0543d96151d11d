//! Format 7's end references (an inline value starts where the previous slot's ends) on
//! every read path: whole blocks (mapped, `pread`), windows of slots through the page cache
//! (direct reads), and the slot before a window read on its own when the window starts at it.

use super::Table;
use crate::cache::{CacheBudget, FileReads};
use crate::fs::{FileSystem, ReadMode, StdFs};
use crate::key::{ValueKind, MAX_SEQNO};
use crate::sst::{Builder, BuilderOptions, Entry};
use std::path::Path;
use std::sync::Arc;

/// Entries without value pointers (so the table has end references): values of varying
/// length, empty ones, tombstones between them, and versions of one key.
fn entries() -> Vec<Entry> {
    let mut out = Vec::new();
    for i in 0..500u64 {
        let user_key = format!("key/{:03}/{i:05}", i / 30).into_bytes();
        let (kind, value) = match i % 7 {
            0 => (ValueKind::Delete, Vec::new()),
            1 => (ValueKind::Value, Vec::new()),
            _ => (ValueKind::Value, format!("{i}:").repeat(1 + (i % 5) as usize).into_bytes()),
        };
        if i % 11 == 3 {
            out.push(Entry { user_key: user_key.clone(), seqno: 1000 + i, kind: ValueKind::Value, value: b"newer".to_vec() });
        }
        out.push(Entry { user_key, seqno: 10 + i, kind, value });
    }
    out
}

fn open(path: &Path, mode: ReadMode, cached: bool) -> Table {
    let reads = if cached {
        FileReads::new(mode, CacheBudget::split(mode, 1 << 20, true), None)
    } else {
        FileReads::plain(mode)
    };
    let fs: Arc<dyn FileSystem> = Arc::new(StdFs);
    Table::open_in(&fs, path, 7, &reads, true).unwrap()
}

#[test]
fn end_references_read_back_on_every_path() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("7.sst");
    let entries = entries();
    let opts = BuilderOptions { block_records: 16, ..BuilderOptions::default() };
    let mut b = Builder::new(StdFs.create(&path).unwrap(), path.clone(), opts);
    for e in &entries {
        b.add(&e.user_key, e.seqno, e.kind, &e.value).unwrap();
    }
    b.finish().unwrap();
    let mut modes = vec![(ReadMode::Mmap, false), (ReadMode::Pread, false), (ReadMode::Pread, true)];
    if StdFs.open(&path, ReadMode::Direct).is_ok() {
        modes.push((ReadMode::Direct, true));
    }
    for (mode, cached) in modes {
        let t = open(&path, mode, cached);
        assert!(t.layout.params.end_only_refs(), "{mode:?}: no end references");
        assert_eq!(t.layout.params.ref_bytes, 2);
        t.verify().unwrap();
        // Twice: through the page cache the second pass reads windows of checked blocks.
        for pass in 0..2 {
            for (i, e) in entries.iter().enumerate() {
                assert_eq!(&t.entry_at(i as u64).unwrap(), e, "{mode:?} pass {pass}: entry {i}");
            }
            let mut newest = entries.iter().peekable();
            while let Some(e) = newest.next() {
                while newest.peek().is_some_and(|n| n.user_key == e.user_key) {
                    newest.next();
                }
                let got = t.get(&e.user_key, MAX_SEQNO).unwrap().unwrap();
                assert_eq!((got.kind, &got.value), (e.kind, &e.value), "{mode:?}: get {:?}", e.user_key);
            }
        }
        // A window that starts at a slot holds the slot before it; one that does not is
        // completed by reading that slot alone, with the same result.
        let positions = t.fence.block_positions(1);
        let whole = t.load_block(1, false).unwrap();
        let window = t.load_slots(1, positions.start + 3, positions.start + 4).unwrap();
        for pos in positions.start + 1..positions.start + 5 {
            let want = t.prev_reference(&whole, pos).unwrap().unwrap();
            let got = t.prev_reference(&window, pos).unwrap().unwrap();
            assert_eq!(got.bytes(), want.bytes(), "{mode:?}: slot {pos}");
        }
        assert!(t.prev_reference(&whole, positions.start).unwrap().is_none());
    }
}
