//! A long history read through the binary (#29 item 2): the reads that serve one case or one run
//! are bounded in SQL by what they show, so pull requests stored after the nightlies never crowd
//! the nightlies out of `history`, and an old run's report keeps the trend before it. The store
//! is filled through the library's store API (70 runs through `run` would take minutes).

use std::collections::BTreeMap;

use jiff::Timestamp;
use utilgate::case::{CaseKey, Phase, Verdict};
use utilgate::store::{NewResult, NewRun, Store};

use crate::env::{TestEnv, stderr, stdout};

const B1: &str = "decode/seed-8b/bf16/decode/b1/c4096";

fn b1() -> CaseKey {
    CaseKey {
        suite: "decode".into(),
        model: "seed-8b".into(),
        precision: "bf16".into(),
        phase: Phase::Decode,
        batch: 1,
        context: 4096,
        axes: utilgate::case::Axes::default(),
        tp: 1,
        ep: 1,
    }
}

fn stored_run(i: i64, branch: &str, median_ms: f64) -> NewRun {
    let t = Timestamp::from_second(1_700_000_000 + i * 3_600).expect("in range");
    let on_main = branch == "main";
    NewRun {
        started_at: t,
        finished_at: t + jiff::SignedDuration::from_mins(5),
        git_sha: Some(format!("{i:02}aaaaaaaaaaaaaaaa")),
        branch: Some(branch.into()),
        trigger: Some(if on_main { "schedule" } else { "pull_request" }.into()),
        pr_number: None,
        gpu_sku: "h100-sxm".into(),
        gpu_json: None,
        host: Some("ci-1".into()),
        utilgate_version: "0.1.0".into(),
        config_json: None,
        promote_reason: "passed the gate on main".into(),
        canary_json: None,
        group: None,
        uid: None,
        budget_night: None,
        results: vec![NewResult {
            key: b1(),
            verdict: Some(Verdict::Pass),
            error: None,
            floor_ms: Some(4.5),
            floor_json: None,
            median_ms: Some(median_ms),
            utilisation: Some(4.5 / median_ms),
            mbu: None,
            mfu: None,
            summary_json: None,
            decision_json: None,
            repeats_ms: vec![vec![median_ms; 20]; 3],
            warmup_ms: vec![],
            env: BTreeMap::from([("torch".to_owned(), "2.5.1".to_owned())]),
            gpu_state_json: None,
            stderr_tail: None,
            promote: on_main,
            budget: None,
            costs: Vec::new(),
            quality: std::collections::BTreeMap::new(),
            speculative: None,
            energy: Vec::new(),
        }],
    }
}

/// Six nightlies on main (runs 1-6), then 70 pull-request runs of the same case (7-76).
fn nightlies_then_pull_requests(env: &TestEnv) {
    std::fs::create_dir_all(env.db().parent().expect("dir")).expect("mkdir");
    let mut store =
        Store::open(&env.db(), std::time::Duration::from_secs(5)).expect("opens the store");
    for i in 0..6 {
        store
            .insert_run(&stored_run(i, "main", 10.0 + 0.01 * i as f64))
            .expect("stores a nightly");
    }
    for i in 6..76 {
        store
            .insert_run(&stored_run(i, &format!("pr-{i}"), 10.5))
            .expect("stores a pull request's run");
    }
}

#[test]
fn pull_requests_never_crowd_the_nightlies_out_of_history() {
    let env = TestEnv::new();
    nightlies_then_pull_requests(&env);
    let out = env
        .cmd()
        .args(["history", B1, "--nights", "6"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains(&format!("{B1} on h100-sxm: 6 nights on main")),
        "{text}"
    );
}

#[test]
fn an_old_runs_report_keeps_the_trend_before_it() {
    let env = TestEnv::new();
    nightlies_then_pull_requests(&env);
    let report = env.json(&["runs", "show", "3"]);
    let case = &report["cases"][0];
    assert_eq!(case["case"], B1, "{report}");
    let runs: Vec<i64> = case["trend"]
        .as_array()
        .expect("a trend")
        .iter()
        .map(|p| p["run_id"].as_i64().expect("run id"))
        .collect();
    assert_eq!(runs, [1, 2, 3], "the nightlies before run 3, then run 3");
}
