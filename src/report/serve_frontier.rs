//! A sweep's frontier where no SVG can go: the PR comment and the step summary (GitHub strips
//! inline SVG from comments but draws Mermaid blocks) and the terminal. The figures are the
//! decision's own, level by level (`compare::decide_sweep`: the baseline's and tonight's
//! throughput per GPU at each judged interactivity level, and how much worse); the Mermaid
//! `xychart-beta` is the picture and the Markdown table beside it the exact, accessible form.
//! Pure.

use std::fmt::Write as _;

use serde::Serialize;

use crate::case::Verdict;
use crate::compare::{FrontierFigures, MetricDecision, level_metric};
use crate::report::format::signed_percent;

/// One judged level of a sweep, as the decision states it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LevelRow {
    /// Interactivity, tokens/s per user.
    pub level: f64,
    /// The baseline's and tonight's throughput per GPU at the level (tokens/s); `now` is
    /// `None` where tonight's frontier does not reach the level.
    pub then: Option<f64>,
    pub now: Option<f64>,
    /// How much lower tonight's throughput is, percent of the baseline's (negative: higher).
    pub worse_pct: Option<f64>,
    pub verdict: Verdict,
    /// The level where the loss is largest (at most one row; none when nothing was lost).
    pub largest_loss: bool,
}

/// The judged levels of a sweep with a baseline, lowest interactivity first: one row per level
/// the decision judged (a level beyond the baseline's frontier was not judged and has none).
#[must_use]
pub fn level_rows(frontier: &FrontierFigures, metrics: &[MetricDecision]) -> Vec<LevelRow> {
    if frontier.then.is_none() {
        return Vec::new();
    }
    let mut rows: Vec<LevelRow> = frontier
        .levels
        .iter()
        .filter_map(|&level| {
            let name = level_metric(level);
            let m = metrics.iter().find(|m| m.metric == name)?;
            Some(LevelRow {
                level,
                then: m.then,
                now: m.now,
                worse_pct: m.worse_pct,
                verdict: m.verdict,
                largest_loss: false,
            })
        })
        .collect();
    rows.sort_by(|a, b| a.level.total_cmp(&b.level));
    let largest = rows
        .iter()
        .enumerate()
        .filter_map(|(i, r)| r.worse_pct.filter(|w| *w > 0.0).map(|w| (i, w)))
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(i, _)| i);
    if let Some(i) = largest {
        rows[i].largest_loss = true;
    }
    rows
}

/// A throughput as every frontier surface writes it.
fn tok(x: f64) -> String {
    format!("{x:.1}")
}

/// The change of tonight's throughput against the baseline's at a level (`-8.0%`: lower).
fn change(row: &LevelRow) -> String {
    signed_percent(row.worse_pct.map(|w| -w))
}

fn icon(v: Verdict) -> &'static str {
    match v {
        Verdict::Regressed => "🔴",
        Verdict::Invalid => "⛔",
        Verdict::Error => "💥",
        Verdict::Inconclusive => "🟡",
        Verdict::Missing => "⚪",
        Verdict::Improved => "🟢",
        Verdict::New => "🆕",
        Verdict::Pass => "✅",
    }
}

