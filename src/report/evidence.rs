//! Renderings of trace evidence (pure): the per-step analysis with its diagnosis, and the diff of
//! two analyses, as terminal text and as JSON values (`"schema_version": 1`).

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::evidence::hta::shorten_name;
use crate::evidence::{Analysis, Category, TraceDiff};

fn pct(x: f64) -> String {
    format!("{:.1}%", 100.0 * x)
}

/// The terminal text of one analysis.
#[must_use]
pub fn analysis_text(source: &str, a: &Analysis, diagnosis: &[String], top: usize) -> String {
    let mut out = String::new();
    let s = &a.step;
    let _ = writeln!(out, "trace {source}");
    let _ = writeln!(
        out,
        "steps: {} analysed of {} found ({}){}",
        a.steps_used,
        a.steps_found,
        a.step_source,
        if a.steps_found > a.steps_used {
            ", the first dropped as warm-up"
        } else {
            ""
        }
    );
    let _ = writeln!(out, "per step (mean): wall {:.1} µs", s.wall_us);
    if a.has_gpu {
        let _ = writeln!(
            out,
            "  GPU busy {:.1} µs, idle {} (host wait {:.1} µs, kernel wait {:.1} µs, other {:.1} µs)",
            s.gpu_busy_us,
            pct(s.gpu_idle_share),
            s.host_wait_us,
            s.kernel_wait_us,
            s.other_idle_us
        );
        let _ = writeln!(
            out,
            "  kernels {:.1}, launches {:.1} ({:.1} graph launches), host sync calls {:.1}, DtoH copies {:.1}, pageable HtoD copies {:.1}",
            s.kernels, s.launches, s.graph_launches, s.syncs, s.dtoh_copies, s.pageable_htod_copies
        );
        let total: f64 = a.categories.values().sum();
        let cats: Vec<String> = Category::ALL
            .iter()
            .filter_map(|c| {
                let t = a.categories.get(c).copied()?;
                Some(format!(
                    "{} {:.1} µs ({})",
                    c.label(),
                    t,
                    pct(t / total.max(f64::MIN_POSITIVE))
                ))
            })
            .collect();
        let _ = writeln!(out, "  by category: {}", cats.join(", "));
        let _ = writeln!(out, "top kernels (per step: count, total µs, mean µs):");
        for k in a.kernels.iter().take(top) {
            let _ = writeln!(
                out,
                "  {:>7.1} {:>10.1} {:>9.2}  {}",
                k.count,
                k.total_us,
                k.mean_us(),
                shorten_name(&k.name)
            );
        }
    } else {
        let _ = writeln!(
            out,
            "no GPU rows: host operators (per step: count, total µs):"
        );
        for k in a.operators.iter().take(top) {
            let _ = writeln!(out, "  {:>7.1} {:>10.1}  {}", k.count, k.total_us, k.name);
        }
    }
    if !diagnosis.is_empty() {
        let _ = writeln!(out, "diagnosis:");
        for d in diagnosis {
            let _ = writeln!(out, "  - {d}");
        }
    }
    out
}

/// The terminal text of a diff.
#[must_use]
pub fn diff_text(then: &str, now: &str, d: &TraceDiff, top: usize) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "trace diff {then} -> {now}");
    let _ = writeln!(
        out,
        "per step: wall {:.1} -> {:.1} µs, GPU idle {} -> {}, kernels {:.1} -> {:.1}, host sync calls {:.1} -> {:.1}",
        d.wall_us_then,
        d.wall_us_now,
        pct(d.gpu_idle_share_then),
        pct(d.gpu_idle_share_now),
        d.kernels_then,
        d.kernels_now,
        d.syncs_then,
        d.syncs_now
    );
    let cats: Vec<String> = d
        .categories
        .iter()
        .map(|(c, (a, b))| format!("{} {} -> {}", c.label(), pct(*a), pct(*b)))
        .collect();
    let _ = writeln!(out, "category shares: {}", cats.join(", "));
    if !d.kernels.is_empty() {
        let _ = writeln!(out, "kernels, largest change first:");
        for c in d.kernels.iter().take(top) {
            let _ = writeln!(out, "  {}", c.line());
        }
    }
    if !d.operators.is_empty() {
        let _ = writeln!(out, "host operators, largest change first:");
        for c in d.operators.iter().take(top) {
            let _ = writeln!(out, "  {}", c.line());
        }
    }
    if d.kernels.is_empty() && d.operators.is_empty() {
        let _ = writeln!(out, "no kernel or operator changed");
    }
    out
}

