//! [`FaultFs`]: an in-memory file system that models durability exactly and injects
//! failures, tears and power cuts, for crash-consistency tests (LevelDB
//! `fault_injection_test`, redb `crash_consistency`).
//!
//! It is a [`MemFs`] (which already tracks durable file prefixes and durable directory
//! entries, see its module doc) plus a fault plan consulted by every counted operation:
//! - [`FaultOp::Write`] counts `WritableFile::append`; [`FaultOp::Sync`] counts
//!   `WritableFile::sync`, `FileSystem::sync_file` and `FileSystem::sync_dir`; [`FaultOp::Rename`] and
//!   [`FaultOp::Remove`] count those calls (`rename_dir` and `remove_dir` included);
//!   [`FaultOp::Any`] counts all of them plus `FileSystem::create`,
//!   `FileSystem::open_append` and `FileSystem::hard_link`. Reads, listings, `flush`, `create_dir_all` and `lock` are not
//!   counted and never fail by injection. Calls rejected before reaching the disk (missing
//!   file, dead handle, file system down) are not counted either.
//! - [`FaultFs::fail_at`] fails exactly one operation; [`FaultFs::fail_from`] fails one and
//!   every later one of that kind (a dead disk) until [`FaultFs::reset_faults`].
//! - A crash ([`FaultFs::crash`], or one armed with [`FaultFs::crash_at`]) is a power cut:
//!   every directory reverts to its entries as of its last `sync_dir`, every file to its
//!   content as of its last `sync`, locks are released, armed faults are cleared, every
//!   handle opened before it is dead for good, and the file system is **down**: every
//!   operation through any handle fails with `Error::Io` (and `exists` is false), so the dead
//!   process cannot touch the "disk" any more. [`FaultFs::reopen_after_crash`] (or
//!   [`FaultFs::reset_faults`]) boots it again; new handles then see the durable state.
//!
//! Typical crash test: `crash_at(FaultOp::Any, n)`, run the workload until it errors or
//! ends, drop the database, `reset_faults()`, reopen on the same `FaultFs`, check.

use super::fault_plan::{Action, FaultMode, FaultOp};
use super::mem::MemFs;
use super::{FileLock, FileSystem, RandomAccessFile, ReadMode, WritableFile};
use crate::error::Result;
use std::path::Path;
use std::sync::Arc;

/// An in-memory, fault-injecting file system with exact durability (see the module doc).
/// Cloning is cheap: clones share the same files, faults and crash state.
#[derive(Clone, Default, Debug)]
pub struct FaultFs {
    mem: MemFs,
}

impl FaultFs {
    /// An empty file system with no armed faults.
    pub fn new() -> Self {
        Self::default()
    }

    /// Makes the `n`-th operation of kind `op` from now (1-based) fail with `mode`; later
    /// operations are unaffected.
    pub fn fail_at(&self, op: FaultOp, n: u64, mode: FaultMode) {
        self.mem
            .with_state(|s| s.faults.arm(op, n, Action::Once(mode)));
    }

    /// Makes the `n`-th operation of kind `op` from now and every later one fail with
    /// [`FaultMode::Error`], until [`Self::reset_faults`] or a crash.
    pub fn fail_from(&self, op: FaultOp, n: u64) {
        self.mem
            .with_state(|s| s.faults.arm(op, n, Action::From(FaultMode::Error)));
    }

    /// Crashes the file system (as [`Self::crash`]) just before the `n`-th operation of kind
    /// `op` from now; that operation fails, and so does everything after it until
    /// [`Self::reopen_after_crash`] or [`Self::reset_faults`].
    pub fn crash_at(&self, op: FaultOp, n: u64) {
        self.mem.with_state(|s| s.faults.arm(op, n, Action::Crash));
    }

    /// Simulates a power cut now: only synced content and `sync_dir`ed names survive, old
    /// handles die, locks are released, faults are disarmed, and the file system is down
    /// until [`Self::reopen_after_crash`].
    pub fn crash(&self) {
        self.mem.with_state(|s| s.crash());
    }

    /// Boots the file system after a crash so new handles work (no-op if it is up).
    pub fn reopen_after_crash(&self) {
        self.mem.with_state(|s| s.restart());
    }

    /// Disarms every armed fault and, if the file system is down after a crash, boots it.
    pub fn reset_faults(&self) {
        self.mem.with_state(|s| {
            s.faults.disarm_all();
            s.restart();
        });
    }

