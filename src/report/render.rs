//! Rendering the report context through minijinja templates: the PR comment, the step summary,
//! the standalone HTML report and `JUnit` XML, plus the helpers they use (sparklines, the inline
//! SVG history chart, fitting a comment under GitHub's size limit). Pure: user templates arrive
//! as text, read by the command.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use minijinja::value::{Serde, Value};
use minijinja::{AutoEscape, Environment, UndefinedBehavior};
use serde::Deserialize as _;
use thiserror::Error;

use crate::case::Verdict;
use crate::report::{GateState, RunReport, TrendPoint, format, render_json};

/// GitHub rejects issue comments longer than this many characters.
pub const GITHUB_COMMENT_LIMIT: usize = 65_536;

/// The built-in templates, by name. A user template directory may replace any of them.
pub const BUILTIN_TEMPLATES: [(&str, &str); 5] = [
    ("macros.md.j2", include_str!("../../templates/macros.md.j2")),
    (
        "comment.md.j2",
        include_str!("../../templates/comment.md.j2"),
    ),
    (
        "summary.md.j2",
        include_str!("../../templates/summary.md.j2"),
    ),
    (
        "report.html.j2",
        include_str!("../../templates/report.html.j2"),
    ),
    ("junit.xml.j2", include_str!("../../templates/junit.xml.j2")),
];

/// What a report is rendered as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ReportFormat {
    /// The PR comment's Markdown (all suites when not split per suite).
    Markdown,
    /// The Markdown for `$GITHUB_STEP_SUMMARY`.
    Summary,
    /// A standalone HTML page with a history chart per case; no network access.
    Html,
    /// `JUnit` XML: every case a testcase, for CI test-report tools.
    Junit,
    /// The report context as JSON with `schema_version`.
    Json,
}

impl ReportFormat {
    pub const ALL: [ReportFormat; 5] = [
        ReportFormat::Markdown,
        ReportFormat::Summary,
        ReportFormat::Html,
        ReportFormat::Junit,
        ReportFormat::Json,
    ];

    /// The file a report directory holds this format in.
    #[must_use]
    pub fn file_name(self) -> &'static str {
        match self {
            ReportFormat::Markdown => "report.md",
            ReportFormat::Summary => "summary.md",
            ReportFormat::Html => "report.html",
            ReportFormat::Junit => "junit.xml",
            ReportFormat::Json => "report.json",
        }
    }

    /// The template that renders this format (JSON is serialised directly).
    #[must_use]
    pub fn template(self) -> Option<&'static str> {
        match self {
            ReportFormat::Markdown => Some("comment.md.j2"),
            ReportFormat::Summary => Some("summary.md.j2"),
            ReportFormat::Html => Some("report.html.j2"),
            ReportFormat::Junit => Some("junit.xml.j2"),
            ReportFormat::Json => None,
        }
    }
}

