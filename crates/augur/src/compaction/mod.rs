//! Compaction: choosing what to merge (a [`Strategy`]) and merging it (the executor).
//!
//! A strategy is pure: it looks at a [`Version`] and the options and returns a [`Choice`]
//! (with what it remembers between picks: FLSM's round-robin cursors and seek statistics,
//! state the database's background part owns through the strategy).
//! The executor (`executor.rs`) runs every choice the same way; under FLSM it also cuts
//! outputs at the output level's guards and commits and removes guards (`flsm/`). No
//! compaction may raise the live table count past what the kernel's mapping limit allows
//! (`table_limit.rs`).

mod executor;
mod flsm;
mod leveled;
mod table_limit;

pub(crate) use executor::{execute, CompactionContext, CompactionOutcome, ValueRelocation};
pub use executor::{LeveledLayout, OutputLayout};
pub use flsm::Flsm;
pub use leveled::{l0_compaction, l0_output_level, Leveled};
pub(crate) use table_limit::TableLimit;

use crate::iter::SeekObserver;
use crate::memtable::Memtable;
use crate::sst::LayoutHints;
use crate::options::Options;
use crate::version::CompactionStyle;
use crate::version::{TableFile, Version};
use crate::work_signal::WorkSignal;
use std::sync::Arc;

/// A unit of compaction work.
#[derive(Debug, Clone)]
pub struct Compaction {
    /// Level of the first input set.
    pub level: usize,
    /// Files of `level` to compact.
    pub inputs: Vec<Arc<TableFile>>,
    /// Overlapping files of `level + 1`.
    pub next_inputs: Vec<Arc<TableFile>>,
    /// Level the outputs go to.
    pub output_level: usize,
    /// Whether a lone input may move down without being rewritten. `compact_range` forbids
    /// it so that tombstones and old versions are really dropped.
    pub allow_trivial_move: bool,
    /// An immutable memtable merged with the inputs: FLSM's flush into L1's guards
    /// ([`Flsm::flush_into_l1`]) is a compaction of the memtable alone (no file inputs).
    pub memtable: Option<MemtableInput>,
}

/// An immutable memtable a compaction merges, with the layout hints of its entries (the
/// outputs' slot layout is fixed from them: nothing in the files bounds them).
#[derive(Debug, Clone)]
pub struct MemtableInput {
    /// The memtable.
    pub mem: Arc<Memtable>,
    /// Bounds of its entries ([`LayoutHints`]).
    pub hints: LayoutHints,
}

impl Compaction {
    /// True when the single input file can move to the next level without rewriting.
    pub fn is_trivial_move(&self) -> bool {
        self.allow_trivial_move
            && self.inputs.len() == 1
            && self.next_inputs.is_empty()
            && self.memtable.is_none()
    }
}

/// What a strategy decided.
#[derive(Debug, Clone)]
pub enum Choice {
    /// Nothing needs compaction.
    None,
    /// Merge (or trivially move) these files.
    Merge(Compaction),
}

/// The strategy of a compaction style. Under FLSM a guard becomes due after
/// `FlsmOptions::seek_compaction_threshold` consecutive seeks landed in it, and `wake` is then
/// asked for work.
pub(crate) fn strategy_for(
    style: CompactionStyle,
    opts: &Options,
    wake: Arc<WorkSignal>,
) -> Box<dyn Strategy> {
    match style {
        CompactionStyle::Leveled => Box::new(Leveled::new()),
        CompactionStyle::Flsm => Box::new(Flsm::new(opts.flsm.seek_compaction_threshold, wake)),
    }
}

/// A compaction policy.
pub trait Strategy: Send + Sync {
    /// Picks the most urgent compaction of `version`.
    fn choose(&self, version: &Version, opts: &Options) -> Choice;

    /// What scans tell where they seek, when the strategy counts seeks (FLSM's seek-based
    /// compaction); handed to scans through their read context.
    fn seek_observer(&self) -> Option<Arc<dyn SeekObserver>> {
        None
    }

    /// True when one compaction's merge may be split by key range into sub-compactions
    /// run on parallel threads: its layout must decide cuts from the keys alone and
    /// finish with no state gathered during the merge.
    fn splits_by_key_range(&self) -> bool {
        false
    }

    /// How the outputs of `c` are laid out at its output level (see [`OutputLayout`]).
    fn layout<'v>(
        &self,
        c: &'v Compaction,
        version: &'v Version,
        opts: &Options,
    ) -> Box<dyn OutputLayout + 'v>;
}
