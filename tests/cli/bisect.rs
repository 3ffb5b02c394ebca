//! `utilgate bisect`: the commits and environment changes between two stored runs, and
//! `git bisect run` driven by `bisect --run` in a real git repository whose harness speed
//! depends on a file in the commit.

use std::process::Command;

use crate::env::{CLEAN_VARS, TestEnv, git, stderr, stdout};

const CASE: &str = "decode/seed-8b/bf16/decode/b1/c4096";

fn commit(env: &TestEnv, files: &[(&str, &str)], message: &str) -> String {
    for (name, text) in files {
        env.write(name, text);
    }
    git(env.path(), &["add", "-A"]);
    git(env.path(), &["commit", "-qm", message]);
    git(env.path(), &["rev-parse", "HEAD"])
}

/// A repository of five commits: the third after the first (`upgrade torch`) makes the
/// harness 10% slower; a good run at the first commit, a bad one at the last.
fn repo() -> (TestEnv, Vec<String>) {
    let env = TestEnv::new();
    env.write_config(
        &TestEnv::config_with("")
            .replace("command = \"sh harness.sh\"", "command = \"sh bench.sh\""),
    );
    git(env.path(), &["init", "-q", "-b", "main"]);
    let shas = vec![
        commit(
            &env,
            &[
                (".gitignore", ".utilgate/\n"),
                (
                    "bench.sh",
                    "STEP_MS=$(cat speed) TORCH_VERSION=$(cat torch) exec sh harness.sh\n",
                ),
                ("speed", "10.0\n"),
                ("torch", "2.5.1\n"),
            ],
            "initial",
        ),
        commit(&env, &[("notes.txt", "one\n")], "write notes"),
        commit(&env, &[("notes.txt", "two\n")], "more notes"),
        commit(
            &env,
            &[("speed", "11.0\n"), ("torch", "2.6.0\n")],
            "upgrade torch",
        ),
        commit(&env, &[("notes.txt", "three\n")], "last notes"),
    ];
    git(env.path(), &["checkout", "-q", &shas[0]]);
    let out = env
        .cmd()
        .args(["run", "--branch", "main"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    git(env.path(), &["checkout", "-q", &shas[4]]);
    let out = env
        .cmd()
        .args(["run", "--branch", "main"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1), "10% slower: {}", stdout(&out));
    (env, shas)
}

#[test]
fn bisect_names_the_commits_and_the_environment_between_two_runs() {
    let (env, shas) = repo();
    let out = env
        .cmd()
        .args(["bisect", "--good", "1", "--bad", "2"])
        .output()
        .expect("bisect");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("commits (4):"), "{text}");
    let order: Vec<usize> = ["write notes", "more notes", "upgrade torch", "last notes"]
        .iter()
        .map(|s| {
            text.find(s)
                .unwrap_or_else(|| panic!("{s} missing: {text}"))
        })
        .collect();
    assert!(
        order.windows(2).all(|w| w[0] < w[1]),
        "oldest first: {text}"
    );
    assert!(
        !text.contains("initial"),
        "the good commit is not in the range: {text}"
    );
    assert!(text.contains(&shas[3][..7]), "{text}");
    assert!(text.contains("torch 2.5.1 -> 2.6.0"), "{text}");
    assert!(text.contains(&format!("{CASE}: 10.0")), "{text}");
    assert!(text.contains("+10.0% step time"), "{text}");

    let json = env.json(&["bisect", "--good", "1", "--bad", "2", "--case", "b8"]);
    assert_eq!(json["commits"].as_array().expect("commits").len(), 4);
    assert_eq!(json["commits"][2]["subject"], "upgrade torch");
    assert_eq!(json["cases"].as_array().expect("cases").len(), 1);
    assert_eq!(json["env_changes"][0]["key"], "torch");
}

#[test]
fn git_bisect_run_finds_the_commit_that_made_the_case_slower() {
    let (env, shas) = repo();
    let bin = assert_cmd::cargo::cargo_bin("utilgate");
    // Each side of the line, by itself: 0 at the good commit, 1 at the bad one.
    for (sha, code) in [(&shas[1], 0), (&shas[3], 1)] {
        git(env.path(), &["checkout", "-q", sha]);
        let out = env
            .cmd()
            .args([
                "bisect", "--good", "1", "--bad", "2", "--case", CASE, "--run",
            ])
            .output()
            .expect("bisect");
        assert_eq!(out.status.code(), Some(code), "{}", stderr(&out));
    }
    git(env.path(), &["bisect", "start", &shas[4], &shas[0]]);
    let mut cmd = Command::new("git");
    cmd.args(["bisect", "run"])
        .arg(&bin)
        .args([
            "bisect", "--good", "1", "--bad", "2", "--case", CASE, "--run",
        ])
        .current_dir(env.path());
    for var in CLEAN_VARS {
        cmd.env_remove(var);
    }
    let out = cmd.output().expect("git bisect run");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains(&format!("{} is the first bad commit", shas[3])),
        "{text}"
    );
    git(env.path(), &["bisect", "reset"]);
}

