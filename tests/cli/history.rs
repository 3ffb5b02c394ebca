//! `utilgate history` and `utilgate changes` over nightlies stored by real runs of the scripted
//! harness: a torch upgrade that slowed the case is found on its night, with the commit range
//! and the environment diff; the HTML chart marks it.

use crate::env::{TestEnv, stderr, stdout};

const B1: &str = "decode/seed-8b/bf16/decode/b1/c4096";

/// Nightlies on main: 8 at 10 ms (torch 2.5.1), then 5 at 10.9 ms (torch 2.6.0).
fn nightlies(env: &TestEnv) {
    env.write_config(
        &TestEnv::config_with("")
            .replace("batches = [1, 8]", "batches = [1]")
            .replace("repeats = 3", "repeats = 2"),
    );
    let wiggle = [
        "10.00", "10.02", "9.98", "10.01", "9.99", "10.02", "9.98", "10.00",
    ];
    let slow = ["10.90", "10.92", "10.88", "10.91", "10.89"];
    for (night, step) in wiggle.iter().chain(&slow).enumerate() {
        let torch = if night < wiggle.len() {
            "2.5.1"
        } else {
            "2.6.0"
        };
        let out = env
            .cmd()
            .args(["run", "--branch", "main", "--trigger", "schedule"])
            .args(["--git-sha", &format!("{night:02}aaaaaaaaaaaaaaaa")])
            .env("STEP_MS", step)
            .env("TORCH_VERSION", torch)
            .output()
            .expect("runs");
        assert!(matches!(out.status.code(), Some(0 | 1)), "{}", stderr(&out));
    }
}

#[test]
fn history_names_the_night_the_size_and_what_arrived() {
    let env = TestEnv::new();
    nightlies(&env);
    let out = env
        .cmd()
        .args(["history", "b1/c4096"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains(&format!("{B1} on h100-sxm: 13 nights on main")),
        "{text}"
    );
    assert!(
        text.contains("run 9:") && text.contains("REGRESSION"),
        "{text}"
    );
    assert!(text.contains("commits 07aaaaaaaa..08aaaaaaaa"), "{text}");
    assert!(text.contains("torch 2.5.1 -> 2.6.0"), "{text}");

    let json = env.json(&["history", B1]);
    let changes = json["cases"][0]["changes"].as_array().expect("changes");
    assert_eq!(changes.len(), 1, "{json}");
    let c = &changes[0];
    assert_eq!(c["night"]["run_id"], 9);
    assert_eq!(c["before"]["run_id"], 8);
    assert_eq!(c["index"], 8);
    let pct = c["magnitude"]["change_pct"].as_f64().expect("pct");
    // 10 ms -> 10.9 ms is a utilisation drop of 1 - 10/10.9 = 8.3%.
    assert!((pct - -8.26).abs() < 0.2, "{pct}");
    let ci = c["magnitude"]["ci_pct"].as_array().expect("interval");
    assert!(ci[0].as_f64() < Some(pct) && ci[1].as_f64() > Some(pct));
    assert!(c["pvalue"].as_f64() <= Some(0.01));
    assert_eq!(json["cases"][0]["slide"], serde_json::Value::Null);
}

#[test]
fn changes_since_a_date_and_bad_input() {
    let env = TestEnv::new();
    nightlies(&env);
    let all = env.json(&["changes"]);
    assert_eq!(all["cases"][0]["changes"].as_array().map(Vec::len), Some(1));
    let later = env.json(&["changes", "--since", "2999-01-01"]);
    assert_eq!(
        later["cases"][0]["changes"].as_array().map(Vec::len),
        Some(0)
    );
    let text = stdout(
        &env.cmd()
            .args(["changes", "--since", "2000-01-01"])
            .output()
            .expect("runs"),
    );
    assert!(
        text.contains(B1) && text.contains("torch 2.5.1 -> 2.6.0"),
        "{text}"
    );
    assert!(
        text.starts_with("change points since 2000-01-01: "),
        "the date as given: {text}"
    );

    let bad = env
        .cmd()
        .args(["changes", "--since", "last tuesday"])
        .output()
        .expect("runs");
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        stderr(&bad)
            .contains("'last tuesday' for '--since <SINCE>': not a date; write --since 2026-11-01"),
        "{}",
        stderr(&bad)
    );
    // The detector's flags are checked as they are parsed, naming the fix.
    for (flag, value, fix) in [
        ("--max-pvalue", "1.5", "write --max-pvalue 0.01"),
        ("--permutations", "0", "e.g. --permutations 199"),
    ] {
        let bad = env
            .cmd()
            .args(["changes", flag, value])
            .output()
            .expect("runs");
        assert_eq!(bad.status.code(), Some(2), "{}", stderr(&bad));
        assert!(stderr(&bad).contains(fix), "{}", stderr(&bad));
    }
    let none = env
        .cmd()
        .args(["history", "prefill"])
        .output()
        .expect("runs");
    assert_eq!(none.status.code(), Some(2));
    assert!(
        stderr(&none).contains("\"prefill\" matches no case of the store"),
        "{}",
        stderr(&none)
    );
    assert!(
        stderr(&none).contains("hint: give one whole case name"),
        "the typed error keeps its fix: {}",
        stderr(&none)
    );

    // The HTML report's history chart marks the change point.
    let html = env.report("html");
    assert!(
        html.contains(r#"class="changepoint""#) && html.contains("change point at run 9"),
        "{html}"
    );
}
