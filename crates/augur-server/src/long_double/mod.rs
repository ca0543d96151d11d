//! Redis's `long double` arithmetic, bit for bit, for `INCRBYFLOAT` (and `HINCRBYFLOAT` when
//! hashes come): Redis 7.0 reads both numbers with `strtold`, adds them in `long double` and
//! writes the sum with `%.17Lf` less its trailing zeros (`string2ld`, `incrbyfloatCommand`
//! and `ld2string` in its human mode, `util.c` and `t_string.c`). On x86-64 a `long double`
//! is the x87 80-bit extended format: a 64-bit mantissa (its leading bit explicit), 15 bits
//! of exponent, subnormals below 2^-16382. Rust has no such type, and an `f64` sum prints
//! differently (`0.1 + 0.2` is `0.30000000000000004` in `f64`, `0.3` in Redis), so
//! [`LongDouble`] is that format in software: each operation computes the exact result and
//! rounds it once, to nearest with ties to even, as the x87 unit and glibc do.
//!
//! - [`LongDouble::parse`] is Redis's `string2ld`: glibc `strtold` in the C locale (decimal
//!   and hexadecimal significands, `inf`/`infinity` in any case, correctly rounded), with
//!   Redis's refusals: an empty string or one of 5,120 bytes or more, a leading space, any
//!   byte `strtold` did not consume (a trailing space, an embedded NUL), NaN, and a range
//!   error that gave zero or infinity (`1e-5000`, `1e5000`; a result that rounds to a
//!   nonzero subnormal is accepted).
//! - `+` is the x87 addition.
//! - [`LongDouble::to_human`] is `ld2string(..., LD_STR_HUMAN)`: glibc's exact `%.17Lf`
//!   (every integer digit, 17 decimals rounded half to even), trailing zeros and a bare
//!   point dropped, `-0` written `0`.
//!
//! Checked against redis-server 7.0.15 by `tests/against_redis.rs` (random and edge-case
//! operands, byte for byte) and by the expected values below, taken from it.

mod natural;

use natural::Natural;
use std::ops::Add;

/// Bits of the mantissa.
const MANTISSA_BITS: i64 = 64;
/// The exponent of a value's last mantissa bit (`value = mantissa × 2^exp`) for the
/// subnormals and the smallest normal numbers: the smallest subnormal is 2^-16445.
const EXP_MIN: i64 = -16445;
/// The largest such exponent: the largest finite value is (2^64 - 1) × 2^16320.
const EXP_MAX: i64 = 16320;
/// Redis's `MAX_LONG_DOUBLE_CHARS`: `string2ld` refuses strings this long or longer.
pub const MAX_CHARS: usize = 5 * 1024;

/// An x87 80-bit extended-precision number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LongDouble {
    negative: bool,
    class: Class,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    /// `mantissa × 2^exp`: the mantissa's top bit is set (normal), or `exp` is [`EXP_MIN`]
    /// (a subnormal, or zero when the mantissa is 0).
    Finite {
        mantissa: u64,
        exp: i64,
    },
    Infinite,
    Nan,
}

impl LongDouble {
    /// Zero (what `INCRBYFLOAT` starts from when the key is missing).
    pub const ZERO: LongDouble = LongDouble {
        negative: false,
        class: Class::Finite {
            mantissa: 0,
            exp: EXP_MIN,
        },
    };

    fn zero(negative: bool) -> LongDouble {
        LongDouble {
            negative,
            ..LongDouble::ZERO
        }
    }

    fn infinite(negative: bool) -> LongDouble {
        LongDouble {
            negative,
            class: Class::Infinite,
        }
    }

    const NAN: LongDouble = LongDouble {
        negative: false,
        class: Class::Nan,
    };

    /// Neither infinite nor NaN.
    pub fn is_finite(&self) -> bool {
        matches!(self.class, Class::Finite { .. })
    }

    fn is_zero(&self) -> bool {
        matches!(self.class, Class::Finite { mantissa: 0, .. })
    }

