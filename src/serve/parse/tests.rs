//! Tests of the result parser on the real files in `tests/fixtures/{vllm_bench,sglang_bench}/`.

use serde_json::Value;

use super::*;
use crate::serve::direction_of;
use crate::serve::model::Direction;

const CURRENT: &str = include_str!(
    "../../../tests/fixtures/vllm_bench/vllm_bench_serve_v0.11plus_qwen2.5vl3b_rate1.json"
);
const LEGACY_INF: &str = include_str!(
    "../../../tests/fixtures/vllm_bench/llm-k8s__llama33-70b_tp8_pp1__serving_sharegpt_qps_inf.json"
);
const LEGACY_4: &str = include_str!(
    "../../../tests/fixtures/vllm_bench/llm-k8s__deepseek-v2.5_tp8_pp2_ib__serving_sharegpt_qps_04.json"
);
const SGLANG_70B: &str = include_str!(
    "../../../tests/fixtures/sglang_bench/datacrunch__llama_3_3_70b_online_output.jsonl"
);
const SGLANG_INF: &str =
    include_str!("../../../tests/fixtures/sglang_bench/datacrunch__deepseek_dp_mla_output.jsonl");

fn one(text: &str) -> ServeResult {
    let mut all = parse(text, "f.json").expect("parses");
    assert_eq!(all.len(), 1);
    all.remove(0)
}

/// Every key of the original object is in `fields` with the same value, and every metric key
/// reached `metrics` unchanged.
fn assert_complete(original: &Value, r: &ServeResult) {
    let Value::Object(obj) = original else {
        panic!("fixture is an object")
    };
    assert_eq!(obj.len(), r.fields.len(), "no field dropped or added");
    for (k, v) in obj {
        assert_eq!(r.fields.get(k), Some(v), "field {k} kept as it was");
        if let (Some(name), Some(x)) = (canonical_metric(k), v.as_f64()) {
            assert_eq!(
                r.metrics.get(&name),
                Some(&x),
                "metric {k} reached the model"
            );
        }
    }
}

fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        0.5 * (v[n / 2 - 1] + v[n / 2])
    }
}

#[test]
fn current_vllm_schema_parses_with_every_field() {
    let r = one(CURRENT);
    assert_eq!(r.schema, Schema::VllmBenchServe);
    assert_complete(&serde_json::from_str(CURRENT).expect("json"), &r);
    assert_eq!(
        (r.completed, r.failed, r.failed_requests()),
        (199, Some(1), 1)
    );
    let s = &r.settings;
    assert_eq!(s.request_rate, Some(1.0));
    assert_eq!(s.burstiness, Some(1.0));
    assert_eq!(s.num_prompts, Some(200));
    assert_eq!(s.max_concurrency, None);
    assert_eq!(s.model.as_deref(), Some("./Qwen2.5-VL-3B-Instruct"));
    assert_eq!(s.tokenizer.as_deref(), Some("./Qwen2.5-VL-3B-Instruct"));
    assert_eq!(s.total_input_tokens, Some(39800));
    assert_eq!(r.metrics["median_ttft_ms"], 98.944_299_854_338_17);
    assert_eq!(r.metrics["max_concurrent_requests"], 14.0);
    assert!(
        !r.metrics.contains_key("request_goodput"),
        "null goodput is no figure"
    );
    assert!(r.samples.is_none());
    assert!((r.duration_s - 204.454_084_330_005_57).abs() < 1e-12);
}

#[test]
fn legacy_schema_reads_inf_rate_and_the_colon_key() {
    let r = one(LEGACY_INF);
    assert_eq!(r.schema, Schema::VllmBenchmarkServing);
    assert_complete(&serde_json::from_str(LEGACY_INF).expect("json"), &r);
    assert_eq!(
        r.settings.request_rate, None,
        "\"inf\" is an unlimited rate"
    );
    assert_eq!(
        r.fields["request_goodput:"],
        Value::Null,
        "the stray-colon key is kept"
    );
    assert_eq!((r.completed, r.failed, r.failed_requests()), (200, None, 0));
    assert_eq!(r.settings.dataset, None);
    let s = r.samples.as_ref().expect("per-request arrays");
    assert_eq!(s.ttfts_ms.len(), 200);
    assert_eq!(s.input_lens.iter().sum::<u64>(), 42659);
    assert_eq!(s.output_lens.len(), 200);
    // The samples are the same requests the file summarised: their median is its median.
    let m = median(&s.ttfts_ms);
    assert!((m / r.metrics["median_ttft_ms"] - 1.0).abs() < 1e-9, "{m}");
    let itl = median(&s.itls_ms);
    assert!(
        (itl / r.metrics["median_itl_ms"] - 1.0).abs() < 1e-9,
        "{itl}"
    );
}

#[test]
fn legacy_schema_with_a_numeric_rate_and_an_empty_itl_list() {
    let r = one(LEGACY_4);
    assert_complete(&serde_json::from_str(LEGACY_4).expect("json"), &r);
    assert_eq!(r.settings.request_rate, Some(4.0));
    assert_eq!(r.metrics["p99_itl_ms"], 430.007_069_300_336_3);
    let s = r.samples.as_ref().expect("arrays");
    let itls: usize = r.fields["itls"]
        .as_array()
        .expect("itls")
        .iter()
        .map(|x| x.as_array().expect("list").len())
        .sum();
    assert_eq!(s.itls_ms.len(), itls, "every inter-token latency kept");
    let itl = median(&s.itls_ms);
    assert!((itl / r.metrics["median_itl_ms"] - 1.0).abs() < 1e-9);
}

