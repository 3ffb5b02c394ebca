//! `utilgate import serve` of the other load generators' own files (`AIPerf`, `GuideLLM`,
//! inference-perf, `MLPerf` `LoadGen`; `tests/fixtures/loadgen/`) into a real store, read back by
//! `utilgate runs show`: every figure as the file states it, in ms.

use std::path::PathBuf;

use serde_json::Value;

use super::{bare, import, json, real};
use crate::env::{TestEnv, stderr, stdout};

fn shown(env: &TestEnv) -> Value {
    let out = env
        .cmd()
        .args(["runs", "show", "--db", "serve.db", "--format", "json"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    json(&out)
}

fn file_json(path: &PathBuf) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("read")).expect("json")
}

fn num(v: &Value, path: &[&str]) -> f64 {
    path.iter()
        .fold(v, |v, k| &v[*k])
        .as_f64()
        .unwrap_or_else(|| panic!("{} is a number", path.join(".")))
}

fn assert_close(got: &Value, want: f64, what: &str) {
    let got = got.as_f64().unwrap_or_else(|| panic!("{what}: {got}"));
    assert!(
        (got - want).abs() <= 1e-9 * want.abs().max(1.0),
        "{what}: {got} shown, {want} in the file"
    );
}

fn case<'a>(run: &'a Value, name: &str) -> &'a Value {
    run["service"]
        .as_array()
        .expect("service cases")
        .iter()
        .find(|c| c["case"] == name)
        .unwrap_or_else(|| panic!("case {name} in {}", run["service"]))
}

