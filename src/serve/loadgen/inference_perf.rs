//! kubernetes-sigs/inference-perf's lifecycle report (`report.request_lifecycle`: the
//! per-stage `stage_N_lifecycle_metrics.json` and the run's `summary_lifecycle_metrics.json`,
//! inference-perf 0.7). Latencies are in seconds. Pure.
//!
//! inference-perf's `time_per_output_token` is per request, latency less TTFT over the output
//! tokens after the first: vLLM's TPOT; `inter_token_latency` is every gap between tokens:
//! vLLM's ITL; `normalized_time_per_output_token` (latency over output tokens) has no vLLM name
//! and stays in the fields. The report names no model (pass `--model`), and the summary of
//! several stages states no single rate (import the stage files to key each by its rate).

use std::collections::BTreeMap;

use super::{Doc, Object, Tool, stat_name};
use crate::serve::error::ServeError;
use crate::serve::model::{Schema, ServeResult, Settings};

const TOOL: Tool = Tool {
    name: "inference-perf",
    schema: Schema::InferencePerfSummary,
    supported: "inference-perf 0.7",
    remedy: "pass a *_lifecycle_metrics.json that inference-perf wrote, unedited",
};

const LATENCIES: [(&str, &str); 4] = [
    ("request_latency", "e2el"),
    ("time_to_first_token", "ttft"),
    ("time_per_output_token", "tpot"),
    ("inter_token_latency", "itl"),
];

const THROUGHPUTS: [(&str, &str); 4] = [
    ("requests_per_sec", "request_throughput"),
    ("output_tokens_per_sec", "output_throughput"),
    ("total_tokens_per_sec", "total_token_throughput"),
    ("input_tokens_per_sec", "input_throughput"),
];

pub(super) fn is_summary(obj: &Object) -> bool {
    obj.contains_key("load_summary") && obj.contains_key("successes")
}

fn stat(key: &str) -> Option<String> {
    match key {
        "mean" | "median" | "min" | "max" => Some(key.to_owned()),
        _ => stat_name(key.strip_prefix('p')?.parse().ok()?),
    }
}

pub(super) fn parse(obj: &Object, origin: &str) -> Result<ServeResult, ServeError> {
    let doc = Doc {
        tool: &TOOL,
        origin,
    };
    let mut metrics = BTreeMap::new();
    doc.need_object(obj, &["successes", "latency", "request_latency"])?;
    for (name, family) in LATENCIES {
        let path = ["successes", "latency", name];
        doc.distribution(obj, &path, family, 1000.0, stat, &mut metrics)?;
    }
    for (name, metric) in THROUGHPUTS {
        if let Some(x) = doc.number(obj, &["successes", "throughput", name])? {
            metrics.insert(metric.to_owned(), x);
        }
    }
    let completed = doc
        .count(obj, &["successes", "count"])?
        .ok_or_else(|| TOOL.missing(origin, "successes.count"))?;
    let failed = Some(
        doc.count(obj, &["failures", "count"])?
            .ok_or_else(|| TOOL.missing(origin, "failures.count"))?,
    );
    let duration_s = doc.need_number(obj, &["benchmark_time_seconds"])?;
    // A summary over several stages states no single rate: unknown, not "inf".
    let request_rate = doc.number(obj, &["load_summary", "requested_rate"])?;
    Ok(ServeResult {
        schema: TOOL.schema,
        settings: Settings {
            request_rate,
            rate_unstated: request_rate.is_none(),
            num_prompts: doc.count(obj, &["load_summary", "count"])?,
            ..Settings::default()
        },
        completed,
        failed,
        duration_s,
        metrics,
        samples: None,
        fields: obj.clone(),
    })
}
