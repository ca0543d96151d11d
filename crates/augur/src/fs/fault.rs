//! [`FaultFs`]: an in-memory file system that models durability exactly and injects
//! failures, tears and power cuts, for crash-consistency tests (LevelDB
//! `fault_injection_test`, redb `crash_consistency`).
//!
//! It is a [`MemFs`] (which already tracks durable file prefixes and durable directory
//! entries, see its module doc) plus a [`FaultPlan`] consulted by every counted operation:
//! - [`FaultOp::Write`] counts `WritableFile::append`; [`FaultOp::Sync`] counts
//!   `WritableFile::sync` and `FileSystem::sync_dir`; [`FaultOp::Rename`] and
//!   [`FaultOp::Remove`] count those calls; [`FaultOp::Any`] counts all of them plus
//!   `FileSystem::create`. Reads, listings, `flush`, `create_dir_all` and `lock` are not
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

use super::mem::MemFs;
use super::{FileLock, FileSystem, RandomAccessFile, ReadMode, WritableFile};
use crate::error::Result;
use std::path::Path;
use std::sync::Arc;

/// A kind of operation that faults can target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FaultOp {
    /// `WritableFile::append`.
    Write,
    /// `WritableFile::sync` or `FileSystem::sync_dir`.
    Sync,
    /// `FileSystem::rename`.
    Rename,
    /// `FileSystem::remove`.
    Remove,
    /// Any of the above, or `FileSystem::create`.
    Any,
}

/// What an injected failure does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultMode {
    /// Return an `Error::Io` without any effect.
    Error,
    /// Do part of the work, then return an `Error::Io`: a write appends a prefix of its
    /// bytes, a file sync makes a prefix of the pending bytes durable (a quarter, a half or
    /// three quarters, varying with the operation's sequence number). Any other operation
    /// behaves as with [`FaultMode::Error`].
    Tear,
}

/// The operations the file system reports to the [`FaultPlan`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum OpKind {
    Write,
    Sync,
    Rename,
    Remove,
    Create,
}

impl OpKind {
    /// The specific [`FaultOp`] counting this operation (`Create` only counts as `Any`).
    fn fault_op(self) -> Option<FaultOp> {
        match self {
            OpKind::Write => Some(FaultOp::Write),
            OpKind::Sync => Some(FaultOp::Sync),
            OpKind::Rename => Some(FaultOp::Rename),
            OpKind::Remove => Some(FaultOp::Remove),
            OpKind::Create => None,
        }
    }
}

/// The plan's decision for one operation, strongest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Verdict {
    /// Crash now; the operation fails.
    Crash,
    /// Fail without effect.
    Fail,
    /// Do part of the work and fail; carries the operation's sequence number.
    Tear(u64),
    /// Go ahead.
    Proceed,
}

#[derive(Debug, Clone, Copy)]
enum Action {
    /// Fail the operation whose count equals `at`.
    Once(FaultMode),
    /// Fail every operation whose count is at least `at`.
    From(FaultMode),
    /// Crash before the operation whose count equals `at`.
    Crash,
}

#[derive(Debug, Clone, Copy)]
struct Trigger {
    op: FaultOp,
    /// Absolute value of the `op` counter at which the trigger fires.
    at: u64,
    action: Action,
}

/// Operation counters and armed triggers; lives inside the `MemFs` state mutex so counting,
/// firing and crashing are atomic with the operations themselves.
#[derive(Debug, Default)]
pub(super) struct FaultPlan {
    /// Indexed by [`slot`]: Write, Sync, Rename, Remove, Any.
    counts: [u64; 5],
    triggers: Vec<Trigger>,
}

fn slot(op: FaultOp) -> usize {
    match op {
        FaultOp::Write => 0,
        FaultOp::Sync => 1,
        FaultOp::Rename => 2,
        FaultOp::Remove => 3,
        FaultOp::Any => 4,
    }
}

impl FaultPlan {
    fn count(&self, op: FaultOp) -> u64 {
        self.counts.get(slot(op)).copied().unwrap_or(0)
    }

    fn bump(&mut self, op: FaultOp) {
        if let Some(c) = self.counts.get_mut(slot(op)) {
            *c += 1;
        }
    }

    /// Arms `action` for the `n`-th (1-based; 0 counts as 1) next operation of kind `op`.
    fn arm(&mut self, op: FaultOp, n: u64, action: Action) {
        let at = self.count(op).saturating_add(n.max(1));
        self.triggers.push(Trigger { op, at, action });
    }

    /// Drops every armed trigger (counters keep running).
    pub(super) fn disarm_all(&mut self) {
        self.triggers.clear();
    }

    /// Counts one operation and decides its fate. One-shot triggers that fire are removed.
    pub(super) fn admit(&mut self, kind: OpKind) -> Verdict {
        let specific = kind.fault_op();
        if let Some(op) = specific {
            self.bump(op);
        }
        self.bump(FaultOp::Any);
        let counts = self.counts;
        let seq = self.count(FaultOp::Any);
        let mut verdict = Verdict::Proceed;
        self.triggers.retain(|t| {
            if t.op != FaultOp::Any && Some(t.op) != specific {
                return true;
            }
            let count = counts.get(slot(t.op)).copied().unwrap_or(0);
            let (fired, keep) = match t.action {
                Action::Once(_) | Action::Crash => (count == t.at, count != t.at),
                Action::From(_) => (count >= t.at, true),
            };
            if fired {
                let this = match t.action {
                    Action::Crash => Verdict::Crash,
                    Action::Once(FaultMode::Error) | Action::From(FaultMode::Error) => {
                        Verdict::Fail
                    }
                    Action::Once(FaultMode::Tear) | Action::From(FaultMode::Tear) => {
                        Verdict::Tear(seq)
                    }
                };
                verdict = stronger(verdict, this);
            }
            keep
        });
        verdict
    }
}

fn stronger(a: Verdict, b: Verdict) -> Verdict {
    fn rank(v: Verdict) -> u8 {
        match v {
            Verdict::Crash => 3,
            Verdict::Fail => 2,
            Verdict::Tear(_) => 1,
            Verdict::Proceed => 0,
        }
    }
    if rank(b) > rank(a) {
        b
    } else {
        a
    }
}

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

    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        self.mem.lock(path)
    }
}
