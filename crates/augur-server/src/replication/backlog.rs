//! The replication backlog: the newest bytes of the replication stream, kept in memory as
//! whole batch frames (`wire.rs`) with their stream offsets, so that a replica that
//! reconnects within the window resumes from its own offset (`PSYNC` → `+CONTINUE`) and
//! every connected replica's sender reads what it has not sent yet from one place.
//!
//! Invariants: frames are contiguous (`frames[i+1].0 == frames[i].0 + frames[i].1.len()`),
//! `start` is the first retained frame's offset (`end` when empty) and `end` the offset after
//! the last byte (Redis's `master_repl_offset`). The window keeps at most `limit` bytes,
//! dropping whole frames from the front, but always the newest frame.
//!
//! Seqno marks map the local database's sequence numbers to offsets: a mark `(s, o)` says
//! the database as of seqno `s` is the stream up to offset `o`. A primary marks each group
//! its commit listener appends; a replica marks after each applied batch. A full sync finds
//! the offset of a checkpoint's seqno here ([`Backlog::offset_of_seqno`]). Internal engine
//! work consumes no seqno that the marks would miss: only commit groups do, and each is
//! marked.
//!
//! One lock, a leaf: taken by the commit listener (under the engine's commit lock) and
//! briefly by the senders, which clone `Bytes` handles out of it.

use bytes::Bytes;
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::sync::Notify;

/// The window (see the module doc).
pub struct Backlog {
    inner: Mutex<Inner>,
    /// The offset after the last byte, readable without the lock.
    end: AtomicU64,
    /// Woken when bytes arrive (the senders wait on it).
    pub arrived: Notify,
}

struct Inner {
    /// `(offset, frame)`, oldest first.
    frames: VecDeque<(u64, Bytes)>,
    start: u64,
    end: u64,
    bytes: usize,
    limit: usize,
    /// `(seqno, offset)`, oldest first.
    marks: VecDeque<(u64, u64)>,
    /// The newest mark dropped with its frames (or the reset point): seqnos below it are
    /// unknown.
    base: (u64, u64),
}

/// A replica asked for bytes the window no longer holds, or for an offset that is not a
/// frame boundary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gone;

impl Backlog {
    /// An empty window of `limit_bytes` at offset 0, seqno 0.
    pub fn new(limit_bytes: usize) -> Backlog {
        Backlog {
            inner: Mutex::new(Inner {
                frames: VecDeque::new(),
                start: 0,
                end: 0,
                bytes: 0,
                limit: limit_bytes.max(1),
                marks: VecDeque::new(),
                base: (0, 0),
            }),
            end: AtomicU64::new(0),
            arrived: Notify::new(),
        }
    }

    /// Empties the window and restarts it at `offset`, where the database is at `seqno`.
    pub fn reset(&self, offset: u64, seqno: u64) {
        let mut b = self.inner.lock();
        b.frames.clear();
        b.marks.clear();
        b.bytes = 0;
        b.start = offset;
        b.end = offset;
        b.base = (seqno, offset);
        self.end.store(offset, Ordering::Release);
    }

    /// Appends a batch frame; with `seqno`, marks the database's state after it. Drops the
    /// oldest frames beyond the limit and wakes the senders.
    pub fn append(&self, frame: Bytes, seqno: Option<u64>) {
        {
            let mut b = self.inner.lock();
            let at = b.end;
            b.end += frame.len() as u64;
            b.bytes += frame.len();
            b.frames.push_back((at, frame));
            if let Some(s) = seqno {
                let end = b.end;
                b.marks.push_back((s, end));
            }
            b.trim();
            self.end.store(b.end, Ordering::Release);
        }
        self.arrived.notify_waiters();
    }

    /// Marks the database's state at `seqno` as the stream up to the current end.
    pub fn mark(&self, seqno: u64) {
        let mut b = self.inner.lock();
        let end = b.end;
        b.marks.push_back((seqno, end));
    }

    /// The offset after the last byte.
    pub fn offset(&self) -> u64 {
        self.end.load(Ordering::Acquire)
    }

    /// `(first offset held, bytes held, limit)`.
    pub fn window(&self) -> (u64, u64, usize) {
        let b = self.inner.lock();
        (b.start, b.end - b.start, b.limit)
    }

