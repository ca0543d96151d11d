//! A quick std::time measurement of the PGM-index and the FITing-Tree against PLR (not a test):
//! training nanoseconds per key, segments, bytes per key and search nanoseconds per lookup, on
//! 1M uniform random u64 keys and on a SOSD dataset.
//!
//! Run: `cargo run --release -p augur --example zoo_pgm [sosd-file ...]` (default
//! `/work/shared/datasets/ipv4_asn.u64`; SOSD format: u64 count, then little-endian u64 keys).

use augur::index::{builder, Index, IndexConfig, IndexKind, IndexTuning};
use rand::{Rng, SeedableRng};
use std::hint::black_box;
use std::time::Instant;

/// Reads a SOSD file, sorted.
fn sosd(path: &str) -> Option<Vec<u64>> {
    let bytes = std::fs::read(path).ok()?;
    let count = u64::from_le_bytes(bytes.get(..8)?.try_into().ok()?) as usize;
    let mut keys: Vec<u64> = bytes
        .get(8..8 + 8 * count)?
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
        .collect();
    keys.sort_unstable();
    Some(keys)
}

fn config(kind: IndexKind, error_bound: u32, pgm_rec: u32, fanout: u32) -> IndexConfig {
    IndexConfig {
        kind,
        error_bound,
        fence_stride: 64,
        tuning: IndexTuning {
            pgm_recursive_error: pgm_rec,
            fiting_fanout: fanout,
            ..IndexTuning::default()
        },
    }
}

fn measure(name: &str, keys: &[u64]) {
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    // Half present keys, half random u64 (mostly absent).
    let queries: Vec<u64> = (0..1_000_000)
        .map(|i| {
            if i % 2 == 0 {
                keys[rng.gen_range(0..keys.len())]
            } else {
                rng.gen()
            }
        })
        .collect();
    let n = keys.len();
    let mut configs = Vec::new();
    for eps in [8, 32, 128] {
        configs.push((format!("plr/{eps}"), config(IndexKind::Plr, eps, 4, 16)));
        configs.push((format!("pgm/{eps}/r4"), config(IndexKind::Pgm, eps, 4, 16)));
        configs.push((
            format!("pgm/{eps}/r16"),
            config(IndexKind::Pgm, eps, 16, 16),
        ));
        configs.push((
            format!("fiting/{eps}/f16"),
            config(IndexKind::Fiting, eps, 4, 16),
        ));
        configs.push((
            format!("fiting/{eps}/f64"),
            config(IndexKind::Fiting, eps, 4, 64),
        ));
    }
    configs.push(("fence/64".to_string(), config(IndexKind::Fence, 8, 4, 16)));
    println!("{name}: n = {n}");
    println!(
        "  {:<16} {:>12} {:>9} {:>10} {:>10} {:>11}",
        "index", "train_ns/key", "segments", "bytes/key", "search_ns", "avg_window"
    );
    for (label, config) in configs {
        let mut best_train = f64::MAX;
        let mut idx: Option<Box<dyn Index>> = None;
        for _ in 0..3 {
            let start = Instant::now();
            let mut b = builder(&config);
            for &k in keys {
                b.add(k).expect("sorted");
            }
            let built = b.finish().expect("valid");
            best_train = best_train.min(start.elapsed().as_nanos() as f64 / n as f64);
            idx = Some(built);
        }
        let idx = idx.expect("built");
        let mut best_search = f64::MAX;
        let mut width = 0u64;
        for _ in 0..3 {
            width = 0;
            let start = Instant::now();
            for &q in &queries {
                width += black_box(idx.search(q)).len();
            }
            best_search = best_search.min(start.elapsed().as_nanos() as f64 / queries.len() as f64);
        }
        println!(
            "  {label:<16} {best_train:>12.1} {:>9} {:>10.4} {best_search:>10.1} {:>11.2}",
            idx.segments(),
            idx.size_bytes() as f64 / n as f64,
            width as f64 / queries.len() as f64
        );
    }
}

fn main() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(42);
    let mut uniform: Vec<u64> = (0..1_000_000).map(|_| rng.gen()).collect();
    uniform.sort_unstable();
    measure("uniform", &uniform);
    let mut files: Vec<String> = std::env::args().skip(1).collect();
    if files.is_empty() {
        files.push("/work/shared/datasets/ipv4_asn.u64".to_string());
    }
    for file in files {
        match sosd(&file) {
            Some(keys) if !keys.is_empty() => measure(&file, &keys),
            _ => eprintln!("{file}: not a SOSD u64 file"),
        }
    }
}
