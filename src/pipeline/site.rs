//! The site stage of `utilgate site` (docs/site.md): the store read into the site's page models
//! and written as files, incrementally. A manifest (`site.json`) keeps each case's fingerprint
//! (its newest result, its newest baseline move, its threshold) with the card the index shows,
//! and each run page's neighbours; a case or run whose fingerprint is unchanged is not read
//! again and its page is not rewritten; a case that is read again starts from the nights its
//! CSV file kept (`site/nights.rs`) and reads only the results stored after them. Pages are
//! rewritten in place, with no manifest on disk until the build's end, so a build that stops
//! half-way is followed by a whole one; the index, the changes page and the manifest are written
//! beside and renamed. Reads the store; writes only under the site's directory.

#![expect(
    clippy::disallowed_methods,
    reason = "the site is a directory of files"
)]

mod nights;
mod serve;
mod workers;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use crate::case::CaseKey;
use crate::compare::Detector;
use crate::config::Config;
use crate::error::Error;
use crate::pipeline::context::{CommitLog, write_atomically};
use crate::pipeline::history;
use crate::report::history::{CaseHistoryReport, change_lines, slide_line};
use crate::report::site::chart::{self, Guides};
use crate::report::site::{
    ASSETS, BaselineRow, CaseCard, CasePage, ChangeRow, ChartChange, ChartPoint, NIGHTS_LISTED,
    RunNav, SUMMARY_FROM_CASES, SiteFacts, SiteRenderer,
};
use crate::report::{Renderer, ReportFormat};
use crate::store::{RunFilter, RunId, SeriesMarks, SitePoint, Store};
pub(crate) use workers::OpenStore;

/// The manifest's own format: a site written by another format is rebuilt whole (2: the
/// service cases' entries; 3: their change points; 4: one utilisation chart and a CSV file per
/// case).
const MANIFEST_FORMAT: u32 = 4;
const MANIFEST: &str = "site.json";

/// What a site build is asked for.
#[derive(Debug, Clone)]
pub(crate) struct SiteOptions {
    pub out: PathBuf,
    pub title: String,
    /// The branch whose nights the charts show.
    pub branch: String,
    pub since: Option<Timestamp>,
    pub spark_nights: usize,
    /// The newest nights per GPU whose runs get a page.
    pub run_pages: usize,
    pub nights: usize,
    pub detector: Detector,
    pub gpu: Option<String>,
}

impl SiteOptions {
    /// Everything besides the store's contents that shapes a page: when it changes, every
    /// page is rebuilt.
    fn fingerprint(&self) -> String {
        format!(
            "{}|{}|{}|{:?}|{}|{}|{}|{:?}|{:?}",
            env!("CARGO_PKG_VERSION"),
            self.title,
            self.branch,
            self.since.map(|t| t.to_string()),
            self.spark_nights,
            self.run_pages,
            self.nights,
            self.detector,
            self.gpu,
        )
    }
}

/// The site's manifest: what each page was built from.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Manifest {
    format: u32,
    options: String,
    /// Case page -> its fingerprint and card.
    cases: BTreeMap<String, CaseEntry>,
    /// Run id -> the fingerprint of its page.
    runs: BTreeMap<i64, String>,
    /// Service case page -> its fingerprint and card.
    #[serde(default)]
    serve: BTreeMap<String, serve::ServeEntry>,
}

#[derive(Debug, Serialize, Deserialize)]
struct CaseEntry {
    fingerprint: String,
    card: CaseCard,
}

/// What a build did, for the command's one line.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SiteBuilt {
    pub cases: usize,
    pub cases_written: usize,
    pub runs: usize,
    pub runs_written: usize,
    pub changes: usize,
    /// The manifest was missing, unreadable or from other options: every page was rebuilt.
    pub rebuilt: bool,
}

