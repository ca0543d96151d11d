//! The metadata file of one backup (`meta/NNNNNNNN`): which database files it holds, with
//! each file's size and checksum, and the names of their copies in `shared/`. Format:
//! docs/format/backup.md. Decoding never panics: anything but a file this module encoded is
//! `Corruption` naming the file (or `UnsupportedVersion`).

use crate::checksum::crc;
use crate::coding::{get_u32, put_bytes, put_u32, put_varint, Decoder};
use crate::error::{Error, Result};
use crate::filename::{self, FileKind};
use std::collections::BTreeSet;
use std::path::Path;

/// First bytes of every backup metadata file.
pub const MAGIC: &[u8; 8] = b"AUGURBAK";
/// The format version written (and the only one read).
pub const FORMAT_VERSION: u32 = 1;
/// Magic and version.
const HEADER_LEN: usize = 12;
/// The trailing checksum.
const CRC_LEN: usize = 4;

/// One database file of a backup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackupFile {
    /// Its name in the database directory (`000012.sst`, `000003.vlog`, `MANIFEST-000040`).
    pub name: String,
    /// Its size in bytes.
    pub size: u64,
    /// The unmasked CRC32C of its bytes.
    pub crc: u32,
}

impl BackupFile {
    /// The name of its copy in `shared/`: the database name with its size and checksum
    /// before the extension (`000012_4096_1a2b3c4d.sst`), so equal files of two backups
    /// share one copy and different ones never collide.
    pub fn shared_name(&self) -> String {
        let (stem, ext) = match self.name.rsplit_once('.') {
            Some((stem, ext)) => (stem, format!(".{ext}")),
            None => (self.name.as_str(), String::new()),
        };
        format!("{stem}_{}_{:08x}{ext}", self.size, self.crc)
    }
}

/// What one backup holds (the decoded metadata file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackupMeta {
    /// The backup's id (its metadata file's name).
    pub id: u64,
    /// When it was made, in milliseconds since the Unix epoch.
    pub created_unix_ms: u64,
    /// It holds exactly the writes with a sequence number up to this one.
    pub seqno: u64,
    /// The number of its manifest (`MANIFEST-NNNNNN`, one of `files`), which a restore's
    /// CURRENT names.
    pub manifest_number: u64,
    /// Its files: tables, value-log segments and the manifest.
    pub files: Vec<BackupFile>,
}

impl BackupMeta {
    /// The encoded file (docs/format/backup.md).
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(64 + self.files.len() * 32);
        b.extend_from_slice(MAGIC);
        put_u32(&mut b, FORMAT_VERSION);
        put_varint(&mut b, self.id);
        put_varint(&mut b, self.created_unix_ms);
        put_varint(&mut b, self.seqno);
        put_varint(&mut b, self.manifest_number);
        put_varint(&mut b, self.files.len() as u64);
        for f in &self.files {
            put_bytes(&mut b, f.name.as_bytes());
            put_varint(&mut b, f.size);
            put_u32(&mut b, f.crc);
        }
        let sum = crc(&b);
        put_u32(&mut b, sum);
        b
    }

    /// Decodes the metadata file `path` holding `data`.
    ///
    /// # Errors
    /// `UnsupportedVersion` for another format version; `Corruption` naming `path` for a bad
    /// magic or checksum, a truncated or malformed body, bytes after it, a file name that is
    /// not a table, value-log segment or manifest name, a name given twice, or a manifest
    /// number whose manifest is not among the files.
    pub fn decode(path: &Path, data: &[u8]) -> Result<BackupMeta> {
        let bad = |offset: usize, why: &str| {
            Error::corruption(path, offset as u64, format!("backup metadata: {why}"))
        };
        if data.len() < HEADER_LEN + CRC_LEN || data.get(..MAGIC.len()) != Some(MAGIC) {
            return Err(bad(
                0,
                "not a backup metadata file (bad magic or too short)",
            ));
        }
        let body_end = data.len() - CRC_LEN;
        let stored = get_u32(data, body_end).ok_or_else(|| bad(body_end, "no checksum"))?;
        let covered = data.get(..body_end).unwrap_or_default();
        if crc(covered) != stored {
            return Err(bad(body_end, "checksum mismatch"));
        }
        let version = get_u32(data, MAGIC.len()).unwrap_or(0);
        if version != FORMAT_VERSION {
            return Err(Error::UnsupportedVersion {
                file: path.to_path_buf(),
                version,
            });
        }
        let body = covered.get(HEADER_LEN..).unwrap_or_default();
        let mut d = Decoder::new(body);
        let truncated = |d: &Decoder<'_>| {
            bad(
                HEADER_LEN + d.position(),
                "truncated field or a varint not in its shortest form",
            )
        };
        let field = |d: &mut Decoder<'_>| canonical_varint(d).ok_or_else(|| truncated(d));
        let id = field(&mut d)?;
        let created_unix_ms = field(&mut d)?;
        let seqno = field(&mut d)?;
        let manifest_number = field(&mut d)?;
        let count = field(&mut d)?;
        // Each file takes at least 6 bytes: a bound before allocating.
        if count > (body.len() / 6) as u64 {
            return Err(bad(HEADER_LEN, "more files than the file could hold"));
        }
        let mut files = Vec::with_capacity(count as usize);
        let mut seen = BTreeSet::new();
        for _ in 0..count {
            let at = HEADER_LEN + d.position();
            let name = canonical_varint(&mut d)
                .and_then(|n| d.bytes(usize::try_from(n).ok()?))
                .ok_or_else(|| truncated(&d))?;
            let name = std::str::from_utf8(name)
                .ok()
                .filter(|n| {
                    matches!(
                        filename::parse(n),
                        Some(FileKind::Table(_) | FileKind::ValueLog(_) | FileKind::Manifest(_))
                    )
                })
                .ok_or_else(|| bad(at, "a file name no database file has"))?
                .to_string();
            if !seen.insert(name.clone()) {
                return Err(bad(at, "a file listed twice"));
            }
            let size = canonical_varint(&mut d).ok_or_else(|| truncated(&d))?;
            let crc = d.u32().ok_or_else(|| truncated(&d))?;
            files.push(BackupFile { name, size, crc });
        }
        if !d.is_empty() {
            return Err(bad(HEADER_LEN + d.position(), "bytes after the last file"));
        }
        if !seen.contains(&filename::manifest_name(manifest_number)) {
            return Err(bad(HEADER_LEN, "its manifest is not among its files"));
        }
        Ok(BackupMeta {
            id,
            created_unix_ms,
            seqno,
            manifest_number,
            files,
        })
    }

    /// Bytes of all its files.
    pub fn size_bytes(&self) -> u64 {
        self.files.iter().map(|f| f.size).sum()
    }
}

