//! The model path of a table lookup (Bourbon §4.5): project the key, ask the learned index
//! for a window of positions, and binary-search only the slots of that window — the fixed
//! slot width makes position `i` a computed offset, so no index block is read.
//!
//! Correctness with byte keys (DESIGN.md "Key projection"): every slot before `lb(x)` (the
//! first slot whose projection is `>= x`, x = the key's projection) holds a smaller key, so the
//! answer is at or after the window's start. A run of equal projections can extend past the
//! window; when every slot of the window is smaller than the key, the search gallops forward
//! from the window's end.

use super::{LoadedBlock, Table};
use crate::sst::fence::BlockMeta;
use crate::error::{Error, Result};
use crate::index::chooser::{self, ModelBudget};
use crate::index::{self, projection, Index, IndexConfig};
use crate::key::SeqNo;
use crate::sst::slot::Probe;
use crate::sst::properties::Properties;
use crate::sst::Entry;
use crate::stats::breakdown::{self, Step};
use std::cmp::Ordering;
use std::path::Path;
use std::time::Instant;

/// What [`Table::learn`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LearnReport {
    /// Keys (slots) the model was trained over.
    pub keys: u64,
    /// Nanoseconds spent reading the slots and training (0 when nothing was trained).
    pub train_ns: u64,
    /// Segments of the model.
    pub segments: u64,
    /// Memory of the model (bytes).
    pub model_bytes: usize,
    /// False when the table already had a model (nothing trained, nothing replaced), or
    /// when the model chooser kept the table's own fence path (trained, nothing installed).
    pub installed: bool,
}

/// Windows of at most this many slots are searched linearly (see `lower_bound_between`);
/// the model chooser prices windows by the same rule.
const LINEAR_SCAN_SLOTS: u64 = chooser::LINEAR_SCAN_SLOTS;

/// The most cache lines of a model's window [`Table::prefetch_window`] prefetches.
pub(super) const PREFETCH_WINDOW_LINES: u64 = 16;

/// How a lookup finds a key's position in a table.
#[derive(Clone, Copy)]
pub(crate) enum Locator<'a> {
    /// Fence pointers and one block (the baseline path).
    Fence,
    /// The table's own learned index.
    Model(&'a dyn Index),
    /// A window `[lo, hi)` of the table's positions predicted elsewhere (by a level model,
    /// `learning::level_model`); `lo` is at most the key's lower bound in this table.
    Window {
        /// First position of the window.
        lo: u64,
        /// End of the window (exclusive).
        hi: u64,
    },
}

/// Decodes a model section. `None` (with a warning) when this build cannot use it.
pub(super) fn load_model(
    bytes: &[u8],
    properties: &Properties,
    path: &Path,
    offset: u64,
) -> Option<Box<dyn Index>> {
    match index::decode(bytes, path, offset) {
        Ok(m) if m.len() == properties.entries => Some(m),
        Ok(m) => {
            log::warn!(
                "{}: the model covers {} keys, the file holds {}; using fence pointers",
                path.display(),
                m.len(),
                properties.entries
            );
            None
        }
        Err(e) => {
            log::warn!(
                "{}: unusable model ({e}); using fence pointers",
                path.display()
            );
            None
        }
    }
}

/// The position of `[lo, hi)` (non-empty) that is a multiple of the largest power of two:
/// `hi − 1` with the bits below the highest bit where `lo` and `hi − 1` differ cleared.
fn aligned_midpoint(lo: u64, hi: u64) -> u64 {
    let last = hi - 1;
    match (lo ^ last).checked_ilog2() {
        Some(bit) => last >> bit << bit,
        None => lo,
    }
}

impl Table {
    /// Trains the index `config` describes over the file's own slots (every key projected
    /// with the file's common prefix, in slot order) and installs it: lookups take the model
    /// path from then on. Such a model lives in memory only; the file is not rewritten, so a
    /// restart loses it. Does nothing (`installed: false`) when the table already has a
    /// model. Safe to call from any thread while lookups run.
    ///
    /// # Errors
    /// `InvalidArgument` when the table was opened with models disabled (`never` policy) or
    /// the configuration is invalid; `Corruption` when a block fails its checksum.
    #[cfg(test)]
    pub fn learn(&self, config: &IndexConfig) -> Result<LearnReport> {
        self.learn_with(config, None)
    }