#[derive(Debug, Error)]
pub enum RenderError {
    #[error("template {name}: {source:#}")]
    Template {
        name: String,
        #[source]
        source: minijinja::Error,
    },
    #[error("failed to write the report as JSON: {0}")]
    Json(#[from] serde_json::Error),
}

impl RenderError {
    #[must_use]
    pub fn hint(&self) -> Option<String> {
        match self {
            RenderError::Template { .. } => Some(
                "templates see the JSON report's fields (`utilgate report --format json`); undefined names are errors"
                    .to_owned(),
            ),
            RenderError::Json(_) => None,
        }
    }
}

/// The template environment: built-in templates, replaced by any user template of the same name.
pub struct Renderer {
    env: Environment<'static>,
}

impl Renderer {
    /// Compile the built-in templates and `overrides` (template name -> source).
    pub fn new(overrides: &BTreeMap<String, String>) -> Result<Renderer, RenderError> {
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        // HTML and XML templates escape every value; Markdown escapes with explicit filters.
        env.set_auto_escape_callback(|name| {
            let name = name.strip_suffix(".j2").unwrap_or(name);
            let ext = std::path::Path::new(name).extension();
            if ext.is_some_and(|e| e.eq_ignore_ascii_case("html") || e.eq_ignore_ascii_case("xml"))
            {
                AutoEscape::Html
            } else {
                AutoEscape::None
            }
        });
        if let Ok(syntax) = minijinja::syntax::SyntaxConfig::builder()
            .trim_blocks(true)
            .lstrip_blocks(true)
            .keep_trailing_newline(true)
            .build()
        {
            env.set_syntax(syntax);
        }
        env.add_filter("pct", pct);
        env.add_filter("ms", ms);
        env.add_filter("delta", delta);
        env.add_filter("drop", drop);
        env.add_filter("pp", percent_points);
        env.add_filter("seconds", |x: f64| format!("{:.6}", x / 1000.0));
        env.add_filter("duration", super::format::duration);
        env.add_filter("line1", |s: &str| {
            s.lines().next().unwrap_or_default().to_owned()
        });
        env.add_filter("reason", md_reason);
        env.add_filter("icon", icon);
        env.add_filter("gate_mark", |state: &str| {
            gate_state(state).map(GateState::mark)
        });
        env.add_filter("gate_word", |state: &str| {
            gate_state(state).map(GateState::word)
        });
        env.add_filter("short", short_sha);
        env.add_filter("md", md_text);
        env.add_filter("cell", md_code_cell);
        env.add_filter("fence", fence_safe);
        // Service cases (report/serve.rs): a metric's mean, `–` where the files have none.
        env.add_function("mean", |means: Value, name: String| -> Option<f64> {
            means
                .get_attr(&name)
                .ok()
                .and_then(|v| f64::try_from(v).ok())
        });
        env.add_filter("worse", |x: Option<f64>| format::signed_percent(x));
        env.add_filter("whole", |x: Option<f64>| {
            x.filter(|v| v.is_finite())
                .map_or_else(|| "–".to_owned(), |v| format!("{v:.0}"))
        });
        // A sweep's frontier as a Mermaid chart and a table (report/serve_frontier.rs): GitHub
        // strips inline SVG from comments but draws Mermaid.
        env.add_function("frontier_markdown", |frontier: Value, metrics: Value| {
            let frontier = crate::compare::FrontierFigures::deserialize(frontier)?;
            let metrics = Vec::<crate::compare::MetricDecision>::deserialize(metrics)?;
            Ok::<_, minijinja::Error>(super::serve_frontier::frontier_markdown(
                &frontier, &metrics,
            ))
        });
        env.add_function("sparkline", |points: Value| {
            Ok::<_, minijinja::Error>(sparkline(&Vec::<TrendPoint>::deserialize(points)?))
        });
        env.add_function(
            "chart",
            |points: Value,
             reference: Option<f64>,
             threshold_pct: Option<f64>,
             noise_pct: Option<f64>,
             drop_pct: Option<f64>| {
                let points = Vec::<TrendPoint>::deserialize(points)?;
                // Without a reference (a new case) the chart has no bands, only the runs.
                let svg = super::chart::verdict_svg(
                    &points,
                    &super::ChartGuide {
                        reference,
                        threshold_pct,
                        noise_pct,
                        drop_pct,
                    },
                );
                Ok::<_, minijinja::Error>(Value::from_safe_string(svg))
            },
        );
        for (name, source) in BUILTIN_TEMPLATES {
            let source = overrides
                .get(name)
                .cloned()
                .unwrap_or_else(|| source.to_owned());
            env.add_template_owned(name, source)
                .map_err(|source| RenderError::Template {
                    name: name.to_owned(),
                    source,
                })?;
        }
        Ok(Renderer { env })
    }

    /// The report in `format`.
    pub fn render(&self, format: ReportFormat, report: &RunReport) -> Result<String, RenderError> {
        self.render_with(format, report, Value::from(Serde(report)))
    }

