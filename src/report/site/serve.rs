//! Service cases on the site (docs/site.md): the index's row of a service case (a sparkline
//! of its p99 TTFT, or a sweep's peak throughput per GPU, with the latest verdict), and its page:
//! TTFT, ITL and output throughput over every night (p50 and p99, the mean over each night's
//! repeats, as the run reports show them), or a sweep's throughput per GPU at its judged
//! interactivity levels, each night a mark shaped and coloured by its verdict and linked to its
//! run, the pinned baseline as a dashed line, the baseline moves and every night as a table.
//! Strings from outside utilgate are entity-escaped here or by the templates. Pure.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::report::escape::svg as escape;
use crate::report::site::chart::{change_mark, mark_path, night_labels};
use crate::serve::{Frontier, FrontierPoint, ServeKey};

/// The metrics a service night's figures are read from (the reports' names).
pub const TTFT_P50: &str = "median_ttft_ms";
pub const TTFT_P99: &str = "p99_ttft_ms";
pub const ITL_P50: &str = "median_itl_ms";
pub const ITL_P99: &str = "p99_itl_ms";
pub const OUTPUT_TOK_S: &str = "output_throughput";

/// A sweep's file: its point on the sweep's axis, its interactivity (tokens/s per user) and
/// its throughput (tokens/s per GPU), as the store keeps them.
pub type SweepFile = (String, Option<f64>, Option<f64>);

/// At most this many of a sweep's judged levels get a line of their own.
const MAX_LEVELS: usize = 3;

/// One night of a service case as its page and the index draw it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServeNight {
    pub run_id: i64,
    /// The run's page, relative to the case page (`../runs/N.html`); empty without one.
    pub href: String,
    pub started_at: String,
    pub git_sha: Option<String>,
    /// The verdict's word (`none` when stored without one).
    pub verdict: String,
    /// Means over the night's repeats, in ms and output tokens/s (`None` for a sweep).
    pub ttft_p50_ms: Option<f64>,
    pub ttft_p99_ms: Option<f64>,
    pub itl_p50_ms: Option<f64>,
    pub itl_p99_ms: Option<f64>,
    pub output_tok_s: Option<f64>,
    /// A sweep's frontier: its highest throughput per GPU and the throughput per GPU it
    /// reaches at each of the page's levels (`None` where it does not reach one).
    pub peak_tok_s_gpu: Option<f64>,
    pub at_levels: Vec<Option<f64>>,
    /// The worst gated change against the baseline, as `p99_ttft_ms +30.1%`, and its size.
    pub worst: Option<String>,
    pub worst_pct: Option<f64>,
}

impl ServeNight {
    /// A night of the stored figures: `means` are the mean over repeats of every metric,
    /// `sweep` a sweep's files as (point, interactivity tokens/s per user, throughput tokens/s
    /// per GPU), `levels` the interactivity levels the page reads a sweep's frontier at.
    #[must_use]
    pub fn of(
        base: ServeNightBase,
        means: &std::collections::BTreeMap<String, f64>,
        sweep: Option<&[SweepFile]>,
        levels: &[f64],
        decision: Option<&crate::compare::ServeDecision>,
    ) -> ServeNight {
        let m = |k: &str| {
            if sweep.is_some() {
                None
            } else {
                means.get(k).copied().filter(|v| v.is_finite())
            }
        };
        let frontier = sweep.map(frontier_of);
        let worst = decision.and_then(|d| {
            d.metrics
                .iter()
                .filter_map(|m| {
                    m.worse_pct
                        .filter(|w| w.is_finite())
                        .map(|w| (w, &m.metric))
                })
                .max_by(|a, b| a.0.total_cmp(&b.0))
        });
        ServeNight {
            run_id: base.run_id,
            href: base.href,
            started_at: base.started_at,
            git_sha: base.git_sha,
            verdict: base.verdict,
            ttft_p50_ms: m(TTFT_P50),
            ttft_p99_ms: m(TTFT_P99),
            itl_p50_ms: m(ITL_P50),
            itl_p99_ms: m(ITL_P99),
            output_tok_s: m(OUTPUT_TOK_S),
            peak_tok_s_gpu: frontier.as_ref().and_then(|f| {
                f.points
                    .iter()
                    .map(|p| p.throughput_tok_s_gpu)
                    .reduce(f64::max)
            }),
            at_levels: levels
                .iter()
                .map(|l| frontier.as_ref().and_then(|f| f.throughput_at(*l)))
                .collect(),
            worst: worst.map(|(w, m)| format!("{m} {w:+.1}%")),
            worst_pct: worst.map(|(w, _)| w),
        }
    }

