//! `utilgate ab`: two checkouts (the base and the head of a pull request) measured interleaved
//! by the real binary through real harness processes, judged on the paired difference.

use crate::env::{TestEnv, stderr, stdout};

/// The base and the head, each a directory with the script harness and a config; `head_extra`
/// and `base_extra` are appended to each side's suite.
fn checkouts(base_extra: &str, head_extra: &str) -> (TestEnv, TestEnv) {
    let base = TestEnv::new();
    base.write_config(&TestEnv::config_with(base_extra));
    let head = TestEnv::new();
    head.write_config(&TestEnv::config_with(head_extra));
    (base, head)
}

fn ab(base: &TestEnv, head: &TestEnv, extra: &[&str]) -> std::process::Output {
    head.cmd()
        .args(["ab", "--base"])
        .arg(base.path())
        .args(extra)
        .output()
        .expect("runs")
}

fn verdicts(out: &std::process::Output) -> Vec<String> {
    let report: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("JSON on stdout ({e}): {}\n{}", stdout(out), stderr(out)));
    report["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .map(|c| {
            c["decision"]["verdict"]
                .as_str()
                .expect("verdict")
                .to_owned()
        })
        .collect()
}

#[test]
fn the_same_code_on_both_sides_passes_and_stores_nothing() {
    let (base, head) = checkouts("", "");
    let out = ab(&base, &head, &["--pairs", "6", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(verdicts(&out), ["pass", "pass"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(report["cases"][0]["pairs"], 6);
    assert!(
        !head.db().exists() && !base.db().exists(),
        "an A/B session stores no run"
    );
}

#[test]
fn a_ten_percent_slower_head_fails_the_gate_naming_the_drop() {
    let (base, head) = checkouts("", "env = { STEP_MS = \"11.0\" }");
    let out = ab(&base, &head, &["--pairs", "6", "--confirm-pairs", "6"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}\n{}",
        stdout(&out),
        stderr(&out)
    );
    let text = stdout(&out);
    assert!(
        text.contains("REGRESSED decode/seed-8b/bf16/decode/b1/c4096"),
        "{text}"
    );
    assert!(
        text.contains("9.1%"),
        "the drop of a 10% slower step is 9.1%: {text}"
    );
    assert!(text.contains("gate: FAILED"), "{text}");
    // The suspect was confirmed and judged on all its pairs, the screening ones too.
    let json = ab(
        &base,
        &head,
        &["--pairs", "6", "--confirm-pairs", "6", "--format", "json"],
    );
    let report: serde_json::Value = serde_json::from_slice(&json.stdout).expect("json");
    let case = &report["cases"][0];
    assert_eq!(case["confirmed"], true, "{case}");
    assert_eq!(case["pairs"], 12, "{case}");
    assert_eq!(case["decision"]["repeats_now"], 12, "{case}");
}

/// A harness whose every process is 2% slower than the one before (a host warming up, a
/// neighbour ramping): both sides see the same drift, interleaved, so it cancels.
const DRIFTING_HARNESS: &str = r#"#!/bin/sh
set -eu
n=$(cat "$DRIFT_FILE" 2>/dev/null || echo 0)
echo $((n + 1)) > "$DRIFT_FILE"
awk -v n="$n" -v steps="$UTILGATE_STEPS" -v base="${STEP_MS:-10.0}" \
  'BEGIN { for (i = 0; i < steps; i++) { r = (i * 7) % 5; printf "{\"step_ms\": %.6f}\n", base * (1 + 0.02 * n) * (1 + r * 0.002) } }' >> "$UTILGATE_OUT"
"#;

#[test]
fn host_drift_during_the_session_cancels_between_the_sides() {
    let (base, head) = checkouts("", "");
    for side in [&base, &head] {
        side.write("harness.sh", DRIFTING_HARNESS);
    }
    let drift = base.path().join("drift-counter");
    let out = head
        .cmd()
        .env("DRIFT_FILE", &drift)
        .args(["ab", "--base"])
        .arg(base.path())
        .args(["--pairs", "8", "--confirm-pairs", "0", "--format", "json"])
        .output()
        .expect("runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}\n{}",
        stdout(&out),
        stderr(&out)
    );
    assert_eq!(verdicts(&out), ["pass", "pass"]);
    // The drift was real: 32 processes, the last about 60% slower than the first.
    let processes: u32 = std::fs::read_to_string(&drift)
        .expect("counter")
        .trim()
        .parse()
        .expect("number");
    assert_eq!(processes, 32);
}

#[test]
fn a_base_without_the_suite_is_an_error_naming_the_file() {
    let (base, head) = checkouts("", "");
    base.write_config(&TestEnv::config_with("").replace("name = \"decode\"", "name = \"other\""));
    let out = ab(&base, &head, &["--pairs", "4"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("has no suite \"decode\""),
        "{}",
        stdout(&out)
    );

    let out = ab(&base, &head, &["--pairs", "1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--pairs 1"), "{}", stderr(&out));
    assert!(stderr(&out).contains("--pairs 16"), "{}", stderr(&out));
}

/// A harness on a host whose level moves from process to process (`HOST_LEVELS`, one figure a
/// process in the order they start, cycled), shared by both sides through `HOST_FILE`;
/// `STEP_SCALE` makes one side slower. Process 2 (the head's, in the second pair) caught the
/// host at the next pair's level, so each side's own median ranks different pairs and lies
/// far from the paired difference.
const HOST_HARNESS: &str = r#"#!/bin/sh
set -eu
n=$(cat "$HOST_FILE" 2>/dev/null || echo 0)
echo $((n + 1)) > "$HOST_FILE"
awk -v n="$n" -v levels="$HOST_LEVELS" -v scale="${STEP_SCALE:-1}" -v steps="$UTILGATE_STEPS" \
  'BEGIN { k = split(levels, l, " "); base = l[n % k + 1] * scale; for (i = 0; i < steps; i++) { r = (i * 7) % 5; printf "{\"step_ms\": %.6f}\n", base * (1 + r * 0.002) } }' >> "$UTILGATE_OUT"
"#;

/// The figures of one row of the A/B table: base step, head step and the paired drop.
fn ab_row(line: &str) -> (f64, f64, f64) {
    let cells: Vec<&str> = line.split(['│', ' ']).filter(|t| !t.is_empty()).collect();
    let number = |t: &str| -> f64 {
        t.trim_end_matches('%')
            .parse()
            .unwrap_or_else(|e| panic!("{t:?} in {line:?}: {e}"))
    };
    let drop = cells
        .iter()
        .find(|t| t.ends_with('%'))
        .unwrap_or_else(|| panic!("a drop in {line:?}"));
    (number(cells[1]), number(cells[2]), number(drop))
}

#[test]
fn the_table_shows_the_paired_figures_the_verdict_judged_and_reasons_name_pairs() {
    let (base, head) = checkouts("", "env = { STEP_SCALE = \"1.05\" }");
    for side in [&base, &head] {
        side.write("harness.sh", HOST_HARNESS);
    }
    let session = |format: &[&str]| {
        let counter = base.path().join("host-counter");
        let _ = std::fs::remove_file(&counter);
        head.cmd()
            .env("HOST_FILE", &counter)
            .env("HOST_LEVELS", "10 10 16 12 14 14 16 16")
            .args(["ab", "--base"])
            .arg(base.path())
            .args(["--pairs", "4", "--confirm-pairs", "4"])
            .args(format)
            .output()
            .expect("runs")
    };
    let out = session(&[]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}\n{}", stderr(&out));

    // The per-side figures the table prints are the verdict's: 1 - base / head is the drop.
    let header = text
        .lines()
        .find(|l| l.contains("case"))
        .unwrap_or_else(|| panic!("a header in {text}"));
    assert!(header.contains("paired drop"), "{header}");
    let rows: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("decode/seed-8b"))
        .collect();
    let rows: Vec<&str> = rows.into_iter().filter(|l| l.contains('│')).collect();
    assert_eq!(rows.len(), 2, "{text}");
    for row in &rows {
        let (base_ms, head_ms, drop) = ab_row(row);
        let implied = 100.0 * (1.0 - base_ms / head_ms);
        assert!(
            (implied - drop).abs() < 0.1,
            "1 - {base_ms} / {head_ms} = {implied:.2}% but the row's drop is {drop}%: {row}"
        );
    }
    assert!(
        text.contains("the figure the verdict judges"),
        "the table says which figure is the verdict's: {text}"
    );

    // Each side's own median ranks different pairs here: it is kept, named, in the JSON.
    let json = session(&["--format", "json"]);
    let report: serde_json::Value = serde_json::from_slice(&json.stdout).expect("json");
    let case = &report["cases"][0];
    let f = |v: &serde_json::Value| v.as_f64().unwrap_or_else(|| panic!("a number in {case}"));
    let medians_apart = f(&case["head_median_ms"]) / f(&case["base_median_ms"]) - 1.0;
    let paired = f(&case["decision"]["step_now_ms"]) / f(&case["decision"]["step_then_ms"]) - 1.0;
    assert!(
        (medians_apart - paired).abs() > 0.05,
        "the scenario makes the unpaired medians ({medians_apart:.3}) disagree with the paired \
         change ({paired:.3}): {case}"
    );

    // An inconclusive A/B case is told what more pairs would resolve it, in A/B's flags.
    assert!(text.contains("INCONCLUSIVE decode/seed-8b"), "{text}");
    let reasons: Vec<&str> = text.lines().filter(|l| l.starts_with("  ")).collect();
    let reasons = reasons.join("\n");
    for run_mode in [
        "add repeats",
        "(confirm)",
        "repeats now",
        "in the reference",
    ] {
        assert!(
            !reasons.contains(run_mode),
            "run-mode advice {run_mode:?} in A/B reasons:\n{reasons}"
        );
    }
    assert!(reasons.contains("with these 8 pairs"), "{reasons}");
    let needed: usize = reasons
        .split("about ")
        .nth(1)
        .and_then(|t| t.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("\"about N pairs\" in {reasons}"));
    assert!(needed > 8, "{reasons}");
    assert!(
        reasons.contains(&format!("--confirm-pairs {}", needed - 4)),
        "4 screening pairs and the confirming ones make {needed}: {reasons}"
    );
    assert!(reasons.contains(&format!("--pairs {needed}")), "{reasons}");
    // An unconfirmed drop beyond the threshold is no pass: the gate line says so, with it.
    let (_, _, worst) = rows
        .iter()
        .map(|r| ab_row(r))
        .fold(
            (0.0, 0.0, f64::MIN),
            |acc, r| if r.2 > acc.2 { r } else { acc },
        );
    let gate = text
        .lines()
        .find(|l| l.starts_with("gate: "))
        .unwrap_or_else(|| panic!("a gate line in {text}"));
    assert!(
        gate.starts_with(&format!(
            "gate: could not tell, largest unconfirmed drop {worst:.1}% on decode/seed-8b"
        )),
        "{gate}"
    );
}
