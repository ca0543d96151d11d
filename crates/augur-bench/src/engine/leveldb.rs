//! LevelDB as a peer (cargo feature `leveldb`), through a small hand-written FFI to the system
//! libleveldb 1.23 C API (`/usr/include/leveldb/c.h`, Debian's `libleveldb-dev`); only the
//! functions used here are declared. Every raw handle lives in a small RAII wrapper whose
//! `Drop` frees it; this is the only module of the crate with `unsafe` code.
//!
//! Settings comparable to Augur's (as `rocksdb.rs`): a bloom filter of the same bits per key
//! (none at 0), an LRU block cache of `--cache_size` bytes, write buffer = Augur's memtable
//! size (LevelDB clamps it to [64 KiB, 1 GiB]), the codec of `--compression_type` (the C
//! API of 1.23 offers none and snappy only; none by default), the WAL on and synced as
//! asked. `max_open_files` stays at LevelDB's default of 1000 (set explicitly): 10M entries of
//! 16-byte keys and 64-byte values make a few hundred of LevelDB's 2 MiB tables, so every table
//! stays open in the table cache, as RocksDB (unlimited by default) and Augur keep theirs.
//! Other options keep LevelDB's defaults (4 KiB blocks, 2 MiB tables, no read checksums).
//! LevelDB has no key-value separation: values always stay in the tree, and no direct reads:
//! `--use_direct_reads` is refused. Index and filter blocks stay outside the block cache, in
//! the table cache's open tables (as RocksDB's and Augur's pinned sections); the C API tells
//! nothing of the cache's use, so records carry no cache figures for LevelDB.

// Every unsafe block must say why it is sound.
#![deny(clippy::undocumented_unsafe_blocks)]

use super::cursor::{self, RawCursor};
use super::{BenchEngine, Codec, OpenSettings};
use crate::error::BenchError;
use ::augur::Options;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::marker::PhantomData;
use std::path::Path;
use std::ptr::{self, NonNull};

/// LevelDB's table cache size: its default, see the module comment.
const MAX_OPEN_FILES: c_int = 1000;

/// The declarations of `leveldb/c.h` this module uses.
mod ffi {
    use std::ffi::{c_char, c_int, c_void};
    use std::marker::{PhantomData, PhantomPinned};

    /// Declares opaque C types (only ever used behind pointers).
    macro_rules! opaque {
        ($($name:ident),*) => {$(
            #[doc = concat!("LevelDB's opaque `", stringify!($name), "`.")]
            #[repr(C)]
            pub struct $name {
                _data: [u8; 0],
                _marker: PhantomData<(*mut u8, PhantomPinned)>,
            }
        )*};
    }
    opaque!(
        leveldb_t,
        leveldb_options_t,
        leveldb_readoptions_t,
        leveldb_writeoptions_t,
        leveldb_filterpolicy_t,
        leveldb_cache_t,
        leveldb_iterator_t
    );

    /// `leveldb_no_compression` of the C API's compression enum.
    pub const NO_COMPRESSION: c_int = 0;
    /// `leveldb_snappy_compression`: the C API's only other value.
    pub const SNAPPY_COMPRESSION: c_int = 1;

