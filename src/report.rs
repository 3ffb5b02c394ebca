//! Reports: the pure report context and its renderings (terminal table, JSON, the minijinja
//! templates: PR comment, step summary, HTML, `JUnit`, and the BMF, `OpenMetrics` and
//! github-action-benchmark exports).

mod ab;
pub mod baseline_diff;
pub mod bisect;
pub mod budget;
mod chart;
mod context;
pub mod escape;
pub mod evidence;
mod export;
pub mod floor;
pub mod format;
mod github_text;
pub mod gpus;
mod group;
pub mod history;
mod human;
pub mod issue;
mod listing;
pub mod nsight;
pub mod probe;
mod render;
mod serve;
mod serve_chart;
mod serve_frontier;
mod serve_view;
pub mod site;
mod terminal;

pub use ab::{AbCase, AbReport, render_ab};
pub use chart::ChartGuide;
pub use context::{
    BaselineRef, CaseReport, GateState, Judgement, RunReport, SCHEMA_VERSION, SuiteReport,
    TrendPoint, Unconfirmed, severity,
};
pub use export::{render_bmf, render_gab, render_openmetrics};
pub use github_text::{
    STATUS_DESCRIPTION_LIMIT, annotations, check_annotations, check_title, status_context,
    suite_conclusion, suite_status, truncate_chars,
};
pub use group::GroupMember;
pub use human::{render_human, render_json};
pub use listing::{render_baseline, render_baseline_history, render_baselines, render_runs};
pub use render::{
    BUILTIN_TEMPLATES, GITHUB_COMMENT_LIMIT, RenderError, Renderer, ReportFormat, comment_marker,
    fit_comment,
};
pub use serve::{ServeCaseReport, ServeHistoryPoint, ServeRepeatReport};
pub use serve_chart::ServeChart;
pub use terminal::Terminal;
