//! `utilgate import serve --sweep rate`: a real three-point vLLM sweep (llm-k8s's Llama 3.3 70B
//! on 8 GPUs at 4, 16 and inf requests/s, with per-request arrays) stored as one sweep and
//! judged on its frontier: a loss in the middle of the curve only, per-point noise, improved
//! extremes around a regressed middle, and the bad inputs a sweep refuses.

use std::path::PathBuf;

use super::{bare, import, json, real};
use crate::env::{TestEnv, stderr, stdout};

const RATES: [&str; 3] = ["04", "16", "inf"];

fn real_sweep() -> Vec<PathBuf> {
    RATES
        .iter()
        .map(|q| {
            real(&format!(
                "vllm_bench/llm-k8s__llama33-70b_tp8_pp1__serving_sharegpt_qps_{q}.json"
            ))
        })
        .collect()
}

/// The real sweep with each point's output throughput and median TPOT scaled, written as
/// `name-QPS.json` (every other field, the per-request arrays included, as in the file).
fn scaled(env: &TestEnv, name: &str, throughput: [f64; 3], tpot: [f64; 3]) -> Vec<PathBuf> {
    real_sweep()
        .iter()
        .enumerate()
        .map(|(i, file)| {
            let text = std::fs::read_to_string(file).expect("fixture");
            let mut v: serde_json::Value = serde_json::from_str(&text).expect("json");
            for (key, factor) in [
                ("output_throughput", throughput[i]),
                ("median_tpot_ms", tpot[i]),
            ] {
                let x = v[key].as_f64().expect("figure");
                v[key] = serde_json::json!(x * factor);
            }
            let path = env.path().join(format!("{name}-{}.json", RATES[i]));
            std::fs::write(&path, v.to_string()).expect("write");
            path
        })
        .collect()
}

fn import_sweep(env: &TestEnv, files: &[PathBuf]) -> std::process::Output {
    import(
        env,
        files,
        &["--sweep", "rate", "--gpus", "8", "--format", "json"],
    )
}

/// The service case of a JSON report (a sweep is one case).
fn only_case(report: &serde_json::Value) -> serde_json::Value {
    let cases = report["service"].as_array().expect("service cases");
    assert_eq!(cases.len(), 1, "one sweep, one case: {cases:?}");
    cases[0].clone()
}

/// The interactivity level of the middle point (16 requests/s), as the level metric names it.
fn middle_level() -> String {
    let text = std::fs::read_to_string(&real_sweep()[1]).expect("fixture");
    let v: serde_json::Value = serde_json::from_str(&text).expect("json");
    let tpot = v["median_tpot_ms"].as_f64().expect("tpot");
    format!("tok/s/gpu at {:.1} tok/s/user", 1000.0 / tpot)
}

/// The baseline: the real sweep, imported as one sweep on main.
fn baseline(env: &TestEnv) {
    let out = import_sweep(env, &real_sweep());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let case = only_case(&json(&out));
    assert_eq!(
        case["case"],
        "serve/meta-llama/Llama-3.3-70B-Instruct/sweep=rate"
    );
    assert_eq!(case["verdict"], "new");
    assert_eq!(case["repeats"].as_array().map(Vec::len), Some(3));
    let points = case["frontier"]["now"]["points"]
        .as_array()
        .expect("frontier");
    assert_eq!(
        points.len(),
        3,
        "every point of this sweep is on its frontier"
    );
}

#[test]
fn a_real_sweep_is_stored_as_one_sweep_with_its_frontier() {
    let env = bare();
    baseline(&env);
    let conn = rusqlite::Connection::open(env.path().join("serve.db")).expect("store");
    let rows: Vec<(String, i64, f64, f64)> = conn
        .prepare(
            "SELECT p.point, p.gpus, p.throughput_tok_s_gpu, p.interactivity_tok_s_user
             FROM serve_sweep_points p JOIN serve_repeats r
               ON r.result_id = p.result_id AND r.repeat = p.repeat
             ORDER BY r.repeat",
        )
        .expect("query")
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .expect("rows")
        .collect::<Result<_, _>>()
        .expect("rows");
    assert_eq!(rows.len(), 3);
    for (file, (point, gpus, per_gpu, interactivity)) in real_sweep().iter().zip(&rows) {
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(file).expect("read")).expect("json");
        let rate = match &v["request_rate"] {
            serde_json::Value::String(s) => s.clone(),
            n => format!("{:.0}", n.as_f64().expect("rate")),
        };
        assert_eq!(point, &rate);
        assert_eq!(*gpus, 8);
        let output = v["output_throughput"].as_f64().expect("throughput");
        assert!(
            (per_gpu - output / 8.0).abs() < 1e-9,
            "{per_gpu} vs {output}/8"
        );
        let tpot = v["median_tpot_ms"].as_f64().expect("tpot");
        assert!((interactivity - 1000.0 / tpot).abs() < 1e-9);
    }
    let sweep: String = conn
        .query_row("SELECT sweep FROM serve_series", [], |r| r.get(0))
        .expect("one series");
    assert_eq!(sweep, "rate");
}

