//! The bytes of the replication stream after the handshake (`docs/replication.md`): the full
//! sync's file transfer, the batch frames that carry committed write groups, and the
//! control frames (heartbeat, ack request) that are not part of the stream's offsets.
//!
//! Every multi-byte integer is big-endian. A batch frame is `'B' | len u32 | crc32c u32 |
//! payload`, the CRC over the payload; its whole length (9 + len) counts in the replication
//! offset. The payload is `first_seqno u64 | count u32 | count × op`, an op `tag u8 (0 put,
//! 1 put expiring, 2 delete) | [expire_at_ms u64 when 1] | key_len u32 | key | [value_len
//! u32 | value unless 2]`.

use augur::{CommitKind, CommitOp, WriteBatch};
use bytes::{BufMut, Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt};

/// A batch frame (counted in the offsets).
pub const BATCH: u8 = b'B';
/// A heartbeat carrying the primary's offset (not counted).
pub const PING: u8 = b'P';
/// A request for an immediate `REPLCONF ACK` (not counted).
pub const GETACK: u8 = b'G';
/// A file of a full sync.
pub const FILE: u8 = b'F';
/// The end of a full sync's files.
pub const END: u8 = b'E';
/// A full sync's summary, before its files.
pub const SUMMARY: u8 = b'S';
/// Bytes of a batch frame before its payload.
pub const BATCH_HEADER_BYTES: usize = 9;
/// Largest batch payload a replica accepts (a group is at most a few MiB; this bounds a
/// corrupt length).
pub const MAX_PAYLOAD_BYTES: usize = 1 << 30;
/// Longest file name a full sync sends.
const MAX_NAME_BYTES: usize = 255;

/// A malformed stream: the connection is dropped and the replica reconnects.
#[derive(Debug)]
pub struct WireError(pub String);

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<std::io::Error> for WireError {
    fn from(e: std::io::Error) -> Self {
        WireError(format!("replication link: {e}"))
    }
}

/// Encodes one committed group as a batch frame.
pub fn encode_batch(first_seqno: u64, ops: &[CommitOp<'_>]) -> Bytes {
    let payload_len: usize = 12
        + ops
            .iter()
            .map(|o| 1 + 8 + 8 + o.key.len() + o.value.len())
            .sum::<usize>();
    let mut out = BytesMut::with_capacity(BATCH_HEADER_BYTES + payload_len);
    out.put_u8(BATCH);
    out.put_u32(0); // length, patched below
    out.put_u32(0); // checksum, patched below
    out.put_u64(first_seqno);
    out.put_u32(u32::try_from(ops.len()).unwrap_or(u32::MAX));
    for op in ops {
        match op.kind {
            CommitKind::Put => out.put_u8(0),
            CommitKind::PutExpiring(at) => {
                out.put_u8(1);
                out.put_u64(at);
            }
            CommitKind::Delete => out.put_u8(2),
        }
        out.put_u32(op.key.len() as u32);
        out.put_slice(op.key);
        if op.kind != CommitKind::Delete {
            out.put_u32(op.value.len() as u32);
            out.put_slice(op.value);
        }
    }
    let len = (out.len() - BATCH_HEADER_BYTES) as u32;
    let crc = crc32c::crc32c(out.get(BATCH_HEADER_BYTES..).unwrap_or_default());
    if let Some(header) = out.get_mut(1..BATCH_HEADER_BYTES) {
        header[..4].copy_from_slice(&len.to_be_bytes());
        header[4..].copy_from_slice(&crc.to_be_bytes());
    }
    out.freeze()
}

/// A cursor over a payload.
struct Cursor<'a>(&'a [u8]);

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], WireError> {
        if self.0.len() < n {
            return Err(WireError("truncated batch frame".into()));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    fn u8(&mut self) -> Result<u8, WireError> {
        Ok(self.take(1)?.first().copied().unwrap_or(0))
    }

    fn u32(&mut self) -> Result<u32, WireError> {
        let b = self.take(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64(&mut self) -> Result<u64, WireError> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_be_bytes(a))
    }

    fn bytes(&mut self) -> Result<&'a [u8], WireError> {
        let n = self.u32()? as usize;
        self.take(n)
    }
}

