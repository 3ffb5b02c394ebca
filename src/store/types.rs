//! The domain types the store reads and writes: runs, results, baseline pointers and their
//! history. Pure data; no I/O.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use jiff::Timestamp;
use serde::{Serialize, Serializer};

use crate::case::{CaseKey, Verdict};
use crate::compare::budget::{CaseRecord, NightRecord, RepeatCost};

/// The id of a stored run (its row id; increases with every insert).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct RunId(pub i64);

impl fmt::Display for RunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl FromStr for RunId {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().parse::<i64>() {
            Ok(id) if id > 0 => Ok(RunId(id)),
            _ => Err(format!("invalid run id {s:?}: expected a positive integer")),
        }
    }
}

/// A run to store, as `utilgate run` (or `baseline import`) assembled it. Serialisable, for
/// the rescue file a run goes to when the store cannot take it.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct NewRun {
    #[serde(with = "timestamp_text")]
    pub started_at: Timestamp,
    #[serde(with = "timestamp_text")]
    pub finished_at: Timestamp,
    pub git_sha: Option<String>,
    pub branch: Option<String>,
    /// What started the run: `schedule`, `pull_request`, `manual`, `import`, ...
    pub trigger: Option<String>,
    pub pr_number: Option<u64>,
    pub gpu_sku: String,
    /// The environment fingerprint of the GPU (driver, clocks, UUID, ...).
    pub gpu_json: Option<serde_json::Value>,
    pub host: Option<String>,
    pub utilgate_version: String,
    pub config_json: Option<serde_json::Value>,
    /// Why results flagged `promote` become baselines (e.g. "passed the gate on main"); stored
    /// with each promote move, whose time is `finished_at`.
    pub promote_reason: String,
    pub results: Vec<NewResult>,
    /// The machine canary measured around the run (`compare::Canary` as JSON), if any.
    pub canary_json: Option<serde_json::Value>,
    /// The group of runs this one belongs to (the shards of one grid), if any.
    #[serde(default)]
    pub group: Option<RunGroup>,
    /// The run's unique id, drawn when it started (`runs.uid`): a store holds one run per id,
    /// so a replayed rescue file or journal is refused. Absent in older rescue files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    /// A budgeted night's record (`run_budgets`), when the run had a budget. Absent in older
    /// rescue files, whose record sits in `config_json` (see `pipeline::journal`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_night: Option<NightRecord>,
}

/// A run's place in a group of runs: the group's id and, for a shard, which of how many.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct RunGroup {
    pub id: String,
    /// `(K, N)` of `--shard K/N`, 1-based.
    pub shard: Option<(u32, u32)>,
}

/// One case's result within a [`NewRun`]. Non-finite floats in the `Option<f64>` fields are
/// stored as NULL (`SQLite` has no NaN); raw samples keep every bit.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct NewResult {
    pub key: CaseKey,
    pub verdict: Option<Verdict>,
    pub error: Option<String>,
    pub floor_ms: Option<f64>,
    pub floor_json: Option<serde_json::Value>,
    pub median_ms: Option<f64>,
    pub utilisation: Option<f64>,
    pub mbu: Option<f64>,
    pub mfu: Option<f64>,
    pub summary_json: Option<serde_json::Value>,
    pub decision_json: Option<serde_json::Value>,
    /// Counted samples (ms), one list per repeat.
    pub repeats_ms: Vec<Vec<f64>>,
    /// Warm-up samples (ms), one list per repeat; stored, never counted.
    pub warmup_ms: Vec<Vec<f64>>,
    pub env: BTreeMap<String, String>,
    pub gpu_state_json: Option<serde_json::Value>,
    pub stderr_tail: Option<String>,
    /// Move this case's baseline pointer to this result, in the run's own transaction. The
    /// caller decides; the store only records it.
    pub promote: bool,
    /// What a budgeted night did with this case (`result_budgets`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<CaseRecord>,
    /// The time each repeat took (`result_repeat_costs`), which later nights plan from.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub costs: Vec<RepeatCost>,
    /// The quality metrics its harness scored (`result_quality`), every repeat's answers added.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub quality: crate::compare::quality::QualityCounts,
    /// A speculative case's drafted and accepted tokens (`result_speculation`).
    pub speculative: Option<crate::compare::speculation::DraftCounts>,
    /// Each timed repeat's energy over its timed window, or why it has none (`result_energy`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub energy: Vec<crate::compare::energy::RepeatEnergy>,
}

/// Timestamps as RFC 3339 text in the rescue file.
mod timestamp_text {
    use jiff::Timestamp;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(t: &Timestamp, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(t)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Timestamp, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// Which runs [`super::Store::list_runs`] returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunFilter {
    pub limit: usize,
    pub branch: Option<String>,
    pub gpu_sku: Option<String>,
}

/// Which cases a history query covers.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum CaseFilter {
    #[default]
    All,
    Suite(String),
    Key(CaseKey),
}

/// One line of `utilgate runs list`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunSummary {
    pub id: RunId,
    #[serde(serialize_with = "timestamp")]
    pub started_at: Timestamp,
    #[serde(serialize_with = "timestamp")]
    pub finished_at: Timestamp,
    pub git_sha: Option<String>,
    pub branch: Option<String>,
    pub trigger: Option<String>,
    pub pr_number: Option<u64>,
    pub gpu_sku: String,
    pub n_results: usize,
    /// Results per verdict name; results stored without a verdict are not counted here.
    pub verdicts: BTreeMap<String, usize>,
}