#[test]
fn bisect_run_aborts_on_a_run_that_does_not_exist_and_skips_an_unmeasurable_commit() {
    let (env, shas) = repo();
    let out = env
        .cmd()
        .args([
            "bisect", "--good", "1", "--bad", "9", "--case", CASE, "--run",
        ])
        .output()
        .expect("bisect");
    assert_eq!(out.status.code(), Some(128), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("aborting the bisection"),
        "{}",
        stderr(&out)
    );
    // A commit whose harness fails cannot be tested: git bisect skips it.
    git(env.path(), &["checkout", "-q", &shas[2]]);
    env.write("speed", "not a number\n");
    let out = env
        .cmd()
        .args([
            "bisect", "--good", "1", "--bad", "2", "--case", CASE, "--run",
        ])
        .output()
        .expect("bisect");
    assert_eq!(out.status.code(), Some(125), "{}", stderr(&out));
    git(env.path(), &["checkout", "-q", "--", "speed"]);
}

#[test]
fn bisect_finds_the_commits_from_the_checkout_it_runs_in_when_the_config_lives_elsewhere() {
    let (env, shas) = repo();
    // The config kept outside the checkout: git is asked where the command runs.
    let elsewhere = tempfile::tempdir().expect("tempdir");
    let config = elsewhere.path().join("utilgate.toml");
    std::fs::copy(env.path().join("utilgate.toml"), &config).expect("copy config");
    let out = env
        .cmd()
        .args(["bisect", "--good", "1", "--bad", "2"])
        .arg("--config")
        .arg(&config)
        .arg("--db")
        .arg(env.db())
        .output()
        .expect("bisect");
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(text.contains("commits (4):"), "{text}");
    assert!(text.contains(&shas[3][..7]), "{text}");
}

#[test]
fn changes_names_the_commits_of_a_change_by_their_subjects() {
    let env = TestEnv::new();
    env.write_config(
        &TestEnv::config_with("")
            .replace("command = \"sh harness.sh\"", "command = \"sh bench.sh\"")
            .replace("batches = [1, 8]", "batches = [1]"),
    );
    git(env.path(), &["init", "-q", "-b", "main"]);
    let nights = |n: usize| {
        for _ in 0..n {
            let out = env
                .cmd()
                .args(["run", "--branch", "main"])
                .output()
                .expect("run");
            assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
        }
    };
    let first = commit(
        &env,
        &[
            (".gitignore", ".utilgate/\n"),
            ("bench.sh", "STEP_MS=$(cat speed) exec sh harness.sh\n"),
            ("speed", "10.0\n"),
        ],
        "initial",
    );
    nights(6);
    commit(&env, &[("notes.txt", "one\n")], "write notes");
    // 2% slower: under the 3% threshold, so every night passes, but a change point.
    let slower = commit(&env, &[("speed", "10.2\n")], "tune the kernel");
    nights(6);
    let out = env.cmd().args(["changes"]).output().expect("changes");
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        text.contains(&format!("commits {}..{}", &first[..10], &slower[..10])),
        "{text}"
    );
    assert!(text.contains("write notes"), "{text}");
    assert!(
        text.contains(&format!("    {} tune the kernel", &slower[..10])),
        "{text}"
    );
    let json = env.json(&["changes"]);
    assert!(
        json.to_string().contains("\"subject\":\"tune the kernel\""),
        "{json}"
    );
}
