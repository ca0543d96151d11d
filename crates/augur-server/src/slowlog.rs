//! The slow log (`SLOWLOG GET | LEN | RESET`): the newest commands that ran at least
//! `slowlog-log-slower-than` microseconds, at most `slowlog-max-len` of them, each with its
//! id, Unix time, duration, arguments (trimmed as Redis trims them), client address and
//! name. A command's duration is measured anyway (`INFO commandstats`), so the log costs a
//! comparison per command; only a slow command takes the log's lock.

use parking_lot::Mutex;
use std::collections::VecDeque;

/// Arguments an entry keeps (Redis's `SLOWLOG_ENTRY_MAX_ARGC`): beyond, the last one kept
/// says how many more there were.
const MAX_ARGS: usize = 32;

/// Bytes an argument keeps (Redis's `SLOWLOG_ENTRY_MAX_STRING`): beyond, it says how many
/// more there were.
const MAX_ARG_BYTES: usize = 128;

/// One logged command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlowEntry {
    /// Its id: entries are numbered from 0 for the life of the server (`SLOWLOG RESET`
    /// does not restart the numbers).
    pub id: u64,
    /// Unix time it ran (seconds).
    pub unix_time: u64,
    /// How long it ran (µs).
    pub usec: u64,
    /// Its words, trimmed.
    pub args: Vec<Vec<u8>>,
    /// The client's address (`ip:port`).
    pub addr: String,
    /// The client's name (`CLIENT SETNAME`).
    pub name: Vec<u8>,
}

/// The slow log (its own lock, taken alone).
#[derive(Debug, Default)]
pub struct SlowLog {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    next_id: u64,
    /// Newest first.
    entries: VecDeque<SlowEntry>,
}

/// `words` as an entry keeps them: at most [`MAX_ARGS`], each at most [`MAX_ARG_BYTES`].
fn trimmed(words: &[&[u8]]) -> Vec<Vec<u8>> {
    let kept = if words.len() > MAX_ARGS {
        MAX_ARGS - 1
    } else {
        words.len()
    };
    let mut args: Vec<Vec<u8>> = words
        .iter()
        .take(kept)
        .map(|w| match w.get(..MAX_ARG_BYTES) {
            Some(head) if w.len() > MAX_ARG_BYTES => {
                let mut a = head.to_vec();
                a.extend_from_slice(
                    format!("... ({} more bytes)", w.len() - MAX_ARG_BYTES).as_bytes(),
                );
                a
            }
            _ => w.to_vec(),
        })
        .collect();
    if kept < words.len() {
        args.push(format!("... ({} more arguments)", words.len() - kept).into_bytes());
    }
    args
}

impl SlowLog {
    /// Logs a command (`words`, as the entry should show them) that ran `usec` µs, keeping
    /// at most `max_len` entries (the oldest go).
    pub fn push(&self, words: &[&[u8]], usec: u64, addr: String, name: Vec<u8>, max_len: usize) {
        let unix_time = crate::state::unix_seconds();
        let args = trimmed(words);
        let mut log = self.inner.lock();
        let id = log.next_id;
        log.next_id += 1;
        log.entries.push_front(SlowEntry {
            id,
            unix_time,
            usec,
            args,
            addr,
            name,
        });
        log.entries.truncate(max_len);
    }

    /// The newest `count` entries, newest first (all of them for `None`).
    pub fn newest(&self, count: Option<usize>) -> Vec<SlowEntry> {
        let log = self.inner.lock();
        let n = count.unwrap_or(log.entries.len());
        log.entries.iter().take(n).cloned().collect()
    }

    /// Entries held.
    pub fn len(&self) -> usize {
        self.inner.lock().entries.len()
    }

    /// Whether the log is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Empties the log (the ids go on).
    pub fn reset(&self) {
        self.inner.lock().entries.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_trimmed_numbered_and_bounded() {
        let log = SlowLog::default();
        let long = vec![b'x'; 130];
        let many: Vec<&[u8]> = (0..40).map(|_| &b"a"[..]).collect();
        log.push(&[b"SET", &long], 5, "1.2.3.4:5".into(), vec![], 2);
        log.push(&many, 6, "1.2.3.4:5".into(), b"n".to_vec(), 2);
        log.push(&[b"PING"], 7, "1.2.3.4:5".into(), vec![], 2);
        let all = log.newest(None);
        assert_eq!(all.iter().map(|e| e.id).collect::<Vec<_>>(), vec![2, 1]);
        assert_eq!(all[1].args.len(), 32);
        assert_eq!(all[1].args[31], b"... (9 more arguments)");
        log.reset();
        log.push(&[b"SET", &long], 5, "1.2.3.4:5".into(), vec![], 2);
        let e = &log.newest(Some(1))[0];
        assert_eq!(e.id, 3);
        let mut want = vec![b'x'; 128];
        want.extend_from_slice(b"... (2 more bytes)");
        assert_eq!(e.args[1], want);
        assert_eq!(log.len(), 1);
    }
}
