//! What GitHub Actions tells a publishing step (read once from the environment), the flags that
//! override it, the pull request event payload, and the checks made before anything is posted:
//! a token and repository, a fork's read-only token, and that the run belongs to the target.
//! Reads the environment (passed in) and the event file.

#![expect(clippy::disallowed_methods, reason = "the event payload is a file")]

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::error::Error;
use crate::github::{self, ChecksMode, GithubError, GithubTarget, Token};
use crate::report::RunReport;
use crate::trust;

const GITHUB_TOKEN: &str = "GITHUB_TOKEN";
const GITHUB_API_URL: &str = "GITHUB_API_URL";
const GITHUB_REPOSITORY: &str = "GITHUB_REPOSITORY";
pub(crate) const GITHUB_EVENT_NAME: &str = "GITHUB_EVENT_NAME";
const GITHUB_EVENT_PATH: &str = "GITHUB_EVENT_PATH";
const GITHUB_SHA: &str = "GITHUB_SHA";
const GITHUB_STEP_SUMMARY: &str = "GITHUB_STEP_SUMMARY";
const GITHUB_ACTIONS: &str = "GITHUB_ACTIONS";
const GITHUB_SERVER_URL: &str = "GITHUB_SERVER_URL";
const GITHUB_RUN_ID: &str = "GITHUB_RUN_ID";
/// The login utilgate posts as, for a token `GET /user` cannot name (a GitHub App's
/// installation token: `my-app[bot]`); default: `GET /user`, else `github-actions[bot]`.
const UTILGATE_GITHUB_LOGIN: &str = "UTILGATE_GITHUB_LOGIN";
const DEFAULT_API_URL: &str = "https://api.github.com";

/// What GitHub Actions tells a step, read once from the environment.
#[derive(Debug, Clone, Default)]
pub struct GithubEnv {
    pub actions: bool,
    pub token: Option<Token>,
    pub api_url: String,
    pub repository: Option<String>,
    pub event_name: Option<String>,
    pub event_path: Option<PathBuf>,
    pub sha: Option<String>,
    pub step_summary: Option<PathBuf>,
    /// The Actions run's page, for the statuses' links.
    pub run_url: Option<String>,
    /// `UTILGATE_GITHUB_LOGIN`: who utilgate posts as (only its own comments are edited).
    pub login: Option<String>,
}

impl GithubEnv {
    #[must_use]
    pub fn from_env(env: &dyn Fn(&str) -> Option<String>) -> GithubEnv {
        let get = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        let repository = get(GITHUB_REPOSITORY);
        GithubEnv {
            actions: get(GITHUB_ACTIONS).as_deref() == Some("true"),
            token: get(GITHUB_TOKEN).as_deref().and_then(Token::new),
            api_url: get(GITHUB_API_URL).unwrap_or_else(|| DEFAULT_API_URL.to_owned()),
            event_name: get(GITHUB_EVENT_NAME),
            event_path: get(GITHUB_EVENT_PATH).map(PathBuf::from),
            sha: get(GITHUB_SHA),
            step_summary: get(GITHUB_STEP_SUMMARY).map(PathBuf::from),
            run_url: match (get(GITHUB_SERVER_URL), &repository, get(GITHUB_RUN_ID)) {
                (Some(server), Some(repo), Some(id)) => Some(format!(
                    "{}/{repo}/actions/runs/{id}",
                    server.trim_end_matches('/')
                )),
                _ => None,
            },
            repository,
            login: get(UTILGATE_GITHUB_LOGIN).map(|l| l.trim().to_owned()),
        }
    }

    /// Where and as whom to post: the API root, `owner/name`, the token and the login.
    pub(super) fn target(&self, token: Token) -> Result<GithubTarget, GithubError> {
        let repository = self.repository.as_deref().unwrap_or_default();
        let mut target = GithubTarget::new(&self.api_url, repository, token)?;
        target.login.clone_from(&self.login);
        Ok(target)
    }
}

