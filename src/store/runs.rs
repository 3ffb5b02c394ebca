//! Writing runs (one `BEGIN IMMEDIATE` transaction each, baseline promotions included) and
//! reading them back. Does I/O on the store.

use std::collections::BTreeMap;
use std::path::Path;

use super::sql::{OptionalExtension, Row, Transaction, TransactionBehavior, params};
use jiff::Timestamp;

use super::db::{Store, i64_to_u64, ns_to_timestamp, parse_json, timestamp_to_ns, u64_to_i64};
use super::error::StoreError;
use super::publish::PublishFacts;
use super::samples;
use super::types::{
    BaselineMoveKind, NewResult, NewRun, RunFilter, RunGroup, RunId, RunSummary, StoredRun,
};

/// Which results of a run move their baseline pointer, and how the move is recorded.
struct MovePlan<'a> {
    kind: BaselineMoveKind,
    reason: &'a str,
    moved_at: Timestamp,
    /// Only results flagged `promote` (a normal run), or all of them (an import).
    only_flagged: bool,
}

/// A result's values converted for `SQLite` before the transaction starts, so that nothing
/// slow or fallible happens while the write lock is held.
struct Encoded<'a> {
    result: &'a NewResult,
    batch: i64,
    context: i64,
    samples: Vec<u8>,
    warmup: Vec<u8>,
    env_json: String,
}

const RUN_COLUMNS: &str = "id, started_at_ns, finished_at_ns, git_sha, branch, trigger, \
     pr_number, gpu_sku, gpu_json, host, utilgate_version, config_json";

/// A run row as `SQLite` returned it.
struct RawRun {
    id: i64,
    started_at_ns: i64,
    finished_at_ns: i64,
    git_sha: Option<String>,
    branch: Option<String>,
    trigger: Option<String>,
    pr_number: Option<i64>,
    gpu_sku: String,
    gpu_json: Option<String>,
    host: Option<String>,
    utilgate_version: String,
    config_json: Option<String>,
}

impl RawRun {
    fn from_row(row: &Row<'_>) -> super::sql::Result<RawRun> {
        Ok(RawRun {
            id: row.get("id")?,
            started_at_ns: row.get("started_at_ns")?,
            finished_at_ns: row.get("finished_at_ns")?,
            git_sha: row.get("git_sha")?,
            branch: row.get("branch")?,
            trigger: row.get("trigger")?,
            pr_number: row.get("pr_number")?,
            gpu_sku: row.get("gpu_sku")?,
            gpu_json: row.get("gpu_json")?,
            host: row.get("host")?,
            utilgate_version: row.get("utilgate_version")?,
            config_json: row.get("config_json")?,
        })
    }
}

fn finite(v: Option<f64>) -> Option<f64> {
    v.filter(|x| x.is_finite())
}

fn json_text(v: Option<&serde_json::Value>) -> Option<String> {
    v.map(serde_json::Value::to_string)
}

impl Store {
    /// Stores a run, its results and raw samples, and moves the baseline pointer of every
    /// result flagged `promote` (kind `promote`, `run.promote_reason`, at `run.finished_at`),
    /// all in one transaction: if anything fails, nothing of the run is visible.
    pub fn insert_run(&mut self, run: &NewRun) -> Result<RunId, StoreError> {
        self.insert_run_with(run, None)
    }

    /// [`Store::insert_run`], with what publishing needs stored in the same transaction.
    pub fn insert_run_with(
        &mut self,
        run: &NewRun,
        publish: Option<&PublishFacts>,
    ) -> Result<RunId, StoreError> {
        self.insert_run_with_serve(run, publish, &[])
    }

    /// [`Store::insert_run_with`], with the run's service cases (suites of `kind = "serve"`)
    /// in the same transaction: one run holds the step and the service results of a config.
    pub fn insert_run_with_serve(
        &mut self,
        run: &NewRun,
        publish: Option<&PublishFacts>,
        serve: &[super::NewServeCase],
    ) -> Result<RunId, StoreError> {
        self.write_run(
            run,
            &MovePlan {
                kind: BaselineMoveKind::Promote,
                reason: &run.promote_reason,
                moved_at: run.finished_at,
                only_flagged: true,
            },
            publish,
            serve,
        )
    }

