//! The static site of `utilgate site` (docs/site.md): the page models (index, a page per case,
//! the changes page, the navigation of a run's page), the SVG charts, the stylesheet and the
//! script, rendered through the site's minijinja templates with HTML auto-escaping. Every
//! string that came from outside utilgate reaches a page through that escaping (or the
//! charts' own). Pure: the pipeline (`pipeline::site`) reads the store and writes the files.

pub mod chart;
pub mod serve;

use minijinja::value::Serde;
use minijinja::{Environment, Value, context};
use serde::{Deserialize, Serialize};

use crate::case::CaseKey;
use crate::report::RenderError;

/// The site's own files besides its pages: written as they are, nothing fetched elsewhere.
pub const ASSETS: [(&str, &str); 2] = [
    ("site.css", include_str!("../../templates/site/site.css")),
    ("site.js", include_str!("../../templates/site/site.js")),
];

const TEMPLATES: [(&str, &str); 5] = [
    (
        "layout.html",
        include_str!("../../templates/site/layout.html.j2"),
    ),
    (
        "index.html",
        include_str!("../../templates/site/index.html.j2"),
    ),
    (
        "case.html",
        include_str!("../../templates/site/case.html.j2"),
    ),
    (
        "changes.html",
        include_str!("../../templates/site/changes.html.j2"),
    ),
    (
        "serve.html",
        include_str!("../../templates/site/serve.html.j2"),
    ),
];

/// One night of a case as the charts draw it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChartPoint {
    pub run_id: i64,
    /// The run's page, relative to the page the chart is on.
    pub href: String,
    pub started_at: String,
    pub git_sha: Option<String>,
    /// The verdict's word (`pass`, `regressed`, ...; `none` when stored without one).
    pub verdict: String,
    pub untrusted: bool,
    /// Utilisation as a fraction (floor / median step).
    pub utilisation: f64,
    pub median_ms: Option<f64>,
}

impl ChartPoint {
    /// The mark's tooltip: night, run, commit, verdict, figures.
    #[must_use]
    pub fn title(&self) -> String {
        format!(
            "{} run {}{}: {}{}, utilisation {:.1}%{}",
            self.started_at.get(..10).unwrap_or(&self.started_at),
            self.run_id,
            self.git_sha
                .as_deref()
                .map_or_else(String::new, |s| format!(" @ {}", short(s))),
            self.verdict,
            if self.untrusted { " (untrusted)" } else { "" },
            self.utilisation * 100.0,
            self.median_ms
                .map_or_else(String::new, |m| format!(", median step {m:.4} ms")),
        )
    }
}

/// A change point on a case chart.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChartChange {
    /// The run of the first night at the new level.
    pub run_id: i64,
    pub change_pct: f64,
    /// Its night, size and commits, as its tooltip.
    pub title: String,
}

/// A change point or a slide of one case, as the changes page and the case page list it: the
/// lines `utilgate changes` prints for it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChangeRow {
    pub case: String,
    pub gpu_sku: String,
    /// The case page, relative to the site's root.
    pub page: String,
    /// When the change's night started (RFC 3339); the slide's last night.
    pub night: String,
    pub run_id: Option<i64>,
    /// The run's page, relative to the site's root, when the site has one.
    #[serde(default)]
    pub run_page: Option<String>,
    pub regression: bool,
    pub lines: Vec<String>,
}

/// A case as the index shows it, kept in the site's manifest so an unchanged case is not read
/// again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseCard {
    /// The case page, relative to the site's root (`cases/....html`).
    pub page: String,
    pub name: String,
    pub suite: String,
    pub gpu_sku: String,
    pub model: String,
    pub precision: String,
    pub phase: String,
    pub batch: u64,
    pub context: u64,
    pub axes: String,
    pub nights: usize,
    /// The sparkline (SVG) of the last nights.
    pub spark: String,
    pub latest: Option<ChartPoint>,
    /// The latest night's utilisation against the pinned baseline's, percent (positive: a fall).
    pub drop_pct: Option<f64>,
    /// Change points, newest first, and the slide if one is flagged.
    pub changes: Vec<ChangeRow>,
    pub slide: Option<ChangeRow>,
}

