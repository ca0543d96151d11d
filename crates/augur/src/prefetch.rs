//! Software prefetch: a hint that a cache line is about to be read, so that independent
//! cache misses of one lookup overlap instead of following one another: the bloom-filter
//! lines of every file a key may be in (`Version::get`), and a model's window of slots with
//! the value it predicts (`Table::prefetch_window`) — in the file, or in the decompressed
//! chunk cache (`cache::chunk_cache`) — and a memtable key filter's block ahead of the
//! skiplist insert (`memtable/filter.rs`). The one `unsafe` block of the crate's
//! read path; the A/B measurements that justify it are in `docs/benchmarks/read-path.md`.

/// Asks the CPU to bring the cache line holding `bytes[0]` into every cache level. A hint
/// only: it never faults, reads nothing into the program and does nothing on targets
/// without a prefetch instruction.
#[inline(always)]
pub fn prefetch_read(bytes: &[u8]) {
    prefetch_ptr(bytes.as_ptr());
}

/// [`prefetch_read`] of the cache line holding `value` (the first byte of it).
#[inline(always)]
pub fn prefetch_value<T>(value: &T) {
    prefetch_ptr(std::ptr::from_ref(value).cast());
}

/// [`prefetch_read`] of the cache line holding the byte at address `addr`, which may be stale
/// (a chunk the cache has since let go of): a prefetch never reads memory into the program,
/// so a hint read without a lock is enough.
#[inline(always)]
pub fn prefetch_address(addr: usize) {
    prefetch_ptr(addr as *const u8);
}

#[inline(always)]
fn prefetch_ptr(at: *const u8) {
    #[cfg(target_arch = "x86_64")]
    #[expect(
        unsafe_code,
        reason = "a prefetch hint, no memory effect; docs/UNSAFE.md"
    )]
    // SAFETY: `_mm_prefetch` is a cache hint with no memory-safety effect: it never faults,
    // even on an invalid address (`prefetch_address` may pass one that was freed); the
    // others pass the address of a live reference. SSE is part
    // of the x86_64 baseline, so the target feature the intrinsic requires is always present.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(at.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = at;
}
