//! #28 item 3 through the binary: a run measured for a pull request never feeds the baseline
//! branch's reference, whatever its branch is called. A fork's branch named `main` runs the
//! pull-request check in its `pull_request` event (`GITHUB_HEAD_REF=main`), on a copy of main's
//! store as the example workflow does; that store is then copied into main's (`store copy`),
//! as a careless ingest would. Main's next night still pools only main's nights, keeps its
//! baseline, and its history and changes count only its nights.

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use crate::env::{TestEnv, case_of, stderr, stdout};

const CASE: &str = "decode/seed-8b/bf16/decode/b1/c4096";

/// The `pull_request` event of pull request #2 from a fork whose branch is `main`.
fn fork_event(env: &TestEnv) -> PathBuf {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/github/pull_request__opened.payload.json"),
    )
    .expect("fixture");
    let mut event: serde_json::Value = serde_json::from_str(&text).expect("json");
    event["pull_request"]["head"]["ref"] = "main".into();
    event["pull_request"]["base"]["ref"] = "main".into();
    env.write("gh/event.json", &event.to_string())
}

/// The fork's check on `db`: its `pull_request` event, its branch `main`, a much faster step,
/// and no `--no-promote` (the fork wrote its own workflow file).
fn fork_run(env: &TestEnv, db: &Path) -> std::process::Command {
    let event = fork_event(env);
    let mut cmd = env.std_cmd();
    cmd.args(["run", "--git-sha", "fedcba9876543210", "--db"])
        .arg(db)
        .env("GITHUB_EVENT_NAME", "pull_request")
        .env("GITHUB_EVENT_PATH", &event)
        .env("GITHUB_HEAD_REF", "main")
        .env("GITHUB_REF", "refs/pull/2/merge")
        .env("STEP_MS", "8.0");
    cmd
}

/// Main's next night as JSON: its case's (baseline run, reference processes, verdict).
fn main_night(env: &TestEnv) -> (i64, i64, String) {
    let report = env.json(&["run", "--branch", "main", "--git-sha", "0123456789abcdef"]);
    let case = case_of(&report, CASE);
    (
        case["baseline"]["run_id"].as_i64().expect("baseline run"),
        case["decision"]["repeats_then"]
            .as_i64()
            .expect("reference processes"),
        case["verdict"].as_str().expect("verdict").to_owned(),
    )
}

