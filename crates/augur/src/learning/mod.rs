//! Learning policies: when the learned index of an SSTable is trained (Bourbon §4.4, and the
//! lazy learning of the Bourbon range-query follow-up).
//!
//! - `never`: the baseline WiscKey path; no model is built or used.
//! - `at-build`: the model is trained while the file is written, persisted in its model
//!   section, and used by every lookup into the file.
//! - `always`, `cost-benefit`, `lazy`: a background [`learner`] trains models for files after
//!   they are installed (after `T_wait`; after the file's k-th lookup for `lazy`; only when
//!   the [`cost_benefit`] analyzer expects the model to pay for itself for `cost-benefit`).
//! - `offline`: models are learned once, when the application calls `Db::learn_all`; files
//!   created later are never learned.
//!
//! Independently of the policy, `Options::level_models` adds [`level_model`]s: one model per
//! sorted level, trained when the level is unchanged and the background thread is idle.
//!
//! Models learned in the background live in memory only: they are not written back into the
//! (immutable) file, so after a restart those files are learned again under the policy then in
//! effect. Models built at build time are persisted. Switching policy at open keeps the models
//! files carry (every policy but `never` uses them).

pub mod cost_benefit;
pub(crate) mod learner;
pub(crate) mod stats;

use crate::error::{Error, Result};

/// When models are learned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum LearningPolicy {
    /// Never learn; lookups take the baseline path (fence pointers + binary search), even in
    /// files that carry a model.
    Never,
    /// Train while flushing or compacting a file and persist the model with it.
    #[default]
    AtBuild,
    /// Learn every new file in the background once it has lived `T_wait`
    /// (`Options::learning_wait_ms`): Bourbon-always.
    Always,
    /// Learn a file in the background after `T_wait` only when the cost–benefit analyzer
    /// expects the model to save more lookup time than its training costs (Bourbon §4.4).
    CostBenefit,
    /// Learn a file in the background after its k-th point lookup
    /// (`Options::lazy_learning_reads`).
    Lazy,
    /// Learn the files present when `Db::learn_all` is called; never learn later files.
    Offline,
}

/// Every policy, in CLI order.
pub const ALL_POLICIES: [LearningPolicy; 6] = [
    LearningPolicy::Never,
    LearningPolicy::AtBuild,
    LearningPolicy::Always,
    LearningPolicy::CostBenefit,
    LearningPolicy::Lazy,
    LearningPolicy::Offline,
];

impl LearningPolicy {
    /// Parses the CLI spelling (`never`, `at-build`, `always`, `cost-benefit`, `lazy`,
    /// `offline`).
    ///
    /// # Errors
    /// `InvalidArgument` naming the accepted values.
    pub fn parse(s: &str) -> Result<Self> {
        ALL_POLICIES
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| {
                let names: Vec<_> = ALL_POLICIES.iter().map(|p| p.name()).collect();
                Error::InvalidArgument(format!(
                    "unknown learning policy `{s}` (expected one of {})",
                    names.join(", ")
                ))
            })
    }

    /// The CLI spelling.
    pub fn name(self) -> &'static str {
        match self {
            LearningPolicy::Never => "never",
            LearningPolicy::AtBuild => "at-build",
            LearningPolicy::Always => "always",
            LearningPolicy::CostBenefit => "cost-benefit",
            LearningPolicy::Lazy => "lazy",
            LearningPolicy::Offline => "offline",
        }
    }

    /// Whether lookups use the models present in files.
    pub fn uses_models(self) -> bool {
        self != LearningPolicy::Never
    }

    /// Whether a background learner thread trains models for new files.
    pub fn learns_in_background(self) -> bool {
        matches!(
            self,
            LearningPolicy::Always | LearningPolicy::CostBenefit | LearningPolicy::Lazy
        )
    }
}

impl std::fmt::Display for LearningPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_roundtrip() {
        for p in ALL_POLICIES {
            assert_eq!(LearningPolicy::parse(p.name()).unwrap(), p);
            assert_eq!(p.to_string(), p.name());
        }
        let e = LearningPolicy::parse("sometimes").unwrap_err().to_string();
        assert!(e.contains("at-build") && e.contains("cost-benefit"), "{e}");
        assert!(LearningPolicy::parse("Always").is_err());
    }

    #[test]
    fn which_policies_learn_in_background() {
        let bg: Vec<_> = ALL_POLICIES
            .into_iter()
            .filter(|p| p.learns_in_background())
            .collect();
        assert_eq!(
            bg,
            [
                LearningPolicy::Always,
                LearningPolicy::CostBenefit,
                LearningPolicy::Lazy
            ]
        );
        assert!(!LearningPolicy::Never.uses_models());
        assert!(LearningPolicy::Offline.uses_models());
    }
}
