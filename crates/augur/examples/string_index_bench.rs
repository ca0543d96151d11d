//! A quick std::time study of the string tree (not a test): per text key file and node
//! configuration, what the tree is made of (nodes, models, segments, bytes per part against
//! the fence pointers' bytes at the same error bound) and what a lookup costs in memory —
//! the tree's search, then a binary search of its window over the sorted keys (and on past
//! the window through a run, as the reader does) — against a binary search of every key.
//!
//! Run: `cargo run --release -p augur --example string_index_bench FILE...` (one key per
//! line; sorted and deduplicated here). `DELTAS=8,16,32` and `RUN_LIMITS=16` choose the
//! configurations.

use augur::index::string_tree::StringTree;
use augur::index::Index;
use rand::{Rng, SeedableRng};
use std::hint::black_box;
use std::time::Instant;

/// Numbers from the environment variable `name` (comma-separated), or `default`.
fn list(name: &str, default: &[u32]) -> Vec<u32> {
    std::env::var(name)
        .ok()
        .map(|v| v.split(',').filter_map(|x| x.trim().parse().ok()).collect())
        .unwrap_or_else(|| default.to_vec())
}

/// The lower bound of `key` in `keys`, starting from the tree's window.
fn lower_bound_from(keys: &[&[u8]], key: &[u8], lo: usize, hi: usize) -> usize {
    let hi = hi.min(keys.len());
    let lo = lo.min(hi);
    let mut at = lo + keys[lo..hi].partition_point(|k| *k < key);
    while at < keys.len() && keys[at] < key {
        at += 1;
    }
    at
}

fn main() {
    let files: Vec<String> = std::env::args().skip(1).collect();
    for file in files {
        let text = std::fs::read(&file).expect("read the key file");
        let mut lines: Vec<&[u8]> = text
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .collect();
        lines.sort_unstable();
        lines.dedup();
        let (first, last) = (lines[0], lines[lines.len() - 1]);
        let common = first.iter().zip(last).take_while(|(a, b)| a == b).count();
        let keys: Vec<&[u8]> = lines.iter().map(|k| &k[common..]).collect();
        let n = keys.len();
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let probes: Vec<usize> = (0..1_000_000).map(|_| rng.gen_range(0..n)).collect();
        let t = Instant::now();
        let mut sum = 0usize;
        for &i in &probes {
            sum += keys.partition_point(|k| *k < keys[i]);
        }
        black_box(sum);
        let full_ns = t.elapsed().as_nanos() as f64 / probes.len() as f64;
        let string_fence = augur::index::chooser::string_fence_bytes(&keys, 17);
        println!(
            "{file}: {n} keys, common prefix {common} B; binary search of every key {full_ns:.0} ns; \
             fence pointers that tell the keys apart at stride 17: {string_fence} B"
        );
        for delta in list("DELTAS", &[8, 16, 32]) {
            for run_limit in list("RUN_LIMITS", &[16]) {
                let t = Instant::now();
                let tree = StringTree::build(&keys, delta, run_limit).expect("build");
                let build_ms = t.elapsed().as_secs_f64() * 1e3;
                let s = tree.stats();
                let fence_bytes = n.div_ceil(2 * delta as usize + 1) * 8;
                let t = Instant::now();
                let mut search_sum = 0u64;
                for &i in &probes {
                    search_sum += tree.search_rest(keys[i]).lo;
                }
                black_box(search_sum);
                let search_ns = t.elapsed().as_nanos() as f64 / probes.len() as f64;
                let t = Instant::now();
                let mut sum = 0usize;
                for &i in &probes {
                    let w = tree.search_rest(keys[i]);
                    let at = lower_bound_from(&keys, keys[i], w.lo as usize, w.hi as usize);
                    debug_assert_eq!(at, i);
                    sum += at;
                }
                black_box(sum);
                let lookup_ns = t.elapsed().as_nanos() as f64 / probes.len() as f64;
                // How far each key lies from its window's middle (where the reader's scan
                // starts): the slots a lookup compares are about this plus two.
                let mut error_sum = 0u64;
                for &i in &probes {
                    let w = tree.search_rest(keys[i]);
                    let mid = w.lo + (w.hi - w.lo) / 2;
                    error_sum += mid.abs_diff(i as u64);
                }
                let mean_error = error_sum as f64 / probes.len() as f64;
                println!(
                    "  delta {delta:>3} run {run_limit:>3}: {:>8} B ({:.2} B/key, {:.1}x fence {} B) \
                     nodes {} leaves {} models {} segments {} redirects {} | node {} prefix {} \
                     redirect {} model {} B | depth {:.2} max window {} | build {build_ms:.0} ms, \
                     search {search_ns:.0} ns, lookup {lookup_ns:.0} ns ({:.2}x full), \
                     mean |error| {mean_error:.2}",
                    tree.size_bytes(),
                    tree.size_bytes() as f64 / n as f64,
                    tree.size_bytes() as f64 / fence_bytes as f64,
                    fence_bytes,
                    s.nodes,
                    s.leaves,
                    s.models,
                    s.model_segments,
                    s.redirects,
                    s.node_bytes,
                    s.prefix_bytes,
                    s.redirect_bytes,
                    s.model_bytes,
                    s.mean_depth,
                    tree.max_window(),
                    full_ns / lookup_ns,
                );
            }
        }
    }
}
