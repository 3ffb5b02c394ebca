//! Tests of the store against real `SQLite` files in temporary directories and, the same tests,
//! against a real `PostgreSQL` server (a throwaway cluster, `tests/support/pg_cluster.rs`).

#![expect(
    clippy::disallowed_methods,
    reason = "tests make and damage store files"
)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use jiff::Timestamp;
use rusqlite::Connection;
use serde_json::json;

use super::sql;
use super::*;
use crate::case::{CaseKey, Phase, Verdict};

#[path = "../../tests/support/pg_cluster.rs"]
mod pg_cluster;

const TIMEOUT: Duration = Duration::from_secs(5);

fn at(second: i64) -> Timestamp {
    Timestamp::from_second(1_700_000_000 + second).expect("in range")
}

fn key(suite: &str, batch: u64) -> CaseKey {
    CaseKey {
        suite: suite.into(),
        model: "llama-3.1-8b".into(),
        precision: "bf16".into(),
        phase: Phase::Decode,
        batch,
        context: 4096,
        axes: crate::case::Axes::default(),
        tp: 1,
        ep: 1,
    }
}

fn result(key: CaseKey, median_ms: f64, promote: bool) -> NewResult {
    NewResult {
        key,
        verdict: Some(Verdict::Pass),
        error: None,
        floor_ms: Some(4.5),
        floor_json: Some(json!({"bytes": 16.1e9, "flops": 1.6e10, "binding": "memory"})),
        median_ms: Some(median_ms),
        utilisation: Some(4.5 / median_ms),
        mbu: Some(4.5 / median_ms),
        mfu: Some(0.01),
        summary_json: Some(json!({"p95_ms": median_ms * 1.01, "n": 6})),
        decision_json: None,
        repeats_ms: vec![
            vec![median_ms, median_ms + 0.01, median_ms - 0.01],
            vec![median_ms + 0.002, f64::from(6.021_f32), median_ms],
        ],
        warmup_ms: vec![vec![31.0, 7.5], vec![29.25]],
        env: BTreeMap::from([
            ("torch".to_owned(), "2.5.1".to_owned()),
            ("driver".to_owned(), "580.65".to_owned()),
        ]),
        gpu_state_json: Some(json!({"sm_clock_mhz": 1980})),
        stderr_tail: None,
        promote,
        budget: None,
        costs: Vec::new(),
        quality: std::collections::BTreeMap::new(),
        speculative: None,
        energy: Vec::new(),
    }
}

fn run(branch: &str, second: i64, results: Vec<NewResult>) -> NewRun {
    NewRun {
        started_at: at(second),
        finished_at: at(second + 60),
        git_sha: Some(format!("sha{second}")),
        branch: Some(branch.into()),
        trigger: Some("schedule".into()),
        pr_number: None,
        gpu_sku: "h100-sxm".into(),
        gpu_json: Some(json!({"driver": "580.65", "uuid": "GPU-1"})),
        host: Some("ci-1".into()),
        utilgate_version: "0.1.0".into(),
        config_json: None,
        promote_reason: "passed the gate on main".into(),
        canary_json: None,
        uid: None,
        budget_night: None,
        group: None,
        results,
    }
}

/// The backend a parameterised test runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Backend {
    Sqlite,
    Pg,
}

/// A new, empty store location: a file in a temporary directory, or a new database on the
/// shared test cluster (`None`, after one line, where the server binaries are absent).
pub(super) fn temp_location(b: Backend) -> (Option<tempfile::TempDir>, PathBuf) {
    match b {
        Backend::Sqlite => {
            let dir = tempfile::tempdir().expect("tempdir");
            let path = dir.path().join("nested").join("utilgate.db");
            (Some(dir), path)
        }
        Backend::Pg => {
            let cluster = pg_cluster::shared();
            let db = cluster.new_database();
            (None, PathBuf::from(cluster.url(&db)))
        }
    }
}

fn temp_store(b: Backend) -> (Option<tempfile::TempDir>, PathBuf, Store) {
    let (dir, path) = temp_location(b);
    let store = Store::open(&path, TIMEOUT).expect("opens");
    (dir, path, store)
}

fn count(path: &Path, table: &str) -> i64 {
    Store::open(path, TIMEOUT)
        .expect("open")
        .conn
        .query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))
        .expect("count")
}