/// Build (or bring up to date) the site under `opts.out`.
#[expect(
    clippy::too_many_lines,
    reason = "the build's steps in their order: assets, case pages, service cases, run pages, index"
)]
pub(crate) fn build(
    store: &Store,
    open: OpenStore<'_>,
    config: Option<&Config>,
    reports: &Renderer,
    opts: &SiteOptions,
    now: Timestamp,
) -> Result<SiteBuilt, Error> {
    let out = &opts.out;
    for dir in [out.clone(), out.join("cases"), out.join("runs")] {
        std::fs::create_dir_all(&dir).map_err(|source| Error::Io { path: dir, source })?;
    }
    let (old, rebuilt) = read_manifest(&out.join(MANIFEST), &opts.fingerprint());
    // Pages are rewritten in place ([`write_page`]): until this build's manifest is written at
    // its end, there is none, so a build that stops half-way leaves the next one to rebuild
    // every page rather than trust a page it may have left half written.
    forget_manifest(&out.join(MANIFEST))?;
    let mut manifest = Manifest {
        format: MANIFEST_FORMAT,
        options: opts.fingerprint(),
        ..Manifest::default()
    };
    let site = SiteRenderer::new();
    let facts = SiteFacts {
        title: opts.title.clone(),
        branch: opts.branch.clone(),
        generated_at: now.round(jiff::Unit::Second).unwrap_or(now).to_string(),
        version: env!("CARGO_PKG_VERSION"),
        spark_nights: opts.spark_nights,
    };
    let mut built = SiteBuilt {
        rebuilt,
        ..SiteBuilt::default()
    };
    for (name, text) in ASSETS {
        write_if_changed(&out.join(name), text)?;
    }
    let runs = newest_per_gpu(branch_runs(store, opts)?, opts.run_pages);
    let paged: BTreeSet<i64> = runs.iter().map(|(id, _)| id.0).collect();
    // The cases whose newest result, baseline move or threshold moved since the last build are
    // read and rendered again (on every core); the others keep their card.
    let marks: Vec<(SeriesMarks, String)> = store
        .series_marks()?
        .into_iter()
        .filter(|m| opts.gpu.as_ref().is_none_or(|g| *g == m.gpu_sku))
        .map(|m| {
            let threshold = history::threshold(config, &m.key);
            let fingerprint = format!("{}:{:?}:{threshold}", m.last_result, m.last_move);
            (m, fingerprint)
        })
        .collect();
    let stale: Vec<&SeriesMarks> = marks
        .iter()
        .filter(|(m, fingerprint)| {
            let page = CaseCard::of(&m.key, &m.gpu_sku).page;
            !old.cases.get(&page).is_some_and(|entry| {
                entry.fingerprint == *fingerprint
                    && out.join(&page).is_file()
                    && out.join(csv_page(&page)).is_file()
            })
        })
        .map(|(m, _)| m)
        .collect();
    let rendered = workers::each(store, open, &stale, &|store, commits, marks| {
        // A page the last build wrote has its nights beside it, to start from.
        let page = CaseCard::of(&marks.key, &marks.gpu_sku).page;
        let drawn = (!rebuilt && old.cases.contains_key(&page)).then(|| out.join(csv_page(&page)));
        let files = case_page(
            store,
            config,
            &site,
            &facts,
            opts,
            marks,
            &paged,
            commits,
            drawn.as_deref(),
        )?;
        // A case with no night on the branch has no page (the index does not list it).
        if files.card.nights > 0 {
            write_page(&out.join(&files.csv_path), &files.csv)?;
            write_page(&out.join(&files.card.page), &files.html)?;
        }
        Ok(files.card)
    })?;
    built.cases_written += rendered.iter().filter(|c| c.nights > 0).count();
    let mut fresh: BTreeMap<String, CaseCard> =
        rendered.into_iter().map(|c| (c.page.clone(), c)).collect();
    let mut cards = Vec::new();
    for (m, fingerprint) in marks {
        let page = CaseCard::of(&m.key, &m.gpu_sku).page;
        let card = match fresh.remove(&page) {
            Some(card) => card,
            None => match old.cases.get(&page) {
                Some(entry) => entry.card.clone(),
                None => continue,
            },
        };
        if card.nights == 0 {
            continue;
        }
        manifest.cases.insert(
            page,
            CaseEntry {
                fingerprint,
                card: card.clone(),
            },
        );
        cards.push(card);
    }
    let serve = serve::serve_cards(
        &serve::ServeBuild {
            store,
            site: &site,
            facts: &facts,
            out,
            branch: &opts.branch,
            since: opts.since,
            spark_nights: opts.spark_nights,
            gpu: opts.gpu.as_deref(),
            paged: &paged,
            detector: &opts.detector,
        },
        &old.serve,
    )?;
    let serve_cards = serve.cards;
    manifest.serve = serve.entries;
    built.cases = cards.len() + serve_cards.len();
    built.cases_written += serve.written;
    let case_pages: BTreeSet<String> = cards
        .iter()
        .map(|c| c.page.clone())
        .chain(serve_cards.iter().map(|c| c.page.clone()))
        .collect();
    let navs = run_navs(&runs);
    let run_file = |id: RunId| out.join("runs").join(format!("{}.html", id.0));
    let stale: Vec<&(RunId, RunNav, String)> = navs
        .iter()
        .filter(|(id, _, fingerprint)| {
            old.runs.get(&id.0) != Some(fingerprint) || !run_file(*id).is_file()
        })
        .collect();
    workers::each(store, open, &stale, &|store, _, (id, nav, _)| {
        let html = run_page(store, config, reports, *id, nav, &case_pages)?;
        write_page(&run_file(*id), &html)
    })?;
    built.runs_written = stale.len();
    for (id, _, fingerprint) in navs {
        manifest.runs.insert(id.0, fingerprint);
    }
    // A run that fell out of the newest nights loses its page: nothing links to it any more.
    for gone in old.runs.keys().filter(|id| !manifest.runs.contains_key(id)) {
        let path = run_file(RunId(*gone));
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(Error::Io { path, source: e });
            }
            _ => {}
        }
    }
    built.runs = manifest.runs.len();
    let mut rows: Vec<ChangeRow> = cards
        .iter()
        .flat_map(|c| c.changes.iter().chain(c.slide.as_ref()).cloned())
        .chain(
            manifest
                .serve
                .values()
                .flat_map(|e| e.changes.iter().cloned()),
        )
        .collect();
    rows.sort_by(|a, b| b.night.cmp(&a.night).then_with(|| a.case.cmp(&b.case)));
    built.changes = rows.len();
    write_if_changed(
        &out.join("index.html"),
        &site.index(&facts, &cards, &serve_cards)?,
    )?;
    write_if_changed(
        &out.join("changes.html"),
        &site.changes(&facts, &rows, cards.len() + serve_cards.len())?,
    )?;
    let text = serde_json::to_string(&manifest).map_err(|e| Error::Io {
        path: out.join(MANIFEST),
        source: std::io::Error::other(e),
    })?;
    write_atomically(&out.join(MANIFEST), &text)?;
    Ok(built)
}

