//! The layout record: which layout a database is in, the migration of a database written
//! before hashes existed, and the allocation of hash versions.
//!
//! The record lives at [`LAYOUT_KEY`] (`0xFF 0x01`): `MAGIC (16 bytes) | layout u16 BE |
//! state u8 | version ceiling u64 BE | progress`, where the state is 0 (ready) or 1
//! (migrating values, `progress` the last key done, after a byte saying whether there is
//! one). Every database this server opens for writing gets one before it serves a command.
//!
//! # Old databases
//!
//! augur-server stored each string as its key and value, untouched, before this layout
//! existed: keys and values beginning with 0xFF, which the layout reserves, may be user data
//! there. A database without a record is such a database (an empty one too), and is
//! migrated before the server listens, in two steps that survive a crash at any point:
//!
//! 1. **Keys** (one atomic write batch): every key `>= 0xFF` moves to its engine key
//!    (`0xFF 0x00 …`), its value escaped and its expiry time kept, and the record is written
//!    in state *migrating*. A crash before the batch leaves the old database as it was; after
//!    it, the reserved range holds only the server's keys. The batch is bounded
//!    ([`MAX_MOVED_BYTES`]): a database with more bytes under 0xFF keys is refused.
//! 2. **Values** (batches, each with the record's progress): every value beginning with
//!    0xFF under a key below 0xFF is rewritten escaped, expiry kept, in key order; a restart
//!    resumes after the last key the record names, so no value is escaped twice.
//!
//! A record whose magic is present but whose layout is unknown (a newer server) is refused;
//! a value at `0xFF 0x01` without the magic is an old database's user value and is migrated
//! like any other. A read-only open never migrates: it refuses a database that needs it.
//!
//! # Versions
//!
//! Each hash gets a version no earlier hash had, so fields of a deleted hash, still on disk
//! until compaction drops them, are never read as a new hash's ([`Versions`]). The record
//! holds a ceiling: every version issued so far is below it. At open the server takes the
//! ceiling as its next version and raises it by [`VERSION_BLOCK`] (a synced write); when a
//! block is used up it raises it again before issuing more.

use super::{encode_string, engine_key, LAYOUT_KEY, RESERVED};
use augur::{Db, ScanOptions, WriteBatch, WriteOptions};
use parking_lot::Mutex;
use std::ops::Bound;

/// The record's first bytes.
pub const MAGIC: &[u8; 16] = b"augur-server\x00lay";
/// The layout this server writes and reads.
pub const LAYOUT: u16 = 1;
/// Versions reserved per synced write of the record.
pub const VERSION_BLOCK: u64 = 1 << 20;
/// Most bytes (keys and values) under 0xFF keys an old database may hold: step 1 moves them
/// in one write batch.
pub const MAX_MOVED_BYTES: usize = 256 << 20;
/// Rewritten values per batch of step 2 (and at most [`BATCH_BYTES`]).
const BATCH_ENTRIES: usize = 4096;
/// Bytes per batch of step 2.
const BATCH_BYTES: usize = 4 << 20;

const READY: u8 = 0;
const MIGRATING: u8 = 1;

/// What the layout record says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// Migrating values: the last key done (`Some(None)`: none yet); `None` when ready.
    pub migrating: Option<Option<Vec<u8>>>,
    /// Every hash version issued so far is below this.
    pub version_ceiling: u64,
}

impl Record {
    fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(32);
        v.extend_from_slice(MAGIC);
        v.extend_from_slice(&LAYOUT.to_be_bytes());
        v.push(if self.migrating.is_some() {
            MIGRATING
        } else {
            READY
        });
        v.extend_from_slice(&self.version_ceiling.to_be_bytes());
        if let Some(progress) = &self.migrating {
            match progress {
                Some(key) => {
                    v.push(1);
                    v.extend_from_slice(key);
                }
                None => v.push(0),
            }
        }
        v
    }

    /// The record in `stored`: `Ok(None)` when it has no magic (an old database's user
    /// value).
    fn decode(stored: &[u8]) -> Result<Option<Record>, LayoutError> {
        let Some(rest) = stored.strip_prefix(MAGIC.as_slice()) else {
            return Ok(None);
        };
        let bad = || LayoutError::Unreadable(stored.len());
        let layout = u16::from_be_bytes(
            rest.get(..2)
                .ok_or_else(bad)?
                .try_into()
                .map_err(|_| bad())?,
        );
        if layout != LAYOUT {
            return Err(LayoutError::Newer(layout));
        }
        let state = *rest.get(2).ok_or_else(bad)?;
        let ceiling = u64::from_be_bytes(
            rest.get(3..11)
                .ok_or_else(bad)?
                .try_into()
                .map_err(|_| bad())?,
        );
        let progress = rest.get(11..).unwrap_or_default();
        let migrating = match (state, progress.split_first()) {
            (READY, None) => None,
            (MIGRATING, Some((0, []))) => Some(None),
            (MIGRATING, Some((1, key))) => Some(Some(key.to_vec())),
            _ => return Err(bad()),
        };
        Ok(Some(Record {
            migrating,
            version_ceiling: ceiling,
        }))
    }
}

