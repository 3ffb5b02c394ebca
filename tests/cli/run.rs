//! `utilgate run`, `runs list` and `runs show` on the happy path.

use crate::env::{TestEnv, stderr, stdout, verdict_of};

#[test]
fn first_run_stores_every_case_as_new_and_passes() {
    let env = TestEnv::new();
    let out = env.run("main", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("decode/seed-8b/bf16/decode/b1/c4096"),
        "{text}"
    );
    assert!(text.contains("new"), "{text}");
    assert!(env.db().exists());
    // Not a terminal (an Actions log): a line when each case starts and one when it ends.
    let log = stderr(&out);
    let case = "case decode/seed-8b/bf16/decode/b8/c4096";
    assert!(log.contains(&format!("{case}: started (2/2)")), "{log}");
    let end = log
        .lines()
        .find(|l| l.starts_with(&format!("{case}: measured in ")))
        .unwrap_or_else(|| panic!("no end line:\n{log}"));
    assert!(end.ends_with(" s") || end.ends_with(" ms"), "{end}");

    let runs = env.json(&["runs", "list"]);
    assert_eq!(runs["schema_version"], 1);
    let list = runs["runs"].as_array().expect("runs");
    assert_eq!(list.len(), 1);
    assert_eq!(list[0]["branch"], "main");
    assert_eq!(list[0]["git_sha"], "0123456789abcdef");
    assert_eq!(list[0]["n_results"], 2);

    let show = env.json(&["runs", "show"]);
    assert_eq!(show["schema_version"], 1);
    assert_eq!(
        verdict_of(&show, "decode/seed-8b/bf16/decode/b1/c4096"),
        "new"
    );
    let case = &show["cases"][0];
    // 3 repeats x 20 counted steps; warm-up steps are stored but not counted.
    assert_eq!(case["n"], 60);
    assert_eq!(case["repeats"], 3);
    let median = case["median_ms"].as_f64().expect("median");
    assert!((10.0..10.1).contains(&median), "{median}");
    let floor = case["floor_ms"].as_f64().expect("floor");
    let util = case["utilisation"].as_f64().expect("utilisation");
    assert!(
        (util - floor / median).abs() < 1e-9,
        "utilisation = floor / median"
    );
}

#[test]
fn human_runs_list_and_show_print_tables() {
    let env = TestEnv::new();
    assert_eq!(env.run("main", &[]).status.code(), Some(0));
    let out = env.cmd().args(["runs", "list"]).output().expect("runs");
    assert!(out.status.success());
    let text = stdout(&out);
    assert!(text.contains("main") && text.contains("0123456"), "{text}");
    let out = env
        .cmd()
        .args(["runs", "show", "1"])
        .output()
        .expect("runs");
    assert!(stdout(&out).contains("b8/c4096"), "{}", stdout(&out));
}

#[test]
fn ci_environment_fills_run_metadata() {
    let env = TestEnv::new();
    let out = env
        .cmd()
        .args(["run"])
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_SHA", "feedfacecafe")
        .env("GITHUB_REF", "refs/pull/42/merge")
        .env("GITHUB_HEAD_REF", "fix-attention")
        .env("GITHUB_EVENT_NAME", "pull_request")
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // Under Actions, progress is one plain line per case on stderr.
    assert!(stderr(&out).contains("case decode/seed-8b/bf16/decode/b8/c4096: measured"));
    let runs = env.json(&["runs", "list"]);
    let run = &runs["runs"][0];
    assert_eq!(run["git_sha"], "feedfacecafe");
    assert_eq!(run["branch"], "fix-attention");
    assert_eq!(run["pr_number"], 42);
    assert_eq!(run["trigger"], "pull_request");
}