/// A whole stored run with its results (in insertion order).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StoredRun {
    pub summary: RunSummary,
    pub gpu_json: Option<serde_json::Value>,
    pub host: Option<String>,
    pub utilgate_version: String,
    pub config_json: Option<serde_json::Value>,
    pub results: Vec<StoredResult>,
    /// The budgeted night's record, when the run had a budget.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget_night: Option<NightRecord>,
}

/// Which of a case's results a reference may pool: those on `branch` that ran at or after
/// `from` (where the case's lineage began) and before `before` (the judged run, when it is
/// stored already).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BranchWindow<'a> {
    pub branch: &'a str,
    pub from: jiff::Timestamp,
    pub before: Option<jiff::Timestamp>,
}

/// Which end of a window to read, and how many results.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Take {
    Newest(usize),
    Oldest(usize),
}

/// One stored case result, with the run facts needed to read it on its own.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StoredResult {
    pub id: i64,
    pub run_id: RunId,
    pub key: CaseKey,
    pub gpu_sku: String,
    /// When the run that produced this result started.
    #[serde(serialize_with = "timestamp")]
    pub started_at: Timestamp,
    pub git_sha: Option<String>,
    pub branch: Option<String>,
    pub verdict: Option<Verdict>,
    pub error: Option<String>,
    pub floor_ms: Option<f64>,
    pub floor_json: Option<serde_json::Value>,
    pub median_ms: Option<f64>,
    pub utilisation: Option<f64>,
    pub mbu: Option<f64>,
    pub mfu: Option<f64>,
    pub summary_json: Option<serde_json::Value>,
    pub decision_json: Option<serde_json::Value>,
    pub repeats_ms: Vec<Vec<f64>>,
    pub warmup_ms: Vec<Vec<f64>>,
    pub env: BTreeMap<String, String>,
    pub gpu_state_json: Option<serde_json::Value>,
    pub stderr_tail: Option<String>,
    /// What a budgeted night did with this case, when one measured it. Its repeats' costs are
    /// read on their own (`Store::repeat_costs`): only the planner needs them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget: Option<CaseRecord>,
}

/// Why a baseline pointer moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BaselineMoveKind {
    /// A run on the baseline branch passed the gate.
    Promote,
    /// Someone accepted a change, with a reason.
    Accept,
    /// Imported from the portable `baselines/` export.
    Import,
}

impl BaselineMoveKind {
    pub const ALL: [BaselineMoveKind; 3] = [
        BaselineMoveKind::Promote,
        BaselineMoveKind::Accept,
        BaselineMoveKind::Import,
    ];

    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            BaselineMoveKind::Promote => "promote",
            BaselineMoveKind::Accept => "accept",
            BaselineMoveKind::Import => "import",
        }
    }
}

impl fmt::Display for BaselineMoveKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for BaselineMoveKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        BaselineMoveKind::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| format!("unknown baseline move kind {s:?}"))
    }
}

/// A request to point a case's baseline (the case and SKU of `result_id`) at that result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BaselineMove {
    pub result_id: i64,
    pub kind: BaselineMoveKind,
    pub reason: String,
    pub moved_at: Timestamp,
}

/// A current baseline pointer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BaselineEntry {
    pub key: CaseKey,
    pub gpu_sku: String,
    pub result_id: i64,
    pub run_id: RunId,
    pub kind: BaselineMoveKind,
    pub reason: String,
    #[serde(serialize_with = "timestamp")]
    pub moved_at: Timestamp,
    pub git_sha: Option<String>,
    pub median_ms: Option<f64>,
    pub utilisation: Option<f64>,
}

/// One move of a baseline pointer, as kept forever in the history.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BaselineEvent {
    /// The move's own id: later moves have larger ids.
    pub id: i64,
    pub key: CaseKey,
    pub gpu_sku: String,
    pub result_id: i64,
    pub run_id: RunId,
    pub kind: BaselineMoveKind,
    pub reason: String,
    #[serde(serialize_with = "timestamp")]
    pub moved_at: Timestamp,
    pub git_sha: Option<String>,
    pub median_ms: Option<f64>,
    pub utilisation: Option<f64>,
}

/// Writes a timestamp as RFC 3339 (jiff's `Display`), so the crate needs no jiff `serde` feature.
fn timestamp<S: Serializer>(t: &Timestamp, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_id_parses_and_prints() {
        assert_eq!("42".parse::<RunId>(), Ok(RunId(42)));
        assert_eq!(RunId(7).to_string(), "7");
        for bad in ["", "0", "-3", "x1"] {
            assert!(bad.parse::<RunId>().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn move_kinds_round_trip() {
        for k in BaselineMoveKind::ALL {
            assert_eq!(k.as_str().parse::<BaselineMoveKind>(), Ok(k));
        }
        assert!("rollback".parse::<BaselineMoveKind>().is_err());
    }

    #[test]
    fn summaries_serialise_timestamps_as_rfc3339() {
        let summary = RunSummary {
            id: RunId(3),
            started_at: Timestamp::from_second(1_700_000_000).expect("in range"),
            finished_at: Timestamp::from_second(1_700_000_060).expect("in range"),
            git_sha: None,
            branch: Some("main".into()),
            trigger: None,
            pr_number: None,
            gpu_sku: "h100-sxm".into(),
            n_results: 0,
            verdicts: BTreeMap::new(),
        };
        let json = serde_json::to_value(&summary).expect("serialises");
        assert_eq!(json["id"], 3);
        assert_eq!(json["started_at"], "2023-11-14T22:13:20Z");
    }
}