#[test]
fn eight_percent_less_throughput_in_the_middle_only_is_regressed_at_that_level() {
    let env = bare();
    baseline(&env);
    let slow = scaled(&env, "slow", [1.0, 0.92, 1.0], [1.0; 3]);
    let out = import_sweep(&env, &slow);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let case = only_case(&json(&out));
    assert_eq!(case["verdict"], "regressed");
    let lead = case["reasons"][0].as_str().expect("reason");
    assert!(lead.starts_with(&middle_level()), "names the level: {lead}");
    assert!(lead.contains("8.0% lower"), "{lead}");
    let metrics = case["metrics"].as_array().expect("levels");
    assert_eq!(metrics.len(), 3, "one per baseline frontier point");
    for m in metrics {
        let want = if m["metric"] == middle_level().as_str() {
            "regressed"
        } else {
            "pass"
        };
        assert_eq!(m["verdict"], want, "{}", m["reason"]);
    }
    let shown = {
        let out = import(&env, &slow, &["--sweep", "rate", "--gpus", "8"]);
        stdout(&out)
    };
    assert!(shown.contains("regressed"), "{shown}");
}

#[test]
fn one_percent_noise_per_point_passes() {
    let env = bare();
    baseline(&env);
    let noisy = scaled(&env, "noisy", [1.01, 0.99, 1.008], [0.995, 1.01, 0.992]);
    let out = import_sweep(&env, &noisy);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}\n{}",
        stdout(&out),
        stderr(&out)
    );
    let case = only_case(&json(&out));
    assert_eq!(case["verdict"], "pass", "{:?}", case["reasons"]);
}

#[test]
fn improved_extremes_around_a_regressed_middle_are_regressed() {
    let env = bare();
    baseline(&env);
    let mixed = scaled(&env, "mixed", [1.06, 0.92, 1.06], [1.0; 3]);
    let out = import_sweep(&env, &mixed);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let case = only_case(&json(&out));
    assert_eq!(case["verdict"], "regressed");
    assert!(
        case["reasons"][0]
            .as_str()
            .is_some_and(|r| r.starts_with(&middle_level())),
        "{:?}",
        case["reasons"]
    );
    let improved = case["metrics"]
        .as_array()
        .expect("levels")
        .iter()
        .filter(|m| m["verdict"] == "improved" || m["verdict"] == "pass")
        .count();
    assert_eq!(
        improved, 2,
        "the extremes did not regress: {:?}",
        case["metrics"]
    );
}

#[test]
fn a_sweep_refuses_a_file_off_the_frontier_and_a_single_point() {
    let env = bare();
    let text = std::fs::read_to_string(&real_sweep()[0]).expect("fixture");
    let mut v: serde_json::Value = serde_json::from_str(&text).expect("json");
    for key in ["median_tpot_ms", "mean_tpot_ms", "median_itl_ms"] {
        v.as_object_mut().expect("object").remove(key);
    }
    let bad = env.path().join("no-tpot.json");
    std::fs::write(&bad, v.to_string()).expect("write");
    let mut files = real_sweep();
    files[0] = bad;
    let out = import_sweep(&env, &files);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("no-tpot.json") && err.contains("median_tpot_ms"),
        "{err}"
    );
    assert!(err.contains("hint:"), "{err}");
    let out = import_sweep(&env, &real_sweep()[2..]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("a frontier needs at least two"),
        "{}",
        stderr(&out)
    );
}

