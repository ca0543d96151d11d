//! `augur stress`: a `db_stress`-style harness. N threads run random puts, deletes, batches,
//! point reads, snapshot-isolated range scans and flushes over a bounded key space, and
//! verify every read against the expected-state [`oracle`] as they go. At start it verifies
//! the whole key space against the oracle left by the previous run (which may have been
//! SIGKILLed: `scripts/crash_test.sh` does that over and over), so an acknowledged write
//! that was lost, or a value that was never written, is caught.
//!
//! Verification is exact because a key is only written or checked under its lock: a point
//! read holds the key's lock, so the database must return the oracle's committed value; a
//! scan locks its keys, takes a snapshot and notes their values, unlocks, and then the scan at
//! that snapshot must return exactly those (writes racing with it must not show).
//!
//! `--faults N` runs N rounds on the fault-injecting file system instead ([`faults`]), some
//! ended by a simulated power cut, checked against the round's write [`history`].
//!
//! With `--randomize` the engine options come from the run's seed (index type, learning
//! policy, error bound, value separation, block and memtable sizes small enough that flushes,
//! compactions and value-log GC run constantly); the compaction style is chosen once, when
//! the oracle is created, and kept for the database's life.

mod faults;
pub mod history;
pub mod oracle;

use crate::error::CliError;
use augur::fs::FaultFs;
use augur::{CompactionStyle, Db, IndexKind, LearningPolicy, Options, WriteBatch, WriteOptions};
use history::History;
use oracle::{Oracle, PENDING_DELETE};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Arguments of `augur stress`.
#[derive(clap::Args, Debug, Clone)]
pub struct StressArgs {
    /// Writer/reader threads.
    #[arg(long, default_value_t = 4)]
    pub threads: usize,
    /// Size of the key space (keys `k00000000` ..).
    #[arg(long, default_value_t = 20_000)]
    pub keys: u64,
    /// Stop after this many seconds (0: no time limit; then --ops must be given).
    #[arg(long, default_value_t = 10.0)]
    pub seconds: f64,
    /// Stop after this many operations per thread (0: no limit).
    #[arg(long, default_value_t = 0)]
    pub ops: u64,
    /// Seed of the operations and of --randomize (default: from the clock).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Choose the engine options from the seed (the engine flags are then ignored).
    #[arg(long)]
    pub randomize: bool,
    /// Only verify the database against the oracle, then exit.
    #[arg(long)]
    pub verify_only: bool,
    /// One write in this many is synced (0: none).
    #[arg(long, default_value_t = 100)]
    pub sync_every: u64,
    /// Run this many fault-injection rounds on an in-memory fault-injecting file system
    /// instead (the database path is then only a label; --ops is per thread and round,
    /// default 400).
    #[arg(long, default_value_t = 0)]
    pub faults: u64,
    /// With --faults: the fraction of rounds that end in a power cut (only synced data and
    /// synced directory entries survive) instead of a clean close; which rounds is drawn
    /// from the seed.
    #[arg(long, default_value_t = 0.25, value_name = "FRACTION")]
    pub power_cuts: f64,
}

/// What a run did.
#[derive(Debug, Default)]
struct Counts {
    ops: AtomicU64,
    writes: AtomicU64,
    reads_verified: AtomicU64,
    scans_verified: AtomicU64,
}

