//! A case's results as their summary columns (median, utilisation, verdict, environment), never
//! their sample blobs: what a trend line and the nightly history read. Every query is bounded in
//! SQL (the case's series, the branch, a time bound, a `LIMIT`) on the series-and-time index, so
//! its cost is what it shows, not the store's size. Does I/O on the store.

use std::collections::BTreeMap;

use jiff::Timestamp;

use super::db::{Store, ns_to_timestamp, parse_text, timestamp_to_ns};
use super::error::StoreError;
use super::pull_requests::not_for_a_pull_request;
use super::sql::params;
use super::types::RunId;
use crate::case::{CaseKey, Verdict};

/// One stored result's summary columns, with the run facts a history line shows.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredSummary {
    pub id: i64,
    pub run_id: RunId,
    /// When the run that produced this result started.
    pub started_at: Timestamp,
    pub git_sha: Option<String>,
    pub branch: Option<String>,
    pub verdict: Option<Verdict>,
    pub median_ms: Option<f64>,
    pub utilisation: Option<f64>,
    pub env: BTreeMap<String, String>,
    pub gpu_state_json: Option<serde_json::Value>,
}

const SUMMARY_SELECT: &str = "\
SELECT r.id, r.run_id, u.started_at_ns, u.git_sha, u.branch, r.verdict, r.median_ms,
       r.utilisation, r.env_json, r.gpu_state_json
FROM results r
JOIN runs u ON u.id = r.run_id";

type RawSummary = (
    i64,
    i64,
    i64,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<f64>,
    Option<f64>,
    String,
    Option<String>,
);

impl Store {
    /// A case's nights on one GPU SKU and `branch`: measured (a positive utilisation, or a step
    /// time where the night has no floor) and judged (not `error` or `invalid`), none of a pull
    /// request's runs, newest first, at most `limit` of them.
    pub fn case_nights(
        &self,
        key: &CaseKey,
        gpu_sku: &str,
        branch: &str,
        limit: usize,
    ) -> Result<Vec<StoredSummary>, StoreError> {
        let Some(series) = self.series_id(key, gpu_sku)? else {
            return Ok(Vec::new());
        };
        self.query_summaries(
            // A night without a floor (an imported history) is read by its step time.
            &format!(
                "WHERE r.series_id = ?1 AND u.branch = ?2
                   AND (r.utilisation > 0 OR (r.utilisation IS NULL AND r.median_ms > 0))
                   AND (r.verdict IS NULL OR r.verdict NOT IN ('error', 'invalid')) AND {}
                 ORDER BY r.run_started_at_ns DESC, r.id DESC LIMIT ?3",
                not_for_a_pull_request("u")
            ),
            params![series, branch, limit_value(limit)],
            "read a case's nightly history",
        )
    }

    /// A case's trend on one GPU SKU up to run `run_id` (started at `until`, when known): that
    /// run's result
    /// and the measured results before it on `branch` (any branch without one), none of a pull
    /// request's runs, newest first,
    /// at most `limit` of them.
    pub fn case_trend(
        &self,
        key: &CaseKey,
        gpu_sku: &str,
        (run_id, until): (RunId, Option<Timestamp>),
        branch: Option<&str>,
        limit: usize,
    ) -> Result<Vec<StoredSummary>, StoreError> {
        let Some(series) = self.series_id(key, gpu_sku)? else {
            return Ok(Vec::new());
        };
        let until = until
            .map(|t| timestamp_to_ns(&self.path, t))
            .transpose()?
            .unwrap_or(i64::MAX);
        self.query_summaries(
            // A result that errored (a harness that died after some repeats) has a figure,
            // but not one of a finished measurement: it is no point of the trend.
            &format!(
                "WHERE r.series_id = ?1 AND r.run_started_at_ns <= ?2 AND r.median_ms IS NOT NULL
                   AND r.error IS NULL AND (r.verdict IS NULL OR r.verdict <> 'error')
                   AND (r.run_id = ?3
                        OR (r.run_id < ?3 AND (?4 IS NULL OR u.branch = ?4) AND {}))
                 ORDER BY r.run_started_at_ns DESC, r.id DESC LIMIT ?5",
                not_for_a_pull_request("u")
            ),
            params![series, until, run_id.0, branch, limit_value(limit)],
            "read a case's trend",
        )
    }

    fn query_summaries(
        &self,
        tail: &str,
        params: impl super::sql::Params,
        action: &'static str,
    ) -> Result<Vec<StoredSummary>, StoreError> {
        let sql = format!("{SUMMARY_SELECT} {tail}");
        let raw: Vec<RawSummary> = self
            .conn
            .prepare_cached(&sql)
            .and_then(|mut stmt| {
                stmt.query_map(params, |r| {
                    Ok((
                        r.get(0)?,
                        r.get(1)?,
                        r.get(2)?,
                        r.get(3)?,
                        r.get(4)?,
                        r.get(5)?,
                        r.get(6)?,
                        r.get(7)?,
                        r.get(8)?,
                        r.get(9)?,
                    ))
                })?
                .collect::<super::sql::Result<Vec<_>>>()
            })
            .map_err(self.fail(action))?;
        raw.into_iter().map(|r| self.decode_summary(r)).collect()
    }

    fn decode_summary(&self, raw: RawSummary) -> Result<StoredSummary, StoreError> {
        let (id, run_id, started_ns, git_sha, branch, verdict, median_ms, utilisation, env, gpu) =
            raw;
        let path = &self.path;
        let env = serde_json::from_str(&env).map_err(|source| StoreError::Json {
            path: path.clone(),
            column: "env_json",
            row: id,
            source,
        })?;
        Ok(StoredSummary {
            id,
            run_id: RunId(run_id),
            started_at: ns_to_timestamp(path, "runs.started_at_ns", run_id, started_ns)?,
            git_sha,
            branch,
            verdict: verdict
                .map(|v| parse_text(path, "results.verdict", id, &v))
                .transpose()?,
            median_ms,
            utilisation,
            env,
            gpu_state_json: super::db::parse_json(path, "gpu_state_json", id, gpu)?,
        })
    }
}

fn limit_value(limit: usize) -> i64 {
    i64::try_from(limit).unwrap_or(i64::MAX)
}
