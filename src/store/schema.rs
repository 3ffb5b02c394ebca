//! The store's schema as embedded, ordered migrations, applied by `PRAGMA user_version`. Does
//! I/O on the connection it is given.
//!
//! Migration `i` (0-based) upgrades a store from version `i` to `i + 1`. Migrations are only
//! ever appended: a released one is never edited. A store whose version is newer than
//! [`LATEST`] is refused, never downgraded.
//!
//! Shape: `runs` (one row per `utilgate run`), `series` (a case key on one GPU SKU, so that
//! results carry one integer instead of seven columns), `results` (one row per case per run, raw
//! samples as compact blobs, see `samples.rs`), and `baseline_moves` (every move of a baseline
//! pointer; the current pointer of a series is its latest move, see the `current_baselines`
//! view). Timestamps are integer nanoseconds since the Unix epoch (UTC). History is
//! append-only, enforced by triggers.

use std::path::Path;

use super::error::StoreError;
use super::sql::{Conn, TransactionBehavior, dialect};

const V1_TABLES: &str = r"
CREATE TABLE runs (
    id               INTEGER PRIMARY KEY,
    started_at_ns    INTEGER NOT NULL,
    finished_at_ns   INTEGER NOT NULL,
    git_sha          TEXT,
    branch           TEXT,
    trigger          TEXT,
    pr_number        INTEGER,
    gpu_sku          TEXT NOT NULL,
    gpu_json         TEXT,
    host             TEXT,
    utilgate_version TEXT NOT NULL,
    config_json      TEXT
) STRICT;

CREATE TABLE series (
    id        INTEGER PRIMARY KEY,
    suite     TEXT NOT NULL,
    model     TEXT NOT NULL,
    precision TEXT NOT NULL,
    phase     TEXT NOT NULL CHECK (phase IN ('decode', 'prefill')),
    batch     INTEGER NOT NULL,
    context   INTEGER NOT NULL,
    gpu_sku   TEXT NOT NULL,
    UNIQUE (suite, model, precision, phase, batch, context, gpu_sku)
) STRICT;

CREATE TABLE results (
    id                INTEGER PRIMARY KEY,
    run_id            INTEGER NOT NULL REFERENCES runs (id),
    series_id         INTEGER NOT NULL REFERENCES series (id),
    -- a copy of runs.started_at_ns, so that a case's history walks one index
    run_started_at_ns INTEGER NOT NULL,
    verdict           TEXT CHECK (verdict IN ('pass', 'regressed', 'improved', 'inconclusive',
                                              'new', 'missing', 'invalid', 'error')),
    error             TEXT,
    floor_ms          REAL,
    floor_json        TEXT,
    median_ms         REAL,
    utilisation       REAL,
    mbu               REAL,
    mfu               REAL,
    summary_json      TEXT,
    decision_json     TEXT,
    samples           BLOB NOT NULL,
    warmup            BLOB NOT NULL,
    env_json          TEXT NOT NULL,
    gpu_state_json    TEXT,
    stderr_tail       TEXT,
    UNIQUE (run_id, series_id)
) STRICT;

CREATE TABLE baseline_moves (
    id          INTEGER PRIMARY KEY,
    series_id   INTEGER NOT NULL REFERENCES series (id),
    result_id   INTEGER NOT NULL REFERENCES results (id),
    kind        TEXT NOT NULL CHECK (kind IN ('promote', 'accept', 'import')),
    reason      TEXT NOT NULL,
    moved_at_ns INTEGER NOT NULL
) STRICT;

CREATE TRIGGER runs_append_only_update BEFORE UPDATE ON runs
    BEGIN SELECT RAISE(ABORT, 'runs are append-only'); END;
CREATE TRIGGER runs_append_only_delete BEFORE DELETE ON runs
    BEGIN SELECT RAISE(ABORT, 'runs are append-only'); END;
CREATE TRIGGER results_append_only_update BEFORE UPDATE ON results
    BEGIN SELECT RAISE(ABORT, 'results are append-only'); END;
