//! Service cases in every report surface (the PR comment through a mock GitHub, HTML with its
//! charts, Markdown, `JUnit` per gated metric, JSON) and a config with step and service suites
//! stored, judged and reported as one run with one exit code.

use super::{bare, import, real, stub_run, suite_config};
use crate::env::{TestEnv, stderr, stdout};
use crate::github::{Actions, Github, HEAD_SHA, REPO, clean, matching};

const CASE_2: &str = "serve/stub-model/rate=2/in=256/out=32";
const CASE_4: &str = "serve/stub-model/rate=4/in=256/out=32";

/// The service suite over two request rates.
fn two_rates(extra: &str) -> String {
    suite_config(7, extra).replace("request_rates = [4.0]", "request_rates = [2.0, 4.0]")
}

fn run(env: &TestEnv, branch: &str, extra: &[&str]) -> std::process::Output {
    env.cmd()
        .args(["run", "--branch", branch, "--git-sha", "0123456789abcdef"])
        .args(extra)
        .output()
        .expect("runs")
}

fn read(env: &TestEnv, name: &str) -> String {
    std::fs::read_to_string(env.path().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn a_serve_suite_writes_html_markdown_junit_and_json_with_its_cases() {
    let env = TestEnv::new();
    env.write_config(&two_rates("--noise-offset 0"));
    let out = run(&env, "main", &["--report-dir", "base"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    env.write_config(&two_rates("--noise-offset 2 --ttft-tail-factor 1.3"));
    let out = run(&env, "feature", &["--report-dir", "out"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );

    let html = read(&env, "out/report.html");
    let escaped = |case: &str| case.replace('/', "&#x2f;");
    assert!(
        html.contains(&escaped(CASE_2)) && html.contains(&escaped(CASE_4)),
        "{html}"
    );
    assert!(
        html.contains("TTFT ms against request rate")
            && html.contains("ITL ms against request rate"),
        "the rate charts: {html}"
    );
    assert!(
        html.contains("p99 then") && html.contains("p99 now"),
        "then vs now"
    );
    assert!(html.contains("over the stored runs"), "the history chart");
    assert!(html.contains("<polyline"), "an SVG line");

    let junit = read(&env, "out/junit.xml");
    for metric in [
        "median_ttft_ms",
        "p99_ttft_ms",
        "median_itl_ms",
        "output_throughput",
    ] {
        assert_eq!(
            junit.matches(&format!("name=\"{metric}\"")).count(),
            2,
            "one testcase per gated metric and case: {junit}"
        );
    }
    assert!(
        junit.contains("<failure type=\"regressed\" message=\"p99_ttft_ms regressed"),
        "{junit}"
    );
    assert!(
        junit.contains(r#"<testsuite name="serve" tests="8""#),
        "{junit}"
    );

    let md = read(&env, "out/report.md");
    assert!(md.contains("| service case | TTFT p50 ms"), "{md}");
    assert!(md.contains(&format!("`{CASE_4}`")), "{md}");
    assert!(md.contains("utilgate: Service gate failed"), "{md}");
    assert!(md.contains("`p99_ttft_ms`"), "the gated metrics: {md}");

    let json: serde_json::Value =
        serde_json::from_str(&read(&env, "out/report.json")).expect("JSON");
    assert_eq!(json["service"].as_array().map(Vec::len), Some(2), "{json}");
    assert_eq!(json["gate"]["passed"], false);
    assert_eq!(json["suites"][0]["name"], "serve");
}

#[test]
fn a_serve_suite_posts_its_sticky_comment_and_status_with_github() {
    let env = TestEnv::new();
    env.write_config(&suite_config(7, "--noise-offset 0"));
    let out = run(&env, "main", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    env.write_config(&suite_config(7, "--noise-offset 2 --ttft-tail-factor 1.3"));
    let gh = Github::happy();
    let actions = Actions::new(&env, &gh.uri(), false);
    let mut cmd = clean(&env);
    actions.apply(&mut cmd);
    let out = cmd
        .args(["run", "--trusted", "--github", "--branch", "feature"])
        .args(["--git-sha", "0123456789abcdef"])
        .output()
        .expect("runs");
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    let requests = gh.requests();
    let posted = matching(
        &requests,
        "POST",
        &format!("/repos/{REPO}/issues/2/comments"),
    );
    assert_eq!(posted.len(), 1, "one sticky comment");
    let body: serde_json::Value = serde_json::from_slice(&posted[0].body).expect("JSON body");
    let body = body["body"].as_str().expect("comment text");
    assert!(body.contains("utilgate:comment suite=serve"), "{body}");
    assert!(body.contains(&format!("`{CASE_4}`")), "{body}");
    assert!(body.contains("🔴 regressed"), "{body}");
    assert!(body.contains("`p99_ttft_ms`"), "{body}");
    let statuses = matching(&requests, "POST", "/statuses/");
    assert_eq!(statuses.len(), 1, "one status for the suite");
    assert_eq!(
        statuses[0].url.path(),
        format!("/repos/{REPO}/statuses/{HEAD_SHA}")
    );
    let status: serde_json::Value = serde_json::from_slice(&statuses[0].body).expect("JSON");
    assert_eq!(status["state"], "failure", "{status}");
    let summary = std::fs::read_to_string(&actions.summary).expect("summary");
    assert!(summary.contains("| serve | 1 |"), "{summary}");
}

#[test]
fn report_reads_stored_service_cases_with_the_latency_split_reading() {
    let env = bare();
    let file = real("sglang_bench/datacrunch__llama_3_3_70b_online_output.jsonl");
    let out = import(&env, &[file], &["--model", "llama-3.3-70b"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    for (format, file) in [("markdown", "report.md"), ("html", "report.html")] {
        let out = env
            .cmd()
            .args([
                "report", "--db", "serve.db", "--format", format, "--out", file,
            ])
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    }
    let md = read(&env, "report.md");
    assert!(md.contains("| service case | TTFT p50 ms"), "{md}");
    assert!(md.contains("**Latency split**"), "the reading: {md}");
    assert!(
        md.contains("rises 7.2x from rate 1 to rate 16") && md.contains("not kernels"),
        "{md}"
    );
    let html = read(&env, "report.html");
    assert!(html.contains("Latency split (estimate)"), "{html}");
    assert!(html.contains("against request rate"), "{html}");
}

#[test]
fn step_and_service_suites_are_one_run_with_one_exit_code() {
    let env = TestEnv::new();
    let config = |extra: &str| {
        let serve = suite_config(7, extra);
        let serve = &serve[serve.find("[[suite]]").expect("the service suite")..].to_owned();
        format!("{}\n{serve}", TestEnv::config_with(""))
    };
    env.write_config(&config("--noise-offset 0"));
    let out = run(&env, "main", &[]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    assert!(text.contains(CASE_4), "{text}");
    assert!(
        text.contains("decode/seed-8b"),
        "the step suite ran too: {text}"
    );
    let db = rusqlite::Connection::open(env.db()).expect("store");
    let count = |sql: &str| -> i64 { db.query_row(sql, [], |r| r.get(0)).expect("count") };
    assert_eq!(
        count("SELECT COUNT(*) FROM runs"),
        1,
        "one run for the config"
    );
    assert_eq!(
        count("SELECT COUNT(DISTINCT run_id) FROM serve_results"),
        1,
        "the service cases are in it"
    );
    assert_eq!(
        count(
            "SELECT COUNT(*) FROM runs r WHERE EXISTS (SELECT 1 FROM results x WHERE x.run_id = r.id) AND EXISTS (SELECT 1 FROM serve_results s WHERE s.run_id = r.id)"
        ),
        1
    );

    // A service regression fails the one run; JSON is one document with both kinds.
    env.write_config(&config("--noise-offset 2 --ttft-tail-factor 1.3"));
    let out = run(
        &env,
        "feature",
        &["--format", "json", "--report-dir", "out"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    assert_eq!(json["gate"]["passed"], false);
    assert_eq!(json["service"][0]["verdict"], "regressed", "{json}");
    assert!(json["cases"].as_array().is_some_and(|c| !c.is_empty()));
    assert_eq!(count("SELECT COUNT(*) FROM runs"), 2);
    let junit = read(&env, "out/junit.xml");
    assert!(junit.contains(r#"<testsuite name="decode""#), "{junit}");
    assert!(
        junit.contains(&format!(
            r#"classname="utilgate.serve.{}" name="p99_ttft_ms""#,
            CASE_4.replace('/', "&#x2f;")
        )),
        "{junit}"
    );
    let md = read(&env, "out/report.md");
    assert!(
        md.contains("| service case |") && md.contains("| case | floor ms"),
        "{md}"
    );

    for (flag, why) in [
        ("--resume", "--resume is not available"),
        ("--trace", "--trace is not available"),
    ] {
        let out = run(&env, "main", &[flag]);
        assert_eq!(out.status.code(), Some(2), "{flag}");
        assert!(stderr(&out).contains(why), "{}", stderr(&out));
    }
    assert_eq!(
        count("SELECT COUNT(*) FROM runs"),
        2,
        "refused before measuring"
    );
}

/// A config with both kinds whose store refuses the run at the end: the rescue file holds the
/// service cases as well as the step cases, and `import run` stores them all (before, the
/// service cases' measured results were lost with the temporary files).
#[test]
fn a_mixed_run_the_store_refuses_is_rescued_with_its_service_cases() {
    let env = TestEnv::new();
    let serve = suite_config(7, "--noise-offset 0");
    let serve = &serve[serve.find("[[suite]]").expect("the service suite")..];
    let config = format!(
        "[store]\nbusy_timeout_s = 0.5\n{}\n{serve}",
        TestEnv::config_with("")
    )
    .replace(
        "command = \"sh harness.sh\"",
        "command = \"touch step.started; sleep 1; sh harness.sh\"",
    );
    env.write_config(&config);
    assert_eq!(run(&env, "main", &[]).status.code(), Some(0));
    std::fs::remove_file(env.path().join("step.started")).expect("reset");
    let child = env
        .std_cmd()
        .args(["run", "--branch", "main", "--git-sha", "0123456789abcdef"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("starts");
    // The service cases are measured first; once a step case starts, lock the store.
    let end = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !env.path().join("step.started").exists() {
        assert!(std::time::Instant::now() < end, "no step case started");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let locker = rusqlite::Connection::open(env.db()).expect("open");
    locker.execute_batch("BEGIN EXCLUSIVE").expect("lock");
    let out = child.wait_with_output().expect("finishes");
    drop(locker);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    let rescue = err
        .lines()
        .find_map(|l| {
            let at = l.find("rescue file ")? + "rescue file ".len();
            Some(l[at..].trim().to_owned())
        })
        .unwrap_or_else(|| panic!("no rescue file named: {err}"));
    let text = std::fs::read_to_string(env.path().join(&rescue)).expect("rescue file");
    let rescued: serde_json::Value = serde_json::from_str(&text).expect("json");
    assert_eq!(
        rescued["run"]["serve"].as_array().map(Vec::len),
        Some(1),
        "the service case is in the rescue file"
    );
    let out = env
        .cmd()
        .args(["import", "run", &rescue])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let db = rusqlite::Connection::open(env.db()).expect("store");
    let count = |sql: &str| -> i64 { db.query_row(sql, [], |r| r.get(0)).expect("count") };
    assert_eq!(count("SELECT COUNT(*) FROM runs"), 2);
    assert_eq!(
        count("SELECT COUNT(*) FROM serve_results WHERE run_id = 2"),
        1,
        "the imported run holds its service case"
    );
    assert_eq!(count("SELECT COUNT(*) FROM results WHERE run_id = 2"), 2);
}

#[test]
fn runs_show_of_an_imported_service_run_shows_its_cases_as_report_does() {
    let env = bare();
    let file = real("sglang_bench/datacrunch__llama_3_3_70b_online_output.jsonl");
    let out = import(&env, &[file], &["--model", "llama-3.3-70b"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let show = |format: &str| {
        env.cmd()
            .args(["runs", "show", "--db", "serve.db", "--format", format])
            .output()
            .expect("runs")
    };
    let human = show("human");
    let text = stdout(&human);
    assert_eq!(human.status.code(), Some(0), "{}", stderr(&human));
    assert!(text.contains("TTFT p50 ms"), "the service table: {text}");
    assert!(text.contains("llama-3.3-70b"), "its cases: {text}");
    let report = env
        .cmd()
        .args(["report", "--db", "serve.db", "--format", "json"])
        .output()
        .expect("runs");
    let shown: serde_json::Value = serde_json::from_slice(&show("json").stdout).expect("JSON");
    let reported: serde_json::Value = serde_json::from_slice(&report.stdout).expect("JSON");
    let cases = shown["service"].as_array().expect("service cases");
    assert!(!cases.is_empty(), "{shown}");
    assert_eq!(shown["service"], reported["service"], "one report model");
    assert_eq!(shown["summary"], reported["summary"]);
    assert!(
        !shown["summary"].to_string().contains("No cases"),
        "{}",
        shown["summary"]
    );
}

/// `import serve` prints the run as `runs show` later reads it: one reading of a stored run,
/// with the repeats' file fields and the baseline the case was judged against.
#[test]
fn import_serve_prints_what_runs_show_reads_back_with_its_baseline() {
    let env = bare();
    let base = stub_run(&env, "base", &["--noise-offset", "0"]);
    assert_eq!(import(&env, &base, &[]).status.code(), Some(0));
    let next = stub_run(&env, "next", &["--noise-offset", "1"]);
    let out = import(&env, &next, &["--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let printed: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let shown = env
        .cmd()
        .args(["runs", "show", "--db", "serve.db", "--format", "json"])
        .output()
        .expect("runs");
    let shown: serde_json::Value = serde_json::from_slice(&shown.stdout).expect("JSON");
    assert_eq!(printed["service"], shown["service"], "one reading");
    assert_eq!(printed["gate"]["passed"], shown["gate"]["passed"]);
    let case = &printed["service"][0];
    assert_eq!(case["repeats"].as_array().map(Vec::len), Some(3));
    // Judged against the first import's result: its id and means are reported.
    assert_eq!(case["baseline_result"], 1, "{case}");
    let base_ttft = case["baseline_means"]["median_ttft_ms"]
        .as_f64()
        .expect("the baseline's mean TTFT");
    let mean_of = |files: &[std::path::PathBuf]| {
        let v: Vec<f64> = files
            .iter()
            .map(|f| {
                let j: serde_json::Value =
                    serde_json::from_str(&std::fs::read_to_string(f).expect("read")).expect("json");
                j["median_ttft_ms"].as_f64().expect("median_ttft_ms")
            })
            .collect();
        v.iter().sum::<f64>() / v.len() as f64
    };
    assert!(
        (base_ttft - mean_of(&base)).abs() < 1e-9,
        "the baseline's means are its files' means: {base_ttft}"
    );
}
