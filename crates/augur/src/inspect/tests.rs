//! The inspectors on files a real database wrote in a temporary directory: each reads what
//! the engine wrote, and reports a torn or damaged copy of the file where the damage starts.

use super::*;
use crate::{Db, Options, WriteBatch};
use std::path::{Path, PathBuf};

/// Keys `key0000..key0499`: every tenth value separated into the value log, one tombstone,
/// one expiring value; flushed to tables of blocks of 32 entries. Then, in the WAL only: an
/// inline value, a separated one and a tombstone.
fn build(dir: &Path) -> Db {
    let opts = Options {
        value_separation_threshold: 100,
        block_records: 32,
        ..Options::default()
    };
    let db = Db::open(dir, opts).expect("open");
    for i in 0..500 {
        let value = if i % 10 == 0 {
            vec![b'x'; 300]
        } else {
            format!("v{i}").into_bytes()
        };
        db.put(format!("key{i:04}"), value).expect("put");
    }
    db.delete("key0001").expect("delete");
    db.put_expiring("key0003", "soon", 1 << 45)
        .expect("put_expiring");
    db.flush().expect("flush");
    let mut late = WriteBatch::new();
    late.put("late", "value")
        .put("late-big", vec![b'y'; 300])
        .delete("key0002");
    db.write(late).expect("write");
    db
}

/// The files of `dir` whose names end with `suffix`, sorted.
fn files(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("list")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect();
    v.sort();
    v
}

/// A copy of `file` under the same name in `to`, changed by `edit`.
fn damaged_copy(file: &Path, to: &Path, edit: impl FnOnce(&mut Vec<u8>)) -> PathBuf {
    let mut bytes = std::fs::read(file).expect("read");
    edit(&mut bytes);
    let copy = to.join(file.file_name().expect("name"));
    std::fs::write(&copy, bytes).expect("write");
    copy
}

#[test]
fn manifest_shows_every_edit_and_the_segment_accounting() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let db = build(tmp.path());
    // While the database is open: the open's snapshot, then the flush's edits.
    let path = current_manifest(tmp.path()).expect("CURRENT");
    let open = manifest(&path).expect("manifest");
    assert_eq!(open.end, FileEnd::Clean);
    assert!(open.edits.len() >= 2, "{open:?}");
    assert_eq!(open.edits[0].offset, crate::wal::HEADER_LEN as u64);
    assert!(open.edits.windows(2).all(|w| w[0].offset < w[1].offset));
    let added: Vec<&AddedFile> = open.edits.iter().flat_map(|e| &e.added).collect();
    assert!(!added.is_empty());
    assert!(added
        .iter()
        .all(|f| f.entries > 0 && f.smallest.user_key <= f.largest.user_key));
    db.close().expect("close");

    // A clean close leaves one snapshot edit.
    let closed = manifest(&current_manifest(tmp.path()).expect("CURRENT")).expect("manifest");
    assert_eq!(closed.end, FileEnd::Clean);
    assert_eq!(closed.edits.len(), 1);
    let snap = &closed.edits[0];
    assert!(snap.closed_cleanly);
    assert_eq!(snap.compaction_style_name(), Some("leveled"));
    assert!(snap.next_file_number.is_some() && snap.log_number.is_some());
    let tables = files(tmp.path(), ".sst");
    assert_eq!(snap.added.len(), tables.len());
    let f = &snap.added[0];
    assert_eq!(
        f.file_size,
        std::fs::metadata(&tables[0]).expect("size").len()
    );
    assert!(matches!(f.value_segments, ValueSegments::Range { .. }));
    assert_eq!(f.expiry.map(|x| x.entries), Some(1));
    let segment = files(tmp.path(), ".vlog")
        .first()
        .and_then(|p| p.file_name()?.to_str()?.strip_suffix(".vlog")?.parse().ok())
        .expect("a segment");
    assert!(!closed.segment_accounting(segment).deleted);
    assert!(!closed.segment_accounting(u64::MAX - 5).mentioned);

    // A flipped byte in the one record: reading stops there, nothing is decoded.
    let other = tempfile::tempdir().expect("tempdir");
    let copy = damaged_copy(
        &current_manifest(tmp.path()).expect("CURRENT"),
        other.path(),
        |b| {
            let at = crate::wal::HEADER_LEN + crate::wal::RECORD_HEADER_LEN + 3;
            b[at] ^= 0x40;
        },
    );
    let bad = manifest(&copy).expect("manifest");
    assert!(bad.edits.is_empty());
    // The first record is synced before CURRENT names the file: damage, never torn.
    assert!(
        matches!(bad.end, FileEnd::Damaged { offset: 20, .. }),
        "{:?}",
        bad.end
    );
    // Bytes after a clean close's snapshot are damage, not a torn append.
    let copy = damaged_copy(
        &current_manifest(tmp.path()).expect("CURRENT"),
        other.path(),
        |b| {
            b.extend_from_slice(&[1, 2, 3]);
        },
    );
    let bad = manifest(&copy).expect("manifest");
    assert_eq!(bad.edits.len(), 1);
    assert!(matches!(bad.end, FileEnd::Damaged { .. }), "{:?}", bad.end);
    // A damaged file header is an error.
    let copy = damaged_copy(&copy, other.path(), |b| b[0] ^= 1);
    assert!(matches!(
        manifest(&copy),
        Err(crate::Error::Corruption { offset: 0, .. })
    ));
}

