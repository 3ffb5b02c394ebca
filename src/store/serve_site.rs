//! What `utilgate site` reads of the service cases: every service case's marks (its newest
//! result and newest baseline move, so an unchanged case's page is not rebuilt) in one query,
//! one case's nights on a branch with the mean over repeats of every metric (the figures the
//! run reports show), a sweep's points per night, and the case's baseline moves. I/O on the
//! store's connection; decides nothing.

use std::collections::BTreeMap;

use jiff::Timestamp;

use super::db::{Store, ns_to_timestamp, parse_json, parse_text, timestamp_to_ns};
use super::error::StoreError;
use super::sql::params;
use super::types::RunId;
use crate::case::Verdict;
use crate::serve::{ServeKey, SweepAxis};

/// How far a service case's stored history reaches: when either moves, its page changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServeSeriesMarks {
    pub key: ServeKey,
    pub gpu_sku: String,
    /// The newest result of the case on any branch.
    pub last_result: i64,
    /// The newest baseline move of the case, if it ever had one.
    pub last_move: Option<i64>,
}

/// One stored night of a service case, as its page draws it.
#[derive(Debug, Clone, PartialEq)]
pub struct ServeSitePoint {
    pub result_id: i64,
    pub run_id: RunId,
    pub started_at: Timestamp,
    pub git_sha: Option<String>,
    pub verdict: Option<Verdict>,
    pub error: Option<String>,
    /// The mean over the night's repeats of every metric they hold (a sweep's are its
    /// points, so its means describe no one load: read `sweep` instead).
    pub means: BTreeMap<String, f64>,
    /// A sweep's files, in the order stored.
    pub sweep: Vec<SweepFile>,
    /// The stored decision (`compare::ServeDecision`), as stored.
    pub decision: Option<serde_json::Value>,
}

/// A sweep's file as the site reads it: its point on the sweep's axis, its interactivity
/// (tokens/s per user) and its throughput (tokens/s per GPU).
pub type SweepFile = (String, Option<f64>, Option<f64>);

/// A service case's baseline move, newest first as the page lists them.
#[derive(Debug, Clone, PartialEq)]
pub struct ServeSiteMove {
    pub result_id: i64,
    pub run_id: RunId,
    pub git_sha: Option<String>,
    pub kind: String,
    pub reason: String,
    pub moved_at: Timestamp,
}

type RawMarks = (
    i64,
    String,
    String,
    String,
    i64,
    i64,
    i64,
    String,
    String,
    i64,
    Option<i64>,
);

/// One row of `serve_site_moves`'s query: the move's id, its result, run and commit, its kind,
/// reason and time.
type RawMove = (i64, i64, i64, Option<String>, String, String, i64);

