//! The live-table limit: how many table files one database may keep open before the kernel
//! refuses to map (or open) another, and the check the executor makes before a compaction
//! adds files.
//!
//! Under [`ReadMode::Mmap`] every open table is one memory mapping (its descriptor is closed
//! once mapped) and a process holds at most `vm.max_map_count` mappings (Linux default
//! 65,530): past it `mmap` fails with ENOMEM, the table cannot be opened, the version edit
//! fails and the database is poisoned with an error that names neither the cause nor a cure.
//! Under [`ReadMode::Pread`] every open table keeps a descriptor, bounded by the soft
//! open-files limit (`RLIMIT_NOFILE`, `ulimit -n`; EMFILE past it). Both kernel limits are
//! shared with the rest of the process — value-log segments (mapped or opened the same way),
//! WALs, the manifest, libraries, thread stacks, other databases — so a quarter is left to
//! them: `max_live_tables = kernel_limit − kernel_limit / 4` (49,148 of the default 65,530
//! mappings). The kernel limit is read from `/proc/sys/vm/max_map_count` or
//! `/proc/self/limits` through the database's [`FileSystem`]; where it cannot be read (not
//! Linux, an in-memory file system) the Linux defaults are assumed (65,530 mappings, 1,024
//! descriptors).
//!
//! A compaction whose outputs would raise the live table count past the limit is refused
//! with `Error::ResourceLimit` naming the cause and the options to change, before the
//! offending output is written. A compaction that does not raise the count always runs, so a
//! database already past the limit can still compact. Flushes are not checked: each adds one
//! L0 file, and L0 holds at most `l0_stop_trigger` files before writes wait for a compaction,
//! which is checked — a few files, well inside the headroom.

use crate::error::{Error, Result};
use crate::fs::{FileSystem, ReadMode};
use crate::options::Options;
use std::path::Path;

/// Mappings per process assumed when `/proc/sys/vm/max_map_count` cannot be read (the kernel's
/// default).
pub const DEFAULT_MAX_MAP_COUNT: u64 = 65_530;

/// Open files per process assumed when the soft `RLIMIT_NOFILE` cannot be read (the usual
/// Linux default soft limit).
pub const DEFAULT_OPEN_FILES: u64 = 1024;

/// How many live tables a database may hold, and the kernel limit it comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TableLimit {
    /// Live tables allowed: three quarters of `kernel_limit`.
    pub max_live_tables: u64,
    /// The kernel's per-process limit on mappings (mmap) or open files (pread).
    pub kernel_limit: u64,
    /// The read mode the limit applies to.
    pub mode: ReadMode,
    /// False when the kernel limit could not be read and the default was assumed.
    pub measured: bool,
}

impl TableLimit {
    /// The limit for tables read through `mode`, from the kernel's limit (read through `fs`)
    /// or its Linux default.
    pub fn read(fs: &dyn FileSystem, mode: ReadMode) -> Self {
        let read = match mode {
            ReadMode::Mmap => fs
                .read_all(Path::new("/proc/sys/vm/max_map_count"))
                .ok()
                .and_then(|b| parse_max_map_count(&b)),
            ReadMode::Pread | ReadMode::Direct => fs
                .read_all(Path::new("/proc/self/limits"))
                .ok()
                .and_then(|b| parse_open_files_soft_limit(&b)),
        };
        let default = match mode {
            ReadMode::Mmap => DEFAULT_MAX_MAP_COUNT,
            ReadMode::Pread | ReadMode::Direct => DEFAULT_OPEN_FILES,
        };
        Self::from_kernel_limit(read.unwrap_or(default), mode, read.is_some())
    }

    /// The limit left by a kernel limit of `kernel_limit` mappings or files.
    pub fn from_kernel_limit(kernel_limit: u64, mode: ReadMode, measured: bool) -> Self {
        TableLimit {
            max_live_tables: kernel_limit - kernel_limit / 4,
            kernel_limit,
            mode,
            measured,
        }
    }

    /// Whether a compaction that takes the live table count from `live_before` to
    /// `live_after` may proceed: always when it does not raise the count, else when the
    /// count stays within the limit.
    ///
    /// # Errors
    /// `Error::ResourceLimit` naming the limit, where it comes from and the options that
    /// lower the number of files (`target_file_size_bytes`, the kernel limit, `read_mode`).
    pub fn check(&self, live_before: u64, live_after: u64, opts: &Options) -> Result<()> {
        if live_after <= live_before || live_after <= self.max_live_tables {
            return Ok(());
        }
        let (limit, unit, other) = match self.mode {
            ReadMode::Mmap => (
                "vm.max_map_count",
                "memory mapping",
                "or read with `read_mode` pread (one open file per table instead)",
            ),
            ReadMode::Pread | ReadMode::Direct => (
                "the soft open-files limit (RLIMIT_NOFILE, `ulimit -n`)",
                "open file",
                "or read with `read_mode` mmap (one mapping per table instead)",
            ),
        };
        let source = if self.measured {
            format!("{limit} = {}", self.kernel_limit)
        } else {
            format!("{limit}, unreadable here, assumed {}", self.kernel_limit)
        };
        Err(Error::ResourceLimit(format!(
            "compaction refused: it would leave {live_after} live table files, more than the \
             {} allowed ({source}, less a quarter kept for value-log segments, WALs and the \
             rest of the process; under `read_mode` {} each table holds one {unit}). Raise \
             `target_file_size_bytes` (now {} bytes) so that fewer, larger files are \
             written, set `max_open_files` (tables beyond it are opened on demand), raise \
             {limit}, {other}",
            self.max_live_tables,
            mode_name(self.mode),
            opts.target_file_size_bytes,
        )))
    }
}