    /// Redis's `string2ld`: the number `text` spells, or `None` where Redis answers "value
    /// is not a valid float" (see the module doc).
    pub fn parse(text: &[u8]) -> Option<LongDouble> {
        if text.is_empty() || text.len() >= MAX_CHARS {
            return None;
        }
        if text.first().is_some_and(|&b| is_c_space(b)) {
            return None;
        }
        let (negative, body) = match text.split_first() {
            Some((b'-', rest)) => (true, rest),
            Some((b'+', rest)) => (false, rest),
            _ => (false, text),
        };
        if body.eq_ignore_ascii_case(b"inf") || body.eq_ignore_ascii_case(b"infinity") {
            return Some(LongDouble::infinite(negative));
        }
        let (value, nonzero) = match body {
            [b'0', b'x' | b'X', hex @ ..] => parse_hex(negative, hex)?,
            _ => parse_decimal(negative, body)?,
        };
        // strtold's range errors: Redis refuses the zero or infinity they give.
        if !value.is_finite() || (nonzero && value.is_zero()) {
            return None;
        }
        Some(value)
    }

    /// `ld2string(..., LD_STR_HUMAN)`: glibc's `%.17Lf` with trailing zeros (and then a
    /// trailing point) removed, `-0` written `0`; `inf`, `-inf`, and `nan`/`-nan` as glibc
    /// prints them (INCRBYFLOAT never writes those: it refuses such a sum).
    pub fn to_human(&self) -> String {
        let sign = if self.negative { "-" } else { "" };
        let (mantissa, exp) = match self.class {
            Class::Infinite => return format!("{sign}inf"),
            Class::Nan => return format!("{sign}nan"),
            Class::Finite { mantissa, exp } => (mantissa, exp),
        };
        let text = if exp >= 0 {
            // An integer: %.17Lf prints it whole and 17 zeros, which are then dropped.
            let mut n = Natural::from_u64(mantissa);
            n.shl(exp as u64);
            n.to_decimal()
        } else {
            // mantissa × 10^17 < 2^121: the value in units of 10^-17, rounded half to even.
            let scaled = u128::from(mantissa) * 100_000_000_000_000_000;
            let shift = exp.unsigned_abs();
            let units = if shift > 121 {
                0 // below half a unit: scaled < 2^121 <= 2^(shift - 1)
            } else {
                let q = scaled >> shift;
                let rem = scaled & ((1u128 << shift) - 1);
                let half = 1u128 << (shift - 1);
                q + u128::from(rem > half || (rem == half && q & 1 == 1))
            };
            let (whole, fraction) = (
                units / 100_000_000_000_000_000,
                units % 100_000_000_000_000_000,
            );
            let text = format!("{whole}.{fraction:017}");
            let text = text.trim_end_matches('0');
            text.strip_suffix('.').unwrap_or(text).to_string()
        };
        if text == "0" {
            return text;
        }
        format!("{sign}{text}")
    }
}

impl Add for LongDouble {
    type Output = LongDouble;

