//! Titan's level merge, as the executor applies it: a merge into the last level rewrites the
//! values its output pointers reach out of key order into fresh value-log segments, in key
//! order, so a range scan of the last level reads its values nearly sequentially.
//!
//! **In order.** A pointer is in order when it continues one of the last [`STREAMS`]
//! segments the merge's pointers went to: same segment, at or after the end of the previous
//! entry seen there, at most [`MAX_GAP_BYTES`] past it; or when it points at the first entry
//! of its segment (where a key-ordered stream continues once its segment filled up). A value already rewritten in key
//! order stays in order among the values a later merge interleaves with it (each segment is
//! its own stream, and a scan's batched reads are sorted by segment and offset), so a value
//! is rewritten about once: when it first reaches the last level out of order.
//!
//! **When.** A merge rewrites only when more than `Options::level_merge_threshold` of its
//! pointers are out of order, counted by a pass over its inputs before it writes anything
//! ([`count_out_of_order`]); merges that bring few new values into an ordered range leave
//! them where they are until enough accumulate, which keeps WiscKey's write savings. Nor
//! does a merge rewrite where at least [`OVERWRITTEN_FRACTION`] of its pointers die in it
//! (issue 40): under steady overwrites, values rewritten in order die soon after, and the
//! rewrites only made garbage (a 500K × 1 KiB database overwritten three times: 1.9M values
//! relocated, the value log at 2.9× its live bytes between rounds).

use crate::error::Result;
use crate::iter::merge::MergeCursor;
use crate::key::{unpack_trailer, ValueKind};
use crate::version::SegmentSet;
use crate::vlog::{entry_bytes, ValuePointer, SEGMENT_HEADER_LEN};

/// Segments a merge's pointers are followed in at once (see the module doc): a last-level
/// range keeps its values in a few interleaved streams (values rewritten by earlier merges,
/// by GC), and a scan reads each of them sequentially.
pub(super) const STREAMS: usize = 4;

/// How far past the end of the previous entry of its segment a pointer may point and still
/// be in order: the values a scan's readahead skips over at most.
pub(super) const MAX_GAP_BYTES: u64 = 64 << 10;

/// The recent streams of a merge's pointers: `(segment, end of the last entry seen in it)`,
/// most recent first.
#[derive(Debug, Default)]
pub(super) struct Streams {
    recent: Vec<(u64, u64)>,
}

impl Streams {
    /// True when `p` continues a recent stream (see the module doc).
    pub(super) fn continues(&self, p: &ValuePointer) -> bool {
        p.offset == SEGMENT_HEADER_LEN as u64
            || self.recent.iter().any(|&(segment, end)| {
                segment == p.segment && p.offset >= end && p.offset - end <= MAX_GAP_BYTES
            })
    }

    /// Records `p` (an entry under a key of `key_len` bytes) as its segment's latest.
    pub(super) fn note(&mut self, p: &ValuePointer, key_len: usize) {
        let end = p.offset.saturating_add(entry_bytes(key_len, p));
        self.recent.retain(|&(segment, _)| segment != p.segment);
        self.recent.insert(0, (p.segment, end));
        self.recent.truncate(STREAMS);
    }
}

/// What [`count_out_of_order`] found in a merge's inputs.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(super) struct PointerCounts {
    /// Pointers of the newest entry of each key (the merge's output, snapshots aside).
    pub pointers: u64,
    /// Those out of order.
    pub out_of_order: u64,
    /// Pointers of older entries of their key: values the merge drops as overwritten.
    pub shadowed: u64,
}

impl PointerCounts {
    /// Whether a level merge pays here: more than `threshold` of the output's pointers are
    /// out of order, and the range is not being overwritten — fewer than
    /// [`OVERWRITTEN_FRACTION`] of its pointers die in this merge. Values of a range under
    /// steady overwrites die soon after they are written: rewriting them in key order
    /// doubles their writes and makes garbage for GC to collect, and the values that survive
    /// are put in order when the overwrites stop (the next merge of the range, or GC).
    pub(super) fn level_merge_pays(&self, threshold: f64) -> bool {
        let all = self.pointers + self.shadowed;
        self.pointers > 0
            && self.out_of_order as f64 > threshold * self.pointers as f64
            && (self.shadowed as f64) < OVERWRITTEN_FRACTION * all as f64
    }
}

