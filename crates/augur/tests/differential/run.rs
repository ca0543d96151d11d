//! One run of the differential suite: the database under test beside its model, the live
//! snapshots and open iterators with what they must still yield, the recent operations a
//! failure report shows; opening, reopening (under other read modes, policies and index
//! types), the iterator check every read goes through, and the final checks of a run.

use super::model::{make_keys, random_key_byte, show, show_pair, Model, Pair};
use super::options::{draw_options, random_learning, read_setup, Config, Storage, Values};
use augur::fs::MemFs;
use augur::{
    Clock, Db, DbIterator, IndexKind, LearningPolicy, ManualClock, Options, ReadMode, Snapshot,
    Stats,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, VecDeque};
use std::ops::Bound;
use std::path::PathBuf;
use std::sync::Arc;

/// Live snapshots at most.
pub const MAX_SNAPSHOTS: usize = 4;
/// Iterators kept open across writes at most.
pub const MAX_OPEN_ITERATORS: usize = 2;
/// How many recent operations a failure report shows.
const RECENT_OPS: usize = 24;

/// The expiry times (on the run's clock) of the model's expiring keys.
pub type Expiries = BTreeMap<Vec<u8>, u64>;

/// A snapshot with the model of its time and the expiry times of its expiring keys (a
/// snapshot hides what has expired since it was taken, as every reader does).
pub struct Snap {
    pub snap: Snapshot,
    pub model: Model,
    pub expiries: Expiries,
    pub taken_at: usize,
}

/// An iterator left open across later operations, with what it must still yield.
pub struct OpenIter {
    pub it: DbIterator,
    pub expected: VecDeque<Pair>,
    pub opened_at: usize,
}

/// Counters summed over every open of the database.
#[derive(Debug, Default)]
pub struct Totals {
    flushes: u64,
    compactions: u64,
    gc_runs: u64,
    gc_relocated: u64,
    reopens: u64,
    /// Checkpoints taken, opened and checked against the model.
    pub checkpoints: u64,
    /// Opens under `ReadMode::Direct`, and page lookups (hits and misses) of their caches.
    direct_opens: u64,
    cache_lookups: u64,
}

impl Totals {
    fn add(&mut self, s: &Stats) {
        self.flushes += s.flushes;
        self.compactions += s.compactions;
        self.gc_runs += s.gc_runs;
        self.gc_relocated += s.gc_entries_relocated;
        if let Some(c) = s.reads.cache {
            self.direct_opens += 1;
            self.cache_lookups += c.hits + c.misses;
        }
    }
}

/// One run: the database under test, its model and what the checks need.
pub struct Run {
    seed: u64,
    cfg: Config,
    opts: Options,
    path: PathBuf,
    _tmp: Option<tempfile::TempDir>,
    db: Option<Db>,
    pub model: Model,
    keys: Vec<Vec<u8>>,
    pub snaps: Vec<Snap>,
    pub iters: Vec<OpenIter>,
    pub rng: StdRng,
    pub op: usize,
    recent: VecDeque<String>,
    pub totals: Totals,
    max_value: usize,
    /// The clock the database judges expiry by, moved only by the run.
    pub clock: Arc<ManualClock>,
    /// Whether this run writes expiring values (half of the seeds).
    pub expiring: bool,
    /// The expiry times of the model's expiring keys.
    pub expiries: Expiries,
    /// Draws of the expiry operations, a stream of its own (the other draws of a seed are
    /// those of runs without expiry).
    pub expiry_rng: StdRng,
}

/// The run clock's first reading (ms since the epoch; any value well above the TTLs drawn).
const CLOCK_START: u64 = 1_700_000_000_000;

impl Run {
    pub fn new(seed: u64, cfg: Config) -> Run {
        let mut rng = StdRng::seed_from_u64(seed ^ 0xD1FF_5EED);
        let (mut opts, max_value) = draw_options(seed, cfg, &mut rng);
        let clock = Arc::new(ManualClock::new(CLOCK_START));
        opts.clock = clock.clone();
        let mut expiry_rng = StdRng::seed_from_u64(seed ^ 0xE2F1_7E5D);
        let expiring = expiry_rng.gen_bool(0.5);
        let (path, tmp) = match cfg.storage {
            Storage::Mem => {
                opts.fs = Arc::new(MemFs::new());
                (PathBuf::from("/db"), None)
            }
            Storage::Disk => {
                let tmp = tempfile::tempdir().expect("tempdir");
                (tmp.path().join("db"), Some(tmp))
            }
        };
        let n_keys = rng.gen_range(300..1500);
        let keys = make_keys(&mut rng, n_keys);
        let db = Db::open(&path, opts.clone()).expect("open");
        Run {
            seed,
            cfg,
            opts,
            path,
            _tmp: tmp,
            db: Some(db),
            model: Model::new(),
            keys,
            snaps: Vec::new(),
            iters: Vec::new(),
            rng,
            op: 0,
            recent: VecDeque::new(),
            totals: Totals::default(),
            max_value,
            clock,
            expiring,
            expiries: Expiries::new(),
            expiry_rng,
        }
    }

