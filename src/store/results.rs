//! Reading stored case results (one row joined with its case key and run) and a case's history
//! on one GPU SKU. Does I/O on the store.

use std::collections::BTreeMap;
use std::path::Path;

use super::sql::{OptionalExtension, Params, Row, params};

use super::budgets::RawCaseRecord;
use super::db::{Store, i64_to_u64, ns_to_timestamp, parse_json, parse_text, timestamp_to_ns};
use super::error::StoreError;
use super::pull_requests::not_for_a_pull_request;
use super::samples;
use super::types::{BranchWindow, RunId, StoredResult, Take};
use crate::case::CaseKey;

/// Selects every column [`RawResult::from_row`] reads; callers append `WHERE ... ORDER BY`.
pub(crate) const RESULT_SELECT: &str = "\
SELECT r.id, r.run_id, s.suite, s.model, s.precision, s.phase, s.batch, s.context, s.gpu_sku,
       u.started_at_ns, u.git_sha, u.branch, r.verdict, r.error, r.floor_ms, r.floor_json,
       r.median_ms, r.utilisation, r.mbu, r.mfu, r.summary_json, r.decision_json, r.samples,
       r.warmup, r.env_json, r.gpu_state_json, r.stderr_tail, s.axes, s.tp, s.ep,
       b.note AS budget_note, b.planned_repeats AS budget_planned_repeats,
       b.steps AS budget_steps, b.first_repeats AS budget_first_repeats,
       b.confirm_repeats AS budget_confirm_repeats, b.time_s AS budget_time_s,
       b.stop AS budget_stop, b.needed_repeats AS budget_needed_repeats,
       b.needed_s AS budget_needed_s
FROM results r
JOIN series s ON s.id = r.series_id
JOIN runs u ON u.id = r.run_id
LEFT JOIN result_budgets b ON b.result_id = r.id";

/// A result row as `SQLite` returned it, before the checks that need the store's path.
struct RawResult {
    id: i64,
    run_id: i64,
    suite: String,
    model: String,
    precision: String,
    phase: String,
    batch: i64,
    context: i64,
    gpu_sku: String,
    started_at_ns: i64,
    git_sha: Option<String>,
    branch: Option<String>,
    verdict: Option<String>,
    error: Option<String>,
    floor_ms: Option<f64>,
    floor_json: Option<String>,
    median_ms: Option<f64>,
    utilisation: Option<f64>,
    mbu: Option<f64>,
    mfu: Option<f64>,
    summary_json: Option<String>,
    decision_json: Option<String>,
    samples: Vec<u8>,
    warmup: Vec<u8>,
    env_json: String,
    gpu_state_json: Option<String>,
    stderr_tail: Option<String>,
    axes: String,
    tp: i64,
    ep: i64,
    budget: RawCaseRecord,
}

impl RawResult {
    fn from_row(row: &Row<'_>) -> super::sql::Result<RawResult> {
        Ok(RawResult {
            id: row.get("id")?,
            run_id: row.get("run_id")?,
            suite: row.get("suite")?,
            model: row.get("model")?,
            precision: row.get("precision")?,
            phase: row.get("phase")?,
            batch: row.get("batch")?,
            context: row.get("context")?,
            gpu_sku: row.get("gpu_sku")?,
            started_at_ns: row.get("started_at_ns")?,
            git_sha: row.get("git_sha")?,
            branch: row.get("branch")?,
            verdict: row.get("verdict")?,
            error: row.get("error")?,
            floor_ms: row.get("floor_ms")?,
            floor_json: row.get("floor_json")?,
            median_ms: row.get("median_ms")?,
            utilisation: row.get("utilisation")?,
            mbu: row.get("mbu")?,
            mfu: row.get("mfu")?,
            summary_json: row.get("summary_json")?,
            decision_json: row.get("decision_json")?,
            samples: row.get("samples")?,
            warmup: row.get("warmup")?,
            env_json: row.get("env_json")?,
            gpu_state_json: row.get("gpu_state_json")?,
            stderr_tail: row.get("stderr_tail")?,
            axes: row.get("axes")?,
            tp: row.get("tp")?,
            ep: row.get("ep")?,
            budget: RawCaseRecord::from_row(row)?,
        })
    }

    fn decode(self, path: &Path) -> Result<StoredResult, StoreError> {
        let id = self.id;
        let blob = |bytes: &[u8]| {
            samples::decode(bytes).map_err(|source| StoreError::Samples {
                path: path.to_owned(),
                result_id: id,
                source,
            })
        };
        let env: BTreeMap<String, String> =
            serde_json::from_str(&self.env_json).map_err(|source| StoreError::Json {
                path: path.to_owned(),
                column: "env_json",
                row: id,
                source,
            })?;
        Ok(StoredResult {
            id,
            run_id: RunId(self.run_id),
            key: CaseKey {
                suite: self.suite,
                model: self.model,
                precision: self.precision,
                phase: parse_text(path, "series.phase", id, &self.phase)?,
                batch: i64_to_u64(path, "series.batch", id, self.batch)?,
                context: i64_to_u64(path, "series.context", id, self.context)?,
                axes: parse_text(path, "series.axes", id, &self.axes)?,
                tp: i64_to_u64(path, "series.tp", id, self.tp)?,
                ep: i64_to_u64(path, "series.ep", id, self.ep)?,
            },
            gpu_sku: self.gpu_sku,
            started_at: ns_to_timestamp(
                path,
                "runs.started_at_ns",
                self.run_id,
                self.started_at_ns,
            )?,
            git_sha: self.git_sha,
            branch: self.branch,
            verdict: self
                .verdict
                .map(|v| parse_text(path, "results.verdict", id, &v))
                .transpose()?,
            error: self.error,
            floor_ms: self.floor_ms,
            floor_json: parse_json(path, "floor_json", id, self.floor_json)?,
            median_ms: self.median_ms,
            utilisation: self.utilisation,
            mbu: self.mbu,
            mfu: self.mfu,
            summary_json: parse_json(path, "summary_json", id, self.summary_json)?,
            decision_json: parse_json(path, "decision_json", id, self.decision_json)?,
            repeats_ms: blob(&self.samples)?,
            warmup_ms: blob(&self.warmup)?,
            env,
            gpu_state_json: parse_json(path, "gpu_state_json", id, self.gpu_state_json)?,
            stderr_tail: self.stderr_tail,
            budget: self.budget.decode(path, id)?,
        })
    }
}

