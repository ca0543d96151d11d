//! RadixSpline and PLEX against PLR and fence pointers (issue 4): training nanoseconds per
//! key, spline points, bytes per key, search nanoseconds per lookup and the average window, on
//! 1M uniform random u64 keys and on the SOSD-format `ipv4_asn.u64` dataset. Not a test.
//!
//! Run: `cargo run --release -p augur --example zoo_rs [dataset.u64 ...]` (default:
//! `/work/shared/datasets/ipv4_asn.u64` next to the uniform keys). Training is the best of
//! three builds; searches are 1M lookups of present keys in random order. `ZOO_FILTER=rs/`
//! keeps only the configurations whose label contains the filter.

use augur::index::{builder, Index, IndexConfig, IndexKind, IndexTuning};
use rand::{Rng, SeedableRng};
use std::hint::black_box;
use std::time::Instant;

/// Reads a SOSD file: a little-endian u64 count, then that many little-endian u64 keys.
fn read_sosd(path: &str) -> Option<Vec<u64>> {
    let bytes = std::fs::read(path).ok()?;
    let words: Vec<u64> = bytes
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
        .collect();
    let (&count, keys) = words.split_first()?;
    (keys.len() as u64 == count).then(|| keys.to_vec())
}

fn config(kind: IndexKind, error_bound: u32, radix_bits: u32) -> IndexConfig {
    IndexConfig {
        kind,
        error_bound,
        fence_stride: 2 * error_bound + 1,
        tuning: IndexTuning {
            radix_bits,
            ..IndexTuning::default()
        },
    }
}

fn main() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(42);
    let mut uniform: Vec<u64> = (0..1_000_000).map(|_| rng.gen()).collect();
    uniform.sort_unstable();
    let mut datasets = vec![("uniform-1M".to_string(), uniform)];
    let mut paths: Vec<String> = std::env::args().skip(1).collect();
    if paths.is_empty() {
        paths.push("/work/shared/datasets/ipv4_asn.u64".to_string());
    }
    for path in paths {
        match read_sosd(&path) {
            Some(keys) => datasets.push((path.rsplit('/').next().unwrap_or("?").to_string(), keys)),
            None => eprintln!("skipping {path}: not a SOSD u64 file"),
        }
    }
    let mut configs = Vec::new();
    for delta in [1u32, 8, 32, 128] {
        configs.push((
            format!("fence/{}", 2 * delta + 1),
            config(IndexKind::Fence, delta, 18),
        ));
        configs.push((format!("plr/{delta}"), config(IndexKind::Plr, delta, 18)));
        configs.push((
            format!("rs/{delta}/r18"),
            config(IndexKind::RadixSpline, delta, 18),
        ));
        configs.push((
            format!("rs/{delta}/r10"),
            config(IndexKind::RadixSpline, delta, 10),
        ));
        configs.push((format!("plex/{delta}"), config(IndexKind::Plex, delta, 18)));
    }
    // ZOO_FILTER=plex keeps only the configurations whose label contains "plex".
    if let Ok(filter) = std::env::var("ZOO_FILTER") {
        configs.retain(|(label, _)| label.contains(&filter));
    }
    println!(
        "dataset          index         train_ns/key  segments  bytes/key  search_ns  avg_window"
    );
    for (name, keys) in &datasets {
        let n = keys.len();
        let queries: Vec<u64> = (0..1_000_000).map(|_| keys[rng.gen_range(0..n)]).collect();
        for (label, config) in &configs {
            let mut best = f64::INFINITY;
            let mut idx: Option<Box<dyn Index>> = None;
            for _ in 0..3 {
                let start = Instant::now();
                let mut b = builder(config);
                for &k in keys {
                    b.add(k).expect("sorted");
                }
                let built = b.finish().expect("valid");
                best = best.min(start.elapsed().as_nanos() as f64 / n as f64);
                idx = Some(black_box(built));
            }
            let Some(idx) = idx else { continue };
            let start = Instant::now();
            let mut width = 0u64;
            for &q in &queries {
                width += black_box(idx.search(q)).len();
            }
            let search = start.elapsed().as_nanos() as f64 / queries.len() as f64;
            println!(
                "{name:<16} {label:<13} {best:>12.1} {:>9} {:>10.3} {search:>10.1} {:>11.2}",
                idx.segments(),
                idx.size_bytes() as f64 / n as f64,
                width as f64 / queries.len() as f64
            );
        }
    }
}