    #[link(name = "leveldb")]
    extern "C" {
        pub fn leveldb_open(
            options: *const leveldb_options_t,
            name: *const c_char,
            errptr: *mut *mut c_char,
        ) -> *mut leveldb_t;
        pub fn leveldb_close(db: *mut leveldb_t);
        pub fn leveldb_put(
            db: *mut leveldb_t,
            options: *const leveldb_writeoptions_t,
            key: *const c_char,
            keylen: usize,
            val: *const c_char,
            vallen: usize,
            errptr: *mut *mut c_char,
        );
        pub fn leveldb_delete(
            db: *mut leveldb_t,
            options: *const leveldb_writeoptions_t,
            key: *const c_char,
            keylen: usize,
            errptr: *mut *mut c_char,
        );
        pub fn leveldb_get(
            db: *mut leveldb_t,
            options: *const leveldb_readoptions_t,
            key: *const c_char,
            keylen: usize,
            vallen: *mut usize,
            errptr: *mut *mut c_char,
        ) -> *mut c_char;
        pub fn leveldb_create_iterator(
            db: *mut leveldb_t,
            options: *const leveldb_readoptions_t,
        ) -> *mut leveldb_iterator_t;
        pub fn leveldb_compact_range(
            db: *mut leveldb_t,
            start_key: *const c_char,
            start_key_len: usize,
            limit_key: *const c_char,
            limit_key_len: usize,
        );

        pub fn leveldb_iter_destroy(it: *mut leveldb_iterator_t);
        pub fn leveldb_iter_valid(it: *const leveldb_iterator_t) -> u8;
        pub fn leveldb_iter_seek_to_first(it: *mut leveldb_iterator_t);
        pub fn leveldb_iter_seek_to_last(it: *mut leveldb_iterator_t);
        pub fn leveldb_iter_seek(it: *mut leveldb_iterator_t, k: *const c_char, klen: usize);
        pub fn leveldb_iter_next(it: *mut leveldb_iterator_t);
        pub fn leveldb_iter_prev(it: *mut leveldb_iterator_t);
        pub fn leveldb_iter_key(it: *const leveldb_iterator_t, klen: *mut usize) -> *const c_char;
        pub fn leveldb_iter_value(it: *const leveldb_iterator_t, vlen: *mut usize)
            -> *const c_char;
        pub fn leveldb_iter_get_error(it: *const leveldb_iterator_t, errptr: *mut *mut c_char);

        pub fn leveldb_options_create() -> *mut leveldb_options_t;
        pub fn leveldb_options_destroy(o: *mut leveldb_options_t);
        pub fn leveldb_options_set_filter_policy(
            o: *mut leveldb_options_t,
            policy: *mut leveldb_filterpolicy_t,
        );
        pub fn leveldb_options_set_create_if_missing(o: *mut leveldb_options_t, v: u8);
        pub fn leveldb_options_set_write_buffer_size(o: *mut leveldb_options_t, size: usize);
        pub fn leveldb_options_set_max_open_files(o: *mut leveldb_options_t, n: c_int);
        pub fn leveldb_options_set_cache(o: *mut leveldb_options_t, c: *mut leveldb_cache_t);
        pub fn leveldb_options_set_compression(o: *mut leveldb_options_t, c: c_int);

        pub fn leveldb_filterpolicy_create_bloom(
            bits_per_key: c_int,
        ) -> *mut leveldb_filterpolicy_t;
        pub fn leveldb_filterpolicy_destroy(policy: *mut leveldb_filterpolicy_t);

        pub fn leveldb_readoptions_create() -> *mut leveldb_readoptions_t;
        pub fn leveldb_readoptions_destroy(o: *mut leveldb_readoptions_t);

        pub fn leveldb_writeoptions_create() -> *mut leveldb_writeoptions_t;
        pub fn leveldb_writeoptions_destroy(o: *mut leveldb_writeoptions_t);
        pub fn leveldb_writeoptions_set_sync(o: *mut leveldb_writeoptions_t, v: u8);

        pub fn leveldb_cache_create_lru(capacity: usize) -> *mut leveldb_cache_t;
        pub fn leveldb_cache_destroy(cache: *mut leveldb_cache_t);

        pub fn leveldb_free(ptr: *mut c_void);
        pub fn leveldb_property_value(db: *mut leveldb_t, propname: *const c_char) -> *mut c_char;
    }
}

/// A `BenchError` for a failed LevelDB call.
fn failed(msg: impl std::fmt::Display) -> BenchError {
    BenchError::failed(format!("leveldb: {msg}"))
}

/// A non-null handle from a `*_create` call, or an error naming what was being created.
fn non_null<T>(p: *mut T, what: &str) -> Result<NonNull<T>, BenchError> {
    NonNull::new(p).ok_or_else(|| failed(format!("creating {what} failed")))
}

/// Runs `f` with a fresh error slot (`char** errptr` of the C API) and turns an error LevelDB
/// stored there into a `BenchError` saying `what` failed.
fn check<T>(what: &str, f: impl FnOnce(*mut *mut c_char) -> T) -> Result<T, BenchError> {
    let mut err: *mut c_char = ptr::null_mut();
    let out = f(&mut err);
    if err.is_null() {
        return Ok(out);
    }
    // SAFETY: LevelDB stores in `*errptr` a NUL-terminated string it allocated with malloc
    // (strdup); it is read once here, then freed with `leveldb_free`, as c.h asks.
    let msg = unsafe { CStr::from_ptr(err) }
        .to_string_lossy()
        .into_owned();
    // SAFETY: `err` came from LevelDB's malloc and is freed exactly once.
    unsafe { ffi::leveldb_free(err.cast::<c_void>()) };
    Err(failed(format!("{what}: {msg}")))
}

