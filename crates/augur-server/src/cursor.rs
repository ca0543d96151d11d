//! `SCAN` cursors: the number a client holds and the key position it stands for.
//!
//! A position is a byte string `S`: the scan resumes at the first key `>= S`. Why positions
//! are chosen as they are, and what a client may rely on, is in `commands/keys.rs`; this
//! module maps positions to numbers and back, and never maps one number to two positions.
//!
//! Every cursor is below 2^53, so it stays exact in a client that holds it in a double
//! (node-redis 4 parses it with `Number`) or in a signed 64-bit integer. Bit 52 tells the
//! two kinds apart:
//!
//! - **Direct** (bit 52 clear): positions of 1 to [`DIRECT_MAX_BYTES`] bytes are in the number
//!   itself: bits 49–51 hold the length `n`, the `8n` bits below them the bytes, and the
//!   remaining `49 - 8n` low bits (9 to 41) a check of the bytes (`check`, fixed forever:
//!   it is part of the format). Such a cursor means the same position in every process, so
//!   it survives restarts and any number of other scans. A number whose length field is 0,
//!   6 or 7 (every number below 2^49 among them) or whose check does not match is refused.
//! - **Table** (bit 52 set): longer positions are kept in this process's table, under a
//!   number made of a 20-bit epoch (random per process, renewed after 2^32 cursors) and a
//!   32-bit sequence number (from a random start). No number is issued twice in a process,
//!   so an evicted cursor is refused, never resolved to a later scan's position; a cursor
//!   from an earlier process names a live entry only if the random epochs coincide and its
//!   sequence number is live (about 2^-20 × 2^18/2^32 = 2^-34). The table keeps the newest
//!   [`MAX_TABLE_CURSORS`] cursors and [`MAX_TABLE_BYTES`] of positions.

use parking_lot::Mutex;
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};

/// Every cursor is below `2^CURSOR_BITS`.
pub const CURSOR_BITS: u32 = 53;
/// Set in table cursors, clear in direct ones.
const TABLE_BIT: u64 = 1 << (CURSOR_BITS - 1);
/// A direct cursor's 3-bit length field starts here.
const LEN_SHIFT: u32 = CURSOR_BITS - 4;
/// The longest position a cursor holds itself.
pub const DIRECT_MAX_BYTES: usize = 5;
/// Bits of a table cursor's sequence number; the epoch takes the rest below [`TABLE_BIT`].
const SEQ_BITS: u32 = 32;
const EPOCH_BITS: u32 = CURSOR_BITS - 1 - SEQ_BITS;
/// Table cursors kept at once; the oldest is forgotten first.
pub const MAX_TABLE_CURSORS: usize = 262_144;
/// Bytes of positions kept in the table at once; the oldest is forgotten first.
pub const MAX_TABLE_BYTES: usize = 16 << 20;

/// A cursor this server did not issue, or has forgotten (`ERR invalid cursor`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InvalidCursor;

/// The cursors of a running server: issues a number for a position and resolves numbers.
/// Thread-safe (one short lock, taken only for table cursors).
pub struct Cursors {
    table: Mutex<Table>,
}

/// Positions too long for a direct cursor, by cursor.
struct Table {
    epoch: u64,
    next_seq: u64,
    /// Cursors the current epoch may still issue before its sequence numbers would repeat.
    left_in_epoch: u64,
    used_epochs: HashSet<u64>,
    positions: HashMap<u64, Box<[u8]>>,
    /// Cursors in the order issued (for eviction).
    order: VecDeque<u64>,
    bytes: usize,
}

impl Default for Cursors {
    fn default() -> Self {
        Cursors::new()
    }
}

impl Cursors {
    /// No cursors yet; table cursors get a fresh random epoch.
    pub fn new() -> Cursors {
        Cursors {
            table: Mutex::new(Table {
                epoch: 0,
                next_seq: 0,
                left_in_epoch: 0,
                used_epochs: HashSet::new(),
                positions: HashMap::new(),
                order: VecDeque::new(),
                bytes: 0,
            }),
        }
    }

    /// The cursor for "resume at the first key `>= position`" (never 0).
    pub fn issue(&self, position: &[u8]) -> u64 {
        direct(position).unwrap_or_else(|| self.table.lock().insert(position))
    }