/// Runs `augur stress` on `dir` with `base` engine options (used unless `--randomize`).
pub fn run(dir: &Path, base: Options, args: &StressArgs, json: bool) -> Result<(), CliError> {
    if args.keys == 0 || args.keys > 100_000_000 {
        return Err(CliError::Failed(
            "--keys must be between 1 and 100000000".into(),
        ));
    }
    if args.threads == 0 || args.threads > 256 {
        return Err(CliError::Failed(
            "--threads must be between 1 and 256".into(),
        ));
    }
    if args.seconds <= 0.0 && args.ops == 0 && !args.verify_only {
        return Err(CliError::Failed("give --seconds or --ops".into()));
    }
    let seed = args.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64)
    });
    if args.faults > 0 {
        return faults::run(base, args, args.faults, seed, json);
    }
    let oracle_path = oracle_path(dir);
    refuse_foreign_database(dir, &oracle_path)?;
    let mut rng = StdRng::seed_from_u64(seed);
    let fresh_style = if args.randomize {
        u64::from(rng.gen_bool(0.5))
    } else {
        u64::from(base.compaction == Some(CompactionStyle::Flsm))
    };
    let oracle =
        Oracle::open_or_create(&oracle_path, args.keys, fresh_style).map_err(CliError::Failed)?;
    let mut opts = if args.randomize {
        randomized(&mut rng)
    } else {
        base
    };
    opts.compaction = Some(if oracle.style == 1 {
        CompactionStyle::Flsm
    } else {
        CompactionStyle::Leveled
    });
    let described = describe(&opts);
    let db = Db::open(dir, opts).map_err(|e| CliError::Failed(format!("open: {e}")))?;
    let started = Instant::now();
    let (verified, resolved) = verify_all(&db, &oracle)?;
    let verify_s = started.elapsed().as_secs_f64();
    if !json {
        // Printed at once: a run that is killed later has still reported its verification.
        println!("seed {seed}: {described}");
        println!(
            "verified {verified} keys at open ({resolved} writes in flight at the last stop), {verify_s:.2} s"
        );
        use std::io::Write;
        let _ = std::io::stdout().flush();
    }
    let counts = Counts::default();
    if !args.verify_only {
        let deadline =
            (args.seconds > 0.0).then(|| started + Duration::from_secs_f64(args.seconds));
        let run = Workload {
            db: &db,
            oracle: &oracle,
            threads: args.threads,
            ops: args.ops,
            deadline,
            sync_every: args.sync_every,
            seed,
            refusals: None,
            history: None,
            power: None,
        };
        if let Err(e) = run.run(&counts) {
            return Err(CliError::Failed(format!(
                "stress (seed {seed}, {described}): {e}"
            )));
        }
        db.close()
            .map_err(|e| CliError::Failed(format!("close: {e}")))?;
    }
    let c = |a: &AtomicU64| a.load(Ordering::Relaxed);
    if json {
        println!(
            "{}",
            serde_json::json!({
                "seed": seed,
                "options": described,
                "keys_verified_at_open": verified,
                "pending_resolved_at_open": resolved,
                "verify_seconds": verify_s,
                "ops": c(&counts.ops),
                "writes": c(&counts.writes),
                "reads_verified": c(&counts.reads_verified),
                "scans_verified": c(&counts.scans_verified),
            })
        );
    } else {
        if !args.verify_only {
            println!(
                "{} ops: {} writes, {} reads and {} scans verified",
                c(&counts.ops),
                c(&counts.writes),
                c(&counts.reads_verified),
                c(&counts.scans_verified)
            );
        }
    }
    Ok(())
}

/// Fails, before anything is written, when `dir` holds a database (or anything else) that
/// `stress` did not create: without the oracle beside it, its keys are not stress keys, and
/// checking them would only report "unknown" keys.
fn refuse_foreign_database(dir: &Path, oracle: &Path) -> Result<(), CliError> {
    let occupied = std::fs::read_dir(dir).is_ok_and(|mut entries| entries.next().is_some());
    if occupied && !oracle.exists() {
        return Err(CliError::Failed(format!(
            "{} is not empty and has no {} beside it: `stress` runs only on a database it \
             created (it writes and checks its own keys, and keeps their expected state in \
             that file). Give it a new directory",
            dir.display(),
            oracle.display()
        )));
    }
    Ok(())
}

/// The oracle of the database in `dir`: `<dir>.expected`, beside it.
pub fn oracle_path(dir: &Path) -> PathBuf {
    let mut p = dir.as_os_str().to_owned();
    p.push(".expected");
    PathBuf::from(p)
}

/// Key locks: key `k` is guarded by `locks[k % LOCKS]`.
const LOCKS: u64 = 1024;

/// The key of index `k`.
fn key(k: u64) -> Vec<u8> {
    format!("k{k:08}").into_bytes()
}

/// The index of key bytes `kb` (the inverse of [`key`]) when it is in `0..keys`.
fn parse_key(kb: &[u8], keys: u64) -> Option<u64> {
    std::str::from_utf8(kb)
        .ok()
        .and_then(|s| s.strip_prefix('k'))
        .and_then(|s| s.parse::<u64>().ok())
        .filter(|k| *k < keys && key(*k) == kb)
}

