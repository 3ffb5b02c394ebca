//! What the gate says about the cases it could not decide, and what it judges them against:
//! an unconfirmed drop beyond the threshold is never headed as a pass, and pull-request traffic
//! never thins the reference the baseline branch built.

use crate::env::{TestEnv, case_of, stderr, stdout};

const B1: &str = "decode/seed-8b/bf16/decode/b1/c4096";

/// A harness whose every process lands at a different level around `STEP_MS` (`NOISE` is the
/// relative size of the process-to-process spread), the same sequence on every run: a gate
/// cannot confirm a drop smaller than that spread allows.
const NOISY_HARNESS: &str = r#"#!/bin/sh
set -eu
out="$UTILGATE_OUT"
i=0
while [ "$i" -lt "$UTILGATE_WARMUP_STEPS" ]; do
  printf '{"step_ms": 40.0, "warmup": true}\n' >> "$out"; i=$((i+1))
done
awk -v base="$STEP_MS" -v n="$UTILGATE_STEPS" -v rep="$UTILGATE_REPEAT" -v noise="$NOISE" \
  'BEGIN { f = exp(noise * sin(rep * 2.3 + 1.0)); for (i = 0; i < n; i++) printf "{\"step_ms\": %.6f}\n", base * f * (1 + (i % 5) * 0.002) }' >> "$out"
"#;

fn noisy_env(extra_gate: &str) -> TestEnv {
    let env = TestEnv::new();
    let config = TestEnv::config_with("")
        .replace("batches = [1, 8]", "batches = [1]")
        .replace(
            "max_drop_pct = 3.0",
            &format!("max_drop_pct = 5.0\n{extra_gate}"),
        );
    env.write_config(&config);
    env.write("harness.sh", NOISY_HARNESS);
    env
}

fn run(env: &TestEnv, branch: &str, step_ms: &str, noise: &str) -> std::process::Output {
    env.run(branch, &[("STEP_MS", step_ms), ("NOISE", noise)])
}

#[test]
fn a_large_drop_too_noisy_to_confirm_is_headed_could_not_tell_never_a_tick() {
    let env = noisy_env("confirm_repeats = 0");
    let first = run(&env, "main", "10.0", "0.6");
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    // 30% slower, at a process spread that cannot confirm it.
    let slow = run(&env, "feature", "13.0", "0.6");
    let text = stdout(&slow);
    assert_eq!(slow.status.code(), Some(0), "{text}\n{}", stderr(&slow));
    let report = env.json(&["runs", "show"]);
    let case = case_of(&report, B1);
    assert_eq!(case["verdict"], "inconclusive", "{text}");
    let drop = case["drop_pct"].as_f64().expect("a drop");
    assert!(
        drop > 5.0,
        "the point estimate lies beyond the threshold: {drop}"
    );
    assert_eq!(report["gate"]["state"], "undecided", "{report}");
    assert_eq!(report["gate"]["unconfirmed"]["case"], B1);
    let headline = format!(
        "Could not tell on h100-sxm: 1 of 1 case inconclusive; the largest unconfirmed drop is {drop:.1}% on {B1}, beyond its 5% threshold."
    );
    assert_eq!(report["summary"], headline.as_str());
    assert!(
        text.contains(&format!(
            "gate: could not tell, largest unconfirmed drop {drop:.1}% on {B1}"
        )),
        "{text}"
    );
    let markdown = env.report("markdown");
    assert!(!markdown.contains("✅ utilgate"), "{markdown}");
    assert!(
        markdown.contains(&format!("❔ utilgate: {headline}")),
        "{markdown}"
    );
}

#[test]
fn an_inconclusive_case_within_its_threshold_leaves_the_gate_passed() {
    let env = noisy_env("confirm_repeats = 0");
    assert_eq!(run(&env, "main", "10.0", "0.6").status.code(), Some(0));
    // 1% slower: too noisy to call, and no sign of a drop beyond the threshold.
    let same = run(&env, "feature", "10.1", "0.6");
    assert_eq!(same.status.code(), Some(0), "{}", stderr(&same));
    let report = env.json(&["runs", "show"]);
    assert_ne!(report["gate"]["state"], "undecided", "{report}");
    assert!(report["gate"]["unconfirmed"].is_null(), "{report}");
}

