//! Backup metadata files (`augur::backup::BackupMeta`): decoding arbitrary bytes never
//! panics, whatever decodes re-encodes to exactly the input (the format has one encoding),
//! and decoding allocates at most `alloc_bound::bound` of the input length. Each input is
//! decoded twice: as it is, and with its last 4 bytes replaced by the checksum of the rest,
//! so the fuzzer explores the body's decoder past the checksum too.
#![no_main]

#[path = "alloc_bound.rs"]
mod alloc_bound;

#[global_allocator]
static ALLOC: alloc_bound::Counting = alloc_bound::Counting;

use augur::backup::BackupMeta;
use libfuzzer_sys::fuzz_target;
use std::path::Path;

fn decode_and_check(data: &[u8]) {
    let decoded = alloc_bound::check(data.len(), "backup metadata", || {
        BackupMeta::decode(Path::new("meta/00000001"), data).ok()
    });
    if let Some(meta) = decoded {
        assert_eq!(meta.encode(), data, "one encoding per metadata file");
    }
}

fuzz_target!(|data: &[u8]| {
    decode_and_check(data);
    if data.len() >= 4 {
        let mut fixed = data.to_vec();
        let body = fixed.len() - 4;
        let sum = augur::checksum::crc(&fixed[..body]);
        fixed[body..].copy_from_slice(&sum.to_le_bytes());
        decode_and_check(&fixed);
    }
});