impl CaseCard {
    /// The card of a case, before its figures.
    #[must_use]
    pub fn of(key: &CaseKey, gpu_sku: &str) -> CaseCard {
        CaseCard {
            page: case_page(key, gpu_sku),
            name: key.to_string(),
            suite: key.suite.clone(),
            gpu_sku: gpu_sku.to_owned(),
            model: key.model.clone(),
            precision: key.precision.clone(),
            phase: key.phase.as_str().to_owned(),
            batch: key.batch,
            context: key.context,
            axes: key.axes.key_text(),
            nights: 0,
            spark: String::new(),
            latest: None,
            drop_pct: None,
            changes: Vec::new(),
            slide: None,
        }
    }
}

/// An accepted or imported baseline, or the pinned one, as the case page lists it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BaselineRow {
    pub moved_at: String,
    pub kind: String,
    pub reason: String,
    pub run_id: i64,
    pub run_page: Option<String>,
    pub git_sha: Option<String>,
    pub utilisation: Option<f64>,
}

/// Everything a case page shows.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CasePage {
    pub card: CaseCard,
    /// Utilisation, on the floor scale and fitted ([`chart::utilisation_svg`]).
    pub chart: String,
    pub chart_step: String,
    /// The newest nights (at most [`NIGHTS_LISTED`]), newest first, as the table under the
    /// charts; every night is a mark on the chart and a row of the case's CSV file.
    pub nights: Vec<ChartPoint>,
    /// How many nights the case has on the branch.
    pub nights_total: usize,
    /// The case's CSV file of every night, relative to the page.
    pub csv: String,
    pub pinned: Option<BaselineRow>,
    pub moves: Vec<BaselineRow>,
    /// How many moves the case has in all (the page lists the newest).
    pub moves_total: usize,
    pub noise_pct: Option<f64>,
    pub max_drop_pct: f64,
    pub baseline_branch: String,
    pub detector: String,
    pub untrusted: usize,
}

/// How many of a case's nights its page lists in a table (the newest); the chart draws them
/// all and the case's CSV file lists them all, so a page stays small after years of nights.
pub const NIGHTS_LISTED: usize = 60;

/// The site-wide facts every page's header shows.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SiteFacts {
    pub title: String,
    pub branch: String,
    pub generated_at: String,
    pub version: &'static str,
    /// How many nights each sparkline shows.
    pub spark_nights: usize,
}

/// A run page's links: the site, the case pages, and the previous and next night.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RunNav {
    pub index: String,
    pub changes: String,
    pub previous: Option<i64>,
    pub next: Option<i64>,
    /// The page is a summary (a run of more than [`SUMMARY_FROM_CASES`] cases): the table
    /// of every case, a section only for the cases that need a reader or carry evidence, and
    /// no per-case chart (each case's page has its history).
    pub summary: bool,
    /// Each case of the run (its name) -> its case page, relative to the run's page.
    pub cases: std::collections::BTreeMap<String, String>,
}

/// A run with more cases than this gets a summary page on the site instead of its whole
/// report: at about 3.8 kB a case (the chart, the figures, the reasons), the whole report of
/// a 500-case run is 1.9 MB, and a page should stay under 500 kB.
pub const SUMMARY_FROM_CASES: usize = 100;

/// A case's page, relative to the site's root (`cases/....html`).
#[must_use]
pub fn case_page(key: &CaseKey, gpu_sku: &str) -> String {
    format!("cases/{}.html", slug(key, gpu_sku))
}

/// The short form of a commit.
fn short(sha: &str) -> &str {
    sha.get(..10).unwrap_or(sha)
}

/// A case's file name: readable, safe on every file system, and distinct for distinct cases
/// (a hash of the full name ends it, so two names that clean to the same text stay apart).
#[must_use]
pub fn slug(key: &CaseKey, gpu_sku: &str) -> String {
    let full = format!("{gpu_sku}/{key}");
    slug_of(&full, &full)
}

/// A file name of `name`, cleaned, ended by a hash of `identity` (what tells it from every
/// other page's name).
#[must_use]
pub fn slug_of(name: &str, identity: &str) -> String {
    use sha2::Digest as _;
    let clean: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-') {
                c
            } else {
                '_'
            }
        })
        .take(120)
        .collect();
    let digest = sha2::Sha256::digest(identity.as_bytes());
    let tag = digest.iter().take(4).fold(String::new(), |mut t, b| {
        use std::fmt::Write as _;
        let _ = write!(t, "{b:02x}");
        t
    });
    format!("{clean}-{tag}")
}

