//! Service cases in the store (migration 5, see `schema.rs`): writing a run of service results
//! with their repeats' raw result objects and metric rows, promoting their baselines in the same
//! transaction, and reading a case's baseline lineage and a run's service results back. Does I/O
//! on the store; decides nothing (verdicts and promotions arrive from the caller).

use std::collections::BTreeMap;

use super::sql::{OptionalExtension, Row, Transaction, params};
use jiff::Timestamp;
use serde::Serialize;

use super::db::{Store, ns_to_timestamp, parse_json, parse_text, u64_to_i64};
use super::error::StoreError;
use super::types::{BaselineMoveKind, RunId};
use crate::case::Verdict;
use crate::serve::{ServeKey, SweepAxis, SweepPoint};

/// One repeat of a service case to store: the load generator's result object as written.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct NewServeRepeat {
    /// The file (and line of a JSONL file) it came from.
    pub source: String,
    pub schema: String,
    /// The result object, serialised as JSON: every field of the file, unknown keys included.
    pub raw_json: String,
    /// The metrics read from it, by canonical name.
    pub metrics: BTreeMap<String, f64>,
    /// Where the file lies in its sweep, for a sweep's files.
    #[serde(default)]
    pub sweep_point: Option<SweepPoint>,
}

/// One service case of a run to store (also kept whole in a rescue file).
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct NewServeCase {
    pub key: ServeKey,
    pub verdict: Option<Verdict>,
    pub error: Option<String>,
    pub settings_json: Option<serde_json::Value>,
    pub decision_json: Option<serde_json::Value>,
    pub estimate_json: Option<serde_json::Value>,
    pub stderr_tail: Option<String>,
    pub repeats: Vec<NewServeRepeat>,
    /// Move this case's baseline to this result in the run's transaction (the caller decides).
    pub promote: bool,
}

/// A stored repeat of a service case.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StoredServeRepeat {
    pub repeat: u32,
    pub source: String,
    pub schema: String,
    #[serde(skip)]
    pub raw_json: String,
    pub metrics: BTreeMap<String, f64>,
    pub sweep_point: Option<SweepPoint>,
}

/// A stored service result.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredServeCase {
    pub result_id: i64,
    pub run_id: RunId,
    pub run_started_at: Timestamp,
    pub key: ServeKey,
    pub gpu_sku: String,
    pub verdict: Option<Verdict>,
    pub error: Option<String>,
    pub settings_json: Option<serde_json::Value>,
    pub decision_json: Option<serde_json::Value>,
    pub estimate_json: Option<serde_json::Value>,
    pub stderr_tail: Option<String>,
    pub repeats: Vec<StoredServeRepeat>,
}

const CASE_SELECT: &str = "SELECT r.id, r.run_id, r.run_started_at_ns, r.verdict, r.error,
        r.settings_json, r.decision_json, r.estimate_json, r.stderr_tail,
        s.suite, s.model, s.request_rate, s.max_concurrency, s.input_len, s.output_len, s.gpu_sku,
        s.sweep
     FROM serve_results r JOIN serve_series s ON s.id = r.series_id";

struct RawCase {
    id: i64,
    run_id: i64,
    started_ns: i64,
    verdict: Option<String>,
    error: Option<String>,
    settings: Option<String>,
    decision: Option<String>,
    estimate: Option<String>,
    stderr_tail: Option<String>,
    suite: String,
    model: String,
    rate: String,
    conc: i64,
    input_len: i64,
    output_len: i64,
    gpu_sku: String,
    sweep: String,
}

impl RawCase {
    fn from_row(row: &Row<'_>) -> super::sql::Result<RawCase> {
        Ok(RawCase {
            id: row.get("id")?,
            run_id: row.get("run_id")?,
            started_ns: row.get("run_started_at_ns")?,
            verdict: row.get("verdict")?,
            error: row.get("error")?,
            settings: row.get("settings_json")?,
            decision: row.get("decision_json")?,
            estimate: row.get("estimate_json")?,
            stderr_tail: row.get("stderr_tail")?,
            suite: row.get("suite")?,
            model: row.get("model")?,
            rate: row.get("request_rate")?,
            conc: row.get("max_concurrency")?,
            input_len: row.get("input_len")?,
            output_len: row.get("output_len")?,
            gpu_sku: row.get("gpu_sku")?,
            sweep: row.get("sweep")?,
        })
    }
}