    /// Moves the clock forward and removes what expired from the model and the snapshots'
    /// models. Open iterators are dropped first: what they must yield was fixed when they
    /// were opened, and a key expiring under one is hidden from its next step on.
    pub fn advance_clock(&mut self) {
        let ms = self.expiry_rng.gen_range(1..1500);
        self.note(format!("advance clock {ms} ms"));
        self.iters.clear();
        self.clock.advance(ms);
        let now = self.clock.now_unix_ms();
        purge_expired(&mut self.model, &mut self.expiries, now);
        for s in &mut self.snaps {
            purge_expired(&mut s.model, &mut s.expiries, now);
        }
    }

    /// The database's directory.
    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// The options the database is open with.
    pub fn options(&self) -> &Options {
        &self.opts
    }

    pub fn db(&self) -> &Db {
        self.db.as_ref().expect("database is open")
    }

    pub fn note(&mut self, what: String) {
        if self.recent.len() == RECENT_OPS {
            self.recent.pop_front();
        }
        self.recent.push_back(what);
    }

    #[track_caller]
    pub fn fail(&self, msg: String) -> ! {
        let recent: Vec<String> = self.recent.iter().map(|s| format!("    {s}")).collect();
        panic!(
            "differential mismatch: seed {} op {} config {:?} options {:?}\n  {msg}\n  recent ops:\n{}",
            self.seed,
            self.op,
            self.cfg,
            self.opts,
            recent.join("\n")
        );
    }

    #[track_caller]
    pub fn ok<T>(&self, r: augur::Result<T>, what: &str) -> T {
        match r {
            Ok(v) => v,
            Err(e) => self.fail(format!("{what} failed: {e}")),
        }
    }

    pub fn key(&mut self) -> Vec<u8> {
        if self.rng.gen_bool(0.9) {
            self.keys[self.rng.gen_range(0..self.keys.len())].clone()
        } else {
            // Most likely absent: a fresh random key.
            let len = self.rng.gen_range(0..12);
            (0..len).map(|_| random_key_byte(&mut self.rng)).collect()
        }
    }

    pub fn value(&mut self) -> Vec<u8> {
        let len = self.rng.gen_range(0..=self.max_value);
        let tag = (self.op as u64).to_le_bytes();
        (0..len).map(|i| tag[i % 8] ^ (i as u8)).collect()
    }

    pub fn bound(&mut self) -> Bound<Vec<u8>> {
        match self.rng.gen_range(0..5) {
            0 => Bound::Unbounded,
            1 | 2 => Bound::Included(self.key()),
            _ => Bound::Excluded(self.key()),
        }
    }

    /// Steps `it` like the model deque `expected`, in the directions given by `mode` (0
    /// forward, 1 backward, 2 mixed), `limit` items at most. Returns whether the iterator
    /// was found exhausted (both ends are then checked).
    pub fn check_iter(
        &mut self,
        it: &mut DbIterator,
        expected: &mut VecDeque<Pair>,
        mode: u8,
        limit: usize,
        what: &str,
    ) -> bool {
        let mut steps = 0;
        loop {
            if steps >= limit {
                return false;
            }
            let forward = match mode {
                0 => true,
                1 => false,
                _ => self.rng.gen_bool(0.5),
            };
            let (got, want) = if forward {
                (it.next(), expected.pop_front())
            } else {
                (it.next_back(), expected.pop_back())
            };
            let got = match got {
                Some(Ok(p)) => Some(p),
                Some(Err(e)) => self.fail(format!("{what}: step {steps} error {e}")),
                None => None,
            };
            if got != want {
                self.fail(format!(
                    "{what}: step {steps} ({}) got {} want {}",
                    if forward { "next" } else { "next_back" },
                    show_pair(&got),
                    show_pair(&want)
                ));
            }
            if got.is_none() {
                // Exhausted from one end: the other end must be exhausted too.
                let other = if forward { it.next_back() } else { it.next() };
                if let Some(r) = other {
                    self.fail(format!(
                        "{what}: item after exhaustion: {:?}",
                        r.map(|p| show_pair(&Some(p)))
                    ));
                }
                return true;
            }
            steps += 1;
        }
    }

    pub fn reopen(&mut self) {
        self.note("reopen".into());
        self.snaps.clear();
        self.iters.clear();
        let db = self.db.take().expect("open");
        let stats = db.stats();
        self.check_read_stats(&stats);
        self.totals.add(&stats);
        self.totals.reopens += 1;
        drop(db);
        // The next read mode, cache budget and open-file bound (`read_setup`).
        (
            self.opts.read_mode,
            self.opts.cache_bytes,
            self.opts.max_open_files,
        ) = read_setup(self.seed, self.cfg.storage, self.totals.reopens);
        // Switching the policy at reopen mixes files with and without models, and reads
        // files that have one on the baseline path: results must not change.
        self.opts.learning = random_learning(&mut self.rng);
        // Sometimes another index type: files keep the models they were built with.
        if self.rng.gen_bool(0.3) {
            self.opts.index = IndexKind::ALL[self.rng.gen_range(0..IndexKind::ALL.len())];
        }
        let db = Db::open(&self.path, self.opts.clone());
        let db = self.ok(db, "reopen");
        if self.opts.learning == LearningPolicy::Offline {
            let learned = db.learn_all();
            self.ok(learned, "learn_all");
        }
        self.db = Some(db);
    }

