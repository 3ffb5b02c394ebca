//! The HTML report's service charts (DESIGN.md §12): TTFT and ITL, p50 and p99, against the
//! request rate of a grid, the baseline's levels (then, dashed) beside this run's (now); and a
//! case's levels over its stored history. Inline SVG, no scripts, no external resources. Pure.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use super::serve::{ServeCaseReport, ServeHistoryPoint};
use crate::report::escape::svg as escape;
use crate::serve::Frontier;

/// One chart of the service section, with the suite it belongs to.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServeChart {
    pub suite: String,
    pub title: String,
    /// The drawing, inline SVG (built here from numbers only; labels are escaped).
    pub svg: String,
}

/// One line of a chart: its label, whether it is the baseline's (dashed), and its points.
struct Series {
    label: String,
    then: bool,
    points: Vec<(f64, f64)>,
}

const W: f64 = 520.0;
const H: f64 = 190.0;
const LEFT: f64 = 56.0;
const RIGHT: f64 = 120.0;
const TOP: f64 = 12.0;
const BOTTOM: f64 = 30.0;
const COLORS: [&str; 2] = ["#0969da", "#cf222e"];

/// A line chart of `series` over x, with the x axis labelled `x_label` and the y axis `y_label`.
fn line_svg(x_label: &str, y_label: &str, series: &[Series], x_ticks: &[(f64, String)]) -> String {
    let mut svg = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="chart serve" width="{W}" height="{H}" viewBox="0 0 {W} {H}" role="img" aria-label="{}">"#,
        escape(&format!("{y_label} against {x_label}"))
    );
    let xs: Vec<f64> = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .collect();
    let ys: Vec<f64> = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .collect();
    let bounds = |v: &[f64]| {
        let lo = v.iter().copied().reduce(f64::min)?;
        let hi = v.iter().copied().reduce(f64::max)?;
        Some((lo, if hi > lo { hi } else { lo + 1.0 }))
    };
    let (Some((x0, x1)), Some((_, y1))) = (bounds(&xs), bounds(&ys)) else {
        let _ = write!(
            svg,
            r#"<text class="empty" x="{LEFT}" y="{}">no data</text></svg>"#,
            H / 2.0
        );
        return svg;
    };
    let (y0, y1) = (0.0, y1 * 1.1);
    let px = |x: f64| LEFT + (x - x0) / (x1 - x0) * (W - LEFT - RIGHT);
    let py = |y: f64| H - BOTTOM - (y - y0) / (y1 - y0) * (H - TOP - BOTTOM);
    let _ = write!(
        svg,
        r#"<line class="axis" x1="{LEFT}" y1="{b}" x2="{r}" y2="{b}"/><line class="axis" x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{b}"/>"#,
        b = H - BOTTOM,
        r = W - RIGHT
    );
    let _ = write!(
        svg,
        r#"<text class="label" x="4" y="{TOP}">{}</text><text class="label" x="4" y="{:.1}">0</text><text class="label" x="4" y="{:.1}">{:.1}</text>"#,
        escape(y_label),
        H - BOTTOM,
        TOP + 12.0,
        y1
    );
    for (x, label) in x_ticks {
        let _ = write!(
            svg,
            r#"<text class="label" x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            px(*x),
            H - BOTTOM + 14.0,
            escape(label)
        );
    }
    let _ = write!(
        svg,
        r#"<text class="label" x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
        (LEFT + W - RIGHT) / 2.0,
        H - 2.0,
        escape(x_label)
    );
    for (i, s) in series.iter().enumerate() {
        let color = COLORS[(i / 2) % COLORS.len()];
        let dash = if s.then {
            r#" stroke-dasharray="5 3""#
        } else {
            ""
        };
        let path: Vec<String> = s
            .points
            .iter()
            .map(|(x, y)| format!("{:.1},{:.1}", px(*x), py(*y)))
            .collect();
        let _ = write!(
            svg,
            r#"<polyline fill="none" stroke="{color}" stroke-width="2"{dash} points="{}"><title>{}</title></polyline>"#,
            path.join(" "),
            escape(&s.label)
        );
        for (x, y) in &s.points {
            let _ = write!(
                svg,
                r#"<circle cx="{:.1}" cy="{:.1}" r="2.5" fill="{color}"/>"#,
                px(*x),
                py(*y)
            );
        }
        let _ = write!(
            svg,
            r#"<text class="label" x="{:.1}" y="{:.1}" fill="{color}">{}</text>"#,
            W - RIGHT + 6.0,
            TOP + 12.0 + 14.0 * i as f64,
            escape(&s.label)
        );
    }
    svg.push_str("</svg>");
    svg
}

