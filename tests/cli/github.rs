//! Publishing to GitHub: the real binary and real octocrab against a local wiremock server
//! reached through `GITHUB_API_URL`, with GitHub's own payload shapes (tests/fixtures/github).

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::{Value, json};
use wiremock::matchers::{method, path, path_regex};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

use crate::env::{TestEnv, stderr, stdout};

pub(crate) const REPO: &str = "Codertocat/Hello-World";
pub(crate) const HEAD_SHA: &str = "ec26c3e57ca3a959ca5aad62de7213c562f8c821";
pub(crate) const MERGE_SHA: &str = "1111111111111111111111111111111111111111";
pub(crate) const TOKEN: &str = "ghp_UtilgateTestToken0123456789SECRET";
const MARKER: &str = "<!-- utilgate:comment suite=decode gpu=h100-sxm -->";

fn fixture(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/github")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

pub(crate) fn fixture_json(name: &str) -> Value {
    serde_json::from_str(&fixture(name)).expect("fixture is JSON")
}

/// A comment as the REST API returns it (the webhook's comment object is the same shape).
pub(crate) fn comment(id: u64, body: &str) -> Value {
    let mut c = fixture_json("issue_comment__created.payload.json")["comment"].clone();
    c["id"] = id.into();
    c["body"] = body.into();
    c["html_url"] = format!("https://github.com/{REPO}/pull/2#issuecomment-{id}").into();
    c
}

/// A comment written by `login`.
pub(crate) fn comment_by(id: u64, body: &str, login: &str) -> Value {
    let mut c = comment(id, body);
    c["user"]["login"] = login.into();
    c
}

/// `GET /user` as GitHub answers it for a personal token: the fixture's user (who wrote the
/// fixture's comments).
pub(crate) fn mount_user(gh: &Github) {
    let user = fixture_json("issue_comment__created.payload.json")["comment"]["user"].clone();
    gh.mount(
        Mock::given(method("GET"))
            .and(path("/user"))
            .respond_with(ResponseTemplate::new(200).set_body_json(user)),
    );
}

pub(crate) fn status_response() -> Value {
    let s = fixture_json("status__payload.json");
    json!({
        "id": s["id"], "node_id": "MDY6U3RhdHVzMQ==", "url": "https://api.github.com/x",
        "avatar_url": s["avatar_url"], "target_url": s["target_url"], "context": s["context"],
        "description": s["description"], "state": "success", "created_at": s["created_at"],
        "updated_at": s["updated_at"], "creator": s["sender"]
    })
}

/// A mock GitHub: the comment list is empty the first time and holds the sticky comment
/// afterwards; creating, updating and statuses succeed.
pub(crate) struct Github {
    rt: tokio::runtime::Runtime,
    server: MockServer,
}

impl Github {
    pub(crate) fn start() -> Github {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime");
        let server = rt.block_on(MockServer::start());
        Github { rt, server }
    }

    pub(crate) fn happy() -> Github {
        let gh = Github::start();
        // The token is a personal one: it names its user, who wrote comment 77.
        mount_user(&gh);
        let comments = format!("/repos/{REPO}/issues/2/comments");
        gh.mount(
            Mock::given(method("GET"))
                .and(path(comments.clone()))
                .respond_with(ResponseTemplate::new(200).set_body_json(json!([])))
                .up_to_n_times(1)
                .with_priority(1),
        );
        gh.mount(
            Mock::given(method("GET"))
                .and(path(comments.clone()))
                .respond_with(ResponseTemplate::new(200).set_body_json(json!([
                    comment(5, "an unrelated comment"),
                    comment(77, &format!("{MARKER}\nold report")),
                ])))
                .with_priority(2),
        );
        gh.mount(
            Mock::given(method("POST"))
                .and(path(comments))
                .respond_with(ResponseTemplate::new(201).set_body_json(comment(77, MARKER))),
        );
        // Only the documented verb: a POST to the comment gets wiremock's 404.
        gh.mount(
            Mock::given(method("PATCH"))
                .and(path(format!("/repos/{REPO}/issues/comments/77")))
                .respond_with(ResponseTemplate::new(200).set_body_json(comment(77, MARKER))),
        );
        gh.mount(
            Mock::given(method("POST"))
                .and(path_regex(format!(
                    "^/repos/{REPO}/statuses/[0-9a-f]{{40}}$"
                )))
                .respond_with(ResponseTemplate::new(201).set_body_json(status_response())),
        );
        gh
    }

    pub(crate) fn forbidden() -> Github {
        let gh = Github::start();
        gh.mount(Mock::given(wiremock::matchers::any()).respond_with(
            ResponseTemplate::new(403).set_body_json(json!({
                "message": "Resource not accessible by integration",
                "documentation_url": "https://docs.github.com/rest/issues/comments#create-an-issue-comment",
                "status": "403"
            })),
        ));
        gh
    }

    pub(crate) fn mount(&self, mock: Mock) {
        self.rt.block_on(mock.mount(&self.server));
    }

    pub(crate) fn requests(&self) -> Vec<Request> {
        self.rt
            .block_on(self.server.received_requests())
            .expect("recording is on")
    }

    pub(crate) fn uri(&self) -> String {
        self.server.uri()
    }
}

/// Requests by method and path.
pub(crate) fn matching<'a>(
    requests: &'a [Request],
    verb: &str,
    path_part: &str,
) -> Vec<&'a Request> {
    requests
        .iter()
        .filter(|r| r.method.as_str() == verb && r.url.path().contains(path_part))
        .collect()
}

