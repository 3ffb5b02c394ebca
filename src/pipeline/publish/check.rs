//! `utilgate publish --workflow-run`: the posting half of the one pattern (docs/github.md),
//! run by a `workflow_run` workflow after the pull-request check. Sequences I/O (the event
//! file, the check's store, GitHub); what may be posted is decided by `trust`.
//!
//! - The check concluded success or failure: publish the run in its store, after confirming
//!   it was measured for this pull request's head commit. A fork's event names no pull
//!   request: the run's number is then confirmed against GitHub (its head must be the commit
//!   the check ran for). A run for anything else is refused (exit 2) and marked not measured.
//! - Anything else, or no store: each suite's status on the head commit becomes pending
//!   "not measured", never success, unless a measurement of that same commit already set it.

#![expect(
    clippy::disallowed_methods,
    reason = "the check run reads the report files it publishes"
)]

use crate::cli::PublishArgs;
use crate::config::LoadedConfig;
use crate::error::Error;
use crate::github::{self, CommitState, GithubError, GithubTarget, Publication, StatusPost};
use crate::outcome::Outcome;
use crate::output;
use crate::pipeline::context;
use crate::pipeline::context::env_lookup;
use crate::pipeline::publish::{self, GithubEnv};
use crate::report::{self, STATUS_DESCRIPTION_LIMIT};
use crate::store::StoredRun;

/// The statuses a measurement of a commit leaves; "not measured" never replaces them.
const MEASURED_STATES: [&str; 3] = ["success", "failure", "error"];

/// The check's event, read from `--event` or `GITHUB_EVENT_PATH`.
fn read_workflow_run(
    args: &PublishArgs,
    genv: &GithubEnv,
) -> Result<github::WorkflowRunInfo, Error> {
    let path = args
        .event
        .as_ref()
        .or(genv.event_path.as_ref())
        .ok_or_else(|| GithubError::Event {
            path: "GITHUB_EVENT_PATH".to_owned(),
            message: "not set, and no --event FILE given".to_owned(),
        })?;
    let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
        path: path.clone(),
        source,
    })?;
    Ok(github::parse_workflow_run(
        &text,
        &path.display().to_string(),
    )?)
}

/// Where to post: the token and repository must be there.
fn target(genv: &GithubEnv) -> Result<GithubTarget, Error> {
    let token = genv.token.clone().ok_or(GithubError::NoToken)?;
    Ok(genv.target(token)?)
}

/// The status names to mark: one per suite of the publishing side's config (the default
/// branch's), else of the stored run.
fn contexts(loaded: Option<&LoadedConfig>, run: Option<&StoredRun>, template: &str) -> Vec<String> {
    let gpu = loaded
        .and_then(|l| l.config.gpu.as_ref())
        .and_then(|g| g.name.clone())
        .or_else(|| run.map(|r| r.summary.gpu_sku.clone()));
    let suites: Vec<String> = match (loaded, run) {
        (Some(l), _) => l.config.suites.iter().map(|s| s.name.clone()).collect(),
        (None, Some(r)) => {
            let mut names: Vec<String> = r.results.iter().map(|x| x.key.suite.clone()).collect();
            names.sort();
            names.dedup();
            names
        }
        (None, None) => Vec::new(),
    };
    if template.contains("{gpu}") && gpu.is_none() {
        output::warn(&format!(
            "the status name {template:?} needs the GPU, which neither the config nor a stored run names; no status set"
        ));
        return Vec::new();
    }
    suites
        .iter()
        .map(|s| report::status_context(template, s, gpu.as_deref().unwrap_or_default()))
        .collect()
}

