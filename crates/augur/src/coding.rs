//! Byte encoding helpers shared by every on-disk format: little-endian fixed-width
//! integers, LEB128 varints and length-prefixed byte strings.
//!
//! Decoding never panics: [`Decoder`] returns `None` when the input is too short or a
//! varint is malformed, and the caller turns that into a `Corruption` error naming its file.

/// Appends `v` as 2 little-endian bytes.
pub fn put_u16(buf: &mut Vec<u8>, v: u16) {
    buf.extend_from_slice(&v.to_le_bytes());
}

/// Appends `v` as 4 little-endian bytes.
pub fn put_u32(buf: &mut Vec<u8>, v: u32) {
    buf.extend_from_slice(&v.to_le_bytes());
}

/// Appends `v` as 8 little-endian bytes.
pub fn put_u64(buf: &mut Vec<u8>, v: u64) {
    buf.extend_from_slice(&v.to_le_bytes());
}

/// Appends `v` as an LEB128 varint (1–10 bytes).
pub fn put_varint(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push((v as u8) | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

/// Appends a varint length followed by the bytes.
pub fn put_bytes(buf: &mut Vec<u8>, bytes: &[u8]) {
    put_varint(buf, bytes.len() as u64);
    buf.extend_from_slice(bytes);
}

/// Reads a little-endian u32 at `pos`, or `None` if out of bounds.
pub fn get_u32(buf: &[u8], pos: usize) -> Option<u32> {
    let b = buf.get(pos..pos.checked_add(4)?)?;
    Some(u32::from_le_bytes(b.try_into().ok()?))
}

/// Reads a little-endian u64 at `pos`, or `None` if out of bounds.
pub fn get_u64(buf: &[u8], pos: usize) -> Option<u64> {
    let b = buf.get(pos..pos.checked_add(8)?)?;
    Some(u64::from_le_bytes(b.try_into().ok()?))
}

/// A forward cursor over an encoded buffer. Every getter returns `None` on short input.
#[derive(Debug, Clone)]
pub struct Decoder<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Decoder<'a> {
    /// Starts decoding at the beginning of `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Decoder { buf, pos: 0 }
    }

    /// Bytes consumed so far.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Bytes left.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// True when the whole buffer was consumed.
    pub fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    /// Reads one byte.
    pub fn u8(&mut self) -> Option<u8> {
        let b = *self.buf.get(self.pos)?;
        self.pos += 1;
        Some(b)
    }

    /// Reads a little-endian u16.
    pub fn u16(&mut self) -> Option<u16> {
        let b = *self.buf.get(self.pos..)?.first_chunk::<2>()?;
        self.pos += 2;
        Some(u16::from_le_bytes(b))
    }

    /// Reads a little-endian u32.
    pub fn u32(&mut self) -> Option<u32> {
        let v = get_u32(self.buf, self.pos)?;
        self.pos += 4;
        Some(v)
    }

    /// Reads a little-endian u64.
    pub fn u64(&mut self) -> Option<u64> {
        let v = get_u64(self.buf, self.pos)?;
        self.pos += 8;
        Some(v)
    }

    /// Reads an LEB128 varint of at most 10 bytes.
    pub fn varint(&mut self) -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..70).step_by(7) {
            let b = self.u8()?;
            if shift == 63 && b > 1 {
                return None;
            }
            v |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Some(v);
            }
        }
        None
    }

    /// Reads `n` raw bytes.
    pub fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(n)?;
        let s = self.buf.get(self.pos..end)?;
        self.pos = end;
        Some(s)
    }

    /// Reads a varint length and that many bytes.
    pub fn length_prefixed(&mut self) -> Option<&'a [u8]> {
        let n = usize::try_from(self.varint()?).ok()?;
        self.bytes(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundtrip() {
        let mut b = Vec::new();
        put_u32(&mut b, 7);
        put_u64(&mut b, u64::MAX);
        for v in [0, 1, 127, 128, 300, u64::MAX] {
            put_varint(&mut b, v);
        }
        put_bytes(&mut b, b"abc");
        let mut d = Decoder::new(&b);
        assert_eq!(d.u32(), Some(7));
        assert_eq!(d.u64(), Some(u64::MAX));
        for v in [0, 1, 127, 128, 300, u64::MAX] {
            assert_eq!(d.varint(), Some(v));
        }
        assert_eq!(d.length_prefixed(), Some(&b"abc"[..]));
        assert!(d.is_empty());
        assert_eq!(d.u8(), None);
    }

    #[test]
    fn malformed_varint_is_none() {
        let mut d = Decoder::new(&[0xff; 11]);
        assert_eq!(d.varint(), None);
        let mut d = Decoder::new(&[0x80]);
        assert_eq!(d.varint(), None);
    }
}
