//! Service cases inside the run report (DESIGN.md §12): the cases of `kind = "serve"` suites sit
//! beside the step cases of the same run, count in its gate, get a suite entry each (a PR
//! comment, a status and a `JUnit` testsuite per suite), and carry the latency-split readings
//! and the HTML charts. Pure: the history arrives as data from the command that read it.

use std::collections::BTreeMap;

use super::context::{RunReport, SuiteReport, severity};
use super::serve::{ServeCaseReport, ServeHistoryPoint};
use super::serve_chart::{ServeChart, frontier_charts, history_chart, rate_charts};
use crate::case::Verdict;
use crate::serve::ServeKey;

fn counts(cases: &[&ServeCaseReport]) -> BTreeMap<Verdict, usize> {
    let mut out = BTreeMap::new();
    for c in cases {
        *out.entry(c.verdict).or_insert(0) += 1;
    }
    out
}

/// The worst gated change of a case, as `p99_ttft_ms +30.1%`.
fn worst_change(c: &ServeCaseReport) -> Option<String> {
    c.metrics
        .iter()
        .filter_map(|m| m.worse_pct.map(|w| (w, &m.metric)))
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(w, m)| format!("{m} {w:+.1}%"))
}

/// One sentence on the service cases: the worst news first.
#[must_use]
pub fn service_summary(cases: &[&ServeCaseReport], gpu_sku: &str) -> String {
    let n = cases.len();
    let noun = if n == 1 {
        "service case"
    } else {
        "service cases"
    };
    let counts = counts(cases);
    let failing: Vec<&ServeCaseReport> = cases.iter().copied().filter(|c| c.fails_gate).collect();
    if let Some(first) = failing.first() {
        let parts: Vec<String> = self::counts(&failing)
            .iter()
            .map(|(v, k)| format!("{k} {v}"))
            .collect();
        let detail = worst_change(first).map_or_else(String::new, |w| format!(", {w}"));
        return format!(
            "Service gate failed on {gpu_sku}: {} of {n} {noun}; first: {}{detail}.",
            parts.join(", "),
            first.case
        );
    }
    if let Some(k) = counts.get(&Verdict::Error) {
        let first = cases
            .iter()
            .find(|c| c.verdict == Verdict::Error)
            .map_or_else(String::new, |c| format!("; first: {}", c.case));
        return format!("Service: {k} of {n} {noun} could not be measured on {gpu_sku}{first}.");
    }
    let noteworthy: Vec<String> = counts
        .iter()
        .filter(|(v, _)| **v != Verdict::Pass)
        .map(|(v, k)| format!("{k} {v}"))
        .collect();
    if noteworthy.is_empty() {
        format!("All {n} {noun} pass on {gpu_sku}; no change beyond the thresholds.")
    } else {
        format!(
            "Service gate passed on {gpu_sku}: {n} {noun} ({}).",
            noteworthy.join(", ")
        )
    }
}

/// A suite entry per service suite, in name order.
fn service_suites(cases: &[ServeCaseReport], gpu_sku: &str) -> Vec<SuiteReport> {
    let mut names: Vec<&str> = cases.iter().map(|c| c.key.suite.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    names
        .into_iter()
        .map(|name| {
            let of: Vec<&ServeCaseReport> = cases.iter().filter(|c| c.key.suite == name).collect();
            let counts = counts(&of);
            let passed = !of.iter().any(|c| c.fails_gate);
            let errors = counts.get(&Verdict::Error).copied().unwrap_or(0);
            SuiteReport {
                name: name.to_owned(),
                passed,
                state: super::GateState::of(passed, errors, None),
                unconfirmed: None,
                cases: of.len(),
                failures: of
                    .iter()
                    .filter(|c| c.fails_gate && c.verdict != Verdict::Error)
                    .count(),
                errors,
                skipped: 0,
                attention: of
                    .iter()
                    .filter(|c| !matches!(c.verdict, Verdict::Pass | Verdict::New))
                    .count(),
                summary: service_summary(&of, gpu_sku),
                axes: Vec::new(),
                counts,
            }
        })
        .collect()
}

impl RunReport {
    /// Adds the run's service cases (with the gate's `fail_on` applied), their latency-split
    /// readings and the rate charts; the gate, counts, suites and summary then cover them.
    #[must_use]
    pub fn with_service(mut self, mut cases: Vec<ServeCaseReport>, readings: Vec<String>) -> Self {
        for c in &mut cases {
            c.fails_gate = self.gate.fail_on.contains(&c.verdict);
        }
        cases.sort_by(|a, b| {
            severity(a.verdict)
                .cmp(&severity(b.verdict))
                .then_with(|| a.key.grid_cmp(&b.key))
        });
        self.gate.passed &= !cases.iter().any(|c| c.fails_gate);
        for c in &cases {
            *self.gate.counts.entry(c.verdict).or_insert(0) += 1;
            self.gate.errors += usize::from(c.verdict == Verdict::Error);
        }
        self.service_charts = rate_charts(&cases);
        self.service_charts.extend(frontier_charts(&cases));
        self.service = cases;
        self.service_readings = readings;
        self.refresh_summaries();
        self
    }

    /// Attaches each service case's stored history (oldest first, as the command read it) and
    /// its history chart; the run's own result is marked `current`, appended when missing.
    #[must_use]
    pub fn with_service_history(
        mut self,
        histories: &BTreeMap<ServeKey, Vec<ServeHistoryPoint>>,
    ) -> Self {
        for case in &mut self.service {
            let mut points = histories.get(&case.key).cloned().unwrap_or_default();
            for p in &mut points {
                p.current = p.run_id == self.run.id;
            }
            if case.verdict != Verdict::Error && !points.iter().any(|p| p.current) {
                points.push(ServeHistoryPoint {
                    run_id: self.run.id,
                    started_at: self.run.started_at.clone(),
                    median_ttft_ms: case.means.get("median_ttft_ms").copied(),
                    p99_ttft_ms: case.means.get("p99_ttft_ms").copied(),
                    median_itl_ms: case.means.get("median_itl_ms").copied(),
                    p99_itl_ms: case.means.get("p99_itl_ms").copied(),
                    current: true,
                });
            }
            case.history = points;
        }
        let charts: Vec<ServeChart> = self
            .service
            .iter()
            .filter_map(|c| history_chart(c, &c.history))
            .collect();
        self.service_charts.extend(charts);
        self
    }

    /// The suite entries and summary sentence of the service cases, after the step suites'.
    pub(super) fn refresh_service_summaries(&mut self) {
        if self.service.is_empty() {
            return;
        }
        self.suites
            .extend(service_suites(&self.service, &self.run.gpu_sku));
        let all: Vec<&ServeCaseReport> = self.service.iter().collect();
        let line = service_summary(&all, &self.run.gpu_sku);
        self.summary = if self.cases.is_empty() {
            line
        } else {
            format!("{} {line}", self.summary)
        };
    }

    /// The service share of the report for one suite: its cases, readings and charts.
    pub(super) fn service_of_suite(
        &self,
        suite: &str,
    ) -> (Vec<ServeCaseReport>, Vec<String>, Vec<ServeChart>) {
        let prefix = format!("{suite}/");
        (
            self.service
                .iter()
                .filter(|c| c.key.suite == suite)
                .cloned()
                .collect(),
            self.service_readings
                .iter()
                .filter(|r| r.starts_with(&prefix))
                .cloned()
                .collect(),
            self.service_charts
                .iter()
                .filter(|c| c.suite == suite)
                .cloned()
                .collect(),
        )
    }
}