/// The site's templates, with HTML auto-escaping.
pub struct SiteRenderer {
    env: Environment<'static>,
}

impl SiteRenderer {
    /// # Panics
    /// Never: the built-in templates are checked by the tests.
    #[must_use]
    pub fn new() -> SiteRenderer {
        let mut env = Environment::new();
        env.set_auto_escape_callback(|_| minijinja::AutoEscape::Html);
        env.add_filter("pct", |x: Option<f64>| {
            x.filter(|v| v.is_finite())
                .map_or_else(|| "–".to_owned(), |v| format!("{:.1}%", v * 100.0))
        });
        env.add_filter("signed", |x: Option<f64>| {
            x.filter(|v| v.is_finite())
                .map_or_else(|| "–".to_owned(), |v| format!("{:+.1}%", v + 0.0))
        });
        env.add_filter("ms", |x: Option<f64>| crate::report::format::ms(x));
        env.add_filter("fig", serve::fig);
        env.add_filter("day", |s: String| s.get(..10).unwrap_or(&s).to_owned());
        env.add_filter("short", |s: String| short(&s).to_owned());
        env.add_filter("mark", |verdict: String| {
            Value::from_safe_string(format!(
                r#"<svg class="legend-mark" width="14" height="14" viewBox="-7 -7 14 14" aria-hidden="true"><path class="v-{}" d="{}"/></svg>"#,
                chart::escape(&verdict),
                chart::mark_path(&verdict)
            ))
        });
        for (name, source) in TEMPLATES {
            // The templates are utilgate's own: a syntax error is a defect the tests catch.
            env.add_template(name, source)
                .unwrap_or_else(|e| panic!("the site's template {name}: {e}"));
        }
        SiteRenderer { env }
    }

    fn render(&self, name: &'static str, ctx: Value) -> Result<String, RenderError> {
        self.env
            .get_template(name)
            .and_then(|t| t.render(ctx))
            .map_err(|source| RenderError::Template {
                name: name.to_owned(),
                source,
            })
    }

    /// The index: every case in one grid, the service cases after the step cases.
    pub fn index(
        &self,
        facts: &SiteFacts,
        cards: &[CaseCard],
        serve: &[serve::ServeCard],
    ) -> Result<String, RenderError> {
        let mut gpus = distinct(cards, |c| &c.gpu_sku);
        let mut models = distinct(cards, |c| &c.model);
        gpus.extend(serve.iter().map(|c| c.gpu_sku.clone()));
        models.extend(serve.iter().map(|c| c.model.clone()));
        for list in [&mut gpus, &mut models] {
            list.sort();
            list.dedup();
        }
        let precisions = distinct(cards, |c| &c.precision);
        let mut phases = distinct(cards, |c| &c.phase);
        if !serve.is_empty() {
            phases.push(SERVE_PHASE.to_owned());
        }
        let groups = groups(cards);
        let serve_groups = serve_groups(serve);
        self.render(
            "index.html",
            context! { site => Value::from(Serde(facts)), root => "",
            groups => Value::from(Serde(&groups)),
            serve_groups => Value::from(Serde(&serve_groups)), gpus, models, precisions, phases,
            cases => cards.len() + serve.len() },
        )
    }

    /// One service case's page.
    pub fn serve_case(
        &self,
        facts: &SiteFacts,
        page: &serve::ServeCasePage,
    ) -> Result<String, RenderError> {
        self.render(
            "serve.html",
            context! { site => Value::from(Serde(facts)), root => "../",
            page => Value::from(Serde(page)) },
        )
    }

    /// One case's page.
    pub fn case(&self, facts: &SiteFacts, page: &CasePage) -> Result<String, RenderError> {
        self.render(
            "case.html",
            context! { site => Value::from(Serde(facts)), root => "../",
            page => Value::from(Serde(page)) },
        )
    }

    /// Every change point and slide across the fleet, newest first.
    pub fn changes(
        &self,
        facts: &SiteFacts,
        rows: &[ChangeRow],
        cases: usize,
    ) -> Result<String, RenderError> {
        self.render(
            "changes.html",
            context! { site => Value::from(Serde(facts)), root => "",
            rows => Value::from(Serde(rows)), cases },
        )
    }
}

