//! Manifest version edits: decoding arbitrary bytes never panics, and whatever decodes
//! re-encodes to bytes that decode to the same edit.
#![no_main]

use augur::version::VersionEdit;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Some(edit) = VersionEdit::decode(data) {
        let again = VersionEdit::decode(&edit.encode()).expect("an encoded edit decodes");
        assert_eq!(again, edit);
    }
});