/// Each named test, taking a [`Backend`], run once on `SQLite` and once on `PostgreSQL`.
macro_rules! on_both_backends {
    ($($name:ident),* $(,)?) => {
        mod on_sqlite {
            $(#[test] fn $name() { super::$name(super::Backend::Sqlite) })*
        }
        mod on_postgres {
            $(
                #[test]
                #[ignore = "needs the PostgreSQL server binaries (Debian's postgresql); .ci/run runs them: cargo test -- --ignored on_postgres"]
                fn $name() { super::$name(super::Backend::Pg) }
            )*
        }
    };
}

on_both_backends!(
    a_run_round_trips_with_every_field,
    runs_are_listed_newest_first_and_filtered,
    promote_moves_the_pointer_in_the_run_transaction,
    accept_moves_and_history_keeps_every_move,
    moving_an_unknown_result_moves_nothing,
    a_failed_run_leaves_nothing,
    import_points_baselines_at_results_that_compare_like_the_originals,
    case_history_is_newest_first_per_sku,
    two_writers_both_land,
    the_runners_own_time_per_process_is_the_last_runs_time_outside_its_processes,
    a_results_quality_metrics_round_trip_and_stay_append_only,
    a_results_drafted_tokens_round_trip_and_stay_append_only,
    a_results_energy_records_round_trip_and_stay_append_only,
);

/// A speculative case's drafted and accepted tokens are stored per result, read back as
/// written, never more accepted than drafted, and never changed afterwards.
fn a_results_drafted_tokens_round_trip_and_stay_append_only(b: Backend) {
    use crate::compare::speculation::DraftCounts;
    let (_dir, _path, mut store) = temp_store(b);
    let mut drafted = result(key("decode", 1), 6.0, true);
    drafted.speculative = Some(DraftCounts {
        drafted: 1600,
        accepted: 1123,
    });
    let plain = result(key("decode", 8), 6.0, true);
    store
        .insert_run(&run("main", 0, vec![drafted.clone(), plain]))
        .expect("inserts");
    let run_1 = store.run(RunId(1)).expect("reads").expect("run 1");
    let id = |batch: u64| {
        run_1
            .results
            .iter()
            .find(|r| r.key.batch == batch)
            .expect("result")
            .id
    };
    assert_eq!(
        store.result_speculation(id(1)).expect("reads"),
        drafted.speculative
    );
    assert_eq!(store.result_speculation(id(8)).expect("reads"), None);
    let changed = store.conn.execute(
        "UPDATE result_speculation SET accepted = 1200",
        sql::params![],
    );
    assert!(changed.is_err(), "append-only: {changed:?}");
    let mut impossible = result(key("decode", 2), 6.0, true);
    impossible.speculative = Some(DraftCounts {
        drafted: 10,
        accepted: 11,
    });
    assert!(
        store.insert_run(&run("main", 1, vec![impossible])).is_err(),
        "accepted above drafted is refused"
    );
}

/// Energy per token's records are stored per result and repeat (a measured window with its
/// power limit, or the reason a repeat has none), read back as written in repeat order, and
/// never changed afterwards; a row both measured and refused is refused by the table.
fn a_results_energy_records_round_trip_and_stay_append_only(b: Backend) {
    use crate::compare::energy::{EnergySource, EnergyWindow, RepeatEnergy};
    let (_dir, _path, mut store) = temp_store(b);
    let mut measured = result(key("decode", 1), 6.0, true);
    measured.energy = vec![
        RepeatEnergy {
            repeat: 0,
            measured: Ok(EnergyWindow {
                joules: 132.5,
                steps: 40,
                window_ms: 200.0,
                source: EnergySource::Integral,
                power_limit_w: Some(700.0),
            }),
        },
        RepeatEnergy {
            repeat: 1,
            measured: Err("all 50 timed steps appeared between two GPU readings".to_owned()),
        },
        RepeatEnergy {
            repeat: 2,
            measured: Ok(EnergyWindow {
                joules: 132.0,
                steps: 40,
                window_ms: 201.5,
                source: EnergySource::Counter,
                power_limit_w: None,
            }),
        },
    ];
    let plain = result(key("decode", 8), 6.0, true);
    store
        .insert_run(&run("main", 0, vec![measured.clone(), plain]))
        .expect("inserts");
    let run_1 = store.run(RunId(1)).expect("reads").expect("run 1");
    let id = |batch: u64| {
        run_1
            .results
            .iter()
            .find(|r| r.key.batch == batch)
            .expect("result")
            .id
    };
    assert_eq!(store.result_energy(id(1)).expect("reads"), measured.energy);
    assert!(store.result_energy(id(8)).expect("reads").is_empty());
    let changed = store.conn.execute(
        "UPDATE result_energy SET joules = 1.0 WHERE repeat = 0",
        sql::params![],
    );
    assert!(changed.is_err(), "append-only: {changed:?}");
    let both = store.conn.execute(
        &format!(
            "INSERT INTO result_energy (result_id, repeat, source, joules, steps, window_ms, \
             refused) VALUES ({}, 5, 'counter', 1.0, 1, 1.0, 'and a reason')",
            id(8)
        ),
        sql::params![],
    );
    assert!(both.is_err(), "measured or refused, not both: {both:?}");
}

/// The accuracy guard's answers are stored per result and metric, read back as written, and,
/// like every result, never changed afterwards.
fn a_results_quality_metrics_round_trip_and_stay_append_only(b: Backend) {
    use crate::compare::quality::QualityCount;
    let (_dir, _path, mut store) = temp_store(b);
    let mut scored = result(key("decode", 1), 6.0, true);
    scored.quality = BTreeMap::from([
        (
            "gsm8k".to_owned(),
            QualityCount {
                correct: 412,
                total: 500,
            },
        ),
        (
            "mmlu".to_owned(),
            QualityCount {
                correct: 285,
                total: 400,
            },
        ),
    ]);
    let plain = result(key("decode", 8), 6.0, true);
    store
        .insert_run(&run("main", 0, vec![scored.clone(), plain]))
        .expect("inserts");
    let run_1 = store.run(RunId(1)).expect("reads").expect("run 1");
    let id = |batch: u64| {
        run_1
            .results
            .iter()
            .find(|r| r.key.batch == batch)
            .expect("result")
            .id
    };
    assert_eq!(store.result_quality(id(1)).expect("reads"), scored.quality);
    assert!(store.result_quality(id(8)).expect("reads").is_empty());
    let changed = store.conn.execute(
        "UPDATE result_quality SET correct = 500 WHERE metric = 'gsm8k'",
        sql::params![],
    );
    assert!(changed.is_err(), "append-only: {changed:?}");
}

/// The planner's per-process cost of utilgate itself: the last run of the suite that recorded
/// its processes' walls, its duration less those walls, over its processes (#29 item 4).
fn the_runners_own_time_per_process_is_the_last_runs_time_outside_its_processes(b: Backend) {
    let (_dir, _path, mut store) = temp_store(b);
    assert_eq!(
        store
            .suite_runner_seconds_per_process("decode")
            .expect("reads"),
        None
    );
    let timed = |batch: u64, wall_s: f64| {
        let mut r = result(key("decode", batch), 6.0, false);
        r.costs = vec![
            crate::compare::budget::RepeatCost {
                wall_s,
                steps_s: 0.5,
                steps: 10,
                warmup_s: 0.1,
                warmup_steps: 2,
            };
            3
        ];
        r
    };
    // 60 s, of which two results' 3 processes ran 5 s each: (60 - 30) / 6 = 5 s each.
    store
        .insert_run(&run("main", 0, vec![timed(1, 5.0), timed(8, 5.0)]))
        .expect("inserts");
    let per = store
        .suite_runner_seconds_per_process("decode")
        .expect("reads")
        .expect("a timed run");
    assert!((per - 5.0).abs() < 1e-9, "{per}");
    // A later run whose processes filled its 60 s: nothing left for utilgate (never negative).
    store
        .insert_run(&run("main", 100, vec![timed(1, 10.0), timed(8, 10.0)]))
        .expect("inserts");
    let per = store
        .suite_runner_seconds_per_process("decode")
        .expect("reads")
        .expect("a timed run");
    assert!(per.abs() < 1e-9, "{per}");
    // A later run that recorded no walls (an import) is not the one asked about; another
    // suite has none.
    store
        .insert_run(&run(
            "main",
            200,
            vec![result(key("decode", 1), 6.0, false)],
        ))
        .expect("inserts");
    assert!(
        store
            .suite_runner_seconds_per_process("decode")
            .expect("reads")
            .is_some_and(|p| p.abs() < 1e-9)
    );
    assert_eq!(
        store
            .suite_runner_seconds_per_process("prefill")
            .expect("reads"),
        None
    );
}

fn all_runs() -> RunFilter {
    RunFilter {
        limit: 1000,
        branch: None,
        gpu_sku: None,
    }
}

fn a_run_round_trips_with_every_field(b: Backend) {
    let (_dir, path, mut store) = temp_store(b);
    if b == Backend::Sqlite {
        assert!(path.exists(), "open creates the parent directory and file");
        let pragma = |name: &str| -> String {
            store
                .conn
                .query_row(&format!("PRAGMA {name}"), [], |r| r.get::<_, sql::Value>(0))
                .map(|v| format!("{v:?}"))
                .expect("pragma")
        };
        assert_eq!(pragma("journal_mode"), r#"Text("wal")"#);
        assert_eq!(pragma("foreign_keys"), "Int(1)");
        assert_eq!(pragma("page_size"), "Int(16384)");
    }
    let mut new = run("main", 0, vec![result(key("decode", 1), 6.02, false)]);
    new.pr_number = Some(42);
    new.config_json = Some(json!({"gate": {"max_drop_pct": 3.0}}));
    let mut failed = result(key("decode", 8), 7.0, false);
    failed.verdict = Some(Verdict::Error);
    failed.error = Some("harness exited with status 1".into());
    failed.median_ms = None;
    failed.utilisation = Some(f64::NAN);
    failed.repeats_ms = vec![];
    failed.stderr_tail = Some("Traceback ...\nCUDA error".into());
    new.results.push(failed);
    // A budgeted night's records (`run_budgets`, `result_budgets`, `result_repeat_costs`).
    new.budget_night = Some(crate::compare::budget::NightRecord {
        budget_s: 600.0,
        grace_s: 3.0,
        planned_s: 1.0 / 3.0,
        reserve_s: 90.0,
        budget_to_resolve_all_s: Some(700.0 + 1.0 / 7.0),
        not_started: vec!["b/2".into(), "a/1".into()],
        used_s: 612.5,
        stopped: true,
    });
    new.results[0].budget = Some(crate::compare::budget::CaseRecord {
        note: crate::compare::budget::PlanNote::OverBudget,
        planned_repeats: 4,
        steps: 20,
        first_repeats: 2,
        confirm_repeats: 1,
        time_s: 1.0 / 3.0,
        stop: crate::compare::budget::Stop::Budget,
        needed_repeats: None,
        needed_s: Some(0.1 / 3.0),
    });
    new.results[0].costs = (0..3)
        .map(|r| crate::compare::budget::RepeatCost {
            wall_s: 0.5 + f64::from(r) / 7.0,
            steps_s: 0.2,
            steps: 20,
            warmup_s: 0.08,
            warmup_steps: 2,
        })
        .collect();

    let id = store.insert_run(&new).expect("inserts");
    let stored = store.run(id).expect("reads").expect("exists");
    assert_eq!(stored.summary.id, id);
    assert_eq!(stored.summary.started_at, new.started_at);
    assert_eq!(stored.summary.finished_at, new.finished_at);
    assert_eq!(stored.summary.pr_number, Some(42));
    assert_eq!(stored.summary.n_results, 2);
    assert_eq!(
        stored.summary.verdicts,
        BTreeMap::from([("error".to_owned(), 1), ("pass".to_owned(), 1)])
    );
    assert_eq!(stored.gpu_json, new.gpu_json);
    assert_eq!(stored.config_json, new.config_json);
    assert_eq!(stored.host.as_deref(), Some("ci-1"));
    assert_eq!(stored.utilgate_version, "0.1.0");
    assert_eq!(stored.results.len(), 2);
    for (got, want) in stored.results.iter().zip(&new.results) {
        assert_eq!(got.run_id, id);
        assert_eq!(got.key, want.key);
        assert_eq!(got.gpu_sku, "h100-sxm");
        assert_eq!(got.started_at, new.started_at);
        assert_eq!(got.git_sha, new.git_sha);
        assert_eq!(got.verdict, want.verdict);
        assert_eq!(got.error, want.error);
        assert_eq!(got.floor_ms, want.floor_ms);
        assert_eq!(got.floor_json, want.floor_json);
        assert_eq!(got.median_ms, want.median_ms);
        assert_eq!(got.mbu, want.mbu);
        assert_eq!(got.summary_json, want.summary_json);
        assert_eq!(got.repeats_ms, want.repeats_ms);
        assert_eq!(got.warmup_ms, want.warmup_ms);
        assert_eq!(got.env, want.env);
        assert_eq!(got.gpu_state_json, want.gpu_state_json);
        assert_eq!(got.stderr_tail, want.stderr_tail);
        assert_eq!(got.budget, want.budget);
        assert_eq!(store.repeat_costs(got.id).expect("costs"), want.costs);
    }
    assert_eq!(stored.budget_night, new.budget_night);
    assert!(stored.results[1].budget.is_none());
    assert_eq!(stored.results[1].utilisation, None, "NaN is stored as NULL");
    assert!(store.run(RunId(id.0 + 1)).expect("reads").is_none());
    let json = serde_json::to_value(&stored).expect("serialises");
    assert_eq!(json["results"][0]["key"]["phase"], "decode");
}

fn runs_are_listed_newest_first_and_filtered(b: Backend) {
    let (_dir, _path, mut store) = temp_store(b);
    // Inserted out of time order: listing follows start time, not insertion.
    for (branch, second) in [("main", 100), ("pr-7", 300), ("main", 200)] {
        store
            .insert_run(&run(branch, second, vec![result(key("d", 1), 6.0, false)]))
            .expect("inserts");
    }
    let mut other_gpu = run("main", 400, vec![]);
    other_gpu.gpu_sku = "a100-sxm4-80gb".into();
    store.insert_run(&other_gpu).expect("inserts");

    let starts = |filter: &RunFilter| -> Vec<Timestamp> {
        store
            .list_runs(filter)
            .expect("lists")
            .iter()
            .map(|r| r.started_at)
            .collect()
    };
    assert_eq!(starts(&all_runs()), [at(400), at(300), at(200), at(100)]);
    let cases = [
        (Some("main"), None, 10, vec![at(400), at(200), at(100)]),
        (None, Some("h100-sxm"), 10, vec![at(300), at(200), at(100)]),
        (Some("main"), Some("h100-sxm"), 1, vec![at(200)]),
        (Some("nope"), None, 10, vec![]),
    ];
    for (branch, sku, limit, want) in cases {
        let filter = RunFilter {
            limit,
            branch: branch.map(str::to_owned),
            gpu_sku: sku.map(str::to_owned),
        };
        assert_eq!(starts(&filter), want, "{filter:?}");
    }
    let newest = store.list_runs(&all_runs()).expect("lists");
    assert_eq!(newest[0].n_results, 0);
    assert_eq!(newest[1].n_results, 1);
    assert_eq!(
        store.latest_run_id(None).expect("reads"),
        Some(newest[0].id)
    );
    assert_eq!(
        store.latest_run_id(Some("pr-7")).expect("reads"),
        Some(newest[1].id)
    );
    assert_eq!(store.latest_run_id(Some("none")).expect("reads"), None);
}

fn promote_moves_the_pointer_in_the_run_transaction(b: Backend) {
    let (_dir, _path, mut store) = temp_store(b);
    let (a, b) = (key("decode", 1), key("decode", 8));
    assert!(store.baseline_for(&a, "h100-sxm").expect("reads").is_none());
    let id = store
        .insert_run(&run(
            "main",
            0,
            vec![result(a.clone(), 6.0, true), result(b.clone(), 9.0, false)],
        ))
        .expect("inserts");
    let base = store
        .baseline_for(&a, "h100-sxm")
        .expect("reads")
        .expect("promoted");
    assert_eq!(base.run_id, id);
    assert_eq!(base.median_ms, Some(6.0));
    assert!(store.baseline_for(&b, "h100-sxm").expect("reads").is_none());
    assert!(
        store.baseline_for(&a, "a100").expect("reads").is_none(),
        "per SKU"
    );
    let entries = store.baselines(None).expect("lists");
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].kind, BaselineMoveKind::Promote);
    assert_eq!(entries[0].reason, "passed the gate on main");
    assert_eq!(entries[0].moved_at, at(60), "moved when the run finished");
    assert_eq!(entries[0].result_id, base.id);
}

