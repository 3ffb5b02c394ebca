//! The HTML report's history chart of one case, drawn so the verdict reads at a glance: dates
//! on the axis, the reference level the verdict used, the threshold band (a drop inside it never
//! fails), the noise band (the per-process noise around the reference), and the change the
//! verdict is about (from the reference to this run, labelled with its drop). Inline SVG, no
//! scripts, no external resources. Pure.

use std::fmt::Write as _;

use super::TrendPoint;
use crate::report::escape::svg as escape;

/// What the verdict compared, in utilisation terms (fractions and percent).
#[derive(Debug, Clone, Copy, Default)]
pub struct ChartGuide {
    /// The reference level's utilisation (fraction).
    pub reference: Option<f64>,
    /// The practical threshold (percent of the reference).
    pub threshold_pct: Option<f64>,
    /// The per-process noise (percent).
    pub noise_pct: Option<f64>,
    /// This run's drop against the reference (percent, positive: a fall).
    pub drop_pct: Option<f64>,
}

const W: f64 = 520.0;
const H: f64 = 170.0;
const LEFT: f64 = 52.0;
const RIGHT: f64 = 70.0;
const TOP: f64 = 12.0;
const BOTTOM: f64 = 28.0;

fn num(x: f64) -> String {
    format!("{x:.1}")
}

/// The date part of an RFC 3339 timestamp (`2026-12-01T09:00:00Z` -> `2026-12-01`).
fn date(ts: &str) -> &str {
    ts.split('T').next().unwrap_or(ts)
}

/// The chart of a case's recent runs (oldest left) with the verdict's guides.
#[must_use]
#[expect(
    clippy::too_many_lines,
    reason = "one drawing, layer by layer from the bands to the labels; split, it reads worse"
)]
pub fn verdict_svg(points: &[TrendPoint], guide: &ChartGuide) -> String {
    let label = if guide.reference.is_some() {
        "utilisation history with the verdict's reference"
    } else {
        "utilisation history"
    };
    let mut svg = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="{W}" height="{H}" viewBox="0 0 {W} {H}" role="img" aria-label="{label}">"#
    );
    let usable: Vec<(usize, &TrendPoint, f64)> = points
        .iter()
        .enumerate()
        .filter_map(|(i, p)| {
            p.utilisation
                .filter(|u| u.is_finite())
                .map(|u| (i, p, u * 100.0))
        })
        .collect();
    let reference = guide.reference.filter(|r| r.is_finite()).map(|r| r * 100.0);
    let threshold = guide.threshold_pct.filter(|t| t.is_finite()).unwrap_or(0.0);
    let noise = guide.noise_pct.filter(|n| n.is_finite()).unwrap_or(0.0);
    let mut values: Vec<f64> = usable.iter().map(|u| u.2).collect();
    if let Some(r) = reference {
        values.extend([
            r * (1.0 + noise / 100.0),
            r * (1.0 - threshold.max(noise) / 100.0),
        ]);
    }
    let (Some(lo), Some(hi)) = (
        values.iter().copied().reduce(f64::min),
        values.iter().copied().reduce(f64::max),
    ) else {
        let _ = write!(
            svg,
            r#"<text x="{}" y="{}" text-anchor="middle" class="empty">no history yet</text></svg>"#,
            W / 2.0,
            H / 2.0
        );
        return svg;
    };
    let span = (hi - lo).max(hi.abs() * 0.02).max(0.1);
    let (y_lo, y_hi) = ((lo - span * 0.15).max(0.0), hi + span * 0.15);
    let n = points.len().max(1);
    let x_of = |i: usize| {
        if n == 1 {
            LEFT + (W - LEFT - RIGHT) / 2.0
        } else {
            LEFT + (W - LEFT - RIGHT) * i as f64 / (n - 1) as f64
        }
    };
    let y_of = |v: f64| TOP + (H - TOP - BOTTOM) * (1.0 - (v - y_lo) / (y_hi - y_lo));
    let (x0, x1) = (LEFT, W - RIGHT);
    if let Some(r) = reference {
        // The threshold band: from the reference down by the threshold (a drop inside never fails).
        let band_lo = r * (1.0 - threshold / 100.0);
        let _ = write!(
            svg,
            r#"<rect class="threshold-band" x="{}" y="{}" width="{}" height="{}"><title>threshold: a drop up to {}% never fails</title></rect>"#,
            num(x0),
            num(y_of(r)),
            num(x1 - x0),
            num((y_of(band_lo) - y_of(r)).max(0.0)),
            num(threshold)
        );
        let (n_hi, n_lo) = (r * (1.0 + noise / 100.0), r * (1.0 - noise / 100.0));
        let _ = write!(
            svg,
            r#"<rect class="noise-band" x="{}" y="{}" width="{}" height="{}"><title>per-process noise: {}%</title></rect>"#,
            num(x0),
            num(y_of(n_hi)),
            num(x1 - x0),
            num((y_of(n_lo) - y_of(n_hi)).max(0.0)),
            num(noise)
        );
        let _ = write!(
            svg,
            r#"<line class="reference" x1="{}" y1="{y}" x2="{}" y2="{y}"/><text class="label" x="{}" y="{}">reference {}%</text>"#,
            num(x0),
            num(x1),
            num(x1 + 4.0),
            num(y_of(r) + 4.0),
            num(r),
            y = num(y_of(r)),
        );
    }
    let _ = write!(
        svg,
        r#"<line class="axis" x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{b}"/><line class="axis" x1="{LEFT}" y1="{b}" x2="{x1}" y2="{b}"/>"#,
        b = H - BOTTOM,
    );
    for v in [y_lo, y_hi] {
        let _ = write!(
            svg,
            r#"<text class="label" x="{}" y="{}" text-anchor="end">{}%</text>"#,
            LEFT - 6.0,
            num(y_of(v) + 4.0),
            num(v)
        );
    }
    // Dates on the axis: the first, the middle and the last run.
    let mut ticks = vec![0, n / 2, n - 1];
    ticks.dedup();
    for i in ticks {
        if let Some(p) = points.get(i) {
            let anchor = match i {
                0 => "start",
                i if i + 1 == n => "end",
                _ => "middle",
            };
            let _ = write!(
                svg,
                r#"<text class="label" x="{}" y="{}" text-anchor="{anchor}">{}</text>"#,
                num(x_of(i)),
                num(H - 8.0),
                escape(date(&p.started_at))
            );
        }
    }
    change_point_marks(&mut svg, &usable, &x_of, TOP, H - BOTTOM);
    let path: Vec<String> = usable
        .iter()
        .map(|(i, _, v)| format!("{},{}", num(x_of(*i)), num(y_of(*v))))
        .collect();
    let _ = write!(
        svg,
        r#"<polyline class="line" fill="none" points="{}"/>"#,
        path.join(" ")
    );
    for (i, p, v) in &usable {
        let sha = p.git_sha.as_deref().map_or_else(String::new, |s| {
            format!(" @ {}", escape(super::format::short_sha(s)))
        });
        let _ = write!(
            svg,
            r#"<circle class="{}" cx="{}" cy="{}" r="{}"><title>run {}{sha}, {}: {}%</title></circle>"#,
            if p.current { "point current" } else { "point" },
            num(x_of(*i)),
            num(y_of(*v)),
            if p.current { 5 } else { 3 },
            p.run_id,
            escape(date(&p.started_at)),
            num(*v),
        );
    }
    // The change the verdict is about: from the reference to this run.
    if let (Some(r), Some((i, _, v)), Some(drop)) = (
        reference,
        usable.iter().find(|u| u.1.current),
        guide.drop_pct.filter(|d| d.is_finite()),
    ) {
        let x = x_of(*i);
        let _ = write!(
            svg,
            r#"<line class="change" x1="{x}" y1="{}" x2="{x}" y2="{}"/><text class="label change" x="{}" y="{}" text-anchor="end">drop {}%</text>"#,
            num(y_of(r)),
            num(y_of(*v)),
            num(x - 6.0),
            num(f64::midpoint(y_of(r), y_of(*v)) + 4.0),
            num(drop + 0.0),
            x = num(x),
        );
    }
    svg.push_str("</svg>");
    svg
}