/// The value with id `id` of key `k`: it names both, and its length (20 to ~300 bytes)
/// varies with the id so that some values are separated into the value log and some not.
fn value(k: u64, id: u32) -> Vec<u8> {
    let mut v = format!("{k:08}:{id:010}:").into_bytes();
    let len = 20 + (id as usize * 37) % 280;
    let fill = b'a' + (id % 26) as u8;
    v.resize(len.max(v.len()), fill);
    v
}

/// The value id a stored value of key `k` carries, or an error when it is not one this
/// harness wrote for `k`.
fn parse_value(k: u64, v: &[u8]) -> Result<u32, String> {
    let bad = || {
        format!(
            "key {k}: value {:?} was never written",
            String::from_utf8_lossy(v)
        )
    };
    let text = std::str::from_utf8(v.get(..20).ok_or_else(bad)?).map_err(|_| bad())?;
    let (kk, rest) = text.split_once(':').ok_or_else(bad)?;
    let id: u32 = rest.get(..10).ok_or_else(bad)?.parse().map_err(|_| bad())?;
    if kk.parse::<u64>().ok() != Some(k) || value(k, id) != v {
        return Err(bad());
    }
    Ok(id)
}

/// The value id `db` holds for key `k` (0: absent).
fn read_id(db: &Db, k: u64, snap: Option<&augur::Snapshot>) -> Result<u32, String> {
    id_of(k, fetch(db, k, snap)?)
}

/// The value `db` holds for key `k`; the error is the engine's.
fn fetch(db: &Db, k: u64, snap: Option<&augur::Snapshot>) -> Result<Option<Vec<u8>>, String> {
    match snap {
        Some(s) => db.get_at(key(k), s),
        None => db.get(key(k)),
    }
    .map_err(|e| format!("get {k}: {e}"))
}

/// The value id of `got`, a value of key `k` (0: absent).
fn id_of(k: u64, got: Option<Vec<u8>>) -> Result<u32, String> {
    got.map_or(Ok(0), |v| parse_value(k, &v))
}

/// Checks every key against the oracle and settles writes that were in flight.
fn verify_all(db: &Db, oracle: &Oracle) -> Result<(u64, u64), CliError> {
    let found = read_all(db, oracle.keys())?;
    let mut resolved = 0;
    let mut wrong = Vec::new();
    for (k, &found) in (0..oracle.keys()).zip(&found) {
        let expected = oracle.get(k);
        if !expected.allows(found) {
            wrong.push(format!(
                "key {k}: found value {found}, expected {expected:?}"
            ));
            continue;
        }
        if expected.pending != 0 {
            resolved += 1;
            oracle.settle(k, found).map_err(CliError::Failed)?;
        }
    }
    if !wrong.is_empty() {
        let n = wrong.len();
        wrong.truncate(10);
        return Err(CliError::Failed(format!(
            "{n} keys disagree with the oracle:\n{}",
            wrong.join("\n")
        )));
    }
    Ok((oracle.keys(), resolved))
}

/// The value id every key of `0..keys` holds (0: absent), by point reads; a full scan must
/// agree with them (and hold no key outside the space).
fn read_all(db: &Db, keys: u64) -> Result<Vec<u32>, CliError> {
    let found = (0..keys)
        .map(|k| read_id(db, k, None))
        .collect::<Result<Vec<u32>, String>>()
        .map_err(CliError::Failed)?;
    let mut scanned = 0u64;
    for item in db.iter() {
        let (kb, v) = item.map_err(|e| CliError::Failed(format!("scan: {e}")))?;
        let k = parse_key(&kb, keys)
            .ok_or_else(|| CliError::Failed(format!("scan: unknown key {kb:?}")))?;
        let id = parse_value(k, &v).map_err(CliError::Failed)?;
        if found.get(k as usize) != Some(&id) {
            return Err(CliError::Failed(format!(
                "scan: key {k} holds {id}, a point read said otherwise"
            )));
        }
        scanned += 1;
    }
    let present = found.iter().filter(|&&id| id != 0).count() as u64;
    if scanned != present {
        return Err(CliError::Failed(format!(
            "scan returned {scanned} keys, {present} are present"
        )));
    }
    Ok(found)
}