    /// The x87 sum: exact, then rounded to nearest, ties to even.
    fn add(self, other: LongDouble) -> LongDouble {
        let (a, b) = (self, other);
        let ((ma, ea), (mb, eb)) = match (a.class, b.class) {
            (Class::Nan, _) | (_, Class::Nan) => return LongDouble::NAN,
            (Class::Infinite, Class::Infinite) if a.negative != b.negative => {
                return LongDouble::NAN
            }
            (Class::Infinite, _) => return a,
            (_, Class::Infinite) => return b,
            (
                Class::Finite {
                    mantissa: ma,
                    exp: ea,
                },
                Class::Finite {
                    mantissa: mb,
                    exp: eb,
                },
            ) => ((ma, ea), (mb, eb)),
        };
        if mb == 0 {
            return if ma == 0 {
                LongDouble::zero(a.negative && b.negative)
            } else {
                a
            };
        }
        if ma == 0 {
            return b;
        }
        // The larger magnitude first (normalized values order by exponent, then mantissa).
        let (big, small, (mb_, eb_), (ms, es)) = if (ea, ma) >= (eb, mb) {
            (a, b, (ma, ea), (mb, eb))
        } else {
            (b, a, (mb, eb), (ma, ea))
        };
        // Both mantissas 62 bits up, the smaller aligned to the larger; the bits it loses
        // are kept as one sticky bit, far below the rounding position.
        let wide = u128::from(mb_) << 62;
        let gap = (eb_ - es) as u64;
        let small_wide = u128::from(ms) << 62;
        let aligned = if gap >= 127 {
            1
        } else {
            let lost = small_wide & ((1u128 << gap) - 1);
            (small_wide >> gap) | u128::from(lost != 0)
        };
        let (negative, sum) = if big.negative == small.negative {
            (big.negative, wide + aligned)
        } else {
            (big.negative, wide - aligned)
        };
        if sum == 0 {
            return LongDouble::ZERO; // x - x is +0 when rounding to nearest
        }
        round(negative, sum, eb_ - 62, false)
    }
}

/// Whether `b` is a space for C's `isspace` (the C locale).
fn is_c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// Rounds `sig × 2^exp` (plus less than one unit of its last bit when `sticky`) to the
/// nearest long double, ties to even: infinity above the largest, zero below half the
/// smallest subnormal.
///
/// REQUIRES: when `sticky`, `sig` has at least 66 significant bits (the fraction it stands
/// for lies below the rounding position).
fn round(negative: bool, sig: u128, exp: i64, sticky: bool) -> LongDouble {
    if sig == 0 {
        return LongDouble::zero(negative);
    }
    let bits = 128 - i64::from(sig.leading_zeros());
    let target = (exp + bits - MANTISSA_BITS).max(EXP_MIN);
    let shift = target - exp;
    let (mut mantissa, mut exp) = if shift <= 0 {
        (sig << shift.unsigned_abs(), target)
    } else {
        let up = if shift > 128 {
            false
        } else if shift == 128 {
            let half = 1u128 << 127;
            sig > half || (sig == half && sticky)
        } else {
            let rem = sig & ((1u128 << shift) - 1);
            let half = 1u128 << (shift - 1);
            let q = sig >> shift;
            rem > half || (rem == half && (sticky || q & 1 == 1))
        };
        let q = if shift >= 128 { 0 } else { sig >> shift };
        (q + u128::from(up), target)
    };
    if mantissa >> MANTISSA_BITS != 0 {
        mantissa >>= 1; // rounding carried into a 65th bit: 2^64 becomes 2^63 × 2
        exp += 1;
    }
    if exp > EXP_MAX {
        return LongDouble::infinite(negative);
    }
    LongDouble {
        negative,
        class: Class::Finite {
            mantissa: mantissa as u64,
            exp,
        },
    }
}

/// Rounds `n × 2^exp` (plus a fraction of its last unit when `sticky`).
fn round_natural(negative: bool, n: &Natural, exp: i64, sticky: bool) -> LongDouble {
    let (top, shift, below) = n.top128();
    round(negative, top, exp + shift as i64, sticky || below)
}