fn accept_moves_and_history_keeps_every_move(b: Backend) {
    let (_dir, path, mut store) = temp_store(b);
    let k = key("decode", 1);
    let first = store
        .insert_run(&run("main", 0, vec![result(k.clone(), 6.0, true)]))
        .expect("inserts");
    let second = store
        .insert_run(&run("main", 100, vec![result(k.clone(), 6.5, false)]))
        .expect("inserts");
    let third = store
        .insert_run(&run("main", 200, vec![result(k.clone(), 6.4, true)]))
        .expect("inserts");
    let result_of = |id: RunId| store.run(id).expect("reads").expect("exists").results[0].id;
    let (r1, r2, r3) = (result_of(first), result_of(second), result_of(third));

    // Accept the older, slower result: the pointer follows the latest move, not the newest run.
    store
        .move_baselines(&[BaselineMove {
            result_id: r2,
            kind: BaselineMoveKind::Accept,
            reason: "flash-attn 2.7 is slower on b1; accepted in #123".into(),
            moved_at: at(500),
        }])
        .expect("moves");
    let base = store
        .baseline_for(&k, "h100-sxm")
        .expect("reads")
        .expect("exists");
    assert_eq!((base.id, base.run_id), (r2, second));
    let entry = &store.baselines(Some("h100-sxm")).expect("lists")[0];
    assert_eq!(entry.kind, BaselineMoveKind::Accept);
    assert!(entry.reason.contains("#123"));
    assert!(store.baselines(Some("a100")).expect("lists").is_empty());

    let history = store
        .baseline_history(&CaseFilter::All, None)
        .expect("reads");
    let moves: Vec<(i64, BaselineMoveKind)> =
        history.iter().map(|e| (e.result_id, e.kind)).collect();
    assert_eq!(
        moves,
        [
            (r2, BaselineMoveKind::Accept),
            (r3, BaselineMoveKind::Promote),
            (r1, BaselineMoveKind::Promote),
        ]
    );
    assert_eq!(history[0].moved_at, at(500));
    assert_eq!(history[2].run_id, first);
    for (filter, sku, n) in [
        (CaseFilter::Suite("decode".into()), None, 3),
        (CaseFilter::Suite("prefill".into()), None, 0),
        (CaseFilter::Key(k.clone()), Some("h100-sxm"), 3),
        (CaseFilter::Key(key("decode", 2)), None, 0),
        (CaseFilter::All, Some("a100"), 0),
    ] {
        let got = store.baseline_history(&filter, sku).expect("reads").len();
        assert_eq!(got, n, "{filter:?} {sku:?}");
    }
    // History is append-only even for someone with a raw connection.
    let raw = Store::open(&path, TIMEOUT).expect("open");
    assert!(raw.conn.execute("DELETE FROM baseline_moves", []).is_err());
    assert!(
        raw.conn
            .execute("UPDATE results SET median_ms = 1", [])
            .is_err()
    );
}

