//! Reports: the pure report context and its renderings (terminal table, JSON).

mod context;
mod human;

pub use context::{BaselineRef, CaseReport, Judgement, RunReport, SCHEMA_VERSION, severity};
pub use human::{render_human, render_json};
