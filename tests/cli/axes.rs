//! A suite's free axes through the binary (issue #10): `axes = { mode = ["a", "b"] }` makes
//! each mode a case of its own, measured by a harness that reads `{{ mode }}` and
//! `UTILGATE_MODE`, stored, shown as a column, judged against its own baseline; a config
//! without axes keeps its keys against a store an older utilgate wrote.

use crate::env::{SCRIPT_HARNESS, TestEnv, case_of, stderr, stdout, verdict_of};

/// A harness whose steps depend on the mode: `a` takes 10 ms, `b` 6 ms, and the mode named
/// by `SLOW_MODE` 30% longer. It exits 3 unless the template's argument and `UTILGATE_MODE`
/// agree, and logs both per repeat.
const MODE_HARNESS: &str = r#"#!/bin/sh
set -eu
arg="$1"
echo "$arg $UTILGATE_MODE $UTILGATE_REPEAT" >> modes.log
if [ "$arg" != "$UTILGATE_MODE" ]; then echo "mode mismatch: $arg vs $UTILGATE_MODE" >&2; exit 3; fi
case "$UTILGATE_MODE" in
  a) base=10.0 ;;
  b) base=6.0 ;;
  *) echo "unknown mode $UTILGATE_MODE" >&2; exit 3 ;;
esac
if [ "${SLOW_MODE:-}" = "$UTILGATE_MODE" ]; then base=$(awk -v b="$base" 'BEGIN { print b * 1.3 }'); fi
out="$UTILGATE_OUT"
printf '{"env": {"torch": "2.5.1"}}\n' >> "$out"
awk -v base="$base" -v n="$UTILGATE_STEPS" -v rep="$UTILGATE_REPEAT" \
  'BEGIN { for (i = 0; i < n; i++) { r = (i * 7 + rep * 3) % 5; printf "{\"step_ms\": %.6f}\n", base * (1 + r * 0.002) } }' >> "$out"
"#;

const KEY_A: &str = "decode/seed-8b/bf16/decode/b1/c4096/mode=a";
const KEY_B: &str = "decode/seed-8b/bf16/decode/b1/c4096/mode=b";

fn mode_env() -> TestEnv {
    let env = TestEnv::new();
    env.write("modes.sh", MODE_HARNESS);
    env.write_config(
        &TestEnv::config_with("axes = { mode = [\"a\", \"b\"] }")
            .replace(
                "command = \"sh harness.sh\"",
                "command = \"sh modes.sh {{ mode }}\"",
            )
            .replace("batches = [1, 8]", "batches = [1]"),
    );
    env
}

#[test]
fn each_axis_value_is_a_case_measured_stored_shown_and_judged_on_its_own() {
    let env = mode_env();
    let first = env.run("main", &[]);
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));

    // The harness saw the value both ways, three repeats per mode.
    let log = std::fs::read_to_string(env.path().join("modes.log")).expect("log");
    let mut lines: Vec<&str> = log.lines().collect();
    lines.sort_unstable();
    assert_eq!(
        lines,
        ["a a 0", "a a 1", "a a 2", "b b 0", "b b 1", "b b 2"]
    );

    // The terminal table: a mode column beside the case's point.
    let table = stdout(&first);
    let header = table
        .lines()
        .find(|l| l.contains("floor ms"))
        .expect("header");
    let columns: Vec<&str> = header
        .split(|c: char| c == '│' || c.is_whitespace())
        .filter(|w| !w.is_empty())
        .collect();
    assert_eq!(&columns[..3], ["case", "mode", "floor"], "{table}");
    for mode in ["a", "b"] {
        assert!(
            table.lines().any(|l| {
                let words: Vec<&str> = l.split_whitespace().collect();
                words.contains(&"decode/seed-8b/bf16/decode/b1/c4096") && words.contains(&mode)
            }),
            "no row for mode {mode}:\n{table}"
        );
    }

    // Stored and read back: the JSON report, with the harness's per-mode step times.
    let json: serde_json::Value = serde_json::from_str(&env.report("json")).expect("json");
    assert_eq!(json["cases"].as_array().expect("cases").len(), 2, "{json}");
    assert_eq!(json["suites"][0]["axes"], serde_json::json!(["mode"]));
    for (key, mode, step) in [(KEY_A, "a", 10.0), (KEY_B, "b", 6.0)] {
        let c = case_of(&json, key);
        assert_eq!(c["verdict"], "new");
        assert_eq!(c["axes"], serde_json::json!({ "mode": mode }));
        assert_eq!(c["key"]["axes"], serde_json::json!({ "mode": mode }));
        let median = c["median_ms"].as_f64().expect("median");
        assert!((median - step).abs() < 0.1, "{key}: {median}");
    }
    let list = env.cmd().args(["baseline", "list"]).output().expect("runs");
    assert!(list.status.success(), "{}", stderr(&list));
    let list = stdout(&list);
    assert!(list.contains(KEY_A) && list.contains(KEY_B), "{list}");

    // Every report format names the mode.
    let markdown = env.report("markdown");
    let header = markdown
        .lines()
        .find(|l| l.starts_with("| case |"))
        .expect("table");
    assert!(
        header.starts_with("| case | mode | floor ms |"),
        "{markdown}"
    );
    assert!(
        markdown.contains("| `seed-8b/bf16/decode/b1/c4096` | b |"),
        "{markdown}"
    );
    let html = env.report("html");
    assert!(html.contains("<th>case</th><th>mode</th>"), "{html}");
    assert!(html.contains("</a></td><td>a</td>"), "{html}");
    let junit = env.report("junit");
    assert!(
        junit.contains("name=\"seed-8b/bf16/decode/b1/c4096/mode=a\"")
            && junit.contains("name=\"seed-8b/bf16/decode/b1/c4096/mode=b\""),
        "{junit}"
    );
    let metrics = env.report("openmetrics");
    assert!(metrics.contains("mode=\"b\""), "{metrics}");

    // The second run slows mode b only: b is judged against b's baseline (regressed; against
    // a's 10 ms it would read as improved) and a against a's (pass).
    let second = env.run("main", &[("SLOW_MODE", "b")]);
    assert_eq!(second.status.code(), Some(1), "{}", stderr(&second));
    let json: serde_json::Value = serde_json::from_str(&env.report("json")).expect("json");
    assert_eq!(verdict_of(&json, KEY_A), "pass", "{json}");
    assert_eq!(verdict_of(&json, KEY_B), "regressed", "{json}");
    let b = case_of(&json, KEY_B);
    let then = b["baseline"]["median_ms"].as_f64().expect("baseline");
    assert!((then - 6.0).abs() < 0.1, "b's own baseline: {then}");

    // A filter takes the axis text: only mode=b's history.
    let history = env
        .cmd()
        .args(["baseline", "history", "mode=b"])
        .output()
        .expect("runs");
    assert!(history.status.success(), "{}", stderr(&history));
    let history = stdout(&history);
    assert!(
        history.contains(KEY_B) && !history.contains(KEY_A),
        "{history}"
    );
}