/// A varint in its shortest form (what `put_varint` writes), so that every metadata file
/// has exactly one encoding; `None` when truncated, malformed or longer than needed (found
/// by the `backup_meta` fuzz target: `0xb5 0x00` read as 53).
fn canonical_varint(d: &mut Decoder<'_>) -> Option<u64> {
    let start = d.position();
    let v = d.varint()?;
    let shortest = (64 - (v | 1).leading_zeros() as usize).div_ceil(7);
    (d.position() - start == shortest).then_some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> BackupMeta {
        BackupMeta {
            id: 7,
            created_unix_ms: 1_700_000_000_000,
            seqno: 123_456,
            manifest_number: 40,
            files: vec![
                BackupFile {
                    name: "000012.sst".into(),
                    size: 4096,
                    crc: 0x1a2b_3c4d,
                },
                BackupFile {
                    name: "000003.vlog".into(),
                    size: 1 << 33,
                    crc: 7,
                },
                BackupFile {
                    name: "MANIFEST-000040".into(),
                    size: 300,
                    crc: 0xffff_ffff,
                },
            ],
        }
    }

    #[test]
    fn roundtrips_and_names_shared_copies() {
        let m = sample();
        let p = Path::new("meta/00000007");
        assert_eq!(BackupMeta::decode(p, &m.encode()).unwrap(), m);
        assert_eq!(m.files[0].shared_name(), "000012_4096_1a2b3c4d.sst");
        assert_eq!(m.files[2].shared_name(), "MANIFEST-000040_300_ffffffff");
        assert_eq!(m.size_bytes(), 4096 + (1 << 33) + 300);
    }

    #[test]
    fn every_damage_is_refused() {
        let p = Path::new("m");
        let good = sample().encode();
        // Every flipped byte and every truncation.
        for i in 0..good.len() {
            let mut bad = good.clone();
            bad[i] ^= 0x40;
            assert!(BackupMeta::decode(p, &bad).is_err(), "flip at {i}");
            assert!(BackupMeta::decode(p, &good[..i]).is_err(), "cut at {i}");
        }
        let reencode = |m: &BackupMeta| BackupMeta::decode(p, &m.encode());
        let mut m = sample();
        m.manifest_number = 41;
        assert!(reencode(&m).is_err(), "manifest not listed");
        let mut m = sample();
        m.files[1].name = "notes.txt".into();
        assert!(reencode(&m).is_err(), "foreign name");
        let mut m = sample();
        m.files[1].name = "000012.sst".into();
        assert!(reencode(&m).is_err(), "duplicate");
        // An overlong varint (the id 7 as `0x87 0x00`) with a valid checksum.
        let mut long = good[..12].to_vec();
        long.extend_from_slice(&[0x87, 0x00]);
        long.extend_from_slice(&good[13..good.len() - 4]);
        let sum = crc(&long);
        long.extend_from_slice(&sum.to_le_bytes());
        assert!(BackupMeta::decode(p, &long).is_err(), "overlong varint");
        for v in [0u64, 1, 127, 128, 16_383, 16_384, u64::MAX] {
            let mut b = Vec::new();
            put_varint(&mut b, v);
            assert_eq!(canonical_varint(&mut Decoder::new(&b)), Some(v));
        }
        let mut v2 = good.clone();
        v2[8] = 2;
        let body = v2.len() - 4;
        let sum = crc(&v2[..body]);
        v2[body..].copy_from_slice(&sum.to_le_bytes());
        assert!(matches!(
            BackupMeta::decode(p, &v2),
            Err(Error::UnsupportedVersion { version: 2, .. })
        ));
    }
}