fn moving_an_unknown_result_moves_nothing(b: Backend) {
    let (_dir, path, mut store) = temp_store(b);
    let id = store
        .insert_run(&run("main", 0, vec![result(key("d", 1), 6.0, false)]))
        .expect("inserts");
    let real = store.run(id).expect("reads").expect("exists").results[0].id;
    let moves = [real, 999].map(|result_id| BaselineMove {
        result_id,
        kind: BaselineMoveKind::Accept,
        reason: "r".into(),
        moved_at: at(1),
    });
    let err = store.move_baselines(&moves).expect_err("unknown id");
    assert!(matches!(
        err,
        StoreError::UnknownResult { result_id: 999, .. }
    ));
    assert_eq!(
        count(&path, "baseline_moves"),
        0,
        "the first move rolled back"
    );
}

fn a_failed_run_leaves_nothing(b: Backend) {
    let (_dir, path, mut store) = temp_store(b);
    let kept = store
        .insert_run(&run("main", 0, vec![result(key("d", 1), 6.0, true)]))
        .expect("inserts");
    // A run holds one result per case: the duplicate fails half-way, after a new case row, a
    // result and a promotion have been written inside the transaction.
    let bad = run(
        "main",
        100,
        vec![
            result(key("d", 2), 5.0, true),
            result(key("d", 1), 5.0, true),
            result(key("d", 1), 5.0, true),
        ],
    );
    let err = store.insert_run(&bad).expect_err("constraint");
    assert!(
        matches!(
            err,
            StoreError::Query {
                action: "write a result",
                ..
            }
        ),
        "{err:?}"
    );
    let runs = store.list_runs(&all_runs()).expect("lists");
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].id, kept);
    assert_eq!(count(&path, "results"), 1);
    assert_eq!(count(&path, "baseline_moves"), 1);
    assert_eq!(count(&path, "series"), 1);
    let base = store
        .baseline_for(&key("d", 1), "h100-sxm")
        .expect("reads")
        .expect("kept");
    assert_eq!(base.run_id, kept);
    // The store still works afterwards.
    store
        .insert_run(&run("main", 200, vec![result(key("d", 2), 5.0, false)]))
        .expect("inserts");
}

