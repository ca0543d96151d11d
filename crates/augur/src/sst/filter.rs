//! The table's bloom filter: one filter over the distinct user keys of the file (the
//! PebblesDB sstable-level filter), consulted before any index or data block is touched.
//!
//! Hashing: one 64-bit xxh3 hash `h` per key; `k = round(bits_per_key·ln 2)` clamped to
//! `1..=30` probes. Encoding: `header u32 | bit array`, header = `num_probes | layout << 8`;
//! an empty section means "no filter". Two layouts (bit `j` is bit `j % 8` of byte `j / 8`):
//!
//! - **blocked** (layout 1, written by this build): the array is a sequence of 512-bit
//!   lines (its length a multiple of 64 bytes). The low 32 bits of `h` pick the line by
//!   multiply-shift (`line = (h mod 2^32) · lines >> 32`); every probe falls inside it:
//!   `g_0 = (h >> 32) | 1`, probe `i` sets bit `g_i >> 23` (0..512) of the line, and
//!   `g_{i+1} = g_i · 0x9e3779b9 mod 2^32`. A lookup touches ONE cache line (the lines are
//!   64-byte aligned in memory) instead of `k`, for a slightly higher false-positive rate
//!   (≈1.1% instead of 0.8% at 10 bits per key) — the trade RocksDB's `FastLocalBloom` makes.
//! - **classic** (layout 0, read only): double hashing (Kirsch–Mitzenmacher) over the whole
//!   array: `x_0 = h`, `x_{i+1} = x_i + δ` with `δ` an odd mix of `h`, each `x_i` mapped onto
//!   `[0, m)` by multiply-shift ("fastrange").

use crate::coding::get_u32;
use xxhash_rust::xxh3::xxh3_64;

/// Largest number of probes a filter may use.
const MAX_PROBES: u32 = 30;

/// Smallest bit array, so tiny tables still get a useful filter.
const MIN_BITS: u64 = 64;

/// Bytes of the filter header (`num_probes | layout << 8`, u32).
const HEADER_BYTES: usize = 4;

/// Layout of the classic filter (probes over the whole array).
const LAYOUT_CLASSIC: u32 = 0;

/// Layout of the cache-line-blocked filter.
const LAYOUT_BLOCKED: u32 = 1;

/// Bytes of one line of the blocked layout.
const LINE_BYTES: usize = 64;

/// One 512-bit line of a blocked filter, aligned so it occupies exactly one cache line.
#[repr(C, align(64))]
#[derive(Debug, Clone, Copy)]
struct Line([u8; LINE_BYTES]);

/// The line of `h` among `lines`, and the bits (0..512) its probes set in it.
/// The filter hash of a user key (one per key, shared by every table's filter).
#[inline]
pub(crate) fn key_hash(user_key: &[u8]) -> u64 {
    xxh3_64(user_key)
}

fn blocked_probes(h: u64, lines: u64, probes: u32) -> (u64, impl Iterator<Item = u32>) {
    let line = ((h & 0xffff_ffff) * lines) >> 32;
    let mut g = ((h >> 32) as u32) | 1;
    let bits = (0..probes).map(move |_| {
        let bit = g >> 23;
        g = g.wrapping_mul(0x9e37_79b9);
        bit
    });
    (line, bits)
}

fn probe_positions(h: u64, num_bits: u64, probes: u32) -> impl Iterator<Item = u64> {
    let delta = h.rotate_right(33).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..u64::from(probes)).map(move |i| {
        let x = h.wrapping_add(i.wrapping_mul(delta));
        ((u128::from(x) * u128::from(num_bits)) >> 64) as u64
    })
}

/// Collects user keys while a table is built and encodes the filter at the end.
#[derive(Debug)]
pub(crate) struct FilterBuilder {
    bits_per_key: u32,
    /// xxh3 hashes of the distinct user keys (8 bytes per key instead of the key).
    hashes: Vec<u64>,
}

impl FilterBuilder {
    /// A builder for `bits_per_key` bits per distinct key; 0 builds no filter.
    pub(crate) fn new(bits_per_key: u32) -> Self {
        FilterBuilder {
            bits_per_key,
            hashes: Vec::new(),
        }
    }

    /// Adds a user key. REQUIRES: the caller adds each distinct key once.
    pub(crate) fn add(&mut self, user_key: &[u8]) {
        if self.bits_per_key > 0 {
            self.hashes.push(xxh3_64(user_key));
        }
    }

    /// Bytes the encoded filter will take.
    pub(crate) fn estimated_bytes(&self) -> u64 {
        if self.bits_per_key == 0 {
            return 0;
        }
        let bits = (self.hashes.len() as u64 * u64::from(self.bits_per_key)).max(MIN_BITS);
        bits.div_ceil(8 * LINE_BYTES as u64) * LINE_BYTES as u64 + HEADER_BYTES as u64
    }

