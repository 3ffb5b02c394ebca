//! `AIPerf`'s profile export (`aiperf profile`, the successor of genai-perf): the JSON
//! `profile_export_aiperf.json` (schema 1.x, every metric an object with its `unit` and
//! statistics) and the CSV `profile_export_aiperf.csv` (display names with units, values
//! rounded to two decimals, no run settings). Pure.
//!
//! `AIPerf`'s `inter_token_latency` is per request, (latency - TTFT) / (output tokens - first
//! chunk's tokens): vLLM's TPOT, so it is read as `tpot`; its `inter_chunk_latency` (every gap
//! between streamed chunks) is vLLM's ITL.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::{Doc, Object, Tool, stat_name, whole};
use crate::serve::error::ServeError;
use crate::serve::model::{Schema, ServeResult, Settings};

const TOOL: Tool = Tool {
    name: "AIPerf",
    schema: Schema::AiperfProfileExport,
    supported: "aiperf 0.13 (profile export schema 1.4)",
    remedy: "pass the profile_export_aiperf.json (or .csv) that `aiperf profile` wrote, unedited",
};

/// The key the stored form of a CSV export keeps its text under.
pub(super) const CSV_JSON_KEY: &str = "aiperf_profile_export_csv";

/// Latency distributions: `AIPerf`'s name, the canonical family, and the unit it writes.
const LATENCIES: [(&str, &str, &str); 4] = [
    ("time_to_first_token", "ttft", "ms"),
    ("inter_token_latency", "tpot", "ms"),
    ("inter_chunk_latency", "itl", "ms"),
    ("request_latency", "e2el", "ms"),
];

/// Throughputs: `AIPerf`'s name, the canonical metric, and the unit it writes.
const THROUGHPUTS: [(&str, &str, &str); 4] = [
    ("request_throughput", "request_throughput", "requests/sec"),
    ("output_token_throughput", "output_throughput", "tokens/sec"),
    (
        "total_token_throughput",
        "total_token_throughput",
        "tokens/sec",
    ),
    ("input_token_throughput", "input_throughput", "tokens/sec"),
];

pub(super) fn is_json(obj: &Object) -> bool {
    obj.contains_key("aiperf_version")
        || (obj.contains_key("input_config") && obj.contains_key("benchmark_id"))
}

pub(super) fn is_csv(text: &str) -> bool {
    text.trim_start().starts_with("Metric,avg,")
}

/// `AIPerf`'s statistic names: `avg`, `min`, `max`, `std`, `p1` .. `p99` (`count` and `sum` are
/// not statistics of the latency).
fn stat(key: &str) -> Option<String> {
    match key {
        "avg" => Some("mean".to_owned()),
        "min" | "max" | "std" => Some(key.to_owned()),
        _ => stat_name(key.strip_prefix('p')?.parse().ok()?),
    }
}

/// The unit of metric `name` must be `want`: a renamed unit would scale every figure.
fn check_unit(doc: &Doc<'_>, obj: &Object, name: &str, want: &str) -> Result<(), ServeError> {
    if doc.get(obj, &[name]).is_none() {
        return Ok(());
    }
    let unit = doc.get(obj, &[name, "unit"]);
    if unit.and_then(Value::as_str) == Some(want) {
        return Ok(());
    }
    Err(TOOL.err(
        doc.origin,
        &format!("{name}.unit"),
        format!(
            "is {}, where {} writes \"{want}\"",
            unit.map_or_else(|| "missing".to_owned(), Value::to_string),
            TOOL.supported
        ),
        format!(
            "this AIPerf version changed the unit of `{name}`: tell utilgate's maintainers the version, or re-export with {}",
            TOOL.supported
        ),
    ))
}

