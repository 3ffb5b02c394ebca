//! Renderings of `utilgate history` and `utilgate changes`: a case's change points with what
//! arrived on their night, and its slide, as text or JSON. Pure.

use std::fmt::Write as _;

use serde::Serialize;

use crate::case::CaseKey;
use crate::compare::history::{HistoryRead, NightChange, Slide};
use crate::compare::{Detector, Significance};

/// One case's history read, as the commands print it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CaseHistoryReport {
    pub case: CaseKey,
    pub gpu_sku: String,
    pub baseline_branch: String,
    pub max_drop_pct: f64,
    /// What the nights' values are: utilisation, or (no night with a floor) speed against the
    /// first night.
    pub measure: HistoryMeasure,
    pub first_night: Option<String>,
    pub last_night: Option<String>,
    #[serde(flatten)]
    pub read: HistoryRead,
}

/// The series a history is read on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HistoryMeasure {
    /// floor / step, where the case has a floor.
    Utilisation,
    /// first night's step / step, for a history without a floor (an imported one).
    SpeedVsFirstNight,
}

impl HistoryMeasure {
    #[must_use]
    pub fn label(self) -> &'static str {
        match self {
            HistoryMeasure::Utilisation => "utilisation",
            HistoryMeasure::SpeedVsFirstNight => "speed vs the first night (no floor)",
        }
    }
}

/// The most commit subjects a change lists.
const MAX_SUBJECTS: usize = 10;

fn short(sha: &str) -> String {
    sha.chars().take(10).collect()
}

fn day(t: &str) -> &str {
    t.get(..10).unwrap_or(t)
}

/// How the detector was set, in one line.
#[must_use]
pub fn detector_line(d: &Detector) -> String {
    match d.significance {
        Significance::Permutation { permutations, seed } => format!(
            "E-divisive means, permutation test at p <= {} ({permutations} shuffles, seed {seed})",
            d.max_pvalue
        ),
        Significance::WelchT => format!("E-divisive means, Welch t-test at p <= {}", d.max_pvalue),
    }
}

/// One change point as lines of text (the first unindented).
#[must_use]
pub fn change_lines(c: &NightChange, max_drop_pct: f64, measure: HistoryMeasure) -> Vec<String> {
    let m = &c.change.magnitude;
    let interval = m
        .ci_pct
        .map_or_else(String::new, |(lo, hi)| format!(" [{lo:+.1}%, {hi:+.1}%]"));
    let label = if c.in_slide {
        "  (a step of a slide)"
    } else if c.regression {
        "  REGRESSION"
    } else if m.change_pct < -max_drop_pct / 2.0 {
        "  (under the threshold)"
    } else {
        ""
    };
    let mut lines = vec![format!(
        "{} run {}: {} {:+.1}%{interval} ({:.1}% -> {:.1}%, {} -> {} nights), p = {:.3}{label}",
        day(&c.night.started_at),
        c.night.run_id,
        measure.label(),
        m.change_pct,
        100.0 * m.before_mean,
        100.0 * m.after_mean,
        m.before_n,
        m.after_n,
        c.change.pvalue,
    )];
    lines.push(format!(
        "  since run {} ({})",
        c.before.run_id,
        day(&c.before.started_at)
    ));
    if let Some((a, b)) = &c.commits {
        lines.push(format!("  commits {}..{}", short(a), short(b)));
        // The range's subjects, newest last; a long range shows its last ones.
        let skip = c.subjects.len().saturating_sub(MAX_SUBJECTS);
        if skip > 0 {
            lines.push(format!("    ... {skip} earlier commits"));
        }
        for commit in &c.subjects[skip..] {
            lines.push(format!(
                "    {} {}",
                short(&commit.sha),
                crate::report::escape::terminal(&commit.subject)
            ));
        }
    }
    if c.env_changes.is_empty() {
        lines.push("  environment: unchanged".to_owned());
    }
    for e in &c.env_changes {
        lines.push(format!("  {e}"));
    }
    lines
}

/// The slide line, if any.
#[must_use]
pub fn slide_line(s: &Slide, max_drop_pct: f64) -> String {
    let t = &s.trend;
    let status = if s.past_threshold {
        format!("past the {max_drop_pct}% threshold: the gate judges it against the baseline")
    } else {
        format!("under the {max_drop_pct}% threshold: a warning, not a failure")
    };
    format!(
        "warning: sliding {:+.2}%/night over the last {} nights ({:+.1}% in all, Mann-Kendall p = {:.3}); {status}",
        t.slope_pct_per_night, t.nights, t.total_pct, t.pvalue
    )
}

/// `utilgate history CASE` as text.
#[must_use]
pub fn render_history(r: &CaseHistoryReport, detector: &Detector) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} on {}: {} nights on {}{}",
        r.case,
        r.gpu_sku,
        r.read.nights,
        r.baseline_branch,
        match (&r.first_night, &r.last_night) {
            (Some(a), Some(b)) => format!(" ({} .. {})", day(a), day(b)),
            _ => String::new(),
        }
    );
    let _ = writeln!(out, "change points: {}", detector_line(detector));
    if r.read.changes.is_empty() {
        out.push_str("  none\n");
    }
    for c in &r.read.changes {
        for line in change_lines(c, r.max_drop_pct, r.measure) {
            let _ = writeln!(out, "  {line}");
        }
    }
    match &r.read.slide {
        Some(s) => {
            let _ = writeln!(out, "{}", slide_line(s, r.max_drop_pct));
        }
        None => out.push_str("no slide over the last nights\n"),
    }
    out
}

/// `utilgate changes` as text: every case with a change point (since the date) or a slide.
#[must_use]
pub fn render_changes(
    reports: &[CaseHistoryReport],
    detector: &Detector,
    since: Option<jiff::Timestamp>,
) -> String {
    let mut out = String::new();
    // A date reads as the date it was given as (its midnight, UTC); a time as itself.
    let since = since.map(|t| {
        if t.strftime("%H:%M:%S%.f").to_string() == "00:00:00" {
            t.strftime("%Y-%m-%d").to_string()
        } else {
            t.to_string()
        }
    });
    let _ = writeln!(
        out,
        "change points{}: {}",
        since.map_or_else(String::new, |s| format!(" since {s}")),
        detector_line(detector)
    );
    let mut any = false;
    for r in reports {
        if r.read.changes.is_empty() && r.read.slide.is_none() {
            continue;
        }
        any = true;
        let _ = writeln!(out, "\n{} on {}", r.case, r.gpu_sku);
        for c in &r.read.changes {
            for line in change_lines(c, r.max_drop_pct, r.measure) {
                let _ = writeln!(out, "  {line}");
            }
        }
        if let Some(s) = &r.read.slide {
            let _ = writeln!(out, "  {}", slide_line(s, r.max_drop_pct));
        }
    }
    if !any {
        let _ = writeln!(out, "none over {} cases", reports.len());
    }
    out
}

/// Either command as JSON (`"schema_version": 1`).
pub fn render_json(
    reports: &[CaseHistoryReport],
    detector: &Detector,
) -> Result<String, serde_json::Error> {
    let value = serde_json::json!({
        "schema_version": super::SCHEMA_VERSION,
        "detector": detector,
        "cases": reports,
    });
    Ok(format!("{}\n", serde_json::to_string_pretty(&value)?))
}