CREATE TRIGGER results_append_only_delete BEFORE DELETE ON results
    BEGIN SELECT RAISE(ABORT, 'results are append-only'); END;
CREATE TRIGGER baseline_moves_append_only_update BEFORE UPDATE ON baseline_moves
    BEGIN SELECT RAISE(ABORT, 'baseline history is append-only'); END;
CREATE TRIGGER baseline_moves_append_only_delete BEFORE DELETE ON baseline_moves
    BEGIN SELECT RAISE(ABORT, 'baseline history is append-only'); END;
";

/// Indexes for the read paths (newest runs, a case's baseline and history, a run's verdict
/// counts) and the view of current pointers.
const V2_INDEXES: &str = r"
CREATE INDEX runs_by_time ON runs (started_at_ns, id);
CREATE INDEX runs_by_branch ON runs (branch, started_at_ns, id);
CREATE INDEX results_by_run_verdict ON results (run_id, verdict);
CREATE INDEX results_by_series_time ON results (series_id, run_started_at_ns, id);
CREATE INDEX baseline_moves_by_series ON baseline_moves (series_id, id);

CREATE VIEW current_baselines AS
    SELECT m.*
    FROM series s
    JOIN baseline_moves m
      ON m.id = (SELECT max(id) FROM baseline_moves WHERE series_id = s.id);
";

/// Achievable peaks measured by `utilgate probe`, per GPU SKU (see `probes.rs`). Append-only
/// like the rest of the history; the latest row of each kind is the current figure.
const V3_PROBES: &str = r"
CREATE TABLE probes (
    id             INTEGER PRIMARY KEY,
    gpu_sku        TEXT NOT NULL,
    measured_at_ns INTEGER NOT NULL,
    kind           TEXT NOT NULL,
    value          REAL NOT NULL,
    json           TEXT
) STRICT;
CREATE INDEX probes_by_sku_kind ON probes (gpu_sku, kind, measured_at_ns, id);
CREATE TRIGGER probes_append_only_update BEFORE UPDATE ON probes
    BEGIN SELECT RAISE(ABORT, 'probes are append-only'); END;
";

/// What `utilgate publish` needs from a run, stored with it (see `publish.rs`): the gate in
/// force, the pull request's head commit, the status name. NULL for older runs.
const V4_PUBLISH: &str = r"
ALTER TABLE runs ADD COLUMN publish_json TEXT;
";

/// Evidence attached to results (see `evidence.rs`): analyses per result, and raw traces stored
/// once per content address (pruned by retention, so `evidence.sha256` may outlive its blob).
const V5_EVIDENCE: &str = r"
CREATE TABLE evidence_blobs (
    sha256 TEXT PRIMARY KEY,
    bytes  INTEGER NOT NULL,
    data   BLOB NOT NULL
) STRICT;
CREATE TABLE evidence (
    id            INTEGER PRIMARY KEY,
    result_id     INTEGER NOT NULL REFERENCES results (id),
    kind          TEXT NOT NULL,
    name          TEXT NOT NULL,
    sha256        TEXT,
    analysis_json TEXT,
    warning       TEXT
) STRICT;
CREATE INDEX evidence_by_result ON evidence (result_id, id);
";

/// Service cases (DESIGN.md §12; `serve.rs`), after the evidence tables: their own series (a service case is keyed by
/// offered load and lengths, not by phase, batch and context), one result per case per run,
/// and per repeat the load generator's result object exactly as it was written (so verdicts can
/// be recomputed by re-reading it) plus its metrics as rows of a generalised metric table: a
/// file holds whichever percentiles its generator was asked for (`p50`, `p90`, `p99.9`, ...),
/// so one row per (result, repeat, metric) holds any set and makes history one indexed query.
/// Baseline moves of service cases are a table of their own, append-only like the others.
const V6_SERVE: &str = r"
CREATE TABLE serve_series (
    id              INTEGER PRIMARY KEY,
    suite           TEXT NOT NULL,
    model           TEXT NOT NULL,
    request_rate    TEXT NOT NULL,
    -- 0: not set (no concurrency limit, lengths not fixed)
    max_concurrency INTEGER NOT NULL,
    input_len       INTEGER NOT NULL,
    output_len      INTEGER NOT NULL,
    gpu_sku         TEXT NOT NULL,
    UNIQUE (suite, model, request_rate, max_concurrency, input_len, output_len, gpu_sku)
) STRICT;

