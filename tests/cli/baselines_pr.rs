//! The nightly example's baselines job, run as GitHub runs it (tests/cli/workflows.rs): the
//! measuring job's export and diff, then the job that opens or updates the pull request
//! "utilgate: baselines moved" against a real git remote, with a `gh` that records its calls.

use std::path::Path;
use std::process::Command;

use crate::env::{TestEnv, stderr, stdout};
use crate::workflows::{Runner, run_step, workflow};

const FAKE_GH: &str = r#"#!/bin/sh
echo "$*" >> "$GH_LOG"
case "$1 $2" in
  "pr list") echo "${GH_OPEN_PR:-}" ;;
esac
"#;

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("HOME", dir)
        .env("GIT_AUTHOR_NAME", "test")
        .env("GIT_AUTHOR_EMAIL", "test@example.com")
        .env("GIT_COMMITTER_NAME", "test")
        .env("GIT_COMMITTER_EMAIL", "test@example.com")
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}: {}", stderr(&out));
    stdout(&out)
}

fn runner(env: &TestEnv) -> Runner {
    Runner {
        event_name: "schedule",
        event: env.write("runner/schedule.json", r#"{"schedule": "17 3 * * *"}"#),
        sha: "2222222222222222222222222222222222222222",
        git_ref: "refs/heads/main",
        head_ref: "",
        temp: env.path().join("runner/temp"),
        api: "http://127.0.0.1:9".into(),
        token: "ghs_BaselinesPrToken0123456789SECRET".into(),
    }
}

/// The baselines job in a fresh clone of `remote`, given the measuring job's report folder.
fn baselines_job(env: &TestEnv, name: &str, open_pr: &str) -> (String, String) {
    let job = env.path().join(name);
    git(env.path(), &["clone", "--quiet", "remote.git", name]);
    let copy = Command::new("cp")
        .args(["-r", "utilgate-report"])
        .arg(job.join("nightly"))
        .current_dir(env.path())
        .status()
        .expect("cp");
    assert!(copy.success());
    let log = env.path().join(format!("{name}-gh.log"));
    let path = format!(
        "{}:/usr/local/bin:/usr/bin:/bin",
        env.path().join("fakebin").display()
    );
    let out = run_step(
        &workflow("nightly.yml"),
        "baselines",
        "Open or update the pull request when baselines moved",
        &runner(env),
        &job,
        &[
            ("PATH", &path),
            ("GH_LOG", &log.to_string_lossy()),
            ("GH_OPEN_PR", open_pr),
            ("BASE", "main"),
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    (
        stdout(&out),
        std::fs::read_to_string(&log).unwrap_or_default(),
    )
}

fn export_step(env: &TestEnv) {
    let out = run_step(
        &workflow("nightly.yml"),
        "measure",
        "Export the baselines",
        &runner(env),
        env.path(),
        &[],
        "",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn the_nightly_opens_then_updates_a_pull_request_only_when_the_baselines_moved() {
    let env = TestEnv::new();
    env.write("fakebin/gh", FAKE_GH);
    let chmod = Command::new("chmod")
        .args(["+x", "fakebin/gh"])
        .current_dir(env.path())
        .status()
        .expect("chmod");
    assert!(chmod.success());
    git(env.path(), &["init", "--quiet", "--bare", "remote.git"]);
    git(env.path(), &["clone", "--quiet", "remote.git", "seed"]);
    let seed = env.path().join("seed");
    std::fs::write(seed.join("README.md"), "a repository\n").expect("write");
    git(&seed, &["checkout", "--quiet", "-b", "main"]);
    git(&seed, &["add", "README.md"]);
    git(&seed, &["commit", "--quiet", "-m", "init"]);
    git(&seed, &["push", "--quiet", "origin", "main"]);
    git(
        env.path(),
        &[
            "--git-dir",
            "remote.git",
            "symbolic-ref",
            "HEAD",
            "refs/heads/main",
        ],
    );

    // A first night: no baselines/ committed yet, so both cases are new.
    assert_eq!(env.run("main", &[]).status.code(), Some(0));
    export_step(&env);
    let md = std::fs::read_to_string(env.path().join("utilgate-report/baselines-diff.md"))
        .expect("the diff is written for the pull request");
    assert!(md.contains("0 moved, 2 added"), "{md}");
    let (_, calls) = baselines_job(&env, "night1", "");
    assert!(
        calls.contains("pr create --head utilgate/baselines-moved --base main --title utilgate: baselines moved --body-file nightly/baselines-diff.md"),
        "{calls}"
    );
    let pushed = git(
        env.path(),
        &[
            "--git-dir",
            "remote.git",
            "show",
            "utilgate/baselines-moved:baselines/h100-sxm.json",
        ],
    );
    assert!(pushed.contains("\"schema_version\": 2"), "{pushed}");

    // The pull request is merged; a night whose baselines did not move opens nothing.
    git(
        &seed,
        &["pull", "--quiet", "origin", "utilgate/baselines-moved"],
    );
    git(&seed, &["push", "--quiet", "origin", "main"]);
    let (out, calls) = baselines_job(&env, "night2", "");
    assert!(out.contains("baselines unchanged"), "{out}");
    assert!(calls.is_empty(), "{calls}");

    // A baseline accepted with a reason moves: the open pull request is updated, not doubled.
    std::fs::create_dir_all(env.path().join("baselines")).expect("mkdir");
    std::fs::copy(
        seed.join("baselines/h100-sxm.json"),
        env.path().join("baselines/h100-sxm.json"),
    )
    .expect("the measuring job's checkout holds the merged baselines");
    assert_eq!(
        env.run("feature", &[("STEP_MS", "11.0")]).status.code(),
        Some(1)
    );
    let accept = env
        .cmd()
        .args([
            "baseline",
            "accept",
            "b1/",
            "--run",
            "2",
            "--reason",
            "new kernel",
        ])
        .output()
        .expect("runs");
    assert_eq!(accept.status.code(), Some(0), "{}", stderr(&accept));
    export_step(&env);
    let (_, calls) = baselines_job(&env, "night3", "7");
    assert!(
        calls.contains("pr edit 7 --body-file nightly/baselines-diff.md")
            && !calls.contains("pr create"),
        "{calls}"
    );
    let body =
        std::fs::read_to_string(env.path().join("night3/nightly/baselines-diff.md")).expect("body");
    assert!(
        body.contains("1 moved, 0 added") && body.contains("accept: new kernel"),
        "{body}"
    );
}
