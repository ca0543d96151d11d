//! Tests of [`MemFs`](super::MemFs): the in-memory file system alone, and the same engine-like
//! usage run against `StdFs`, `MemFs` and `FaultFs`.

use super::*;
use crate::fs::{FaultFs, StdFs};
use proptest::prelude::*;

fn io_kind<T>(result: Result<T>) -> Option<ErrorKind> {
    match result {
        Err(Error::Io { source, .. }) => Some(source.kind()),
        _ => None,
    }
}

fn write_file(fs: &dyn FileSystem, path: &Path, data: &[u8]) {
    let mut w = fs.create(path).unwrap();
    w.append(data).unwrap();
    w.sync().unwrap();
}

#[test]
fn write_then_read_back() {
    let fs = MemFs::new();
    fs.create_dir_all(Path::new("/db")).unwrap();
    let mut w = fs.create(Path::new("/db/a")).unwrap();
    assert!(w.is_empty());
    w.append(b"hello ").unwrap();
    w.append(b"world").unwrap();
    w.flush().unwrap();
    w.sync().unwrap();
    assert_eq!(w.len(), 11);
    assert_eq!(fs.read_all(Path::new("/db/a")).unwrap(), b"hello world");
    assert_eq!(fs.size(Path::new("/db/a")).unwrap(), 11);
    let r = fs.open(Path::new("/db/a"), ReadMode::Mmap).unwrap();
    assert!(r.as_slice().is_none());
    let mut buf = [0u8; 5];
    r.read_exact_at(6, &mut buf).unwrap();
    assert_eq!(&buf, b"world");
    assert_eq!(r.len().unwrap(), 11);
}

#[test]
fn open_reader_sees_later_appends() {
    let fs = MemFs::new();
    let mut w = fs.create(Path::new("log")).unwrap();
    w.append(b"abc").unwrap();
    let r = fs.open(Path::new("log"), ReadMode::Pread).unwrap();
    let mut buf = [0u8; 3];
    assert_eq!(
        io_kind(r.read_exact_at(3, &mut buf)),
        Some(ErrorKind::UnexpectedEof)
    );
    w.append(b"def").unwrap();
    assert_eq!(r.len().unwrap(), 6);
    r.read_exact_at(3, &mut buf).unwrap();
    assert_eq!(&buf, b"def");
}

#[test]
fn read_past_end_is_unexpected_eof() {
    let fs = MemFs::new();
    write_file(&fs, Path::new("f"), b"0123456789");
    let r = fs.open(Path::new("f"), ReadMode::Pread).unwrap();
    let mut buf = [0u8; 4];
    r.read_exact_at(6, &mut buf).unwrap();
    assert_eq!(
        io_kind(r.read_exact_at(7, &mut buf)),
        Some(ErrorKind::UnexpectedEof)
    );
    assert_eq!(
        io_kind(r.read_exact_at(u64::MAX, &mut buf)),
        Some(ErrorKind::UnexpectedEof)
    );
    // An empty read at the very end is fine.
    r.read_exact_at(10, &mut []).unwrap();
}

#[test]
fn missing_directories_and_files_are_not_found() {
    let fs = MemFs::new();
    assert_eq!(
        io_kind(fs.list(Path::new("/nope"))),
        Some(ErrorKind::NotFound)
    );
    assert_eq!(
        io_kind(fs.create(Path::new("/nope/f"))),
        Some(ErrorKind::NotFound)
    );
    assert_eq!(
        io_kind(fs.open(Path::new("/f"), ReadMode::Pread)),
        Some(ErrorKind::NotFound)
    );
    assert_eq!(
        io_kind(fs.read_all(Path::new("/f"))),
        Some(ErrorKind::NotFound)
    );
    assert_eq!(
        io_kind(fs.remove(Path::new("/f"))),
        Some(ErrorKind::NotFound)
    );
    assert_eq!(io_kind(fs.size(Path::new("/f"))), Some(ErrorKind::NotFound));
    assert_eq!(
        io_kind(fs.rename(Path::new("/f"), Path::new("/g"))),
        Some(ErrorKind::NotFound)
    );
    assert!(!fs.exists(Path::new("/f")));
}

