//! The `PostgreSQL` store through the binary (issue #18): a run stored in and read from a real
//! server (a throwaway cluster, `tests/support/pg_cluster.rs`), and its faults: the server
//! killed mid-run, a wrong password, an unreachable host, a database at a newer schema. Each
//! `run` passes `--trusted`: it refuses to start a harness beside the store's password otherwise.

use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use crate::env::{TestEnv, stderr, stdout};
use crate::pg_cluster::{self, Cluster};

/// The standard config with a harness that logs each repeat it starts.
fn logging_env() -> TestEnv {
    let env = TestEnv::new();
    env.write_config(&TestEnv::config_with("").replace(
        "command = \"sh harness.sh\"",
        "command = \"echo b$UTILGATE_BATCH-r$UTILGATE_REPEAT >> started.log; sh harness.sh\"",
    ));
    env
}

/// A trusted run on the baseline branch (the store's URL comes through `UTILGATE_DB`).
const RUN: [&str; 6] = [
    "run",
    "--trusted",
    "--branch",
    "main",
    "--git-sha",
    "0123456789abcdef",
];

fn run_on(env: &TestEnv, url: &str, extra: &[(&str, &str)]) -> Output {
    let mut cmd = env.cmd();
    cmd.args(RUN).env("UTILGATE_DB", url);
    for (k, v) in extra {
        cmd.env(k, v);
    }
    cmd.output().expect("runs")
}

fn count_runs(url: &str) -> i64 {
    let mut client = postgres::Client::connect(url, postgres::NoTls).expect("connect");
    client
        .query_one("SELECT count(*) FROM runs", &[])
        .expect("count")
        .get(0)
}

#[test]
#[ignore = "needs the PostgreSQL server binaries (Debian's postgresql); .ci/run runs them: cargo test -- --ignored pg_store"]
fn a_run_is_stored_in_postgres_and_read_back() {
    let cluster = pg_cluster::shared();
    let url = cluster.url(&cluster.new_database());
    let env = logging_env();
    let out = run_on(&env, &url, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(count_runs(&url), 1);
    let list = env
        .cmd()
        .args(["runs", "list", "--format", "json"])
        .env("UTILGATE_DB", &url)
        .output()
        .expect("lists");
    assert_eq!(list.status.code(), Some(0), "{}", stderr(&list));
    let json: serde_json::Value = serde_json::from_slice(&list.stdout).expect("json");
    assert_eq!(json["runs"][0]["n_results"], 2, "{json}");
    assert!(!stderr(&out).contains(pg_cluster::PASSWORD));
}

#[test]
#[ignore = "needs the PostgreSQL server binaries (Debian's postgresql); .ci/run runs them: cargo test -- --ignored pg_store"]
fn the_server_killed_mid_run_stores_nothing_and_the_next_run_works() {
    let mut cluster = Cluster::start();
    let url = cluster.url(&cluster.new_database());
    let env = logging_env();
    let mut cmd = env.std_cmd();
    cmd.args(RUN)
        .env("UTILGATE_DB", &url)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = cmd.spawn().expect("starts");
    let started = || std::fs::read_to_string(env.path().join("started.log")).unwrap_or_default();
    let end = Instant::now() + Duration::from_secs(60);
    while started().lines().count() < 2 {
        assert!(Instant::now() < end, "the run never started measuring");
        std::thread::sleep(Duration::from_millis(20));
    }
    cluster.kill_server();
    let out = child.wait_with_output().expect("finishes");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{}\n{err}", stdout(&out));
    assert!(err.contains("lost the connection"), "{err}");
    assert!(err.contains("nothing of this write was stored"), "{err}");
    assert!(!err.contains(pg_cluster::PASSWORD), "{err}");
    cluster.restart();
    assert_eq!(count_runs(&url), 0, "nothing half-done was stored");
    let out = run_on(&env, &url, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(count_runs(&url), 1);
}

#[test]
#[ignore = "needs the PostgreSQL server binaries (Debian's postgresql); .ci/run runs them: cargo test -- --ignored pg_store"]
fn a_wrong_password_is_refused_and_never_printed() {
    let cluster = pg_cluster::shared();
    let url = cluster.url_without_password(&cluster.new_database());
    let env = logging_env();
    let out = run_on(&env, &url, &[("PGPASSWORD", "not-the-password-7f3a")]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("refused the login"), "{err}");
    assert!(
        err.contains("PGPASSWORD"),
        "the hint names where it came from: {err}"
    );
    assert!(!err.contains("not-the-password-7f3a"), "{err}");
    assert!(
        !env.path().join("started.log").exists(),
        "measured before failing"
    );
    // The right one from PGPASSWORD works.
    let out = run_on(&env, &url, &[("PGPASSWORD", pg_cluster::PASSWORD)]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
#[ignore = "needs the PostgreSQL server binaries (Debian's postgresql); .ci/run runs them: cargo test -- --ignored pg_store"]
fn an_unreachable_host_fails_within_the_connect_timeout() {
    let env = logging_env();
    let start = Instant::now();
    // A TEST-NET-1 address (RFC 5737): never routed, so the connection can only time out or
    // be refused by the network stack.
    let out = run_on(
        &env,
        "postgres://ci:hunter2@192.0.2.1:5432/gate?connect_timeout=2",
        &[],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("could not connect"), "{err}");
    assert!(err.contains("postgres://ci@192.0.2.1:5432/gate"), "{err}");
    assert!(!err.contains("hunter2"), "{err}");
    assert!(
        start.elapsed() < Duration::from_secs(30),
        "bounded: {:?}",
        start.elapsed()
    );
}

#[test]
#[ignore = "needs the PostgreSQL server binaries (Debian's postgresql); .ci/run runs them: cargo test -- --ignored pg_store"]
fn a_database_at_a_newer_schema_is_refused_and_nothing_is_written() {
    let cluster = pg_cluster::shared();
    let url = cluster.url(&cluster.new_database());
    let env = logging_env();
    assert_eq!(run_on(&env, &url, &[]).status.code(), Some(0));
    let mut client = postgres::Client::connect(&url, postgres::NoTls).expect("connect");
    client
        .batch_execute("UPDATE utilgate_schema SET version = version + 1")
        .expect("bump");
    std::fs::remove_file(env.path().join("started.log")).expect("reset log");
    let out = run_on(&env, &url, &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("newer than"), "{err}");
    assert!(
        !env.path().join("started.log").exists(),
        "measured before failing"
    );
    assert_eq!(count_runs(&url), 1, "nothing written");
}

#[test]
#[ignore = "needs the PostgreSQL server binaries (Debian's postgresql); .ci/run runs them: cargo test -- --ignored pg_store"]
fn a_baseline_is_accepted_in_postgres() {
    let cluster = pg_cluster::shared();
    let url = cluster.url(&cluster.new_database());
    let env = logging_env();
    for _ in 0..2 {
        assert_eq!(run_on(&env, &url, &[]).status.code(), Some(0));
    }
    let out = env
        .cmd()
        .args([
            "baseline",
            "accept",
            "",
            "--run",
            "2",
            "--reason",
            "new driver",
            "--db",
            &url,
        ])
        .output()
        .expect("accepts");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let mut client = postgres::Client::connect(&url, postgres::NoTls).expect("connect");
    let accepted: i64 = client
        .query_one(
            "SELECT count(*) FROM baseline_moves WHERE kind = 'accept' AND reason = 'new driver'",
            &[],
        )
        .expect("count")
        .get(0);
    assert_eq!(accepted, 2, "both cases accepted from run 2");
}