/// 0 in the table is "not set".
fn opt(v: i64) -> Option<u64> {
    u64::try_from(v).ok().filter(|v| *v > 0)
}

fn zero(path: &std::path::Path, what: &'static str, v: Option<u64>) -> Result<i64, StoreError> {
    v.map_or(Ok(0), |v| u64_to_i64(path, what, v))
}

/// The swept axis as the series stores it ('' for a single point).
fn sweep_name(key: &ServeKey) -> &'static str {
    key.sweep.map_or("", SweepAxis::as_str)
}

fn series_id(
    tx: &Transaction<'_>,
    path: &std::path::Path,
    key: &ServeKey,
    gpu_sku: &str,
) -> Result<i64, StoreError> {
    let fail = |e| StoreError::query(path, "write a service case", e);
    let values = params![
        key.suite,
        key.model,
        key.request_rate,
        zero(path, "max concurrency", key.max_concurrency)?,
        zero(path, "input length", key.input_len)?,
        zero(path, "output length", key.output_len)?,
        gpu_sku,
        sweep_name(key)
    ];
    tx.execute(
        "INSERT OR IGNORE INTO serve_series
             (suite, model, request_rate, max_concurrency, input_len, output_len, gpu_sku, sweep)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        values,
    )
    .map_err(fail)?;
    tx.query_row(
        "SELECT id FROM serve_series WHERE suite = ?1 AND model = ?2 AND request_rate = ?3
           AND max_concurrency = ?4 AND input_len = ?5 AND output_len = ?6 AND gpu_sku = ?7
           AND sweep = ?8",
        values,
        |r| r.get(0),
    )
    .map_err(fail)
}

/// The run row the service cases of `Store::write_run` belong to, as it was written.
pub(super) struct ServeRunRow<'a> {
    pub(super) id: RunId,
    pub(super) started_ns: i64,
    pub(super) gpu_sku: &'a str,
    /// Why a flagged case's baseline moves, and when (the run's end).
    pub(super) promote_reason: &'a str,
    pub(super) moved_ns: i64,
}

/// Writes the service cases of `run` in the caller's transaction (`Store::write_run`): each
/// case, its repeats and metric rows, and the baseline move of every case flagged `promote`
/// (kind `promote`).
pub(super) fn write_serve_cases(
    tx: &Transaction<'_>,
    path: &std::path::Path,
    run: &ServeRunRow<'_>,
    cases: &[NewServeCase],
) -> Result<(), StoreError> {
    let (run_id, started_ns, gpu_sku) = (run.id.0, run.started_ns, run.gpu_sku);
    let (reason, moved_ns) = (run.promote_reason, run.moved_ns);
    let fail = |action| move |e| StoreError::query(path, action, e);
    for case in cases {
        let series = series_id(tx, path, &case.key, gpu_sku)?;
        tx.execute(
            "INSERT INTO serve_results (run_id, series_id, run_started_at_ns, verdict, error,
                 settings_json, decision_json, estimate_json, stderr_tail)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            params![
                run_id,
                series,
                started_ns,
                case.verdict.map(Verdict::as_str),
                case.error,
                case.settings_json
                    .as_ref()
                    .map(serde_json::Value::to_string),
                case.decision_json
                    .as_ref()
                    .map(serde_json::Value::to_string),
                case.estimate_json
                    .as_ref()
                    .map(serde_json::Value::to_string),
                case.stderr_tail,
            ],
        )
        .map_err(fail("write a service result"))?;
        let result_id = tx
            .last_insert_rowid()
            .map_err(fail("write a service result"))?;
        for (i, rep) in case.repeats.iter().enumerate() {
            let repeat = i64::try_from(i).unwrap_or(i64::MAX);
            tx.execute(
                "INSERT INTO serve_repeats (result_id, repeat, source, schema_name, raw_json)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                params![result_id, repeat, rep.source, rep.schema, rep.raw_json],
            )
            .map_err(fail("write a service repeat"))?;
            let mut add = tx
                .prepare_cached(
                    "INSERT INTO serve_metrics (result_id, repeat, metric, value)
                     VALUES (?1, ?2, ?3, ?4)",
                )
                .map_err(fail("write service metrics"))?;
            for (metric, value) in rep.metrics.iter().filter(|(_, v)| v.is_finite()) {
                add.execute(params![result_id, repeat, metric, value])
                    .map_err(fail("write service metrics"))?;
            }
            if let Some(p) = &rep.sweep_point {
                tx.execute(
                    "INSERT INTO serve_sweep_points (result_id, repeat, point, sweep_repeat, gpus,
                         interactivity_tok_s_user, throughput_tok_s_gpu)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                    params![
                        result_id,
                        repeat,
                        p.point,
                        p.sweep_repeat,
                        p.gpus,
                        p.interactivity_tok_s_user.filter(|v| v.is_finite()),
                        p.throughput_tok_s_gpu.filter(|v| v.is_finite())
                    ],
                )
                .map_err(fail("write a sweep point"))?;
            }
        }
        if case.promote {
            tx.execute(
                "INSERT INTO serve_baseline_moves (series_id, result_id, kind, reason, moved_at_ns)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                params![
                    series,
                    result_id,
                    BaselineMoveKind::Promote.as_str(),
                    reason,
                    moved_ns
                ],
            )
            .map_err(fail("move a service baseline"))?;
        }
    }
    Ok(())
}

