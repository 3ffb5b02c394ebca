//! The schema's two texts (`store/migrations/{sqlite,postgres}`) end in the same store: after
//! every migration, both backends hold the same tables and views with the same columns, in the
//! same order, of the same types (mapped between the dialects) and nullability. And the
//! budget records migration 0012 reads out of older rows' JSON, on both backends.

use super::*;
use crate::compare::budget::{CaseRecord, NightRecord, PlanNote, RepeatCost, Stop};

on_both_backends!(unreadable_budget_json_is_left_out_and_the_rest_is_lifted);

/// A store at version 11 with a good budgeted night and records the old readers skipped: a
/// night without `used_s`, a case whose note is unknown, one whose steps are not a whole
/// number, a cost list with an entry that is not a cost. Migrated to 12, the good records are
/// in their tables, the rest left out (as the old readers left them out), and every run and
/// result is still there.
fn unreadable_budget_json_is_left_out_and_the_rest_is_lifted(b: Backend) {
    let (_dir, path) = temp_location(b);
    v11_store_with_budget_json(b, &path);
    let store = Store::open(&path, TIMEOUT).expect("opens (migrates to the latest)");
    assert_eq!(count(&path, "runs"), 2);
    assert_eq!(count(&path, "results"), 3);
    assert_eq!(count(&path, "run_budgets"), 1);
    let first = store.run(RunId(1)).expect("reads").expect("run 1");
    assert_eq!(
        first.budget_night,
        Some(NightRecord {
            budget_s: 600.0,
            grace_s: 3.0,
            planned_s: 1.5,
            reserve_s: 90.0,
            budget_to_resolve_all_s: None,
            not_started: vec!["b/8".into(), "a/1".into()],
            used_s: 12.25,
            stopped: true,
        })
    );
    assert_eq!(
        first.results[0].budget,
        Some(CaseRecord {
            note: PlanNote::OverBudget,
            planned_repeats: 4,
            steps: 20,
            first_repeats: 2,
            confirm_repeats: 1,
            time_s: 2.5,
            stop: Stop::Budget,
            needed_repeats: None,
            needed_s: Some(0.75),
        })
    );
    assert_eq!(first.results[1].budget, None, "an unknown note");
    let second = store.run(RunId(2)).expect("reads").expect("run 2");
    assert_eq!(second.budget_night, None, "a night without used_s");
    assert_eq!(second.results[0].budget, None, "2.5 steps");
    let cost = RepeatCost {
        wall_s: 0.5,
        steps_s: 0.25,
        steps: 20,
        warmup_s: 0.125,
        warmup_steps: 2,
    };
    assert_eq!(store.repeat_costs(1).expect("costs"), [cost, cost]);
    assert_eq!(
        store.repeat_costs(2).expect("costs"),
        [],
        "one entry is not a cost"
    );
    assert_eq!(store.repeat_costs(3).expect("costs"), [cost]);
}

/// A store at version 11 at `path`, holding the rows the test above describes.
fn v11_store_with_budget_json(b: Backend, path: &Path) {
    let mut conn = match b {
        Backend::Sqlite => {
            std::fs::create_dir_all(path.parent().expect("dir")).expect("mkdir");
            sql::Conn::Sqlite(Connection::open(path).expect("open"))
        }
        Backend::Pg => {
            let url = path.to_str().expect("url");
            sql::connect_pg(&sql::PgTarget::parse(url).expect("url")).expect("connect")
        }
    };
    crate::store::schema::migrate(&mut conn, path, 11).expect("v11");
    let night = r#"{"gate": {}, "budget_night": {"budget_s": 600.0, "grace_s": 3.0,
        "planned_s": 1.5, "reserve_s": 90.0, "budget_to_resolve_all_s": null,
        "not_started": ["b/8", "a/1"], "used_s": 12.25, "stopped": true}}"#;
    let no_used = night.replace(r#""used_s": 12.25, "#, "");
    for (id, config) in [(1, night), (2, no_used.as_str())] {
        conn.execute(
            "INSERT INTO runs (id, started_at_ns, finished_at_ns, gpu_sku, utilgate_version,
                               config_json)
             VALUES (?1, ?2, ?2, 'h100-sxm', '0.1.0', ?3)",
            sql::params![id, id * 1000, config],
        )
        .expect("run");
    }
    conn.execute(
        "INSERT INTO series (id, suite, model, precision, phase, batch, context, gpu_sku)
         VALUES (1, 'decode', 'm', 'bf16', 'decode', 1, 64, 'h100-sxm'),
                (2, 'decode', 'm', 'bf16', 'decode', 8, 64, 'h100-sxm')",
        [],
    )
    .expect("series");
    let record = |note: &str, steps: &str| {
        format!(
            r#""budget": {{"note": "{note}", "planned_repeats": 4, "steps": {steps},
            "first_repeats": 2, "confirm_repeats": 1, "time_s": 2.5, "stop": "budget",
            "needed_repeats": null, "needed_s": 0.75}}"#
        )
    };
    let cost =
        r#"{"wall_s": 0.5, "steps_s": 0.25, "steps": 20, "warmup_s": 0.125, "warmup_steps": 2}"#;
    let summaries = [
        format!(
            r#"{{"p95_ms": 6.1, {}, "cost": [{cost}, {cost}]}}"#,
            record("over_budget", "20")
        ),
        format!(
            r#"{{{}, "cost": [{cost}, {{"wall_s": "slow"}}]}}"#,
            record("bogus", "20")
        ),
        format!(r#"{{{}, "cost": [{cost}]}}"#, record("resolved", "2.5")),
    ];
    for (id, (run, summary)) in [1_i64, 1, 2].into_iter().zip(&summaries).enumerate() {
        conn.execute(
            "INSERT INTO results (id, run_id, series_id, run_started_at_ns, summary_json,
                                  samples, warmup, env_json)
             VALUES (?1, ?2, ?6, ?3, ?4, ?5, ?5, '{}')",
            sql::params![
                i64::try_from(id).expect("id") + 1,
                run,
                run * 1000,
                summary,
                samples::encode(&[vec![6.0, 6.1]]),
                if id == 1 { 2_i64 } else { 1 },
            ],
        )
        .expect("result");
    }
}