/// Locks the stripes of `keys` in ascending order (so threads never deadlock).
fn lock<'a>(locks: &'a [Mutex<()>], keys: &[u64]) -> Vec<MutexGuard<'a, ()>> {
    let mut stripes: Vec<u64> = keys.iter().map(|k| k % LOCKS).collect();
    stripes.sort_unstable();
    stripes.dedup();
    stripes
        .into_iter()
        .filter_map(|s| locks.get(s as usize))
        .map(|m| m.lock().unwrap_or_else(|p| p.into_inner()))
        .collect()
}

/// One multi-threaded run of the workload over an open database.
struct Workload<'a> {
    db: &'a Db,
    oracle: &'a Oracle,
    threads: usize,
    /// Operations per thread (0: until the deadline).
    ops: u64,
    deadline: Option<Instant>,
    sync_every: u64,
    /// Thread `t` draws its operations from `seed` and `t`.
    seed: u64,
    /// Fault-injection mode: where refused writes are noted (see [`Worker`]).
    refusals: Option<&'a Mutex<Vec<String>>>,
    /// Fault-injection mode: the round's write history, for a power cut at its end.
    history: Option<&'a History>,
    /// Fault-injection mode: the file system a power cut may take down while the threads
    /// run (see [`Worker::power`]).
    power: Option<&'a FaultFs>,
}

impl Workload<'_> {
    /// Runs the threads until each is done; the first verification failure stops them all
    /// and is returned.
    fn run(&self, counts: &Counts) -> Result<(), String> {
        let locks: Vec<Mutex<()>> = (0..LOCKS).map(|_| Mutex::new(())).collect();
        let stop = AtomicBool::new(false);
        let failure: Mutex<Option<String>> = Mutex::new(None);
        std::thread::scope(|s| {
            for t in 0..self.threads {
                let w = Worker {
                    db: self.db,
                    oracle: self.oracle,
                    locks: &locks,
                    counts,
                    sync_every: self.sync_every,
                    rng: StdRng::seed_from_u64(
                        self.seed ^ (t as u64 + 1).wrapping_mul(0x9e37_79b9),
                    ),
                    refusals: self.refusals,
                    history: self.history,
                    power: self.power,
                };
                let (stop, failure) = (&stop, &failure);
                let (ops, deadline) = (self.ops, self.deadline);
                s.spawn(move || {
                    if let Err(e) = w.run(ops, deadline, stop) {
                        stop.store(true, Ordering::Relaxed);
                        let mut f = failure.lock().unwrap_or_else(|p| p.into_inner());
                        f.get_or_insert(e);
                    }
                });
            }
        });
        match failure.into_inner().unwrap_or_else(|p| p.into_inner()) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// One stress thread.
struct Worker<'a> {
    db: &'a Db,
    oracle: &'a Oracle,
    locks: &'a [Mutex<()>],
    counts: &'a Counts,
    sync_every: u64,
    rng: StdRng,
    /// Fault-injection mode (`stress/faults.rs`): a write may fail; its error is noted here
    /// and the thread stops, leaving the write pending in the oracle.
    refusals: Option<&'a Mutex<Vec<String>>>,
    /// Fault-injection mode: every write and sync point is recorded here (see
    /// [`history`]).
    history: Option<&'a History>,
    /// Fault-injection mode: once this file system is down (a power cut in the middle of
    /// the round), reads through the dead process's handles fail too: the thread gives up
    /// such a read and goes on until a write fails (noted in `refusals`, which stops every
    /// thread). Reads are never failed by injection, so a read error is only excused while
    /// the file system is down.
    power: Option<&'a FaultFs>,
}

