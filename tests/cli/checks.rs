//! Check runs (`[github] checks`): the real binary and octocrab against a wiremock GitHub.
//! The create request (in progress, on the pull request's head commit), the completion
//! (conclusion, output within GitHub's limits, annotations), publish of a stored run, the 403
//! hint and fork pull requests.

use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, Request, ResponseTemplate};

use crate::env::{TestEnv, stderr};
use crate::github::{
    Actions, Github, HEAD_SHA, MERGE_SHA, REPO, baseline_then_pr, clean, matching, publish,
};

const CHECK_ID: u64 = 4001;
const NAME: &str = "utilgate/decode";

/// A check-run object as GitHub returns it (the fields utilgate reads, and a few more).
fn check_run(status: &str) -> Value {
    json!({
        "id": CHECK_ID, "head_sha": HEAD_SHA, "node_id": "CR_kwDOA", "name": NAME,
        "status": status, "url": format!("https://api.github.com/repos/{REPO}/check-runs/{CHECK_ID}"),
        "html_url": format!("https://github.com/{REPO}/runs/{CHECK_ID}")
    })
}

/// The happy GitHub plus the check-runs endpoints.
fn github_with_checks() -> Github {
    let gh = Github::happy();
    gh.mount(
        Mock::given(method("POST"))
            .and(path(format!("/repos/{REPO}/check-runs")))
            .respond_with(ResponseTemplate::new(201).set_body_json(check_run("in_progress"))),
    );
    gh.mount(
        Mock::given(method("PATCH"))
            .and(path(format!("/repos/{REPO}/check-runs/{CHECK_ID}")))
            .respond_with(ResponseTemplate::new(200).set_body_json(check_run("completed"))),
    );
    gh
}

fn with_checks(env: &TestEnv, mode: &str, extra: &str) {
    let config = TestEnv::config_with("");
    env.write_config(&format!("[github]\nchecks = \"{mode}\"\n{extra}{config}"));
}

fn body(request: &Request) -> Value {
    request.body_json().expect("json body")
}

fn assert_output_within_limits(output: &Value) {
    let title = output["title"].as_str().expect("title");
    assert!(!title.is_empty() && title.chars().count() < 255, "{title}");
    for field in ["summary", "text"] {
        let text = output[field].as_str().expect(field);
        assert!(text.chars().count() <= 65_535, "{field}: {}", text.len());
    }
}

#[test]
fn a_run_shows_the_gate_running_then_completes_the_check_with_annotations() {
    let env = TestEnv::new();
    with_checks(&env, "both", "");
    let out = env.run("main", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let gh = github_with_checks();
    let actions = Actions::new(&env, &gh.uri(), false);
    let mut cmd = clean(&env);
    actions.apply(&mut cmd);
    let out = cmd
        .args(["run", "--github", "--trusted", "--branch", "feature"])
        .env("STEP_MS", "11.5")
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("published: 1 check run(s)"),
        "{}",
        stderr(&out)
    );

    let requests = gh.requests();
    let created = matching(&requests, "POST", "/check-runs");
    assert_eq!(created.len(), 1, "one check run per suite");
    let create = body(created[0]);
    assert_eq!(create["status"], "in_progress");
    assert_eq!(create["name"], NAME);
    assert_eq!(create["head_sha"], HEAD_SHA, "the head, not {MERGE_SHA}");
    assert!(create.get("conclusion").is_none());
    assert_eq!(
        create["details_url"],
        "https://github.com/Codertocat/Hello-World/actions/runs/4242"
    );
    // Created when the run starts: before the comment and the completion.
    let position = |r: &Request| requests.iter().position(|x| std::ptr::eq(x, r));
    let completed = matching(&requests, "PATCH", &format!("/check-runs/{CHECK_ID}"));
    assert_eq!(completed.len(), 1);
    let comment = matching(&requests, "POST", "/issues/2/comments");
    assert!(position(created[0]) < position(comment[0]));
    assert!(position(created[0]) < position(completed[0]));

    let done = body(completed[0]);
    assert_eq!(done["status"], "completed");
    assert_eq!(done["conclusion"], "failure");
    let output = &done["output"];
    assert_output_within_limits(output);
    assert!(
        output["title"]
            .as_str()
            .expect("title")
            .starts_with("Gate failed on h100-sxm: 2 regressed of 2 cases"),
        "{output}"
    );
    assert!(
        output["summary"]
            .as_str()
            .expect("summary")
            .contains("| suite |")
    );
    assert!(output["text"].as_str().expect("text").contains("regressed"));
    let annotations = output["annotations"].as_array().expect("annotations");
    assert_eq!(
        annotations.len(),
        2,
        "one per regressed case: {annotations:?}"
    );
    for a in annotations {
        assert_eq!(a["annotation_level"], "failure");
        assert_eq!(a["path"], "utilgate.toml");
        assert_eq!(a["start_line"], 1);
        assert!(
            a["title"]
                .as_str()
                .expect("title")
                .starts_with("utilgate regressed: decode/seed-8b/bf16/decode/b"),
            "{a}"
        );
        assert!(
            a["message"]
                .as_str()
                .expect("message")
                .contains("utilisation fell ")
        );
    }
    // "both" keeps the commit status too.
    assert_eq!(matching(&requests, "POST", "/statuses/").len(), 1);
}

