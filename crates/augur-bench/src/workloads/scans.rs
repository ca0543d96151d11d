//! `scanparallel`: large range scans split among threads (`Db::scan_parallel`), Augur only —
//! the Bourbon range-query follow-up's parallel range queries, with its key-space splitter
//! and Augur's learned, entry-balanced one.
//!
//! Each operation scans the range from the i-th to the (i + `range_keys`)-th key of the key
//! source (i uniform), end excluded: exactly `range_keys` entries for a key-source fill,
//! fewer for db_bench numbers (which are drawn with repeats). Every partition counts its
//! entries and bytes; the record reports the entries read per scan and the partitions'
//! imbalance (largest partition ÷ mean partition, averaged over the scans; 1.0 is perfect).

use super::{Meter, Runner};
use crate::error::BenchError;
use crate::report::Outcome;
use rand::rngs::StdRng;
use rand::Rng;
use serde_json::json;
use std::ops::Bound;

/// `scanparallel`'s settings.
#[derive(Debug, Clone, Copy)]
pub struct ParallelScanParams {
    /// Threads per scan, the caller's included.
    pub threads: usize,
    /// How ranges are cut.
    pub split: augur::Split,
    /// Partitions per range (0: one per thread).
    pub partitions: usize,
    /// Source keys per range.
    pub range_keys: u64,
}

impl Runner {
    /// `scanparallel`: `reads` parallel scans of `range_keys`-key ranges.
    pub(super) fn scan_parallel(
        &mut self,
        name: &str,
        rng: &mut StdRng,
    ) -> Result<Outcome, BenchError> {
        let (reads, key_size, num) = (self.p.reads, self.p.key_size, self.p.num);
        let params = self.p.parallel_scan;
        let keys = std::sync::Arc::clone(&self.p.keys);
        let record = self.record;
        let augur = self.augur_only(name)?;
        let options = augur::ParallelScanOptions {
            threads: params.threads,
            partitions: params.partitions,
            split: params.split,
            ..augur::ParallelScanOptions::default()
        };
        let span = params.range_keys.min(num.saturating_sub(1)).max(1);
        let (mut lo, mut hi) = (Vec::new(), Vec::new());
        let (mut entries, mut bytes, mut imbalance) = (0u64, 0u64, 0f64);
        let mut meter = Meter::new(record);
        for _ in 0..reads {
            meter.exclude(|| {
                let i = rng.gen_range(0..num.saturating_sub(span).max(1));
                keys.key(i, key_size, &mut lo);
                keys.key(i + span, key_size, &mut hi);
            });
            let range = (Bound::Included(&lo[..]), Bound::Excluded(&hi[..]));
            let parts = augur.scan_parallel::<&[u8], _, _, _>(range, &options, |_, scan| {
                let (mut n, mut b) = (0u64, 0u64);
                while let Some((k, v)) = scan.next()? {
                    n += 1;
                    b += (k.len() + v.len()) as u64;
                }
                Ok((n, b))
            })?;
            meter.op_done();
            let n: u64 = parts.iter().map(|p| p.0).sum();
            entries += n;
            bytes += parts.iter().map(|p| p.1).sum::<u64>();
            let largest = parts.iter().map(|p| p.0).max().unwrap_or(0);
            imbalance += if n == 0 {
                1.0
            } else {
                largest as f64 * parts.len() as f64 / n as f64
            };
        }
        let mut out = meter.finish(name, reads, bytes);
        out.extra.push(("scan_threads", json!(params.threads)));
        out.extra.push(("scan_split", json!(params.split.name())));
        out.extra
            .push(("scan_partitions", json!(params.partitions)));
        out.extra.push(("range_keys", json!(span)));
        out.extra.push(("entries_read", json!(entries)));
        out.extra.push((
            "entries_per_scan",
            json!(entries as f64 / reads.max(1) as f64),
        ));
        out.extra.push((
            "partition_imbalance",
            json!(imbalance / reads.max(1) as f64),
        ));
        Ok(out)
    }
}
