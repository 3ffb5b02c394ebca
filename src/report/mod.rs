//! Reports: the pure report context and its renderings (terminal table, JSON, and the
//! minijinja templates: PR comment, step summary, HTML, `JUnit`).

mod context;
pub mod evidence;
pub mod floor;
mod github_text;
pub mod history;
mod human;
pub mod probe;
mod render;

pub use context::{
    BaselineRef, CaseReport, Judgement, RunReport, SCHEMA_VERSION, SuiteReport, TrendPoint,
    gpu_notes, severity, summary_line,
};
pub use github_text::{
    STATUS_DESCRIPTION_LIMIT, annotations, check_annotations, check_title, status_context,
    suite_conclusion, suite_status, truncate_chars,
};
pub use human::{render_human, render_json};
pub use render::{
    BUILTIN_TEMPLATES, GITHUB_COMMENT_LIMIT, RenderError, Renderer, ReportFormat, comment_marker,
    fit_comment, history_svg, sparkline,
};
