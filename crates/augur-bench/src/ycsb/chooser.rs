//! YCSB's key choosers (`--request-distribution`): which record each operation of a
//! `ycsb-*` workload touches. A chooser returns a record *number*; `ycsb/naming.rs` turns it
//! into a key (`Records`), so whether records close in number are close in key order depends
//! on `--insert-order` (or a key source, whose records are in key order), not on the chooser.
//!
//! - `uniform`: uniform over the records present.
//! - `zipfian`: YCSB's `ScrambledZipfianGenerator`: zipfian with θ = 0.99 over 10¹⁰ items,
//!   then FNV-hashed modulo the item space (records loaded plus twice the expected inserts,
//!   as `CoreWorkload` sizes it), redrawn while beyond the last record inserted.
//! - `latest`: `SkewedLatestGenerator`: the last record inserted minus a zipfian draw over
//!   the records present (its zeta grown incrementally as records are inserted).
//! - `hotspot`: `HotspotIntegerGenerator`: a fraction `ops` of the operations goes uniformly
//!   to the hot set, the first fraction `data` of the records (record numbers
//!   `0..data·count`), the rest uniformly to the others; YCSB's defaults 0.2 / 0.8.
//! - `hotspot-zipfian`: the same split into a hot set and the rest, but scrambled zipfian
//!   (as `zipfian`, over the set's own records) within each set: the workload B′ of the
//!   Bourbon range-query follow-up (§5.4: 90% of the operations on 1% of the records,
//!   zipfian); defaults 0.01 / 0.9. The hot set is a contiguous range of record numbers, so
//!   with `--insert-order=ordered` it is a contiguous key range and lives in few SSTables.
//! - `exponential`: `ExponentialGenerator` with YCSB's defaults (95% of the draws within the
//!   most recent 85.7% of the records), counted back from the last record.
//! - `sequential`: records `0, 1, 2, …` cycling.

use super::fnv64;
use clap::ValueEnum;
use rand::rngs::StdRng;
use rand::Rng;

/// YCSB's `ZIPFIAN_CONSTANT`.
pub const ZIPFIAN_THETA: f64 = 0.99;
/// Item space of YCSB's `ScrambledZipfianGenerator`.
const SCRAMBLED_ITEMS: u64 = 10_000_000_000;
/// zeta(10¹⁰, 0.99), precomputed by YCSB (`ScrambledZipfianGenerator.ZETAN`).
const SCRAMBLED_ZETAN: f64 = 26.469_028_201_783_02;
/// `exponential.percentile` and `exponential.frac` defaults.
const EXP_PERCENTILE: f64 = 95.0;
const EXP_FRAC: f64 = 0.857_142_857_1;

/// Request distributions (`--request-distribution`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RequestDist {
    Uniform,
    Zipfian,
    Latest,
    Hotspot,
    HotspotZipfian,
    Exponential,
    Sequential,
}

impl RequestDist {
    /// Every distribution, in flag order.
    pub const ALL: [RequestDist; 7] = [
        RequestDist::Uniform,
        RequestDist::Zipfian,
        RequestDist::Latest,
        RequestDist::Hotspot,
        RequestDist::HotspotZipfian,
        RequestDist::Exponential,
        RequestDist::Sequential,
    ];

    /// The flag spelling.
    pub fn name(self) -> &'static str {
        match self {
            RequestDist::Uniform => "uniform",
            RequestDist::Zipfian => "zipfian",
            RequestDist::Latest => "latest",
            RequestDist::Hotspot => "hotspot",
            RequestDist::HotspotZipfian => "hotspot-zipfian",
            RequestDist::Exponential => "exponential",
            RequestDist::Sequential => "sequential",
        }
    }

    /// The hot set of the two hotspot distributions when no flag overrides it (`None` for
    /// the others).
    pub fn default_hot_set(self) -> Option<HotSet> {
        match self {
            RequestDist::Hotspot => Some(HotSet::YCSB),
            RequestDist::HotspotZipfian => Some(HotSet::B_PRIME),
            _ => None,
        }
    }
}

/// The hot set of the hotspot distributions: the first `data` fraction of the records
/// receives the fraction `ops` of the operations (`--hotspot-data-fraction`,
/// `--hotspot-ops-fraction`; YCSB's `hotspotdatafraction`, `hotspotopnfraction`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HotSet {
    /// Fraction of the records in the hot set, in `(0, 1]`.
    pub data: f64,
    /// Fraction of the operations sent to the hot set, in `[0, 1]`.
    pub ops: f64,
}