    /// Stores an imported run (the caller builds it from the portable `baselines/` export,
    /// normally with `trigger = "import"`, raw samples and floors included, so that it compares
    /// exactly like the original) and points the baseline of every one of its results at it,
    /// kind `import`, in one transaction. The `promote` flags are ignored.
    pub fn import_run(
        &mut self,
        run: &NewRun,
        reason: &str,
        moved_at: Timestamp,
    ) -> Result<RunId, StoreError> {
        self.write_run(
            run,
            &MovePlan {
                kind: BaselineMoveKind::Import,
                reason,
                moved_at,
                only_flagged: false,
            },
            None,
            &[],
        )
    }

    fn write_run(
        &mut self,
        run: &NewRun,
        plan: &MovePlan<'_>,
        publish: Option<&PublishFacts>,
        serve: &[super::NewServeCase],
    ) -> Result<RunId, StoreError> {
        let path = self.path.clone();
        let publish_json = publish_text(&path, publish)?;
        let started_ns = timestamp_to_ns(&path, run.started_at)?;
        let finished_ns = timestamp_to_ns(&path, run.finished_at)?;
        let moved_ns = timestamp_to_ns(&path, plan.moved_at)?;
        let pr_number = run
            .pr_number
            .map(|n| u64_to_i64(&path, "pull request number", n))
            .transpose()?;
        let encoded = run
            .results
            .iter()
            .map(|result| {
                Ok(Encoded {
                    result,
                    batch: u64_to_i64(&path, "batch", result.key.batch)?,
                    context: u64_to_i64(&path, "context", result.key.context)?,
                    samples: samples::encode(&result.repeats_ms),
                    warmup: samples::encode(&result.warmup_ms),
                    env_json: serde_json::Value::Object(
                        result
                            .env
                            .iter()
                            .map(|(k, v)| (k.clone(), serde_json::Value::from(v.as_str())))
                            .collect(),
                    )
                    .to_string(),
                })
            })
            .collect::<Result<Vec<_>, StoreError>>()?;

        let fail = |action| {
            let path = path.clone();
            move |e| StoreError::query(&path, action, e)
        };
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(fail("begin writing a run"))?;
        refuse_replay(&tx, &path, run)?;
        tx.execute(
            "INSERT INTO runs (started_at_ns, finished_at_ns, git_sha, branch, trigger, pr_number,
                               gpu_sku, gpu_json, host, utilgate_version, config_json,
                               publish_json, uid)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
            params![
                started_ns,
                finished_ns,
                run.git_sha,
                run.branch,
                run.trigger,
                pr_number,
                run.gpu_sku,
                json_text(run.gpu_json.as_ref()),
                run.host,
                run.utilgate_version,
                json_text(run.config_json.as_ref()),
                publish_json,
                run.uid,
            ],
        )
        .map_err(fail("write a run"))?;
        let run_id = tx.last_insert_rowid().map_err(fail("write a run"))?;
        write_results(
            &tx,
            &path,
            &RunRows {
                run_id,
                started_ns,
                moved_ns,
                gpu_sku: &run.gpu_sku,
                plan,
            },
            &encoded,
        )?;
        if let Some(canary) = &run.canary_json {
            tx.execute(
                "INSERT INTO run_canaries (run_id, json) VALUES (?1, ?2)",
                params![run_id, canary.to_string()],
            )
            .map_err(fail("write a run's canary"))?;
        }
        if let Some(group) = &run.group {
            write_group(&tx, run_id, group).map_err(fail("write a run's group"))?;
        }
        if let Some(night) = &run.budget_night {
            super::budgets::write_night(&tx, run_id, night)
                .map_err(fail("write a run's budget record"))?;
        }
        let row = super::serve::ServeRunRow {
            id: RunId(run_id),
            started_ns,
            gpu_sku: &run.gpu_sku,
            promote_reason: &run.promote_reason,
            moved_ns: finished_ns,
        };
        super::serve::write_serve_cases(&tx, &path, &row, serve)?;
        tx.commit().map_err(fail("commit a run"))?;
        Ok(RunId(run_id))
    }

    /// Runs newest first (by start time, then id), filtered by branch and GPU SKU.
    pub fn list_runs(&self, filter: &RunFilter) -> Result<Vec<RunSummary>, StoreError> {
        let sql = format!(
            "SELECT {RUN_COLUMNS} FROM runs
             WHERE (?1 IS NULL OR branch = ?1) AND (?2 IS NULL OR gpu_sku = ?2)
             ORDER BY started_at_ns DESC, id DESC LIMIT ?3"
        );
        let raw = self
            .conn
            .prepare_cached(&sql)
            .and_then(|mut stmt| {
                stmt.query_map(
                    params![
                        filter.branch,
                        filter.gpu_sku,
                        i64::try_from(filter.limit).unwrap_or(i64::MAX)
                    ],
                    RawRun::from_row,
                )?
                .collect::<super::sql::Result<Vec<_>>>()
            })
            .map_err(self.fail("list runs"))?;
        raw.iter().map(|r| self.summary(r)).collect()
    }

    /// One run with all its results, or `None` when no run has this id.
    pub fn run(&self, id: RunId) -> Result<Option<StoredRun>, StoreError> {
        let sql = format!("SELECT {RUN_COLUMNS} FROM runs WHERE id = ?1");
        let raw = self
            .conn
            .prepare_cached(&sql)
            .and_then(|mut stmt| stmt.query_row([id.0], RawRun::from_row).optional())
            .map_err(self.fail("read a run"))?;
        let Some(raw) = raw else {
            return Ok(None);
        };
        let summary = self.summary(&raw)?;
        let results = self.query_results(
            "WHERE r.run_id = ?1 ORDER BY r.id",
            [id.0],
            "read a run's results",
        )?;
        Ok(Some(StoredRun {
            summary,
            gpu_json: parse_json(&self.path, "runs.gpu_json", raw.id, raw.gpu_json)?,
            host: raw.host,
            utilgate_version: raw.utilgate_version,
            config_json: parse_json(&self.path, "runs.config_json", raw.id, raw.config_json)?,
            results,
            budget_night: self.budget_night(raw.id)?,
        }))
    }

    /// The machine canary stored with a run, if it had one.
    pub fn run_canary(&self, id: RunId) -> Result<Option<serde_json::Value>, StoreError> {
        let text: Option<String> = self
            .conn
            .prepare_cached("SELECT json FROM run_canaries WHERE run_id = ?1")
            .and_then(|mut stmt| stmt.query_row([id.0], |r| r.get(0)).optional())
            .map_err(self.fail("read a run's canary"))?;
        parse_json(&self.path, "run_canaries.json", id.0, text)
    }

    /// The group a run was stored in (`run --run-group`), if any.
    pub fn run_group(&self, id: RunId) -> Result<Option<RunGroup>, StoreError> {
        self.conn
            .prepare_cached("SELECT group_id, shard, shards FROM run_groups WHERE run_id = ?1")
            .and_then(|mut stmt| stmt.query_row([id.0], group_row).optional())
            .map_err(self.fail("read a run's group"))
    }

    /// The runs of a group, oldest first (by id), with their places in it.
    pub fn group_runs(&self, group_id: &str) -> Result<Vec<(RunId, RunGroup)>, StoreError> {
        self.conn
            .prepare_cached(
                "SELECT run_id, group_id, shard, shards FROM run_groups \
                 WHERE group_id = ?1 ORDER BY run_id",
            )
            .and_then(|mut stmt| {
                stmt.query_map([group_id], |r| Ok((RunId(r.get(0)?), group_row_at(r, 1)?)))?
                    .collect::<super::sql::Result<Vec<_>>>()
            })
            .map_err(self.fail("read a group's runs"))
    }

    /// The newest run (by start time, then id), optionally only on one branch.
    pub fn latest_run_id(&self, branch: Option<&str>) -> Result<Option<RunId>, StoreError> {
        self.conn
            .prepare_cached(
                "SELECT id FROM runs WHERE (?1 IS NULL OR branch = ?1)
                 ORDER BY started_at_ns DESC, id DESC LIMIT 1",
            )
            .and_then(|mut stmt| stmt.query_row([branch], |r| r.get(0)).optional())
            .map(|id| id.map(RunId))
            .map_err(self.fail("find the latest run"))
    }

    fn summary(&self, raw: &RawRun) -> Result<RunSummary, StoreError> {
        let counts: Vec<(Option<String>, i64)> = self
            .conn
            .prepare_cached(
                "SELECT verdict, count(*) FROM results WHERE run_id = ?1 GROUP BY verdict",
            )
            .and_then(|mut stmt| {
                stmt.query_map([raw.id], |r| Ok((r.get(0)?, r.get(1)?)))?
                    .collect()
            })
            .map_err(self.fail("count a run's verdicts"))?;
        let mut n_results = 0;
        let mut verdicts = BTreeMap::new();
        for (verdict, count) in counts {
            let count = usize::try_from(count).unwrap_or(0);
            n_results += count;
            if let Some(v) = verdict {
                verdicts.insert(v, count);
            }
        }
        let path = &self.path;
        Ok(RunSummary {
            id: RunId(raw.id),
            started_at: ns_to_timestamp(path, "runs.started_at_ns", raw.id, raw.started_at_ns)?,
            finished_at: ns_to_timestamp(path, "runs.finished_at_ns", raw.id, raw.finished_at_ns)?,
            git_sha: raw.git_sha.clone(),
            branch: raw.branch.clone(),
            trigger: raw.trigger.clone(),
            pr_number: raw
                .pr_number
                .map(|n| i64_to_u64(path, "runs.pr_number", raw.id, n))
                .transpose()?,
            gpu_sku: raw.gpu_sku.clone(),
            n_results,
            verdicts,
        })
    }
}

