//! Value-log segments (`vlog/segment.rs`): an arbitrary file opens as segment 5 or fails
//! cleanly, and walking its entries (what GC and `verify` do) yields entries or a clean
//! `Corruption` naming the file, ending without panicking; opening allocates at most
//! `alloc_bound::bound` of the file's length.
#![no_main]

#[path = "alloc_bound.rs"]
mod alloc_bound;

#[global_allocator]
static ALLOC: alloc_bound::Counting = alloc_bound::Counting;

#[path = "common.rs"]
mod common;

use augur::fs::ReadMode;
use augur::vlog::{segment_file_name, SegmentReader};
use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let dir = Path::new("/db");
    let path = dir.join(segment_file_name(5));
    let fs = common::fs_with(&path, data);
    for mode in [ReadMode::Mmap, ReadMode::Pread] {
        match alloc_bound::check(data.len(), "segment open", || {
            SegmentReader::open(&fs, dir, 5, mode)
        }) {
            Ok(reader) => {
                for entry in reader.entries().take(100_000) {
                    if let Err(e) = entry {
                        common::check_clean_error(&e, &path);
                        break;
                    }
                }
            }
            Err(e) => common::check_clean_error(&e, &path),
        }
    }
});