/// Why a database cannot be served.
#[derive(Debug)]
pub enum LayoutError {
    /// The engine failed.
    Engine(augur::Error),
    /// A newer augur-server's layout.
    Newer(u16),
    /// The record is damaged (its length).
    Unreadable(usize),
    /// A read-only open of a database that needs a migration.
    NeedsMigration,
    /// Too many bytes under 0xFF keys to move in one batch.
    TooManyReservedKeys(usize),
    /// A test stopped the migration (a simulated crash).
    #[cfg(test)]
    Stopped,
}

impl std::fmt::Display for LayoutError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LayoutError::Engine(e) => write!(f, "{e}"),
            LayoutError::Newer(l) => write!(
                f,
                "the database is in layout {l} of a newer augur-server (this one reads layout \
                 {LAYOUT}); use that server"
            ),
            LayoutError::Unreadable(len) => write!(
                f,
                "the server's layout record (key 0xff 0x01, {len} bytes) is damaged"
            ),
            LayoutError::NeedsMigration => write!(
                f,
                "the database was written by an augur-server older than its hash support and \
                 needs a one-time migration of keys and values beginning with byte 0xff; \
                 start the server once without --read-only"
            ),
            LayoutError::TooManyReservedKeys(bytes) => write!(
                f,
                "the database was written by an older augur-server and holds more than {} \
                 bytes under keys beginning with byte 0xff ({bytes} seen), more than the \
                 migration moves in one atomic batch; rename those keys with the older \
                 server first",
                MAX_MOVED_BYTES
            ),
            #[cfg(test)]
            LayoutError::Stopped => write!(f, "stopped by the test"),
        }
    }
}

impl std::error::Error for LayoutError {}

impl From<augur::Error> for LayoutError {
    fn from(e: augur::Error) -> Self {
        LayoutError::Engine(e)
    }
}

/// What a migration did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Migrated {
    /// Keys moved (step 1).
    pub keys: u64,
    /// Values escaped (step 2).
    pub values: u64,
}

/// Checks the layout of `db`, migrates a database written before it (unless `read_only`),
/// and returns the allocator of hash versions. Run before serving.
///
/// # Errors
///
/// [`LayoutError`]: the engine failed, or the database cannot be served by this server.
pub fn prepare(db: &Db, read_only: bool) -> Result<(Versions, Migrated), LayoutError> {
    prepare_with(db, read_only, None)
}

/// [`prepare`], stopping step 2 after `stop_after` batches (tests: a crash).
fn prepare_with(
    db: &Db,
    read_only: bool,
    stop_after: Option<usize>,
) -> Result<(Versions, Migrated), LayoutError> {
    let found = match db.get(LAYOUT_KEY)? {
        Some(stored) => Record::decode(&stored)?,
        None => None,
    };
    let mut migrated = Migrated::default();
    let record = match found {
        Some(record) if record.migrating.is_none() => record,
        _ if read_only => {
            if found.is_none() && is_empty(db)? {
                return Ok((Versions::new(1), migrated));
            }
            return Err(LayoutError::NeedsMigration);
        }
        Some(record) => record,
        None => {
            migrated.keys = move_reserved_keys(db)?;
            Record {
                migrating: Some(None),
                version_ceiling: 1,
            }
        }
    };
    let ceiling = record.version_ceiling;
    if let Some(after) = record.migrating {
        migrated.values = escape_values(db, after, ceiling, stop_after)?;
    }
    if read_only {
        return Ok((Versions::new(ceiling), migrated));
    }
    let versions = Versions::new(ceiling);
    versions.reserve(db)?;
    Ok((versions, migrated))
}

fn is_empty(db: &Db) -> Result<bool, augur::Error> {
    let options = ScanOptions {
        keys_only: true,
        ..ScanOptions::default()
    };
    let mut scan = db.scan_with::<&[u8], _>(.., &options);
    Ok(scan.next()?.is_none())
}

fn write_synced(db: &Db, batch: WriteBatch) -> Result<(), augur::Error> {
    db.write_opt(batch, WriteOptions { sync: true })
}