#[test]
fn two_runs_writing_one_store_at_once_both_land() {
    let env = TestEnv::new();
    let bin = assert_cmd::cargo::cargo_bin("utilgate");
    let children: Vec<_> = (0..2)
        .map(|_| {
            std::process::Command::new(&bin)
                .args(["run", "--branch", "feature"])
                .current_dir(env.path())
                .env("NO_COLOR", "1")
                .env_remove("GITHUB_ACTIONS")
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("spawn")
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().expect("wait");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let runs = env.json(&["runs", "list"]);
    assert_eq!(runs["runs"].as_array().expect("runs").len(), 2);
}

#[test]
fn suite_filter_runs_only_that_suite_and_rejects_unknown_names() {
    let env = TestEnv::new();
    let out = env
        .cmd()
        .args(["run", "--suite", "nope"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("no such suite"), "{}", stderr(&out));
    assert!(stderr(&out).contains("decode"));
    assert!(!env.db().exists(), "a refused run creates no store");
}

#[test]
fn the_harness_never_sees_the_github_token() {
    let env = TestEnv::new();
    env.write(
        "harness.sh",
        r#"printf '{"env": {"token": "%s"}}\n' "${GITHUB_TOKEN:-absent}" >> "$UTILGATE_OUT"
           i=0; while [ "$i" -lt "$UTILGATE_STEPS" ]; do printf '{"step_ms": 12.0}\n' >> "$UTILGATE_OUT"; i=$((i+1)); done"#,
    );
    // A trusted run may hold the token; its harness still never inherits it.
    let out = env
        .cmd()
        .args(["run", "--trusted", "--branch", "feature"])
        .env("GITHUB_TOKEN", "ghp_never_leak_this_0123456789")
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let show = env.json(&["runs", "show"]);
    let cases = show["cases"].as_array().expect("cases");
    assert!(!cases.is_empty());
    let stored = std::fs::read(env.db()).expect("db");
    let needle = b"ghp_never_leak_this";
    assert!(!stored.windows(needle.len()).any(|w| w == needle));
    // What the harness reported for the variable is stored: it saw none.
    assert!(stored.windows(6).any(|w| w == b"absent"));
}

/// A commit id is user text: a non-ASCII one is listed, not a panic (issue #9: `runs list` and
/// `baseline list` cut it by bytes and exited 101).
#[test]
fn a_non_ascii_commit_id_is_listed_not_a_panic() {
    let env = TestEnv::new();
    let out = env
        .cmd()
        .args(["run", "--branch", "main", "--git-sha", "abcdefghié"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    for args in [
        &["runs", "list"][..],
        &["runs", "show"],
        &["baseline", "list"],
        &["baseline", "show", "decode/seed-8b/bf16/decode/b1/c4096"],
        &["baseline", "history"],
    ] {
        let out = env.cmd().args(args).output().expect("runs");
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        assert!(
            stdout(&out).contains("abcdefg"),
            "{args:?}: {}",
            stdout(&out)
        );
    }
    let runs = env.json(&["runs", "list"]);
    assert_eq!(runs["runs"][0]["git_sha"], "abcdefghié");
}

/// `runs show` at 72, 80 and 120 columns: no line of the table (or its blocks) past the
/// width, and every figure whole on one line (the old table split "15.91" over "2"); on a pipe
/// each row stays on one line with its whole case key, for tools that read it.
#[test]
fn the_run_table_fits_the_terminal_width_and_never_breaks_a_figure() {
    let env = TestEnv::new();
    let out = env.run("main", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let shown = env.json(&["runs", "show"]);
    let cases = shown["cases"].as_array().expect("cases");
    assert_eq!(cases.len(), 2, "{shown}");
    let figures: Vec<String> = cases
        .iter()
        .flat_map(|c| [&c["floor_ms"], &c["median_ms"], &c["p90_ms"]])
        .map(|v| format!("{:.3}", v.as_f64().expect("a figure")))
        .collect();
    for columns in ["72", "80", "120"] {
        let out = env
            .cmd()
            .args(["runs", "show"])
            .env("COLUMNS", columns)
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let text = stdout(&out);
        let table: Vec<&str> = text
            .lines()
            .take_while(|l| !l.starts_with("gate:"))
            .collect();
        let width: usize = columns.parse().expect("a number");
        assert!(
            table.iter().all(|l| l.chars().count() <= width),
            "wider than {columns}:\n{text}"
        );
        for figure in &figures {
            assert!(
                table.iter().any(|l| l.contains(figure.as_str())),
                "{figure} is not whole at {columns} columns:\n{text}"
            );
        }
    }
    let piped = stdout(&env.cmd().args(["runs", "show"]).output().expect("runs"));
    assert!(
        piped
            .lines()
            .any(|l| l.contains("decode/seed-8b/bf16/decode/b1/c4096") && l.contains("new")),
        "{piped}"
    );
}

/// `--git-sha` and `--branch` say what git would: no `git rev-parse` is started for them. A
/// stand-in `git` first on PATH logs every call; without the flags it is asked, and its answers
/// are stored.
#[test]
fn the_commit_and_branch_flags_leave_git_unasked() {
    use std::os::unix::fs::PermissionsExt as _;
    let env = TestEnv::new();
    let git = env.write(
        "bin/git",
        "#!/bin/sh\n\
         echo \"$*\" >> \"$GIT_CALLS\"\n\
         case \"$1 $2\" in\n\
         'rev-parse HEAD') echo feedbeef ;;\n\
         'rev-parse --abbrev-ref') echo from-git ;;\n\
         esac\n",
    );
    std::fs::set_permissions(&git, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let path = format!(
        "{}:{}",
        env.path().join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let calls = env.path().join("git-calls.log");
    let calls_var = calls.to_str().expect("utf-8");
    let logged = || std::fs::read_to_string(&calls).unwrap_or_default();

    let out = env.run("main", &[("PATH", &path), ("GIT_CALLS", calls_var)]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!logged().contains("rev-parse"), "{}", logged());

    let out = env
        .cmd()
        .arg("run")
        .env("PATH", &path)
        .env("GIT_CALLS", calls_var)
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(logged().contains("rev-parse HEAD"), "{}", logged());
    let runs = env.json(&["runs", "list"]);
    let asked = runs["runs"]
        .as_array()
        .expect("runs")
        .iter()
        .find(|r| r["git_sha"] == "feedbeef")
        .unwrap_or_else(|| panic!("no run with git's commit: {runs}"));
    assert_eq!(asked["branch"], "from-git");
}
