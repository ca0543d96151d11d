//! `ValuePointer`: where a separated value lives in the value log (WiscKey §3.1).

use crate::coding::{get_u32, get_u64};

/// Reference to a value-log entry: segment file id, byte offset of the entry's start, and the
/// length of the value. 64-bit offsets so a segment is never capped at 4 GiB (unlike Badger).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ValuePointer {
    /// Value-log segment file id.
    pub segment: u64,
    /// Offset of the entry (its header) inside the segment.
    pub offset: u64,
    /// Length of the value in bytes.
    pub len: u32,
}

impl ValuePointer {
    /// Size of the encoding in bytes.
    pub const ENCODED_LEN: usize = 20;

    /// Encodes as segment u64 LE, offset u64 LE, len u32 LE.
    pub fn encode(&self) -> [u8; Self::ENCODED_LEN] {
        let mut b = [0u8; Self::ENCODED_LEN];
        b[0..8].copy_from_slice(&self.segment.to_le_bytes());
        b[8..16].copy_from_slice(&self.offset.to_le_bytes());
        b[16..20].copy_from_slice(&self.len.to_le_bytes());
        b
    }

    /// Decodes; `None` unless `buf` is exactly [`Self::ENCODED_LEN`] bytes.
    pub fn decode(buf: &[u8]) -> Option<Self> {
        if buf.len() != Self::ENCODED_LEN {
            return None;
        }
        Some(ValuePointer {
            segment: get_u64(buf, 0)?,
            offset: get_u64(buf, 8)?,
            len: get_u32(buf, 16)?,
        })
    }
}

/// The smallest and largest value-log segment id a set of pointers points into (an SSTable's
/// pointers, recorded with the table in the manifest): value-log GC rewrites only the tables
/// whose span holds the segment it collects. A span is a bound, not a set: a table whose span
/// holds a segment may still have no pointer into it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SegmentSpan {
    /// Smallest segment id (above `max` when the span is empty).
    pub min: u64,
    /// Largest segment id.
    pub max: u64,
}

impl SegmentSpan {
    /// The span of no pointer.
    pub const EMPTY: SegmentSpan = SegmentSpan {
        min: u64::MAX,
        max: 0,
    };

    /// True when no pointer contributed to the span.
    pub fn is_empty(&self) -> bool {
        self.min > self.max
    }

    /// Widens the span to hold `segment`.
    pub fn include(&mut self, segment: u64) {
        self.min = self.min.min(segment);
        self.max = self.max.max(segment);
    }

    /// True when `segment` lies inside the span (a pointer into it may exist).
    pub fn contains(&self, segment: u64) -> bool {
        self.min <= segment && segment <= self.max
    }
}

impl Default for SegmentSpan {
    fn default() -> Self {
        Self::EMPTY
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_grow_and_hold() {
        let mut s = SegmentSpan::EMPTY;
        assert!(s.is_empty() && !s.contains(0) && !s.contains(u64::MAX));
        s.include(7);
        s.include(3);
        assert!(!s.is_empty() && s.contains(3) && s.contains(5) && s.contains(7));
        assert!(!s.contains(2) && !s.contains(8));
        assert_eq!(s, SegmentSpan { min: 3, max: 7 });
    }

    #[test]
    fn roundtrip() {
        let p = ValuePointer {
            segment: 3,
            offset: 1 << 40,
            len: 77,
        };
        assert_eq!(ValuePointer::decode(&p.encode()), Some(p));
        assert_eq!(ValuePointer::decode(&[0; 19]), None);
    }
}
