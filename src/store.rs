//! The `SQLite` history store (DESIGN.md §6): runs, results with raw samples, and baseline
//! pointers with their full history. An I/O module: it translates between domain types and
//! `SQLite` and decides nothing (verdicts and promotions arrive from the caller).

mod baselines;
mod budgets;
mod copy;
mod db;
mod energy;
mod error;
mod estimate;
mod evidence;
pub mod export;
pub mod history_file;
pub mod journal;
pub mod meta;
mod pg_open;
mod probes;
mod publish;
mod pull_requests;
mod quality;
mod results;
mod runs;
pub mod samples;
mod schema;
mod series;
mod serve;
mod serve_site;
mod site;
pub(crate) mod sql;
mod summaries;
mod types;

#[cfg(test)]
mod tests;

pub use copy::{CopyReport, TableCopy};
pub use db::Store;
pub use error::StoreError;
pub use evidence::{NewEvidence, StoredEvidence};
pub use probes::{NewProbe, StoredProbe};
pub use publish::{MissingCase, PublishFacts};
pub use samples::SampleError;
pub use schema::LATEST as SCHEMA_VERSION;
pub use serve::{NewServeCase, NewServeRepeat, StoredServeCase, StoredServeRepeat};
pub use serve_site::{ServeSeriesMarks, ServeSiteMove, ServeSitePoint, SweepFile};
pub use site::{SeriesMarks, SitePoint};
pub use summaries::StoredSummary;
pub use types::{
    BaselineEntry, BaselineEvent, BaselineMove, BaselineMoveKind, BranchWindow, CaseFilter,
    NewResult, NewRun, RunFilter, RunGroup, RunId, RunSummary, StoredResult, StoredRun, Take,
};
