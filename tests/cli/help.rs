//! Snapshots of what a person reads first (issue #9): the `--help` of every subcommand, and the
//! main error messages with their hints. A change to any of them shows up in review as a diff
//! of tests/cli/snapshots/.

use clap::CommandFactory;

use crate::env::{TestEnv, stderr};

/// Every visible command path: `["run"]`, `["baseline", "list"]`, ...
fn command_paths() -> Vec<Vec<String>> {
    fn walk(cmd: &clap::Command, prefix: &[String], out: &mut Vec<Vec<String>>) {
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            let mut path = prefix.to_vec();
            path.push(sub.get_name().to_owned());
            out.push(path.clone());
            walk(sub, &path, out);
        }
    }
    let mut out = vec![Vec::new()];
    walk(&utilgate::cli::Cli::command(), &[], &mut out);
    out
}

#[test]
fn the_help_of_every_subcommand_is_snapshotted() {
    let env = TestEnv::new();
    let paths = command_paths();
    assert!(paths.len() > 30, "{} command paths", paths.len());
    for path in paths {
        let out = env
            .cmd()
            .args(&path)
            .arg("--help")
            .env("COLUMNS", "100")
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(0), "{path:?}: {}", stderr(&out));
        let text = String::from_utf8(out.stdout).expect("utf-8");
        assert!(text.contains("Exit codes:"), "{path:?}:\n{text}");
        let name = if path.is_empty() {
            "help".to_owned()
        } else {
            format!("help_{}", path.join("_"))
        };
        insta::assert_snapshot!(name, text);
    }
}

/// The temporary directory's path in a message, replaced so the snapshot is stable.
fn stable(env: &TestEnv, text: &str) -> String {
    let dir = env.path().to_string_lossy().into_owned();
    text.replace(&dir, "[DIR]")
}

/// Runs `args` in `env`, expects exit 2, returns stderr with the temporary path replaced.
fn error_of(env: &TestEnv, args: &[&str], envs: &[(&str, &str)]) -> String {
    let mut cmd = env.cmd();
    cmd.args(args);
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("runs");
    assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
    stable(env, &stderr(&out))
}

#[test]
fn the_main_error_messages_are_snapshotted() {
    let env = TestEnv::new();
    env.write_config(&TestEnv::config_with(""));
    insta::assert_snapshot!(
        "error_unknown_gpu",
        error_of(
            &env,
            &[
                "floor",
                "--model",
                "seed-8b",
                "--gpu",
                "h100",
                "--phase",
                "decode",
                "--context",
                "4096"
            ],
            &[],
        )
    );
    insta::assert_snapshot!(
        "error_unknown_suite",
        error_of(&env, &["run", "--suite", "decod"], &[])
    );
    insta::assert_snapshot!(
        "error_missing_config",
        error_of(&env, &["run", "--config", "nope.toml"], &[])
    );
    insta::assert_snapshot!(
        "error_token_without_trusted",
        error_of(
            &env,
            &["run"],
            &[("GITHUB_TOKEN", "ghs_0123456789abcdefghij0123456789abcdef")]
        )
    );
    env.write("empty.db", "");
    insta::assert_snapshot!(
        "error_empty_store",
        error_of(&env, &["run", "--db", "empty.db"], &[])
    );
    let typo = TestEnv::config_with("").replace("batches = [1, 8]", "batchs = [1, 8]");
    env.write(
        "typo.toml",
        &typo.replace("max_drop_pct = 3.0", "max_drop_pct = \"3\""),
    );
    insta::assert_snapshot!(
        "error_config_problems",
        error_of(&env, &["config", "check", "--config", "typo.toml"], &[])
    );
    env.write("rescue.json", "{\"schema_version\": 1, \"run\": ");
    insta::assert_snapshot!(
        "error_malformed_rescue_file",
        error_of(&env, &["import", "run", "rescue.json"], &[])
    );
}
