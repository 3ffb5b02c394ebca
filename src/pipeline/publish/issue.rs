//! `publish` of a nightly (a run on the baseline branch for no pull request): open or update
//! one GitHub issue per failing suite and GPU, close it when the suite passes again. Sequences
//! rendering and the GitHub calls; the rule is `report::issue`'s.

use std::fmt::Write as _;

use crate::error::Error;
use crate::github::{self, GithubTarget, IssueAction, IssuePost, IssueState};
use crate::report::issue::{self, SuiteNight};
use crate::report::{Renderer, RunReport};

/// GitHub's limit on an issue body, in characters.
const ISSUE_BODY_LIMIT: usize = 65_536;

/// The issues of a nightly, or nothing when the run is not one. Returns the lines to print.
pub(crate) fn publish_issues(
    renderer: &Renderer,
    report: &RunReport,
    target: &GithubTarget,
    baseline_branch: Option<&str>,
    pr: Option<u64>,
) -> Result<String, Error> {
    let Some(branch) = baseline_branch else {
        return Ok(String::new());
    };
    if !issue::keeps_issues(report, branch, pr) {
        return Ok(String::new());
    }
    let night = issue::night_name(report);
    let gpu = &report.run.gpu_sku;
    let mut posts = Vec::new();
    for (suite, state) in issue::suite_nights(report) {
        let marker = issue::issue_marker(&suite, gpu);
        let state = match state {
            SuiteNight::Failing => IssueState::Failing {
                title: issue::issue_title(
                    &suite,
                    gpu,
                    issue::last_good_night(report, &suite).as_deref(),
                    &night,
                ),
            },
            SuiteNight::Passing => IssueState::Passing {
                comment: issue::close_comment(&suite, &night),
            },
            SuiteNight::Unknown => continue,
        };
        let body = match state {
            IssueState::Failing { .. } => {
                // The comment's text less its own marker: the issue has its own.
                let markdown = renderer.comment(report, &suite, ISSUE_BODY_LIMIT - 1024)?;
                let markdown = markdown
                    .split_once('\n')
                    .map_or(markdown.as_str(), |(_, rest)| rest);
                issue::issue_body(&marker, &night, markdown)
            }
            IssueState::Passing { .. } => String::new(),
        };
        posts.push(IssuePost {
            marker,
            body,
            state,
        });
    }
    if posts.is_empty() {
        return Ok(String::new());
    }
    let done = github::sync_issues(target, &posts)?;
    for planted in &done.planted {
        crate::output::warn(&planted.warning());
    }
    let mut text = String::new();
    for action in done.actions {
        let _ = match action {
            IssueAction::Opened { url, .. } => writeln!(text, "published: issue opened: {url}"),
            IssueAction::Updated { url, .. } => writeln!(text, "published: issue updated: {url}"),
            IssueAction::Closed { url, .. } => writeln!(text, "published: issue closed: {url}"),
            IssueAction::NoneOpen => Ok(()),
        };
    }
    Ok(text)
}
