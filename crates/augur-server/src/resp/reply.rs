//! Replies in: a RESP2 reply parser for the server's tests, the fuzz target and simple
//! clients. Bounded as the request parser is: lines at most [`MAX_LINE_BYTES`](super::MAX_LINE_BYTES), arrays at
//! most [`MAX_REPLY_DEPTH`] deep, nothing allocated for a bulk or an array before its bytes
//! are there.

use super::encode::{
    put_array_header, put_bulk, put_error, put_integer, put_null_array, put_null_bulk, put_simple,
};
use super::{header_line, parse_i64, show_byte, ProtocolError};
use bytes::BytesMut;

/// Deepest nesting of arrays [`try_parse_reply`] accepts (it recurses once per level).
pub const MAX_REPLY_DEPTH: usize = 64;

/// Most array elements reserved before they arrive.
const PREALLOC_ITEMS: usize = 1024;

/// A RESP2 reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// `+<text>\r\n` (`+OK`), the text lossily made UTF-8.
    Simple(String),
    /// `-<text>\r\n`: everything after the `-` (`ERR unknown command`), lossily UTF-8.
    Error(String),
    /// `:<n>\r\n`.
    Integer(i64),
    /// `$<len>\r\n<bytes>\r\n`, or `None` for the null bulk `$-1\r\n`.
    Bulk(Option<Vec<u8>>),
    /// `*<n>\r\n` and n replies, or `None` for the null array `*-1\r\n`.
    Array(Option<Vec<Reply>>),
}

impl Reply {
    /// A bulk reply of `data` (for tests: `Reply::bulk("v")`).
    pub fn bulk(data: impl AsRef<[u8]>) -> Self {
        Reply::Bulk(Some(data.as_ref().to_vec()))
    }
}

/// Parses one reply from the front of `buf`: `Some((reply, consumed))`, or `None` when
/// more bytes are needed or the bytes are not a valid reply ([`try_parse_reply`] tells the
/// two apart).
pub fn parse_reply(buf: &[u8]) -> Option<(Reply, usize)> {
    try_parse_reply(buf).ok().flatten()
}

/// Parses one reply from the front of `buf`: `Ok(Some((reply, consumed)))` for a complete
/// reply, `Ok(None)` when more bytes are needed.
///
/// Strict where RESP2 is: integers and lengths as Redis's `string2ll` reads them, `-1` the
/// only negative length, every line ending `\r\n` with no other `\r` or `\n` in it, every
/// bulk followed by `\r\n`. So a reply re-encoded with [`put_reply`] gives back the bytes it
/// was parsed from (when its simple strings and errors are UTF-8).
///
/// # Errors
///
/// [`ProtocolError`] when the bytes can never form a valid reply: an unknown type byte, a
/// malformed line or length, a line longer than [`MAX_LINE_BYTES`](super::MAX_LINE_BYTES), arrays nested more than
/// [`MAX_REPLY_DEPTH`] deep.
pub fn try_parse_reply(buf: &[u8]) -> Result<Option<(Reply, usize)>, ProtocolError> {
    parse_at(buf, 0)
}

fn parse_at(buf: &[u8], depth: usize) -> Result<Option<(Reply, usize)>, ProtocolError> {
    let Some(&kind) = buf.first() else {
        return Ok(None);
    };
    if !matches!(kind, b'+' | b'-' | b':' | b'$' | b'*') {
        return Err(ProtocolError::new(format!(
            "unknown reply type '{}'",
            show_byte(kind)
        )));
    }
    let Some((line, header)) = header_line(buf, "too big reply line", "invalid reply line")? else {
        return Ok(None);
    };
    let invalid = || ProtocolError::new(format!("invalid '{}' reply", char::from(kind)));
    let reply = match kind {
        b'+' | b'-' => {
            if line.contains(&b'\n') {
                return Err(invalid());
            }
            let text = String::from_utf8_lossy(line).into_owned();
            if kind == b'+' {
                Reply::Simple(text)
            } else {
                Reply::Error(text)
            }
        }
        b':' => Reply::Integer(parse_i64(line).ok_or_else(invalid)?),
        b'$' => {
            let Some(len) = length(line).ok_or_else(invalid)? else {
                return Ok(Some((Reply::Bulk(None), header)));
            };
            let end = header.saturating_add(len);
            for (i, want) in [b'\r', b'\n'].into_iter().enumerate() {
                match buf.get(end.saturating_add(i)) {
                    None => return Ok(None),
                    Some(&b) if b == want => {}
                    Some(_) => return Err(invalid()),
                }
            }
            let data = buf.get(header..end).unwrap_or_default().to_vec();
            return Ok(Some((Reply::Bulk(Some(data)), end + 2)));
        }
        _ => {
            let Some(len) = length(line).ok_or_else(invalid)? else {
                return Ok(Some((Reply::Array(None), header)));
            };
            if depth >= MAX_REPLY_DEPTH {
                return Err(ProtocolError::new(format!(
                    "reply nested deeper than {MAX_REPLY_DEPTH} arrays"
                )));
            }
            let mut items = Vec::with_capacity(len.min(PREALLOC_ITEMS));
            let mut pos = header;
            while items.len() < len {
                let rest = buf.get(pos..).unwrap_or_default();
                let Some((item, taken)) = parse_at(rest, depth + 1)? else {
                    return Ok(None);
                };
                items.push(item);
                pos += taken;
            }
            return Ok(Some((Reply::Array(Some(items)), pos)));
        }
    };
    Ok(Some((reply, header)))
}

