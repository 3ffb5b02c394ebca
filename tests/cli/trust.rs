//! DESIGN.md §13 through the binary: `run` refuses to start a harness while it holds a GitHub
//! credential (unless `--trusted`); `publish` posts only a run measured for the pull request
//! and commit it publishes for, with the verdicts and gate stored with the run.

use std::process::Output;

use serde_json::Value;

use crate::env::{TestEnv, stderr, stdout};
use crate::standin::{HEAD_SHA, REPO, StandIn, TOKEN, fixture_json, workflow_run_event};

const OTHER_SHA: &str = "f95f852bd8fca8fcc58a9a2d6c842781e32a215e";

/// The binary with the Actions variables of a job, the stand-in API and the token.
fn actions(env: &TestEnv, gh: &StandIn, event_name: &str, event: &Value) -> assert_cmd::Command {
    let mut cmd = env.cmd();
    let path = env.write(&format!("gh/{event_name}.json"), &event.to_string());
    cmd.env("GITHUB_ACTIONS", "true")
        .env("GITHUB_TOKEN", TOKEN)
        .env("GITHUB_API_URL", gh.uri())
        .env("GITHUB_REPOSITORY", REPO)
        .env("GITHUB_EVENT_NAME", event_name)
        .env("GITHUB_EVENT_PATH", path)
        .env("GITHUB_SHA", "1111111111111111111111111111111111111111")
        .env_remove("GITHUB_STEP_SUMMARY");
    cmd
}

/// `publish --workflow-run` (plus `extra` arguments) for a `workflow_run` event that concluded
/// `conclusion` at `head` (from a fork when `fork`).
fn publish_workflow_run(
    env: &TestEnv,
    gh: &StandIn,
    (conclusion, head, fork): (&str, &str, bool),
    extra: &[&str],
) -> Output {
    actions(
        env,
        gh,
        "workflow_run",
        &workflow_run_event(conclusion, head, fork),
    )
    .args(["publish", "--workflow-run"])
    .args(extra)
    .output()
    .expect("runs")
}

fn pull_request_event(head: &str) -> Value {
    let mut event = fixture_json("pull_request__opened.payload.json");
    event["pull_request"]["head"]["sha"] = head.into();
    event
}

/// A run of pull request #2 at `head`, measured as the PR check measures it (no token).
fn pr_run(env: &TestEnv, head: &str, step_ms: &str) -> Output {
    let event = env.write("gh/pr-run.json", &pull_request_event(head).to_string());
    env.cmd()
        .args(["run", "--no-promote"])
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_EVENT_NAME", "pull_request")
        .env("GITHUB_EVENT_PATH", event)
        .env("GITHUB_SHA", "1111111111111111111111111111111111111111")
        .env("GITHUB_REF", "refs/pull/2/merge")
        .env("GITHUB_HEAD_REF", "changes")
        .env("STEP_MS", step_ms)
        .output()
        .expect("runs")
}

#[test]
fn publish_refuses_main_nightly_for_a_pull_request_and_posts_nothing() {
    let env = TestEnv::new();
    let out = env.run("main", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let gh = StandIn::start(HEAD_SHA, &[]);
    let out = actions(&env, &gh, "pull_request", &pull_request_event(HEAD_SHA))
        .arg("publish")
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("refusing to publish run 1"), "{err}");
    assert!(
        err.contains(
            "the pull request differs: run 1 was measured for no pull request (branch main)"
        ),
        "{err}"
    );
    assert!(err.contains("pull request #2 at ec26c3e57ca3"), "{err}");
    assert!(gh.requests().is_empty(), "nothing was posted");

    // The same through the publishing workflow: refused, and the statuses say so.
    std::fs::copy(env.db(), env.path().join("artifact.db")).expect("copy");
    let out = publish_workflow_run(
        &env,
        &gh,
        ("success", HEAD_SHA, false),
        &["--db", "artifact.db"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("the pull request differs"),
        "{}",
        stderr(&out)
    );
    let statuses = gh.writes("/statuses/");
    assert_eq!(statuses.len(), 1);
    assert_eq!(statuses[0].1["state"], "pending");
    assert!(gh.writes("/comments").is_empty());
}

#[test]
fn publish_refuses_a_run_of_an_earlier_push() {
    let env = TestEnv::new();
    assert_eq!(env.run("main", &[]).status.code(), Some(0));
    let out = pr_run(&env, OTHER_SHA, "10.0");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let gh = StandIn::start(HEAD_SHA, &[]);
    // New commits arrived (the event's head moved): the stored run measured the old head.
    let out = actions(&env, &gh, "pull_request", &pull_request_event(HEAD_SHA))
        .arg("publish")
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("the head commit differs"), "{err}");
    assert!(err.contains("pull request #2 at f95f852bd8fc"), "{err}");
    assert!(gh.requests().is_empty());

    // A fork's workflow_run names no pull request: the run's #2 must have this head on GitHub.
    let gh = StandIn::start(HEAD_SHA, &[]);
    let out = publish_workflow_run(&env, &gh, ("success", OTHER_SHA, true), &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("pull request #2 has head ec26c3e57ca3"),
        "{}",
        stderr(&out)
    );
    assert!(gh.writes("/comments").is_empty());
    assert!(
        gh.writes("/statuses/")
            .iter()
            .all(|(_, b)| b["state"] == "pending"),
        "never success"
    );
}

