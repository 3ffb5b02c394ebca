//! Service cases in the one run report (`RunReport::service`): the case model every surface
//! renders (terminal table, JSON, PR comment, HTML charts, `JUnit`), built from the stored
//! results and their decisions (`pipeline::serve_stored`). Pure: returns values and strings.

use std::fmt::Write as _;

use comfy_table::Color;

use crate::report::Terminal;
use crate::report::terminal::{Grid, GridCell};
use serde::Serialize;

use crate::case::Verdict;
use crate::compare::{MetricDecision, ServeDecision};
use crate::serve::{ServeEstimate, ServeKey, Settings};

/// One repeat as reported: where it came from and every field of the file, unchanged.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServeRepeatReport {
    pub source: String,
    pub schema: String,
    pub fields: serde_json::Value,
}

/// One service case as reported.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServeCaseReport {
    pub key: ServeKey,
    pub case: String,
    pub verdict: Verdict,
    pub reasons: Vec<String>,
    pub metrics: Vec<MetricDecision>,
    pub settings: Option<Settings>,
    /// Mean over repeats of every metric the files hold.
    pub means: std::collections::BTreeMap<String, f64>,
    pub estimate: Option<ServeEstimate>,
    /// The baseline's result id, when there is one.
    pub baseline_result: Option<i64>,
    /// Mean over the baseline's repeats of every metric its files hold (empty without one).
    pub baseline_means: std::collections::BTreeMap<String, f64>,
    /// Whether this case's verdict is listed in `fail_on` (set where the gate is known).
    pub fails_gate: bool,
    /// The case's stored runs on this GPU, oldest first, this run last (set by publishing).
    pub history: Vec<ServeHistoryPoint>,
    pub repeats: Vec<ServeRepeatReport>,
    /// A sweep's frontiers, the baseline's and this run's, and the levels judged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frontier: Option<crate::compare::FrontierFigures>,
}

/// One stored run of a service case, for history charts: the mean latencies of its repeats.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServeHistoryPoint {
    pub run_id: i64,
    pub started_at: String,
    pub median_ttft_ms: Option<f64>,
    pub p99_ttft_ms: Option<f64>,
    pub median_itl_ms: Option<f64>,
    pub p99_itl_ms: Option<f64>,
    /// The point of the run being reported.
    pub current: bool,
}

impl ServeCaseReport {
    #[must_use]
    pub fn new(key: ServeKey, decision: &ServeDecision) -> Self {
        ServeCaseReport {
            case: key.to_string(),
            key,
            verdict: decision.verdict,
            reasons: decision.reasons.clone(),
            metrics: decision.metrics.clone(),
            settings: None,
            means: std::collections::BTreeMap::new(),
            estimate: None,
            baseline_result: None,
            baseline_means: std::collections::BTreeMap::new(),
            fails_gate: false,
            history: Vec::new(),
            repeats: Vec::new(),
            frontier: decision.frontier.clone(),
        }
    }
}

fn num(x: Option<f64>, digits: usize) -> String {
    x.map_or_else(|| "-".to_owned(), |v| format!("{v:.digits$}"))
}

fn verdict_color(v: Verdict) -> Color {
    match v {
        Verdict::Regressed | Verdict::Invalid | Verdict::Error => Color::Red,
        Verdict::Inconclusive | Verdict::Missing => Color::Yellow,
        Verdict::Improved => Color::Green,
        Verdict::Pass | Verdict::New => Color::Reset,
    }
}

/// The worst gated change of a case, as `+30.1% p99_ttft_ms`.
fn worst(c: &ServeCaseReport) -> String {
    c.metrics
        .iter()
        .filter_map(|m| m.worse_pct.map(|w| (w, &m.metric)))
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map_or_else(|| "-".to_owned(), |(w, m)| format!("{w:+.1}% {m}"))
}

/// The service cases as a terminal table: means over repeats, the worst gated change, the
/// verdict. One table for `import serve`, a service suite's run and a stored run's report.
#[must_use]
pub fn service_table(cases: &[ServeCaseReport], terminal: Terminal) -> String {
    let mut table = Grid::new(
        terminal,
        [
            "case",
            "TTFT p50 ms",
            "TTFT p99 ms",
            "ITL p50 ms",
            "ITL p99 ms",
            "out tok/s",
            "done/failed",
            "worst change",
            "verdict",
        ],
    )
    .key_column(0)
    .beside_key(8);
    for c in cases {
        let m = |k: &str| c.means.get(k).copied();
        // A sweep's files are different loads: no mean latency describes it. Its figures are
        // its frontier's, stated under the table (`service_notes`).
        let latencies = if c.frontier.is_some() {
            [
                "see frontier".to_owned(),
                String::new(),
                String::new(),
                String::new(),
            ]
        } else {
            [
                num(m("median_ttft_ms"), 1),
                num(m("p99_ttft_ms"), 1),
                num(m("median_itl_ms"), 2),
                num(m("p99_itl_ms"), 2),
            ]
        };
        let [ttft50, ttft99, itl50, itl99] = latencies;
        table.row(vec![
            GridCell::left(&c.case),
            GridCell::right(ttft50),
            GridCell::right(ttft99),
            GridCell::right(itl50),
            GridCell::right(itl99),
            GridCell::right(num(m("output_throughput"), 1)),
            // A count the files do not state is `-`, never 0.
            GridCell::right(format!(
                "{}/{}",
                num(m("completed"), 0),
                num(m("failed"), 0)
            )),
            GridCell::left(worst(c)),
            GridCell::left(c.verdict.as_str()).colored(verdict_color(c.verdict)),
        ]);
    }
    table.render()
}

/// What the terminal says under a service table: the reasons of every case that needs
/// attention, the estimates, and the latency-split readings.
pub fn service_notes(out: &mut String, cases: &[ServeCaseReport], readings: &[String]) {
    for c in cases
        .iter()
        .filter(|c| !matches!(c.verdict, Verdict::Pass | Verdict::New))
    {
        let _ = writeln!(out, "\n{} — {}", c.case, c.verdict);
        for r in &c.reasons {
            let _ = writeln!(out, "  - {r}");
        }
    }
    for c in cases {
        if let Some(f) = &c.frontier {
            let _ = writeln!(
                out,
                "{}: {}",
                c.case,
                super::serve_frontier::frontier_line(f, &c.metrics)
            );
        }
    }
    for c in cases {
        if let Some(e) = &c.estimate {
            for line in e.lines() {
                let _ = writeln!(out, "{}: {line}", c.case);
            }
        }
    }
    for r in readings {
        let _ = writeln!(out, "reading (estimate): {r}");
    }
}