/// The manifest of the last build, or an empty one (and `true`: rebuild every page) when it
/// is missing, unreadable or from other options.
fn read_manifest(path: &Path, options: &str) -> (Manifest, bool) {
    let Ok(text) = std::fs::read_to_string(path) else {
        return (Manifest::default(), true);
    };
    match serde_json::from_str::<Manifest>(&text) {
        Ok(m) if m.format == MANIFEST_FORMAT && m.options == options => (m, false),
        Ok(_) => (Manifest::default(), true),
        Err(e) => {
            crate::output::warn(&format!(
                "{}: not a site manifest utilgate can read ({e}); rebuilding every page",
                path.display()
            ));
            (Manifest::default(), true)
        }
    }
}

/// The branch's runs the site shows, oldest first, with their GPU.
fn branch_runs(store: &Store, opts: &SiteOptions) -> Result<Vec<(RunId, String)>, Error> {
    let mut runs = store.list_runs(&RunFilter {
        limit: usize::MAX,
        branch: Some(opts.branch.clone()),
        gpu_sku: opts.gpu.clone(),
    })?;
    let serve = store.runs_with_serve_results()?;
    runs.retain(|r| {
        opts.since.is_none_or(|t| r.started_at >= t) && (r.n_results > 0 || serve.contains(&r.id.0))
    });
    runs.sort_by_key(|r| (r.started_at, r.id));
    Ok(runs.into_iter().map(|r| (r.id, r.gpu_sku)).collect())
}