/// The open database (`leveldb_t`); closed on drop.
struct RawDb(NonNull<ffi::leveldb_t>);

// SAFETY: LevelDB's `DB` is safe for concurrent use by several threads without external
// synchronization (include/leveldb/db.h and doc/index.md, "Concurrency"); the C handle is a
// thin wrapper around it, and closing it takes `&mut self` (Drop), so no call can race with it.
unsafe impl Send for RawDb {}
// SAFETY: see `Send` above: every call through `&RawDb` is a thread-safe `DB` method.
unsafe impl Sync for RawDb {}

impl Drop for RawDb {
    fn drop(&mut self) {
        // SAFETY: the handle came from `leveldb_open`, is closed once, and every iterator
        // borrowing it (`Iter<'_>`) has been dropped, as the borrow checker ensures.
        unsafe { ffi::leveldb_close(self.0.as_ptr()) }
    }
}

/// `leveldb_options_t`, needed only while opening (`DB::Open` copies it).
struct RawOptions(NonNull<ffi::leveldb_options_t>);

impl Drop for RawOptions {
    fn drop(&mut self) {
        // SAFETY: created by `leveldb_options_create`, destroyed once.
        unsafe { ffi::leveldb_options_destroy(self.0.as_ptr()) }
    }
}

/// `leveldb_readoptions_t` (LevelDB's defaults).
struct ReadOptions(NonNull<ffi::leveldb_readoptions_t>);

// SAFETY: never mutated after creation; LevelDB only reads it (it is passed as `const`), so
// sharing or moving it between threads is sound.
unsafe impl Send for ReadOptions {}
// SAFETY: as for `Send`: read-only after creation.
unsafe impl Sync for ReadOptions {}

impl Drop for ReadOptions {
    fn drop(&mut self) {
        // SAFETY: created by `leveldb_readoptions_create`, destroyed once.
        unsafe { ffi::leveldb_readoptions_destroy(self.0.as_ptr()) }
    }
}

/// `leveldb_writeoptions_t` (sync as asked).
struct WriteOptions(NonNull<ffi::leveldb_writeoptions_t>);

// SAFETY: only mutated while being built in `open`; afterwards LevelDB only reads it (passed
// as `const`), so sharing or moving it between threads is sound.
unsafe impl Send for WriteOptions {}
// SAFETY: as for `Send`: read-only after `open`.
unsafe impl Sync for WriteOptions {}

impl Drop for WriteOptions {
    fn drop(&mut self) {
        // SAFETY: created by `leveldb_writeoptions_create`, destroyed once.
        unsafe { ffi::leveldb_writeoptions_destroy(self.0.as_ptr()) }
    }
}

/// The bloom filter policy; must outlive the database, which keeps a pointer to it.
struct FilterPolicy(NonNull<ffi::leveldb_filterpolicy_t>);

// SAFETY: LevelDB's built-in bloom policy is immutable and used concurrently by LevelDB's own
// threads; this wrapper never touches it except to destroy it after the database closed.
unsafe impl Send for FilterPolicy {}
// SAFETY: as for `Send`.
unsafe impl Sync for FilterPolicy {}

impl Drop for FilterPolicy {
    fn drop(&mut self) {
        // SAFETY: created by `leveldb_filterpolicy_create_bloom`, destroyed once, after the
        // database that used it closed (field order of `LevelEngine`).
        unsafe { ffi::leveldb_filterpolicy_destroy(self.0.as_ptr()) }
    }
}

/// The LRU block cache; must outlive the database, which keeps a pointer to it.
struct Cache(NonNull<ffi::leveldb_cache_t>);

// SAFETY: LevelDB's LRU cache is internally synchronized (it is shared by all of LevelDB's
// threads); this wrapper never touches it except to destroy it after the database closed.
unsafe impl Send for Cache {}
// SAFETY: as for `Send`.
unsafe impl Sync for Cache {}