/// The Actions environment of a `pull_request` job.
pub(crate) struct Actions {
    pub(crate) event: PathBuf,
    pub(crate) summary: PathBuf,
    api: String,
}

impl Actions {
    pub(crate) fn new(env: &TestEnv, api: &str, fork: bool) -> Actions {
        let mut event = fixture_json("pull_request__opened.payload.json");
        if fork {
            event["pull_request"]["head"]["repo"]["fork"] = true.into();
            event["pull_request"]["head"]["repo"]["full_name"] = "mallory/Hello-World".into();
        }
        Actions {
            event: env.write("gh/event.json", &event.to_string()),
            summary: env.write("gh/step_summary.md", ""),
            api: api.to_owned(),
        }
    }

    pub(crate) fn apply(&self, cmd: &mut assert_cmd::Command) {
        cmd.env("GITHUB_ACTIONS", "true")
            .env("GITHUB_TOKEN", TOKEN)
            .env("GITHUB_API_URL", &self.api)
            .env("GITHUB_REPOSITORY", REPO)
            .env("GITHUB_EVENT_NAME", "pull_request")
            .env("GITHUB_EVENT_PATH", &self.event)
            .env("GITHUB_SHA", MERGE_SHA)
            .env("GITHUB_STEP_SUMMARY", &self.summary)
            .env("GITHUB_SERVER_URL", "https://github.com")
            .env("GITHUB_RUN_ID", "4242");
    }
}

pub(crate) fn clean(env: &TestEnv) -> assert_cmd::Command {
    let mut cmd = env.cmd();
    for var in [
        "GITHUB_TOKEN",
        "GITHUB_API_URL",
        "GITHUB_REPOSITORY",
        "GITHUB_EVENT_PATH",
        "GITHUB_STEP_SUMMARY",
        "GITHUB_SERVER_URL",
        "GITHUB_RUN_ID",
    ] {
        cmd.env_remove(var);
    }
    cmd
}

pub(crate) fn publish(env: &TestEnv, actions: &Actions, extra: &[&str]) -> Output {
    let mut cmd = clean(env);
    actions.apply(&mut cmd);
    cmd.arg("publish").args(extra);
    cmd.output().expect("runs")
}