CREATE TABLE serve_results (
    id                INTEGER PRIMARY KEY,
    run_id            INTEGER NOT NULL REFERENCES runs (id),
    series_id         INTEGER NOT NULL REFERENCES serve_series (id),
    run_started_at_ns INTEGER NOT NULL,
    verdict           TEXT CHECK (verdict IN ('pass', 'regressed', 'improved', 'inconclusive',
                                              'new', 'missing', 'invalid', 'error')),
    error             TEXT,
    settings_json     TEXT,
    decision_json     TEXT,
    estimate_json     TEXT,
    stderr_tail       TEXT,
    UNIQUE (run_id, series_id)
) STRICT;

CREATE TABLE serve_repeats (
    result_id   INTEGER NOT NULL REFERENCES serve_results (id),
    repeat      INTEGER NOT NULL,
    source      TEXT NOT NULL,
    schema_name TEXT NOT NULL,
    raw_json    TEXT NOT NULL,
    PRIMARY KEY (result_id, repeat)
) STRICT, WITHOUT ROWID;

CREATE TABLE serve_metrics (
    result_id INTEGER NOT NULL REFERENCES serve_results (id),
    repeat    INTEGER NOT NULL,
    metric    TEXT NOT NULL,
    value     REAL NOT NULL,
    PRIMARY KEY (result_id, repeat, metric)
) STRICT, WITHOUT ROWID;

CREATE TABLE serve_baseline_moves (
    id          INTEGER PRIMARY KEY,
    series_id   INTEGER NOT NULL REFERENCES serve_series (id),
    result_id   INTEGER NOT NULL REFERENCES serve_results (id),
    kind        TEXT NOT NULL CHECK (kind IN ('promote', 'accept', 'import')),
    reason      TEXT NOT NULL,
    moved_at_ns INTEGER NOT NULL
) STRICT;

CREATE INDEX serve_results_by_run ON serve_results (run_id);
CREATE INDEX serve_results_by_series_time ON serve_results (series_id, run_started_at_ns, id);
CREATE INDEX serve_baseline_moves_by_series ON serve_baseline_moves (series_id, id);

CREATE TRIGGER serve_results_append_only_update BEFORE UPDATE ON serve_results
    BEGIN SELECT RAISE(ABORT, 'results are append-only'); END;
CREATE TRIGGER serve_results_append_only_delete BEFORE DELETE ON serve_results
    BEGIN SELECT RAISE(ABORT, 'results are append-only'); END;
CREATE TRIGGER serve_repeats_append_only_update BEFORE UPDATE ON serve_repeats
    BEGIN SELECT RAISE(ABORT, 'results are append-only'); END;
CREATE TRIGGER serve_repeats_append_only_delete BEFORE DELETE ON serve_repeats
    BEGIN SELECT RAISE(ABORT, 'results are append-only'); END;
CREATE TRIGGER serve_metrics_append_only_update BEFORE UPDATE ON serve_metrics
    BEGIN SELECT RAISE(ABORT, 'results are append-only'); END;
CREATE TRIGGER serve_metrics_append_only_delete BEFORE DELETE ON serve_metrics
    BEGIN SELECT RAISE(ABORT, 'results are append-only'); END;
CREATE TRIGGER serve_baseline_moves_append_only_update BEFORE UPDATE ON serve_baseline_moves
    BEGIN SELECT RAISE(ABORT, 'baseline history is append-only'); END;