#[test]
fn publish_creates_a_completed_check_run_for_a_stored_run() {
    let env = TestEnv::new();
    with_checks(&env, "check-run", "");
    baseline_then_pr(&env, "10.0");
    let gh = github_with_checks();
    let actions = Actions::new(&env, &gh.uri(), false);
    let out = publish(&env, &actions, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let requests = gh.requests();
    assert!(
        matching(&requests, "POST", "/statuses/").is_empty(),
        "check-run mode posts no commit status"
    );
    let created = matching(&requests, "POST", "/check-runs");
    assert_eq!(created.len(), 1);
    let create = body(created[0]);
    assert_eq!(create["status"], "completed");
    assert_eq!(create["conclusion"], "success");
    assert_eq!(create["head_sha"], HEAD_SHA);
    assert_output_within_limits(&create["output"]);
    assert!(
        create["output"].get("annotations").is_none(),
        "nothing to annotate"
    );
}

#[test]
fn new_cases_conclude_neutral_and_oversized_output_is_cut_with_a_note() {
    let env = TestEnv::new();
    with_checks(&env, "check-run", "[report]\ntemplates = \"tpl\"\n");
    env.write(
        "tpl/comment.md.j2",
        "{{ summary }}\n```\n{% for i in range(20000) %}line {{ i }} of a huge report\n{% endfor %}```\n",
    );
    let gh = github_with_checks();
    let actions = Actions::new(&env, &gh.uri(), false);
    let mut cmd = clean(&env);
    actions.apply(&mut cmd);
    let out = cmd
        .args(["run", "--github", "--trusted", "--branch", "feature"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let requests = gh.requests();
    let completed = matching(&requests, "PATCH", &format!("/check-runs/{CHECK_ID}"));
    let done = body(completed[0]);
    assert_eq!(done["conclusion"], "neutral", "only new cases: {done}");
    assert_output_within_limits(&done["output"]);
    let text = done["output"]["text"].as_str().expect("text");
    assert!(text.len() > 60_000, "cut near the limit");
    assert!(text.contains("Truncated"), "says it was cut");
    assert_eq!(text.matches("```").count() % 2, 0, "fences closed");
}

#[test]
fn a_403_on_check_runs_names_checks_write_before_measuring() {
    let env = TestEnv::new();
    with_checks(&env, "check-run", "");
    let gh = Github::forbidden();
    let actions = Actions::new(&env, &gh.uri(), false);
    let mut cmd = clean(&env);
    actions.apply(&mut cmd);
    let out = cmd
        .args(["run", "--github", "--trusted", "--branch", "feature"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("403 Forbidden"), "{err}");
    assert!(err.contains("create the check run"), "{err}");
    assert!(err.contains("checks: write"), "{err}");
    assert!(
        !err.contains("harness starting"),
        "failed before measuring: {err}"
    );
    let listed = env.json(&["runs", "list"]);
    assert!(listed["runs"].as_array().expect("runs").is_empty());

    // publish of a stored run names it too, where comments and statuses are allowed.
    let env = TestEnv::new();
    with_checks(&env, "check-run", "");
    baseline_then_pr(&env, "10.0");
    let gh = Github::happy();
    gh.mount(
        Mock::given(method("POST"))
            .and(path(format!("/repos/{REPO}/check-runs")))
            .respond_with(ResponseTemplate::new(403).set_body_json(json!({
                "message": "Resource not accessible by integration", "status": "403"
            }))),
    );
    let actions = Actions::new(&env, &gh.uri(), false);
    let out = publish(&env, &actions, &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("checks: write"), "{}", stderr(&out));
}

#[test]
fn a_fork_pull_request_gets_no_check_run_and_a_warning() {
    let env = TestEnv::new();
    with_checks(&env, "both", "");
    let gh = Github::forbidden();
    let actions = Actions::new(&env, &gh.uri(), true);
    let mut cmd = clean(&env);
    actions.apply(&mut cmd);
    cmd.env_remove("GITHUB_TOKEN");
    let out = cmd
        .args(["run", "--github", "--trusted", "--branch", "feature"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("warning: this pull request comes from a fork"),
        "{}",
        stderr(&out)
    );
    assert!(gh.requests().is_empty(), "nothing is sent for a fork");
}

/// A harness that sends Ctrl-C's SIGINT to the `utilgate run` above it (found by walking up
/// /proc), then waits to be stopped: the run ends after its check run was started.
const INTERRUPTING_HARNESS: &str = r#"#!/bin/sh
p=$PPID
while [ "$p" -gt 1 ]; do
  if tr '\0' ' ' < "/proc/$p/cmdline" | grep -q -- ' run --github'; then kill -INT "$p"; break; fi
  p=$(awk '{print $4}' "/proc/$p/stat")
done
sleep 20
"#;

#[test]
fn a_run_that_stops_early_completes_its_check_run_cancelled_never_in_progress() {
    let env = TestEnv::new();
    with_checks(&env, "check-run", "");
    env.write("harness.sh", INTERRUPTING_HARNESS);
    let gh = github_with_checks();
    let actions = Actions::new(&env, &gh.uri(), false);
    let mut cmd = clean(&env);
    actions.apply(&mut cmd);
    let out = cmd
        .args(["run", "--github", "--trusted", "--branch", "feature"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("interrupted"), "{}", stderr(&out));
    let requests = gh.requests();
    assert_eq!(matching(&requests, "POST", "/check-runs").len(), 1);
    let completed = matching(&requests, "PATCH", &format!("/check-runs/{CHECK_ID}"));
    assert_eq!(completed.len(), 1, "the started check run is completed");
    let done = body(completed[0]);
    assert_eq!(done["status"], "completed");
    assert_eq!(done["conclusion"], "cancelled");
    assert_eq!(
        done["output"]["title"],
        "utilgate stopped before it stored a result"
    );
    assert!(
        stderr(&out).contains("completed 1 check run(s) as cancelled"),
        "{}",
        stderr(&out)
    );
}
