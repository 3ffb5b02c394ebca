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
        ("median_ttft_ms", "50.00 percentile first token latency (ns)"),
        ("p95_ttft_ms", "95.00 percentile first token latency (ns)"),
        ("p97_ttft_ms", "97.00 percentile first token latency (ns)"),
        ("p99_ttft_ms", "99.00 percentile first token latency (ns)"),
        ("mean_tpot_ms", "Mean Time per Output Token (ns)"),
        ("max_tpot_ms", "Max Time per Output Token (ns)"),
        ("median_tpot_ms", "50.00 percentile time to output token (ns)"),
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
    assert_eq!(r.settings.request_rate, None, "Offline sends every sample at once");
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
    assert!(e.starts_with("s.txt: MLPerf LoadGen result: `Mean latency (ns)` is missing"), "{e}");
    let in_us = MLPERF_SERVER.replace("Mean First Token latency (ns)", "Mean First Token latency (us)");
    let e = err(&in_us, "s.txt");
    assert!(e.contains("`Mean First Token latency (us)` is in us"), "{e}");
    let no_scenario = MLPERF_SERVER.replace("Scenario :", "Scenery :");
    assert!(err(&no_scenario, "s.txt").contains("`Scenario` is missing"));
    let bad = MLPERF_SERVER.replace("Completed tokens per second: ", "Completed tokens per second: n/a ");
    assert!(err(&bad, "s.txt").contains("`Completed tokens per second` is \"n/a"));
}
