//! Unsigned integers of any size, with only what exact `long double` parsing and printing
//! need: multiply by a word and add one, shift left, divide by a word, the top 128 bits,
//! and decimal digits. The numbers stay below about 2^34000 (a 5,119-character argument
//! times a power of ten or two), so schoolbook loops over 64-bit limbs are fast enough
//! (a few milliseconds for the largest), and no dependency is needed.

/// An unsigned integer: little-endian 64-bit limbs, no zero limb at the top (zero is no
/// limbs).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Natural {
    limbs: Vec<u64>,
}

/// 10^19, the largest power of ten in a `u64`.
pub(super) const TEN_POW_19: u64 = 10_000_000_000_000_000_000;

impl Natural {
    /// The integer `n`.
    pub(super) fn from_u64(n: u64) -> Natural {
        let mut v = Natural { limbs: vec![n] };
        v.trim();
        v
    }

    /// Whether it is zero.
    pub(super) fn is_zero(&self) -> bool {
        self.limbs.is_empty()
    }

    fn trim(&mut self) {
        while self.limbs.last() == Some(&0) {
            self.limbs.pop();
        }
    }

    /// `self = self * m + a`.
    pub(super) fn mul_add(&mut self, m: u64, a: u64) {
        let mut carry = u128::from(a);
        for limb in &mut self.limbs {
            let t = u128::from(*limb) * u128::from(m) + carry;
            *limb = t as u64;
            carry = t >> 64;
        }
        if carry > 0 {
            self.limbs.push(carry as u64);
        }
        self.trim();
    }

    /// `self = self * 10^k`.
    pub(super) fn mul_pow10(&mut self, mut k: u64) {
        while k >= 19 {
            self.mul_add(TEN_POW_19, 0);
            k -= 19;
        }
        if k > 0 {
            self.mul_add(10u64.pow(k as u32), 0);
        }
    }

    /// `self = self << bits`.
    pub(super) fn shl(&mut self, bits: u64) {
        if self.is_zero() || bits == 0 {
            return;
        }
        let (words, rest) = ((bits / 64) as usize, (bits % 64) as u32);
        if rest > 0 {
            let mut carry = 0u64;
            for limb in &mut self.limbs {
                let next = *limb >> (64 - rest);
                *limb = (*limb << rest) | carry;
                carry = next;
            }
            if carry > 0 {
                self.limbs.push(carry);
            }
        }
        self.limbs.splice(0..0, std::iter::repeat_n(0, words));
    }

    /// `self = floor(self / d)`; returns the remainder. REQUIRES: `d > 0`.
    pub(super) fn div_rem(&mut self, d: u64) -> u64 {
        let mut rem = 0u128;
        let d = u128::from(d.max(1));
        for limb in self.limbs.iter_mut().rev() {
            let cur = (rem << 64) | u128::from(*limb);
            *limb = (cur / d) as u64;
            rem = cur % d;
        }
        self.trim();
        rem as u64
    }

    /// `self = floor(self / 10^k)`; returns whether the division left a remainder.
    pub(super) fn div_pow10(&mut self, mut k: u64) -> bool {
        let mut inexact = false;
        while k >= 19 && !self.is_zero() {
            inexact |= self.div_rem(TEN_POW_19) != 0;
            k -= 19;
        }
        if k >= 19 {
            return inexact; // zero divided stays zero, exactly
        }
        if k > 0 {
            inexact |= self.div_rem(10u64.pow(k as u32)) != 0;
        }
        inexact
    }

    /// Significant bits (0 for zero).
    pub(super) fn bits(&self) -> u64 {
        match self.limbs.last() {
            None => 0,
            Some(top) => 64 * (self.limbs.len() as u64 - 1) + u64::from(64 - top.leading_zeros()),
        }
    }

    fn limb(&self, i: usize) -> u64 {
        self.limbs.get(i).copied().unwrap_or(0)
    }

    /// The top 128 bits: `(self >> shift, shift, whether the bits shifted out are not all
    /// zero)`, with `shift` 0 when the number fits 128 bits.
    pub(super) fn top128(&self) -> (u128, u64, bool) {
        let bits = self.bits();
        if bits <= 128 {
            return (
                (u128::from(self.limb(1)) << 64) | u128::from(self.limb(0)),
                0,
                false,
            );
        }
        let shift = bits - 128;
        let (q, r) = ((shift / 64) as usize, (shift % 64) as u32);
        let (low, high) = if r == 0 {
            (self.limb(q), self.limb(q + 1))
        } else {
            (
                (self.limb(q) >> r) | (self.limb(q + 1) << (64 - r)),
                (self.limb(q + 1) >> r) | (self.limb(q + 2) << (64 - r)),
            )
        };
        let below = self.limbs.iter().take(q).any(|&l| l != 0)
            || (r > 0 && self.limb(q) & ((1u64 << r) - 1) != 0);
        ((u128::from(high) << 64) | u128::from(low), shift, below)
    }

    /// Decimal digits (`"0"` for zero).
    pub(super) fn to_decimal(&self) -> String {
        let mut n = self.clone();
        let mut chunks = Vec::new();
        while !n.is_zero() {
            chunks.push(n.div_rem(TEN_POW_19));
        }
        let mut text = chunks.pop().unwrap_or(0).to_string();
        for chunk in chunks.iter().rev() {
            text.push_str(&format!("{chunk:019}"));
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decimal(digits: &str) -> Natural {
        let mut n = Natural::default();
        for d in digits.bytes() {
            n.mul_add(10, u64::from(d - b'0'));
        }
        n
    }

    #[test]
    fn arithmetic_matches_u128() {
        let mut n = Natural::from_u64(12345);
        n.mul_pow10(20);
        assert_eq!(n.to_decimal(), "1234500000000000000000000");
        assert_eq!(
            n.bits(),
            128 - 1_234_500_000_000_000_000_000_000u128.leading_zeros() as u64
        );
        assert!(!n.div_pow10(20));
        assert_eq!(n, Natural::from_u64(12345));
        assert!(n.div_pow10(1));
        assert_eq!(n.to_decimal(), "1234");
        let mut s = Natural::from_u64(3);
        s.shl(200);
        assert_eq!(s.bits(), 202);
        let (top, shift, below) = s.top128();
        assert_eq!((top, shift, below), (3u128 << 126, 74, false));
        s.mul_add(1, 1);
        assert!(s.top128().2);
        assert_eq!(Natural::default().to_decimal(), "0");
        assert_eq!(decimal("0000").bits(), 0);
    }

    #[test]
    fn decimal_round_trip_of_a_large_number() {
        let digits = "9".repeat(300) + "123456789012345678901234567890";
        assert_eq!(decimal(&digits).to_decimal(), digits);
        let mut n = decimal(&digits);
        n.shl(1000);
        assert!(!n.is_zero());
        let mut two_pow = Natural::from_u64(1);
        two_pow.shl(64);
        assert_eq!(two_pow.to_decimal(), "18446744073709551616");
    }
}
