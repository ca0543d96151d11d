//! FLSM's layout of a compaction's outputs (PebblesDB's fragmented LSM; see `guards.rs`
//! and `mod.rs`), the [`OutputLayout`] the FLSM strategy gives the executor:
//! - outputs are also cut at every guard of the output level, so each lies in one slot; a
//!   slot holding more than a target file gets several files, cut at the target size;
//! - each distinct key of the merge that is a guard candidate (its hash, against the guard
//!   bits of every level: `top_level_bits` and `bit_decrement` floored at one target file of
//!   the inputs' measured bytes per entry, `GuardBits`) is committed as a guard at every
//!   level from its candidate level down to the last, except at levels above a file outside
//!   the compaction that straddles it (those wait for a later compaction that sees the key
//!   again — PebblesDB's uncommitted guards, kept implicit);
//! - a tombstone is kept while any file outside the compaction at the output level or below
//!   may hold the key (sibling fragments of the output guard included);
//! - when entries were dropped, guards whose last-level slot no longer intersects any file
//!   are removed from every level (empty guards).

use super::guards::{GuardBits, ASSUMED_ENTRY_BYTES};
use crate::compaction::{Compaction, OutputLayout};
use crate::options::Options;
use crate::version::guards::{slot_of, slot_range};
use crate::version::{FileMeta, Version, VersionEdit};
use std::collections::HashSet;

/// The FLSM layout of one compaction.
pub(super) struct FlsmLayout<'v> {
    version: &'v Version,
    /// Ids of the compaction's input files.
    inputs: HashSet<u64>,
    level: usize,
    output_level: usize,
    /// Whether the compaction rewrites no file of the output level.
    no_next_inputs: bool,
    /// The guard bits of every level for this compaction's data.
    bits: GuardBits,
    /// The output level's committed guards (new ones are cut at as they come).
    out_guards: &'v [Vec<u8>],
    /// The upper end of the current output's slot.
    slot_end: Option<&'v [u8]>,
    /// Guards committed so far, as (level, key).
    guards_added: Vec<(usize, Vec<u8>)>,
    /// The key range of the inputs (where guards may have become empty).
    span: Option<(&'v [u8], &'v [u8])>,
}

impl<'v> FlsmLayout<'v> {
    /// The layout of `c` over `version` under `opts`: guard bits floored at one target file
    /// of the inputs' bytes per entry.
    pub(super) fn new(c: &'v Compaction, version: &'v Version, opts: &Options) -> Self {
        let files = || c.inputs.iter().chain(&c.next_inputs);
        let (bytes, entries) = files().fold((0u64, 0u64), |(b, e), f| {
            (
                b.saturating_add(f.meta.file_size),
                e.saturating_add(f.meta.entries),
            )
        });
        let bytes_per_entry = bytes.checked_div(entries).unwrap_or(ASSUMED_ENTRY_BYTES);
        let bits = GuardBits::new(
            &opts.flsm,
            opts.target_file_size_bytes,
            bytes_per_entry,
            version.levels.len() - 1,
        );
        let lo = files().map(|f| f.smallest_key()).min();
        let hi = files().map(|f| f.largest_key()).max();
        FlsmLayout {
            version,
            inputs: files().map(|f| f.meta.file_id).collect(),
            level: c.level,
            output_level: c.output_level,
            no_next_inputs: c.next_inputs.is_empty(),
            bits,
            out_guards: &version.guards[c.output_level],
            slot_end: None,
            guards_added: Vec::new(),
            span: lo.zip(hi),
        }
    }
}

