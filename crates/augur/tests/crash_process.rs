//! Real-process crash test: a child process writes to a database on the real file system
//! (`StdFs`, a temporary directory) and is killed with SIGKILL at random moments; after each
//! kill the parent reopens the database and checks the durability contract.
//!
//! Technique: the test re-executes its own binary (`std::env::current_exe()`) filtered to
//! itself, with `AUGUR_CRASH_CHILD` naming the database directory. In that mode the test
//! body is the child: it opens the database and writes forever, appending the index of each
//! write to a side file right after the write is acknowledged (a plain `write` syscall: the
//! kernel keeps it when the process dies, which is the failure simulated here).
//!
//! Contract after a kill: every acknowledged write is present — synced ones by the
//! durability promise, unsynced ones because the WAL and value log are handed to the OS
//! before a write returns — and the state is the state after a prefix of the round's writes
//! (the acknowledged ones, plus possibly the one in flight when the kill came).
//!
//! Learning (issue 3): the child of round `r` writes under [`Learning::nth`]`(r)` (so the
//! rounds walk through every learning policy × index type, with a `T_wait` of 0–2 ms: the
//! kill often lands while a background learner trains), reads every 4th write back (lazy
//! learning) and, under `offline`, calls `Db::learn_all` now and then. The parent checks the
//! state under a different policy, [`Learning::reopen_of`]`(r)`.
//!
//! Read modes (issue 27): the child of round `r` and the parent's reopen read under the
//! modes of those cases ([`common::Reads::nth`]): `mmap`, `pread` or `direct` (`O_DIRECT`,
//! through the page cache, with budgets from 0 to 64 MiB), so a database written under one
//! mode is recovered under another.

mod common;

