//! Randomized differential test (issue 2): the engine against a `BTreeMap` model.
//!
//! Each run drives one database with a seeded random mix of puts, deletes, write batches
//! (with repeated keys), point reads of present and absent keys, range scans with random
//! bounds stepped forward, backward or both ways, zero-copy scans (`Db::scan_with`: both
//! directions, any readahead, seeks inside the range), parallel scans (`Db::scan_parallel`:
//! both splitters, 1–8 threads, more partitions than threads, both directions, snapshots),
//! full iterations, snapshots (kept alive
//! with a copy of the model of their time and read with `get_at` / `range_at`), iterators
//! kept open across later writes, flushes, `compact_range`, value-log GC and reopens. Sizes
//! are tiny so that flushes, compactions and GC run many times; the end of a run asserts
//! through `Db::stats()` that they did.
//!
//! A mismatch panics with the seed, the op index and the last operations. Longer local runs:
//! `AUGUR_DIFF_SEEDS=1..200` (or `1,5,9`) and `AUGUR_DIFF_OPS=1000000` override the seeds
//! and the operation count of every configuration.

use augur::fs::MemFs;
use augur::index::chooser::ModelBudget;
use augur::{
    CompactionStyle, Db, DbIterator, FlsmOptions, IndexKind, LearningPolicy, Options,
    ParallelScanOptions, ReadMode, ScanOptions, Snapshot, Split, Stats, WriteBatch,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::ops::Bound;
use std::path::PathBuf;
use std::sync::Arc;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;
type Pair = (Vec<u8>, Vec<u8>);

/// Default operations per run.
const DEFAULT_OPS: usize = 100_000;
/// Live snapshots at most.
const MAX_SNAPSHOTS: usize = 4;
/// Iterators kept open across writes at most.
const MAX_OPEN_ITERATORS: usize = 2;
/// How many recent operations a failure report shows.
const RECENT_OPS: usize = 24;

/// Where values live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Values {
    /// Every value inline in the SSTables.
    Inline,
    /// Every value in the value log.
    Separated,
    /// Threshold 32 with values of 0..100 bytes.
    Mixed,
}

/// Which file system.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Storage {
    Mem,
    Disk,
}

#[derive(Debug, Clone, Copy)]
struct Config {
    values: Values,
    storage: Storage,
    background: bool,
    style: CompactionStyle,
}

/// Seeds from `AUGUR_DIFF_SEEDS` (`a..b` or `a,b,c`), else `defaults`.
/// A learning policy, any of them: background learners (with a tiny `T_wait`, set by the
/// caller) install models while operations run; results must not change.
fn random_learning(rng: &mut StdRng) -> LearningPolicy {
    augur::learning::ALL_POLICIES[rng.gen_range(0..augur::learning::ALL_POLICIES.len())]
}

fn seeds(defaults: &[u64]) -> Vec<u64> {
    let Ok(s) = std::env::var("AUGUR_DIFF_SEEDS") else {
        return defaults.to_vec();
    };
    let s = s.trim();
    if let Some((a, b)) = s.split_once("..") {
        let a: u64 = a.trim().parse().expect("AUGUR_DIFF_SEEDS: bad range start");
        let b: u64 = b.trim().parse().expect("AUGUR_DIFF_SEEDS: bad range end");
        return (a..b).collect();
    }
    s.split(',')
        .map(|x| x.trim().parse().expect("AUGUR_DIFF_SEEDS: bad seed"))
        .collect()
}

/// Operation count from `AUGUR_DIFF_OPS`, else [`DEFAULT_OPS`].
fn op_count() -> usize {
    std::env::var("AUGUR_DIFF_OPS")
        .map(|s| s.trim().parse().expect("AUGUR_DIFF_OPS: bad number"))
        .unwrap_or(DEFAULT_OPS)
}

fn show(k: &[u8]) -> String {
    format!("\"{}\"", k.escape_ascii())
}

fn show_bound(b: &Bound<Vec<u8>>) -> String {
    match b {
        Bound::Included(k) => format!("Included({})", show(k)),
        Bound::Excluded(k) => format!("Excluded({})", show(k)),
        Bound::Unbounded => "Unbounded".into(),
    }
}