    /// [`Table::learn`], with the model chooser picking the model within `budget` when it
    /// is `Some` (`config` then gives the error bound and tuning).
    ///
    /// # Errors
    /// As [`Table::learn`].
    pub fn learn_with(
        &self,
        config: &IndexConfig,
        budget: Option<ModelBudget>,
    ) -> Result<LearnReport> {
        if !self.models_enabled {
            return Err(Error::InvalidArgument(format!(
                "{}: opened with learned indexes disabled",
                self.path.display()
            )));
        }
        if self.model.get().is_some() {
            return Ok(LearnReport::default());
        }
        let started = Instant::now();
        let prefix_len = self.prefix.len();
        let model = match budget {
            None if matches!(
                config.kind,
                index::IndexKind::StringTree | index::IndexKind::Plr
            ) =>
            {
                let mut keys = index::string_tree::KeyArena::default();
                self.for_each_key(|key| {
                    keys.push(key.get(prefix_len..).unwrap_or_default());
                    Ok(())
                })?;
                index::train_keys(config, &keys.keys())?
            }
            Some(budget) => {
                let mut keys = index::string_tree::KeyArena::default();
                self.for_each_key(|key| {
                    keys.push(key.get(prefix_len..).unwrap_or_default());
                    Ok(())
                })?;
                let block_records = usize::try_from(self.fence.block_records()).unwrap_or(usize::MAX);
                match chooser::choose_keys(&keys.keys(), config, budget, block_records)? {
                    Some(model) => model,
                    // The table's own fence path is as fast: nothing to install.
                    None => {
                        return Ok(LearnReport {
                            keys: self.entries(),
                            train_ns: u64::try_from(started.elapsed().as_nanos())
                                .unwrap_or(u64::MAX),
                            ..LearnReport::default()
                        })
                    }
                }
            }
            None => {
                // Projected in batches that stay in L1, fitted in one call per batch.
                const BATCH: usize = 1024;
                let mut builder = index::builder(config);
                let mut batch = Vec::with_capacity(BATCH);
                self.for_each_key(|key| {
                    batch.push(projection::project(key, prefix_len));
                    if batch.len() == BATCH {
                        builder.add_all(&batch)?;
                        batch.clear();
                    }
                    Ok(())
                })?;
                builder.add_all(&batch)?;
                builder.finish()?
            }
        };
        let train_ns = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        if model.len() != self.entries() {
            return Err(Error::corruption(
                &self.path,
                self.footer.data.offset,
                "the file's blocks do not cover its entries",
            ));
        }
        let report = LearnReport {
            keys: model.len(),
            train_ns,
            segments: model.segments(),
            model_bytes: model.size_bytes(),
            installed: true,
        };
        Ok(LearnReport {
            installed: self.model.set(model).is_ok(),
            ..report
        })
    }

    /// The lower bound of `(user_key, trailer)` found through `model`.
    pub(super) fn model_lower_bound(
        &self,
        model: &dyn Index,
        user_key: &[u8],
        probe: &Probe<'_>,
        trailer: u64,
        held: &mut Option<LoadedBlock>,
    ) -> Result<u64> {
        let n = self.entries();
        let window = breakdown::timed(Step::Search, || {
            model.search_key(user_key, &self.prefix)
        });
        let (lo, hi) = (window.lo.min(n), window.hi.min(n));
        self.prefetch_window(lo, hi);
        breakdown::timed(Step::Locate, || {
            self.locate_from_window(lo, hi, probe, trailer, held)
        })
    }

