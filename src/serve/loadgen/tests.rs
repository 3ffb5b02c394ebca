//! Tests of the other load generators' readers on their own output, made here by running each
//! tool against `tests/fixtures/loadgen/server.py` (see each fixture folder's README). Every
//! figure is checked against the value read from the file in the test.

use serde_json::Value;

use crate::serve::model::{Schema, ServeResult};
use crate::serve::parse::parse;

const MLPERF_SERVER: &str =
    include_str!("../../../tests/fixtures/loadgen/mlperf/server_mlperf_log_summary.txt");
const MLPERF_OFFLINE: &str =
    include_str!("../../../tests/fixtures/loadgen/mlperf/offline_mlperf_log_summary.txt");

fn one(text: &str, origin: &str) -> ServeResult {
    let mut all = parse(text, origin).unwrap_or_else(|e| panic!("{origin}: {e}"));
    assert_eq!(all.len(), 1, "{origin}");
    all.remove(0)
}

fn err(text: &str, origin: &str) -> String {
    parse(text, origin).expect_err(origin).to_string()
}

/// The value of the summary line whose key (before the colon) is `key`, read directly.
fn summary_value(text: &str, key: &str) -> f64 {
    text.lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.trim() == key)
        .unwrap_or_else(|| panic!("{key} in the summary"))
        .1
        .trim()
        .parse()
        .expect("a number")
}

/// Re-reading the stored fields gives the same result (the store keeps `fields` and parses
/// them again when it judges a later run against this one).
fn assert_round_trips(r: &ServeResult) {
    let stored = Value::Object(r.fields.clone()).to_string();
    let again = one(&stored, "stored");
    assert_eq!(&again, r, "the stored form reads back as the same result");
}

#[test]
fn mlperf_server_summary_maps_every_latency_to_ms() {
    let r = one(MLPERF_SERVER, "mlperf_log_summary.txt");
    assert_eq!(r.schema, Schema::MlperfLoadgenSummary);
    let ms = |key: &str| summary_value(MLPERF_SERVER, key) / 1e6;
    let table = [
        ("mean_e2el_ms", "Mean latency (ns)"),
        ("min_e2el_ms", "Min latency (ns)"),
        ("max_e2el_ms", "Max latency (ns)"),
        ("median_e2el_ms", "50.00 percentile latency (ns)"),
        ("p90_e2el_ms", "90.00 percentile latency (ns)"),
        ("p99_e2el_ms", "99.00 percentile latency (ns)"),
        ("p99.9_e2el_ms", "99.90 percentile latency (ns)"),
        ("mean_ttft_ms", "Mean First Token latency (ns)"),
        (
            "median_ttft_ms",
            "50.00 percentile first token latency (ns)",
        ),
        ("p95_ttft_ms", "95.00 percentile first token latency (ns)"),
        ("p97_ttft_ms", "97.00 percentile first token latency (ns)"),
        ("p99_ttft_ms", "99.00 percentile first token latency (ns)"),
        ("mean_tpot_ms", "Mean Time per Output Token (ns)"),
        ("max_tpot_ms", "Max Time per Output Token (ns)"),
        (
            "median_tpot_ms",
            "50.00 percentile time to output token (ns)",
        ),
        ("p99_tpot_ms", "99.00 percentile time to output token (ns)"),
    ];
    for (metric, key) in table {
        assert_eq!(r.metrics.get(metric), Some(&ms(key)), "{metric} from {key}");
    }
    // 3 statistics x 3 families + 6 percentiles x 3 families + 2 throughputs: nothing else.
    assert_eq!(r.metrics.len(), 9 + 18 + 2, "{:?}", r.metrics.keys());
    assert_eq!(
        r.metrics["request_throughput"],
        summary_value(MLPERF_SERVER, "Completed samples per second")
    );
    assert_eq!(
        r.metrics["output_throughput"],
        summary_value(MLPERF_SERVER, "Completed tokens per second")
    );
    assert_eq!(
        r.settings.request_rate,
        Some(summary_value(MLPERF_SERVER, "target_qps"))
    );
    assert_eq!(r.fields["mlperf_log_summary"], MLPERF_SERVER, "kept whole");
    assert_round_trips(&r);
}