impl HotSet {
    /// YCSB's `HotspotIntegerGenerator` defaults: 80% of the operations on 20% of the records.
    pub const YCSB: HotSet = HotSet {
        data: 0.2,
        ops: 0.8,
    };
    /// Workload B′ of the lazy-learning study: 90% of the operations on 1% of the records.
    pub const B_PRIME: HotSet = HotSet {
        data: 0.01,
        ops: 0.9,
    };

    /// Records in the hot set when `count` are present: at least 1, at most `count`.
    pub fn records(&self, count: u64) -> u64 {
        ((count as f64 * self.data) as u64).clamp(1, count.max(1))
    }
}

/// sum of 1/(i+1)^θ for i in `from..to`, added to `initial`.
pub(super) fn zeta(from: u64, to: u64, theta: f64, initial: f64) -> f64 {
    (from..to).fold(initial, |s, i| s + 1.0 / ((i + 1) as f64).powf(theta))
}

/// YCSB's `ZipfianGenerator` (Gray et al.'s method): item 0 most popular.
#[derive(Debug, Clone)]
pub struct Zipfian {
    items: u64,
    theta: f64,
    alpha: f64,
    zeta2: f64,
    zetan: f64,
    eta: f64,
}

impl Zipfian {
    /// Over `items` items (zeta computed in O(items)).
    pub fn new(items: u64, theta: f64) -> Self {
        Self::with_zetan(items, theta, zeta(0, items, theta, 0.0))
    }

    /// YCSB's scrambled generator's base: 10¹⁰ items with their precomputed zeta.
    fn scrambled() -> Self {
        Self::with_zetan(SCRAMBLED_ITEMS, ZIPFIAN_THETA, SCRAMBLED_ZETAN)
    }

    fn with_zetan(items: u64, theta: f64, zetan: f64) -> Self {
        let mut z = Zipfian {
            items,
            theta,
            alpha: 1.0 / (1.0 - theta),
            zeta2: zeta(0, 2, theta, 0.0),
            zetan,
            eta: 0.0,
        };
        z.set_eta();
        z
    }

    fn set_eta(&mut self) {
        self.eta = (1.0 - (2.0 / self.items.max(1) as f64).powf(1.0 - self.theta))
            / (1.0 - self.zeta2 / self.zetan);
    }

    /// Extends the item space to `items` (incremental zeta, as YCSB does).
    pub fn grow(&mut self, items: u64) {
        if items > self.items {
            self.zetan = zeta(self.items, items, self.theta, self.zetan);
            self.items = items;
            self.set_eta();
        }
    }

    /// A draw in `[0, items)`.
    pub fn next(&self, rng: &mut StdRng) -> u64 {
        if self.items <= 1 {
            return 0;
        }
        let u: f64 = rng.gen();
        let uz = u * self.zetan;
        if uz < 1.0 {
            return 0;
        }
        if uz < 1.0 + 0.5f64.powf(self.theta) {
            return 1;
        }
        let r = self.items as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha);
        (r as u64).min(self.items - 1)
    }

    /// A scrambled draw in `[0, space)`: FNV hash of a draw, modulo `space` (at least 1).
    fn scrambled_in(&self, space: u64, rng: &mut StdRng) -> u64 {
        fnv64(self.next(rng)) % space.max(1)
    }
}

/// Picks the record of each operation.
#[derive(Debug, Clone)]
pub enum Chooser {
    Uniform,
    /// Scrambled zipfian over `space` items.
    Zipfian {
        zipf: Zipfian,
        space: u64,
    },
    Latest(Zipfian),
    Hotspot(HotSet),
    /// Scrambled zipfian within the hot set and within the rest.
    HotspotZipfian {
        hot: HotSet,
        zipf: Zipfian,
    },
    Exponential {
        gamma: f64,
    },
    Sequential {
        next: u64,
    },
}

impl Chooser {
    /// A chooser for `records` loaded records and an expected `inserts` more; the hotspot
    /// distributions use their default hot sets.
    pub fn new(dist: RequestDist, records: u64, inserts: u64) -> Self {
        Self::with_hot_set(dist, records, inserts, None)
    }

