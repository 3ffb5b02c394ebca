//! The schema's two texts (`store/migrations/{sqlite,postgres}`) end in the same store: after
//! every migration, both backends hold the same tables and views with the same columns, in the
//! same order, of the same types (mapped between the dialects) and nullability.

use super::*;

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

mod on_postgres {
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
