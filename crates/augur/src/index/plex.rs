//! PLEX (Stoian, Kipf, Marcus, Kraska, "PLEX: Towards Practical Learned Indexing", aiDM
//! 2021): RadixSpline's error-bounded spline (`super::spline`, the same GreedySplineCorridor
//! fitter, shared) whose points are located by a **Compact Hist-Tree** (`super::cht`) or,
//! when the cost model finds it cheaper, a flat radix table ([`super::radix_spline`]). Only
//! δ is user-facing: the locator and its parameters are self-tuned from the spline points
//! (`super::plex_tune`, where the cost model and its constants are documented).
//!
//! Lookup: keys `<= first` or `> last` are answered directly (`[0, 1)`, `[n, n + 1)`);
//! otherwise the locator gives a small knot range holding the first spline point `>= x`, a
//! binary search there finds the segment, and the interpolation returns at most `2δ + 1`
//! positions. The window contract holds for every u64 key for the reasons given in
//! `super::spline`: the spline is within δ of `lb` over its whole range, and the knot range
//! is only a hint the spline verifies.
//!
//! The locator is a function of the spline and the chosen parameters, so the encoding stores
//! the choice and the spline; decoding rebuilds the locator (the tuning itself is not rerun).

use super::plex_tune::{self, Choice, Locator};
use super::radix_spline::{RadixTable, RADIX_BITS};
use super::spline::{Spline, SplineBuilder};
use super::{put_header, Index, IndexBuilder, IndexConfig, IndexKind, Window};
use crate::coding::{put_u32, Decoder};
use crate::error::Result;

/// Encoding tag of a radix-table locator.
const TAG_RADIX: u8 = 0;
/// Encoding tag of a CHT locator.
const TAG_CHT: u8 = 1;
/// CHT bin bits a decoder accepts (the tuner tries 4..=12).
const CHT_BIN_BITS: std::ops::RangeInclusive<u32> = 4..=12;
/// CHT leaf sizes a decoder accepts (the tuner tries 8..=64).
const CHT_MAX_ERROR: std::ops::RangeInclusive<u32> = 1..=1024;

/// A builder for this index type.
pub(super) fn builder(config: &IndexConfig) -> Box<dyn IndexBuilder> {
    Box::new(PlexBuilder {
        spline: SplineBuilder::new(config.error_bound),
    })
}

/// The window bound of an index of `config`: `2δ + 1`.
pub(super) fn documented_max_window(config: &IndexConfig) -> Option<u64> {
    Some(2 * u64::from(config.error_bound) + 1)
}

/// Decodes the body of an encoding of this type (`docs/format/index.md`, kind 7).
pub(super) fn decode_body(body: &[u8]) -> std::result::Result<Box<dyn Index>, String> {
    let mut d = Decoder::new(body);
    let (Some(tag), Some(bits), Some(max_error)) = (d.u8(), d.u8(), d.u32()) else {
        return Err("plex: truncated parameters".to_string());
    };
    let bits = u32::from(bits);
    let spline = Spline::decode(&mut d, "plex")?;
    let m = spline.keys.len();
    let choice = match tag {
        TAG_RADIX
            if RADIX_BITS.contains(&bits)
                && bits <= RadixTable::effective_bits(24, m)
                && max_error == 0 =>
        {
            Choice::Radix { bits }
        }
        TAG_CHT if CHT_BIN_BITS.contains(&bits) && CHT_MAX_ERROR.contains(&max_error) => {
            Choice::Cht {
                bin_bits: bits,
                max_error,
            }
        }
        _ => {
            return Err(format!(
                "plex: locator {tag} with bits {bits}, max_error {max_error}"
            ))
        }
    };
    Ok(Box::new(PlexIndex::new(spline, choice)))
}

/// Streams keys into a [`PlexIndex`].
#[derive(Debug)]
struct PlexBuilder {
    spline: SplineBuilder,
}

impl IndexBuilder for PlexBuilder {
    fn add(&mut self, key: u64) -> Result<()> {
        self.spline.add(key)
    }

    fn add_all(&mut self, keys: &[u64]) -> Result<()> {
        self.spline.add_all(keys)
    }

    fn finish(self: Box<Self>) -> Result<Box<dyn Index>> {
        let spline = self.spline.finish()?;
        let choice = plex_tune::tune(&spline.keys, &spline.pos);
        Ok(Box::new(PlexIndex::new(spline, choice)))
    }
}

/// A PLEX index over the projected keys of one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlexIndex {
    spline: Spline,
    choice: Choice,
    locator: Locator,
}

impl PlexIndex {
    fn new(spline: Spline, choice: Choice) -> PlexIndex {
        let locator = plex_tune::build(&spline.keys, choice);
        PlexIndex {
            spline,
            choice,
            locator,
        }
    }

    /// The error bound δ.
    pub fn error_bound(&self) -> u32 {
        self.spline.delta
    }

    /// A description of the tuned locator: `radix(bits)` or `cht(bins, max_error, nodes)`.
    pub fn locator(&self) -> String {
        match (&self.locator, self.choice) {
            (
                Locator::Cht(t),
                Choice::Cht {
                    bin_bits,
                    max_error,
                },
            ) => {
                format!(
                    "cht(bins 2^{bin_bits}, max_error {max_error}, {} nodes)",
                    t.nodes()
                )
            }
            (_, Choice::Radix { bits }) => format!("radix({bits} bits)"),
            _ => "?".to_string(),
        }
    }

    /// The tuned CHT, if the tuning chose one (for tests).
    #[cfg(test)]
    fn cht(&self) -> Option<&super::cht::Cht> {
        match &self.locator {
            Locator::Cht(t) => Some(t),
            Locator::Radix(_) => None,
        }
    }
}

impl Index for PlexIndex {
    fn fitted_error_bound(&self) -> Option<u32> {
        Some(PlexIndex::error_bound(self))
    }

    #[inline]
    fn search(&self, key: u64) -> Window {
        self.spline.search(key, &self.locator)
    }

    fn max_window(&self) -> u64 {
        self.spline.max_window()
    }

    fn size_bytes(&self) -> usize {
        std::mem::size_of::<Self>() + self.spline.heap_bytes() + self.locator.heap_bytes()
    }

    fn kind(&self) -> IndexKind {
        IndexKind::Plex
    }

    fn len(&self) -> u64 {
        self.spline.n
    }

    /// The number of spline points.
    fn segments(&self) -> u64 {
        self.spline.knots()
    }

    fn encode(&self, out: &mut Vec<u8>) {
        put_header(out, IndexKind::Plex);
        match self.choice {
            Choice::Radix { bits } => {
                out.push(TAG_RADIX);
                out.push(bits as u8);
                put_u32(out, 0);
            }
            Choice::Cht {
                bin_bits,
                max_error,
            } => {
                out.push(TAG_CHT);
                out.push(bin_bits as u8);
                put_u32(out, max_error);
            }
        }
        self.spline.encode(out);
    }
}

#[cfg(test)]
#[path = "plex_tests.rs"]
mod tests;
