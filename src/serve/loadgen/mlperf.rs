//! `MLPerf` `LoadGen`'s `mlperf_log_summary.txt` (the `mlcommons-loadgen` 5.x/6.x text summary):
//! `key : value` lines in sections, latencies in nanoseconds, an LLM benchmark's first-token
//! and time-per-output-token statistics when it ran with `use_token_latencies`. Pure.
//!
//! The summary states no request count and no duration (they are in `mlperf_log_detail.txt`),
//! so `completed` and `duration_s` are 0 ("not stated"). The file's text is kept whole as the
//! result's fields (`{"mlperf_log_summary": TEXT}`), which is also the form the store re-reads.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::{Tool, stat_name};
use crate::serve::error::ServeError;
use crate::serve::model::{Schema, ServeResult, Settings};

const TOOL: Tool = Tool {
    name: "MLPerf LoadGen",
    schema: Schema::MlperfLoadgenSummary,
    supported: "mlcommons-loadgen 5.x-6.x",
    remedy: "pass the `mlperf_log_summary.txt` that LoadGen wrote, unedited",
};

/// The key the stored form keeps the summary's text under.
pub(super) const JSON_KEY: &str = "mlperf_log_summary";

const BANNER: &str = "MLPerf Results Summary";

pub(super) fn is_summary(text: &str) -> bool {
    text.lines().take(5).any(|l| l.trim() == BANNER)
}

/// Every `key : value` line, first occurrence kept (the token throughput is printed twice with
/// one value). Lines without a colon (`* Run successful.`, section rules) are not entries.
fn entries(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('*') || line.starts_with('=') {
            continue;
        }
        if let Some((k, v)) = line.split_once(':') {
            let (k, v) = (k.trim(), v.trim());
            if !k.is_empty() && !v.is_empty() {
                out.entry(k.to_owned()).or_insert_with(|| v.to_owned());
            }
        }
    }
    out
}

/// The latency family and statistic of a summary key, e.g. `"99.00 percentile first token
/// latency (ns)"` -> (`ttft`, `p99`), `"Mean latency (ns)"` -> (`e2el`, `mean`). `Err` holds the
/// unit when the key is a latency in another unit than nanoseconds.
fn latency_key(key: &str) -> Option<Result<(&'static str, String), String>> {
    let lower = key.to_ascii_lowercase();
    let (body, unit) = lower.rsplit_once(" (")?;
    let unit = unit.strip_suffix(')')?;
    let (stat, what) = if let Some(rest) = body.strip_prefix("mean ") {
        ("mean".to_owned(), rest)
    } else if let Some(rest) = body.strip_prefix("min ") {
        ("min".to_owned(), rest)
    } else if let Some(rest) = body.strip_prefix("max ") {
        ("max".to_owned(), rest)
    } else {
        let (p, rest) = body.split_once(" percentile ")?;
        (stat_name(p.parse::<f64>().ok()?)?, rest)
    };
    let family = match what {
        "latency" => "e2el",
        "first token latency" => "ttft",
        "time per output token" | "time to output token" => "tpot",
        _ => return None,
    };
    if unit != "ns" {
        return Some(Err(unit.to_owned()));
    }
    Some(Ok((family, stat)))
}

pub(super) fn parse(text: &str, origin: &str) -> Result<ServeResult, ServeError> {
    let e = entries(text);
    let need = |key: &str| {
        e.get(key).ok_or_else(|| {
            TOOL.err(
                origin,
                key,
                "is missing".to_owned(),
                format!("{}; every LoadGen summary states it", TOOL.remedy),
            )
        })
    };
    let scenario = need("Scenario")?.clone();
    need("Result is")?;
    let number = |key: &str, v: &str| {
        v.parse::<f64>().map_err(|_| {
            TOOL.err(
                origin,
                key,
                format!("is {v:?}, not a number"),
                TOOL.remedy.to_owned(),
            )
        })
    };
    let mut metrics = BTreeMap::new();
    for (key, v) in &e {
        match latency_key(key) {
            None => {}
            Some(Err(unit)) => {
                return Err(TOOL.err(
                    origin,
                    key,
                    format!("is in {unit}, where {} writes nanoseconds", TOOL.supported),
                    "this LoadGen changed the summary's units: tell utilgate's maintainers, or \
                     convert the file to the ns lines of a supported version"
                        .to_owned(),
                ));
            }
            Some(Ok((family, stat))) => {
                metrics.insert(format!("{stat}_{family}_ms"), number(key, v)? / 1e6);
            }
        }
    }
    // Throughputs: the Server scenario says "Completed", Offline not; SingleStream and
    // MultiStream report latencies only.
    for (key, name) in [
        ("Completed samples per second", "request_throughput"),
        ("Samples per second", "request_throughput"),
        ("Completed tokens per second", "output_throughput"),
        ("Tokens per second", "output_throughput"),
    ] {
        if let Some(v) = e.get(key) {
            metrics.insert(name.to_owned(), number(key, v)?);
        }
    }
    if !metrics.contains_key("mean_e2el_ms") {
        return Err(TOOL.err(
            origin,
            "Mean latency (ns)",
            "is missing".to_owned(),
            format!(
                "{}; {} summaries state it under \"Additional Stats\"",
                TOOL.remedy, TOOL.supported
            ),
        ));
    }
    // Server: the offered load is `target_qps`; Offline sends every sample at once (rate inf).
    let request_rate = match (scenario.as_str(), e.get("target_qps")) {
        ("Server", Some(q)) => Some(number("target_qps", q)?),
        _ => None,
    };
    let mut fields = Map::new();
    fields.insert(JSON_KEY.to_owned(), Value::String(text.to_owned()));
    Ok(ServeResult {
        schema: TOOL.schema,
        settings: Settings {
            request_rate,
            ..Settings::default()
        },
        completed: 0,
        failed: None,
        duration_s: 0.0,
        metrics,
        samples: None,
        fields,
    })
}