CREATE TRIGGER serve_baseline_moves_append_only_delete BEFORE DELETE ON serve_baseline_moves
    BEGIN SELECT RAISE(ABORT, 'baseline history is append-only'); END;
";

/// The machine canary of each run (`measure::canary`, `compare::canary_shift`): its figures'
/// readings as JSON, written in the run's transaction. Append-only.
const V7_RUN_CANARIES: &str = r"
CREATE TABLE run_canaries (
    run_id INTEGER PRIMARY KEY REFERENCES runs (id),
    json   TEXT NOT NULL
) STRICT;
CREATE TRIGGER run_canaries_append_only_update BEFORE UPDATE ON run_canaries
    BEGIN SELECT RAISE(ABORT, 'run canaries are append-only'); END;
CREATE TRIGGER run_canaries_append_only_delete BEFORE DELETE ON run_canaries
    BEGIN SELECT RAISE(ABORT, 'run canaries are append-only'); END;
";

/// The run group of a sharded run (`run --shard K/N --run-group ID`): the shards of one grid
/// share a group id, and `report --group ID` merges them. Written in the run's transaction.
/// Append-only.
const V8_RUN_GROUPS: &str = r"
CREATE TABLE run_groups (
    run_id   INTEGER PRIMARY KEY REFERENCES runs (id),
    group_id TEXT NOT NULL,
    shard    INTEGER,
    shards   INTEGER,
    CHECK ((shard IS NULL) = (shards IS NULL)),
    CHECK (shard IS NULL OR (shard >= 1 AND shard <= shards))
) STRICT;
CREATE INDEX run_groups_by_group ON run_groups (group_id, run_id);
CREATE TRIGGER run_groups_append_only_update BEFORE UPDATE ON run_groups
    BEGIN SELECT RAISE(ABORT, 'run groups are append-only'); END;
CREATE TRIGGER run_groups_append_only_delete BEFORE DELETE ON run_groups
    BEGIN SELECT RAISE(ABORT, 'run groups are append-only'); END;
";

/// A suite's free axes in the case key (`axes = { mode = [...] }`): `series.axes` holds them as
/// the key writes them (`attn=flash/mode=graphs`, names sorted), '' for a case without axes, so
/// every stored case keeps its key. The case-key constraint gains the column; `SQLite` cannot
/// change a table's constraint in place, so the table is rebuilt keeping every id (foreign
/// keys are off for the migration, see [`migrate`]; the view that reads it is recreated).
const V9_SERIES_AXES: &str = r"
CREATE TABLE series_v9 (
    id        INTEGER PRIMARY KEY,
    suite     TEXT NOT NULL,
    model     TEXT NOT NULL,
    precision TEXT NOT NULL,
    phase     TEXT NOT NULL CHECK (phase IN ('decode', 'prefill')),
    batch     INTEGER NOT NULL,
    context   INTEGER NOT NULL,
    gpu_sku   TEXT NOT NULL,
    axes      TEXT NOT NULL DEFAULT '',
    UNIQUE (suite, model, precision, phase, batch, context, axes, gpu_sku)
) STRICT;
INSERT INTO series_v9 (id, suite, model, precision, phase, batch, context, gpu_sku, axes)
    SELECT id, suite, model, precision, phase, batch, context, gpu_sku, '' FROM series;
DROP VIEW current_baselines;
DROP TABLE series;
ALTER TABLE series_v9 RENAME TO series;
CREATE VIEW current_baselines AS
    SELECT m.*
    FROM series s
    JOIN baseline_moves m
      ON m.id = (SELECT max(id) FROM baseline_moves WHERE series_id = s.id);
";

/// [`V9_SERIES_AXES`] on `PostgreSQL`, which changes the constraint in place (its name is the
/// one `PostgreSQL` gave V1's `UNIQUE`); the column order matches the rebuilt `SQLite` table.
const V9_SERIES_AXES_PG: &str = r"
ALTER TABLE series ADD COLUMN axes TEXT NOT NULL DEFAULT '';
ALTER TABLE series DROP CONSTRAINT series_suite_model_precision_phase_batch_context_gpu_sku_key;
ALTER TABLE series ADD CONSTRAINT series_case_key
    UNIQUE (suite, model, precision, phase, batch, context, axes, gpu_sku);
