//! Exports of a run report for the tools teams already run: Bencher Metric Format (BMF) JSON
//! for `bencher run --adapter json`, `OpenMetrics` text for a Prometheus pushgateway or Grafana,
//! and github-action-benchmark's `customSmallerIsBetter` JSON. Pure: returns strings.
//!
//! A figure the run does not have (an errored case, a case without a floor) is left out, never
//! written as 0; non-finite figures are left out too, since none of the formats can carry them.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use crate::report::{CaseReport, RunReport};

/// One BMF metric: a value with optional bounds.
#[derive(Debug, Serialize)]
struct BmfMetric {
    value: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    lower_value: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    upper_value: Option<f64>,
}

fn finite(x: Option<f64>) -> Option<f64> {
    x.filter(|v| v.is_finite())
}

/// The BMF measures of one case, by measure slug.
fn bmf_measures(c: &CaseReport) -> BTreeMap<&'static str, BmfMetric> {
    let mut out = BTreeMap::new();
    let mut put = |slug: &'static str, value: Option<f64>| {
        if let Some(value) = finite(value) {
            out.insert(
                slug,
                BmfMetric {
                    value,
                    lower_value: None,
                    upper_value: None,
                },
            );
        }
    };
    put("utilisation", c.utilisation);
    put("floor-ms", c.floor_ms);
    put("step-p90-ms", c.p90_ms);
    if let Some(value) = finite(c.median_ms) {
        // The median step with the run's spread up to its p90: the band Bencher draws.
        let upper_value = finite(c.p90_ms).filter(|p90| *p90 >= value);
        out.insert(
            "step-median-ms",
            BmfMetric {
                value,
                lower_value: upper_value.map(|_| value),
                upper_value,
            },
        );
    }
    out
}

/// The run as Bencher Metric Format JSON: one benchmark per case (named by its case key), with
/// the measures `step-median-ms` (upper bound the p90), `step-p90-ms`, `floor-ms` and
/// `utilisation` (a fraction). The GPU is Bencher's testbed (`bencher run --testbed`).
///
/// # Errors
/// Only if JSON serialisation fails, which plain maps of finite numbers never do.
pub fn render_bmf(report: &RunReport) -> Result<String, serde_json::Error> {
    let benchmarks: BTreeMap<&str, BTreeMap<&'static str, BmfMetric>> = report
        .cases
        .iter()
        .map(|c| (c.case.as_str(), bmf_measures(c)))
        .filter(|(_, measures)| !measures.is_empty())
        .collect();
    let mut text = serde_json::to_string_pretty(&benchmarks)?;
    text.push('\n');
    Ok(text)
}

/// One github-action-benchmark entry (`customSmallerIsBetter`).
#[derive(Debug, Serialize)]
struct GabEntry {
    name: String,
    unit: &'static str,
    value: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    range: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    extra: Option<String>,
}

/// The tooltip line of a case: floor, utilisation and verdict, each only when known.
fn gab_extra(c: &CaseReport) -> String {
    let mut parts = Vec::new();
    if let Some(floor) = finite(c.floor_ms) {
        parts.push(format!("floor {floor:.3} ms"));
    }
    if let Some(u) = finite(c.utilisation) {
        parts.push(format!("utilisation {:.1}%", u * 100.0));
    }
    parts.push(format!("verdict {}", c.verdict.as_str()));
    parts.join(", ")
}

/// The run as github-action-benchmark `customSmallerIsBetter` JSON: per case the median and
/// the p90 step time in ms (named `<case> on <gpu>: median step` / `p90 step`), the repeat
/// spread as the median's range and floor, utilisation and verdict as the tooltip.
///
/// # Errors
/// Only if JSON serialisation fails, which plain entries of finite numbers never do.
pub fn render_gab(report: &RunReport) -> Result<String, serde_json::Error> {
    let gpu = &report.run.gpu_sku;
    let mut entries = Vec::new();
    for c in &report.cases {
        if let Some(value) = finite(c.median_ms) {
            entries.push(GabEntry {
                name: format!("{} on {gpu}: median step", c.case),
                unit: "ms",
                value,
                range: finite(c.repeat_spread_pct).map(|s| format!("±{s:.1}%")),
                extra: Some(gab_extra(c)),
            });
        }
        if let Some(value) = finite(c.p90_ms) {
            entries.push(GabEntry {
                name: format!("{} on {gpu}: p90 step", c.case),
                unit: "ms",
                value,
                range: None,
                extra: None,
            });
        }
    }
    let mut text = serde_json::to_string_pretty(&entries)?;
    text.push('\n');
    Ok(text)
}

