//! RMI vs PLR measurement (not a test): training nanoseconds per key, leaves/segments, bytes per
//! key, largest and average window, search nanoseconds per lookup, on 1M uniform random u64
//! keys and on the SOSD dataset `ipv4_asn.u64` (u64 count, then little-endian u64 keys).
//!
//! Run: `cargo run --release -p augur --example zoo_rmi [dataset.u64 ...]` (default: the shared
//! `ipv4_asn.u64`).

use augur::index::{builder, Index, IndexConfig, IndexKind, IndexTuning, RmiRoot};
use rand::{Rng, SeedableRng};
use std::hint::black_box;
use std::time::Instant;

fn load_sosd(path: &str) -> Option<Vec<u64>> {
    let bytes = std::fs::read(path).ok()?;
    let mut words = bytes
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")));
    let count = words.next()? as usize;
    let mut keys: Vec<u64> = words.take(count).collect();
    keys.sort_unstable();
    Some(keys)
}

fn config(kind: IndexKind, error_bound: u32, leaves: u32, root: RmiRoot) -> IndexConfig {
    IndexConfig {
        kind,
        error_bound,
        tuning: IndexTuning {
            rmi_leaves: leaves,
            rmi_root: root,
            ..IndexTuning::default()
        },
        ..IndexConfig::default()
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
        match load_sosd(&path) {
            Some(keys) => {
                let name = path.rsplit('/').next().unwrap_or(&path).to_string();
                datasets.push((name, keys));
            }
            None => eprintln!("cannot read {path}"),
        }
    }
    let configs = [
        ("plr δ=8", config(IndexKind::Plr, 8, 0, RmiRoot::Linear)),
        ("plr δ=32", config(IndexKind::Plr, 32, 0, RmiRoot::Linear)),
        (
            "rmi δ=8 auto",
            config(IndexKind::Rmi, 8, 0, RmiRoot::Linear),
        ),
        (
            "rmi δ=32 auto",
            config(IndexKind::Rmi, 32, 0, RmiRoot::Linear),
        ),
        (
            "rmi δ=8 cubic",
            config(IndexKind::Rmi, 8, 0, RmiRoot::Cubic),
        ),
        (
            "rmi L=2^10",
            config(IndexKind::Rmi, 8, 1 << 10, RmiRoot::Linear),
        ),
        (
            "rmi L=2^16",
            config(IndexKind::Rmi, 8, 1 << 16, RmiRoot::Linear),
        ),
        (
            "rmi L=2^16 cub",
            config(IndexKind::Rmi, 8, 1 << 16, RmiRoot::Cubic),
        ),
        (
            "rmi L=2^20",
            config(IndexKind::Rmi, 8, 1 << 20, RmiRoot::Linear),
        ),
    ];
    println!(
        "dataset        index           n        train_ns/key  segments  bytes/key  max_win  avg_win  search_ns(hit)  search_ns(rand)"
    );
    for (name, keys) in &datasets {
        let n = keys.len();
        let hits: Vec<u64> = (0..1_000_000).map(|_| keys[rng.gen_range(0..n)]).collect();
        let randoms: Vec<u64> = (0..1_000_000).map(|_| rng.gen()).collect();
        for (label, config) in &configs {
            // Best of 3 builds (the machine is shared).
            let mut train = f64::INFINITY;
            let mut idx: Option<Box<dyn Index>> = None;
            for _ in 0..3 {
                let start = Instant::now();
                let mut b = builder(config);
                for &k in keys {
                    b.add(k).expect("sorted");
                }
                let built = b.finish().expect("valid");
                train = train.min(start.elapsed().as_nanos() as f64 / n as f64);
                idx = Some(built);
            }
            let idx = idx.expect("built");
            let time = |queries: &[u64]| {
                let start = Instant::now();
                let mut width = 0u64;
                for &q in queries {
                    width += black_box(idx.search(black_box(q))).len();
                }
                (
                    start.elapsed().as_nanos() as f64 / queries.len() as f64,
                    width as f64 / queries.len() as f64,
                )
            };
            let (hit_ns, avg) = time(&hits);
            let (rand_ns, _) = time(&randoms);
            println!(
                "{name:<14} {label:<15} {n:<8} {train:>12.1} {:>9} {:>10.3} {:>8} {avg:>8.2} {hit_ns:>15.1} {rand_ns:>16.1}",
                idx.segments(),
                idx.size_bytes() as f64 / n as f64,
                idx.max_window(),
            );
        }
    }
}
