//! The service cases of `utilgate site` (docs/site.md): each service case's nights on the
//! site's branch read from the store (the mean over repeats of each percentile, a sweep's
//! frontier, the stored verdicts and baseline moves) into its index row and page. A case
//! whose newest result and newest baseline move are the ones the manifest recorded keeps its
//! page and row. Reads the store; writes the case pages under the site's directory.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::compare::{Detector, ServeDecision, change_points};
use crate::error::Error;
use crate::report::site::serve::{
    SERIES_ITL, SERIES_OUTPUT, SERIES_PEAK, SERIES_TTFT, ServeBaselineRow, ServeCard,
    ServeCasePage, ServeNight, ServeNightBase, page_levels, serve_charts, serve_sparkline,
};
use crate::report::site::{ChangeRow, ChartChange, SiteFacts, SiteRenderer};
use crate::store::{ServeSeriesMarks, ServeSitePoint, Store};

/// A service case in the site's manifest: what its page was built from, and its index row.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct ServeEntry {
    pub fingerprint: String,
    pub card: ServeCard,
    /// Its change points, newest first, as the changes page lists them.
    pub changes: Vec<ChangeRow>,
}

/// What the service cases' share of a build reads and writes with.
pub(crate) struct ServeBuild<'a> {
    pub store: &'a Store,
    pub site: &'a SiteRenderer,
    pub facts: &'a SiteFacts,
    pub out: &'a Path,
    pub branch: &'a str,
    pub since: Option<jiff::Timestamp>,
    pub spark_nights: usize,
    pub gpu: Option<&'a str>,
    /// The runs that have a page.
    pub paged: &'a BTreeSet<i64>,
    /// How change points are found, as for the step cases.
    pub detector: &'a Detector,
}

/// The service cases' share of a build.
pub(crate) struct ServeCards {
    /// Every service case's index row.
    pub cards: Vec<ServeCard>,
    /// The manifest's entries.
    pub entries: BTreeMap<String, ServeEntry>,
    /// How many pages were written.
    pub written: usize,
}

/// Every service case's index row, rewriting the pages whose case changed since `old`.
pub(crate) fn serve_cards(
    b: &ServeBuild<'_>,
    old: &BTreeMap<String, ServeEntry>,
) -> Result<ServeCards, Error> {
    let mut cards = Vec::new();
    let mut entries = BTreeMap::new();
    let mut written = 0;
    for marks in b.store.serve_series_marks()? {
        if b.gpu.is_some_and(|g| g != marks.gpu_sku) {
            continue;
        }
        let fingerprint = format!("{}:{:?}", marks.last_result, marks.last_move);
        let page = ServeCard::of(&marks.key, &marks.gpu_sku).page;
        let (card, changes) = match old.get(&page) {
            Some(entry) if entry.fingerprint == fingerprint && b.out.join(&page).is_file() => {
                (entry.card.clone(), entry.changes.clone())
            }
            _ => {
                let (card, changes, html) = serve_page(b, &marks)?;
                if card.nights > 0 {
                    super::write_page(&b.out.join(&card.page), &html)?;
                    written += 1;
                }
                (card, changes)
            }
        };
        if card.nights == 0 {
            continue;
        }
        entries.insert(
            page,
            ServeEntry {
                fingerprint,
                card: card.clone(),
                changes,
            },
        );
        cards.push(card);
    }
    Ok(ServeCards {
        cards,
        entries,
        written,
    })
}

/// The night's stored decision, when it reads as one.
fn decision(p: &ServeSitePoint) -> Option<ServeDecision> {
    p.decision
        .as_ref()
        .and_then(|d| serde_json::from_value(d.clone()).ok())
}