    /// The page cache (under `Direct` only) and the chunk cache share `cache_bytes` and hold
    /// no more than their budgets, and the open-file bound (when set) is kept.
    fn check_read_stats(&self, s: &Stats) {
        let chunk_bytes = s.reads.chunks.map_or(0, |c| c.capacity_bytes);
        if let Some(c) = s.reads.chunks.filter(|c| c.used_bytes > c.capacity_bytes) {
            self.fail(format!("chunk cache over its budget: {c:?}"));
        }
        match (self.opts.read_mode, s.reads.cache) {
            (ReadMode::Direct, Some(c)) => {
                if c.capacity_bytes + chunk_bytes != self.opts.cache_bytes
                    || c.used_bytes > c.capacity_bytes
                {
                    self.fail(format!("page cache over its budget: {c:?}"));
                }
            }
            (ReadMode::Direct, None) => self.fail("direct reads without a page cache".into()),
            (_, Some(c)) => self.fail(format!("a page cache outside direct mode: {c:?}")),
            (_, None) => {}
        }
        match (self.opts.max_open_files, s.reads.open_files) {
            (Some(_), None) | (None, Some(_)) => self.fail(format!(
                "open-file bound {:?} but stats {:?}",
                self.opts.max_open_files, s.reads.open_files
            )),
            _ => {}
        }
    }

    fn check_all(&mut self, what: &str) {
        self.note(format!("final check: {what}"));
        let keys: Vec<Vec<u8>> = self.keys.clone();
        for k in &keys {
            let got = self.db().get(k);
            let got = self.ok(got, "get");
            if got.as_ref() != self.model.get(k) {
                self.fail(format!("{what}: get {} disagrees", show(k)));
            }
        }
        for mode in 0..3 {
            let mut expected = self.model.clone().into_iter().collect();
            let mut it = self.db().iter();
            self.check_iter(&mut it, &mut expected, mode, usize::MAX, what);
        }
    }

    pub fn finish(mut self, ops: usize) {
        self.snaps.clear();
        self.iters.clear();
        self.op = ops;
        self.check_all("before final compaction");
        let r = self.db().flush();
        self.ok(r, "flush");
        let r = self.db().compact_range(None, None);
        self.ok(r, "compact_range");
        let r = self.db().run_value_log_gc();
        self.ok(r, "run_value_log_gc");
        self.check_all("after final compaction");
        let r = self.db().verify();
        self.ok(r, "verify");
        self.reopen();
        self.check_all("after final reopen");
        let db = self.db.take().expect("open");
        let stats = db.stats();
        self.check_read_stats(&stats);
        self.totals.add(&stats);
        drop(db);
        let t = &self.totals;
        eprintln!(
            "seed {} {:?}: {ops} ops, {} keys, totals {t:?}",
            self.seed,
            self.cfg,
            self.keys.len()
        );
        // Prove the run exercised the background machinery many times.
        let scale = (ops / 1000) as u64;
        assert!(
            t.flushes >= scale,
            "seed {}: only {} flushes",
            self.seed,
            t.flushes
        );
        assert!(
            t.compactions >= scale / 4,
            "seed {}: only {} compactions",
            self.seed,
            t.compactions
        );
        assert!(
            t.reopens >= (ops / 20_000) as u64,
            "seed {}: only {} reopens",
            self.seed,
            t.reopens
        );
        assert!(
            t.checkpoints >= (ops / 20_000) as u64,
            "seed {}: only {} checkpoints",
            self.seed,
            t.checkpoints
        );
        // Every run reads through the page cache for part of its life (`read_setup` cycles
        // the modes over the opens), and those reads found pages in the cache.
        if ops >= 20_000 {
            assert!(
                t.direct_opens > 0 && t.cache_lookups > 0,
                "seed {}: never read under direct mode",
                self.seed
            );
        }
        if self.cfg.values != Values::Inline && ops >= 10_000 {
            assert!(t.gc_runs > 0, "seed {}: value-log GC never ran", self.seed);
            assert!(
                t.gc_relocated > 0,
                "seed {}: value-log GC never relocated",
                self.seed
            );
        }
    }
}

/// Removes from `model` the keys of `expiries` whose time is `<= now`.
fn purge_expired(model: &mut Model, expiries: &mut Expiries, now: u64) {
    expiries.retain(|k, at| {
        let live = *at > now;
        if !live {
            model.remove(k);
        }
        live
    });
}
