//! Segment search layouts for the learned indexes (issue 3: "try a branch-free or Eytzinger
//! layout if it measures faster"): the rank of the last segment start `<= key` in a sorted
//! array, by `slice::partition_point` (what `PlrIndex` uses), a hand-written branch-free
//! binary search, and an Eytzinger (BFS-order) layout with prefetch-friendly descent.
//! Not a test; prints ns per search for array sizes typical of one file's segments.
//!
//! Run: `cargo run --release -p augur --example segment_search`

use rand::{Rng, SeedableRng};
use std::hint::black_box;
use std::time::Instant;

/// `starts.partition_point(|&s| s <= key)`, branch-free.
fn branch_free(starts: &[u64], key: u64) -> usize {
    let (mut base, mut size) = (0usize, starts.len());
    if size == 0 {
        return 0;
    }
    while size > 1 {
        let half = size / 2;
        let mid = base + half;
        base = if starts[mid] <= key { mid } else { base };
        size -= half;
    }
    base + usize::from(starts[base] <= key)
}

/// A sorted array in Eytzinger order (1-based, slot 0 unused) with each slot's sorted rank.
struct Eytzinger {
    keys: Vec<u64>,
    rank: Vec<u32>,
}

impl Eytzinger {
    fn new(sorted: &[u64]) -> Self {
        let n = sorted.len();
        let mut e = Eytzinger {
            keys: vec![0; n + 1],
            rank: vec![0; n + 1],
        };
        let mut next = 0;
        e.fill(sorted, &mut next, 1);
        e
    }

    fn fill(&mut self, sorted: &[u64], next: &mut usize, k: usize) {
        if k < self.keys.len() {
            self.fill(sorted, next, 2 * k);
            self.keys[k] = sorted[*next];
            self.rank[k] = *next as u32;
            *next += 1;
            self.fill(sorted, next, 2 * k + 1);
        }
    }

    /// Same answer as `partition_point(|&s| s <= key)`.
    fn search(&self, key: u64) -> usize {
        let n = self.keys.len();
        let mut k = 1usize;
        while k < n {
            k = 2 * k + usize::from(self.keys[k] <= key);
        }
        // Undo the trailing right turns plus one left turn: the first slot with key > key.
        k >>= k.trailing_ones() + 1;
        if k == 0 {
            n - 1
        } else {
            self.rank[k] as usize
        }
    }
}

fn main() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    println!(
        "{:>9} {:>10} {:>12} {:>10}",
        "segments", "std ns", "branchless", "eytzinger"
    );
    for n in [1_000usize, 10_000, 100_000, 1_000_000] {
        let mut starts: Vec<u64> = (0..n).map(|_| rng.gen()).collect();
        starts.sort_unstable();
        starts.dedup();
        let queries: Vec<u64> = (0..2_000_000).map(|_| rng.gen()).collect();
        let e = Eytzinger::new(&starts);
        for &q in queries.iter().take(10_000) {
            let want = starts.partition_point(|&s| s <= q);
            assert_eq!(branch_free(&starts, q), want);
            assert_eq!(e.search(q), want);
        }
        let time = |f: &dyn Fn(u64) -> usize| {
            let t = Instant::now();
            let mut acc = 0usize;
            for &q in &queries {
                acc = acc.wrapping_add(f(black_box(q)));
            }
            black_box(acc);
            t.elapsed().as_nanos() as f64 / queries.len() as f64
        };
        let mut best = [f64::MAX; 3];
        for _ in 0..3 {
            best[0] = best[0].min(time(&|q| starts.partition_point(|&s| s <= q)));
            best[1] = best[1].min(time(&|q| branch_free(&starts, q)));
            best[2] = best[2].min(time(&|q| e.search(q)));
        }
        println!(
            "{:>9} {:>10.1} {:>12.1} {:>10.1}",
            starts.len(),
            best[0],
            best[1],
            best[2]
        );
    }
}
