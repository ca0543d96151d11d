//! Bourbon's cost–benefit analyzer (§4.4.2), as pure arithmetic over statistics the
//! [`super::learner`] collects, so that it can be tested on synthetic numbers.
//!
//! - `C_model = T_build = train_ns_per_key × keys` (per-key training cost measured on the
//!   files learned so far, a running average).
//! - `B_model = (T_n.b − T_n.m)·N_n + (T_p.b − T_p.m)·N_p`: `N_n`, `N_p` are the negative and
//!   positive internal lookups the file is expected to serve (the averages of the finished
//!   files of its level — files that lived at least `T_wait` and then died — scaled by
//!   `file size / average finished file size`); `T_*.b` the baseline-path lookup times (the
//!   file's own sampled lookups during `T_wait`, else its level's), `T_*.m` the model-path
//!   times of the level's files.
//! - While a level has fewer than [`BOOTSTRAP_FILES`] finished files, or a needed time or
//!   the training cost is still unknown, the analyzer learns every file (always-learn mode,
//!   `T_wait` still applies).
//! - Files to learn are queued by `B − C`, largest first ([`Decision::priority`]).
//! - Beyond Bourbon: a skipped file is not given up. The level's history can be stale — after
//!   a write-only phase every finished file served no lookup, so `B = 0` for every new file,
//!   and Bourbon never learns the files a read phase then hits. A skipped file is re-examined
//!   once it has itself served [`break_even_lookups`] more lookups: the number whose expected
//!   savings pay for its training. Those lookups are evidence the history did not have.

/// A level needs this many finished files before its statistics are trusted.
pub const BOOTSTRAP_FILES: u64 = 4;

/// What the finished files of one level tell about a new file of that level.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LevelEstimates {
    /// Files of the level that lived at least `T_wait` and then died.
    pub finished_files: u64,
    /// Average negative internal lookups served by one finished file.
    pub avg_negative_lookups: f64,
    /// Average positive internal lookups served by one finished file.
    pub avg_positive_lookups: f64,
    /// Average size of a finished file (bytes).
    pub avg_file_bytes: f64,
    /// Average baseline-path lookup time, `[negative, positive]` (ns), when sampled.
    pub baseline_ns: [Option<f64>; 2],
    /// Average model-path lookup time, `[negative, positive]` (ns), when sampled.
    pub model_ns: [Option<f64>; 2],
}

/// The file the analyzer decides about.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Candidate {
    /// Keys (slots) of the file: what training is proportional to.
    pub keys: u64,
    /// Size of the file (bytes).
    pub file_bytes: u64,
    /// The file's own sampled baseline lookup times during `T_wait`, `[negative, positive]`.
    pub baseline_ns: [Option<f64>; 2],
}

/// The analyzer's verdict.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Decision {
    /// Not enough statistics yet: learn (always-learn mode).
    Bootstrap,
    /// `B > C`: learn.
    Learn {
        /// Expected lookup time saved (ns).
        benefit_ns: f64,
        /// Expected training time (ns).
        cost_ns: f64,
    },
    /// `B <= C`: do not learn.
    Skip {
        /// Expected lookup time saved (ns).
        benefit_ns: f64,
        /// Expected training time (ns).
        cost_ns: f64,
    },
}

impl Decision {
    /// Whether the file should be learned.
    pub fn learns(&self) -> bool {
        !matches!(self, Decision::Skip { .. })
    }

    /// Order in the max-priority queue: `B − C`; bootstrap files come first (they have no
    /// estimate, and learning them is what produces one).
    pub fn priority(&self) -> f64 {
        match self {
            Decision::Bootstrap => f64::INFINITY,
            Decision::Learn {
                benefit_ns,
                cost_ns,
            }
            | Decision::Skip {
                benefit_ns,
                cost_ns,
            } => benefit_ns - cost_ns,
        }
    }
}

/// `C_model`: the expected training time of a file of `keys` keys (ns).
pub fn cost_ns(train_ns_per_key: f64, keys: u64) -> f64 {
    train_ns_per_key * keys as f64
}

/// `B_model` from lookup counts and per-path times, all indexed `[negative, positive]`.
pub fn benefit_ns(lookups: [f64; 2], baseline_ns: [f64; 2], model_ns: [f64; 2]) -> f64 {
    (0..2)
        .map(|i| (baseline_ns[i] - model_ns[i]) * lookups[i])
        .sum()
}

/// `[N_n, N_p]` for a file of `file_bytes`: the level's averages scaled by
/// `file_bytes / avg_file_bytes`.
pub fn expected_lookups(level: &LevelEstimates, file_bytes: u64) -> [f64; 2] {
    let scale = if level.avg_file_bytes > 0.0 {
        file_bytes as f64 / level.avg_file_bytes
    } else {
        1.0
    };
    [
        level.avg_negative_lookups * scale,
        level.avg_positive_lookups * scale,
    ]
}

/// Per-lookup saving assumed while neither path has been timed on a level (ns): below the
/// 400–1,200 ns the model path saves in our measurements (docs/benchmarks), so a skipped
/// file is re-examined late rather than early.
pub const DEFAULT_SAVING_NS: f64 = 200.0;

