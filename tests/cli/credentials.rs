//! #28 item 3 through the binary: the six ways a second security review got a harness started
//! beside a credential, each refused now, before any harness starts or the store is opened. The
//! harness logs every start to `started.log`, so "refused" means no pull-request code ran. A
//! value is never printed; the message names the variable (or file) and where it was found.

use std::process::{Command, Output};

use crate::env::{CLEAN_VARS, TestEnv, stderr};
use crate::pg_cluster::Cluster;

/// A classic (pre-2021) GitHub token: 40 hex digits, the shape of a commit id too.
const CLASSIC: &str = "8f14e45fceea167a5a36dedd4bea2543c0ffee42";
const MODERN: &str = "ghp_ReviewFoundThisOne0123456789abcdefXY";

/// The standard config with a harness that logs each repeat it starts.
fn logging_env() -> TestEnv {
    let env = TestEnv::new();
    env.write_config(&logging_config(""));
    env
}

/// The logging config with `tail` appended after the suite (a `[store]` table).
fn logging_config(tail: &str) -> String {
    let config = TestEnv::config_with("").replace(
        "command = \"sh harness.sh\"",
        "command = \"echo b$UTILGATE_BATCH-r$UTILGATE_REPEAT >> started.log; sh harness.sh\"",
    );
    format!("{config}\n{tail}")
}

fn started(env: &TestEnv) -> bool {
    env.path().join("started.log").exists()
}

/// Asserts `out` is the refusal: exit 2, no harness started, nothing stored, none of `secrets`
/// in what was printed. Its stderr.
fn assert_refused(env: &TestEnv, out: &Output, secrets: &[&str]) -> String {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("refusing to start a harness while utilgate holds a credential"),
        "{err}"
    );
    assert!(err.contains("hint:"), "{err}");
    assert!(!started(env), "a harness started: {err}");
    assert!(!env.db().exists(), "the store was opened: {err}");
    let printed = format!("{}{err}", String::from_utf8_lossy(&out.stdout));
    for secret in secrets {
        assert!(
            !printed.contains(secret),
            "the secret was printed: {printed}"
        );
    }
    err
}

/// `run` with `name=value` in utilgate's environment.
fn run_beside(env: &TestEnv, name: &str, value: &str) -> Output {
    env.cmd()
        .args(["run", "--branch", "feature"])
        .env(name, value)
        .output()
        .expect("runs")
}

/// (c) A classic token in a variable whose name says token; a commit id (the same shape) under
/// its usual names is no token, and the run goes on.
#[test]
fn a_classic_forty_hex_token_is_refused_and_a_commit_id_is_not() {
    let env = logging_env();
    for name in ["GH_PAT", "MY_BOT_TOKEN", "GITHUB_API_KEY"] {
        let out = run_beside(&env, name, CLASSIC);
        let err = assert_refused(&env, &out, &[CLASSIC]);
        assert!(
            err.contains(&format!(
                "${name} in utilgate's environment holds a classic GitHub token"
            )),
            "{err}"
        );
    }
    let out = env
        .cmd()
        .args(["run", "--branch", "feature"])
        .env("GITHUB_SHA", CLASSIC)
        .env("UTILGATE_REV", CLASSIC)
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(started(&env));
}