/// Checks a whole batch frame's checksum and adds its operations to `batch`; returns the
/// primary's first seqno of the group.
///
/// # Errors
/// A damaged or malformed frame.
pub fn decode_batch(frame: &[u8], batch: &mut WriteBatch) -> Result<u64, WireError> {
    let mut c = Cursor(frame);
    if c.u8()? != BATCH {
        return Err(WireError("not a batch frame".into()));
    }
    let len = c.u32()? as usize;
    let crc = c.u32()?;
    let payload = c.take(len)?;
    if crc32c::crc32c(payload) != crc {
        return Err(WireError("batch frame checksum mismatch".into()));
    }
    let mut p = Cursor(payload);
    let first = p.u64()?;
    let count = p.u32()?;
    for _ in 0..count {
        let tag = p.u8()?;
        let at = if tag == 1 { Some(p.u64()?) } else { None };
        let key = p.bytes()?;
        match (tag, at) {
            (0, _) => {
                batch.put(key, p.bytes()?);
            }
            (1, Some(at)) => {
                batch.put_expiring(key, p.bytes()?, at);
            }
            (2, _) => {
                batch.delete(key);
            }
            _ => return Err(WireError(format!("unknown operation tag {tag}"))),
        }
    }
    if !p.0.is_empty() {
        return Err(WireError("trailing bytes in a batch frame".into()));
    }
    Ok(first)
}

/// What a replica reads after the handshake.
pub enum Frame {
    /// A whole batch frame (header included), as the primary's backlog holds it.
    Batch(Bytes),
    /// A heartbeat with the primary's offset.
    Ping(u64),
    /// An ack request with the primary's offset.
    GetAck(u64),
}

/// Reads the next frame of the stream.
///
/// # Errors
/// The connection's failure or a malformed frame.
pub async fn read_frame<R: AsyncRead + Unpin>(r: &mut R) -> Result<Frame, WireError> {
    match r.read_u8().await? {
        BATCH => {
            let len = r.read_u32().await? as usize;
            if len > MAX_PAYLOAD_BYTES {
                return Err(WireError(format!("batch frame of {len} bytes")));
            }
            let crc = r.read_u32().await?;
            let mut frame = BytesMut::with_capacity(BATCH_HEADER_BYTES + len);
            frame.put_u8(BATCH);
            frame.put_u32(len as u32);
            frame.put_u32(crc);
            frame.resize(BATCH_HEADER_BYTES + len, 0);
            r.read_exact(frame.get_mut(BATCH_HEADER_BYTES..).unwrap_or_default())
                .await?;
            Ok(Frame::Batch(frame.freeze()))
        }
        PING => Ok(Frame::Ping(r.read_u64().await?)),
        GETACK => Ok(Frame::GetAck(r.read_u64().await?)),
        other => Err(WireError(format!("unexpected frame tag {other:#x}"))),
    }
}

/// A control frame: `tag | offset u64`.
pub fn control(tag: u8, offset: u64) -> [u8; 9] {
    let mut out = [0u8; 9];
    out[0] = tag;
    out[1..].copy_from_slice(&offset.to_be_bytes());
    out
}

/// The header of one file of a full sync (after the summary): `'F' | name_len u16 | name | size u64`. The
/// content follows, then its crc32c (u32).
pub fn file_header(name: &str, size: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(11 + name.len());
    out.push(FILE);
    out.extend_from_slice(&(name.len() as u16).to_be_bytes());
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(&size.to_be_bytes());
    out
}

/// A full sync's summary, sent first: `'S' | files u32 | bytes u64`.
pub fn summary(files: u32, bytes: u64) -> Vec<u8> {
    let mut out = vec![SUMMARY];
    out.extend_from_slice(&files.to_be_bytes());
    out.extend_from_slice(&bytes.to_be_bytes());
    out
}

