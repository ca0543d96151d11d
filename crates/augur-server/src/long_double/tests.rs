//! Expected values taken from redis-server 7.0.15 (`SET f <value>`, then `INCRBYFLOAT f
//! <increment>`; `tests/against_redis.rs` compares random operands live).

use super::*;

const NOT_A_FLOAT: &str = "value is not a valid float";
const NAN_OR_INF: &str = "increment would produce NaN or Infinity";

/// INCRBYFLOAT as `strings.rs` runs it: both parsed, added, refused unless finite, written.
fn incrbyfloat(value: &str, increment: &str) -> Result<String, &'static str> {
    let value = LongDouble::parse(value.as_bytes()).ok_or(NOT_A_FLOAT)?;
    let increment = LongDouble::parse(increment.as_bytes()).ok_or(NOT_A_FLOAT)?;
    let sum = value + increment;
    if !sum.is_finite() {
        return Err(NAN_OR_INF);
    }
    Ok(sum.to_human())
}

#[test]
fn incrbyfloat_replies_as_redis_7_0() {
    let cases: &[(&str, &str, Result<&str, &str>)] = &[
        ("0.1", "0.2", Ok("0.3")),
        ("12345678901234567890", "0", Ok("12345678901234567890")),
        ("1e17", "1", Ok("100000000000000001")),
        ("100000000000000000", "1", Ok("100000000000000001")),
        ("0", "0x10", Ok("16")),
        ("0", "inf", Err(NAN_OR_INF)),
        ("0", "-inf", Err(NAN_OR_INF)),
        ("0", "nan", Err(NOT_A_FLOAT)),
        ("0", " 1", Err(NOT_A_FLOAT)),
        ("0", "1 ", Err(NOT_A_FLOAT)),
        ("0", "1e5000", Err(NOT_A_FLOAT)),
        ("0", "1e-5000", Err(NOT_A_FLOAT)),
        ("0", "1e-4940", Ok("0")),
        ("0", "0e-99999", Ok("0")),
        ("0", "0x", Err(NOT_A_FLOAT)),
        ("0", "1e", Err(NOT_A_FLOAT)),
        ("0", ".5", Ok("0.5")),
        ("0", "5.", Ok("5")),
        ("-0", "-0", Ok("0")),
        ("0", "0x1p-3", Ok("0.125")),
        ("0", "INFINITY", Err(NAN_OR_INF)),
        ("0", "infin", Err(NOT_A_FLOAT)),
        ("0", "123456789.123", Ok("123456789.12299999999959255")),
        ("0", "0.000003814697265625", Ok("0.00000381469726562")),
        ("0", "0.000011444091796875", Ok("0.00001144409179688")),
        ("10.5", "0.1", Ok("10.6")),
        ("3.0e3", "0", Ok("3000")),
        ("5.0e3", "10.6", Ok("5010.60000000000000009")),
        ("1.5", "-1.5", Ok("0")),
        ("-1.5", "0", Ok("-1.5")),
        ("0", "1e-17", Ok("0.00000000000000001")),
        ("0", "1e-18", Ok("0")),
        ("0", "-1e-20", Ok("0")),
        ("0", "1.23456789e-10", Ok("0.00000000012345679")),
        ("88.7", "-87.82", Ok("0.88")),
        ("0", "9007199254740993", Ok("9007199254740993")),
        ("18446744073709551615", "1", Ok("18446744073709551616")),
        ("18446744073709551616", "1", Ok("18446744073709551616")),
        ("1.18973149535723176502e+4932", "1e4932", Err(NAN_OR_INF)),
        ("0", "0x1p-16445", Ok("0")),
        ("0", "0x1p-16446", Err(NOT_A_FLOAT)),
        ("0", "0x1.8p-16446", Ok("0")),
        ("0", "3.6451995318824746025e-4951", Ok("0")),
        ("abc", "1", Err(NOT_A_FLOAT)),
        ("", "1", Err(NOT_A_FLOAT)),
        ("1", "", Err(NOT_A_FLOAT)),
        ("0", "+.5e-3", Ok("0.0005")),
        ("0", "0x.8p1", Ok("1")),
        ("0", "00012.50", Ok("12.5")),
        (
            "0",
            "111111111111111111111111111111111111111111111111111111111111",
            Ok("111111111111111111108621705771531345221163849678805956296704"),
        ),
        ("0", "0.0000000000000000000000000000001", Ok("0")),
        ("1e-10", "1e10", Ok("10000000000")),
        ("0", "-123.456e-7", Ok("-0.0000123456")),
        ("2.5", "2.5", Ok("5")),
        ("0.1", "0.7", Ok("0.8")),
        ("1", "-0.9", Ok("0.1")),
        ("1e18", "-1", Ok("999999999999999999")),
        ("1e19", "1", Ok("10000000000000000001")),
        ("1e20", "1", Ok("100000000000000000000")),
        (
            "3.14159265358979323846264338327950288",
            "0",
            Ok("3.14159265358979324"),
        ),
        (
            "0",
            "0x123456789abcdef0123p-40",
            Ok("4886718345.67111104773357511"),
        ),
        ("0", "1e-4950", Ok("0")),
        ("0", "-1e-4951", Err(NOT_A_FLOAT)),
        ("0", "2e-4951", Ok("0")),
    ];
    for &(value, increment, want) in cases {
        assert_eq!(
            incrbyfloat(value, increment),
            want.map(str::to_string),
            "SET f {value:?}; INCRBYFLOAT f {increment:?}"
        );
    }
}

