//! Spreading a benchmark over `--threads` threads: each thread's share of the key positions,
//! and one closure run per thread, each with its own generator seeded from the run's.

use crate::error::BenchError;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Positions `[lo, hi)` of `num` that thread `t` of `threads` handles (contiguous chunks
/// differing in length by at most one).
pub(super) fn chunk(num: u64, threads: usize, t: usize) -> (u64, u64) {
    let at = |i: usize| (u128::from(num) * i as u128 / threads.max(1) as u128) as u64;
    (at(t), at(t + 1))
}

/// Runs `work(t, rng)` for every thread `t` of `threads` and returns the results in thread
/// order. One thread runs on the caller's thread with the run's own generator (so a
/// single-threaded run draws exactly the stream it always did); more run on scoped threads,
/// each with a generator seeded from the run's.
pub(super) fn in_threads<T: Send>(
    threads: usize,
    rng: &mut StdRng,
    work: impl Fn(usize, &mut StdRng) -> Result<T, BenchError> + Sync,
) -> Result<Vec<T>, BenchError> {
    if threads <= 1 {
        return Ok(vec![work(0, rng)?]);
    }
    let seeds: Vec<u64> = (0..threads).map(|_| rng.gen()).collect();
    let work = &work;
    std::thread::scope(|s| {
        let handles: Vec<_> = seeds
            .iter()
            .enumerate()
            .map(|(t, &seed)| s.spawn(move || work(t, &mut StdRng::seed_from_u64(seed))))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(BenchError::failed("a benchmark thread panicked")))
            })
            .collect()
    })
}