impl TableLimit {
    /// Whether a database whose manifest lists `tables` live tables can be opened at all:
    /// past the kernel's own limit, opening them would fail half-way with a bare ENOMEM or
    /// EMFILE.
    ///
    /// # Errors
    /// `Error::ResourceLimit` naming the count, the limit and the way out.
    pub fn check_open(&self, tables: u64) -> Result<()> {
        if tables < self.kernel_limit {
            return Ok(());
        }
        let (limit, cure) = match self.mode {
            ReadMode::Mmap => (
                "vm.max_map_count",
                "set `max_open_files`, raise vm.max_map_count (sysctl), or open with `read_mode` \
                 pread and enough open files (`ulimit -n`)",
            ),
            ReadMode::Pread | ReadMode::Direct => (
                "the soft open-files limit (RLIMIT_NOFILE)",
                "raise `ulimit -n`, set `max_open_files`, or open with `read_mode` mmap",
            ),
        };
        Err(Error::ResourceLimit(format!(
            "the database holds {tables} live table files and {limit} is {}: each needs one \
             {} under `read_mode` {}, so opening them would fail. To open it, {cure}; then \
             compact it with a larger `target_file_size_bytes` to need fewer files",
            self.kernel_limit,
            match self.mode {
                ReadMode::Mmap => "memory mapping",
                ReadMode::Pread | ReadMode::Direct => "open file",
            },
            mode_name(self.mode),
        )))
    }
}

fn mode_name(mode: ReadMode) -> &'static str {
    mode.name()
}

/// The value of `/proc/sys/vm/max_map_count`: one decimal number.
fn parse_max_map_count(bytes: &[u8]) -> Option<u64> {
    std::str::from_utf8(bytes).ok()?.trim().parse().ok()
}

/// The soft limit of the `Max open files` line of `/proc/self/limits` (`unlimited` is
/// `u64::MAX`).
fn parse_open_files_soft_limit(bytes: &[u8]) -> Option<u64> {
    let text = std::str::from_utf8(bytes).ok()?;
    let line = text.lines().find(|l| l.starts_with("Max open files"))?;
    let soft = line
        .strip_prefix("Max open files")?
        .split_whitespace()
        .next()?;
    if soft == "unlimited" {
        return Some(u64::MAX);
    }
    soft.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::MemFs;

    #[test]
    fn a_quarter_of_the_kernel_limit_is_headroom() {
        let l = TableLimit::from_kernel_limit(65_530, ReadMode::Mmap, true);
        assert_eq!(l.max_live_tables, 49_148);
        let l = TableLimit::from_kernel_limit(1024, ReadMode::Pread, true);
        assert_eq!(l.max_live_tables, 768);
        let l = TableLimit::from_kernel_limit(u64::MAX, ReadMode::Pread, true);
        assert!(l.max_live_tables > 1 << 60);
    }

    #[test]
    fn only_compactions_that_raise_the_count_past_the_limit_are_refused() {
        let opts = Options::default();
        let l = TableLimit::from_kernel_limit(65_530, ReadMode::Mmap, true);
        assert!(l.check(100, 49_148, &opts).is_ok(), "at the limit");
        assert!(l.check(60_000, 59_000, &opts).is_ok(), "lowers the count");
        assert!(l.check(60_000, 60_000, &opts).is_ok(), "keeps the count");
        match l.check(49_000, 49_149, &opts) {
            Err(Error::ResourceLimit(m)) => {
                for part in [
                    "49149 live table files",
                    "49148 allowed",
                    "vm.max_map_count = 65530",
                    "target_file_size_bytes` (now 33554432 bytes)",
                    "read_mode` pread",
                ] {
                    assert!(m.contains(part), "{part:?} missing from: {m}");
                }
            }
            other => panic!("past the limit: {other:?}"),
        }
        let l = TableLimit::from_kernel_limit(DEFAULT_OPEN_FILES, ReadMode::Pread, false);
        let m = l.check(700, 769, &opts).unwrap_err().to_string();
        assert!(
            m.contains("RLIMIT_NOFILE") && m.contains("assumed 1024"),
            "{m}"
        );
        assert!(m.contains("read_mode` mmap"), "{m}");
    }

    #[test]
    fn kernel_limits_are_parsed_or_defaulted() {
        assert_eq!(parse_max_map_count(b"65530\n"), Some(65_530));
        assert_eq!(parse_max_map_count(b"lots"), None);
        let limits =
            b"Limit                     Soft Limit           Hard Limit           Units     \n\
Max cpu time              unlimited            unlimited            seconds   \n\
Max open files            20000                40000                files     \n";
        assert_eq!(parse_open_files_soft_limit(limits), Some(20_000));
        let unlimited =
            b"Max open files            unlimited            unlimited            files\n";
        assert_eq!(parse_open_files_soft_limit(unlimited), Some(u64::MAX));
        assert_eq!(parse_open_files_soft_limit(b"Max processes 5 5\n"), None);
        // An in-memory file system has no /proc: the Linux defaults.
        let fs = MemFs::new();
        let l = TableLimit::read(&fs, ReadMode::Mmap);
        assert_eq!((l.kernel_limit, l.measured), (DEFAULT_MAX_MAP_COUNT, false));
        let l = TableLimit::read(&fs, ReadMode::Pread);
        assert_eq!((l.kernel_limit, l.measured), (DEFAULT_OPEN_FILES, false));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_real_limits_are_read_on_linux() {
        let l = TableLimit::read(&crate::fs::StdFs, ReadMode::Mmap);
        assert!(l.measured && l.kernel_limit > 0, "{l:?}");
        let l = TableLimit::read(&crate::fs::StdFs, ReadMode::Pread);
        assert!(l.measured && l.kernel_limit > 0, "{l:?}");
    }
}
