//! The radix projection: a file's keys read as numbers in a mixed radix fitted to the bytes
//! they use, so that an integer model sees keys like `key:000001234567` as the integers they
//! spell, not as ASCII words with a jump at every carry.
//!
//! The byte projection ([`super::projection`]) reads the 8 bytes after the file's common
//! prefix in base 256. Where keys use few byte values per position — decimal digits, hex,
//! lower-case names — that number space is mostly empty: `…0199` and `…0200` are 1 apart as
//! integers but 0x0ff apart as bytes, so the keys' CDF over the projection is a staircase
//! with a step at every carry, and Greedy-PLR needs a segment per step (on the server's
//! `key:%012d` keys, a segment per ten keys and 30 MB of model for 20M entries, whose
//! search was a quarter of a loaded GET's time).
//!
//! Here each position `i` after the prefix gets the byte range `[lo_i, hi_i]` its keys use,
//! plus one more digit value when some key ends at or before `i` (an ended key sorts first).
//! A key's digit at `i` is its byte's offset in that range (one more when ends are counted),
//! or 0 when it has ended; the projection is the digits read in the mixed radix
//! `radix_i = hi_i − lo_i + 1 (+1)`, over as many positions as keep the product within a
//! u64. Fixed-width decimal keys project to the numbers they spell (radix 10 everywhere);
//! text keys use about 10 bytes instead of 8.
//!
//! Any byte key can be projected (a lookup key need not be in the file): at the first
//! position where its byte lies below the range (or it ends where no file key does), its
//! remaining digits are all 0; above the range, all `radix − 1`. This clamping keeps the
//! projection monotone over all byte strings — `a <= b` implies `project(a) <= project(b)` —
//! which is what the integer models' window contract needs; it is not injective (keys equal
//! in the covered positions, or clamped at the same position, tie), and ties are handled
//! as for the byte projection: the reader scans the run of equal projections.

use crate::coding::Decoder;

/// The most positions a projection covers (a lookup does one multiply-add per position).
pub const MAX_POSITIONS: usize = 24;

/// One position's digit range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Digit {
    /// Smallest byte the file's keys hold here.
    lo: u8,
    /// Largest byte the file's keys hold here.
    hi: u8,
    /// 1 when some key ends at or before this position (digit 0 is then "ended").
    ended: u8,
}

impl Digit {
    /// The number of digit values at this position.
    fn radix(self) -> u64 {
        u64::from(self.hi - self.lo) + 1 + u64::from(self.ended)
    }
}

/// A radix projection fitted to one file's keys (without the file's common prefix).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RadixProjection {
    digits: Vec<Digit>,
    /// `rest[i]`: the product of the radices of positions `i..` (`rest[len] == 1`), so a key
    /// clamped at `i` projects to `value · rest[i]` (low) or `value · rest[i] + rest[i] − 1`.
    rest: Vec<u64>,
}

/// How a key's digit at one position came out.
enum Step {
    Digit(u64),
    Low,
    High,
}

impl RadixProjection {
    /// Fits a projection to `keys` (sorted, without their common prefix). `None` when it
    /// would not differ from the byte projection (every position of the first 8 using the
    /// whole byte range, no key ending in them) or there are no keys.
    pub fn fit(keys: &[&[u8]]) -> Option<RadixProjection> {
        let longest = keys.iter().map(|k| k.len()).max()?;
        let mut digits = Vec::new();
        let mut product: u128 = 1;
        for i in 0..longest.min(MAX_POSITIONS) {
            let mut d = Digit {
                lo: u8::MAX,
                hi: 0,
                ended: 0,
            };
            for k in keys {
                match k.get(i) {
                    Some(&b) => {
                        d.lo = d.lo.min(b);
                        d.hi = d.hi.max(b);
                    }
                    None => d.ended = 1,
                }
            }
            if d.lo > d.hi {
                break; // every key has ended: nothing further tells keys apart
            }
            let next = product * u128::from(d.radix());
            if next > u128::from(u64::MAX) {
                break;
            }
            product = next;
            digits.push(d);
        }
        let bytewise = digits.len() <= 8
            && digits
                .iter()
                .all(|d| d.lo == 0 && d.hi == u8::MAX && d.ended == 0);
        if digits.is_empty() || bytewise {
            return None;
        }
        // As a decoded one holds it (`Index::size_bytes` counts capacity).
        digits.shrink_to_fit();
        Some(RadixProjection::from_digits(digits))
    }

    fn from_digits(digits: Vec<Digit>) -> RadixProjection {
        let mut rest = vec![1u64; digits.len() + 1];
        for i in (0..digits.len()).rev() {
            // Bounded by the product checked when the digits were chosen or decoded.
            rest[i] = rest[i + 1].saturating_mul(digits[i].radix());
        }
        RadixProjection { digits, rest }
    }

    /// Number of key positions it reads.
    pub fn positions(&self) -> usize {
        self.digits.len()
    }

    /// Projects `rest`, a key without the file's common prefix.
    #[inline]
    pub fn project(&self, rest: &[u8]) -> u64 {
        let mut value = 0u64;
        for (i, d) in self.digits.iter().enumerate() {
            let step = match rest.get(i) {
                Some(&b) if b < d.lo => Step::Low,
                Some(&b) if b > d.hi => Step::High,
                Some(&b) => Step::Digit(u64::from(b - d.lo) + u64::from(d.ended)),
                None if d.ended == 1 => Step::Digit(0),
                None => Step::Low,
            };
            value = match step {
                Step::Digit(digit) => value * d.radix() + digit,
                Step::Low => return value * self.rest[i],
                Step::High => return value * self.rest[i] + (self.rest[i] - 1),
            };
        }
        value
    }