fn night(
    p: &ServeSitePoint,
    sweep: bool,
    levels: &[f64],
    decision: Option<&ServeDecision>,
    paged: &BTreeSet<i64>,
    prefix: &str,
) -> ServeNight {
    ServeNight::of(
        ServeNightBase {
            run_id: p.run_id.0,
            href: if paged.contains(&p.run_id.0) {
                format!("{prefix}runs/{}.html", p.run_id.0)
            } else {
                String::new()
            },
            started_at: p
                .started_at
                .round(jiff::Unit::Second)
                .unwrap_or(p.started_at)
                .to_string(),
            git_sha: p.git_sha.clone(),
            verdict: p.verdict.map_or("none", |v| v.as_str()).to_owned(),
        },
        &p.means,
        sweep.then_some(p.sweep.as_slice()),
        levels,
        decision,
    )
}

/// One service case's row, change points and page.
fn serve_page(
    b: &ServeBuild<'_>,
    marks: &ServeSeriesMarks,
) -> Result<(ServeCard, Vec<ChangeRow>, String), Error> {
    let (key, sku) = (&marks.key, marks.gpu_sku.as_str());
    let sweep = key.sweep.is_some();
    let mut card = ServeCard::of(key, sku);
    // A night that could not be measured has no figure to draw: its run's page says why.
    let stored: Vec<ServeSitePoint> = b
        .store
        .serve_site_points(key, sku, b.branch, b.since)?
        .into_iter()
        .filter(|p| p.error.is_none())
        .collect();
    let decisions: Vec<Option<ServeDecision>> = stored.iter().map(decision).collect();
    let levels = if sweep {
        page_levels(&decisions)
    } else {
        Vec::new()
    };
    let nights: Vec<ServeNight> = stored
        .iter()
        .zip(&decisions)
        .map(|(p, d)| night(p, sweep, &levels, d.as_ref(), b.paged, "../"))
        .collect();
    let moves = b.store.serve_site_moves(key, sku)?;
    let row = |m: &crate::store::ServeSiteMove| ServeBaselineRow {
        moved_at: m.moved_at.to_string(),
        kind: m.kind.clone(),
        reason: m.reason.clone(),
        run_id: m.run_id.0,
        run_page: b
            .paged
            .contains(&m.run_id.0)
            .then(|| format!("../runs/{}.html", m.run_id.0)),
        git_sha: m.git_sha.clone(),
        figures: stored
            .iter()
            .position(|p| p.result_id == m.result_id)
            .map(|i| {
                nights[i]
                    .figures(&levels)
                    .trim_start_matches(", ")
                    .to_owned()
            }),
    };
    let pinned_night = moves.first().and_then(|m| {
        stored
            .iter()
            .position(|p| p.result_id == m.result_id)
            .map(|i| &nights[i])
    });
    let name = format!("{key} on {sku}");
    let (changes, marks) = service_changes(b, &card, &nights, sweep)?;
    let charts = serve_charts(&name, &nights, &levels, pinned_night, sweep, &marks);
    let spark_from = nights.len().saturating_sub(b.spark_nights);
    card.spark = serve_sparkline(&nights[spark_from..], sweep);
    card.nights = nights.len();
    // The index links a run from the site's root.
    card.latest = stored
        .last()
        .zip(decisions.last())
        .map(|(p, d)| night(p, sweep, &levels, d.as_ref(), b.paged, ""));
    let pinned = moves.first().map(row);
    let moves = moves.iter().map(row).collect();
    let page = ServeCasePage {
        card: card.clone(),
        charts,
        nights: nights.into_iter().rev().collect(),
        levels,
        pinned,
        moves,
        baseline_branch: b.branch.to_owned(),
        changes: changes.clone(),
        detector: crate::report::history::detector_line(b.detector),
    };
    let html = b.site.serve_case(b.facts, &page)?;
    Ok((card, changes, html))
}

/// A service series the site looks for change points in: its name, unit, a night's value,
/// and whether a rise is the worse direction.
struct Watched {
    name: &'static str,
    unit: &'static str,
    value: fn(&ServeNight) -> Option<f64>,
    higher_is_worse: bool,
}