/// The four lines of a latency metric (p50 and p99, then and now) over the cases' rates.
fn latency_series(cases: &[(f64, &ServeCaseReport)], metric: &str) -> Vec<Series> {
    let mut out = Vec::new();
    for (name, key) in [
        ("p50", format!("median_{metric}_ms")),
        ("p99", format!("p99_{metric}_ms")),
    ] {
        for then in [true, false] {
            let points: Vec<(f64, f64)> = cases
                .iter()
                .filter_map(|(rate, c)| {
                    let v = if then {
                        c.baseline_means.get(&key)
                    } else {
                        c.means.get(&key)
                    };
                    v.filter(|v| v.is_finite()).map(|v| (*rate, *v))
                })
                .collect();
            if !points.is_empty() {
                out.push(Series {
                    label: format!("{name} {}", if then { "then" } else { "now" }),
                    then,
                    points,
                });
            }
        }
    }
    out
}

/// TTFT and ITL (p50, p99; then and now) against the request rate, per suite, model and
/// lengths of a grid with at least two finite rates.
#[must_use]
pub fn rate_charts(cases: &[ServeCaseReport]) -> Vec<ServeChart> {
    type Group<'a> = Vec<(f64, &'a ServeCaseReport)>;
    let mut groups: BTreeMap<(String, String, String), Group<'_>> = BTreeMap::new();
    for c in cases {
        let Ok(rate) = c.key.request_rate.parse::<f64>() else {
            continue;
        };
        if !rate.is_finite() {
            continue;
        }
        let rest = format!(
            "{}{}{}",
            c.key
                .max_concurrency
                .map_or_else(String::new, |n| format!(" conc {n}")),
            c.key
                .input_len
                .map_or_else(String::new, |n| format!(" in {n}")),
            c.key
                .output_len
                .map_or_else(String::new, |n| format!(" out {n}"))
        );
        groups
            .entry((c.key.suite.clone(), c.key.model.clone(), rest))
            .or_default()
            .push((rate, c));
    }
    let mut out = Vec::new();
    for ((suite, model, rest), mut points) in groups {
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        points.dedup_by(|a, b| a.0.total_cmp(&b.0).is_eq());
        if points.len() < 2 {
            continue;
        }
        let ticks: Vec<(f64, String)> = points
            .iter()
            .map(|(r, c)| (*r, c.key.request_rate.clone()))
            .collect();
        for (metric, label) in [("ttft", "TTFT ms"), ("itl", "ITL ms")] {
            out.push(ServeChart {
                suite: suite.clone(),
                title: format!("{model}{rest}: {label} against request rate (req/s)"),
                svg: line_svg(
                    "request rate (req/s)",
                    label,
                    &latency_series(&points, metric),
                    &ticks,
                ),
            });
        }
    }
    out
}

/// A sweep's frontiers: output tokens/s per GPU against tokens/s per user, the baseline's
/// (then, dashed) and this run's (now), the throughput lost between them shaded (where the
/// baseline's lies above), one chart per sweep.
#[must_use]
pub fn frontier_charts(cases: &[ServeCaseReport]) -> Vec<ServeChart> {
    cases
        .iter()
        .filter_map(|c| {
            let f = c.frontier.as_ref()?;
            Some(ServeChart {
                suite: c.key.suite.clone(),
                title: format!("{}: throughput per GPU against interactivity", c.case),
                svg: frontier_svg(f.then.as_ref(), &f.now, &f.levels),
            })
        })
        .collect()
}

fn frontier_svg(then: Option<&Frontier>, now: &Frontier, levels: &[f64]) -> String {
    let points = |f: &Frontier| -> Vec<(f64, f64)> {
        f.points
            .iter()
            .map(|p| (p.interactivity_tok_s_user, p.throughput_tok_s_gpu))
            .collect()
    };
    let mut series = Vec::new();
    if let Some(then) = then {
        series.push(Series {
            label: "then".to_owned(),
            then: true,
            points: points(then),
        });
    }
    series.push(Series {
        label: "now".to_owned(),
        then: false,
        points: points(now),
    });
    let ticks: Vec<(f64, String)> = levels.iter().map(|l| (*l, format!("{l:.1}"))).collect();
    let mut svg = line_svg("tok/s per user", "tok/s per GPU", &series, &ticks);
    // The loss: between the curves where the baseline's lies above, over the span both reach.
    if let Some(then) = then
        && let (Some((a0, a1)), Some((b0, b1))) = (then.span(), now.span())
    {
        let all: Vec<(f64, f64)> = series.iter().flat_map(|s| s.points.clone()).collect();
        let x0 = all.iter().map(|p| p.0).fold(f64::INFINITY, f64::min);
        let x1 = all.iter().map(|p| p.0).fold(f64::NEG_INFINITY, f64::max);
        let y1 = all.iter().map(|p| p.1).fold(0.0, f64::max) * 1.1;
        let (lo, hi) = (a0.max(b0), a1.min(b1));
        if hi > lo && x1 > x0 && y1 > 0.0 {
            let px = |x: f64| LEFT + (x - x0) / (x1 - x0) * (W - LEFT - RIGHT);
            let py = |y: f64| H - BOTTOM - y / y1 * (H - TOP - BOTTOM);
            let xs: Vec<f64> = (0..=64)
                .map(|i| lo + (hi - lo) * f64::from(i) / 64.0)
                .collect();
            let upper: Vec<String> = xs
                .iter()
                .filter_map(|x| Some(format!("{:.1},{:.1}", px(*x), py(then.throughput_at(*x)?))))
                .collect();
            let lower: Vec<String> = xs
                .iter()
                .rev()
                .filter_map(|x| {
                    let b = then.throughput_at(*x)?;
                    let n = now.throughput_at(*x)?;
                    Some(format!("{:.1},{:.1}", px(*x), py(b.min(n))))
                })
                .collect();
            let shade = format!(
                r##"<polygon class="loss" fill="#cf222e" fill-opacity="0.2" stroke="none" points="{} {}"><title>throughput lost</title></polygon></svg>"##,
                upper.join(" "),
                lower.join(" ")
            );
            if let Some(end) = svg.rfind("</svg>") {
                svg.replace_range(end.., &shade);
            }
        }
    }
    svg
}

