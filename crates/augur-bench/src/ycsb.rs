//! YCSB's core workloads in `augur bench`: `ycsb-load` and `ycsb-a` … `ycsb-f`.
//!
//! Records are named as YCSB's `CoreWorkload` names them (hashed inserts, the default):
//! record number `n` is the key `"user"` followed by the decimal FNV-1 64-bit hash of `n`
//! (`Utils.fnvhash64`, absolute value), so `--key_size` and key sources do not apply. A
//! record's value is one field of `--value_size` random bytes (YCSB writes ten 100-byte
//! fields; updates here rewrite the whole value).
//!
//! - `ycsb-load`: inserts records `0..num` into a fresh database.
//! - `ycsb-a`: 50% read, 50% update, zipfian.   `ycsb-b`: 95% read, 5% update, zipfian.
//! - `ycsb-c`: 100% read, zipfian.              `ycsb-d`: 95% read, 5% insert, latest.
//! - `ycsb-e`: 95% scan, 5% insert, zipfian; scan lengths uniform in `1..=--scan-length`.
//! - `ycsb-f`: 50% read, 50% read-modify-write (get then put), zipfian.
//!
//! Each runs `--reads` operations (default `--num`). Inserts continue the record numbering
//! (`num`, `num + 1`, …) across the workloads of one run. `--request-distribution` replaces
//! the workload's default key chooser for every workload:
//!
//! - `uniform`: uniform over the records present.
//! - `zipfian`: YCSB's `ScrambledZipfianGenerator`: zipfian with θ = 0.99 over 10¹⁰ items,
//!   then FNV-hashed modulo the item space (records loaded plus twice the expected inserts,
//!   as `CoreWorkload` sizes it), redrawn while beyond the last record inserted.
//! - `latest`: `SkewedLatestGenerator`: the last record inserted minus a zipfian draw over
//!   the records present (its zeta grown incrementally as records are inserted).
//! - `hotspot`: `HotspotIntegerGenerator` with YCSB's defaults: 80% of the operations go
//!   uniformly to the first 20% of the records, the rest uniformly to the others.
//! - `exponential`: `ExponentialGenerator` with YCSB's defaults (95% of the draws within the
//!   most recent 85.7% of the records), counted back from the last record.
//! - `sequential`: records `0, 1, 2, …` cycling.
//!
//! A workload's outcome carries its throughput, per-operation latencies (always recorded),
//! the number of reads found, the count of each operation kind and each kind's p99 latency
//! (`read_p99_us`, `update_p99_us`, …, for the kinds that occurred).

use super::engine::BenchEngine;
use super::keys::ValueGen;
use super::report::Outcome;
use super::workloads::{amplification, Meter};
use crate::error::BenchError;
use clap::ValueEnum;
use hdrhistogram::Histogram;
use rand::rngs::StdRng;
use rand::Rng;
use serde_json::json;

/// YCSB's `ZIPFIAN_CONSTANT`.
pub const ZIPFIAN_THETA: f64 = 0.99;
/// Item space of YCSB's `ScrambledZipfianGenerator`.
const SCRAMBLED_ITEMS: u64 = 10_000_000_000;
/// zeta(10¹⁰, 0.99), precomputed by YCSB (`ScrambledZipfianGenerator.ZETAN`).
const SCRAMBLED_ZETAN: f64 = 26.469_028_201_783_02;
/// `hotspotdatafraction` and `hotspotopnfraction` defaults.
const HOT_DATA: f64 = 0.2;
const HOT_OPS: f64 = 0.8;
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
    Exponential,
    Sequential,
}

impl RequestDist {
    /// The flag spelling.
    pub fn name(self) -> &'static str {
        match self {
            RequestDist::Uniform => "uniform",
            RequestDist::Zipfian => "zipfian",
            RequestDist::Latest => "latest",
            RequestDist::Hotspot => "hotspot",
            RequestDist::Exponential => "exponential",
            RequestDist::Sequential => "sequential",
        }
    }
}

/// YCSB settings of a run.
#[derive(Debug, Clone, Copy)]
pub struct YcsbParams {
    /// Overrides every workload's default distribution.
    pub distribution: Option<RequestDist>,
    /// Longest scan of workload E (at least 1).
    pub scan_length: u64,
}

