//! The comparison of two sets of baselines (two exports, or an export and the store): which
//! cases moved, appeared or went, by how much utilisation, with the recorded reason; rendered as
//! a terminal table or Markdown for a pull request's description. Pure.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use serde::Serialize;

use crate::case::CaseKey;
use crate::report::format::{ms, pct, short_sha_or_missing};
use crate::store::export::{EXPORT_SCHEMA_VERSION, ExportedBaseline};

/// The baselines of one side, by GPU SKU and case.
pub type Side = BTreeMap<(String, CaseKey), ExportedBaseline>;

/// What happened to one case's baseline between the two sides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Change {
    Moved,
    Added,
    Removed,
}

impl Change {
    fn as_str(self) -> &'static str {
        match self {
            Change::Moved => "moved",
            Change::Added => "added",
            Change::Removed => "removed",
        }
    }
}

/// One case whose baseline differs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CaseChange {
    pub gpu_sku: String,
    pub case: String,
    pub change: Change,
    pub old_utilisation: Option<f64>,
    pub new_utilisation: Option<f64>,
    /// New minus old utilisation, in percentage points.
    pub delta_pp: Option<f64>,
    pub old_median_ms: Option<f64>,
    pub new_median_ms: Option<f64>,
    pub old_commit: Option<String>,
    pub new_commit: Option<String>,
    /// How and why the newer side's baseline moved (the older side's, for a removed case).
    pub how: String,
    pub reason: String,
}

/// The differences between two sides, in GPU and case order, and how many cases are equal.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BaselineDiff {
    pub schema_version: u32,
    pub old: String,
    pub new: String,
    pub unchanged: usize,
    pub changes: Vec<CaseChange>,
}

impl BaselineDiff {
    fn count(&self, change: Change) -> usize {
        self.changes.iter().filter(|c| c.change == change).count()
    }
}

/// Whether a baseline points at other figures: another measurement, figures, samples, or
/// another reason. The run id is the store's own numbering and does not count.
fn same(a: &ExportedBaseline, b: &ExportedBaseline) -> bool {
    a.measured_at == b.measured_at
        && a.git_sha == b.git_sha
        && a.floor_ms == b.floor_ms
        && a.median_ms == b.median_ms
        && a.utilisation == b.utilisation
        && a.how == b.how
        && a.reason == b.reason
        && a.repeats_ms == b.repeats_ms
}

/// Compare two sides. Pure.
#[must_use]
pub fn diff_baselines(old: &Side, new: &Side, labels: (String, String)) -> BaselineDiff {
    let keys: BTreeSet<&(String, CaseKey)> = old.keys().chain(new.keys()).collect();
    let mut unchanged = 0;
    let mut changes = Vec::new();
    for key in keys {
        let (a, b) = (old.get(key), new.get(key));
        let change = match (a, b) {
            (Some(a), Some(b)) if same(a, b) => {
                unchanged += 1;
                continue;
            }
            (Some(_), Some(_)) => Change::Moved,
            (None, Some(_)) => Change::Added,
            (Some(_), None) => Change::Removed,
            (None, None) => continue,
        };
        let Some(told) = b.or(a) else { continue };
        let old_u = a.and_then(|x| x.utilisation);
        let new_u = b.and_then(|x| x.utilisation);
        changes.push(CaseChange {
            gpu_sku: key.0.clone(),
            case: key.1.to_string(),
            change,
            old_utilisation: old_u,
            new_utilisation: new_u,
            delta_pp: old_u.zip(new_u).map(|(o, n)| (n - o) * 100.0),
            old_median_ms: a.and_then(|x| x.median_ms),
            new_median_ms: b.and_then(|x| x.median_ms),
            old_commit: a.and_then(|x| x.git_sha.clone()),
            new_commit: b.and_then(|x| x.git_sha.clone()),
            how: told.how.clone(),
            reason: told.reason.clone(),
        });
    }
    BaselineDiff {
        schema_version: EXPORT_SCHEMA_VERSION,
        old: labels.0,
        new: labels.1,
        unchanged,
        changes,
    }
}

fn pp(delta: Option<f64>) -> String {
    delta.map_or_else(|| "–".to_owned(), |d| format!("{d:+.1} pp"))
}

fn arrow(old: String, new: String, change: Change) -> String {
    match change {
        Change::Moved => format!("{old} → {new}"),
        Change::Added => new,
        Change::Removed => old,
    }
}

fn headline(d: &BaselineDiff) -> String {
    format!(
        "{} moved, {} added, {} removed, {} unchanged",
        d.count(Change::Moved),
        d.count(Change::Added),
        d.count(Change::Removed),
        d.unchanged
    )
}

/// The cells of one change, shared by the table and the Markdown.
fn cells(c: &CaseChange) -> [String; 8] {
    [
        c.gpu_sku.clone(),
        c.case.clone(),
        c.change.as_str().to_owned(),
        arrow(pct(c.old_utilisation), pct(c.new_utilisation), c.change),
        pp(c.delta_pp),
        arrow(ms(c.old_median_ms), ms(c.new_median_ms), c.change),
        arrow(
            short_sha_or_missing(c.old_commit.as_deref()),
            short_sha_or_missing(c.new_commit.as_deref()),
            c.change,
        ),
        format!("{}: {}", c.how, c.reason),
    ]
}

const HEADER: [&str; 8] = [
    "gpu",
    "case",
    "change",
    "utilisation",
    "Δ",
    "median ms",
    "commit",
    "moved by: reason",
];

/// The diff as Markdown, for the description of a pull request. Pure.
#[must_use]
pub fn render_markdown(d: &BaselineDiff) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "### utilgate: baselines moved\n");
    let _ = writeln!(
        out,
        "{} (`{}` → `{}`).\n",
        headline(d),
        d.old.replace('`', "'"),
        d.new.replace('`', "'")
    );
    if d.changes.is_empty() {
        let _ = writeln!(out, "No baseline moved.");
        return out;
    }
    let _ = writeln!(out, "| {} |", HEADER.join(" | "));
    let _ = writeln!(out, "|{}", "---|".repeat(HEADER.len()));
    for c in &d.changes {
        let row: Vec<String> = cells(c)
            .into_iter()
            .enumerate()
            .map(|(i, cell)| {
                let cell = cell.replace('|', "\\|").replace('\n', " ");
                if i == 1 { format!("`{cell}`") } else { cell }
            })
            .collect();
        let _ = writeln!(out, "| {} |", row.join(" | "));
    }
    let _ = writeln!(
        out,
        "\nReview each move as code: a drop in utilisation that is not intended is a regression; \
         `utilgate baseline history CASE` shows every move."
    );
    out
}

/// The diff as a terminal table under its headline.
#[must_use]
pub fn render_table(d: &BaselineDiff, terminal: crate::report::Terminal) -> String {
    let mut out = format!("{}: {} → {}\n", headline(d), d.old, d.new);
    if d.changes.is_empty() {
        return out;
    }
    let mut table = crate::report::terminal::Grid::new(terminal, HEADER).key_column(1);
    for c in &d.changes {
        // The figures (utilisation, its change, the median) keep to the right.
        table.row(
            cells(c)
                .into_iter()
                .enumerate()
                .map(|(i, text)| {
                    if (3..=5).contains(&i) {
                        crate::report::terminal::GridCell::right(text)
                    } else {
                        crate::report::terminal::GridCell::left(text)
                    }
                })
                .collect(),
        );
    }
    let _ = writeln!(out, "{}", table.render());
    out
}
