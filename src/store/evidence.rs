//! Evidence attached to results (traces today): the analysis summary per result and the raw
//! trace, gzip-compressed and content-addressed (SHA-256 of the compressed bytes), stored once
//! however many results share it. Does I/O on the store.
//!
//! Why in the store and not a folder beside it: one file to back up, cache or upload as a CI
//! artifact; a trace and the result it explains are written and pruned by the same database, so
//! no orphan files and no dangling paths; deduplication is a primary key. The size cap
//! (`[evidence] max_trace_mb`, default 64 MB compressed) keeps the file bounded, and retention
//! keeps the raw traces of current baselines and of the latest runs, analyses forever.

use super::sql::{OptionalExtension, params};

use super::db::{Store, parse_json};
use super::error::StoreError;
use super::types::RunId;
use crate::case::CaseKey;

/// One piece of evidence to attach to a stored result.
#[derive(Debug, Clone, PartialEq)]
pub struct NewEvidence {
    pub key: CaseKey,
    /// `trace` (turn 2: `nsys`, `ncu`).
    pub kind: String,
    /// The file's name as the harness reported it.
    pub name: String,
    /// The compressed file and its content address; `None` when over the size cap.
    pub blob: Option<(String, Vec<u8>)>,
    pub analysis: Option<serde_json::Value>,
    /// Why the evidence is partial (over the cap, unreadable trace): shown on the case.
    pub warning: Option<String>,
}

/// Evidence as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredEvidence {
    pub id: i64,
    pub result_id: i64,
    pub kind: String,
    pub name: String,
    pub sha256: Option<String>,
    pub analysis: Option<serde_json::Value>,
    pub warning: Option<String>,
}

const COLUMNS: &str = "e.id, e.result_id, e.kind, e.name, e.sha256, e.analysis_json, e.warning";

fn row_to_evidence(
    row: &super::sql::Row<'_>,
) -> super::sql::Result<(StoredEvidence, Option<String>)> {
    Ok((
        StoredEvidence {
            id: row.get("id")?,
            result_id: row.get("result_id")?,
            kind: row.get("kind")?,
            name: row.get("name")?,
            sha256: row.get("sha256")?,
            analysis: None,
            warning: row.get("warning")?,
        },
        row.get("analysis_json")?,
    ))
}

impl Store {
    /// Attaches evidence to the results of `run` (matched by case key), in one transaction,
    /// then prunes raw traces no longer kept: those not referenced by a current baseline's
    /// result or by a result of the latest `keep_runs` runs.
    pub fn add_evidence(
        &mut self,
        run: RunId,
        items: &[NewEvidence],
        keep_runs: u32,
    ) -> Result<(), StoreError> {
        let path = self.path.clone();
        let fail = |action| {
            let path = path.clone();
            move |e| StoreError::query(&path, action, e)
        };
        let tx = self
            .conn
            .transaction()
            .map_err(fail("begin writing evidence"))?;
        for item in items {
            let result_id: Option<i64> = tx
                .query_row(
                    "SELECT r.id FROM results r JOIN series s ON s.id = r.series_id
                     WHERE r.run_id = ?1 AND s.suite = ?2 AND s.model = ?3 AND s.precision = ?4
                       AND s.phase = ?5 AND s.batch = ?6 AND s.context = ?7 AND s.axes = ?8
                       AND s.tp = ?9 AND s.ep = ?10",
                    params![
                        run.0,
                        item.key.suite,
                        item.key.model,
                        item.key.precision,
                        item.key.phase.as_str(),
                        i64::try_from(item.key.batch).unwrap_or(i64::MAX),
                        i64::try_from(item.key.context).unwrap_or(i64::MAX),
                        item.key.axes.key_text(),
                        i64::try_from(item.key.tp).unwrap_or(i64::MAX),
                        i64::try_from(item.key.ep).unwrap_or(i64::MAX)
                    ],
                    |row| row.get(0),
                )
                .optional()
                .map_err(fail("find the result of evidence"))?;
            let Some(result_id) = result_id else { continue };
            let sha = item.blob.as_ref().map(|(sha, _)| sha.clone());
            if let Some((sha, data)) = &item.blob {
                tx.execute(
                    "INSERT OR IGNORE INTO evidence_blobs (sha256, bytes, data) VALUES (?1, ?2, ?3)",
                    params![sha, i64::try_from(data.len()).unwrap_or(i64::MAX), data],
                )
                .map_err(fail("store a trace"))?;
            }
            tx.execute(
                "INSERT INTO evidence (result_id, kind, name, sha256, analysis_json, warning)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![
                    result_id,
                    item.kind,
                    item.name,
                    sha,
                    item.analysis.as_ref().map(serde_json::Value::to_string),
                    item.warning
                ],
            )
            .map_err(fail("store evidence"))?;
        }
        tx.execute(
            "DELETE FROM evidence_blobs WHERE sha256 NOT IN (
                SELECT e.sha256 FROM evidence e WHERE e.sha256 IS NOT NULL AND (
                    e.result_id IN (SELECT result_id FROM current_baselines)
                    OR e.result_id IN (SELECT r.id FROM results r WHERE r.run_id IN (
                        SELECT id FROM runs ORDER BY started_at_ns DESC, id DESC LIMIT ?1))))",
            params![keep_runs],
        )
        .map_err(fail("prune old traces"))?;
        tx.commit().map_err(fail("commit evidence"))?;
        Ok(())
    }

    /// The evidence of one case in one run, newest first.
    pub fn evidence_for(
        &self,
        run: RunId,
        key: &CaseKey,
    ) -> Result<Vec<StoredEvidence>, StoreError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM evidence e JOIN results r ON r.id = e.result_id
             JOIN series s ON s.id = r.series_id
             WHERE r.run_id = ?1 AND s.suite = ?2 AND s.model = ?3 AND s.precision = ?4
               AND s.phase = ?5 AND s.batch = ?6 AND s.context = ?7 AND s.axes = ?8
               AND s.tp = ?9 AND s.ep = ?10
             ORDER BY e.id DESC"
        );
        let mut stmt = self
            .conn
            .prepare(&sql)
            .map_err(self.fail("read evidence"))?;
        let rows = stmt
            .query_map(
                params![
                    run.0,
                    key.suite,
                    key.model,
                    key.precision,
                    key.phase.as_str(),
                    i64::try_from(key.batch).unwrap_or(i64::MAX),
                    i64::try_from(key.context).unwrap_or(i64::MAX),
                    key.axes.key_text(),
                    i64::try_from(key.tp).unwrap_or(i64::MAX),
                    i64::try_from(key.ep).unwrap_or(i64::MAX)
                ],
                row_to_evidence,
            )
            .map_err(self.fail("read evidence"))?;
        let mut out = Vec::new();
        for row in rows {
            let (mut ev, json) = row.map_err(self.fail("read evidence"))?;
            ev.analysis = parse_json(&self.path, "evidence.analysis_json", ev.id, json)?;
            out.push(ev);
        }
        Ok(out)
    }

    /// The compressed bytes stored under a content address (`None` once pruned).
    pub fn evidence_blob(&self, sha256: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.conn
            .query_row(
                "SELECT data FROM evidence_blobs WHERE sha256 = ?1",
                params![sha256],
                |row| row.get(0),
            )
            .optional()
            .map_err(self.fail("read a stored trace"))
    }
}