impl Store {
    /// Every service case and GPU SKU with a stored result, with its marks, in key order.
    pub fn serve_series_marks(&self) -> Result<Vec<ServeSeriesMarks>, StoreError> {
        let rows: Vec<RawMarks> = self
            .conn
            .prepare_cached(
                "SELECT s.id, s.suite, s.model, s.request_rate, s.max_concurrency, s.input_len,
                        s.output_len, s.gpu_sku, s.sweep,
                        (SELECT max(r.id) FROM serve_results r WHERE r.series_id = s.id),
                        (SELECT max(m.id) FROM serve_baseline_moves m WHERE m.series_id = s.id)
                 FROM serve_series s
                 ORDER BY s.suite, s.model, s.sweep, s.request_rate, s.max_concurrency,
                          s.input_len, s.output_len, s.gpu_sku",
            )
            .and_then(|mut stmt| {
                stmt.query_map([], |r| {
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
                        r.get::<_, Option<i64>>(9)?.unwrap_or(0),
                        r.get(10)?,
                    ))
                })?
                .collect::<super::sql::Result<Vec<_>>>()
            })
            .map_err(self.fail("list the stored service cases' marks"))?;
        let set = |v: i64| u64::try_from(v).ok().filter(|v| *v > 0);
        Ok(rows
            .into_iter()
            // A series with no result left (a copy may lack them) has nothing to show.
            .filter(|row| row.9 > 0)
            .map(
                |(_, suite, model, rate, conc, input, output, gpu_sku, sweep, last, mv)| {
                    ServeSeriesMarks {
                        key: ServeKey {
                            suite,
                            model,
                            request_rate: rate,
                            max_concurrency: set(conc),
                            input_len: set(input),
                            output_len: set(output),
                            sweep: SweepAxis::parse(&sweep),
                        },
                        gpu_sku,
                        last_result: last,
                        last_move: mv,
                    }
                },
            )
            .collect())
    }

    /// A service case's nights on one GPU SKU and `branch`, from `since` on, oldest first;
    /// none of a pull request's runs. Three queries whatever the number of nights.
    #[expect(
        clippy::too_many_lines,
        reason = "three queries over the same nights and their decoding, read in one place"
    )]
    pub fn serve_site_points(
        &self,
        key: &ServeKey,
        gpu_sku: &str,
        branch: &str,
        since: Option<Timestamp>,
    ) -> Result<Vec<ServeSitePoint>, StoreError> {
        let Some(series) = self.find_serve_series(key, gpu_sku)? else {
            return Ok(Vec::new());
        };
        let from = since
            .map(|t| timestamp_to_ns(&self.path, t))
            .transpose()?
            .unwrap_or(i64::MIN);
        let nights = format!(
            "FROM serve_results r JOIN runs u ON u.id = r.run_id
             WHERE r.series_id = ?1 AND u.branch = ?2 AND r.run_started_at_ns >= ?3 AND {}",
            super::pull_requests::not_for_a_pull_request("u")
        );
        let action = "read a service case's nights for the site";
        #[expect(
            clippy::type_complexity,
            reason = "one row of the query below, decoded after it"
        )]
        let raw: Vec<(
            i64,
            i64,
            i64,
            Option<String>,
            Option<String>,
            Option<String>,
            Option<String>,
        )> = self
            .conn
            .prepare_cached(&format!(
                "SELECT r.id, r.run_id, r.run_started_at_ns, u.git_sha, r.verdict, r.error,
                        r.decision_json {nights} ORDER BY r.run_started_at_ns, r.id"
            ))
            .and_then(|mut stmt| {
                stmt.query_map(params![series, branch, from], |r| {
                    Ok((
                        r.get(0)?,
                        r.get(1)?,
                        r.get(2)?,
                        r.get(3)?,
                        r.get(4)?,
                        r.get(5)?,
                        r.get(6)?,
                    ))
                })?
                .collect::<super::sql::Result<Vec<_>>>()
            })
            .map_err(self.fail(action))?;
        // The mean over repeats is the reports' figure (`pipeline::serve_stored`): each
        // metric averaged over the repeats that hold it.
        let means: Vec<(i64, String, f64)> = self
            .conn
            .prepare_cached(&format!(
                "SELECT m.result_id, m.metric, avg(m.value) FROM serve_metrics m
                 WHERE m.result_id IN (SELECT r.id {nights})
                 GROUP BY m.result_id, m.metric"
            ))
            .and_then(|mut stmt| {
                stmt.query_map(params![series, branch, from], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?))
                })?
                .collect::<super::sql::Result<Vec<_>>>()
            })
            .map_err(self.fail(action))?;
        let mut by_result: BTreeMap<i64, BTreeMap<String, f64>> = BTreeMap::new();
        for (id, metric, value) in means {
            by_result.entry(id).or_default().insert(metric, value);
        }
        let mut sweeps: BTreeMap<i64, Vec<SweepFile>> = BTreeMap::new();
        if key.sweep.is_some() {
            let points: Vec<(i64, String, Option<f64>, Option<f64>)> = self
                .conn
                .prepare_cached(&format!(
                    "SELECT p.result_id, p.point, p.interactivity_tok_s_user,
                            p.throughput_tok_s_gpu
                     FROM serve_sweep_points p
                     WHERE p.result_id IN (SELECT r.id {nights})
                     ORDER BY p.result_id, p.repeat"
                ))
                .and_then(|mut stmt| {
                    stmt.query_map(params![series, branch, from], |r| {
                        Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
                    })?
                    .collect::<super::sql::Result<Vec<_>>>()
                })
                .map_err(self.fail(action))?;
            for (id, point, inter, through) in points {
                sweeps.entry(id).or_default().push((point, inter, through));
            }
        }
        let path = &self.path;
        raw.into_iter()
            .map(
                |(id, run_id, started_ns, git_sha, verdict, error, decision)| {
                    Ok(ServeSitePoint {
                        result_id: id,
                        run_id: RunId(run_id),
                        started_at: ns_to_timestamp(
                            path,
                            "serve_results.run_started_at_ns",
                            id,
                            started_ns,
                        )?,
                        git_sha,
                        verdict: verdict
                            .map(|v| parse_text(path, "serve_results.verdict", id, &v))
                            .transpose()?,
                        error,
                        means: by_result.remove(&id).unwrap_or_default(),
                        sweep: sweeps.remove(&id).unwrap_or_default(),
                        decision: parse_json(path, "serve_results.decision_json", id, decision)?,
                    })
                },
            )
            .collect()
    }

    /// The runs that hold a service result (a run of service cases only has no step result,
    /// which is what a run's summary counts).
    pub fn runs_with_serve_results(&self) -> Result<std::collections::BTreeSet<i64>, StoreError> {
        self.conn
            .prepare_cached("SELECT DISTINCT run_id FROM serve_results")
            .and_then(|mut stmt| {
                stmt.query_map([], |r| r.get(0))?
                    .collect::<super::sql::Result<_>>()
            })
            .map_err(self.fail("list the runs with service results"))
    }

    /// A service case's baseline moves that count (none onto a pull request's run), newest
    /// first: the first is its pinned baseline.
    pub fn serve_site_moves(
        &self,
        key: &ServeKey,
        gpu_sku: &str,
    ) -> Result<Vec<ServeSiteMove>, StoreError> {
        let Some(series) = self.find_serve_series(key, gpu_sku)? else {
            return Ok(Vec::new());
        };
        let raw: Vec<RawMove> = self
            .conn
            .prepare_cached(&format!(
                "SELECT m.id, m.result_id, r.run_id, u.git_sha, m.kind, m.reason, m.moved_at_ns
                 FROM serve_baseline_moves m
                 JOIN serve_results r ON r.id = m.result_id
                 JOIN runs u ON u.id = r.run_id
                 WHERE m.series_id = ?1 AND {}
                 ORDER BY m.id DESC",
                super::pull_requests::a_serve_move_that_counts("m")
            ))
            .and_then(|mut stmt| {
                stmt.query_map(params![series], |r| {
                    Ok((
                        r.get(0)?,
                        r.get(1)?,
                        r.get(2)?,
                        r.get(3)?,
                        r.get(4)?,
                        r.get(5)?,
                        r.get(6)?,
                    ))
                })?
                .collect::<super::sql::Result<Vec<_>>>()
            })
            .map_err(self.fail("read a service case's baseline moves"))?;
        raw.into_iter()
            .map(|(id, result_id, run_id, git_sha, kind, reason, moved_ns)| {
                Ok(ServeSiteMove {
                    result_id,
                    run_id: RunId(run_id),
                    git_sha,
                    kind,
                    reason,
                    moved_at: ns_to_timestamp(
                        &self.path,
                        "serve_baseline_moves.moved_at_ns",
                        id,
                        moved_ns,
                    )?,
                })
            })
            .collect()
    }
}
