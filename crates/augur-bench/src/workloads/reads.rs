//! The benchmarks that read: random point lookups of present or missing keys (`readrandom`,
//! `readmissing`, spread over `--threads` threads), the mixed `readrandomwriterandom`,
//! `seekrandom` (a seek and `--seek_nexts` entries) and the full scans `readseq` /
//! `readreverse`.

use super::amplification::amplification;
use super::threads::in_threads;
use super::{Meter, Params, Runner};
use crate::error::BenchError;
use crate::report::Outcome;
use rand::rngs::StdRng;
use rand::Rng;
use serde_json::json;
use std::sync::Arc;

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

impl Runner {
    /// `reads` gets of random keys of the set, or of missing keys next to them.
    pub(super) fn read_random(
        &mut self,
        name: &str,
        rng: &mut StdRng,
        missing: bool,
    ) -> Result<Outcome, BenchError> {
        let Params {
            num,
            reads,
            key_size,
            ..
        } = self.p;
        let record = self.record;
        let threads = self.p.threads.max(1);
        let keys = Arc::clone(&self.p.keys);
        let (db, _) = self.parts()?;
        let lookups = |rng: &mut StdRng| {
            let mut meter = Meter::new(record);
            let mut key = Vec::with_capacity(key_size + 1);
            let mut batch = KeyBatch::default();
            let (mut found, mut bytes, mut done) = (0u64, 0u64, 0u64);
            while done < reads {
                let count = (reads - done).min(KeyBatch::LEN);
                meter.exclude(|| {
                    batch.clear();
                    for _ in 0..count {
                        let n = rng.gen_range(0..num);
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
        let results = in_threads(threads, rng, |_, rng| lookups(rng))?;
        let ops = reads * threads as u64;
        let found: u64 = results.iter().map(|r| r.1).sum();
        let bytes: u64 = results.iter().map(|r| r.2).sum();
        let meters = results.into_iter().map(|r| r.0).collect();
        let mut out = Meter::combine(meters, name, ops, bytes);
        out.found = Some((found, ops));
        if threads > 1 {
            out.extra.push(("threads", json!(threads)));
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
        let (db, _) = self.parts()?;
        let mut key = Vec::with_capacity(key_size);
        let (mut found, mut entries, mut bytes) = (0u64, 0u64, 0u64);
        let mut meter = Meter::new(record);
        for _ in 0..reads {
            keys.key(rng.gen_range(0..num), key_size, &mut key);
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