    /// Encodes the filter section (empty when disabled), in the blocked layout.
    pub(crate) fn finish(&self) -> Vec<u8> {
        if self.bits_per_key == 0 {
            return Vec::new();
        }
        let probes = ((f64::from(self.bits_per_key) * std::f64::consts::LN_2).round() as u32)
            .clamp(1, MAX_PROBES);
        let num_bytes = self.estimated_bytes() as usize - HEADER_BYTES;
        let lines = (num_bytes / LINE_BYTES) as u64;
        let mut out = vec![0u8; HEADER_BYTES + num_bytes];
        out[..HEADER_BYTES].copy_from_slice(&(probes | LAYOUT_BLOCKED << 8).to_le_bytes());
        let bits = &mut out[HEADER_BYTES..];
        for &h in &self.hashes {
            let (line, probe_bits) = blocked_probes(h, lines, probes);
            let base = line as usize * LINE_BYTES;
            for bit in probe_bits {
                if let Some(byte) = bits.get_mut(base + (bit / 8) as usize) {
                    *byte |= 1 << (bit % 8);
                }
            }
        }
        out
    }
}

/// The bits of a decoded filter, per layout.
#[derive(Debug)]
enum Bits {
    Classic(Vec<u8>),
    Blocked(Vec<Line>),
}

/// A decoded bloom filter.
#[derive(Debug)]
pub(crate) struct Bloom {
    probes: u32,
    bits: Bits,
}

