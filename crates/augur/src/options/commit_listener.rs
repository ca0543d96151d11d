//! The commit listener: an application's view of every write batch the engine commits, in
//! commit order ([`Options::commit_listener`](super::Options::commit_listener)). Replication
//! is its user: augur-server appends each committed group to its replication backlog and
//! streams it to replicas (docs/replication.md).
//!
//! Where it sits on the write path (`db/write.rs`): a group's leader calls it once per
//! commit group, under the commit lock, after the group's WAL record was written and its
//! entries inserted into the memtable, and before the group's sequence numbers are
//! published to readers. So the calls come one at a time, in sequence-number order, each
//! for a group whose writes are committed, and a reader that sees a write (a checkpoint's
//! pinned sequence number included) knows the listener was told of it first.
//!
//! What it is told: the *logical* operations of the group's batches as the application
//! wrote them — user key, kind, the user's value bytes (a separated value's bytes, not its
//! value-log pointer) and an expiring value's absolute expiry time. Nothing the engine
//! writes by itself (flushes, compactions, value-log GC relocations, expiry rewrites) goes
//! through the write path, so none of it reaches the listener.
//!
//! Cost: unset (the default), one test of an `Option` per commit group. Set, separated
//! values are kept until the call (no copy) and the listener runs inside the commit lock:
//! it must be quick (append to a buffer, wake a thread) and must never write to the
//! database itself (the commit lock is held: it would deadlock).

use crate::key::SeqNo;

/// The kind of one committed operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommitKind {
    /// A put of a value without expiry.
    Put,
    /// A put of a value that expires at this time (milliseconds since the Unix epoch).
    PutExpiring(u64),
    /// A deletion (the value is empty).
    Delete,
}

/// One operation of a committed group, borrowed for the duration of the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommitOp<'a> {
    /// What the operation does.
    pub kind: CommitKind,
    /// The user key.
    pub key: &'a [u8],
    /// The user's value (empty for a deletion).
    pub value: &'a [u8],
}

/// Told of every committed write group, in commit order (see the module doc).
///
/// # Contract
///
/// - Called once per commit group with `first_seqno`, the sequence number of `ops[0]`;
///   operation `i` has sequence number `first_seqno + i`, and the next call's
///   `first_seqno` is above this group's last (internal work may use numbers in between).
/// - Called under the engine's commit lock: no other group commits until it returns. It
///   must not block for long, and must not call back into the database's write path.
/// - Infallible: the group is already durable in the WAL as the write asked; a listener
///   that cannot keep up must drop and recover on its own (augur-server's backlog drops
///   its oldest bytes; a replica beyond them resynchronizes in full).
pub trait CommitListener: Send + Sync + std::fmt::Debug {
    /// One committed group (see the trait's contract).
    fn on_commit(&self, first_seqno: SeqNo, ops: &[CommitOp<'_>]);
}
