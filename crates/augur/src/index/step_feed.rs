//! [`StepFeed`]: how every fitting builder (PLR, PGM, the splines of RadixSpline and PLEX)
//! takes its keys. The models approximate the lower-bound step function `lb`; each distinct
//! key ends one step of it, and the feed hands each step — the key, its position and the
//! key before it — to the builder's [`StepFit`], one key at a time ([`StepFeed::add`]) or
//! a sorted batch in one tight loop ([`StepFeed::add_all`], the table builder's and the
//! learner's case). Duplicates feed nothing: `lb` of a duplicate is its run's first position,
//! already fed. [`KeyOrder`] checks the order and counts the keys.

use super::KeyOrder;
use crate::error::Result;

/// A fitter fed the steps of `lb`.
pub(super) trait StepFit {
    /// Feeds the step of `lb` ending at `key`, at position `pos`, after the key `prev`
    /// (`None` for the first key).
    fn fit_step(&mut self, prev: Option<u64>, key: u64, pos: u64);
}

/// Keys in order, checked and counted, feeding a [`StepFit`].
#[derive(Debug)]
pub(super) struct StepFeed<F> {
    /// The order check and the count of keys so far.
    pub(super) order: KeyOrder,
    /// The fitter.
    pub(super) fit: F,
}

impl<F: StepFit> StepFeed<F> {
    /// A feed into `fit`.
    pub(super) fn new(fit: F) -> Self {
        StepFeed {
            order: KeyOrder::default(),
            fit,
        }
    }

    /// Adds the next key.
    ///
    /// # Errors
    /// `InvalidArgument` for a decreasing key, too many keys, or a failed builder.
    #[inline]
    pub(super) fn add(&mut self, key: u64) -> Result<()> {
        let prev = self.order.prev;
        let pos = self.order.count;
        if self.order.accept(key)? {
            self.fit.fit_step(prev, key, pos);
        }
        Ok(())
    }

    /// Adds a sorted batch of keys in one tight loop (as [`Self::add`] per key).
    ///
    /// # Errors
    /// As [`Self::add`].
    #[inline]
    pub(super) fn add_all(&mut self, keys: &[u64]) -> Result<()> {
        let fit = &mut self.fit;
        if self.order.take_steps(
            keys,
            #[inline(always)]
            |prev, key, pos| fit.fit_step(prev, key, pos),
        ) {
            return Ok(());
        }
        keys.iter().try_for_each(|&k| self.add(k))
    }
}