#[test]
fn rename_replaces_target_and_old_readers_keep_their_bytes() {
    let fs = MemFs::new();
    fs.create_dir_all(Path::new("d")).unwrap();
    write_file(&fs, Path::new("d/CURRENT"), b"old");
    write_file(&fs, Path::new("d/tmp"), b"new");
    let old_reader = fs.open(Path::new("d/CURRENT"), ReadMode::Pread).unwrap();
    fs.rename(Path::new("d/tmp"), Path::new("d/CURRENT"))
        .unwrap();
    assert!(!fs.exists(Path::new("d/tmp")));
    assert_eq!(fs.read_all(Path::new("d/CURRENT")).unwrap(), b"new");
    assert_eq!(fs.list(Path::new("d")).unwrap(), vec!["CURRENT"]);
    let mut buf = [0u8; 3];
    old_reader.read_exact_at(0, &mut buf).unwrap();
    assert_eq!(&buf, b"old");
}

#[test]
fn rename_across_directories() {
    let fs = MemFs::new();
    fs.create_dir_all(Path::new("/a")).unwrap();
    fs.create_dir_all(Path::new("/b")).unwrap();
    write_file(&fs, Path::new("/a/x"), b"x");
    fs.rename(Path::new("/a/x"), Path::new("/b/y")).unwrap();
    assert_eq!(fs.list(Path::new("/a")).unwrap(), Vec::<String>::new());
    assert_eq!(fs.read_all(Path::new("/b/y")).unwrap(), b"x");
}

#[test]
fn remove_and_list() {
    let fs = MemFs::new();
    fs.create_dir_all(Path::new("/db/sub/deeper")).unwrap();
    for name in ["b", "a", "c"] {
        write_file(&fs, &Path::new("/db").join(name), name.as_bytes());
    }
    assert_eq!(
        fs.list(Path::new("/db")).unwrap(),
        vec!["a", "b", "c", "sub"]
    );
    assert_eq!(
        fs.list(Path::new("/db/")).unwrap(),
        vec!["a", "b", "c", "sub"]
    );
    assert_eq!(fs.list(Path::new("/db/sub")).unwrap(), vec!["deeper"]);
    assert!(fs.exists(Path::new("/db/sub")));
    fs.remove(Path::new("/db/b")).unwrap();
    assert!(!fs.exists(Path::new("/db/b")));
    assert_eq!(fs.list(Path::new("/db")).unwrap(), vec!["a", "c", "sub"]);
    // Directories are not files.
    assert_eq!(
        io_kind(fs.remove(Path::new("/db/sub"))),
        Some(ErrorKind::NotFound)
    );
    assert_eq!(
        io_kind(fs.create(Path::new("/db/sub"))),
        Some(ErrorKind::AlreadyExists)
    );
    assert_eq!(
        io_kind(fs.create_dir_all(Path::new("/db/a/x"))),
        Some(ErrorKind::AlreadyExists)
    );
}

/// `open_append` continues after the last byte on every file system; its first sync makes
/// what an earlier handle left unsynced durable too (FaultFs, which also counts it as `Any`).
#[test]
fn open_append_continues_the_file_and_its_sync_covers_earlier_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let fault = FaultFs::new();
    let std_path = dir.path().join("f");
    for (fs, path) in [
        (&StdFs as &dyn FileSystem, std_path.as_path()),
        (&MemFs::new(), Path::new("f")),
        (&fault, Path::new("/f")),
    ] {
        let mut w = fs.create(path).unwrap();
        w.append(b"synced|").unwrap();
        w.sync().unwrap();
        w.append(b"handed to the OS|").unwrap();
        w.flush().unwrap();
        drop(w);
        assert!(fs.open_append(&dir.path().join("missing")).is_err());
        let mut w = fs.open_append(path).unwrap();
        assert_eq!(w.len(), 24);
        w.append(b"more").unwrap();
        w.sync().unwrap();
        assert_eq!(w.len(), 28);
        assert_eq!(fs.read_all(path).unwrap(), b"synced|handed to the OS|more");
    }
    fault.sync_dir(Path::new("/")).unwrap();
    let mut w = fault.open_append(Path::new("/f")).unwrap();
    w.append(b"+lost").unwrap();
    w.flush().unwrap();
    let any = fault.op_count(crate::fs::FaultOp::Any);
    drop(fault.open_append(Path::new("/f")).unwrap());
    assert_eq!(fault.op_count(crate::fs::FaultOp::Any), any + 1);
    fault.crash();
    fault.reopen_after_crash();
    assert_eq!(
        fault.read_all(Path::new("/f")).unwrap(),
        b"synced|handed to the OS|more"
    );
}

