//! `train`: no database; times building the configured index (`--index`, `--error-bound`)
//! over the projected keys of the whole key set, as the index of one file.

use super::Params;
use crate::error::BenchError;
use crate::report::Outcome;
use augur::index::builder;
use augur::index::projection::{common_prefix_len, project};
use augur::Options;
use serde_json::json;
use std::time::Instant;

/// The `train` benchmark: builds one index over the projected, sorted keys of the set, as the
/// engine's SSTable builder does for one file (projection excluded from the timing). The
/// build is repeated until it has run 5 times or for a second, and the mean is reported.
pub(super) fn train(name: &str, p: &Params, o: &Options) -> Result<Outcome, BenchError> {
    let config = o.index_config();
    let n = p.keys.len();
    let (mut first, mut last, mut key) = (Vec::new(), Vec::new(), Vec::new());
    p.keys.key(0, p.key_size, &mut first);
    p.keys.key(n.saturating_sub(1), p.key_size, &mut last);
    let prefix = common_prefix_len(&first, &last);
    let projected: Vec<u64> = (0..n)
        .map(|i| {
            p.keys.key(i, p.key_size, &mut key);
            project(&key, prefix)
        })
        .collect();
    let start = Instant::now();
    let mut passes = 0u64;
    let mut built = None;
    while passes < 5 && (passes == 0 || start.elapsed().as_secs_f64() < 1.0) {
        let mut b = builder(&config);
        for &x in &projected {
            b.add(x)?;
        }
        built = Some(b.finish()?);
        passes += 1;
    }
    let seconds = start.elapsed().as_secs_f64() / passes as f64;
    let mut out = Outcome::new(name, n, seconds);
    if let Some(index) = built {
        let per_key = |v: f64| v / n.max(1) as f64;
        out.extra = vec![
            ("index", json!(index.kind().name())),
            ("error_bound", json!(config.error_bound)),
            ("train_ns_per_key", json!(per_key(seconds * 1e9))),
            ("segments", json!(index.segments())),
            (
                "keys_per_segment",
                json!(n as f64 / index.segments().max(1) as f64),
            ),
            ("model_bytes", json!(index.size_bytes())),
            (
                "model_bytes_per_key",
                json!(per_key(index.size_bytes() as f64)),
            ),
        ];
    }
    Ok(out)
}