    /// The mark's tooltip: night, run, commit, verdict, figures.
    #[must_use]
    pub fn title(&self, levels: &[f64]) -> String {
        let mut t = format!(
            "{} run {}{}: {}",
            day(&self.started_at),
            self.run_id,
            self.git_sha
                .as_deref()
                .map_or_else(String::new, |s| format!(" @ {}", s.get(..10).unwrap_or(s))),
            self.verdict,
        );
        t.push_str(&self.figures(levels));
        if let Some(w) = &self.worst {
            let _ = write!(t, "; worst change {w}");
        }
        t
    }

    /// The night's figures as one line (`, TTFT p50 49.5 ms p99 67.6 ms, ...`).
    #[must_use]
    pub fn figures(&self, levels: &[f64]) -> String {
        let mut t = String::new();
        let both = |t: &mut String, what: &str, p50: Option<f64>, p99: Option<f64>| {
            if p50.is_some() || p99.is_some() {
                let _ = write!(t, ", {what} p50 {} ms p99 {} ms", fig(p50), fig(p99));
            }
        };
        both(&mut t, "TTFT", self.ttft_p50_ms, self.ttft_p99_ms);
        both(&mut t, "ITL", self.itl_p50_ms, self.itl_p99_ms);
        if let Some(o) = self.output_tok_s {
            let _ = write!(t, ", output {} tok/s", fig(Some(o)));
        }
        if let Some(p) = self.peak_tok_s_gpu {
            let _ = write!(t, ", peak {} tok/s/GPU", fig(Some(p)));
        }
        for (l, v) in levels.iter().zip(&self.at_levels) {
            let _ = write!(t, ", at {} tok/s/user {} tok/s/GPU", fig(Some(*l)), fig(*v));
        }
        t
    }
}

/// What a night is besides its figures.
#[derive(Debug, Clone, PartialEq)]
pub struct ServeNightBase {
    pub run_id: i64,
    pub href: String,
    pub started_at: String,
    pub git_sha: Option<String>,
    pub verdict: String,
}

/// A sweep night's frontier: each point's files averaged (a point measured twice is one
/// point), then the points no other beats on both axes, as the verdict reads a sweep.
fn frontier_of(files: &[SweepFile]) -> Frontier {
    let mut by_point: std::collections::BTreeMap<&str, (f64, f64, f64)> =
        std::collections::BTreeMap::new();
    for (point, inter, through) in files {
        if let (Some(i), Some(t)) = (inter, through) {
            let e = by_point.entry(point.as_str()).or_default();
            e.0 += i;
            e.1 += t;
            e.2 += 1.0;
        }
    }
    let points: Vec<FrontierPoint> = by_point
        .into_iter()
        .map(|(point, (i, t, n))| FrontierPoint {
            point: point.to_owned(),
            interactivity_tok_s_user: i / n,
            throughput_tok_s_gpu: t / n,
        })
        .collect();
    Frontier::of_points(&points)
}

/// A figure with the digits its size deserves (`67.6`, `27.19`, `0.254`); `–` when missing.
#[must_use]
pub fn fig(x: Option<f64>) -> String {
    match x.filter(|v| v.is_finite()) {
        None => "–".to_owned(),
        Some(v) if v.abs() >= 100.0 => format!("{v:.1}"),
        Some(v) if v.abs() >= 1.0 => format!("{v:.2}"),
        Some(v) => format!("{v:.3}"),
    }
}

/// A service case as the index shows it, kept in the site's manifest so an unchanged case is
/// not read again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServeCard {
    /// The case page, relative to the site's root (`cases/....html`).
    pub page: String,
    pub name: String,
    pub suite: String,
    pub gpu_sku: String,
    pub model: String,
    /// The swept axis (`rate`, `conc`), empty for one load.
    pub sweep: String,
    /// The load and lengths as the key writes them (`rate=4/in=1024/out=1024`).
    pub load: String,
    pub nights: usize,
    /// The sparkline (SVG) of the last nights: p99 TTFT, or a sweep's peak throughput per GPU.
    pub spark: String,
    pub latest: Option<ServeNight>,
}

