//! Bad input of every kind: a clear message naming the file, field or line and the fix, exit
//! code 2, and nothing lost — earlier history and baselines are untouched.

use std::io::{BufRead, BufReader};
use std::time::{Duration, Instant};

use crate::env::{TestEnv, stderr, stdout, verdict_of};

#[test]
fn malformed_toml_names_file_and_line_and_creates_nothing() {
    let env = TestEnv::new();
    env.write_config("[gate\nmax_drop_pct = 3\n");
    let out = env.cmd().arg("run").output().expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("utilgate.toml") && err.contains("line 1"),
        "{err}"
    );
    assert!(!env.db().exists());
}

#[test]
fn unknown_key_and_wrong_type_name_the_key_path_and_fix() {
    let env = TestEnv::new();
    env.write_config(&TestEnv::config_with("repeat = 5"));
    let out = env.cmd().args(["config", "check"]).output().expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("suite[0]") && err.contains("repeat"), "{err}");

    env.write_config(
        &TestEnv::config_with("").replace("batches = [1, 8]", "batches = [1, \"8k\"]"),
    );
    let out = env.cmd().args(["config", "check"]).output().expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("suite[0].batches"), "{err}");
    assert!(err.contains("hint: write batches = [1, 8, 64]"), "{err}");
}

#[test]
fn config_check_reports_every_problem_and_accepts_a_good_config() {
    let env = TestEnv::new();
    let out = env.cmd().args(["config", "check"]).output().expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("2 case(s)"), "{}", stdout(&out));

    env.write_config(
        &TestEnv::config_with("")
            .replace("steps = 20", "steps = 0")
            .replace("models = [\"seed-8b\"]", "models = [\"seed-9b\"]"),
    );
    let out = env.cmd().args(["config", "check"]).output().expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("suite[0].models[0]") && err.contains("seed-9b"),
        "{err}"
    );
    assert!(err.contains("suite[0].steps"), "{err}");
}