impl Default for SiteRenderer {
    fn default() -> Self {
        SiteRenderer::new()
    }
}

/// The distinct values of one field, sorted.
fn distinct(cards: &[CaseCard], field: impl Fn(&CaseCard) -> &String) -> Vec<String> {
    let set: std::collections::BTreeSet<&String> = cards.iter().map(field).collect();
    set.into_iter().cloned().collect()
}

/// The index's groups: one per suite and GPU, in the cards' order.
#[derive(Debug, Serialize)]
struct Group<'a> {
    suite: &'a str,
    gpu_sku: &'a str,
    cards: Vec<&'a CaseCard>,
}

/// The phase filter's value of a service case (a step case's phase is `decode` or `prefill`).
pub const SERVE_PHASE: &str = "serve";

/// The index's groups of service cases: one per suite and GPU, in the cards' order.
#[derive(Debug, Serialize)]
struct ServeGroup<'a> {
    suite: &'a str,
    gpu_sku: &'a str,
    sweep: bool,
    cards: Vec<&'a serve::ServeCard>,
}

fn serve_groups(cards: &[serve::ServeCard]) -> Vec<ServeGroup<'_>> {
    let mut out: Vec<ServeGroup<'_>> = Vec::new();
    for c in cards {
        let sweep = !c.sweep.is_empty();
        match out
            .iter_mut()
            .find(|g| g.suite == c.suite && g.gpu_sku == c.gpu_sku && g.sweep == sweep)
        {
            Some(g) => g.cards.push(c),
            None => out.push(ServeGroup {
                suite: &c.suite,
                gpu_sku: &c.gpu_sku,
                sweep,
                cards: vec![c],
            }),
        }
    }
    out
}

fn groups(cards: &[CaseCard]) -> Vec<Group<'_>> {
    let mut out: Vec<Group<'_>> = Vec::new();
    let mut order: std::collections::BTreeMap<(&str, &str), usize> =
        std::collections::BTreeMap::new();
    for c in cards {
        let k = (c.suite.as_str(), c.gpu_sku.as_str());
        let at = *order.entry(k).or_insert_with(|| {
            out.push(Group {
                suite: k.0,
                gpu_sku: k.1,
                cards: Vec::new(),
            });
            out.len() - 1
        });
        out[at].cards.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::case::Phase;

    fn key(model: &str) -> CaseKey {
        CaseKey {
            suite: "decode".into(),
            model: model.into(),
            precision: "bf16".into(),
            phase: Phase::Decode,
            batch: 8,
            context: 4096,
            axes: crate::case::Axes::default(),
            tp: 1,
            ep: 1,
        }
    }

    #[test]
    fn slugs_are_safe_and_distinct() {
        let a = slug(&key("llama/3"), "h100");
        let b = slug(&key("llama_3"), "h100");
        assert_ne!(a, b);
        assert!(
            a.chars()
                .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c)),
            "{a}"
        );
        assert!(
            a.starts_with("h100_decode_llama_3_bf16_decode_b8_c4096-"),
            "{a}"
        );
    }

    #[test]
    fn harness_text_is_escaped_on_every_page() {
        let r = SiteRenderer::new();
        let facts = SiteFacts {
            title: "t".into(),
            branch: "main".into(),
            generated_at: "2026-12-01T00:00:00Z".into(),
            version: "0",
            spark_nights: 30,
        };
        let mut card = CaseCard::of(&key("<img src=x onerror=alert(1)>"), "h100");
        card.changes.push(ChangeRow {
            case: card.name.clone(),
            gpu_sku: "h100".into(),
            page: card.page.clone(),
            night: "2026-11-01T00:00:00Z".into(),
            run_id: Some(3),
            run_page: Some("runs/3.html".into()),
            regression: true,
            lines: vec!["    abc <script>alert(1)</script>".into()],
        });
        let index = r
            .index(&facts, std::slice::from_ref(&card), &[])
            .expect("renders");
        let changes = r.changes(&facts, &card.changes, 1).expect("renders");
        for page in [&index, &changes] {
            assert!(
                !page.contains("<img") && !page.contains("<script>alert"),
                "{page}"
            );
        }
        assert!(index.contains("&lt;img"), "{index}");
    }
}