fn nights(env: &TestEnv, verb: &[&str]) -> i64 {
    let json = env.json(verb);
    json["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .find(|c| c["case"]["batch"] == 1)
        .expect("the b1 case")["nights"]
        .as_i64()
        .expect("nights")
}

#[test]
fn a_fork_named_main_imported_into_the_store_never_enters_mains_reference() {
    let env = TestEnv::new();
    for _ in 0..3 {
        let out = env.run("main", &[]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    }
    // The pull request's job measures on a copy of main's store (the cache).
    let pr_db = env.path().join("pr.db");
    let copied = env
        .cmd()
        .args(["store", "copy", "--from"])
        .arg(env.db())
        .arg("--to")
        .arg(&pr_db)
        .output()
        .expect("copies");
    assert_eq!(copied.status.code(), Some(0), "{}", stderr(&copied));
    let out = fork_run(&env, &pr_db).output().expect("runs");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let gate = stdout(&out);
    assert!(
        gate.contains("gate: passed") && !gate.contains("baselines promoted"),
        "a pull request's run moved a baseline: {gate}"
    );
    let runs = env.json(&["runs", "list", "--db", &pr_db.to_string_lossy()]);
    let pr_run = &runs["runs"][0];
    assert_eq!(pr_run["branch"], "main", "{runs}");
    assert_eq!(pr_run["pr_number"], 2, "{runs}");
    assert_eq!(pr_run["trigger"], "pull_request", "{runs}");

    // The careless ingest: the pull request's store into main's.
    let copied = env
        .cmd()
        .args(["store", "copy", "--from"])
        .arg(&pr_db)
        .arg("--to")
        .arg(env.db())
        .output()
        .expect("copies");
    assert_eq!(copied.status.code(), Some(0), "{}", stderr(&copied));

    // Main's history counts its three nights, not the pull request's.
    assert_eq!(nights(&env, &["history", CASE]), 3);
    assert_eq!(nights(&env, &["changes"]), 3);
    // Its next night: the baseline is main's third run, the reference its three nights' nine
    // processes (the baseline's three and two earlier nights'), the verdict a pass.
    let (baseline, reference, verdict) = main_night(&env);
    assert_eq!(baseline, 3, "the baseline moved to the pull request's run");
    assert_eq!(
        reference, 9,
        "the pull request's processes were pooled into main's reference"
    );
    assert_eq!(verdict, "pass");
}

/// The harness logs each repeat it starts, so a test knows when measuring has begun.
fn logging_config() -> String {
    TestEnv::config_with("")
        .replace(
            "command = \"sh harness.sh\"",
            "command = \"echo b$UTILGATE_BATCH-r$UTILGATE_REPEAT >> started.log; sh harness.sh\"",
        )
        .replace("[gate]", "[store]\nbusy_timeout_s = 0.5\n\n[gate]")
}

/// The rescue file a run named on stderr, relative to its working directory.
fn rescue_path(env: &TestEnv, err: &str) -> PathBuf {
    let named = err
        .lines()
        .find_map(|l| l.split_once("written to the rescue file "))
        .map(|(_, file)| file.trim().to_owned());
    env.path()
        .join(named.unwrap_or_else(|| panic!("no rescue file named: {err}")))
}

/// The same fork's run, rescued (another writer held the store at its end) and imported with
/// `import run`: `--promote` is refused naming the file and the fix, and imported without it the
/// run leaves main's next night as it was.
#[test]
fn a_pull_requests_rescued_run_imported_never_moves_or_joins_mains_reference() {
    let env = TestEnv::new();
    env.write_config(&logging_config());
    for _ in 0..3 {
        let out = env.run("main", &[]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    }
    std::fs::remove_file(env.path().join("started.log")).expect("reset the log");
    let child = fork_run(&env, &env.db())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starts");
    let end = Instant::now() + Duration::from_secs(60);
    let starts = || std::fs::read_to_string(env.path().join("started.log")).unwrap_or_default();
    while starts().lines().count() < 2 {
        assert!(Instant::now() < end, "the run never started measuring");
        std::thread::sleep(Duration::from_millis(20));
    }
    let locker = rusqlite::Connection::open(env.db()).expect("open");
    locker.execute_batch("BEGIN EXCLUSIVE").expect("lock");
    let out = child.wait_with_output().expect("finishes");
    drop(locker);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    let rescue = rescue_path(&env, &err);

    let out = env
        .cmd()
        .args(["import", "run", "--promote"])
        .arg(&rescue)
        .output()
        .expect("imports");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("measured for a pull request (trigger pull_request, pull request #2)")
            && err.contains(&rescue.display().to_string())
            && err.contains("hint: import it without --promote"),
        "{err}"
    );
    let out = env
        .cmd()
        .args(["import", "run"])
        .arg(&rescue)
        .output()
        .expect("imports");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let runs = env.json(&["runs", "list"]);
    assert_eq!(runs["runs"][0]["pr_number"], 2, "{runs}");
    assert_eq!(runs["runs"][0]["branch"], "main", "{runs}");

    let (baseline, reference, verdict) = main_night(&env);
    assert_eq!(baseline, 3, "the baseline moved to the pull request's run");
    assert_eq!(
        reference, 9,
        "the pull request's processes were pooled into main's reference"
    );
    assert_eq!(verdict, "pass");

    // The ingest belongs in a job without pull-request code: in the pull request's own job,
    // a shared store is refused before the file is stored anywhere.
    let out = env
        .cmd()
        .args(["import", "run", "--db", NOWHERE])
        .arg(&rescue)
        .env("GITHUB_EVENT_NAME", "pull_request")
        .output()
        .expect("imports");
    assert_no_shared_write(&out, "--db (or UTILGATE_DB)", "import");
}

/// A store URL that nothing listens on: a refusal must come before any connection.
const NOWHERE: &str = "postgres://gate@127.0.0.1:9/gate";

/// Asserts `out` is the refusal to write a shared store from a pull request's job: exit 2,
/// naming where the store came from, the verb and the fix, never the URL.
fn assert_no_shared_write(out: &Output, origin: &str, verb: &str) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "error: {origin}: `utilgate {verb}` in a job started by a pull_request event (GITHUB_EVENT_NAME) would write a PostgreSQL store"
        )),
        "{err}"
    );
    assert!(err.contains("hint: "), "{err}");
    assert!(
        !err.contains("127.0.0.1:9"),
        "the store's URL was printed: {err}"
    );
}

