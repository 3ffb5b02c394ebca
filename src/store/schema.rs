//! The store's schema as embedded, ordered migrations, applied by number (`PRAGMA user_version`
//! on `SQLite`, the `utilgate_schema` table on `PostgreSQL`). Does I/O on the connection it is
//! given.
//!
//! Each migration is one SQL file per backend, `migrations/sqlite/NNNN_name.sql` and
//! `migrations/postgres/NNNN_name.sql`, each in its own dialect, embedded with `include_str!`:
//! migration `N` upgrades a store from version `N - 1` to `N`. Migrations are only ever
//! appended: a released one is never edited. A store whose version is newer than [`LATEST`] is
//! refused, never downgraded. The two backends end with the same tables and columns (tested).
//!
//! Shape: `runs` (one row per `utilgate run`), `series` (a case key on one GPU SKU, so that
//! results carry one integer instead of seven columns), `results` (one row per case per run, raw
//! samples as compact blobs, see `samples.rs`), and `baseline_moves` (every move of a baseline
//! pointer; the current pointer of a series is its latest move, see the `current_baselines`
//! view). Timestamps are integer nanoseconds since the Unix epoch (UTC). History is
//! append-only, enforced by triggers.

use std::path::Path;

use super::error::StoreError;
use super::sql::{Conn, TransactionBehavior};

/// One migration: its number (the version it brings a store to), its files' name and its
/// text for each backend.
pub(crate) struct Migration {
    pub(crate) version: i64,
    /// What a failure says it was doing: `apply migration NNNN_name`.
    pub(crate) action: &'static str,
    pub(crate) sqlite: &'static str,
    pub(crate) postgres: &'static str,
    /// Whether its `SQLite` text rebuilds a table, which `SQLite` runs with foreign keys off.
    pub(crate) rebuilds: bool,
}

macro_rules! migration {
    ($version:literal, $file:literal) => {
        migration!($version, $file, false)
    };
    ($version:literal, $file:literal, $rebuilds:literal) => {
        Migration {
            version: $version,
            action: concat!("apply migration ", $file),
            sqlite: include_str!(concat!("migrations/sqlite/", $file, ".sql")),
            postgres: include_str!(concat!("migrations/postgres/", $file, ".sql")),
            rebuilds: $rebuilds,
        }
    };
}

/// The ordered migrations; the store's version is the number of the last one it has applied.
pub(crate) const MIGRATIONS: &[Migration] = &[
    migration!(1, "0001_tables"),
    migration!(2, "0002_indexes"),
    migration!(3, "0003_probes"),
    migration!(4, "0004_publish"),
    migration!(5, "0005_evidence"),
    migration!(6, "0006_serve"),
    migration!(7, "0007_run_canaries"),
    migration!(8, "0008_run_groups"),
    migration!(9, "0009_series_axes", true),
    migration!(10, "0010_run_uids"),
    migration!(11, "0011_move_indexes"),
    migration!(12, "0012_budget_records"),
    migration!(13, "0013_series_parallel", true),
    migration!(14, "0014_result_quality"),
    migration!(15, "0015_serve_sweeps", true),
    migration!(16, "0016_result_speculation"),
    migration!(17, "0017_result_energy"),
];

