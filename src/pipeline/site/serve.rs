//! The service cases of `utilgate site` (docs/site.md): each service case's nights on the
//! site's branch read from the store (the mean over repeats of each percentile, a sweep's
//! frontier, the stored verdicts and baseline moves) into its index row and page. A case
//! whose newest result and newest baseline move are the ones the manifest recorded keeps its
//! page and row. Reads the store; writes the case pages under the site's directory.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::compare::ServeDecision;
use crate::error::Error;
use crate::pipeline::context::write_atomically;
use crate::report::site::serve::{
    ServeBaselineRow, ServeCard, ServeCasePage, ServeNight, ServeNightBase, page_levels,
    serve_charts, serve_sparkline,
};
use crate::report::site::{SiteFacts, SiteRenderer};
use crate::store::{ServeSeriesMarks, ServeSitePoint, Store};

/// A service case in the site's manifest: what its page was built from, and its index row.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct ServeEntry {
    pub fingerprint: String,
    pub card: ServeCard,
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
        let card = match old.get(&page) {
            Some(entry) if entry.fingerprint == fingerprint && b.out.join(&page).is_file() => {
                entry.card.clone()
            }
            _ => {
                let (card, html) = serve_page(b, &marks)?;
                if card.nights > 0 {
                    write_atomically(&b.out.join(&card.page), &html)?;
                    written += 1;
                }
                card
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

/// One service case's row and page.
fn serve_page(b: &ServeBuild<'_>, marks: &ServeSeriesMarks) -> Result<(ServeCard, String), Error> {
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
    let charts = serve_charts(&name, &nights, &levels, pinned_night, sweep);
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
    };
    let html = b.site.serve_case(b.facts, &page)?;
    Ok((card, html))
}
