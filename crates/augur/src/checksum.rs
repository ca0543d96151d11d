//! Checksums of every on-disk record: CRC32C (the LevelDB/RocksDB family), masked as in
//! LevelDB so that a checksum of data that itself contains checksums stays well distributed.

const MASK_DELTA: u32 = 0xa282_ead8;

/// Masked CRC32C of `data`.
pub fn crc(data: &[u8]) -> u32 {
    mask(crc32c::crc32c(data))
}

/// Masked CRC32C of the concatenation of `parts`, without copying them.
pub fn crc_parts(parts: &[&[u8]]) -> u32 {
    let mut c = 0u32;
    for p in parts {
        c = crc32c::crc32c_append(c, p);
    }
    mask(c)
}

fn mask(c: u32) -> u32 {
    c.rotate_right(15).wrapping_add(MASK_DELTA)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_equal_whole() {
        assert_eq!(crc(b"hello world"), crc_parts(&[b"hello", b" ", b"world"]));
        assert_ne!(crc(b"hello world"), crc(b"hello worle"));
    }
}
