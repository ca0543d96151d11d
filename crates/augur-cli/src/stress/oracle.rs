//! The expected-state oracle of `augur stress` (RocksDB's `db_stress` keeps the same): for
//! every key of the bounded key space, the value it must hold, and the value of a write in
//! flight on it, persisted in a file beside the database so that it outlives a SIGKILL.
//!
//! # File format (`<db>.expected`)
//!
//! A 32-byte header — magic `AUGSTRS1`, the number of keys (u64 LE), the compaction style
//! the database was created with (u64 LE: 0 leveled, 1 FLSM), 8 reserved bytes — then one
//! 8-byte little-endian slot per key: bits 0–31 the committed value id (0: absent), bits
//! 32–63 the pending one (0: none, [`PENDING_DELETE`]: a delete in flight, else a put of that
//! id). Slots are written with `pwrite` as the state changes: the bytes sit in the page cache
//! when the process is killed, so the file is exact after a SIGKILL. (A power cut would take
//! the oracle's own unsynced bytes too; power cuts are simulated only in `--faults` rounds,
//! in memory, where the round's write history ([`super::history`]) says which acknowledged
//! writes a cut may take away.)
//!
//! # Protocol
//!
//! A writer holds the key's lock (see `stress/mod.rs`) and calls [`Oracle::begin`] before the
//! database write and [`Oracle::commit`] after it is acknowledged. After a crash the key may
//! hold its committed value or, when a write was pending, the pending one — nothing else.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

const MAGIC: &[u8; 8] = b"AUGSTRS1";
const HEADER: u64 = 32;

/// Pending marker of a delete in flight.
pub const PENDING_DELETE: u32 = u32::MAX;

/// What the oracle says about one key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Expected {
    /// Committed value id; 0 when the key is absent.
    pub value: u32,
    /// The write in flight: 0 none, [`PENDING_DELETE`], or the id of a put.
    pub pending: u32,
}

impl Expected {
    fn from_slot(slot: u64) -> Expected {
        Expected {
            value: slot as u32,
            pending: (slot >> 32) as u32,
        }
    }

    fn slot(self) -> u64 {
        u64::from(self.value) | u64::from(self.pending) << 32
    }

    /// Whether the database may hold value id `found` (0: absent) for this key.
    pub fn allows(self, found: u32) -> bool {
        found == self.value
            || match self.pending {
                0 => false,
                PENDING_DELETE => found == 0,
                id => found == id,
            }
    }
}

/// The expected state, in memory and mirrored to its file.
pub struct Oracle {
    file: File,
    slots: Vec<AtomicU64>,
    /// Compaction style the database was created with (0 leveled, 1 FLSM).
    pub style: u64,
}

impl Oracle {
    /// Opens the oracle at `path`, or creates one of `keys` absent keys for a database of
    /// compaction `style`. An existing file must have `keys` keys.
    pub fn open_or_create(path: &Path, keys: u64, style: u64) -> Result<Oracle, String> {
        let err = |e: std::io::Error| format!("oracle {}: {e}", path.display());
        let exists = path.exists();
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(err)?;
        if !exists {
            let mut header = [0u8; HEADER as usize];
            header[..8].copy_from_slice(MAGIC);
            header[8..16].copy_from_slice(&keys.to_le_bytes());
            header[16..24].copy_from_slice(&style.to_le_bytes());
            file.write_all_at(&header, 0).map_err(err)?;
            file.set_len(HEADER + keys * 8).map_err(err)?;
            file.sync_all().map_err(err)?;
        }
        let len = file.metadata().map_err(err)?.len();
        let mut header = [0u8; HEADER as usize];
        file.read_exact_at(&mut header, 0).map_err(err)?;
        let word = |i: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&header[i..i + 8]);
            u64::from_le_bytes(w)
        };
        if &header[..8] != MAGIC {
            return Err(format!("{} is not a stress oracle", path.display()));
        }
        let (stored_keys, stored_style) = (word(8), word(16));
        if stored_keys != keys || len != HEADER + keys * 8 {
            return Err(format!(
                "oracle {} covers {stored_keys} keys ({len} bytes), not --keys {keys}",
                path.display()
            ));
        }
        let mut bytes = vec![0u8; (keys * 8) as usize];
        file.read_exact_at(&mut bytes, HEADER).map_err(err)?;
        let slots = bytes
            .chunks_exact(8)
            .map(|c| {
                let mut w = [0u8; 8];
                w.copy_from_slice(c);
                AtomicU64::new(u64::from_le_bytes(w))
            })
            .collect();
        Ok(Oracle {
            file,
            slots,
            style: stored_style,
        })
    }

    /// Number of keys.
    pub fn keys(&self) -> u64 {
        self.slots.len() as u64
    }

    /// The state of key `k`.
    pub fn get(&self, k: u64) -> Expected {
        Expected::from_slot(self.slots[k as usize].load(Ordering::Acquire))
    }

    fn set(&self, k: u64, e: Expected) -> Result<(), String> {
        let slot = e.slot();
        self.slots[k as usize].store(slot, Ordering::Release);
        self.file
            .write_all_at(&slot.to_le_bytes(), HEADER + k * 8)
            .map_err(|e| format!("oracle write: {e}"))
    }

    /// Records a write in flight on `k`: `id` for a put, [`PENDING_DELETE`] for a delete.
    pub fn begin(&self, k: u64, id: u32) -> Result<(), String> {
        let cur = self.get(k);
        self.set(
            k,
            Expected {
                value: cur.value,
                pending: id,
            },
        )
    }

    /// Records the acknowledged write begun on `k`.
    pub fn commit(&self, k: u64) -> Result<(), String> {
        let cur = self.get(k);
        let value = if cur.pending == PENDING_DELETE {
            0
        } else {
            cur.pending
        };
        self.set(k, Expected { value, pending: 0 })
    }

    /// After recovery: `k` holds `found` (which [`Expected::allows`]); no write is in flight.
    pub fn settle(&self, k: u64, found: u32) -> Result<(), String> {
        self.set(
            k,
            Expected {
                value: found,
                pending: 0,
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pending_writes_allow_old_or_new_and_survive_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.expected");
        let o = Oracle::open_or_create(&path, 10, 1).unwrap();
        assert_eq!(
            o.get(3),
            Expected {
                value: 0,
                pending: 0
            }
        );
        o.begin(3, 77).unwrap();
        o.begin(4, 5).unwrap();
        o.commit(4).unwrap();
        o.begin(4, PENDING_DELETE).unwrap();
        drop(o);
        let o = Oracle::open_or_create(&path, 10, 0).unwrap();
        assert_eq!(o.style, 1, "the stored style wins");
        let (e3, e4) = (o.get(3), o.get(4));
        assert!(e3.allows(0) && e3.allows(77) && !e3.allows(78));
        assert!(e4.allows(5) && e4.allows(0) && !e4.allows(6));
        o.settle(4, 0).unwrap();
        assert!(!o.get(4).allows(5));
        assert!(
            Oracle::open_or_create(&path, 11, 0).is_err(),
            "key count must match"
        );
    }
}