pub(super) fn parse_json(obj: &Object, origin: &str) -> Result<ServeResult, ServeError> {
    let doc = Doc {
        tool: &TOOL,
        origin,
    };
    let mut metrics = BTreeMap::new();
    doc.need_object(obj, &["request_latency"])?;
    for (name, family, unit) in LATENCIES {
        check_unit(&doc, obj, name, unit)?;
        doc.distribution(obj, &[name], family, 1.0, stat, &mut metrics)?;
    }
    for (name, metric, unit) in THROUGHPUTS {
        check_unit(&doc, obj, name, unit)?;
        if let Some(x) = doc.number(obj, &[name, "avg"])? {
            metrics.insert(metric.to_owned(), x);
        }
    }
    doc.need(obj, &["request_throughput", "avg"])?;
    let completed = doc
        .count(obj, &["request_count", "avg"])?
        .ok_or_else(|| TOOL.missing(origin, "request_count.avg"))?;
    check_unit(&doc, obj, "benchmark_duration", "sec")?;
    let duration_s = doc.need_number(obj, &["benchmark_duration", "avg"])?;
    // Errors: `error_request_count` when any request failed; an empty `error_summary` says
    // none did.
    let failed = match doc.count(obj, &["error_request_count", "avg"])? {
        Some(n) => Some(n),
        None => doc
            .get(obj, &["error_summary"])
            .and_then(Value::as_array)
            .filter(|e| e.is_empty())
            .map(|_| 0),
    };
    Ok(ServeResult {
        schema: TOOL.schema,
        settings: settings(&doc, obj)?,
        completed,
        failed,
        duration_s,
        metrics,
        samples: None,
        fields: obj.clone(),
    })
}

/// The run's settings from `input_config` (`AIPerf` 0.13's layout: `models.items[].name`,
/// `phases[]` with the profiling phase's `type`, `rate`, `concurrency` and `requests`,
/// `datasets[]` with `random_seed` and the synthetic `prompts.isl/osl` means).
fn settings(doc: &Doc<'_>, obj: &Object) -> Result<Settings, ServeError> {
    let Some(config) = doc.get(obj, &["input_config"]).and_then(Value::as_object) else {
        return Ok(Settings::default());
    };
    let first = |path: &[&str]| -> Option<&Object> {
        doc.get(config, path)?
            .as_array()?
            .iter()
            .filter_map(Value::as_object)
            .find(|o| {
                o.get("kind")
                    .and_then(Value::as_str)
                    .is_none_or(|k| k == "profiling")
            })
    };
    let model = first(&["models", "items"]).and_then(|m| doc.text(m, &["name"]));
    let mut s = Settings {
        model,
        ..Settings::default()
    };
    if let Some(phase) = first(&["phases"]) {
        s.request_rate = doc.number(phase, &["rate"])?;
        s.max_concurrency = doc.count(phase, &["concurrency"])?;
        s.num_prompts = doc.count(phase, &["requests"])?;
    }
    if let Some(data) = first(&["datasets"]) {
        s.dataset = doc.text(data, &["type"]);
        s.seed = doc.count(data, &["random_seed"])?;
        s.input_len = doc
            .number(data, &["prompts", "isl", "mean"])?
            .and_then(whole);
        s.output_len = doc
            .number(data, &["prompts", "osl", "mean"])?
            .and_then(whole);
    }
    if s.seed.is_none() {
        s.seed = doc.count(obj, &["run_info", "random_seed"])?;
    }
    Ok(s)
}

/// The CSV's display names: the canonical family or metric, and the unit in the name.
const CSV_LATENCIES: [(&str, &str); 4] = [
    ("Time to First Token", "ttft"),
    ("Inter Token Latency", "tpot"),
    ("Inter Chunk Latency", "itl"),
    ("Request Latency", "e2el"),
];

const CSV_VALUES: [(&str, &str); 4] = [
    ("Request Throughput (requests/sec)", "request_throughput"),
    ("Output Token Throughput (tokens/sec)", "output_throughput"),
    (
        "Total Token Throughput (tokens/sec)",
        "total_token_throughput",
    ),
    ("Input Token Throughput (tokens/sec)", "input_throughput"),
];