impl ServeCard {
    /// The card of a service case, before its figures.
    #[must_use]
    pub fn of(key: &ServeKey, gpu_sku: &str) -> ServeCard {
        let name = key.to_string();
        let prefix = format!("{}/{}/", key.suite, key.model);
        ServeCard {
            page: serve_page(key, gpu_sku),
            load: name.strip_prefix(&prefix).unwrap_or(&name).to_owned(),
            name,
            suite: key.suite.clone(),
            gpu_sku: gpu_sku.to_owned(),
            model: key.model.clone(),
            sweep: key.sweep.map_or("", |s| s.as_str()).to_owned(),
            nights: 0,
            spark: String::new(),
            latest: None,
        }
    }
}

/// A service case's page, relative to the site's root: named apart from every step case's
/// (its hash covers `serve`).
#[must_use]
pub fn serve_page(key: &ServeKey, gpu_sku: &str) -> String {
    format!(
        "cases/{}.html",
        super::slug_of(
            &format!("{gpu_sku}/{key}"),
            &format!("serve:{gpu_sku}/{key}")
        )
    )
}

/// A service baseline (pinned or moved) as the page lists it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServeBaselineRow {
    pub moved_at: String,
    pub kind: String,
    pub reason: String,
    pub run_id: i64,
    pub run_page: Option<String>,
    pub git_sha: Option<String>,
    /// Its night's figures (as the marks' tooltips write them), when the night is on the page.
    pub figures: Option<String>,
}

/// Everything a service case's page shows.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServeCasePage {
    pub card: ServeCard,
    /// The charts (SVG), each with its own accessible name.
    pub charts: Vec<String>,
    /// Every night, newest first, as the table under the charts.
    pub nights: Vec<ServeNight>,
    /// A sweep's levels (tokens/s per user) the frontier is read at.
    pub levels: Vec<f64>,
    pub pinned: Option<ServeBaselineRow>,
    pub moves: Vec<ServeBaselineRow>,
    pub baseline_branch: String,
    /// Change points of the watched series (p99 TTFT and ITL, output throughput; a sweep's
    /// peak), newest first, and the detector that found them.
    pub changes: Vec<super::ChangeRow>,
    pub detector: String,
}

/// The series of a service case the site finds change points in, by the names its change
/// rows give them; each chart marks those of the series it draws.
pub const SERIES_TTFT: &str = "p99 TTFT";
pub const SERIES_ITL: &str = "p99 ITL";
pub const SERIES_OUTPUT: &str = "output throughput";
pub const SERIES_PEAK: &str = "peak throughput on the frontier";

/// One line of a service chart: its name and a value per night (`None`: not measured).
pub struct Line<'a> {
    pub label: String,
    pub class: &'a str,
    pub values: Vec<Option<f64>>,
}

/// A service chart's description.
pub struct ChartSpec<'a> {
    /// What it shows (`TTFT`), and the case and GPU it belongs to.
    pub what: &'a str,
    pub case: &'a str,
    pub unit: &'a str,
    pub lines: Vec<Line<'a>>,
    /// The pinned baseline's figure of the marked (last) line.
    pub baseline: Option<f64>,
    /// The change points found in the marked line's series, drawn where the new level starts.
    pub changes: Vec<&'a super::ChartChange>,
}

const W: f64 = 760.0;
const H: f64 = 220.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 110.0;
const TOP: f64 = 14.0;
const BOTTOM: f64 = 30.0;

fn num(x: f64) -> String {
    format!("{x:.1}")
}

fn day(ts: &str) -> &str {
    ts.get(..10).unwrap_or(ts)
}

#[expect(
    clippy::cast_precision_loss,
    reason = "a night's index, far below 2^52"
)]
fn across(i: usize, n: usize) -> f64 {
    if n <= 1 {
        0.5
    } else {
        i as f64 / (n - 1) as f64
    }
}

