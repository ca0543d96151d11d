//! The RESP codec: requests in ([`parse_command`], [`Decoder`]), replies out (the `put_*`
//! functions), and a RESP2 reply parser for tests and clients ([`parse_reply`]).
//! It sits between the connection's byte buffers and command dispatch: a connection feeds
//! the bytes it has read to [`parse_command`], runs each command it gets, and encodes the
//! reply with the `put_*` functions into its output buffer.
//!
//! A codec of our own rather than a crate, for three reasons: the request-size bounds
//! ([`Limits`]) are enforced *while* parsing (a bulk length above the limit is refused as soon
//! as its header line is complete, before any of its bytes are buffered), Redis's inline
//! commands (`PING` typed into telnet or nc, quoted as `sdssplitargs` quotes) are part of the
//! protocol that people and health checks rely on, and the codec needs no dependency beyond
//! `bytes`.
//!
//! # What is matched
//!
//! The request parser follows Redis 7's `processMultibulkBuffer` and `processInlineBuffer`
//! (`networking.c`) and `sdssplitargs` (`sds.c`), with Redis's error messages, which the
//! server sends as `-ERR Protocol error: <message>` before closing the connection:
//! `*0`/`*-n` and empty or blank inline lines are empty commands (skipped); counts and
//! lengths are parsed as Redis's `string2ll` does (no sign `+`, no leading zeros, no
//! spaces); a count above 1024 × 1024 or [`Limits::max_args`] is "invalid multibulk length";
//! a bulk length below 0 or above [`Limits::max_bulk_bytes`] is "invalid bulk length"; more
//! than 64 KiB from a header's `*` or `$` with no `\r` is "too big mbulk count string" /
//! "too big bulk count string"; more than 64 KiB of an inline line with no `\n` is "too big
//! inline request"; unbalanced quotes (or a closing quote not followed by a blank) are "unbalanced
//! quotes in request"; a bulk header not starting with `$` is "expected '$', got 'x'".
//!
//! Each of these was checked against Redis 7.0.15 over a socket, with the inline quoting
//! cases of the unit tests (`ECHO a"b c"` is `ab c`, `ECHO "a"b` unbalanced, `"\x4G"` is
//! `x4G`, a leading `\v` skipped but an inner one kept).
//!
//! Deliberate differences, all of them stricter or independent of how bytes are split
//! across reads:
//! - Redis 7 accepts a count up to `INT_MAX` (`*20000000` waits for its arguments); here,
//!   as in Redis 6, more than [`MAX_MULTIBULK_ARGS`] is "invalid multibulk length".
//! - Redis takes any byte after a header's `\r` for the `\n`, and skips the two bytes after
//!   a bulk's data unread. Here a header's `\r` must be followed by `\n` (else the count or
//!   length is invalid), and a bulk must be followed by `\r\n` ("expected CRLF after bulk
//!   data"): a client that miscounts a length is told so at once instead of desynchronising.
//! - Redis applies its 64 KiB line bound only when no line end is buffered, so a longer line
//!   that arrives in one read passes. Here the bound holds however the bytes arrive.
//! - A missing `$` is reported as soon as its byte arrives, not when the line is complete.
//! - The declared size of a multibulk command (its headers, its bulks and the least its
//!   remaining arguments can take) above [`Limits::max_request_bytes`] is refused at the
//!   header that declares it; Redis has only its query-buffer limit, checked after reading.
//!   An inline line also counts against it, and an inline argument against `max_bulk_bytes`,
//!   an inline command's argument count against `max_args`.
//! - Inline lines are binary: a NUL byte is an ordinary byte. Redis's C string functions
//!   stop at a NUL (its inline parser then waits for a `\n` it never sees).
//! - An error message that would quote a byte outside printable ASCII quotes it as `\xHH`;
//!   Redis sends the raw byte (and, as here, turns `\r` and `\n` into spaces).
//!
//! Nothing here panics on any input, indexes out of bounds, or allocates in proportion to a
//! declared length before the bytes are there (the `resp` fuzz target checks it).
#![deny(clippy::unwrap_used, clippy::indexing_slicing)]

mod encode;
mod inline;
mod reply;
mod request;

pub use encode::{
    put_array_header, put_bulk, put_command, put_error, put_integer, put_map_header, put_null,
    put_null_array, put_null_bulk, put_push_header, put_set_header, put_simple, put_verbatim,
};
pub use reply::{parse_reply, put_reply, try_parse_reply, Reply, MAX_REPLY_DEPTH};
pub use request::{parse_command, Decoder};

use std::fmt;

/// Most bytes Redis buffers for a line whose end has not arrived (its `PROTO_INLINE_MAX_SIZE`):
/// an inline command, or a multibulk count or bulk length header.
pub const MAX_LINE_BYTES: usize = 64 * 1024;

/// Most arguments of one multibulk command whatever [`Limits::max_args`] says (Redis 6's
/// bound; Redis 7 allows up to `INT_MAX`).
pub const MAX_MULTIBULK_ARGS: usize = 1024 * 1024;

/// Bounds a request must keep (the server's `--max-bulk-bytes` and `--max-request-bytes`;
/// `max_args` bounds the allocation for a command's argument list).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Longest argument: a bulk length above it is "invalid bulk length" (Redis's
    /// `proto-max-bulk-len`).
    pub max_bulk_bytes: usize,
    /// Largest command, as encoded on the wire (headers, bulks and their line ends).
    pub max_request_bytes: usize,
    /// Most arguments of one command (capped at [`MAX_MULTIBULK_ARGS`]).
    pub max_args: usize,
}