/// A case's TTFT and ITL (p50, p99) over its stored runs, oldest left; `None` below two runs.
#[must_use]
pub fn history_chart(case: &ServeCaseReport, history: &[ServeHistoryPoint]) -> Option<ServeChart> {
    if history.len() < 2 {
        return None;
    }
    let x = |i: usize| i as f64;
    let series = |label: &str, f: &dyn Fn(&ServeHistoryPoint) -> Option<f64>| Series {
        label: label.to_owned(),
        then: false,
        points: history
            .iter()
            .enumerate()
            .filter_map(|(i, p)| f(p).filter(|v| v.is_finite()).map(|v| (x(i), v)))
            .collect(),
    };
    let lines = [
        series("TTFT p50", &|p| p.median_ttft_ms),
        series("TTFT p99", &|p| p.p99_ttft_ms),
        series("ITL p50", &|p| p.median_itl_ms),
        series("ITL p99", &|p| p.p99_itl_ms),
    ];
    let ticks: Vec<(f64, String)> = history
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let mark = if p.current { "*" } else { "" };
            (x(i), format!("#{}{mark}", p.run_id))
        })
        .collect();
    Some(ServeChart {
        suite: case.key.suite.clone(),
        title: format!("{}: TTFT and ITL (ms) over the stored runs", case.case),
        svg: line_svg("run (oldest left, * this run)", "ms", &lines, &ticks),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::case::Verdict;
    use crate::compare::ServeDecision;
    use crate::serve::ServeKey;

    fn case(rate: &str, ttft: f64, then: Option<f64>) -> ServeCaseReport {
        let key = ServeKey {
            suite: "serve".into(),
            model: "m".into(),
            request_rate: rate.into(),
            max_concurrency: None,
            input_len: Some(256),
            output_len: Some(32),
            sweep: None,
        };
        let decision = ServeDecision {
            verdict: Verdict::Pass,
            metrics: Vec::new(),
            reasons: Vec::new(),
            frontier: None,
        };
        let mut c = ServeCaseReport::new(key, &decision);
        c.means.insert("median_ttft_ms".into(), ttft);
        c.means.insert("p99_ttft_ms".into(), ttft * 2.0);
        if let Some(t) = then {
            c.baseline_means.insert("median_ttft_ms".into(), t);
        }
        c
    }

    #[test]
    fn a_grid_of_two_rates_gets_ttft_and_itl_charts_with_then_and_now() {
        let charts = rate_charts(&[case("4", 120.0, Some(100.0)), case("1", 50.0, None)]);
        assert_eq!(charts.len(), 2, "TTFT and ITL");
        let ttft = &charts[0];
        assert!(
            ttft.title.starts_with("m in 256 out 32: TTFT ms"),
            "{}",
            ttft.title
        );
        assert!(ttft.svg.contains("<title>p50 then</title>"));
        assert!(ttft.svg.contains("<title>p50 now</title>"));
        assert!(ttft.svg.contains("<title>p99 now</title>"));
        assert!(!ttft.svg.contains("p99 then"), "no baseline p99: no line");
        // The lowest rate sits at the left edge, the highest at the right.
        assert!(
            ttft.svg
                .contains(r#"x="56.0" y="174.0" text-anchor="middle">1<"#)
        );
        assert!(charts[1].svg.contains("no data"), "no ITL in these cases");
    }

    #[test]
    fn one_rate_or_an_unlimited_rate_draws_no_rate_chart() {
        assert!(rate_charts(&[case("4", 1.0, None)]).is_empty());
        assert!(rate_charts(&[case("4", 1.0, None), case("inf", 2.0, None)]).is_empty());
    }

    #[test]
    fn history_needs_two_runs_and_marks_this_one() {
        let c = case("4", 1.0, None);
        let point = |run_id, current| ServeHistoryPoint {
            run_id,
            started_at: String::new(),
            median_ttft_ms: Some(1.0),
            p99_ttft_ms: Some(2.0),
            median_itl_ms: None,
            p99_itl_ms: None,
            current,
        };
        assert!(history_chart(&c, &[point(1, true)]).is_none());
        let chart = history_chart(&c, &[point(1, false), point(2, true)]).expect("two runs");
        assert!(chart.svg.contains(">#1<") && chart.svg.contains(">#2*<"));
    }
}
