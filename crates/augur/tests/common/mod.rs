//! Shared by the crash and corruption suites: the learning configuration of a test case,
//! chosen deterministically from the case's number so that a suite's consecutive cases walk
//! through every learning policy × index type (issue 3: "the crash test suites run under
//! every learning policy and both index types").
//!
//! Case `n` uses policy `ALL_POLICIES[n % 6]` and index `INDEX_KINDS[(n / 6) % 8]`, so any
//! 48 consecutive cases cover all 48 combinations (and any 6 consecutive cases cover every
//! policy). The secondary knobs (error bound, a tiny
//! `T_wait` of 0–2 ms so that background learners really train during the workload, level
//! models, the lazy read count) come from a generator seeded by `n`, so they do not move in
//! lockstep with the policy.
//!
//! Read modes (issue 27): case `n` also reads its files under [`Reads::nth`]`(n)` — `mmap`,
//! `pread` or `direct` (through the database's page cache, with a budget of 0, 16 KiB,
//! 1 MiB or the default 64 MiB, so pages are evicted while the case runs). The mode is
//! `(n + n / 6) mod 3`, so it does not follow the policy: every index type and every policy
//! meets every mode within 42 consecutive cases. Under `MemFs` and `FaultFs`, `mmap` and
//! `pread` read alike and `direct` reads through the page cache.

// Each test binary that includes this module uses a subset of it.
#![allow(dead_code)]

use augur::learning::ALL_POLICIES;
use augur::{Db, IndexKind, LearningPolicy, Options, ReadMode};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Every index type a file can be learned with (PLR first: the default).
pub const INDEX_KINDS: [IndexKind; 8] = [
    IndexKind::Plr,
    IndexKind::Fence,
    IndexKind::Pgm,
    IndexKind::RadixSpline,
    IndexKind::Rmi,
    IndexKind::Fiting,
    IndexKind::Plex,
    IndexKind::StringTree,
];

/// The learning options of one test case, and how it reads its files.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Learning {
    pub policy: LearningPolicy,
    pub index: IndexKind,
    pub error_bound: u32,
    pub wait_ms: u64,
    pub level_models: bool,
    pub lazy_reads: u64,
    pub reads: Reads,
}

/// How a test case reads its files: the read mode and the page cache's budget (used by
/// `direct` only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reads {
    pub mode: ReadMode,
    pub cache_bytes: u64,
}

/// Every read mode.
pub const READ_MODES: [ReadMode; 3] = [ReadMode::Mmap, ReadMode::Pread, ReadMode::Direct];

impl Reads {
    /// The reads of case `n` (see the module doc).
    pub fn nth(n: u64) -> Reads {
        let mut rng = StdRng::seed_from_u64(n ^ 0x0d17_ec7c);
        Reads {
            mode: READ_MODES[((n + n / 6) % 3) as usize],
            cache_bytes: [0, 16 << 10, 1 << 20, 64 << 20][rng.gen_range(0..4)],
        }
    }

    /// The reads of `o`.
    pub fn of(o: &Options) -> Reads {
        Reads {
            mode: o.read_mode,
            cache_bytes: o.cache_bytes,
        }
    }

    /// `base` with these reads.
    pub fn apply(&self, base: Options) -> Options {
        Options {
            read_mode: self.mode,
            cache_bytes: self.cache_bytes,
            ..base
        }
    }
}

impl Learning {
    /// The configuration of case `n` (see the module doc).
    pub fn nth(n: u64) -> Learning {
        let mut rng = StdRng::seed_from_u64(n ^ 0x1ea7_ed00);
        Learning {
            policy: ALL_POLICIES[(n % 6) as usize],
            index: INDEX_KINDS[((n / 6) % INDEX_KINDS.len() as u64) as usize],
            error_bound: [1, 2, 4, 8, 16, 64][rng.gen_range(0..6)],
            wait_ms: rng.gen_range(0..3),
            level_models: rng.gen_bool(0.4),
            lazy_reads: rng.gen_range(1..4),
            reads: Reads::nth(n),
        }
    }

    /// The learning options of `o`.
    pub fn of(o: &Options) -> Learning {
        Learning {
            policy: o.learning,
            index: o.index,
            error_bound: o.error_bound,
            wait_ms: o.learning_wait_ms,
            level_models: o.level_models,
            lazy_reads: o.lazy_learning_reads,
            reads: Reads::of(o),
        }
    }