#[test]
fn mlperf_offline_summary_is_an_unlimited_rate_with_its_throughputs() {
    let r = one(MLPERF_OFFLINE, "mlperf_log_summary.txt");
    assert_eq!(
        r.settings.request_rate, None,
        "Offline sends every sample at once"
    );
    assert_eq!(
        r.metrics["request_throughput"],
        summary_value(MLPERF_OFFLINE, "Samples per second")
    );
    assert_eq!(
        r.metrics["output_throughput"],
        summary_value(MLPERF_OFFLINE, "Tokens per second")
    );
    assert_eq!(
        r.metrics["p99_e2el_ms"],
        summary_value(MLPERF_OFFLINE, "99.00 percentile latency (ns)") / 1e6
    );
    assert_round_trips(&r);
}

#[test]
fn mlperf_changed_or_missing_fields_are_named() {
    let no_mean = MLPERF_SERVER.replace("Mean latency (ns)", "Average latency (ns)");
    let e = err(&no_mean, "s.txt");
    assert!(
        e.starts_with("s.txt: MLPerf LoadGen result: `Mean latency (ns)` is missing"),
        "{e}"
    );
    let in_us = MLPERF_SERVER.replace(
        "Mean First Token latency (ns)",
        "Mean First Token latency (us)",
    );
    let e = err(&in_us, "s.txt");
    assert!(
        e.contains("`Mean First Token latency (us)` is in us"),
        "{e}"
    );
    let no_scenario = MLPERF_SERVER.replace("Scenario :", "Scenery :");
    assert!(err(&no_scenario, "s.txt").contains("`Scenario` is missing"));
    let bad = MLPERF_SERVER.replace(
        "Completed tokens per second: ",
        "Completed tokens per second: n/a ",
    );
    assert!(err(&bad, "s.txt").contains("`Completed tokens per second` is \"n/a"));
}

const AIPERF_RATE: &str =
    include_str!("../../../tests/fixtures/loadgen/aiperf/rate8_profile_export_aiperf.json");
const AIPERF_CONC: &str =
    include_str!("../../../tests/fixtures/loadgen/aiperf/conc4_profile_export_aiperf.json");
const AIPERF_RATE_CSV: &str =
    include_str!("../../../tests/fixtures/loadgen/aiperf/rate8_profile_export_aiperf.csv");
const GUIDELLM_RATES: &str =
    include_str!("../../../tests/fixtures/loadgen/guidellm/constant_rates_benchmarks.json");
const GUIDELLM_CONC: &str =
    include_str!("../../../tests/fixtures/loadgen/guidellm/concurrent_benchmarks.json");
const IPERF_STAGE_0: &str =
    include_str!("../../../tests/fixtures/loadgen/inference_perf/stage_0_lifecycle_metrics.json");
const IPERF_STAGE_1: &str =
    include_str!("../../../tests/fixtures/loadgen/inference_perf/stage_1_lifecycle_metrics.json");
const IPERF_SUMMARY: &str =
    include_str!("../../../tests/fixtures/loadgen/inference_perf/summary_lifecycle_metrics.json");

fn json(text: &str) -> Value {
    serde_json::from_str(text).expect("fixture is JSON")
}

fn at<'v>(v: &'v Value, path: &[&str]) -> &'v Value {
    path.iter().fold(v, |v, k| &v[*k])
}

fn f(v: &Value, path: &[&str]) -> f64 {
    at(v, path)
        .as_f64()
        .unwrap_or_else(|| panic!("{} is a number", path.join(".")))
}

/// Every statistic of each (file metric, canonical family) pair reached the model, times
/// `to_ms`; `stats` pairs the file's statistic names with the canonical ones.
fn assert_distributions(
    r: &ServeResult,
    file: &Value,
    families: &[(&[&str], &str)],
    stats: &[(&str, &str)],
    to_ms: f64,
) {
    for (path, family) in families {
        for (theirs, ours) in stats {
            let mut p = path.to_vec();
            p.push(theirs);
            let want = f(file, &p) * to_ms;
            let name = format!("{ours}_{family}_ms");
            assert_eq!(
                r.metrics.get(&name),
                Some(&want),
                "{name} from {}",
                p.join(".")
            );
        }
    }
}