/// The newest `keep` runs of each GPU, oldest first: the runs that get a page.
fn newest_per_gpu(runs: Vec<(RunId, String)>, keep: usize) -> Vec<(RunId, String)> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut kept: Vec<(RunId, String)> = runs
        .into_iter()
        .rev()
        .filter(|(_, sku)| {
            let n = seen.entry(sku.clone()).or_default();
            *n += 1;
            *n <= keep
        })
        .collect();
    kept.reverse();
    kept
}

/// Each run's links to the previous and next night on its GPU, and its page's fingerprint.
fn run_navs(runs: &[(RunId, String)]) -> Vec<(RunId, RunNav, String)> {
    let mut by_gpu: BTreeMap<&str, Vec<RunId>> = BTreeMap::new();
    for (id, sku) in runs {
        by_gpu.entry(sku).or_default().push(*id);
    }
    let mut out = Vec::new();
    for ids in by_gpu.values() {
        for (i, id) in ids.iter().enumerate() {
            let nav = RunNav {
                index: "../index.html".into(),
                changes: "../changes.html".into(),
                previous: i.checked_sub(1).map(|p| ids[p].0),
                next: ids.get(i + 1).map(|n| n.0),
                summary: false,
                cases: BTreeMap::new(),
            };
            let fingerprint = format!("{:?}:{:?}", nav.previous, nav.next);
            out.push((*id, nav, fingerprint));
        }
    }
    out
}

/// A run's page: its HTML report with the site's links (each case's page among them), or for
/// a run of more than [`SUMMARY_FROM_CASES`] cases its summary (no per-case chart, so its
/// trends are not read).
fn run_page(
    store: &Store,
    config: Option<&Config>,
    reports: &Renderer,
    id: RunId,
    nav: &RunNav,
    pages: &BTreeSet<String>,
) -> Result<String, Error> {
    let run = store.run(id)?.ok_or(Error::NoSuchRun(id.0))?;
    let summary = run.results.len() > SUMMARY_FROM_CASES;
    let report = crate::pipeline::report::stored_report_with(store, &run, config, !summary)?;
    let mut nav = nav.clone();
    nav.summary = summary;
    nav.cases = report
        .cases
        .iter()
        .map(|c| {
            (
                c.case.clone(),
                CaseCard::of(&c.key, &report.run.gpu_sku).page,
            )
        })
        .chain(report.service.iter().map(|c| {
            (
                c.case.clone(),
                crate::report::site::serve::ServeCard::of(&c.key, &report.run.gpu_sku).page,
            )
        }))
        .filter(|(_, page)| pages.contains(page))
        .map(|(case, page)| (case, format!("../{page}")))
        .collect();
    Ok(reports.render_in_site(ReportFormat::Html, &report, &nav)?)
}

/// A night as the charts draw it; `href` is empty when its run has no page.
fn chart_point(p: &SitePoint, prefix: &str, paged: &BTreeSet<i64>) -> ChartPoint {
    ChartPoint {
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
        untrusted: p.untrusted,
        utilisation: p.utilisation,
        median_ms: p.median_ms,
    }
}