#[test]
fn sglang_json_lines_are_one_result_per_line() {
    let all = parse(SGLANG_70B, "o.jsonl").expect("parses");
    let rates: Vec<Option<f64>> = all.iter().map(|r| r.settings.request_rate).collect();
    assert_eq!(
        rates,
        [1.0, 2.0, 4.0, 8.0, 16.0, 4.0, 8.0].map(Some).to_vec()
    );
    for (line, r) in SGLANG_70B.lines().zip(&all) {
        assert_eq!(r.schema, Schema::SglangBenchServing);
        assert_complete(&serde_json::from_str(line).expect("json"), r);
        assert_eq!(
            r.settings.model, None,
            "this SGLang version writes no model id"
        );
    }
    assert_eq!(
        (all[0].settings.input_len, all[0].settings.output_len),
        (Some(1024), Some(1024))
    );
    assert_eq!(all[0].settings.dataset.as_deref(), Some("random"));
    assert_eq!(all[0].metrics["median_e2el_ms"], 7_819.046_192_569_658);
    assert_eq!(all[0].metrics["output_throughput"], 537.414_285_184_931_9);
    let sharegpt = &all[5];
    assert_eq!(sharegpt.settings.dataset.as_deref(), Some("sharegpt"));
    assert_eq!(
        sharegpt.settings.input_len, None,
        "random lengths do not describe ShareGPT"
    );
}

#[test]
fn sglang_bare_infinity_is_an_unlimited_rate() {
    let r = one(SGLANG_INF);
    assert_eq!(r.settings.request_rate, None);
    assert_eq!(r.fields["request_rate"], Value::String("Infinity".into()));
    assert_eq!(r.completed, 10000);
    assert_eq!(r.settings.range_ratio, Some(1.0));
}

#[test]
fn nan_metrics_are_no_figure_and_strings_are_left_alone() {
    let text = r#"{"backend": "sglang", "dataset_name": "random", "request_rate": 2, "duration": 1.5,
        "completed": 0, "mean_ttft_ms": NaN, "note": "NaN and Infinity stay text", "p99.9_ttft_ms": 5}"#;
    let r = one(text);
    assert!(!r.metrics.contains_key("mean_ttft_ms"));
    assert_eq!(r.metrics["p99.9_ttft_ms"], 5.0);
    assert_eq!(
        r.fields["note"],
        Value::String("NaN and Infinity stay text".into())
    );
}

#[test]
fn failed_requests_are_dropped_from_the_samples() {
    let text = r#"{"model_id": "m", "tokenizer_id": "m", "num_prompts": 3, "request_rate": 1.0,
        "duration": 2.0, "completed": 2, "request_goodput:": null,
        "ttfts": [0.1, 0.0, 0.3], "itls": [[0.01], [], [0.02, 0.03]],
        "errors": ["", "Bad Gateway", ""], "input_lens": [1, 2, 3], "output_lens": [2, 0, 3]}"#;
    let r = one(text);
    assert_eq!(r.failed_requests(), 1, "prompts minus completed");
    let s = r.samples.expect("samples");
    assert_eq!(s.ttfts_ms, vec![100.0, 300.0]);
    assert_eq!(s.itls_ms.len(), 3);
}

#[test]
fn errors_name_the_file_and_the_key() {
    let cases = [
        ("", "f.json: holds no result"),
        ("[1, 2]", "f.json: expected a JSON object, found an array"),
        (
            "{\"a\": 1}",
            "f.json: not a result of a known load generator",
        ),
        (
            r#"{"model_id": "m", "request_rate": 1, "duration": 3}"#,
            "f.json: missing required key `completed` of the vllm_benchmark_serving schema",
        ),
        (
            r#"{"endpoint_type": "openai", "model_id": "m", "request_rate": 1, "completed": 3}"#,
            "missing required key `duration`",
        ),
        (
            r#"{"endpoint_type": "openai", "request_rate": 1, "completed": 3, "duration": 1}"#,
            "missing required key `model_id` of the vllm_bench_serve schema",
        ),
        (
            r#"{"model_id": "m", "request_rate": 1, "completed": "many", "duration": 1}"#,
            "key `completed`: expected a whole number, found \"many\"",
        ),
        (
            r#"{"model_id": "m", "request_rate": 1, "completed": 1, "duration": 1, "p99_ttft_ms": "x"}"#,
            "key `p99_ttft_ms`: expected a number",
        ),
        ("{\"model_id\": ", "f.json: not a JSON result object"),
    ];
    for (text, want) in cases {
        let err = parse(text, "f.json").expect_err(text).to_string();
        assert!(err.contains(want), "{text}: {err}");
    }
    let bad_line = format!("{}\n{{\"completed\": oops}}\n", SGLANG_INF.trim());
    let err = parse(&bad_line, "o.jsonl").expect_err("line 2").to_string();
    assert!(err.starts_with("o.jsonl:2: "), "{err}");
}

#[test]
fn unknown_keys_are_kept_and_directions_are_known() {
    let text = r#"{"endpoint_type": "openai", "model_id": "m", "request_rate": 1, "completed": 3,
        "duration": 1, "my_label": {"gpu": "h200"}, "p50_ttft_ms": 4.5, "mean_e2el_ms": 20}"#;
    let r = one(text);
    assert_eq!(r.fields["my_label"]["gpu"], Value::String("h200".into()));
    for name in r.metrics.keys() {
        let d = direction_of(name);
        if name.ends_with("_ms") {
            assert_eq!(d, Direction::Lower, "{name}");
        }
    }
    assert_eq!(r.metrics["p50_ttft_ms"], 4.5);
}