    /// [`Chooser::new`] with the hot set of the hotspot distributions (`None`: the
    /// distribution's default; ignored by the others).
    pub fn with_hot_set(
        dist: RequestDist,
        records: u64,
        inserts: u64,
        hot: Option<HotSet>,
    ) -> Self {
        let hot = hot.or(dist.default_hot_set()).unwrap_or(HotSet::YCSB);
        match dist {
            RequestDist::Uniform => Chooser::Uniform,
            RequestDist::Zipfian => Chooser::Zipfian {
                zipf: Zipfian::scrambled(),
                space: records.saturating_add(inserts.saturating_mul(2)).max(1),
            },
            RequestDist::Latest => Chooser::Latest(Zipfian::new(records.max(1), ZIPFIAN_THETA)),
            RequestDist::Hotspot => Chooser::Hotspot(hot),
            RequestDist::HotspotZipfian => Chooser::HotspotZipfian {
                hot,
                zipf: Zipfian::scrambled(),
            },
            RequestDist::Exponential => Chooser::Exponential {
                gamma: -(1.0 - EXP_PERCENTILE / 100.0).ln() / (records.max(1) as f64 * EXP_FRAC),
            },
            RequestDist::Sequential => Chooser::Sequential { next: 0 },
        }
    }

    /// A record number in `[0, count)` (`count` at least 1: the records present).
    pub fn next(&mut self, count: u64, rng: &mut StdRng) -> u64 {
        let count = count.max(1);
        match self {
            Chooser::Uniform => rng.gen_range(0..count),
            Chooser::Zipfian { zipf, space } => {
                // Redraw beyond the last record, as CoreWorkload does; give up after many
                // tries (only possible when few records lie in a large space).
                let mut r = 0;
                for _ in 0..1000 {
                    r = zipf.scrambled_in(*space, rng);
                    if r < count {
                        return r;
                    }
                }
                r % count
            }
            Chooser::Latest(zipf) => {
                zipf.grow(count);
                count - 1 - zipf.next(rng).min(count - 1)
            }
            Chooser::Hotspot(set) => {
                let hot = set.records(count);
                if hot == count || rng.gen::<f64>() < set.ops {
                    rng.gen_range(0..hot)
                } else {
                    rng.gen_range(hot..count)
                }
            }
            Chooser::HotspotZipfian { hot: set, zipf } => {
                let hot = set.records(count);
                if hot == count || rng.gen::<f64>() < set.ops {
                    zipf.scrambled_in(hot, rng)
                } else {
                    hot + zipf.scrambled_in(count - hot, rng)
                }
            }
            Chooser::Exponential { gamma } => loop {
                let u = 1.0 - rng.gen::<f64>(); // in (0, 1]
                let back = (-u.ln() / *gamma) as u64;
                if back < count {
                    return count - 1 - back;
                }
            },
            Chooser::Sequential { next } => {
                let r = *next % count;
                *next = next.wrapping_add(1);
                r
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    const DRAWS: u64 = 100_000;

    fn rng() -> StdRng {
        StdRng::seed_from_u64(7)
    }

    /// Draw counts per record for `DRAWS` draws over `count` records.
    fn histogram(dist: RequestDist, count: u64) -> Vec<u64> {
        histogram_of(&mut Chooser::new(dist, count, 0), count)
    }

    fn histogram_of(c: &mut Chooser, count: u64) -> Vec<u64> {
        let mut r = rng();
        let mut h = vec![0u64; count as usize];
        for _ in 0..DRAWS {
            let k = c.next(count, &mut r);
            assert!(k < count, "{c:?} drew {k} of {count}");
            h[k as usize] += 1;
        }
        h
    }

    /// Share of the draws landing on the most-drawn `fraction` of records.
    fn top_share(mut h: Vec<u64>, fraction: f64) -> f64 {
        h.sort_unstable_by(|a, b| b.cmp(a));
        let k = ((h.len() as f64 * fraction) as usize).max(1);
        h[..k].iter().sum::<u64>() as f64 / h.iter().sum::<u64>().max(1) as f64
    }

    #[test]
    fn zipfian_is_skewed_as_theory_says() {
        // The top 1% of ranks of zipf(θ=0.99) over 10¹⁰ items carry zeta(k)/zeta(10¹⁰) of
        // the mass; scrambling maps them to at most k records, so the most-drawn 1% of the
        // records get at least that share (about 29% for k = 1000).
        let count = 100_000;
        let theory = zeta(0, count / 100, ZIPFIAN_THETA, 0.0) / SCRAMBLED_ZETAN;
        assert!(theory > 0.25 && theory < 0.35, "{theory}");
        let share = top_share(histogram(RequestDist::Zipfian, count), 0.01);
        assert!(share > theory - 0.03 && share < 0.5, "{share} vs {theory}");
        // Uniform, for contrast (over fewer records, so that sampling noise stays small):
        // the top 1% gets little more than 1%, and zipfian over as few records is skewed too.
        let uniform = top_share(histogram(RequestDist::Uniform, 1000), 0.01);
        assert!(uniform < 0.02, "{uniform}");
        let small = top_share(histogram(RequestDist::Zipfian, 1000), 0.01);
        let theory = zeta(0, 10, ZIPFIAN_THETA, 0.0) / SCRAMBLED_ZETAN;
        assert!(small > theory - 0.02, "{small} vs {theory}");
    }

    #[test]
    fn unscrambled_zipfian_favours_item_zero() {
        let z = Zipfian::new(1000, ZIPFIAN_THETA);
        let mut r = rng();
        let zeros = (0..DRAWS).filter(|_| z.next(&mut r) == 0).count() as f64;
        let want = 1.0 / z.zetan; // p(rank 1) = 1 / zeta(n)
        assert!((zeros / DRAWS as f64 - want).abs() < 0.01, "{zeros} {want}");
    }

    #[test]
    fn latest_and_exponential_favour_recent_records() {
        let count = 10_000;
        for dist in [RequestDist::Latest, RequestDist::Exponential] {
            let h = histogram(dist, count);
            let recent: u64 = h[(count as usize - 100)..].iter().sum();
            let old: u64 = h[..100].iter().sum();
            assert!(recent > 10 * old.max(1), "{dist:?}: {recent} vs {old}");
        }
        // Latest follows inserts: after growing, the newest record is the most drawn.
        let mut c = Chooser::new(RequestDist::Latest, 100, 0);
        let mut r = rng();
        let newest = (0..DRAWS).filter(|_| c.next(200, &mut r) == 199).count() as f64;
        assert!(newest / DRAWS as f64 > 0.1, "{newest}");
    }

    #[test]
    fn hotspot_sends_80_percent_to_hot_20_percent() {
        let count = 1000;
        let h = histogram(RequestDist::Hotspot, count);
        let hot: u64 = h[..200].iter().sum();
        let share = hot as f64 / DRAWS as f64;
        assert!((share - 0.8).abs() < 0.01, "{share}");
        // Flags move the split: 50% of the operations on the first 10%.
        let set = HotSet {
            data: 0.1,
            ops: 0.5,
        };
        let mut c = Chooser::with_hot_set(RequestDist::Hotspot, count, 0, Some(set));
        let h = histogram_of(&mut c, count);
        let share = h[..100].iter().sum::<u64>() as f64 / DRAWS as f64;
        assert!((share - 0.5).abs() < 0.01, "{share}");
    }

    /// B′: 90% of the draws on the first 1% of the records (a contiguous range of record
    /// numbers), zipfian inside the hot set and inside the rest.
    #[test]
    fn hotspot_zipfian_sends_90_percent_to_hot_1_percent() {
        let count = 100_000;
        let hot = HotSet::B_PRIME.records(count);
        assert_eq!(hot, 1000);
        let h = histogram(RequestDist::HotspotZipfian, count);
        let (hot_draws, cold_draws) = h.split_at(hot as usize);
        let share = hot_draws.iter().sum::<u64>() as f64 / DRAWS as f64;
        assert!((share - 0.9).abs() < 0.01, "hot share {share}");
        // Zipfian within each set: the top 1% of the set's records get far more than 1% of
        // its draws (uniform draws would give them about 1-2%).
        let hot_top = top_share(hot_draws.to_vec(), 0.01);
        let cold_top = top_share(cold_draws.to_vec(), 0.01);
        assert!(hot_top > 0.1, "hot set not skewed: {hot_top}");
        assert!(cold_top > 0.1, "rest not skewed: {cold_top}");
        // The rest is drawn over all of it, not only its first records.
        let last_half: u64 = cold_draws[cold_draws.len() / 2..].iter().sum();
        assert!(last_half as f64 > 0.02 * DRAWS as f64, "{last_half}");
        // Overridden by the flags' values.
        let set = HotSet {
            data: 0.05,
            ops: 0.6,
        };
        let mut c = Chooser::with_hot_set(RequestDist::HotspotZipfian, count, 0, Some(set));
        let h = histogram_of(&mut c, count);
        let share = h[..5000].iter().sum::<u64>() as f64 / DRAWS as f64;
        assert!((share - 0.6).abs() < 0.01, "{share}");
    }

    #[test]
    fn sequential_cycles_and_every_key_in_range() {
        let mut c = Chooser::new(RequestDist::Sequential, 3, 0);
        let mut r = rng();
        let got: Vec<u64> = (0..7).map(|_| c.next(3, &mut r)).collect();
        assert_eq!(got, vec![0, 1, 2, 0, 1, 2, 0]);
        for dist in RequestDist::ALL {
            for count in [1u64, 2, 7, 1000] {
                let mut c = Chooser::new(dist, count, 10);
                for _ in 0..10_000 {
                    assert!(c.next(count, &mut r) < count, "{dist:?} {count}");
                }
            }
        }
    }
}