/// Set each context on `sha` to pending "not measured: {why}", leaving any status a
/// measurement of this commit set.
fn mark_not_measured(
    target: &GithubTarget,
    sha: &str,
    contexts: &[String],
    why: &str,
    target_url: Option<&str>,
) -> Result<(), Error> {
    if contexts.is_empty() {
        output::warn(&format!(
            "not measured ({why}), but no suite to mark: check out the default branch's utilgate.toml in the publishing job"
        ));
        return Ok(());
    }
    let existing = github::commit_statuses(target, sha)?;
    let description =
        report::truncate_chars(&format!("not measured: {why}"), STATUS_DESCRIPTION_LIMIT);
    let statuses: Vec<StatusPost> = contexts
        .iter()
        .filter(|c| {
            !existing
                .iter()
                .any(|(name, state)| name == *c && MEASURED_STATES.contains(&state.as_str()))
        })
        .map(|context| StatusPost {
            sha: sha.to_owned(),
            state: CommitState::Pending,
            context: context.clone(),
            description: description.clone(),
            target_url: target_url.map(str::to_owned),
        })
        .collect();
    let kept = contexts.len() - statuses.len();
    if !statuses.is_empty() {
        github::publish(
            target,
            &Publication {
                pr_number: None,
                comments: Vec::new(),
                statuses,
                check_runs: Vec::new(),
            },
        )?;
    }
    output::warn(&format!(
        "not measured: {why}; {} status(es) set to pending on {sha}{}",
        contexts.len() - kept,
        if kept > 0 {
            format!(", {kept} kept from a measurement of this commit")
        } else {
            String::new()
        }
    ));
    Ok(())
}

/// What a conclusion other than success or failure says, for the status line.
pub(crate) fn not_finished(conclusion: &str) -> String {
    match conclusion {
        "cancelled" => "the PR check was cancelled".to_owned(),
        "timed_out" => "the PR check timed out".to_owned(),
        "skipped" => "the PR check was skipped (add the label to measure)".to_owned(),
        other => format!("the PR check ended {}", other.replace('_', " ")),
    }
}

/// What the publishing side knows before it opens the check's store.
pub(crate) struct Check {
    pub(crate) genv: GithubEnv,
    pub(crate) target: GithubTarget,
    pub(crate) event: github::WorkflowRunInfo,
    pub(crate) head: String,
    pub(crate) loaded: Option<LoadedConfig>,
    pub(crate) template: String,
}

impl Check {
    pub(crate) fn not_measured(&self, run: Option<&StoredRun>, why: &str) -> Result<(), Error> {
        let names = contexts(self.loaded.as_ref(), run, &self.template);
        mark_not_measured(
            &self.target,
            &self.head,
            &names,
            why,
            self.event.html_url.as_deref(),
        )
    }

    /// Mark the head not measured and refuse the run (exit 2).
    pub(crate) fn refuse(&self, run: &StoredRun, reason: String) -> Result<Outcome, Error> {
        let why = format!(
            "run {} in the PR check's store is not this commit's",
            run.summary.id
        );
        self.not_measured(Some(run), &why)?;
        Err(GithubError::RunMismatch {
            run: run.summary.id.0,
            reason,
        }
        .into())
    }

    /// The pull request: GitHub's word when the event names it; else the run's number,
    /// confirmed by GitHub to have the head commit the check ran for.
    pub(crate) fn pull_request(&self, run: &StoredRun) -> Result<Result<u64, String>, Error> {
        match (self.event.pr_number, run.summary.pr_number) {
            (Some(pr), _) => Ok(Ok(pr)),
            (None, Some(pr)) => {
                let now = github::pull_head(&self.target, pr)?;
                if now.sha.eq_ignore_ascii_case(&self.head) {
                    Ok(Ok(pr))
                } else {
                    Ok(Err(format!(
                        "pull request #{pr} has head {} on GitHub, not {} (the commit the check ran for)",
                        short(&now.sha),
                        short(&self.head)
                    )))
                }
            }
            (None, None) => Ok(Err(format!(
                "run {} was measured for no pull request (branch {})",
                run.summary.id,
                run.summary.branch.as_deref().unwrap_or("unknown")
            ))),
        }
    }
}

fn short(sha: &str) -> String {
    sha.chars().take(12).collect()
}

pub(crate) fn read_check(args: &PublishArgs) -> Result<Check, Error> {
    let genv = GithubEnv::from_env(&env_lookup());
    let event = read_workflow_run(args, &genv)?;
    let target = target(&genv)?;
    let head = event.head_sha.clone().ok_or_else(|| GithubError::Event {
        path: "the workflow_run event".to_owned(),
        message: "names no head commit (workflow_run.head_sha)".to_owned(),
    })?;
    let loaded = context::optional_config(&args.config)?;
    let template = publish::status_context(loaded.as_ref().map(|l| &l.config), None);
    Ok(Check {
        genv,
        target,
        event,
        head,
        loaded,
        template,
    })
}
