//! `GuideLLM`'s benchmark report (`guidellm run --output kind=json`, `benchmarks.json`, report
//! version 2 of guidellm 0.8): one result per benchmark of the report (a rate or concurrency
//! of a sweep). Pure.
//!
//! `GuideLLM`'s `inter_token_latency_ms` is per request, (last token - first token) / (output
//! tokens - 1): vLLM's TPOT, so it is read as `tpot`. Its `time_per_output_token_ms` divides the
//! whole latency, first token included, by the output tokens: no vLLM metric is that, so it
//! stays in the fields only. `request_latency` is in seconds.
//!
//! Each result's fields are the whole report with `benchmarks` holding that benchmark alone:
//! every field is kept, and the stored form reads back as the one result.

use std::collections::BTreeMap;

use serde_json::Value;

use super::{Doc, Object, Tool, stat_name, whole};
use crate::serve::error::ServeError;
use crate::serve::model::{Schema, ServeResult, Settings};

const TOOL: Tool = Tool {
    name: "GuideLLM",
    schema: Schema::GuidellmBenchmarks,
    supported: "guidellm 0.8 (report version 2)",
    remedy: "pass the benchmarks.json that `guidellm run` wrote, unedited",
};

/// Latency distributions: `GuideLLM`'s metric, the canonical family, the factor to ms.
const LATENCIES: [(&str, &str, f64); 3] = [
    ("time_to_first_token_ms", "ttft", 1.0),
    ("inter_token_latency_ms", "tpot", 1.0),
    ("request_latency", "e2el", 1000.0),
];

const THROUGHPUTS: [(&str, &str); 4] = [
    ("requests_per_second", "request_throughput"),
    ("output_tokens_per_second", "output_throughput"),
    ("tokens_per_second", "total_token_throughput"),
    ("prompt_tokens_per_second", "input_throughput"),
];

pub(super) fn is_report(obj: &Object) -> bool {
    let versioned = obj
        .get("metadata")
        .and_then(|m| m.get("guidellm_version"))
        .is_some();
    let generative = obj
        .get("benchmarks")
        .and_then(Value::as_array)
        .and_then(|b| b.first())
        .and_then(|b| b.get("type_"))
        .and_then(Value::as_str)
        == Some("generative_benchmark");
    versioned || generative
}

fn stat(key: &str) -> Option<String> {
    match key {
        "mean" | "median" | "min" | "max" => Some(key.to_owned()),
        "std_dev" => Some("std".to_owned()),
        _ => None,
    }
}

/// `GuideLLM` writes percentiles with the decimal point after two digits: `p001` is the 0.1th,
/// `p01` the 1st, `p50` the median, `p999` the 99.9th.
fn percentile(key: &str) -> Option<String> {
    let digits = key.strip_prefix('p')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let p: f64 = if digits.len() <= 2 {
        digits.parse().ok()?
    } else {
        format!("{}.{}", &digits[..2], &digits[2..]).parse().ok()?
    };
    stat_name(p)
}

pub(super) fn parse(obj: &Object, origin: &str) -> Result<Vec<ServeResult>, ServeError> {
    let doc = Doc {
        tool: &TOOL,
        origin,
    };
    let benchmarks = doc.need(obj, &["benchmarks"])?;
    let Some(benchmarks) = benchmarks.as_array() else {
        return Err(TOOL.not_a(origin, "benchmarks", "an array", benchmarks));
    };
    let shared = shared_settings(&doc, obj)?;
    benchmarks
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let Some(b) = b.as_object() else {
                return Err(TOOL.not_a(origin, &format!("benchmarks[{i}]"), "an object", b));
            };
            let at = format!("{origin}: benchmarks[{i}]");
            let doc = Doc {
                tool: &TOOL,
                origin: &at,
            };
            let mut fields = obj.clone();
            fields.insert(
                "benchmarks".to_owned(),
                Value::Array(vec![Value::Object(b.clone())]),
            );
            benchmark(&doc, b, shared.clone(), fields)
        })
        .collect()
}

fn benchmark(
    doc: &Doc<'_>,
    b: &Object,
    mut settings: Settings,
    fields: Object,
) -> Result<ServeResult, ServeError> {
    let mut metrics = BTreeMap::new();
    doc.need_object(b, &["metrics", "request_latency", "successful"])?;
    for (name, family, to_ms) in LATENCIES {
        let path = ["metrics", name, "successful"];
        doc.distribution(b, &path, family, to_ms, stat, &mut metrics)?;
        let pct = ["metrics", name, "successful", "percentiles"];
        doc.distribution(b, &pct, family, to_ms, percentile, &mut metrics)?;
    }
    for (name, metric) in THROUGHPUTS {
        if let Some(x) = doc.number(b, &["metrics", name, "successful", "mean"])? {
            metrics.insert(metric.to_owned(), x);
        }
    }
    let totals = ["metrics", "request_totals"];
    let completed = doc
        .count(b, &[totals[0], totals[1], "successful"])?
        .ok_or_else(|| TOOL.missing(doc.origin, "metrics.request_totals.successful"))?;
    let failed = doc.count(b, &[totals[0], totals[1], "errored"])?;
    let duration_s = doc.need_number(b, &["duration"])?;
    // The offered load of this benchmark.
    let strategy = doc.need_object(b, &["config", "strategy"])?;
    let kind = doc
        .text(strategy, &["type_"])
        .ok_or_else(|| TOOL.missing(doc.origin, "config.strategy.type_"))?;
    match kind.as_str() {
        "constant" | "poisson" | "async" => {
            settings.request_rate = doc.number(strategy, &["rate"])?;
        }
        "concurrent" => settings.max_concurrency = doc.count(strategy, &["streams"])?,
        "synchronous" => settings.max_concurrency = Some(1),
        _ => {}
    }
    settings.num_prompts = doc.count(
        b,
        &["config", "constraints", "max_requests", "args", "count"],
    )?;
    Ok(ServeResult {
        schema: TOOL.schema,
        settings,
        completed,
        failed,
        duration_s,
        metrics,
        samples: None,
        fields,
    })
}

/// The settings every benchmark of the report shares, from its `config.spec` (guidellm 0.8):
/// the model, the seed, a synthetic dataset's lengths.
fn shared_settings(doc: &Doc<'_>, obj: &Object) -> Result<Settings, ServeError> {
    let spec = ["config", "spec"];
    let mut s = Settings {
        model: doc.text(obj, &[spec[0], spec[1], "backend", "model"]),
        seed: doc.count(obj, &[spec[0], spec[1], "seed", "value"])?,
        ..Settings::default()
    };
    let data = doc
        .get(obj, &[spec[0], spec[1], "data"])
        .and_then(Value::as_array);
    if let Some([Value::Object(d)]) = data.map(Vec::as_slice) {
        s.dataset = doc.text(d, &["kind"]);
        s.input_len = doc.number(d, &["prompt_tokens"])?.and_then(whole);
        s.output_len = doc.number(d, &["output_tokens"])?.and_then(whole);
    }
    Ok(s)
}
