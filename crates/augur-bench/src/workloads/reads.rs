//! The benchmarks that read: random point lookups of present or missing keys (`readrandom`,
//! `readmissing`, spread over `--threads` threads; `readwhilewriting`: the same beside a
//! writer thread), the mixed `readrandomwriterandom`,
//! `seekrandom` (a seek and `--seek_nexts` entries) and the full scans `readseq` /
//! `readreverse`. The lookups of `readrandom`, `readmissing` and `seekrandom` pick their keys
//! with `Params::read_chooser` (`--read_distribution`; uniform by default, db_bench's draw).

use super::amplification::amplification;
use super::threads::in_threads;
use super::{Meter, Params, Runner};
use crate::error::BenchError;
use crate::keys::ValueGen;
use crate::report::Outcome;
use crate::ycsb::{Chooser, RequestDist, YcsbParams};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// The keys of the next lookups, materialized together outside the timed region: fetching a
/// key of a large key set is a cache miss that costs a tenth of a lookup, and is the
/// harness's work, not the engine's.
#[derive(Default)]
struct KeyBatch {
    bytes: Vec<u8>,
    ends: Vec<usize>,
}

impl KeyBatch {
    /// Keys per batch.
    const LEN: u64 = 1024;

    fn clear(&mut self) {
        self.bytes.clear();
        self.ends.clear();
    }

    fn push(&mut self, key: &[u8]) {
        self.bytes.extend_from_slice(key);
        self.ends.push(self.bytes.len());
    }

    fn iter(&self) -> impl Iterator<Item = &[u8]> {
        let starts = std::iter::once(0).chain(self.ends.iter().copied());
        starts
            .zip(&self.ends)
            .map(|(start, &end)| self.bytes.get(start..end).unwrap_or_default())
    }
}

impl Params {
    /// The chooser of the key indexes of `readrandom`, `readmissing` and `seekrandom`
    /// ([`read_chooser`] of `--read_distribution`).
    pub(crate) fn read_chooser(&self) -> Chooser {
        read_chooser(self.read_distribution, self.num, &self.ycsb)
    }

    /// The record fields naming `--read_distribution` and its hot set (none without it).
    pub(crate) fn read_distribution_fields(&self) -> Vec<(&'static str, Value)> {
        let Some(dist) = self.read_distribution else {
            return Vec::new();
        };
        let mut out = vec![("read_distribution", json!(dist.name()))];
        if let Some(h) = self.ycsb.hot_set(dist) {
            out.push(("hotspot_data_fraction", json!(h.data)));
            out.push(("hotspot_ops_fraction", json!(h.ops)));
        }
        out
    }
}

/// The chooser of lookup keys: `dist` (YCSB's choosers, `--request-distribution`'s values)
/// over the key indexes `0..num`, which are the positions in sorted key order for every key
/// source (`KeySet::key`), with the hot set of `ycsb`'s `--hotspot-*-fraction` flags. So the
/// hot set of `hotspot` (YCSB's `HotspotIntegerGenerator`), the first `--hotspot-data-fraction`
/// of the indexes, is one consecutive range of keys: the smallest keys. `None` is uniform,
/// which draws exactly db_bench's `[0, num)` stream from the same generator.
pub(super) fn read_chooser(dist: Option<RequestDist>, num: u64, ycsb: &YcsbParams) -> Chooser {
    let dist = dist.unwrap_or(RequestDist::Uniform);
    Chooser::with_hot_set(dist, num, 0, ycsb.hot_set(dist))
}

impl Runner {
    /// `reads` gets of random keys of the set, or of missing keys next to them.
    pub(super) fn read_random(
        &mut self,
        name: &str,
        rng: &mut StdRng,
        missing: bool,
    ) -> Result<Outcome, BenchError> {
        self.read_random_while(name, rng, missing, false)
    }

