//! FLSM: PebblesDB's fragmented LSM (`Options::compaction = Flsm`), and this module is its
//! entry point. FLSM is a compaction style, so most of it is here; what it needs from the
//! lower layers and what it changes above sits with its neighbours there (the layers of
//! docs/ARCHITECTURE.md allow nothing else). Every file that knows about FLSM:
//!
//! | file | what FLSM is there |
//! |---|---|
//! | `compaction/flsm/mod.rs` | this: the picker ([`Flsm`], below) |
//! | `compaction/flsm/guards.rs` | which keys are guards: the guard bits of each level, floored at one target file |
//! | `compaction/flsm/layout.rs` | the executor's [`OutputLayout`]: outputs cut at guards, guards committed and removed, tombstones sibling fragments need |
//! | `compaction/flsm/seeks.rs` | seek-based compaction's statistics (where scans' seeks land, per version) |
//! | `options/flsm.rs` | `FlsmOptions`: guard density, crowding limits, the seek threshold, parallel seeks |
//! | `version/style.rs` | `CompactionStyle`, recorded in the manifest (tag 10) |
//! | `version/edit.rs`, `version/manifest.rs`, `version/set.rs` | committed guards in the manifest (tags 11 and 12) and in each version |
//! | `version/guards.rs` | where a key or a file sits among a level's guards (slots) |
//! | `version/runs.rs` | a guarded level as sorted runs, which point reads, scans and splits search |
//! | `version/version.rs` | `Version::guards`, `slots` (each slot's files and depth), `whole_slots`, the invariants |
//! | `iter/scan.rs`, `iter/merge.rs` | parallel seeks of the deepest level's runs; each scan's seek reported to the read context's `SeekObserver` |
//! | `db/open.rs` | the read context: parallel seeks and the seek observer, under FLSM only |
//! | `db/flush.rs` | a flush straight into L1's guards when L0 is empty ([`Flsm::flush_into_l1`]) |
//! | `db/background.rs` | no flush thread under FLSM (a flush into L1 is a compaction) |
//! | `db/gc.rs` | value-log GC rewrites whole guards |
//! | `db/stats.rs` | per-level guard statistics |
//!
//! The design and its measurements: docs/ARCHITECTURE.md ("FLSM") and
//! docs/benchmarks/flsm.md.
//!
//! **The picker.** The executor does the merging and the guard work (cutting outputs at the
//! output level's guards, committing new guards, removing empty ones).
//!
//! What is compacted, most urgent first:
//! - L0 when it holds `l0_compaction_trigger` files: all of L0, partitioned by L1's guards and
//!   appended there;
//! - a level `1 ≤ l < last` whose bytes exceed `max_bytes_for_level(l) × level_size_runs`, or that holds a guard
//!   whose files span `max_sstables_per_guard` sorted runs, or whose bytes reach `aggressive_ratio` of level
//!   `l + 1`'s (aggressive compaction): one guard — the fullest one for the file limit, else the
//!   next non-empty guard after the previous pick — merged and appended to level `l + 1`'s
//!   guards without touching the files there;
//! - when nothing is due, a guard into which `seek_compaction_threshold` consecutive seeks of
//!   its level landed (`seeks.rs`).
//!
//! Into the last level, a guard is merged with the last-level files it overlaps (the last level
//! is rewritten, it has nothing to append to). From the second-to-last level, when that merge
//! would rewrite `rewrite_in_place_factor` times the guard's own bytes and the guard has two or
//! more overlapping files, the guard is instead merged in place (the thesis's 25× rule). A seek-triggered
//! guard of the last level is merged in place.

pub mod guards;
mod layout;
mod seeks;

use crate::compaction::leveled::max_bytes_for_level;
use crate::compaction::{Choice, Compaction, OutputLayout, Strategy};
use layout::FlsmLayout;
use crate::iter::SeekObserver;
use crate::options::Options;
use crate::version::{TableFile, Version};
use crate::work_signal::WorkSignal;
use parking_lot::Mutex;
use seeks::SeekStats;
use std::sync::Arc;

/// The FLSM strategy. Remembers, per level, the guard key after which the next size-driven
/// pick starts, and where scans' seeks landed. Lock order: `cursors` and the statistics'
/// lock are leaves.
pub struct Flsm {
    cursors: Mutex<Vec<Option<Vec<u8>>>>,
    seeks: Arc<SeekStats>,
}