/// Run once before the first migration on `PostgreSQL`: the version table (`SQLite` keeps the
/// version in `PRAGMA user_version`) and the function the append-only triggers call.
const PG_BOOTSTRAP: &str = include_str!("migrations/postgres/bootstrap.sql");

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
/// apply each migration exactly once, each in its backend's own text.
pub(crate) fn migrate(conn: &mut Conn, path: &Path, target: i64) -> Result<(), StoreError> {
    // A table rebuild drops the old table, which foreign keys would refuse; `SQLite` can only
    // switch them outside a transaction. They are checked before the commit and switched back.
    let rebuild = conn.sqlite().is_some()
        && version(conn).is_ok_and(|found| {
            MIGRATIONS
                .iter()
                .any(|m| m.rebuilds && m.version > found && m.version <= target)
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
        tx.execute_batch(PG_BOOTSTRAP)
            .map_err(fail("create the schema version table"))?;
    }
    for m in MIGRATIONS
        .iter()
        .filter(|m| m.version > found && m.version <= target)
    {
        let sql = if pg { m.postgres } else { m.sqlite };
        tx.execute_batch(sql).map_err(fail(m.action))?;
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
                "result_budgets",
                "result_energy",
                "result_quality",
                "result_repeat_costs",
                "result_speculation",
                "results",
                "run_budget_unstarted",
                "run_budgets",
                "run_canaries",
                "run_groups",
                "runs",
                "series",
                "serve_baseline_moves",
                "serve_metrics",
                "serve_repeats",
                "serve_results",
                "serve_series",
                "serve_sweep_points"
            ]
        );
        assert_eq!(table_names(conn, "view"), ["current_baselines"]);
        assert!(table_names(conn, "index").contains(&"results_by_series_time".to_owned()));
    }

    /// A new `SQLite` store with foreign keys on, migrated to `version`.
    fn sqlite_store_at(version: i64) -> (tempfile::TempDir, std::path::PathBuf, Conn) {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("s.db");
        let raw = Connection::open(&path).expect("open");
        raw.execute_batch("PRAGMA foreign_keys = ON").expect("fk");
        let mut conn = Conn::Sqlite(raw);
        migrate(&mut conn, &path, version).expect("migrates");
        (dir, path, conn)
    }

    #[test]
    fn v9_keeps_every_case_and_lets_axes_tell_cases_apart() {
        let (_dir, path, mut conn) = sqlite_store_at(8);
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

    /// v13: every stored case keeps its key at tp = ep = 1, and tp and ep tell cases apart.
    #[test]
    fn v13_keeps_every_case_and_lets_tp_and_ep_tell_cases_apart() {
        let (_dir, path, mut conn) = sqlite_store_at(12);
        let c = conn.sqlite().expect("sqlite");
        c.execute_batch(
            "INSERT INTO runs (id, started_at_ns, finished_at_ns, gpu_sku, utilgate_version)
                 VALUES (1, 1, 2, 'h100-sxm', '0.2.0');
             INSERT INTO series (id, suite, model, precision, phase, batch, context, gpu_sku, axes)
                 VALUES (7, 'decode', 'm', 'bf16', 'decode', 1, 64, 'h100-sxm', 'mode=graphs');
             INSERT INTO results (id, run_id, series_id, run_started_at_ns, samples, warmup, env_json)
                 VALUES (3, 1, 7, 1, x'', x'', '{}');
             INSERT INTO baseline_moves (series_id, result_id, kind, reason, moved_at_ns)
                 VALUES (7, 3, 'promote', 'first', 2);",
        )
        .expect("v12 rows");
        migrate(&mut conn, &path, LATEST).expect("v13");
        let c = conn.sqlite().expect("sqlite");
        let kept: (i64, String, i64, i64) = c
            .query_row("SELECT id, axes, tp, ep FROM series", [], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
            })
            .expect("the case");
        assert_eq!(kept, (7, "mode=graphs".to_owned(), 1, 1));
        let pointer: i64 = c
            .query_row(
                "SELECT result_id FROM current_baselines WHERE series_id = 7",
                [],
                |r| r.get(0),
            )
            .expect("the baseline survives");
        assert_eq!(pointer, 3);
        let add = "INSERT INTO series (suite, model, precision, phase, batch, context, gpu_sku,
                                       axes, tp, ep)
                   VALUES ('decode', 'm', 'bf16', 'decode', 1, 64, 'h100-sxm', 'mode=graphs',
                           ?1, ?2)";
        c.execute(add, [4, 1]).expect("the same case on 4 GPUs");
        c.execute(add, [4, 8]).expect("and with experts over 8");
        assert!(c.execute(add, [4, 1]).is_err(), "one row per case");
        assert!(c.execute(add, [1, 1]).is_err(), "the one-GPU case exists");
        assert!(c.execute(add, [0, 1]).is_err(), "tp is at least 1");
        let orphans: i64 = c
            .query_row("SELECT count(*) FROM pragma_foreign_key_check", [], |r| {
                r.get(0)
            })
            .expect("check");
        assert_eq!(orphans, 0);
    }

    #[test]
    #[expect(
        clippy::disallowed_methods,
        reason = "the test lists the migration files on disk"
    )]
    fn migrations_are_numbered_in_order_and_every_file_is_listed() {
        let name = |m: &Migration| m.action.trim_start_matches("apply migration ").to_owned();
        for (i, m) in MIGRATIONS.iter().enumerate() {
            assert_eq!(usize::try_from(m.version).ok(), Some(i + 1), "{}", m.action);
            assert!(
                name(m).starts_with(&format!("{:04}_", m.version)),
                "{} is numbered {}",
                m.action,
                m.version
            );
            assert!(!m.sqlite.trim().is_empty() && !m.postgres.trim().is_empty());
        }
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/store/migrations");
        for backend in ["sqlite", "postgres"] {
            let mut on_disk: Vec<String> = std::fs::read_dir(dir.join(backend))
                .expect("the migrations directory")
                .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
                .filter(|n| n != "bootstrap.sql")
                .collect();
            on_disk.sort();
            let listed: Vec<String> = MIGRATIONS
                .iter()
                .map(|m| format!("{}.sql", name(m)))
                .collect();
            assert_eq!(
                on_disk, listed,
                "{backend}: every file is in MIGRATIONS, in order"
            );
        }
    }

    /// What `sqlite_master` says of a store: every table, index, view and trigger with its SQL.
    fn schema_of(conn: &Connection) -> Vec<(String, String, Option<String>)> {
        let mut stmt = conn
            .prepare("SELECT type, name, sql FROM sqlite_master ORDER BY type, name")
            .expect("prepare");
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .expect("query")
            .collect::<Result<_, _>>()
            .expect("rows")
    }

    #[test]
    #[expect(clippy::disallowed_methods, reason = "the test reads a fixture")]
    fn a_store_at_v11_from_the_files_is_the_store_utilgate_wrote_before_them() {
        // tests/fixtures/stores/v11-budget.sql: a store written by utilgate when the
        // migrations were Rust strings (and PostgreSQL's were translated from SQLite's).
        let dump = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/stores/v11-budget.sql"),
        )
        .expect("fixture");
        let old = Connection::open_in_memory().expect("open");
        old.execute_batch(&dump).expect("restore");
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("s.db");
        let mut conn = Conn::Sqlite(Connection::open(&path).expect("open"));
        migrate(&mut conn, &path, 11).expect("migrates");
        let new = conn.sqlite().expect("sqlite");
        let (old, new) = (schema_of(&old), schema_of(new));
        assert_eq!(new.len(), 52, "{new:#?}");
        assert_eq!(old, new);
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