#[test]
fn aiperf_json_maps_every_latency_and_throughput() {
    let file = json(AIPERF_RATE);
    let r = one(AIPERF_RATE, "profile_export_aiperf.json");
    assert_eq!(r.schema, Schema::AiperfProfileExport);
    let families: [(&[&str], &str); 4] = [
        (&["time_to_first_token"], "ttft"),
        (&["inter_token_latency"], "tpot"),
        (&["inter_chunk_latency"], "itl"),
        (&["request_latency"], "e2el"),
    ];
    let stats = [
        ("avg", "mean"),
        ("p50", "median"),
        ("p1", "p1"),
        ("p90", "p90"),
        ("p99", "p99"),
        ("min", "min"),
        ("max", "max"),
        ("std", "std"),
    ];
    assert_distributions(&r, &file, &families, &stats, 1.0);
    for (theirs, ours) in [
        ("request_throughput", "request_throughput"),
        ("output_token_throughput", "output_throughput"),
        ("total_token_throughput", "total_token_throughput"),
        ("input_token_throughput", "input_throughput"),
    ] {
        assert_eq!(r.metrics[ours], f(&file, &[theirs, "avg"]), "{ours}");
    }
    // 4 families x 13 statistics (avg, min, max, std, 9 percentiles) + 4 throughputs.
    assert_eq!(r.metrics.len(), 4 * 13 + 4, "{:?}", r.metrics.keys());
    assert_eq!(r.completed, 40);
    assert_eq!(r.failed, Some(0), "an empty error_summary");
    assert_eq!(r.duration_s, f(&file, &["benchmark_duration", "avg"]));
    let s = &r.settings;
    assert_eq!(s.model.as_deref(), Some("utilgate/tiny-stub"));
    assert_eq!(s.request_rate, Some(8.0));
    assert_eq!((s.num_prompts, s.seed), (Some(40), Some(7)));
    assert_eq!((s.input_len, s.output_len), (Some(64), Some(16)));
    assert_eq!(s.max_concurrency, None);
    assert_eq!(Value::Object(r.fields.clone()), file, "every field kept");
    assert_round_trips(&r);
}

#[test]
fn aiperf_concurrency_run_is_keyed_by_its_concurrency() {
    let r = one(AIPERF_CONC, "c.json");
    assert_eq!(r.settings.max_concurrency, Some(4));
    assert_eq!(r.settings.request_rate, None);
    let file = json(AIPERF_CONC);
    assert_eq!(
        r.metrics["p99_ttft_ms"],
        f(&file, &["time_to_first_token", "p99"])
    );
}

#[test]
fn aiperf_csv_rows_are_read_by_display_name() {
    let r = one(AIPERF_RATE_CSV, "profile_export_aiperf.csv");
    assert_eq!(r.schema, Schema::AiperfProfileExport);
    let cell = |row: &str, col: usize| -> f64 {
        let line = AIPERF_RATE_CSV
            .lines()
            .find(|l| l.starts_with(&format!("{row},")))
            .unwrap_or_else(|| panic!("{row}"));
        line.split(',')
            .nth(col)
            .expect("column")
            .parse()
            .expect("number")
    };
    // Metric,avg,min,max,sum,p1,p5,p10,p25,p50,p75,p90,p95,p99,std
    assert_eq!(
        r.metrics["mean_ttft_ms"],
        cell("Time to First Token (ms)", 1)
    );
    assert_eq!(
        r.metrics["median_ttft_ms"],
        cell("Time to First Token (ms)", 9)
    );
    assert_eq!(
        r.metrics["p99_ttft_ms"],
        cell("Time to First Token (ms)", 13)
    );
    assert_eq!(
        r.metrics["std_itl_ms"],
        cell("Inter Chunk Latency (ms)", 14)
    );
    assert_eq!(
        r.metrics["p90_tpot_ms"],
        cell("Inter Token Latency (ms)", 11)
    );
    assert_eq!(r.metrics["max_e2el_ms"], cell("Request Latency (ms)", 3));
    assert_eq!(
        r.metrics["request_throughput"],
        cell("Request Throughput (requests/sec)", 1)
    );
    assert_eq!(
        r.metrics["output_throughput"],
        cell("Output Token Throughput (tokens/sec)", 1)
    );
    assert_eq!(r.duration_s, cell("Benchmark Duration (sec)", 1));
    assert_eq!(r.completed, 40);
    // The CSV and the JSON of one run agree to the CSV's two decimals.
    let full = one(AIPERF_RATE, "j");
    for name in [
        "median_ttft_ms",
        "p99_itl_ms",
        "mean_e2el_ms",
        "output_throughput",
    ] {
        assert!(
            (r.metrics[name] - full.metrics[name]).abs() <= 0.005 + 1e-9,
            "{name}"
        );
    }
    assert_eq!(r.settings.model, None, "the CSV names no model");
    assert_round_trips(&r);
}

