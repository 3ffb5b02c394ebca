//! `utilgate publish --group ID` through the binary against the mock GitHub (issue #18): the
//! shards of a pull request's grid, measured as the PR check measures (no token), then one
//! publish from the merge job: one sticky comment and one commit status over every shard's
//! cases, the decision the union of the shards' gates.

use serde_json::Value;

use crate::env::{TestEnv, stderr};
use crate::github::{Actions, Github, HEAD_SHA, MERGE_SHA, REPO, clean, fixture_json, matching};

/// A grid of eight cases (four batches by two contexts).
fn grid_env() -> TestEnv {
    let env = TestEnv::new();
    let config = TestEnv::config_with("").replace(
        "batches = [1, 8]\ncontexts = [4096]",
        "batches = [1, 2, 4, 8]\ncontexts = [1024, 4096]",
    );
    assert!(config.contains("contexts = [1024, 4096]"));
    env.write_config(&config);
    env
}

/// The baselines on main (two shards of group `base`), then pull request #2's two shards in
/// group `pr`, shard 2 with steps of `slow_ms` (the harness's 10 ms otherwise).
fn baselines_then_pr_shards(env: &TestEnv, slow_ms: &str) {
    for k in ["1/2", "2/2"] {
        let out = clean(env)
            .args(["run", "--branch", "main", "--git-sha", "0123456789abcdef"])
            .args(["--shard", k, "--run-group", "base"])
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    }
    let event = env.write(
        "gh/pr-run-event.json",
        &fixture_json("pull_request__opened.payload.json").to_string(),
    );
    for (k, ms) in [("1/2", "10.0"), ("2/2", slow_ms)] {
        let out = clean(env)
            .args(["run", "--branch", "feature", "--git-sha", MERGE_SHA])
            .args(["--shard", k, "--run-group", "pr"])
            .env("GITHUB_EVENT_NAME", "pull_request")
            .env("GITHUB_EVENT_PATH", &event)
            .env("STEP_MS", ms)
            .output()
            .expect("runs");
        assert!(matches!(out.status.code(), Some(0 | 1)), "{}", stderr(&out));
    }
}

fn publish_group(env: &TestEnv, gh: &Github) -> std::process::Output {
    let actions = Actions::new(env, &gh.uri(), false);
    let mut cmd = clean(env);
    actions.apply(&mut cmd);
    cmd.args(["publish", "--group", "pr"])
        .output()
        .expect("runs")
}

fn bodies(requests: &[wiremock::Request], verb: &str, path: &str) -> Vec<Value> {
    matching(requests, verb, path)
        .iter()
        .map(|r| r.body_json().expect("json body"))
        .collect()
}

#[test]
fn publish_group_posts_one_comment_and_one_status_over_every_shard() {
    let env = grid_env();
    baselines_then_pr_shards(&env, "10.0");
    let gh = Github::happy();
    let out = publish_group(&env, &gh);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let requests = gh.requests();
    let comments = bodies(&requests, "POST", "/issues/2/comments");
    assert_eq!(comments.len(), 1, "one sticky comment for the group");
    let text = comments[0]["body"].as_str().expect("body");
    assert!(text.contains("All 8 cases pass on h100-sxm"), "{text}");
    // The footer names the group and the shards' runs (3 and 4, after main's 1 and 2), not
    // only the last of them.
    assert!(text.contains("group `pr` (runs 3, 4)"), "{text}");
    assert!(!stderr(&out).contains("::error"), "{}", stderr(&out));
    let statuses = matching(&requests, "POST", "/statuses/");
    assert_eq!(statuses.len(), 1, "one status for the group");
    assert_eq!(
        statuses[0].url.path(),
        format!("/repos/{REPO}/statuses/{HEAD_SHA}")
    );
    let status: Value = statuses[0].body_json().expect("json");
    assert_eq!(status["state"], "success", "{status}");
    assert_eq!(status["context"], "utilgate/decode");
}

#[test]
fn publish_group_fails_when_one_shard_regressed_and_updates_the_same_comment() {
    let env = grid_env();
    baselines_then_pr_shards(&env, "12.0");
    let gh = Github::happy();
    let first = publish_group(&env, &gh);
    assert_eq!(first.status.code(), Some(1), "{}", stderr(&first));
    let second = publish_group(&env, &gh);
    assert_eq!(second.status.code(), Some(1), "{}", stderr(&second));
    let requests = gh.requests();
    assert_eq!(bodies(&requests, "POST", "/issues/2/comments").len(), 1);
    let updated = bodies(&requests, "PATCH", "/issues/comments/77");
    assert_eq!(
        updated.len(),
        1,
        "the second publish updates the one comment"
    );
    let text = updated[0]["body"].as_str().expect("body");
    // Shard 2 holds half the grid's cases, all slower; shard 1's pass.
    assert!(text.contains("4 regressed of 8 cases"), "{text}");
    let statuses = bodies(&requests, "POST", "/statuses/");
    assert_eq!(statuses.len(), 2, "one per publish");
    for s in &statuses {
        assert_eq!(s["state"], "failure", "the union of the shards' gates: {s}");
    }
    // An unknown group is a clear error, and nothing is posted for it.
    let actions = Actions::new(&env, &gh.uri(), false);
    let mut cmd = clean(&env);
    actions.apply(&mut cmd);
    let out = cmd
        .args(["publish", "--group", "nope"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("no stored run belongs to this group"));
    assert_eq!(gh.requests().len(), requests.len(), "nothing posted");
}

#[test]
fn the_fleet_matrix_workflow_keeps_the_write_token_in_the_merge_job() {
    let wf = crate::workflows::workflow("fleet-matrix.yml");
    assert_eq!(wf["permissions"], serde_json::json!({}));
    let measure = &wf["jobs"]["measure"];
    assert_eq!(
        measure["permissions"],
        serde_json::json!({ "contents": "read" })
    );
    assert!(measure["strategy"]["matrix"]["shard"].is_array());
    assert!(measure["strategy"]["matrix"]["gpu"].is_array());
    let text = serde_json::to_string(measure).expect("json");
    for forbidden in ["github.token", "GITHUB_TOKEN", "GH_TOKEN"] {
        assert!(
            !text.contains(forbidden),
            "{forbidden} in the measuring job"
        );
    }
    assert!(text.contains("secrets.UTILGATE_DB_URL"), "{text}");
    assert!(
        text.contains("--shard") && text.contains("--run-group"),
        "{text}"
    );
    let merge = &wf["jobs"]["merge"];
    assert_eq!(merge["needs"], "measure");
    let text = serde_json::to_string(merge).expect("json");
    assert!(
        !text.contains("actions/checkout"),
        "the merge job runs no repository code"
    );
    assert!(
        text.contains("publish --group") && text.contains("report --group"),
        "{text}"
    );
    assert!(text.contains("secrets.GITHUB_TOKEN"), "{text}");
    assert!(
        wf["on"].get("pull_request").is_none(),
        "pull-request code never runs beside the store's password"
    );
}