/// A service chart over the nights (oldest left): each line, the baseline dashed, and a mark
/// per night on the last line, shaped and coloured by its verdict and linked to its run.
#[must_use]
#[expect(
    clippy::too_many_lines,
    reason = "one drawing, layer by layer from the axes to the marks; split, it reads worse"
)]
pub fn serve_svg(spec: &ChartSpec<'_>, nights: &[ServeNight], levels: &[f64]) -> String {
    let aria = aria(spec, nights);
    let mut svg = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="chart serve-chart" width="{W}" height="{H}" viewBox="0 0 {W} {H}" role="img" aria-label="{}">"#,
        escape(&aria)
    );
    let values: Vec<f64> = spec
        .lines
        .iter()
        .flat_map(|l| l.values.iter().flatten().copied())
        .chain(spec.baseline)
        .filter(|v| v.is_finite())
        .collect();
    let n = nights.len();
    let (Some(lo), Some(hi)) = (
        values.iter().copied().reduce(f64::min),
        values.iter().copied().reduce(f64::max),
    ) else {
        let _ = write!(
            svg,
            r#"<text x="{}" y="{}" text-anchor="middle" class="label">no measured night</text></svg>"#,
            W / 2.0,
            H / 2.0
        );
        return svg;
    };
    let span = (hi - lo).max(hi.abs() * 0.02).max(1e-9);
    let (lo, hi) = ((lo - span * 0.12).max(0.0), hi + span * 0.12);
    let x_of = |i: usize| LEFT + (W - LEFT - RIGHT) * across(i, n);
    let y_of = |v: f64| TOP + (H - TOP - BOTTOM) * (1.0 - (v - lo) / (hi - lo));
    let (x0, x1, bottom) = (LEFT, W - RIGHT, H - BOTTOM);
    let _ = write!(
        svg,
        r#"<line class="axis" x1="{x0}" y1="{TOP}" x2="{x0}" y2="{bottom}"/><line class="axis" x1="{x0}" y1="{bottom}" x2="{x1}" y2="{bottom}"/>"#,
    );
    for v in [lo, hi] {
        let _ = write!(
            svg,
            r#"<text class="label" x="{}" y="{}" text-anchor="end">{}</text>"#,
            num(x0 - 6.0),
            num(y_of(v) + 4.0),
            fig(Some(v)),
        );
    }
    let _ = write!(
        svg,
        r#"<text class="label" x="{}" y="{}">{}</text>"#,
        num(x1 + 4.0),
        num(TOP + 4.0),
        escape(spec.unit)
    );
    night_labels(&mut svg, n, &x_of, H - 9.0, &|i| &nights[i].started_at);
    if let Some(b) = spec.baseline.filter(|b| b.is_finite()) {
        let label = spec.lines.last().map_or("", |l| l.label.as_str());
        let _ = write!(
            svg,
            r#"<line class="baseline" x1="{}" y1="{y}" x2="{}" y2="{y}"><title>pinned baseline's {}: {} {}</title></line><text class="label" x="{}" y="{}">baseline {}</text>"#,
            num(x0),
            num(x1),
            escape(label),
            fig(Some(b)),
            escape(spec.unit),
            num(x1 + 4.0),
            num(y_of(b) + 4.0),
            fig(Some(b)),
            y = num(y_of(b)),
        );
    }
    // Change points: a dashed line where the new level starts, named by its night and size.
    for c in &spec.changes {
        let Some(i) = nights.iter().position(|n| n.run_id == c.run_id) else {
            continue;
        };
        change_mark(&mut svg, c, x_of(i), TOP, bottom);
    }
    for line in &spec.lines {
        let points: Vec<String> = line
            .values
            .iter()
            .enumerate()
            .filter_map(|(i, v)| v.map(|v| format!("{},{}", num(x_of(i)), num(y_of(v)))))
            .collect();
        let _ = write!(
            svg,
            r#"<polyline class="line {}" fill="none" points="{}"><title>{}</title></polyline>"#,
            line.class,
            points.join(" "),
            escape(&line.label),
        );
        if let Some((i, v)) = line
            .values
            .iter()
            .enumerate()
            .rev()
            .find_map(|(i, v)| v.map(|v| (i, v)))
        {
            let _ = write!(
                svg,
                r#"<text class="label" x="{}" y="{}">{}</text>"#,
                num(x_of(i) + 8.0),
                num(y_of(v) - 6.0),
                escape(&line.label),
            );
        }
    }
    if let Some(marked) = spec.lines.last() {
        for (i, night) in nights.iter().enumerate() {
            let Some(v) = marked.values.get(i).copied().flatten() else {
                continue;
            };
            let verdict = night.verdict.as_str();
            let _ = write!(
                svg,
                r#"<a class="mark v-{}" {} data-run="{}" data-night="{}" data-sha="{}" data-verdict="{}" data-figures="{}"><path transform="translate({},{})" d="{}"/><title>{}</title></a>"#,
                escape(verdict),
                if night.href.is_empty() {
                    r#"tabindex="0""#.to_owned()
                } else {
                    format!(r#"href="{}""#, escape(&night.href))
                },
                night.run_id,
                escape(day(&night.started_at)),
                escape(night.git_sha.as_deref().unwrap_or("")),
                escape(verdict),
                escape(night.figures(levels).trim_start_matches(", ")),
                num(x_of(i)),
                num(y_of(v)),
                mark_path(verdict),
                escape(&night.title(levels)),
            );
        }
    }
    svg.push_str("</svg>");
    svg
}