/// An `OpenMetrics` label value with `\`, `"` and line feeds escaped.
fn escape_label(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for ch in value.chars() {
        match ch {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            other => out.push(other),
        }
    }
    out
}

/// The label set of a case: its key (a label per axis: axis names are lowercase identifiers
/// other than the built-in ones) and the GPU.
fn labels(c: &CaseReport, gpu: &str) -> String {
    let k = &c.key;
    let mut pairs = vec![
        ("suite", k.suite.clone()),
        ("model", k.model.clone()),
        ("precision", k.precision.clone()),
        ("phase", k.phase.to_string()),
        ("batch", k.batch.to_string()),
        ("context", k.context.to_string()),
    ];
    pairs.extend(k.axes.iter().map(|(name, value)| (name, value.to_owned())));
    pairs.push(("gpu", gpu.to_owned()));
    let inner: Vec<String> = pairs
        .iter()
        .map(|(name, value)| format!("{name}=\"{}\"", escape_label(value)))
        .collect();
    format!("{{{}}}", inner.join(","))
}

/// One gauge family: name (with its unit suffix), unit, help and how a case yields its value.
struct Family {
    name: &'static str,
    unit: &'static str,
    help: &'static str,
    value: fn(&CaseReport) -> Option<f64>,
}

const FAMILIES: [Family; 4] = [
    Family {
        name: "utilgate_utilisation_ratio",
        unit: "ratio",
        help: "Floor over the measured step time (1 = at the hardware floor).",
        value: |c| c.utilisation,
    },
    Family {
        name: "utilgate_step_median_seconds",
        unit: "seconds",
        help: "Median step time of the case.",
        value: |c| c.median_ms.map(|v| v / 1000.0),
    },
    Family {
        name: "utilgate_step_p90_seconds",
        unit: "seconds",
        help: "90th percentile step time of the case.",
        value: |c| c.p90_ms.map(|v| v / 1000.0),
    },
    Family {
        name: "utilgate_floor_seconds",
        unit: "seconds",
        help: "Hardware floor of the case's step (roofline of its bytes and FLOPs).",
        value: |c| c.floor_ms.map(|v| v / 1000.0),
    },
];

/// The run as `OpenMetrics` text: gauges `utilgate_utilisation_ratio`,
/// `utilgate_step_median_seconds`, `utilgate_step_p90_seconds` and `utilgate_floor_seconds`,
/// one sample per case labelled suite, model, precision, phase, batch, context and gpu, ending
/// with `# EOF`. A family no case has a figure for is left out.
#[must_use]
pub fn render_openmetrics(report: &RunReport) -> String {
    let gpu = &report.run.gpu_sku;
    let mut out = String::new();
    for family in &FAMILIES {
        let samples: Vec<(String, f64)> = report
            .cases
            .iter()
            .filter_map(|c| finite((family.value)(c)).map(|v| (labels(c, gpu), v)))
            .collect();
        if samples.is_empty() {
            continue;
        }
        let _ = writeln!(out, "# TYPE {} gauge", family.name);
        let _ = writeln!(out, "# UNIT {} {}", family.name, family.unit);
        let _ = writeln!(out, "# HELP {} {}", family.name, family.help);
        for (labels, value) in samples {
            let _ = writeln!(out, "{}{labels} {value}", family.name);
        }
    }
    out.push_str("# EOF\n");
    out
}

#[cfg(test)]
mod tests;