    /// The position `cursor` stands for: `None` for 0 (the start).
    ///
    /// # Errors
    /// [`InvalidCursor`] for a number this process did not issue and that is not a valid
    /// direct cursor, or a table cursor already forgotten.
    pub fn resolve(&self, cursor: u64) -> Result<Option<Vec<u8>>, InvalidCursor> {
        if cursor == 0 {
            Ok(None)
        } else if cursor >> CURSOR_BITS != 0 {
            Err(InvalidCursor)
        } else if cursor & TABLE_BIT != 0 {
            let table = self.table.lock();
            let position = table.positions.get(&cursor).ok_or(InvalidCursor)?;
            Ok(Some(position.to_vec()))
        } else {
            undirect(cursor).map(Some).ok_or(InvalidCursor)
        }
    }
}

impl Table {
    fn insert(&mut self, position: &[u8]) -> u64 {
        if self.left_in_epoch == 0 {
            self.new_epoch();
        }
        let cursor = TABLE_BIT | (self.epoch << SEQ_BITS) | self.next_seq;
        self.next_seq = (self.next_seq + 1) & low_mask(SEQ_BITS);
        self.left_in_epoch -= 1;
        self.bytes += position.len();
        self.positions.insert(cursor, position.into());
        self.order.push_back(cursor);
        while self.order.len() > MAX_TABLE_CURSORS || self.bytes > MAX_TABLE_BYTES {
            let Some(old) = self.order.pop_front() else {
                break;
            };
            if let Some(p) = self.positions.remove(&old) {
                self.bytes -= p.len();
            }
        }
        cursor
    }

    /// Moves to an epoch this process has not used, from a random sequence number.
    fn new_epoch(&mut self) {
        if self.used_epochs.len() as u64 >= low_mask(EPOCH_BITS) {
            // After 2^52 cursors: the oldest epochs' cursors are long forgotten.
            self.used_epochs.clear();
            self.used_epochs.insert(self.epoch);
        }
        loop {
            let epoch = random_u64() & low_mask(EPOCH_BITS);
            if self.used_epochs.insert(epoch) {
                self.epoch = epoch;
                break;
            }
        }
        self.next_seq = random_u64() & low_mask(SEQ_BITS);
        self.left_in_epoch = 1 << SEQ_BITS;
    }
}

/// The shortest position between two neighbouring keys: a scan that returned `last` and
/// stops before `next` resumes from it (it is `> last` and `<= next`: `next` up to and
/// including its first byte that differs from `last`). REQUIRES: `last < next`.
pub fn resume_position(last: &[u8], next: &[u8]) -> Vec<u8> {
    let common = last.iter().zip(next).take_while(|(a, b)| a == b).count();
    next.get(..=common).unwrap_or(next).to_vec()
}

/// The direct cursor of `position`, when it is short enough.
fn direct(position: &[u8]) -> Option<u64> {
    if position.is_empty() || position.len() > DIRECT_MAX_BYTES {
        return None;
    }
    let check_bits = LEN_SHIFT - 8 * position.len() as u32;
    let mut value = position.len() as u64;
    for &b in position {
        value = (value << 8) | u64::from(b);
    }
    Some((value << check_bits) | (check(position) & low_mask(check_bits)))
}

/// The position of a direct cursor (bit 52 clear), if its length and check are valid.
fn undirect(cursor: u64) -> Option<Vec<u8>> {
    let len = usize::try_from((cursor >> LEN_SHIFT) & 7).ok()?;
    if len == 0 || len > DIRECT_MAX_BYTES {
        return None;
    }
    let check_bits = LEN_SHIFT - 8 * len as u32;
    let bytes = (cursor >> check_bits) & low_mask(8 * len as u32);
    let position: Vec<u8> = (0..len).rev().map(|i| (bytes >> (8 * i)) as u8).collect();
    let valid = cursor & low_mask(check_bits) == check(&position) & low_mask(check_bits);
    valid.then_some(position)
}