fn show_pair(p: &Option<Pair>) -> String {
    match p {
        Some((k, v)) => format!("Some({} => {} bytes {})", show(k), v.len(), show(v)),
        None => "None".into(),
    }
}

/// A key set with variable lengths (including the empty key), a small alphabet and many
/// keys that are prefixes of others, so ordering corner cases come up often.
fn make_keys(rng: &mut StdRng, n: usize) -> Vec<Vec<u8>> {
    let mut set = BTreeSet::new();
    set.insert(Vec::new());
    while set.len() < n {
        let mut k = if rng.gen_bool(0.3) && !set.is_empty() {
            // Extend an existing key: prefix relations.
            let i = rng.gen_range(0..set.len());
            set.iter().nth(i).cloned().unwrap_or_default()
        } else {
            Vec::new()
        };
        let extra = match rng.gen_range(0..10) {
            0..=5 => rng.gen_range(1..6),
            6..=8 => rng.gen_range(6..20),
            _ => rng.gen_range(20..80),
        };
        k.extend((0..extra).map(|_| random_key_byte(rng)));
        set.insert(k);
    }
    set.into_iter().collect()
}

fn random_key_byte(rng: &mut StdRng) -> u8 {
    const ALPHABET: [u8; 8] = [0x00, 0x01, b'a', b'b', b'c', 0x7f, 0x80, 0xff];
    if rng.gen_bool(0.9) {
        ALPHABET[rng.gen_range(0..ALPHABET.len())]
    } else {
        rng.gen()
    }
}

