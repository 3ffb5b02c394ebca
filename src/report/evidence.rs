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
            "  kernels {:.1}, launches {:.1} ({:.1} graph launches), host sync calls {:.1} ({}), DtoH copies {:.1}, pageable HtoD copies {:.1}",
            s.kernels,
            s.launches,
            s.graph_launches,
            s.syncs,
            s.sync_kinds(),
            s.dtoh_copies,
            s.pageable_htod_copies
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
            "  no GPU activity recorded (no kernel, copy or memset in the trace)"
        );
        if let Some(all) = a.operators_self_us() {
            host_table(&mut out, a, all, top);
        } else {
            // An analysis stored before self time was measured: its durations, said as such.
            let _ = writeln!(
                out,
                "top host operators (per step: count, µs with the operators inside; stored before self time was measured):"
            );
            for k in a.operators.iter().take(top) {
                let _ = writeln!(out, "  {:>7.1} {:>10.1}  {}", k.count, k.total_us, k.name);
            }
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

/// The host operators of a trace without GPU work by self time; `all` is the sum of their self
/// times per step.
fn host_table(out: &mut String, a: &Analysis, all: f64, top: usize) {
    let _ = writeln!(
        out,
        "top host operators by self time (per step: count, self µs, share of all operators' self time, µs with the operators inside):"
    );
    for k in a.operators.iter().take(top) {
        let own = k.self_us.unwrap_or(0.0);
        let _ = writeln!(
            out,
            "  {:>7.1} {:>10.1} {:>6} {:>10.1}  {}",
            k.count,
            own,
            pct(own / all.max(f64::MIN_POSITIVE)),
            k.total_us,
            k.name
        );
    }
    if !a.operators.is_empty() {
        let _ = writeln!(
            out,
            "  self time of all host operators: {all:.1} µs per step, {} of the wall (summed over threads)",
            pct(all / a.step.wall_us.max(f64::MIN_POSITIVE))
        );
    }
}

/// The terminal text of a diff.
#[must_use]
pub fn diff_text(then: &str, now: &str, d: &TraceDiff, top: usize) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "trace diff {then} -> {now}");
    if let Some(presence) = d.gpu_presence() {
        // Without GPU work on a side its idle share is no figure: say so instead.
        let _ = writeln!(
            out,
            "per step: wall {:.1} -> {:.1} µs; {presence}",
            d.wall_us_then, d.wall_us_now
        );
    } else {
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
    }
    let cats: Vec<String> = d
        .categories
        .iter()
        .map(|(c, (a, b))| format!("{} {} -> {}", c.label(), pct(*a), pct(*b)))
        .collect();
    if !cats.is_empty() {
        let _ = writeln!(out, "category shares of GPU time: {}", cats.join(", "));
    }
    if !d.kernels.is_empty() {
        let _ = writeln!(out, "kernels, largest change first:");
        for c in d.kernels.iter().take(top) {
            let _ = writeln!(out, "  {}", c.line());
        }
    }
    if !d.operators.is_empty() {
        let by = if d.operators.iter().all(|c| c.self_time) {
            "self time"
        } else {
            "time"
        };
        let _ = writeln!(out, "host operators, largest change of {by} first:");
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
    /// GPU time by category, then and now: only for a trace that recorded GPU work.
    pub bars: Vec<Bar>,
    /// This run's trace recorded no GPU work (no kernel, copy or memset): the reports say so
    /// and show [`CaseEvidence::host_lines`] instead of GPU figures.
    #[serde(default)]
    pub host_only: bool,
    /// Without GPU work: the top host operators by self time, one line each.
    #[serde(default)]
    pub host_lines: Vec<String>,
    /// GPU idle share of the step, then and now; absent for a trace without GPU work.
    pub gpu_idle_share_then: Option<f64>,
    pub gpu_idle_share_now: Option<f64>,
    /// The whole diff, for JSON readers.
    pub diff: Option<TraceDiff>,
}

/// Headline lines of the diff in reports (the PR comment shows these, collapsed).
pub const DIFF_LINES: usize = 5;

/// Host operators listed in reports for a trace without GPU work.
pub const HOST_LINES: usize = 5;

/// The top `n` host operators by self time, one line each:
/// `aten::mm: 612.0 µs self per step (61.2% of all operators' self time), 3.0 calls, 700.0 µs
/// with the operators inside`.
#[must_use]
pub fn host_lines(a: &Analysis, n: usize) -> Vec<String> {
    let all = a.operators_self_us().unwrap_or(0.0).max(f64::MIN_POSITIVE);
    a.operators
        .iter()
        .take(n)
        .map(|o| match o.self_us {
            Some(own) => format!(
                "{}: {own:.1} µs self per step ({} of all operators' self time), {:.1} calls, {:.1} µs with the operators inside",
                o.name,
                pct(own / all),
                o.count,
                o.total_us
            ),
            None => format!(
                "{}: {:.1} µs per step with the operators inside, {:.1} calls",
                o.name, o.total_us, o.count
            ),
        })
        .collect()
}

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
    if let Some(n) = now.filter(|n| n.has_gpu) {
        if let Some(t) = then.filter(|t| t.has_gpu) {
            bars.push(bar("then", t));
        }
        bars.push(bar("now", n));
    }
    let host_only = now.is_some_and(|n| !n.has_gpu);
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
        host_only,
        host_lines: now
            .filter(|_| host_only)
            .map(|a| host_lines(a, HOST_LINES))
            .unwrap_or_default(),
        gpu_idle_share_then: then.filter(|a| a.has_gpu).map(|a| a.step.gpu_idle_share),
        gpu_idle_share_now: now.filter(|a| a.has_gpu).map(|a| a.step.gpu_idle_share),
        diff,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::analysis::{ANALYSIS_SCHEMA, NameStat, StepSummary};

    fn host_only(self_us: Option<f64>) -> Analysis {
        Analysis {
            schema_version: ANALYSIS_SCHEMA,
            step_source: "ProfilerStep".into(),
            steps_found: 1,
            steps_used: 1,
            has_gpu: false,
            step: StepSummary {
                wall_us: 1000.0,
                gpu_idle_share: 1.0,
                ..StepSummary::default()
            },
            categories: std::collections::BTreeMap::new(),
            kernels: Vec::new(),
            operators: vec![NameStat {
                name: "aten::linear".into(),
                category: None,
                count: 1.0,
                total_us: 600.0,
                self_us,
            }],
            step_walls_us: vec![1000.0],
        }
    }

    /// An analysis stored before self time was measured shows its durations under their own
    /// name, never in a self-time column; a trace without GPU work shows no GPU bar or idle share.
    #[test]
    fn host_operators_show_self_time_only_when_measured() {
        let text = analysis_text("t", &host_only(Some(50.0)), &[], 5);
        assert!(
            text.contains("      1.0       50.0 100.0%      600.0  aten::linear"),
            "{text}"
        );
        let old = analysis_text("t", &host_only(None), &[], 5);
        assert!(
            old.contains(
                "stored before self time was measured):\n      1.0      600.0  aten::linear"
            ),
            "{old}"
        );
        assert!(!old.contains("self µs"), "{old}");
        let ev = case_evidence("t", None, Some(&host_only(Some(50.0))), None, None);
        assert!(ev.host_only && ev.bars.is_empty() && ev.gpu_idle_share_now.is_none());
        assert_eq!(
            ev.host_lines,
            vec![
                "aten::linear: 50.0 µs self per step (100.0% of all operators' self time), 1.0 calls, 600.0 µs with the operators inside"
            ]
        );
    }
}