impl Store {
    /// The id of a service case's series on `gpu_sku`, when it has one (a figure out of the
    /// store's range has none). Read only: `series_id` creates one as a run is written.
    pub(super) fn find_serve_series(
        &self,
        key: &ServeKey,
        gpu_sku: &str,
    ) -> Result<Option<i64>, StoreError> {
        let (Ok(conc), Ok(input), Ok(output)) = (
            zero(&self.path, "max concurrency", key.max_concurrency),
            zero(&self.path, "input length", key.input_len),
            zero(&self.path, "output length", key.output_len),
        ) else {
            return Ok(None);
        };
        self.conn
            .prepare_cached(
                "SELECT id FROM serve_series WHERE suite = ?1 AND model = ?2 AND request_rate = ?3
                   AND max_concurrency = ?4 AND input_len = ?5 AND output_len = ?6
                   AND gpu_sku = ?7 AND sweep = ?8",
            )
            .and_then(|mut stmt| {
                stmt.query_row(
                    params![
                        key.suite,
                        key.model,
                        key.request_rate,
                        conc,
                        input,
                        output,
                        gpu_sku,
                        sweep_name(key)
                    ],
                    |r| r.get(0),
                )
                .optional()
            })
            .map_err(self.fail("read a service series"))
    }

    /// The baseline of a service case on `gpu_sku` and its lineage: the results earlier
    /// promotions pointed at, back to the last accept or import, at most `limit` of them; a
    /// promotion onto a pull request's run never counts.
    pub fn serve_lineage(
        &self,
        key: &ServeKey,
        gpu_sku: &str,
        limit: usize,
    ) -> Result<(Option<StoredServeCase>, Vec<StoredServeCase>), StoreError> {
        let Some(series) = self.find_serve_series(key, gpu_sku)? else {
            return Ok((None, Vec::new()));
        };
        let moves: Vec<(i64, String)> = self
            .conn
            .prepare_cached(&format!(
                "SELECT m.result_id, m.kind FROM serve_baseline_moves m
                 WHERE m.series_id = ?1 AND {}
                 ORDER BY m.id DESC",
                super::pull_requests::a_serve_move_that_counts("m")
            ))
            .and_then(|mut stmt| {
                stmt.query_map(params![series], |r| Ok((r.get(0)?, r.get(1)?)))?
                    .collect()
            })
            .map_err(self.fail("read a service baseline"))?;
        let Some((current, kind)) = moves.first().cloned() else {
            return Ok((None, Vec::new()));
        };
        let mut wanted = Vec::new();
        if kind == BaselineMoveKind::Promote.as_str() {
            for (id, kind) in &moves[1..] {
                if wanted.len() >= limit {
                    break;
                }
                if *id != current && !wanted.contains(id) {
                    wanted.push(*id);
                }
                if kind != BaselineMoveKind::Promote.as_str() {
                    break;
                }
            }
        }
        let baseline = self.serve_case_by_id(current)?;
        let history = wanted
            .into_iter()
            .map(|id| self.serve_case_by_id(id))
            .collect::<Result<Vec<_>, _>>()?
            .into_iter()
            .flatten()
            .collect();
        Ok((baseline, history))
    }