";

/// A run's unique id (`runs.uid`), drawn when the run starts and kept by its journal and its
/// rescue file, so that a replay of the same run (`import run` of one rescue file twice, `run
/// --resume` after its rescue was imported) is refused, never stored twice. NULL for runs
/// stored before it and for runs that are not replays of anything (imported results files).
const V10_RUN_UIDS: &str = r"
ALTER TABLE runs ADD COLUMN uid TEXT;
CREATE UNIQUE INDEX runs_by_uid ON runs (uid);
";

/// The baseline as of a time (`Store::baseline_move`: the newest move before it) and where its
/// lineage began (`Store::lineage_start`: the last accept or import) each in one walk of a
/// covering index, that stops at the first move that answers: without them every read of a
/// lineage walked all of the case's moves, one per night on main, reading each row, for every
/// case of a report. The first replaces V2's `(series_id, id)`, which it extends. The same text
/// on both backends.
const V11_MOVE_INDEXES: &str = r"
CREATE INDEX baseline_moves_by_series_time ON baseline_moves (series_id, id, moved_at_ns);
CREATE INDEX baseline_moves_by_series_kind ON baseline_moves (series_id, kind, id, moved_at_ns);
DROP INDEX baseline_moves_by_series;
";

/// The ordered migrations; the store's version is how many of them it has applied.
pub(crate) const MIGRATIONS: &[&str] = &[
    V1_TABLES,
    V2_INDEXES,
    V3_PROBES,
    V4_PUBLISH,
    V5_EVIDENCE,
    V6_SERVE,
    V7_RUN_CANARIES,
    V8_RUN_GROUPS,
    V9_SERIES_AXES,
    V10_RUN_UIDS,
    V11_MOVE_INDEXES,
];

/// Migrations written out for `PostgreSQL` where [`dialect::ddl`] of the `SQLite` text would not
/// do (a table rebuild): (index in [`MIGRATIONS`], its `PostgreSQL` text).
const PG_MIGRATIONS: &[(usize, &str)] = &[(8, V9_SERIES_AXES_PG)];

/// The migrations that rebuild a table, which `SQLite` runs with foreign keys off.
const REBUILDS: &[usize] = &[8];

/// The schema version this build writes and reads.
#[expect(
    clippy::cast_possible_wrap,
    reason = "a handful of migrations; the count is far below i64::MAX"
)]
pub const LATEST: i64 = MIGRATIONS.len() as i64;

/// Reads the schema version: `PRAGMA user_version` on `SQLite`, the `utilgate_schema` table on
/// `PostgreSQL` (0 where neither was ever written).
pub(crate) fn version(conn: &Conn) -> super::sql::Result<i64> {
    if let Some(c) = conn.sqlite() {
        return Ok(c.pragma_query_value(None, "user_version", |row| row.get(0))?);
    }
    let exists: i64 = conn.query_row(
        "SELECT count(*) FROM information_schema.tables \
         WHERE table_schema = current_schema() AND table_name = 'utilgate_schema'",
        [],
        |r| r.get(0),
    )?;
    if exists == 0 {
        return Ok(0);
    }
    conn.query_row(
        "SELECT coalesce(max(version), 0) FROM utilgate_schema",
        [],
        |r| r.get(0),
    )
}

