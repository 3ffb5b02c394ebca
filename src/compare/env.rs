//! What changed in the environment between the baseline's run and this one (GPU, driver, and
//! the versions the harness reported), shown beside a regression as its likely cause. Pure.
//!
//! The environment is evidence, never an excuse (DESIGN.md §7): a dependency upgrade is the
//! most likely cause of a regression, so it is named as such, and nothing here moves a baseline.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use super::Decision;
use crate::case::Verdict;

/// One difference between two environment fingerprints.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(tag = "change", rename_all = "lowercase")]
pub enum EnvChange {
    Added {
        key: String,
        now: String,
    },
    Removed {
        key: String,
        then: String,
    },
    Changed {
        key: String,
        then: String,
        now: String,
    },
}

impl EnvChange {
    #[must_use]
    pub fn key(&self) -> &str {
        match self {
            EnvChange::Added { key, .. }
            | EnvChange::Removed { key, .. }
            | EnvChange::Changed { key, .. } => key,
        }
    }
}

impl fmt::Display for EnvChange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EnvChange::Added { key, now } => write!(f, "{key} {now} (new)"),
            EnvChange::Removed { key, then } => write!(f, "{key} {then} (gone)"),
            EnvChange::Changed { key, then, now } => write!(f, "{key} {then} -> {now}"),
        }
    }
}

/// Differences between the baseline's environment (`then`) and this run's (`now`), in key order.
/// Callers put the GPU name and driver in the maps beside the harness's versions.
#[must_use]
pub fn env_diff(then: &BTreeMap<String, String>, now: &BTreeMap<String, String>) -> Vec<EnvChange> {
    let mut changes = Vec::new();
    for (key, old) in then {
        match now.get(key) {
            None => changes.push(EnvChange::Removed {
                key: key.clone(),
                then: old.clone(),
            }),
            Some(new) if new != old => changes.push(EnvChange::Changed {
                key: key.clone(),
                then: old.clone(),
                now: new.clone(),
            }),
            Some(_) => {}
        }
    }
    for (key, new) in now {
        if !then.contains_key(key) {
            changes.push(EnvChange::Added {
                key: key.clone(),
                now: new.clone(),
            });
        }
    }
    changes.sort_by(|a, b| a.key().cmp(b.key()));
    changes
}

/// Adds the environment changes to a regressed (or inconclusive) decision as its likely cause.
/// Other verdicts are returned unchanged.
#[must_use]
pub fn with_env_causes(mut decision: Decision, changes: &[EnvChange]) -> Decision {
    if !matches!(decision.verdict, Verdict::Regressed | Verdict::Inconclusive) {
        return decision;
    }
    let confirmed = decision.verdict == Verdict::Regressed;
    if changes.is_empty() && confirmed {
        decision.reasons.push(
            "Nothing changed in the reported environment since the baseline, so the code \
             itself is the likely cause."
                .to_owned(),
        );
    } else if changes.is_empty() {
        decision
            .reasons
            .push("Nothing changed in the reported environment since the baseline.".to_owned());
    } else if !confirmed {
        let list: Vec<String> = changes.iter().map(ToString::to_string).collect();
        decision.reasons.push(format!(
            "Changed since the baseline (a possible cause, should the drop be confirmed): {}.",
            list.join("; ")
        ));
    } else {
        let list: Vec<String> = changes.iter().map(ToString::to_string).collect();
        decision.reasons.push(format!(
            "Changed since the baseline, the likely cause: {}. An upgrade does not start a new \
             baseline: fix the slowdown, or accept it with a reason.",
            list.join("; ")
        ));
    }
    decision
}

#[cfg(test)]
#[expect(
    clippy::unwrap_used,
    reason = "a test fails loudly on a missing figure"
)]
mod tests {
    use super::*;
    use crate::compare::{Evidence, Policy, decide};

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn diff_names_added_removed_and_changed() {
        let then = map(&[
            ("driver", "550.54"),
            ("torch", "2.5.1"),
            ("xformers", "0.0.28"),
        ]);
        let now = map(&[
            ("driver", "550.54"),
            ("torch", "2.6.0"),
            ("flash_attn", "2.6.3"),
        ]);
        let changes = env_diff(&then, &now);
        let shown: Vec<String> = changes.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            [
                "flash_attn 2.6.3 (new)",
                "torch 2.5.1 -> 2.6.0",
                "xformers 0.0.28 (gone)"
            ]
        );
        assert!(env_diff(&then, &then).is_empty());
        assert_eq!(changes[1].key(), "torch");
    }

    #[test]
    fn causes_are_attached_to_regressions_only() {
        let base = vec![vec![6.0; 20]; 3];
        let slow: Vec<Vec<f64>> = vec![vec![6.6; 20]; 3];
        let ev = |r| Evidence {
            repeats_ms: r,
            floor_ms: 3.0,
        };
        let regressed = decide(
            Some(&ev(&base)),
            &ev(&slow),
            &[],
            &Policy::default(),
            1,
            None,
        );
        let passed = decide(
            Some(&ev(&base)),
            &ev(&base),
            &[],
            &Policy::default(),
            1,
            None,
        );
        let changes = env_diff(&map(&[("torch", "2.5.1")]), &map(&[("torch", "2.6.0")]));
        let r = with_env_causes(regressed.clone(), &changes);
        assert!(r.reasons.last().unwrap().contains("torch 2.5.1 -> 2.6.0"));
        assert_eq!(
            r.verdict,
            Verdict::Regressed,
            "an upgrade never excuses a regression"
        );
        assert!(
            with_env_causes(regressed, &[])
                .reasons
                .last()
                .unwrap()
                .contains("code")
        );
        assert_eq!(with_env_causes(passed.clone(), &changes), passed);
    }
}