/// An exponent's digits, saturated far beyond any exponent that matters (the digit counts
/// of a 5,119-byte string cannot bring it back into range).
fn exponent(text: &[u8]) -> Option<i64> {
    let (negative, digits) = match text.split_first() {
        Some((b'-', rest)) => (true, rest),
        Some((b'+', rest)) => (false, rest),
        _ => (false, text),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let magnitude = digits.iter().fold(0i64, |acc, &d| {
        (acc * 10 + i64::from(d - b'0')).min(1 << 40)
    });
    Some(if negative { -magnitude } else { magnitude })
}

/// Splits `text` at its exponent marker (`e`/`E` for decimal, `p`/`P` for hexadecimal):
/// the significand and the exponent (0 when there is none). `None` when something other
/// than a valid exponent follows the marker.
fn split_exponent(text: &[u8], markers: [u8; 2]) -> Option<(&[u8], i64)> {
    match text.iter().position(|b| markers.contains(b)) {
        None => Some((text, 0)),
        Some(at) => Some((text.get(..at)?, exponent(text.get(at + 1..)?)?)),
    }
}

/// The digits of a significand `int[.frac]` (at least one digit, `is_digit` deciding which
/// bytes are digits): the digits in order and how many follow the point.
fn significand(text: &[u8], is_digit: fn(&u8) -> bool) -> Option<(Vec<u8>, usize)> {
    let (int, frac) = match text.iter().position(|&b| b == b'.') {
        Some(at) => (text.get(..at)?, text.get(at + 1..)?),
        None => (text, &[][..]),
    };
    if int.len() + frac.len() == 0 || !int.iter().chain(frac).all(is_digit) {
        return None;
    }
    Some((int.iter().chain(frac).copied().collect(), frac.len()))
}

/// A decimal `digits[.digits][e[sign]digits]`: the value and whether it is nonzero.
fn parse_decimal(negative: bool, text: &[u8]) -> Option<(LongDouble, bool)> {
    let (sig, exp) = split_exponent(text, [b'e', b'E'])?;
    let (digits, frac_len) = significand(sig, u8::is_ascii_digit)?;
    let digits: Vec<u8> = digits.iter().map(|d| d - b'0').collect();
    let first = digits.iter().position(|&d| d != 0);
    let last = digits.iter().rposition(|&d| d != 0);
    let (Some(first), Some(last)) = (first, last) else {
        return Some((LongDouble::zero(negative), false));
    };
    // value = D × 10^exp10, D the digits from the first to the last nonzero one.
    let kept = digits.get(first..=last)?;
    let exp10 = exp - frac_len as i64 + (digits.len() - 1 - last) as i64;
    let order = kept.len() as i64 + exp10; // value < 10^order, value >= 10^(order - 1)
    if order > 4933 {
        return Some((LongDouble::infinite(negative), true)); // >= 1e4933 > the largest
    }
    if order <= -4951 {
        return Some((LongDouble::zero(negative), true)); // < 1e-4951: below half 2^-16445
    }
    let mut n = Natural::default();
    for chunk in kept.chunks(19) {
        let value = chunk.iter().fold(0u64, |acc, &d| acc * 10 + u64::from(d));
        n.mul_add(10u64.pow(chunk.len() as u32), value);
    }
    let value = if exp10 >= 0 {
        n.mul_pow10(exp10 as u64);
        round_natural(negative, &n, 0, false)
    } else {
        // floor(D × 2^s / 10^k) with at least 124 bits, and whether it was inexact.
        let k = exp10.unsigned_abs();
        let pow_bits = (k as f64 * std::f64::consts::LOG2_10).ceil() as u64 + 1;
        let s = (126 + pow_bits).saturating_sub(n.bits());
        n.shl(s);
        let inexact = n.div_pow10(k);
        round_natural(negative, &n, -(s as i64), inexact)
    };
    Some((value, true))
}

/// A hexadecimal significand after `0x`, `hex[.hex][p[sign]digits]`: the value and whether
/// it is nonzero.
fn parse_hex(negative: bool, text: &[u8]) -> Option<(LongDouble, bool)> {
    let (sig, exp) = split_exponent(text, [b'p', b'P'])?;
    let (digits, frac_len) = significand(sig, u8::is_ascii_hexdigit)?;
    let mut n = Natural::default();
    for d in &digits {
        let v = char::from(*d).to_digit(16)?;
        n.mul_add(16, u64::from(v));
    }
    if n.is_zero() {
        return Some((LongDouble::zero(negative), false));
    }
    Some((
        round_natural(negative, &n, exp - 4 * frac_len as i64, false),
        true,
    ))
}

#[cfg(test)]
mod tests;
