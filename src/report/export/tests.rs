//! Tests of the exports: gab against github-action-benchmark's real samples (one struct for
//! both), BMF against its documented shape, `OpenMetrics` through two real parsers. Reads the
//! fixtures compiled in; no other I/O.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::*;
use crate::case::Verdict;
use crate::report::render::tests::sample_report;

/// github-action-benchmark's custom entry, as its samples have it (`range` a string or a number).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct GabSample {
    name: String,
    unit: String,
    value: f64,
    #[serde(default)]
    range: Option<GabRange>,
    #[serde(default)]
    extra: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum GabRange {
    Number(f64),
    Text(String),
}

const GAB_SAMPLES: [&str; 3] = [
    include_str!(
        "../../../tests/fixtures/bench_formats/github-action-benchmark__customSmallerIsBetter_output.json"
    ),
    include_str!(
        "../../../tests/fixtures/bench_formats/github-action-benchmark__customSmallerIsBetter_output2.json"
    ),
    include_str!(
        "../../../tests/fixtures/bench_formats/github-action-benchmark__customBiggerIsBetter_output.json"
    ),
];

#[test]
fn gab_output_parses_with_the_shape_of_the_real_samples() {
    for sample in GAB_SAMPLES {
        let parsed: Vec<GabSample> = serde_json::from_str(sample).expect("a real sample parses");
        assert!(!parsed.is_empty());
        for entry in &parsed {
            assert!(!entry.name.is_empty() && !entry.unit.is_empty() && entry.value.is_finite());
            match &entry.range {
                Some(GabRange::Number(n)) => assert!(*n >= 0.0),
                Some(GabRange::Text(t)) => assert!(!t.is_empty()),
                None => {}
            }
        }
    }
    let report = sample_report();
    let text = render_gab(&report).expect("renders");
    let ours: Vec<GabSample> = serde_json::from_str(&text).expect("our output parses");
    let measured: Vec<&CaseReport> = report
        .cases
        .iter()
        .filter(|c| c.median_ms.is_some())
        .collect();
    assert!(measured.len() >= 2, "the fixture has measured cases");
    for c in &measured {
        let name = format!("{} on {}: median step", c.case, report.run.gpu_sku);
        let entry = ours.iter().find(|e| e.name == name).expect("median entry");
        assert_eq!(entry.unit, "ms");
        assert!((entry.value - c.median_ms.expect("measured")).abs() < 1e-12);
        assert!(matches!(entry.range, Some(GabRange::Text(ref r)) if r.starts_with('±')));
        let extra = entry.extra.as_deref().expect("extra");
        assert!(
            extra.contains("floor") && extra.contains("utilisation"),
            "{extra}"
        );
    }
    // Errored and missing cases have no figure: no entry, never a 0.
    for c in report.cases.iter().filter(|c| c.median_ms.is_none()) {
        assert!(
            ours.iter()
                .all(|e| !e.name.starts_with(&format!("{} ", c.case))),
            "{} must be left out",
            c.case
        );
    }
    assert!(ours.iter().all(|e| e.value > 0.0));
    assert_eq!(ours.len(), measured.len() * 2, "median and p90 per case");
}

/// A BMF metric as Bencher documents it: `value` required, bounds optional, nothing else.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct BmfSample {
    value: f64,
    #[serde(default)]
    lower_value: Option<f64>,
    #[serde(default)]
    upper_value: Option<f64>,
}

type Bmf = BTreeMap<String, BTreeMap<String, BmfSample>>;

#[test]
fn bmf_has_the_documented_shape() {
    // Our own example in the documented shape parses with the same struct.
    let documented = r#"{"my-bench": {"latency": {"value": 12.5, "lower_value": 12.0,
        "upper_value": 13.0}, "size": {"value": 3.0}}}"#;
    let doc: Bmf = serde_json::from_str(documented).expect("documented shape");
    assert_eq!(doc["my-bench"].len(), 2);

    let report = sample_report();
    let text = render_bmf(&report).expect("renders");
    let raw: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    assert!(raw.is_object(), "BMF is an object of benchmarks");
    let bmf: Bmf = serde_json::from_str(&text).expect("BMF shape");
    for c in &report.cases {
        match c.median_ms {
            Some(median) => {
                let measures = &bmf[&c.case];
                let step = &measures["step-median-ms"];
                assert!((step.value - median).abs() < 1e-12);
                let (lo, hi) = (step.lower_value.expect("lo"), step.upper_value.expect("hi"));
                assert!(lo <= step.value && step.value <= hi);
                assert!((measures["utilisation"].value - c.utilisation.expect("u")).abs() < 1e-12);
                assert!((measures["floor-ms"].value - c.floor_ms.expect("floor")).abs() < 1e-12);
                assert!(measures.contains_key("step-p90-ms"));
            }
            None => {
                // A floor alone (an errored case) is still a figure; a step time is never made up.
                if let Some(measures) = bmf.get(&c.case) {
                    assert!(!measures.contains_key("step-median-ms"), "{}", c.case);
                    assert!(!measures.contains_key("utilisation"), "{}", c.case);
                }
            }
        }
    }
    assert!(
        bmf.values()
            .flat_map(BTreeMap::values)
            .all(|m| m.value != 0.0)
    );
}