#[test]
fn missing_config_file_says_how_to_make_one() {
    let env = TestEnv::new();
    let out = env
        .cmd()
        .args(["run", "--config", "nope.toml"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("nope.toml") && err.contains("config default"),
        "{err}"
    );
}

/// Run with a misbehaving harness; return (exit code, stdout, stderr, the run report).
fn failing_run(mode: &str) -> (Option<i32>, String, String, serde_json::Value) {
    let env = TestEnv::new();
    let out = env.run("main", &[("FAIL_MODE", mode)]);
    let report = env.json(&["runs", "show"]);
    // A failed case never moves a baseline.
    let baselines = env.json(&["baseline", "list"]);
    assert_eq!(
        baselines["baselines"].as_array().map(Vec::len),
        Some(0),
        "{mode}"
    );
    (out.status.code(), stdout(&out), stderr(&out), report)
}

#[test]
fn harness_failures_are_recorded_as_error_with_their_reason() {
    let table: &[(&str, &[&str])] = &[
        ("crash", &["SIGSEGV", "Segmentation fault in fake kernel"]),
        ("exit3", &["exit", "3", "CUDA out of memory"]),
        ("garbage", &["line 2"]),
        ("nan", &["NaN"]),
        ("negative", &["line 1"]),
        ("zero", &["line 1"]),
        ("nosteps", &["no counted steps"]),
    ];
    for (mode, needles) in table {
        let (code, text, _err, report) = failing_run(mode);
        assert_eq!(code, Some(2), "{mode}: {text}");
        assert_eq!(
            verdict_of(&report, "decode/seed-8b/bf16/decode/b1/c4096"),
            "error"
        );
        let case = &report["cases"][0];
        let reason = format!("{} {}", case["error"], case["stderr_tail"]);
        for needle in *needles {
            assert!(
                reason.contains(needle),
                "{mode}: {needle:?} not in {reason}"
            );
        }
        assert!(text.contains("ERROR decode/seed-8b"), "{mode}: {text}");
    }
}

#[test]
fn missing_harness_program_is_named() {
    let env = TestEnv::new();
    env.write_config(
        &TestEnv::config_with("").replace("sh harness.sh", "no-such-bench-xyz --model {{ model }}"),
    );
    let out = env.run("main", &[]);
    assert_eq!(out.status.code(), Some(2));
    let report = env.json(&["runs", "show"]);
    let error = report["cases"][0]["error"]
        .as_str()
        .expect("error")
        .to_owned();
    assert!(error.contains("no-such-bench-xyz"), "{error}");
}

#[test]
fn a_hanging_harness_is_killed_at_the_timeout() {
    let env = TestEnv::new();
    env.write_config(&TestEnv::config_with("").replace("timeout_s = 20", "timeout_s = 1"));
    let start = Instant::now();
    let out = env.run("main", &[("FAIL_MODE", "hang")]);
    assert_eq!(out.status.code(), Some(2));
    // One repeat per case times out; the case stops at its first failed repeat.
    assert!(
        start.elapsed() < Duration::from_secs(15),
        "{:?}",
        start.elapsed()
    );
    let report = env.json(&["runs", "show"]);
    let error = report["cases"][0]["error"]
        .as_str()
        .expect("error")
        .to_owned();
    assert!(error.contains("timed out"), "{error}");
}

#[test]
fn unwritable_store_path_fails_before_any_case_runs() {
    let env = TestEnv::new();
    let out = env
        .cmd()
        .args(["run", "--db", "harness.sh/inside-a-file.db"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("harness.sh/inside-a-file.db"), "{err}");
    assert!(err.contains("hint:"), "{err}");
    assert!(!err.contains("case decode"), "no case may run: {err}");
}

#[test]
fn corrupt_store_is_reported_and_never_overwritten() {
    let env = TestEnv::new();
    let garbage = b"this is not a sqlite database, but it is someone's file".repeat(100);
    std::fs::create_dir_all(env.db().parent().expect("parent")).expect("mkdir");
    std::fs::write(env.db(), &garbage).expect("write");
    let out = env.run("main", &[]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains(".utilgate/utilgate.db"), "{err}");
    assert!(
        err.contains("not a database") || err.contains("corrupt"),
        "{err}"
    );
    assert_eq!(std::fs::read(env.db()).expect("read"), garbage);
}

#[test]
fn store_locked_past_the_timeout_is_a_clear_error_and_keeps_history() {
    let env = TestEnv::new();
    assert_eq!(env.run("main", &[]).status.code(), Some(0));
    env.write_config(&format!(
        "[store]\nbusy_timeout_s = 0.3\n{}",
        TestEnv::config_with("")
    ));
    let holder = rusqlite::Connection::open(env.db()).expect("open");
    holder.execute_batch("BEGIN EXCLUSIVE;").expect("lock");
    let out = env.run("main", &[]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("locked"), "{err}");
    holder.execute_batch("ROLLBACK;").expect("unlock");
    drop(holder);
    let runs = env.json(&["runs", "list"]);
    assert_eq!(runs["runs"].as_array().expect("runs").len(), 1);
}

#[test]
fn ctrl_c_mid_run_stores_nothing_and_kills_the_harness() {
    let env = TestEnv::new();
    assert_eq!(env.run("main", &[]).status.code(), Some(0));
    let before = env.json(&["runs", "list"]);
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("utilgate"))
        .args(["run", "--branch", "main"])
        .current_dir(env.path())
        .env("GITHUB_ACTIONS", "true")
        .env("FAIL_MODE", "slowcase")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
    // Wait until the first case is done and the slow one (batch 8) has started.
    for line in lines.by_ref() {
        if line.expect("line").contains("b1/c4096: measured") {
            break;
        }
    }
    std::thread::sleep(Duration::from_millis(300));
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).expect("pid"));
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).expect("signal");
    let start = Instant::now();
    let status = child.wait().expect("wait");
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    assert_eq!(status.code(), Some(2), "{rest:?}");
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "the harness must be killed promptly"
    );
    assert!(rest.join("\n").contains("interrupted"), "{rest:?}");
    assert_eq!(
        env.json(&["runs", "list"]),
        before,
        "an interrupted run stores nothing"
    );
}