#[test]
fn aiperf_changed_fields_are_named_with_the_fix() {
    let renamed = AIPERF_RATE.replace("\"request_latency\"", "\"request_latency_ms\"");
    let e = parse(&renamed, "p.json").expect_err("renamed");
    assert!(
        e.to_string()
            .starts_with("p.json: AIPerf result: `request_latency` is missing"),
        "{e}"
    );
    assert!(
        e.hint().is_some_and(|h| h.contains("aiperf 0.13")),
        "{:?}",
        e.hint()
    );
    let mut file = json(AIPERF_RATE);
    file["time_to_first_token"]["unit"] = Value::from("s");
    let e = err(&file.to_string(), "p.json");
    assert!(e.contains("`time_to_first_token.unit` is \"s\""), "{e}");
    let mut file = json(AIPERF_RATE);
    file["request_count"]
        .as_object_mut()
        .expect("object")
        .remove("avg");
    assert!(err(&file.to_string(), "p.json").contains("`request_count.avg` is missing"));
    let csv = AIPERF_RATE_CSV.replace("Request Count,", "Requests Sent,");
    assert!(err(&csv, "p.csv").contains("`Request Count` is missing"));
    let csv = AIPERF_RATE_CSV.replace("Time to First Token (ms)", "Time to First Token (s)");
    assert!(err(&csv, "p.csv").contains("`Time to First Token (s)` is not in ms"));
}

#[test]
fn guidellm_report_is_one_result_per_benchmark() {
    let file = json(GUIDELLM_RATES);
    let all = parse(GUIDELLM_RATES, "benchmarks.json").expect("parses");
    assert_eq!(all.len(), 2);
    let families: [(&[&str], &str); 3] = [
        (&["metrics", "time_to_first_token_ms", "successful"], "ttft"),
        (&["metrics", "inter_token_latency_ms", "successful"], "tpot"),
        (&["metrics", "request_latency", "successful"], "e2el"),
    ];
    for (i, r) in all.iter().enumerate() {
        let b = &file["benchmarks"][i];
        assert_eq!(r.schema, Schema::GuidellmBenchmarks);
        assert_eq!(
            r.settings.request_rate,
            Some(f(b, &["config", "strategy", "rate"]))
        );
        let stats = [
            ("mean", "mean"),
            ("median", "median"),
            ("std_dev", "std"),
            ("min", "min"),
            ("max", "max"),
        ];
        assert_distributions(r, b, &families[..2], &stats, 1.0);
        // Request latency is in seconds: the standard deviation too.
        assert_distributions(r, b, &families[2..], &stats, 1000.0);
        let pct: [(&[&str], &str, f64); 3] = [
            (
                &[
                    "metrics",
                    "time_to_first_token_ms",
                    "successful",
                    "percentiles",
                ],
                "ttft",
                1.0,
            ),
            (
                &[
                    "metrics",
                    "inter_token_latency_ms",
                    "successful",
                    "percentiles",
                ],
                "tpot",
                1.0,
            ),
            (
                &["metrics", "request_latency", "successful", "percentiles"],
                "e2el",
                1000.0,
            ),
        ];
        for (path, family, to_ms) in pct {
            assert_distributions(
                r,
                b,
                &[(path, family)],
                &[
                    ("p001", "p0.1"),
                    ("p01", "p1"),
                    ("p05", "p5"),
                    ("p50", "median"),
                    ("p90", "p90"),
                    ("p99", "p99"),
                    ("p999", "p99.9"),
                ],
                to_ms,
            );
        }
        for (theirs, ours) in [
            ("requests_per_second", "request_throughput"),
            ("output_tokens_per_second", "output_throughput"),
            ("tokens_per_second", "total_token_throughput"),
            ("prompt_tokens_per_second", "input_throughput"),
        ] {
            assert_eq!(
                r.metrics[ours],
                f(b, &["metrics", theirs, "successful", "mean"]),
                "{ours}"
            );
        }
        assert_eq!(r.completed, 30);
        assert_eq!(r.failed, Some(0));
        assert_eq!(r.duration_s, f(b, &["duration"]));
        let s = &r.settings;
        assert_eq!(s.model.as_deref(), Some("utilgate/tiny-stub"));
        assert_eq!(
            (s.seed, s.input_len, s.output_len),
            (Some(7), Some(64), Some(16))
        );
        assert_eq!(s.num_prompts, Some(30));
        // Every field: the report with this benchmark alone.
        let mut want = file.clone();
        want["benchmarks"] = Value::Array(vec![b.clone()]);
        assert_eq!(Value::Object(r.fields.clone()), want);
        assert_round_trips(r);
    }
}