impl Drop for Cache {
    fn drop(&mut self) {
        // SAFETY: created by `leveldb_cache_create_lru`, destroyed once, after the database
        // that used it closed (field order of `LevelEngine`).
        unsafe { ffi::leveldb_cache_destroy(self.0.as_ptr()) }
    }
}

/// A value returned by `leveldb_get` (malloc'd by LevelDB); freed on drop.
struct Malloced {
    ptr: NonNull<c_char>,
    len: usize,
}

impl Malloced {
    fn to_vec(&self) -> Vec<u8> {
        // SAFETY: `leveldb_get` returned `len` initialized bytes at `ptr`, owned by `self`.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr().cast::<u8>(), self.len) }.to_vec()
    }
}

impl Drop for Malloced {
    fn drop(&mut self) {
        // SAFETY: allocated by LevelDB's malloc in `leveldb_get`, freed once.
        unsafe { ffi::leveldb_free(self.ptr.as_ptr().cast::<c_void>()) }
    }
}

/// An iterator over the database, used by one thread; destroyed on drop (before the
/// database closes: it borrows it).
struct Iter<'a> {
    raw: NonNull<ffi::leveldb_iterator_t>,
    _db: PhantomData<&'a RawDb>,
}

impl<'a> Iter<'a> {
    fn new(db: &'a RawDb, read: &ReadOptions) -> Result<Self, BenchError> {
        // SAFETY: `db` is open (it outlives the iterator through `'a`) and `read` is valid;
        // LevelDB copies the read options into the iterator.
        let raw = unsafe { ffi::leveldb_create_iterator(db.0.as_ptr(), read.0.as_ptr()) };
        Ok(Iter {
            raw: non_null(raw, "an iterator")?,
            _db: PhantomData,
        })
    }
}

impl RawCursor for Iter<'_> {
    fn valid(&self) -> bool {
        // SAFETY: `raw` is a live iterator.
        unsafe { ffi::leveldb_iter_valid(self.raw.as_ptr()) != 0 }
    }

    fn seek_to_first(&mut self) {
        // SAFETY: `raw` is a live iterator.
        unsafe { ffi::leveldb_iter_seek_to_first(self.raw.as_ptr()) }
    }

    fn seek_to_last(&mut self) {
        // SAFETY: `raw` is a live iterator.
        unsafe { ffi::leveldb_iter_seek_to_last(self.raw.as_ptr()) }
    }

    fn seek(&mut self, key: &[u8]) {
        // SAFETY: `raw` is a live iterator; LevelDB reads `key.len()` bytes at `key` during
        // the call only.
        unsafe { ffi::leveldb_iter_seek(self.raw.as_ptr(), key.as_ptr().cast(), key.len()) }
    }

    fn step(&mut self, reverse: bool) {
        // SAFETY: `raw` is a live iterator, valid at every call site (`RawCursor::step`
        // REQUIRES it; the loops of `cursor.rs` check `valid` first).
        unsafe {
            if reverse {
                ffi::leveldb_iter_prev(self.raw.as_ptr());
            } else {
                ffi::leveldb_iter_next(self.raw.as_ptr());
            }
        }
    }

    /// Read in place, not copied, as LevelDB's own db_bench does.
    fn entry_bytes(&self) -> u64 {
        let (mut klen, mut vlen) = (0usize, 0usize);
        // SAFETY: `raw` is a live, valid iterator (`RawCursor::entry_bytes` REQUIRES it; the
        // loops of `cursor.rs` check `valid` first); the returned pointers are not kept, only
        // the lengths LevelDB wrote.
        unsafe {
            ffi::leveldb_iter_key(self.raw.as_ptr(), &mut klen);
            ffi::leveldb_iter_value(self.raw.as_ptr(), &mut vlen);
        }
        (klen + vlen) as u64
    }

    fn status(&self) -> Result<(), BenchError> {
        // SAFETY: `raw` is a live iterator; `err` is a valid error slot.
        check("iterating", |err| unsafe {
            ffi::leveldb_iter_get_error(self.raw.as_ptr(), err)
        })
    }
}

impl Drop for Iter<'_> {
    fn drop(&mut self) {
        // SAFETY: created by `leveldb_create_iterator`, destroyed once, while the database it
        // reads is still open (`'a`).
        unsafe { ffi::leveldb_iter_destroy(self.raw.as_ptr()) }
    }
}