    /// Prefetches the slots of `[lo, hi)` (at most `PREFETCH_WINDOW_LINES` cache lines) and
    /// the value the middle of the window predicts, so the cache and TLB misses of the
    /// search and of the value load overlap instead of following one another.
    pub(super) fn prefetch_window(&self, lo: u64, hi: u64) {
        let Some(map) = self.mapping() else { return };
        let block = self.fence.block_of(lo);
        let positions = self.fence.block_positions(block);
        let slot = self.layout.slot as u64;
        let prefetch_lines = |from: u64, to: u64| {
            let mut at = from;
            while at < to.min(from + PREFETCH_WINDOW_LINES * 64) {
                if let Some(bytes) = map.get(at as usize..) {
                    crate::prefetch::prefetch_read(bytes);
                }
                at += 64;
            }
        };
        if !self.interleaved && self.layout.params.suffix_bytes == 0 {
            // Every block is its slots alone, at a computed offset.
            let at = self.footer.data.offset + lo * slot;
            prefetch_lines(at, at + (hi - lo) * slot);
        } else {
            // Where the block lies: computed for uniform blocks (its record is then only
            // prefetched, for the value read that follows), else read from its record.
            let (span, meta) = match self.fence.uniform_span(block) {
                Some(span) => {
                    self.fence.prefetch_meta(block);
                    (span, None)
                }
                None => {
                    let Some(meta) = self.fence.meta(block) else {
                        return;
                    };
                    (meta.span(), Some(meta))
                }
            };
            let start = self.footer.data.offset + span.data_start;
            let count = (positions.end - positions.start).max(1);
            // The slot in the window's middle: where the model predicts the key, so where
            // its value is guessed to lie (at the same fraction of the block's chunk).
            let mid = (lo + (hi - lo) / 2).clamp(positions.start, positions.end - 1);
            let raw_guess = |meta: &BlockMeta| (mid - positions.start) * u64::from(meta.raw_len) / count;
            let mut value_cached = false;
            if let Some(meta) = meta.filter(|m| m.block_codec != crate::compression::CODEC_NONE) {
                value_cached = self.prefetch_cached_block(block, &meta, lo, hi, true);
            } else {
                let at = start + (lo - positions.start) * slot;
                prefetch_lines(at, at + (hi - lo) * slot);
                // The window's key overflows tile a stretch of the block's suffix chunk;
                // estimated from the block's mean overflow, they load beside the slots
                // instead of after them (a tie on a head, and the final equality check,
                // read them).
                let slots_end = start + (positions.end - positions.start) * slot;
                let suffixes = (self.footer.data.offset + span.data_end).saturating_sub(slots_end);
                if suffixes > 0 {
                    let from = slots_end + (lo - positions.start) * suffixes / count;
                    let to =
                        slots_end + (hi.min(positions.end) - positions.start) * suffixes / count;
                    prefetch_lines(from.saturating_sub(64), to + 64);
                }
            }
            if self.interleaved {
                // The value the window's middle predicts, in the chunk after the block —
                // or in its cached decompressed copy, when the chunk cache holds it (a
                // hit then reads nothing from the file). A uniform table's chunks are
                // stored uncompressed: never in that cache.
                let chunk = span.values_end - span.values_start;
                let guess =
                    self.values_base + span.values_start + (mid - positions.start) * chunk / count;
                let cached = value_cached
                    || meta.is_some_and(|meta| {
                        meta.block_codec == crate::compression::CODEC_NONE
                            && self.prefetch_cached_value(block, &meta, raw_guess(&meta))
                    });
                if !cached {
                    if let Some(bytes) = map.get(guess as usize..) {
                        crate::prefetch::prefetch_read(bytes);
                    }
                }
            }
        }
        let values = &self.footer.values;
        let n = self.entries();
        // (Format 3 keeps each value chunk beside its block: nothing far away to guess.)
        if values.len > 0 && n > 0 && !self.interleaved {
            let mid = lo + (hi - lo) / 2;
            let guess =
                values.offset + (u128::from(mid) * u128::from(values.len) / u128::from(n)) as u64;
            if let Some(bytes) = map.get(guess as usize..) {
                crate::prefetch::prefetch_read(bytes);
            }
        }
    }

