//! `utilgate run --budget`: a first night without history uses the configured sampling and
//! records its costs; a later night whose budget is too small for the grid names the cases it
//! cannot resolve before measuring and stops within the budget plus its grace.

use std::time::{Duration, Instant};

use crate::env::{TestEnv, case_of, stderr, stdout};

/// Six cases whose processes differ by 2% from each other (`REPEAT_SCALE`), each repeat starting
/// 0.3 s late (a model load), and a 3-second grace.
fn grid() -> TestEnv {
    let env = TestEnv::new();
    env.write("slow.sh", "sleep 0.3\nexec sh harness.sh\n");
    let config = TestEnv::config_with("\n[run]\ngrace_minutes = 0.05\n")
        .replace("batches = [1, 8]", "batches = [1, 2, 4, 8, 16, 32]")
        .replace("command = \"sh harness.sh\"", "command = \"sh slow.sh\"");
    env.write_config(&config);
    env
}

fn night(env: &TestEnv, budget: &str) -> (std::process::Output, Duration) {
    let t = Instant::now();
    let out = env
        .cmd()
        .args([
            "run",
            "--branch",
            "main",
            "--git-sha",
            "0123456789abcdef",
            "--format",
            "json",
            "--budget",
            budget,
        ])
        .env("REPEAT_SCALE", "0.02")
        .env("GITHUB_ACTIONS", "true")
        .output()
        .expect("runs");
    (out, t.elapsed())
}

fn json(out: &std::process::Output) -> serde_json::Value {
    serde_json::from_str(&stdout(out)).unwrap_or_else(|e| panic!("{e}: {}", stdout(out)))
}

#[test]
fn a_budget_too_small_for_the_grid_names_what_it_cannot_resolve_and_ends_within_its_grace() {
    let env = grid();
    // Night 1: no history, so the configured 3 repeats per case, and the costs are recorded.
    let (out, _) = night(&env, "10m");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let first = json(&out);
    let budget = &first["budget"];
    assert_eq!(budget["budget_s"], 600.0, "{budget}");
    let cases = budget["cases"].as_array().expect("cases");
    assert_eq!(cases.len(), 6, "{budget}");
    for c in cases {
        assert_eq!(c["note"], "no_history", "{c}");
        assert_eq!(c["repeats"], 3, "{c}");
        // 3 processes that each sleep 0.3 s.
        assert!(c["time_s"].as_f64().expect("time") >= 0.9, "{c}");
    }
    assert!(stderr(&out).contains("no history: configured sampling, costs recorded tonight"));

    // Night 2: 4 seconds cannot hold six noisy cases; the plan says which before measuring.
    let (out, wall) = night(&env, "4s");
    let log = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{log}");
    let warned = log
        .find("cannot be resolved within the budget")
        .unwrap_or_else(|| panic!("no unresolved case named:\n{log}"));
    let started = log.find(": started (").unwrap_or(usize::MAX);
    assert!(warned < started, "the plan comes before measuring:\n{log}");
    assert!(
        log.contains("decode/seed-8b/bf16/decode/b1/c4096: cannot be resolved"),
        "{log}"
    );
    assert!(log.contains("would resolve every case"), "{log}");
    // Progress shows the budget, the time left and an ETA.
    assert!(log.contains("budget 4.0 s: "), "{log}");
    assert!(
        log.contains(" left, ETA ") || log.contains(" over (grace"),
        "{log}"
    );

    let second = json(&out);
    let budget = &second["budget"];
    assert_eq!(budget["budget_s"], 4.0, "{budget}");
    assert_eq!(budget["grace_s"], 3.0, "{budget}");
    let used = budget["used_s"].as_f64().expect("used");
    assert!(used <= 4.0 + 3.0 + 0.5, "measuring took {used} s: {budget}");
    assert!(budget["budget_to_resolve_all_s"].as_f64().expect("longer") > 4.0);
    // Every case the budget cut short or never started is named; none of them is promoted.
    let lines: Vec<&str> = budget["lines"]
        .as_array()
        .expect("lines")
        .iter()
        .filter_map(|l| l.as_str())
        .collect();
    assert!(
        lines[0].starts_with("Budget 4.0 s (+3.0 s grace)"),
        "{lines:?}"
    );
    // A case the plan could not resolve is named unresolved unless the night resolved it after
    // all (decisive, or a confirmed suspect): one case is never both.
    let unresolved = lines
        .iter()
        .find(|l| l.starts_with("Unresolved within the budget"))
        .copied()
        .unwrap_or("");
    let mut planned_unresolvable = 0;
    for case in budget["cases"].as_array().expect("cases") {
        let name = case["case"].as_str().expect("case");
        let note = case["note"].as_str().expect("note");
        if note != "over_budget" && note != "too_noisy" {
            continue;
        }
        planned_unresolvable += 1;
        let resolved = matches!(case["stop"].as_str(), Some("decisive" | "suspect"));
        assert_eq!(
            unresolved.contains(name),
            !resolved,
            "{name} ({}): {lines:?}",
            case["stop"]
        );
    }
    assert!(planned_unresolvable > 0, "the plan named some: {budget}");
    // The stored run's own times agree (the store write and the report are after measuring).
    let runs = env.json(&["runs", "list"]);
    let run = &runs["runs"][0];
    let t = |k: &str| {
        run[k]
            .as_str()
            .expect("time")
            .parse::<jiff::Timestamp>()
            .expect("timestamp")
    };
    let stored = t("finished_at")
        .duration_since(t("started_at"))
        .as_secs_f64();
    assert!(stored <= 4.0 + 3.0 + 5.0, "the run took {stored} s");
    assert!(wall < Duration::from_secs(60), "{wall:?}");
    // The human report says it too.
    let human = env.report("markdown");
    assert!(human.contains("Time budget: Budget 4.0 s"), "{}", human);
}