    /// Projects any byte key against a file whose keys all start with `prefix`, monotone
    /// over all byte strings (keys ordered before every key carrying `prefix` project to 0,
    /// after every one to `u64::MAX`), as [`super::projection::project_bounded`] does.
    #[inline]
    pub fn project_bounded(&self, key: &[u8], prefix: &[u8]) -> u64 {
        let shared = key.iter().zip(prefix).take_while(|(a, b)| a == b).count();
        if shared == prefix.len() {
            self.project(&key[shared..])
        } else if key.get(shared) < prefix.get(shared) {
            0
        } else {
            u64::MAX
        }
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.digits.capacity() * std::mem::size_of::<Digit>()
            + self.rest.capacity() * std::mem::size_of::<u64>()
    }

    /// Appends the encoding: a count byte, then `lo, hi, ended` per position.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.push(self.digits.len() as u8);
        for d in &self.digits {
            out.extend_from_slice(&[d.lo, d.hi, d.ended]);
        }
    }

    /// Decodes what [`Self::encode`] wrote, checking every invariant `project` relies on.
    pub fn decode(d: &mut Decoder<'_>) -> Result<RadixProjection, String> {
        let count = usize::from(d.u8().ok_or("radix projection: truncated")?);
        if count == 0 || count > MAX_POSITIONS {
            return Err(format!("radix projection: {count} positions"));
        }
        let mut digits = Vec::with_capacity(count);
        let mut product: u128 = 1;
        for i in 0..count {
            let b = d.bytes(3).ok_or("radix projection: truncated")?;
            let digit = Digit {
                lo: b[0],
                hi: b[1],
                ended: b[2],
            };
            let prev_ended = digits.last().map_or(0, |p: &Digit| p.ended);
            if digit.lo > digit.hi || digit.ended > 1 || digit.ended < prev_ended {
                return Err(format!("radix projection: position {i} malformed"));
            }
            product *= u128::from(digit.radix());
            if product > u128::from(u64::MAX) {
                return Err("radix projection: radices overflow 64 bits".to_string());
            }
            digits.push(digit);
        }
        Ok(RadixProjection::from_digits(digits))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn fit(keys: &[Vec<u8>]) -> Option<RadixProjection> {
        let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
        RadixProjection::fit(&refs)
    }

    #[test]
    fn decimal_keys_project_to_their_numbers() {
        let keys: Vec<Vec<u8>> = (1000..2000u32)
            .map(|i| format!("{i:07}").into_bytes())
            .collect();
        let p = fit(&keys).expect("digits differ from bytes");
        // Positions 0..=2 are constant zeros, 3 is '1', 4..=6 use every digit.
        assert_eq!(p.project(b"0001000"), 0);
        assert_eq!(p.project(b"0001999"), 999);
        assert_eq!(p.project(b"0001200") - p.project(b"0001199"), 1);
        // Below and above the ranges: clamped.
        assert_eq!(p.project(b"0000999"), 0);
        assert_eq!(p.project(b"0002000"), 999);
        assert_eq!(p.project(b"000"), 0);
        assert_eq!(p.project(b"00019"), 900);
    }

    #[test]
    fn whole_byte_range_is_left_to_the_byte_projection() {
        let keys: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b; 8]).collect();
        assert_eq!(fit(&keys), None);
        assert_eq!(fit(&[]), None);
    }

    #[test]
    fn encoding_round_trips_and_refuses_damage() {
        let keys: Vec<Vec<u8>> = ["a/b", "a/bc", "a/zz", "b"]
            .iter()
            .map(|s| s.as_bytes().to_vec())
            .collect();
        let p = fit(&keys).unwrap();
        let mut out = Vec::new();
        p.encode(&mut out);
        assert_eq!(RadixProjection::decode(&mut Decoder::new(&out)).unwrap(), p);
        for cut in 0..out.len() {
            assert!(RadixProjection::decode(&mut Decoder::new(&out[..cut])).is_err());
        }
        let mut bad = out.clone();
        bad[1] = 0xff; // lo above hi
        assert!(RadixProjection::decode(&mut Decoder::new(&bad)).is_err());
        let mut wide = vec![9u8];
        for _ in 0..9 {
            wide.extend_from_slice(&[0, 255, 0]);
        }
        assert!(RadixProjection::decode(&mut Decoder::new(&wide)).is_err());
    }

    fn key() -> impl Strategy<Value = Vec<u8>> {
        prop::collection::vec(
            prop::sample::select(vec![0u8, b'0', b'3', b'9', b'a', 0xff]),
            0..12,
        )
    }

    proptest! {
        /// Monotone over arbitrary byte strings, for projections fitted to arbitrary files,
        /// and exact on the file's keys where the radices cover them.
        #[test]
        fn monotone_for_any_keys(
            mut file in prop::collection::vec(key(), 1..40),
            a in key(),
            b in key(),
            prefix in prop::collection::vec(any::<u8>(), 0..3),
        ) {
            file.sort();
            let Some(p) = fit(&file) else { return Ok(()) };
            for pair in file.windows(2) {
                prop_assert!(p.project(&pair[0]) <= p.project(&pair[1]));
            }
            let (a, b) = if a <= b { (a, b) } else { (b, a) };
            prop_assert!(p.project(&a) <= p.project(&b), "{:?} {:?}", a, b);
            let (pa, pb) = ([prefix.as_slice(), &a].concat(), [prefix.as_slice(), &b].concat());
            prop_assert!(p.project_bounded(&pa, &prefix) <= p.project_bounded(&pb, &prefix));
            // Keys with and without the prefix, in either order.
            let (x, y) = if a <= pb { (a.clone(), pb.clone()) } else { (pb.clone(), a.clone()) };
            prop_assert!(p.project_bounded(&x, &prefix) <= p.project_bounded(&y, &prefix));
        }
    }
}
