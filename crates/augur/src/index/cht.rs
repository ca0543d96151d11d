//! The Compact Hist-Tree (CHT) of PLEX (Stoian, Kipf, Marcus, Kraska, "PLEX: Towards
//! Practical Learned Indexing", aiDM 2021, §3; after Crotty's Hist-Tree, CIDR 2021): a radix
//! tree over the keys of the spline points, locating for a key the few spline points among
//! which a binary search finds its segment.
//!
//! # Structure
//!
//! Parameters: `bin_bits` `b` (a node has `2^b` bins) and `max_error` `e` (≥ 1). The root
//! covers `[min, max]` of the spline keys: with `d = x − min`, its bin of `x` is
//! `d >> s_0` where `s_0 = bits(max − min) − b` (at least 0), so the root's bins span the
//! range. A bin holding more than `e` spline points becomes a child node whose bin of `x` is
//! `(d >> s') & (2^b − 1)` with `s' = s − b` (at least 0); a bin holding at most `e` is a
//! leaf storing the index of its first spline point (or, when empty, of the first spline
//! point after it). Nodes are stored flat, `2^b` `u32` entries each, in breadth-first order:
//! an entry is `LEAF | first` or the index of a child node, always greater than its parent's.
//!
//! Within a node the bin function is non-decreasing in `x` (a child's range is aligned to its
//! parent's bin width `2^s`; when `s < b` it uses `2^s` consecutive bins of shift 0), so
//! spline points of earlier bins are `< x` and of later bins `> x`. At a leaf bin with first
//! point `f` and `c <= e` points, the first spline point `>= x` is therefore in
//! `[f, f + c]`. [`Cht::range`] returns that range when the next bin of the node is a leaf
//! too (its first point is `f + c`: points are assigned to bins in order), else `[f, f + e]`;
//! it is searched by
//! [`super::spline::Spline::window`] (which verifies it, so even a wrong range cannot give a
//! wrong window). A bin of width 1 holds at most one spline point (keys are distinct), so the
//! recursion ends after at most `⌈64 / b⌉` levels.
//!
//! The tree is a function of the spline and `(b, e)`; the encoding stores only those two and
//! the tree is rebuilt on decode in `O(m · depth + nodes · 2^b)`.

/// Entry flag of a leaf bin; the low 31 bits are its first spline point.
const LEAF: u32 = 1 << 31;

/// A Compact Hist-Tree over the keys of spline points.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Cht {
    /// The first spline key.
    min: u64,
    /// log2 of the bins per node.
    bin_bits: u32,
    /// Spline points a leaf bin may hold.
    max_error: u32,
    /// The root's shift.
    root_shift: u32,
    /// Nodes, `2^bin_bits` entries each; node 0 is the root.
    entries: Vec<u32>,
}

impl Cht {
    /// Builds the tree over `keys` (strictly increasing, fewer than 2^31).
    ///
    /// REQUIRES: `bin_bits` in `1..=16`, `max_error >= 1`.
    pub(super) fn build(keys: &[u64], bin_bits: u32, max_error: u32) -> Cht {
        let bins = 1usize << bin_bits;
        let mask = bins - 1;
        let (min, root_shift) = root(keys, bin_bits);
        let mut entries: Vec<u32> = Vec::with_capacity(bins);
        // Pending nodes in breadth-first order: (first point, end, shift); node i is pending[i].
        let mut pending: Vec<(usize, usize, u32)> = vec![(0, keys.len(), root_shift)];
        let mut next = 0;
        while let Some(&(lo, hi, shift)) = pending.get(next) {
            next += 1;
            let child_shift = shift.saturating_sub(bin_bits);
            let bin_of = |k: u64| ((k - min) >> shift) as usize & mask;
            let mut cur = lo;
            for bin in 0..bins {
                let first = cur;
                while keys.get(cur).is_some_and(|&k| cur < hi && bin_of(k) == bin) {
                    cur += 1;
                }
                if cur - first > max_error as usize && shift > 0 {
                    entries.push(pending.len() as u32);
                    pending.push((first, cur, child_shift));
                } else {
                    entries.push(LEAF | first as u32);
                }
            }
        }
        entries.shrink_to_fit();
        Cht {
            min,
            bin_bits,
            max_error,
            root_shift,
            entries,
        }
    }

