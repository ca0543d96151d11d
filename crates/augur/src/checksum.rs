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

/// Unmasked CRC32C of a whole file, fed in pieces: start with 0 and pass each piece with
/// the previous result. What the backup metadata records per file (docs/format/backup.md),
/// and what `crc32c` tools print for the file.
pub fn file_crc_append(crc: u32, data: &[u8]) -> u32 {
    crc32c::crc32c_append(crc, data)
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