/// The CSV's rows by display name, each a map of column name to the non-empty cell.
type Rows = BTreeMap<String, BTreeMap<String, String>>;

fn csv_rows(text: &str, origin: &str) -> Result<Rows, ServeError> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(text.as_bytes());
    let mut header: Vec<String> = Vec::new();
    let mut rows = Rows::new();
    for record in reader.records() {
        let record = record.map_err(|e| {
            TOOL.err(
                origin,
                "(CSV)",
                format!("is not CSV: {e}"),
                TOOL.remedy.to_owned(),
            )
        })?;
        let Some(first) = record.get(0) else { continue };
        if first == "Metric" {
            header = record.iter().map(str::to_owned).collect();
            continue;
        }
        let row = header
            .iter()
            .zip(record.iter())
            .skip(1)
            .filter(|(_, v)| !v.is_empty())
            .map(|(h, v)| (h.clone(), v.to_owned()))
            .collect();
        rows.insert(first.to_owned(), row);
    }
    Ok(rows)
}

/// The CSV export: a table of distributions (`Metric,avg,min,max,sum,p1,...`) and, after a
/// blank line, one of single values (`Metric,Value`). Every row is keyed by its display name.
pub(super) fn parse_csv(text: &str, origin: &str) -> Result<ServeResult, ServeError> {
    let rows = csv_rows(text, origin)?;
    let number = |name: &str, col: &str, v: &str| {
        v.parse::<f64>().map_err(|_| {
            TOOL.err(
                origin,
                &format!("{name} / {col}"),
                format!("is {v:?}, not a number"),
                TOOL.remedy.to_owned(),
            )
        })
    };
    let value = |name: &str| -> Result<Option<f64>, ServeError> {
        rows.get(name)
            .and_then(|r| r.get("Value"))
            .map(|v| number(name, "Value", v))
            .transpose()
    };
    let need = |name: &'static str| -> Result<f64, ServeError> {
        value(name)?.ok_or_else(|| TOOL.missing(origin, name))
    };
    let mut metrics = BTreeMap::new();
    for (display, family) in CSV_LATENCIES {
        let prefix = format!("{display} (");
        for (name, row) in rows.iter().filter(|(n, _)| n.starts_with(&prefix)) {
            if name != &format!("{display} (ms)") {
                return Err(TOOL.err(
                    origin,
                    name,
                    format!("is not in ms, where {} writes \"{display} (ms)\"", TOOL.supported),
                    format!(
                        "this AIPerf version changed the unit: tell utilgate's maintainers the version, or re-export with {}",
                        TOOL.supported
                    ),
                ));
            }
            for (col, v) in row {
                if let Some(s) = stat(col) {
                    metrics.insert(format!("{s}_{family}_ms"), number(name, col, v)?);
                }
            }
        }
    }
    if !rows.contains_key("Request Latency (ms)") {
        return Err(TOOL.missing(origin, "Request Latency (ms)"));
    }
    for (display, metric) in CSV_VALUES {
        if let Some(x) = value(display)? {
            metrics.insert(metric.to_owned(), x);
        }
    }
    need("Request Throughput (requests/sec)")?;
    let completed = whole(need("Request Count")?).ok_or_else(|| {
        TOOL.err(
            origin,
            "Request Count",
            "is not a whole number".to_owned(),
            TOOL.remedy.to_owned(),
        )
    })?;
    let duration_s = need("Benchmark Duration (sec)")?;
    let failed = value("Error Request Count")?.and_then(whole);
    let mut fields = Map::new();
    fields.insert(CSV_JSON_KEY.to_owned(), Value::String(text.to_owned()));
    Ok(ServeResult {
        schema: TOOL.schema,
        // The CSV states no settings at all: its rate is unknown, not "inf".
        settings: Settings {
            rate_unstated: true,
            ..Settings::default()
        },
        completed,
        failed,
        duration_s,
        metrics,
        samples: None,
        fields,
    })
}