    /// The baseline of a service case on `gpu_sku` as of `as_of` (the result its newest move
    /// before then points at): what a stored run was judged against.
    pub fn serve_baseline_as_of(
        &self,
        key: &ServeKey,
        gpu_sku: &str,
        as_of: jiff::Timestamp,
    ) -> Result<Option<StoredServeCase>, StoreError> {
        let Some(series) = self.find_serve_series(key, gpu_sku)? else {
            return Ok(None);
        };
        let before = super::db::timestamp_to_ns(&self.path, as_of)?;
        let id: Option<i64> = self
            .conn
            .prepare_cached(&format!(
                "SELECT m.result_id FROM serve_baseline_moves m
                 WHERE m.series_id = ?1 AND m.moved_at_ns < ?2 AND {}
                 ORDER BY m.id DESC LIMIT 1",
                super::pull_requests::a_serve_move_that_counts("m")
            ))
            .and_then(|mut stmt| {
                stmt.query_row(params![series, before], |r| r.get(0))
                    .optional()
            })
            .map_err(self.fail("read a service baseline"))?;
        match id {
            Some(id) => self.serve_case_by_id(id),
            None => Ok(None),
        }
    }

    /// Whether some service case's current baseline is a result of `run`.
    pub fn serve_run_is_baseline(&self, run: RunId) -> Result<bool, StoreError> {
        let n: i64 = self
            .conn
            .prepare_cached(&format!(
                "SELECT COUNT(*) FROM serve_results r
                 JOIN serve_baseline_moves m ON m.result_id = r.id
                 WHERE r.run_id = ?1 AND {} AND m.id = (
                     SELECT MAX(n.id) FROM serve_baseline_moves n
                     WHERE n.series_id = m.series_id AND {})",
                super::pull_requests::a_serve_move_that_counts("m"),
                super::pull_requests::a_serve_move_that_counts("n")
            ))
            .and_then(|mut stmt| stmt.query_row(params![run.0], |r| r.get(0)))
            .map_err(self.fail("read whether a run holds a service baseline"))?;
        Ok(n > 0)
    }

    /// The service results of one run, in the order they were written.
    pub fn serve_cases_of_run(&self, run: RunId) -> Result<Vec<StoredServeCase>, StoreError> {
        self.query_serve_cases("WHERE r.run_id = ?1 ORDER BY r.id", run.0)
    }

    /// The latest `limit` results of a service case on `gpu_sku`, oldest first (history
    /// charts).
    pub fn serve_case_history(
        &self,
        key: &ServeKey,
        gpu_sku: &str,
        current: RunId,
        limit: usize,
    ) -> Result<Vec<StoredServeCase>, StoreError> {
        let Some(series) = self.find_serve_series(key, gpu_sku)? else {
            return Ok(Vec::new());
        };
        // The run being reported, and no other run measured for a pull request.
        let sql = format!(
            "{CASE_SELECT} WHERE r.series_id = ?1
               AND (r.run_id = ?3 OR EXISTS (SELECT 1 FROM runs u WHERE u.id = r.run_id AND {}))
             ORDER BY r.run_started_at_ns DESC, r.id DESC LIMIT ?2",
            super::pull_requests::not_for_a_pull_request("u")
        );
        let raw: Vec<RawCase> = self
            .conn
            .prepare_cached(&sql)
            .and_then(|mut stmt| {
                stmt.query_map(
                    params![series, i64::try_from(limit).unwrap_or(i64::MAX), current.0],
                    RawCase::from_row,
                )?
                .collect()
            })
            .map_err(self.fail("read a service case's history"))?;
        let mut out = raw
            .into_iter()
            .map(|r| self.decode_serve_case(r))
            .collect::<Result<Vec<_>, _>>()?;
        out.reverse();
        Ok(out)
    }

    fn serve_case_by_id(&self, id: i64) -> Result<Option<StoredServeCase>, StoreError> {
        Ok(self.query_serve_cases("WHERE r.id = ?1", id)?.pop())
    }

    fn query_serve_cases(
        &self,
        filter: &str,
        arg: i64,
    ) -> Result<Vec<StoredServeCase>, StoreError> {
        let sql = format!("{CASE_SELECT} {filter}");
        let raw: Vec<RawCase> = self
            .conn
            .prepare_cached(&sql)
            .and_then(|mut stmt| stmt.query_map([arg], RawCase::from_row)?.collect())
            .map_err(self.fail("read service results"))?;
        raw.into_iter().map(|r| self.decode_serve_case(r)).collect()
    }