/// The expected pairs of `model` within the bounds; empty for inverted bounds.
fn model_range(model: &Model, lo: &Bound<Vec<u8>>, hi: &Bound<Vec<u8>>) -> VecDeque<Pair> {
    let valid = match (lo, hi) {
        (Bound::Included(a), Bound::Included(b)) => a <= b,
        (Bound::Included(a) | Bound::Excluded(a), Bound::Excluded(b))
        | (Bound::Excluded(a), Bound::Included(b)) => a < b,
        _ => true,
    };
    if !valid {
        return VecDeque::new();
    }
    model
        .range((lo.clone(), hi.clone()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// The near bound of a range after `Scan::seek(key)`: `Included(key)` when `key` lies inside
/// it (past it in the scan direction: `forward` for a start bound), else the bound itself.
fn clamp_bound(bound: &Bound<Vec<u8>>, key: &[u8], forward: bool) -> Bound<Vec<u8>> {
    let inside = match bound {
        Bound::Unbounded => true,
        Bound::Included(b) => {
            if forward {
                key >= &b[..]
            } else {
                key <= &b[..]
            }
        }
        Bound::Excluded(b) => {
            if forward {
                key > &b[..]
            } else {
                key < &b[..]
            }
        }
    };
    if inside {
        Bound::Included(key.to_vec())
    } else {
        bound.clone()
    }
}

/// A snapshot with the model of its time.
struct Snap {
    snap: Snapshot,
    model: Model,
    taken_at: usize,
}

/// An iterator left open across later operations, with what it must still yield.
struct OpenIter {
    it: DbIterator,
    expected: VecDeque<Pair>,
    opened_at: usize,
}

/// Counters summed over every open of the database.
#[derive(Debug, Default)]
struct Totals {
    flushes: u64,
    compactions: u64,
    gc_runs: u64,
    gc_relocated: u64,
    reopens: u64,
}

impl Totals {
    fn add(&mut self, s: &Stats) {
        self.flushes += s.flushes;
        self.compactions += s.compactions;
        self.gc_runs += s.gc_runs;
        self.gc_relocated += s.gc_entries_relocated;
    }
}

struct Run {
    seed: u64,
    cfg: Config,
    opts: Options,
    path: PathBuf,
    _tmp: Option<tempfile::TempDir>,
    db: Option<Db>,
    model: Model,
    keys: Vec<Vec<u8>>,
    snaps: Vec<Snap>,
    iters: Vec<OpenIter>,
    rng: StdRng,
    op: usize,
    recent: VecDeque<String>,
    totals: Totals,
    max_value: usize,
}

impl Run {
    fn new(seed: u64, cfg: Config) -> Run {
        let mut rng = StdRng::seed_from_u64(seed ^ 0xD1FF_5EED);
        // The model chooser's settings come from a stream of their own, so adding them left
        // every other drawn setting (and the seeds' coverage) as it was.
        let mut auto_rng = StdRng::seed_from_u64(seed ^ 0xA070_1DE5);
        let (threshold, max_value) = match cfg.values {
            Values::Inline => (usize::MAX, rng.gen_range(40..120)),
            Values::Separated => (0, rng.gen_range(40..120)),
            Values::Mixed => (32, 100),
        };
        let mut opts = Options {
            memtable_size_bytes: rng.gen_range(4..=16) << 10,
            target_file_size_bytes: rng.gen_range(8..=32) << 10,
            l1_max_bytes: rng.gen_range(16..=64) << 10,
            value_log_segment_bytes: rng.gen_range(8..=32) << 10,
            value_separation_threshold: threshold,
            block_records: [4, 16, 64][rng.gen_range(0..3)],
            bloom_bits_per_key: [0, 10][rng.gen_range(0..2)],
            level_size_ratio: rng.gen_range(2..=10),
            background_threads: cfg.background,
            // Seed s uses index type s mod 7: the default seeds cover every type.
            index: IndexKind::ALL[(seed % IndexKind::ALL.len() as u64) as usize],
            // Some runs let the model chooser pick every model (`--index=auto`).
            auto_index: auto_rng.gen_bool(0.25),
            model_memory_budget: [
                ModelBudget::FencePointers,
                ModelBudget::Unlimited,
                ModelBudget::BytesPerKey(0.05),
            ][auto_rng.gen_range(0..3)],
            error_bound: [0, 1, 4, 8, 64][rng.gen_range(0..5)],
            learning: random_learning(&mut rng),
            level_models: rng.gen_bool(0.5),
            learning_wait_ms: rng.gen_range(0..3),
            lazy_learning_reads: rng.gen_range(1..4),
            scan_fetch_threads: rng.gen_range(0..3),
            compaction: Some(cfg.style),
            ..Options::default()
        };
        if cfg.style == CompactionStyle::Flsm {
            // Guards every few dozen keys, few levels (so the last level's rewrites and the
            // in-place rule run), crowded guards and seek-triggered compactions.
            opts.num_levels = rng.gen_range(3..=5);
            opts.flsm = FlsmOptions {
                top_level_bits: rng.gen_range(4..=9),
                bit_decrement: rng.gen_range(0..=2),
                max_sstables_per_guard: rng.gen_range(2..=4),
                seek_compaction_threshold: [0, 2, 10][rng.gen_range(0..3)],
                rewrite_in_place_factor: [1, 25][rng.gen_range(0..2)],
                parallel_seek_threads: rng.gen_range(0..3),
                ..FlsmOptions::default()
            };
        }
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
        }
    }

    fn db(&self) -> &Db {
        self.db.as_ref().expect("database is open")
    }

    fn note(&mut self, what: String) {
        if self.recent.len() == RECENT_OPS {
            self.recent.pop_front();
        }
        self.recent.push_back(what);
    }

    #[track_caller]
    fn fail(&self, msg: String) -> ! {
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
    fn ok<T>(&self, r: augur::Result<T>, what: &str) -> T {
        match r {
            Ok(v) => v,
            Err(e) => self.fail(format!("{what} failed: {e}")),
        }
    }

    fn key(&mut self) -> Vec<u8> {
        if self.rng.gen_bool(0.9) {
            self.keys[self.rng.gen_range(0..self.keys.len())].clone()
        } else {
            // Most likely absent: a fresh random key.
            let len = self.rng.gen_range(0..12);
            (0..len).map(|_| random_key_byte(&mut self.rng)).collect()
        }
    }

    fn value(&mut self) -> Vec<u8> {
        let len = self.rng.gen_range(0..=self.max_value);
        let tag = (self.op as u64).to_le_bytes();
        (0..len).map(|i| tag[i % 8] ^ (i as u8)).collect()
    }

    fn bound(&mut self) -> Bound<Vec<u8>> {
        match self.rng.gen_range(0..5) {
            0 => Bound::Unbounded,
            1 | 2 => Bound::Included(self.key()),
            _ => Bound::Excluded(self.key()),
        }
    }

    /// Steps `it` like the model deque `expected`, in the directions given by `mode` (0
    /// forward, 1 backward, 2 mixed), `limit` items at most. Returns whether the iterator
    /// was found exhausted (both ends are then checked).
    fn check_iter(
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

    fn scan_shape(&mut self) -> (u8, usize) {
        let mode = self.rng.gen_range(0..3);
        let limit = if self.rng.gen_bool(0.25) {
            usize::MAX
        } else {
            self.rng.gen_range(1..40)
        };
        (mode, limit)
    }

    fn step(&mut self) {
        let roll = self.rng.gen_range(0..100_000u32);
        match roll {
            0..=34_999 => {
                let (k, v) = (self.key(), self.value());
                self.note(format!("put {} ({} bytes)", show(&k), v.len()));
                let r = self.db().put(&k, &v);
                self.ok(r, "put");
                self.model.insert(k, v);
            }
            35_000..=44_999 => {
                let k = self.key();
                self.note(format!("delete {}", show(&k)));
                let r = self.db().delete(&k);
                self.ok(r, "delete");
                self.model.remove(&k);
            }
            45_000..=52_999 => self.batch(),
            53_000..=82_999 => {
                let k = self.key();
                self.note(format!("get {}", show(&k)));
                let got = self.db().get(&k);
                let got = self.ok(got, "get");
                if got.as_ref() != self.model.get(&k) {
                    self.fail(format!(
                        "get {}: got {:?} want {:?}",
                        show(&k),
                        got.map(|v| show(&v)),
                        self.model.get(&k).map(|v| show(v))
                    ));
                }
            }
            83_000..=87_999 => {
                let (lo, hi) = (self.bound(), self.bound());
                let (mode, limit) = self.scan_shape();
                let what = format!(
                    "range {}..{} mode {mode} limit {limit}",
                    show_bound(&lo),
                    show_bound(&hi)
                );
                self.note(what.clone());
                let mut expected = model_range(&self.model, &lo, &hi);
                let mut it = self.db().range((lo, hi));
                self.check_iter(&mut it, &mut expected, mode, limit, &what);
            }
            88_000..=88_599 => self.scan_op(),
            88_600..=88_999 => self.parallel_scan_op(),
            89_000..=89_049 => {
                let mode = self.rng.gen_range(0..3);
                let what = format!("full iteration mode {mode}");
                self.note(what.clone());
                let mut expected = self.model.clone().into_iter().collect();
                let mut it = self.db().iter();
                self.check_iter(&mut it, &mut expected, mode, usize::MAX, &what);
            }
            89_050..=91_999 => self.snapshot_op(),
            92_000..=93_999 => self.open_iter_op(),
            94_000..=94_099 => {
                self.note("flush".into());
                let r = self.db().flush();
                self.ok(r, "flush");
            }
            94_100..=94_149 => {
                let a = self.rng.gen_bool(0.7).then(|| self.key());
                let b = self.rng.gen_bool(0.7).then(|| self.key());
                self.note(format!(
                    "compact_range {:?} {:?}",
                    a.as_deref().map(show),
                    b.as_deref().map(show)
                ));
                let r = self.db().compact_range(a.as_deref(), b.as_deref());
                self.ok(r, "compact_range");
            }
            94_150..=94_299 => {
                self.note("run_value_log_gc".into());
                let r = self.db().run_value_log_gc();
                self.ok(r, "run_value_log_gc");
            }
            94_300..=94_319 => self.reopen(),
            94_320..=94_999 => {
                self.note("check_structure".into());
                let r = self.db().check_structure();
                self.ok(r, "check_structure");
            }
            _ => {
                // The rest: more puts, to keep the key space full.
                let (k, v) = (self.key(), self.value());
                self.note(format!("put {} ({} bytes)", show(&k), v.len()));
                let r = self.db().put(&k, &v);
                self.ok(r, "put");
                self.model.insert(k, v);
            }
        }
    }

    fn batch(&mut self) {
        let n = self.rng.gen_range(1..10);
        let mut batch = WriteBatch::new();
        let mut ops = Vec::new();
        let mut last: Option<Vec<u8>> = None;
        for _ in 0..n {
            // Often reuse the previous key: the later operation must win.
            let k = match &last {
                Some(l) if self.rng.gen_bool(0.3) => l.clone(),
                _ => self.key(),
            };
            let v = self.rng.gen_bool(0.75).then(|| self.value());
            match &v {
                Some(v) => batch.put(&k, v),
                None => batch.delete(&k),
            };
            ops.push((k.clone(), v));
            last = Some(k);
        }
        let desc: Vec<String> = ops
            .iter()
            .map(|(k, v)| match v {
                Some(v) => format!("put {} ({} bytes)", show(k), v.len()),
                None => format!("delete {}", show(k)),
            })
            .collect();
        self.note(format!("batch [{}]", desc.join(", ")));
        let r = self.db().write(batch);
        self.ok(r, "batch write");
        for (k, v) in ops {
            match v {
                Some(v) => self.model.insert(k, v),
                None => self.model.remove(&k),
            };
        }
    }

    fn snapshot_op(&mut self) {
        let roll = self.rng.gen_range(0..100);
        if self.snaps.is_empty() || (roll < 8 && self.snaps.len() < MAX_SNAPSHOTS) {
            self.note("take snapshot".into());
            let snap = self.db().snapshot();
            self.snaps.push(Snap {
                snap,
                model: self.model.clone(),
                taken_at: self.op,
            });
            return;
        }
        let i = self.rng.gen_range(0..self.snaps.len());
        if roll < 14 {
            self.note(format!("drop snapshot {i}"));
            self.snaps.swap_remove(i);
            return;
        }
        let taken_at = self.snaps[i].taken_at;
        if roll < 80 {
            let k = self.key();
            self.note(format!("get_at snapshot {i} (op {taken_at}) {}", show(&k)));
            let got = self.db().get_at(&k, &self.snaps[i].snap);
            let got = self.ok(got, "get_at");
            let want = self.snaps[i].model.get(&k);
            if got.as_ref() != want {
                self.fail(format!(
                    "get_at snapshot taken at op {taken_at} {}: got {:?} want {:?}",
                    show(&k),
                    got.map(|v| show(&v)),
                    want.map(|v| show(v))
                ));
            }
        } else {
            let (lo, hi) = (self.bound(), self.bound());
            let (mode, limit) = self.scan_shape();
            let what = format!(
                "range_at snapshot {i} (op {taken_at}) {}..{} mode {mode} limit {limit}",
                show_bound(&lo),
                show_bound(&hi)
            );
            self.note(what.clone());
            let mut expected = model_range(&self.snaps[i].model, &lo, &hi);
            let mut it = self.db().range_at((lo, hi), &self.snaps[i].snap);
            self.check_iter(&mut it, &mut expected, mode, limit, &what);
        }
    }

    /// Opens an iterator to consume later, steps an open one once, or drops one.
    /// A zero-copy scan (`Db::scan_with`) in a random direction, with a random readahead,
    /// now or at a live snapshot, stepped a few times with an occasional seek inside it.
    fn scan_op(&mut self) {
        let (lo, hi) = (self.bound(), self.bound());
        let reverse = self.rng.gen_bool(0.4);
        let readahead = [1, 2, 5, 64][self.rng.gen_range(0..4)];
        let snap = (!self.snaps.is_empty() && self.rng.gen_bool(0.3))
            .then(|| self.rng.gen_range(0..self.snaps.len()));
        let what = format!(
            "scan {}..{} reverse {reverse} readahead {readahead} snapshot {snap:?}",
            show_bound(&lo),
            show_bound(&hi)
        );
        self.note(what.clone());
        let options = ScanOptions {
            reverse,
            snapshot: snap.map(|i| self.snaps[i].snap.clone()),
            value_readahead: Some(readahead),
        };
        let model = match snap {
            Some(i) => self.snaps[i].model.clone(),
            None => self.model.clone(),
        };
        let mut scan = self.db().scan_with((lo.clone(), hi.clone()), &options);
        let mut expected = model_range(&model, &lo, &hi);
        let limit = if self.rng.gen_bool(0.3) {
            usize::MAX
        } else {
            self.rng.gen_range(1..60)
        };
        let mut steps = 0;
        while steps < limit {
            if self.rng.gen_bool(0.05) {
                // Seek inside the range: the scan continues from max(start, key) forward
                // (min(end, key) backward).
                let k = self.key();
                self.note(format!("{what}: seek {}", show(&k)));
                scan.seek(&k);
                let (nlo, nhi) = if reverse {
                    (lo.clone(), clamp_bound(&hi, &k, false))
                } else {
                    (clamp_bound(&lo, &k, true), hi.clone())
                };
                expected = model_range(&model, &nlo, &nhi);
            }
            let got = match scan.next() {
                Ok(p) => p.map(|(k, v)| (k.to_vec(), v.to_vec())),
                Err(e) => self.fail(format!("{what}: step {steps} error {e}")),
            };
            let want = if reverse {
                expected.pop_back()
            } else {
                expected.pop_front()
            };
            if got != want {
                self.fail(format!(
                    "{what}: step {steps} got {} want {}",
                    show_pair(&got),
                    show_pair(&want)
                ));
            }
            if got.is_none() {
                match scan.next() {
                    Ok(None) => {}
                    other => self.fail(format!("{what}: item after the end: {other:?}")),
                }
                break;
            }
            steps += 1;
        }
    }

    /// A parallel scan of a random range: random splitter, 1–8 threads, up to three times as
    /// many partitions, either direction, now or at a live snapshot. The partitions'
    /// concatenated output must be the model's range.
    fn parallel_scan_op(&mut self) {
        let (lo, hi) = (self.bound(), self.bound());
        let threads = self.rng.gen_range(1..=8);
        let options = ParallelScanOptions {
            threads,
            partitions: self.rng.gen_range(0..=3 * threads),
            split: if self.rng.gen_bool(0.5) {
                Split::Balanced
            } else {
                Split::KeySpace
            },
            reverse: self.rng.gen_bool(0.3),
            snapshot: None,
            value_readahead: Some([1, 3, 64][self.rng.gen_range(0..3)]),
        };
        let snap = (!self.snaps.is_empty() && self.rng.gen_bool(0.3))
            .then(|| self.rng.gen_range(0..self.snaps.len()));
        let options = ParallelScanOptions {
            snapshot: snap.map(|i| self.snaps[i].snap.clone()),
            ..options
        };
        let what = format!(
            "parallel scan {}..{} {:?} snapshot {snap:?}",
            show_bound(&lo),
            show_bound(&hi),
            ParallelScanOptions {
                snapshot: None,
                ..options.clone()
            }
        );
        self.note(what.clone());
        let model = match snap {
            Some(i) => &self.snaps[i].model,
            None => &self.model,
        };
        let mut want: Vec<Pair> = model_range(model, &lo, &hi).into_iter().collect();
        if options.reverse {
            want.reverse();
        }
        let got = self
            .db()
            .scan_parallel((lo, hi), &options, |_, scan| {
                let mut pairs = Vec::new();
                while let Some((k, v)) = scan.next()? {
                    pairs.push((k.to_vec(), v.to_vec()));
                }
                Ok(pairs)
            })
            .map(|parts| parts.concat());
        let got = match got {
            Ok(g) => g,
            Err(e) => self.fail(format!("{what}: error {e}")),
        };
        if got != want {
            let first = got.iter().zip(&want).position(|(a, b)| a != b);
            self.fail(format!(
                "{what}: {} pairs, want {}; first difference at {first:?}",
                got.len(),
                want.len()
            ));
        }
    }

    fn open_iter_op(&mut self) {
        let roll = self.rng.gen_range(0..100);
        if roll < 3 && self.iters.len() < MAX_OPEN_ITERATORS {
            let (lo, hi) = (self.bound(), self.bound());
            self.note(format!(
                "open iterator {}..{}",
                show_bound(&lo),
                show_bound(&hi)
            ));
            let expected = model_range(&self.model, &lo, &hi);
            let it = self.db().range((lo, hi));
            self.iters.push(OpenIter {
                it,
                expected,
                opened_at: self.op,
            });
            return;
        }
        if self.iters.is_empty() {
            return;
        }
        let i = self.rng.gen_range(0..self.iters.len());
        if roll < 5 {
            self.note(format!("drop open iterator {i}"));
            self.iters.swap_remove(i);
            return;
        }
        let mode = self.rng.gen_range(0..3);
        let steps = self.rng.gen_range(1..4);
        let opened_at = self.iters[i].opened_at;
        let what = format!("open iterator {i} (opened at op {opened_at}) mode {mode}");
        self.note(what.clone());
        let mut open = self.iters.swap_remove(i);
        let exhausted = self.check_iter(&mut open.it, &mut open.expected, mode, steps, &what);
        if !exhausted {
            self.iters.push(open);
        }
    }

    fn reopen(&mut self) {
        self.note("reopen".into());
        self.snaps.clear();
        self.iters.clear();
        let db = self.db.take().expect("open");
        self.totals.add(&db.stats());
        self.totals.reopens += 1;
        drop(db);
        if self.cfg.storage == Storage::Disk {
            self.opts.read_mode = if self.rng.gen_bool(0.5) {
                ReadMode::Mmap
            } else {
                ReadMode::Pread
            };
        }
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

    fn finish(mut self, ops: usize) {
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
        self.totals.add(&db.stats());
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

fn run(cfg: Config, default_seeds: &[u64]) {
    let ops = op_count();
    for seed in seeds(default_seeds) {
        let mut r = Run::new(seed, cfg);
        while r.op < ops {
            r.step();
            r.op += 1;
        }
        r.finish(ops);
    }
}

const fn cfg(values: Values, storage: Storage, background: bool) -> Config {
    Config {
        values,
        storage,
        background,
        style: CompactionStyle::Leveled,
    }
}

const fn flsm(c: Config) -> Config {
    Config {
        style: CompactionStyle::Flsm,
        ..c
    }
}

#[test]
fn inline_values_inline_work() {
    run(cfg(Values::Inline, Storage::Mem, false), &[1, 2]);
}

#[test]
fn inline_values_background_work() {
    run(cfg(Values::Inline, Storage::Mem, true), &[3]);
}

#[test]
fn inline_values_on_disk() {
    run(cfg(Values::Inline, Storage::Disk, true), &[4]);
}

#[test]
fn separated_values_inline_work() {
    run(cfg(Values::Separated, Storage::Mem, false), &[11, 12]);
}

#[test]
fn separated_values_background_work() {
    run(cfg(Values::Separated, Storage::Mem, true), &[13]);
}

#[test]
fn separated_values_on_disk() {
    run(cfg(Values::Separated, Storage::Disk, true), &[14]);
}

#[test]
fn mixed_values_inline_work() {
    run(cfg(Values::Mixed, Storage::Mem, false), &[21]);
}

#[test]
fn mixed_values_background_work() {
    run(cfg(Values::Mixed, Storage::Disk, true), &[22]);
}

// The same suite on PebblesDB's fragmented LSM; seeds 31..=37 cover every index type.

#[test]
fn flsm_inline_values_inline_work() {
    run(
        flsm(cfg(Values::Inline, Storage::Mem, false)),
        &[31, 32, 33, 34, 35, 36, 37],
    );
}

#[test]
fn flsm_inline_values_background_work() {
    run(flsm(cfg(Values::Inline, Storage::Mem, true)), &[38]);
}

#[test]
fn flsm_separated_values_inline_work() {
    run(flsm(cfg(Values::Separated, Storage::Mem, false)), &[41, 42]);
}

#[test]
fn flsm_mixed_values_on_disk() {
    run(flsm(cfg(Values::Mixed, Storage::Disk, true)), &[51]);
}
