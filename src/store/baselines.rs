//! Baseline pointers: reading the current one per case and GPU SKU, moving them (accept,
//! import), and the history of every move, which is never deleted. A promotion onto a pull
//! request's run never counts as a baseline (a pull request's store, copied in, may hold one).
//! Does I/O on the store.

use super::sql::{OptionalExtension, Row, TransactionBehavior, params};

use super::db::{Store, i64_to_u64, ns_to_timestamp, parse_text, timestamp_to_ns};
use super::error::StoreError;
use super::pull_requests::a_move_that_counts;
use super::types::{BaselineEntry, BaselineEvent, BaselineMove, CaseFilter, RunId, StoredResult};
use crate::case::CaseKey;

/// A move joined with its case, result and run; callers add `WHERE` and `ORDER BY`.
const MOVE_SELECT: &str = "\
SELECT m.id, s.suite, s.model, s.precision, s.phase, s.batch, s.context, s.gpu_sku,
       m.result_id, r.run_id, m.kind, m.reason, m.moved_at_ns, u.git_sha, r.median_ms,
       r.utilisation, s.axes, s.tp, s.ep
FROM baseline_moves m
JOIN series s ON s.id = m.series_id
JOIN results r ON r.id = m.result_id
JOIN runs u ON u.id = r.run_id";

struct RawMove {
    id: i64,
    suite: String,
    model: String,
    precision: String,
    phase: String,
    batch: i64,
    context: i64,
    gpu_sku: String,
    result_id: i64,
    run_id: i64,
    kind: String,
    reason: String,
    moved_at_ns: i64,
    git_sha: Option<String>,
    median_ms: Option<f64>,
    utilisation: Option<f64>,
    axes: String,
    tp: i64,
    ep: i64,
}

impl RawMove {
    fn from_row(row: &Row<'_>) -> super::sql::Result<RawMove> {
        Ok(RawMove {
            id: row.get("id")?,
            suite: row.get("suite")?,
            model: row.get("model")?,
            precision: row.get("precision")?,
            phase: row.get("phase")?,
            batch: row.get("batch")?,
            context: row.get("context")?,
            gpu_sku: row.get("gpu_sku")?,
            result_id: row.get("result_id")?,
            run_id: row.get("run_id")?,
            kind: row.get("kind")?,
            reason: row.get("reason")?,
            moved_at_ns: row.get("moved_at_ns")?,
            git_sha: row.get("git_sha")?,
            median_ms: row.get("median_ms")?,
            utilisation: row.get("utilisation")?,
            axes: row.get("axes")?,
            tp: row.get("tp")?,
            ep: row.get("ep")?,
        })
    }

    fn decode(self, store: &Store) -> Result<BaselineEvent, StoreError> {
        let path = &store.path;
        let id = self.id;
        Ok(BaselineEvent {
            id,
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
            result_id: self.result_id,
            run_id: RunId(self.run_id),
            kind: parse_text(path, "baseline_moves.kind", id, &self.kind)?,
            reason: self.reason,
            moved_at: ns_to_timestamp(path, "baseline_moves.moved_at_ns", id, self.moved_at_ns)?,
            git_sha: self.git_sha,
            median_ms: self.median_ms,
            utilisation: self.utilisation,
        })
    }
}

/// The SQL condition and parameters of a [`CaseFilter`] over `s` (the series table).
fn filter_sql(filter: &CaseFilter) -> (&'static str, Vec<super::sql::Value>) {
    use super::sql::Value;
    match filter {
        CaseFilter::All => ("TRUE", Vec::new()),
        CaseFilter::Suite(suite) => ("s.suite = ?2", vec![Value::Text(suite.clone())]),
        CaseFilter::Key(key) => (
            "s.suite = ?2 AND s.model = ?3 AND s.precision = ?4 AND s.phase = ?5
             AND s.batch = ?6 AND s.context = ?7 AND s.axes = ?8 AND s.tp = ?9 AND s.ep = ?10",
            vec![
                Value::Text(key.suite.clone()),
                Value::Text(key.model.clone()),
                Value::Text(key.precision.clone()),
                Value::Text(key.phase.as_str().to_owned()),
                Value::Int(i64::try_from(key.batch).unwrap_or(-1)),
                Value::Int(i64::try_from(key.context).unwrap_or(-1)),
                Value::Text(key.axes.key_text()),
                Value::Int(i64::try_from(key.tp).unwrap_or(-1)),
                Value::Int(i64::try_from(key.ep).unwrap_or(-1)),
            ],
        ),
    }
}

fn sku_value(gpu_sku: Option<&str>) -> super::sql::Value {
    gpu_sku.map_or(super::sql::Value::Null, |s| {
        super::sql::Value::Text(s.to_owned())
    })
}