/// One column: (table, column, type in `PostgreSQL`'s words, NOT NULL).
type Column = (String, String, String, bool);

fn sqlite_columns(store: &Store) -> (Vec<Column>, Vec<String>) {
    let columns = store
        .conn
        .prepare_cached(
            "SELECT m.name, p.name, p.type, (p.\"notnull\" OR p.pk > 0)
             FROM sqlite_master m JOIN pragma_table_info(m.name) p
             WHERE m.type = 'table' ORDER BY m.name, p.cid",
        )
        .and_then(|mut stmt| {
            stmt.query_map([], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get::<_, String>(2)?, r.get(3)?))
            })?
            .collect::<sql::Result<Vec<(String, String, String, bool)>>>()
        })
        .expect("columns");
    let columns = columns
        .into_iter()
        .map(|(t, c, ty, not_null)| {
            let pg = match ty.as_str() {
                "INTEGER" => "bigint",
                "REAL" => "double precision",
                "TEXT" => "text",
                "BLOB" => "bytea",
                other => panic!("{t}.{c}: a type STRICT does not allow: {other}"),
            };
            (t, c, pg.to_owned(), not_null)
        })
        .collect();
    (
        columns,
        names(store, "SELECT name FROM sqlite_master WHERE type = 'view'"),
    )
}

fn pg_columns(store: &Store) -> (Vec<Column>, Vec<String>) {
    let columns = store
        .conn
        .prepare_cached(
            "SELECT c.table_name::text, c.column_name::text, c.data_type::text,
                    c.is_nullable = 'NO'
             FROM information_schema.columns c
             JOIN information_schema.tables t
               ON t.table_schema = c.table_schema AND t.table_name = c.table_name
             WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE'
               AND c.table_name <> 'utilgate_schema'
             ORDER BY c.ordinal_position",
        )
        .and_then(|mut stmt| {
            stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
                .collect::<sql::Result<Vec<Column>>>()
        })
        .expect("columns");
    let views = names(
        store,
        "SELECT table_name::text FROM information_schema.views \
         WHERE table_schema = current_schema()",
    );
    (columns, views)
}

fn names(store: &Store, sql: &str) -> Vec<String> {
    let mut names = store
        .conn
        .prepare_cached(sql)
        .and_then(|mut stmt| {
            stmt.query_map([], |r| r.get(0))?
                .collect::<sql::Result<Vec<String>>>()
        })
        .expect("names");
    names.sort();
    names
}

/// Table by table (sorted by name; each table's columns in their order).
fn by_table(mut columns: Vec<Column>) -> Vec<Column> {
    // A stable sort keeps each table's columns in their order.
    columns.sort_by(|a, b| a.0.cmp(&b.0));
    columns
}

mod both_backends_on_postgres {
    use super::*;

    #[test]
    #[ignore = "needs the PostgreSQL server binaries (Debian's postgresql); .ci/run runs them: cargo test -- --ignored on_postgres"]
    fn both_backends_end_with_the_same_tables_and_columns() {
        let (_dir, _, sqlite) = temp_store(Backend::Sqlite);
        let (_, _, pg) = temp_store(Backend::Pg);
        let (sqlite_columns, sqlite_views) = sqlite_columns(&sqlite);
        let (pg_columns, pg_views) = pg_columns(&pg);
        let (sqlite_columns, pg_columns) = (by_table(sqlite_columns), by_table(pg_columns));
        assert!(sqlite_columns.len() > 100, "{sqlite_columns:#?}");
        assert_eq!(sqlite_columns, pg_columns);
        assert_eq!(sqlite_views, ["current_baselines"]);
        assert_eq!(sqlite_views, pg_views);
        let tables: std::collections::BTreeSet<&str> =
            sqlite_columns.iter().map(|c| c.0.as_str()).collect();
        let copied: std::collections::BTreeSet<&str> =
            crate::store::copy::TABLES.iter().map(|t| t.0).collect();
        assert_eq!(tables, copied, "`store copy` copies every table");
    }
}