#[test]
fn create_truncates_an_existing_file() {
    let fs = MemFs::new();
    write_file(&fs, Path::new("f"), b"long content");
    write_file(&fs, Path::new("f"), b"short");
    assert_eq!(fs.read_all(Path::new("f")).unwrap(), b"short");
}

#[test]
fn second_lock_is_busy_until_the_guard_drops() {
    let fs = MemFs::new();
    fs.create_dir_all(Path::new("/db")).unwrap();
    let guard = fs.lock(Path::new("/db/LOCK")).unwrap();
    assert!(fs.exists(Path::new("/db/LOCK")));
    assert!(matches!(
        fs.lock(Path::new("/db/LOCK")),
        Err(Error::Busy(_))
    ));
    assert!(matches!(
        fs.clone().lock(Path::new("/db//LOCK")),
        Err(Error::Busy(_))
    ));
    drop(guard);
    let _again = fs.lock(Path::new("/db/LOCK")).unwrap();
    assert_eq!(
        io_kind(fs.lock(Path::new("/missing/LOCK")).map(|_| ())),
        Some(ErrorKind::NotFound)
    );
}

#[test]
fn torn_len_is_a_proper_prefix() {
    for len in 0..40usize {
        for seq in 0..6u64 {
            let kept = torn_len(len, seq);
            assert!(kept < len || len == 0, "len {len} seq {seq} kept {kept}");
        }
    }
    assert_eq!(torn_len(8, 0), 2);
    assert_eq!(torn_len(8, 1), 4);
    assert_eq!(torn_len(8, 2), 6);
    assert_eq!(torn_len(usize::MAX, 2), usize::MAX / 4 * 3 + 2);
}

/// The usage pattern of the engine, which must behave the same on every file system.
fn engine_like_usage(fs: &dyn FileSystem, root: &Path) -> Vec<String> {
    let dir = root.join("db");
    fs.create_dir_all(&dir).unwrap();
    let _lock = fs.lock(&dir.join("LOCK")).unwrap();
    let sst = dir.join("000001.sst");
    let mut w = fs.create(&sst).unwrap();
    for i in 0..100u32 {
        w.append(&i.to_le_bytes()).unwrap();
    }
    w.sync().unwrap();
    fs.sync_dir(&dir).unwrap();
    assert_eq!(fs.size(&sst).unwrap(), 400);
    for mode in [ReadMode::Mmap, ReadMode::Pread] {
        let r = fs.open(&sst, mode).unwrap();
        assert_eq!(r.len().unwrap(), 400);
        let mut word = [0u8; 4];
        r.read_exact_at(4 * 42, &mut word).unwrap();
        assert_eq!(u32::from_le_bytes(word), 42);
        if let Some(all) = r.as_slice() {
            assert_eq!(all.len(), 400);
        }
        assert_eq!(
            io_kind(r.read_exact_at(398, &mut word)),
            Some(ErrorKind::UnexpectedEof)
        );
    }
    let tmp = dir.join("CURRENT.tmp");
    write_file(fs, &tmp, b"MANIFEST-000002\n");
    fs.rename(&tmp, &dir.join("CURRENT")).unwrap();
    fs.sync_dir(&dir).unwrap();
    assert_eq!(
        fs.read_all(&dir.join("CURRENT")).unwrap(),
        b"MANIFEST-000002\n"
    );
    assert!(fs.exists(&sst));
    let mut names = fs.list(&dir).unwrap();
    names.sort();
    names
}

#[test]
fn same_usage_gives_same_results_on_std_mem_and_fault_fs() {
    let tmp = tempfile::tempdir().unwrap();
    let on_disk = engine_like_usage(&StdFs, tmp.path());
    assert_eq!(on_disk, vec!["000001.sst", "CURRENT", "LOCK"]);
    assert_eq!(
        engine_like_usage(&MemFs::new(), Path::new("/tmp/x")),
        on_disk
    );
    assert_eq!(
        engine_like_usage(&FaultFs::new(), Path::new("rel")),
        on_disk
    );
}

#[test]
fn handles_are_usable_from_other_threads() {
    let fs = MemFs::new();
    let mut w = fs.create(Path::new("f")).unwrap();
    let r = fs.open(Path::new("f"), ReadMode::Pread).unwrap();
    let writer = std::thread::spawn(move || {
        for i in 0..50u8 {
            w.append(&[i]).unwrap();
        }
    });
    writer.join().unwrap();
    let mut buf = [0u8; 50];
    r.read_exact_at(0, &mut buf).unwrap();
    assert!(buf.iter().enumerate().all(|(i, b)| usize::from(*b) == i));
}

