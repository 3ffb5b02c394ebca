//! `utilgate import serve`: the stand-in's files as baseline, regression, changed seed and
//! failed requests; real vLLM and `SGLang` files with every field reaching the store and JSON.

use super::{bare, import, json, real, stub_run};
use crate::env::{stderr, stdout};

#[test]
fn stand_in_baseline_then_regression_then_changed_seed_then_failed_requests() {
    let env = bare();
    let base = stub_run(&env, "base", &["--noise-offset", "0"]);
    let out = import(&env, &base, &["--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let report = json(&out);
    assert_eq!(report["service"][0]["verdict"], "new");
    assert_eq!(
        report["service"][0]["repeats"].as_array().map(Vec::len),
        Some(3)
    );
    assert_eq!(
        report["gate"]["baselines_promoted"], true,
        "a clean run on main becomes the baseline"
    );

    // The same server again: passes.
    let same = stub_run(&env, "same", &["--noise-offset", "1"]);
    let out = import(&env, &same, &[]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}\n{}",
        stdout(&out),
        stderr(&out)
    );
    assert!(stdout(&out).contains(" pass "), "{}", stdout(&out));

    // TTFT p99 +30% (the slowest 5% of requests 1.3x slower): fails, naming the metric.
    let slow = stub_run(
        &env,
        "slow",
        &["--noise-offset", "2", "--ttft-tail-factor", "1.3"],
    );
    let out = import(&env, &slow, &["--format", "json"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let case = &json(&out)["service"][0];
    assert_eq!(case["verdict"], "regressed");
    let reason = case["reasons"][0].as_str().expect("reason");
    assert!(
        reason.starts_with("p99_ttft_ms: "),
        "the metric is named: {reason}"
    );
    let metric = |name: &str| {
        case["metrics"]
            .as_array()
            .expect("metrics")
            .iter()
            .find(|m| m["metric"] == name)
            .unwrap_or_else(|| panic!("{name} gated"))
            .clone()
    };
    let p99 = metric("p99_ttft_ms");
    let worse = p99["worse_pct"].as_f64().expect("worse");
    assert!((25.0..35.0).contains(&worse), "about +30%: {worse}");
    assert_eq!(p99["verdict"], "regressed");
    assert_eq!(
        metric("median_ttft_ms")["verdict"],
        "pass",
        "the median did not move"
    );

    // Another seed: other prompts, so not comparable.
    let reseeded = stub_run(&env, "seed", &["--noise-offset", "3", "--seed", "8"]);
    let out = import(&env, &reseeded, &["--format", "json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "inconclusive does not fail the gate"
    );
    let report = json(&out);
    let case = &report["service"][0];
    assert_eq!(case["verdict"], "inconclusive");
    let reason = case["reasons"][0].as_str().expect("reason");
    assert!(reason.contains("input tokens sent"), "{reason}");
    assert!(
        case["metrics"].as_array().is_some_and(Vec::is_empty),
        "never compared"
    );

    // The seed as vLLM's --metadata records it is named as such.
    let meta = stub_run(&env, "meta", &["--seed", "7", "--metadata", "seed=7"]);
    let out = import(&env, &meta, &[]);
    assert!(
        stdout(&out).contains("seed unset then, 7 now"),
        "{}",
        stdout(&out)
    );

    // Failed requests: invalid with the numbers, exit 1.
    let failing = stub_run(&env, "fail", &["--noise-offset", "4", "--failed", "3"]);
    let out = import(&env, &failing, &[]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("invalid"), "{text}");
    assert!(
        text.contains("397 of 400 requests completed, 3 failed"),
        "{text}"
    );
}

#[test]
fn a_regression_on_another_branch_fails_but_never_moves_the_baseline() {
    let env = bare();
    let base = stub_run(&env, "base", &[]);
    assert_eq!(import(&env, &base, &[]).status.code(), Some(0));
    let slow = stub_run(&env, "slow", &["--noise-offset", "1", "--ttft-ms", "150"]);
    let out = env
        .cmd()
        .args(["import", "serve"])
        .args(&slow)
        .args([
            "--db", "serve.db", "--branch", "feature", "--format", "json",
        ])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(json(&out)["gate"]["baselines_promoted"], false);
    // An unchanged server still passes against the original baseline.
    let same = stub_run(&env, "same", &["--noise-offset", "2"]);
    let out = import(&env, &same, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
}

#[test]
fn every_field_of_real_files_reaches_the_store_and_the_json_report_unchanged() {
    let env = bare();
    let files = [
        real("vllm_bench/vllm_bench_serve_v0.11plus_qwen2.5vl3b_rate1.json"),
        real("vllm_bench/llm-k8s__llama33-70b_tp8_pp1__serving_sharegpt_qps_inf.json"),
        real("vllm_bench/llm-k8s__deepseek-v2.5_tp8_pp2_ib__serving_sharegpt_qps_04.json"),
    ];
    let out = import(&env, &files, &["--format", "json"]);
    // The Qwen file has a failed request: invalid, so the gate fails.
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let report = json(&out);
    let conn = rusqlite::Connection::open(env.path().join("serve.db")).expect("store");
    for file in &files {
        let original: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(file).expect("read")).expect("json");
        let source = file.display().to_string();
        let reported = report["service"]
            .as_array()
            .expect("cases")
            .iter()
            .flat_map(|c| c["repeats"].as_array().expect("repeats").iter())
            .find(|r| r["source"] == source.as_str())
            .expect("the file is a repeat");
        assert_eq!(
            reported["fields"], original,
            "JSON report keeps {source} unchanged"
        );
        let stored: String = conn
            .query_row(
                "SELECT raw_json FROM serve_repeats WHERE source = ?1",
                [&source],
                |r| r.get(0),
            )
            .expect("stored repeat");
        let stored: serde_json::Value = serde_json::from_str(&stored).expect("json");
        assert_eq!(stored, original, "the store keeps {source} unchanged");
        let p99: f64 = conn
            .query_row(
                "SELECT m.value FROM serve_metrics m JOIN serve_repeats r
                   ON r.result_id = m.result_id AND r.repeat = m.repeat
                 WHERE r.source = ?1 AND m.metric = 'p99_ttft_ms'",
                [&source],
                |r| r.get(0),
            )
            .expect("metric row");
        assert_eq!(Some(p99), original["p99_ttft_ms"].as_f64(), "bit for bit");
    }
    let qwen = report["service"]
        .as_array()
        .expect("cases")
        .iter()
        .find(|c| c["case"] == "serve/./Qwen2.5-VL-3B-Instruct/rate=1")
        .expect("qwen case");
    assert_eq!(qwen["verdict"], "invalid");
}

#[test]
fn sglang_json_lines_import_as_a_grid_with_the_latency_split_reading() {
    let env = bare();
    let file = real("sglang_bench/datacrunch__llama_3_3_70b_online_output.jsonl");
    let out = import(&env, std::slice::from_ref(&file), &[]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "no model id in this SGLang output"
    );
    assert!(
        stderr(&out).contains("pass --model NAME"),
        "{}",
        stderr(&out)
    );
    let out = import(&env, &[file], &["--model", "llama-3.3-70b"]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    assert!(
        text.contains("serve/llama-3.3-70b/rate=16/in=1024/out=1024"),
        "{text}"
    );
    assert!(
        text.contains("rises 7.2x from rate 1 to rate 16") && text.contains("not kernels"),
        "{text}"
    );
}

#[test]
fn a_missing_required_key_names_the_file_and_key_and_stores_nothing() {
    let env = bare();
    let bad = env.write(
        "bad.json",
        r#"{"endpoint_type": "openai", "model_id": "m", "request_rate": 1, "duration": 3}"#,
    );
    let out = import(&env, &[bad], &[]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("bad.json: missing required key `completed`"),
        "{err}"
    );
    assert!(
        !env.path().join("serve.db").exists(),
        "validated before the store was opened"
    );
}

/// #28 item 3: a service run recorded for a pull request (`--pr`) on a branch named `main` is
/// not promoted; and a promotion onto it that a pull request's own store holds (copied in)
/// never becomes the baseline: main's next import is judged against main's.
#[test]
fn a_pull_requests_service_run_on_a_branch_named_main_never_becomes_the_baseline() {
    let env = bare();
    let base = stub_run(&env, "base", &["--noise-offset", "0"]);
    assert_eq!(import(&env, &base, &[]).status.code(), Some(0));
    let fast = stub_run(&env, "fast", &["--noise-offset", "1", "--ttft-ms", "20"]);
    let out = import(&env, &fast, &["--pr", "5", "--format", "json"]);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", stderr(&out));
    assert_eq!(
        json(&out)["gate"]["baselines_promoted"],
        false,
        "{}",
        stdout(&out)
    );
    // The promotion a pull request's store would hold, as `store copy` carries it in.
    let db = rusqlite::Connection::open(env.path().join("serve.db")).expect("open");
    let moved = db
        .execute(
            "INSERT INTO serve_baseline_moves (series_id, result_id, kind, reason, moved_at_ns)
             SELECT r.series_id, r.id, 'promote', 'run passed the gate on main', 1
             FROM serve_results r JOIN runs u ON u.id = r.run_id WHERE u.pr_number = 5",
            [],
        )
        .expect("a promotion onto the pull request's result");
    assert_eq!(moved, 1);
    drop(db);
    let same = stub_run(&env, "same", &["--noise-offset", "2"]);
    let out = import(&env, &same, &[]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "judged against the fast pull request: {}",
        stdout(&out)
    );
    assert!(stdout(&out).contains(" pass "), "{}", stdout(&out));
}
