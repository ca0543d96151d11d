//! The crash suite's workload and its checks: numbered writes whose values name the write,
//! the model state after a prefix of them, the database options and opening under a
//! [`Learning`] configuration, and the checks run after every recovery (scan and gets equal
//! the model of some allowed prefix; the database keeps working).

use super::common::Learning;
use augur::fs::FaultFs;
use augur::{Db, Error, LearningPolicy, Options, WriteBatch, WriteOptions};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::sync::Arc;

pub const DIR: &str = "/db";
/// Values at least this long go to the value log.
pub const SEPARATION: usize = 48;
/// Size of the key space: small, so keys are overwritten and deleted often.
pub const KEY_SPACE: u32 = 96;

pub type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// One write of the workload.
#[derive(Debug, Clone)]
pub struct Write {
    /// Puts (`Some`) and deletes (`None`), applied atomically in order.
    pub ops: Vec<(Vec<u8>, Option<Vec<u8>>)>,
    pub sync: bool,
}

/// What a run of the workload did before it stopped.
#[derive(Debug)]
pub struct Outcome {
    /// Writes that returned `Ok`.
    pub acked: usize,
    /// Writes started (`acked` plus the failed one, if any).
    pub attempted: usize,
    /// 1 + index of the last write acknowledged with `sync = true` (0 if none).
    pub durable: usize,
    /// The error that stopped the run.
    pub error: Option<Error>,
}

pub fn key(k: u32) -> Vec<u8> {
    format!("key{k:05}").into_bytes()
}

/// A value unique to (write, op) of length `len` (at least the length of its tag).
pub fn value(write: usize, op: usize, len: usize) -> Vec<u8> {
    let mut v = format!("w{write}.{op}|").into_bytes();
    let mut x = (write as u32).wrapping_mul(2_654_435_761) ^ op as u32;
    while v.len() < len {
        x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        v.push(b'a' + (x >> 16) as u8 % 26);
    }
    v
}

pub fn value_len(rng: &mut StdRng) -> usize {
    if rng.gen_bool(0.5) {
        rng.gen_range(12..SEPARATION)
    } else {
        rng.gen_range(SEPARATION..400)
    }
}

/// A deterministic workload of `n` writes: 65% single puts, 15% single deletes, 20% batches
/// of 2–6 mixed operations; about one write in eight is synced.
pub fn workload(seed: u64, n: usize, first_index: usize) -> Vec<Write> {
    let mut rng = StdRng::seed_from_u64(seed);
    (first_index..first_index + n)
        .map(|i| {
            let roll = rng.gen_range(0..100);
            let count = if roll < 80 { 1 } else { rng.gen_range(2..=6) };
            let ops = (0..count)
                .map(|j| {
                    let k = key(rng.gen_range(0..KEY_SPACE));
                    let delete = if count == 1 {
                        roll >= 65
                    } else {
                        rng.gen_bool(0.25)
                    };
                    if delete {
                        (k, None)
                    } else {
                        (k, Some(value(i, j, value_len(&mut rng))))
                    }
                })
                .collect();
            Write {
                ops,
                sync: rng.gen_ratio(1, 8),
            }
        })
        .collect()
}

pub fn apply(model: &mut Model, w: &Write) {
    for (k, v) in &w.ops {
        match v {
            Some(v) => model.insert(k.clone(), v.clone()),
            None => model.remove(k),
        };
    }
}

pub fn model_after(writes: &[Write]) -> Model {
    let mut m = Model::new();
    writes.iter().for_each(|w| apply(&mut m, w));
    m
}

pub fn batch_of(w: &Write) -> WriteBatch {
    let mut b = WriteBatch::new();
    for (k, v) in &w.ops {
        match v {
            Some(v) => b.put(k, v),
            None => b.delete(k),
        };
    }
    b
}