    /// The report in `format` as a page of `utilgate site`: the same rendering, with the
    /// site's links (`site` in the template's context) to the index, the changes and the
    /// previous and next night.
    pub fn render_in_site(
        &self,
        format: ReportFormat,
        report: &RunReport,
        nav: &crate::report::site::RunNav,
    ) -> Result<String, RenderError> {
        let ctx =
            minijinja::context! { site => Value::from(Serde(nav)), ..Value::from(Serde(report)) };
        self.render_with(format, report, ctx)
    }

    /// `format`'s template over `ctx` (the report's fields, and any a caller adds); JSON needs
    /// no template.
    fn render_with(
        &self,
        format: ReportFormat,
        report: &RunReport,
        ctx: Value,
    ) -> Result<String, RenderError> {
        let Some(name) = format.template() else {
            return Ok(render_json(report)?);
        };
        let fail = |source| RenderError::Template {
            name: name.to_owned(),
            source,
        };
        self.env
            .get_template(name)
            .and_then(|t| t.render(ctx))
            .map_err(fail)
    }

    /// The sticky PR comment of one suite: the hidden marker, then the Markdown, cut to `limit`.
    pub fn comment(
        &self,
        report: &RunReport,
        suite: &str,
        limit: usize,
    ) -> Result<String, RenderError> {
        let body = self.render(ReportFormat::Markdown, &report.for_suite(suite))?;
        let text = format!("{}\n{body}", comment_marker(suite, &report.run.gpu_sku));
        Ok(fit_comment(&text, limit))
    }
}

/// The hidden marker that identifies a suite's sticky comment on one GPU. Characters that could
/// end the HTML comment are replaced, so a suite name cannot break it.
#[must_use]
pub fn comment_marker(suite: &str, gpu_sku: &str) -> String {
    let clean = |s: &str| s.replace("--", "- -").replace('>', "_");
    format!(
        "<!-- utilgate:comment suite={} gpu={} -->",
        clean(suite),
        clean(gpu_sku)
    )
}

/// Cut `text` to at most `limit` bytes (so at most `limit` characters), at a line boundary,
/// closing any open code fence and `<details>` blocks, and saying it was cut.
#[must_use]
pub fn fit_comment(text: &str, limit: usize) -> String {
    if text.len() <= limit {
        return text.to_owned();
    }
    let note = format!(
        "\n> [!NOTE]\n> Truncated to stay under GitHub's {GITHUB_COMMENT_LIMIT}-character comment limit ({} characters in full). The step summary and the report files hold everything.\n",
        text.chars().count()
    );
    let mut budget = limit.saturating_sub(note.len());
    loop {
        let mut cut = budget.min(text.len());
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        let kept = match text[..cut].rfind('\n') {
            Some(i) => &text[..=i],
            None => &text[..cut],
        };
        let closing = closers(kept);
        if kept.len() + closing.len() + note.len() <= limit || budget == 0 {
            let mut out = String::with_capacity(limit);
            out.push_str(kept);
            out.push_str(&closing);
            out.push_str(&note);
            if out.len() > limit {
                // Only when `limit` cannot even hold the note.
                let mut end = limit;
                while !out.is_char_boundary(end) {
                    end -= 1;
                }
                out.truncate(end);
            }
            return out;
        }
        budget = budget.saturating_sub(closing.len().max(1));
    }
}

/// What must follow `kept` to close an open code fence and open `<details>` elements.
fn closers(kept: &str) -> String {
    let fences = kept
        .lines()
        .filter(|l| l.trim_start().starts_with("```"))
        .count();
    let opened = kept.matches("<details").count();
    let closed = kept.matches("</details>").count();
    let mut out = String::new();
    if fences % 2 == 1 {
        out.push_str("```\n");
    }
    for _ in closed..opened {
        out.push_str("\n</details>\n");
    }
    out
}

/// A small trend of utilisation as Unicode block characters, oldest first; a gap is a space.
#[must_use]
pub fn sparkline(points: &[TrendPoint]) -> String {
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let values: Vec<Option<f64>> = points
        .iter()
        .map(|p| p.utilisation.filter(|u| u.is_finite()))
        .collect();
    let finite: Vec<f64> = values.iter().flatten().copied().collect();
    let (Some(lo), Some(hi)) = (
        finite.iter().copied().reduce(f64::min),
        finite.iter().copied().reduce(f64::max),
    ) else {
        return String::new();
    };
    values
        .iter()
        .map(|v| match v {
            None => ' ',
            Some(_) if hi - lo <= f64::EPSILON * hi.abs().max(1.0) => BARS[3],
            Some(x) => {
                let level = ((x - lo) / (hi - lo) * 7.0).round();
                #[expect(
                    clippy::cast_possible_truncation,
                    clippy::cast_sign_loss,
                    reason = "level is finite and within 0..=7 by construction"
                )]
                let i = level.clamp(0.0, 7.0) as usize;
                BARS[i]
            }
        })
        .collect()
}

