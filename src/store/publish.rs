//! What publishing needs from a run, stored with it (`runs.publish_json`, schema version 4):
//! the gate in force when it ran (`fail_on`, thresholds, outcome), where it belongs (the pull
//! request's head commit) and the status name. `utilgate publish` posts these, so a
//! publishing job with another config (or none) never re-judges. Does I/O on the store.

use std::collections::BTreeMap;

use super::sql::OptionalExtension;
use serde::{Deserialize, Serialize};

use super::db::Store;
use super::error::StoreError;
use super::types::RunId;
use crate::case::{CaseKey, Verdict};
use crate::compare::Decision;

/// The gate and the target of one run, as `utilgate run` decided them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PublishFacts {
    /// The verdicts that failed the gate (`[gate] fail_on` in force).
    pub fail_on: Vec<Verdict>,
    /// Whether the gate passed (no verdict in `fail_on`).
    pub gate_passed: bool,
    /// `[gate] baseline_branch` in force (the trends show its runs).
    pub baseline_branch: String,
    /// Each case's practical threshold (percent), by case key.
    pub thresholds_pct: BTreeMap<String, f64>,
    /// The commit status name template (`{suite}`, `{gpu}`).
    pub status_context: String,
    /// The pull request's head commit, when the run measured one (the measured commit is
    /// then a merge commit, `runs.git_sha`).
    pub pr_head_sha: Option<String>,
    /// Cases in the baselines that the run did not measure: they have no result row, so
    /// their verdicts are kept here.
    #[serde(default)]
    pub missing: Vec<MissingCase>,
    /// A pull request's run: what it changed in the gate's settings that the base branch's
    /// replaced, or that they could not be verified (`pipeline::base_gate`); shown on the
    /// comment.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gate_notes: Vec<String>,
}

/// A case the run's baselines held and the run did not measure, with its verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MissingCase {
    pub key: CaseKey,
    pub decision: Decision,
}

impl Store {
    /// What a run stored for publishing; `None` for runs stored before schema version 4 and
    /// for imported runs.
    pub fn publish_facts(&self, run: RunId) -> Result<Option<PublishFacts>, StoreError> {
        let text: Option<Option<String>> = self
            .conn
            .prepare_cached("SELECT publish_json FROM runs WHERE id = ?1")
            .and_then(|mut stmt| stmt.query_row([run.0], |r| r.get(0)).optional())
            .map_err(|e| StoreError::query(&self.path, "read a run's publishing facts", e))?;
        text.flatten()
            .map(|t| serde_json::from_str(&t))
            .transpose()
            .map_err(|source| StoreError::Json {
                path: self.path.clone(),
                column: "runs.publish_json",
                row: run.0,
                source,
            })
    }
}
