//! Randomized differential test (issue 2): the engine against a `BTreeMap` model.
//!
//! Each run drives one database with a seeded random mix of puts, deletes, write batches
//! (with repeated keys), point reads of present and absent keys, range scans with random
//! bounds stepped forward, backward or both ways, zero-copy scans (`Db::scan_with`: both
//! directions, any readahead, seeks inside the range), parallel scans (`Db::scan_parallel`:
//! both splitters, 1–8 threads, more partitions than threads, both directions, snapshots),
//! full iterations, snapshots (kept alive
//! with a copy of the model of their time and read with `get_at` / `range_at`), iterators
//! kept open across later writes, flushes, `compact_range`, value-log GC and reopens. Sizes
//! are tiny so that flushes, compactions and GC run many times; the end of a run asserts
//! through `Db::stats()` that they did.
//!
//! Read modes (issue 27): each reopen moves a run to the next read mode (`options::read_setup`:
//! `mmap` and `direct` in memory; `mmap`, `pread` and `direct` on disk), so every run, and so
//! every index type, is read through the page cache of `ReadMode::Direct` for part of its
//! life — with budgets of 0, 16 KiB, 256 KiB, 1 MiB or 64 MiB and sometimes a
//! `max_open_files` of a few tables — and reads files written under another mode. At each
//! reopen the cache is checked to hold no more than its budget.
//!
//! A mismatch panics with the seed, the op index and the last operations. Longer local runs:
//! `AUGUR_DIFF_SEEDS=1..200` (or `1,5,9`) and `AUGUR_DIFF_OPS=1000000` override the seeds
//! and the operation count of every configuration.
//!
//! The suite's parts, beside this file (which holds the tests, one per configuration):
//! `differential/options.rs` (configurations, drawn options, environment overrides),
//! `model.rs` (the model, key sets, expected ranges, how failures are shown), `run.rs` (a
//! run's state, the iterator check, reopen and the final checks) and `ops.rs` (the
//! operations drawn at each step).

#[path = "differential/model.rs"]
mod model;
#[path = "differential/ops.rs"]
mod ops;
#[path = "differential/options.rs"]
mod options;
#[path = "differential/run.rs"]
mod run;

use augur::CompactionStyle;
use options::{op_count, seeds, Config, Storage, Values};
use run::Run;

fn run(cfg: Config, default_seeds: &[u64]) {
    let ops = op_count();
    for seed in seeds(default_seeds) {
        let mut r = Run::new(seed, cfg);
        while r.op < ops {
            r.step();
            r.op += 1;
        }
        r.finish(ops);
    }
}

const fn cfg(values: Values, storage: Storage, background: bool) -> Config {
    Config {
        values,
        storage,
        background,
        style: CompactionStyle::Leveled,
    }
}

const fn flsm(c: Config) -> Config {
    Config {
        style: CompactionStyle::Flsm,
        ..c
    }
}

#[test]
fn inline_values_inline_work() {
    run(cfg(Values::Inline, Storage::Mem, false), &[1, 2]);
}

#[test]
fn inline_values_background_work() {
    run(cfg(Values::Inline, Storage::Mem, true), &[3]);
}

#[test]
fn inline_values_on_disk() {
    run(cfg(Values::Inline, Storage::Disk, true), &[4]);
}

#[test]
fn separated_values_inline_work() {
    run(cfg(Values::Separated, Storage::Mem, false), &[11, 12]);
}

#[test]
fn separated_values_background_work() {
    run(cfg(Values::Separated, Storage::Mem, true), &[13]);
}

#[test]
fn separated_values_on_disk() {
    run(cfg(Values::Separated, Storage::Disk, true), &[14]);
}

#[test]
fn mixed_values_inline_work() {
    run(cfg(Values::Mixed, Storage::Mem, false), &[21]);
}

#[test]
fn mixed_values_background_work() {
    run(cfg(Values::Mixed, Storage::Disk, true), &[22]);
}

// The same suite on PebblesDB's fragmented LSM; seeds 31..=37 cover every index type.

#[test]
fn flsm_inline_values_inline_work() {
    run(
        flsm(cfg(Values::Inline, Storage::Mem, false)),
        &[31, 32, 33, 34, 35, 36, 37],
    );
}

#[test]
fn flsm_inline_values_background_work() {
    run(flsm(cfg(Values::Inline, Storage::Mem, true)), &[38]);
}

#[test]
fn flsm_separated_values_inline_work() {
    run(flsm(cfg(Values::Separated, Storage::Mem, false)), &[41, 42]);
}

#[test]
fn flsm_mixed_values_on_disk() {
    run(flsm(cfg(Values::Mixed, Storage::Disk, true)), &[51]);
}
