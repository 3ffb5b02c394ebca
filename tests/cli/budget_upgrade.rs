//! A store written by utilgate at schema version 11, when a budgeted night's records travelled
//! as JSON inside `runs.config_json` and `results.summary_json`, upgraded in place by this
//! binary on `SQLite` and on `PostgreSQL` (tests/fixtures/stores/README.md: four runs, three of
//! them budgeted, one cut short with a case never started): every row is kept, the budget
//! section of each run's report is what the older utilgate printed, and the next night plans
//! from the costs the older nights recorded.

use std::collections::BTreeMap;
use std::path::Path;

use crate::env::{TestEnv, stderr, stdout};
use crate::pg_cluster;

/// The tables of a v11 store (0012 adds four, which the upgrade fills from the JSON).
const V11_TABLES: [&str; 14] = [
    "runs",
    "series",
    "results",
    "baseline_moves",
    "probes",
    "evidence_blobs",
    "evidence",
    "serve_series",
    "serve_results",
    "serve_repeats",
    "serve_metrics",
    "serve_baseline_moves",
    "run_canaries",
    "run_groups",
];

/// What the upgrade reads out of the fixture's JSON: 3 budgeted nights, 1 case never started,
/// 5 cases with a budget record, 15 repeats' costs over 7 results.
const LIFTED: [(&str, i64); 4] = [
    ("run_budgets", 3),
    ("run_budget_unstarted", 1),
    ("result_budgets", 5),
    ("result_repeat_costs", 15),
];

fn fixture(name: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/stores")
            .join(name),
    )
    .expect("fixture")
}

/// The config the fixture was written with.
fn fixture_env() -> TestEnv {
    let env = TestEnv::new();
    env.write_config(&TestEnv::config_with("\n[run]\ngrace_minutes = 0.05\n"));
    env
}

/// A budgeted night with `UTILGATE_DB` set to `db` (the env's own file when `None`).
fn budgeted_night(env: &TestEnv, db: Option<&str>) -> serde_json::Value {
    let mut cmd = env.cmd();
    cmd.args([
        "run",
        "--trusted",
        "--branch",
        "main",
        "--git-sha",
        "0123456789abcdef",
        "--format",
        "json",
        "--budget",
        "10m",
    ])
    .env("GITHUB_ACTIONS", "true");
    if let Some(db) = db {
        cmd.env("UTILGATE_DB", db);
    }
    let out = cmd.output().expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    serde_json::from_str(&stdout(&out)).unwrap_or_else(|e| panic!("{e}: {}", stdout(&out)))
}

/// Each older run's budget section, through the binary, is what the older utilgate printed.
fn assert_same_budget_reports(env: &TestEnv, db: Option<&str>) {
    let before: BTreeMap<String, serde_json::Value> =
        serde_json::from_str(&fixture("v11-budget.budgets.json")).expect("json");
    assert_eq!(before.len(), 3);
    for (run, section) in &before {
        let mut cmd = env.cmd();
        cmd.args(["report", run, "--format", "json"]);
        if let Some(db) = db {
            cmd.env("UTILGATE_DB", db);
        }
        let out = cmd.output().expect("runs");
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let json: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("json");
        // Every record as the older utilgate printed it; its closing lines too, except the one
        // defect fixed since (#27 item 17): a case the plan could not resolve that was
        // decisive after all is no longer listed as unresolved.
        let mut old = section.clone();
        let decisive: Vec<String> = old["cases"]
            .as_array()
            .expect("cases")
            .iter()
            .filter(|c| c["stop"] == "decisive")
            .map(|c| c["case"].as_str().expect("case").to_owned())
            .collect();
        if let Some(lines) = old["lines"].as_array_mut() {
            lines.retain(|l| {
                let l = l.as_str().unwrap_or("");
                !(l.starts_with("Unresolved within the budget")
                    && decisive.iter().any(|d| l.contains(d.as_str())))
            });
        }
        assert_eq!(json["budget"], old, "run {run}");
    }
    // The run whose budget ran out still names what it cut and what it never started.
    let lines = before["4"]["lines"].to_string();
    assert!(lines.contains("Not measured"), "{lines}");
}

/// The next night planned from the recorded costs: each case's plan has history.
fn assert_planned_from_history(night: &serde_json::Value) {
    let cases = night["budget"]["cases"].as_array().expect("cases");
    assert_eq!(cases.len(), 2, "{night}");
    for c in cases {
        assert_ne!(c["note"], "no_history", "{c}");
    }
}

