//! A quick std::time measurement of the index zoo (not a test): per dataset and configuration,
//! training nanoseconds per key (best of 3 builds), segments, bytes per key, the largest and
//! average window, and search nanoseconds per lookup of a present key (1M lookups).
//!
//! Run: `cargo run --release -p augur --example index_bench [keys] [sosd-file ...]`: synthetic
//! sets of `keys` keys (default 1,000,000: linear, seg-1%, seg-10%, normal, uniform) plus the
//! SOSD files given (a little-endian u64 count, then the keys). `ZOO_FILTER=rmi` keeps only
//! the configurations whose label contains the filter.

use augur::index::{builder, Index, IndexConfig, IndexKind, IndexTuning, RmiRoot};
use rand::{Rng, SeedableRng};
use std::hint::black_box;
use std::time::Instant;

fn synthetic(n: u64) -> Vec<(String, Vec<u64>)> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(42);
    let linear: Vec<u64> = (0..n).map(|i| 1_000_000 + i).collect();
    // Bourbon's segmented datasets: a gap after every 100 (1%) or 10 (10%) consecutive keys.
    let seg = |every: u64| -> Vec<u64> { (0..n).map(|i| i + (i / every) * 1_000_000).collect() };
    let mut uniform: Vec<u64> = (0..n).map(|_| rng.gen()).collect();
    uniform.sort_unstable();
    let mut normal: Vec<u64> = (0..n)
        .map(|_| (0..4).map(|_| rng.gen::<u64>() >> 2).sum())
        .collect();
    normal.sort_unstable();
    [
        ("linear", linear),
        ("seg-1%", seg(100)),
        ("seg-10%", seg(10)),
        ("normal", normal),
        ("uniform", uniform),
    ]
    .into_iter()
    .map(|(name, keys)| (name.to_string(), keys))
    .collect()
}

/// Reads a SOSD file, sorted and deduplicated.
fn read_sosd(path: &str) -> Option<Vec<u64>> {
    let bytes = std::fs::read(path).ok()?;
    let mut words = bytes
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")));
    let count = words.next()? as usize;
    let mut keys: Vec<u64> = words.take(count).collect();
    keys.sort_unstable();
    keys.dedup();
    (!keys.is_empty()).then_some(keys)
}

/// Every type at error bound `delta`, plus type-specific variants.
fn configs() -> Vec<(String, IndexConfig)> {
    let config = |kind, delta: u32, tuning| IndexConfig {
        kind,
        error_bound: delta,
        fence_stride: 2 * delta + 1,
        tuning,
    };
    let tuned = IndexTuning::default;
    let mut out = Vec::new();
    for delta in [8u32, 32, 128] {
        for kind in IndexKind::ALL {
            out.push((
                format!("{}/{delta}", kind.name()),
                config(kind, delta, tuned()),
            ));
        }
        let variants = [
            (
                "pgm/r16",
                IndexKind::Pgm,
                IndexTuning {
                    pgm_recursive_error: 16,
                    ..tuned()
                },
            ),
            (
                "rs/r10",
                IndexKind::RadixSpline,
                IndexTuning {
                    radix_bits: 10,
                    ..tuned()
                },
            ),
            (
                "rmi/cubic",
                IndexKind::Rmi,
                IndexTuning {
                    rmi_root: RmiRoot::Cubic,
                    ..tuned()
                },
            ),
            (
                "rmi/L2^16",
                IndexKind::Rmi,
                IndexTuning {
                    rmi_leaves: 1 << 16,
                    ..tuned()
                },
            ),
            (
                "fiting/f64",
                IndexKind::Fiting,
                IndexTuning {
                    fiting_fanout: 64,
                    ..tuned()
                },
            ),
        ];
        for (label, kind, tuning) in variants {
            out.push((format!("{label}/{delta}"), config(kind, delta, tuning)));
        }
    }
    if let Ok(filter) = std::env::var("ZOO_FILTER") {
        out.retain(|(label, _)| label.contains(&filter));
    }
    out
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n: u64 = args
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let mut datasets = synthetic(n);
    for path in args {
        match read_sosd(&path) {
            Some(keys) => datasets.push((path.rsplit('/').next().unwrap_or(&path).into(), keys)),
            None => eprintln!("skipping {path}: not a SOSD u64 file"),
        }
    }
    let configs = configs();
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    println!(
        "{:<24} {:<14} {:>12} {:>9} {:>10} {:>8} {:>8} {:>10}",
        "dataset",
        "index",
        "train_ns/key",
        "segments",
        "bytes/key",
        "max_win",
        "avg_win",
        "search_ns"
    );
    for (name, keys) in &datasets {
        let queries: Vec<u64> = (0..1_000_000)
            .map(|_| keys[rng.gen_range(0..keys.len())])
            .collect();
        let per_key = |v: f64| v / keys.len() as f64;
        for (label, config) in &configs {
            let mut train = f64::INFINITY;
            let mut idx: Option<Box<dyn Index>> = None;
            for _ in 0..3 {
                let start = Instant::now();
                let mut b = builder(config);
                b.add_all(keys).expect("sorted");
                let built = b.finish().expect("valid");
                train = train.min(per_key(start.elapsed().as_nanos() as f64));
                idx = Some(built);
            }
            let Some(idx) = idx else { continue };
            let start = Instant::now();
            let mut width = 0u64;
            for &q in &queries {
                width += black_box(idx.search(black_box(q))).len();
            }
            let search = start.elapsed().as_nanos() as f64 / queries.len() as f64;
            println!(
                "{name:<24} {label:<14} {train:>12.1} {:>9} {:>10.3} {:>8} {:>8.2} {search:>10.1}",
                idx.segments(),
                per_key(idx.size_bytes() as f64),
                idx.max_window(),
                width as f64 / queries.len() as f64,
            );
        }
    }
}