impl Store {
    /// The result the baseline of `key` on `gpu_sku` points at now (its latest move that counts:
    /// never a promotion onto a pull request's run), if any.
    pub fn baseline_for(
        &self,
        key: &CaseKey,
        gpu_sku: &str,
    ) -> Result<Option<StoredResult>, StoreError> {
        let Some(series) = self.series_id(key, gpu_sku)? else {
            return Ok(None);
        };
        let result_id: Option<i64> = self
            .conn
            .prepare_cached(&format!(
                "SELECT result_id FROM baseline_moves bm WHERE series_id = ?1 AND {}
                 ORDER BY id DESC LIMIT 1",
                a_move_that_counts("bm")
            ))
            .and_then(|mut stmt| stmt.query_row([series], |r| r.get(0)).optional())
            .map_err(self.fail("read a baseline"))?;
        let Some(result_id) = result_id else {
            return Ok(None);
        };
        Ok(self
            .query_results("WHERE r.id = ?1", [result_id], "read a baseline")?
            .into_iter()
            .next())
    }

    /// Every current baseline pointer, optionally on one GPU SKU only, ordered by SKU and key.
    pub fn baselines(&self, gpu_sku: Option<&str>) -> Result<Vec<BaselineEntry>, StoreError> {
        let sql = format!(
            "{MOVE_SELECT}
             WHERE m.id = (SELECT max(id) FROM baseline_moves bm
                           WHERE bm.series_id = s.id AND {})
               AND (?1 IS NULL OR s.gpu_sku = ?1)
             ORDER BY s.gpu_sku, s.suite, s.model, s.precision, s.phase, s.batch, s.context,
                      s.axes, s.tp, s.ep",
            a_move_that_counts("bm")
        );
        let events = self.query_moves(&sql, vec![sku_value(gpu_sku)], "list baselines")?;
        Ok(events.into_iter().map(BaselineEntry::from).collect())
    }

    /// Every baseline pointer on `gpu_sku` as it stood just before `before` (what a run that
    /// started then was judged against), in one query: each series' newest move that counts
    /// before then, as [`Store::baseline_move`] finds it case by case.
    pub fn baselines_as_of(
        &self,
        gpu_sku: &str,
        before: jiff::Timestamp,
    ) -> Result<Vec<BaselineEntry>, StoreError> {
        let before = timestamp_to_ns(&self.path, before)?;
        let sql = format!(
            "{MOVE_SELECT}
             WHERE s.gpu_sku = ?1
               AND m.id = (SELECT max(id) FROM baseline_moves bm
                           WHERE bm.series_id = s.id AND bm.moved_at_ns < ?2 AND {})",
            a_move_that_counts("bm")
        );
        let values = vec![
            super::sql::Value::Text(gpu_sku.to_owned()),
            super::sql::Value::Int(before),
        ];
        let events = self.query_moves(&sql, values, "list baselines as of a time")?;
        Ok(events.into_iter().map(BaselineEntry::from).collect())
    }

    /// Points the baseline of each result's case and GPU SKU at that result, all in one
    /// transaction; an unknown result id moves nothing.
    pub fn move_baselines(&mut self, moves: &[BaselineMove]) -> Result<(), StoreError> {
        let path = self.path.clone();
        let times = moves
            .iter()
            .map(|m| timestamp_to_ns(&path, m.moved_at))
            .collect::<Result<Vec<_>, _>>()?;
        let fail = |action| {
            let path = path.clone();
            move |e| StoreError::query(&path, action, e)
        };
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(fail("begin moving baselines"))?;
        {
            let mut add = tx
                .prepare_cached(
                    "INSERT INTO baseline_moves (series_id, result_id, kind, reason, moved_at_ns)
                     SELECT series_id, id, ?2, ?3, ?4 FROM results WHERE id = ?1",
                )
                .map_err(fail("move a baseline"))?;
            for (m, moved_ns) in moves.iter().zip(times) {
                let added = add
                    .execute(params![m.result_id, m.kind.as_str(), m.reason, moved_ns])
                    .map_err(fail("move a baseline"))?;
                if added == 0 {
                    return Err(StoreError::UnknownResult {
                        path: path.clone(),
                        result_id: m.result_id,
                    });
                }
            }
        }
        tx.commit().map_err(fail("commit baseline moves"))
    }

    /// Every baseline move ever made for the cases `filter` selects, optionally on one GPU SKU,
    /// newest first.
    pub fn baseline_history(
        &self,
        filter: &CaseFilter,
        gpu_sku: Option<&str>,
    ) -> Result<Vec<BaselineEvent>, StoreError> {
        let (condition, mut values) = filter_sql(filter);
        let sql = format!(
            "{MOVE_SELECT} WHERE (?1 IS NULL OR s.gpu_sku = ?1) AND {condition} ORDER BY m.id DESC"
        );
        values.insert(0, sku_value(gpu_sku));
        self.query_moves(&sql, values, "read baseline history")
    }