    /// An estimate of the number of entries whose user key is below `user_key`, from the
    /// table's in-memory structures only — the learned index's window for the key, or
    /// without one the fence pointers' block — so no data block is read. Off by at most the
    /// model's window (`2δ + 1` positions) or one block. Parallel scans split ranges into
    /// partitions of equal size with it.
    pub(crate) fn rank_estimate(&self, user_key: &[u8]) -> u64 {
        let n = self.entries();
        let (lo, hi) = match self.model.get() {
            Some(m) => {
                let w = m.search_key(user_key, &self.prefix);
                (w.lo.min(n), w.hi.min(n))
            }
            None => {
                let w = self.fence.search(user_key, u64::MAX);
                (w.start.min(n), w.end.min(n))
            }
        };
        lo + (hi.max(lo) - lo) / 2
    }

    /// [`Table::get`] through a window predicted by a level model (Bourbon's level learning):
    /// the table's own index is skipped. REQUIRES: `lo` is at most the position of the first
    /// entry of `user_key` (or of the first larger entry) in this table.
    pub(crate) fn get_in_window(
        &self,
        user_key: &[u8],
        hash: u64,
        snapshot: SeqNo,
        lo: u64,
        hi: u64,
    ) -> Result<Option<Entry>> {
        self.get_with(Locator::Window { lo, hi }, user_key, hash, snapshot)
    }

    /// Calls `f` with every key of the file in slot order (verifying each block once).
    /// Compressed blocks are decompressed as a scan decompresses them: without filling the
    /// chunk cache with the whole table.
    pub(crate) fn for_each_key(&self, mut f: impl FnMut(&[u8]) -> Result<()>) -> Result<()> {
        let mut key = self.stripped.clone();
        for block_no in 0..self.fence.block_count() {
            let block = if self.compressed_blocks {
                crate::cache::scanning(|| self.load_block(block_no, false))?
            } else {
                self.load_block(block_no, false)?
            };
            for pos in self.fence.block_positions(block_no) {
                let slot = self.slot(&block, pos)?;
                key.truncate(self.stripped.len());
                key.extend_from_slice(self.fence.block_prefix(block_no));
                key.extend_from_slice(slot.raw.head);
                key.extend_from_slice(slot.overflow);
                f(&key)?;
            }
        }
        Ok(())
    }

    /// The lower bound, given a window `[lo, hi)` that holds the start of the key's run. In a
    /// table with compressed blocks, `held` gets the last block read.
    pub(super) fn locate_from_window(
        &self,
        lo: u64,
        hi: u64,
        key: &Probe<'_>,
        trailer: u64,
        held: &mut Option<LoadedBlock>,
    ) -> Result<u64> {
        let mut cache = None;
        let pos = self.locate_in_window(&mut cache, lo, hi, key, trailer)?;
        if self.compressed_blocks {
            *held = cache.map(|(block, _)| block);
        }
        Ok(pos)
    }

    /// [`Table::locate_from_window`], keeping the last block read in `cache`.
    fn locate_in_window<'k>(
        &self,
        cache: &mut Option<(LoadedBlock, Probe<'k>)>,
        lo: u64,
        hi: u64,
        key: &Probe<'k>,
        trailer: u64,
    ) -> Result<u64> {
        let n = self.entries();
        let pos = self.lower_bound_between(cache, lo, hi, key, trailer)?;
        if pos < hi || hi == n {
            return Ok(pos);
        }
        // Every slot of the window is smaller: gallop through the rest of the run.
        let (mut lo, mut step) = (hi, 1u64);
        loop {
            let probe = lo.saturating_add(step - 1);
            if probe >= n {
                return self.lower_bound_between(cache, lo, n, key, trailer);
            }
            if self.cmp_at(cache, probe, probe..probe + 1, key, trailer)? == Ordering::Less {
                lo = probe + 1;
                step = step.saturating_mul(2);
            } else {
                return self.lower_bound_between(cache, lo, probe + 1, key, trailer);
            }
        }
    }