#[test]
fn hard_links_share_bytes_and_need_a_directory_sync() {
    let fs = FaultFs::new();
    fs.create_dir_all(Path::new("/a")).unwrap();
    fs.create_dir_all(Path::new("/b")).unwrap();
    let mut w = fs.create(Path::new("/a/f")).unwrap();
    w.append(b"durable").unwrap();
    w.sync().unwrap();
    fs.sync_dir(Path::new("/a")).unwrap();
    fs.hard_link(Path::new("/a/f"), Path::new("/b/kept"))
        .unwrap();
    fs.sync_dir(Path::new("/b")).unwrap();
    fs.hard_link(Path::new("/a/f"), Path::new("/b/lost"))
        .unwrap();
    assert!(fs
        .hard_link(Path::new("/a/f"), Path::new("/b/kept"))
        .is_err());
    assert!(fs
        .hard_link(Path::new("/a/missing"), Path::new("/b/x"))
        .is_err());
    w.append(b"+more").unwrap();
    assert_eq!(fs.read_all(Path::new("/b/kept")).unwrap(), b"durable+more");
    fs.remove(Path::new("/a/f")).unwrap();
    fs.sync_dir(Path::new("/a")).unwrap();
    fs.crash();
    fs.reopen_after_crash();
    assert_eq!(fs.read_all(Path::new("/b/kept")).unwrap(), b"durable");
    assert!(
        !fs.exists(Path::new("/b/lost")),
        "its name was never synced"
    );
    assert!(!fs.exists(Path::new("/a/f")));
}

#[test]
fn directories_rename_with_their_subtree_and_remove_when_empty() {
    let fs = MemFs::new();
    fs.create_dir_all(Path::new("/x/stage/sub")).unwrap();
    let mut w = fs.create(Path::new("/x/stage/sub/f")).unwrap();
    w.append(b"1").unwrap();
    fs.create_dir_all(Path::new("/x/taken")).unwrap();
    assert!(fs
        .rename_dir(Path::new("/x/stage"), Path::new("/x/taken"))
        .is_err());
    assert!(fs
        .rename_dir(Path::new("/x/stage"), Path::new("/x/stage/sub/in"))
        .is_err());
    assert!(fs
        .rename_dir(Path::new("/x/none"), Path::new("/x/y"))
        .is_err());
    fs.rename_dir(Path::new("/x/stage"), Path::new("/x/final"))
        .unwrap();
    assert!(!fs.exists(Path::new("/x/stage")));
    assert_eq!(fs.read_all(Path::new("/x/final/sub/f")).unwrap(), b"1");
    assert_eq!(fs.list(Path::new("/x")).unwrap(), vec!["final", "taken"]);
    assert!(
        fs.remove_dir(Path::new("/x/final/sub")).is_err(),
        "not empty"
    );
    assert!(
        fs.remove_dir(Path::new("/x/final")).is_err(),
        "has a subdirectory"
    );
    fs.remove(Path::new("/x/final/sub/f")).unwrap();
    fs.remove_dir(Path::new("/x/final/sub")).unwrap();
    fs.remove_dir(Path::new("/x/final")).unwrap();
    assert_eq!(fs.list(Path::new("/x")).unwrap(), vec!["taken"]);
    assert!(fs.remove_dir(Path::new("/x/final")).is_err(), "gone");
}

proptest! {
    #[test]
    fn reads_match_appended_bytes(
        chunks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..64), 0..16),
        offset in 0u64..1200,
        len in 0usize..200,
    ) {
        let fs = MemFs::new();
        let mut w = fs.create(Path::new("f")).unwrap();
        let r = fs.open(Path::new("f"), ReadMode::Pread).unwrap();
        let mut model = Vec::new();
        for chunk in &chunks {
            w.append(chunk).unwrap();
            model.extend_from_slice(chunk);
        }
        prop_assert_eq!(w.len(), model.len() as u64);
        prop_assert_eq!(r.len().unwrap(), model.len() as u64);
        let mut buf = vec![0u8; len];
        let expected = model.get(offset as usize..offset as usize + len);
        match (r.read_exact_at(offset, &mut buf), expected) {
            (Ok(()), Some(want)) => prop_assert_eq!(&buf[..], want),
            (Err(e), None) => prop_assert_eq!(io_kind::<()>(Err(e)), Some(ErrorKind::UnexpectedEof)),
            (got, want) => prop_assert!(false, "read {:?} but model {:?}", got.is_ok(), want),
        }
    }
}