/// The check of a direct cursor's bytes: FNV-1a from a fixed seed, then splitmix64's
/// finalizer (so every input bit reaches the low bits kept). Part of the cursor format:
/// changing it would make every direct cursor held by a client invalid across an upgrade.
fn check(position: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ 0x5343_414e; // "SCAN"
    for &b in position {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h ^= h >> 30;
    h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h ^= h >> 27;
    h = h.wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}

fn low_mask(bits: u32) -> u64 {
    (1u64 << bits) - 1
}

/// A random number: std's `RandomState` is seeded from the OS's randomness once per thread
/// and differs at every call; the time, the process id and a counter are mixed in too.
fn random_u64() -> u64 {
    use std::hash::{BuildHasher, RandomState};
    static CALLS: AtomicU64 = AtomicU64::new(0);
    RandomState::new().hash_one((
        std::time::SystemTime::now(),
        std::process::id(),
        CALLS.fetch_add(1, Ordering::Relaxed),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator for the tests (xorshift64*).
    struct Gen(u64);

    impl Gen {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }

        fn bytes(&mut self, len: usize) -> Vec<u8> {
            (0..len).map(|_| self.next() as u8).collect()
        }
    }

    #[test]
    fn the_resume_position_lies_between_the_keys_and_is_shortest() {
        let mut g = Gen(7);
        for _ in 0..20_000 {
            let len = (g.next() % 6) as usize;
            let mut a = g.bytes(len);
            // Often share a prefix, sometimes be a prefix.
            let shared = g.next() as usize % (a.len() + 1);
            let mut b = a[..shared].to_vec();
            let tail = (g.next() % 4) as usize;
            b.extend(g.bytes(tail));
            if a == b {
                continue;
            }
            if a > b {
                std::mem::swap(&mut a, &mut b);
            }
            let p = resume_position(&a, &b);
            assert!(a.as_slice() < p.as_slice() && p.as_slice() <= b.as_slice());
            let shorter = &p[..p.len() - 1];
            assert!(shorter <= a.as_slice(), "{a:?} {b:?} {p:?}");
        }
        assert_eq!(resume_position(b"k0999", b"k1000"), b"k1");
        assert_eq!(resume_position(b"ab", b"abc"), b"abc");
        assert_eq!(resume_position(b"", b"\0"), b"\0");
    }

    #[test]
    fn short_positions_are_in_the_number_and_mean_the_same_in_every_process() {
        let (one, other) = (Cursors::new(), Cursors::new());
        let mut g = Gen(11);
        for len in 1..=DIRECT_MAX_BYTES {
            for _ in 0..2000 {
                let p = g.bytes(len);
                let c = one.issue(&p);
                assert!((1 << LEN_SHIFT..TABLE_BIT).contains(&c), "{c}");
                assert_eq!(other.resolve(c), Ok(Some(p.clone())));
                assert_eq!(c, other.issue(&p));
            }
        }
        // The format is fixed: a cursor a client holds stays valid across upgrades.
        assert_eq!(one.issue(b"k1"), direct(b"k1").unwrap());
        assert_eq!(direct(b"k1"), Some(1_361_623_055_887_075));
    }

    #[test]
    fn long_positions_are_in_the_table_of_their_process_only() {
        let (one, other) = (Cursors::new(), Cursors::new());
        let p = b"user:000000001234".to_vec();
        let c = one.issue(&p);
        assert!(c & TABLE_BIT != 0 && c >> CURSOR_BITS == 0);
        assert_eq!(one.resolve(c), Ok(Some(p.clone())));
        assert_eq!(other.resolve(c), Err(InvalidCursor));
        assert_ne!(one.issue(&p), c, "a number is issued once");
    }

    #[test]
    fn forgotten_cursors_are_refused_never_reused() {
        let cursors = Cursors::new();
        let first = cursors.issue(b"the first long position");
        let mut issued = HashSet::new();
        for i in 0..MAX_TABLE_CURSORS {
            assert!(issued.insert(cursors.issue(format!("position {i:08}").as_bytes())));
        }
        assert!(!issued.contains(&first));
        assert_eq!(cursors.resolve(first), Err(InvalidCursor));
        let big = vec![b'x'; 60_000];
        for _ in 0..(MAX_TABLE_BYTES / big.len() + 1) {
            cursors.issue(&big);
        }
        let table = cursors.table.lock();
        assert!(table.bytes <= MAX_TABLE_BYTES && table.order.len() == table.positions.len());
    }

    #[test]
    fn made_up_numbers_are_refused() {
        let cursors = Cursors::new();
        for n in [
            1u64,
            2,
            12345,
            1 << 20,
            (1 << 49) - 1,
            TABLE_BIT,
            u64::MAX,
            1 << 53,
        ] {
            assert_eq!(cursors.resolve(n), Err(InvalidCursor), "{n}");
        }
        for n in 1..100_000u64 {
            assert_eq!(cursors.resolve(n), Err(InvalidCursor), "{n}");
        }
        // Random numbers below 2^53: a direct one passes its check with probability about
        // 1/8 × 2^-9 (5 bytes) + smaller terms, i.e. ~1.2e-4 of all numbers.
        let mut g = Gen(3);
        let accepted = (0..100_000)
            .filter(|_| cursors.resolve(g.next() & low_mask(CURSOR_BITS)).is_ok())
            .count();
        assert!(
            accepted < 60,
            "{accepted} of 100000 random numbers accepted"
        );
    }
}