/// A sweeping suite: the stand-in serves each rate with its own inter-token latency (a
/// server's decode steps slow as its batch grows), `mid_itl_ms` at 8 requests/s.
fn sweep_suite(mid_itl_ms: f64) -> String {
    let stub = super::STUB;
    format!(
        r#"
[gate]
baseline_branch = "main"

[[suite]]
name = "sweep"
kind = "serve"
sweep = "request_rate"
gpus = 2
models = ["stub-model"]
request_rates = [2.0, 8.0, inf]
input_lens = [256]
output_lens = [32]
num_prompts = 400
seed = 7
repeats = 2
timeout_s = 120
command = '''
case {{{{ request_rate }}}} in 2) itl=15 ;; 8) itl={mid_itl_ms} ;; *) itl=30 ;; esac
python3 {stub} --model {{{{ model }}}} --request-rate {{{{ request_rate }}}} --random-input-len {{{{ input_len }}}} --random-output-len {{{{ output_len }}}} --num-prompts {{{{ num_prompts }}}} --seed {{{{ seed }}}} --itl-ms $itl --sigma 0.02 --result-filename {{{{ result_file }}}}
'''
"#
    )
}

#[test]
fn a_sweeping_suite_measures_each_point_and_judges_one_frontier() {
    let env = TestEnv::new();
    env.write_config(&sweep_suite(20.0));
    let out = super::suite_run(&env);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let case = only_case(&json(&out));
    assert_eq!(case["case"], "sweep/stub-model/sweep=rate/in=256/out=32");
    assert_eq!(case["verdict"], "new", "{:?}", case["reasons"]);
    assert_eq!(
        case["repeats"].as_array().map(Vec::len),
        Some(6),
        "two runs of three points"
    );
    assert_eq!(
        case["frontier"]["now"]["points"].as_array().map(Vec::len),
        Some(3)
    );
    let conn = rusqlite::Connection::open(env.path().join(".utilgate/utilgate.db")).expect("db");
    let runs: Vec<(String, i64, i64)> = conn
        .prepare("SELECT point, sweep_repeat, gpus FROM serve_sweep_points ORDER BY repeat")
        .expect("query")
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .expect("rows")
        .collect::<Result<_, _>>()
        .expect("rows");
    let mut seen: Vec<(String, i64)> = runs.iter().map(|(p, r, _)| (p.clone(), *r)).collect();
    seen.sort();
    assert_eq!(
        seen,
        [
            ("2".to_owned(), 0),
            ("2".to_owned(), 1),
            ("8".to_owned(), 0),
            ("8".to_owned(), 1),
            ("inf".to_owned(), 0),
            ("inf".to_owned(), 1)
        ]
    );
    assert!(
        runs.iter().all(|(_, _, g)| *g == 2),
        "the suite's gpus: {runs:?}"
    );

    // The same server: passes. Then the middle point's decode 25% slower: regressed there.
    let out = super::suite_run(&env);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    env.write_config(&sweep_suite(25.0));
    let out = super::suite_run(&env);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let case = only_case(&json(&out));
    assert_eq!(case["verdict"], "regressed", "{:?}", case["reasons"]);
    let level = case["frontier"]["levels"][1]
        .as_f64()
        .expect("middle level");
    assert!(
        case["reasons"][0]
            .as_str()
            .is_some_and(|r| r.starts_with(&format!("tok/s/gpu at {level:.1} tok/s/user"))),
        "{:?}",
        case["reasons"]
    );
}

