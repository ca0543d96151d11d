//! The scan loops of the peers read through a raw iterator (RocksDB's `DBRawIterator`,
//! LevelDB's C iterator): `BenchEngine::scan_all` and `BenchEngine::scan_from` written once
//! over [`RawCursor`], the few moves they need. Keys and values are read in place (only their
//! lengths), as LevelDB's own db_bench does and as Augur's zero-copy scan hands them out.

use crate::error::BenchError;

/// A raw iterator positioned on one entry at a time.
pub(super) trait RawCursor {
    /// Positions at the first entry.
    fn seek_to_first(&mut self);
    /// Positions at the last entry.
    fn seek_to_last(&mut self);
    /// Positions at the first entry at or after `key`.
    fn seek(&mut self, key: &[u8]);
    /// Whether the cursor is on an entry.
    fn valid(&self) -> bool;
    /// Moves forward (`reverse` false) or backward. REQUIRES: `valid()`.
    fn step(&mut self, reverse: bool);
    /// Key + value bytes of the current entry. REQUIRES: `valid()`.
    fn entry_bytes(&self) -> u64;
    /// The error the iteration met (corruption, I/O), if any.
    fn status(&self) -> Result<(), BenchError>;
}

/// Calls `each` with the key + value bytes of up to `n` entries from where `it` stands, moving
/// forward or (`reverse`) backward; then reports the error the iteration met, if any.
fn visit<F: FnMut(u64) + ?Sized>(
    it: &mut impl RawCursor,
    n: usize,
    reverse: bool,
    each: &mut F,
) -> Result<(), BenchError> {
    let mut done = 0usize;
    while done < n && it.valid() {
        each(it.entry_bytes());
        done += 1;
        it.step(reverse);
    }
    it.status()
}

/// `BenchEngine::scan_all` over `it`: up to `n` entries from the first (or, `reverse`,
/// backwards from the last).
pub(super) fn scan_all(
    mut it: impl RawCursor,
    n: usize,
    reverse: bool,
    each: &mut dyn FnMut(u64),
) -> Result<(), BenchError> {
    if reverse {
        it.seek_to_last();
    } else {
        it.seek_to_first();
    }
    visit(&mut it, n, reverse, each)
}

/// `BenchEngine::scan_from` over `it`: up to `n` entries from the first at or after `key`;
/// returns how many were read and their key + value bytes.
pub(super) fn scan_from(
    mut it: impl RawCursor,
    key: &[u8],
    n: usize,
) -> Result<(u64, u64), BenchError> {
    it.seek(key);
    let (mut count, mut bytes) = (0u64, 0u64);
    visit(&mut it, n, false, &mut |b| {
        count += 1;
        bytes += b;
    })?;
    Ok((count, bytes))
}
