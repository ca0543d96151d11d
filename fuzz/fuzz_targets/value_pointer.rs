//! Value pointers (stored in SSTables and WAL records): decode → encode round-trips, and only
//! inputs of exactly the encoded length decode.
#![no_main]

use augur::vlog::ValuePointer;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    match ValuePointer::decode(data) {
        Some(p) => assert_eq!(&p.encode()[..], data),
        None => assert_ne!(data.len(), ValuePointer::ENCODED_LEN),
    }
});
