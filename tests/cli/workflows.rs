//! The ready-to-copy workflows (examples/workflows), run as GitHub runs them: each step's own
//! command line from the YAML, in the environment the runner gives a step (its `env:` with the
//! expressions filled in, the runner's variables), against the stand-in GitHub. The harness is
//! a real child process that looks for the token in every process environment it can read.

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::{Value, json};

use crate::env::{SCRIPT_HARNESS, TestEnv, stderr};
use crate::standin::{HEAD_SHA, REPO, StandIn, fixture_json, workflow_run_event};

const MERGE_SHA: &str = "1111111111111111111111111111111111111111";
const MAIN_SHA: &str = "2222222222222222222222222222222222222222";

/// The harness: before measuring, read every `/proc/<pid>/environ` (and command line) it can,
/// and the checkout's git config, looking for the token (read from a file, so the harness's own
/// environment never holds it); one line per repeat, then the script harness's steps.
const SCAN_HARNESS: &str = r#"#!/bin/sh
needle=$(cat "$SCAN_DIR/needle")
found=0; readable=0; utilgate_bytes=0; guard_bytes=none
for dir in /proc/[0-9]*; do
  pid=${dir#/proc/}
  [ "$pid" = "$$" ] && continue
  for f in "$dir/environ" "$dir/cmdline"; do
    if tr '\0' '\n' < "$f" > "$SCAN_DIR/read.$$" 2>/dev/null; then
      readable=$((readable+1))
      if grep -qF "$needle" "$SCAN_DIR/read.$$"; then found=$((found+1)); fi
    fi
  done
done
if git config --get-regexp 'extraheader' 2>/dev/null | grep -qi authorization; then found=$((found+1)); fi
# utilgate's own environment is readable (the attack of issue #12): walk up to it, past the
# harness guard (a utilgate too, started with no environment of its own).
pid=$$
while [ "$pid" -gt 1 ]; do
  pid=$(sed 's/.*) //' "/proc/$pid/stat" | cut -d' ' -f2)
  [ "$(cat "/proc/$pid/comm")" = utilgate ] || continue
  if tr '\0' ' ' < "/proc/$pid/cmdline" | grep -q 'harness guard'; then
    guard_bytes=$(wc -c < "/proc/$pid/environ")
  else
    utilgate_bytes=$(wc -c < "/proc/$pid/environ"); break
  fi
done
rm -f "$SCAN_DIR/read.$$"
echo "readable=$readable utilgate_environ_bytes=$utilgate_bytes found=$found guard_environ_bytes=$guard_bytes" >> "$SCAN_DIR/scan.txt"
exec sh harness.sh
"#;

pub(crate) fn workflow(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples/workflows")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_yaml_ng::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn step<'a>(wf: &'a Value, job: &str, name: &str) -> &'a Value {
    wf["jobs"][job]["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .find(|s| s["name"] == name || s["uses"].as_str().is_some_and(|u| u.starts_with(name)))
        .unwrap_or_else(|| panic!("no step {name:?} in job {job}"))
}

/// Each scanning test's own token: tests run in parallel, and a harness scanning `/proc` sees
/// every other test's processes too.
const PR_CHECK_TOKEN: &str = "ghs_WorkflowsPrCheckToken0123456789SECRET";
const ATTACK_TOKEN: &str = "ghs_WorkflowsAttackToken0123456789SECRET";
const NIGHTLY_TOKEN: &str = "ghs_WorkflowsNightlyToken0123456789SECRET";
const PUBLISH_TOKEN: &str = "ghs_WorkflowsPublishToken0123456789SECRET";

/// Fill in the expressions a step's `env:` may hold, as GitHub would.
fn expand(value: &str, runner_temp: &Path, token: &str) -> String {
    value
        .replace("${{ secrets.GITHUB_TOKEN }}", token)
        .replace("${{ github.token }}", token)
        .replace("${{ runner.temp }}", &runner_temp.to_string_lossy())
        .replace("${{ github.repository }}", REPO)
}

/// The environment a step of `job` gets from the YAML: the workflow's, the job's and the
/// step's `env:`, later ones winning.
fn yaml_env(wf: &Value, job: &str, step: &Value, runner: &Runner) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for level in [&wf["env"], &wf["jobs"][job]["env"], &step["env"]] {
        if let Some(map) = level.as_object() {
            for (k, v) in map {
                let v = v.as_str().map_or_else(|| v.to_string(), str::to_owned);
                out.retain(|(name, _)| name != k);
                out.push((k.clone(), expand(&v, &runner.temp, &runner.token)));
            }
        }
    }
    out
}

/// What the runner itself sets for a step (it never adds `GITHUB_TOKEN` unless the YAML does).
pub(crate) struct Runner {
    pub event_name: &'static str,
    pub event: PathBuf,
    pub sha: &'static str,
    pub git_ref: &'static str,
    pub head_ref: &'static str,
    pub temp: PathBuf,
    pub api: String,
    /// What `secrets.GITHUB_TOKEN` holds.
    pub token: String,
}

/// Run a step's `run:` script with bash as GitHub does (`bash --noprofile --norc -eo pipefail`),
/// in `cwd`, with nothing from this machine's environment but PATH (with utilgate on it).
pub(crate) fn run_step(
    wf: &Value,
    job: &str,
    name: &str,
    runner: &Runner,
    cwd: &Path,
    extra: &[(&str, &str)],
    append: &str,
) -> Output {
    std::fs::create_dir_all(&runner.temp).expect("the runner's temp directory");
    let step = step(wf, job, name);
    let script = format!("{}{append}", step["run"].as_str().expect("a run step"));
    let bin = assert_cmd::cargo::cargo_bin("utilgate");
    let bin_dir = bin.parent().expect("bin dir");
    let mut cmd = std::process::Command::new("bash");
    cmd.args(["--noprofile", "--norc", "-eo", "pipefail", "-c", &script])
        .current_dir(cwd)
        .env_clear()
        .env(
            "PATH",
            format!("{}:/usr/local/bin:/usr/bin:/bin", bin_dir.display()),
        )
        .env("HOME", cwd)
        .env("NO_COLOR", "1")
        .env("CI", "true")
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_EVENT_NAME", runner.event_name)
        .env("GITHUB_EVENT_PATH", &runner.event)
        .env("GITHUB_REPOSITORY", REPO)
        .env("GITHUB_SHA", runner.sha)
        .env("GITHUB_REF", runner.git_ref)
        .env("GITHUB_HEAD_REF", runner.head_ref)
        .env("GITHUB_WORKSPACE", cwd)
        .env("RUNNER_TEMP", &runner.temp)
        .env("GITHUB_API_URL", &runner.api)
        .env("GITHUB_SERVER_URL", "https://github.com")
        .env("GITHUB_RUN_ID", "999")
        .env("GITHUB_STEP_SUMMARY", runner.temp.join("summary.md"));
    for (k, v) in yaml_env(wf, job, step, runner) {
        cmd.env(k, v);
    }
    for (k, v) in extra {
        cmd.env(k, v);
    }
    cmd.output().expect("bash runs")
}

/// A checkout whose harness is the scanner, and main's store (a nightly that passed).
fn checkout(token: &str) -> TestEnv {
    let env = TestEnv::new();
    env.write("harness.sh", SCRIPT_HARNESS);
    env.write("scan.sh", SCAN_HARNESS);
    env.write("needle", token);
    env.write_config(
        &TestEnv::config_with("env = { SCAN_DIR = \".\" }").replace("sh harness.sh", "sh scan.sh"),
    );
    let out = env.run("main", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    std::fs::remove_file(env.path().join("scan.txt")).expect("the nightly scanned too");
    env
}

/// The scanner's lines: (readable files, bytes of utilgate's environ, token sightings).
fn scans(env: &TestEnv) -> Vec<(u64, u64, u64)> {
    let text = std::fs::read_to_string(env.path().join("scan.txt")).unwrap_or_default();
    text.lines()
        .map(|line| {
            let field = |name: &str| -> u64 {
                line.split_whitespace()
                    .find_map(|kv| kv.strip_prefix(&format!("{name}=")))
                    .and_then(|v| v.parse().ok())
                    .unwrap_or_else(|| panic!("{name} in {line:?}"))
            };
            (
                field("readable"),
                field("utilgate_environ_bytes"),
                field("found"),
            )
        })
        .collect()
}

/// The `pull_request` event of a maintainer adding the label.
fn labeled_event(env: &TestEnv) -> PathBuf {
    let mut event = fixture_json("pull_request__opened.payload.json");
    event["action"] = "labeled".into();
    event["label"] = json!({ "name": "perf-gate" });
    env.write("runner/labeled.json", &event.to_string())
}

fn pr_runner(env: &TestEnv, api: &str, token: &str) -> Runner {
    Runner {
        event_name: "pull_request",
        event: labeled_event(env),
        sha: MERGE_SHA,
        git_ref: "refs/pull/2/merge",
        head_ref: "changes",
        temp: env.path().join("runner/temp"),
        api: api.to_owned(),
        token: token.to_owned(),
    }
}

fn publish_runner(env: &TestEnv, api: &str, event: &Value) -> Runner {
    Runner {
        event_name: "workflow_run",
        event: env.write("runner/workflow_run.json", &event.to_string()),
        sha: MAIN_SHA,
        git_ref: "refs/heads/main",
        head_ref: "",
        temp: env.path().join("runner/temp"),
        api: api.to_owned(),
        token: PUBLISH_TOKEN.to_owned(),
    }
}

#[test]
fn the_pr_check_job_holds_no_token_and_leaves_none_in_git_config() {
    let wf = workflow("pr-check.yml");
    assert_eq!(wf["permissions"], json!({ "contents": "read" }));
    let gate = &wf["jobs"]["gate"];
    assert!(
        gate["permissions"].is_null(),
        "the job asks for nothing more"
    );
    let checkout = step(&wf, "gate", "actions/checkout@");
    assert_eq!(checkout["with"]["persist-credentials"], json!(false));
    let text = serde_json::to_string(&wf).expect("json");
    for forbidden in ["secrets.", "github.token", "GITHUB_TOKEN", "GH_TOKEN"] {
        assert!(!text.contains(forbidden), "{forbidden} in pr-check.yml");
    }
    // The run is two steps: measure and write the report here; publish elsewhere.
    let run = step(&wf, "gate", "Run the gate")["run"]
        .as_str()
        .expect("run");
    assert!(
        run.contains("utilgate run") && run.contains("--report-dir"),
        "{run}"
    );
    assert!(
        !run.contains("--github") && !run.contains("--trusted"),
        "{run}"
    );
}

#[test]
fn a_harness_started_by_the_pr_check_finds_no_token_and_the_publish_half_posts_its_verdicts() {
    let env = checkout(PR_CHECK_TOKEN);
    let gh = StandIn::start(HEAD_SHA, &[]);
    let check = workflow("pr-check.yml");
    let runner = pr_runner(&env, &gh.uri(), PR_CHECK_TOKEN);
    let out = run_step(&check, "gate", "Run the gate", &runner, env.path(), &[], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let scans = scans(&env);
    assert_eq!(scans.len(), 6, "one scan per repeat of the two cases");
    // The harness's parent, the run's guard, holds no environment at all.
    let text = std::fs::read_to_string(env.path().join("scan.txt")).expect("scan.txt");
    assert_eq!(
        text.matches("guard_environ_bytes=0").count(),
        6,
        "the guard's environment: {text}"
    );
    for (readable, utilgate_bytes, found) in scans {
        assert!(readable > 2, "the scan read other processes' environments");
        assert!(
            utilgate_bytes > 0,
            "utilgate's own environment was readable"
        );
        assert_eq!(found, 0, "the token was readable by the harness");
    }
    let out = run_step(
        &check,
        "gate",
        "Keep the store with the report",
        &runner,
        env.path(),
        &[],
        "",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(gh.requests().is_empty(), "the check posts nothing");

    // The artifact, downloaded by the publishing workflow; a fork's event names no pull
    // request, so publish confirms #2 (from the run) against GitHub's head commit.
    let temp = env.path().join("runner/temp");
    std::fs::create_dir_all(temp.join("pr")).expect("mkdir");
    std::fs::copy(
        env.path().join("utilgate-report/utilgate.db"),
        temp.join("pr/utilgate.db"),
    )
    .expect("artifact");
    let publish = workflow("pr-publish.yml");
    let runner = publish_runner(
        &env,
        &gh.uri(),
        &workflow_run_event("success", HEAD_SHA, true),
    );
    let out = run_step(&publish, "publish", "Publish", &runner, env.path(), &[], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!stderr(&out).contains(PUBLISH_TOKEN));
    let comments = gh.writes("/issues/2/comments");
    assert_eq!(comments.len(), 1, "{comments:?}");
    let statuses = gh.writes("/statuses/");
    assert_eq!(statuses.len(), 1);
    let (path, body) = &statuses[0];
    assert_eq!(path, &format!("/repos/{REPO}/statuses/{HEAD_SHA}"));
    assert_eq!(body["state"], "success");
    assert_eq!(body["context"], "utilgate/decode");
    assert_eq!(
        body["target_url"],
        format!("https://github.com/{REPO}/actions/runs/30433642"),
        "the status links to the check's run, where the measuring happened"
    );
}

#[test]
fn the_attack_the_refusal_stops_a_token_in_utilgates_own_environment() {
    let env = checkout(ATTACK_TOKEN);
    let gh = StandIn::start(HEAD_SHA, &[]);
    let check = workflow("pr-check.yml");
    let runner = pr_runner(&env, &gh.uri(), ATTACK_TOKEN);
    // The old example put the token in the step's env: utilgate now refuses to start.
    let out = run_step(
        &check,
        "gate",
        "Run the gate",
        &runner,
        env.path(),
        &[("GITHUB_TOKEN", ATTACK_TOKEN)],
        "",
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("GITHUB_TOKEN"), "{err}");
    assert!(err.contains("--trusted"), "{err}");
    assert!(!err.contains(ATTACK_TOKEN), "{err}");
    assert!(scans(&env).is_empty(), "no harness started");

    // Told the job is trusted, utilgate starts it, and the scan does find the token in
    // utilgate's environment: the refusal, not the harness's own environment, is what protects.
    let out = run_step(
        &check,
        "gate",
        "Run the gate",
        &runner,
        env.path(),
        &[("GITHUB_TOKEN", ATTACK_TOKEN)],
        " --trusted",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let scans = scans(&env);
    assert_eq!(scans.len(), 6);
    assert!(scans.iter().all(|(_, _, found)| *found >= 1), "{scans:?}");
}

#[test]
fn a_check_that_did_not_finish_is_not_measured_never_green() {
    let env = checkout(PUBLISH_TOKEN);
    let publish = workflow("pr-publish.yml");
    for conclusion in ["cancelled", "timed_out", "skipped", "success"] {
        let gh = StandIn::start(HEAD_SHA, &[]);
        // No artifact: a cancelled check uploaded nothing; a `synchronize` run measures
        // nothing and succeeds.
        let runner = publish_runner(
            &env,
            &gh.uri(),
            &workflow_run_event(conclusion, HEAD_SHA, false),
        );
        let out = run_step(&publish, "publish", "Publish", &runner, env.path(), &[], "");
        assert_eq!(out.status.code(), Some(0), "{conclusion}: {}", stderr(&out));
        let statuses = gh.writes("/statuses/");
        assert_eq!(statuses.len(), 1, "{conclusion}: {statuses:?}");
        let (path, body) = &statuses[0];
        assert_eq!(path, &format!("/repos/{REPO}/statuses/{HEAD_SHA}"));
        assert_eq!(body["state"], "pending", "{conclusion}");
        assert_eq!(body["context"], "utilgate/decode");
        let description = body["description"].as_str().expect("text");
        assert!(description.starts_with("not measured"), "{description}");
        assert!(gh.writes("/comments").is_empty(), "no verdicts to comment");
    }

    // A status that a real measurement of this commit set stays.
    let gh = StandIn::start(HEAD_SHA, &[("utilgate/decode", "success")]);
    let runner = publish_runner(
        &env,
        &gh.uri(),
        &workflow_run_event("cancelled", HEAD_SHA, false),
    );
    let out = run_step(&publish, "publish", "Publish", &runner, env.path(), &[], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        gh.writes("/statuses/").is_empty(),
        "the measured status was kept"
    );
}

#[test]
fn every_permission_in_the_workflows_says_why() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut checked = 0;
    for dir in ["examples/workflows", ".github/workflows"] {
        for entry in std::fs::read_dir(root.join(dir)).expect("dir") {
            let path = entry.expect("entry").path();
            let text = std::fs::read_to_string(&path).expect("read");
            let mut block: Option<usize> = None;
            for (n, line) in text.lines().enumerate() {
                let indent = line.len() - line.trim_start().len();
                let code = line.split('#').next().unwrap_or_default().trim();
                if block.is_some_and(|b| indent <= b && !line.trim().is_empty()) {
                    block = None;
                }
                if code.starts_with("permissions:") {
                    block = (code == "permissions:").then_some(indent);
                    if block.is_none() {
                        assert!(line.contains('#'), "{}:{}: {line}", path.display(), n + 1);
                        checked += 1;
                    }
                } else if block.is_some() && !code.is_empty() {
                    assert!(
                        line.contains(" # "),
                        "{}:{}: no reason: {line}",
                        path.display(),
                        n + 1
                    );
                    checked += 1;
                }
            }
        }
    }
    assert!(checked >= 10, "{checked} permission lines");
}

/// #28 item 4: the Actions cache is written by the GPU runner's jobs, and that runner also runs
/// pull-request code; a job holding a write token that restored utilgate (or anything) from it
/// would run what a pull request left there. Every such job builds its own utilgate.
#[test]
fn no_job_that_holds_a_write_token_takes_anything_from_the_actions_cache() {
    let mut writers = 0;
    for name in [
        "nightly.yml",
        "pr-check.yml",
        "pr-publish.yml",
        "fleet-matrix.yml",
    ] {
        let wf = workflow(name);
        for (job_name, job) in wf["jobs"].as_object().expect("jobs") {
            let holds_write = job["permissions"]
                .as_object()
                .is_some_and(|p| p.values().any(|v| v == "write"));
            if !holds_write {
                continue;
            }
            writers += 1;
            let steps = job["steps"].as_array().expect("steps");
            for s in steps {
                let uses = s["uses"].as_str().unwrap_or_default();
                assert!(
                    !uses.starts_with("actions/cache"),
                    "{name}: job {job_name} holds a write token and uses {uses}"
                );
            }
            let runs_utilgate = steps
                .iter()
                .any(|s| s["run"].as_str().is_some_and(|r| r.contains("utilgate ")));
            if runs_utilgate {
                assert!(
                    steps.iter().any(|s| s["run"]
                        .as_str()
                        .is_some_and(|r| r.contains("cargo install --locked"))),
                    "{name}: job {job_name} runs utilgate it did not build"
                );
            }
        }
    }
    assert!(writers >= 4, "{writers} jobs with a write permission");
}

#[test]
fn the_nightly_measures_without_a_token_and_a_separate_job_posts_its_statuses() {
    let wf = workflow("nightly.yml");
    assert_eq!(wf["permissions"], json!({}));
    assert_eq!(
        wf["jobs"]["measure"]["permissions"],
        json!({ "contents": "read" })
    );
    // The nightly issue needs `issues: write`, in the posting job only.
    assert_eq!(
        wf["jobs"]["publish"]["permissions"],
        json!({ "statuses": "write", "issues": "write" })
    );
    let measure = serde_json::to_string(&wf["jobs"]["measure"]).expect("json");
    for forbidden in ["secrets.", "github.token", "GITHUB_TOKEN", "GH_TOKEN"] {
        assert!(
            !measure.contains(forbidden),
            "{forbidden} in the measuring job"
        );
    }
    let publish = serde_json::to_string(&wf["jobs"]["publish"]).expect("json");
    assert!(
        !publish.contains("actions/checkout"),
        "the posting job runs no repository code"
    );
    let upload = step(&wf, "measure", "Upload the store (the durable history)");
    assert_eq!(upload["with"]["retention-days"], json!(30));
    assert_eq!(upload["with"]["name"], "utilgate-store");

    let env = checkout(NIGHTLY_TOKEN);
    std::fs::remove_file(env.db()).expect("a fresh store");
    let gh = StandIn::start(HEAD_SHA, &[]);
    let event = env.write("runner/schedule.json", r#"{"schedule": "17 3 * * *"}"#);
    let runner = Runner {
        event_name: "schedule",
        event,
        sha: MAIN_SHA,
        git_ref: "refs/heads/main",
        head_ref: "",
        temp: env.path().join("runner/temp"),
        api: gh.uri(),
        token: NIGHTLY_TOKEN.to_owned(),
    };
    let out = run_step(
        &wf,
        "measure",
        "Run the gate",
        &runner,
        env.path(),
        &[("GITHUB_REF_NAME", "main")],
        "",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        scans(&env)
            .iter()
            .all(|(_, bytes, found)| *bytes > 0 && *found == 0)
    );
    assert!(gh.requests().is_empty(), "the measuring job posts nothing");
    let out = run_step(
        &wf,
        "measure",
        "Export the baselines",
        &runner,
        env.path(),
        &[],
        "",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let exported = std::fs::read_dir(env.path().join("utilgate-report"))
        .expect("report dir")
        .filter_map(Result::ok)
        .any(|e| e.file_name().to_string_lossy().contains("baselines"));
    assert!(exported, "the reviewed export is uploaded with the reports");

    // The publish job downloads the uploaded store into store/ and posts from it.
    let job = env.path().join("publish-job");
    std::fs::create_dir_all(job.join("store")).expect("mkdir");
    std::fs::copy(env.db(), job.join("store/utilgate.db")).expect("artifact");
    let out = run_step(
        &wf,
        "publish",
        "Publish the statuses",
        &runner,
        &job,
        &[],
        "",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let statuses = gh.writes("/statuses/");
    assert_eq!(statuses.len(), 1);
    assert_eq!(statuses[0].0, format!("/repos/{REPO}/statuses/{MAIN_SHA}"));
    assert_eq!(statuses[0].1["state"], "success");
    assert_eq!(statuses[0].1["context"], "utilgate/decode");
}
