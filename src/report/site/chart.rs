//! The site's charts, drawn as SVG by utilgate: a case's utilisation over every night (the
//! floor as the 100% line, the pinned baseline with its noise band and threshold, one mark per
//! night shaped and coloured by its verdict, change points at their night), its step time, and
//! the index's sparklines. Every mark is a link to its run's page and carries its figures as a
//! `<title>` (a tooltip without JavaScript) and as `data-` attributes (the site's script shows
//! them on hover and focus). Strings from outside utilgate are entity-escaped here. Pure.

use std::fmt::Write as _;

use super::{ChartChange, ChartPoint};
pub(crate) use crate::report::escape::svg as escape;

/// The guides of a case chart, in utilisation fractions and percent.
#[derive(Debug, Clone, Copy, Default)]
pub struct Guides {
    /// The pinned baseline's utilisation (fraction).
    pub baseline: Option<f64>,
    /// The per-process noise around it (percent).
    pub noise_pct: Option<f64>,
    /// The practical threshold (percent of the baseline).
    pub threshold_pct: Option<f64>,
}

/// Which vertical scale a chart uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scale {
    /// 0 to 100%: the floor is the top line, the distance from it is what the eye reads.
    Floor,
    /// Fitted to the nights and the baseline: the night-to-night movement is what it reads.
    Fit,
}

const W: f64 = 760.0;
const H: f64 = 260.0;
const LEFT: f64 = 56.0;
const RIGHT: f64 = 96.0;
const TOP: f64 = 14.0;
const BOTTOM: f64 = 30.0;

/// How far across a chart of `n` nights the `i`th is, 0 to 1 (a lone night in the middle).
fn across(i: usize, n: usize) -> f64 {
    if n <= 1 {
        return 0.5;
    }
    #[expect(
        clippy::cast_precision_loss,
        reason = "a night's index, far below 2^52"
    )]
    let f = i as f64 / (n - 1) as f64;
    f
}

/// `x` with one decimal, as every coordinate is written.
fn num(x: f64) -> String {
    format!("{x:.1}")
}

/// The mark of a verdict: a shape as well as a colour (the colours are the stylesheet's,
/// Okabe-Ito, safe for the common colour-blindnesses). Centred on (0, 0), radius about 5.
#[must_use]
pub fn mark_path(verdict: &str) -> &'static str {
    match verdict {
        // Triangle pointing down: slower.
        "regressed" => "M-5.5,-4L5.5,-4L0,5.5Z",
        // Triangle pointing up: faster.
        "improved" => "M-5.5,4L5.5,4L0,-5.5Z",
        // Square: could not tell.
        "inconclusive" => "M-4.2,-4.2H4.2V4.2H-4.2Z",
        // Diamond: the first night of a case.
        "new" => "M0,-5.5L5.5,0L0,5.5L-5.5,0Z",
        // A cross: no judgment (invalid, error, missing).
        "invalid" | "error" | "missing" => {
            "M-4,-5.4L0,-1.4L4,-5.4L5.4,-4L1.4,0L5.4,4L4,5.4L0,1.4L-4,5.4L-5.4,4L-1.4,0L-5.4,-4Z"
        }
        // Circle: a pass, or a night stored without a verdict.
        _ => "M-4.5,0A4.5,4.5 0 1 0 4.5,0A4.5,4.5 0 1 0 -4.5,0Z",
    }
}

/// The vertical range of a chart in percent.
fn range(points: &[ChartPoint], guides: &Guides, scale: Scale) -> (f64, f64) {
    if scale == Scale::Floor {
        return (0.0, 100.0);
    }
    let mut values: Vec<f64> = points.iter().map(|p| p.utilisation * 100.0).collect();
    if let Some(b) = guides.baseline {
        let noise = guides.noise_pct.unwrap_or(0.0);
        let threshold = guides.threshold_pct.unwrap_or(0.0);
        values.extend([
            b * 100.0 * (1.0 + noise / 100.0),
            b * 100.0 * (1.0 - threshold.max(noise) / 100.0),
        ]);
    }
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if !lo.is_finite() || !hi.is_finite() {
        return (0.0, 100.0);
    }
    let span = (hi - lo).max(hi.abs() * 0.02).max(0.1);
    (
        (lo - span * 0.12).max(0.0),
        (hi + span * 0.12).min(100.0).max(lo + span),
    )
}