/// Why a level is due.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Reason {
    /// Too many bytes (or the aggressive ratio): pick guards round-robin.
    Size,
    /// A guard holds too many files: pick the fullest.
    Crowded,
}

fn bytes(files: &[Arc<TableFile>]) -> u64 {
    files.iter().map(|f| f.meta.file_size).sum()
}

impl Flsm {
    /// An FLSM strategy with no compaction history, which compacts a guard after
    /// `seek_compaction_threshold` consecutive seeks landed in it (0: never) and wakes `wake`
    /// when one is due.
    pub(crate) fn new(seek_compaction_threshold: u32, wake: Arc<WorkSignal>) -> Self {
        Flsm {
            cursors: Mutex::default(),
            seeks: Arc::new(SeekStats::new(seek_compaction_threshold, wake)),
        }
    }

    /// The most urgent level and why, with its score (>= 1 means due).
    fn most_urgent(version: &Version, opts: &Options) -> Option<(usize, Reason, f64)> {
        let last = version.levels.len() - 1;
        let mut best: Option<(usize, Reason, f64)> = None;
        let mut consider = |level, reason, score: f64| {
            if score >= 1.0 && best.is_none_or(|(_, _, s)| score > s) {
                best = Some((level, reason, score));
            }
        };
        consider(
            0,
            Reason::Size,
            version.levels[0].len() as f64 / opts.l0_compaction_trigger as f64,
        );
        for level in 1..last {
            for (reason, score) in Self::level_scores(version, opts, level) {
                consider(level, reason, score);
            }
        }
        best
    }

    /// The scores of level `1 ≤ level < last` (>= 1 means due): by size, aggressive ratio
    /// and crowded guards.
    fn level_scores(version: &Version, opts: &Options, level: usize) -> [(Reason, f64); 3] {
        let size = version.level_bytes(level);
        let by_size = size as f64
            / (max_bytes_for_level(opts, level) as f64 * opts.flsm.level_size_runs as f64);
        let next = version.level_bytes(level + 1);
        let aggressive = if next > 0 && size as f64 >= opts.flsm.aggressive_ratio * next as f64 {
            1.0
        } else {
            0.0
        };
        let fullest = fullest_slot(version, level).map_or(0, |(_, n)| n);
        [
            (Reason::Size, by_size),
            (Reason::Size, aggressive),
            (
                Reason::Crowded,
                fullest as f64 / opts.flsm.max_sstables_per_guard as f64,
            ),
        ]
    }

    /// True when a flush may write its memtable straight into L1's guards, skipping L0
    /// (what PebblesDB's estimate in `docs/benchmarks/flsm.md` assumed): L0 is empty, so
    /// the memtable is newer than everything in the files; L1 is not the last level (which
    /// is rewritten, not appended to); and no compaction of L1 is due. A due L1 sends
    /// flushes to L0, whose triggers then slow writers until compaction catches up.
    pub fn flush_into_l1(version: &Version, opts: &Options) -> bool {
        let last = version.levels.len() - 1;
        version.style == crate::version::CompactionStyle::Flsm
            && version.levels[0].is_empty()
            && last > 1
            && Self::level_scores(version, opts, 1)
                .iter()
                .all(|(_, score)| *score < 1.0)
    }

    /// The slot of `level` a size-driven pick takes: the first non-empty slot after the
    /// level's cursor, wrapping around.
    fn next_slot(&self, version: &Version, level: usize) -> Option<usize> {
        let files = &version.levels[level];
        let mut cursors = self.cursors.lock();
        if cursors.len() < version.levels.len() {
            cursors.resize(version.levels.len(), None);
        }
        let after = cursors[level]
            .as_deref()
            .map_or(0, |k| files.partition_point(|f| f.smallest_key() <= k));
        let f = files.get(after).or_else(|| files.first())?;
        let slot = version.slot(level, f.smallest_key());
        // The cursor moves past the whole slot: its last file's smallest key.
        let last_in_slot = files
            .iter()
            .filter(|g| version.slot(level, g.smallest_key()) == slot)
            .map(|g| g.smallest_key())
            .max()
            .unwrap_or(f.smallest_key());
        cursors[level] = Some(last_in_slot.to_vec());
        Some(slot)
    }
}

