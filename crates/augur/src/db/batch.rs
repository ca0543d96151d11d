//! `WriteBatch`: a group of puts and deletes applied atomically, and its WAL encoding.
//!
//! WAL record payload (one per commit group member, see docs/format/wal.md):
//! `first_seqno u64 | count u32 | count × (kind u8 | key (varint len + bytes) | value (varint
//! len + bytes))`. Entry `i` gets seqno `first_seqno + i`. Kinds are internal kinds: a large
//! value appears as `Pointer` with the 20-byte encoded `ValuePointer`, an expiring value as
//! `ExpiringValue` with its 8-byte expiry in front (`crate::expiry`).

use crate::coding::{put_bytes, put_u32, put_u64, Decoder};
use crate::key::{SeqNo, ValueKind};
use crate::options::{CommitKind, CommitOp};

/// One operation of a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum BatchOp {
    /// A put; `expire_at` (milliseconds since the Unix epoch) makes it an expiring value.
    Put {
        key: Vec<u8>,
        value: Vec<u8>,
        expire_at: Option<u64>,
    },
    Delete {
        key: Vec<u8>,
    },
}

/// An atomic group of writes. Later operations on the same key win.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WriteBatch {
    pub(crate) ops: Vec<BatchOp>,
    pub(crate) approximate_bytes: usize,
}

impl WriteBatch {
    /// An empty batch.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a put of `value` under `key`.
    pub fn put(&mut self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> &mut Self {
        let (key, value) = (key.as_ref().to_vec(), value.as_ref().to_vec());
        self.approximate_bytes += key.len() + value.len() + 8;
        self.ops.push(BatchOp::Put {
            key,
            value,
            expire_at: None,
        });
        self
    }

    /// Adds a put of `value` under `key` that expires at `expire_at_unix_ms` (milliseconds
    /// since the Unix epoch, judged by [`Options::clock`](crate::Options::clock)): from then
    /// on the key reads as deleted, its older versions included, and compaction drops it.
    /// An expiring value is always stored inline, whatever its size (the value-separation
    /// threshold does not apply), so its expiry is known without a value-log read.
    pub fn put_expiring(
        &mut self,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        expire_at_unix_ms: u64,
    ) -> &mut Self {
        let (key, value) = (key.as_ref().to_vec(), value.as_ref().to_vec());
        self.approximate_bytes += key.len() + value.len() + 16;
        self.ops.push(BatchOp::Put {
            key,
            value,
            expire_at: Some(expire_at_unix_ms),
        });
        self
    }

    /// Adds a deletion of `key`.
    pub fn delete(&mut self, key: impl AsRef<[u8]>) -> &mut Self {
        let key = key.as_ref().to_vec();
        self.approximate_bytes += key.len() + 8;
        self.ops.push(BatchOp::Delete { key });
        self
    }

    /// Number of operations.
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// True when the batch has no operation.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// Removes every operation.
    pub fn clear(&mut self) {
        self.ops.clear();
        self.approximate_bytes = 0;
    }
}

/// One entry as logged and inserted: internal kind and stored bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LoggedEntry {
    pub kind: ValueKind,
    pub key: Vec<u8>,
    pub value: Vec<u8>,
}

/// The logical operations of `entries` for the commit listener: the user's value bytes
/// (`separated`, in order, stand for the `Pointer` entries) and expiry times split from the
/// stored expiring values.
pub(crate) fn commit_ops<'a>(
    entries: &'a [LoggedEntry],
    separated: &'a [Vec<u8>],
) -> Vec<CommitOp<'a>> {
    let mut separated = separated.iter();
    entries
        .iter()
        .map(|e| {
            let (kind, value) = match e.kind {
                ValueKind::Delete => (CommitKind::Delete, &[][..]),
                ValueKind::ExpiringValue => match crate::expiry::split(&e.value) {
                    Some((at, value)) => (CommitKind::PutExpiring(at), value),
                    None => (CommitKind::Put, &e.value[..]),
                },
                ValueKind::Pointer => (
                    CommitKind::Put,
                    separated.next().map_or(&[][..], Vec::as_slice),
                ),
                ValueKind::Value => (CommitKind::Put, &e.value[..]),
            };
            CommitOp {
                kind,
                key: &e.key,
                value,
            }
        })
        .collect()
}

/// Encodes a record of entries starting at `first_seqno`.
pub(crate) fn encode_record(first_seqno: SeqNo, entries: &[LoggedEntry], out: &mut Vec<u8>) {
    out.clear();
    // Sized once: a length prefix takes at most 10 bytes (a varint of a u64).
    out.reserve(
        12 + entries
            .iter()
            .map(|e| 21 + e.key.len() + e.value.len())
            .sum::<usize>(),
    );
    put_u64(out, first_seqno);
    put_u32(out, entries.len() as u32);
    for e in entries {
        out.push(e.kind as u8);
        put_bytes(out, &e.key);
        put_bytes(out, &e.value);
    }
}

/// Decodes a record; `None` when malformed (the caller reports Corruption).
pub(crate) fn decode_record(buf: &[u8]) -> Option<(SeqNo, Vec<LoggedEntry>)> {
    let mut d = Decoder::new(buf);
    let first = d.u64()?;
    let count = d.u32()? as usize;
    // Each entry takes at least 3 bytes; reject absurd counts before allocating.
    if count > d.remaining() / 3 {
        return None;
    }
    let mut entries = Vec::with_capacity(count);
    for _ in 0..count {
        let kind = ValueKind::from_u8(d.u8()?)?;
        let key = d.length_prefixed()?.to_vec();
        let value = d.length_prefixed()?.to_vec();
        entries.push(LoggedEntry { kind, key, value });
    }
    if !d.is_empty() {
        return None;
    }
    Some((first, entries))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_roundtrip_and_malformed() {
        let entries = vec![
            LoggedEntry {
                kind: ValueKind::Value,
                key: b"k".to_vec(),
                value: b"v".to_vec(),
            },
            LoggedEntry {
                kind: ValueKind::Delete,
                key: b"".to_vec(),
                value: vec![],
            },
        ];
        let mut buf = Vec::new();
        encode_record(42, &entries, &mut buf);
        assert_eq!(decode_record(&buf), Some((42, entries)));
        assert_eq!(decode_record(&buf[..buf.len() - 1]), None);
        let mut bad = buf.clone();
        bad[12] = 9; // unknown kind
        assert_eq!(decode_record(&bad), None);
        let mut huge = buf.clone();
        huge[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(decode_record(&huge), None);
    }

    #[test]
    fn batch_builder() {
        let mut b = WriteBatch::new();
        b.put("a", "1").delete("b");
        assert_eq!(b.len(), 2);
        b.clear();
        assert!(b.is_empty());
    }
}