/// Step 1: moves every key `>= 0xFF` to its engine key, in one batch with the record
/// (state migrating, no progress). Returns the keys moved.
///
/// An old key may be another's new key (`0xFF` moves to `0xFF 0x00`, which may itself be an
/// old key, moving on to `0xFF 0x00 0x00`): the batch deletes every old key first and then
/// puts every new one, so a later put wins over an earlier delete of the same key.
fn move_reserved_keys(db: &Db) -> Result<u64, LayoutError> {
    let mut batch = WriteBatch::new();
    let mut puts = Vec::new();
    let (mut moved, mut bytes) = (0u64, 0usize);
    let mut scan = db.scan((Bound::Included(vec![RESERVED]), Bound::<Vec<u8>>::Unbounded));
    while let Some((key, value)) = scan.next()? {
        bytes = bytes.saturating_add(2 * key.len() + value.len() + 2);
        if bytes > MAX_MOVED_BYTES {
            return Err(LayoutError::TooManyReservedKeys(bytes));
        }
        batch.delete(key);
        let put = (engine_key(key).into_owned(), encode_string(value));
        puts.push((put, scan.expire_at()));
        moved += 1;
    }
    for ((key, value), expire_at) in puts {
        match expire_at {
            Some(at) => batch.put_expiring(key, value, at),
            None => batch.put(key, value),
        };
    }
    let record = Record {
        migrating: Some(None),
        version_ceiling: 1,
    };
    batch.put(LAYOUT_KEY, record.encode());
    write_synced(db, batch)?;
    if moved > 0 {
        log::info!("layout migration: moved {moved} keys beginning with byte 0xff");
    }
    Ok(moved)
}

/// Step 2: escapes every value beginning with 0xFF under keys below 0xFF, after the key
/// `after`, in batches that each record their progress; then marks the record ready.
/// Returns the values escaped.
fn escape_values(
    db: &Db,
    after: Option<Vec<u8>>,
    ceiling: u64,
    stop_after: Option<usize>,
) -> Result<u64, LayoutError> {
    let start = match after {
        Some(key) => Bound::Excluded(key),
        None => Bound::Unbounded,
    };
    let mut scan = db.scan((start, Bound::Excluded(vec![RESERVED])));
    let (mut escaped, mut batches) = (0u64, 0usize);
    let mut batch = WriteBatch::new();
    let (mut entries, mut bytes) = (0usize, 0usize);
    let progress = |key: &[u8]| Record {
        migrating: Some(Some(key.to_vec())),
        version_ceiling: ceiling,
    };
    while let Some((key, value)) = scan.next()? {
        if value.first() != Some(&RESERVED) {
            continue;
        }
        let (key, stored) = (key.to_vec(), encode_string(value));
        bytes += key.len() + stored.len();
        match scan.expire_at() {
            Some(at) => batch.put_expiring(&key, stored, at),
            None => batch.put(&key, stored),
        };
        entries += 1;
        escaped += 1;
        if entries >= BATCH_ENTRIES || bytes >= BATCH_BYTES {
            batch.put(LAYOUT_KEY, progress(&key).encode());
            write_synced(db, std::mem::take(&mut batch))?;
            (entries, bytes) = (0, 0);
            batches += 1;
            #[cfg(test)]
            if stop_after.is_some_and(|n| batches >= n) {
                return Err(LayoutError::Stopped);
            }
        }
    }
    #[cfg(not(test))]
    let _ = (stop_after, batches);
    let done = Record {
        migrating: None,
        version_ceiling: ceiling,
    };
    batch.put(LAYOUT_KEY, done.encode());
    write_synced(db, batch)?;
    if escaped > 0 {
        log::info!("layout migration: escaped {escaped} values beginning with byte 0xff");
    }
    Ok(escaped)
}

/// Issues hash versions, each once in the database's life (see the module doc).
/// Thread-safe: one short lock, and a synced write once per [`VERSION_BLOCK`] versions.
#[derive(Debug)]
pub struct Versions {
    /// The next version to issue, and the ceiling the record holds.
    state: Mutex<(u64, u64)>,
}

impl Versions {
    fn new(ceiling: u64) -> Versions {
        Versions {
            state: Mutex::new((ceiling, ceiling)),
        }
    }

    /// Raises the record's ceiling by a block above the next version.
    fn reserve(&self, db: &Db) -> Result<(), augur::Error> {
        let mut state = self.state.lock();
        raise(db, &mut state)
    }

    /// A version no hash of this database has had.
    ///
    /// # Errors
    ///
    /// The engine's, when the block is used up and raising the ceiling fails (a read-only
    /// database, a failed sync).
    pub fn next(&self, db: &Db) -> Result<u64, augur::Error> {
        let mut state = self.state.lock();
        if state.0 >= state.1 {
            // Once per block: the synced write under the lock keeps issuing in order.
            raise(db, &mut state)?;
        }
        state.0 += 1;
        Ok(state.0 - 1)
    }
}

/// Writes the record with the ceiling a block above the next version `state.0` (synced),
/// then notes it in `state.1`.
fn raise(db: &Db, state: &mut (u64, u64)) -> Result<(), augur::Error> {
    let ceiling = state.0.saturating_add(VERSION_BLOCK);
    let record = Record {
        migrating: None,
        version_ceiling: ceiling,
    };
    let mut batch = WriteBatch::new();
    batch.put(LAYOUT_KEY, record.encode());
    write_synced(db, batch)?;
    state.1 = ceiling;
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