fn import_points_baselines_at_results_that_compare_like_the_originals(b: Backend) {
    let (_dir, _path, mut original) = temp_store(b);
    let k = key("decode", 1);
    original
        .insert_run(&run("main", 0, vec![result(k.clone(), 6.0, true)]))
        .expect("inserts");
    let source = original
        .baseline_for(&k, "h100-sxm")
        .expect("reads")
        .expect("exists");

    // A fresh runner imports it from the portable export into an empty store.
    let (_dir2, _path2, mut fresh) = temp_store(b);
    let mut imported = run("main", 0, vec![result(k.clone(), 6.0, false)]);
    imported.trigger = Some("import".into());
    let id = fresh
        .import_run(&imported, "imported from baselines/h100-sxm.json", at(1000))
        .expect("imports");
    let base = fresh
        .baseline_for(&k, "h100-sxm")
        .expect("reads")
        .expect("imported");
    assert_eq!(base.run_id, id);
    assert_eq!(base.repeats_ms, source.repeats_ms);
    assert_eq!(base.floor_ms, source.floor_ms);
    assert_eq!(base.floor_json, source.floor_json);
    let entry = &fresh.baselines(None).expect("lists")[0];
    assert_eq!(entry.kind, BaselineMoveKind::Import);
    assert_eq!(entry.moved_at, at(1000));
    let runs = fresh.list_runs(&all_runs()).expect("lists");
    assert_eq!(runs[0].trigger.as_deref(), Some("import"));
}