#[test]
fn wal_shows_records_entries_and_where_a_torn_tail_starts() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let db = build(tmp.path());
    let wals = files(tmp.path(), ".wal");
    let live = wal(wals.last().expect("a WAL"), false).expect("wal");
    // Preallocated past its last record while the database has it open (on Linux).
    assert!(
        matches!(live.end, FileEnd::ZeroFilled { .. } | FileEnd::Clean),
        "{:?}",
        live.end
    );
    db.close().expect("close");
    drop(db); // which trims the preallocated WAL to its records
    let path = files(tmp.path(), ".wal").pop().expect("a WAL");
    let dump = wal(&path, true).expect("wal");
    assert_eq!(dump.end, FileEnd::Clean);
    let entries: Vec<&WalEntry> = dump.records.iter().flat_map(|r| &r.entries).collect();
    let find = |k: &str| {
        entries
            .iter()
            .find(|e| e.key == k.as_bytes())
            .unwrap_or_else(|| panic!("{k} in {entries:?}"))
    };
    let inline = find("late");
    assert_eq!(inline.value.kind, EntryKind::Value);
    assert_eq!(inline.value.bytes.as_deref(), Some(&b"value"[..]));
    let big = find("late-big");
    assert_eq!(big.value.kind, EntryKind::Pointer);
    assert_eq!(big.value.pointer.map(|p| p.len), Some(300));
    assert_eq!(big.value.bytes, None);
    assert_eq!(find("key0002").value.kind, EntryKind::Delete);
    assert_eq!(big.seqno, inline.seqno + 1);
    let without = wal(&path, false).expect("wal");
    assert!(without.records[0]
        .entries
        .iter()
        .all(|e| e.value.bytes.is_none()));

    // Cut inside the last record: a torn tail at that record's offset.
    let last = dump.records.last().expect("a record").offset;
    let other = tempfile::tempdir().expect("tempdir");
    let copy = damaged_copy(&path, other.path(), |b| b.truncate(last as usize + 10));
    let torn = wal(&copy, false).expect("wal");
    assert_eq!(torn.records.len(), dump.records.len() - 1);
    assert!(matches!(torn.end, FileEnd::Torn { offset, .. } if offset == last));
    // Zeros past the last record are no damage.
    let copy = damaged_copy(&path, other.path(), |b| b.extend_from_slice(&[0; 100]));
    let zeros = wal(&copy, false).expect("wal");
    assert_eq!(
        zeros.end,
        FileEnd::ZeroFilled {
            offset: dump.file_bytes
        }
    );
}

#[test]
fn vlog_walks_entries_and_stops_at_damage() {
    let tmp = tempfile::tempdir().expect("tempdir");
    build(tmp.path()).close().expect("close");
    let segments = files(tmp.path(), ".vlog");
    let path = segments.first().expect("a segment");
    let header = vlog(path).expect("vlog");
    assert_eq!(header.format_version, crate::vlog::SEGMENT_FORMAT_VERSION);
    let mut walk = vlog_entries(path).expect("entries");
    let entries: Vec<VlogEntry> = walk.by_ref().map(|e| e.expect("entry")).collect();
    assert_eq!(walk.end(), Some(&FileEnd::Clean));
    assert_eq!(entries.len(), 51, "50 separated values, then late-big");
    assert_eq!(entries[0].offset, header.header_bytes);
    assert_eq!(entries[0].key, b"key0000");
    assert!(entries.iter().all(|e| e.value_len == 300 && e.codec == 0));
    let end: u64 = entries
        .last()
        .map(|e| e.offset + e.entry_bytes)
        .unwrap_or(0);
    assert_eq!(end, header.file_bytes);

    let other = tempfile::tempdir().expect("tempdir");
    // A flipped byte in the tenth entry's value: damage there, nine entries before it.
    let at = entries[9].offset;
    let copy = damaged_copy(path, other.path(), |b| b[at as usize + 40] ^= 1);
    let mut walk = vlog_entries(&copy).expect("entries");
    assert_eq!(walk.by_ref().count(), 9);
    assert!(matches!(walk.end(), Some(FileEnd::Damaged { offset, .. }) if *offset == at));
    // Cut inside the last entry: a torn tail.
    let last = entries.last().map_or(0, |e| e.offset);
    let copy = damaged_copy(path, other.path(), |b| b.truncate(last as usize + 20));
    let mut walk = vlog_entries(&copy).expect("entries");
    assert_eq!(walk.by_ref().count(), entries.len() - 1);
    assert!(matches!(walk.end(), Some(FileEnd::Torn { offset, .. }) if *offset == last));
}

