//! Bad measurements and clear messages (issue #11): counted steps checked against
//! `UTILGATE_STEPS`, step times outside a sane range refused, bounded printed figures, a UTF-8
//! byte-order mark accepted; config errors all at once, "gate: error", and store paths that
//! cannot work explained.

use crate::env::{TestEnv, stderr, stdout, verdict_of};

const B1: &str = "decode/seed-8b/bf16/decode/b1/c4096";

/// The standard config with a harness that writes `lines` (printf format) as its results.
fn writing(lines: &str, extra: &str) -> String {
    TestEnv::config_with(extra)
        .replace(
            "command = \"sh harness.sh\"",
            &format!("command = \"printf '{lines}' >> $UTILGATE_OUT\""),
        )
        .replace("batches = [1, 8]", "batches = [1]")
}

#[test]
fn fewer_counted_steps_than_asked_is_an_error_naming_both_numbers() {
    let env = TestEnv::new();
    env.write_config(&writing(r#"{\"steps_ms\": [10.0, 10.1]}\n"#, ""));
    let out = env.run("main", &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    let report = env.json(&["runs", "show"]);
    assert_eq!(verdict_of(&report, B1), "error");
    let error = report["cases"][0]["error"]
        .as_str()
        .expect("error")
        .to_owned();
    assert!(
        error.contains("2 counted steps") && error.contains("20"),
        "{error}"
    );
    assert_eq!(
        env.json(&["baseline", "list"])["baselines"]
            .as_array()
            .map(Vec::len),
        Some(0),
        "never a baseline"
    );

    // A tolerance lets a harness that drops a few steps through.
    env.write_config(&writing(
        r#"{\"steps_ms\": [10.0, 10.1]}\n"#,
        "steps_tolerance_pct = 90",
    ));
    let out = env.run("main", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn many_more_steps_than_asked_warn_and_are_capped_in_the_store() {
    let env = TestEnv::new();
    env.write_config(
        &TestEnv::config_with("")
            .replace(
                "command = \"sh harness.sh\"",
                "command = \"awk 'BEGIN { for (i = 0; i < 50000; i++) print \\\"{\\\\\\\"step_ms\\\\\\\": 10.0}\\\" }' >> $UTILGATE_OUT\"",
            )
            .replace("batches = [1, 8]", "batches = [1]")
            .replace("repeats = 3", "repeats = 1")
            .replace("[gate]", "[limits]\nmax_samples = 1000\n\n[gate]"),
    );
    let out = env.run("main", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("50000 counted steps") && err.contains("20"),
        "{err}"
    );
    let report = env.json(&["runs", "show"]);
    assert_eq!(report["cases"][0]["n"], 1000, "{report}");
}

#[test]
fn step_times_outside_the_sane_range_are_protocol_errors() {
    for (value, needle) in [("1e308", "1 h"), ("1e-300", "1 ns")] {
        let env = TestEnv::new();
        env.write_config(&writing(
            &format!(r#"{{\"step_ms\": 10.0}}\n{{\"step_ms\": {value}}}\n"#),
            "",
        ));
        let out = env.run("main", &[]);
        assert_eq!(out.status.code(), Some(2), "{value}: {}", stdout(&out));
        let report = env.json(&["runs", "show"]);
        assert_eq!(verdict_of(&report, B1), "error", "{value}");
        let error = report["cases"][0]["error"]
            .as_str()
            .expect("error")
            .to_owned();
        assert!(
            error.contains("line 2") && error.contains(needle),
            "{value}: {error}"
        );
    }
}

#[test]
fn every_printed_figure_has_bounded_precision() {
    // Absurd steps reach the table, the details or the messages; none prints hundreds of
    // digits.
    for step in ["1e300", "1e-300"] {
        let env = TestEnv::new();
        let lines = format!(r#"{{\"step_ms\": {step}}}\n"#).repeat(20);
        env.write_config(&writing(&lines, ""));
        let out = env.run("main", &[]);
        let text = format!("{}{}", stdout(&out), stderr(&out));
        let longest = text
            .split(|c: char| !(c.is_ascii_digit() || c == '.'))
            .map(str::len)
            .max()
            .unwrap_or(0);
        assert!(
            longest <= 16,
            "{step}: a {longest}-character figure in {text}"
        );
    }
}

#[test]
fn a_byte_order_mark_before_the_results_is_accepted() {
    let env = TestEnv::new();
    let lines = (0..20)
        .map(|_| r#"{\"step_ms\": 10.0}\n"#)
        .collect::<String>();
    env.write_config(&writing(&format!(r"\\357\\273\\277{lines}"), ""));
    let out = env.run("main", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn config_parse_errors_are_reported_all_at_once() {
    let env = TestEnv::new();
    env.write_config(
        &TestEnv::config_with("")
            .replace("max_drop_pct = 3.0", "max_drop_pct = \"three\"")
            .replace("batches = [1, 8]", "batches = [1, \"8k\"]")
            .replace("repeats = 3", "repeats = 3\nrepeatz = 4"),
    );
    let out = env.cmd().args(["config", "check"]).output().expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    for key in ["gate.max_drop_pct", "suite[0].batches", "repeatz"] {
        assert!(err.contains(key), "{key} missing from {err}");
    }
}

#[test]
fn a_run_with_an_error_and_no_failed_gate_says_gate_error() {
    let env = TestEnv::new();
    let out = env.run("main", &[("FAIL_MODE", "exit3")]);
    assert_eq!(out.status.code(), Some(2));
    let text = stdout(&out);
    assert!(text.contains("gate: error"), "{text}");
    assert!(!text.contains("gate: passed"), "{text}");
}

#[test]
fn a_store_path_that_is_a_directory_is_explained() {
    let env = TestEnv::new();
    std::fs::create_dir_all(env.db()).expect("a directory where the store goes");
    let out = env.run("main", &[]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("is a directory"), "{err}");
    assert!(!err.contains("disk I/O error"), "{err}");
}

#[test]
fn a_reader_racing_store_creation_is_not_told_to_upgrade() {
    let env = TestEnv::new();
    std::fs::create_dir_all(env.db().parent().expect("dir")).expect("mkdir");
    // What a reader sees while `run` creates the store: a database without a schema yet.
    let conn = rusqlite::Connection::open(env.db()).expect("create");
    conn.execute_batch("PRAGMA journal_mode = WAL;")
        .expect("wal");
    drop(conn);
    let out = env.cmd().args(["runs", "list"]).output().expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(!err.contains("upgrade"), "{err}");
    assert!(
        err.contains("no runs yet") || err.contains("being created"),
        "{err}"
    );
}

/// Runs the binary as an unprivileged user: root ignores file modes, so as root the binary
/// runs through `setpriv` as `nobody` (util-linux, on every Linux CI image we use).
pub fn as_nobody(env: &TestEnv, args: &[&str]) -> std::process::Output {
    use std::os::unix::fs::MetadataExt;
    let bin = assert_cmd::cargo::cargo_bin("utilgate");
    let root = std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0);
    let mut cmd = if root {
        let mut cmd = std::process::Command::new("setpriv");
        cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
            .arg(bin);
        cmd
    } else {
        std::process::Command::new(bin)
    };
    for var in crate::env::CLEAN_VARS {
        cmd.env_remove(var);
    }
    cmd.args(args).current_dir(env.path()).env("NO_COLOR", "1");
    cmd.output().expect("setpriv runs")
}

#[test]
fn readers_work_in_a_read_only_store_directory() {
    use std::os::unix::fs::PermissionsExt;
    let env = TestEnv::new();
    assert_eq!(env.run("main", &[]).status.code(), Some(0));
    let set = |path: &std::path::Path, mode| {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
    };
    set(env.path(), 0o755);
    for entry in std::fs::read_dir(env.db().parent().expect("dir"))
        .expect("dir")
        .flatten()
    {
        set(&entry.path(), 0o644);
    }
    set(env.db().parent().expect("dir"), 0o555);
    let out = as_nobody(&env, &["runs", "list"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("main"), "{}", stdout(&out));
}
