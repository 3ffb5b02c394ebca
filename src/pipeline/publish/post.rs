//! Posting one report to GitHub: the step summary and annotations, then (unless a fork's
//! read-only token) a sticky comment per suite on the pull request, and a commit status and/or
//! a check run per suite on its head commit. Network through `github`.

use std::fmt::Write as _;

use crate::error::Error;
use crate::github::{
    self, CHECK_OUTPUT_LIMIT, CheckOutput, CheckRunPost, CommentAction, CommentPost, Publication,
    StatusPost,
};
use crate::output;
use crate::report::{self, GITHUB_COMMENT_LIMIT, Renderer, ReportFormat, RunReport};

use super::env::{
    GithubEnv, PublishOptions, check_belongs, check_ready, head_sha, read_event, read_only_fork,
};
use super::files::write_step_summary;

/// Step summary, annotations, then (unless a fork's read-only token) comments and statuses.
#[expect(
    clippy::too_many_lines,
    reason = "one publication built and posted in order: comments, check runs, statuses, the nightly issue"
)]
pub fn publish_report(
    renderer: &Renderer,
    report: &RunReport,
    genv: &GithubEnv,
    opts: &PublishOptions,
) -> Result<(), Error> {
    write_step_summary(renderer, report, genv)?;
    if genv.actions {
        for line in report::annotations(report) {
            output::note(&line);
        }
    }
    let event = read_event(genv, opts)?;
    if read_only_fork(genv, &event) {
        output::warn(
            "this pull request comes from a fork, so its workflow has a read-only GITHUB_TOKEN: no comment or status was posted. \
             The report is in the step summary and the report files; to comment on fork pull requests, post from a workflow_run \
             workflow (docs/github.md, \"The one pattern\"; examples/workflows/pr-publish.yml)",
        );
        return Ok(());
    }
    let Some(target) = check_ready(genv, opts)? else {
        return Ok(());
    };
    let pr = opts.pr.or(event.pr_number).or(report.run.pr_number);
    let sha = head_sha(genv, opts, &event).or_else(|| report.run.git_sha.clone());
    check_belongs(report, opts, pr, sha.as_deref())?;
    let template = opts
        .status_context
        .as_deref()
        .unwrap_or(crate::config::DEFAULT_STATUS_CONTEXT);
    let target_url = opts.target_url.clone().or_else(|| genv.run_url.clone());
    let mut publication = Publication {
        pr_number: pr,
        ..Publication::default()
    };
    // Room for the gate notes (at most 10 lines of 400 characters) under the comment limit.
    let notes_room = if opts.gate_notes.is_empty() { 0 } else { 4200 };
    for suite in &report.suites {
        if pr.is_some() {
            publication.comments.push(CommentPost {
                marker: report::comment_marker(&suite.name, &report.run.gpu_sku),
                body: with_gate_notes(
                    renderer.comment(report, &suite.name, GITHUB_COMMENT_LIMIT - notes_room)?,
                    &opts.gate_notes,
                ),
            });
        }
        if let Some(sha) = &sha
            && opts.checks.check_runs()
        {
            let name = report::status_context(template, &suite.name, &report.run.gpu_sku);
            let details = target_url.clone();
            publication.check_runs.push(check_run(
                renderer,
                report,
                suite,
                (name, sha, details),
                opts,
            )?);
        }
        if let Some(sha) = &sha
            && opts.checks.statuses()
        {
            let (state, description) = report::suite_status(suite);
            publication.statuses.push(StatusPost {
                sha: sha.clone(),
                state,
                context: report::status_context(template, &suite.name, &report.run.gpu_sku),
                description,
                target_url: target_url.clone(),
            });
        }
    }
    // A nightly's failed suite keeps an issue open (commands/publish_issue.rs).
    let issues = crate::pipeline::publish::issue::publish_issues(
        renderer,
        report,
        &target,
        opts.baseline_branch.as_deref(),
        pr,
    );
    if publication.comments.is_empty()
        && publication.statuses.is_empty()
        && publication.check_runs.is_empty()
    {
        let done = issues?;
        if !done.is_empty() {
            output::note(done.trim_end());
        }
        output::warn(
            "nothing to publish: no pull request and no commit (set GITHUB_SHA or pass --sha)",
        );
        return Ok(());
    }
    let done = github::publish(&target, &publication)?;
    for planted in &done.planted {
        output::warn(&planted.warning());
    }
    let mut text = String::new();
    for action in &done.comments {
        let _ = match action {
            CommentAction::Created { url, .. } => {
                writeln!(text, "published: comment created: {url}")
            }
            CommentAction::Updated { url, .. } => {
                writeln!(text, "published: comment updated: {url}")
            }
        };
    }
    if let Some(sha) = &sha
        && done.statuses > 0
    {
        let _ = writeln!(
            text,
            "published: {} commit status(es) on {sha}",
            done.statuses
        );
    }
    if let Some(sha) = &sha
        && done.check_runs > 0
    {
        let _ = writeln!(text, "published: {} check run(s) on {sha}", done.check_runs);
    }
    text.push_str(&issues?);
    output::note(text.trim_end());
    Ok(())
}

/// The comment with the gate notes after its marker line, each escaped (a suite name or value
/// from the pull request's config is its author's text: no tag, no mention).
fn with_gate_notes(body: String, notes: &[String]) -> String {
    if notes.is_empty() {
        return body;
    }
    let (marker, rest) = body.split_once('\n').unwrap_or((body.as_str(), ""));
    let mut out = format!("{marker}\n");
    for note in notes.iter().take(10) {
        let text: String = crate::report::escape::markdown(note)
            .chars()
            .take(400)
            .collect();
        let _ = writeln!(out, "> ⚠️ {text}");
    }
    out.push('\n');
    out.push_str(rest);
    out
}

/// A suite's completed check run: conclusion, title, the summary table and the full report
/// (evidence) as its output, cut to GitHub's limits, and an annotation per failing case.
/// `run` names the check run (as the status is named), the head commit and the details link.
fn check_run(
    renderer: &Renderer,
    report: &RunReport,
    suite: &report::SuiteReport,
    (name, sha, details_url): (String, &str, Option<String>),
    opts: &PublishOptions,
) -> Result<CheckRunPost, Error> {
    let one = report.for_suite(&suite.name);
    let summary = renderer.render(ReportFormat::Summary, &one)?;
    let text = renderer.render(ReportFormat::Markdown, &one)?;
    let path = opts.annotation_path.as_deref().unwrap_or("utilgate.toml");
    Ok(CheckRunPost {
        id: opts.check_run_ids.get(&name).copied(),
        head_sha: sha.to_owned(),
        details_url,
        conclusion: report::suite_conclusion(suite),
        output: CheckOutput {
            title: report::check_title(suite),
            summary: report::fit_comment(&summary, CHECK_OUTPUT_LIMIT),
            text: Some(report::fit_comment(&text, CHECK_OUTPUT_LIMIT)),
            annotations: report::check_annotations(report, &suite.name, path, 1),
        },
        name,
    })
}