#[test]
fn axis_mistakes_are_refused_with_the_field_and_the_fix() {
    let env = TestEnv::new();
    env.write_config(&TestEnv::config_with(
        "axes = { batch = [\"x\"], mode = [\"a\", \"a\", \"b/c\"], empty = [] }",
    ));
    let out = env.cmd().args(["config", "check"]).output().expect("runs");
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    let err = stderr(&out);
    for needle in [
        "utilgate.toml",
        "suite[0].axes.batch",
        "built-in",
        "suite[0].axes.mode[1]",
        "listed twice",
        "suite[0].axes.mode[2]",
        "not a plain value",
        "suite[0].axes.empty",
        "is empty",
    ] {
        assert!(err.contains(needle), "{needle:?} missing in:\n{err}");
    }

    // A template naming an axis the suite does not declare.
    env.write_config(&TestEnv::config_with("axes = { mode = [\"a\"] }").replace(
        "command = \"sh harness.sh\"",
        "command = \"sh harness.sh {{ mdoe }}\"",
    ));
    let out = env.cmd().args(["config", "check"]).output().expect("runs");
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    let err = stderr(&out);
    assert!(err.contains("suite[0].command"), "{err}");
    assert!(err.contains("did you mean `mode`"), "{err}");
}

/// The v8 store fixture (tests/fixtures/stores/README.md) as the test's store.
fn restore_v8_store(env: &TestEnv) {
    let dump = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/stores/v8-no-axes.sql"),
    )
    .expect("fixture");
    std::fs::create_dir_all(env.db().parent().expect("dir")).expect("mkdir");
    let conn = rusqlite::Connection::open(env.db()).expect("open");
    conn.execute_batch(&dump).expect("restore");
    let version: i64 = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .expect("version");
    assert_eq!(version, 8);
}

#[test]
fn a_config_without_axes_keeps_its_keys_and_baselines_from_an_older_store() {
    let env = TestEnv::new();
    assert!(
        SCRIPT_HARNESS.contains("STEP_MS:=10.0"),
        "the fixture's harness"
    );
    restore_v8_store(&env);

    // Off the baseline branch: judged against the old store's baselines, nothing promoted.
    let out = env.run("feature", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let json: serde_json::Value = serde_json::from_str(&env.report("json")).expect("json");
    for key in [
        "decode/seed-8b/bf16/decode/b1/c4096",
        "decode/seed-8b/bf16/decode/b8/c4096",
    ] {
        assert_eq!(verdict_of(&json, key), "pass", "{json}");
        assert_eq!(case_of(&json, key)["axes"], serde_json::json!({}));
        assert!(case_of(&json, key)["key"].get("axes").is_none(), "{json}");
    }
    assert_eq!(json["suites"][0]["axes"], serde_json::json!([]));

    // The baselines export is byte for byte the older utilgate's.
    let out = env
        .cmd()
        .args(["baseline", "export", "--out", "after.json"])
        .output()
        .expect("runs");
    assert!(out.status.success(), "{}", stderr(&out));
    let before = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/stores/v8-no-axes.baselines.json"),
    )
    .expect("fixture");
    let after = std::fs::read_to_string(env.path().join("after.json")).expect("export");
    assert_eq!(after, before);

    // The same grid with an axis added is a new set of cases: nothing judged against the
    // cases without axes.
    env.write_config(&TestEnv::config_with("axes = { mode = [\"x\"] }"));
    let out = env.run("feature", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let json: serde_json::Value = serde_json::from_str(&env.report("json")).expect("json");
    assert_eq!(
        verdict_of(&json, "decode/seed-8b/bf16/decode/b1/c4096/mode=x"),
        "new",
        "{json}"
    );
}