    /// True between a crash and [`Self::reopen_after_crash`].
    pub fn is_crashed(&self) -> bool {
        self.mem.with_state(|s| s.is_down())
    }

    /// Operations of kind `op` counted since the file system was created (crashes do not
    /// reset the counters). Use it to choose `n` for [`Self::crash_at`].
    pub fn op_count(&self, op: FaultOp) -> u64 {
        self.mem.with_state(|s| s.faults.count(op))
    }
}

impl FileSystem for FaultFs {
    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        self.mem.create_dir_all(dir)
    }

    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        self.mem.create(path)
    }

    fn open_append(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        self.mem.open_append(path)
    }

    fn open(&self, path: &Path, mode: ReadMode) -> Result<Arc<dyn RandomAccessFile>> {
        self.mem.open(path, mode)
    }

    fn read_all(&self, path: &Path) -> Result<Vec<u8>> {
        self.mem.read_all(path)
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        self.mem.rename(from, to)
    }

    fn remove(&self, path: &Path) -> Result<()> {
        self.mem.remove(path)
    }

    fn list(&self, dir: &Path) -> Result<Vec<String>> {
        self.mem.list(dir)
    }

    fn exists(&self, path: &Path) -> bool {
        self.mem.exists(path)
    }

    fn size(&self, path: &Path) -> Result<u64> {
        self.mem.size(path)
    }

    fn sync_dir(&self, dir: &Path) -> Result<()> {
        self.mem.sync_dir(dir)
    }

    fn sync_file(&self, path: &Path) -> Result<()> {
        self.mem.sync_file(path)
    }

    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        self.mem.lock(path)
    }

    fn hard_link(&self, from: &Path, to: &Path) -> Result<()> {
        self.mem.hard_link(from, to)
    }

    fn rename_dir(&self, from: &Path, to: &Path) -> Result<()> {
        self.mem.rename_dir(from, to)
    }

    fn remove_dir(&self, dir: &Path) -> Result<()> {
        self.mem.remove_dir(dir)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use std::path::PathBuf;

    const DIR: &str = "/db";

    fn p(name: &str) -> PathBuf {
        Path::new(DIR).join(name)
    }

    fn fresh() -> FaultFs {
        let fs = FaultFs::new();
        fs.create_dir_all(Path::new(DIR)).unwrap();
        fs
    }

    /// Creates `name` with `data`, syncs it and makes its name durable.
    fn durable_file(fs: &FaultFs, name: &str, data: &[u8]) {
        let mut w = fs.create(&p(name)).unwrap();
        w.append(data).unwrap();
        w.sync().unwrap();
        fs.sync_dir(Path::new(DIR)).unwrap();
    }

    fn power_cut(fs: &FaultFs) {
        fs.crash();
        assert!(fs.is_crashed());
        fs.reopen_after_crash();
        assert!(!fs.is_crashed());
    }

    fn names(fs: &FaultFs) -> Vec<String> {
        fs.list(Path::new(DIR)).unwrap()
    }

    #[test]
    fn unsynced_data_is_lost_and_synced_data_kept() {
        let fs = fresh();
        let mut w = fs.create(&p("wal")).unwrap();
        fs.sync_dir(Path::new(DIR)).unwrap();
        w.append(b"synced").unwrap();
        w.sync().unwrap();
        w.append(b"-unsynced").unwrap();
        w.flush().unwrap();
        assert_eq!(fs.read_all(&p("wal")).unwrap(), b"synced-unsynced");
        power_cut(&fs);
        assert_eq!(fs.read_all(&p("wal")).unwrap(), b"synced");
    }

    #[test]
    fn sync_file_makes_what_an_old_handle_appended_durable() {
        let fs = fresh();
        let mut w = fs.create(&p("seg")).unwrap();
        fs.sync_dir(Path::new(DIR)).unwrap();
        w.append(b"synced").unwrap();
        w.sync().unwrap();
        w.append(b"+handed to the OS").unwrap();
        drop(w);
        let syncs = fs.op_count(FaultOp::Sync);
        fs.sync_file(&p("seg")).unwrap();
        assert_eq!(fs.op_count(FaultOp::Sync), syncs + 1, "counted as a sync");
        power_cut(&fs);
        assert_eq!(fs.read_all(&p("seg")).unwrap(), b"synced+handed to the OS");
        // Faults apply to it like to any sync; a missing file is NotFound.
        fs.fail_at(FaultOp::Sync, 1, FaultMode::Error);
        assert!(fs.sync_file(&p("seg")).is_err());
        assert!(fs.sync_file(&p("missing")).is_err());
    }

    #[test]
    fn synced_file_without_durable_name_disappears() {
        let fs = fresh();
        durable_file(&fs, "old", b"x");
        let mut w = fs.create(&p("new")).unwrap();
        w.append(b"data").unwrap();
        w.sync().unwrap();
        power_cut(&fs);
        assert_eq!(names(&fs), vec!["old"]);
        assert!(!fs.exists(&p("new")));
        // The directory itself, made by create_dir_all, survives.
        assert!(fs.exists(Path::new(DIR)));
    }

    #[test]
    fn rename_without_sync_dir_is_reverted() {
        let fs = fresh();
        durable_file(&fs, "CURRENT", b"old");
        durable_file(&fs, "CURRENT.tmp", b"new");
        fs.rename(&p("CURRENT.tmp"), &p("CURRENT")).unwrap();
        assert_eq!(fs.read_all(&p("CURRENT")).unwrap(), b"new");
        power_cut(&fs);
        assert_eq!(names(&fs), vec!["CURRENT", "CURRENT.tmp"]);
        assert_eq!(fs.read_all(&p("CURRENT")).unwrap(), b"old");
        assert_eq!(fs.read_all(&p("CURRENT.tmp")).unwrap(), b"new");
    }

    #[test]
    fn rename_with_sync_dir_is_kept() {
        let fs = fresh();
        durable_file(&fs, "CURRENT", b"old");
        durable_file(&fs, "CURRENT.tmp", b"new");
        fs.rename(&p("CURRENT.tmp"), &p("CURRENT")).unwrap();
        fs.sync_dir(Path::new(DIR)).unwrap();
        power_cut(&fs);
        assert_eq!(names(&fs), vec!["CURRENT"]);
        assert_eq!(fs.read_all(&p("CURRENT")).unwrap(), b"new");
    }

    #[test]
    fn remove_without_sync_dir_comes_back() {
        let fs = fresh();
        durable_file(&fs, "a", b"aa");
        durable_file(&fs, "b", b"bb");
        fs.remove(&p("a")).unwrap();
        fs.remove(&p("b")).unwrap();
        fs.create_dir_all(Path::new("/other")).unwrap();
        fs.sync_dir(Path::new("/other")).unwrap();
        power_cut(&fs);
        assert_eq!(names(&fs), vec!["a", "b"]);
        assert_eq!(fs.read_all(&p("a")).unwrap(), b"aa");
    }

    #[test]
    fn recreated_name_reverts_to_the_durable_file() {
        let fs = fresh();
        durable_file(&fs, "f", b"first");
        let mut w = fs.create(&p("f")).unwrap();
        w.append(b"second").unwrap();
        w.sync().unwrap();
        power_cut(&fs);
        assert_eq!(fs.read_all(&p("f")).unwrap(), b"first");
    }

    #[test]
    fn fail_at_write_fails_exactly_the_nth_from_now() {
        let fs = fresh();
        let mut w = fs.create(&p("f")).unwrap();
        w.append(b"a").unwrap();
        fs.fail_at(FaultOp::Write, 3, FaultMode::Error);
        w.append(b"b").unwrap();
        w.append(b"c").unwrap();
        assert!(matches!(w.append(b"d"), Err(Error::Io { .. })));
        w.append(b"e").unwrap();
        w.append(b"f").unwrap();
        assert_eq!(fs.read_all(&p("f")).unwrap(), b"abcef");
        assert_eq!(w.len(), 5);
    }

    #[test]
    fn fail_at_targets_only_its_kind_and_any_counts_everything() {
        let fs = fresh();
        fs.fail_at(FaultOp::Rename, 1, FaultMode::Error);
        let mut w = fs.create(&p("f")).unwrap();
        w.append(b"x").unwrap();
        w.sync().unwrap();
        fs.sync_dir(Path::new(DIR)).unwrap();
        assert!(fs.rename(&p("f"), &p("g")).is_err());
        assert!(fs.exists(&p("f")));
        fs.rename(&p("f"), &p("g")).unwrap();
        // create, append, sync, sync_dir, rename (failed), rename.
        fs.fail_at(FaultOp::Any, 2, FaultMode::Error);
        fs.remove(&p("g")).unwrap();
        assert!(fs.create(&p("h")).is_err());
        assert!(!fs.exists(&p("h")));
        assert_eq!(fs.op_count(FaultOp::Write), 1);
        assert_eq!(fs.op_count(FaultOp::Sync), 2);
        assert_eq!(fs.op_count(FaultOp::Rename), 2);
        assert_eq!(fs.op_count(FaultOp::Remove), 1);
        assert_eq!(fs.op_count(FaultOp::Any), 8);
    }

    #[test]
    fn tear_on_write_leaves_a_proper_prefix() {
        let fs = fresh();
        let data = b"0123456789abcdef";
        for n in 1..=3 {
            let name = format!("f{n}");
            let mut w = fs.create(&p(&name)).unwrap();
            w.append(b"head:").unwrap();
            fs.fail_at(FaultOp::Write, 1, FaultMode::Tear);
            assert!(w.append(data).is_err());
            let content = fs.read_all(&p(&name)).unwrap();
            let tail = content.strip_prefix(b"head:").unwrap();
            assert!(tail.len() < data.len(), "torn write kept everything");
            assert_eq!(tail, &data[..tail.len()]);
            assert_eq!(w.len(), content.len() as u64);
        }
    }

    #[test]
    fn tear_on_sync_makes_only_part_durable() {
        let fs = fresh();
        let mut w = fs.create(&p("f")).unwrap();
        fs.sync_dir(Path::new(DIR)).unwrap();
        w.append(b"durable|").unwrap();
        w.sync().unwrap();
        let pending = [7u8; 100];
        w.append(&pending).unwrap();
        fs.fail_at(FaultOp::Sync, 1, FaultMode::Tear);
        assert!(w.sync().is_err());
        power_cut(&fs);
        let content = fs.read_all(&p("f")).unwrap();
        let tail = content.strip_prefix(b"durable|").unwrap();
        assert!(!tail.is_empty() && tail.len() < pending.len());
        assert!(tail.iter().all(|b| *b == 7));
    }

    #[test]
    fn tear_on_rename_behaves_like_error() {
        let fs = fresh();
        durable_file(&fs, "a", b"a");
        fs.fail_at(FaultOp::Rename, 1, FaultMode::Tear);
        assert!(fs.rename(&p("a"), &p("b")).is_err());
        assert_eq!(names(&fs), vec!["a"]);
    }

    #[test]
    fn fail_from_fails_every_later_op_until_reset() {
        let fs = fresh();
        let mut w = fs.create(&p("f")).unwrap();
        fs.fail_from(FaultOp::Sync, 2);
        w.sync().unwrap();
        for _ in 0..3 {
            assert!(w.sync().is_err());
            assert!(fs.sync_dir(Path::new(DIR)).is_err());
        }
        w.append(b"writes still work").unwrap();
        fs.reset_faults();
        w.sync().unwrap();
        fs.sync_dir(Path::new(DIR)).unwrap();
    }

    #[test]
    fn handles_opened_before_a_crash_are_dead() {
        let fs = fresh();
        let mut w = fs.create(&p("f")).unwrap();
        w.append(b"abc").unwrap();
        w.sync().unwrap();
        fs.sync_dir(Path::new(DIR)).unwrap();
        let r = fs.open(&p("f"), ReadMode::Pread).unwrap();
        let guard = fs.lock(&p("LOCK")).unwrap();
        power_cut(&fs);
        let mut buf = [0u8; 1];
        assert!(matches!(w.append(b"d"), Err(Error::Io { .. })));
        assert!(w.flush().is_err());
        assert!(w.sync().is_err());
        assert!(matches!(
            r.read_exact_at(0, &mut buf),
            Err(Error::Io { .. })
        ));
        assert!(r.len().is_err());
        assert_eq!(fs.read_all(&p("f")).unwrap(), b"abc");
        // The crash released the lock; dropping the dead guard must not release a new one.
        let new_guard = fs.lock(&p("LOCK")).unwrap();
        drop(guard);
        assert!(matches!(fs.lock(&p("LOCK")), Err(Error::Busy(_))));
        drop(new_guard);
        // New handles on the same file work.
        let r = fs.open(&p("f"), ReadMode::Pread).unwrap();
        r.read_exact_at(2, &mut buf).unwrap();
        assert_eq!(&buf, b"c");
    }

    #[test]
    fn crash_at_freezes_until_reopen() {
        let fs = fresh();
        let mut w = fs.create(&p("wal")).unwrap();
        fs.sync_dir(Path::new(DIR)).unwrap();
        fs.crash_at(FaultOp::Sync, 2);
        w.append(b"one").unwrap();
        w.sync().unwrap();
        w.append(b"two").unwrap();
        assert!(w.sync().is_err(), "the 2nd sync is the crash point");
        assert!(fs.is_crashed());
        // Frozen: the dead process can neither write nor touch the namespace.
        assert!(w.append(b"three").is_err());
        assert!(fs.create(&p("other")).is_err());
        assert!(fs.rename(&p("wal"), &p("x")).is_err());
        assert!(fs.list(Path::new(DIR)).is_err());
        assert!(fs.read_all(&p("wal")).is_err());
        assert!(!fs.exists(&p("wal")));
        let count = fs.op_count(FaultOp::Any);
        assert!(fs.sync_dir(Path::new(DIR)).is_err());
        assert_eq!(
            fs.op_count(FaultOp::Any),
            count,
            "rejected ops are not counted"
        );
        fs.reset_faults();
        assert!(!fs.is_crashed());
        assert_eq!(names(&fs), vec!["wal"]);
        assert_eq!(fs.read_all(&p("wal")).unwrap(), b"one");
        let mut w = fs.create(&p("wal2")).unwrap();
        w.append(b"fresh").unwrap();
        w.sync().unwrap();
    }

    #[test]
    fn crash_disarms_pending_faults() {
        let fs = fresh();
        fs.fail_at(FaultOp::Write, 1, FaultMode::Error);
        fs.crash_at(FaultOp::Any, 5);
        power_cut(&fs);
        let mut w = fs.create(&p("f")).unwrap();
        for _ in 0..10 {
            w.append(b"x").unwrap();
        }
        assert!(!fs.is_crashed());
    }

    /// A miniature version of the engine's crash tests: write records to a log, syncing
    /// after each and publishing the log through tmp + rename + sync_dir; crash at every
    /// possible operation and check that what survives is a synced prefix.
    #[test]
    fn crash_at_every_op_leaves_a_synced_prefix() {
        fn workload(fs: &FaultFs, acknowledged: &mut Vec<u8>) -> Result<()> {
            let mut w = fs.create(&p("log.tmp"))?;
            w.append(b"H")?;
            w.sync()?;
            fs.rename(&p("log.tmp"), &p("log"))?;
            fs.sync_dir(Path::new(DIR))?;
            acknowledged.push(b'H');
            for record in [b"r1", b"r2", b"r3"] {
                w.append(record)?;
                w.sync()?;
                acknowledged.extend_from_slice(record);
            }
            Ok(())
        }
        let dry = fresh();
        let before = dry.op_count(FaultOp::Any);
        workload(&dry, &mut Vec::new()).unwrap();
        let total = dry.op_count(FaultOp::Any) - before;
        assert_eq!(total, 11);
        for n in 1..=total + 1 {
            let fs = fresh();
            fs.crash_at(FaultOp::Any, n);
            let mut acknowledged = Vec::new();
            let outcome = workload(&fs, &mut acknowledged);
            assert_eq!(outcome.is_err(), n <= total, "n = {n}");
            fs.reset_faults();
            let recovered = if fs.exists(&p("log")) {
                fs.read_all(&p("log")).unwrap()
            } else {
                Vec::new()
            };
            assert!(
                recovered.starts_with(&acknowledged),
                "n = {n}: lost acknowledged data"
            );
            let written = b"Hr1r2r3";
            assert!(written.starts_with(&recovered), "n = {n}: {recovered:?}");
        }
    }

    #[test]
    fn threads_of_a_dead_process_cannot_write_after_the_crash() {
        let fs = fresh();
        let mut w = fs.create(&p("f")).unwrap();
        fs.sync_dir(Path::new(DIR)).unwrap();
        fs.crash_at(FaultOp::Write, 20);
        let writer = std::thread::spawn(move || {
            let mut ok = 0u32;
            for _ in 0..40 {
                if w.append(b"x").is_ok() && w.sync().is_ok() {
                    ok += 1;
                }
            }
            ok
        });
        let acknowledged = writer.join().unwrap();
        assert_eq!(acknowledged, 19);
        fs.reopen_after_crash();
        assert_eq!(fs.read_all(&p("f")).unwrap(), vec![b'x'; 19]);
    }
}
