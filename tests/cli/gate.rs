//! The gate end to end with the scripted harness: baselines, every verdict, exit codes,
//! accept with a reason, export and import.

use crate::env::{TestEnv, stderr, stdout, verdict_of};

const B1: &str = "decode/seed-8b/bf16/decode/b1/c4096";
const B8: &str = "decode/seed-8b/bf16/decode/b8/c4096";

fn baseline_runs(env: &TestEnv) -> Vec<i64> {
    let list = env.json(&["baseline", "list"]);
    let mut runs: Vec<i64> = list["baselines"]
        .as_array()
        .expect("baselines")
        .iter()
        .map(|b| b["run_id"].as_i64().expect("run id"))
        .collect();
    runs.sort_unstable();
    runs
}

#[test]
fn baseline_moves_only_on_a_passing_run_of_the_baseline_branch() {
    let env = TestEnv::new();
    // A first run on a feature branch is judged but never becomes the baseline.
    assert_eq!(env.run("feature", &[]).status.code(), Some(0));
    assert!(baseline_runs(&env).is_empty());
    // The first passing run on main does.
    assert_eq!(env.run("main", &[]).status.code(), Some(0));
    assert_eq!(baseline_runs(&env), vec![2, 2]);
    // An unchanged run passes and moves the pointers forward.
    let out = env.run("main", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let report = env.json(&["runs", "show"]);
    assert_eq!(verdict_of(&report, B1), "pass");
    assert_eq!(verdict_of(&report, B8), "pass");
    assert_eq!(baseline_runs(&env), vec![3, 3]);
    // `--no-promote` keeps them.
    let out = env
        .cmd()
        .args(["run", "--branch", "main", "--no-promote"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(baseline_runs(&env), vec![3, 3]);
}

#[test]
fn a_ten_percent_slowdown_fails_the_gate_names_the_case_and_the_likely_cause() {
    let env = TestEnv::new();
    assert_eq!(env.run("main", &[]).status.code(), Some(0));
    let out = env.run(
        "upgrade-torch",
        &[("STEP_MS", "11.0"), ("TORCH_VERSION", "2.6.0")],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains(&format!("REGRESSED {B1}")), "{text}");
    assert!(
        text.contains("torch") && text.contains("2.5.1") && text.contains("2.6.0"),
        "{text}"
    );
    assert!(text.contains("gate: FAILED"), "{text}");
    let report = env.json(&["runs", "show"]);
    assert_eq!(verdict_of(&report, B1), "regressed");
    let drop = report["cases"][0]["drop_pct"].as_f64().expect("drop");
    assert!(
        (8.0..10.0).contains(&drop),
        "utilisation drop of a 10% slower step is ~9.1%: {drop}"
    );
    // A regression on the baseline branch never moves the baseline.
    assert_eq!(
        env.run("main", &[("STEP_MS", "11.0")]).status.code(),
        Some(1)
    );
    assert_eq!(baseline_runs(&env), vec![1, 1]);
    // `compare` recomputes the same verdicts from the stored raw samples.
    let out = env.cmd().args(["compare", "2"]).output().expect("runs");
    assert_eq!(out.status.code(), Some(1));
    let again = env.json(&["compare", "2"]);
    assert_eq!(verdict_of(&again, B1), "regressed");
    let against = env.json(&["compare", "2", "--against", "1"]);
    assert_eq!(verdict_of(&against, B8), "regressed");
}

#[test]
fn small_changes_pass_improvements_are_reported_and_impossible_results_are_invalid() {
    let env = TestEnv::new();
    assert_eq!(env.run("main", &[]).status.code(), Some(0));
    // 1% slower: under the practical threshold.
    assert_eq!(
        env.run("feature", &[("STEP_MS", "10.1")]).status.code(),
        Some(0)
    );
    assert_eq!(verdict_of(&env.json(&["runs", "show"]), B1), "pass");
    // 10% faster.
    assert_eq!(
        env.run("feature", &[("STEP_MS", "9.0")]).status.code(),
        Some(0)
    );
    assert_eq!(verdict_of(&env.json(&["runs", "show"]), B1), "improved");
    // Faster than the floor: physically impossible, so invalid, and the gate fails.
    let out = env.run("feature", &[("STEP_MS", "1.0")]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(verdict_of(&env.json(&["runs", "show"]), B1), "invalid");
}

#[test]
fn missing_cases_and_changed_floors_are_named() {
    let env = TestEnv::new();
    assert_eq!(env.run("main", &[]).status.code(), Some(0));
    env.write_config(&TestEnv::config_with("").replace("batches = [1, 8]", "batches = [1]"));
    let out = env.run("feature", &[]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "missing is reported, not failed by default"
    );
    let report = env.json(&["runs", "show"]);
    // `runs show` reads the stored run as `report` and `publish` do: the missing case too.
    let compared = env.json(&["compare"]);
    assert_eq!(verdict_of(&compared, B8), "missing");
    assert_eq!(verdict_of(&report, B8), "missing");
    assert_eq!(report["cases"].as_array().expect("cases").len(), 2);

    env.write_config(&TestEnv::config_with("").replace("params = 8.0e9", "params = 7.0e9"));
    let out = env.run("feature", &[]);
    let text = stdout(&out);
    assert!(text.to_lowercase().contains("floor changed"), "{text}");
    assert_eq!(
        verdict_of(&env.json(&["runs", "show"]), B1),
        "pass",
        "same step time"
    );
}

#[test]
fn a_failed_case_never_moves_a_baseline() {
    let env = TestEnv::new();
    assert_eq!(env.run("main", &[]).status.code(), Some(0));
    let out = env.run("main", &[("FAIL_MODE", "exit3")]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(baseline_runs(&env), vec![1, 1]);
}

#[test]
fn accept_moves_the_baseline_with_a_reason_and_keeps_history() {
    let env = TestEnv::new();
    assert_eq!(env.run("main", &[]).status.code(), Some(0));
    assert_eq!(
        env.run("main", &[("STEP_MS", "11.0")]).status.code(),
        Some(1)
    );
    let out = env
        .cmd()
        .args([
            "baseline",
            "accept",
            "b1/",
            "--run",
            "2",
            "--reason",
            "fp32 accumulation for accuracy",
        ])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(baseline_runs(&env), vec![1, 2]);
    let history = env.json(&["baseline", "history"]);
    let events = history["events"].as_array().expect("events");
    assert!(
        events
            .iter()
            .any(|e| e["reason"] == "fp32 accumulation for accuracy" && e["kind"] == "accept")
    );
    assert!(events.iter().filter(|e| e["kind"] == "promote").count() >= 2);
    // The accepted slowdown now passes; the other case still fails at the slower speed.
    let out = env.run("feature", &[("STEP_MS", "11.0")]);
    assert_eq!(out.status.code(), Some(1));
    let report = env.json(&["runs", "show"]);
    assert_eq!(verdict_of(&report, B1), "pass");
    assert_eq!(verdict_of(&report, B8), "regressed");
    // Accepting needs a reason and a run with a good result for the case.
    let out = env
        .cmd()
        .args(["baseline", "accept", "b1/", "--run", "99", "--reason", "x"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn export_then_import_into_a_fresh_store_gives_the_same_verdicts() {
    let env = TestEnv::new();
    assert_eq!(env.run("main", &[]).status.code(), Some(0));
    let out = env
        .cmd()
        .args(["baseline", "export", "--out", "baselines/h100-sxm.json"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let exported =
        std::fs::read_to_string(env.path().join("baselines/h100-sxm.json")).expect("file");
    assert!(
        exported.contains(B1) || exported.contains("\"suite\":\"decode\""),
        "{exported}"
    );

    let fresh = TestEnv::new();
    std::fs::copy(
        env.path().join("baselines/h100-sxm.json"),
        fresh.path().join("h100.json"),
    )
    .expect("copy");
    let out = fresh
        .cmd()
        .args(["baseline", "import", "h100.json"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    for (step, verdict) in [("10.0", "pass"), ("11.0", "regressed")] {
        let a = env.run("feature", &[("STEP_MS", step)]);
        let b = fresh.run("feature", &[("STEP_MS", step)]);
        assert_eq!(a.status.code(), b.status.code());
        let ra = env.json(&["runs", "show"]);
        let rb = fresh.json(&["runs", "show"]);
        for case in [B1, B8] {
            assert_eq!(verdict_of(&ra, case), verdict);
            assert_eq!(verdict_of(&rb, case), verdict);
        }
        assert_eq!(ra["cases"][0]["drop_pct"], rb["cases"][0]["drop_pct"]);
    }
    // A damaged file is refused with its name, and the store is untouched.
    fresh.write("broken.json", "{ not json");
    let before = fresh.json(&["baseline", "list"]);
    let out = fresh
        .cmd()
        .args(["baseline", "import", "broken.json"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("broken.json"));
    assert_eq!(fresh.json(&["baseline", "list"]), before);
}

#[test]
fn compare_judges_a_promoted_run_against_the_baseline_it_ran_against() {
    let env = TestEnv::new();
    assert_eq!(env.run("main", &[]).status.code(), Some(0));
    // 2% slower: passes, and becomes the baseline itself.
    assert_eq!(
        env.run("main", &[("STEP_MS", "10.2")]).status.code(),
        Some(0)
    );
    assert_eq!(baseline_runs(&env), vec![2, 2]);
    let first = env.json(&["runs", "show", "2"]);
    let again = env.json(&["compare", "2"]);
    assert_eq!(verdict_of(&again, B1), "pass");
    let drop = again["cases"][0]["drop_pct"].as_f64().expect("drop");
    assert!(
        (1.5..2.5).contains(&drop),
        "judged against run 1, not itself: {drop}"
    );
    assert_eq!(again["cases"][0]["drop_pct"], first["cases"][0]["drop_pct"]);
}

#[test]
fn export_of_a_store_with_two_gpus_writes_one_file_each_into_an_out_directory() {
    // The nightly example exports with `--out DIR/`; a store that has seen two GPUs used to
    // refuse (exit 2) instead of writing both.
    let env = TestEnv::new();
    assert_eq!(env.run("main", &[]).status.code(), Some(0));
    env.write_config(&TestEnv::config_with("").replace("h100-sxm", "h200"));
    assert_eq!(env.run("main", &[]).status.code(), Some(0));

    let out = env
        .cmd()
        .args(["baseline", "export", "--out", "exported/"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    for sku in ["h100-sxm", "h200"] {
        let text = std::fs::read_to_string(env.path().join(format!("exported/{sku}.json")))
            .unwrap_or_else(|e| panic!("{sku}: {e}: {}", stdout(&out)));
        assert!(text.contains(sku), "{text}");
    }

    // One file for two GPUs still cannot be: exit 2 with the way out.
    let out = env
        .cmd()
        .args(["baseline", "export", "--out", "both.json"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--out directory"), "{}", stderr(&out));
}