/// An open LevelDB database with the options of the run.
///
/// Field order matters: fields drop in declaration order, so the database closes before the
/// filter policy and the block cache it points to are destroyed.
pub(super) struct LevelEngine {
    db: RawDb,
    read: ReadOptions,
    write: WriteOptions,
    _filter: Option<FilterPolicy>,
    _cache: Cache,
}

impl LevelEngine {
    /// Opens (creating if `opts.create_if_missing`) the database in `dir` with the settings
    /// of the module comment.
    pub(super) fn open(
        dir: &Path,
        opts: &Options,
        settings: OpenSettings,
    ) -> Result<Self, BenchError> {
        let name = CString::new(dir.as_os_str().as_encoded_bytes()).map_err(|_| {
            failed(format!(
                "{}: a path with a NUL byte cannot be opened",
                dir.display()
            ))
        })?;
        if settings.direct_reads {
            // Checked before the run too (`memory::check_engines`).
            super::EngineKind::Leveldb.check_direct_reads()?;
        }
        let compression = match settings.codec {
            Codec::None => ffi::NO_COMPRESSION,
            Codec::Snappy => ffi::SNAPPY_COMPRESSION,
            // Checked before the run (`EngineKind::check_codec`); refused here too rather
            // than substituted.
            other => {
                super::EngineKind::Leveldb.check_codec(other)?;
                ffi::NO_COMPRESSION
            }
        };
        // SAFETY: plain constructors without arguments; null results are checked below.
        let (options, cache, read, write) = unsafe {
            (
                ffi::leveldb_options_create(),
                ffi::leveldb_cache_create_lru(settings.cache_bytes),
                ffi::leveldb_readoptions_create(),
                ffi::leveldb_writeoptions_create(),
            )
        };
        // Each handle is wrapped before the next `?`, so an error frees what exists.
        let options = RawOptions(non_null(options, "options")?);
        let cache = Cache(non_null(cache, "the block cache")?);
        let read = ReadOptions(non_null(read, "read options")?);
        let write = WriteOptions(non_null(write, "write options")?);
        let filter = match opts.bloom_bits_per_key {
            0 => None,
            bits => {
                let bits = c_int::try_from(bits)
                    .map_err(|_| failed(format!("{bits} bloom bits per key is too many")))?;
                // SAFETY: a plain constructor; a null result is checked below.
                let p = unsafe { ffi::leveldb_filterpolicy_create_bloom(bits) };
                Some(FilterPolicy(non_null(p, "the bloom filter policy")?))
            }
        };
        let o = options.0.as_ptr();
        // SAFETY: `o`, `write`, `cache` and `filter` are live handles created above; the
        // cache and the filter policy are kept in the returned engine and destroyed only after
        // the database closes (see `LevelEngine`).
        unsafe {
            ffi::leveldb_options_set_create_if_missing(o, u8::from(opts.create_if_missing));
            ffi::leveldb_options_set_compression(o, compression);
            ffi::leveldb_options_set_write_buffer_size(o, opts.memtable_size_bytes);
            ffi::leveldb_options_set_max_open_files(o, MAX_OPEN_FILES);
            ffi::leveldb_options_set_cache(o, cache.0.as_ptr());
            if let Some(f) = &filter {
                ffi::leveldb_options_set_filter_policy(o, f.0.as_ptr());
            }
            ffi::leveldb_writeoptions_set_sync(write.0.as_ptr(), u8::from(settings.sync));
        }
        let what = format!("opening {}", dir.display());
        // SAFETY: `o` and `name` (NUL-terminated) are valid for the call; `err` is a valid
        // error slot. A null result without an error is refused below.
        let db = check(&what, |err| unsafe {
            ffi::leveldb_open(o, name.as_ptr(), err)
        })?;
        let db = RawDb(non_null(db, "the database")?);
        drop(options);
        Ok(LevelEngine {
            db,
            read,
            write,
            _filter: filter,
            _cache: cache,
        })
    }