/// Where a run's results go: its id and times, its GPU SKU, and which of them move a baseline.
struct RunRows<'a> {
    run_id: i64,
    started_ns: i64,
    moved_ns: i64,
    gpu_sku: &'a str,
    plan: &'a MovePlan<'a>,
}

/// Writes every result of a run (creating case rows on first sight) and the baseline moves the
/// plan asks for, inside the caller's transaction.
fn write_results(
    tx: &Transaction<'_>,
    path: &Path,
    at: &RunRows<'_>,
    encoded: &[Encoded<'_>],
) -> Result<(), StoreError> {
    let fail = |action| move |e| StoreError::query(path, action, e);
    let mut find_series = tx
        .prepare_cached(
            "SELECT id FROM series WHERE suite = ?1 AND model = ?2 AND precision = ?3
             AND phase = ?4 AND batch = ?5 AND context = ?6 AND gpu_sku = ?7 AND axes = ?8
             AND tp = ?9 AND ep = ?10",
        )
        .map_err(fail("look up a case"))?;
    let mut add_series = tx
        .prepare_cached(
            "INSERT INTO series (suite, model, precision, phase, batch, context, gpu_sku, axes,
                                 tp, ep)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
        )
        .map_err(fail("write a case"))?;
    let mut add_result = tx
        .prepare_cached(
            "INSERT INTO results (run_id, series_id, run_started_at_ns, verdict, error,
                 floor_ms, floor_json, median_ms, utilisation, mbu, mfu, summary_json,
                 decision_json, samples, warmup, env_json, gpu_state_json, stderr_tail)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15,
                     ?16, ?17, ?18)",
        )
        .map_err(fail("write a result"))?;
    let mut add_move = tx
        .prepare_cached(
            "INSERT INTO baseline_moves (series_id, result_id, kind, reason, moved_at_ns)
             VALUES (?1, ?2, ?3, ?4, ?5)",
        )
        .map_err(fail("move a baseline"))?;
    for e in encoded {
        let r = e.result;
        let axes = r.key.axes.key_text();
        let key = params![
            r.key.suite,
            r.key.model,
            r.key.precision,
            r.key.phase.as_str(),
            e.batch,
            e.context,
            at.gpu_sku,
            axes,
            i64::try_from(r.key.tp).unwrap_or(i64::MAX),
            i64::try_from(r.key.ep).unwrap_or(i64::MAX)
        ];
        let found = find_series
            .query_row(key, |row| row.get::<_, i64>(0))
            .optional()
            .map_err(fail("look up a case"))?;
        let series_id = if let Some(id) = found {
            id
        } else {
            add_series.execute(key).map_err(fail("write a case"))?;
            tx.last_insert_rowid().map_err(fail("write a case"))?
        };
        add_result
            .execute(params![
                at.run_id,
                series_id,
                at.started_ns,
                r.verdict.map(crate::case::Verdict::as_str),
                r.error,
                finite(r.floor_ms),
                json_text(r.floor_json.as_ref()),
                finite(r.median_ms),
                finite(r.utilisation),
                finite(r.mbu),
                finite(r.mfu),
                json_text(r.summary_json.as_ref()),
                json_text(r.decision_json.as_ref()),
                e.samples,
                e.warmup,
                e.env_json,
                json_text(r.gpu_state_json.as_ref()),
                r.stderr_tail,
            ])
            .map_err(fail("write a result"))?;
        let result_id = tx.last_insert_rowid().map_err(fail("write a result"))?;
        super::budgets::write_case(tx, result_id, r.budget.as_ref(), &r.costs)
            .map_err(fail("write a result's budget record"))?;
        super::quality::write(tx, result_id, &r.quality)
            .map_err(fail("write a result's quality metrics"))?;
        super::quality::write_speculation(tx, result_id, r.speculative)
            .map_err(fail("write a result's drafted tokens"))?;
        super::energy::write(tx, result_id, &r.energy)
            .map_err(fail("write a result's energy records"))?;
        if r.promote || !at.plan.only_flagged {
            add_move
                .execute(params![
                    series_id,
                    result_id,
                    at.plan.kind.as_str(),
                    at.plan.reason,
                    at.moved_ns
                ])
                .map_err(fail("move a baseline"))?;
        }
    }
    Ok(())
}

