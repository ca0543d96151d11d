//! Level models (Bourbon §4.2 "level learning"): one learned index over all the keys of a
//! sorted level (>= 1), mapping a key to a window of positions in the concatenation of the
//! level's files. A lookup finds the key's file by its key range, then searches only the part
//! of the window inside that file — the files' own indexes are skipped.
//!
//! A level model is only valid for the exact list of files it was trained on: it records the
//! number of the version that last changed the level (`Version::level_changed`), and any
//! later change to the level (a flush never touches it; a compaction does) makes lookups
//! ignore it and fall back to the file models until it is retrained. It suits read-mostly
//! workloads (`Options::level_models`). The models trained so far are a [`LevelModels`]
//! value, which its owner (the database's background part, which trains them) swaps whole.
//!
//! A level model is refused (trained, kept as a marker so it is not retrained, but never used)
//! when fewer than [`MIN_DISTINCT_SHARE`] of the level's keys have distinct projections: the
//! model is an integer model over 8 key bytes past the level's common prefix, so string keys
//! that agree on those bytes (file paths under a few roots, for instance) collapse onto a few
//! projections, and each lookup gallops through a long run of equal ones, where the files'
//! own models (under their own, longer prefixes, or the string tree) do not
//! (`docs/benchmarks/bourbon-table1.md`: 1.6–2.1× slower than file models on file paths).
//!
//! Correctness: keys are projected with the level's common prefix, which is monotone over the
//! level's sorted keys, so the window's start is at most the global position of the key's
//! lower bound (index window contract). Inside the key's file that position is at or after
//! the clamped window start, and the table's locate step gallops past the window's end over a
//! long run of equal projections.

use super::table_file::TableFile;
use crate::error::Result;
use crate::index::{self, projection, Index, IndexConfig};
use std::sync::Arc;
use std::time::Instant;

/// A level model is used only when at least this share of the level's keys have distinct
/// projections (see the module documentation).
pub const MIN_DISTINCT_SHARE: f64 = 0.5;

/// A learned index over one whole level.
#[derive(Debug)]
pub struct LevelModel {
    prefix: Vec<u8>,
    model: Box<dyn Index>,
    /// `starts[i]` = global position of the first entry of file `i`; one more at the end.
    starts: Vec<u64>,
    /// The level it was trained on, and the `Version::level_changed` of that level then.
    level: usize,
    level_changed: u64,
    train_ns: u64,
    /// Distinct projections among the level's keys.
    distinct_projections: u64,
}

impl LevelModel {
    /// Trains over `files`, the files of `level` (>= 1, a sorted level) in a version whose
    /// `Version::level_changed` of that level is `level_changed`, reading every key once.
    ///
    /// # Errors
    /// `Corruption` when a block fails its checksum; `InvalidArgument` for a bad config.
    pub fn train(
        level: usize,
        files: &[Arc<TableFile>],
        level_changed: u64,
        config: &IndexConfig,
    ) -> Result<LevelModel> {
        let started = Instant::now();
        let prefix = match (files.first(), files.last()) {
            (Some(first), Some(last)) => {
                let (a, b) = (first.smallest_key(), last.largest_key());
                a[..projection::common_prefix_len(a, b)].to_vec()
            }
            _ => Vec::new(),
        };
        // A level model is an integer model over the level's projections: under the string
        // tree, its node kind.
        let config = match config.kind {
            index::IndexKind::StringTree => index::string_node_config(config),
            _ => *config,
        };
        let mut builder = index::builder(&config);
        let mut starts = Vec::with_capacity(files.len() + 1);
        let mut position = 0u64;
        let mut distinct_projections = 0u64;
        let mut last = None;
        for f in files {
            starts.push(position);
            f.table.for_each_key(|key| {
                let p = projection::project(key, prefix.len());
                if last != Some(p) {
                    distinct_projections += 1;
                    last = Some(p);
                }
                builder.add(p)
            })?;
            position += f.table.entries();
        }
        starts.push(position);
        Ok(LevelModel {
            prefix,
            model: builder.finish()?,
            starts,
            level,
            level_changed,
            train_ns: u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX),
            distinct_projections,
        })
    }

    /// True when it was trained on exactly the files a version with these
    /// `Version::level_changed` holds at its level.
    pub fn matches(&self, level_changed: &[u64]) -> bool {
        level_changed.get(self.level) == Some(&self.level_changed)
    }

    /// Whether lookups may use it: at least [`MIN_DISTINCT_SHARE`] of the level's keys have
    /// distinct projections.
    pub fn usable(&self) -> bool {
        let entries = self.starts.last().copied().unwrap_or(0);
        self.distinct_projections as f64 >= MIN_DISTINCT_SHARE * entries as f64
    }

    /// The window of positions of file `file_index` (local to that file) that holds
    /// `user_key`'s lower bound there, when the key belongs to that file's key range.
    pub fn window_in_file(&self, file_index: usize, user_key: &[u8]) -> (u64, u64) {
        let (Some(&start), Some(&end)) =
            (self.starts.get(file_index), self.starts.get(file_index + 1))
        else {
            return (0, 0);
        };
        let w = self
            .model
            .search(projection::project_bounded(user_key, &self.prefix));
        let lo = w.lo.clamp(start, end) - start;
        let hi = w.hi.clamp(start, end) - start;
        (lo, hi.max(lo))
    }

    /// Bytes in memory.
    pub fn size_bytes(&self) -> usize {
        self.model.size_bytes()
            + self.prefix.capacity()
            + self.starts.capacity() * 8
    }

    /// Segments of the model.
    pub fn segments(&self) -> u64 {
        self.model.segments()
    }

    /// Nanoseconds its training took.
    pub fn train_ns(&self) -> u64 {
        self.train_ns
    }
}

/// The level models trained so far, at most one per level. A value: its owner replaces it
/// whole ([`LevelModels::with`]), and a reader holds the one it took.
#[derive(Debug, Clone, Default)]
pub struct LevelModels {
    by_level: Vec<Option<Arc<LevelModel>>>,
}

impl LevelModels {
    /// The model of `level`, if it was trained on the files a version with these
    /// `Version::level_changed` holds there (see `Version::level_model`) and is usable.
    pub fn get(&self, level: usize, level_changed: &[u64]) -> Option<&LevelModel> {
        self.trained(level, level_changed).filter(|m| m.usable())
    }

    /// The model of `level` trained on the files a version with these
    /// `Version::level_changed` holds there, usable or refused.
    pub fn trained(&self, level: usize, level_changed: &[u64]) -> Option<&LevelModel> {
        self.by_level
            .get(level)?
            .as_deref()
            .filter(|m| m.matches(level_changed))
    }

    /// These models with `model` as its level's, less those not valid for a version with
    /// these `Version::level_changed` (that of the version `model` was trained on).
    pub fn with(&self, level_changed: &[u64], model: LevelModel) -> LevelModels {
        let level = model.level;
        let mut by_level: Vec<Option<Arc<LevelModel>>> = self
            .by_level
            .iter()
            .map(|m| m.clone().filter(|m| m.matches(level_changed)))
            .collect();
        if by_level.len() <= level {
            by_level.resize(level + 1, None);
        }
        if let Some(slot) = by_level.get_mut(level) {
            *slot = Some(Arc::new(model));
        }
        LevelModels { by_level }
    }
}
