//! Backup metadata files (`augur::backup::BackupMeta`): decoding arbitrary bytes never
//! panics, whatever decodes re-encodes to exactly the input (the format has one encoding),
//! and decoding allocates at most `alloc_bound::bound` of the input length.
#![no_main]

#[path = "alloc_bound.rs"]
mod alloc_bound;

#[global_allocator]
static ALLOC: alloc_bound::Counting = alloc_bound::Counting;

use augur::backup::BackupMeta;
use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let decoded = alloc_bound::check(data.len(), "backup metadata", || {
        BackupMeta::decode(Path::new("meta/00000001"), data).ok()
    });
    if let Some(meta) = decoded {
        assert_eq!(meta.encode(), data, "one encoding per metadata file");
    }
});