    /// A configuration for reopening what case `n` wrote: always a different policy than
    /// [`Learning::nth`]`(n)` (`5n + 7 ≢ n (mod 6)`), often a different index type.
    pub fn reopen_of(n: u64) -> Learning {
        Learning::nth(5 * n + 7)
    }

    /// `base` with these learning options and reads.
    pub fn apply(&self, base: Options) -> Options {
        self.reads.apply(Options {
            learning: self.policy,
            index: self.index,
            error_bound: self.error_bound,
            learning_wait_ms: self.wait_ms,
            level_models: self.level_models,
            lazy_learning_reads: self.lazy_reads,
            ..base
        })
    }

    /// What every open under this configuration does first: under `offline`, learn the
    /// files present (`Db::learn_all`), so that the checks that follow use the models.
    ///
    /// # Errors
    /// Those of `Db::learn_all`.
    pub fn after_open(&self, db: &Db) -> augur::Result<()> {
        if self.policy == LearningPolicy::Offline {
            db.learn_all()?;
        }
        Ok(())
    }
}

/// What `db`, opened under `l`, says of its reads: a page cache exactly under `direct`, with
/// `l`'s budget and within it.
pub fn check_reads(db: &Db, l: &Learning, ctx: &str) {
    let cache = db.stats().reads.cache;
    match (l.reads.mode, cache) {
        (ReadMode::Direct, Some(c)) => assert!(
            c.capacity_bytes == l.reads.cache_bytes && c.used_bytes <= c.capacity_bytes,
            "{ctx}: page cache {c:?} under {:?}",
            l.reads
        ),
        (mode, c) => assert!(
            mode != ReadMode::Direct && c.is_none(),
            "{ctx}: {mode:?} reads with page cache {c:?}"
        ),
    }
}

/// The FLSM configuration the crash suites run under: guards every few keys and few levels,
/// so fragments, guard commits, last-level rewrites and in-place merges all happen in a
/// small workload.
pub fn flsm_options(base: augur::Options) -> augur::Options {
    augur::Options {
        compaction: Some(augur::CompactionStyle::Flsm),
        num_levels: 4,
        flsm: augur::FlsmOptions {
            top_level_bits: 4,
            bit_decrement: 1,
            max_sstables_per_guard: 2,
            seek_compaction_threshold: 4,
            ..augur::FlsmOptions::default()
        },
        ..base
    }
}

/// Options over the fault-injecting file system `fs` that separate every value of 8 bytes
/// or more into the value log, with work run inline (deterministic): the value-log crash
/// regressions' configuration.
pub fn separated_on(fs: &augur::fs::FaultFs) -> augur::Options {
    augur::Options {
        fs: std::sync::Arc::new(fs.clone()),
        value_separation_threshold: 8,
        background_threads: false,
        ..augur::Options::default()
    }
}

/// The numbers of the WAL files in `dir`, ascending.
pub fn wal_numbers(dir: &std::path::Path) -> Vec<u64> {
    let mut n: Vec<u64> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            name.strip_suffix(".wal")?.parse().ok()
        })
        .collect();
    n.sort_unstable();
    n
}

/// Copies every file of the directory `from` into `to`, replacing `to` if it exists (a copy of
/// a database directory: a backup, or a crash image when taken while the database is open).
pub fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    if to.exists() {
        std::fs::remove_dir_all(to).expect("clean");
    }
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read_dir") {
        let entry = entry.expect("entry");
        std::fs::copy(entry.path(), to.join(entry.file_name())).expect("copy");
    }
}

/// File names in `dir` with their sizes (to show that a refused open changed nothing).
pub fn listing(dir: &std::path::Path) -> std::collections::BTreeMap<String, u64> {
    std::fs::read_dir(dir)
        .expect("read_dir")
        .map(|e| {
            let e = e.expect("entry");
            (
                e.file_name().to_string_lossy().into_owned(),
                e.metadata().expect("metadata").len(),
            )
        })
        .collect()
}

/// The files of `dir` whose names end with `.{extension}`, sorted (oldest number first).
pub fn files_with_extension(dir: &std::path::Path, extension: &str) -> Vec<std::path::PathBuf> {
    let mut v: Vec<std::path::PathBuf> = std::fs::read_dir(dir)
        .expect("read_dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == extension))
        .collect();
    v.sort();
    v
}