/// `run --trusted` in a pull request's job writes only a local file: a `PostgreSQL` store, by
/// `--db` or by the config's `[store] url`, is refused before anything is measured or opened.
#[test]
fn a_trusted_run_in_a_pull_requests_job_refuses_a_shared_store() {
    let env = TestEnv::new();
    env.write_config(&logging_config());
    let event = fork_event(&env);
    let pr_cmd = || {
        let mut cmd = env.cmd();
        cmd.env("GITHUB_EVENT_NAME", "pull_request")
            .env("GITHUB_EVENT_PATH", &event);
        cmd
    };
    let out = pr_cmd()
        .args(["run", "--trusted", "--branch", "feature", "--db", NOWHERE])
        .output()
        .expect("runs");
    assert_no_shared_write(&out, "--db (or UTILGATE_DB)", "run");
    assert!(
        stderr(&out).contains("hint: in a pull request's job write the job's own SQLite file"),
        "{}",
        stderr(&out)
    );
    assert!(
        !env.path().join("started.log").exists(),
        "a harness started"
    );

    env.write_config(&format!(
        "{}\n[store]\nurl = \"{NOWHERE}\"\n",
        TestEnv::config_with("")
    ));
    let out = pr_cmd()
        .args(["run", "--trusted", "--branch", "feature"])
        .output()
        .expect("runs");
    assert_no_shared_write(&out, "[store] url in utilgate.toml", "run");

    // The same run outside a pull request's job gets as far as the server.
    let out = env
        .cmd()
        .args(["run", "--trusted", "--branch", "main", "--db", NOWHERE])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        !stderr(&out).contains("pull_request event"),
        "{}",
        stderr(&out)
    );
    // And in a pull request's job, its own file takes the run.
    env.write_config(&TestEnv::config_with(""));
    let out = pr_cmd()
        .args(["run", "--branch", "feature", "--db", "pr.db"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

/// The ingest verbs refuse a shared store in a pull request's job, as `run` does.
#[test]
fn store_copy_and_import_in_a_pull_requests_job_refuse_a_shared_store() {
    let env = TestEnv::new();
    let out = env.run("main", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = env
        .cmd()
        .args(["store", "copy", "--from"])
        .arg(env.db())
        .args(["--to", NOWHERE])
        .env("GITHUB_EVENT_NAME", "pull_request_target")
        .output()
        .expect("copies");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(
            "error: --to: `utilgate store copy` in a job started by a pull_request_target event"
        ),
        "{err}"
    );
    let serve = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/vllm_bench/vllm_bench_serve_v0.11plus_qwen2.5vl3b_rate1.json");
    let out = env
        .cmd()
        .args(["import", "serve", "--suite", "chat", "--db", NOWHERE])
        .arg(&serve)
        .env("GITHUB_EVENT_NAME", "pull_request")
        .output()
        .expect("imports");
    assert_no_shared_write(&out, "--db (or UTILGATE_DB)", "import serve");
}
