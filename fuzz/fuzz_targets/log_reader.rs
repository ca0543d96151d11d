//! The log framing shared by WALs and manifests (`wal/reader.rs`), and the records inside:
//! reading an arbitrary file as a WAL or a manifest returns its records and a tail verdict,
//! or a clean `Corruption` naming the file; every manifest record either decodes as a
//! version edit or is rejected, never panics; reading allocates at most `alloc_bound::bound`
//! of the file's length. The first input byte picks the kind.
#![no_main]

#[path = "alloc_bound.rs"]
mod alloc_bound;

#[global_allocator]
static ALLOC: alloc_bound::Counting = alloc_bound::Counting;

#[path = "common.rs"]
mod common;

use augur::version::VersionEdit;
use augur::wal::{read_log, LogKind};
use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let Some((&kind, bytes)) = data.split_first() else {
        return;
    };
    let (kind, path) = if kind % 2 == 0 {
        (LogKind::Wal, Path::new("/db/000007.wal"))
    } else {
        (LogKind::Manifest, Path::new("/db/MANIFEST-000007"))
    };
    let fs = common::fs_with(path, bytes);
    match alloc_bound::check(bytes.len(), "log read", || read_log(&fs, path, kind)) {
        Ok(contents) => {
            let mut total = 0usize;
            for (offset, record) in &contents.records {
                assert!(
                    (*offset as usize) < bytes.len(),
                    "record offset beyond the file"
                );
                total += record.len();
                if kind == LogKind::Manifest {
                    let _ = VersionEdit::decode(record);
                }
            }
            // Records are carved out of the file: they cannot hold more bytes than it.
            assert!(total <= bytes.len());
        }
        Err(e) => common::check_clean_error(&e, path),
    }
});