/// A `run_groups` row read from column `at` on: group id, shard, shards.
fn group_row_at(r: &Row<'_>, at: usize) -> super::sql::Result<RunGroup> {
    let shard: Option<u32> = r.get(at + 1)?;
    let shards: Option<u32> = r.get(at + 2)?;
    Ok(RunGroup {
        id: r.get(at)?,
        shard: shard.zip(shards),
    })
}

fn group_row(r: &Row<'_>) -> super::sql::Result<RunGroup> {
    group_row_at(r, 0)
}

/// A run's group row, in the run's transaction.
fn write_group(tx: &Transaction<'_>, run_id: i64, group: &RunGroup) -> super::sql::Result<usize> {
    tx.execute(
        "INSERT INTO run_groups (run_id, group_id, shard, shards) VALUES (?1, ?2, ?3, ?4)",
        params![
            run_id,
            group.id,
            group.shard.map(|s| s.0),
            group.shard.map(|s| s.1)
        ],
    )
}

/// The publish facts as the `runs.publish_json` column holds them.
fn publish_text(path: &Path, publish: Option<&PublishFacts>) -> Result<Option<String>, StoreError> {
    publish
        .map(serde_json::to_string)
        .transpose()
        .map_err(|source| StoreError::Json {
            path: path.to_owned(),
            column: "runs.publish_json",
            row: 0,
            source,
        })
}