fn pct(x: Option<f64>) -> String {
    format::pct(x)
}

fn ms(x: Option<f64>) -> String {
    format::ms(x)
}

/// A drop in percent (positive = slower) as the change in utilisation the reader sees.
fn delta(drop_pct: Option<f64>) -> String {
    format::signed_percent(drop_pct.map(|d| -d))
}

/// A utilisation drop in percent, the one sign convention of every surface: a fall is a
/// positive drop (`3.1%`), a rise a negative one (`-2.0%`).
fn drop(drop_pct: Option<f64>) -> String {
    drop_pct
        .filter(|v| v.is_finite())
        .map_or_else(|| "–".to_owned(), |d| format!("{:.1}%", d + 0.0))
}

/// A figure already in percent, one decimal.
fn percent_points(x: Option<f64>) -> String {
    format::percent(x)
}

/// A decision's reason as a Markdown list item's content: the first line as text, any further
/// lines (a harness's stderr tail) in an indented code block.
fn md_reason(s: &str) -> String {
    let mut lines = s.lines();
    let mut out = md_text(lines.next().unwrap_or_default());
    let rest: Vec<&str> = lines.collect();
    if !rest.is_empty() {
        out.push_str(
            "

  ```text
",
        );
        for line in rest {
            let _ = writeln!(out, "  {}", fence_safe(line));
        }
        out.push_str("  ```");
    }
    out
}

/// A serialised [`GateState`] back as the value (templates map it to a mark or a word).
fn gate_state(state: &str) -> Result<GateState, minijinja::Error> {
    match state {
        "failed" => Ok(GateState::Failed),
        "error" => Ok(GateState::Error),
        "undecided" => Ok(GateState::Undecided),
        "passed" => Ok(GateState::Passed),
        other => Err(minijinja::Error::new(
            minijinja::ErrorKind::InvalidOperation,
            format!("unknown gate state {other:?}"),
        )),
    }
}

fn icon(verdict: &str) -> &'static str {
    match verdict.parse::<Verdict>().unwrap_or(Verdict::Error) {
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

#[expect(
    clippy::needless_pass_by_value,
    reason = "minijinja passes filter arguments by value"
)]
fn short_sha(s: Option<String>) -> String {
    format::short_sha_or_missing(s.as_deref())
}

/// Text in Markdown (outside code): HTML-significant characters and table pipes escaped, line
/// breaks kept inside a table cell or list item.
fn md_text(s: &str) -> String {
    super::escape::markdown(s)
}

/// Text inside a code span in a table cell: pipes escaped, backticks replaced.
fn md_code_cell(s: &str) -> String {
    super::escape::markdown_code(s)
}

/// Text inside a fenced code block: a line of backticks cannot close the fence early.
fn fence_safe(s: &str) -> String {
    super::escape::markdown_fenced(s)
}

#[cfg(test)]
pub(crate) mod tests;