#[test]
fn publish_posts_the_verdicts_and_gate_stored_with_the_run_not_a_rejudgement() {
    let env = TestEnv::new();
    assert_eq!(env.run("main", &[]).status.code(), Some(0));
    let out = pr_run(&env, HEAD_SHA, "11.5");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    // The publishing side's config is another (the default branch's, or none at all): a
    // looser gate and a custom status name. The verdicts and the gate stay the run's.
    let config = TestEnv::config_with("").replace(
        "max_drop_pct = 3.0",
        "max_drop_pct = 50.0\nfail_on = []\n\n[report]\nstatus_context = \"perf/{suite} on {gpu}\"",
    );
    env.write_config(&config);
    let gh = StandIn::start(HEAD_SHA, &[]);
    let out = publish_workflow_run(&env, &gh, ("failure", HEAD_SHA, false), &[]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "the stored gate failed: {}",
        stderr(&out)
    );
    let statuses = gh.writes("/statuses/");
    assert_eq!(statuses.len(), 1);
    assert_eq!(statuses[0].1["state"], "failure");
    assert_eq!(statuses[0].1["context"], "perf/decode on h100-sxm");
    let comments = gh.writes("/issues/2/comments");
    let body = comments[0].1["body"].as_str().expect("body");
    assert!(body.contains("Gate failed"), "{body}");
    assert!(body.contains("a utilisation drop beyond 3.0%"), "{body}");
    assert!(body.contains("fails on regressed, invalid"), "{body}");
}

/// `run` with `name=value` in its environment: refused (exit 2). Its stderr.
fn refused_beside(env: &TestEnv, name: &str, value: &str) -> String {
    let out = env
        .cmd()
        .args(["run", "--report-dir", "out"])
        .env(name, value)
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2), "{name}: {}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("refusing to start a harness"), "{err}");
    err
}

/// A pull request's harness beside the shared store's password could rewrite its history and
/// baselines: `run` refuses as it does for a token, before it opens the store.
#[test]
fn run_refuses_to_start_a_harness_beside_a_database_password() {
    let env = TestEnv::new();
    // 127.0.0.1:9 has no server: a run that tried the store would fail on the connection.
    let store = "postgres://gate:s3cret-store-pw@127.0.0.1:9/perf";
    for (name, value, named) in [
        ("PGPASSWORD", "hunter2-db-password", "$PGPASSWORD"),
        ("UTILGATE_DB", store, "$UTILGATE_DB"),
        ("DATABASE_URL", store, "$DATABASE_URL"),
    ] {
        let err = refused_beside(&env, name, value);
        assert!(err.contains(named), "{err}");
        assert!(!err.contains("hunter2") && !err.contains("s3cret"), "{err}");
        assert!(err.contains("--baselines baselines/"), "{err}");
        assert!(!err.contains("connect"), "refused before the store: {err}");
        assert!(!env.db().exists(), "nothing ran, nothing stored");
    }
    // On the command line, where a harness can read it from /proc/<pid>/cmdline.
    let out = env
        .cmd()
        .args(["run", "--db", store])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("the store location in --db (or $UTILGATE_DB) carries its password"),
        "{err}"
    );
    assert!(!err.contains("s3cret"), "{err}");
    // A URL without a password is refused too (#28: trust or peer authentication needs none):
    // tests/cli/credentials.rs.
}

