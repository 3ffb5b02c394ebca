//! A pull request's run takes its gate from the base branch: a real git repository, a
//! `pull_request` event payload naming the base commit, and a head commit that loosens the
//! gate (`fail_on = []`) or edits the committed baselines while the run regresses.

use std::path::Path;
use std::process::Output;

use crate::env::{TestEnv, git, stderr};

fn commit(env: &TestEnv, message: &str) -> String {
    git(env.path(), &["add", "-A"]);
    git(env.path(), &["commit", "-qm", message]);
    git(env.path(), &["rev-parse", "HEAD"])
}

/// The `pull_request` event of a pull request from `head` into `base`.
fn event(env: &TestEnv, base: &str, head: &str) -> std::path::PathBuf {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/github/pull_request__opened.payload.json"),
    )
    .expect("fixture");
    let mut event: serde_json::Value = serde_json::from_str(&text).expect("json");
    event["pull_request"]["base"]["sha"] = base.into();
    event["pull_request"]["base"]["ref"] = "main".into();
    event["pull_request"]["head"]["sha"] = head.into();
    env.write("gh/event.json", &event.to_string())
}

/// `utilgate run` as a pull request's check runs it: in its `pull_request` event, no token.
fn pr_run(env: &TestEnv, event: &Path, extra: &[&str], step_ms: &str) -> Output {
    env.cmd()
        .args(["run", "--branch", "feature", "--no-promote"])
        .args(extra)
        .env("GITHUB_EVENT_NAME", "pull_request")
        .env("GITHUB_EVENT_PATH", event)
        .env("STEP_MS", step_ms)
        .output()
        .expect("runs")
}

/// A repository whose main commit holds the standard config (and, when `baselines`, an
/// exported `baselines/` from a good run); returns the base commit.
fn repo(env: &TestEnv, baselines: bool) -> String {
    git(env.path(), &["init", "-q", "-b", "main"]);
    env.write(".gitignore", ".utilgate/\ngh/\n");
    let out = env.run("main", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    if baselines {
        let out = env
            .cmd()
            .args(["baseline", "export", "--out", "baselines/"])
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    }
    commit(env, "base")
}

#[test]
fn a_pull_request_that_sets_fail_on_empty_still_fails_the_gate_it_regresses() {
    let env = TestEnv::new();
    let base = repo(&env, false);
    git(env.path(), &["checkout", "-q", "-b", "feature"]);
    env.write_config(
        &TestEnv::config_with("").replace("max_drop_pct = 3.0", "max_drop_pct = 3.0\nfail_on = []"),
    );
    let head = commit(&env, "loosen the gate");
    let event = event(&env, &base, &head);

    let out = pr_run(&env, &event, &[], "11.5");
    let err = stderr(&out);
    assert_eq!(
        out.status.code(),
        Some(1),
        "the base's fail_on decides: {err}"
    );
    assert!(
        err.contains(
            "this pull request changes [gate] fail_on: [\"regressed\",\"invalid\"] -> []; the base branch's settings"
        ),
        "{err}"
    );
    // Publishing the run puts the change at the top of the pull request's comment.
    let gh = crate::github::Github::happy();
    let actions = crate::github::Actions::new(&env, &gh.uri(), false);
    let out = crate::github::publish(&env, &actions, &["--sha", &head]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let requests = gh.requests();
    let created = crate::github::matching(&requests, "POST", "/issues/2/comments");
    let body: serde_json::Value = created[0].body_json().expect("json");
    let text = body["body"].as_str().expect("body");
    let second = text.lines().nth(1).unwrap_or_default();
    assert!(
        second.starts_with("> ⚠️ this pull request changes \\[gate\\] fail_on: ")
            && second.contains("the base branch's settings"),
        "{text}"
    );

    // A base commit this checkout does not have: said, and the head's settings are used
    // with a warning that they were not verified.
    let event = self::event(&env, &"f".repeat(40), &head);
    let out = pr_run(&env, &event, &[], "11.5");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "the head's fail_on = []: {err}");
    assert!(
        err.contains("warning: the gate settings were not verified against the base branch: the base commit ffffffffffff is not in this checkout"),
        "{err}"
    );
}

#[test]
fn a_pull_request_that_edits_its_committed_baselines_is_judged_against_the_bases() {
    let env = TestEnv::new();
    let base = repo(&env, true);
    git(env.path(), &["checkout", "-q", "-b", "feature"]);
    // The pull request empties its baselines: every case it measures would be new.
    let file = env.path().join("baselines/h100-sxm.json");
    let text = std::fs::read_to_string(&file).expect("exported");
    let mut json: serde_json::Value = serde_json::from_str(&text).expect("json");
    assert_eq!(json["baselines"].as_array().expect("baselines").len(), 2);
    json["baselines"] = serde_json::json!([]);
    std::fs::write(&file, json.to_string()).expect("write");
    let head = commit(&env, "move the baselines");
    let event = event(&env, &base, &head);
    let out = pr_run(&env, &event, &["--baselines", "baselines/"], "11.5");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "judged against main's: {err}");
    assert!(
        err.contains(
            "this pull request changes baselines/h100-sxm.json; the base branch's baselines"
        ),
        "{err}"
    );
}

/// A pull request cannot post its result under another check's name: `[report]
/// status_context` is the base's, stored with the run, so a publish that finds no config (the
/// `workflow_run` job's checkout keeps it elsewhere) posts `utilgate/decode`, not the head's.
#[test]
fn a_pull_request_that_renames_its_status_still_posts_under_the_bases_name() {
    let env = TestEnv::new();
    let base = repo(&env, false);
    git(env.path(), &["checkout", "-q", "-b", "feature"]);
    env.write_config(&format!(
        "{}\n[report]\nstatus_context = \"ci/required-tests\"\n",
        TestEnv::config_with("")
    ));
    let head = commit(&env, "rename the status");
    let event = event(&env, &base, &head);
    let out = pr_run(&env, &event, &[], "10.0");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains(
            "this pull request changes [report] status_context: \"utilgate/{suite}\" -> \"ci/required-tests\"; the base branch's settings"
        ),
        "{err}"
    );
    // The publishing job has no config of its own: what the run stored decides the name.
    std::fs::remove_file(env.path().join("utilgate.toml")).expect("remove");
    let gh = crate::github::Github::happy();
    let actions = crate::github::Actions::new(&env, &gh.uri(), false);
    let out = crate::github::publish(
        &env,
        &actions,
        &["--sha", &head, "--db", ".utilgate/utilgate.db"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let requests = gh.requests();
    let statuses = crate::github::matching(&requests, "POST", "/statuses/");
    assert!(!statuses.is_empty(), "a status is posted");
    for status in statuses {
        let body: serde_json::Value = status.body_json().expect("json");
        assert_eq!(body["context"], "utilgate/decode", "{body}");
    }
}