#[test]
fn the_html_report_draws_both_frontiers_with_the_loss_shaded() {
    let env = bare();
    baseline(&env);
    let slow = scaled(&env, "slow", [1.0, 0.92, 1.0], [1.0; 3]);
    let out = import_sweep(&env, &slow);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let out = env
        .cmd()
        .args([
            "report", "--db", "serve.db", "--format", "html", "--out", "r.html",
        ])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let html = std::fs::read_to_string(env.path().join("r.html")).expect("report");
    let chart = html
        .find("throughput per GPU against interactivity")
        .map(|at| &html[at..])
        .expect("a frontier chart");
    let svg = &chart[chart.find("<svg").expect("svg")..chart.find("</svg>").expect("end")];
    assert!(
        svg.contains("<title>then</title>") && svg.contains("<title>now</title>"),
        "{svg}"
    );
    assert!(svg.contains(r#"class="loss""#), "the loss is shaded: {svg}");
    assert!(svg.contains(">31.6<"), "the middle level is marked: {svg}");
    assert!(
        html.contains(r#"<td colspan="4">a sweep: see its frontier chart below</td>"#),
        "the sweep's row points at its chart, no empty latencies"
    );
}

/// The decision's figures of a judged sweep, lowest level first: (level, then, now, worse %).
fn decided_levels(case: &serde_json::Value) -> Vec<(f64, f64, f64, f64)> {
    let levels = case["frontier"]["levels"].as_array().expect("levels");
    let mut rows: Vec<(f64, f64, f64, f64)> = levels
        .iter()
        .map(|l| {
            let level = l.as_f64().expect("level");
            let m = case["metrics"]
                .as_array()
                .expect("metrics")
                .iter()
                .find(|m| m["metric"] == format!("tok/s/gpu at {level:.1} tok/s/user").as_str())
                .expect("a decision per level");
            let f = |k: &str| m[k].as_f64().expect(k);
            (level, f("then"), f("now"), f("worse_pct"))
        })
        .collect();
    rows.sort_by(|a, b| a.0.total_cmp(&b.0));
    rows
}

#[test]
fn the_pr_comment_draws_the_frontier_as_a_mermaid_chart_with_the_decisions_figures() {
    let env = bare();
    baseline(&env);
    let slow = scaled(&env, "slow", [1.0, 0.92, 1.0], [1.0; 3]);
    let out = import_sweep(&env, &slow);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let rows = decided_levels(&only_case(&json(&out)));
    assert_eq!(rows.len(), 3);

    let out = env
        .cmd()
        .args(["report", "--db", "serve.db", "--format", "markdown"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let md = stdout(&out);
    let at = md
        .find("```mermaid\nxychart-beta\n")
        .unwrap_or_else(|| panic!("a mermaid chart: {md}"));
    let chart = &md[at..];
    let chart = &chart[..chart[3..].find("```").expect("the fence closes") + 3];
    let t = |x: f64| format!("{x:.1}");
    let categories: Vec<String> = rows
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let mark = if i == 1 { " largest loss" } else { "" };
            format!("\"{}{mark}\"", t(r.0))
        })
        .collect();
    assert!(
        chart.contains(&format!(
            "x-axis \"interactivity (tok/s per user)\" [{}]",
            categories.join(", ")
        )),
        "{chart}"
    );
    let then: Vec<String> = rows.iter().map(|r| t(r.1)).collect();
    let now: Vec<String> = rows.iter().map(|r| t(r.2)).collect();
    assert!(
        chart.contains(&format!(
            "    line [{}]\n    line [{}]\n",
            then.join(", "),
            now.join(", ")
        )),
        "baseline's line, then tonight's: {chart}"
    );
    // The table: the same figures, the change per level, the largest loss marked.
    for (i, r) in rows.iter().enumerate() {
        let level = if i == 1 {
            format!("**{}** (largest loss)", t(r.0))
        } else {
            t(r.0)
        };
        let verdict = if i == 1 { "🔴 regressed" } else { "✅ pass" };
        let row = format!(
            "| {level} | {} | {} | {:+.1}% | {verdict} |",
            t(r.1),
            t(r.2),
            -r.3 + 0.0
        );
        assert!(md.contains(&row), "{row} in {md}");
    }
    assert!(
        md.contains("| **31.6** (largest loss) | 169.3 | 155.8 | -8.0% | 🔴 regressed |"),
        "the figures docs/serve.md states: {md}"
    );
    assert!(
        !md.contains("<svg"),
        "GitHub strips inline SVG from comments"
    );
}

#[test]
fn a_sweeps_terminal_row_points_at_its_frontier_with_the_decisions_figures() {
    let env = bare();
    baseline(&env);
    let slow = scaled(&env, "slow", [1.0, 0.92, 1.0], [1.0; 3]);
    let decided = decided_levels(&only_case(&json(&import_sweep(&env, &slow))));
    // The same files again, shown in the terminal: judged against the same baseline.
    let out = import(
        &env,
        &slow,
        &["--sweep", "rate", "--gpus", "8", "--color", "never"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = stdout(&out);
    let row = text
        .lines()
        .find(|l| l.contains("sweep=rate") && l.contains("regressed"))
        .unwrap_or_else(|| panic!("the sweep's row: {text}"));
    assert!(row.contains("see frontier"), "{row}");
    assert!(
        row.contains("-/-"),
        "no request count is stated for a sweep as a whole: {row}"
    );
    let (level, then, now, worse) = decided[1];
    let line = format!(
        "at {level:.1} tok/s/user {then:.1} -> {now:.1} ({:+.1}%, largest loss)",
        -worse
    );
    assert!(text.contains(&line), "{line} in {text}");
    assert!(
        text.contains("frontier, output tok/s per GPU then -> now: "),
        "{text}"
    );
}
