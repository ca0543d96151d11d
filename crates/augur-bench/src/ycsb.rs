//! YCSB's core workloads in `augur bench`: `ycsb-load`, `ycsb-a` … `ycsb-f`, and `ycsb-b-hot`
//! (workload B′ of the lazy-learning study).
//!
//! Records are named as YCSB's `CoreWorkload` names them. With `--insert-order=hashed` (YCSB's
//! default `insertorder=hashed`) record number `n` is the key `"user"` followed by the
//! decimal FNV-1 64-bit hash of `n` (`Utils.fnvhash64`, absolute value). With
//! `--insert-order=ordered` (`insertorder=ordered`) it is `"user"` followed by `n` in decimal,
//! zero-padded to 19 digits (YCSB's `zeropadding`), so key order is record order and the
//! keys are as long as most hashed ones. `--key_size` and db_bench's prefix flags do not
//! apply. With a key source (`--keys`, `--keys-text`, `--distribution`), the records are the
//! source's keys instead, and the inserted ones derived from them (`ycsb/naming.rs`). A
//! record's value is one field of `--value_size` random bytes (YCSB writes ten 100-byte
//! fields; updates here rewrite the whole value).
//!
//! - `ycsb-load`: inserts records `0..num` into a fresh database, in record order (YCSB's),
//!   or shuffled with `--load-order=random`.
//! - `ycsb-a`: 50% read, 50% update, zipfian.   `ycsb-b`: 95% read, 5% update, zipfian.
//! - `ycsb-c`: 100% read, zipfian.              `ycsb-d`: 95% read, 5% insert, latest.
//! - `ycsb-e`: 95% scan, 5% insert, zipfian; scan lengths uniform in `1..=--scan-length`.
//! - `ycsb-f`: 50% read, 50% read-modify-write (get then put), zipfian.
//! - `ycsb-b-hot`: B′ of the Bourbon range-query follow-up (§5.4): 95% read, 5% update,
//!   `hotspot-zipfian`: 90% of the operations on a hot set of 1% of the records, zipfian
//!   within the hot set and within the rest (`--hotspot-data-fraction`,
//!   `--hotspot-ops-fraction` change the split).
//!
//! Each runs `--reads` operations (default `--num`). Inserts continue the record numbering
//! (`num`, `num + 1`, …) across the workloads of one run. `--request-distribution` replaces
//! the workload's default key chooser for every workload (the choosers: `ycsb/chooser.rs`).
//!
//! Why B′ needs `--insert-order=ordered`: the hot set is a range of record *numbers* (the
//! first 1%, as YCSB's hotspot generator picks it). Under hashed keys those records are
//! scattered over the whole key space, so every SSTable holds some hot records and every
//! file is read: a workload with hot keys but no hot files, which is what the follow-up
//! itself suspected made lazy learning gain little. Under ordered keys the hot set is one
//! contiguous key range and lives in a few files per level (as it does with a key source,
//! whose records are in key order). Loading ordered keys in record order writes ascending
//! keys (no overlapping compactions at all); `--load-order=random` loads them shuffled, so the
//! tree is built as under hashed keys and only the placement of the hot set differs.
//!
//! A workload's outcome carries its throughput, per-operation latencies (always recorded),
//! the number of reads found, the count of each operation kind and each kind's mean, p50 and
//! p99 latency (`read_mean_us`, `read_p50_us`, `read_p99_us`, `update_…`, for the kinds that
//! occurred), and, on Augur, what the engine learned during the workload
//! (`stats_view::learning_during`: models learned, learning time, ...).

mod chooser;
mod naming;

pub use chooser::{Chooser, HotSet, RequestDist, Zipfian, ZIPFIAN_THETA};
pub use naming::{fnv64, record_key, KeyOrder, Records, INSERT_SEPARATOR};

use super::engine::BenchEngine;
use super::keys::ValueGen;
use super::report::Outcome;
use super::workloads::{amplification, Meter};
use crate::error::BenchError;
use hdrhistogram::Histogram;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::Rng;
use serde_json::json;

/// YCSB settings of a run.
#[derive(Debug, Clone, Copy)]
pub struct YcsbParams {
    /// Overrides every workload's default distribution.
    pub distribution: Option<RequestDist>,
    /// Longest scan of workload E (at least 1).
    pub scan_length: u64,
    /// How record numbers become keys (`--insert-order`).
    pub insert_order: KeyOrder,
    /// `ycsb-load` inserts the records shuffled instead of in record order.
    pub shuffled_load: bool,
    /// Fractions of the hotspot distributions' hot sets, when given by flags
    /// (`--hotspot-data-fraction`, `--hotspot-ops-fraction`); the rest of the distribution's
    /// default ([`RequestDist::default_hot_set`]).
    pub hot_data_fraction: Option<f64>,
    pub hot_ops_fraction: Option<f64>,
}