    /// The newest `limit` moves of one case's baseline on `gpu_sku`, newest first, and how
    /// many it has in all: what a page that lists the recent ones reads, whatever the history.
    pub fn recent_baseline_moves(
        &self,
        key: &CaseKey,
        gpu_sku: &str,
        limit: usize,
    ) -> Result<(Vec<BaselineEvent>, usize), StoreError> {
        let Some(series) = self.series_id(key, gpu_sku)? else {
            return Ok((Vec::new(), 0));
        };
        let action = "read a case's recent baseline moves";
        let sql = format!("{MOVE_SELECT} WHERE m.series_id = ?1 ORDER BY m.id DESC LIMIT ?2");
        let moves = self.query_moves(
            &sql,
            vec![
                super::sql::Value::Int(series),
                super::sql::Value::Int(i64::try_from(limit).unwrap_or(i64::MAX)),
            ],
            action,
        )?;
        let total: i64 = self
            .conn
            .query_row(
                "SELECT count(*) FROM baseline_moves WHERE series_id = ?1",
                params![series],
                |r| r.get(0),
            )
            .map_err(self.fail(action))?;
        Ok((moves, usize::try_from(total).unwrap_or(0)))
    }

    /// The move that set the baseline of `key` on `gpu_sku` as of `before` (the newest made
    /// before it; the newest of all without it). One indexed row, whatever the history.
    pub fn baseline_move(
        &self,
        key: &CaseKey,
        gpu_sku: &str,
        before: Option<jiff::Timestamp>,
    ) -> Result<Option<BaselineEvent>, StoreError> {
        self.one_move(key, gpu_sku, before, "", "DESC", "read a baseline")
    }

    /// Where the lineage of the baseline of `key` on `gpu_sku` as of `before` began: its last
    /// accept or import, else its first move. One indexed row, whatever the history.
    pub fn lineage_start(
        &self,
        key: &CaseKey,
        gpu_sku: &str,
        before: Option<jiff::Timestamp>,
    ) -> Result<Option<BaselineEvent>, StoreError> {
        let action = "read where a baseline's lineage began";
        let chosen = self.one_move(
            key,
            gpu_sku,
            before,
            "AND kind IN ('accept', 'import')",
            "DESC",
            action,
        )?;
        match chosen {
            Some(event) => Ok(Some(event)),
            None => self.one_move(key, gpu_sku, before, "", "ASC", action),
        }
    }

    /// The newest (`DESC`) or oldest (`ASC`) move of one case made before `before` that meets
    /// `condition`.
    fn one_move(
        &self,
        key: &CaseKey,
        gpu_sku: &str,
        before: Option<jiff::Timestamp>,
        condition: &str,
        order: &str,
        action: &'static str,
    ) -> Result<Option<BaselineEvent>, StoreError> {
        let Some(series) = self.series_id(key, gpu_sku)? else {
            return Ok(None);
        };
        let before = before
            .map(|t| timestamp_to_ns(&self.path, t))
            .transpose()?
            .unwrap_or(i64::MAX);
        // Found in the covering index alone (no row read per move passed over), then read.
        let id: Option<i64> = self
            .conn
            .prepare_cached(&format!(
                "SELECT id FROM baseline_moves bm WHERE series_id = ?1 AND moved_at_ns < ?2
                 {condition} AND {} ORDER BY id {order} LIMIT 1",
                a_move_that_counts("bm")
            ))
            .and_then(|mut stmt| {
                stmt.query_row(params![series, before], |r| r.get(0))
                    .optional()
            })
            .map_err(self.fail(action))?;
        let Some(id) = id else {
            return Ok(None);
        };
        let sql = format!("{MOVE_SELECT} WHERE m.id = ?1");
        Ok(self
            .query_moves(&sql, vec![super::sql::Value::Int(id)], action)?
            .pop())
    }

    fn query_moves(
        &self,
        sql: &str,
        values: Vec<super::sql::Value>,
        action: &'static str,
    ) -> Result<Vec<BaselineEvent>, StoreError> {
        let raw = self
            .conn
            .prepare_cached(sql)
            .and_then(|mut stmt| {
                stmt.query_map(super::sql::params_from_iter(values), RawMove::from_row)?
                    .collect::<super::sql::Result<Vec<_>>>()
            })
            .map_err(self.fail(action))?;
        raw.into_iter().map(|m| m.decode(self)).collect()
    }
}

impl From<BaselineEvent> for BaselineEntry {
    fn from(e: BaselineEvent) -> Self {
        BaselineEntry {
            key: e.key,
            gpu_sku: e.gpu_sku,
            result_id: e.result_id,
            run_id: e.run_id,
            kind: e.kind,
            reason: e.reason,
            moved_at: e.moved_at,
            git_sha: e.git_sha,
            median_ms: e.median_ms,
            utilisation: e.utilisation,
        }
    }
}