/// Brings the store up to `target` (normally [`LATEST`]) in one writing transaction (`BEGIN
/// IMMEDIATE`, or `PostgreSQL`'s write lock), so that two processes opening a fresh store at once
/// apply each migration exactly once. On `PostgreSQL` each migration is its DDL rewritten by
/// [`dialect::ddl`]: one schema for both backends.
pub(crate) fn migrate(conn: &mut Conn, path: &Path, target: i64) -> Result<(), StoreError> {
    // A table rebuild drops the old table, which foreign keys would refuse; `SQLite` can only
    // switch them outside a transaction. They are checked before the commit and switched back.
    let rebuild = conn.sqlite().is_some()
        && REBUILDS.iter().any(|&i| {
            version(conn).is_ok_and(|v| usize::try_from(v).is_ok_and(|v| v <= i))
                && usize::try_from(target).is_ok_and(|t| t > i)
        });
    let foreign_keys = match conn.sqlite() {
        Some(c) if rebuild => {
            let on: i64 = c
                .pragma_query_value(None, "foreign_keys", |r| r.get(0))
                .map_err(|e| StoreError::query(path, "read the foreign-key setting", e))?;
            c.pragma_update(None, "foreign_keys", false).map_err(|e| {
                StoreError::query(path, "switch foreign keys off for the migration", e)
            })?;
            Some(on != 0)
        }
        _ => None,
    };
    let migrated = migrate_in_transaction(conn, path, target, rebuild);
    if let (Some(on), Some(c)) = (foreign_keys, conn.sqlite()) {
        c.pragma_update(None, "foreign_keys", on)
            .map_err(|e| StoreError::query(path, "switch foreign keys back on", e))?;
    }
    migrated
}

