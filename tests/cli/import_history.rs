//! `utilgate import history`: an existing benchmark history (CSV, github-action-benchmark
//! data.js, Bencher Metric Format) stored through the real binary into a real `SQLite` file, one
//! run per night with the night's own date and commit; `changes --since` reads it.

use std::fmt::Write as _;

use crate::env::{TestEnv, stderr, stdout};

const CASE: &str = "decode/seed-8b/bf16/decode/b1/c4096";
const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/bench_history/tokio-prompt-orchestrator__dev__bench__data.js"
);

/// Twelve nights in October: 7 at ~10 ms, then 5 at ~10.9 ms from the 8th night (commit c07).
fn history_csv() -> String {
    let steps = [
        "10.00", "10.02", "9.98", "10.01", "9.99", "10.02", "9.98", "10.90", "10.92", "10.88",
        "10.91", "10.89",
    ];
    let mut csv = String::from("date,commit,branch,case,median_ms\n");
    for (i, step) in steps.iter().enumerate() {
        let _ = writeln!(
            csv,
            "2026-10-{:02},c{i:02}aaaaaaaa,main,{CASE},{step}",
            i + 1
        );
    }
    csv
}

fn runs(env: &TestEnv) -> Vec<serde_json::Value> {
    let json = env.json(&["runs", "list", "--limit", "100"]);
    json["runs"]
        .as_array()
        .or_else(|| json.as_array())
        .cloned()
        .unwrap_or_else(|| panic!("runs: {json}"))
}

fn import(env: &TestEnv, args: &[&str]) -> std::process::Output {
    env.cmd()
        .args(["import", "history"])
        .args(args)
        .output()
        .expect("runs")
}

fn count_results(env: &TestEnv) -> i64 {
    let conn = rusqlite::Connection::open(env.db()).expect("store");
    conn.query_row("SELECT count(*) FROM results", [], |r| r.get(0))
        .expect("count")
}

