//! The operations of the differential suite, one drawn per step: writes (puts, deletes,
//! batches with repeated keys), point reads, ranges stepped either way, zero-copy and parallel
//! scans, full iterations, snapshots read later, iterators kept open across writes, and the
//! background machinery called directly (flush, `compact_range`, value-log GC, reopen,
//! `check_structure`), and checkpoints opened as databases of their own. Each checks its
//! result against the model at once.

use super::model::{clamp_bound, model_range, show, show_bound, show_pair, Model, Pair};
use super::run::{OpenIter, Run, Snap, MAX_OPEN_ITERATORS, MAX_SNAPSHOTS};
use augur::{CheckpointOptions, Clock, Db, ParallelScanOptions, ScanOptions, Split, WriteBatch};
use rand::Rng;

impl Run {
    /// A scan's direction mode (see `Run::check_iter`) and step limit.
    fn scan_shape(&mut self) -> (u8, usize) {
        let mode = self.rng.gen_range(0..3);
        let limit = if self.rng.gen_bool(0.25) {
            usize::MAX
        } else {
            self.rng.gen_range(1..40)
        };
        (mode, limit)
    }

    /// Draws one operation, runs it and checks its result against the model.
    pub fn step(&mut self) {
        let roll = self.rng.gen_range(0..100_000u32);
        match roll {
            0..=34_999 => {
                let (k, v) = (self.key(), self.value());
                if self.expiring && self.expiry_rng.gen_bool(0.3) {
                    return self.put_expiring(k, v);
                }
                self.note(format!("put {} ({} bytes)", show(&k), v.len()));
                let r = self.db().put(&k, &v);
                self.ok(r, "put");
                self.expiries.remove(&k);
                self.model.insert(k, v);
            }
            35_000..=44_999 => {
                let k = self.key();
                self.note(format!("delete {}", show(&k)));
                let r = self.db().delete(&k);
                self.ok(r, "delete");
                self.expiries.remove(&k);
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
            94_320..=94_339 => self.checkpoint_op(),
            94_340..=94_999 => {
                self.note("check_structure".into());
                let r = self.db().check_structure();
                self.ok(r, "check_structure");
            }
            _ if self.expiring && self.expiry_rng.gen_bool(0.2) => self.advance_clock(),
            _ => {
                // The rest: more puts, to keep the key space full.
                let (k, v) = (self.key(), self.value());
                self.note(format!("put {} ({} bytes)", show(&k), v.len()));
                let r = self.db().put(&k, &v);
                self.ok(r, "put");
                self.expiries.remove(&k);
                self.model.insert(k, v);
            }
        }
    }

    /// Takes a checkpoint (linked or copied), opens it beside the live database and checks
    /// that it holds exactly the model: every write acknowledged before the call, expiring
    /// values judged by the same clock. The live database goes on unchanged.
    fn checkpoint_op(&mut self) {
        let link_files = self.rng.gen_bool(0.7);
        let dir = self
            .path()
            .with_file_name(format!("checkpoint-{}", self.op));
        self.note(format!("checkpoint link_files {link_files}"));
        let info = self
            .db()
            .checkpoint_with(&dir, &CheckpointOptions { link_files });
        self.ok(info, "checkpoint");
        let copy = Db::open(&dir, self.options().clone());
        let copy = self.ok(copy, "open checkpoint");
        let got: Model = copy
            .iter()
            .collect::<augur::Result<_>>()
            .unwrap_or_else(|e| self.fail(format!("read checkpoint: {e}")));
        if got != self.model {
            let missing = self.model.keys().find(|k| !got.contains_key(*k));
            let extra = got.keys().find(|k| !self.model.contains_key(*k));
            let differs = got
                .iter()
                .find(|(k, v)| self.model.get(*k).is_some_and(|m| m != *v));
            self.fail(format!(
                "checkpoint holds {} keys, model {}: first missing {:?}, first extra {:?}, \
                 first differing {:?}",
                got.len(),
                self.model.len(),
                missing.map(|k| show(k)),
                extra.map(|k| show(k)),
                differs.map(|(k, _)| show(k))
            ));
        }
        let verified = copy.verify();
        self.ok(verified, "verify checkpoint");
        self.totals.checkpoints += 1;
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
            self.expiries.remove(&k);
            match v {
                Some(v) => self.model.insert(k, v),
                None => self.model.remove(&k),
            };
        }
    }

    /// A put that expires: most often later (by up to 3 s of the run's clock), sometimes at
    /// once (a time already past: the key reads as deleted).
    fn put_expiring(&mut self, k: Vec<u8>, v: Vec<u8>) {
        let now = self.clock.now_unix_ms();
        let at = if self.expiry_rng.gen_bool(0.1) {
            now - self.expiry_rng.gen_range(0..100)
        } else {
            now + self.expiry_rng.gen_range(1..3000)
        };
        self.note(format!(
            "put_expiring {} ({} bytes) at now{:+}",
            show(&k),
            v.len(),
            at as i64 - now as i64
        ));
        let r = self.db().put_expiring(&k, &v, at);
        self.ok(r, "put_expiring");
        if at <= now {
            self.expiries.remove(&k);
            self.model.remove(&k);
        } else {
            self.expiries.insert(k.clone(), at);
            self.model.insert(k, v);
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
                expiries: self.expiries.clone(),
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

    /// A zero-copy scan (`Db::scan_with`) in a random direction, with a random readahead,
    /// now or at a live snapshot, stepped a few times with an occasional seek inside it.
    fn scan_op(&mut self) {
        let (lo, hi) = (self.bound(), self.bound());
        let reverse = self.rng.gen_bool(0.4);
        let readahead = [1, 2, 5, 64][self.rng.gen_range(0..4)];
        let snap = (!self.snaps.is_empty() && self.rng.gen_bool(0.3))
            .then(|| self.rng.gen_range(0..self.snaps.len()));
        let keys_only = self.rng.gen_bool(0.1);
        let what = format!(
            "scan {}..{} reverse {reverse} readahead {readahead} snapshot {snap:?} keys_only {keys_only}",
            show_bound(&lo),
            show_bound(&hi)
        );
        self.note(what.clone());
        let options = ScanOptions {
            reverse,
            snapshot: snap.map(|i| self.snaps[i].snap.clone()),
            value_readahead: Some(readahead),
            keys_only,
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
            let mut want = if reverse {
                expected.pop_back()
            } else {
                expected.pop_front()
            };
            if keys_only {
                // A keys-only scan returns every key with an empty value.
                want = want.map(|(k, _)| (k, Vec::new()));
            }
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

    /// Opens an iterator to consume later, steps an open one once, or drops one.
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
}
