//! The fault plan of [`FaultFs`](super::FaultFs): which counted operation fails, tears or
//! cuts the power, consulted by [`MemFs`](super::MemFs) at every counted operation. Apart
//! from both so that neither file system's file imports the other's.

/// A kind of operation that faults can target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FaultOp {
    /// `WritableFile::append`.
    Write,
    /// `WritableFile::sync`, `FileSystem::sync_file` or `FileSystem::sync_dir`.
    Sync,
    /// `FileSystem::rename` or `FileSystem::rename_dir`.
    Rename,
    /// `FileSystem::remove` or `FileSystem::remove_dir`.
    Remove,
    /// Any of the above, `FileSystem::create`, `FileSystem::open_append` or
    /// `FileSystem::hard_link`.
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
pub(super) enum Action {
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
    pub(super) fn count(&self, op: FaultOp) -> u64 {
        self.counts.get(slot(op)).copied().unwrap_or(0)
    }

    fn bump(&mut self, op: FaultOp) {
        if let Some(c) = self.counts.get_mut(slot(op)) {
            *c += 1;
        }
    }

    /// Arms `action` for the `n`-th (1-based; 0 counts as 1) next operation of kind `op`.
    pub(super) fn arm(&mut self, op: FaultOp, n: u64, action: Action) {
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
