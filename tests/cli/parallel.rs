//! Tensor- and expert-parallel cases through the binary (#33 item 2): `tp = [1, 2]` makes each
//! degree a case of its own, keyed `.../tp2`, handed to the harness as `UTILGATE_TP` and
//! `UTILGATE_EP`, floored per GPU with its all-reduces, stored and read back.

use crate::env::{TestEnv, stderr, stdout};

/// Logs the degrees it was given, then reports 20 steps of 9 ms.
const TP_HARNESS: &str = r#"#!/bin/sh
set -eu
echo "$1 $UTILGATE_TP $UTILGATE_EP" >> degrees.log
awk -v n="$UTILGATE_STEPS" 'BEGIN { for (i = 0; i < n; i++) printf "{\"step_ms\": 9.0}\n" }' >> "$UTILGATE_OUT"
"#;

#[test]
fn tp_degrees_are_cases_the_harness_sees_and_the_store_keeps() {
    let env = TestEnv::new();
    env.write("tp.sh", TP_HARNESS);
    env.write_config(
        &TestEnv::config_with("tp = [1, 2]")
            .replace(
                "command = \"sh harness.sh\"",
                "command = \"sh tp.sh {{ tp }}\"",
            )
            .replace("models = [\"seed-8b\"]", "models = [\"llama-3.1-8b\"]")
            .replace("batches = [1, 8]", "batches = [1]")
            .replace("repeats = 3", "repeats = 1"),
    );
    let out = env.run("main", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let log = std::fs::read_to_string(env.path().join("degrees.log")).expect("log");
    let mut lines: Vec<&str> = log.lines().collect();
    lines.sort_unstable();
    // The template's {{ tp }}, then UTILGATE_TP and UTILGATE_EP.
    assert_eq!(lines, ["1 1 1", "2 2 1"]);

    let report = env.json(&["report"]);
    let text = report.to_string();
    assert!(
        text.contains("decode/llama-3.1-8b/bf16/decode/b1/c4096/tp2"),
        "{text}"
    );
    // The tp 2 case's floor is one H100's half plus its all-reduces: lower than on one GPU.
    let cases = report["cases"].as_array().expect("cases");
    let floor_of = |tp: u64| {
        cases
            .iter()
            .find(|c| c["key"]["tp"].as_u64().unwrap_or(1) == tp)
            .and_then(|c| c["floor_ms"].as_f64())
            .unwrap_or_else(|| panic!("no floor for tp {tp} in {text}"))
    };
    assert!(floor_of(2) < floor_of(1) * 0.6, "{text}");
    // The comment's, the HTML report's and JUnit's tables name the degree beside the point
    // (before, both cases read `llama-3.1-8b/bf16/decode/b1/c4096`).
    for (format, row) in [
        ("markdown", "| `llama-3.1-8b/bf16/decode/b1/c4096/tp2` |"),
        ("html", ">llama-3.1-8b/bf16/decode/b1/c4096/tp2</a>"),
        ("junit", "name=\"llama-3.1-8b/bf16/decode/b1/c4096/tp2\""),
    ] {
        let out = env
            .cmd()
            .args(["report", "--format", format])
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        assert!(stdout(&out).contains(row), "{format}: {}", stdout(&out));
    }
}
