//! `utilgate publish` and the publishing half of `utilgate run --report-dir/--github`: build the
//! report with trends from the store, render it, write the report files and the step summary,
//! print annotations, and post the sticky comments, commit statuses and check runs. Sequences
//! I/O (files, environment, network through `github`); what to post is decided by `report`.
//!
//! Publishing happens after the run is stored, so a failure here never loses the run or moves a
//! baseline. A failed upload is exit 2, unless the gate failed: its exit 1 takes precedence.
//!
//! - [`env`]: what GitHub Actions tells the step, the event payload, and the target checks.
//! - [`files`]: the stored run's report, its trends, the report files and the step summary.
//! - [`post`]: comments, statuses and check runs for one report.
//! - [`during_run`]: what `run` checks before measuring and does once the run is stored.

mod during_run;
mod env;
mod files;
mod post;

use crate::case::Verdict;
use crate::cli::PublishArgs;
use crate::commands::{Outcome, env_lookup, runs};
use crate::config::Config;
use crate::error::Error;
use crate::output;
use crate::report::RunReport;

pub use during_run::{RunPublishing, prepare_run};
pub use env::{GithubEnv, PublishOptions, pull_request_event};
pub use files::{create_dir, renderer, stored_report, trends, write_report_dir};
pub use post::publish_report;

/// The exit a stored run's report stands for: the gate first, then cases that failed to run.
pub(crate) fn outcome_of(report: &RunReport) -> Outcome {
    if !report.gate.passed {
        Outcome::GateFailed
    } else if report.gate.counts.contains_key(&Verdict::Error) {
        Outcome::CasesFailed
    } else {
        Outcome::Passed
    }
}

/// A publishing error after the run is stored: exit 2, unless the gate failed (exit 1 wins);
/// then it is printed and the gate's outcome stands.
pub(crate) fn unless_gate_failed(
    result: Result<(), Error>,
    gate_failed: bool,
) -> Result<(), Error> {
    match result {
        Err(err) if gate_failed => {
            let _ = output::report_error(&err);
            Ok(())
        }
        other => other,
    }
}

/// The status name: the publishing side's config when it has one (the default branch's, in
/// the publishing workflow), else the one stored with the run.
#[must_use]
pub fn status_context(
    config: Option<&Config>,
    stored: Option<&crate::store::PublishFacts>,
) -> String {
    config.map_or_else(
        || {
            stored.map_or_else(
                || crate::config::DEFAULT_STATUS_CONTEXT.to_owned(),
                |f| f.status_context.clone(),
            )
        },
        |c| c.report.status_context.clone(),
    )
}

/// `utilgate publish [RUN]`.
pub fn publish(args: &PublishArgs) -> Result<Outcome, Error> {
    if args.workflow_run {
        return crate::commands::publish_check::publish_after_check(args);
    }
    let loaded = runs::optional_config(&args.config)?;
    let renderer = renderer(loaded.as_ref())?;
    let (store, config) = runs::store_from(&args.config)?;
    let run = runs::load_run(&store, args.run)?;
    let report = stored_report(&store, &run, config.as_ref())?;
    let outcome = outcome_of(&report);
    let facts = store.publish_facts(run.summary.id)?;
    let opts = PublishOptions {
        event_file: args.event.clone(),
        pr: args.pr,
        sha: args.sha.clone(),
        run_head_sha: facts.as_ref().and_then(|f| f.pr_head_sha.clone()),
        status_context: Some(status_context(config.as_ref(), facts.as_ref())),
        target_url: None,
        checks: config.as_ref().map(|c| c.github.checks).unwrap_or_default(),
        annotation_path: loaded.as_ref().map(during_run::annotation_path),
        baseline_branch: facts
            .as_ref()
            .map(|f| f.baseline_branch.clone())
            .or_else(|| config.as_ref().map(|c| c.gate.baseline_branch.clone())),
        ..PublishOptions::default()
    };
    let genv = GithubEnv::from_env(&env_lookup());
    let result = (|| {
        if let Some(dir) = &args.report_dir {
            write_report_dir(&renderer, &report, dir)?;
        }
        publish_report(&renderer, &report, &genv, &opts)
    })();
    unless_gate_failed(result, outcome == Outcome::GateFailed)?;
    Ok(outcome)
}