impl YcsbParams {
    /// The hot set of `dist` with the flags applied (`None` for distributions without one).
    pub fn hot_set(&self, dist: RequestDist) -> Option<HotSet> {
        let d = dist.default_hot_set()?;
        Some(HotSet {
            data: self.hot_data_fraction.unwrap_or(d.data),
            ops: self.hot_ops_fraction.unwrap_or(d.ops),
        })
    }
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

/// The mix and default distribution of workload `name` (`ycsb-a` … `ycsb-f`, `ycsb-b-hot`).
pub fn workload(name: &str) -> Option<(Mix, RequestDist)> {
    use RequestDist::{HotspotZipfian, Latest, Zipfian};
    Some(match name {
        "ycsb-a" => (Mix::new(0.5, 0.5, 0.0, 0.0, 0.0), Zipfian),
        "ycsb-b" => (Mix::new(0.95, 0.05, 0.0, 0.0, 0.0), Zipfian),
        "ycsb-c" => (Mix::new(1.0, 0.0, 0.0, 0.0, 0.0), Zipfian),
        "ycsb-d" => (Mix::new(0.95, 0.0, 0.05, 0.0, 0.0), Latest),
        "ycsb-e" => (Mix::new(0.0, 0.0, 0.05, 0.95, 0.0), Zipfian),
        "ycsb-f" => (Mix::new(0.5, 0.0, 0.0, 0.0, 0.5), Zipfian),
        "ycsb-b-hot" => (Mix::new(0.95, 0.05, 0.0, 0.0, 0.0), HotspotZipfian),
        _ => return None,
    })
}

impl Kind {
    const ALL: [Kind; 5] = [
        Kind::Read,
        Kind::Update,
        Kind::Insert,
        Kind::Scan,
        Kind::ReadModifyWrite,
    ];

    /// The JSON fields of this kind: its count, then its mean, p50 and p99 latencies.
    fn fields(self) -> [&'static str; 4] {
        match self {
            Kind::Read => ["reads", "read_mean_us", "read_p50_us", "read_p99_us"],
            Kind::Update => [
                "updates",
                "update_mean_us",
                "update_p50_us",
                "update_p99_us",
            ],
            Kind::Insert => [
                "inserts",
                "insert_mean_us",
                "insert_p50_us",
                "insert_p99_us",
            ],
            Kind::Scan => ["scans", "scan_mean_us", "scan_p50_us", "scan_p99_us"],
            Kind::ReadModifyWrite => [
                "read_modify_writes",
                "read_modify_write_mean_us",
                "read_modify_write_p50_us",
                "read_modify_write_p99_us",
            ],
        }
    }
}

/// Settings of one YCSB benchmark.
pub struct Run<'a> {
    pub name: &'a str,
    /// How record numbers become keys (YCSB's names or the key source's keys).
    pub records: Records<'a>,
    pub num: u64,
    pub ops: u64,
    pub value_size: usize,
    pub ycsb: YcsbParams,
    /// Augur under the `at-build` policy: every table written carries a model (for the
    /// count of models learned during the workload).
    pub at_build: bool,
}

/// `ycsb-load`: inserts records `0..num`, in record order or shuffled with `rng`.
pub fn load(
    r: &Run,
    db: &dyn BenchEngine,
    values: &mut ValueGen,
    state: &mut State,
    rng: &mut StdRng,
) -> Result<Outcome, BenchError> {
    let before = db.stats();
    // The order is drawn before the clock starts.
    let shuffled: Vec<u64> = if r.ycsb.shuffled_load {
        let mut v: Vec<u64> = (0..r.num).collect();
        v.shuffle(rng);
        v
    } else {
        Vec::new()
    };
    let mut key = Vec::new();
    let mut bytes = 0u64;
    let mut meter = Meter::new(true);
    for i in 0..r.num {
        let n = shuffled.get(i as usize).copied().unwrap_or(i);
        r.records.key(n, &mut key);
        db.put(&key, values.next(r.value_size))?;
        bytes += (key.len() + r.value_size) as u64;
        meter.op_done();
    }
    state.records = Some(r.num);
    let mut out = meter.finish(r.name, r.num, bytes);
    let after = db.stats();
    out.write_amplification = amplification(before.as_ref(), after.as_ref());
    out.extra = vec![("inserts", json!(r.num))];
    if let (Some(b), Some(a)) = (&before, &after) {
        out.extra
            .extend(crate::stats_view::learning_during(b, a, r.at_build));
    }
    Ok(out)
}

