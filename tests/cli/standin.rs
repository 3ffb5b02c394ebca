//! A stand-in GitHub on 127.0.0.1 (wiremock) for the workflow tests: the REST calls that
//! `utilgate publish` makes (comments, statuses, a pull request, a commit's statuses), answered
//! with GitHub's own payload shapes from tests/fixtures/github, every request recorded.

use std::path::Path;

use serde_json::{Value, json};
use wiremock::matchers::{method, path, path_regex};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

pub const REPO: &str = "Codertocat/Hello-World";
/// The head commit of the fixture pull request (#2).
pub const HEAD_SHA: &str = "ec26c3e57ca3a959ca5aad62de7213c562f8c821";
pub const TOKEN: &str = "ghs_UtilgateStandInToken0123456789SECRET";

pub fn fixture_json(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/github")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).expect("fixture is JSON")
}

fn comment(id: u64, body: &str) -> Value {
    let mut c = fixture_json("issue_comment__created.payload.json")["comment"].clone();
    c["id"] = id.into();
    c["body"] = body.into();
    c["html_url"] = format!("https://github.com/{REPO}/pull/2#issuecomment-{id}").into();
    c
}

fn status_response() -> Value {
    let s = fixture_json("status__payload.json");
    json!({
        "id": s["id"], "node_id": "MDY6U3RhdHVzMQ==", "url": "https://api.github.com/x",
        "avatar_url": s["avatar_url"], "target_url": s["target_url"], "context": s["context"],
        "description": s["description"], "state": "pending", "created_at": s["created_at"],
        "updated_at": s["updated_at"], "creator": s["sender"]
    })
}

pub struct StandIn {
    rt: tokio::runtime::Runtime,
    server: MockServer,
}

impl StandIn {
    /// Pull request #2 has head `pr_head`; the head commit carries `statuses` already
    /// (context, state) pairs.
    pub fn start(pr_head: &str, statuses: &[(&str, &str)]) -> StandIn {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime");
        let server = rt.block_on(MockServer::start());
        let gh = StandIn { rt, server };
        let comments = format!("/repos/{REPO}/issues/2/comments");
        gh.mount(
            Mock::given(method("GET"))
                .and(path(comments.clone()))
                .respond_with(ResponseTemplate::new(200).set_body_json(json!([]))),
        );
        gh.mount(
            Mock::given(method("POST"))
                .and(path(comments))
                .respond_with(ResponseTemplate::new(201).set_body_json(comment(77, "x"))),
        );
        gh.mount(
            Mock::given(method("POST"))
                .and(path_regex(format!(
                    "^/repos/{REPO}/statuses/[0-9a-f]{{40}}$"
                )))
                .respond_with(ResponseTemplate::new(201).set_body_json(status_response())),
        );
        // The repository has no open issues (a passing nightly looks for its own to close).
        gh.mount(
            Mock::given(method("GET"))
                .and(path(format!("/repos/{REPO}/issues")))
                .respond_with(ResponseTemplate::new(200).set_body_json(json!([]))),
        );
        let mut pull = fixture_json("pull_request__opened.payload.json")["pull_request"].clone();
        pull["head"]["sha"] = pr_head.into();
        gh.mount(
            Mock::given(method("GET"))
                .and(path(format!("/repos/{REPO}/pulls/2")))
                .respond_with(ResponseTemplate::new(200).set_body_json(pull)),
        );
        let listed: Vec<Value> = statuses
            .iter()
            .map(|(context, state)| json!({"context": context, "state": state, "description": "x"}))
            .collect();
        gh.mount(
            Mock::given(method("GET"))
                .and(path_regex(format!(
                    "^/repos/{REPO}/commits/[0-9a-f]{{40}}/status$"
                )))
                .respond_with(ResponseTemplate::new(200).set_body_json(json!({
                    "state": "pending", "sha": pr_head, "total_count": listed.len(),
                    "statuses": listed
                }))),
        );
        gh
    }

    fn mount(&self, mock: Mock) {
        self.rt.block_on(mock.mount(&self.server));
    }

    pub fn uri(&self) -> String {
        self.server.uri()
    }

    pub fn requests(&self) -> Vec<Request> {
        self.rt
            .block_on(self.server.received_requests())
            .expect("recording is on")
    }

    /// The bodies of the writes (POST, PATCH) whose path contains `part`.
    pub fn writes(&self, part: &str) -> Vec<(String, Value)> {
        self.requests()
            .iter()
            .filter(|r| r.method.as_str() != "GET" && r.url.path().contains(part))
            .map(|r| (r.url.path().to_owned(), r.body_json().expect("json body")))
            .collect()
    }
}

/// A `workflow_run` event as GitHub sends it to the publishing workflow, for a run of
/// "utilgate PR check" on pull request #2 (`pull_requests` is empty when it came from a fork).
pub fn workflow_run_event(conclusion: &str, head_sha: &str, fork: bool) -> Value {
    let head_repo = if fork { "mallory/Hello-World" } else { REPO };
    let pulls = if fork {
        json!([])
    } else {
        json!([{ "number": 2, "head": { "sha": head_sha }, "base": { "sha": "b" } }])
    };
    json!({
        "action": "completed",
        "workflow_run": {
            "id": 30_433_642, "name": "utilgate PR check", "event": "pull_request",
            "status": "completed", "conclusion": conclusion, "head_sha": head_sha,
            "head_branch": "changes",
            "html_url": format!("https://github.com/{REPO}/actions/runs/30433642"),
            "pull_requests": pulls,
            "head_repository": { "full_name": head_repo },
            "repository": { "full_name": REPO }
        },
        "repository": { "full_name": REPO }
    })
}
