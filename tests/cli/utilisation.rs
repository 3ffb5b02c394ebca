//! One utilisation and one "then" (#27 item 11): every column of a run-table row agrees with the
//! others (`util` is the floor over the row's step, the step the verdict weighs, and `drop` is
//! `1 - util / util then`), and a case's details show the reference once.

use crate::env::{TestEnv, case_of, stderr, stdout};

const B1: &str = "decode/seed-8b/bf16/decode/b1/c4096";

/// A harness whose third process of each three runs 50% slower than the other two: the median
/// of all steps pooled then sits with the two fast processes, while the verdict's level (the
/// robust mean of the processes' medians) lies above it.
const LOPSIDED_HARNESS: &str = r#"#!/bin/sh
set -eu
out="$UTILGATE_OUT"
i=0
while [ "$i" -lt "$UTILGATE_WARMUP_STEPS" ]; do
  printf '{"step_ms": 40.0, "warmup": true}\n' >> "$out"; i=$((i+1))
done
awk -v base="$STEP_MS" -v n="$UTILGATE_STEPS" -v rep="$UTILGATE_REPEAT" \
  'BEGIN { k = rep % 3; f = (k == 2) ? 1.5 : 1.0 + 0.01 * k; for (i = 0; i < n; i++) printf "{\"step_ms\": %.6f}\n", base * f * (1 + (i % 5) * 0.002) }' >> "$out"
"#;

/// A shown figure: `12.345` or `45.6%` or `+3.1%`.
fn figure(cell: &str) -> f64 {
    cell.trim_end_matches('%')
        .parse()
        .unwrap_or_else(|e| panic!("{cell:?}: {e}"))
}

/// The cells of the table's header and of the row of `case` (cells part at two spaces).
fn header_and_row(text: &str, case: &str) -> (Vec<String>, Vec<String>) {
    let cells = |line: &str| -> Vec<String> {
        line.trim_matches(|c: char| c == '│' || c.is_whitespace())
            .split("  ")
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .map(str::to_owned)
            .collect()
    };
    let header = text
        .lines()
        .find(|l| l.contains("floor ms") && l.contains("util then"))
        .unwrap_or_else(|| panic!("a table header in {text}"));
    let row = text
        .lines()
        .find(|l| l.contains(case) && l.trim_start().starts_with('│'))
        .unwrap_or_else(|| panic!("a row of {case} in {text}"));
    (cells(header), cells(row))
}

#[test]
fn every_column_of_a_row_agrees_with_its_util_and_drop_and_the_details_show_one_then() {
    let env = TestEnv::new();
    let config = TestEnv::config_with("")
        .replace("batches = [1, 8]", "batches = [1]")
        .replace(
            "max_drop_pct = 3.0",
            "max_drop_pct = 3.0\nconfirm_repeats = 0",
        );
    env.write_config(&config);
    env.write("harness.sh", LOPSIDED_HARNESS);
    let first = env.run("main", &[("STEP_MS", "10.0")]);
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    let second = env.run("feature", &[("STEP_MS", "11.0")]);
    let text = stdout(&second);
    assert!(
        matches!(second.status.code(), Some(0 | 1)),
        "{text}\n{}",
        stderr(&second)
    );

    // The pooled median and the verdict's level differ on these samples (else the test could
    // not tell the two apart).
    let report = env.json(&["runs", "show"]);
    let case = case_of(&report, B1);
    let median = case["median_ms"].as_f64().expect("a median");
    let step = case["decision"]["step_now_ms"].as_f64().expect("a level");
    assert!((step / median - 1.0).abs() > 0.01, "{median} vs {step}");

    // MBU and MFU are shares of that same step: utilisation is the larger (MBU, memory-bound).
    let util_now = case["util_now"].as_f64().expect("util_now");
    let floor_ms = case["floor_ms"].as_f64().expect("floor_ms");
    assert!((util_now - floor_ms / step).abs() < 1e-9, "{case}");
    let mbu = case["mbu_now"].as_f64().expect("mbu_now");
    let mfu = case["mfu_now"].as_f64().expect("mfu_now");
    assert_eq!(case["bound"], "memory");
    assert!((util_now - mbu).abs() < 1e-9 && mfu < mbu, "{case}");

    let (header, row) = header_and_row(&text, B1);
    assert_eq!(header.len(), row.len(), "{header:?}\n{row:?}");
    let at = |name: &str| -> f64 {
        let i = header
            .iter()
            .position(|h| h == name)
            .unwrap_or_else(|| panic!("no column {name:?} in {header:?}"));
        figure(&row[i])
    };
    // The step column is the one after the bound, whatever its name.
    let bound = header.iter().position(|h| h == "bound").expect("bound");
    let (floor, shown_step) = (at("floor ms"), figure(&row[bound + 1]));
    let (util, util_then, drop) = (at("util"), at("util then"), at("drop"));
    // Each shown figure is within half its last digit of the true one.
    let (ms_half, pct_half) = (0.0005, 0.05);
    let util_lo = 100.0 * (floor - ms_half) / (shown_step + ms_half);
    let util_hi = 100.0 * (floor + ms_half) / (shown_step - ms_half);
    assert!(
        util_lo - pct_half <= util && util <= util_hi + pct_half,
        "util {util}% is not floor {floor} / step {shown_step}:\n{text}"
    );
    let drop_lo = 100.0 * (1.0 - (util + pct_half) / (util_then - pct_half));
    let drop_hi = 100.0 * (1.0 - (util - pct_half) / (util_then + pct_half));
    assert!(
        drop_lo - pct_half <= drop && drop <= drop_hi + pct_half,
        "drop {drop}% is not 1 - util {util}% / util then {util_then}%:\n{text}"
    );

    // The details: one line for the reference, one for this run.
    let details: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.ends_with(&format!("{B1}:")))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .collect();
    assert!(!details.is_empty(), "the case has details:\n{text}");
    let then_lines: Vec<&&str> = details
        .iter()
        .filter(|l| l.trim_start().starts_with("then") || l.contains("reference the verdict used"))
        .collect();
    assert_eq!(then_lines.len(), 1, "one \"then\":\n{text}");
    assert!(then_lines[0].starts_with("  then: "), "{text}");
    assert!(
        then_lines[0].contains(&format!("utilisation {util_then:.1}%")),
        "the table's util then: {text}"
    );
    let now: Vec<&&str> = details
        .iter()
        .filter(|l| l.starts_with("  now: "))
        .collect();
    assert_eq!(now.len(), 1, "one \"now\":\n{text}");
    assert!(
        now[0].contains(&format!(
            "step {shown_step:.3} ms, utilisation {util:.1}% = floor / step (MBU {util:.1}%,"
        )),
        "the table's step and util, and MBU beside them: {text}"
    );
}
