//! The report of an A/B session (`utilgate ab`): each case's base and head medians, the pairs
//! of fresh processes, the decision, and the gate. Nothing of a session is stored. Pure.

use std::fmt::Write as _;

use serde::Serialize;

use crate::case::Verdict;
use crate::compare::Decision;
use crate::report::Terminal;
use crate::report::format::{ms, signed_percent};
use crate::report::terminal::{Grid, GridCell};

/// One case of the session: what each side measured and the decision.
#[derive(Debug, Serialize)]
pub struct AbCase {
    pub case: String,
    pub base_median_ms: Option<f64>,
    pub head_median_ms: Option<f64>,
    pub pairs: usize,
    pub confirmed: bool,
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

/// The session as a terminal table, the reasons of every case that did not pass, the gate.
#[must_use]
pub fn render_ab(report: &AbReport, terminal: Terminal) -> String {
    let mut table = Grid::new(
        terminal,
        ["case", "base ms", "head ms", "pairs", "drop", "verdict"],
    )
    .key_column(0)
    .beside_key(5);
    for c in &report.cases {
        table.row(vec![
            GridCell::left(c.case.clone()),
            GridCell::right(ms(c.base_median_ms)),
            GridCell::right(ms(c.head_median_ms)),
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
        "A/B on {}: base {} against head {} (pairs of fresh processes, ABBA order)\n{}\n",
        report.gpu,
        report.base_dir,
        report.head_config,
        table.render()
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
        if report.gate_failed {
            "FAILED"
        } else {
            "passed"
        }
    );
    out
}
