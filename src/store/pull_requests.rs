//! The store's half of "a pull request's run is advice": the SQL conditions that keep runs
//! measured for a pull request out of every branch's reference, history and baseline, bounded
//! in the query rather than filtered after it (a fork may name its branch `main`, and a pull
//! request's store may be copied or imported into the shared one). The same rule as
//! [`super::meta::is_pull_request_run`]. Pure: builds SQL text.

use super::meta::PULL_REQUEST_TRIGGER;

/// True for a row of `runs` (under `alias`) measured for a pull request: it has a pull
/// request's number, or a `pull_request*` trigger. Never NULL, so `NOT` of it is exact.
pub(crate) fn for_a_pull_request(alias: &str) -> String {
    let len = PULL_REQUEST_TRIGGER.len();
    format!(
        "({alias}.pr_number IS NOT NULL OR ({alias}.trigger IS NOT NULL \
           AND substr({alias}.trigger, 1, {len}) = '{PULL_REQUEST_TRIGGER}'))"
    )
}

/// True for a row of `runs` (under `alias`) that a branch's reference and history may hold.
pub(crate) fn not_for_a_pull_request(alias: &str) -> String {
    format!("NOT {}", for_a_pull_request(alias))
}

/// True for a row of `baseline_moves` (under `alias`) that may set a baseline: anything but a
/// promotion onto a result of a pull request's run (which a pull request's own store could
/// hold, and `store copy` would carry over). Moves by hand (`accept`, `import`) stay.
pub(crate) fn a_move_that_counts(alias: &str) -> String {
    a_move_onto("results", alias)
}

/// [`a_move_that_counts`] for `serve_baseline_moves` (the service results' table).
pub(crate) fn a_serve_move_that_counts(alias: &str) -> String {
    a_move_onto("serve_results", alias)
}

fn a_move_onto(results: &str, alias: &str) -> String {
    format!(
        "NOT ({alias}.kind = 'promote' AND EXISTS (SELECT 1 FROM {results} pr_r \
           JOIN runs pr_u ON pr_u.id = pr_r.run_id \
           WHERE pr_r.id = {alias}.result_id AND {}))",
        for_a_pull_request("pr_u")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The SQL rule and the Rust rule agree on every shape of run, on a real `SQLite`.
    #[test]
    fn the_sql_rule_is_the_rust_rule() {
        let conn = rusqlite::Connection::open_in_memory().expect("opens");
        conn.execute_batch(
            "CREATE TABLE runs (id INTEGER PRIMARY KEY, trigger TEXT, pr_number INTEGER)",
        )
        .expect("creates");
        let shapes: [(Option<&str>, Option<u64>); 8] = [
            (None, None),
            (Some("schedule"), None),
            (Some("manual"), None),
            (Some("pull_request"), None),
            (Some("pull_request_target"), None),
            (Some("schedule"), Some(7)),
            (None, Some(7)),
            (Some("pull"), None),
        ];
        let sql = format!(
            "SELECT {} FROM runs u WHERE id = ?1",
            for_a_pull_request("u")
        );
        for (i, (trigger, pr)) in (0_i64..).zip(shapes) {
            conn.execute(
                "INSERT INTO runs (id, trigger, pr_number) VALUES (?1, ?2, ?3)",
                rusqlite::params![i, trigger, pr.map(|n| i64::try_from(n).expect("small"))],
            )
            .expect("inserts");
            let sql_says: bool = conn.query_row(&sql, [i], |r| r.get(0)).expect("reads");
            assert_eq!(
                sql_says,
                super::super::meta::is_pull_request_run(trigger, pr),
                "{trigger:?} {pr:?}"
            );
        }
    }
}
