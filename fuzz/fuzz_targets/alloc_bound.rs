//! A global allocator that counts live bytes, so that a target can check a decoder never
//! allocates more than a bound derived from its input's length (issue 13: a length field
//! read from damaged bytes must not turn into a huge allocation).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Counts live bytes and their peak; delegates to the system allocator.
pub struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is forwarded unchanged to `System`, which upholds `GlobalAlloc`'s
// contract; the counters are only statistics.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note_alloc(layout.size());
        // SAFETY: same layout, forwarded to the system allocator.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note_alloc(layout.size());
        // SAFETY: same layout, forwarded to the system allocator.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: `ptr` was allocated by `System` with `layout` (through this allocator).
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note_alloc(new_size);
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: `ptr`/`layout` come from this allocator; forwarded unchanged.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

fn note_alloc(size: usize) {
    let live = LIVE.fetch_add(size, Ordering::Relaxed) + size;
    PEAK.fetch_max(live, Ordering::Relaxed);
}

/// Runs `f` and returns its result and the peak of bytes allocated above what was live
/// when it started.
pub fn peak_during<R>(f: impl FnOnce() -> R) -> (R, usize) {
    let base = LIVE.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let r = f();
    (r, PEAK.load(Ordering::Relaxed).saturating_sub(base))
}

/// Allocation allowed to decode `len` bytes: structures may expand their encoding (decoded
/// segments, tables derived from stored points, records copied out) by a constant factor,
/// plus a fixed slack.
pub fn bound(len: usize) -> usize {
    64 * len + (1 << 20)
}

/// Runs `f` and panics when it allocated more than [`bound`] of `len` input bytes.
pub fn check<R>(len: usize, what: &str, f: impl FnOnce() -> R) -> R {
    let (r, peak) = peak_during(f);
    assert!(
        peak <= bound(len),
        "{what}: {len} input bytes made it allocate {peak} bytes"
    );
    r
}
