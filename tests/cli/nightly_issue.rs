//! `publish` of a nightly (a run on the baseline branch for no pull request): a failed suite
//! opens one issue per suite and GPU, a second publish updates it (never a duplicate), a
//! passing night closes it with a comment; a 403 names `issues: write`. Real octocrab against
//! a wiremock server that keeps the issues it is given.

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use wiremock::matchers::{method, path, path_regex};
use wiremock::{Mock, Request, Respond, ResponseTemplate};

use crate::env::{TestEnv, stderr};
use crate::github::{Github, REPO, TOKEN, clean, matching, status_response};

const SHA: &str = "0123456789abcdef";
const MARKER: &str = "<!-- utilgate:nightly-issue suite=decode gpu=h100-sxm -->";

/// GitHub's issues of one repository, as the REST API keeps them.
#[derive(Clone, Default)]
struct Issues(Arc<Mutex<Vec<Value>>>);

impl Respond for Issues {
    fn respond(&self, req: &Request) -> ResponseTemplate {
        let mut issues = self.0.lock().expect("lock");
        let body: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
        let tail = req
            .url
            .path()
            .trim_start_matches(&format!("/repos/{REPO}/issues"))
            .to_owned();
        let url = |n: u64| format!("https://github.com/{REPO}/issues/{n}");
        match (req.method.as_str(), tail.as_str()) {
            ("GET", "") => {
                let open: Vec<Value> = issues
                    .iter()
                    .filter(|i| i["state"] == "open")
                    .cloned()
                    // A pull request is listed among issues too: it must be left alone.
                    .chain(std::iter::once(json!({
                        "number": 99, "html_url": url(99), "state": "open",
                        "body": MARKER, "pull_request": {"url": "x"}
                    })))
                    .collect();
                ResponseTemplate::new(200).set_body_json(open)
            }
            ("POST", "") => {
                let n = issues.len() as u64 + 1;
                // Opened with the workflow's GITHUB_TOKEN: GitHub shows the Actions bot.
                let issue = json!({
                    "number": n, "html_url": url(n), "state": "open",
                    "title": body["title"], "body": body["body"], "comments": [],
                    "user": {"login": "github-actions[bot]", "id": 41_898_282, "type": "Bot"}
                });
                issues.push(issue.clone());
                ResponseTemplate::new(201).set_body_json(issue)
            }
            (verb, rest) => {
                let (n, comments) = match rest.trim_start_matches('/').split_once('/') {
                    Some((n, "comments")) => (n.parse::<usize>().unwrap_or(0), true),
                    _ => (rest.trim_start_matches('/').parse().unwrap_or(0), false),
                };
                let Some(issue) = n.checked_sub(1).and_then(|i| issues.get_mut(i)) else {
                    return ResponseTemplate::new(404)
                        .set_body_json(json!({"message": "Not Found"}));
                };
                match (verb, comments) {
                    ("POST", true) => {
                        issue["comments"]
                            .as_array_mut()
                            .expect("comments")
                            .push(body["body"].clone());
                        ResponseTemplate::new(201)
                            .set_body_json(json!({"id": 1, "body": body["body"]}))
                    }
                    ("PATCH", false) => {
                        for key in ["body", "state", "title"] {
                            if !body[key].is_null() {
                                issue[key] = body[key].clone();
                            }
                        }
                        ResponseTemplate::new(200).set_body_json(issue.clone())
                    }
                    _ => ResponseTemplate::new(405),
                }
            }
        }
    }
}

fn github(issues: &Issues) -> Github {
    let gh = Github::start();
    // The workflow's GITHUB_TOKEN is an installation token: `GET /user` refuses it.
    gh.mount(Mock::given(method("GET")).and(path("/user")).respond_with(
        ResponseTemplate::new(403).set_body_json(json!({
            "message": "Resource not accessible by integration", "status": "403"
        })),
    ));
    gh.mount(
        Mock::given(path_regex(format!("^/repos/{REPO}/issues(/.*)?$")))
            .respond_with(issues.clone()),
    );
    gh.mount(
        Mock::given(method("POST"))
            .and(path(format!("/repos/{REPO}/statuses/{SHA}")))
            .respond_with(ResponseTemplate::new(201).set_body_json(status_response())),
    );
    gh
}