    /// db_bench's readwhilewriting: `readrandom` on `--threads` threads while one more
    /// thread puts random keys of the set with new values until the readers are done. The
    /// record is the readers'; the writer's puts and rate are in `writes`, `writes_per_sec`.
    pub(super) fn read_while_writing(
        &mut self,
        name: &str,
        rng: &mut StdRng,
    ) -> Result<Outcome, BenchError> {
        self.read_random_while(name, rng, false, true)
    }

    /// `readrandom` / `readmissing`, with a writer thread beside the readers when `writing`.
    fn read_random_while(
        &mut self,
        name: &str,
        rng: &mut StdRng,
        missing: bool,
        writing: bool,
    ) -> Result<Outcome, BenchError> {
        let Params {
            num,
            reads,
            key_size,
            value_size,
            compression_ratio,
            ..
        } = self.p;
        let record = self.record;
        let threads = self.p.threads.max(1);
        let keys = Arc::clone(&self.p.keys);
        let chooser = self.p.read_chooser();
        let distribution = self.p.read_distribution_fields();
        let (db, _) = self.parts()?;
        let lookups = |rng: &mut StdRng| {
            let mut chooser = chooser.clone();
            let mut meter = Meter::new(record);
            let mut key = Vec::with_capacity(key_size + 1);
            let mut batch = KeyBatch::default();
            let (mut found, mut bytes, mut done) = (0u64, 0u64, 0u64);
            while done < reads {
                let count = (reads - done).min(KeyBatch::LEN);
                meter.exclude(|| {
                    batch.clear();
                    for _ in 0..count {
                        let n = chooser.next(num, rng);
                        if missing {
                            keys.missing(n, key_size, &mut key);
                        } else {
                            keys.key(n, key_size, &mut key);
                        }
                        batch.push(&key);
                    }
                });
                for key in batch.iter() {
                    if let Some(v) = db.get(key)? {
                        found += 1;
                        bytes += (key.len() + v.len()) as u64;
                    }
                    meter.op_done();
                }
                done += count;
            }
            Ok::<_, BenchError>((meter, found, bytes))
        };
        let stop = AtomicBool::new(false);
        let writer_seed: u64 = rng.gen();
        let writer = || {
            let mut rng = StdRng::seed_from_u64(writer_seed);
            let mut values = ValueGen::new(rng.gen(), value_size, compression_ratio);
            let mut key = Vec::with_capacity(key_size);
            let started = Instant::now();
            let mut writes = 0u64;
            while !stop.load(Ordering::Relaxed) {
                keys.key(rng.gen_range(0..num), key_size, &mut key);
                db.put(&key, values.next(value_size))?;
                writes += 1;
            }
            Ok::<_, BenchError>((writes, started.elapsed().as_secs_f64()))
        };
        let (results, written) = std::thread::scope(|s| {
            let handle = writing.then(|| s.spawn(writer));
            let results = in_threads(threads, rng, |_, rng| lookups(rng));
            stop.store(true, Ordering::Relaxed);
            let written = handle.map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(BenchError::failed("the writer thread panicked")))
            });
            (results, written)
        });
        let results = results?;
        let ops = reads * threads as u64;
        let found: u64 = results.iter().map(|r| r.1).sum();
        let bytes: u64 = results.iter().map(|r| r.2).sum();
        let meters = results.into_iter().map(|r| r.0).collect();
        let mut out = Meter::combine(meters, name, ops, bytes);
        out.found = Some((found, ops));
        if threads > 1 {
            out.extra.push(("threads", json!(threads)));
        }
        out.extra.extend(distribution);
        if let Some(w) = written {
            let (writes, seconds) = w?;
            out.extra.push(("writes", json!(writes)));
            out.extra
                .push(("writes_per_sec", json!(writes as f64 / seconds.max(1e-9))));
        }
        Ok(out)
    }

    /// db_bench's readrandomwriterandom: `reads` operations on random keys of the set, each a
    /// get with probability `readwritepercent`% and otherwise a put of a new value (Bourbon
    /// Figure 13's mixed workloads). Reports, besides the foreground time, what the engine
    /// spent learning meanwhile and the share of internal lookups on the model path.
    pub(super) fn read_write_random(
        &mut self,
        name: &str,
        rng: &mut StdRng,
    ) -> Result<Outcome, BenchError> {
        let Params {
            num,
            reads,
            key_size,
            value_size,
            readwritepercent,
            ..
        } = self.p;
        let record = self.record;
        let keys = Arc::clone(&self.p.keys);
        let (db, values) = self.parts()?;
        let before = db.stats();
        let mut key = Vec::with_capacity(key_size);
        let (mut found, mut gets, mut bytes) = (0u64, 0u64, 0u64);
        let mut meter = Meter::new(record);
        for _ in 0..reads {
            keys.key(rng.gen_range(0..num), key_size, &mut key);
            if rng.gen_range(0..100) < readwritepercent {
                gets += 1;
                if let Some(v) = db.get(&key)? {
                    found += 1;
                    bytes += (key.len() + v.len()) as u64;
                }
            } else {
                db.put(&key, values.next(value_size))?;
                bytes += (key.len() + value_size) as u64;
            }
            meter.op_done();
        }
        let mut out = meter.finish(name, reads, bytes);
        out.found = Some((found, gets));
        let after = db.stats();
        out.write_amplification = amplification(before.as_ref(), after.as_ref());
        let (Some(before), Some(after)) = (before, after) else {
            out.extra = vec![("readwritepercent", json!(readwritepercent))];
            return Ok(out);
        };
        // Learning = background/offline training plus training inside flush and compaction.
        let learned = |s: &augur::Stats| s.learning_ns_total + s.at_build_training_ns;
        let learning_ns = learned(&after).saturating_sub(learned(&before));
        let model = after
            .model_path_lookups
            .saturating_sub(before.model_path_lookups);
        let baseline = after
            .baseline_path_lookups
            .saturating_sub(before.baseline_path_lookups);
        let foreground_s = out.seconds;
        out.extra = vec![
            ("readwritepercent", json!(readwritepercent)),
            ("foreground_s", json!(foreground_s)),
            ("learning_s", json!(learning_ns as f64 / 1e9)),
            (
                "total_work_s",
                json!(foreground_s + learning_ns as f64 / 1e9),
            ),
            (
                "model_path_fraction",
                json!(model as f64 / (model + baseline).max(1) as f64),
            ),
        ];
        Ok(out)
    }

    /// `reads` seeks to random keys, reading the first entry at or after each and the
    /// `seek_nexts` entries after it (db_bench's `--seek_nexts`).
    pub(super) fn seek_random(
        &mut self,
        name: &str,
        rng: &mut StdRng,
    ) -> Result<Outcome, BenchError> {
        let Params {
            num,
            reads,
            key_size,
            seek_nexts,
            ..
        } = self.p;
        let record = self.record;
        let keys = Arc::clone(&self.p.keys);
        let mut chooser = self.p.read_chooser();
        let distribution = self.p.read_distribution_fields();
        let (db, _) = self.parts()?;
        let mut key = Vec::with_capacity(key_size);
        let (mut found, mut entries, mut bytes) = (0u64, 0u64, 0u64);
        let mut meter = Meter::new(record);
        for _ in 0..reads {
            keys.key(chooser.next(num, rng), key_size, &mut key);
            let (n, b) = db.scan_from(&key, 1 + seek_nexts)?;
            found += u64::from(n > 0);
            entries += n;
            bytes += b;
            meter.op_done();
        }
        let mut out = meter.finish(name, reads, bytes);
        out.found = Some((found, reads));
        out.extra.push(("seek_nexts", json!(seek_nexts)));
        out.extra.push(("entries_read", json!(entries)));
        out.extra.extend(distribution);
        Ok(out)
    }

    /// Iterates over up to `reads` entries, forward or backward.
    pub(super) fn read_seq(&mut self, name: &str, reverse: bool) -> Result<Outcome, BenchError> {
        let n = usize::try_from(self.p.reads).unwrap_or(usize::MAX);
        let record = self.record;
        let db = self.db()?;
        let mut meter = Meter::new(record);
        let (mut ops, mut bytes) = (0u64, 0u64);
        db.scan_all(n, reverse, &mut |b| {
            ops += 1;
            bytes += b;
            meter.op_done();
        })?;
        Ok(meter.finish(name, ops, bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::KeySet;
    use crate::ycsb::KeyOrder;
    use rand::SeedableRng;

    /// `--hotspot-data-fraction` and `--hotspot-ops-fraction` as given (`None`: not given).
    fn flags(data: Option<f64>, ops: Option<f64>) -> YcsbParams {
        YcsbParams {
            distribution: None,
            scan_length: 100,
            insert_order: KeyOrder::Hashed,
            shuffled_load: false,
            hot_data_fraction: data,
            hot_ops_fraction: ops,
        }
    }

    fn draws(dist: Option<RequestDist>, ycsb: &YcsbParams, num: u64, seed: u64) -> Vec<u64> {
        let mut c = read_chooser(dist, num, ycsb);
        let mut rng = StdRng::seed_from_u64(seed);
        (0..100_000).map(|_| c.next(num, &mut rng)).collect()
    }

    /// Bourbon Table 3's skew: 80% of the lookups on 25% of the keys, the hot keys one
    /// consecutive range in key order (the smallest), deterministic by seed.
    #[test]
    fn hotspot_sends_80_percent_of_lookups_to_the_first_quarter_of_the_keys() {
        let num = 40_000;
        let bourbon = flags(Some(0.25), Some(0.8));
        let d = draws(Some(RequestDist::Hotspot), &bourbon, num, 7);
        let hot = d.iter().filter(|&&i| i < num / 4).count() as f64 / d.len() as f64;
        assert!((hot - 0.8).abs() < 0.01, "{hot}");
        // Uniform within each part: the hot quarter's halves get about 40% each.
        let first_eighth = d.iter().filter(|&&i| i < num / 8).count() as f64 / d.len() as f64;
        assert!((first_eighth - 0.4).abs() < 0.01, "{first_eighth}");
        assert!(d.iter().all(|&i| i < num));
        // The hot indexes are the smallest keys: every hot key sorts before every cold one.
        let keys = KeySet::Numbers(num);
        let (mut last_hot, mut first_cold) = (Vec::new(), Vec::new());
        keys.key(num / 4 - 1, 16, &mut last_hot);
        keys.key(num / 4, 16, &mut first_cold);
        let mut k0 = Vec::new();
        keys.key(0, 16, &mut k0);
        assert!(k0 < last_hot && last_hot < first_cold);
        // The same seed draws the same keys, another seed others.
        assert_eq!(d, draws(Some(RequestDist::Hotspot), &bourbon, num, 7));
        assert_ne!(d, draws(Some(RequestDist::Hotspot), &bourbon, num, 8));
        // Without the fraction flags, YCSB's defaults: 80% on 20%.
        let d = draws(Some(RequestDist::Hotspot), &flags(None, None), num, 7);
        let hot = d.iter().filter(|&&i| i < num / 5).count() as f64 / d.len() as f64;
        assert!((hot - 0.8).abs() < 0.01, "{hot}");
    }

    /// No `--read_distribution`: db_bench's uniform draw, the very stream of
    /// `gen_range(0..num)`, so results without the flag are unchanged.
    #[test]
    fn the_default_is_db_bench_uniform_stream() {
        let num = 1000;
        let mut rng = StdRng::seed_from_u64(3);
        let plain: Vec<u64> = (0..100_000).map(|_| rng.gen_range(0..num)).collect();
        assert_eq!(draws(None, &flags(Some(0.25), Some(0.8)), num, 3), plain);
    }
}
