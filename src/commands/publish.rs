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

use crate::cli::PublishArgs;
use crate::error::Error;
use crate::outcome::Outcome;
use crate::pipeline::context::env_lookup;
use crate::pipeline::{context, report as stored};
use crate::store::StoreError;
use crate::trust::{self, CheckConclusion};

use crate::pipeline::fleet::{group_facts, group_report};
use crate::pipeline::publish::check::{not_finished, read_check};
use crate::pipeline::publish::{
    self, GithubEnv, PublishOptions, annotation_path, outcome_of, publish_report, renderer,
    status_context, unless_gate_failed, write_report_dir,
};
use crate::pipeline::report::stored_report;

/// `utilgate publish [RUN]`.
pub fn publish(args: &PublishArgs) -> Result<Outcome, Error> {
    if args.workflow_run {
        return publish_after_check(args);
    }
    let loaded = context::optional_config(&args.config)?;
    let renderer = renderer(loaded.as_ref())?;
    let (store, config) = context::store_from(&args.config)?;
    let run = stored::load_run(&store, args.run)?;
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
        annotation_path: loaded.as_ref().map(annotation_path),
        baseline_branch: facts
            .as_ref()
            .map(|f| f.baseline_branch.clone())
            .or_else(|| config.as_ref().map(|c| c.gate.baseline_branch.clone())),
        gate_notes: facts
            .as_ref()
            .map(|f| f.gate_notes.clone())
            .unwrap_or_default(),
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

/// `utilgate publish --group ID`: the group's merged report (as `report --group` builds it)
/// published as one run's is: one sticky comment, one status (or check run) per suite, the step
/// summary and annotations. The outcome is the union of the shards' gates.
///
/// # Errors
/// As [`group_report`] and [`group_facts`]; publishing errors as for one run (exit 2 unless the
/// gate failed).
pub fn publish_group(args: &crate::cli::PublishArgs, group: &str) -> Result<Outcome, Error> {
    let loaded = crate::pipeline::context::optional_config(&args.config)?;
    let renderer = publish::renderer(loaded.as_ref())?;
    let (store, config) = crate::pipeline::context::store_from(&args.config)?;
    let (report, notes) = group_report(&store, group, config.as_ref())?;
    for note in &notes {
        crate::output::warn(note);
    }
    let outcome = publish::outcome_of(&report);
    let facts = group_facts(&store, group)?;
    let opts = PublishOptions {
        event_file: args.event.clone(),
        pr: args.pr,
        sha: args.sha.clone(),
        run_head_sha: facts.as_ref().and_then(|f| f.pr_head_sha.clone()),
        status_context: Some(publish::status_context(config.as_ref(), facts.as_ref())),
        target_url: None,
        checks: config.as_ref().map(|c| c.github.checks).unwrap_or_default(),
        // The config file as the repository names it, for check-run annotations.
        annotation_path: loaded.as_ref().map(|l| {
            let path = l.path.strip_prefix("./").unwrap_or(&l.path);
            path.to_string_lossy().replace('\\', "/")
        }),
        ..PublishOptions::default()
    };
    let genv = GithubEnv::from_env(&crate::pipeline::context::env_lookup());
    let result = (|| {
        if let Some(dir) = &args.report_dir {
            publish::write_report_dir(&renderer, &report, dir)?;
        }
        publish::publish_report(&renderer, &report, &genv, &opts)
    })();
    publish::unless_gate_failed(result, outcome == Outcome::GateFailed)?;
    Ok(outcome)
}

/// `utilgate publish --workflow-run`.
pub fn publish_after_check(args: &PublishArgs) -> Result<Outcome, Error> {
    let check = read_check(args)?;
    if let CheckConclusion::NotMeasured(conclusion) =
        CheckConclusion::from_event(check.event.conclusion.as_deref())
    {
        check.not_measured(None, &not_finished(&conclusion))?;
        return Ok(Outcome::Passed);
    }
    let store = match context::store_from(&args.config) {
        Ok((store, _)) => store,
        Err(Error::Store(StoreError::Missing { .. })) => {
            check.not_measured(
                None,
                "the PR check left no report (new commits since the label?)",
            )?;
            return Ok(Outcome::Passed);
        }
        Err(err) => return Err(err),
    };
    let run = stored::load_run(&store, args.run)?;
    let facts = store.publish_facts(run.summary.id)?;
    let run_head = facts
        .as_ref()
        .and_then(|f| f.pr_head_sha.clone())
        .or_else(|| run.summary.git_sha.clone());
    let pr = match check.pull_request(&run)? {
        Ok(pr) => pr,
        Err(reason) => return check.refuse(&run, reason),
    };
    let belongs = trust::check_target(
        &trust::RunFacts {
            id: run.summary.id.0,
            pr_number: run.summary.pr_number,
            head_sha: run_head.as_deref(),
            branch: run.summary.branch.as_deref(),
        },
        &trust::Target {
            pr_number: Some(pr),
            sha: Some(&check.head),
        },
    );
    if let Err(mismatch) = belongs {
        return check.refuse(&run, mismatch.to_string());
    }

    let config = check.loaded.as_ref().map(|l| &l.config);
    let renderer = publish::renderer(check.loaded.as_ref())?;
    let report = stored_report(&store, &run, config)?;
    let outcome = publish::outcome_of(&report);
    let opts = PublishOptions {
        event_file: None,
        pr: Some(pr),
        sha: Some(check.head.clone()),
        run_head_sha: run_head,
        status_context: Some(publish::status_context(config, facts.as_ref())),
        target_url: check.event.html_url.clone(),
        checks: config.map(|c| c.github.checks).unwrap_or_default(),
        gate_notes: facts
            .as_ref()
            .map(|f| f.gate_notes.clone())
            .unwrap_or_default(),
        ..PublishOptions::default()
    };
    let result = (|| {
        if let Some(dir) = &args.report_dir {
            publish::write_report_dir(&renderer, &report, dir)?;
        }
        publish::publish_report(&renderer, &report, &check.genv, &opts)
    })();
    publish::unless_gate_failed(result, outcome == Outcome::GateFailed)?;
    Ok(outcome)
}