#[test]
fn a_bad_budget_is_a_usage_error_naming_the_fix() {
    let env = TestEnv::new();
    let out = env
        .cmd()
        .args(["run", "--budget", "ten"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("10m, 90s, 1h 30m"),
        "{}",
        stderr(&out)
    );
    env.write_config(&TestEnv::config_with("\n[run]\nbudget_minutes = -1\n"));
    let out = env.cmd().args(["config", "check"]).output().expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("run.budget_minutes"),
        "{}",
        stderr(&out)
    );
}

/// Batch 1 of the standard grid, as its reports name it.
const B1: &str = "decode/seed-8b/bf16/decode/b1/c4096";

/// Three budgeted nights of `env` (5 minutes each, so the budget cuts nothing short), the
/// third with `var` set to 1 (the harness's switch for tonight's slowdown); the third's JSON
/// report, the first two having passed.
fn third_night(env: &TestEnv, var: &str) -> serde_json::Value {
    let mut last = None;
    for (night, value) in [(1, ""), (2, ""), (3, "1")] {
        let out = env
            .cmd()
            .args([
                "run",
                "--branch",
                "main",
                "--git-sha",
                &format!("{night:016x}"),
                "--format",
                "json",
                "--budget",
                "5m",
            ])
            .env(var, value)
            .output()
            .expect("runs");
        if night < 3 {
            assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        }
        last = Some(out);
    }
    json(&last.expect("three nights"))
}

/// The budget's record of `case` in a run report.
fn budget_record<'a>(report: &'a serde_json::Value, case: &str) -> &'a serde_json::Value {
    report["budget"]["cases"]
        .as_array()
        .expect("budget cases")
        .iter()
        .find(|c| c["case"] == case)
        .unwrap_or_else(|| panic!("no budget record of {case} in {report}"))
}

/// A suspect whose fresh processes are clearly under the threshold stops its confirm step
/// early, and the verdict's sentence gives the bound it used (it said "two standard errors",
/// while the bound is `futility_z`, 1.5).
#[test]
fn a_confirm_step_stopped_as_clearly_passing_says_how_clearly() {
    let env = TestEnv::new();
    // Batch 1's first two processes are 6% slower when SLOW_FIRST is set; its later ones are
    // not: a suspect that its fresh processes clear.
    env.write(
        "first.sh",
        "if [ -n \"${SLOW_FIRST:-}\" ] && [ \"$UTILGATE_BATCH\" = 1 ] && [ \"$UTILGATE_REPEAT\" -lt 2 ]; \
         then export STEP_MS=10.6; fi\nexec sh harness.sh\n",
    );
    env.write_config(
        &TestEnv::config_with("")
            .replace("command = \"sh harness.sh\"", "command = \"sh first.sh\""),
    );
    let json = third_night(&env, "SLOW_FIRST");
    let case = case_of(&json, B1);
    assert_eq!(case["verdict"], "pass", "{case}");
    let reasons = case["decision"]["reasons"].to_string();
    assert!(
        reasons.contains(
            "they were already clearly under the threshold (their estimate more than 1.5 \
             standard errors below it)"
        ),
        "{reasons}"
    );
    let record = budget_record(&json, B1);
    assert_eq!(record["repeats"], 4, "two first, two fresh: {record}");
}

/// A budgeted night samples a case against its suite's own threshold: a 1.5% drop under a
/// suite gating at 1% is a suspect that goes to the confirm step, not a case clearly passing
/// against the gate's 3% (the night used the gate's threshold for every case).
#[test]
fn a_budgeted_night_samples_each_case_against_its_own_threshold() {
    let env = TestEnv::new();
    env.write(
        "slower.sh",
        "if [ -n \"${SLOWER:-}\" ] && [ \"$UTILGATE_BATCH\" = 1 ]; then export STEP_MS=10.15; fi\n\
         exec sh harness.sh\n",
    );
    env.write_config(
        &TestEnv::config_with("max_drop_pct = 1.0\n")
            .replace("command = \"sh harness.sh\"", "command = \"sh slower.sh\""),
    );
    let json = third_night(&env, "SLOWER");
    let case = case_of(&json, B1);
    assert_eq!(case["threshold_pct"], 1.0, "{case}");
    assert_eq!(case["verdict"], "regressed", "{case}");
    let record = budget_record(&json, B1);
    assert_eq!(record["stop"], "suspect", "{record}");
    assert!(record["confirm_repeats"].as_u64() > Some(0), "{record}");
}