impl Worker<'_> {
    fn run(mut self, ops: u64, deadline: Option<Instant>, stop: &AtomicBool) -> Result<(), String> {
        let mut done = 0u64;
        while !stop.load(Ordering::Relaxed)
            && (ops == 0 || done < ops)
            && deadline.is_none_or(|d| Instant::now() < d)
        {
            if self.refused() {
                return Ok(());
            }
            match self.rng.gen_range(0..100) {
                0..=34 => self.write(1, false)?,
                35..=44 => self.write(1, true)?,
                45..=54 => {
                    let n = self.rng.gen_range(2..=8);
                    self.write(n, false)?
                }
                55..=84 => self.point_read()?,
                85..=98 => self.scan()?,
                _ => self.maintenance()?,
            }
            done += 1;
            self.counts.ops.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    }

    /// In fault-injection mode, whether this thread saw a write refused (and so stops).
    fn refused(&self) -> bool {
        self.refusals
            .is_some_and(|r| !r.lock().unwrap_or_else(|p| p.into_inner()).is_empty())
    }

    /// In fault-injection mode, whether a power cut took the file system down.
    fn down(&self) -> bool {
        self.power.is_some_and(FaultFs::is_crashed)
    }

    /// `r`, unless it is the engine's read error while the file system is down: then
    /// `None` (the thread gives up the read). What a read returns is still checked.
    fn unless_down<T>(&self, r: Result<T, String>) -> Result<Option<T>, String> {
        match r {
            Ok(v) => Ok(Some(v)),
            Err(_) if self.down() => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// In fault-injection mode, notes a failed write and returns `Ok` (the write stays
    /// pending in the oracle); otherwise the failure is the stress test's.
    fn write_failed(&self, what: &str, e: augur::Error) -> Result<(), String> {
        match (self.refusals, &e) {
            (Some(r), augur::Error::Io { .. } | augur::Error::Poisoned { .. }) => {
                r.lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(format!("{what}: {e}"));
                Ok(())
            }
            _ => Err(format!("{what}: {e}")),
        }
    }

    /// A put (or a delete) of one key, or a batch of `n` puts and deletes.
    fn write(&mut self, n: usize, delete: bool) -> Result<(), String> {
        let mut keys: Vec<u64> = (0..n)
            .map(|_| self.rng.gen_range(0..self.oracle.keys()))
            .collect();
        keys.sort_unstable();
        keys.dedup();
        let _held = lock(self.locks, &keys);
        let mut batch = WriteBatch::new();
        // (key, value id written (0: delete), committed value id) for the history.
        let mut ops = Vec::with_capacity(keys.len());
        for &k in &keys {
            let del = delete || (n > 1 && self.rng.gen_bool(0.2));
            let committed = self.oracle.get(k).value;
            if del {
                self.oracle.begin(k, PENDING_DELETE)?;
                batch.delete(key(k));
                ops.push((k, 0, committed));
            } else {
                let id = self.rng.gen_range(1..PENDING_DELETE);
                self.oracle.begin(k, id)?;
                batch.put(key(k), value(k, id));
                ops.push((k, id, committed));
            }
        }
        let sync = self.sync_every > 0 && self.rng.gen_range(0..self.sync_every) == 0;
        let recorded = self.history.map(|h| (h, h.begin(&ops)));
        if let Err(e) = self.db.write_opt(batch, WriteOptions { sync }) {
            return self.write_failed("write", e);
        }
        if let Some((h, id)) = recorded {
            h.acknowledge(id, sync);
        }
        for &k in &keys {
            self.oracle.commit(k)?;
        }
        self.counts.writes.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    fn point_read(&mut self) -> Result<(), String> {
        let k = self.rng.gen_range(0..self.oracle.keys());
        let _held = lock(self.locks, &[k]);
        let expected = self.oracle.get(k);
        let Some(got) = self.unless_down(fetch(self.db, k, None))? else {
            return Ok(());
        };
        let found = id_of(k, got)?;
        // Under the key's lock a write is pending only after it failed (fault injection):
        // then either value may be read.
        if !expected.allows(found) || (expected.pending != 0 && self.refusals.is_none()) {
            return Err(format!(
                "key {k}: read value {found}, expected {expected:?}"
            ));
        }
        self.counts.reads_verified.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// A forward or backward scan of up to 16 consecutive keys at a snapshot taken while
    /// they were locked; writes after the snapshot must not show.
    fn scan(&mut self) -> Result<(), String> {
        let len = self.rng.gen_range(1..=16u64);
        let start = self.rng.gen_range(0..self.oracle.keys());
        let end = (start + len).min(self.oracle.keys());
        let keys: Vec<u64> = (start..end).collect();
        let held = lock(self.locks, &keys);
        let snap = self.db.snapshot();
        let expected: Vec<oracle::Expected> = keys.iter().map(|&k| self.oracle.get(k)).collect();
        drop(held);
        // Let other threads write to these keys before the scan reads them.
        std::thread::yield_now();
        let range = key(start)..key(end);
        let reverse = self.rng.gen_bool(0.3);
        let iter = self.db.range_at(range, &snap);
        let items: Result<Vec<_>, augur::Error> = if reverse {
            iter.rev().collect::<Result<Vec<_>, _>>().map(|mut v| {
                v.reverse();
                v
            })
        } else {
            iter.collect()
        };
        let Some(items) = self.unless_down(items.map_err(|e| format!("scan: {e}")))? else {
            return Ok(());
        };
        // The id each key of the range holds in the scan (0: absent); keys come in order.
        let mut got = vec![0u32; keys.len()];
        let mut last = None;
        for (kb, v) in &items {
            let i = parse_key(kb, end)
                .filter(|&k| k >= start)
                .map(|k| (k - start) as usize)
                .ok_or_else(|| format!("scan from {start}: key {kb:?} out of range"))?;
            if last.is_some_and(|l| l >= i) {
                return Err(format!("scan from {start}: key {kb:?} out of order"));
            }
            last = Some(i);
            got[i] = parse_value(start + i as u64, v)?;
        }
        for (i, (e, &id)) in expected.iter().zip(&got).enumerate() {
            if !e.allows(id) || (e.pending != 0 && self.refusals.is_none()) {
                return Err(format!(
                    "scan {start}..{end} (reverse {reverse}) at a snapshot: key {} holds {id}, expected {e:?}",
                    start + i as u64
                ));
            }
        }
        // A point read at the same snapshot agrees too.
        if let Some(&id) = got.first() {
            let Some(got) = self.unless_down(fetch(self.db, start, Some(&snap)))? else {
                return Ok(());
            };
            let found = id_of(start, got)?;
            if found != id {
                return Err(format!(
                    "snapshot read of {start}: {found}, the scan saw {id}"
                ));
            }
        }
        self.counts.scans_verified.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Rarely: a flush, a compaction of a small range, or a value-log GC pass.
    fn maintenance(&mut self) -> Result<(), String> {
        let r = self.maintenance_op();
        match r {
            Err(e) if self.refusals.is_some() => {
                if let Some(r) = self.refusals {
                    r.lock().unwrap_or_else(|p| p.into_inner()).push(e);
                }
                Ok(())
            }
            r => r,
        }
    }

    fn maintenance_op(&mut self) -> Result<(), String> {
        match self.rng.gen_range(0..20) {
            0 => self.sync_point(|db| db.flush().map_err(|e| format!("flush: {e}"))),
            1 => {
                let a = self.rng.gen_range(0..self.oracle.keys());
                let b = (a + 500).min(self.oracle.keys());
                // compact_range flushes first: a sync point too.
                self.sync_point(|db| {
                    db.compact_range(Some(&key(a)), Some(&key(b)))
                        .map_err(|e| format!("compact: {e}"))
                })
            }
            2 => self
                .db
                .run_value_log_gc()
                .map(|_| ())
                .map_err(|e| format!("gc: {e}")),
            _ => Ok(()),
        }
    }
}

impl Worker<'_> {
    /// Runs `op`, an operation that makes every write acknowledged before it durable when it
    /// succeeds (a flush), and records it in the history.
    fn sync_point(&self, op: impl FnOnce(&Db) -> Result<(), String>) -> Result<(), String> {
        let issued = self.history.map(|h| (h, h.sync_issued()));
        op(self.db)?;
        if let Some((h, tick)) = issued {
            h.synced(tick);
        }
        Ok(())
    }
}

/// Engine options drawn from `rng`: every index type and learning policy, and sizes small
/// enough that flush, compaction and value-log GC run all the time.
fn randomized(rng: &mut StdRng) -> Options {
    let policies = [
        LearningPolicy::Never,
        LearningPolicy::AtBuild,
        LearningPolicy::Always,
        LearningPolicy::CostBenefit,
        LearningPolicy::Lazy,
    ];
    let mut o = Options {
        index: IndexKind::ALL[rng.gen_range(0..IndexKind::ALL.len())],
        learning: policies[rng.gen_range(0..policies.len())],
        learning_wait_ms: rng.gen_range(0..50),
        lazy_learning_reads: rng.gen_range(1..100),
        error_bound: [2, 8, 32][rng.gen_range(0..3)],
        value_separation_threshold: [24, 64, 128, 1 << 20][rng.gen_range(0..4)],
        memtable_size_bytes: rng.gen_range(16..256) << 10,
        target_file_size_bytes: rng.gen_range(16..256) << 10,
        block_records: [4, 16, 64][rng.gen_range(0..3)],
        value_log_segment_bytes: rng.gen_range(64..1024) << 10,
        value_log_gc_ratio: [0.1, 0.3, 0.5][rng.gen_range(0..3)],
        ..Options::default()
    };
    o.flsm.max_sstables_per_guard = rng.gen_range(2..6);
    o.flsm.top_level_bits = rng.gen_range(6..12);
    o.level_merge = rng.gen_bool(0.7);
    o.level_merge_threshold = [0.0, 0.1, 0.3][rng.gen_range(0..3)];
    o
}

/// A one-line summary of the options a run used.
fn describe(o: &Options) -> String {
    format!(
        "compaction {:?}, index {}, learning {:?}, error bound {}, separation ≥ {} B, memtable {} KiB, files {} KiB",
        o.compaction,
        o.index.name(),
        o.learning,
        o.error_bound,
        o.value_separation_threshold,
        o.memtable_size_bytes >> 10,
        o.target_file_size_bytes >> 10
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_name_their_key_and_id_and_nothing_else_parses() {
        let v = value(42, 7);
        assert_eq!(parse_value(42, &v), Ok(7));
        assert!(parse_value(43, &v).is_err(), "another key's value");
        let mut damaged = v.clone();
        damaged.push(b'x');
        assert!(
            parse_value(42, &damaged).is_err(),
            "a value of the wrong length"
        );
        assert!(parse_value(42, b"short").is_err());
        let sizes: std::collections::BTreeSet<usize> =
            (1..200).map(|id| value(1, id).len()).collect();
        assert!(sizes.iter().any(|&s| s < 64) && sizes.iter().any(|&s| s > 200));
    }

    fn args(seconds: f64, ops: u64) -> StressArgs {
        StressArgs {
            threads: 3,
            keys: 500,
            seconds,
            ops,
            seed: Some(7),
            randomize: true,
            verify_only: false,
            sync_every: 50,
            faults: 0,
            power_cuts: 0.25,
        }
    }

    #[test]
    fn a_run_verifies_and_a_second_run_resumes_from_the_oracle() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("db");
        run(&db, Options::default(), &args(0.0, 3000), true).unwrap();
        let mut again = args(0.0, 500);
        again.seed = Some(8);
        run(&db, Options::default(), &again, true).unwrap();
        again.verify_only = true;
        run(&db, Options::default(), &again, true).unwrap();
    }

    #[test]
    fn fault_rounds_lose_nothing() {
        let mut a = args(0.0, 150);
        a.faults = 12;
        run(Path::new("/unused"), Options::default(), &a, true).unwrap();
    }

    #[test]
    fn fault_rounds_with_power_cuts_lose_nothing_durable() {
        let mut a = args(0.0, 150);
        a.faults = 12;
        a.power_cuts = 0.5;
        run(Path::new("/unused"), Options::default(), &a, true).unwrap();
    }

    #[test]
    fn a_lost_write_is_caught() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("db");
        run(&db, Options::default(), &args(0.0, 1000), true).unwrap();
        // Pretend an acknowledged write was lost: the oracle expects a value the
        // database never held.
        let o = Oracle::open_or_create(&oracle_path(&db), 500, 0).unwrap();
        let k = (0..500).find(|&k| o.get(k).value != 0).unwrap();
        let e = o.get(k);
        o.settle(k, e.value.wrapping_add(1).max(1)).unwrap();
        drop(o);
        let mut verify = args(0.0, 0);
        verify.verify_only = true;
        let err = run(&db, Options::default(), &verify, true).unwrap_err();
        assert!(format!("{err:?}").contains(&format!("key {k}")), "{err:?}");
    }
}