#[test]
fn guidellm_concurrent_benchmarks_are_keyed_by_streams() {
    let all = parse(GUIDELLM_CONC, "c.json").expect("parses");
    let streams: Vec<Option<u64>> = all.iter().map(|r| r.settings.max_concurrency).collect();
    assert_eq!(streams, [Some(1), Some(4)]);
    assert!(all.iter().all(|r| r.settings.request_rate.is_none()));
}

#[test]
fn guidellm_changed_fields_are_named() {
    let mut file = json(GUIDELLM_RATES);
    file["benchmarks"][1]["metrics"]
        .as_object_mut()
        .expect("metrics")
        .remove("request_totals");
    let e = err(&file.to_string(), "b.json");
    assert!(
        e.starts_with(
            "b.json: benchmarks[1]: GuideLLM result: `metrics.request_totals.successful` is missing"
        ),
        "{e}"
    );
    let mut file = json(GUIDELLM_RATES);
    file["benchmarks"][0]["metrics"]["time_to_first_token_ms"]["successful"]["median"] =
        Value::from("41 ms");
    let e = err(&file.to_string(), "b.json");
    assert!(
        e.contains("`metrics.time_to_first_token_ms.successful.median` is \"41 ms\""),
        "{e}"
    );
}

#[test]
fn inference_perf_stage_reports_map_seconds_to_ms() {
    for (text, rate) in [(IPERF_STAGE_0, 4.0), (IPERF_STAGE_1, 8.0)] {
        let file = json(text);
        let r = one(text, "stage.json");
        assert_eq!(r.schema, Schema::InferencePerfSummary);
        let families: [(&[&str], &str); 4] = [
            (&["successes", "latency", "request_latency"], "e2el"),
            (&["successes", "latency", "time_to_first_token"], "ttft"),
            (&["successes", "latency", "time_per_output_token"], "tpot"),
            (&["successes", "latency", "inter_token_latency"], "itl"),
        ];
        let stats = [
            ("mean", "mean"),
            ("median", "median"),
            ("min", "min"),
            ("max", "max"),
            ("p0.1", "p0.1"),
            ("p90", "p90"),
            ("p99", "p99"),
            ("p99.9", "p99.9"),
        ];
        assert_distributions(&r, &file, &families, &stats, 1000.0);
        // 4 families x 14 statistics (mean, min, max, median, 10 percentiles) + 4 throughputs.
        assert_eq!(r.metrics.len(), 4 * 14 + 4, "{:?}", r.metrics.keys());
        for (theirs, ours) in [
            ("requests_per_sec", "request_throughput"),
            ("output_tokens_per_sec", "output_throughput"),
            ("total_tokens_per_sec", "total_token_throughput"),
            ("input_tokens_per_sec", "input_throughput"),
        ] {
            assert_eq!(
                r.metrics[ours],
                f(&file, &["successes", "throughput", theirs])
            );
        }
        assert_eq!(r.settings.request_rate, Some(rate));
        assert_eq!(
            r.completed,
            at(&file, &["successes", "count"]).as_u64().expect("count")
        );
        assert_eq!(r.failed, Some(0));
        assert_eq!(r.duration_s, f(&file, &["benchmark_time_seconds"]));
        assert_eq!(Value::Object(r.fields.clone()), file);
        assert_round_trips(&r);
    }
    let summary = one(IPERF_SUMMARY, "summary.json");
    assert_eq!(
        summary.settings.request_rate, None,
        "no single rate across stages"
    );
    assert_eq!(summary.completed, 47);
}

#[test]
fn inference_perf_changed_fields_are_named() {
    let mut file = json(IPERF_STAGE_0);
    file.as_object_mut().expect("object").remove("failures");
    let e = parse(&file.to_string(), "s.json").expect_err("no failures");
    assert!(
        e.to_string()
            .contains("inference-perf result: `failures.count` is missing"),
        "{e}"
    );
    assert!(e.hint().is_some_and(|h| h.contains("inference-perf 0.7")));
    let renamed = IPERF_STAGE_0.replace("\"request_latency\"", "\"e2e_latency\"");
    assert!(err(&renamed, "s.json").contains("`successes.latency.request_latency` is missing"));
}