/// `ycsb-a` … `ycsb-f`, `ycsb-b-hot`: `ops` operations of the workload's mix.
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
    let hot = r.ycsb.hot_set(dist);
    let mut chooser = Chooser::with_hot_set(dist, count, expected_inserts, hot);
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
            r.records.key(count, &mut key);
            count += 1;
        } else {
            r.records.key(chooser.next(count, rng), &mut key);
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
    let after = db.stats();
    if writes > 0 {
        out.write_amplification = amplification(before.as_ref(), after.as_ref());
    }
    out.extra = vec![
        ("distribution", json!(dist.name())),
        ("insert_order", json!(r.records.name())),
    ];
    if let Some(h) = hot {
        out.extra.push(("hotspot_data_fraction", json!(h.data)));
        out.extra.push(("hotspot_ops_fraction", json!(h.ops)));
    }
    for (kind, (n, _)) in Kind::ALL.iter().zip(&per_kind) {
        out.extra.push((kind.fields()[0], json!(n)));
    }
    for (kind, (n, h)) in Kind::ALL.iter().zip(&per_kind) {
        if let (true, Some(h)) = (*n > 0, h) {
            let [_, mean, p50, p99] = kind.fields();
            let us = |q: f64| h.value_at_quantile(q) as f64 / 1000.0;
            out.extra.push((mean, json!(h.mean() / 1000.0)));
            out.extra.push((p50, json!(us(0.5))));
            out.extra.push((p99, json!(us(0.99))));
        }
    }
    if let (Some(b), Some(a)) = (&before, &after) {
        out.extra
            .extend(crate::stats_view::learning_during(b, a, r.at_build));
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

    #[test]
    fn operation_mix_within_tolerance() {
        for name in [
            "ycsb-a",
            "ycsb-b",
            "ycsb-c",
            "ycsb-d",
            "ycsb-e",
            "ycsb-f",
            "ycsb-b-hot",
        ] {
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
        assert_eq!(
            workload("ycsb-b-hot").unwrap().1,
            RequestDist::HotspotZipfian
        );
        assert_eq!(workload("ycsb-b").unwrap().1, RequestDist::Zipfian);
    }

    /// Positions, in sorted key order of all `count` records, of the keys of `records`.
    fn key_ranks(order: KeyOrder, count: u64, records: &[u64]) -> Vec<usize> {
        let mut key = Vec::new();
        let mut all: Vec<(Vec<u8>, u64)> = (0..count)
            .map(|n| {
                order.key(n, &mut key);
                (key.clone(), n)
            })
            .collect();
        all.sort();
        let mut ranks: Vec<usize> = all
            .iter()
            .enumerate()
            .filter(|(_, (_, n))| records.contains(n))
            .map(|(i, _)| i)
            .collect();
        ranks.sort_unstable();
        ranks
    }

    /// B′ (`ycsb-b-hot`): ~90% of the draws go to 1% of the records, and under
    /// `--insert-order=ordered` those records are one contiguous run of keys in key order —
    /// a few SSTables — while under hashed keys they are spread over the whole key space.
    #[test]
    fn b_prime_hot_set_is_contiguous_in_key_order_only_when_ordered() {
        let count = 20_000;
        let params = YcsbParams {
            distribution: None,
            scan_length: 1,
            insert_order: KeyOrder::Ordered,
            shuffled_load: false,
            hot_data_fraction: None,
            hot_ops_fraction: None,
        };
        let (_, dist) = workload("ycsb-b-hot").unwrap();
        let hot = params.hot_set(dist).unwrap();
        assert_eq!(hot, HotSet::B_PRIME);
        let mut c = Chooser::with_hot_set(dist, count, 0, Some(hot));
        let mut r = rng();
        let mut drawn = vec![0u64; count as usize];
        for _ in 0..DRAWS {
            drawn[c.next(count, &mut r) as usize] += 1;
        }
        // The hot set: the first 1% of the record numbers, drawn 90% of the time.
        let hot_records = hot.records(count);
        assert_eq!(hot_records, 200);
        let hot_draws: u64 = drawn[..hot_records as usize].iter().sum();
        let share = hot_draws as f64 / DRAWS as f64;
        assert!((share - 0.9).abs() < 0.01, "hot share {share}");
        let members: Vec<u64> = (0..hot_records).collect();
        let ordered = key_ranks(KeyOrder::Ordered, count, &members);
        let span = ordered.last().unwrap() - ordered.first().unwrap() + 1;
        assert_eq!(
            span, hot_records as usize,
            "ordered hot keys not contiguous"
        );
        // The same records under hashed keys spread over (nearly) the whole key range.
        let hashed = key_ranks(KeyOrder::Hashed, count, &members);
        let span = hashed.last().unwrap() - hashed.first().unwrap() + 1;
        assert!(span > count as usize / 2, "hashed span {span}");
        // The flags move the split.
        let flagged = YcsbParams {
            hot_data_fraction: Some(0.1),
            hot_ops_fraction: Some(0.5),
            ..params
        };
        let set = flagged.hot_set(RequestDist::HotspotZipfian).unwrap();
        assert_eq!((set.data, set.ops), (0.1, 0.5));
        assert_eq!(flagged.hot_set(RequestDist::Hotspot).unwrap().data, 0.1);
        assert!(flagged.hot_set(RequestDist::Zipfian).is_none());
        assert_eq!(params.hot_set(RequestDist::Hotspot), Some(HotSet::YCSB));
    }
}