#[test]
fn a_v11_store_with_budgeted_nights_upgrades_in_place_and_keeps_its_budget_reports() {
    let env = fixture_env();
    std::fs::create_dir_all(env.db().parent().expect("dir")).expect("mkdir");
    let dump = fixture("v11-budget.sql");
    let before = env.path().join("before.db");
    for path in [env.db(), before.clone()] {
        rusqlite::Connection::open(&path)
            .expect("open")
            .execute_batch(&dump)
            .expect("restore");
    }
    let version = |c: &rusqlite::Connection| -> i64 {
        c.pragma_query_value(None, "user_version", |r| r.get(0))
            .expect("version")
    };
    let count = |c: &rusqlite::Connection, t: &str| -> i64 {
        c.query_row(&format!("SELECT count(*) FROM {t}"), [], |r| r.get(0))
            .expect("count")
    };
    let old = rusqlite::Connection::open(&before).expect("open");
    assert_eq!(version(&old), 11);
    let rows: Vec<i64> = V11_TABLES.iter().map(|t| count(&old, t)).collect();
    assert_eq!(
        rows.iter().sum::<i64>(),
        19,
        "4 runs, 2 series, 7 results, 6 moves"
    );

    // A reader never upgrades: it names the command that does, and leaves the file alone.
    let out = env
        .cmd()
        .args(["report", "4", "--format", "json"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    assert!(stderr(&out).contains("utilgate run"), "{}", stderr(&out));

    // The next night upgrades the store, and plans from the costs the older nights recorded.
    assert_planned_from_history(&budgeted_night(&env, None));
    let conn = rusqlite::Connection::open(env.db()).expect("open");
    // Upgraded to the latest schema (v13 gave the series tp and ep, v14 the accuracy guard's
    // `result_quality`, v15 the service sweeps, v16 speculation's `result_speculation`, v17 the energy records `result_energy`).
    assert_eq!(version(&conn), utilgate::store::SCHEMA_VERSION);
    conn.execute(
        "ATTACH DATABASE ?1 AS before",
        [before.to_str().expect("utf-8")],
    )
    .expect("attach");
    for (t, n) in V11_TABLES.iter().zip(&rows) {
        // The v11 table's own columns: a later migration may add one (13: series.tp and ep, 15: serve_series.sweep).
        let columns: Vec<String> = conn
            .prepare(&format!(
                "SELECT name FROM pragma_table_info('{t}', 'before')"
            ))
            .expect("columns")
            .query_map([], |r| r.get(0))
            .expect("columns")
            .collect::<Result<_, _>>()
            .expect("columns");
        let columns = columns.join(", ");
        let lost: i64 = conn
            .query_row(
                &format!(
                    "SELECT count(*) FROM (SELECT {columns} FROM before.{t} \
                     EXCEPT SELECT {columns} FROM main.{t})"
                ),
                [],
                |r| r.get(0),
            )
            .expect("compare");
        assert_eq!(lost, 0, "{t}: every row is kept as it was");
        assert!(count(&conn, t) >= *n, "{t}");
    }
    // The upgrade's rows, and the new night's (one run, two cases, 2+ repeats each).
    for (t, n) in LIFTED {
        let old_runs: i64 = conn
            .query_row(
                &format!(
                    "SELECT count(*) FROM {t} WHERE {} IN (SELECT id FROM before.{})",
                    if t.starts_with("run_") {
                        "run_id"
                    } else {
                        "result_id"
                    },
                    if t.starts_with("run_") {
                        "runs"
                    } else {
                        "results"
                    }
                ),
                [],
                |r| r.get(0),
            )
            .expect("count");
        assert_eq!(old_runs, n, "{t}");
    }
    assert_eq!(count(&conn, "run_budgets"), 4);
    assert_eq!(count(&conn, "result_budgets"), 7);
    assert_same_budget_reports(&env, None);
}

#[test]
#[ignore = "needs the PostgreSQL server binaries (Debian's postgresql); .ci/run runs them: cargo test -- --ignored pg_store"]
fn a_v11_pg_store_with_budgeted_nights_upgrades_in_place_and_keeps_its_budget_reports() {
    let cluster = pg_cluster::shared();
    let url = cluster.url(&cluster.new_database());
    let connect = || postgres::Client::connect(&url, postgres::NoTls).expect("connect");
    connect()
        .batch_execute(&fixture("v11-budget.pg.sql"))
        .expect("restore");
    // Every row of a table as text over the given columns, sorted.
    let rows_of = |c: &mut postgres::Client, t: &str, columns: &str| -> Vec<String> {
        let mut rows: Vec<String> = c
            .query(&format!("SELECT ROW({columns})::text FROM {t}"), &[])
            .expect("rows")
            .iter()
            .map(|r| r.get(0))
            .collect();
        rows.sort();
        rows
    };
    // Each v11 table's own columns: later migrations add some (13: series.tp and ep, 15:
    // serve_series.sweep), which the rows kept are not compared on.
    let columns_of = |c: &mut postgres::Client, t: &str| -> String {
        c.query(
            "SELECT column_name::text FROM information_schema.columns \
             WHERE table_schema = current_schema() AND table_name = $1 ORDER BY ordinal_position",
            &[&t],
        )
        .expect("columns")
        .iter()
        .map(|r| r.get::<_, String>(0))
        .collect::<Vec<_>>()
        .join(", ")
    };
    let mut c = connect();
    let version = |c: &mut postgres::Client| -> i64 {
        c.query_one("SELECT max(version) FROM utilgate_schema", &[])
            .expect("version")
            .get(0)
    };
    assert_eq!(version(&mut c), 11);
    let columns: Vec<String> = V11_TABLES.iter().map(|t| columns_of(&mut c, t)).collect();
    let before: Vec<Vec<String>> = V11_TABLES
        .iter()
        .zip(&columns)
        .map(|(t, cols)| rows_of(&mut c, t, cols))
        .collect();
    assert_eq!(before.iter().map(Vec::len).sum::<usize>(), 19);

    let env = fixture_env();
    assert_planned_from_history(&budgeted_night(&env, Some(&url)));
    assert_eq!(version(&mut c), utilgate::store::SCHEMA_VERSION);
    for ((t, rows), cols) in V11_TABLES.iter().zip(&before).zip(&columns) {
        let after = rows_of(&mut c, t, cols);
        let kept = rows
            .iter()
            .filter(|r| after.binary_search(r).is_ok())
            .count();
        assert_eq!(kept, rows.len(), "{t}: every row is kept as it was");
    }
    for (t, n) in LIFTED {
        let (key, parent) = if t.starts_with("run_") {
            ("run_id", "runs")
        } else {
            ("result_id", "results")
        };
        // The fixture's ids are the lowest: runs 1-4, results 1-7.
        let max_id: i64 = if parent == "runs" { 4 } else { 7 };
        let got: i64 = c
            .query_one(
                &format!("SELECT count(*) FROM {t} WHERE {key} <= $1"),
                &[&max_id],
            )
            .expect("count")
            .get(0);
        assert_eq!(got, n, "{t}");
    }
    assert_same_budget_reports(&env, Some(&url));
    // The upgraded store has the schema of a new one.
    let fresh = cluster.url(&cluster.new_database());
    let out = env
        .cmd()
        .args(["run", "--trusted", "--branch", "main"])
        .env("UTILGATE_DB", &fresh)
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let columns = |url: &str| -> Vec<String> {
        postgres::Client::connect(url, postgres::NoTls)
            .expect("connect")
            .query(
                "SELECT table_name::text || '.' || column_name::text || ' ' || data_type::text \
                 FROM information_schema.columns WHERE table_schema = current_schema() \
                 ORDER BY table_name::text COLLATE \"C\", ordinal_position",
                &[],
            )
            .expect("columns")
            .iter()
            .map(|r| r.get(0))
            .collect()
    };
    let upgraded = columns(&url);
    assert!(
        upgraded.iter().any(|c| c == "result_budgets.stop text"),
        "{upgraded:?}"
    );
    assert_eq!(upgraded, columns(&fresh));
}

#[test]
fn a_rescue_file_from_v11_keeps_its_budget_records_when_imported() {
    let env = fixture_env();
    std::fs::create_dir_all(env.db().parent().expect("dir")).expect("mkdir");
    rusqlite::Connection::open(env.db())
        .expect("open")
        .execute_batch(&fixture("v11-budget.sql"))
        .expect("restore");
    let file = env.write("rescue.json", &fixture("v11-budget.rescue.json"));
    let import = || {
        env.cmd()
            .args(["import", "run"])
            .arg(&file)
            .output()
            .expect("imports")
    };
    let out = import();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("stored run 5"), "{}", stdout(&out));
    let json = env.json(&["report", "5"]);
    let want: serde_json::Value =
        serde_json::from_str(&fixture("v11-budget.rescue.budget.json")).expect("json");
    assert_eq!(json["budget"], want);
    // The repeats' costs, which later nights plan from, are in their table.
    let conn = rusqlite::Connection::open(env.db()).expect("open");
    let costs: i64 = conn
        .query_row(
            "SELECT count(*) FROM result_repeat_costs c JOIN results r ON r.id = c.result_id \
             WHERE r.run_id = 5",
            [],
            |r| r.get(0),
        )
        .expect("count");
    assert_eq!(costs, 4, "two cases of two repeats");
    // Its id is the one the file carries: imported twice, it is refused.
    let again = import();
    assert_eq!(again.status.code(), Some(2), "{}", stdout(&again));
}