    /// Changes the limit (the next append trims to it).
    pub fn set_limit(&self, limit_bytes: usize) {
        self.inner.lock().limit = limit_bytes.max(1);
    }

    /// Whether a replica can be served from `offset`: the end, or a frame's start within
    /// the window.
    pub fn holds(&self, offset: u64) -> bool {
        self.inner.lock().position(offset).is_ok()
    }

    /// The frames from `offset` on, up to about `max_bytes` (at least one when any): empty
    /// at the end of the stream.
    ///
    /// # Errors
    /// [`Gone`] when `offset` is not in the window at a frame boundary.
    pub fn frames_from(&self, offset: u64, max_bytes: usize) -> Result<Vec<Bytes>, Gone> {
        let b = self.inner.lock();
        let first = b.position(offset)?;
        let mut out = Vec::new();
        let mut taken = 0;
        for (_, f) in b.frames.range(first..) {
            if taken > 0 && taken + f.len() > max_bytes {
                break;
            }
            taken += f.len();
            out.push(f.clone());
        }
        Ok(out)
    }

    /// The stream offset the database's state at `seqno` corresponds to (the newest mark
    /// at or below it), or `None` when `seqno` is older than the marks kept.
    pub fn offset_of_seqno(&self, seqno: u64) -> Option<u64> {
        let b = self.inner.lock();
        if seqno < b.base.0 {
            return None;
        }
        let newer = b.marks.partition_point(|&(s, _)| s <= seqno);
        Some(match newer.checked_sub(1).and_then(|i| b.marks.get(i)) {
            Some(&(_, o)) => o,
            None => b.base.1,
        })
    }
}

impl Inner {
    /// The index of the frame starting at `offset` (`frames.len()` at the end).
    fn position(&self, offset: u64) -> Result<usize, Gone> {
        if offset == self.end {
            return Ok(self.frames.len());
        }
        if offset < self.start || offset > self.end {
            return Err(Gone);
        }
        self.frames
            .binary_search_by_key(&offset, |(o, _)| *o)
            .map_err(|_| Gone)
    }

    /// Drops the oldest frames (and their marks) beyond the limit, keeping the newest.
    fn trim(&mut self) {
        while self.bytes > self.limit && self.frames.len() > 1 {
            if let Some((_, f)) = self.frames.pop_front() {
                self.bytes -= f.len();
            }
            self.start = self.frames.front().map_or(self.end, |(o, _)| *o);
        }
        while let Some(&(s, o)) = self.marks.front() {
            if o >= self.start {
                break;
            }
            self.base = (s, o);
            self.marks.pop_front();
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn frame(n: usize) -> Bytes {
        Bytes::from(vec![b'B'; n])
    }

    #[test]
    fn the_window_keeps_the_newest_frames_and_their_marks() {
        let b = Backlog::new(25);
        b.reset(100, 10);
        b.append(frame(10), Some(11)); // 100..110
        b.append(frame(10), Some(13)); // 110..120
        assert_eq!(b.offset(), 120);
        assert_eq!(b.frames_from(100, 1 << 20).unwrap().len(), 2);
        assert_eq!(b.frames_from(110, 1).unwrap().len(), 1);
        assert!(b.frames_from(120, 10).unwrap().is_empty());
        assert_eq!(b.frames_from(105, 10), Err(Gone));
        assert_eq!(b.offset_of_seqno(10), Some(100));
        assert_eq!(b.offset_of_seqno(12), Some(110));
        assert_eq!(b.offset_of_seqno(99), Some(120));
        assert_eq!(b.offset_of_seqno(9), None);
        b.append(frame(10), Some(14)); // 120..130: drops the first
        assert_eq!(b.window(), (110, 20, 25));
        assert!(!b.holds(100) && b.holds(110) && b.holds(130));
        assert_eq!(b.offset_of_seqno(11), Some(110));
        assert_eq!(b.offset_of_seqno(10), Some(100)); // known, but no longer held
        assert_eq!(b.offset_of_seqno(9), None);
        b.append(frame(100), None); // larger than the limit: kept alone
        assert_eq!(b.window(), (130, 100, 25));
        b.mark(20);
        assert_eq!(b.offset_of_seqno(25), Some(230));
    }
}