/// A replay of a stored run (same uid) is refused naming the first; checked inside the writing
/// transaction `conn`, and the unique index is the backstop.
fn refuse_replay(conn: &super::sql::Conn, path: &Path, run: &NewRun) -> Result<(), StoreError> {
    let Some(uid) = &run.uid else {
        return Ok(());
    };
    match run_with_uid(conn, uid) {
        Ok(None) => Ok(()),
        Ok(Some(first)) => Err(StoreError::AlreadyStored {
            path: path.to_owned(),
            uid: uid.clone(),
            run_id: first,
        }),
        Err(e) => Err(StoreError::query(path, "look up the run's id", e)),
    }
}

/// The run stored with unique id `uid`, if any.
fn run_with_uid(conn: &super::sql::Conn, uid: &str) -> super::sql::Result<Option<i64>> {
    conn.query_row("SELECT id FROM runs WHERE uid = ?1", params![uid], |r| {
        r.get("id")
    })
    .optional()
}

impl Store {
    /// The run stored with unique id `uid` (a replay's first storing), if any.
    pub fn run_by_uid(&self, uid: &str) -> Result<Option<RunId>, StoreError> {
        run_with_uid(&self.conn, uid)
            .map(|id| id.map(RunId))
            .map_err(|e| StoreError::query(&self.path, "look up the run's id", e))
    }
}