/// A stored baseline on main, then (optionally slower) a run of pull request #2 measured as
/// the PR check measures it: in its `pull_request` event, with no token.
pub(crate) fn baseline_then_pr(env: &TestEnv, pr_step_ms: &str) {
    let out = env.run("main", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = pr_run(env, pr_step_ms);
    assert!(out.status.code().is_some(), "{}", stderr(&out));
}

/// A run of pull request #2 (head `HEAD_SHA`) in its `pull_request` event, without a token.
fn pr_run(env: &TestEnv, pr_step_ms: &str) -> Output {
    let event = env.write(
        "gh/pr-run-event.json",
        &fixture("pull_request__opened.payload.json"),
    );
    clean(env)
        .args(["run", "--branch", "feature", "--git-sha", MERGE_SHA])
        .env("GITHUB_EVENT_NAME", "pull_request")
        .env("GITHUB_EVENT_PATH", event)
        .env("STEP_MS", pr_step_ms)
        .output()
        .expect("runs")
}

#[test]
fn the_first_publish_creates_the_comment_and_the_second_updates_it() {
    let env = TestEnv::new();
    baseline_then_pr(&env, "10.0");
    let gh = Github::happy();
    let actions = Actions::new(&env, &gh.uri(), false);

    let first = publish(&env, &actions, &[]);
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    assert!(
        stderr(&first).contains("comment created"),
        "{}",
        stderr(&first)
    );
    let second = publish(&env, &actions, &[]);
    assert_eq!(second.status.code(), Some(0), "{}", stderr(&second));
    assert!(
        stderr(&second).contains("comment updated"),
        "{}",
        stderr(&second)
    );

    let requests = gh.requests();
    let created = matching(&requests, "POST", "/issues/2/comments");
    let updated = matching(&requests, "PATCH", "/issues/comments/77");
    assert_eq!(created.len(), 1, "one comment created, never duplicated");
    assert!(
        matching(&requests, "POST", "/issues/comments/77").is_empty(),
        "the update uses PATCH, as GitHub documents"
    );
    assert_eq!(
        updated.len(),
        1,
        "the second publish updates the sticky comment"
    );
    for r in created.iter().chain(&updated) {
        let body: Value = r.body_json().expect("json body");
        let text = body["body"].as_str().expect("body");
        assert!(text.starts_with(MARKER), "{text}");
        assert!(
            text.contains("utilgate: All 2 cases pass on h100-sxm"),
            "{text}"
        );
    }
    // The token is sent, and only as the Authorization header.
    let auth = created[0]
        .headers
        .get("authorization")
        .expect("auth header");
    assert_eq!(auth.to_str().expect("ascii"), format!("Bearer {TOKEN}"));

    // Statuses go to the pull request's head, not the merge commit GITHUB_SHA names.
    let statuses = matching(&requests, "POST", "/statuses/");
    assert_eq!(statuses.len(), 2, "one per publish");
    for s in statuses {
        assert_eq!(s.url.path(), format!("/repos/{REPO}/statuses/{HEAD_SHA}"));
        let body: Value = s.body_json().expect("json");
        assert_eq!(body["state"], "success");
        assert_eq!(body["context"], "utilgate/decode");
        assert_eq!(
            body["target_url"],
            "https://github.com/Codertocat/Hello-World/actions/runs/4242"
        );
        let description = body["description"].as_str().expect("description");
        assert!(description.chars().count() <= 140, "{description}");
        assert!(description.starts_with("All 2 cases pass"), "{description}");
    }
    let summary = std::fs::read_to_string(&actions.summary).expect("summary");
    assert_eq!(
        summary.matches("## ✅ utilgate: All 2 cases pass").count(),
        2,
        "{summary}"
    );
}

#[test]
fn a_regression_fails_the_status_and_annotates_from_run() {
    let env = TestEnv::new();
    let out = env.run("main", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let gh = Github::happy();
    let actions = Actions::new(&env, &gh.uri(), false);
    let mut cmd = clean(&env);
    actions.apply(&mut cmd);
    let out = cmd
        .args([
            "run",
            "--trusted",
            "--github",
            "--branch",
            "feature",
            "--git-sha",
            "0123456789abcdef",
        ])
        .env("STEP_MS", "11.5")
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("::error title=utilgate regressed on h100-sxm::decode/seed-8b/bf16/decode/b1/c4096: utilisation fell "),
        "{err}"
    );
    let requests = gh.requests();
    let status = matching(&requests, "POST", "/statuses/");
    assert_eq!(status.len(), 1);
    let body: Value = status[0].body_json().expect("json");
    assert_eq!(body["state"], "failure");
    assert!(
        body["description"]
            .as_str()
            .expect("text")
            .starts_with("Gate failed on h100-sxm: 2 regressed of 2 cases"),
        "{body}"
    );
    let created = matching(&requests, "POST", "/issues/2/comments");
    let text: Value = created[0].body_json().expect("json");
    let text = text["body"].as_str().expect("body");
    assert!(text.contains("### ❌ utilgate: Gate failed"), "{text}");
    assert!(text.contains("🔴 regressed"), "{text}");
}

/// An annotation quotes a failed case's stderr; a token shape in it is masked there as in
/// every other line utilgate prints (the annotations used to bypass the output module).
#[test]
fn annotations_published_from_a_stored_run_are_redacted() {
    let env = TestEnv::new();
    let out = env.run("main", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let event = env.write(
        "gh/pr-run-event.json",
        &fixture("pull_request__opened.payload.json"),
    );
    let out = clean(&env)
        .args(["run", "--branch", "feature", "--git-sha", MERGE_SHA])
        .env("GITHUB_EVENT_NAME", "pull_request")
        .env("GITHUB_EVENT_PATH", event)
        .env("FAIL_MODE", "leak")
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let gh = Github::happy();
    let actions = Actions::new(&env, &gh.uri(), false);
    let out = publish(&env, &actions, &[]);
    let err = stderr(&out);
    assert!(
        err.lines()
            .any(|l| l.starts_with("::error title=utilgate error") && l.contains("401 for token")),
        "the error annotation is printed:\n{err}"
    );
    assert!(
        !err.contains("ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"),
        "a token shape reached the log:\n{err}"
    );
}

#[test]
fn a_403_explains_the_permissions_block_and_the_gate_still_decides_the_exit() {
    let env = TestEnv::new();
    baseline_then_pr(&env, "10.0");
    let gh = Github::forbidden();
    let actions = Actions::new(&env, &gh.uri(), false);
    let out = publish(&env, &actions, &[]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "a failed upload of a passing run is an error"
    );
    let err = stderr(&out);
    assert!(err.contains("403 Forbidden"), "{err}");
    assert!(
        err.contains("Resource not accessible by integration"),
        "{err}"
    );
    assert!(
        err.contains("permissions:\n  contents: read\n  pull-requests: write\n  statuses: write"),
        "{err}"
    );
    assert!(
        !err.contains("Backtrace") && !err.contains("Found at"),
        "{err}"
    );

    // The run stays stored and untouched.
    let listed = env.json(&["runs", "list"]);
    assert_eq!(listed["runs"].as_array().expect("runs").len(), 2);

    // A failed gate keeps exit 1 even when the upload fails.
    let out = pr_run(&env, "11.5");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let out = publish(&env, &actions, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("pull-requests: write"));
}

#[test]
fn an_oversized_comment_is_truncated_under_the_limit() {
    let env = TestEnv::new();
    let config = TestEnv::config_with("");
    env.write_config(&format!("[report]\ntemplates = \"tpl\"\n{config}"));
    env.write(
        "tpl/comment.md.j2",
        "{{ summary }}\n<details><summary>log</summary>\n\n```\n{% for i in range(20000) %}line {{ i }} of a huge report\n{% endfor %}```\n</details>\n",
    );
    baseline_then_pr(&env, "10.0");
    let gh = Github::happy();
    let actions = Actions::new(&env, &gh.uri(), false);
    let out = publish(&env, &actions, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let requests = gh.requests();
    let created = matching(&requests, "POST", "/issues/2/comments");
    let body: Value = created[0].body_json().expect("json");
    let text = body["body"].as_str().expect("body");
    assert!(text.chars().count() <= 65_536, "{}", text.chars().count());
    assert!(text.len() > 60_000, "cut near the limit, not far below it");
    assert!(text.starts_with(MARKER));
    assert!(text.contains("Truncated to stay under GitHub's 65536-character comment limit"));
    assert_eq!(text.matches("```").count() % 2, 0);
    assert!(text.contains("</details>"));
}

#[test]
fn a_fork_pull_request_gets_files_and_a_warning_and_exits_as_the_gate_says() {
    let env = TestEnv::new();
    let out = env.run("main", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let gh = Github::forbidden();
    let actions = Actions::new(&env, &gh.uri(), true);
    let mut cmd = clean(&env);
    actions.apply(&mut cmd);
    cmd.env_remove("GITHUB_TOKEN"); // forks may get no token at all
    let out = cmd
        .args([
            "run",
            "--trusted",
            "--github",
            "--report-dir",
            "out",
            "--branch",
            "feature",
            "--git-sha",
            "0123456789abcdef",
        ])
        .env("STEP_MS", "11.5")
        .output()
        .expect("runs");
    assert_eq!(
        out.status.code(),
        Some(1),
        "the gate failed: {}",
        stderr(&out)
    );
    let err = stderr(&out);
    assert!(
        err.contains("warning: this pull request comes from a fork"),
        "{err}"
    );
    assert!(!err.contains("error:"), "{err}");
    assert!(gh.requests().is_empty(), "nothing is sent for a fork");
    for name in [
        "report.md",
        "summary.md",
        "report.html",
        "junit.xml",
        "report.json",
    ] {
        let text = std::fs::read_to_string(env.path().join("out").join(name)).expect(name);
        assert!(text.contains("regressed"), "{name}");
    }
    let summary = std::fs::read_to_string(&actions.summary).expect("summary");
    assert!(summary.contains("## ❌ utilgate: Gate failed"), "{summary}");

    // With a passing gate, the same fork run exits 0.
    let mut cmd = clean(&env);
    actions.apply(&mut cmd);
    let out = cmd
        .args([
            "run",
            "--trusted",
            "--github",
            "--branch",
            "feature",
            "--git-sha",
            "0123456789abcdef",
        ])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn github_without_a_token_fails_before_measuring() {
    let env = TestEnv::new();
    let mut cmd = clean(&env);
    cmd.env("GITHUB_REPOSITORY", REPO);
    let out = cmd.args(["run", "--github"]).output().expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("GITHUB_TOKEN is not set"), "{err}");
    assert!(err.contains("hint: pass the job's token"), "{err}");
    assert!(!env.db().exists(), "failed before any measuring");
}

/// Every file under `dir`, recursively.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("read dir") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[test]
fn the_token_never_appears_in_any_output_report_or_the_store() {
    let env = TestEnv::new();
    let gh = Github::happy();
    let actions = Actions::new(&env, &gh.uri(), false);
    let mut outputs = Vec::new();
    for (branch, step) in [("main", "10.0"), ("feature", "11.5")] {
        let mut cmd = clean(&env);
        actions.apply(&mut cmd);
        cmd.args([
            "run",
            "--trusted",
            "--github",
            "--report-dir",
            "out",
            "--branch",
            branch,
            "--git-sha",
            "0123456789abcdef",
        ])
        .env("STEP_MS", step);
        outputs.push(cmd.output().expect("runs"));
    }
    for format in ["markdown", "summary", "html", "junit", "json"] {
        let mut cmd = clean(&env);
        actions.apply(&mut cmd);
        outputs.push(
            cmd.args(["report", "--format", format])
                .output()
                .expect("runs"),
        );
    }
    outputs.push(publish(&env, &actions, &["--report-dir", "out2"]));
    // A failing publish prints its error path too.
    let forbidden = Github::forbidden();
    let failing = Actions::new(&env, &forbidden.uri(), false);
    outputs.push(publish(&env, &failing, &[]));
    assert!(stderr(outputs.last().expect("output")).contains("403"));

    assert!(
        gh.requests().iter().any(|r| r
            .headers
            .get("authorization")
            .is_some_and(|h| h.as_bytes().ends_with(TOKEN.as_bytes()))),
        "the token was used"
    );
    let needle = TOKEN.as_bytes();
    let contains = |hay: &[u8]| hay.windows(needle.len()).any(|w| w == needle);
    for out in &outputs {
        assert!(!contains(&out.stdout), "token in stdout: {}", stdout(out));
        assert!(!contains(&out.stderr), "token in stderr: {}", stderr(out));
    }
    let files = files_under(env.path());
    assert!(files.iter().any(|f| f.ends_with("utilgate.db")));
    assert!(files.iter().any(|f| f.ends_with("out/report.html")));
    for file in files {
        let bytes = std::fs::read(&file).expect("read");
        assert!(!contains(&bytes), "token in {}", file.display());
    }
}

#[test]
fn the_workflow_run_half_posts_for_a_fork_with_a_copied_store() {
    let env = TestEnv::new();
    baseline_then_pr(&env, "10.0");
    std::fs::copy(env.db(), env.path().join("gh-artifact.db")).expect("copy store");
    let gh = Github::happy();
    let actions = Actions::new(&env, &gh.uri(), true);
    let workflow_run = json!({ "workflow_run": {
        "event": "pull_request", "head_sha": HEAD_SHA, "pull_requests": [],
        "head_repository": { "full_name": "mallory/Hello-World" },
        "repository": { "full_name": REPO }
    }});
    let event = env.write("gh/workflow_run.json", &workflow_run.to_string());
    let mut cmd = clean(&env);
    actions.apply(&mut cmd);
    let out = cmd
        .env("GITHUB_EVENT_NAME", "workflow_run")
        .env("GITHUB_EVENT_PATH", &event)
        .current_dir(env.path().join("gh"))
        .args([
            "publish",
            "--db",
            "../gh-artifact.db",
            "--pr",
            "2",
            "--sha",
            HEAD_SHA,
        ])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        !stderr(&out).contains("fork"),
        "a workflow_run token can write"
    );
    let requests = gh.requests();
    assert_eq!(matching(&requests, "POST", "/issues/2/comments").len(), 1);
    let status = matching(&requests, "POST", "/statuses/");
    assert_eq!(status.len(), 1);
    assert_eq!(
        status[0].url.path(),
        format!("/repos/{REPO}/statuses/{HEAD_SHA}")
    );
}

#[test]
fn api_error_bodies_that_echo_the_token_are_redacted() {
    use base64::Engine as _;
    // #28 item 9: echoed percent-encoded in a URL, and base64 in a Basic header as git sends it.
    let encoded = TOKEN.replace('_', "%5F");
    let basic = base64::engine::general_purpose::STANDARD.encode(format!("x-access-token:{TOKEN}"));
    for status in [403u16, 500] {
        let env = TestEnv::new();
        baseline_then_pr(&env, "10.0");
        let gh = Github::start();
        gh.mount(Mock::given(wiremock::matchers::any()).respond_with(
            ResponseTemplate::new(status).set_body_json(json!({
                "message": format!(
                    "Bad request; headers were: Authorization: token {TOKEN}; also saw ghs_AnInstallationTokenXYZ0123456789; \
                     url /x?access_token={encoded}; Authorization: Basic {basic}"
                ),
                "documentation_url": "https://docs.github.com/rest",
                "status": status.to_string()
            })),
        ));
        let actions = Actions::new(&env, &gh.uri(), false);
        let out = publish(&env, &actions, &[]);
        assert_eq!(out.status.code(), Some(2), "{status}");
        let all = format!("{}{}", stdout(&out), stderr(&out));
        assert!(all.contains("Bad request"), "{status}: {all}");
        assert!(!all.contains(TOKEN), "{status}: the token leaked: {all}");
        assert!(!all.contains("ghs_AnInstallation"), "{status}: {all}");
        assert!(
            !all.contains(&encoded),
            "{status}: the URL-encoded token leaked: {all}"
        );
        assert!(
            !all.contains(&basic),
            "{status}: the base64 token leaked: {all}"
        );
        assert!(
            all.contains("ghp_***") || all.contains("***"),
            "{status}: {all}"
        );
    }
}

/// A mock GitHub whose pull request #2 already holds `comments`, whose `GET /user` answers
/// 403 as it does for the workflow's `GITHUB_TOKEN` (an installation token), and where creating
/// and updating comments and statuses succeed.
fn github_with_comments(comments: &[Value]) -> Github {
    let gh = Github::start();
    gh.mount(Mock::given(method("GET")).and(path("/user")).respond_with(
        ResponseTemplate::new(403).set_body_json(json!({
            "message": "Resource not accessible by integration", "status": "403"
        })),
    ));
    let list = format!("/repos/{REPO}/issues/2/comments");
    gh.mount(
        Mock::given(method("GET"))
            .and(path(list.clone()))
            .respond_with(ResponseTemplate::new(200).set_body_json(comments.to_vec())),
    );
    gh.mount(Mock::given(method("POST")).and(path(list)).respond_with(
        ResponseTemplate::new(201).set_body_json(comment_by(500, MARKER, "github-actions[bot]")),
    ));
    gh.mount(
        Mock::given(method("PATCH"))
            .and(path_regex(format!(
                "^/repos/{REPO}/issues/comments/[0-9]+$"
            )))
            .respond_with(ResponseTemplate::new(200).set_body_json(comment_by(
                9,
                MARKER,
                "github-actions[bot]",
            ))),
    );
    gh.mount(
        Mock::given(method("POST"))
            .and(path_regex(format!(
                "^/repos/{REPO}/statuses/[0-9a-f]{{40}}$"
            )))
            .respond_with(ResponseTemplate::new(201).set_body_json(status_response())),
    );
    gh
}

const PLANTED: &str = "PLANTED-TEXT-that-must-never-be-echoed";

#[test]
fn a_comment_with_the_marker_planted_by_another_user_is_never_edited() {
    let env = TestEnv::new();
    baseline_then_pr(&env, "10.0");
    // Someone commented first with utilgate's marker (first, as utilgate writes it).
    let gh = github_with_comments(&[
        comment_by(5, &format!("{MARKER}\n{PLANTED}"), "mallory"),
        comment_by(6, "an unrelated comment", "octocat"),
    ]);
    let actions = Actions::new(&env, &gh.uri(), false);
    let out = publish(&env, &actions, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let requests = gh.requests();
    assert!(
        matching(&requests, "PATCH", "/issues/comments/").is_empty(),
        "the planted comment is never edited"
    );
    assert_eq!(
        matching(&requests, "POST", "/issues/2/comments").len(),
        1,
        "utilgate creates its own comment"
    );
    assert_eq!(matching(&requests, "GET", "/user").len(), 1);
    let err = stderr(&out);
    assert!(err.contains("comment created"), "{err}");
    assert!(
        err.contains("warning: ignored 1 item(s) in pull request #2's comments"),
        "{err}"
    );
    assert!(
        err.contains("not written by github-actions[bot]") && err.contains("written by mallory"),
        "{err}"
    );
    assert!(!err.contains(PLANTED), "never the planted text: {err}");
}

#[test]
fn only_the_comment_utilgate_wrote_with_the_marker_first_is_updated() {
    let env = TestEnv::new();
    baseline_then_pr(&env, "10.0");
    let gh = github_with_comments(&[
        // Older than utilgate's own: a planted copy, and utilgate's marker quoted by a bot.
        comment_by(3, &format!("{MARKER}\n{PLANTED}"), "mallory"),
        comment_by(4, &format!("> quoting\n{MARKER}"), "github-actions[bot]"),
        comment_by(9, &format!("{MARKER}\nold report"), "github-actions[bot]"),
    ]);
    let actions = Actions::new(&env, &gh.uri(), false);
    let out = publish(&env, &actions, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let requests = gh.requests();
    let patched: Vec<&str> = matching(&requests, "PATCH", "/issues/comments/")
        .iter()
        .map(|r| r.url.path())
        .collect();
    assert_eq!(
        patched,
        [format!("/repos/{REPO}/issues/comments/9")],
        "only utilgate's own"
    );
    assert!(matching(&requests, "POST", "/issues/2/comments").is_empty());
    let err = stderr(&out);
    assert!(err.contains("ignored 2 item(s)"), "{err}");
    assert!(
        err.contains("written by github-actions[bot], mallory"),
        "{err}"
    );

    // A GitHub App's token names its bot in UTILGATE_GITHUB_LOGIN: the bot's comment is then
    // not utilgate's, and GitHub is not asked who the token is.
    let gh = github_with_comments(&[comment_by(
        9,
        &format!("{MARKER}\nold report"),
        "github-actions[bot]",
    )]);
    let actions = Actions::new(&env, &gh.uri(), false);
    let mut cmd = clean(&env);
    actions.apply(&mut cmd);
    let out = cmd
        .env("UTILGATE_GITHUB_LOGIN", "perf-app[bot]")
        .arg("publish")
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let requests = gh.requests();
    assert!(matching(&requests, "PATCH", "/issues/comments/").is_empty());
    assert_eq!(matching(&requests, "POST", "/issues/2/comments").len(), 1);
    assert!(matching(&requests, "GET", "/user").is_empty());
    assert!(
        stderr(&out).contains("not written by perf-app[bot]"),
        "{}",
        stderr(&out)
    );
}