/// The slot of `level` whose files span the most sorted runs, and that depth.
fn fullest_slot(version: &Version, level: usize) -> Option<(usize, usize)> {
    let mut best: Option<(usize, usize)> = None;
    for (slot, info) in version.slots.get(level)?.iter().enumerate() {
        let depth = info.depth as usize;
        if depth > 0 && best.is_none_or(|(_, n)| depth > n) {
            best = Some((slot, depth));
        }
    }
    best
}

/// The number of sorted runs slot `slot` of `level` spans.
fn depth(version: &Version, level: usize, slot: usize) -> usize {
    version
        .slots
        .get(level)
        .and_then(|s| s.get(slot))
        .map_or(0, |s| s.depth as usize)
}

/// The compaction of slot `slot` of `level` (>= 1): appended to `level + 1`, merged with
/// the last level's files, or merged in place (see the module doc).
fn guard_compaction(version: &Version, opts: &Options, level: usize, slot: usize) -> Choice {
    let last = version.levels.len() - 1;
    let inputs = version.slot_files(level, slot);
    if inputs.is_empty() {
        return Choice::None;
    }
    let in_place = |inputs: Vec<Arc<TableFile>>| {
        Choice::Merge(Compaction {
            level,
            inputs,
            next_inputs: Vec::new(),
            output_level: level,
            allow_trivial_move: false,
            memtable: None,
        })
    };
    let overlapping = depth(version, level, slot) >= 2;
    if level == last {
        return if overlapping {
            in_place(inputs)
        } else {
            Choice::None
        };
    }
    let next_inputs = if level + 1 == last {
        let lo = inputs.iter().map(|f| f.smallest_key()).min();
        let hi = inputs.iter().map(|f| f.largest_key()).max();
        version.whole_slots(last, version.overlapping(last, lo, hi))
    } else {
        Vec::new()
    };
    if level + 1 == last
        && overlapping
        && bytes(&next_inputs)
            >= opts
                .flsm
                .rewrite_in_place_factor
                .saturating_mul(bytes(&inputs))
    {
        return in_place(inputs);
    }
    Choice::Merge(Compaction {
        level,
        inputs,
        next_inputs,
        output_level: level + 1,
        allow_trivial_move: false,
        memtable: None,
    })
}

impl std::fmt::Debug for Flsm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Flsm").finish_non_exhaustive()
    }
}

impl Strategy for Flsm {
    fn seek_observer(&self) -> Option<Arc<dyn SeekObserver>> {
        self.seeks
            .counts_seeks()
            .then(|| self.seeks.clone() as Arc<dyn SeekObserver>)
    }

    fn layout<'v>(
        &self,
        c: &'v Compaction,
        version: &'v Version,
        opts: &Options,
    ) -> Box<dyn OutputLayout + 'v> {
        Box::new(FlsmLayout::new(c, version, opts))
    }

    fn choose(&self, version: &Version, opts: &Options) -> Choice {
        let last = version.levels.len() - 1;
        match Self::most_urgent(version, opts) {
            Some((0, _, _)) => {
                let inputs = version.levels[0].clone();
                let next_inputs = if last == 1 {
                    let lo = inputs.iter().map(|f| f.smallest_key()).min();
                    let hi = inputs.iter().map(|f| f.largest_key()).max();
                    version.whole_slots(1, version.overlapping(1, lo, hi))
                } else {
                    Vec::new()
                };
                Choice::Merge(Compaction {
                    level: 0,
                    inputs,
                    next_inputs,
                    output_level: 1,
                    allow_trivial_move: false,
                    memtable: None,
                })
            }
            Some((level, Reason::Crowded, _)) => match fullest_slot(version, level) {
                Some((slot, _)) => guard_compaction(version, opts, level, slot),
                None => Choice::None,
            },
            Some((level, Reason::Size, _)) => match self.next_slot(version, level) {
                Some(slot) => guard_compaction(version, opts, level, slot),
                None => Choice::None,
            },
            None => match self.seeks.due(version) {
                Some((level, slot)) => guard_compaction(version, opts, level, slot),
                None => Choice::None,
            },
        }
    }
}
