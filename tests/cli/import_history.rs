//! `utilgate import history`: an existing benchmark history (CSV, github-action-benchmark
//! data.js, Bencher Metric Format) stored through the real binary into a real `SQLite` file, one
//! run per night with the night's own date and commit; `changes --since` reads it.

use std::fmt::Write as _;

use crate::env::{TestEnv, stderr, stdout};

const CASE: &str = "decode/seed-8b/bf16/decode/b1/c4096";
const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/bench_history/github-action-benchmark__gh-pages__dev__bench__data.js"
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
fn github_action_benchmark_data_js_keeps_its_nights_and_commits() {
    let env = TestEnv::new();
    // The action's own history (its gh-pages data.js): cargo bench in ns/iter, Go in ns/op,
    // and a Benchmark.js group in ops/sec, which is a throughput and is refused as a time.
    let out = import(&env, &[FIXTURE]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("Benchmark.js Benchmark") && err.contains("\"ops/sec\" is a throughput"),
        "{err}"
    );
    assert!(
        err.contains("--entry NAME"),
        "the fix names the flag: {err}"
    );
    assert_eq!(runs_or_none(&env), 0, "nothing stored from a refused file");

    let map = env.write(
        "cases.toml",
        "\"bench_fib_10\" = \"fib/rust/bf16/decode/b1/c10\"\n\
         \"bench_fib_20\" = \"fib/rust/bf16/decode/b1/c20\"\n\
         \"BenchmarkFib10\" = \"fib/go/bf16/decode/b1/c10\"\n\
         \"BenchmarkFib20\" = \"fib/go/bf16/decode/b1/c20\"\n",
    );
    let out = import(
        &env,
        &[
            FIXTURE,
            "--entry",
            "Rust Benchmark",
            "--entry",
            "Go Benchmark",
            "--case-map",
            map.to_str().expect("utf-8"),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    let (mut expected, mut stored) = (file_figures(), stored_figures(&env));
    let order = |a: &Figure, b: &Figure| (a.0, &a.2).cmp(&(b.0, &b.2));
    stored.sort_by(order);
    expected.sort_by(order);
    assert_eq!(stored.len(), expected.len());
    for (s, e) in stored.iter().zip(&expected) {
        assert_eq!((s.0, &s.1, &s.2), (e.0, &e.1, &e.2));
        assert!((s.3 - e.3).abs() < 1e-12, "{s:?} vs {e:?}");
    }
    // The first night is 2019-11-08T07:34:40.535Z (the entry's time), never today's.
    let list = runs(&env);
    assert!(
        list.iter().any(|r| r["started_at"]
            .as_str()
            .is_some_and(|t| t.starts_with("2019-11-08T07:34:40"))),
        "{list:?}"
    );
    // Once imported, the same file stores nothing twice.
    let before = count_results(&env);
    let out = import(
        &env,
        &[
            FIXTURE,
            "--entry",
            "Rust Benchmark",
            "--entry",
            "Go Benchmark",
            "--case-map",
            map.to_str().expect("utf-8"),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(count_results(&env), before);
}

/// A night (ms since 1970), its commit, the case's model/context and its step (ms).
type Figure = (i64, String, String, f64);

/// The Rust and Go groups of the fixture as the file has them (ns -> ms).
fn file_figures() -> Vec<Figure> {
    let text = std::fs::read_to_string(FIXTURE).expect("fixture");
    let data: serde_json::Value =
        serde_json::from_str(&text[text.find('{').expect("object")..]).expect("json");
    let mut expected = Vec::new();
    for (group, model) in [("Rust Benchmark", "rust"), ("Go Benchmark", "go")] {
        for entry in data["entries"][group].as_array().expect("entries") {
            for bench in entry["benches"].as_array().expect("benches") {
                let context = if bench["name"].as_str().expect("name").ends_with("10") {
                    10
                } else {
                    20
                };
                expected.push((
                    entry["date"].as_i64().expect("date"),
                    entry["commit"]["id"].as_str().expect("id").to_owned(),
                    format!("{model}/{context}"),
                    bench["value"].as_f64().expect("value") / 1e6,
                ));
            }
        }
    }
    expected
}

/// Every stored result as a [`Figure`]; each run's trigger is `import`.
fn stored_figures(env: &TestEnv) -> Vec<Figure> {
    let conn = rusqlite::Connection::open(env.db()).expect("store");
    let mut stmt = conn
        .prepare(
            "SELECT u.started_at_ns, u.git_sha, s.model, s.context, r.median_ms, u.trigger
             FROM results r JOIN runs u ON u.id = r.run_id JOIN series s ON s.id = r.series_id",
        )
        .expect("query");
    stmt.query_map([], |r| {
        let ns: i64 = r.get(0)?;
        let trigger: String = r.get(5)?;
        assert_eq!(trigger, "import");
        Ok((
            ns / 1_000_000,
            r.get(1)?,
            format!("{}/{}", r.get::<_, String>(2)?, r.get::<_, i64>(3)?),
            r.get(4)?,
        ))
    })
    .expect("rows")
    .collect::<Result<_, _>>()
    .expect("rows")
}

/// The number of stored runs, 0 where no store was created.
fn runs_or_none(env: &TestEnv) -> i64 {
    if !env.db().exists() {
        return 0;
    }
    let conn = rusqlite::Connection::open(env.db()).expect("store");
    conn.query_row("SELECT count(*) FROM runs", [], |r| r.get(0))
        .unwrap_or(0)
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
