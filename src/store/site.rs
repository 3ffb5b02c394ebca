//! What `utilgate site` reads: every case's marks (how much history it has, so an unchanged
//! case's page is not rebuilt) in one query, and one case's measured nights on a branch with
//! the verdict's trust, oldest first. Results and baseline moves are append-only, so a case
//! whose newest result and newest move are those seen before has the same pages. I/O on the
//! store's connection.

use jiff::Timestamp;

use super::db::{Store, ns_to_timestamp, parse_text, timestamp_to_ns};
use super::error::StoreError;
use super::sql::params;
use super::types::RunId;
use crate::case::{CaseKey, Verdict};

/// How far a case's stored history reaches: when any of these moves, its pages change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeriesMarks {
    pub key: CaseKey,
    pub gpu_sku: String,
    /// The newest result of the case on any branch.
    pub last_result: i64,
    /// The newest baseline move of the case, if it ever had one.
    pub last_move: Option<i64>,
}

/// One measured night of a case, as its chart draws it.
#[derive(Debug, Clone, PartialEq)]
pub struct SitePoint {
    pub result_id: i64,
    pub run_id: RunId,
    pub started_at: Timestamp,
    pub git_sha: Option<String>,
    pub verdict: Option<Verdict>,
    pub median_ms: Option<f64>,
    pub utilisation: f64,
    /// The GPU state or the machine canary made the measurement untrusted.
    pub untrusted: bool,
    /// The verdict's per-process noise estimate, percent.
    pub noise_pct: Option<f64>,
}

/// What a night's stored decision tells its chart; every other field is skipped unread.
#[derive(Debug, Default, serde::Deserialize)]
struct DecisionMarks {
    #[serde(default)]
    untrusted: Option<bool>,
    #[serde(default)]
    noise_pct: Option<f64>,
}

type RawPoint = (
    i64,
    i64,
    i64,
    Option<String>,
    Option<String>,
    Option<f64>,
    f64,
    Option<String>,
);

impl Store {
    /// Every case key and GPU SKU with a stored result, with its marks, in key order.
    pub fn series_marks(&self) -> Result<Vec<SeriesMarks>, StoreError> {
        let action = "list the stored cases' marks";
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT s.id, s.suite, s.model, s.precision, s.phase, s.batch, s.context,
                        s.gpu_sku, s.axes,
                        (SELECT max(r.id) FROM results r WHERE r.series_id = s.id),
                        (SELECT max(m.id) FROM baseline_moves m WHERE m.series_id = s.id),
                        s.tp, s.ep
                 FROM series s
                 ORDER BY s.suite, s.model, s.precision, s.phase, s.batch, s.context, s.axes,
                          s.tp, s.ep, s.gpu_sku",
            )
            .map_err(self.fail(action))?;
        #[expect(
            clippy::type_complexity,
            reason = "one row of the query above, decoded below"
        )]
        let rows: Vec<(
            i64,
            String,
            String,
            String,
            String,
            i64,
            i64,
            String,
            String,
            Option<i64>,
            Option<i64>,
            i64,
            i64,
        )> = stmt
            .query_map([], |r| {
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
                    r.get(10)?,
                    r.get(11)?,
                    r.get(12)?,
                ))
            })
            .and_then(Iterator::collect::<super::sql::Result<Vec<_>>>)
            .map_err(self.fail(action))?;
        let path = &self.path;
        rows.into_iter()
            // A series row with no result left (none is ever deleted, but a copy may lack
            // them) has nothing to show.
            .filter_map(|row| row.9.map(|last| (row, last)))
            .map(
                |(
                    (id, suite, model, precision, phase, batch, context, sku, axes, _, mv, tp, ep),
                    last,
                )| {
                    Ok(SeriesMarks {
                        key: CaseKey {
                            suite,
                            model,
                            precision,
                            phase: parse_text(path, "phase", id, &phase)?,
                            batch: super::db::i64_to_u64(path, "batch", id, batch)?,
                            context: super::db::i64_to_u64(path, "context", id, context)?,
                            axes: parse_text(path, "axes", id, &axes)?,
                            tp: super::db::i64_to_u64(path, "tp", id, tp)?,
                            ep: super::db::i64_to_u64(path, "ep", id, ep)?,
                        },
                        gpu_sku: sku,
                        last_result: last,
                        last_move: mv,
                    })
                },
            )
            .collect()
    }

    /// A case's measured nights (a positive utilisation) on one GPU SKU and `branch`, from
    /// `since` on, oldest first; none of a pull request's runs. With `after_result`, only the
    /// results stored after that one (a larger id, whatever night they were measured on): the
    /// nights a site has not drawn yet, since results are append-only and a run's facts never
    /// change. The series' index holds the id, so the nights already drawn are skipped without
    /// reading their rows.
    pub fn site_points(
        &self,
        key: &CaseKey,
        gpu_sku: &str,
        branch: &str,
        since: Option<Timestamp>,
        after_result: Option<i64>,
    ) -> Result<Vec<SitePoint>, StoreError> {
        let Some(series) = self.series_id(key, gpu_sku)? else {
            return Ok(Vec::new());
        };
        let from = since
            .map(|t| timestamp_to_ns(&self.path, t))
            .transpose()?
            .unwrap_or(i64::MIN);
        let action = "read a case's nights for the site";
        let raw: Vec<RawPoint> = self
            .conn
            .prepare_cached(&format!(
                "SELECT r.id, r.run_id, u.started_at_ns, u.git_sha, r.verdict, r.median_ms,
                        r.utilisation, r.decision_json
                 FROM results r JOIN runs u ON u.id = r.run_id
                 WHERE r.series_id = ?1 AND u.branch = ?2 AND r.run_started_at_ns >= ?3
                   AND r.id > ?4 AND r.utilisation > 0 AND {}
                 ORDER BY r.run_started_at_ns, r.id",
                super::pull_requests::not_for_a_pull_request("u")
            ))
            .and_then(|mut stmt| {
                stmt.query_map(
                    params![series, branch, from, after_result.unwrap_or(0)],
                    |r| {
                        Ok((
                            r.get(0)?,
                            r.get(1)?,
                            r.get(2)?,
                            r.get(3)?,
                            r.get(4)?,
                            r.get(5)?,
                            r.get(6)?,
                            r.get(7)?,
                        ))
                    },
                )?
                .collect::<super::sql::Result<Vec<_>>>()
            })
            .map_err(self.fail(action))?;
        raw.into_iter().map(|r| self.decode_point(r)).collect()
    }

    fn decode_point(&self, raw: RawPoint) -> Result<SitePoint, StoreError> {
        let (id, run_id, started_ns, git_sha, verdict, median_ms, utilisation, decision) = raw;
        let path = &self.path;
        // The two fields a chart reads, not the whole decision as a tree (it was a third of
        // what reading a night cost).
        let marks: DecisionMarks = decision
            .map(|t| serde_json::from_str(&t))
            .transpose()
            .map_err(|source| StoreError::Json {
                path: path.to_owned(),
                column: "results.decision_json",
                row: id,
                source,
            })?
            .unwrap_or_default();
        Ok(SitePoint {
            result_id: id,
            run_id: RunId(run_id),
            started_at: ns_to_timestamp(path, "runs.started_at_ns", run_id, started_ns)?,
            git_sha,
            verdict: verdict
                .map(|v| parse_text(path, "results.verdict", id, &v))
                .transpose()?,
            median_ms,
            utilisation,
            untrusted: marks.untrusted == Some(true),
            noise_pct: marks.noise_pct,
        })
    }
}