/// A service chart's accessible name: what it shows, over which nights, from what to what.
fn aria(spec: &ChartSpec<'_>, nights: &[ServeNight]) -> String {
    let mut text = format!(
        "{} of {} over {} night{}",
        spec.what,
        spec.case,
        nights.len(),
        if nights.len() == 1 { "" } else { "s" }
    );
    if let (Some(a), Some(b)) = (nights.first(), nights.last()) {
        let _ = write!(text, ", {} to {}", day(&a.started_at), day(&b.started_at));
    }
    for line in &spec.lines {
        let first = line.values.iter().flatten().next();
        let last = line.values.iter().rev().flatten().next();
        if let (Some(a), Some(b)) = (first, last) {
            let _ = write!(
                text,
                "; {} from {} to {} {}",
                line.label,
                fig(Some(*a)),
                fig(Some(*b)),
                spec.unit
            );
        }
    }
    if let Some(b) = spec.baseline {
        let _ = write!(text, "; the pinned baseline {} {}", fig(Some(b)), spec.unit);
    }
    text
}

/// The charts of a service case: TTFT, ITL and output throughput, or a sweep's throughput per
/// GPU at its levels; `baseline` is the pinned baseline's night.
#[must_use]
pub fn serve_charts(
    case: &str,
    nights: &[ServeNight],
    levels: &[f64],
    baseline: Option<&ServeNight>,
    sweep: bool,
    changes: &[(&str, super::ChartChange)],
) -> Vec<String> {
    let of = |series: &str| -> Vec<&super::ChartChange> {
        changes
            .iter()
            .filter(|(s, _)| *s == series)
            .map(|(_, c)| c)
            .collect()
    };
    let col = |f: fn(&ServeNight) -> Option<f64>| nights.iter().map(f).collect::<Vec<_>>();
    let specs = if sweep {
        let mut lines: Vec<Line<'_>> = levels
            .iter()
            .enumerate()
            .map(|(k, l)| Line {
                label: format!("at {} tok/s/user", fig(Some(*l))),
                class: "level",
                values: nights
                    .iter()
                    .map(|n| n.at_levels.get(k).copied().flatten())
                    .collect(),
            })
            .collect();
        lines.push(Line {
            label: "peak".to_owned(),
            class: "peak",
            values: col(|n| n.peak_tok_s_gpu),
        });
        vec![ChartSpec {
            what: "output throughput per GPU on the frontier",
            case,
            unit: "tok/s/GPU",
            lines,
            baseline: baseline.and_then(|b| b.peak_tok_s_gpu),
            changes: of(SERIES_PEAK),
        }]
    } else {
        let pair = |p50: fn(&ServeNight) -> Option<f64>, p99: fn(&ServeNight) -> Option<f64>| {
            vec![
                Line {
                    label: "p50".to_owned(),
                    class: "p50",
                    values: col(p50),
                },
                Line {
                    label: "p99".to_owned(),
                    class: "p99",
                    values: col(p99),
                },
            ]
        };
        vec![
            ChartSpec {
                what: "time to first token (TTFT), p50 and p99",
                case,
                unit: "ms",
                lines: pair(|n| n.ttft_p50_ms, |n| n.ttft_p99_ms),
                baseline: baseline.and_then(|b| b.ttft_p99_ms),
                changes: of(SERIES_TTFT),
            },
            ChartSpec {
                what: "inter-token latency (ITL), p50 and p99",
                case,
                unit: "ms",
                lines: pair(|n| n.itl_p50_ms, |n| n.itl_p99_ms),
                baseline: baseline.and_then(|b| b.itl_p99_ms),
                changes: of(SERIES_ITL),
            },
            ChartSpec {
                what: "output throughput",
                case,
                unit: "tok/s",
                lines: vec![Line {
                    label: "output".to_owned(),
                    class: "output",
                    values: col(|n| n.output_tok_s),
                }],
                baseline: baseline.and_then(|b| b.output_tok_s),
                changes: of(SERIES_OUTPUT),
            },
        ]
    };
    specs.iter().map(|s| serve_svg(s, nights, levels)).collect()
}

