//! The benchmarks that write: fills, overwrites and deletes (`num` puts or deletes in
//! sequential, shuffled or drawn order, spread over `--threads` threads), and the maintenance
//! operations timed as one operation (`flush`, `compact`, `waitforcompaction`).

use super::amplification::{amplification, background_work, written};
use super::threads::{chunk, in_threads};
use super::{Meter, Params, Runner};
use crate::error::BenchError;
use crate::keys::ValueGen;
use crate::report::Outcome;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::Rng;
use serde_json::json;
use std::sync::Arc;

/// A write benchmark's operation.
#[derive(Debug, Clone, Copy)]
pub(super) enum Op {
    Put,
    Delete,
}

/// Which keys a write benchmark visits, in which order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Order {
    /// Every key once, ascending.
    Sequential,
    /// Every key once, in an order shuffled with the run's seed.
    Shuffled,
    /// `num` uniform draws with repeats (db_bench's random writes).
    Drawn,
}

impl Runner {
    /// `num` puts or deletes of keys in order or random.
    pub(super) fn write(
        &mut self,
        name: &str,
        rng: &mut StdRng,
        op: Op,
        order: Order,
    ) -> Result<Outcome, BenchError> {
        let Params {
            num,
            key_size,
            value_size,
            compression_ratio,
            ..
        } = self.p;
        let record = self.record;
        let keys = Arc::clone(&self.p.keys);
        let shuffled = match order {
            Order::Shuffled => {
                let mut v: Vec<u64> = (0..num).collect();
                v.shuffle(rng);
                v
            }
            _ => Vec::new(),
        };
        let threads = self.p.threads.max(1);
        let value_seed = self.p.seed.wrapping_add(self.runs << 16);
        let db = self.db()?;
        let before = db.stats();
        // Thread t writes positions [t·num/T, (t+1)·num/T) of the order: every key once for
        // the sequential and shuffled orders, num/T uniform draws each for random writes.
        let writes = |t: usize, rng: &mut StdRng| {
            let (lo, hi) = chunk(num, threads, t);
            let mut values = ValueGen::new(
                value_seed.wrapping_add(t as u64),
                value_size,
                compression_ratio,
            );
            let mut key = Vec::with_capacity(key_size);
            let mut bytes = 0u64;
            let mut meter = Meter::new(record);
            for i in lo..hi {
                let n = match order {
                    Order::Sequential => keys.sequential(i),
                    Order::Drawn => rng.gen_range(0..num),
                    Order::Shuffled => shuffled.get(i as usize).copied().unwrap_or(i),
                };
                keys.key(n, key_size, &mut key);
                match op {
                    Op::Put => {
                        db.put(&key, values.next(value_size))?;
                        bytes += (key.len() + value_size) as u64;
                    }
                    Op::Delete => db.delete(&key)?,
                }
                meter.op_done();
            }
            Ok((meter, bytes))
        };
        let results = in_threads(threads, rng, writes)?;
        let bytes = results.iter().map(|r| r.1).sum();
        let mut out = Meter::combine(results.into_iter().map(|r| r.0).collect(), name, num, bytes);
        let after = db.stats();
        out.write_amplification = amplification(before.as_ref(), after.as_ref());
        out.extra = background_work(before.as_ref(), after.as_ref());
        if threads > 1 {
            out.extra.push(("threads", json!(threads)));
        }
        Ok(out)
    }

    /// `gc`: explicit value-log GC until no segment has garbage, timed as one operation;
    /// reports the segments collected and the tables rewritten. Augur only.
    pub(super) fn gc(&mut self, name: &str) -> Result<Outcome, BenchError> {
        let record = self.record;
        let db = self.augur_only(name)?;
        let before = db.stats();
        let mut meter = Meter::new(record);
        let (mut segments, mut tables, mut relocated) = (0u64, 0u64, 0u64);
        // Each run deletes a segment, so the segments there were bound the loop.
        for _ in 0..=before.value_log.len() {
            let report = db.run_value_log_gc()?;
            if report.segment.is_none() {
                break;
            }
            segments += 1;
            tables += report.tables_rewritten;
            relocated += report.entries_relocated;
        }
        meter.op_done();
        let mut out = meter.finish(name, 1, 0);
        out.write_amplification = None;
        let after = db.stats();
        out.extra = background_work(Some(&before), Some(&after));
        out.extra.push(("segments_collected", json!(segments)));
        out.extra.push(("tables_rewritten", json!(tables)));
        out.extra.push(("values_relocated", json!(relocated)));
        out.bytes = written(&after).saturating_sub(written(&before));
        Ok(out)
    }

    /// One flush or full compaction, timed as one operation.
    pub(super) fn maintenance(&mut self, name: &str) -> Result<Outcome, BenchError> {
        let record = self.record;
        let (db, _) = self.parts()?;
        let before = db.stats();
        let mut meter = Meter::new(record);
        match name {
            "flush" => db.flush()?,
            "waitforcompaction" => db.wait_for_compactions()?,
            _ => db.compact()?,
        }
        meter.op_done();
        let mut out = meter.finish(name, 1, 0);
        out.write_amplification = None;
        let after = db.stats();
        out.extra = background_work(before.as_ref(), after.as_ref());
        if let (Some(before), Some(after)) = (before, after) {
            out.bytes = written(&after).saturating_sub(written(&before));
        }
        Ok(out)
    }
}
