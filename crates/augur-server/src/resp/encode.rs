//! Replies out (and requests, for clients and tests): RESP2 and RESP3 values appended to a
//! [`BytesMut`], the connection's output buffer.

use bytes::{BufMut, BytesMut};

/// Appends a decimal integer without allocating.
fn put_decimal(out: &mut BytesMut, negative: bool, mut magnitude: u64) {
    let mut digits = [0u8; 20]; // u64::MAX has 20 digits.
    let mut len = 0;
    for digit in &mut digits {
        *digit = b'0' + (magnitude % 10) as u8;
        magnitude /= 10;
        len += 1;
        if magnitude == 0 {
            break;
        }
    }
    if negative {
        out.put_u8(b'-');
    }
    out.extend(digits.iter().take(len).rev());
}

/// `<prefix><n>\r\n`: an integer, a bulk length or an array length.
fn put_header(out: &mut BytesMut, prefix: u8, n: i64) {
    out.put_u8(prefix);
    put_decimal(out, n < 0, n.unsigned_abs());
    out.put_slice(b"\r\n");
}

fn put_len_header(out: &mut BytesMut, prefix: u8, len: usize) {
    out.put_u8(prefix);
    put_decimal(out, false, len as u64);
    out.put_slice(b"\r\n");
}

/// A line of text with `\r` and `\n` made spaces, so that it cannot break the framing
/// (Redis's `addReplyErrorFormat` does the same).
fn put_line(out: &mut BytesMut, prefix: u8, text: &str) {
    out.put_u8(prefix);
    out.extend(
        text.bytes()
            .map(|b| if b == b'\r' || b == b'\n' { b' ' } else { b }),
    );
    out.put_slice(b"\r\n");
}

/// A simple string: `+<text>\r\n` (`+OK\r\n`). `\r` and `\n` in `text` become spaces.
pub fn put_simple(out: &mut BytesMut, text: &str) {
    put_line(out, b'+', text);
}

/// An error: `-<text>\r\n`, where `text` is everything after the `-`, its first word the
/// error code (`ERR unknown command 'FOO'`, `WRONGTYPE ...`). `\r` and `\n` become spaces.
pub fn put_error(out: &mut BytesMut, text: &str) {
    put_line(out, b'-', text);
}

/// An integer: `:<n>\r\n`.
pub fn put_integer(out: &mut BytesMut, n: i64) {
    put_header(out, b':', n);
}

/// A bulk string: `$<len>\r\n<data>\r\n`.
pub fn put_bulk(out: &mut BytesMut, data: &[u8]) {
    put_len_header(out, b'$', data.len());
    out.put_slice(data);
    out.put_slice(b"\r\n");
}

/// The null bulk string `$-1\r\n` (a missing key's `GET`).
pub fn put_null_bulk(out: &mut BytesMut) {
    out.put_slice(b"$-1\r\n");
}

/// An array header `*<len>\r\n`; the caller appends `len` values after it.
pub fn put_array_header(out: &mut BytesMut, len: usize) {
    put_len_header(out, b'*', len);
}

/// The null array `*-1\r\n`.
pub fn put_null_array(out: &mut BytesMut) {
    out.put_slice(b"*-1\r\n");
}

/// RESP3's null `_\r\n`, which stands for both of RESP2's nulls (`$-1`, `*-1`).
pub fn put_null(out: &mut BytesMut) {
    out.put_slice(b"_\r\n");
}

/// A RESP3 map header `%<len>\r\n`; the caller appends `len` keys, each followed by its
/// value.
pub fn put_map_header(out: &mut BytesMut, len: usize) {
    put_len_header(out, b'%', len);
}

/// A RESP3 push header `>n\r\n` (out-of-band data: Pub/Sub messages); the caller appends
/// `len` values.
pub fn put_push_header(out: &mut BytesMut, len: usize) {
    put_len_header(out, b'>', len);
}

/// A RESP3 set header `~<len>\r\n`; the caller appends `len` values.
pub fn put_set_header(out: &mut BytesMut, len: usize) {
    put_len_header(out, b'~', len);
}

/// A RESP3 verbatim string: `=<len>\r\n<format>:<text>\r\n`, `format` three characters
/// (`txt`), `len` counting the format and the colon.
pub fn put_verbatim(out: &mut BytesMut, format: &str, text: &[u8]) {
    put_len_header(out, b'=', format.len() + 1 + text.len());
    out.put_slice(format.as_bytes());
    out.put_u8(b':');
    out.put_slice(text);
    out.put_slice(b"\r\n");
}

/// A command as a client sends it: a multibulk array of bulk strings, `*<n>\r\n` then
/// `$<len>\r\n<arg>\r\n` for each argument. [`parse_command`](super::parse_command) gives
/// the same arguments back (an empty command is `*0\r\n`).
pub fn put_command<A: AsRef<[u8]>>(out: &mut BytesMut, args: &[A]) {
    put_array_header(out, args.len());
    for arg in args {
        put_bulk(out, arg.as_ref());
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    fn encoded(f: impl FnOnce(&mut BytesMut)) -> String {
        let mut out = BytesMut::new();
        f(&mut out);
        String::from_utf8(out.to_vec()).unwrap()
    }

    #[test]
    fn values() {
        assert_eq!(encoded(|o| put_simple(o, "OK")), "+OK\r\n");
        assert_eq!(
            encoded(|o| put_error(o, "ERR unknown command 'x'")),
            "-ERR unknown command 'x'\r\n"
        );
        assert_eq!(encoded(|o| put_error(o, "ERR a\r\nb")), "-ERR a  b\r\n");
        assert_eq!(encoded(|o| put_simple(o, "a\nb")), "+a b\r\n");
        assert_eq!(encoded(|o| put_integer(o, 0)), ":0\r\n");
        assert_eq!(encoded(|o| put_integer(o, -42)), ":-42\r\n");
        assert_eq!(
            encoded(|o| put_integer(o, i64::MIN)),
            ":-9223372036854775808\r\n"
        );
        assert_eq!(
            encoded(|o| put_integer(o, i64::MAX)),
            ":9223372036854775807\r\n"
        );
        assert_eq!(encoded(|o| put_bulk(o, b"")), "$0\r\n\r\n");
        assert_eq!(encoded(|o| put_bulk(o, b"a\r\nb")), "$4\r\na\r\nb\r\n");
        assert_eq!(encoded(put_null_bulk), "$-1\r\n");
        assert_eq!(encoded(|o| put_array_header(o, 12)), "*12\r\n");
        assert_eq!(encoded(put_null_array), "*-1\r\n");
        assert_eq!(encoded(put_null), "_\r\n");
        assert_eq!(encoded(|o| put_map_header(o, 7)), "%7\r\n");
        assert_eq!(encoded(|o| put_set_header(o, 0)), "~0\r\n");
        assert_eq!(
            encoded(|o| put_verbatim(o, "txt", b"a\r\nb")),
            "=8\r\ntxt:a\r\nb\r\n"
        );
        assert_eq!(
            encoded(|o| put_command(o, &["SET", "k", ""])),
            "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n"
        );
        assert_eq!(encoded(|o| put_command::<&[u8]>(o, &[])), "*0\r\n");
    }
}