    /// The knot-index range `[lo, hi]` holding the first spline point `>= x`.
    ///
    /// REQUIRES (for a useful hint): `min < x <= max` of the spline keys.
    #[inline]
    pub(super) fn range(&self, x: u64) -> (usize, usize) {
        let d = x.wrapping_sub(self.min);
        let mask = (1usize << self.bin_bits) - 1;
        let mut node = 0usize;
        let mut shift = self.root_shift;
        loop {
            let bin = (d >> shift) as usize & mask;
            let Some(&entry) = self.entries.get((node << self.bin_bits) | bin) else {
                return (0, usize::MAX);
            };
            if entry & LEAF != 0 {
                let first = (entry & !LEAF) as usize;
                // A leaf bin's points end where the next bin's start, when that is a leaf of
                // the same node (an adjacent entry, usually the same cache line).
                let next = match self.entries.get((node << self.bin_bits) | (bin + 1)) {
                    Some(&e) if bin < mask && e & LEAF != 0 => (e & !LEAF) as usize,
                    _ => first + self.max_error as usize,
                };
                return (first, next);
            }
            let child = entry as usize;
            if child <= node {
                return (0, usize::MAX); // unreachable for a built tree; never loop
            }
            node = child;
            shift = shift.saturating_sub(self.bin_bits);
        }
    }

    /// Number of nodes.
    pub(super) fn nodes(&self) -> usize {
        self.entries.len() >> self.bin_bits
    }

    /// Memory held by the node buffer.
    pub(super) fn heap_bytes(&self) -> usize {
        self.entries.capacity() * std::mem::size_of::<u32>()
    }
}

/// The first key and the root's shift of a tree with `bin_bits` over `keys`.
pub(super) fn root(keys: &[u64], bin_bits: u32) -> (u64, u32) {
    let (Some(&min), Some(&max)) = (keys.first(), keys.last()) else {
        return (0, 0);
    };
    let range_bits = u64::BITS - (max - min).leading_zeros();
    (min, range_bits.saturating_sub(bin_bits))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first index whose key is `>= x`, by the tree, checked against a binary search.
    fn check(keys: &[u64], bin_bits: u32, max_error: u32, queries: &[u64]) -> Cht {
        let t = Cht::build(keys, bin_bits, max_error);
        let (first, last) = (keys[0], keys[keys.len() - 1]);
        for &x in queries {
            if x <= first || x > last {
                continue;
            }
            let j = keys.partition_point(|&k| k < x);
            let (lo, hi) = t.range(x);
            assert!(
                lo <= j && j <= hi && hi - lo <= max_error as usize,
                "x {x}: {j} not in [{lo}, {hi}] (b {bin_bits}, e {max_error})"
            );
        }
        t
    }

    #[test]
    fn ranges_hold_the_first_point_at_or_above_the_key() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(11);
        let mut uniform: Vec<u64> = (0..5000).map(|_| rng.gen()).collect();
        uniform.sort_unstable();
        uniform.dedup();
        // Skewed: squares, and a dense cluster next to far outliers.
        let squares: Vec<u64> = (0..5000u64).map(|i| i * i * i).collect();
        let mut clustered: Vec<u64> = (0..3000u64).map(|i| (1 << 40) + i).collect();
        clustered.extend([0, 1 << 20, u64::MAX - 5, u64::MAX]);
        clustered.sort_unstable();
        for keys in [&uniform, &squares, &clustered] {
            let mut queries: Vec<u64> = keys
                .iter()
                .flat_map(|&k| [k, k.wrapping_sub(1), k.wrapping_add(1)])
                .collect();
            queries.extend((0..2000).map(|_| rng.gen::<u64>()));
            for b in [1, 4, 8, 12, 16] {
                for e in [1, 2, 8, 64] {
                    check(keys, b, e, &queries);
                }
            }
        }
    }

    #[test]
    fn small_ranges_and_skew() {
        // Few keys: the root alone suffices.
        let t = check(&[5, 9, 100, 1000], 4, 8, &[6, 9, 10, 99, 100, 500, 1000]);
        assert_eq!(t.nodes(), 1);
        // A dense run in one root bin needs children; with e = 1 every level splits.
        let keys: Vec<u64> = (0..256u64).chain([u64::MAX]).collect();
        let q: Vec<u64> = (0..300u64).chain([u64::MAX - 1, u64::MAX]).collect();
        let t = check(&keys, 4, 1, &q);
        assert!(t.nodes() > 1);
    }
}