impl Store {
    /// Runs [`RESULT_SELECT`] followed by `tail` and decodes every row.
    pub(crate) fn query_results(
        &self,
        tail: &str,
        params: impl Params,
        action: &'static str,
    ) -> Result<Vec<StoredResult>, StoreError> {
        let sql = format!("{RESULT_SELECT} {tail}");
        let mut stmt = self.conn.prepare_cached(&sql).map_err(self.fail(action))?;
        let raw = stmt
            .query_map(params, RawResult::from_row)
            .and_then(Iterator::collect::<super::sql::Result<Vec<_>>>)
            .map_err(self.fail(action))?;
        raw.into_iter().map(|r| r.decode(&self.path)).collect()
    }

    /// The row id of a case key on one GPU SKU, if any result of it was ever stored.
    pub(crate) fn series_id(
        &self,
        key: &CaseKey,
        gpu_sku: &str,
    ) -> Result<Option<i64>, StoreError> {
        let (Ok(batch), Ok(context)) = (i64::try_from(key.batch), i64::try_from(key.context))
        else {
            return Ok(None);
        };
        self.conn
            .prepare_cached(
                "SELECT id FROM series WHERE suite = ?1 AND model = ?2 AND precision = ?3
                 AND phase = ?4 AND batch = ?5 AND context = ?6 AND gpu_sku = ?7
                 AND axes = ?8 AND tp = ?9 AND ep = ?10",
            )
            .and_then(|mut stmt| {
                stmt.query_row(
                    params![
                        key.suite,
                        key.model,
                        key.precision,
                        key.phase.as_str(),
                        batch,
                        context,
                        gpu_sku,
                        key.axes.key_text(),
                        i64::try_from(key.tp).unwrap_or(i64::MAX),
                        i64::try_from(key.ep).unwrap_or(i64::MAX)
                    ],
                    |r| r.get(0),
                )
                .optional()
            })
            .map_err(self.fail("look up a case"))
    }

    /// A case's results on one GPU SKU, newest run first, at most `limit` of them (for trend
    /// lines and history-based noise), none of a pull request's runs.
    pub fn case_history(
        &self,
        key: &CaseKey,
        gpu_sku: &str,
        limit: usize,
    ) -> Result<Vec<StoredResult>, StoreError> {
        let Some(series) = self.series_id(key, gpu_sku)? else {
            return Ok(Vec::new());
        };
        self.query_results(
            &format!(
                "WHERE r.series_id = ?1 AND {} \
                 ORDER BY r.run_started_at_ns DESC, r.id DESC LIMIT ?2",
                not_for_a_pull_request("u")
            ),
            params![series, i64::try_from(limit).unwrap_or(i64::MAX)],
            "read a case's history",
        )
    }

    /// A case's results on one GPU SKU and one branch that ran in `[from, before)` (no upper
    /// bound without `before`) and did not error: the newest or the oldest few (newest or
    /// oldest first). The candidates a reference pools, and the nights a lineage began with.
    /// Bounded in SQL, so results on other branches never crowd the baseline branch's out of
    /// the window, and a pull request's run never enters it, whatever its branch is called.
    pub fn branch_history(
        &self,
        key: &CaseKey,
        gpu_sku: &str,
        window: &BranchWindow<'_>,
        take: Take,
    ) -> Result<Vec<StoredResult>, StoreError> {
        let Some(series) = self.series_id(key, gpu_sku)? else {
            return Ok(Vec::new());
        };
        let from = timestamp_to_ns(&self.path, window.from)?;
        let before = window
            .before
            .map(|t| timestamp_to_ns(&self.path, t))
            .transpose()?
            .unwrap_or(i64::MAX);
        let (order, limit) = match take {
            Take::Newest(n) => ("DESC", n),
            Take::Oldest(n) => ("ASC", n),
        };
        self.query_results(
            &format!(
                "WHERE r.series_id = ?1 AND u.branch = ?2 AND r.run_started_at_ns >= ?3 \
                   AND r.run_started_at_ns < ?4 AND r.error IS NULL AND {} \
                 ORDER BY r.run_started_at_ns {order}, r.id {order} LIMIT ?5",
                not_for_a_pull_request("u")
            ),
            params![
                series,
                window.branch,
                from,
                before,
                i64::try_from(limit).unwrap_or(i64::MAX)
            ],
            "read a case's history on its baseline branch",
        )
    }

    /// Results by id, in the order of `ids` (ids that do not exist are skipped).
    pub fn results_by_id(&self, ids: &[i64]) -> Result<Vec<StoredResult>, StoreError> {
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            out.extend(self.query_results("WHERE r.id = ?1", params![id], "read a result")?);
        }
        Ok(out)
    }
}