    /// The value of LevelDB property `name` (empty when LevelDB does not know it).
    fn property(&self, name: &CStr) -> String {
        // SAFETY: the database is live and `name` is NUL-terminated; LevelDB returns null or
        // a NUL-terminated string it allocated with malloc.
        let value = unsafe { ffi::leveldb_property_value(self.db(), name.as_ptr()) };
        if value.is_null() {
            return String::new();
        }
        // SAFETY: `value` is non-null and NUL-terminated (above); it is read once here.
        let text = unsafe { CStr::from_ptr(value) }
            .to_string_lossy()
            .into_owned();
        // SAFETY: `value` came from LevelDB's malloc and is freed exactly once.
        unsafe { ffi::leveldb_free(value.cast::<c_void>()) };
        text
    }

    fn db(&self) -> *mut ffi::leveldb_t {
        self.db.0.as_ptr()
    }
}

impl BenchEngine for LevelEngine {
    fn put(&self, key: &[u8], value: &[u8]) -> Result<(), BenchError> {
        // SAFETY: the database and write options are live; LevelDB reads `key` and `value`
        // (with their lengths) during the call only; `err` is a valid error slot.
        check("put", |err| unsafe {
            ffi::leveldb_put(
                self.db(),
                self.write.0.as_ptr(),
                key.as_ptr().cast(),
                key.len(),
                value.as_ptr().cast(),
                value.len(),
                err,
            )
        })
    }

    fn delete(&self, key: &[u8]) -> Result<(), BenchError> {
        // SAFETY: as in `put`.
        check("delete", |err| unsafe {
            ffi::leveldb_delete(
                self.db(),
                self.write.0.as_ptr(),
                key.as_ptr().cast(),
                key.len(),
                err,
            )
        })
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, BenchError> {
        let mut len = 0usize;
        // SAFETY: the database and read options are live; LevelDB reads `key` during the call
        // only and writes the value length to `len`; `err` is a valid error slot.
        let p = check("get", |err| unsafe {
            ffi::leveldb_get(
                self.db(),
                self.read.0.as_ptr(),
                key.as_ptr().cast(),
                key.len(),
                &mut len,
                err,
            )
        })?;
        // Null without an error means not found. (A found empty value is a malloc(0) copy,
        // which glibc returns non-null, so it is not mistaken for a missing key.)
        Ok(NonNull::new(p).map(|ptr| Malloced { ptr, len }.to_vec()))
    }

    fn scan_from(&self, key: &[u8], n: usize) -> Result<(u64, u64), BenchError> {
        cursor::scan_from(Iter::new(&self.db, &self.read)?, key, n)
    }

    fn scan_all(
        &self,
        n: usize,
        reverse: bool,
        each: &mut dyn FnMut(u64),
    ) -> Result<(), BenchError> {
        cursor::scan_all(Iter::new(&self.db, &self.read)?, n, reverse, each)
    }

    /// The C API has no flush, but `CompactRange` first writes the memtable out to a table
    /// file (always, whatever the range) and waits for it, then compacts only the levels
    /// overlapping the range. An empty range (both ends the empty key: non-null pointers of
    /// length 0; null would mean "unbounded") overlaps no table file unless the empty key
    /// was written, so this is a flush. Checked: after a fill that fits in the memtable, a
    /// `.ldb` file appears only with this call (tests/bench_leveldb.rs).
    fn flush(&self) -> Result<(), BenchError> {
        let empty = [0u8; 1];
        let p = empty.as_ptr().cast::<c_char>();
        // SAFETY: the database is live; both ends point at a live buffer and have length 0,
        // so LevelDB reads nothing through them.
        unsafe { ffi::leveldb_compact_range(self.db(), p, 0, p, 0) };
        Ok(())
    }

    fn compact(&self) -> Result<(), BenchError> {
        // SAFETY: the database is live; null ends mean the whole key range.
        unsafe { ffi::leveldb_compact_range(self.db(), ptr::null(), 0, ptr::null(), 0) };
        Ok(())
    }

    /// LevelDB exposes no "compaction pending" signal: polls its `leveldb.stats` table
    /// (files, sizes and cumulative compaction time per level) until it has not changed for
    /// half a second (5 polls). LevelDB compacts one 2 MiB table at a time, in well under
    /// that.
    fn wait_for_compactions(&self) -> Result<(), BenchError> {
        super::wait_until_stable(
            || Ok(self.property(c"leveldb.stats")),
            std::time::Duration::from_millis(100),
            5,
            std::time::Duration::from_secs(3600),
        )
    }
}
