//! The benchmarks about learning itself, on Augur only: `learn` (`Db::learn_all`, the
//! `offline` policy's training) and `waitforlearning` (until the background learner is idle),
//! both reporting what was learned meanwhile (`stats_view::learning_during`).

use super::{Meter, Runner};
use crate::error::BenchError;
use crate::report::Outcome;
use serde_json::json;
use std::time::{Duration, Instant};

/// Longest `waitforlearning` waits before failing.
const LEARNING_WAIT_LIMIT: Duration = Duration::from_secs(3600);

impl Runner {
    /// Whether every table written carries an at-build model (for `learning_during`).
    fn at_build(&self) -> bool {
        self.opts.learning == augur::LearningPolicy::AtBuild
    }

    /// `learn`: trains a model for every file of the tree that has none (`Db::learn_all`,
    /// with the configured `--index` and error bounds) and reports the training time, keys
    /// and models per second; Augur only.
    pub(super) fn learn(&mut self, name: &str) -> Result<Outcome, BenchError> {
        let record = self.record;
        let at_build = self.at_build();
        let augur = self.augur_only(name)?;
        let before = augur.stats();
        let mut meter = Meter::new(record);
        let models = augur.learn_all()?;
        meter.op_done();
        let mut out = meter.finish(name, models.max(1), 0);
        out.extra.push(("models", json!(models)));
        let after = augur.stats();
        out.extra
            .push(("model_bytes", json!(after.total_model_bytes())));
        let entries: u64 = after.levels.iter().map(|l| l.entries).sum();
        out.extra.push(("entries", json!(entries)));
        out.extra.extend(crate::stats_view::learning_during(
            &before, &after, at_build,
        ));
        Ok(out)
    }

    /// `waitforlearning`: polls the engine until no file is waiting for `T_wait`, queued or
    /// being learned (at most [`LEARNING_WAIT_LIMIT`]), timed as one operation; reports
    /// what was learned meanwhile. Files armed to be learned after more lookups (`lazy`,
    /// cost–benefit re-examinations) are not pending: without lookups they never are.
    /// Augur only.
    pub(super) fn wait_for_learning(&mut self, name: &str) -> Result<Outcome, BenchError> {
        let record = self.record;
        let at_build = self.at_build();
        let augur = self.augur_only(name)?;
        let before = augur.stats();
        let started = Instant::now();
        let mut meter = Meter::new(record);
        while augur.stats().learning_pending > 0 {
            if started.elapsed() > LEARNING_WAIT_LIMIT {
                return Err(BenchError::failed(format!(
                    "{name}: the learner still had files pending after {} s",
                    LEARNING_WAIT_LIMIT.as_secs()
                )));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        meter.op_done();
        let mut out = meter.finish(name, 1, 0);
        out.extra = crate::stats_view::learning_during(&before, &augur.stats(), at_build);
        Ok(out)
    }
}