/// (d) A value that only contains a token: an `Authorization` header, the `github` context as
/// JSON (`${{ toJson(github) }}` carries the job's token), a token inside a clone URL, a Basic
/// header's base64.
#[test]
fn a_value_that_only_contains_a_token_is_refused() {
    use base64::Engine as _;
    let env = logging_env();
    let basic =
        base64::engine::general_purpose::STANDARD.encode(format!("x-access-token:{MODERN}"));
    let cases = [
        ("AUTH_HEADER", format!("Bearer {MODERN}"), MODERN),
        (
            "GITHUB_CONTEXT",
            format!(r#"{{"event_name":"pull_request","token":"{MODERN}","repository":"o/r"}}"#),
            MODERN,
        ),
        (
            "CLONE_URL",
            format!("https://x-access-token:{MODERN}@github.com/o/r.git"),
            MODERN,
        ),
        (
            "CLASSIC_HEADER",
            format!("Authorization: token {CLASSIC}"),
            CLASSIC,
        ),
        (
            "GIT_EXTRA",
            format!("AUTHORIZATION: basic {basic}"),
            basic.as_str(),
        ),
    ];
    for (name, value, secret) in &cases {
        let out = run_beside(&env, name, value);
        let err = assert_refused(&env, &out, &[*secret]);
        assert!(
            err.contains(&format!("${name} in utilgate's environment holds")),
            "{err}"
        );
    }
}

/// (e) libpq's keyword form of a connection string, password included.
#[test]
fn a_libpq_keyword_string_with_a_password_is_refused() {
    let env = logging_env();
    for value in [
        "host=127.0.0.1 port=9 user=gate password=kw-s3cret-42 dbname=perf",
        "dbname=perf password = 'kw-s3cret-42'",
    ] {
        let out = run_beside(&env, "PERF_DSN", value);
        let err = assert_refused(&env, &out, &["kw-s3cret-42"]);
        assert!(
            err.contains("$PERF_DSN in utilgate's environment holds a database password"),
            "{err}"
        );
        assert!(
            err.contains("judged against the reviewed baselines/"),
            "{err}"
        );
        assert!(
            !err.contains("GITHUB_TOKEN"),
            "no token, no token advice: {err}"
        );
    }
    // Without a password it is only an address.
    let out = run_beside(&env, "PERF_DSN", "host=127.0.0.1 port=9 dbname=perf");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

/// (f) The config file's `[store] url` carries a password while `--db` points at a file: the
/// harness can read the config as well as utilgate can.
#[test]
fn a_password_in_the_config_counts_while_db_points_elsewhere() {
    let env = logging_env();
    env.write_config(&logging_config(
        "[store]\nurl = \"postgres://gate:cfg-s3cret-77@127.0.0.1:9/perf\"\n",
    ));
    let out = env
        .cmd()
        .args(["run", "--branch", "feature", "--db"])
        .arg(env.db())
        .output()
        .expect("runs");
    let err = assert_refused(&env, &out, &["cfg-s3cret-77"]);
    assert!(
        err.contains("the store location in [store] url in utilgate.toml carries its password"),
        "{err}"
    );
    // A config URL without a password, never opened by this run, holds nothing a harness could
    // not find without utilgate: the pull request's run on its own file goes on.
    env.write_config(&logging_config(
        "[store]\nurl = \"postgres://gate@127.0.0.1:9/perf\"\n",
    ));
    let out = env
        .cmd()
        .args(["run", "--branch", "feature", "--db"])
        .arg(env.db())
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(started(&env));
}

/// (b) A wrapper that unsets the token before starting utilgate still holds it in its own
/// environment, which the harness reads through `/proc/<ppid>/environ`.
#[test]
fn a_token_left_in_the_parent_by_a_wrapper_is_refused() {
    let env = logging_env();
    let wrapper = |token: Option<&str>| {
        // `; exit $?` keeps the shell alive as utilgate's parent (a lone command may be exec'd).
        let mut cmd = Command::new("sh");
        cmd.args([
            "-c",
            "env -u GITHUB_TOKEN \"$0\" run --branch feature; exit $?",
        ])
        .arg(assert_cmd::cargo::cargo_bin("utilgate"))
        .current_dir(env.path())
        .env("NO_COLOR", "1");
        for var in CLEAN_VARS {
            cmd.env_remove(var);
        }
        if let Some(token) = token {
            cmd.env("GITHUB_TOKEN", token);
        }
        cmd.output().expect("runs")
    };
    let out = wrapper(Some(MODERN));
    let err = assert_refused(&env, &out, &[MODERN]);
    assert!(
        err.contains("$GITHUB_TOKEN in the environment of utilgate's parent (pid "),
        "{err}"
    );
    assert!(err.contains(", sh)"), "{err}");
    assert!(err.contains("leave it out of the step's env:"), "{err}");
    // The same wrapper without the token runs.
    let out = wrapper(None);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(started(&env));
}

/// (a) A `PostgreSQL` store with no password in sight: utilgate's own login (trust or peer
/// authentication over its socket, `~/.pgpass`) is the harness's too. Refused before the
/// store is opened (127.0.0.1:9 has no server: a run that tried it would fail connecting).
#[test]
fn a_postgres_store_without_a_password_is_refused_before_it_is_opened() {
    let env = logging_env();
    let url = "postgres://gate@127.0.0.1:9/perf";
    let out = env
        .cmd()
        .args(["run", "--branch", "feature", "--db", url])
        .output()
        .expect("runs");
    let err = assert_refused(&env, &out, &[]);
    assert!(
        err.contains("the store in --db (or $UTILGATE_DB) is a PostgreSQL database"),
        "{err}"
    );
    assert!(!err.contains("connect"), "refused before the store: {err}");
    let out = run_beside(
        &env,
        "UTILGATE_DB",
        "postgresql:///perf?host=/var/run/postgresql",
    );
    let err = assert_refused(&env, &out, &[]);
    assert!(err.contains("is a PostgreSQL database"), "{err}");
    env.write_config(&logging_config(&format!("[store]\nurl = \"{url}\"\n")));
    let out = env
        .cmd()
        .args(["run", "--branch", "feature"])
        .output()
        .expect("runs");
    let err = assert_refused(&env, &out, &[]);
    assert!(
        err.contains("the store in [store] url in utilgate.toml is a PostgreSQL database"),
        "{err}"
    );
}

/// (a) against a real server: a cluster whose Unix socket trusts every local user. The review
/// reached it from the harness and dropped the append-only triggers; now no harness starts
/// beside it, and nothing is created in the database.
#[test]
#[ignore = "needs the PostgreSQL server binaries (Debian's postgresql); .ci/run runs them: cargo test -- --ignored on_postgres"]
fn no_harness_runs_beside_a_trust_authenticated_socket_store_on_postgres() {
    let cluster = Cluster::start_trust();
    let db = cluster.new_database();
    let url = cluster.url_without_password(&db);
    // The exposure itself: with no password anywhere, a process of this user logs in.
    let mut client = postgres::Client::connect(&url, postgres::NoTls).expect("trust lets in");
    let tables = |client: &mut postgres::Client| -> i64 {
        client
            .query_one(
                "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'",
                &[],
            )
            .expect("count")
            .get(0)
    };
    let env = logging_env();
    let out = env
        .cmd()
        .args(["run", "--branch", "main", "--db", &url])
        .env_remove("PGPASSWORD")
        .output()
        .expect("runs");
    let err = assert_refused(&env, &out, &[]);
    assert!(err.contains("is a PostgreSQL database"), "{err}");
    assert_eq!(tables(&mut client), 0, "nothing was created or written");
    // Told the code is trusted, the same URL works: the login needed no secret.
    let out = env
        .cmd()
        .args(["run", "--trusted", "--branch", "main", "--db", &url])
        .env_remove("PGPASSWORD")
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(started(&env));
    assert!(tables(&mut client) > 0);
}

/// The grants docs/postgres.md gives the ingest role, as its SQL block says (with the owner's
/// `REVOKE`, a no-op from `PostgreSQL` 15 on).
const INGEST_GRANTS: &str = "
    REVOKE CREATE ON SCHEMA public FROM PUBLIC;
    CREATE ROLE utilgate_ingest LOGIN PASSWORD 'ingest-pw-5150';
    GRANT CONNECT ON DATABASE {db} TO utilgate_ingest;
    GRANT USAGE ON SCHEMA public TO utilgate_ingest;
    GRANT SELECT ON ALL TABLES IN SCHEMA public TO utilgate_ingest;
    GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO utilgate_ingest;
    GRANT INSERT ON runs, run_canaries, run_groups, series, results, baseline_moves, probes,
      serve_series, serve_results, serve_repeats, serve_metrics, serve_baseline_moves,
      evidence, evidence_blobs, run_budgets, run_budget_unstarted, result_budgets,
      result_repeat_costs
      TO utilgate_ingest;
    GRANT DELETE ON evidence_blobs TO utilgate_ingest;";

/// The user-defined triggers on `table`.
fn triggers(client: &mut postgres::Client, table: &str) -> i64 {
    client
        .query_one(
            "SELECT count(*) FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid \
             WHERE c.relname = $1 AND NOT t.tgisinternal",
            &[&table],
        )
        .expect("count triggers")
        .get(0)
}

/// The least-privilege ingest of docs/postgres.md on a real server: the owner's trusted run
/// creates the schema; a pull request's run on its own `SQLite` file is rescued (another writer
/// held the file at its end); `utilgate import run`, logged in as the ingest role, stores it in
/// the shared store, and a trusted `run` measures into it as that role. The role may add rows
/// (and prune raw traces) and nothing else: dropping or disabling a trigger,
/// updating or deleting a row, creating a table are refused for want of privilege.
#[test]
#[ignore = "needs the PostgreSQL server binaries (Debian's postgresql); .ci/run runs them: cargo test -- --ignored on_postgres"]
fn the_ingest_role_stores_a_run_and_cannot_touch_the_triggers_on_postgres() {
    use std::process::Stdio;
    use std::time::{Duration, Instant};
    let cluster = Cluster::start();
    let db = cluster.new_database();
    // The cluster's superuser stands for the owner: it creates the schema and owns the tables.
    let owner_url = cluster.url(&db);
    let env = TestEnv::new();
    env.write_config(&logging_config("[store]\nbusy_timeout_s = 0.5\n"));
    let out = env
        .cmd()
        .args(["run", "--trusted", "--branch", "main", "--db", &owner_url])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // The pull request's run, on the job's own file, rescued.
    assert_eq!(env.run("main", &[]).status.code(), Some(0));
    std::fs::remove_file(env.path().join("started.log")).expect("reset the log");
    let child = env
        .std_cmd()
        .args(["run", "--branch", "feature", "--pr", "7"])
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
    let rescue = err
        .lines()
        .find_map(|l| l.split_once("written to the rescue file "))
        .map_or_else(
            || panic!("no rescue file named: {err}"),
            |(_, file)| env.path().join(file.trim()),
        );
    assert!(rescue.exists(), "{}", rescue.display());

    let mut admin = postgres::Client::connect(&owner_url, postgres::NoTls).expect("owner");
    admin
        .batch_execute(&INGEST_GRANTS.replace("{db}", &db))
        .expect("the documented grants apply to the schema");
    let before = triggers(&mut admin, "runs");
    assert!(before > 0, "the schema has append-only triggers");

    let ingest_url = format!(
        "postgres://utilgate_ingest:ingest-pw-5150@localhost/{db}?host={}",
        cluster.socket_dir().display()
    );
    let out = env
        .cmd()
        .args(["import", "run"])
        .arg(&rescue)
        .args(["--db", &ingest_url])
        .output()
        .expect("imports");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!stderr(&out).contains("ingest-pw-5150"));
    let runs: i64 = admin
        .query_one("SELECT count(*) FROM runs", &[])
        .expect("count")
        .get(0);
    assert_eq!(runs, 2, "the owner's run and the imported one");
    // A trusted measuring job (a nightly shard) needs no more than the ingest role either.
    let out = env
        .cmd()
        .args(["run", "--trusted", "--branch", "main", "--db", &ingest_url])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let runs: i64 = admin
        .query_one("SELECT count(*) FROM runs", &[])
        .expect("count")
        .get(0);
    assert_eq!(runs, 3);

    let mut ingest = postgres::Client::connect(&ingest_url, postgres::NoTls).expect("ingest");
    for statement in [
        "DROP TRIGGER runs_append_only_update ON runs",
        "ALTER TABLE runs DISABLE TRIGGER ALL",
        "UPDATE runs SET branch = 'forged'",
        "DELETE FROM results",
        "DELETE FROM baseline_moves",
        "CREATE TABLE planted (x int)",
        "SELECT setval(pg_get_serial_sequence('runs', 'id'), 1)",
    ] {
        let refused = ingest
            .batch_execute(statement)
            .expect_err(statement)
            .code()
            .cloned();
        assert_eq!(
            refused,
            Some(postgres::error::SqlState::INSUFFICIENT_PRIVILEGE),
            "{statement}"
        );
    }
    assert_eq!(triggers(&mut admin, "runs"), before);
}
