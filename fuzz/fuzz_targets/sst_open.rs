//! Whole-table open (`sst/reader.rs`: footer, properties, filter, fence pointers, the
//! learned-model section of every index type): an arbitrary file opens or fails with a clean
//! `Corruption` naming it, in both read modes; a table that opens answers point lookups
//! without panicking (their errors must be clean too); opening allocates at most
//! `alloc_bound::bound` of the file's length.
#![no_main]

#[path = "alloc_bound.rs"]
mod alloc_bound;

#[global_allocator]
static ALLOC: alloc_bound::Counting = alloc_bound::Counting;

#[path = "common.rs"]
mod common;

use augur::fs::ReadMode;
use augur::sst::Table;
use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let path = Path::new("/db/000009.sst");
    let fs = common::fs_with(path, data);
    for mode in [ReadMode::Mmap, ReadMode::Pread] {
        match alloc_bound::check(data.len(), "table open", || Table::open(&fs, path, 9, mode)) {
            Ok(table) => {
                for key in [&b""[..], b"a", b"key0001", &[0xff; 20]] {
                    if let Err(e) = table.get(key, u64::MAX) {
                        common::check_clean_error(&e, path);
                    }
                }
            }
            Err(e) => common::check_clean_error(&e, path),
        }
    }
});