/// The levels a sweep's page reads its frontier at: the latest judged night's, at most
/// [`MAX_LEVELS`] of them.
#[must_use]
pub fn page_levels(decisions: &[Option<crate::compare::ServeDecision>]) -> Vec<f64> {
    decisions
        .iter()
        .rev()
        .flatten()
        .find_map(|d| d.frontier.as_ref().filter(|f| !f.levels.is_empty()))
        .map(|f| f.levels.iter().copied().take(MAX_LEVELS).collect())
        .unwrap_or_default()
}

/// The index's sparkline of a service case: its p99 TTFT (a sweep: its peak throughput per
/// GPU) over the last nights, the last night marked by its verdict.
#[must_use]
pub fn serve_sparkline(nights: &[ServeNight], sweep: bool) -> String {
    const SW: f64 = 120.0;
    const SH: f64 = 26.0;
    let (what, unit) = if sweep {
        ("peak throughput per GPU", "tok/s/GPU")
    } else {
        ("p99 TTFT", "ms")
    };
    let value = |n: &ServeNight| {
        if sweep {
            n.peak_tok_s_gpu
        } else {
            n.ttft_p99_ms
        }
    };
    let points: Vec<(usize, f64)> = nights
        .iter()
        .enumerate()
        .filter_map(|(i, n)| value(n).map(|v| (i, v)))
        .collect();
    let mut svg = format!(
        r#"<svg class="spark" width="{SW}" height="{SH}" viewBox="0 0 {SW} {SH}" role="img" aria-label="{}">"#,
        match (points.first(), points.last()) {
            (Some(a), Some(b)) => format!(
                "{what} over the last {} nights: {} to {} {unit}",
                nights.len(),
                fig(Some(a.1)),
                fig(Some(b.1))
            ),
            _ => format!("no {what} measured"),
        }
    );
    let (Some(lo), Some(hi), Some(last)) = (
        points.iter().map(|p| p.1).reduce(f64::min),
        points.iter().map(|p| p.1).reduce(f64::max),
        nights.last(),
    ) else {
        svg.push_str("</svg>");
        return svg;
    };
    let span = (hi - lo).max(hi.abs() * 0.02).max(1e-9);
    let n = nights.len();
    let x_of = |i: usize| {
        if n == 1 {
            SW / 2.0
        } else {
            3.0 + (SW - 10.0) * across(i, n)
        }
    };
    // Latency grows upwards, like a regression on a step case's utilisation falls: both
    // read "up is worse" for latency and "down is worse" for throughput, as their units say.
    let y_of = |v: f64| 4.0 + (SH - 8.0) * (1.0 - (v - lo) / span);
    let line: Vec<String> = points
        .iter()
        .map(|(i, v)| format!("{:.0},{:.0}", x_of(*i), y_of(*v)))
        .collect();
    let _ = write!(
        svg,
        r#"<polyline class="line" points="{}"/>"#,
        line.join(" ")
    );
    if let Some(v) = value(last) {
        let _ = write!(
            svg,
            r#"<path class="v-{}" transform="translate({},{}) scale(0.7)" d="{}"/>"#,
            escape(&last.verdict),
            num(x_of(n - 1)),
            num(y_of(v)),
            mark_path(&last.verdict),
        );
    }
    svg.push_str("</svg>");
    svg
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn night(run_id: i64, verdict: &str, ttft_p99: f64) -> ServeNight {
        let means = BTreeMap::from([
            (TTFT_P50.to_owned(), 49.5),
            (TTFT_P99.to_owned(), ttft_p99),
            (ITL_P50.to_owned(), 27.19),
            (ITL_P99.to_owned(), 29.63),
            (OUTPUT_TOK_S.to_owned(), 673.9),
        ]);
        ServeNight::of(
            ServeNightBase {
                run_id,
                href: format!("../runs/{run_id}.html"),
                started_at: format!("2026-11-{run_id:02}T03:00:00Z"),
                git_sha: Some("<b>abcdef0123456789".into()),
                verdict: verdict.into(),
            },
            &means,
            None,
            &[],
            None,
        )
    }

    #[test]
    fn each_chart_marks_every_night_on_its_p99_with_an_accessible_name() {
        let nights = [
            night(1, "new", 67.56),
            night(2, "pass", 68.0),
            night(3, "regressed", 88.0),
        ];
        let charts = serve_charts("serve/m/rate=4", &nights, &[], Some(&nights[0]), false, &[]);
        assert_eq!(charts.len(), 3);
        for (chart, what) in charts.iter().zip(["TTFT", "ITL", "output throughput"]) {
            assert!(chart.contains(&format!(r#"aria-label="{what}"#)) || chart.contains(what));
            assert_eq!(chart.matches("<a class=\"mark").count(), 3, "{chart}");
            assert!(chart.contains(r#"href="../runs/3.html""#), "{chart}");
            assert!(!chart.contains("<b>"), "escaped: {chart}");
        }
        let ttft = &charts[0];
        assert!(
            ttft.contains(
                "aria-label=\"time to first token (TTFT), p50 and p99 of serve/m/rate=4 over 3 nights, \
                 2026-11-01 to 2026-11-03; p50 from 49.50 to 49.50 ms; p99 from 67.56 to 88.00 ms; \
                 the pinned baseline 67.56 ms\""
            ),
            "{ttft}"
        );
        assert!(ttft.contains(mark_path("regressed")) && ttft.contains("baseline 67.56"));
        assert!(
            ttft.contains(
                "TTFT p50 49.50 ms p99 88.00 ms, ITL p50 27.19 ms p99 29.63 ms, output 673.9 tok/s"
            ),
            "{ttft}"
        );
    }

    #[test]
    fn a_sweep_night_reads_its_frontier_at_the_levels() {
        let files = vec![
            ("1".to_owned(), Some(40.0), Some(100.0)),
            ("4".to_owned(), Some(30.0), Some(300.0)),
            // A point measured twice is one point: its mean.
            ("16".to_owned(), Some(20.0), Some(500.0)),
            ("16".to_owned(), Some(20.0), Some(700.0)),
        ];
        let n = ServeNight::of(
            ServeNightBase {
                run_id: 1,
                href: String::new(),
                started_at: "2026-11-01T00:00:00Z".into(),
                git_sha: None,
                verdict: "new".into(),
            },
            &BTreeMap::from([(TTFT_P99.to_owned(), 1.0)]),
            Some(files.as_slice()),
            &[25.0, 35.0, 50.0],
            None,
        );
        assert_eq!(n.ttft_p99_ms, None, "a sweep's means describe no one load");
        assert_eq!(n.peak_tok_s_gpu, Some(600.0));
        // Halfway between (20, 600) and (30, 300); between (30, 300) and (40, 100); beyond.
        assert_eq!(n.at_levels, vec![Some(450.0), Some(200.0), None]);
        let chart = &serve_charts("s", &[n], &[25.0, 35.0, 50.0], None, true, &[])[0];
        assert!(
            chart.contains("peak from 600.0 to 600.0 tok/s/GPU"),
            "{chart}"
        );
        assert!(
            chart.contains(r#"tabindex="0""#),
            "no run page, still focusable"
        );
    }

    #[test]
    fn no_night_and_one_night_draw_without_dividing_by_zero() {
        for chart in serve_charts("s", &[], &[], None, false, &[]) {
            assert!(chart.contains("no measured night"));
        }
        for chart in serve_charts("s", &[night(1, "new", 60.0)], &[], None, false, &[]) {
            assert!(
                !chart.contains("NaN") && chart.contains("translate(357.0,"),
                "{chart}"
            );
        }
        assert!(!serve_sparkline(&[night(1, "new", 60.0)], false).contains("NaN"));
        assert!(serve_sparkline(&[], false).contains("no p99 TTFT measured"));
    }
}
