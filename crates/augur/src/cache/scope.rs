//! The scopes a thread reads in, which every cache of the database honours: [`scanning`]
//! (a scan's reads are not references) and [`without_cache_fill`] (reads that touch each
//! byte once insert nothing). Both are per-thread flags, set for the duration of a closure:
//! the read path below them (the page cache of direct reads, the decompressed-frame cache)
//! asks [`in_scan`] and [`fills`] instead of taking a parameter through every layer. Why per
//! thread, and what that costs (work moved to another thread must set its own scope): the
//! section "State that is not a database's" of docs/ARCHITECTURE.md.

use std::cell::Cell;

thread_local! {
    /// False while this thread reads under [`without_cache_fill`].
    static FILL: Cell<bool> = const { Cell::new(true) };
    /// True while this thread reads under [`scanning`].
    static SCAN: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` with this thread's cache hits not counting as references: a scan reads each page
/// several times in a row (its blocks share pages; a block's bytes and values are read one
/// after the other), and those touches must not promote the scanned pages over the hot set.
/// In the page cache, pages the scan misses still enter, on probation; the frame cache takes
/// nothing in from a scan (`frame_cache`).
pub fn scanning<R>(f: impl FnOnce() -> R) -> R {
    with_flag(&SCAN, true, f)
}

/// Runs `f` with this thread's reads not inserting into any cache (what is already cached is
/// still used): for reads that touch each page once, such as a compaction's.
pub fn without_cache_fill<R>(f: impl FnOnce() -> R) -> R {
    with_flag(&FILL, false, f)
}

/// True while this thread runs under [`scanning`].
#[inline]
pub(crate) fn in_scan() -> bool {
    SCAN.with(Cell::get)
}

/// False while this thread runs under [`without_cache_fill`].
#[inline]
pub(crate) fn fills() -> bool {
    FILL.with(Cell::get)
}

/// Runs `f` with this thread's `flag` set to `value`, restoring it after (also on a panic).
fn with_flag<R>(
    flag: &'static std::thread::LocalKey<Cell<bool>>,
    value: bool,
    f: impl FnOnce() -> R,
) -> R {
    struct Restore(&'static std::thread::LocalKey<Cell<bool>>, bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            self.0.with(|c| c.set(self.1));
        }
    }
    let _restore = Restore(flag, flag.with(|c| c.replace(value)));
    f()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_nest_and_restore() {
        assert!(!in_scan() && fills());
        scanning(|| {
            assert!(in_scan() && fills());
            without_cache_fill(|| assert!(in_scan() && !fills()));
            assert!(in_scan() && fills());
        });
        assert!(!in_scan() && fills());
        let caught = std::panic::catch_unwind(|| scanning(|| panic!("inside")));
        assert!(caught.is_err());
        assert!(!in_scan(), "a panic restores the flag");
    }
}