/// Results too long for the table: 1e400 printed with all the digits of its nearest long
/// double, and the largest finite long double (4,933 digits) reached by a decimal and a
/// hexadecimal literal.
#[test]
fn long_results_print_every_integer_digit() {
    assert_eq!(
        incrbyfloat("0", "1e400").as_deref(),
        Ok(concat!(
            "10000000000000000000281880683947586514586453433629052038625910693539685534008629",
            "86203936399484832416052209405392731761620029582277725925573402382897659334066101",
            "77974474345461739178624481166749717237789438243915933380474706750262466844013592",
            "37513603830343735485505244955964979021825038280091068414947402456898653040951017",
            "51265809261582758892018347251164331659136266413817630973480634373249743022194688",
            "0",
        ))
    );
    for literal in ["1.18973149535723176502e+4932", "0X1.FFFFFFFFFFFFFFFEp16383"] {
        let text = incrbyfloat("0", literal).unwrap_or_default();
        assert_eq!(text.len(), 4933, "{literal}");
        assert!(
            text.starts_with("11897314953572317650212638530309702051690633222946")
                && text.ends_with("444156604419552086811989770240"),
            "{literal}"
        );
    }
}

#[test]
fn parse_refuses_what_string2ld_refuses() {
    for bad in [
        &b""[..],
        b" 1",
        b"\t1",
        b"1\t",
        b"1\0",
        b"\0",
        b"1\0x",
        b"nan",
        b"-nan",
        b"nan(1)",
        b".",
        b"-",
        b"+",
        b"e5",
        b"1e+",
        b"0x",
        b"0x.p1",
        b"0x1p",
        b"1.2.3",
        b"1e5e3",
        b"infinit",
        b"1e99999999999999999999999",
        b"1e-99999999999999999999999",
        b"0x1p-16446",
    ] {
        assert_eq!(
            LongDouble::parse(bad),
            None,
            "{:?}",
            String::from_utf8_lossy(bad)
        );
    }
    let mut long = vec![b'0'; MAX_CHARS - 3];
    long.extend_from_slice(b"12");
    assert_eq!(
        LongDouble::parse(&long).map(|v| v.to_human()).as_deref(),
        Some("12")
    );
    long.insert(0, b'0');
    assert_eq!(LongDouble::parse(&long), None, "{} bytes", long.len());
}

#[test]
fn addition_rounds_once_to_nearest_even() {
    let v = |s: &str| LongDouble::parse(s.as_bytes()).unwrap_or(LongDouble::NAN);
    // 2^64 + 1 needs 65 bits: a tie, to the even neighbour 2^64; 2^64 + 3 rounds up.
    assert_eq!(
        (v("18446744073709551616") + v("1")).to_human(),
        "18446744073709551616"
    );
    assert_eq!(
        (v("18446744073709551616") + v("3")).to_human(),
        "18446744073709551620"
    );
    assert_eq!(
        (v("18446744073709551616") + v("-1")).to_human(),
        "18446744073709551615"
    );
    // A sum that cancels to nothing, and infinities.
    assert_eq!(v("1.5") + v("-1.5"), LongDouble::ZERO);
    assert!(!(v("inf") + v("-inf")).is_finite());
    assert!(!(v("1e4932") + v("1e4932")).is_finite());
    assert_eq!((v("-inf") + v("1")).to_human(), "-inf");
    // Subnormals add exactly.
    let tiny = v("0x1p-16445");
    assert_eq!(tiny + tiny, v("0x1p-16444"));
    assert_eq!(tiny + v("-0x1p-16445"), LongDouble::ZERO);
}