impl OutputLayout for FlsmLayout<'_> {
    fn cut_before(&mut self, user_key: &[u8]) -> bool {
        let added = new_guards(self.version, &self.bits, &self.inputs, user_key);
        let cut = added.iter().any(|(l, _)| *l == self.output_level)
            || self.slot_end.is_some_and(|end| user_key >= end);
        self.guards_added.extend(added);
        cut
    }

    fn output_started(&mut self, user_key: &[u8]) {
        self.slot_end = self
            .out_guards
            .get(slot_of(self.out_guards, user_key))
            .map(Vec::as_slice);
    }

    fn shadow_search_from(&self, output_level: usize) -> usize {
        // Sibling fragments at the output level may hold the key too.
        output_level
    }

    fn appended(&self) -> bool {
        self.output_level > self.level && self.no_next_inputs
    }

    fn finish(&mut self, edit: &mut VersionEdit, outputs: &[FileMeta], entries_dropped: u64) {
        let mut guards_added = std::mem::take(&mut self.guards_added);
        if entries_dropped > 0 {
            if let Some((lo, hi)) = self.span {
                let version = self.version;
                for g in empty_guards(version, &self.inputs, outputs, &guards_added, lo, hi) {
                    guards_added.retain(|(_, k)| *k != g);
                    for (level, guards) in version.guards.iter().enumerate() {
                        if guards.binary_search(&g).is_ok() {
                            edit.guards_removed.push((level, g.clone()));
                        }
                    }
                }
            }
        }
        edit.guards_added = guards_added;
    }
}

/// True when a file of `level` outside the compaction straddles `key` (starts below
/// it and reaches it), so `key` cannot become a guard there yet.
fn straddled(version: &Version, inputs: &HashSet<u64>, level: usize, key: &[u8]) -> bool {
    let files = &version.levels[level];
    let guards = &version.guards[level];
    let (start, _) = slot_range(guards, slot_of(guards, key));
    let lo = start.map_or(0, |s| files.partition_point(|f| f.smallest_key() < s));
    let hi = files.partition_point(|f| f.smallest_key() < key);
    files[lo..hi.max(lo)]
        .iter()
        .any(|f| f.largest_key() >= key && !inputs.contains(&f.meta.file_id))
}

/// The guards `key` is committed as by this compaction, as (level, key) pairs.
fn new_guards(
    version: &Version,
    bits: &GuardBits,
    inputs: &HashSet<u64>,
    key: &[u8],
) -> Vec<(usize, Vec<u8>)> {
    let last = version.levels.len() - 1;
    let Some(first) = bits.candidate_level(key).filter(|&l| l <= last) else {
        return Vec::new();
    };
    let from = (first..=last)
        .rev()
        .find(|&l| straddled(version, inputs, l, key))
        .map_or(first, |l| l + 1);
    (from..=last)
        .filter(|&l| {
            version.guards[l]
                .binary_search_by(|g| g.as_slice().cmp(key))
                .is_err()
        })
        .map(|l| (l, key.to_vec()))
        .collect()
}

/// The guards (of any level) whose last-level slot intersects no file once the edit
/// is applied, among the last level's guards in `[lo, hi]`.
fn empty_guards(
    version: &Version,
    inputs: &HashSet<u64>,
    outputs: &[FileMeta],
    added: &[(usize, Vec<u8>)],
    lo: &[u8],
    hi: &[u8],
) -> Vec<Vec<u8>> {
    let last = version.levels.len() - 1;
    let mut spans: Vec<(&[u8], &[u8])> = version
        .levels
        .iter()
        .skip(1)
        .flatten()
        .filter(|f| !inputs.contains(&f.meta.file_id))
        .map(|f| (f.smallest_key(), f.largest_key()))
        .chain(
            outputs
                .iter()
                .map(|m| (&m.smallest.user_key[..], &m.largest.user_key[..])),
        )
        .collect();
    spans.sort();
    // The union of the spans, as disjoint sorted intervals.
    let mut union: Vec<(&[u8], &[u8])> = Vec::new();
    for (a, b) in spans {
        match union.last_mut() {
            Some((_, e)) if a <= *e => *e = (*e).max(b),
            _ => union.push((a, b)),
        }
    }
    let mut guards: Vec<&[u8]> = version.guards[last].iter().map(Vec::as_slice).collect();
    guards.extend(
        added
            .iter()
            .filter(|(l, _)| *l == last)
            .map(|(_, k)| k.as_slice()),
    );
    guards.sort();
    guards.dedup();
    let mut out = Vec::new();
    for (i, g) in guards.iter().enumerate() {
        if *g < lo || *g > hi {
            continue;
        }
        let next = guards.get(i + 1).copied();
        // The first interval ending at or after g; it intersects [g, next) if it starts
        // before next.
        let j = union.partition_point(|(_, e)| *e < *g);
        let occupied = union
            .get(j)
            .is_some_and(|(a, _)| next.is_none_or(|n| *a < n));
        if !occupied {
            out.push(g.to_vec());
        }
    }
    out
}