fn case_history_is_newest_first_per_sku(b: Backend) {
    let (_dir, _path, mut store) = temp_store(b);
    let k = key("decode", 1);
    for i in 0..5 {
        store
            .insert_run(&run(
                "main",
                i * 100,
                vec![result(k.clone(), 6.0 + 0.1 * i as f64, false)],
            ))
            .expect("inserts");
    }
    let mut elsewhere = run("main", 1000, vec![result(k.clone(), 9.0, false)]);
    elsewhere.gpu_sku = "a100".into();
    store.insert_run(&elsewhere).expect("inserts");

    let history = store.case_history(&k, "h100-sxm", 3).expect("reads");
    let starts: Vec<Timestamp> = history.iter().map(|r| r.started_at).collect();
    assert_eq!(starts, [at(400), at(300), at(200)]);
    assert_eq!(store.case_history(&k, "a100", 30).expect("reads").len(), 1);
    assert!(
        store
            .case_history(&key("x", 1), "h100-sxm", 30)
            .expect("reads")
            .is_empty()
    );
}

#[test]
fn a_lock_held_past_the_timeout_is_locked() {
    let (_dir, path, mut store) = temp_store(Backend::Sqlite);
    let holder = Connection::open(&path).expect("open");
    holder.execute_batch("BEGIN EXCLUSIVE").expect("lock");

    let short = Duration::from_millis(100);
    let err = Store::open(&path, short).expect_err("locked");
    assert!(
        matches!(&err, StoreError::Locked { path: p } if p == &path),
        "{err:?}"
    );
    assert!(
        err.hint()
            .expect("hint")
            .contains("another utilgate process")
    );

    store
        .conn
        .sqlite()
        .expect("sqlite")
        .busy_timeout(short)
        .expect("timeout");
    let err = store
        .insert_run(&run("main", 0, vec![result(key("d", 1), 6.0, true)]))
        .expect_err("locked");
    assert!(matches!(err, StoreError::Locked { .. }), "{err:?}");

    holder.execute_batch("COMMIT").expect("unlock");
    store
        .insert_run(&run("main", 0, vec![result(key("d", 1), 6.0, true)]))
        .expect("inserts once released");
    assert_eq!(store.list_runs(&all_runs()).expect("lists").len(), 1);
}