/// One case's card and page.
#[expect(
    clippy::too_many_arguments,
    reason = "the build's shared state, handed to the one function that reads a case"
)]
fn case_page(
    store: &Store,
    config: Option<&Config>,
    site: &SiteRenderer,
    facts: &SiteFacts,
    opts: &SiteOptions,
    marks: &SeriesMarks,
    paged: &BTreeSet<i64>,
    commits: &mut CommitLog,
    drawn: Option<&Path>,
) -> Result<CaseFiles, Error> {
    let (key, sku) = (&marks.key, marks.gpu_sku.as_str());
    let mut card = CaseCard::of(key, sku);
    // The nights the last build drew, then what the store holds after them.
    let mut stored = drawn.and_then(nights::read).unwrap_or_default();
    let after = stored.iter().map(|p| p.result_id).max();
    let newer = store.site_points(key, sku, &opts.branch, opts.since, after)?;
    if stored.is_empty() {
        stored = newer;
    } else if !newer.is_empty() {
        stored.extend(newer);
        stored.sort_by_key(|p| (p.started_at, p.result_id));
    }
    let points: Vec<ChartPoint> = stored
        .iter()
        .map(|p| chart_point(p, "../", paged))
        .collect();
    let mut report = history::case_report_on(
        store,
        config,
        key,
        sku,
        &opts.branch,
        opts.nights,
        opts.detector,
        commits,
    )?;
    if let Some(from) = opts.since {
        history::keep_since(&mut report, from);
    }
    let max_drop = report.max_drop_pct;
    let (changes, chart_changes, slide) = change_rows(&report, &card.page, paged);
    let (moves, moves_total, pinned) = baseline_rows(store, key, sku, paged)?;
    let noise_pct = stored.iter().rev().find_map(|p| p.noise_pct);
    let guides = Guides {
        baseline: pinned.as_ref().and_then(|p| p.utilisation),
        noise_pct,
        threshold_pct: Some(max_drop),
    };
    let name = format!("{key} on {sku}");
    let latest = stored.last().map(|p| chart_point(p, "", paged));
    card.drop_pct = latest
        .as_ref()
        .zip(guides.baseline)
        .and_then(|(l, b)| (b > 0.0).then(|| 100.0 * (b - l.utilisation) / b));
    let spark_from = points.len().saturating_sub(opts.spark_nights);
    card.spark = chart::sparkline_svg(&points[spark_from..]);
    card.nights = points.len();
    card.latest = latest;
    card.changes = changes;
    card.slide = slide;
    let csv_file = csv_page(&card.page);
    let page = CasePage {
        chart: chart::utilisation_svg(&name, &points, &chart_changes, &guides),
        chart_step: chart::step_svg(&name, &points),
        untrusted: points.iter().filter(|p| p.untrusted).count(),
        nights: points.iter().rev().take(NIGHTS_LISTED).cloned().collect(),
        nights_total: points.len(),
        csv: csv_file.rsplit('/').next().unwrap_or(&csv_file).to_owned(),
        pinned,
        moves,
        moves_total,
        noise_pct,
        max_drop_pct: max_drop,
        baseline_branch: opts.branch.clone(),
        detector: crate::report::history::detector_line(&opts.detector),
        card: card.clone(),
    };
    let html = site.case(facts, &page)?;
    Ok(CaseFiles {
        card,
        html,
        csv: nights::to_csv(&stored, &opts.branch),
        csv_path: csv_file,
    })
}

/// What a case's page is written as: its card for the index, its page, and its CSV file.
struct CaseFiles {
    card: CaseCard,
    html: String,
    /// The CSV file's path under the site, beside the page.
    csv_path: String,
    csv: String,
}

/// Where a case page's CSV file of every night is: beside it, `.csv` for `.html`.
fn csv_page(page: &str) -> String {
    format!("{}.csv", page.strip_suffix(".html").unwrap_or(page))
}

/// A case's change points, newest first, as rows (the lines `utilgate changes` prints) and as
/// chart marks, and its slide if one is flagged.
fn change_rows(
    report: &CaseHistoryReport,
    page: &str,
    paged: &BTreeSet<i64>,
) -> (Vec<ChangeRow>, Vec<ChartChange>, Option<ChangeRow>) {
    let max_drop = report.max_drop_pct;
    let change_row =
        |night: &str, run_id: Option<i64>, regression: bool, lines: Vec<String>| ChangeRow {
            case: report.case.to_string(),
            gpu_sku: report.gpu_sku.clone(),
            page: page.to_owned(),
            night: night.to_owned(),
            run_id,
            run_page: run_id
                .filter(|r| paged.contains(r))
                .map(|r| format!("runs/{r}.html")),
            regression,
            lines,
        };
    let mut changes: Vec<ChangeRow> = report
        .read
        .changes
        .iter()
        .map(|c| {
            change_row(
                &c.night.started_at,
                Some(c.night.run_id),
                c.regression,
                change_lines(c, max_drop, report.measure),
            )
        })
        .collect();
    changes.reverse();
    let chart_changes: Vec<ChartChange> = report
        .read
        .changes
        .iter()
        .map(|c| ChartChange {
            run_id: c.night.run_id,
            change_pct: c.change.magnitude.change_pct,
            title: change_lines(c, max_drop, report.measure).join("\n"),
        })
        .collect();
    let slide = report.read.slide.as_ref().map(|s| {
        change_row(
            report.last_night.as_deref().unwrap_or_default(),
            None,
            s.past_threshold,
            vec![slide_line(s, max_drop)],
        )
    });
    (changes, chart_changes, slide)
}

