//! Manifest version edits: decoding arbitrary bytes never panics, and whatever decodes
//! re-encodes to bytes that decode to the same edit; decoding allocates at most
//! `alloc_bound::bound` of the input length.
#![no_main]

#[path = "alloc_bound.rs"]
mod alloc_bound;

#[global_allocator]
static ALLOC: alloc_bound::Counting = alloc_bound::Counting;

use augur::version::VersionEdit;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Some(edit) = alloc_bound::check(data.len(), "version edit", || VersionEdit::decode(data))
    {
        let again = VersionEdit::decode(&edit.encode()).expect("an encoded edit decodes");
        assert_eq!(again, edit);
    }
});