/// Records present, carried across the workloads of one run.
#[derive(Debug, Default)]
pub struct State {
    /// Records inserted so far (`None`: `num`, the loaded records).
    pub records: Option<u64>,
}

/// Operation proportions of a workload (summing to 1).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Mix {
    pub read: f64,
    pub update: f64,
    pub insert: f64,
    pub scan: f64,
    pub rmw: f64,
}

/// One YCSB operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Read,
    Update,
    Insert,
    Scan,
    ReadModifyWrite,
}

impl Mix {
    const fn new(read: f64, update: f64, insert: f64, scan: f64, rmw: f64) -> Self {
        Mix {
            read,
            update,
            insert,
            scan,
            rmw,
        }
    }

    /// Draws an operation.
    pub fn choose(&self, rng: &mut StdRng) -> Kind {
        let mut x: f64 = rng.gen();
        for (p, k) in [
            (self.read, Kind::Read),
            (self.update, Kind::Update),
            (self.insert, Kind::Insert),
            (self.scan, Kind::Scan),
        ] {
            if x < p {
                return k;
            }
            x -= p;
        }
        Kind::ReadModifyWrite
    }
}

/// The mix and default distribution of workload `name` (`ycsb-a` … `ycsb-f`).
pub fn workload(name: &str) -> Option<(Mix, RequestDist)> {
    use RequestDist::{Latest, Zipfian};
    Some(match name {
        "ycsb-a" => (Mix::new(0.5, 0.5, 0.0, 0.0, 0.0), Zipfian),
        "ycsb-b" => (Mix::new(0.95, 0.05, 0.0, 0.0, 0.0), Zipfian),
        "ycsb-c" => (Mix::new(1.0, 0.0, 0.0, 0.0, 0.0), Zipfian),
        "ycsb-d" => (Mix::new(0.95, 0.0, 0.05, 0.0, 0.0), Latest),
        "ycsb-e" => (Mix::new(0.0, 0.0, 0.05, 0.95, 0.0), Zipfian),
        "ycsb-f" => (Mix::new(0.5, 0.0, 0.0, 0.0, 0.5), Zipfian),
        _ => return None,
    })
}

/// YCSB's `Utils.fnvhash64` (FNV-1 over the 8 little-endian bytes, absolute value).
pub fn fnv64(mut v: u64) -> u64 {
    let mut h: u64 = 0xCBF2_9CE4_8422_2325;
    for _ in 0..8 {
        h ^= v & 0xff;
        v >>= 8;
        h = h.wrapping_mul(1_099_511_628_211);
    }
    (h as i64).unsigned_abs()
}

/// Writes the key of record `n` (`user<fnv64(n)>`) into `buf`.
pub fn record_key(n: u64, buf: &mut Vec<u8>) {
    buf.clear();
    buf.extend_from_slice(b"user");
    buf.extend_from_slice(fnv64(n).to_string().as_bytes());
}

/// sum of 1/(i+1)^θ for i in `from..to`, added to `initial`.
fn zeta(from: u64, to: u64, theta: f64, initial: f64) -> f64 {
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
    Hotspot,
    Exponential {
        gamma: f64,
    },
    Sequential {
        next: u64,
    },
}