/// How many more lookups a skipped file must serve before it is re-examined: `C / s`,
/// rounded up, with `s` the mean expected saving per lookup over the kinds (negative,
/// positive) whose baseline and model times are known — the file's own baseline times first,
/// then its level's — or [`DEFAULT_SAVING_NS`] when none is. `None` when the model is not
/// expected to save anything (every known saving `<= 0`): such a file stays skipped.
pub fn break_even_lookups(
    level: &LevelEstimates,
    file: &Candidate,
    train_ns_per_key: Option<f64>,
) -> Option<u64> {
    let savings: Vec<f64> = (0..2)
        .filter_map(|i| {
            let b = file.baseline_ns[i].or(level.baseline_ns[i])?;
            Some(b - level.model_ns[i]?)
        })
        .collect();
    let saving = if savings.is_empty() {
        DEFAULT_SAVING_NS
    } else {
        savings.iter().sum::<f64>() / savings.len() as f64
    };
    if saving <= 0.0 || saving.is_nan() {
        return None;
    }
    let cost = cost_ns(train_ns_per_key.unwrap_or(0.0), file.keys);
    Some((cost / saving).ceil().max(1.0) as u64)
}

/// Decides whether to learn `file`, given its level's estimates and the measured per-key
/// training cost (`None` before any file was learned).
pub fn decide(level: &LevelEstimates, file: &Candidate, train_ns_per_key: Option<f64>) -> Decision {
    let Some(per_key) = train_ns_per_key else {
        return Decision::Bootstrap;
    };
    if level.finished_files < BOOTSTRAP_FILES {
        return Decision::Bootstrap;
    }
    let lookups = expected_lookups(level, file.file_bytes);
    let mut baseline = [0.0; 2];
    let mut model = [0.0; 2];
    for i in 0..2 {
        if lookups[i] <= 0.0 {
            continue; // no lookups of this kind expected: its times do not matter
        }
        let b = file.baseline_ns[i].or(level.baseline_ns[i]);
        let (Some(b), Some(m)) = (b, level.model_ns[i]) else {
            return Decision::Bootstrap;
        };
        baseline[i] = b;
        model[i] = m;
    }
    let benefit_ns = benefit_ns(lookups, baseline, model);
    let cost_ns = cost_ns(per_key, file.keys);
    if benefit_ns > cost_ns {
        Decision::Learn {
            benefit_ns,
            cost_ns,
        }
    } else {
        Decision::Skip {
            benefit_ns,
            cost_ns,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A level with plenty of history: files of 1 MB serving 1000 negative and 500 positive
    /// lookups; the model saves 100 ns per negative and 400 ns per positive lookup.
    fn level() -> LevelEstimates {
        LevelEstimates {
            finished_files: 20,
            avg_negative_lookups: 1000.0,
            avg_positive_lookups: 500.0,
            avg_file_bytes: 1e6,
            baseline_ns: [Some(300.0), Some(900.0)],
            model_ns: [Some(200.0), Some(500.0)],
        }
    }

    fn file(keys: u64, bytes: u64) -> Candidate {
        Candidate {
            keys,
            file_bytes: bytes,
            baseline_ns: [None, None],
        }
    }

    #[test]
    fn break_even_after_enough_lookups_to_pay_for_training() {
        // Savings 100 (negative) and 400 (positive): mean 250 ns; C = 10_000 × 20 = 200 µs.
        let f = file(10_000, 1_000_000);
        assert_eq!(break_even_lookups(&level(), &f, Some(20.0)), Some(800));
        // The file's own baseline times count first: positive 1400 → savings 100 and 900.
        let own = Candidate {
            baseline_ns: [None, Some(1400.0)],
            ..f
        };
        assert_eq!(break_even_lookups(&level(), &own, Some(20.0)), Some(400));
        // Nothing timed yet: the default saving.
        let blank = LevelEstimates::default();
        let expected = (200_000.0 / DEFAULT_SAVING_NS).ceil() as u64;
        assert_eq!(break_even_lookups(&blank, &f, Some(20.0)), Some(expected));
        // A model that does not save anything: never re-examined.
        let slower = LevelEstimates {
            model_ns: [Some(400.0), Some(1000.0)],
            ..level()
        };
        assert_eq!(break_even_lookups(&slower, &f, Some(20.0)), None);
        // Training cost unknown: one lookup suffices.
        assert_eq!(break_even_lookups(&level(), &f, None), Some(1));
    }

    #[test]
    fn arithmetic() {
        assert_eq!(cost_ns(20.0, 1000), 20_000.0);
        assert_eq!(
            benefit_ns([10.0, 5.0], [300.0, 900.0], [200.0, 500.0]),
            10.0 * 100.0 + 5.0 * 400.0
        );
        assert_eq!(expected_lookups(&level(), 2_000_000), [2000.0, 1000.0]);
        assert_eq!(expected_lookups(&level(), 500_000), [500.0, 250.0]);
    }

    #[test]
    fn learns_when_benefit_exceeds_cost() {
        // B = 1000·100 + 500·400 = 300 µs; C = 10_000 keys × 20 ns = 200 µs.
        let d = decide(&level(), &file(10_000, 1_000_000), Some(20.0));
        assert_eq!(
            d,
            Decision::Learn {
                benefit_ns: 300_000.0,
                cost_ns: 200_000.0
            }
        );
        assert!(d.learns());
        assert_eq!(d.priority(), 100_000.0);
        // The same file when training is twice as expensive: C = 400 µs > B.
        let d = decide(&level(), &file(10_000, 1_000_000), Some(40.0));
        assert!(!d.learns());
        assert!(d.priority() < 0.0);
    }

    #[test]
    fn skips_when_files_die_young_or_serve_few_lookups() {
        // Files of this level die soon after T_wait: they serve a handful of lookups.
        let short_lived = LevelEstimates {
            avg_negative_lookups: 3.0,
            avg_positive_lookups: 1.0,
            ..level()
        };
        let d = decide(&short_lived, &file(10_000, 1_000_000), Some(20.0));
        assert!(matches!(d, Decision::Skip { .. }), "{d:?}");
        // Files that serve no lookups at all: no benefit, whatever the times.
        let unread = LevelEstimates {
            avg_negative_lookups: 0.0,
            avg_positive_lookups: 0.0,
            baseline_ns: [None, None],
            model_ns: [None, None],
            ..level()
        };
        let d = decide(&unread, &file(10, 1_000_000), Some(1.0));
        assert_eq!(
            d,
            Decision::Skip {
                benefit_ns: 0.0,
                cost_ns: 10.0
            }
        );
        // A model no faster than the baseline never pays.
        let useless = LevelEstimates {
            model_ns: [Some(300.0), Some(900.0)],
            ..level()
        };
        assert!(!decide(&useless, &file(1, 1_000_000), Some(1.0)).learns());
    }

    #[test]
    fn bootstraps_in_always_learn_mode() {
        // No training measured yet.
        assert_eq!(
            decide(&level(), &file(1 << 30, 1), None),
            Decision::Bootstrap
        );
        // Too few finished files at the level, even for a file a mature level would skip.
        let young = LevelEstimates {
            finished_files: BOOTSTRAP_FILES - 1,
            avg_negative_lookups: 0.0,
            avg_positive_lookups: 0.0,
            ..level()
        };
        assert_eq!(
            decide(&young, &file(1 << 30, 1), Some(20.0)),
            Decision::Bootstrap
        );
        // Lookups expected but no model time sampled at the level yet.
        let no_model_times = LevelEstimates {
            model_ns: [None, None],
            ..level()
        };
        assert_eq!(
            decide(&no_model_times, &file(10, 1_000_000), Some(20.0)),
            Decision::Bootstrap
        );
        assert!(Decision::Bootstrap.learns());
    }

    #[test]
    fn uses_the_files_own_baseline_times_when_sampled() {
        // This file's lookups are slow on the baseline path (e.g. a cold or wide file).
        let mut f = file(10_000, 1_000_000);
        f.baseline_ns = [Some(300.0), Some(2_500.0)];
        let d = decide(&level(), &f, Some(100.0));
        // B = 1000·100 + 500·2000 = 1.1 ms > C = 1 ms; with the level's times B = 0.3 ms.
        assert!(d.learns(), "{d:?}");
        assert!(!decide(&level(), &file(10_000, 1_000_000), Some(100.0)).learns());
    }

    #[test]
    fn orders_by_benefit_minus_cost() {
        let l = level();
        let mut decisions: Vec<(u64, Decision)> = [
            (1, file(10_000, 1_000_000)), // B − C = 300 − 200 = 100 µs
            (2, file(1_000, 2_000_000)),  // B − C = 600 − 20 = 580 µs
            (3, file(10_000, 500_000)),   // B − C = 150 − 200 < 0
            (4, file(5_000, 1_000_000)),  // B − C = 300 − 100 = 200 µs
        ]
        .into_iter()
        .map(|(id, f)| (id, decide(&l, &f, Some(20.0))))
        .collect();
        decisions.push((5, Decision::Bootstrap));
        let mut heap: std::collections::BinaryHeap<(OrdF64, u64)> = decisions
            .iter()
            .filter(|(_, d)| d.learns())
            .map(|(id, d)| (OrdF64(d.priority()), *id))
            .collect();
        let order: Vec<u64> = std::iter::from_fn(|| heap.pop().map(|(_, id)| id)).collect();
        assert_eq!(order, [5, 2, 4, 1]);
    }

    /// Total order on f64 for the test heap (the learner has its own).
    #[derive(PartialEq)]
    struct OrdF64(f64);
    impl Eq for OrdF64 {}
    impl PartialOrd for OrdF64 {
        fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
            Some(self.cmp(other))
        }
    }
    impl Ord for OrdF64 {
        fn cmp(&self, other: &Self) -> std::cmp::Ordering {
            self.0.total_cmp(&other.0)
        }
    }
}
