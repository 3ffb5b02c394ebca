//! The report of an A/B session (`utilgate ab`): each case's base and head steps as the
//! verdict weighed them, the pairs of fresh processes, the paired drop, the decision, and the
//! gate. Nothing of a session is stored. Pure.
//!
//! The table's step figures are the decision's, not each side's own median: the base's level
//! and that level moved by the pairs' difference, so `1 - base / head` is the paired drop the
//! verdict judged. Each side's own median of its processes' medians (`base_median_ms`,
//! `head_median_ms` in `--format json`) ranks the processes of one side apart from their pairs,
//! and on a host that moved during the session it can lie far from the paired figure.

use std::fmt::Write as _;

use serde::Serialize;

use crate::case::Verdict;
use crate::compare::Decision;
use crate::report::format::{ms, signed_percent};
use crate::report::terminal::{Grid, GridCell};
use crate::report::{GateState, Terminal, Unconfirmed};

/// One case of the session: what each side measured and the decision.
#[derive(Debug, Serialize)]
pub struct AbCase {
    pub case: String,
    /// The median of the base's process medians, unpaired (the verdict's figures are the
    /// decision's `step_then_ms`, `step_now_ms` and `drop_pct`).
    pub base_median_ms: Option<f64>,
    /// The median of the head's process medians, unpaired.
    pub head_median_ms: Option<f64>,
    pub pairs: usize,
    pub confirmed: bool,
    /// The case's `max_drop_pct`: an inconclusive drop beyond it leaves the gate undecided.
    pub threshold_pct: f64,
    pub decision: Decision,
}

#[derive(Debug, Serialize)]
/// An A/B session: the two sides, the gate over its cases.
pub struct AbReport {
    pub schema_version: u32,
    pub base_dir: String,
    pub head_config: String,
    pub gpu: String,
    pub fail_on: Vec<Verdict>,
    pub gate_failed: bool,
    pub cases: Vec<AbCase>,
}

/// What the table's figures are: the verdict's paired drop, and the step figures it implies.
const AB_LEGEND: &str = "paired drop: the head's utilisation drop over the pairs' differences, \
the figure the verdict judges; base step ms: the base's typical step; head step ms: the base's \
moved by that paired difference, so paired drop = 1 - base / head (each side's own median is in \
--format json)";

/// The session as a terminal table, the reasons of every case that did not pass, the gate.
#[must_use]
pub fn render_ab(report: &AbReport, terminal: Terminal) -> String {
    let mut table = Grid::new(
        terminal,
        [
            "case",
            "base step ms",
            "head step ms",
            "pairs",
            "paired drop",
            "verdict",
        ],
    )
    .key_column(0)
    .beside_key(5);
    for c in &report.cases {
        table.row(vec![
            GridCell::left(c.case.clone()),
            GridCell::right(ms(c.decision.step_then_ms)),
            GridCell::right(ms(c.decision.step_now_ms)),
            GridCell::right(format!(
                "{}{}",
                c.pairs,
                if c.confirmed { " (confirm)" } else { "" }
            )),
            GridCell::right(signed_percent(c.decision.drop_pct)),
            GridCell::left(c.decision.verdict.as_str()),
        ]);
    }
    let mut out = format!(
        "A/B on {}: base {} against head {} (pairs of fresh processes, ABBA order)\n{}\n{}\n",
        report.gpu,
        report.base_dir,
        report.head_config,
        table.render(),
        AB_LEGEND
    );
    for c in &report.cases {
        if c.decision.verdict != Verdict::Pass {
            let _ = writeln!(
                out,
                "{} {}:",
                c.decision.verdict.as_str().to_uppercase(),
                c.case
            );
            for reason in &c.decision.reasons {
                let _ = writeln!(out, "  {reason}");
            }
        }
    }
    let _ = writeln!(
        out,
        "gate: {}; nothing stored (an A/B session compares two commits)",
        gate_words(report)
    );
    out
}

/// The gate's state in words, as `run` says it: a case that errored is no pass, nor is an
/// inconclusive drop beyond its threshold (docs/verdict.md, "Could not tell").
fn gate_words(report: &AbReport) -> String {
    let errors = report
        .cases
        .iter()
        .filter(|c| c.decision.verdict == Verdict::Error)
        .count();
    let beyond: Vec<(&AbCase, f64)> = report
        .cases
        .iter()
        .filter(|c| c.decision.verdict == Verdict::Inconclusive)
        .filter(|c| !report.fail_on.contains(&c.decision.verdict))
        .filter_map(|c| c.decision.drop_pct.map(|d| (c, d)))
        .filter(|(c, d)| *d > c.threshold_pct)
        .collect();
    let unconfirmed = beyond
        .iter()
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(c, d)| Unconfirmed {
            case: c.case.clone(),
            drop_pct: *d,
            threshold_pct: c.threshold_pct,
            cases: beyond.len(),
            host_adjusted: false,
        });
    match GateState::of(!report.gate_failed, errors, unconfirmed.as_ref()) {
        GateState::Failed => "FAILED".to_owned(),
        GateState::Error => "error".to_owned(),
        GateState::Undecided => unconfirmed.map_or_else(
            || "could not tell".to_owned(),
            |u| {
                format!(
                    "could not tell, largest unconfirmed drop {} on {}",
                    u.figure(),
                    u.case
                )
            },
        ),
        GateState::Passed => "passed".to_owned(),
    }
}