#[test]
fn run_refuses_to_start_a_harness_while_it_holds_a_credential() {
    let env = TestEnv::new();
    for (name, value) in [
        ("GITHUB_TOKEN", TOKEN),
        ("GH_TOKEN", "gho_something"),
        ("ACTIONS_ID_TOKEN_REQUEST_TOKEN", "eyJhbGciOi"),
        ("DEPLOY_KEY", "github_pat_11ABCDEF"),
    ] {
        let err = refused_beside(&env, name, value);
        assert!(err.contains(name), "{err}");
        assert!(!err.contains(value), "{err}");
        assert!(err.contains("hint:") && err.contains("--trusted"), "{err}");
        assert!(!env.db().exists(), "nothing ran, nothing stored");
    }
    // An empty variable holds nothing.
    let out = env
        .cmd()
        .arg("run")
        .env("GITHUB_TOKEN", "")
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    // A checkout that kept its token (persist-credentials left on) counts too.
    let git = |args: &[&str]| {
        let status = std::process::Command::new("git")
            .args(args)
            .current_dir(env.path())
            .output()
            .expect("git");
        assert!(
            status.status.success(),
            "{}",
            String::from_utf8_lossy(&status.stderr)
        );
    };
    git(&["init", "-q"]);
    git(&[
        "config",
        "http.https://github.com/.extraheader",
        "AUTHORIZATION: basic eC1hY2Nlc3MtdG9rZW46Z2hzX3NlY3JldA==",
    ]);
    let out = env.cmd().arg("run").output().expect("runs");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("http.https://github.com/.extraheader"),
        "{err}"
    );
    assert!(err.contains("persist-credentials: false"), "{err}");
    assert!(!err.contains("eC1hY2Nlc3M"), "{err}");

    // Told the job is trusted, it runs.
    let out = env
        .cmd()
        .args(["run", "--trusted"])
        .env("GITHUB_TOKEN", TOKEN)
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let runs = env.json(&["runs", "list"]);
    assert_eq!(runs["runs"].as_array().map(Vec::len), Some(2));
}

#[test]
fn a_case_the_run_did_not_measure_keeps_its_stored_verdict_in_publish() {
    let env = TestEnv::new();
    assert_eq!(env.run("main", &[]).status.code(), Some(0));
    // The pull request drops a case, and its config fails the gate on missing cases.
    let pr_config = TestEnv::config_with("")
        .replace("batches = [1, 8]", "batches = [1]")
        .replace(
            "max_drop_pct = 3.0",
            "max_drop_pct = 3.0\nfail_on = [\"regressed\", \"invalid\", \"missing\"]",
        );
    env.write_config(&pr_config);
    let out = pr_run(&env, HEAD_SHA, "10.0");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    // The publishing side has the default config back.
    env.write_config(&TestEnv::config_with(""));
    let gh = StandIn::start(HEAD_SHA, &[]);
    let out = publish_workflow_run(&env, &gh, ("failure", HEAD_SHA, false), &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let statuses = gh.writes("/statuses/");
    assert_eq!(statuses[0].1["state"], "failure");
    let body = gh.writes("/issues/2/comments")[0].1["body"]
        .as_str()
        .expect("body")
        .to_owned();
    assert!(body.contains("missing"), "{body}");
    assert!(body.contains("b8/c4096"), "{body}");
}

/// The issue's env value (#28 item 2): a newline, then a tag, a mention, another suite's hidden
/// marker and two workflow commands, as a harness reports it (JSON `\n`).
const HOSTILE_TORCH: &str = "torch 2.5\\n::add-mask::x\\n::error::gate: passed\\n<img src=x onerror=alert(1)> @some-org/team #123 <!-- utilgate:other-suite -->";

#[test]
fn a_hostile_env_value_is_text_in_every_report_and_never_a_line_of_the_log() {
    let env = TestEnv::new();
    assert_eq!(env.run("main", &[]).status.code(), Some(0));
    let out = env.run(
        "feature",
        &[("STEP_MS", "11.5"), ("TORCH_VERSION", HOSTILE_TORCH)],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let terminal = format!("{}{}", stdout(&out), stderr(&out));
    assert!(
        terminal.contains("::add-mask::x"),
        "the value is shown: {terminal}"
    );
    for line in terminal.lines() {
        assert!(
            !line.trim_start().starts_with("::"),
            "a workflow command: {line:?}"
        );
        assert!(!line.trim_start().starts_with("<img"), "{line:?}");
    }
    for format in ["markdown", "summary", "html"] {
        let text = env.report(format);
        assert!(
            text.contains("onerror=alert(1)"),
            "{format}: the value is shown: {text}"
        );
        // No marker anywhere; a code block's text is literal (GitHub renders no tag and no
        // mention there), everything else must be inert.
        assert!(
            !text.contains("<!-- utilgate:other-suite"),
            "{format}: {text}"
        );
        let prose = outside_fences(&text);
        // A mention or an issue reference is live only where GitHub renders Markdown, a line
        // starting `::` only in a log.
        let live: &[&str] = if format == "html" {
            &["<img"]
        } else {
            &["<img", "@some-org", "#123", "\n::"]
        };
        for active in live {
            assert!(!prose.contains(active), "{format}: {active:?} in {prose}");
        }
    }
}

/// `text` without its fenced code blocks.
fn outside_fences(text: &str) -> String {
    let mut fenced = false;
    let mut out = String::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}
