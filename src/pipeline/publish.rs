//! The publish stage: the report files and step summary, the sticky comment, statuses, check
//! runs and the nightly issue.

pub(crate) mod check;
pub(crate) mod during_run;
pub(crate) mod env;
pub(crate) mod files;
pub(crate) mod issue;
pub(crate) mod outcome;
pub(crate) mod post;

pub(crate) use during_run::annotation_path;
pub(crate) use env::{GithubEnv, PublishOptions};
pub(crate) use files::{renderer, write_report_dir};
pub(crate) use outcome::{outcome_of, status_context, unless_gate_failed};
pub(crate) use post::publish_report;