impl Default for Limits {
    /// Redis's defaults: 512 MiB bulks (`proto-max-bulk-len`), 1 GiB requests
    /// (`client-query-buffer-limit`), [`MAX_MULTIBULK_ARGS`] arguments.
    fn default() -> Self {
        Limits {
            max_bulk_bytes: 512 << 20,
            max_request_bytes: 1 << 30,
            max_args: MAX_MULTIBULK_ARGS,
        }
    }
}

/// Why a request cannot be parsed. The server replies `-ERR Protocol error: <message>` (the
/// [`Display`](fmt::Display) form after `ERR `) and closes the connection, as Redis does.
/// The message never holds `\r` or `\n`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtocolError(pub String);

impl ProtocolError {
    fn new(message: impl Into<String>) -> Self {
        ProtocolError(message.into())
    }
}

impl fmt::Display for ProtocolError {
    /// `Protocol error: <message>`, Redis's wording.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Protocol error: {}", self.0)
    }
}

impl std::error::Error for ProtocolError {}

/// A byte as Redis's `%c` shows it in an error, made safe for a reply line: printable ASCII
/// as itself, `\r` and `\n` as a space (Redis replaces them so), anything else as `\xHH`.
fn show_byte(b: u8) -> String {
    match b {
        b'\r' | b'\n' => " ".to_string(),
        0x20..=0x7e => char::from(b).to_string(),
        _ => format!("\\x{b:02x}"),
    }
}

/// Redis's `string2ll`: an optional `-`, then `0` alone or digits not starting with `0`,
/// fitting an `i64`, nothing else (no `+`, no spaces, at most 20 characters).
fn parse_i64(text: &[u8]) -> Option<i64> {
    let (negative, digits) = match text.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, text),
    };
    match digits {
        [] => return None,
        [b'0'] if !negative => return Some(0),
        [b'1'..=b'9', ..] => {}
        _ => return None,
    }
    let mut v: u64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
    }
    if negative {
        // -(2^63) is the one negative whose magnitude does not fit an i64.
        0i64.checked_sub_unsigned(v)
    } else {
        i64::try_from(v).ok()
    }
}

/// A header line at the front of `buf` (`*<n>\r\n`, `$<n>\r\n`, or a reply's line): the
/// bytes between its first byte and the `\r`, and the length up to and including the
/// `\n`. `Ok(None)` until the line end is there; `too_big` when there is no `\r` in the
/// first [`MAX_LINE_BYTES`] bytes although more have arrived; `invalid` when the `\r` is
/// not followed by `\n`.
fn header_line<'a>(
    buf: &'a [u8],
    too_big: &str,
    invalid: &str,
) -> Result<Option<(&'a [u8], usize)>, ProtocolError> {
    let window = buf.get(..buf.len().min(MAX_LINE_BYTES + 1)).unwrap_or(buf);
    let Some(cr) = window.iter().position(|&b| b == b'\r') else {
        return if buf.len() > MAX_LINE_BYTES {
            Err(ProtocolError::new(too_big))
        } else {
            Ok(None)
        };
    };
    match buf.get(cr + 1) {
        None => Ok(None),
        Some(b'\n') => Ok(Some((buf.get(1..cr).unwrap_or_default(), cr + 2))),
        Some(_) => Err(ProtocolError::new(invalid)),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn string2ll_rules() {
        assert_eq!(parse_i64(b"0"), Some(0));
        assert_eq!(parse_i64(b"12"), Some(12));
        assert_eq!(parse_i64(b"-1"), Some(-1));
        assert_eq!(parse_i64(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        for bad in [
            &b""[..],
            b"-",
            b"-0",
            b"01",
            b"+1",
            b" 1",
            b"1 ",
            b"1a",
            b"9223372036854775808",
            b"-9223372036854775809",
            b"99999999999999999999999",
        ] {
            assert_eq!(parse_i64(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn header_lines() {
        assert_eq!(
            header_line(b"*3\r\nx", "big", "bad"),
            Ok(Some((&b"3"[..], 4)))
        );
        assert_eq!(header_line(b"*3\r", "big", "bad"), Ok(None));
        assert_eq!(header_line(b"*3", "big", "bad"), Ok(None));
        assert_eq!(
            header_line(b"*3\rx", "big", "bad"),
            Err(ProtocolError::new("bad"))
        );
        let long = vec![b'1'; MAX_LINE_BYTES];
        assert_eq!(header_line(&long, "big", "bad"), Ok(None));
        let longer = vec![b'1'; MAX_LINE_BYTES + 1];
        assert_eq!(
            header_line(&longer, "big", "bad"),
            Err(ProtocolError::new("big"))
        );
    }

    #[test]
    fn shown_bytes_are_reply_safe() {
        assert_eq!(show_byte(b'f'), "f");
        assert_eq!(show_byte(b'\r'), " ");
        assert_eq!(show_byte(0), "\\x00");
        assert_eq!(show_byte(0xff), "\\xff");
        assert_eq!(
            ProtocolError::new("invalid bulk length").to_string(),
            "Protocol error: invalid bulk length"
        );
    }
}