#[test]
fn pull_request_runs_never_shrink_the_reference_of_the_baseline_branch() {
    // history_runs = 2 bounds the window read per case at 2 * 4 + 8 = 16 results.
    let env = noisy_env("history_runs = 2");
    for night in 0..4 {
        let out = run(&env, "main", "10.0", "0.01");
        assert_eq!(
            out.status.code(),
            Some(0),
            "night {night}: {}",
            stderr(&out)
        );
    }
    let pr = |k: usize| {
        let out = run(&env, &format!("pr-{k}"), "10.0", "0.01");
        assert_eq!(out.status.code(), Some(0), "pr {k}: {}", stderr(&out));
        let report = env.json(&["runs", "show"]);
        case_of(&report, B1)["decision"]["repeats_then"]
            .as_u64()
            .expect("the reference's processes")
    };
    let before = pr(0);
    assert!(before > 3, "the reference pools the main nights: {before}");
    for k in 1..17 {
        let out = run(&env, &format!("pr-{k}"), "10.0", "0.01");
        assert_eq!(out.status.code(), Some(0), "pr {k}: {}", stderr(&out));
    }
    assert_eq!(pr(17), before, "17 pull-request runs later");
}

#[test]
fn a_slow_slide_fails_once_it_adds_up_past_the_threshold_and_names_where_it_began() {
    let env = noisy_env("history_runs = 3\nconfirm_repeats = 3");
    let mut failed = None;
    for night in 0..36u32 {
        // 0.3% slower every night: each night within the noise of the last.
        let step = 10.0 * 1.003f64.powi(i32::try_from(night).expect("small"));
        let out = run(&env, "main", &format!("{step:.6}"), "0.005");
        let text = stdout(&out);
        let total_pct = 100.0 * (1.0 - 1.0 / 1.003f64.powi(i32::try_from(night).expect("small")));
        if out.status.code() == Some(1) {
            assert!(
                total_pct > 5.0,
                "night {night} failed at a total slide of {total_pct:.1}%: {text}"
            );
            failed = Some((night, text));
            break;
        }
        assert_eq!(
            out.status.code(),
            Some(0),
            "night {night}: {text}\n{}",
            stderr(&out)
        );
    }
    let (night, text) = failed.expect("the slide fails the gate within 36 nights (10.2% in all)");
    let report = env.json(&["runs", "show"]);
    let case = case_of(&report, B1);
    assert_eq!(case["verdict"], "regressed", "{text}");
    assert_eq!(case["decision"]["slide"]["run_id"], 1, "{case}");
    let reason = case["decision"]["reasons"][0].as_str().expect("a reason");
    assert!(
        reason.starts_with("Slid ") && reason.contains("since this case's lineage began (run 1, "),
        "{reason}"
    );
    let drop = case["drop_pct"].as_f64().expect("a drop");
    assert!(drop > 5.0, "night {night}: {drop}");
    // It never becomes the baseline; accepting it starts a new lineage that passes.
    let list = env.json(&["baseline", "list"]);
    let pinned = list["baselines"][0]["run_id"].as_i64().expect("run id");
    assert!(pinned < report["run"]["id"].as_i64().expect("id"));
}

#[test]
fn with_fail_on_slide_off_a_slide_is_a_warning_on_a_passing_case() {
    let env = noisy_env("history_runs = 3\nconfirm_repeats = 3\nfail_on_slide = false");
    // 1.5% slower each night for seven nights (10% in all), each within the 5% threshold.
    let steps = [
        "10.0", "10.0", "10.0", "10.0", "10.0", "10.15", "10.3", "10.45", "10.6", "10.76", "10.92",
        "11.08",
    ];
    for (night, step) in steps.iter().enumerate() {
        let out = run(&env, "main", step, "0.005");
        assert_eq!(
            out.status.code(),
            Some(0),
            "night {night}: {}",
            stdout(&out)
        );
    }
    let report = env.json(&["runs", "show"]);
    let case = case_of(&report, B1);
    assert_ne!(case["verdict"], "regressed", "{case}");
    assert!(case["decision"]["slide"].is_null(), "{case}");
    let reason = case["decision"]["reasons"][0].as_str().expect("a reason");
    assert!(
        reason.starts_with("Slid ") && reason.ends_with("(a warning: `fail_on_slide = false`)"),
        "{reason}"
    );
}