    /// First position in `[lo, hi)` whose entry is `>= (user_key, trailer)`, or `hi`. The
    /// range may span blocks; `cache` keeps the last block read and the key matched against
    /// its block prefix.
    fn lower_bound_between<'k>(
        &self,
        cache: &mut Option<(LoadedBlock, Probe<'k>)>,
        mut lo: u64,
        mut hi: u64,
        key: &Probe<'k>,
        trailer: u64,
    ) -> Result<u64> {
        // Narrow windows are scanned slot by slot outward from their middle — the model's
        // prediction — so a lookup touches about |error| + 1 contiguous slots (one or two
        // cache lines) instead of stalling on each probe of a binary search.
        if hi - lo <= LINEAR_SCAN_SLOTS {
            if lo == hi {
                return Ok(lo);
            }
            if let Some(pos) = self.lower_bound_by_heads(cache, lo, hi, key, trailer)? {
                return Ok(pos);
            }
            return scan_outward(lo, hi, |p| self.cmp_at(cache, p, lo..hi, key, trailer));
        }
        // Wider windows: a bisection that always probes the most aligned position of the
        // range (the multiple of the largest power of two in it). Windows of different
        // lookups overlap but rarely share a midpoint; aligned probes are shared, so the top
        // of every search stays in cache — as the fixed probes of fence-pointer windows do.
        let window = lo..hi;
        while lo < hi {
            let mid = aligned_midpoint(lo, hi);
            if self.cmp_at(cache, mid, window.clone(), key, trailer)? == Ordering::Less {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        Ok(lo)
    }

    /// [`Table::lower_bound_between`] for a narrow window inside one block, scanned outward
    /// from its middle as there, but each slot first compared by its head bytes (up to 16,
    /// as two big-endian words against the key's, the second only on a tie): only a slot
    /// that ties on them is decoded and compared in full. `None` when this does not apply:
    /// the window spans blocks, or the key lies outside its block's prefix (`Probe::past`).
    ///
    /// Sound because the words are monotone in the keys: zero-padded, a head below the
    /// key's first bytes means the slot's key is below the key (the first byte where the
    /// padded forms differ is a real byte of both, or the shorter is a prefix of the
    /// other), above means above.
    fn lower_bound_by_heads<'k>(
        &self,
        cache: &mut Option<(LoadedBlock, Probe<'k>)>,
        lo: u64,
        hi: u64,
        key: &Probe<'k>,
        trailer: u64,
    ) -> Result<Option<u64>> {
        let block_no = self.fence.block_of(lo);
        let width = self.layout.head_bytes().min(8);
        if self.fence.block_of(hi - 1) != block_no || width == 0 {
            return Ok(None);
        }
        let size = self.layout.slot;
        let held = |c: &Option<(LoadedBlock, Probe<'k>)>| {
            matches!(c, Some((b, _)) if b.block == block_no && b.holds(lo, size) && b.holds(hi - 1, size))
        };
        if !held(cache) {
            *cache = Some((
                self.load_slots(block_no, lo, hi)?,
                key.past(self.fence.block_prefix(block_no)),
            ));
        }
        let Some((block, probe @ Probe::Rest(rest))) = cache.as_ref() else {
            return Ok(None);
        };
        // The head's first 8 bytes, then (a head wider than 8) its next up to 8.
        let head = self.layout.head_bytes();
        let mask = |width: usize| match width {
            0 => 0,
            w => u64::MAX << (8 * (8 - w.min(8))),
        };
        let (mask0, mask1) = (mask(width), mask(head - width));
        let probe0 = head_word(rest, mask0);
        let probe1 = head_word(rest.get(8..).unwrap_or_default(), mask1);
        let bytes = self.block_bytes(block);
        let order = |pos: u64| -> Result<Ordering> {
            let at = (pos - block.first_pos) as usize * size;
            let word = head_word(bytes.get(at..).unwrap_or_default(), mask0);
            if word != probe0 {
                return Ok(word.cmp(&probe0));
            }
            if mask1 != 0 {
                let word = head_word(bytes.get(at + 8..).unwrap_or_default(), mask1);
                if word != probe1 {
                    return Ok(word.cmp(&probe1));
                }
            }
            let slot = self.slot(block, pos)?;
            Ok(probe.order(head, &slot.raw, slot.overflow, trailer))
        };
        scan_outward(lo, hi, order).map(Some)
    }

    /// Compares the entry at `pos` (inside `window`, the positions being searched) with
    /// `(user_key, trailer)`, loading (and verifying, the first time) its block unless
    /// `cache` holds the slot; through the page cache only the window's slots in that block
    /// are read.
    fn cmp_at<'k>(
        &self,
        cache: &mut Option<(LoadedBlock, Probe<'k>)>,
        pos: u64,
        window: std::ops::Range<u64>,
        key: &Probe<'k>,
        trailer: u64,
    ) -> Result<Ordering> {
        let block_no = self.fence.block_of(pos);
        // The cached block is used where it lies (a block is not small: moving it in and out
        // of the cache on every probe showed in profiles).
        let held = |c: &Option<(LoadedBlock, Probe<'k>)>| {
            matches!(c, Some((b, _)) if b.block == block_no && b.holds(pos, self.layout.slot))
        };
        if !held(cache) {
            *cache = Some((
                self.load_slots(block_no, window.start.min(pos), window.end.max(pos + 1))?,
                key.past(self.fence.block_prefix(block_no)),
            ));
        }
        let Some((block, key)) = cache.as_ref() else {
            return Err(Error::corruption(&self.path, 0, "block cache lost its block"));
        };
        let slot = self.slot(block, pos)?;
        Ok(key.order(self.layout.head_bytes(), &slot.raw, slot.overflow, trailer))
    }
}

/// The first position of `[lo, hi)` (non-empty, sorted) that `order` does not put below
/// the key, or `hi`, found by scanning outward from the middle — the model's prediction —
/// so a lookup compares about |error| + 1 contiguous slots.
#[inline(always)]
fn scan_outward(lo: u64, hi: u64, mut order: impl FnMut(u64) -> Result<Ordering>) -> Result<u64> {
    let mid = lo + (hi - lo) / 2;
    let mut p = mid;
    if order(mid)? == Ordering::Less {
        p += 1;
        while p < hi && order(p)? == Ordering::Less {
            p += 1;
        }
    } else {
        while p > lo && order(p - 1)? != Ordering::Less {
            p -= 1;
        }
    }
    Ok(p)
}

/// The first bytes of `bytes` that `mask` keeps (the top 1–8 bytes of a word), big-endian,
/// zero-padded when `bytes` is shorter than 8.
#[inline(always)]
fn head_word(bytes: &[u8], mask: u64) -> u64 {
    match bytes.first_chunk::<8>() {
        Some(word) => u64::from_be_bytes(*word) & mask,
        None => {
            let mut word = [0u8; 8];
            word[..bytes.len()].copy_from_slice(bytes);
            u64::from_be_bytes(word) & mask
        }
    }
}

#[cfg(test)]
mod tests {
    use super::aligned_midpoint;

    /// Aligned bisection finds every lower bound and probes at most `log2(len) + 2` times
    /// (plain bisection: `⌈log2(len + 1)⌉`).
    #[test]
    fn aligned_bisection_is_correct_and_short() {
        let mut worst = 0;
        for lo in 0..300u64 {
            for len in 1..300u64 {
                let hi = lo + len;
                for target in lo..=hi {
                    let (mut a, mut b, mut probes) = (lo, hi, 0);
                    while a < b {
                        let mid = aligned_midpoint(a, b);
                        assert!(a <= mid && mid < b, "[{a}, {b}) gave {mid}");
                        probes += 1;
                        if mid < target {
                            a = mid + 1;
                        } else {
                            b = mid;
                        }
                    }
                    assert_eq!(a, target);
                    let bound = u64::from(len.ilog2()) + 2;
                    assert!(probes <= bound, "[{lo}, {hi}) → {target}: {probes} probes");
                    worst = worst.max(probes);
                }
            }
        }
        assert!(worst >= 9, "{worst}");
    }
}