impl Bloom {
    /// Decodes a non-empty filter section; `Err(reason)` when it is malformed.
    pub(crate) fn decode(section: &[u8]) -> Result<Bloom, &'static str> {
        let header = get_u32(section, 0).ok_or("filter shorter than its header")?;
        let (probes, layout) = (header & 0xff, header >> 8);
        if probes == 0 || probes > MAX_PROBES {
            return Err("filter probe count out of range");
        }
        let bytes = section.get(HEADER_BYTES..).unwrap_or_default();
        if bytes.is_empty() {
            return Err("filter has no bits");
        }
        let bits = match layout {
            LAYOUT_CLASSIC => Bits::Classic(bytes.to_vec()),
            LAYOUT_BLOCKED => {
                if bytes.len() % LINE_BYTES != 0 {
                    return Err("blocked filter is not a whole number of lines");
                }
                let lines = bytes
                    .chunks_exact(LINE_BYTES)
                    .map(|c| {
                        let mut line = Line([0; LINE_BYTES]);
                        line.0.copy_from_slice(c);
                        line
                    })
                    .collect();
                Bits::Blocked(lines)
            }
            _ => return Err("unknown filter layout"),
        };
        Ok(Bloom { probes, bits })
    }

    /// [`Bloom::decode`] of the filter section read from `offset` of `file`, failing with a
    /// `Corruption` naming them: how `Table::open` decodes a table's filter.
    ///
    /// # Errors
    /// `Corruption` when the section is malformed.
    pub(crate) fn decode_section(
        section: &[u8],
        file: &std::path::Path,
        offset: u64,
    ) -> crate::Result<Bloom> {
        Bloom::decode(section).map_err(|why| crate::Error::corruption(file, offset, why))
    }

    /// The section this filter decodes from: `decode(s)?.encode() == s` for every `s` that
    /// decodes (the header holds nothing but the probe count and the layout).
    #[cfg(any(test, feature = "test-util"))]
    pub(crate) fn encode(&self) -> Vec<u8> {
        let (layout, bytes) = match &self.bits {
            Bits::Classic(bits) => (LAYOUT_CLASSIC, bits.clone()),
            Bits::Blocked(lines) => (
                LAYOUT_BLOCKED,
                lines.iter().flat_map(|Line(l)| l.iter().copied()).collect(),
            ),
        };
        let mut out = (self.probes | layout << 8).to_le_bytes().to_vec();
        out.extend_from_slice(&bytes);
        out
    }

    /// False only when `user_key` was certainly not added.
    pub(crate) fn may_contain(&self, user_key: &[u8]) -> bool {
        self.may_contain_hash(key_hash(user_key))
    }

    /// Starts loading the cache line that [`Bloom::may_contain_hash`] will read for `h`.
    pub(crate) fn prefetch(&self, h: u64) {
        if let Bits::Blocked(lines) = &self.bits {
            let (line, _) = blocked_probes(h, lines.len() as u64, self.probes);
            if let Some(Line(line)) = lines.get(line as usize) {
                crate::prefetch::prefetch_read(line);
            }
        }
    }

    /// [`Bloom::may_contain`] of a key whose [`key_hash`] is `h`.
    pub(crate) fn may_contain_hash(&self, h: u64) -> bool {
        match &self.bits {
            Bits::Blocked(lines) => {
                let (line, mut probe_bits) = blocked_probes(h, lines.len() as u64, self.probes);
                let Some(Line(line)) = lines.get(line as usize) else {
                    return true;
                };
                probe_bits.all(|bit| {
                    line.get((bit / 8) as usize)
                        .is_some_and(|b| b & (1 << (bit % 8)) != 0)
                })
            }
            Bits::Classic(bits) => {
                let num_bits = bits.len() as u64 * 8;
                probe_positions(h, num_bits, self.probes).all(|pos| {
                    bits.get((pos / 8) as usize)
                        .is_some_and(|b| b & (1 << (pos % 8)) != 0)
                })
            }
        }
    }

    /// Heap bytes held by the filter.
    pub(crate) fn size_bytes(&self) -> usize {
        match &self.bits {
            Bits::Classic(bits) => bits.capacity(),
            Bits::Blocked(lines) => lines.capacity() * LINE_BYTES,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(bits_per_key: u32, n: u64) -> Option<Bloom> {
        let mut b = FilterBuilder::new(bits_per_key);
        for i in 0..n {
            b.add(&i.to_be_bytes());
        }
        let enc = b.finish();
        assert_eq!(enc.len() as u64, b.estimated_bytes());
        if enc.is_empty() {
            None
        } else {
            Some(Bloom::decode(&enc).unwrap())
        }
    }

    #[test]
    fn no_false_negatives_and_disabled() {
        let f = build(10, 1000).unwrap();
        assert!((0..1000u64).all(|i| f.may_contain(&i.to_be_bytes())));
        assert!(build(0, 1000).is_none());
        let tiny = build(10, 1).unwrap();
        assert!(tiny.may_contain(&0u64.to_be_bytes()));
        assert!(tiny.size_bytes() >= 8);
    }

    /// The false-positive rate is close to the theoretical `(1 - e^{-k/b})^k`.
    #[test]
    fn false_positive_rate_matches_bits_per_key() {
        let n = 10_000u64;
        // Blocked-bloom rates: a little above the classic `(1 - e^{-k/b})^k` (0.056, 0.0082,
        // 0.00046), since keys are not spread evenly over the lines.
        for (bits, expected) in [(6u32, 0.06), (10, 0.011), (16, 0.0009)] {
            let f = build(bits, n).unwrap();
            let trials = 100_000u64;
            let fp = (n..n + trials)
                .filter(|i| f.may_contain(&i.to_be_bytes()))
                .count();
            let rate = fp as f64 / trials as f64;
            assert!(
                rate < expected * 1.6 + 0.0005 && rate > expected * 0.4,
                "bits {bits}: rate {rate}, expected about {expected}"
            );
        }
    }

    #[test]
    fn rejects_malformed() {
        assert!(Bloom::decode(&[1, 0]).is_err());
        assert!(Bloom::decode(&[0, 0, 0, 0, 1]).is_err());
        assert!(Bloom::decode(&[31, 0, 0, 0, 1]).is_err());
        assert!(Bloom::decode(&[3, 0, 0, 0]).is_err());
        // Blocked layout: a partial line, an unknown layout.
        assert!(Bloom::decode(&[3, 1, 0, 0, 1]).is_err());
        assert!(Bloom::decode(&[3, 2, 0, 0, 1]).is_err());
    }

    /// Filters of the classic layout (written by earlier builds) are still read.
    #[test]
    fn reads_the_classic_layout() {
        let n = 1000u64;
        let (probes, num_bytes) = (7u32, 1250usize);
        let mut enc = vec![0u8; HEADER_BYTES + num_bytes];
        enc[..HEADER_BYTES].copy_from_slice(&probes.to_le_bytes());
        for i in 0..n {
            let h = xxh3_64(&i.to_be_bytes());
            for pos in probe_positions(h, num_bytes as u64 * 8, probes) {
                enc[HEADER_BYTES + (pos / 8) as usize] |= 1 << (pos % 8);
            }
        }
        let f = Bloom::decode(&enc).unwrap();
        assert!((0..n).all(|i| f.may_contain(&i.to_be_bytes())));
        let fp = (n..n + 10_000)
            .filter(|i| f.may_contain(&i.to_be_bytes()))
            .count();
        assert!(fp < 300, "{fp} false positives");
    }

    /// Decoding then encoding gives back the section, in both layouts; a malformed section
    /// is a `Corruption` naming the file.
    #[test]
    fn encode_gives_back_the_section() {
        let mut b = FilterBuilder::new(10);
        for i in 0..300u64 {
            b.add(&i.to_be_bytes());
        }
        let blocked = b.finish();
        assert_eq!(Bloom::decode(&blocked).unwrap().encode(), blocked);
        let classic = [7u8, 0, 0, 0, 0xa5, 0x5a, 1];
        assert_eq!(Bloom::decode(&classic).unwrap().encode(), classic);
        let path = std::path::Path::new("/db/000001.sst");
        match Bloom::decode_section(&[3, 1, 0, 0, 1], path, 70) {
            Err(crate::Error::Corruption { file, offset, .. }) => {
                assert_eq!((file.as_path(), offset), (path, 70));
            }
            other => panic!("not a corruption: {other:?}"),
        }
    }

    /// Every line of a blocked filter is one aligned cache line in memory.
    #[test]
    fn blocked_lines_are_cache_line_aligned() {
        let f = build(10, 5000).unwrap();
        let Bits::Blocked(lines) = &f.bits else {
            panic!("new filters use the blocked layout");
        };
        assert_eq!(lines.as_ptr() as usize % 64, 0);
        assert_eq!(f.size_bytes() % 64, 0);
    }
}