thread_local! {
    /// Whether the current test runs the workloads under FLSM ([`use_flsm`]).
    static FLSM: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Makes every later [`options`] call of this test (thread) use FLSM compaction.
pub fn use_flsm() {
    FLSM.with(|f| f.set(true));
}

/// Tiny sizes so that flushes, compactions and value-log GC all run many times (under FLSM
/// after [`use_flsm`]).
pub fn options(fs: &FaultFs) -> Options {
    let base = Options {
        fs: Arc::new(fs.clone()),
        background_threads: false,
        memtable_size_bytes: 4096,
        target_file_size_bytes: 4096,
        l0_compaction_trigger: 2,
        l0_slowdown_trigger: 4,
        l0_stop_trigger: 6,
        l1_max_bytes: 8192,
        level_size_ratio: 4,
        block_records: 8,
        value_separation_threshold: SEPARATION,
        value_log_segment_bytes: 4096,
        value_log_gc_ratio: 0.3,
        ..Options::default()
    };
    if FLSM.with(std::cell::Cell::get) {
        super::common::flsm_options(base)
    } else {
        base
    }
}

/// [`options`] under the learning configuration `l`.
pub fn options_with(fs: &FaultFs, l: &Learning) -> Options {
    l.apply(options(fs))
}

pub fn open(opts: Options, ctx: &str) -> Db {
    Db::open(DIR, opts).unwrap_or_else(|e| panic!("{ctx}: reopen failed: {e}"))
}

/// Opens under `l` (and, under `offline`, learns the files found).
pub fn open_with(fs: &FaultFs, l: &Learning, ctx: &str) -> Db {
    let db = open(options_with(fs, l), ctx);
    l.after_open(&db)
        .unwrap_or_else(|e| panic!("{ctx}: learn_all after open failed: {e}"));
    db
}

/// Runs `writes` (numbered from 0) until the first error. Every 8th write is read back
/// (which also drives `lazy` learning); under `offline`, `Db::learn_all` runs every 250
/// writes. Reads and learning do no counted file-system operations, so crash points stay
/// deterministic; a failed read or `learn_all` (after a crash) ends the run like a write.
pub fn run_writes(db: &Db, writes: &[Write], l: &Learning) -> Outcome {
    let mut durable = 0;
    for (i, w) in writes.iter().enumerate() {
        let stop = |acked: usize, e: Error, durable: usize| Outcome {
            acked,
            attempted: i + 1,
            durable,
            error: Some(e),
        };
        if let Err(e) = db.write_opt(batch_of(w), WriteOptions { sync: w.sync }) {
            return stop(i, e, durable);
        }
        if w.sync {
            durable = i + 1;
        }
        if i % 8 == 0 {
            let (k, _) = &w.ops[0];
            let want = w
                .ops
                .iter()
                .rev()
                .find(|(k2, _)| k2 == k)
                .and_then(|(_, v)| v.as_ref());
            match db.get(k) {
                Ok(got) => assert_eq!(got.as_ref(), want, "{l:?}: read-back of write {i}"),
                Err(e) => return stop(i + 1, e, durable),
            }
        }
        if l.policy == LearningPolicy::Offline && i % 250 == 249 {
            if let Err(e) = db.learn_all() {
                return stop(i + 1, e, durable);
            }
        }
    }
    Outcome {
        acked: writes.len(),
        attempted: writes.len(),
        durable,
        error: None,
    }
}

/// The whole database as seen by a forward scan; also checks the reverse scan agrees.
pub fn scan(db: &Db, ctx: &str) -> Model {
    let forward: Vec<(Vec<u8>, Vec<u8>)> = db
        .iter()
        .collect::<Result<_, _>>()
        .unwrap_or_else(|e| panic!("{ctx}: scan failed: {e}"));
    let mut backward: Vec<(Vec<u8>, Vec<u8>)> = db
        .iter()
        .rev()
        .collect::<Result<_, _>>()
        .unwrap_or_else(|e| panic!("{ctx}: reverse scan failed: {e}"));
    backward.reverse();
    assert_eq!(forward, backward, "{ctx}: forward and reverse scans differ");
    forward.into_iter().collect()
}

/// Point reads of every key of the key space agree with `model`.
pub fn check_gets(db: &Db, model: &Model, ctx: &str) {
    for k in 0..KEY_SPACE {
        let k = key(k);
        let got = db
            .get(&k)
            .unwrap_or_else(|e| panic!("{ctx}: get failed: {e}"));
        assert_eq!(
            got.as_ref(),
            model.get(&k),
            "{ctx}: get({}) disagrees with the model",
            String::from_utf8_lossy(&k)
        );
    }
}

/// Finds `P` in `lo..=hi` such that the database equals the model after `writes[..P]`;
/// panics with a diagnosis if there is none. Returns `P`.
pub fn matching_prefix(db: &Db, writes: &[Write], lo: usize, hi: usize, ctx: &str) -> usize {
    let state = scan(db, ctx);
    let mut model = model_after(&writes[..lo]);
    for p in lo..=hi {
        if p > lo {
            apply(&mut model, &writes[p - 1]);
        }
        if model == state {
            check_gets(db, &model, ctx);
            return p;
        }
    }
    let lo_model = model_after(&writes[..lo]);
    let missing: Vec<_> = lo_model
        .iter()
        .filter(|(k, v)| state.get(*k) != Some(*v))
        .map(|(k, v)| {
            format!(
                "{} = {:?} (have {:?})",
                String::from_utf8_lossy(k),
                String::from_utf8_lossy(&v[..v.len().min(12)]),
                state
                    .get(k)
                    .map(|v| String::from_utf8_lossy(&v[..v.len().min(12)]).into_owned())
            )
        })
        .take(5)
        .collect();
    panic!(
        "{ctx}: the recovered state ({} keys) is not the state after any prefix of \
         {lo}..={hi} writes; e.g. differences from prefix {lo}: {missing:?}",
        state.len()
    );
}

/// Under `never`, no file serves lookups through a model, even one persisted at build time;
/// and the database reads through a page cache exactly under `direct`, within its budget
/// ([`super::common::check_reads`]).
pub fn check_model_use(db: &Db, l: &Learning, ctx: &str) {
    super::common::check_reads(db, l, ctx);
    if l.policy == LearningPolicy::Never {
        let s = db.stats();
        let with_model: usize = s.levels.iter().map(|l| l.files_with_model).sum();
        assert_eq!(with_model, 0, "{ctx}: `never` loaded models: {s:?}");
        assert_eq!(s.model_path_lookups, 0, "{ctx}: `never` used models: {s:?}");
    }
}

/// After recovery the database must accept writes and keep them over a clean reopen under
/// the learning configuration `l`.
pub fn check_still_works(
    db: Db,
    fs: &FaultFs,
    mut model: Model,
    seed: u64,
    l: &Learning,
    ctx: &str,
) {
    let extra = workload(seed, 40, 1_000_000);
    for w in &extra {
        db.write_opt(batch_of(w), WriteOptions { sync: w.sync })
            .unwrap_or_else(|e| panic!("{ctx}: write after recovery failed: {e}"));
        apply(&mut model, w);
    }
    db.flush()
        .unwrap_or_else(|e| panic!("{ctx}: flush after recovery failed: {e}"));
    drop(db);
    let db = open_with(fs, l, ctx);
    assert_eq!(scan(&db, ctx), model, "{ctx}: state after a clean reopen");
    check_gets(&db, &model, ctx);
    check_model_use(&db, l, ctx);
    db.verify()
        .unwrap_or_else(|e| panic!("{ctx}: verify failed: {e}"));
}