#[test]
fn csv_history_keeps_its_nights_and_changes_since_finds_the_step() {
    let env = TestEnv::new();
    let file = env.write("nightly.csv", &history_csv());
    let out = import(&env, &[file.to_str().expect("utf-8"), "--gpu", "h100-sxm"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("imported 12 night(s) (12 result(s)) on h100-sxm"),
        "{}",
        stdout(&out)
    );

    // Every night keeps its own date and commit (never today), oldest first by id.
    let mut list = runs(&env);
    assert_eq!(list.len(), 12, "{list:?}");
    list.sort_by_key(|r| r["id"].as_i64());
    for (i, run) in list.iter().enumerate() {
        let started = run["started_at"].as_str().expect("started_at");
        assert!(
            started.starts_with(&format!("2026-10-{:02}", i + 1)),
            "{run}"
        );
        assert_eq!(run["git_sha"], format!("c{i:02}aaaaaaaa"), "{run}");
        assert_eq!(run["trigger"], "import", "{run}");
        assert_eq!(run["branch"], "main", "{run}");
    }

    // The step is found on its night (the 8th, commit c07), from a date before it ...
    let json = env.json(&["changes", "--since", "2026-10-05"]);
    let changes = json["cases"][0]["changes"].as_array().expect("changes");
    assert_eq!(changes.len(), 1, "{json}");
    assert!(
        changes[0]["night"]["started_at"]
            .as_str()
            .is_some_and(|t| t.starts_with("2026-10-08")),
        "{json}"
    );
    assert_eq!(changes[0]["night"]["git_sha"], "c07aaaaaaaa");
    assert_eq!(changes[0]["before"]["git_sha"], "c06aaaaaaaa");
    assert_eq!(json["cases"][0]["measure"], "speed_vs_first_night");
    let pct = changes[0]["magnitude"]["change_pct"].as_f64().expect("pct");
    assert!((pct - -8.26).abs() < 0.3, "{pct}");
    // ... and not from a date after it.
    let later = env.json(&["changes", "--since", "2026-10-09"]);
    assert_eq!(
        later["cases"][0]["changes"].as_array().map(Vec::len),
        Some(0),
        "{later}"
    );
    let text = stdout(&env.cmd().args(["history", CASE]).output().expect("runs"));
    assert!(text.contains("12 nights on main"), "{text}");
    assert!(text.contains("commits c06aaaaaaa..c07aaaaaaa"), "{text}");

    // Imported again: nothing is stored twice.
    let again = import(&env, &[file.to_str().expect("utf-8"), "--gpu", "h100-sxm"]);
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    assert!(
        stdout(&again)
            .contains("imported 0 night(s) (0 result(s)) on h100-sxm; 12 already imported"),
        "{}",
        stdout(&again)
    );
    assert!(
        stdout(&again).contains("already imported as run 1"),
        "{}",
        stdout(&again)
    );
    assert_eq!(runs(&env).len(), 12);
    assert_eq!(count_results(&env), 12);
    // No baseline moved.
    let baselines = env.json(&["baseline", "list"]);
    assert!(
        !baselines.to_string().contains("seed-8b"),
        "an import moved a baseline: {baselines}"
    );
}

#[test]
fn github_action_benchmark_data_js_keeps_its_night_and_commit() {
    let env = TestEnv::new();
    // The real file's benchmark names, mapped to case keys.
    let names = [
        "full_pipeline_echo_worker",
        "pipeline_throughput/requests/10",
        "pipeline_throughput/requests/50",
        "pipeline_throughput/requests/100",
        "channel_send/capacity/512",
        "channel_send/capacity/1024",
        "channel_send/capacity/2048",
        "send_with_shed_normal",
        "shard_session",
        "session_id_creation",
    ];
    let mut map = String::new();
    for (i, n) in names.iter().enumerate() {
        let _ = writeln!(map, "\"{n}\" = \"orch/m/bf16/decode/b{}/c1\"", i + 1);
    }
    let map_file = env.write("cases.toml", &map);
    let out = import(
        &env,
        &[FIXTURE, "--case-map", map_file.to_str().expect("utf-8")],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let list = runs(&env);
    assert_eq!(list.len(), 1, "{list:?}");
    // `date` 1774262593911 ms is 2026-03-23T10:43:13.911Z: the entry's time, not today's.
    assert!(
        list[0]["started_at"]
            .as_str()
            .is_some_and(|t| t.starts_with("2026-03-23T10:43:13")),
        "{}",
        list[0]
    );
    assert_eq!(
        list[0]["git_sha"],
        "f74462c5c65339cde0f72c68cd0983fa1a640948"
    );
    assert_eq!(list[0]["trigger"], "import");
    assert_eq!(count_results(&env), 10);
    // 11111625 ns/iter is 11.111625 ms.
    let conn = rusqlite::Connection::open(env.db()).expect("store");
    let ms: f64 = conn
        .query_row(
            "SELECT r.median_ms FROM results r JOIN series s ON s.id = r.series_id
             WHERE s.batch = 1",
            [],
            |r| r.get(0),
        )
        .expect("result");
    assert!((ms - 11.111_625).abs() < 1e-9, "{ms}");
}

#[test]
fn bmf_files_take_their_night_from_the_name() {
    let env = TestEnv::new();
    let a = env.write(
        "bmf/2026-11-01_abc1234.json",
        &format!(r#"{{"{CASE}": {{"latency": {{"value": 10000000.0, "lower_value": 9900000.0, "upper_value": 10100000.0}}}}}}"#),
    );
    let b = env.write(
        "bmf/2026-11-02_def5678.json",
        r#"{"seed-8b/bf16/decode/b1/c4096": {"step_ms": {"value": 10.5}}}"#,
    );
    let out = import(
        &env,
        &[
            a.to_str().expect("utf-8"),
            b.to_str().expect("utf-8"),
            "--suite",
            "decode",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let mut list = runs(&env);
    list.sort_by_key(|r| r["id"].as_i64());
    assert_eq!(list.len(), 2, "{list:?}");
    assert!(
        list[0]["started_at"]
            .as_str()
            .is_some_and(|t| t.starts_with("2026-11-01"))
    );
    assert_eq!(list[0]["git_sha"], "abc1234");
    assert!(
        list[1]["started_at"]
            .as_str()
            .is_some_and(|t| t.starts_with("2026-11-02"))
    );
    assert_eq!(list[1]["git_sha"], "def5678");
    let conn = rusqlite::Connection::open(env.db()).expect("store");
    let mut stmt = conn
        .prepare("SELECT median_ms FROM results ORDER BY run_id")
        .expect("query");
    let ms: Vec<f64> = stmt
        .query_map([], |r| r.get(0))
        .expect("rows")
        .collect::<Result<_, _>>()
        .expect("rows");
    assert_eq!(ms, vec![10.0, 10.5]);

    // A BMF file without a date in its name or --date is refused, naming the fix.
    let c = env.write("bmf/latest.json", r#"{"x": {"latency": {"value": 1.0}}}"#);
    let bad = import(&env, &[c.to_str().expect("utf-8")]);
    assert_eq!(bad.status.code(), Some(2));
    let err = stderr(&bad);
    assert!(
        err.contains("latest.json: file name: a BMF file has no date"),
        "{err}"
    );
    assert!(
        err.contains("hint: name the file DATE[_COMMIT].json"),
        "{err}"
    );
}

#[test]
fn bad_units_and_unmapped_names_name_the_file_entry_and_fix() {
    let env = TestEnv::new();
    let data = |unit: &str, name: &str| {
        format!(
            r#"window.BENCHMARK_DATA = {{"lastUpdate": 1, "repoUrl": "https://example.invalid/r",
  "entries": {{"Bench": [{{"commit": {{"id": "aaa", "timestamp": "2026-11-01T00:00:00Z"}},
  "date": 1793491200000, "tool": "customBiggerIsBetter",
  "benches": [{{"name": "{name}", "value": 70, "unit": "{unit}"}}]}}]}}}};"#
        )
    };
    let rate = env.write("rate.js", &data("ops/s", CASE));
    let out = import(&env, &[rate.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("rate.js: entry \"Bench\" [0] bench"), "{err}");
    assert!(
        err.contains("unit \"ops/s\" is a throughput (bigger is better), not a step time"),
        "{err}"
    );
    assert!(err.contains("hint: utilgate stores step times"), "{err}");

    let unmapped = env.write("names.js", &data("ms", "fib_10"));
    let out = import(&env, &[unmapped.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains(
            "names.js: entry \"Bench\" [0] bench \"fib_10\": benchmark \"fib_10\" is not a case key"
        ),
        "{err}"
    );
    assert!(
        err.contains("--case-map") && err.contains("\"fib_10\" = \""),
        "{err}"
    );

    let csv = env.write(
        "bad.csv",
        &format!("date,commit,case,median_ms\n2026-11-01,a,{CASE},10\nyesterday,b,{CASE},10\n"),
    );
    let out = import(&env, &[csv.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("bad.csv: line 3: date \"yesterday\" is not a date"),
        "{err}"
    );
    assert!(err.contains("hint: write 2026-11-01"), "{err}");
    // Nothing was stored: the files are read in full before the store is opened.
    assert!(!env.db().exists(), "a refused import created the store");
}