/// JSON of one analysis.
#[must_use]
pub fn analysis_json(source: &str, a: &Analysis, diagnosis: &[String]) -> serde_json::Value {
    json!({
        "schema_version": 1,
        "trace": source,
        "analysis": a,
        "diagnosis": diagnosis,
    })
}

/// JSON of a diff.
#[must_use]
pub fn diff_json(then: &str, now: &str, d: &TraceDiff) -> serde_json::Value {
    json!({
        "schema_version": 1,
        "then": then,
        "now": now,
        "diff": d,
    })
}

/// One segment of a stacked category bar.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Segment {
    pub category: String,
    /// Share of GPU time, percent, one decimal.
    pub pct: f64,
    /// A CSS colour for the category.
    pub color: String,
}

/// A stacked category bar: "then" (the baseline's trace) or "now".
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bar {
    pub label: String,
    pub segments: Vec<Segment>,
}

/// What a case's profiler trace says, as every report shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseEvidence {
    /// The trace file's name as the harness reported it.
    pub trace: String,
    /// Why the evidence is partial or missing (the verdict stands regardless).
    pub warning: Option<String>,
    pub diagnosis: Vec<String>,
    /// The diff's headline lines against the baseline's trace (at most [`DIFF_LINES`]).
    pub diff_lines: Vec<String>,
    pub bars: Vec<Bar>,
    pub gpu_idle_share_then: Option<f64>,
    pub gpu_idle_share_now: Option<f64>,
    /// The whole diff, for JSON readers.
    pub diff: Option<TraceDiff>,
}

/// Headline lines of the diff in reports (the PR comment shows these, collapsed).
pub const DIFF_LINES: usize = 5;

fn color(c: Category) -> &'static str {
    match c {
        Category::Gemm => "#4e79a7",
        Category::Attention => "#e15759",
        Category::Normalisation => "#76b7b2",
        Category::Elementwise => "#59a14f",
        Category::Reduction => "#edc948",
        Category::Memory => "#b07aa1",
        Category::Communication => "#ff9da7",
        Category::Other => "#bab0ac",
    }
}

fn bar(label: &str, a: &Analysis) -> Bar {
    let total: f64 = a.categories.values().sum();
    Bar {
        label: label.to_owned(),
        segments: Category::ALL
            .iter()
            .filter_map(|c| {
                let t = *a.categories.get(c)?;
                (total > 0.0).then(|| Segment {
                    category: c.label().to_owned(),
                    pct: (1000.0 * t / total).round() / 10.0,
                    color: color(*c).to_owned(),
                })
            })
            .collect(),
    }
}

/// The evidence of one case: `now` is this run's analysis, `then` the baseline result's.
#[must_use]
pub fn case_evidence(
    trace: &str,
    warning: Option<String>,
    now: Option<&Analysis>,
    then: Option<&Analysis>,
    mbu: Option<f64>,
) -> CaseEvidence {
    let diff = match (then, now) {
        (Some(t), Some(n)) => Some(crate::evidence::diff(t, n)),
        _ => None,
    };
    let mut bars = Vec::new();
    if let (Some(t), Some(_)) = (then, now) {
        bars.push(bar("then", t));
    }
    if let Some(n) = now {
        bars.push(bar("now", n));
    }
    CaseEvidence {
        trace: trace.to_owned(),
        warning,
        diagnosis: now
            .map(|a| crate::evidence::diagnose(a, mbu))
            .unwrap_or_default(),
        diff_lines: diff
            .as_ref()
            .map(|d| d.lines(DIFF_LINES))
            .unwrap_or_default(),
        bars,
        gpu_idle_share_then: then.map(|a| a.step.gpu_idle_share),
        gpu_idle_share_now: now.map(|a| a.step.gpu_idle_share),
        diff,
    }
}
