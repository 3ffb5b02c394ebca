//! Renderings of trace evidence (pure): the per-step analysis with its diagnosis, and the diff of
//! two analyses, as terminal text and as JSON values (`"schema_version": 1`).

use std::fmt::Write as _;

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
            "  kernels {:.1}, launches {:.1} ({:.1} graph launches), syncs {:.1}, pageable HtoD copies {:.1}",
            s.kernels, s.launches, s.graph_launches, s.syncs, s.pageable_htod_copies
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
        "per step: wall {:.1} -> {:.1} µs, GPU idle {} -> {}, kernels {:.1} -> {:.1}, syncs {:.1} -> {:.1}",
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