#[test]
fn a_file_that_is_not_a_database_is_corrupt_and_untouched() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("utilgate.db");
    let garbage: Vec<u8> = (0..4096_u32)
        .map(|i| (i * 7 + 13).to_le_bytes()[0])
        .collect();
    std::fs::write(&path, &garbage).expect("write");
    for err in [
        Store::open(&path, TIMEOUT).expect_err("corrupt"),
        Store::open_existing_read_only(&path, TIMEOUT).expect_err("corrupt"),
    ] {
        assert!(matches!(err, StoreError::Corrupt { .. }), "{err:?}");
        assert!(err.hint().expect("hint").contains("never overwrites"));
    }
    assert_eq!(std::fs::read(&path).expect("read"), garbage);
    let mut names: Vec<_> = std::fs::read_dir(dir.path())
        .expect("list")
        .map(|e| e.expect("entry").file_name())
        .collect();
    names.sort();
    assert_eq!(names, ["utilgate.db"], "no journal left beside it");
}

#[test]
fn a_newer_schema_is_refused_and_not_downgraded() {
    let (_dir, path, store) = temp_store(Backend::Sqlite);
    drop(store);
    let raw = Connection::open(&path).expect("open");
    raw.pragma_update(None, "user_version", SCHEMA_VERSION + 1)
        .expect("set");
    drop(raw);
    for err in [
        Store::open(&path, TIMEOUT).expect_err("newer"),
        Store::open_existing_read_only(&path, TIMEOUT).expect_err("newer"),
    ] {
        assert!(
            matches!(err, StoreError::NewerSchema { found, .. } if found == SCHEMA_VERSION + 1)
        );
    }
    let raw = sql::Conn::Sqlite(Connection::open(&path).expect("open"));
    assert_eq!(schema::version(&raw).expect("version"), SCHEMA_VERSION + 1);
}

#[test]
fn an_older_store_is_upgraded_with_its_data() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("old.db");
    {
        let mut raw = sql::Conn::Sqlite(Connection::open(&path).expect("open"));
        schema::migrate(&mut raw, &path, 1).expect("version 1");
        raw.execute_batch(
            "INSERT INTO runs (id, started_at_ns, finished_at_ns, gpu_sku, utilgate_version)
                 VALUES (1, 1700000000000000000, 1700000060000000000, 'h100-sxm', '0.0.9');
             INSERT INTO series (id, suite, model, precision, phase, batch, context, gpu_sku)
                 VALUES (1, 'decode', 'llama-3.1-8b', 'bf16', 'decode', 1, 4096, 'h100-sxm');
             INSERT INTO results (id, run_id, series_id, run_started_at_ns, verdict, median_ms,
                                  samples, warmup, env_json)
                 VALUES (1, 1, 1, 1700000000000000000, 'pass', 6.0, x'0100', x'0100', '{}');
             INSERT INTO baseline_moves (series_id, result_id, kind, reason, moved_at_ns)
                 VALUES (1, 1, 'promote', 'old', 1700000060000000000);",
        )
        .expect("v1 data");
    }
    // A read-only command asks for the upgrade rather than doing it.
    let err = Store::open_existing_read_only(&path, TIMEOUT).expect_err("outdated");
    assert!(
        matches!(err, StoreError::OutdatedSchema { found: 1, .. }),
        "{err:?}"
    );

    let store = Store::open(&path, TIMEOUT).expect("upgrades");
    assert_eq!(
        schema::version(&store.conn).expect("version"),
        SCHEMA_VERSION
    );
    let base = store
        .baseline_for(&key("decode", 1), "h100-sxm")
        .expect("reads")
        .expect("kept");
    assert_eq!((base.id, base.median_ms), (1, Some(6.0)));
    assert_eq!(store.list_runs(&all_runs()).expect("lists")[0].n_results, 1);
}