fn migrate_in_transaction(
    conn: &mut Conn,
    path: &Path,
    target: i64,
    check_foreign_keys: bool,
) -> Result<(), StoreError> {
    let fail = |action| move |e| StoreError::query(path, action, e);
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(fail("begin the schema migration"))?;
    let found = version(&tx).map_err(fail("read the schema version"))?;
    if found > LATEST {
        return Err(StoreError::NewerSchema {
            path: path.to_owned(),
            found,
            known: LATEST,
        });
    }
    if found >= target {
        return Ok(());
    }
    let pg = tx.is_pg();
    if pg {
        tx.execute_batch(dialect::PG_BOOTSTRAP)
            .map_err(fail("create the schema version table"))?;
    }
    for (i, sql) in MIGRATIONS
        .iter()
        .enumerate()
        .take(usize::try_from(target).unwrap_or(0))
        .skip(usize::try_from(found).unwrap_or(0))
    {
        let sql = if pg {
            PG_MIGRATIONS
                .iter()
                .find(|(at, _)| *at == i)
                .map_or_else(|| dialect::ddl(sql), |(_, pg_sql)| (*pg_sql).to_owned())
        } else {
            (*sql).to_owned()
        };
        tx.execute_batch(&sql).map_err(fail("migrate the schema"))?;
    }
    if check_foreign_keys {
        let broken: i64 = tx
            .query_row("SELECT count(*) FROM pragma_foreign_key_check", [], |r| {
                r.get(0)
            })
            .map_err(fail("check foreign keys after the migration"))?;
        if broken > 0 {
            return Err(StoreError::BadValue {
                path: path.to_owned(),
                column: "series (foreign keys)",
                row: broken,
                detail: "the migration would leave rows without the case they refer to".into(),
            });
        }
    }
    let record = if pg {
        format!("DELETE FROM utilgate_schema; INSERT INTO utilgate_schema VALUES ({target});")
    } else {
        format!("PRAGMA user_version = {target}")
    };
    tx.execute_batch(&record)
        .map_err(fail("record the schema version"))?;
    tx.commit().map_err(fail("commit the schema migration"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::Connection;

    fn table_names(conn: &Connection, kind: &str) -> Vec<String> {
        let mut stmt = conn
            .prepare("SELECT name FROM sqlite_master WHERE type = ?1 ORDER BY name")
            .expect("prepare");
        stmt.query_map([kind], |r| r.get(0))
            .expect("query")
            .collect::<Result<_, _>>()
            .expect("rows")
    }

    #[test]
    fn every_migration_applies_in_order_and_is_idempotent() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("s.db");
        let mut conn = Conn::Sqlite(Connection::open(&path).expect("open"));
        for target in 1..=LATEST {
            migrate(&mut conn, &path, target).expect("migrates");
            assert_eq!(version(&conn).expect("version"), target);
        }
        migrate(&mut conn, &path, LATEST).expect("a second run is a no-op");
        let conn = conn.sqlite().expect("sqlite");
        assert_eq!(
            table_names(conn, "table"),
            [
                "baseline_moves",
                "evidence",
                "evidence_blobs",
                "probes",
                "results",
                "run_canaries",
                "run_groups",
                "runs",
                "series",
                "serve_baseline_moves",
                "serve_metrics",
                "serve_repeats",
                "serve_results",
                "serve_series"
            ]
        );
        assert_eq!(table_names(conn, "view"), ["current_baselines"]);
        assert!(table_names(conn, "index").contains(&"results_by_series_time".to_owned()));
    }

    #[test]
    fn v9_keeps_every_case_and_lets_axes_tell_cases_apart() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("s.db");
        let raw = Connection::open(&path).expect("open");
        raw.execute_batch("PRAGMA foreign_keys = ON").expect("fk");
        let mut conn = Conn::Sqlite(raw);
        migrate(&mut conn, &path, 8).expect("v8");
        let c = conn.sqlite().expect("sqlite");
        c.execute_batch(
            "INSERT INTO runs (id, started_at_ns, finished_at_ns, gpu_sku, utilgate_version)
                 VALUES (1, 1, 2, 'h100-sxm', '0.1.0');
             INSERT INTO series (id, suite, model, precision, phase, batch, context, gpu_sku)
                 VALUES (7, 'decode', 'm', 'bf16', 'decode', 1, 64, 'h100-sxm');
             INSERT INTO results (id, run_id, series_id, run_started_at_ns, samples, warmup, env_json)
                 VALUES (3, 1, 7, 1, x'', x'', '{}');
             INSERT INTO baseline_moves (series_id, result_id, kind, reason, moved_at_ns)
                 VALUES (7, 3, 'promote', 'first', 2);",
        )
        .expect("v8 rows");
        migrate(&mut conn, &path, LATEST).expect("v9");
        let c = conn.sqlite().expect("sqlite");
        let fk: i64 = c
            .pragma_query_value(None, "foreign_keys", |r| r.get(0))
            .expect("fk");
        assert_eq!(fk, 1, "foreign keys are back on");
        let kept: (i64, String) = c
            .query_row("SELECT id, axes FROM series", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .expect("the case");
        assert_eq!(kept, (7, String::new()));
        let pointer: i64 = c
            .query_row(
                "SELECT result_id FROM current_baselines WHERE series_id = 7",
                [],
                |r| r.get(0),
            )
            .expect("the baseline survives");
        assert_eq!(pointer, 3);
        let add =
            "INSERT INTO series (suite, model, precision, phase, batch, context, gpu_sku, axes)
                   VALUES ('decode', 'm', 'bf16', 'decode', 1, 64, 'h100-sxm', ?1)";
        c.execute(add, ["mode=graphs"]).expect("another case");
        assert!(c.execute(add, ["mode=graphs"]).is_err(), "one row per case");
        assert!(
            c.execute(add, [""]).is_err(),
            "the case without axes exists"
        );
        let orphans: i64 = c
            .query_row("SELECT count(*) FROM pragma_foreign_key_check", [], |r| {
                r.get(0)
            })
            .expect("check");
        assert_eq!(orphans, 0);
    }

    #[test]
    fn newer_version_is_refused_and_left_alone() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("s.db");
        let raw = Connection::open(&path).expect("open");
        raw.pragma_update(None, "user_version", LATEST + 1)
            .expect("set version");
        let mut conn = Conn::Sqlite(raw);
        let err = migrate(&mut conn, &path, LATEST).expect_err("refused");
        assert!(
            matches!(err, StoreError::NewerSchema { found, known, .. } if found == LATEST + 1 && known == LATEST)
        );
        assert_eq!(version(&conn).expect("version"), LATEST + 1);
    }
}