/// `publish` of the latest run as the nightly's posting job does: a `schedule` event.
fn publish_nightly(env: &TestEnv, api: &str) -> std::process::Output {
    let event = env.write("gh/schedule.json", r#"{"schedule": "17 3 * * *"}"#);
    let mut cmd = clean(env);
    cmd.env("GITHUB_ACTIONS", "true")
        .env("GITHUB_TOKEN", TOKEN)
        .env("GITHUB_API_URL", api)
        .env("GITHUB_REPOSITORY", REPO)
        .env("GITHUB_EVENT_NAME", "schedule")
        .env("GITHUB_EVENT_PATH", event)
        .env("GITHUB_SHA", SHA)
        .arg("publish");
    cmd.output().expect("runs")
}

/// A store with a baseline night on main and a 10% slower night after it: regressed.
fn regressed_night() -> TestEnv {
    let env = TestEnv::new();
    assert_eq!(env.run("main", &[]).status.code(), Some(0));
    assert_eq!(
        env.run("main", &[("STEP_MS", "11.0")]).status.code(),
        Some(1)
    );
    env
}

#[test]
fn a_failed_nightly_opens_one_issue_updates_it_and_a_passing_night_closes_it() {
    let env = regressed_night();
    let issues = Issues::default();
    let gh = github(&issues);

    let first = publish_nightly(&env, &gh.uri());
    assert_eq!(first.status.code(), Some(1), "{}", stderr(&first));
    assert!(
        stderr(&first).contains("issue opened"),
        "{}",
        stderr(&first)
    );
    {
        let all = issues.0.lock().expect("lock");
        assert_eq!(all.len(), 1);
        let title = all[0]["title"].as_str().expect("title");
        assert!(
            title.starts_with("utilgate: decode on h100-sxm regressed after "),
            "{title}"
        );
        assert!(title.ends_with("(0123456)"), "{title}");
        let body = all[0]["body"].as_str().expect("body");
        assert!(body.starts_with(MARKER), "{body}");
        assert!(body.contains("regressed"), "the report is the body: {body}");
        assert!(!body.contains("utilgate:comment"), "{body}");
    }

    // The same failing night published again: the issue is updated, not duplicated.
    let second = publish_nightly(&env, &gh.uri());
    assert_eq!(second.status.code(), Some(1), "{}", stderr(&second));
    assert!(
        stderr(&second).contains("issue updated"),
        "{}",
        stderr(&second)
    );
    let requests = gh.requests();
    assert_eq!(
        requests
            .iter()
            .filter(
                |r| r.method.as_str() == "POST" && r.url.path() == format!("/repos/{REPO}/issues")
            )
            .count(),
        1,
        "one issue, never a duplicate"
    );
    assert_eq!(matching(&requests, "PATCH", "/issues/1").len(), 1);
    assert!(matching(&requests, "PATCH", "/issues/99").is_empty());

    // The next night is back to speed: the issue is closed with a comment.
    assert_eq!(env.run("main", &[]).status.code(), Some(0));
    let third = publish_nightly(&env, &gh.uri());
    assert_eq!(third.status.code(), Some(0), "{}", stderr(&third));
    assert!(
        stderr(&third).contains("issue closed"),
        "{}",
        stderr(&third)
    );
    let all = issues.0.lock().expect("lock");
    assert_eq!(all.len(), 1);
    assert_eq!(all[0]["state"], "closed");
    let comment = all[0]["comments"][0].as_str().expect("closing comment");
    assert!(comment.contains("decode passes again"), "{comment}");
}

#[test]
fn a_pull_request_run_or_a_feature_branch_opens_no_issue() {
    let env = TestEnv::new();
    assert_eq!(env.run("main", &[]).status.code(), Some(0));
    assert_eq!(
        env.run("feature", &[("STEP_MS", "11.0")]).status.code(),
        Some(1)
    );
    let issues = Issues::default();
    let gh = github(&issues);
    let out = publish_nightly(&env, &gh.uri());
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(issues.0.lock().expect("lock").is_empty());
    assert!(matching(&gh.requests(), "GET", "/issues").is_empty());
}

#[test]
fn a_token_without_issues_write_is_told_which_permission_to_add() {
    let env = regressed_night();
    let gh = Github::start();
    gh.mount(
        Mock::given(path_regex(format!("^/repos/{REPO}/issues"))).respond_with(
            ResponseTemplate::new(403).set_body_json(json!({
                "message": "Resource not accessible by integration",
                "status": "403"
            })),
        ),
    );
    gh.mount(
        Mock::given(method("POST"))
            .and(path(format!("/repos/{REPO}/statuses/{SHA}")))
            .respond_with(ResponseTemplate::new(201).set_body_json(status_response())),
    );
    let out = publish_nightly(&env, &gh.uri());
    assert_eq!(
        out.status.code(),
        Some(1),
        "the gate's own outcome: {}",
        stderr(&out)
    );
    let text = stderr(&out);
    assert!(text.contains("403"), "{text}");
    assert!(text.contains("issues: write"), "{text}");
    assert!(!text.contains(TOKEN), "{text}");
}

#[test]
fn an_issue_with_the_marker_planted_by_another_user_is_never_edited_or_closed() {
    let env = regressed_night();
    // Issue #1 was opened by someone else, its body starting with utilgate's marker.
    let issues = Issues::default();
    issues.0.lock().expect("lock").push(json!({
        "number": 1, "html_url": format!("https://github.com/{REPO}/issues/1"), "state": "open",
        "title": "utilgate: decode on h100-sxm regressed", "comments": [],
        "body": format!("{MARKER}\nPLANTED-ISSUE-TEXT"),
        "user": {"login": "mallory", "id": 1, "type": "User"}
    }));
    let gh = github(&issues);

    let out = publish_nightly(&env, &gh.uri());
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("issue opened"), "{err}");
    assert!(
        err.contains("warning: ignored 1 item(s) in the repository's open issues")
            && err.contains("not written by github-actions[bot]")
            && err.contains("written by mallory"),
        "{err}"
    );
    assert!(!err.contains("PLANTED-ISSUE-TEXT"), "{err}");
    let requests = gh.requests();
    assert!(matching(&requests, "PATCH", "/issues/1").is_empty());
    assert!(matching(&requests, "POST", "/issues/1/comments").is_empty());
    {
        let all = issues.0.lock().expect("lock");
        assert_eq!(all.len(), 2, "utilgate opened its own");
        assert_eq!(all[0]["body"], format!("{MARKER}\nPLANTED-ISSUE-TEXT"));
    }

    // A passing night closes utilgate's issue (#2), never the planted one.
    assert_eq!(env.run("main", &[]).status.code(), Some(0));
    let out = publish_nightly(&env, &gh.uri());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("issue closed"), "{}", stderr(&out));
    let all = issues.0.lock().expect("lock");
    assert_eq!(all[0]["state"], "open", "the planted issue is left be");
    assert_eq!(all[1]["state"], "closed");
    assert!(matching(&gh.requests(), "PATCH", "/issues/1").is_empty());
}

#[test]
fn with_a_site_url_the_issue_links_each_regressed_case_to_its_page() {
    let env = regressed_night();
    env.write_config(&format!(
        "{}\n[site]\nurl = \"https://org.github.io/repo\"\n",
        TestEnv::config_with("")
    ));
    let issues = Issues::default();
    let gh = github(&issues);
    let out = publish_nightly(&env, &gh.uri());
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let all = issues.0.lock().expect("lock");
    let body = all[0]["body"].as_str().expect("body");
    // The url without its trailing slash still joins as a directory.
    let link = "[this case's page on the site](https://org.github.io/repo/cases/h100-sxm_decode_seed-8b_bf16_decode_b";
    assert_eq!(
        body.matches(link).count(),
        2,
        "both regressed cases: {body}"
    );
    assert!(
        body.contains("(https://org.github.io/repo/index.html)"),
        "{body}"
    );
}