    fn decode_serve_case(&self, r: RawCase) -> Result<StoredServeCase, StoreError> {
        let path = &self.path;
        let verdict = r
            .verdict
            .as_deref()
            .map(|v| parse_text::<Verdict>(path, "serve_results.verdict", r.id, v))
            .transpose()?;
        Ok(StoredServeCase {
            result_id: r.id,
            run_id: RunId(r.run_id),
            run_started_at: ns_to_timestamp(
                path,
                "serve_results.run_started_at_ns",
                r.id,
                r.started_ns,
            )?,
            key: ServeKey {
                suite: r.suite,
                model: r.model,
                request_rate: r.rate,
                max_concurrency: opt(r.conc),
                input_len: opt(r.input_len),
                output_len: opt(r.output_len),
                sweep: SweepAxis::parse(&r.sweep),
            },
            gpu_sku: r.gpu_sku,
            verdict,
            error: r.error,
            settings_json: parse_json(path, "settings_json", r.id, r.settings)?,
            decision_json: parse_json(path, "decision_json", r.id, r.decision)?,
            estimate_json: parse_json(path, "estimate_json", r.id, r.estimate)?,
            stderr_tail: r.stderr_tail,
            repeats: self.serve_repeats(r.id)?,
        })
    }

    fn serve_repeats(&self, result_id: i64) -> Result<Vec<StoredServeRepeat>, StoreError> {
        let mut repeats: Vec<StoredServeRepeat> = self
            .conn
            .prepare_cached(
                "SELECT repeat, source, schema_name, raw_json FROM serve_repeats
                 WHERE result_id = ?1 ORDER BY repeat",
            )
            .and_then(|mut stmt| {
                stmt.query_map([result_id], |row| {
                    Ok(StoredServeRepeat {
                        repeat: row.get("repeat")?,
                        source: row.get("source")?,
                        schema: row.get("schema_name")?,
                        raw_json: row.get("raw_json")?,
                        metrics: BTreeMap::new(),
                        sweep_point: None,
                    })
                })?
                .collect()
            })
            .map_err(self.fail("read service repeats"))?;
        let rows: Vec<(u32, String, f64)> = self
            .conn
            .prepare_cached("SELECT repeat, metric, value FROM serve_metrics WHERE result_id = ?1")
            .and_then(|mut stmt| {
                stmt.query_map([result_id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                    .collect()
            })
            .map_err(self.fail("read service metrics"))?;
        for (repeat, metric, value) in rows {
            if let Some(rep) = repeats.iter_mut().find(|r| r.repeat == repeat) {
                rep.metrics.insert(metric, value);
            }
        }
        let points: Vec<(u32, SweepPoint)> = self
            .conn
            .prepare_cached(
                "SELECT repeat, point, sweep_repeat, gpus, interactivity_tok_s_user,
                        throughput_tok_s_gpu
                 FROM serve_sweep_points WHERE result_id = ?1",
            )
            .and_then(|mut stmt| {
                stmt.query_map([result_id], |r| {
                    Ok((
                        r.get("repeat")?,
                        SweepPoint {
                            point: r.get("point")?,
                            sweep_repeat: r.get("sweep_repeat")?,
                            gpus: r.get("gpus")?,
                            interactivity_tok_s_user: r.get("interactivity_tok_s_user")?,
                            throughput_tok_s_gpu: r.get("throughput_tok_s_gpu")?,
                        },
                    ))
                })?
                .collect()
            })
            .map_err(self.fail("read sweep points"))?;
        for (repeat, point) in points {
            if let Some(rep) = repeats.iter_mut().find(|r| r.repeat == repeat) {
                rep.sweep_point = Some(point);
            }
        }
        Ok(repeats)
    }

    /// Whether any service result exists (cheap check for commands that show both kinds).
    pub fn has_serve_results(&self) -> Result<bool, StoreError> {
        self.conn
            .query_row("SELECT 1 FROM serve_results LIMIT 1", [], |_| Ok(()))
            .optional()
            .map(|o| o.is_some())
            .map_err(self.fail("read service results"))
    }
}