/// The date part of an RFC 3339 timestamp.
fn day(ts: &str) -> &str {
    ts.get(..10).unwrap_or(ts)
}

/// A case's utilisation over its nights (oldest left), as the case page shows it: one chart
/// with both scales. The guides, the vertical labels and the line are drawn once per scale (a
/// `<g class="scale">` each, the chart's `data-scale` shows one); the marks are drawn once, at
/// their height on the floor scale, each carrying its height on the fitted scale
/// (`data-fit`), which the site's script moves them to. Without a script the floor scale is
/// what shows.
#[must_use]
pub fn utilisation_svg(
    name: &str,
    points: &[ChartPoint],
    changes: &[ChartChange],
    guides: &Guides,
) -> String {
    let mut svg = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="chart util-chart" data-scale="floor" width="{W}" height="{H}" viewBox="0 0 {W} {H}" role="img" aria-label="{}">"#,
        escape(&aria(name, points, changes)),
    );
    let n = points.len();
    if n == 0 {
        let _ = write!(
            svg,
            r#"<text x="{}" y="{}" text-anchor="middle" class="label">no measured night</text></svg>"#,
            W / 2.0,
            H / 2.0
        );
        return svg;
    }
    // One shape per verdict that is drawn, used by every mark of that verdict.
    let mut shapes: Vec<&str> = points.iter().map(|p| p.verdict.as_str()).collect();
    shapes.sort_unstable();
    shapes.dedup();
    svg.push_str("<defs>");
    for verdict in shapes {
        let _ = write!(
            svg,
            r#"<path id="m-{}" d="{}"/>"#,
            escape(verdict),
            mark_path(verdict)
        );
    }
    svg.push_str("</defs>");
    let x_of = |i: usize| LEFT + (W - LEFT - RIGHT) * across(i, n);
    let floor = Vertical::of(points, guides, Scale::Floor);
    let fit = Vertical::of(points, guides, Scale::Fit);
    for (scale, v) in [(Scale::Floor, &floor), (Scale::Fit, &fit)] {
        scale_layer(&mut svg, points, guides, scale, v, &x_of);
    }
    let (x0, x1, bottom) = (LEFT, W - RIGHT, H - BOTTOM);
    let _ = write!(
        svg,
        r#"<line class="axis" x1="{x0}" y1="{TOP}" x2="{x0}" y2="{bottom}"/><line class="axis" x1="{x0}" y1="{bottom}" x2="{x1}" y2="{bottom}"/>"#,
    );
    night_labels(&mut svg, n, &x_of, H - 9.0, &|i| &points[i].started_at);
    // Change points: a dashed line where the new level starts, named by its night and commits.
    for c in changes {
        let Some(i) = points.iter().position(|p| p.run_id == c.run_id) else {
            continue;
        };
        change_mark(&mut svg, c, x_of(i), TOP, bottom);
    }
    // Written straight into the drawing: a page has hundreds of marks.
    for (i, p) in points.iter().enumerate() {
        let verdict = escape(&p.verdict);
        let pct = p.utilisation * 100.0;
        let _ = write!(
            svg,
            r#"<a class="mark v-{verdict}{}" "#,
            if p.untrusted { " untrusted" } else { "" },
        );
        // An old night without a run page keeps its figures and its focus, without a link.
        if p.href.is_empty() {
            svg.push_str(r#"tabindex="0""#);
        } else {
            let _ = write!(svg, r#"href="{}""#, escape(&p.href));
        }
        let _ = write!(
            svg,
            r##" data-run="{}"><use href="#m-{verdict}" x="{:.1}" y="{:.1}" data-fit="{:.1}"/><title>{}</title></a>"##,
            p.run_id,
            x_of(i),
            floor.y(pct),
            fit.y(pct),
            escape(&p.title()),
        );
    }
    svg.push_str("</svg>");
    svg
}

/// A utilisation chart's vertical scale: its range in percent and where a value is drawn.
struct Vertical {
    lo: f64,
    hi: f64,
}

impl Vertical {
    fn of(points: &[ChartPoint], guides: &Guides, scale: Scale) -> Self {
        let (lo, hi) = range(points, guides, scale);
        Self { lo, hi }
    }

    fn y(&self, pct: f64) -> f64 {
        TOP + (H - TOP - BOTTOM) * (1.0 - (pct - self.lo) / (self.hi - self.lo))
    }
}

/// What one scale of a utilisation chart draws on its own: the guides (threshold, noise band,
/// baseline, floor), the scale's ends and middle, and the line through the nights.
fn scale_layer(
    svg: &mut String,
    points: &[ChartPoint],
    guides: &Guides,
    scale: Scale,
    v: &Vertical,
    x_of: &dyn Fn(usize) -> f64,
) {
    let which = match scale {
        Scale::Floor => "floor",
        Scale::Fit => "fit",
    };
    let _ = write!(svg, r#"<g class="scale" data-scale="{which}">"#);
    let (lo, hi) = (v.lo, v.hi);
    let (x0, x1) = (LEFT, W - RIGHT);
    // Guides first, so the marks sit on top.
    if let Some(b) = guides.baseline.map(|b| b * 100.0) {
        if let Some(t) = guides.threshold_pct.filter(|t| *t > 0.0) {
            let line = b * (1.0 - t / 100.0);
            if line >= lo {
                let _ = write!(
                    svg,
                    r#"<line class="threshold" x1="{}" y1="{y}" x2="{}" y2="{y}"><title>threshold: {:.1}% below the baseline ({:.1}%)</title></line><text class="label" x="{}" y="{}">threshold −{t:.1}%</text>"#,
                    num(x0),
                    num(x1),
                    t,
                    line,
                    num(x1 + 4.0),
                    // Below the baseline's label when the two lines are close.
                    num((v.y(line) + 4.0).max(v.y(b) + 16.0)),
                    y = num(v.y(line)),
                );
            }
        }
        if let Some(noise) = guides.noise_pct.filter(|n| *n > 0.0) {
            let (top, low) = (
                (b * (1.0 + noise / 100.0)).min(hi),
                (b * (1.0 - noise / 100.0)).max(lo),
            );
            let _ = write!(
                svg,
                r#"<rect class="noise-band" x="{}" y="{}" width="{}" height="{}"><title>noise band: the baseline ± {:.1}% per-process noise</title></rect>"#,
                num(x0),
                num(v.y(top)),
                num(x1 - x0),
                num((v.y(low) - v.y(top)).max(0.5)),
                noise,
            );
        }
        let _ = write!(
            svg,
            r#"<line class="baseline" x1="{}" y1="{y}" x2="{}" y2="{y}"><title>pinned baseline: {b:.1}%</title></line><text class="label" x="{}" y="{}">baseline {b:.1}%</text>"#,
            num(x0),
            num(x1),
            num(x1 + 4.0),
            num(v.y(b) + 4.0),
            y = num(v.y(b)),
        );
    }
    if hi >= 100.0 {
        let _ = write!(
            svg,
            r#"<line class="floor" x1="{}" y1="{y}" x2="{}" y2="{y}"><title>the floor: 100% utilisation, the roofline's least step time</title></line><text class="label" x="{}" y="{}">floor 100%</text>"#,
            num(x0),
            num(x1),
            num(x1 + 4.0),
            num(v.y(100.0) + 4.0),
            y = num(v.y(100.0)),
        );
    }
    for value in [lo, f64::midpoint(lo, hi), hi] {
        let _ = write!(
            svg,
            r#"<text class="label" x="{}" y="{}" text-anchor="end">{value:.1}%</text>"#,
            num(x0 - 6.0),
            num(v.y(value) + 4.0),
        );
    }
    svg.push_str(r#"<polyline class="line" fill="none" points=""#);
    for (i, p) in points.iter().enumerate() {
        if i > 0 {
            svg.push(' ');
        }
        let _ = write!(svg, "{:.1},{:.1}", x_of(i), v.y(p.utilisation * 100.0));
    }
    svg.push_str(r#""/></g>"#);
}

/// The days of the first, middle and last of `n` nights under a chart's time axis, at height
/// `y` (the case and the service charts).
pub(crate) fn night_labels<'a>(
    svg: &mut String,
    n: usize,
    x_of: &dyn Fn(usize) -> f64,
    y: f64,
    started_at: &dyn Fn(usize) -> &'a str,
) {
    let mut ticks = vec![0, n / 2, n - 1];
    ticks.dedup();
    for i in ticks {
        let anchor = match i {
            0 if n > 1 => "start",
            i if i + 1 == n && n > 1 => "end",
            _ => "middle",
        };
        let _ = write!(
            svg,
            r#"<text class="label" x="{}" y="{}" text-anchor="{anchor}">{}</text>"#,
            num(x_of(i)),
            num(y),
            escape(day(started_at(i))),
        );
    }
}

/// A change point's mark: a dashed line from `top` to `bottom` at `x` where the new level
/// starts, its size above, its night and commits as its tooltip (the step and service charts).
pub(crate) fn change_mark(svg: &mut String, c: &ChartChange, x: f64, top: f64, bottom: f64) {
    let x = num(x);
    let _ = write!(
        svg,
        r#"<g class="changepoint" data-run="{}" data-change="{:+.1}"><line x1="{x}" y1="{top}" x2="{x}" y2="{bottom}"/><text class="label" x="{x}" y="{}" text-anchor="middle">{:+.1}%</text><title>{}</title></g>"#,
        c.run_id,
        c.change_pct,
        num(top + 10.0),
        c.change_pct,
        escape(&c.title),
    );
}

/// The chart's accessible name: what it shows, in one sentence.
fn aria(name: &str, points: &[ChartPoint], changes: &[ChartChange]) -> String {
    let span = match (points.first(), points.last()) {
        (Some(a), Some(b)) => format!(
            ", {} to {}, from {:.1}% to {:.1}%",
            day(&a.started_at),
            day(&b.started_at),
            a.utilisation * 100.0,
            b.utilisation * 100.0
        ),
        _ => String::new(),
    };
    format!(
        "utilisation of {name} over {} nights{span}; {} change points; on the floor scale the \
         top line is the floor (100%), the fitted scale spans the nights",
        points.len(),
        changes.len(),
    )
}

/// The step time over the nights, fitted, without marks (the utilisation chart carries them).
#[must_use]
pub fn step_svg(name: &str, points: &[ChartPoint]) -> String {
    let values: Vec<(usize, f64)> = points
        .iter()
        .enumerate()
        .filter_map(|(i, p)| p.median_ms.filter(|m| m.is_finite()).map(|m| (i, m)))
        .collect();
    let mut svg = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="chart step-chart" width="{W}" height="{}" viewBox="0 0 {W} {}" role="img" aria-label="median step time of {} over {} nights">"#,
        H * 0.7,
        H * 0.7,
        escape(name),
        values.len(),
    );
    let h = H * 0.7;
    let lo = values.iter().map(|v| v.1).fold(f64::INFINITY, f64::min);
    let hi = values.iter().map(|v| v.1).fold(f64::NEG_INFINITY, f64::max);
    if values.is_empty() || !lo.is_finite() {
        svg.push_str("</svg>");
        return svg;
    }
    let span = (hi - lo).max(hi.abs() * 0.02).max(1e-6);
    let (lo, hi) = ((lo - span * 0.12).max(0.0), hi + span * 0.12);
    let n = points.len();
    let x_of = |i: usize| LEFT + (W - LEFT - RIGHT) * across(i, n);
    let y_of = |ms: f64| TOP + (h - TOP - BOTTOM) * (1.0 - (ms - lo) / (hi - lo));
    let bottom = h - BOTTOM;
    let _ = write!(
        svg,
        r#"<line class="axis" x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{bottom}"/><line class="axis" x1="{LEFT}" y1="{bottom}" x2="{}" y2="{bottom}"/>"#,
        W - RIGHT
    );
    for v in [lo, hi] {
        let _ = write!(
            svg,
            r#"<text class="label" x="{}" y="{}" text-anchor="end">{}</text>"#,
            num(LEFT - 6.0),
            num(y_of(v) + 4.0),
            crate::report::format::ms(Some(v)),
        );
    }
    let _ = write!(
        svg,
        r#"<text class="label" x="{}" y="{}">ms</text>"#,
        num(W - RIGHT + 4.0),
        num(TOP + 4.0)
    );
    let line: Vec<String> = values
        .iter()
        .map(|(i, m)| format!("{},{}", num(x_of(*i)), num(y_of(*m))))
        .collect();
    let _ = write!(
        svg,
        r#"<polyline class="line" fill="none" points="{}"/></svg>"#,
        line.join(" ")
    );
    svg
}

/// The index's sparkline of the last nights' utilisation, the last night marked by its verdict.
#[must_use]
pub fn sparkline_svg(points: &[ChartPoint]) -> String {
    const SW: f64 = 120.0;
    const SH: f64 = 26.0;
    let mut svg = format!(
        r#"<svg class="spark" width="{SW}" height="{SH}" viewBox="0 0 {SW} {SH}" role="img" aria-label="{}">"#,
        match (points.first(), points.last()) {
            (Some(a), Some(b)) => format!(
                "utilisation over the last {} nights: {:.1}% to {:.1}%",
                points.len(),
                a.utilisation * 100.0,
                b.utilisation * 100.0
            ),
            _ => "no measured night".to_owned(),
        }
    );
    let lo = points
        .iter()
        .map(|p| p.utilisation)
        .fold(f64::INFINITY, f64::min);
    let hi = points
        .iter()
        .map(|p| p.utilisation)
        .fold(f64::NEG_INFINITY, f64::max);
    let Some(last) = points.last().filter(|_| lo.is_finite()) else {
        svg.push_str("</svg>");
        return svg;
    };
    let span = (hi - lo).max(hi * 0.02).max(1e-9);
    let n = points.len();
    let x_of = |i: usize| {
        if n == 1 {
            SW / 2.0
        } else {
            3.0 + (SW - 10.0) * across(i, n)
        }
    };
    let y_of = |u: f64| 4.0 + (SH - 8.0) * (1.0 - (u - lo) / span);
    let line: Vec<String> = points
        .iter()
        .enumerate()
        .map(|(i, p)| format!("{:.0},{:.0}", x_of(i), y_of(p.utilisation)))
        .collect();
    let _ = write!(
        svg,
        r#"<polyline class="line" points="{}"/><path class="v-{}" transform="translate({},{}) scale(0.7)" d="{}"/></svg>"#,
        line.join(" "),
        last.verdict,
        num(x_of(n - 1)),
        num(y_of(last.utilisation)),
        mark_path(&last.verdict),
    );
    svg
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(run_id: i64, u: f64, verdict: &str) -> ChartPoint {
        ChartPoint {
            run_id,
            href: format!("../runs/{run_id}.html"),
            started_at: format!("2026-11-{run_id:02}T03:00:00Z"),
            git_sha: Some(format!("{run_id:02}<b>aaaaaaaaaa")),
            verdict: verdict.to_owned(),
            untrusted: run_id == 3,
            utilisation: u,
            median_ms: Some(10.0 / u),
        }
    }

    #[test]
    fn one_mark_per_night_shaped_by_verdict_and_the_change_at_its_night() {
        let points = [
            point(1, 0.40, "new"),
            point(2, 0.41, "pass"),
            point(3, 0.40, "inconclusive"),
            point(4, 0.36, "regressed"),
        ];
        let changes = [ChartChange {
            run_id: 4,
            change_pct: -11.0,
            title: "2026-11-04: -11.0% <script>".into(),
        }];
        let guides = Guides {
            baseline: Some(0.40),
            noise_pct: Some(1.0),
            threshold_pct: Some(5.0),
        };
        let svg = utilisation_svg("a/b", &points, &changes, &guides);
        // Each night is drawn once, shaped by its verdict (one shape per verdict drawn).
        assert_eq!(svg.matches("<a class=\"mark").count(), 4, "{svg}");
        assert_eq!(svg.matches("class=\"mark v-regressed\"").count(), 1);
        assert_eq!(svg.matches(" untrusted\" href=").count(), 1, "{svg}");
        assert_eq!(svg.matches("<path id=\"m-").count(), 4, "{svg}");
        assert!(svg.contains(mark_path("regressed")) && svg.contains(mark_path("new")));
        assert_eq!(svg.matches("href=\"#m-pass\"").count(), 1, "{svg}");
        assert!(svg.contains(r#"data-run="4" data-change="-11.0""#), "{svg}");
        assert!(!svg.contains("<b>") && !svg.contains("<script>"), "{svg}");
        // Both scales draw their guides; only the floor scale reaches the floor.
        let layer = |which: &str| {
            let from = svg
                .find(&format!(r#"<g class="scale" data-scale="{which}">"#))
                .expect(which);
            svg[from..].split("</g>").next().expect("layer").to_owned()
        };
        let (floor, fit) = (layer("floor"), layer("fit"));
        for l in [&floor, &fit] {
            assert!(
                l.contains("baseline 40.0%") && l.contains("noise-band"),
                "{l}"
            );
            assert_eq!(l.matches("<polyline").count(), 1);
        }
        assert!(floor.contains("floor 100%") && !fit.contains("floor 100%"));
        // The change's line is drawn at the fourth night's x, where its mark is; the mark sits
        // at 36% on the floor scale (0-100% over 216 px from y = 14) and lower on the fitted one.
        let at = |needle: &str| {
            let from = svg.find(needle).expect(needle) + needle.len();
            svg[from..].split('"').next().map(str::to_owned)
        };
        assert_eq!(
            at("data-change=\"-11.0\"><line x1=\""),
            Some("664.0".into())
        );
        assert!(
            svg.contains(r##"<use href="#m-regressed" x="664.0" y="152.2" data-fit="##),
            "{svg}"
        );
        let fit_y: f64 = at(r##"href="#m-regressed" x="664.0" y="152.2" data-fit=""##)
            .expect("data-fit")
            .parse()
            .expect("a number");
        assert!(fit_y > 152.2 && fit_y <= 230.0, "{fit_y}");
    }

    #[test]
    fn empty_and_single_nights_draw_without_dividing_by_zero() {
        let none = utilisation_svg("a", &[], &[], &Guides::default());
        assert!(none.contains("no measured night"));
        let one = utilisation_svg("a", &[point(1, 0.5, "new")], &[], &Guides::default());
        assert!(
            one.contains(r#"x="360.0""#) && !one.contains("NaN"),
            "{one}"
        );
        assert!(!sparkline_svg(&[point(1, 0.5, "new")]).contains("NaN"));
        assert!(!step_svg("a", &[point(1, 0.5, "new")]).contains("NaN"));
    }
}
