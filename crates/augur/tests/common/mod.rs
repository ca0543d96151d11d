//! Shared by the crash and corruption suites: the learning configuration of a test case,
//! chosen deterministically from the case's number so that a suite's consecutive cases walk
//! through every learning policy × index type (issue 3: "the crash test suites run under
//! every learning policy and both index types").
//!
//! Case `n` uses policy `ALL_POLICIES[n % 6]` and index `INDEX_KINDS[(n / 6) % 7]`, so any
//! 42 consecutive cases cover all 42 combinations (and any 7 consecutive cases cover every
//! policy and every index type). The secondary knobs (error bound, a tiny
//! `T_wait` of 0–2 ms so that background learners really train during the workload, level
//! models, the lazy read count) come from a generator seeded by `n`, so they do not move in
//! lockstep with the policy.

// Each test binary that includes this module uses a subset of it.
#![allow(dead_code)]

use augur::learning::ALL_POLICIES;
use augur::{Db, IndexKind, LearningPolicy, Options};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Every index type a file can be learned with (PLR first: the default).
pub const INDEX_KINDS: [IndexKind; 7] = [
    IndexKind::Plr,
    IndexKind::Fence,
    IndexKind::Pgm,
    IndexKind::RadixSpline,
    IndexKind::Rmi,
    IndexKind::Fiting,
    IndexKind::Plex,
];

/// The learning options of one test case.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Learning {
    pub policy: LearningPolicy,
    pub index: IndexKind,
    pub error_bound: u32,
    pub wait_ms: u64,
    pub level_models: bool,
    pub lazy_reads: u64,
}

impl Learning {
    /// The configuration of case `n` (see the module doc).
    pub fn nth(n: u64) -> Learning {
        let mut rng = StdRng::seed_from_u64(n ^ 0x1ea7_ed00);
        Learning {
            policy: ALL_POLICIES[(n % 6) as usize],
            index: INDEX_KINDS[((n / 6) % 7) as usize],
            error_bound: [1, 2, 4, 8, 16, 64][rng.gen_range(0..6)],
            wait_ms: rng.gen_range(0..3),
            level_models: rng.gen_bool(0.4),
            lazy_reads: rng.gen_range(1..4),
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
        }
    }

    /// A configuration for reopening what case `n` wrote: always a different policy than
    /// [`Learning::nth`]`(n)` (`5n + 7 ≢ n (mod 6)`), often a different index type.
    pub fn reopen_of(n: u64) -> Learning {
        Learning::nth(5 * n + 7)
    }

    /// `base` with these learning options.
    pub fn apply(&self, base: Options) -> Options {
        Options {
            learning: self.policy,
            index: self.index,
            error_bound: self.error_bound,
            learning_wait_ms: self.wait_ms,
            level_models: self.level_models,
            lazy_learning_reads: self.lazy_reads,
            ..base
        }
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