use augur::{Db, LearningPolicy, Options, WriteBatch, WriteOptions};
use common::Learning;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::io::{Read, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Held while a parent spawns a child and while it closes its database. The two tests of
/// this binary run in parallel threads of one process; the directory lock is an `flock` on
/// an open file, and a child forked by one test holds a copy of every descriptor of the
/// process until its `exec` (where close-on-exec drops them). If the other test closed its
/// database inside that window, its lock would live on in the copy and its next child's
/// open would fail with `Busy`. `spawn` returns after the `exec`, so serializing the two
/// closes the window.
static FORK_GUARD: Mutex<()> = Mutex::new(());

/// Set in the child: the database directory.
const CHILD_ENV: &str = "AUGUR_CRASH_CHILD";
/// Set in the child: the round number (values embed it, so rounds never repeat a value).
const ROUND_ENV: &str = "AUGUR_CRASH_ROUND";
/// The name of the test, used as the child's filter.
const TEST_NAME: &str = "sigkill_at_random_moments_keeps_every_acknowledged_write";
/// Its FLSM twin.
const FLSM_TEST_NAME: &str = "flsm_sigkill_at_random_moments_keeps_every_acknowledged_write";
/// Kills per run; `AUGUR_CRASH_KILLS` raises it.
const DEFAULT_KILLS: u32 = 24;
/// Values at least this long go to the value log.
const SEPARATION: usize = 64;
const KEY_SPACE: u64 = 400;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;
/// Puts (`Some`) and deletes (`None`) of one write, applied atomically.
type Ops = Vec<(Vec<u8>, Option<Vec<u8>>)>;

/// Write `i` of `round`: a put (inline or separated value), a delete, or a batch; synced
/// three times out of four. Deterministic, so the parent can rebuild it.
fn write_of(round: u32, i: u64) -> (Ops, bool) {
    let mut rng = StdRng::seed_from_u64((u64::from(round) << 40) ^ i);
    let count = if rng.gen_ratio(1, 6) {
        rng.gen_range(2..=5)
    } else {
        1
    };
    let ops = (0..count)
        .map(|j| {
            let key = format!("key{:06}", rng.gen_range(0..KEY_SPACE)).into_bytes();
            if rng.gen_ratio(1, 8) {
                return (key, None);
            }
            let len = if rng.gen_bool(0.5) {
                rng.gen_range(16..SEPARATION)
            } else {
                rng.gen_range(SEPARATION..600)
            };
            let mut v = format!("r{round}.w{i}.{j}|").into_bytes();
            while v.len() < len {
                v.push(b'a' + rng.gen_range(0..26u8));
            }
            (key, Some(v))
        })
        .collect();
    (ops, !rng.gen_ratio(1, 4))
}

fn apply(model: &mut Model, ops: &Ops) {
    for (k, v) in ops {
        match v {
            Some(v) => model.insert(k.clone(), v.clone()),
            None => model.remove(k),
        };
    }
}

/// Small sizes so flushes, compactions and GC run (in background threads) while killed;
/// learning options `l`.
fn options(l: &Learning, flsm: bool) -> Options {
    let o = l.apply(Options {
        memtable_size_bytes: 16 << 10,
        target_file_size_bytes: 16 << 10,
        l1_max_bytes: 64 << 10,
        value_separation_threshold: SEPARATION,
        value_log_segment_bytes: 32 << 10,
        value_log_gc_ratio: 0.3,
        ..Options::default()
    });
    if flsm {
        common::flsm_options(o)
    } else {
        o
    }
}

fn ack_path(dir: &Path, round: u32) -> PathBuf {
    dir.with_extension(format!("acks{round}"))
}

/// The child: write forever (bounded, in case the parent died), recording acknowledgments.
fn child(dir: &Path, round: u32, flsm: bool) {
    let l = Learning::nth(u64::from(round));
    let db = Db::open(dir, options(&l, flsm)).expect("child: open");
    let mut acks = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(ack_path(dir, round))
        .expect("child: ack file");
    for i in 0..2_000_000u64 {
        let (ops, sync) = write_of(round, i);
        let mut batch = WriteBatch::new();
        for (k, v) in &ops {
            match v {
                Some(v) => batch.put(k, v),
                None => batch.delete(k),
            };
        }
        db.write_opt(batch, WriteOptions { sync })
            .expect("child: write");
        if i % 4 == 0 {
            let (k, _) = &ops[0];
            let want = ops
                .iter()
                .rev()
                .find(|(k2, _)| k2 == k)
                .and_then(|(_, v)| v.as_ref());
            assert_eq!(
                db.get(k).expect("child: get").as_ref(),
                want,
                "child: read-back"
            );
        }
        if l.policy == LearningPolicy::Offline && i % 500 == 499 {
            db.learn_all().expect("child: learn_all");
        }
        acks.write_all(format!("{i}\n").as_bytes())
            .expect("child: ack");
    }
}

/// Indices acknowledged by the child of `round` (a torn last line is ignored).
fn acknowledged(dir: &Path, round: u32) -> u64 {
    let text = std::fs::read_to_string(ack_path(dir, round)).unwrap_or_default();
    let mut count = 0;
    for line in text.split_inclusive('\n').filter(|l| l.ends_with('\n')) {
        let i: u64 = line.trim_end().parse().expect("ack line");
        assert_eq!(i, count, "acknowledgments out of order");
        count += 1;
    }
    count
}

fn scan(db: &Db) -> Model {
    db.iter()
        .collect::<Result<Model, _>>()
        .unwrap_or_else(|e| panic!("scan after kill failed: {e}"))
}

#[test]
fn sigkill_at_random_moments_keeps_every_acknowledged_write() {
    kill_rounds(TEST_NAME, false);
}

#[test]
fn flsm_sigkill_at_random_moments_keeps_every_acknowledged_write() {
    kill_rounds(FLSM_TEST_NAME, true);
}

/// The parent (kills children running test `test_name` in this binary) or, in a child,
/// the writer.
fn kill_rounds(test_name: &str, flsm: bool) {
    if let Ok(dir) = std::env::var(CHILD_ENV) {
        let round = std::env::var(ROUND_ENV)
            .ok()
            .and_then(|r| r.parse().ok())
            .expect("round");
        child(Path::new(&dir), round, flsm);
        return;
    }
    let kills: u32 = std::env::var("AUGUR_CRASH_KILLS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(DEFAULT_KILLS);
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("db");
    let exe = std::env::current_exe().expect("current_exe");
    let mut rng = StdRng::seed_from_u64(0x5eed);
    let mut model = Model::new();
    let mut total_acked = 0;
    for round in 0..kills {
        let mut child = {
            let _fork = FORK_GUARD.lock().unwrap_or_else(|e| e.into_inner());
            Command::new(&exe)
                .args([test_name, "--exact", "--nocapture", "--test-threads=1"])
                .env(CHILD_ENV, &dir)
                .env(ROUND_ENV, round.to_string())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn child")
        };
        // Let the child get going (it must acknowledge something unless it died), then kill
        // it after a random delay: sometimes right away, sometimes mid-flush or compaction.
        let started = Instant::now();
        while acknowledged(&dir, round) == 0 {
            if let Some(status) = child.try_wait().expect("try_wait") {
                let mut err = String::new();
                if let Some(mut e) = child.stderr.take() {
                    let _ = e.read_to_string(&mut err);
                }
                panic!("round {round}: child exited early ({status}): {err}");
            }
            assert!(
                started.elapsed() < Duration::from_secs(120),
                "round {round}: the child acknowledged nothing"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        std::thread::sleep(Duration::from_millis(rng.gen_range(0..120)));
        child.kill().expect("SIGKILL");
        let status = child.wait().expect("wait");
        assert!(!status.success(), "round {round}: the child was not killed");

        let acked = acknowledged(&dir, round);
        total_acked += acked;
        let reopen = Learning::reopen_of(u64::from(round));
        let db = Db::open(&dir, options(&reopen, flsm))
            .unwrap_or_else(|e| panic!("round {round}: reopen after SIGKILL failed: {e}"));
        reopen
            .after_open(&db)
            .unwrap_or_else(|e| panic!("round {round}: learn_all failed: {e}"));
        let state = scan(&db);
        // The prefix: all acknowledged writes, plus possibly the one in flight.
        let mut candidate = model.clone();
        for i in 0..acked {
            apply(&mut candidate, &write_of(round, i).0);
        }
        if state != candidate {
            apply(&mut candidate, &write_of(round, acked).0);
            assert!(
                state == candidate,
                "round {round}: after {acked} acknowledged writes the state ({} keys) is \
                 neither the state after them nor after the one in flight",
                state.len()
            );
        }
        for (k, v) in &candidate {
            assert_eq!(db.get(k).expect("get").as_ref(), Some(v), "round {round}");
        }
        if reopen.policy == LearningPolicy::Never {
            let s = db.stats();
            assert_eq!(
                s.model_path_lookups, 0,
                "round {round}: `never` used models"
            );
        }
        db.verify()
            .unwrap_or_else(|e| panic!("round {round}: verify failed: {e}"));
        common::check_reads(&db, &reopen, &format!("round {round}"));
        {
            let _fork = FORK_GUARD.lock().unwrap_or_else(|e| e.into_inner());
            drop(db);
        }
        model = candidate;
    }
    assert!(
        total_acked >= u64::from(kills),
        "too few writes acknowledged"
    );
}