/// How many of a case's baseline moves its page lists (the newest); it says how many more
/// there are, and `utilgate baseline history` lists them all.
const MOVES_SHOWN: usize = 20;

/// A case's newest baseline moves (at most [`MOVES_SHOWN`]) and how many it has in all, and its
/// pinned baseline, each linked to its run's page where the site has one.
fn baseline_rows(
    store: &Store,
    key: &CaseKey,
    sku: &str,
    paged: &BTreeSet<i64>,
) -> Result<(Vec<BaselineRow>, usize, Option<BaselineRow>), Error> {
    let page_of = |run: i64| paged.contains(&run).then(|| format!("../runs/{run}.html"));
    let row = |e: &crate::store::BaselineEvent| BaselineRow {
        moved_at: e.moved_at.to_string(),
        kind: e.kind.as_str().to_owned(),
        reason: e.reason.clone(),
        run_id: e.run_id.0,
        run_page: page_of(e.run_id.0),
        git_sha: e.git_sha.clone(),
        utilisation: e.utilisation,
    };
    let (recent, total) = store.recent_baseline_moves(key, sku, MOVES_SHOWN)?;
    let moves: Vec<BaselineRow> = recent.iter().map(row).collect();
    // The pinned baseline is the newest move that counts (a pull request's promotion does
    // not), as `baseline_for` reads it: one indexed row.
    let pinned = store.baseline_move(key, sku, None)?.as_ref().map(row);
    Ok((moves, total, pinned))
}

/// Removes the last build's manifest (already read).
fn forget_manifest(path: &Path) -> Result<(), Error> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::Io {
            path: path.to_owned(),
            source: e,
        }),
        _ => Ok(()),
    }
}

/// Rewrites a case's or a run's page in place: the same file, written over and cut to its new
/// length. Writing each beside and renaming it over made a new inode per page per night, and
/// ext4's search for a free inode past the ones just freed was a fifth of an incremental
/// build's time. The manifest is what makes this safe: [`build`] removes it before the first
/// page and writes it after the last.
pub(super) fn write_page(path: &Path, text: &str) -> Result<(), Error> {
    use std::io::Write as _;
    let io = |source| Error::Io {
        path: path.to_owned(),
        source,
    };
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(io)?;
    file.write_all(text.as_bytes()).map_err(io)?;
    file.set_len(text.len() as u64).map_err(io)
}

/// Write a page that every build renders (the index, the changes page, the assets) only when
/// its text differs, so an unchanged site keeps its files untouched.
fn write_if_changed(path: &Path, text: &str) -> Result<(), Error> {
    if std::fs::read(path).is_ok_and(|old| old == text.as_bytes()) {
        return Ok(());
    }
    write_atomically(path, text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn neighbours_are_per_gpu_in_time_order() {
        let runs = vec![
            (RunId(1), "h100".to_owned()),
            (RunId(2), "a100".to_owned()),
            (RunId(3), "h100".to_owned()),
        ];
        let navs = run_navs(&runs);
        let of = |id: i64| navs.iter().find(|n| n.0.0 == id).expect("listed").1.clone();
        assert_eq!((of(1).previous, of(1).next), (None, Some(3)));
        assert_eq!((of(3).previous, of(3).next), (Some(1), None));
        assert_eq!((of(2).previous, of(2).next), (None, None));
    }

    #[test]
    fn an_unreadable_manifest_rebuilds_everything() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join(MANIFEST);
        std::fs::write(&path, "{ not json").expect("write");
        let (m, rebuilt) = read_manifest(&path, "x");
        assert!(rebuilt && m.cases.is_empty());
        let written = Manifest {
            format: MANIFEST_FORMAT,
            options: "x".into(),
            ..Manifest::default()
        };
        std::fs::write(&path, serde_json::to_string(&written).expect("json")).expect("write");
        assert!(!read_manifest(&path, "x").1);
        assert!(read_manifest(&path, "y").1, "other options rebuild");
    }
}