/// A bulk or array length: `Some(Some(n))`, `Some(None)` for `-1` (null), `None` when invalid.
fn length(line: &[u8]) -> Option<Option<usize>> {
    match parse_i64(line)? {
        -1 => Some(None),
        n => usize::try_from(n).ok().map(Some),
    }
}

/// Appends `reply` in RESP2 (`\r` and `\n` in simple strings and errors become spaces).
pub fn put_reply(out: &mut BytesMut, reply: &Reply) {
    match reply {
        Reply::Simple(text) => put_simple(out, text),
        Reply::Error(text) => put_error(out, text),
        Reply::Integer(n) => put_integer(out, *n),
        Reply::Bulk(Some(data)) => put_bulk(out, data),
        Reply::Bulk(None) => put_null_bulk(out),
        Reply::Array(Some(items)) => {
            put_array_header(out, items.len());
            for item in items {
                put_reply(out, item);
            }
        }
        Reply::Array(None) => put_null_array(out),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use crate::resp::MAX_LINE_BYTES;

    fn parse(text: &[u8]) -> Result<Option<(Reply, usize)>, ProtocolError> {
        try_parse_reply(text)
    }

    #[test]
    fn each_type() {
        let cases: Vec<(&[u8], Reply)> = vec![
            (b"+OK\r\n", Reply::Simple("OK".into())),
            (b"+\r\n", Reply::Simple(String::new())),
            (b"-ERR no\r\n", Reply::Error("ERR no".into())),
            (b":-7\r\n", Reply::Integer(-7)),
            (b"$3\r\na\r\n\r\n", Reply::bulk("a\r\n")),
            (b"$0\r\n\r\n", Reply::bulk("")),
            (b"$-1\r\n", Reply::Bulk(None)),
            (b"*-1\r\n", Reply::Array(None)),
            (b"*0\r\n", Reply::Array(Some(vec![]))),
            (
                b"*3\r\n:1\r\n$-1\r\n*1\r\n+x\r\n",
                Reply::Array(Some(vec![
                    Reply::Integer(1),
                    Reply::Bulk(None),
                    Reply::Array(Some(vec![Reply::Simple("x".into())])),
                ])),
            ),
        ];
        for (bytes, want) in cases {
            assert_eq!(parse(bytes), Ok(Some((want.clone(), bytes.len()))));
            let mut out = BytesMut::new();
            put_reply(&mut out, &want);
            assert_eq!(&out[..], bytes);
            // Every proper prefix needs more bytes.
            for cut in 0..bytes.len() {
                assert_eq!(parse(&bytes[..cut]), Ok(None), "{want:?} cut at {cut}");
            }
        }
        assert_eq!(
            parse_reply(b"+OK\r\n+more"),
            Some((Reply::Simple("OK".into()), 5))
        );
    }

    #[test]
    fn malformed() {
        for bytes in [
            &b"?\r\n"[..],
            b"+a\rb\r\n",
            b"+a\nb\r\n",
            b":+1\r\n",
            b":01\r\n",
            b":\r\n",
            b"$-2\r\n",
            b"$1\r\nab\r\n",
            b"$01\r\na\r\n",
            b"*-2\r\n",
            b"*x\r\n",
            b"*1\r\n?",
        ] {
            assert!(
                parse(bytes).is_err(),
                "{:?}",
                String::from_utf8_lossy(bytes)
            );
            assert_eq!(parse_reply(bytes), None);
        }
        let deep = b"*1\r\n".repeat(MAX_REPLY_DEPTH + 1);
        assert!(parse(&deep).is_err());
        let ok_depth = [b"*1\r\n".repeat(MAX_REPLY_DEPTH), b":1\r\n".to_vec()].concat();
        assert!(parse(&ok_depth).unwrap().is_some());
        let long = vec![b'+'; MAX_LINE_BYTES + 2];
        assert!(parse(&long).is_err());
    }

    #[test]
    fn huge_declared_lengths_wait_without_allocating() {
        assert_eq!(parse(b"$9223372036854775807\r\nabc"), Ok(None));
        assert_eq!(parse(b"*9223372036854775807\r\n:1\r\n"), Ok(None));
    }
}