#[test]
fn a_shift_the_whole_grid_shares_names_the_cause_the_run_supports_in_the_terminal_too() {
    let env = TestEnv::new();
    // Four cases, no canary (the standard test config disables it).
    let config = TestEnv::config_with("").replace("contexts = [4096]", "contexts = [1024, 4096]");
    env.write_config(&config);
    assert_eq!(env.run("main", &[]).status.code(), Some(0));
    // Every case 10% slower, with a torch upgrade reported by the harness.
    let out = env.run(
        "feature",
        &[("STEP_MS", "11.0"), ("TORCH_VERSION", "2.6.0")],
    );
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}\n{}", stderr(&out));
    let line = text
        .lines()
        .find(|l| l.starts_with("grid: "))
        .unwrap_or_else(|| panic!("a grid line in the terminal: {text}"));
    assert!(
        line.contains("4 of 4 cases dropped by a median")
            && line.contains(
                "the environment changed under them (torch 2.5.1 -> 2.6.0): the likely shared cause"
            ),
        "{line}"
    );
    assert!(!line.contains("more likely the machine"), "{line}");
    let report = env.json(&["runs", "show"]);
    let summary = report["summary"].as_str().expect("summary");
    assert!(
        summary.ends_with(&format!(
            "{}.",
            report["shared_shift"].as_str().expect("shift")
        )),
        "{summary}"
    );
}

#[test]
fn a_reference_too_thin_to_resolve_the_threshold_says_so_and_what_would() {
    // One first night of 3 processes at about 2% spread: after it (as after `baseline
    // accept`) the reference is those 3 processes, and no confirm step tonight can resolve a
    // 5% drop against them.
    let env = noisy_env("confirm_repeats = 6");
    let first = run(&env, "main", "10.0", "0.02");
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    let again = run(&env, "main", "10.0", "0.02");
    let err = stderr(&again);
    assert_eq!(again.status.code(), Some(0), "{}", stdout(&again));
    assert!(
        err.contains(&format!("{B1}: cannot resolve its 5% threshold: with the confirm step's 6 processes against the reference's 3 only a drop above")),
        "{err}"
    );
    assert!(
        err.contains("the reference is too thin (3 processes)")
            || err.contains("[gate] confirm_repeats = "),
        "{err}"
    );
    let report = env.json(&["runs", "show"]);
    let reach = &case_of(&report, B1)["decision"]["reach"];
    assert!(
        reach["confirmed_pct"].as_f64().is_some_and(|r| r > 5.0),
        "{reach}"
    );
}

#[test]
fn a_case_whose_confirm_step_resolves_the_threshold_gets_no_repeats_warning() {
    // The same spread, but twelve processes confirm a suspect against a reference of eight
    // nights: the first 3 processes alone cannot confirm 5%, the verdict that counts can.
    let env = noisy_env("confirm_repeats = 12");
    for _ in 0..8 {
        let night = run(&env, "main", "10.0", "0.02");
        assert_eq!(night.status.code(), Some(0), "{}", stderr(&night));
    }
    let again = run(&env, "main", "10.0", "0.02");
    let err = stderr(&again);
    assert!(!err.contains("cannot resolve"), "{err}");
    assert!(!err.contains("raise the suite's repeats"), "{err}");
    let report = env.json(&["runs", "show"]);
    let case = case_of(&report, B1);
    assert!(
        case["decision"]["reach"]["confirmed_pct"]
            .as_f64()
            .is_some_and(|r| r < 5.0),
        "{case}"
    );
}

/// The scripted harness with a stall every `STALL`th step (four times the typical step) when
/// `STALL` is set: the median holds while the stall figure moves.
const STALLING_HARNESS: &str = r#"#!/bin/sh
set -eu
out="$UTILGATE_OUT"
i=0
while [ "$i" -lt "$UTILGATE_WARMUP_STEPS" ]; do
  printf '{"step_ms": 40.0, "warmup": true}\n' >> "$out"; i=$((i+1))
done
awk -v base="$STEP_MS" -v n="$UTILGATE_STEPS" -v rep="$UTILGATE_REPEAT" -v stall="${STALL:-0}" \
  'BEGIN { for (i = 0; i < n; i++) { v = base * (1 + ((i * 7 + rep * 3) % 5) * 0.002); if (stall > 0 && i % stall == 0) v = 4 * v; printf "{\"step_ms\": %.6f}\n", v } }' >> "$out"
"#;