#[test]
fn sst_shows_layout_and_entries_and_stops_at_a_damaged_block() {
    let tmp = tempfile::tempdir().expect("tempdir");
    build(tmp.path()).close().expect("close");
    let tables = files(tmp.path(), ".sst");
    let path = tables.first().expect("a table");
    let dump = sst(path).expect("sst");
    let p = &dump.properties;
    // The flush keeps key0001's tombstone and key0003's expiring value, not what they hide.
    assert_eq!(p.entries, 500);
    assert_eq!((p.deletes, p.pointers, p.inline_values), (1, 50, 449));
    assert_eq!(dump.smallest.user_key, b"key0000");
    assert_eq!(dump.largest.user_key, b"key0499");
    // The sections tile the file, the footer last.
    assert_eq!(dump.sections[0].offset, 0);
    assert!(dump
        .sections
        .windows(2)
        .all(|w| w[0].offset + w[0].len == w[1].offset));
    let footer = dump.sections.last().expect("footer");
    assert_eq!(
        (footer.name, footer.offset + footer.len),
        ("footer", dump.file_bytes)
    );
    // Blocks of 32 entries, their entries adding up.
    assert_eq!(dump.blocks.len() as u64, p.blocks);
    assert_eq!(
        dump.blocks.iter().map(|b| b.entries).sum::<u64>(),
        p.entries
    );
    assert_eq!(dump.blocks[0].entries, 32);
    assert_eq!(dump.blocks.last().map(|b| &b.last_key), Some(&dump.largest));
    let model = dump.model.as_ref().expect("a model (learning at build)");
    assert!(model.checksum_ok);
    let m = model.decoded.as_ref().expect("decodes");
    assert_eq!(m.keys, p.entries);
    assert!(m.segments >= 1 && m.max_window >= 1);
    assert_eq!(m.error_bound, Some(Options::default().error_bound));

    let mut entries = sst_entries(path, true).expect("entries");
    let all: Vec<SstEntry> = entries.by_ref().map(|e| e.expect("entry")).collect();
    assert_eq!(entries.end(), Some(&FileEnd::Clean));
    assert_eq!(all.len() as u64, p.entries);
    assert!(all.windows(2).all(|w| w[0].key < w[1].key));
    let kind = |k: &str| {
        all.iter()
            .find(|e| e.key == k.as_bytes())
            .map(|e| e.value.kind)
    };
    assert_eq!(kind("key0000"), Some(EntryKind::Pointer));
    assert_eq!(kind("key0001"), Some(EntryKind::Delete));
    assert_eq!(kind("key0004"), Some(EntryKind::Value));
    let expiring = all.iter().find(|e| e.key == b"key0003").expect("key0003");
    assert_eq!(expiring.value.kind, EntryKind::ExpiringValue);
    assert_eq!(expiring.value.expire_at_ms, Some(1 << 45));
    assert_eq!(expiring.value.bytes.as_deref(), Some(&b"soon"[..]));

    // A flipped byte in block 2: the first two blocks' entries, then damage at block 2.
    let block = dump.blocks[2].clone();
    let other = tempfile::tempdir().expect("tempdir");
    let copy = damaged_copy(path, other.path(), |b| {
        b[block.data_offset as usize + 5] ^= 0x10
    });
    assert_eq!(
        sst(&copy).expect("no data block is read"),
        SstDump {
            path: copy.clone(),
            ..dump.clone()
        }
    );
    let mut entries = sst_entries(&copy, false).expect("entries");
    assert_eq!(entries.by_ref().count() as u64, block.first_position);
    assert!(
        matches!(entries.end(), Some(FileEnd::Damaged { offset, .. }) if *offset == block.data_offset),
        "{:?}",
        entries.end()
    );
    // A damaged footer is an error.
    let copy = damaged_copy(path, other.path(), |b| {
        let n = b.len();
        b[n - 20] ^= 1;
    });
    assert!(matches!(sst(&copy), Err(crate::Error::Corruption { .. })));
}