/// The fraction of a merge's pointers that die in it (overwritten by newer entries of their
/// key) from which the merge's range counts as being overwritten, and level merge waits.
pub(super) const OVERWRITTEN_FRACTION: f64 = 0.25;

/// Counts, from the merge's position up to `end` (exclusive, `None`: to the end), the
/// pointers of each key's newest entry and those out of order, and the pointers of older
/// entries, skipping pointers into `deleted` segments (never read).
///
/// # Errors
/// As the cursor's.
pub(super) fn count_out_of_order(
    merged: &mut MergeCursor,
    end: Option<&[u8]>,
    deleted: &SegmentSet,
) -> Result<PointerCounts> {
    let mut streams = Streams::default();
    let mut counts = PointerCounts::default();
    let mut last_key: Vec<u8> = Vec::new();
    let mut started = false;
    while merged.valid() {
        let key = merged.key();
        if end.is_some_and(|end| key >= end) {
            break;
        }
        let newest = !started || key != last_key.as_slice();
        if newest {
            last_key.clear();
            last_key.extend_from_slice(key);
            started = true;
        }
        let pointer = unpack_trailer(merged.trailer())
            .filter(|(_, kind)| *kind == ValueKind::Pointer)
            .and_then(|_| ValuePointer::decode(merged.value()))
            .filter(|p| !deleted.contains(p.segment));
        match pointer {
            Some(_) if !newest => counts.shadowed += 1,
            Some(p) => {
                counts.pointers += 1;
                if !streams.continues(&p) {
                    counts.out_of_order += 1;
                }
                streams.note(&p, key.len());
            }
            None => {}
        }
        merged.advance()?;
    }
    Ok(counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn level_merge_waits_while_a_range_is_being_overwritten() {
        let counts = |pointers, out_of_order, shadowed| PointerCounts {
            pointers,
            out_of_order,
            shadowed,
        };
        // Out of order past the threshold, nothing dying: merge.
        assert!(counts(100, 50, 0).level_merge_pays(0.1));
        assert!(!counts(100, 10, 0).level_merge_pays(0.1));
        assert!(!counts(0, 0, 0).level_merge_pays(0.1));
        // A fifth of the pointers die: still merge; a quarter or more: wait.
        assert!(counts(80, 80, 20).level_merge_pays(0.1));
        assert!(!counts(75, 75, 25).level_merge_pays(0.1));
        assert!(!counts(50, 50, 50).level_merge_pays(0.1));
    }

    fn ptr(segment: u64, offset: u64) -> ValuePointer {
        ValuePointer {
            segment,
            offset,
            len: 100,
        }
    }

    #[test]
    fn streams_follow_a_few_segments_forward_within_the_gap() {
        let mut s = Streams::default();
        assert!(!s.continues(&ptr(1, 30)));
        // A segment's first entry continues a stream whose last segment filled up.
        assert!(s.continues(&ptr(9, 24)));
        s.note(&ptr(1, 24), 8); // ends at 24 + 12 + 8 + 100 = 144
        assert!(s.continues(&ptr(1, 144)));
        assert!(s.continues(&ptr(1, 144 + MAX_GAP_BYTES)));
        assert!(!s.continues(&ptr(1, 145 + MAX_GAP_BYTES)));
        assert!(!s.continues(&ptr(1, 100)), "backwards is out of order");
        assert!(!s.continues(&ptr(2, 144)));
        // Interleaved streams stay in order.
        s.note(&ptr(2, 1000), 8);
        assert!(s.continues(&ptr(1, 144)) && s.continues(&ptr(2, 1120)));
        // Only the last STREAMS segments are followed.
        for seg in 3..3 + STREAMS as u64 {
            s.note(&ptr(seg, 24), 8);
        }
        assert!(!s.continues(&ptr(1, 144)));
        assert!(s.continues(&ptr(3, 144)));
        assert!(!s.continues(&ptr(1, 100)));
    }
}