/// The end of a full sync: `'E' | files u32 | bytes u64`.
pub fn end_of_files(files: u32, bytes: u64) -> Vec<u8> {
    let mut out = vec![END];
    out.extend_from_slice(&files.to_be_bytes());
    out.extend_from_slice(&bytes.to_be_bytes());
    out
}

/// What a replica reads during a full sync.
pub enum SyncItem {
    /// The files and bytes that follow.
    Summary(u32, u64),
    /// A file follows: its name and size.
    File(String, u64),
    /// No more files: their count and bytes.
    End(u32, u64),
}

/// Reads the next item header of a full sync. A file's name must be a plain file name (no
/// separator, not `.`/`..`): the replica writes it into its staging directory.
///
/// # Errors
/// The connection's failure or a malformed header.
pub async fn read_sync_item<R: AsyncRead + Unpin>(r: &mut R) -> Result<SyncItem, WireError> {
    match r.read_u8().await? {
        FILE => {
            let n = r.read_u16().await? as usize;
            if n == 0 || n > MAX_NAME_BYTES {
                return Err(WireError(format!("file name of {n} bytes")));
            }
            let mut name = vec![0u8; n];
            r.read_exact(&mut name).await?;
            let name = String::from_utf8(name)
                .ok()
                .filter(|s| {
                    s != "."
                        && s != ".."
                        && !s.contains('/')
                        && !s.contains('\\')
                        && !s.contains('\0')
                })
                .ok_or_else(|| WireError("a file name that is not a plain name".into()))?;
            Ok(SyncItem::File(name, r.read_u64().await?))
        }
        END => Ok(SyncItem::End(r.read_u32().await?, r.read_u64().await?)),
        SUMMARY => Ok(SyncItem::Summary(r.read_u32().await?, r.read_u64().await?)),
        other => Err(WireError(format!("unexpected full-sync tag {other:#x}"))),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_frame_round_trips_and_damage_is_refused() {
        let ops = [
            CommitOp {
                kind: CommitKind::Put,
                key: b"k",
                value: b"v",
            },
            CommitOp {
                kind: CommitKind::PutExpiring(42),
                key: b"e",
                value: b"x",
            },
            CommitOp {
                kind: CommitKind::Delete,
                key: b"d",
                value: b"",
            },
        ];
        let frame = encode_batch(7, &ops);
        let mut batch = WriteBatch::new();
        assert_eq!(decode_batch(&frame, &mut batch).unwrap(), 7);
        assert_eq!(batch.len(), 3);
        let mut bad = frame.to_vec();
        let last = bad.len() - 1;
        bad[last] ^= 1;
        assert!(decode_batch(&bad, &mut WriteBatch::new()).is_err());
        assert!(decode_batch(&frame[..frame.len() - 1], &mut WriteBatch::new()).is_err());
    }

    #[tokio::test]
    async fn frames_and_sync_items_are_read_back() {
        let mut bytes = encode_batch(1, &[]).to_vec();
        bytes.extend(control(PING, 99));
        bytes.extend(file_header("000001.sst", 3));
        bytes.extend(end_of_files(1, 3));
        let mut r = &bytes[..];
        assert!(matches!(read_frame(&mut r).await.unwrap(), Frame::Batch(f) if f.len() == 21));
        assert!(matches!(read_frame(&mut r).await.unwrap(), Frame::Ping(99)));
        assert!(
            matches!(read_sync_item(&mut r).await.unwrap(), SyncItem::File(n, 3) if n == "000001.sst")
        );
        assert!(matches!(
            read_sync_item(&mut r).await.unwrap(),
            SyncItem::End(1, 3)
        ));
        let evil = file_header("../x", 1);
        assert!(read_sync_item(&mut &evil[..]).await.is_err());
    }
}