/// The frontier of a judged sweep in Markdown: a Mermaid line chart of the baseline's and
/// tonight's throughput per GPU at the judged levels, then a table of the same figures with the
/// change per level, the level of the largest loss marked in both. Empty without judged levels.
#[must_use]
pub fn frontier_markdown(frontier: &FrontierFigures, metrics: &[MetricDecision]) -> String {
    let rows = level_rows(frontier, metrics);
    if rows.is_empty() {
        return String::new();
    }
    // An unreached level has no throughput tonight: the line drops to 0 there, as the
    // decision's 100% loss says.
    let now_or_zero = |r: &LevelRow| r.now.unwrap_or(0.0);
    let top = rows
        .iter()
        .flat_map(|r| [r.then.unwrap_or(0.0), now_or_zero(r)])
        .fold(0.0, f64::max);
    let categories: Vec<String> = rows
        .iter()
        .map(|r| {
            let mark = if r.largest_loss { " largest loss" } else { "" };
            format!("\"{}{mark}\"", tok(r.level))
        })
        .collect();
    let line = |f: &dyn Fn(&LevelRow) -> f64| -> String {
        rows.iter()
            .map(|r| tok(f(r)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut out = String::new();
    let _ = writeln!(out, "```mermaid");
    let _ = writeln!(out, "xychart-beta");
    let _ = writeln!(
        out,
        "    title \"Output tok/s per GPU at each judged level: baseline, then tonight\""
    );
    let _ = writeln!(
        out,
        "    x-axis \"interactivity (tok/s per user)\" [{}]",
        categories.join(", ")
    );
    let _ = writeln!(
        out,
        "    y-axis \"output tok/s per GPU\" 0 --> {:.0}",
        (top * 1.1).ceil().max(1.0)
    );
    let _ = writeln!(out, "    line [{}]", line(&|r| r.then.unwrap_or(0.0)));
    let _ = writeln!(out, "    line [{}]", line(&now_or_zero));
    let _ = writeln!(out, "```");
    let unreached = rows.iter().any(|r| r.now.is_none());
    let _ = writeln!(
        out,
        "\nThe first line is the baseline's frontier (then), the second tonight's (now), at the \
         judged levels only, evenly spaced{}.\n",
        if unreached {
            "; tonight's line is drawn at 0 where its frontier does not reach the level"
        } else {
            ""
        }
    );
    let _ = writeln!(
        out,
        "| interactivity (tok/s per user) | then (tok/s per GPU) | now (tok/s per GPU) | change | verdict |"
    );
    let _ = writeln!(out, "|--:|--:|--:|--:|:--|");
    for r in &rows {
        let level = if r.largest_loss {
            format!("**{}** (largest loss)", tok(r.level))
        } else {
            tok(r.level)
        };
        let _ = writeln!(
            out,
            "| {level} | {} | {} | {} | {} {} |",
            r.then.map_or_else(|| "–".to_owned(), tok),
            r.now.map_or_else(|| "not reached".to_owned(), tok),
            change(r),
            icon(r.verdict),
            r.verdict
        );
    }
    out
}

/// The frontier of a sweep for the terminal, one line: each judged level's throughput per GPU
/// then and now with the change, or without a baseline tonight's frontier points.
#[must_use]
pub fn frontier_line(frontier: &FrontierFigures, metrics: &[MetricDecision]) -> String {
    let rows = level_rows(frontier, metrics);
    if rows.is_empty() {
        let points: Vec<String> = frontier
            .now
            .points
            .iter()
            .map(|p| {
                format!(
                    "{} tok/s per GPU at {} tok/s/user",
                    tok(p.throughput_tok_s_gpu),
                    tok(p.interactivity_tok_s_user)
                )
            })
            .collect();
        return format!("frontier (tonight): {}", points.join("; "));
    }
    let levels: Vec<String> = rows
        .iter()
        .map(|r| {
            let mark = if r.largest_loss { ", largest loss" } else { "" };
            format!(
                "at {} tok/s/user {} -> {} ({}{mark})",
                tok(r.level),
                r.then.map_or_else(|| "–".to_owned(), tok),
                r.now.map_or_else(|| "not reached".to_owned(), tok),
                change(r)
            )
        })
        .collect();
    format!(
        "frontier, output tok/s per GPU then -> now: {}",
        levels.join("; ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::MetricDecision;
    use crate::serve::{Frontier, FrontierPoint, SweepAxis};

    fn frontier(levels: &[f64], with_baseline: bool) -> FrontierFigures {
        let now = Frontier {
            points: vec![FrontierPoint {
                point: "4".to_owned(),
                interactivity_tok_s_user: 30.0,
                throughput_tok_s_gpu: 150.0,
            }],
        };
        FrontierFigures {
            axis: SweepAxis::RequestRate,
            then: with_baseline.then(|| now.clone()),
            now,
            levels: levels.to_vec(),
            area_lost_pct: None,
            area_gained_pct: None,
        }
    }

    fn metric(level: f64, then: f64, now: Option<f64>, verdict: Verdict) -> MetricDecision {
        MetricDecision {
            metric: level_metric(level),
            direction: crate::serve::Direction::Higher,
            verdict,
            then: Some(then),
            now,
            worse_pct: Some(now.map_or(100.0, |n| 100.0 * (then - n) / then)),
            interval_pct: None,
            p_value: None,
            noise_pct: None,
            per_request: false,
            repeats_now: 1,
            repeats_then: 1,
            reason: String::new(),
        }
    }

    #[test]
    fn the_chart_and_the_table_carry_the_decisions_figures() {
        let f = frontier(&[36.6, 27.0, 31.6], true);
        let m = [
            metric(27.0, 222.5, Some(222.5), Verdict::Pass),
            metric(31.6, 169.3, Some(155.8), Verdict::Regressed),
            metric(36.6, 84.2, Some(86.0), Verdict::Pass),
        ];
        let md = frontier_markdown(&f, &m);
        assert!(md.starts_with("```mermaid\nxychart-beta\n"), "{md}");
        assert!(
            md.contains(
                r#"x-axis "interactivity (tok/s per user)" ["27.0", "31.6 largest loss", "36.6"]"#
            ),
            "{md}"
        );
        assert!(md.contains("    line [222.5, 169.3, 84.2]\n"), "{md}");
        assert!(md.contains("    line [222.5, 155.8, 86.0]\n"), "{md}");
        assert!(
            md.contains("y-axis \"output tok/s per GPU\" 0 --> 245\n"),
            "{md}"
        );
        assert!(
            md.contains("| **31.6** (largest loss) | 169.3 | 155.8 | -8.0% | 🔴 regressed |"),
            "{md}"
        );
        assert!(
            md.contains("| 27.0 | 222.5 | 222.5 | +0.0% | ✅ pass |"),
            "{md}"
        );
        assert!(
            md.contains("| 36.6 | 84.2 | 86.0 | +2.1% | ✅ pass |"),
            "{md}"
        );
        assert!(!md.contains("drawn at 0"), "{md}");
        let line = frontier_line(&f, &m);
        assert!(
            line.contains("at 31.6 tok/s/user 169.3 -> 155.8 (-8.0%, largest loss)"),
            "{line}"
        );
    }

    #[test]
    fn an_unreached_level_is_drawn_at_zero_and_said_so() {
        let f = frontier(&[20.0, 40.0], true);
        let m = [
            metric(20.0, 200.0, Some(199.0), Verdict::Pass),
            metric(40.0, 80.0, None, Verdict::Regressed),
        ];
        let md = frontier_markdown(&f, &m);
        assert!(md.contains("    line [199.0, 0.0]\n"), "{md}");
        assert!(
            md.contains("drawn at 0 where its frontier does not reach"),
            "{md}"
        );
        assert!(
            md.contains(
                "| **40.0** (largest loss) | 80.0 | not reached | -100.0% | 🔴 regressed |"
            ),
            "{md}"
        );
    }

    #[test]
    fn nothing_lost_marks_no_level_and_no_baseline_draws_nothing() {
        let f = frontier(&[20.0], true);
        let m = [metric(20.0, 200.0, Some(210.0), Verdict::Improved)];
        let rows = level_rows(&f, &m);
        assert_eq!(rows.len(), 1);
        assert!(!rows[0].largest_loss);
        let new = frontier(&[], false);
        assert_eq!(frontier_markdown(&new, &[]), "");
        assert_eq!(
            frontier_line(&new, &[]),
            "frontier (tonight): 150.0 tok/s per GPU at 30.0 tok/s/user"
        );
    }
}