impl Chooser {
    /// A chooser for `records` loaded records and an expected `inserts` more.
    pub fn new(dist: RequestDist, records: u64, inserts: u64) -> Self {
        match dist {
            RequestDist::Uniform => Chooser::Uniform,
            RequestDist::Zipfian => Chooser::Zipfian {
                zipf: Zipfian::with_zetan(SCRAMBLED_ITEMS, ZIPFIAN_THETA, SCRAMBLED_ZETAN),
                space: records.saturating_add(inserts.saturating_mul(2)).max(1),
            },
            RequestDist::Latest => Chooser::Latest(Zipfian::new(records.max(1), ZIPFIAN_THETA)),
            RequestDist::Hotspot => Chooser::Hotspot,
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
                    r = fnv64(zipf.next(rng)) % *space;
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
            Chooser::Hotspot => {
                let hot = ((count as f64 * HOT_DATA) as u64).clamp(1, count);
                if hot == count || rng.gen::<f64>() < HOT_OPS {
                    rng.gen_range(0..hot)
                } else {
                    rng.gen_range(hot..count)
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

impl Kind {
    const ALL: [Kind; 5] = [
        Kind::Read,
        Kind::Update,
        Kind::Insert,
        Kind::Scan,
        Kind::ReadModifyWrite,
    ];

    /// The JSON field counting this kind, and the one holding its p99 latency.
    fn fields(self) -> (&'static str, &'static str) {
        match self {
            Kind::Read => ("reads", "read_p99_us"),
            Kind::Update => ("updates", "update_p99_us"),
            Kind::Insert => ("inserts", "insert_p99_us"),
            Kind::Scan => ("scans", "scan_p99_us"),
            Kind::ReadModifyWrite => ("read_modify_writes", "read_modify_write_p99_us"),
        }
    }
}

/// Settings of one YCSB benchmark.
pub struct Run<'a> {
    pub name: &'a str,
    pub num: u64,
    pub ops: u64,
    pub value_size: usize,
    pub ycsb: YcsbParams,
}

/// `ycsb-load`: inserts records `0..num`.
pub fn load(
    r: &Run,
    db: &dyn BenchEngine,
    values: &mut ValueGen,
    state: &mut State,
) -> Result<Outcome, BenchError> {
    let before = db.stats();
    let mut key = Vec::new();
    let mut bytes = 0u64;
    let mut meter = Meter::new(true);
    for n in 0..r.num {
        record_key(n, &mut key);
        db.put(&key, values.next(r.value_size))?;
        bytes += (key.len() + r.value_size) as u64;
        meter.op_done();
    }
    state.records = Some(r.num);
    let mut out = meter.finish(r.name, r.num, bytes);
    out.write_amplification = amplification(before.as_ref(), db.stats().as_ref());
    out.extra = vec![("inserts", json!(r.num))];
    Ok(out)
}

/// `ycsb-a` … `ycsb-f`: `ops` operations of the workload's mix.
pub fn transactions(
    r: &Run,
    db: &dyn BenchEngine,
    values: &mut ValueGen,
    state: &mut State,
    rng: &mut StdRng,
) -> Result<Outcome, BenchError> {
    let (mix, default_dist) = workload(r.name)
        .ok_or_else(|| BenchError::failed(format!("unknown YCSB workload {:?}", r.name)))?;
    let dist = r.ycsb.distribution.unwrap_or(default_dist);
    let mut count = state.records.unwrap_or(r.num).max(1);
    let expected_inserts = (r.ops as f64 * mix.insert) as u64;
    let mut chooser = Chooser::new(dist, count, expected_inserts);
    let scan_max = r.ycsb.scan_length.max(1);
    let mut key = Vec::new();
    // Per kind: operations done and their latencies (YCSB reports each kind apart).
    let mut per_kind: Vec<(u64, Option<Histogram<u64>>)> = Kind::ALL
        .iter()
        .map(|_| (0, Histogram::new_with_bounds(1, 3_600_000_000_000, 3).ok()))
        .collect();
    let (mut found, mut gets, mut bytes) = (0u64, 0u64, 0u64);
    let before = db.stats();
    let mut meter = Meter::new(true);
    for _ in 0..r.ops {
        let kind = mix.choose(rng);
        if kind == Kind::Insert {
            record_key(count, &mut key);
            count += 1;
        } else {
            record_key(chooser.next(count, rng), &mut key);
        }
        match kind {
            Kind::Read | Kind::ReadModifyWrite => {
                gets += 1;
                if let Some(v) = db.get(&key)? {
                    found += 1;
                    bytes += (key.len() + v.len()) as u64;
                }
            }
            Kind::Scan => {
                let len = rng.gen_range(1..=scan_max);
                bytes += db.scan_from(&key, len as usize)?.1;
            }
            Kind::Update | Kind::Insert => {}
        }
        if matches!(kind, Kind::Update | Kind::Insert | Kind::ReadModifyWrite) {
            db.put(&key, values.next(r.value_size))?;
            bytes += (key.len() + r.value_size) as u64;
        }
        let ns = meter.op_done();
        if let Some((n, h)) = per_kind.get_mut(kind as usize) {
            *n += 1;
            if let Some(h) = h {
                h.saturating_record(ns);
            }
        }
    }
    state.records = Some(count);
    let mut out = meter.finish(r.name, r.ops, bytes);
    if gets > 0 {
        out.found = Some((found, gets));
    }
    let writes: u64 = [Kind::Update, Kind::Insert, Kind::ReadModifyWrite]
        .iter()
        .map(|k| per_kind[*k as usize].0)
        .sum();
    if writes > 0 {
        out.write_amplification = amplification(before.as_ref(), db.stats().as_ref());
    }
    out.extra = vec![("distribution", json!(dist.name()))];
    for (kind, (n, _)) in Kind::ALL.iter().zip(&per_kind) {
        out.extra.push((kind.fields().0, json!(n)));
    }
    for (kind, (n, h)) in Kind::ALL.iter().zip(&per_kind) {
        if let (true, Some(h)) = (*n > 0, h) {
            let p99 = h.value_at_quantile(0.99) as f64 / 1000.0;
            out.extra.push((kind.fields().1, json!(p99)));
        }
    }
    Ok(out)
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
        let mut c = Chooser::new(dist, count, 0);
        let mut r = rng();
        let mut h = vec![0u64; count as usize];
        for _ in 0..DRAWS {
            let k = c.next(count, &mut r);
            assert!(k < count, "{dist:?} drew {k} of {count}");
            h[k as usize] += 1;
        }
        h
    }

    /// Share of the draws landing on the most-drawn `fraction` of records.
    fn top_share(mut h: Vec<u64>, fraction: f64) -> f64 {
        h.sort_unstable_by(|a, b| b.cmp(a));
        let k = ((h.len() as f64 * fraction) as usize).max(1);
        h[..k].iter().sum::<u64>() as f64 / DRAWS as f64
    }

    #[test]
    fn keys_match_ycsb() {
        // YCSB's first keys (user6284781860667377211 is record 0 in every YCSB load).
        let mut k = Vec::new();
        record_key(0, &mut k);
        assert_eq!(k, b"user6284781860667377211".to_vec());
        record_key(1, &mut k);
        assert_eq!(k, b"user8517097267634966620".to_vec());
        assert_eq!(fnv64(3), 4_052_466_453_699_787_802);
    }

    #[test]
    fn operation_mix_within_tolerance() {
        for name in ["ycsb-a", "ycsb-b", "ycsb-c", "ycsb-d", "ycsb-e", "ycsb-f"] {
            let (mix, _) = workload(name).unwrap();
            let mut r = rng();
            let mut n = [0u64; 5];
            for _ in 0..DRAWS {
                n[mix.choose(&mut r) as usize] += 1;
            }
            let want = [mix.read, mix.update, mix.insert, mix.scan, mix.rmw];
            for (got, want) in n.iter().zip(want) {
                let got = *got as f64 / DRAWS as f64;
                assert!((got - want).abs() < 0.01, "{name}: {got} vs {want}");
            }
        }
        assert!(workload("ycsb-g").is_none());
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
    }

    #[test]
    fn sequential_cycles_and_every_key_in_range() {
        let mut c = Chooser::new(RequestDist::Sequential, 3, 0);
        let mut r = rng();
        let got: Vec<u64> = (0..7).map(|_| c.next(3, &mut r)).collect();
        assert_eq!(got, vec![0, 1, 2, 0, 1, 2, 0]);
        for dist in [
            RequestDist::Uniform,
            RequestDist::Zipfian,
            RequestDist::Latest,
            RequestDist::Hotspot,
            RequestDist::Exponential,
            RequestDist::Sequential,
        ] {
            for count in [1u64, 2, 7, 1000] {
                let mut c = Chooser::new(dist, count, 10);
                for _ in 0..10_000 {
                    assert!(c.next(count, &mut r) < count, "{dist:?} {count}");
                }
            }
        }
    }
}