#[test]
fn aiperf_and_guidellm_files_import_and_runs_show_their_figures() {
    let env = bare();
    let aiperf = real("loadgen/aiperf/rate8_profile_export_aiperf.json");
    let out = import(&env, std::slice::from_ref(&aiperf), &["--suite", "aiperf"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let run = shown(&env);
    let file = file_json(&aiperf);
    let c = case(&run, "aiperf/utilgate/tiny-stub/rate=8/in=64/out=16");
    assert_eq!(c["repeats"][0]["schema"], "aiperf_profile_export");
    assert_eq!(c["repeats"][0]["fields"], file, "every field stored");
    let means = &c["means"];
    assert_close(
        &means["median_ttft_ms"],
        num(&file, &["time_to_first_token", "p50"]),
        "TTFT",
    );
    assert_close(
        &means["p99_itl_ms"],
        num(&file, &["inter_chunk_latency", "p99"]),
        "ITL",
    );
    assert_close(
        &means["mean_tpot_ms"],
        num(&file, &["inter_token_latency", "avg"]),
        "TPOT",
    );
    assert_close(
        &means["output_throughput"],
        num(&file, &["output_token_throughput", "avg"]),
        "output tokens/s",
    );
    // The terminal table shows the case with its TTFT.
    let table = env
        .cmd()
        .args(["runs", "show", "--db", "serve.db", "--color", "never"])
        .output()
        .expect("runs");
    let text = stdout(&table);
    let ttft = format!("{:.1}", num(&file, &["time_to_first_token", "p50"]));
    assert!(
        text.contains("aiperf/utilgate/tiny-stub/rate=8") && text.contains(&ttft),
        "{text}"
    );

    // GuideLLM: one case per benchmark of the report.
    let guidellm = real("loadgen/guidellm/constant_rates_benchmarks.json");
    let out = import(
        &env,
        std::slice::from_ref(&guidellm),
        &["--suite", "guidellm"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let run = shown(&env);
    let file = file_json(&guidellm);
    for (i, rate) in ["4", "8"].iter().enumerate() {
        let b = &file["benchmarks"][i];
        let c = case(
            &run,
            &format!("guidellm/utilgate/tiny-stub/rate={rate}/in=64/out=16"),
        );
        let ttft = ["metrics", "time_to_first_token_ms", "successful"];
        let p99 = num(b, &[ttft[0], ttft[1], ttft[2], "percentiles", "p99"]);
        assert_close(&c["means"]["p99_ttft_ms"], p99, "GuideLLM p99 TTFT");
        let e2el = num(b, &["metrics", "request_latency", "successful", "median"]) * 1000.0;
        assert_close(
            &c["means"]["median_e2el_ms"],
            e2el,
            "GuideLLM latency in ms",
        );
    }
}

#[test]
fn inference_perf_and_mlperf_files_need_a_model_and_then_import() {
    let env = bare();
    let stage = real("loadgen/inference_perf/stage_1_lifecycle_metrics.json");
    let out = import(&env, std::slice::from_ref(&stage), &[]);
    assert_eq!(out.status.code(), Some(2), "the report names no model");
    assert!(
        stderr(&out).contains("pass --model NAME"),
        "{}",
        stderr(&out)
    );
    let out = import(&env, std::slice::from_ref(&stage), &["--model", "tiny"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let file = file_json(&stage);
    let run = shown(&env);
    let c = case(&run, "serve/tiny/rate=8");
    let ttft = ["successes", "latency", "time_to_first_token", "median"];
    assert_close(
        &c["means"]["median_ttft_ms"],
        num(&file, &ttft) * 1000.0,
        "TTFT in ms",
    );

    let summary = real("loadgen/mlperf/server_mlperf_log_summary.txt");
    let out = import(
        &env,
        std::slice::from_ref(&summary),
        &["--model", "tiny", "--suite", "mlperf"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = std::fs::read_to_string(&summary).expect("read");
    let ns = |key: &str| -> f64 {
        text.lines()
            .filter_map(|l| l.split_once(':'))
            .find(|(k, _)| k.trim() == key)
            .and_then(|(_, v)| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("{key}"))
    };
    let run = shown(&env);
    let c = case(&run, "mlperf/tiny/rate=100");
    let p99 = ns("99.00 percentile first token latency (ns)") / 1e6;
    assert_close(&c["means"]["p99_ttft_ms"], p99, "MLPerf p99 TTFT");
    assert_eq!(
        c["repeats"][0]["fields"]["mlperf_log_summary"],
        text.as_str()
    );
}

#[test]
fn a_renamed_field_is_an_error_naming_the_file_the_field_and_the_fix() {
    let env = bare();
    let text = std::fs::read_to_string(real("loadgen/guidellm/constant_rates_benchmarks.json"))
        .expect("read")
        .replace("\"request_totals\"", "\"request_counts\"");
    let path = env.write("renamed.json", &text);
    let out = import(&env, &[path], &[]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("renamed.json: benchmarks[0]: GuideLLM result: `metrics.request_totals.successful` is missing"),
        "{err}"
    );
    assert!(
        err.contains("hint: ") && err.contains("guidellm 0.8"),
        "{err}"
    );
    assert!(
        !env.path().join("serve.db").exists(),
        "a bad file fails before the store is touched"
    );
}

/// Files that state no request rate (`AIPerf`'s CSV, an inference-perf summary over several
/// stages) are keyed `rate=unknown`, never `rate=inf` (all requests at once), and a rate sweep
/// refuses them, naming the file that states the rate.
#[test]
fn files_that_state_no_rate_are_keyed_unknown_and_refused_by_a_rate_sweep() {
    let env = bare();
    let csv = real("loadgen/aiperf/rate8_profile_export_aiperf.csv");
    let summary = real("loadgen/inference_perf/summary_lifecycle_metrics.json");
    let out = import(
        &env,
        &[csv.clone(), summary.clone()],
        &["--model", "tiny", "--format", "json"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let run = json(&out);
    let names: Vec<&str> = run["service"]
        .as_array()
        .expect("cases")
        .iter()
        .filter_map(|c| c["case"].as_str())
        .collect();
    assert_eq!(names, ["serve/tiny/rate=unknown"], "{run}");
    assert_eq!(
        run["service"][0]["repeats"].as_array().map(Vec::len),
        Some(2),
        "both files state no rate: one case, two repeats"
    );

    let json_export = real("loadgen/aiperf/rate8_profile_export_aiperf.json");
    let out = import(
        &env,
        &[json_export, csv],
        &["--model", "tiny", "--sweep", "rate"],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("rate8_profile_export_aiperf.csv: this AIPerf CSV export")
            && err.contains("states no request rate"),
        "{err}"
    );
    assert!(
        err.contains("hint: import the profile_export_aiperf.json"),
        "{err}"
    );
    let stage = real("loadgen/inference_perf/stage_0_lifecycle_metrics.json");
    let out = import(
        &env,
        &[stage, summary],
        &["--model", "tiny", "--sweep", "rate"],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains(
            "summary_lifecycle_metrics.json: this inference-perf summary over several stages"
        ) && err.contains("hint: import the stage_N_lifecycle_metrics.json files"),
        "{err}"
    );
}

/// `MLPerf` `LoadGen`'s summary states no request count and no duration: a tail percentile is
/// not gated with a reason that says so (not "0 requests"), and the table shows no count.
#[test]
fn an_mlperf_summary_says_it_states_no_request_count() {
    let env = bare();
    let summary = real("loadgen/mlperf/server_mlperf_log_summary.txt");
    let out = import(
        &env,
        std::slice::from_ref(&summary),
        &["--model", "tiny", "--format", "json"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let c = json(&out)["service"][0].clone();
    let reasons: Vec<&str> = c["reasons"]
        .as_array()
        .expect("reasons")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let p99 = reasons
        .iter()
        .find(|r| r.starts_with("p99_ttft_ms is not gated"))
        .unwrap_or_else(|| panic!("{reasons:?}"));
    assert!(
        p99.contains("states no request count") && p99.contains("mlperf_log_detail.txt"),
        "{p99}"
    );
    assert!(
        !p99.contains("0 requests"),
        "a count the file does not state: {p99}"
    );
    assert!(
        reasons.iter().all(|r| !r.contains(" 0 requests")),
        "{reasons:?}"
    );

    let table = env
        .cmd()
        .args(["runs", "show", "--db", "serve.db", "--color", "never"])
        .output()
        .expect("runs");
    let text = stdout(&table);
    let row = text
        .lines()
        .find(|l| l.contains("serve/tiny/rate=100"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(row.contains("-/-"), "no count stated, none shown: {row}");
}
