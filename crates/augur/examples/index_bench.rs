//! A quick std::time measurement of the index zoo (not a test): training nanoseconds per key,
//! segments, bytes per key and search nanoseconds, per dataset and index configuration.
//!
//! Run: `cargo run --release -p augur --example index_bench [keys]` (default 4,000,000 keys).

use augur::index::{builder, Index, IndexConfig, IndexKind};
use rand::{Rng, SeedableRng};
use std::hint::black_box;
use std::time::Instant;

fn datasets(n: u64) -> Vec<(&'static str, Vec<u64>)> {
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
    vec![
        ("linear", linear),
        ("seg-1%", seg(100)),
        ("seg-10%", seg(10)),
        ("normal", normal),
        ("uniform", uniform),
    ]
}

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(4_000_000);
    let configs = [
        ("fence/64", IndexKind::Fence, 8, 64),
        ("fence/16", IndexKind::Fence, 8, 16),
        ("plr/8", IndexKind::Plr, 8, 64),
        ("plr/32", IndexKind::Plr, 32, 64),
    ];
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    println!("n = {n}");
    println!("dataset   index      train_ns/key  segments  bytes/key  search_ns  avg_window");
    for (name, keys) in datasets(n) {
        let queries: Vec<u64> = (0..1_000_000)
            .map(|_| keys[rng.gen_range(0..keys.len())])
            .collect();
        for (label, kind, error_bound, fence_stride) in configs {
            let config = IndexConfig {
                kind,
                error_bound,
                fence_stride,
                tuning: Default::default(),
            };
            let start = Instant::now();
            let mut b = builder(&config);
            for &k in &keys {
                b.add(k).expect("sorted");
            }
            let idx: Box<dyn Index> = b.finish().expect("valid");
            let train = start.elapsed().as_nanos() as f64 / n as f64;
            let start = Instant::now();
            let mut width = 0u64;
            for &q in &queries {
                width += black_box(idx.search(q)).len();
            }
            let search = start.elapsed().as_nanos() as f64 / queries.len() as f64;
            println!(
                "{name:<9} {label:<10} {train:>12.1} {:>9} {:>10.3} {search:>10.1} {:>11.2}",
                idx.segments(),
                idx.size_bytes() as f64 / n as f64,
                width as f64 / queries.len() as f64
            );
        }
    }
}