const ONE_LOAD: [Watched; 3] = [
    Watched {
        name: SERIES_TTFT,
        unit: "ms",
        value: |n| n.ttft_p99_ms,
        higher_is_worse: true,
    },
    Watched {
        name: SERIES_ITL,
        unit: "ms",
        value: |n| n.itl_p99_ms,
        higher_is_worse: true,
    },
    Watched {
        name: SERIES_OUTPUT,
        unit: "tok/s",
        value: |n| n.output_tok_s,
        higher_is_worse: false,
    },
];

const SWEEP: [Watched; 1] = [Watched {
    name: SERIES_PEAK,
    unit: "tok/s/GPU",
    value: |n| n.peak_tok_s_gpu,
    higher_is_worse: false,
}];

/// The change points of a service case's nights (oldest first), newest first: each watched
/// series through the step cases' detector, over the nights that have a value.
/// Each is also a chart mark, by its series' name.
fn service_changes(
    b: &ServeBuild<'_>,
    card: &ServeCard,
    nights: &[ServeNight],
    sweep: bool,
) -> Result<ServeChanges, Error> {
    let watched: &[Watched] = if sweep { &SWEEP } else { &ONE_LOAD };
    let mut rows = Vec::new();
    let mut marks = Vec::new();
    for w in watched {
        let (at, series): (Vec<usize>, Vec<f64>) = nights
            .iter()
            .enumerate()
            .filter_map(|(i, n)| (w.value)(n).filter(|v| v.is_finite()).map(|v| (i, v)))
            .unzip();
        let found = change_points(&series, b.detector).map_err(|e| Error::HistoryRead {
            case: card.name.clone(),
            gpu: card.gpu_sku.clone(),
            problem: format!("{}: {e}", w.name),
        })?;
        for cp in found {
            let night = &nights[at[cp.index]];
            let m = cp.magnitude;
            let worse = if w.higher_is_worse {
                m.after_mean > m.before_mean
            } else {
                m.after_mean < m.before_mean
            };
            let interval = m.ci_pct.map_or_else(String::new, |(lo, hi)| {
                format!("; 95% interval {lo:+.1}% to {hi:+.1}%")
            });
            let commit = night
                .git_sha
                .as_deref()
                .map_or_else(String::new, |s| format!(" at {}", &s[..s.len().min(12)]));
            marks.push((
                w.name,
                ChartChange {
                    run_id: night.run_id,
                    change_pct: m.change_pct,
                    title: format!(
                        "{} {} {:+.1}% from run {}{commit}",
                        night.started_at.get(..10).unwrap_or(&night.started_at),
                        w.name,
                        m.change_pct,
                        night.run_id
                    ),
                },
            ));
            rows.push(ChangeRow {
                case: card.name.clone(),
                gpu_sku: card.gpu_sku.clone(),
                page: card.page.clone(),
                night: night.started_at.clone(),
                run_id: Some(night.run_id),
                run_page: b
                    .paged
                    .contains(&night.run_id)
                    .then(|| format!("runs/{}.html", night.run_id)),
                regression: worse,
                lines: vec![format!(
                    "{} {} {}: {} {} -> {} {} ({:+.1}%{interval}), {} night{} before and \
                         {} from run {}{commit}",
                    night.started_at.get(..10).unwrap_or(&night.started_at),
                    if worse { "worse" } else { "better" },
                    w.name,
                    sig(m.before_mean),
                    w.unit,
                    sig(m.after_mean),
                    w.unit,
                    m.change_pct,
                    m.before_n,
                    if m.before_n == 1 { "" } else { "s" },
                    m.after_n,
                    night.run_id,
                )],
            });
        }
    }
    rows.sort_by(|a, b| b.night.cmp(&a.night).then_with(|| a.lines.cmp(&b.lines)));
    Ok((rows, marks))
}

/// A service case's change points as rows, newest first, and as chart marks by series.
type ServeChanges = (Vec<ChangeRow>, Vec<(&'static str, ChartChange)>);

/// Four significant figures, as the site's tables write them.
fn sig(v: f64) -> String {
    crate::report::site::serve::fig(Some(v))
}