/// Flags that override what the event payload says, and what the stored run says about
/// where it belongs and how its statuses are named.
#[derive(Debug, Clone, Default)]
pub struct PublishOptions {
    pub event_file: Option<PathBuf>,
    pub pr: Option<u64>,
    pub sha: Option<String>,
    /// Statuses, check runs or both (`[github] checks`).
    pub checks: ChecksMode,
    /// Check runs created `in_progress` when the run started, by name.
    pub check_run_ids: BTreeMap<String, u64>,
    /// The file check-run annotations point at (the config, as the repository names it).
    pub annotation_path: Option<String>,
    /// The pull request head commit the run measured (stored with it), when it measured one.
    pub run_head_sha: Option<String>,
    /// The status name template (default: `utilgate/{suite}`).
    pub status_context: Option<String>,
    /// Where the statuses link (default: this Actions run).
    pub target_url: Option<String>,
    /// The baseline branch: a run on it for no pull request keeps the nightly issue.
    pub baseline_branch: Option<String>,
    /// What a pull request changed in the gate's settings (the base branch's were used), or
    /// that they were not verified: a line each at the top of the comment.
    pub gate_notes: Vec<String>,
}

/// The `pull_request` (or `pull_request_target`) event this process runs for, when it runs
/// for one: its number and head commit, recorded with a run.
pub fn pull_request_event(
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<github::EventInfo>, Error> {
    let genv = GithubEnv::from_env(env);
    if !genv
        .event_name
        .as_deref()
        .is_some_and(|n| n.starts_with("pull_request"))
    {
        return Ok(None);
    }
    if genv.event_path.is_none() {
        return Ok(None);
    }
    read_event(&genv, &PublishOptions::default()).map(Some)
}

/// The pull request facts from the event payload (`--event`, else `GITHUB_EVENT_PATH`).
pub(super) fn read_event(
    genv: &GithubEnv,
    opts: &PublishOptions,
) -> Result<github::EventInfo, Error> {
    let Some(path) = opts.event_file.as_ref().or(genv.event_path.as_ref()) else {
        return Ok(github::EventInfo::default());
    };
    let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
        path: path.clone(),
        source,
    })?;
    Ok(github::parse_event(&text, &path.display().to_string())?)
}

/// A `pull_request` event from a fork runs with a read-only token: nothing can be posted.
pub(super) fn read_only_fork(genv: &GithubEnv, event: &github::EventInfo) -> bool {
    event.from_fork && genv.event_name.as_deref() == Some("pull_request")
}

/// Everything needed to post, checked before any measuring: the token and repository, unless
/// this is a fork's pull request (which only gets the files and a warning).
pub(super) fn check_ready(
    genv: &GithubEnv,
    opts: &PublishOptions,
) -> Result<Option<GithubTarget>, Error> {
    let event = read_event(genv, opts)?;
    if read_only_fork(genv, &event) {
        return Ok(None);
    }
    let token = genv.token.clone().ok_or(GithubError::NoToken)?;
    Ok(Some(genv.target(token)?))
}

/// The run must have been measured for the pull request and commit it is posted to
/// (DESIGN.md §13): its stored head commit, else its measured one.
pub(super) fn check_belongs(
    report: &RunReport,
    opts: &PublishOptions,
    pr: Option<u64>,
    sha: Option<&str>,
) -> Result<(), GithubError> {
    let head = opts
        .run_head_sha
        .as_deref()
        .or(report.run.git_sha.as_deref());
    trust::check_target(
        &trust::RunFacts {
            id: report.run.id,
            pr_number: report.run.pr_number,
            head_sha: head,
            branch: report.run.branch.as_deref(),
        },
        &trust::Target { pr_number: pr, sha },
    )
    .map_err(|m| GithubError::RunMismatch {
        run: report.run.id,
        reason: m.to_string(),
    })
}

/// The head commit a pull request's checks belong to: `--sha`, the event's head (for
/// `pull_request` events `GITHUB_SHA` is a merge commit), then `GITHUB_SHA`.
pub(super) fn head_sha(
    genv: &GithubEnv,
    opts: &PublishOptions,
    event: &github::EventInfo,
) -> Option<String> {
    opts.sha
        .clone()
        .or_else(|| event.head_sha.clone())
        .or_else(|| genv.sha.clone())
}