/// Change points of the utilisation series (`compare::change_points`, default detector): a
/// dashed line where the new level starts.
fn change_point_marks(
    svg: &mut String,
    usable: &[(usize, &TrendPoint, f64)],
    x_of: &dyn Fn(usize) -> f64,
    top: f64,
    bottom: f64,
) {
    let series: Vec<f64> = usable.iter().map(|u| u.2).collect();
    for c in crate::compare::change_points(&series, &crate::compare::Detector::default())
        .unwrap_or_default()
    {
        let (i, p, _) = usable[c.index];
        let x = super::format::fixed(x_of(i), 1);
        let _ = write!(
            svg,
            r##"<line class="changepoint" x1="{x}" y1="{top}" x2="{x}" y2="{bottom}" stroke="#bf8700" stroke-dasharray="4 3"><title>change point at run {}: utilisation {:+.1}%</title></line>"##,
            p.run_id, c.magnitude.change_pct,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(i: i64, u: f64, current: bool) -> TrendPoint {
        TrendPoint {
            run_id: i,
            started_at: format!("2026-11-{:02}T02:00:00Z", 10 + i),
            git_sha: Some("0123456789abcdef".into()),
            median_ms: Some(6.0),
            utilisation: Some(u),
            current,
        }
    }

    #[test]
    fn the_chart_shows_dates_reference_bands_and_the_change() {
        let points = [
            point(1, 0.60, false),
            point(2, 0.61, false),
            point(3, 0.55, true),
        ];
        let svg = verdict_svg(
            &points,
            &ChartGuide {
                reference: Some(0.605),
                threshold_pct: Some(3.0),
                noise_pct: Some(1.5),
                drop_pct: Some(9.1),
            },
        );
        for want in [
            "2026-11-11",
            "2026-11-13",
            "reference 60.5%",
            "threshold-band",
            "noise-band",
            "drop 9.1%",
            "point current",
        ] {
            assert!(svg.contains(want), "{want} in {svg}");
        }
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
        // Without guides it is the plain history; with no points it says so.
        let plain = verdict_svg(&points, &ChartGuide::default());
        assert!(!plain.contains("reference") || plain.contains("verdict's reference"));
        assert!(!plain.contains("threshold-band"));
        assert!(verdict_svg(&[], &ChartGuide::default()).contains("no history yet"));
    }
}