#[test]
fn read_only_open_never_creates_and_never_writes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("absent").join("utilgate.db");
    let err = Store::open_existing_read_only(&path, TIMEOUT).expect_err("missing");
    assert_eq!(
        err.to_string(),
        format!("no store at {}; run `utilgate run` first", path.display())
    );
    assert!(!path.exists() && !path.parent().expect("parent").exists());

    let mut writer = Store::open(&path, TIMEOUT).expect("opens");
    writer
        .insert_run(&run("main", 0, vec![result(key("d", 1), 6.0, true)]))
        .expect("inserts");
    drop(writer);
    let mut reader = Store::open_existing_read_only(&path, TIMEOUT).expect("opens");
    assert_eq!(reader.list_runs(&all_runs()).expect("lists").len(), 1);
    assert!(
        reader
            .baseline_for(&key("d", 1), "h100-sxm")
            .expect("reads")
            .is_some()
    );
    assert!(reader.insert_run(&run("main", 9, vec![])).is_err());
}

#[test]
fn an_unwritable_location_names_the_path_and_the_fix() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("a-file");
    std::fs::write(&file, b"x").expect("write");
    let path = file.join("utilgate.db");
    let err = Store::open(&path, TIMEOUT).expect_err("cannot create");
    assert!(matches!(err, StoreError::CreateDir { .. }), "{err:?}");
    assert!(err.to_string().contains(&path.display().to_string()));
    assert!(err.hint().expect("hint").contains("--db"));
}

fn two_writers_both_land(b: Backend) {
    let (_dir, path) = temp_location(b);
    let writers: Vec<_> = (0..2_i64)
        .map(|w| {
            let path = path.clone();
            std::thread::spawn(move || {
                let mut store = Store::open(&path, Duration::from_secs(30)).expect("opens");
                for i in 0..20 {
                    let results = (1..=10)
                        .map(|b| result(key(&format!("w{w}"), b), 6.0, i % 2 == 0))
                        .collect();
                    store
                        .insert_run(&run("main", w * 1000 + i, results))
                        .expect("inserts");
                }
            })
        })
        .collect();
    for w in writers {
        w.join().expect("writer finished");
    }
    let store = Store::open(&path, TIMEOUT).expect("opens");
    let runs = store.list_runs(&all_runs()).expect("lists");
    assert_eq!(runs.len(), 40);
    assert!(runs.iter().all(|r| r.n_results == 10));
    assert_eq!(store.baselines(None).expect("lists").len(), 20);
}

#[test]
fn publishing_facts_round_trip_and_untrusted_stores_open_defensively() {
    use rusqlite::config::DbConfig;
    let (_dir, path, mut store) = temp_store(Backend::Sqlite);
    let facts = PublishFacts {
        fail_on: vec![Verdict::Regressed, Verdict::Invalid],
        gate_passed: false,
        baseline_branch: "main".into(),
        thresholds_pct: BTreeMap::from([(key("decode", 1).to_string(), 3.0)]),
        status_context: "utilgate/{suite}".into(),
        pr_head_sha: Some("ec26c3e57ca3a959ca5aad62de7213c562f8c821".into()),
        missing: Vec::new(),
        gate_notes: vec!["this pull request changes [gate] fail_on".into()],
    };
    let with = store
        .insert_run_with(
            &run("feature", 1, vec![result(key("decode", 1), 6.0, false)]),
            Some(&facts),
        )
        .expect("stores");
    let without = store
        .insert_run(&run("main", 2, vec![result(key("decode", 1), 6.0, true)]))
        .expect("stores");
    drop(store);
    let read = Store::open_existing_read_only(&path, TIMEOUT).expect("opens");
    assert_eq!(read.publish_facts(with).expect("reads"), Some(facts));
    assert_eq!(read.publish_facts(without).expect("reads"), None);
    // A store from a pull request's artifact is untrusted input.
    assert!(
        read.conn
            .sqlite()
            .expect("sqlite")
            .db_config(DbConfig::SQLITE_DBCONFIG_DEFENSIVE)
            .expect("reads")
    );
    assert!(
        !read
            .conn
            .sqlite()
            .expect("sqlite")
            .db_config(DbConfig::SQLITE_DBCONFIG_TRUSTED_SCHEMA)
            .expect("reads")
    );
}

mod axes;
mod both_schemas;
mod bounded;
mod pull_requests;
