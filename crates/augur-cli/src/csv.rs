//! The input of `load --csv`: one `key,value` record per line, split at the first comma, each
//! side decoded by the [`Codec`] (UTF-8 text, or hexadecimal with `--hex`). Empty lines are
//! skipped; a line may end in `\n` or `\r\n`, and one more `\r` before the end is dropped
//! (a file that ends in `\r` without a newline).

use crate::codec::Codec;
use crate::error::{io_err, CliError};
use std::io::BufRead;

/// One record: the key and value bytes.
pub type Record = (Vec<u8>, Vec<u8>);

/// The records of `input` in file order; `source` names the input in error messages
/// (`<source> line <n>: ...`).
///
/// # Errors
/// Each item is an error when the input cannot be read (`reading <source>: ...`), when a
/// line is not UTF-8 (`<source> line <n>: not UTF-8 ...`), when a non-empty line has no
/// comma, or when a side is bad hexadecimal under `--hex`. The caller stops at the first
/// error (`load` does).
pub fn records<'a, R: BufRead + 'a>(
    c: Codec,
    source: &'a str,
    input: R,
) -> impl Iterator<Item = Result<Record, CliError>> + 'a {
    numbered_records(c, source, input).map(|r| r.map(|(_, record)| record))
}

/// [`records`], each with its line number (from 1; empty lines count).
///
/// # Errors
/// As [`records`].
pub fn numbered_records<'a, R: BufRead + 'a>(
    c: Codec,
    source: &'a str,
    input: R,
) -> impl Iterator<Item = Result<(usize, Record), CliError>> + 'a {
    raw_lines(input).enumerate().filter_map(move |(i, line)| {
        let line = match line {
            Ok(line) => line,
            Err(e) => return Some(Err(io_err(format!("reading {source}"))(e))),
        };
        let line = match String::from_utf8(line) {
            Ok(line) => line,
            Err(e) => {
                let at = e.utf8_error().valid_up_to();
                let byte = e.as_bytes().get(at).copied().unwrap_or(0);
                return Some(Err(CliError::failed(format!(
                    "{source} line {}: not UTF-8 (byte 0x{byte:02x} at column {}; use --hex \
                     for binary keys and values)",
                    i + 1,
                    at + 1
                ))));
            }
        };
        parse_line(c, source, i + 1, &line)
            .map(|r| r.map(|record| (i + 1, record)))
            .transpose()
    })
}

/// The lines of `input` as bytes, as `BufRead::lines` splits them (without the `\n`, or the
/// `\r\n`, that ends each) but without decoding them, so a line that is not UTF-8 can be
/// reported with its number.
fn raw_lines<R: BufRead>(mut input: R) -> impl Iterator<Item = std::io::Result<Vec<u8>>> {
    std::iter::from_fn(move || {
        let mut line = Vec::new();
        match input.read_until(b'\n', &mut line) {
            Ok(0) => None,
            Ok(_) => {
                if line.last() == Some(&b'\n') {
                    line.pop();
                    if line.last() == Some(&b'\r') {
                        line.pop();
                    }
                }
                Some(Ok(line))
            }
            Err(e) => Some(Err(e)),
        }
    })
}

/// One line (without its `\n`) of `source`: `None` when it is empty.
fn parse_line(
    c: Codec,
    source: &str,
    line_no: usize,
    line: &str,
) -> Result<Option<Record>, CliError> {
    let line = line.strip_suffix('\r').unwrap_or(line);
    if line.is_empty() {
        return Ok(None);
    }
    let Some((k, v)) = line.split_once(',') else {
        return Err(CliError::failed(format!(
            "{source} line {line_no}: expected `key,value`"
        )));
    };
    let where_ = format!("{source} line {line_no}");
    let key = c.decode(&format!("key at {where_}"), k)?;
    let value = c.decode(&format!("value at {where_}"), v)?;
    Ok(Some((key, value)))
}

/// The line (with its line end) that [`records`] reads back as exactly `(key, value)`, or
/// `None` when no line can hold them: without `--hex`, bytes that are not UTF-8, a key with
/// a comma or a newline, or a value with a newline.
pub fn to_line(c: Codec, key: &[u8], value: &[u8]) -> Option<String> {
    let (k, v) = if c.hex {
        (hex::encode(key), hex::encode(value))
    } else {
        let k = std::str::from_utf8(key).ok()?;
        let v = std::str::from_utf8(value).ok()?;
        if k.contains([',', '\n']) || v.contains('\n') {
            return None;
        }
        (k.to_string(), v.to_string())
    };
    // A reader drops a `\r\n` line end and then one more `\r`: a value ending in `\r` needs
    // both in front of the newline to keep it.
    let end = if v.ends_with('\r') { "\r\r\n" } else { "\n" };
    Some(format!("{k},{v}{end}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(c: Codec, text: &str) -> Result<Vec<Record>, String> {
        records(c, "in.csv", text.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| match e {
                CliError::Failed(m) | CliError::NotFound(m) => m,
                CliError::Engine(e) => e.to_string(),
            })
    }

    #[test]
    fn lines_split_at_the_first_comma_and_skip_empty_ones() {
        let utf8 = Codec { hex: false };
        let r = parse(utf8, "a,1\r\n\nb,2,3\nc,\r").unwrap();
        let want: Vec<Record> = vec![
            (b"a".to_vec(), b"1".to_vec()),
            (b"b".to_vec(), b"2,3".to_vec()),
            (b"c".to_vec(), b"".to_vec()),
        ];
        assert_eq!(r, want);
        let numbered: Vec<usize> = numbered_records(utf8, "in.csv", &b"\na,1\r\n\nb,2\n"[..])
            .map(|r| r.unwrap().0)
            .collect();
        assert_eq!(numbered, vec![2, 4]);
        let err = parse(utf8, "a,1\nno comma\n").unwrap_err();
        assert_eq!(err, "in.csv line 2: expected `key,value`");
        let hex = Codec { hex: true };
        assert_eq!(
            parse(hex, "00FF,10\n").unwrap(),
            vec![(vec![0, 255], vec![16])]
        );
        let err = parse(hex, "0,10\n").unwrap_err();
        assert!(err.starts_with("bad hex in key at in.csv line 1"), "{err}");
        let err = parse(utf8, "a,\u{fffd}\n").map(|_| ());
        assert!(err.is_ok());
        let bad_utf8 = records(utf8, "in.csv", &b"a,1\nb,\xff\n"[..])
            .nth(1)
            .unwrap();
        assert!(
            matches!(&bad_utf8, Err(CliError::Failed(m)) if m.starts_with("in.csv line 2: not UTF-8 (byte 0xff at column 3")),
            "{bad_utf8:?}"
        );
    }

    #[test]
    fn to_line_is_read_back_exactly() {
        let cases: [(&[u8], &[u8]); 6] = [
            (b"k", b"v"),
            (b"", b""),
            (b"k", b"a,b"),
            (b"k", b"v\r"),
            (b"k\r", b"\r\r"),
            (b"\xff", b"\x00"),
        ];
        for hex in [false, true] {
            let c = Codec { hex };
            for (k, v) in cases {
                let Some(line) = to_line(c, k, v) else {
                    assert!(!hex && std::str::from_utf8(k).is_err());
                    continue;
                };
                assert_eq!(parse(c, &line).unwrap(), vec![(k.to_vec(), v.to_vec())]);
            }
        }
        let utf8 = Codec { hex: false };
        assert_eq!(to_line(utf8, b"a,b", b"v"), None);
        assert_eq!(to_line(utf8, b"k", b"v\n"), None);
    }
}
