//! Replies out (and requests, for clients and tests): RESP2 values appended to a
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

/// A floating-point result as RESP2 sends it: a bulk string of [`format_double`]
/// (`INCRBYFLOAT`'s reply).
pub fn put_double(out: &mut BytesMut, value: f64) {
    put_bulk(out, format_double(value).as_bytes());
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

/// `value` as Redis 7 writes `INCRBYFLOAT`'s result (`ld2string` in its human-friendly mode):
/// fixed notation, never an exponent, at most 17 digits after the point, trailing zeros and
/// a trailing point dropped, `-0` written `0`, infinities `inf` and `-inf` (NaN `nan`).
///
/// Redis computes in `long double` (80-bit on x86-64) and prints `%.17Lf`. Here the value is
/// an `f64`, and its digits are the shortest that read back as the same `f64` (rounded to 17
/// decimals if there are more): `10.5 + 0.1` gives `10.6` and `3.0e3` gives `3000`, as in
/// Redis, where `%.17f` of the `f64` would give `10.59999999999999964`. The text differs from
/// Redis's where either type's rounding shows: Redis prints the `long double`'s own digits
/// once the integer part takes a few of its 19 (`123456789.123` gives
/// `123456789.12299999999959255`, here `123456789.123`), and an `f64` sum can show its
/// rounding in the 17th digit where Redis's wider sum hides it (`0.1 + 0.2` gives
/// `0.30000000000000004`, Redis `0.3`). Against Redis 7.0.15, 93 of 123 random single values
/// (`INCRBYFLOAT` on `0`) gave the same text and the other 30 text that reads back as the
/// same `f64` (the first kind); of 293 random sums, 181 gave the same text, 84 the same
/// `f64`, and 28 a different `f64` (the second kind, arithmetic rather than format: 26 by
/// one unit in the last place, 2 where cancellation magnified the operands' rounding, as
/// `88.7 + -87.82` giving `0.8800000000000097` against Redis's `0.88`).
pub fn format_double(value: f64) -> String {
    if value.is_nan() {
        return "nan".to_string();
    }
    if value.is_infinite() {
        return if value > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    // Rust's `Display` for f64 is the shortest round-trip form, in fixed notation.
    let shortest = value.to_string();
    let mut text = match shortest.split_once('.') {
        Some((_, fraction)) if fraction.len() > 17 => format!("{value:.17}"),
        _ => shortest,
    };
    if text.contains('.') {
        let kept = text.trim_end_matches('0').trim_end_matches('.').len();
        text.truncate(kept);
    }
    if text == "-0" {
        text = "0".to_string();
    }
    text
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
        assert_eq!(encoded(|o| put_double(o, 10.5 + 0.1)), "$4\r\n10.6\r\n");
        assert_eq!(
            encoded(|o| put_command(o, &["SET", "k", ""])),
            "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n"
        );
        assert_eq!(encoded(|o| put_command::<&[u8]>(o, &[])), "*0\r\n");
    }

    #[test]
    fn doubles_as_redis_writes_incrbyfloat() {
        let cases: &[(f64, &str)] = &[
            (10.5 + 0.1, "10.6"),
            (3.0e3, "3000"),
            (5.0, "5"),
            (1.5, "1.5"),
            (-1.5, "-1.5"),
            (0.0, "0"),
            (-0.0, "0"),
            (1e20, "100000000000000000000"),
            (9007199254740992.0, "9007199254740992"),
            (1e-17, "0.00000000000000001"),
            (1e-18, "0"),
            (-1e-20, "0"),
            (1.23456789e-10, "0.00000000012345679"),
            (0.1 + 0.2, "0.30000000000000004"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
            (f64::NAN, "nan"),
        ];
        for &(value, want) in cases {
            assert_eq!(format_double(value), want, "{value:e}");
        }
    }

    #[test]
    fn doubles_with_few_decimals_read_back_exactly() {
        for value in [0.1, 2.5e-3, 123456.789, -98.76e5, 1.0 / 3.0, 2f64.powi(60)] {
            let text = format_double(value);
            let back: f64 = text.parse().unwrap();
            assert_eq!(back, value, "{value} -> {text}");
            assert!(!text.contains('e'));
        }
    }
}