#[test]
fn bmf_and_gab_leave_out_non_finite_figures() {
    let mut report = sample_report();
    for c in &mut report.cases {
        c.median_ms = Some(f64::NAN);
        c.p90_ms = None;
        c.floor_ms = Some(f64::INFINITY);
        c.utilisation = None;
    }
    assert_eq!(render_bmf(&report).expect("renders").trim(), "{}");
    assert_eq!(render_gab(&report).expect("renders").trim(), "[]");
    assert_eq!(render_openmetrics(&report), "# EOF\n");
}

#[test]
fn openmetrics_parses_with_the_openmetrics_parser() {
    let report = sample_report();
    let text = render_openmetrics(&report);
    assert!(text.ends_with("# EOF\n"), "{text}");
    let exposition =
        openmetrics_parser::openmetrics::parse_openmetrics(&text).expect("valid OpenMetrics");
    let util = &exposition.families["utilgate_utilisation_ratio"];
    assert_eq!(util.unit, "ratio");
    assert!(!util.help.is_empty());
    assert_eq!(util.family_type, openmetrics_parser::OpenMetricsType::Gauge);
    let measured = report.cases.iter().filter(|c| c.utilisation.is_some());
    assert_eq!(util.iter_samples().count(), measured.clone().count());
    for c in measured {
        let sample = util
            .iter_samples()
            .find(|s| {
                let labels = s.get_labelset().expect("labels");
                labels.get_label_value("model") == Some(c.key.model.as_str())
                    && labels.get_label_value("batch") == Some(c.key.batch.to_string().as_str())
                    && labels.get_label_value("suite") == Some(c.key.suite.as_str())
            })
            .expect("a sample per case");
        let labels = sample.get_labelset().expect("labels");
        assert_eq!(labels.get_label_value("gpu"), Some("h100-sxm"));
        assert_eq!(labels.get_label_value("precision"), Some("bf16"));
        let openmetrics_parser::OpenMetricsValue::Gauge(v) = &sample.value else {
            panic!("a gauge");
        };
        assert!((v.as_f64() - c.utilisation.expect("u")).abs() < 1e-12);
    }
    let median = &exposition.families["utilgate_step_median_seconds"];
    assert_eq!(median.unit, "seconds");
    for name in ["utilgate_step_p90_seconds", "utilgate_floor_seconds"] {
        assert!(exposition.families.contains_key(name), "{name}");
    }
}

#[test]
fn openmetrics_parses_with_prometheus_parse_and_escapes_labels() {
    let mut report = sample_report();
    let odd = "we\"ird\\model\nname";
    report.cases[0].key.model = odd.to_owned();
    let text = render_openmetrics(&report);
    assert!(text.contains(r#"model="we\"ird\\model\nname""#), "{text}");
    let exposition =
        openmetrics_parser::openmetrics::parse_openmetrics(&text).expect("still valid OpenMetrics");
    let models: Vec<String> = exposition.families["utilgate_floor_seconds"]
        .iter_samples()
        .filter_map(|s| {
            let labels = s.get_labelset().ok()?;
            labels.get_label_value("model").map(str::to_owned)
        })
        .collect();
    assert!(
        models.iter().any(|m| m == odd),
        "unescaped back: {models:?}"
    );
    let lines = text.lines().map(|l| Ok(l.to_owned()));
    let scrape = prometheus_parse::Scrape::parse(lines).expect("parses");
    let medians: Vec<&prometheus_parse::Sample> = scrape
        .samples
        .iter()
        .filter(|s| s.metric == "utilgate_step_median_seconds")
        .collect();
    let measured: Vec<&CaseReport> = report
        .cases
        .iter()
        .filter(|c| c.median_ms.is_some())
        .collect();
    assert_eq!(medians.len(), measured.len());
    for c in measured {
        let sample = medians
            .iter()
            .find(|s| {
                s.labels.get("suite") == Some(c.key.suite.as_str())
                    && s.labels.get("batch") == Some(c.key.batch.to_string().as_str())
                    && s.labels.get("phase") == Some(c.key.phase.to_string().as_str())
                    && s.labels.get("context") == Some(c.key.context.to_string().as_str())
                    && s.labels.get("gpu") == Some("h100-sxm")
                    && s.labels.get("model").is_some()
            })
            .expect("a sample per case");
        let prometheus_parse::Value::Gauge(v) = sample.value else {
            panic!("a gauge: {:?}", sample.value);
        };
        assert!((v - c.median_ms.expect("m") / 1000.0).abs() < 1e-12);
    }
    assert!(
        scrape.docs.contains_key("utilgate_floor_seconds"),
        "HELP lines are read"
    );
    assert!(report.cases.iter().any(|c| c.verdict == Verdict::Error));
}
