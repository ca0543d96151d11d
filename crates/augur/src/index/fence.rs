//! Fence pointers over projected keys: the baseline [`Index`] (LevelDB's index block, as a
//! position index). Every `stride`-th key — the first key of each run of `stride` positions —
//! is kept; a search is a binary search over them.
//!
//! With fences `f_b = key[b·stride]` for `b` in `0..⌈n/stride⌉`, let `b` be the number of fences
//! `< key`. If `b = 0`, `lb(key) = 0` and the window is `[0, 1)`. Otherwise fence `b−1` is
//! `< key` and fence `b` (if any) is `>= key`, so `lb(key)` lies in
//! `((b−1)·stride, min(b·stride, n)]`: the window is `[(b−1)·stride + 1, min(b·stride, n) + 1)`,
//! of at most `stride` positions ([`Index::max_window`]).

use super::{put_header, Index, IndexBuilder, IndexKind, KeyOrder, Window, MAX_KEYS};
use crate::coding::{put_u32, put_u64, Decoder};
use crate::error::Result;

/// Streams keys into a [`FenceIndex`].
#[derive(Debug)]
pub struct FenceBuilder {
    stride: u32,
    order: KeyOrder,
    /// Keys added since the last fence (the next key gets a fence when this is 0).
    since_fence: u32,
    fences: Vec<u64>,
}

impl FenceBuilder {
    /// A builder keeping one fence per `stride` keys. A stride of 0 is rejected by the first
    /// `add` (or `finish`).
    pub fn new(stride: u32) -> Self {
        let mut order = KeyOrder::default();
        if stride == 0 {
            order.failed = Some("index: fence stride must be at least 1".to_string());
        }
        FenceBuilder {
            stride,
            order,
            since_fence: 0,
            fences: Vec::new(),
        }
    }
}

impl IndexBuilder for FenceBuilder {
    fn add(&mut self, key: u64) -> Result<()> {
        self.order.accept(key)?;
        if self.since_fence == 0 {
            self.fences.push(key);
        }
        self.since_fence += 1;
        if self.since_fence == self.stride {
            self.since_fence = 0;
        }
        Ok(())
    }

    fn finish(self: Box<Self>) -> Result<Box<dyn Index>> {
        self.order.check()?;
        let mut fences = self.fences;
        fences.shrink_to_fit();
        Ok(Box::new(FenceIndex {
            stride: self.stride,
            n: self.order.count,
            fences,
        }))
    }
}

/// Fence pointers: the projection of every `stride`-th key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FenceIndex {
    /// Keys per fence (at least 1).
    stride: u32,
    /// Number of keys indexed.
    n: u64,
    /// `fences[b]` is the projection of key `b·stride`; non-decreasing; `⌈n/stride⌉` of them.
    fences: Vec<u64>,
}

impl FenceIndex {
    /// Decodes the body that follows the header (see `docs/format/index.md`); the error string
    /// says what is wrong.
    pub(super) fn decode_body(body: &[u8]) -> std::result::Result<FenceIndex, String> {
        let mut d = Decoder::new(body);
        let (Some(stride), Some(n), Some(count)) = (d.u32(), d.u64(), d.u64()) else {
            return Err("fence: truncated parameters".to_string());
        };
        if stride == 0 {
            return Err("fence: stride 0".to_string());
        }
        if n > MAX_KEYS {
            return Err(format!("fence: {n} keys exceed the limit"));
        }
        if count != n.div_ceil(u64::from(stride)) {
            return Err(format!(
                "fence: {count} fences for {n} keys of stride {stride}"
            ));
        }
        if count.checked_mul(8) != u64::try_from(d.remaining()).ok() {
            return Err(format!("fence: {} bytes for {count} fences", d.remaining()));
        }
        let mut fences = Vec::with_capacity(d.remaining() / 8);
        while let Some(key) = d.u64() {
            if fences.last().is_some_and(|&prev| key < prev) {
                return Err(format!("fence: fence {} out of order", fences.len()));
            }
            fences.push(key);
        }
        Ok(FenceIndex { stride, n, fences })
    }
}

impl Index for FenceIndex {
    fn search(&self, key: u64) -> Window {
        let below = self.fences.partition_point(|&f| f < key) as u64;
        if below == 0 {
            return Window { lo: 0, hi: 1 };
        }
        let stride = u64::from(self.stride);
        let block_start = (below - 1) * stride;
        let lb_max = (below * stride).min(self.n);
        Window {
            lo: block_start + 1,
            hi: lb_max + 1,
        }
    }

    fn max_window(&self) -> u64 {
        u64::from(self.stride)
    }

    fn size_bytes(&self) -> usize {
        std::mem::size_of::<Self>() + self.fences.capacity() * std::mem::size_of::<u64>()
    }

    fn kind(&self) -> IndexKind {
        IndexKind::Fence
    }

    fn len(&self) -> u64 {
        self.n
    }

    fn segments(&self) -> u64 {
        self.fences.len() as u64
    }

    fn encode(&self, out: &mut Vec<u8>) {
        put_header(out, IndexKind::Fence);
        put_u32(out, self.stride);
        put_u64(out, self.n);
        put_u64(out, self.fences.len() as u64);
        for &f in &self.fences {
            put_u64(out, f);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    fn build(stride: u32, keys: &[u64]) -> Box<dyn Index> {
        let mut b = Box::new(FenceBuilder::new(stride));
        for &k in keys {
            b.add(k).expect("sorted keys");
        }
        b.finish().expect("valid")
    }

    #[test]
    fn windows_on_a_small_file() {
        // positions: 0:10 1:20 2:20 3:30 4:40 ; fences (stride 2): 10, 20, 40
        let idx = build(2, &[10, 20, 20, 30, 40]);
        assert_eq!(idx.segments(), 3);
        assert_eq!(idx.search(5), Window { lo: 0, hi: 1 });
        assert_eq!(idx.search(10), Window { lo: 0, hi: 1 });
        assert_eq!(idx.search(15), Window { lo: 1, hi: 3 });
        assert_eq!(idx.search(20), Window { lo: 1, hi: 3 });
        assert_eq!(idx.search(25), Window { lo: 3, hi: 5 });
        assert_eq!(idx.search(40), Window { lo: 3, hi: 5 });
        assert_eq!(idx.search(41), Window { lo: 5, hi: 6 });
    }

    #[test]
    fn rejects_bad_input() {
        let mut b = Box::new(FenceBuilder::new(0));
        assert!(matches!(b.add(1), Err(Error::InvalidArgument(_))));
        assert!(b.finish().is_err());
        let mut b = Box::new(FenceBuilder::new(4));
        b.add(5).expect("first key");
        assert!(matches!(b.add(4), Err(Error::InvalidArgument(_))));
        assert!(b.add(6).is_err(), "a failed builder stays failed");
        assert!(b.finish().is_err());
    }

    #[test]
    fn empty_index() {
        let idx = build(64, &[]);
        assert_eq!(idx.len(), 0);
        assert_eq!(idx.search(0), Window { lo: 0, hi: 1 });
        assert_eq!(idx.search(u64::MAX), Window { lo: 0, hi: 1 });
    }
}
