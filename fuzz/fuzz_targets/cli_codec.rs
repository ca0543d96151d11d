//! The CLI's input decoders (`augur_cli::codec`, `augur_cli::csv`): keys and values given
//! as UTF-8 or `--hex` text, and `load --csv` files. The first input byte picks the mode
//! (modulo 3) and, by bit 2, `--hex`:
//! - 0: the rest, as text (lossily made UTF-8, as a shell argument must be), is decoded as a
//!   key: `Ok` or an error with a message naming what was decoded; what decodes prints back
//!   (`display`) as the text itself (lower-cased under `--hex`);
//! - 1: the rest is a CSV file: its records, or an error with a message naming the file;
//!   what parses re-serialises (`csv::to_line`) to a file that parses to the same records;
//! - 2: the rest is bytes: under `--hex` `display` → `decode` gives them back; in JSON
//!   output (`json_insert`) they survive either as text or in the `_hex` field.
//!
//! Nothing panics, and parsing allocates at most `alloc_bound::bound` of the input length.
#![no_main]

#[path = "alloc_bound.rs"]
mod alloc_bound;

#[global_allocator]
static ALLOC: alloc_bound::Counting = alloc_bound::Counting;

use augur_cli::codec::Codec;
use augur_cli::csv;
use augur_cli::error::CliError;
use libfuzzer_sys::fuzz_target;

/// The CSV file's name in error messages.
const SOURCE: &str = "/data/in.csv";

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let c = Codec { hex: mode & 4 != 0 };
    match mode % 3 {
        0 => text(c, rest),
        1 => csv_file(c, rest),
        _ => bytes(c, rest),
    }
});

/// The message of a failure (a `NotFound` or an engine failure is not an input error: it is
/// a finding).
fn message(e: CliError) -> String {
    match e {
        CliError::Failed(m) => {
            assert!(!m.is_empty(), "an error without a message");
            m
        }
        CliError::NotFound(m) => panic!("input decoding returned NotFound: {m}"),
        // Decoding a key or a file never touches a database.
        CliError::Engine(e) => panic!("input decoding returned an engine failure: {e}"),
    }
}

fn text(c: Codec, rest: &[u8]) {
    let text = String::from_utf8_lossy(rest);
    match alloc_bound::check(rest.len(), "decode", || c.decode("key", &text)) {
        Ok(bytes) => {
            let shown = c.display(&bytes);
            if c.hex {
                assert_eq!(shown, text.to_ascii_lowercase().into_bytes());
            } else {
                assert_eq!(shown, text.as_bytes());
            }
        }
        Err(e) => {
            let m = message(e);
            assert!(c.hex, "UTF-8 text cannot fail to decode: {m}");
            assert!(m.starts_with("bad hex in key "), "{m}");
        }
    }
}

fn parse(c: Codec, file: &[u8]) -> Result<Vec<csv::Record>, CliError> {
    csv::records(c, SOURCE, file).collect()
}

fn csv_file(c: Codec, rest: &[u8]) {
    match alloc_bound::check(rest.len(), "csv parse", || parse(c, rest)) {
        Ok(records) => {
            let mut again = String::new();
            for (k, v) in &records {
                let line = csv::to_line(c, k, v)
                    .unwrap_or_else(|| panic!("a parsed record has no line: {k:?} {v:?}"));
                again.push_str(&line);
            }
            let reparsed = parse(c, again.as_bytes()).expect("re-serialised records parse");
            assert_eq!(reparsed, records, "records changed through to_line");
        }
        Err(e) => {
            let m = message(e);
            assert!(
                m.contains(SOURCE),
                "a CSV error does not name the file: {m}"
            );
        }
    }
}

fn bytes(c: Codec, rest: &[u8]) {
    let shown = c.display(rest);
    if c.hex {
        let text = String::from_utf8(shown).expect("hex output is ASCII");
        assert_eq!(c.decode("value", &text).expect("hex output decodes"), rest);
    } else {
        assert_eq!(shown, rest);
    }
    let mut obj = serde_json::Map::new();
    c.json_insert(&mut obj, "value", rest);
    let back = match (obj.get("value"), obj.get("value_hex")) {
        (Some(serde_json::Value::String(s)), None) if c.hex => {
            hex::decode(s).expect("hex field decodes")
        }
        (Some(serde_json::Value::String(s)), None) => s.clone().into_bytes(),
        (None, Some(serde_json::Value::String(s))) => {
            assert!(!c.hex && std::str::from_utf8(rest).is_err());
            hex::decode(s).expect("_hex field decodes")
        }
        other => panic!("unexpected JSON fields {other:?}"),
    };
    assert_eq!(back, rest, "JSON output lost bytes");
}