#[test]
fn a_case_the_stall_figure_fails_shows_that_figure_in_the_table_and_the_progress_line() {
    let env = TestEnv::new();
    let config = TestEnv::config_with("")
        .replace("batches = [1, 8]", "batches = [1]")
        .replace("steps = 20", "steps = 50");
    env.write_config(&config);
    env.write("harness.sh", STALLING_HARNESS);
    let first = env.run("main", &[("STEP_MS", "10.0")]);
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    let stalled = env.run("feature", &[("STEP_MS", "10.0"), ("STALL", "10")]);
    let (text, err) = (stdout(&stalled), stderr(&stalled));
    let report = env.json(&["runs", "show"]);
    let case = case_of(&report, B1);
    // Regressed, or inconclusive when the confirm step's spread is too wide: either way the
    // stall figure is what moved.
    assert!(
        ["regressed", "inconclusive"].contains(&case["verdict"].as_str().unwrap_or_default()),
        "{text}"
    );
    assert_eq!(case["drop_stat"], "stall", "{case}");
    let drop = case["drop_pct"].as_f64().expect("the stall figure's drop");
    // Five stalls of three extra steps each per 50: 30% of the throughput lost. Before, the
    // column showed the median's +0.0%.
    assert!(drop > 20.0, "{drop}");
    assert!(text.contains(&format!("+{drop:.1}% stall")), "{text}");
    assert!(
        err.contains(&format!(
            "{B1}: suspect (the stall figure: throughput fell {drop:.1}%)"
        )) || err.contains(&format!("{B1}: suspect (the stall figure: throughput fell")),
        "{err}"
    );
    // The detail line compares the median's figures, with the median's drop.
    assert!(
        text.contains(": drop +0.0%")
            || text.contains(": drop -0.0%")
            || text.contains(": drop +0."),
        "{text}"
    );
}

#[test]
fn a_case_that_errored_after_some_repeats_is_no_point_of_the_trend() {
    let env = TestEnv::new();
    let config = TestEnv::config_with("").replace("batches = [1, 8]", "batches = [1]");
    env.write_config(&config);
    for step in ["10.0", "10.0"] {
        let night = env.run("main", &[("STEP_MS", step)]);
        assert_eq!(night.status.code(), Some(0), "{}", stderr(&night));
    }
    // The third night's harness dies on its last repeat: the case is an error, with a median
    // of the repeats that finished.
    env.write(
        "harness.sh",
        &crate::env::SCRIPT_HARNESS.replace(
            "case \"${FAIL_MODE:-}\" in",
            "if [ \"$UTILGATE_REPEAT\" = \"2\" ]; then FAIL_MODE=exit3; fi\ncase \"${FAIL_MODE:-}\" in",
        ),
    );
    let broken = env.run("main", &[("STEP_MS", "14.0")]);
    assert_eq!(broken.status.code(), Some(2), "{}", stdout(&broken));
    let errored = env.json(&["runs", "show", "3"]);
    assert!(
        case_of(&errored, B1)["median_ms"].as_f64().is_some(),
        "the errored case keeps the figure of its finished repeats: {errored}"
    );
    env.write("harness.sh", crate::env::SCRIPT_HARNESS);
    let fourth = env.run("main", &[("STEP_MS", "10.0")]);
    assert_eq!(fourth.status.code(), Some(0), "{}", stderr(&fourth));
    let report = env.json(&["runs", "show"]);
    let trend = case_of(&report, B1)["trend"]
        .as_array()
        .expect("trend")
        .clone();
    let runs: Vec<i64> = trend.iter().filter_map(|p| p["run_id"].as_i64()).collect();
    assert!(
        !runs.contains(&3),
        "the errored night is in the trend: {runs:?}"
    );
    assert_eq!(runs.last(), Some(&4), "{runs:?}");
    let broken_report = env.json(&["runs", "show", "3"]);
    let own = case_of(&broken_report, B1)["trend"]
        .as_array()
        .expect("trend")
        .clone();
    assert!(
        own.iter().all(|p| p["run_id"].as_i64() != Some(3)),
        "an errored case's own figure is no trend point: {own:?}"
    );
}

#[test]
fn a_run_whose_repeats_are_mostly_process_start_up_says_so() {
    let env = TestEnv::new();
    env.write_config(&TestEnv::config_with("").replace("warmup_steps = 2", "warmup_steps = 0"));
    // 20 steps of 10 µs: the 0.2 ms of steps are a sliver of each process's start-up.
    let quick = env.run("main", &[("STEP_MS", "0.01")]);
    let err = stderr(&quick);
    // (Faster than the floor allows, the cases are invalid: the start-up line is said all the same.)
    assert!(quick.status.code().is_some(), "{err}");
    assert!(
        err.contains("process start-up took ") && err.contains("of the repeats' wall time"),
        "{err}"
    );
    assert!(
        !err.contains("evidence captured"),
        "no trace was taken: {err}"
    );
    // Steps that fill the process: no such line.
    let steady = env.run("main", &[("STEP_MS", "10.0")]);
    assert!(
        !stderr(&steady).contains("process start-up took"),
        "{}",
        stderr(&steady)
    );
}
