//! `utilgate publish` and the publishing half of `utilgate run --report-dir/--github`: build the
//! report with trends from the store, render it, write the report files and the step summary,
//! print annotations, and post the sticky comments and commit statuses. Sequences I/O (files,
//! environment, network through `github`); what to post is decided by `report`.
//!
//! Publishing happens after the run is stored, so a failure here never loses the run or moves a
//! baseline. A failed upload is exit 2, unless the gate failed: its exit 1 takes precedence.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use crate::case::{CaseKey, Verdict};
use crate::cli::{PublishArgs, RunArgs};
use crate::commands::{Outcome, env_lookup, runs};
use crate::config::{Config, GateConfig, LoadedConfig, ReportConfig};
use crate::error::Error;
use crate::github::{
    self, CHECK_OUTPUT_LIMIT, CheckConclusion, CheckOutput, CheckRunPost, CheckRunStart,
    ChecksMode, CommentAction, CommentPost, GithubError, GithubTarget, Publication, StatusPost,
    Token,
};
use crate::output;
use crate::report::{
    self, BUILTIN_TEMPLATES, GITHUB_COMMENT_LIMIT, Judgement, Renderer, ReportFormat, RunReport,
    TrendPoint,
};
use crate::store::{Store, StoredRun};
use crate::trust;

const GITHUB_TOKEN: &str = "GITHUB_TOKEN";
const GITHUB_API_URL: &str = "GITHUB_API_URL";
const GITHUB_REPOSITORY: &str = "GITHUB_REPOSITORY";
const GITHUB_EVENT_NAME: &str = "GITHUB_EVENT_NAME";
const GITHUB_EVENT_PATH: &str = "GITHUB_EVENT_PATH";
const GITHUB_SHA: &str = "GITHUB_SHA";
const GITHUB_STEP_SUMMARY: &str = "GITHUB_STEP_SUMMARY";
const GITHUB_ACTIONS: &str = "GITHUB_ACTIONS";
const GITHUB_SERVER_URL: &str = "GITHUB_SERVER_URL";
const GITHUB_RUN_ID: &str = "GITHUB_RUN_ID";
const DEFAULT_API_URL: &str = "https://api.github.com";
/// GitHub's limit on one step summary is 1 MiB; stay clear of it.
const STEP_SUMMARY_LIMIT: usize = 1_000_000;

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
        }
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

#[expect(
    clippy::print_stderr,
    reason = "publishing notes go to stderr by design"
)]
fn note(text: &str) {
    eprintln!("{text}");
}

/// The template environment, with the user's templates from `[report] templates` when set.
pub fn renderer(loaded: Option<&LoadedConfig>) -> Result<Renderer, Error> {
    let mut overrides = BTreeMap::new();
    if let Some(loaded) = loaded
        && let Some(rel) = &loaded.config.report.templates
    {
        let dir = loaded.dir.join(rel);
        let entries = std::fs::read_dir(&dir).map_err(|source| Error::Io {
            path: dir.clone(),
            source,
        })?;
        for entry in entries {
            let entry = entry.map_err(|source| Error::Io {
                path: dir.clone(),
                source,
            })?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if !BUILTIN_TEMPLATES.iter().any(|(n, _)| *n == name) {
                if Path::new(&name)
                    .extension()
                    .is_some_and(|e| e.eq_ignore_ascii_case("j2"))
                {
                    let names: Vec<&str> = BUILTIN_TEMPLATES.iter().map(|(n, _)| *n).collect();
                    output::warn(&format!(
                        "{}: replaces no built-in template (names: {})",
                        entry.path().display(),
                        names.join(", ")
                    ));
                }
                continue;
            }
            let path = entry.path();
            let text = std::fs::read_to_string(&path).map_err(|source| Error::Io {
                path: path.clone(),
                source,
            })?;
            overrides.insert(name, text);
        }
    }
    Ok(Renderer::new(&overrides)?)
}

/// Each case's recent results on the run's GPU, oldest first: earlier runs on the baseline
/// branch (the nightlies), up to `limit` of them, then the run itself.
pub fn trends(
    store: &Store,
    report: &RunReport,
    limit: usize,
    baseline_branch: Option<&str>,
) -> Result<BTreeMap<CaseKey, Vec<TrendPoint>>, Error> {
    let mut out = BTreeMap::new();
    for case in &report.cases {
        let history =
            store.case_history(&case.key, &report.run.gpu_sku, limit.saturating_mul(4) + 1)?;
        let mut points: Vec<TrendPoint> = Vec::new();
        let mut earlier = 0;
        for r in &history {
            let current = r.run_id.0 == report.run.id;
            if r.run_id.0 > report.run.id || r.median_ms.is_none() {
                continue;
            }
            if !current {
                if earlier >= limit
                    || baseline_branch.is_some_and(|b| r.branch.as_deref() != Some(b))
                {
                    continue;
                }
                earlier += 1;
            }
            points.push(TrendPoint {
                run_id: r.run_id.0,
                started_at: r.started_at.to_string(),
                git_sha: r.git_sha.clone(),
                median_ms: r.median_ms,
                utilisation: r.utilisation,
                current,
            });
        }
        points.reverse();
        out.insert(case.key.clone(), points);
    }
    Ok(out)
}

/// The report of a stored run with the verdicts and the gate stored with it (`fail_on`,
/// thresholds, missing cases, the baseline branch in force when it ran), never re-judged;
/// `config` (the publishing side's) only fills in for runs stored before these were kept,
/// and sets the trend length.
pub fn stored_report(
    store: &Store,
    run: &StoredRun,
    config: Option<&Config>,
) -> Result<RunReport, Error> {
    let facts = store.publish_facts(run.summary.id)?;
    let mut judgements = runs::stored_judgements(store, run, config)?;
    if let Some(facts) = &facts {
        for j in &mut judgements {
            if let Some(t) = facts.thresholds_pct.get(&j.key.to_string()) {
                j.threshold_pct = *t;
            }
        }
        for missing in &facts.missing {
            let baseline = crate::commands::judge::baseline_before(
                store,
                &missing.key,
                &run.summary.gpu_sku,
                run.summary.started_at,
            )?;
            judgements.push(Judgement {
                key: missing.key.clone(),
                decision: missing.decision.clone(),
                baseline: baseline.as_ref().map(crate::commands::judge::baseline_ref),
                env_changes: Vec::new(),
                threshold_pct: facts
                    .thresholds_pct
                    .get(&missing.key.to_string())
                    .copied()
                    .unwrap_or_else(|| GateConfig::default().max_drop_pct),
            });
        }
    }
    let fail_on = facts
        .as_ref()
        .map_or_else(|| runs::fail_on(config), |f| f.fail_on.clone());
    let promoted = store
        .baselines(Some(&run.summary.gpu_sku))?
        .iter()
        .any(|b| b.run_id == run.summary.id);
    let mut report = RunReport::build(run, &judgements, &fail_on, promoted);
    crate::commands::evidence::attach(store, &mut report);
    let report_config = config.map_or_else(ReportConfig::default, |c| c.report.clone());
    let branch = facts.as_ref().map_or_else(
        || {
            config.map_or_else(
                || GateConfig::default().baseline_branch,
                |c| c.gate.baseline_branch.clone(),
            )
        },
        |f| f.baseline_branch.clone(),
    );
    let trends = trends(store, &report, report_config.trend_runs, Some(&branch))?;
    let report = crate::commands::serve_stored::with_stored_service(store, report)?;
    let history =
        crate::commands::serve_stored::service_history(store, &report, report_config.trend_runs)?;
    Ok(report.with_trends(&trends).with_service_history(&history))
}

fn write_file(path: &Path, text: &str) -> Result<(), Error> {
    std::fs::write(path, text).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// Create a report directory (early, before any measuring).
pub fn create_dir(dir: &Path) -> Result<(), Error> {
    std::fs::create_dir_all(dir).map_err(|source| Error::Io {
        path: dir.to_path_buf(),
        source,
    })
}

/// Write every format into `dir`.
pub fn write_report_dir(
    renderer: &Renderer,
    report: &RunReport,
    dir: &Path,
) -> Result<Vec<PathBuf>, Error> {
    create_dir(dir)?;
    let mut written = Vec::new();
    for format in ReportFormat::ALL {
        let path = dir.join(format.file_name());
        write_file(&path, &renderer.render(format, report)?)?;
        written.push(path);
    }
    Ok(written)
}

/// Append the step summary when Actions asks for one.
fn write_step_summary(
    renderer: &Renderer,
    report: &RunReport,
    genv: &GithubEnv,
) -> Result<(), Error> {
    let Some(path) = &genv.step_summary else {
        return Ok(());
    };
    let text = report::fit_comment(
        &renderer.render(ReportFormat::Summary, report)?,
        STEP_SUMMARY_LIMIT,
    );
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut f| f.write_all(text.as_bytes()).map(|()| f))
        .map_err(|source| Error::Io {
            path: path.clone(),
            source,
        })?;
    file.flush().map_err(|source| Error::Io {
        path: path.clone(),
        source,
    })
}

/// The pull request facts from the event payload (`--event`, else `GITHUB_EVENT_PATH`).
fn read_event(genv: &GithubEnv, opts: &PublishOptions) -> Result<github::EventInfo, Error> {
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
fn read_only_fork(genv: &GithubEnv, event: &github::EventInfo) -> bool {
    event.from_fork && genv.event_name.as_deref() == Some("pull_request")
}

/// Everything needed to post, checked before any measuring: the token and repository, unless
/// this is a fork's pull request (which only gets the files and a warning).
fn check_ready(genv: &GithubEnv, opts: &PublishOptions) -> Result<Option<GithubTarget>, Error> {
    let event = read_event(genv, opts)?;
    if read_only_fork(genv, &event) {
        return Ok(None);
    }
    let token = genv.token.clone().ok_or(GithubError::NoToken)?;
    let repository = genv.repository.as_deref().unwrap_or_default();
    Ok(Some(GithubTarget::new(&genv.api_url, repository, token)?))
}

/// The run must have been measured for the pull request and commit it is posted to
/// (DESIGN.md §13): its stored head commit, else its measured one.
fn check_belongs(
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

/// Step summary, annotations, then (unless a fork's read-only token) comments and statuses.
pub fn publish_report(
    renderer: &Renderer,
    report: &RunReport,
    genv: &GithubEnv,
    opts: &PublishOptions,
) -> Result<(), Error> {
    write_step_summary(renderer, report, genv)?;
    if genv.actions {
        for line in report::annotations(report) {
            note(&line);
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
    for suite in &report.suites {
        if pr.is_some() {
            publication.comments.push(CommentPost {
                marker: report::comment_marker(&suite.name, &report.run.gpu_sku),
                body: renderer.comment(report, &suite.name, GITHUB_COMMENT_LIMIT)?,
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
    if publication.comments.is_empty()
        && publication.statuses.is_empty()
        && publication.check_runs.is_empty()
    {
        output::warn(
            "nothing to publish: no pull request and no commit (set GITHUB_SHA or pass --sha)",
        );
        return Ok(());
    }
    let done = github::publish(&target, &publication)?;
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
    note(text.trim_end());
    Ok(())
}

/// The head commit a pull request's checks belong to: `--sha`, the event's head (for
/// `pull_request` events `GITHUB_SHA` is a merge commit), then `GITHUB_SHA`.
fn head_sha(genv: &GithubEnv, opts: &PublishOptions, event: &github::EventInfo) -> Option<String> {
    opts.sha
        .clone()
        .or_else(|| event.head_sha.clone())
        .or_else(|| genv.sha.clone())
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
        annotation_path: loaded.as_ref().map(annotation_path),
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

/// What `utilgate run` will do with its report, checked before measuring.
pub struct RunPublishing {
    renderer: Renderer,
    report_dir: Option<PathBuf>,
    github: Option<GithubEnv>,
    trend_runs: usize,
    baseline_branch: String,
    status_context: String,
    /// Check runs, the ids of those started `in_progress`, and where annotations point.
    checks: PublishOptions,
    /// The commit the `in_progress` check runs were started on.
    started_on: Option<String>,
    /// `finish` was reached: the check runs get the run's result, not "cancelled".
    finished: std::cell::Cell<bool>,
}

/// The config file as the repository names it (relative to the working directory, which in
/// Actions is the checkout), for check-run annotations.
fn annotation_path(loaded: &LoadedConfig) -> String {
    let path = loaded.path.strip_prefix("./").unwrap_or(&loaded.path);
    path.to_string_lossy().replace('\\', "/")
}

/// A run that stops between starting its check runs and `finish` (an error, Ctrl-C, a store
/// it could not write) completes them `cancelled`: a check left `in_progress` reads as still
/// running for ever, and none may ever read as green.
impl Drop for RunPublishing {
    fn drop(&mut self) {
        if self.finished.get() || self.checks.check_run_ids.is_empty() {
            return;
        }
        let (Some(genv), Some(sha)) = (&self.github, &self.started_on) else {
            return;
        };
        let Ok(Some(target)) = check_ready(genv, &self.checks) else {
            return;
        };
        let posts: Vec<CheckRunPost> = self
            .checks
            .check_run_ids
            .iter()
            .map(|(name, id)| CheckRunPost {
                name: name.clone(),
                head_sha: sha.clone(),
                details_url: genv.run_url.clone(),
                conclusion: CheckConclusion::Cancelled,
                output: CheckOutput {
                    title: "utilgate stopped before it stored a result".to_owned(),
                    summary: "The run ended early (an error or an interruption); nothing was \
                              judged. The job log says why."
                        .to_owned(),
                    text: None,
                    annotations: Vec::new(),
                },
                id: Some(*id),
            })
            .collect();
        match github::complete_check_runs(&target, &posts) {
            Ok(n) => output::warn(&format!(
                "completed {n} check run(s) as cancelled: the run stopped before it stored a result"
            )),
            Err(e) => output::warn(&format!("the check runs stay in progress: {e}")),
        }
    }
}

/// Validate `--report-dir` and `--github` before the first harness starts: the directory is
/// created, user templates compile, and the token and repository are present.
pub fn prepare_run(args: &RunArgs, loaded: &LoadedConfig) -> Result<Option<RunPublishing>, Error> {
    if args.report_dir.is_none() && !args.github {
        return Ok(None);
    }
    let renderer = renderer(Some(loaded))?;
    if let Some(dir) = &args.report_dir {
        create_dir(dir)?;
    }
    let github = if args.github {
        let genv = GithubEnv::from_env(&env_lookup());
        check_ready(&genv, &PublishOptions::default())?;
        Some(genv)
    } else {
        None
    };
    Ok(Some(RunPublishing {
        renderer,
        report_dir: args.report_dir.clone(),
        github,
        trend_runs: loaded.config.report.trend_runs,
        baseline_branch: loaded.config.gate.baseline_branch.clone(),
        status_context: loaded.config.report.status_context.clone(),
        checks: PublishOptions {
            checks: loaded.config.github.checks,
            annotation_path: Some(annotation_path(loaded)),
            ..PublishOptions::default()
        },
        started_on: None,
        finished: std::cell::Cell::new(false),
    }))
}

impl RunPublishing {
    /// With `[github] checks` asking for check runs: create one `in_progress` check run per
    /// suite on the pull request's head commit, so the pull request shows the gate running.
    /// A fork's read-only token gets none (the warning comes at the end).
    pub fn start(&mut self, gpu_sku: &str, suites: &[&str]) -> Result<(), Error> {
        let Some(genv) = &self.github else {
            return Ok(());
        };
        if !self.checks.checks.check_runs() {
            return Ok(());
        }
        let event = read_event(genv, &self.checks)?;
        let Some(target) = check_ready(genv, &self.checks)? else {
            return Ok(());
        };
        let Some(sha) = head_sha(genv, &self.checks, &event) else {
            output::warn("no commit to show the gate running on (set GITHUB_SHA)");
            return Ok(());
        };
        let starts: Vec<CheckRunStart> = suites
            .iter()
            .map(|suite| CheckRunStart {
                name: report::status_context(&self.status_context, suite, gpu_sku),
                head_sha: sha.clone(),
                details_url: genv.run_url.clone(),
            })
            .collect();
        let ids = github::start_check_runs(&target, &starts)?;
        for (start, id) in starts.into_iter().zip(ids) {
            self.checks.check_run_ids.insert(start.name, id);
        }
        self.started_on = Some(sha);
        Ok(())
    }

    /// Write the report files and publish, after the run is stored.
    pub fn finish(
        &self,
        store: &Store,
        report: &RunReport,
        gate_failed: bool,
        head_sha: Option<&str>,
    ) -> Result<(), Error> {
        self.finished.set(true);
        let result = (|| {
            let trends = trends(store, report, self.trend_runs, Some(&self.baseline_branch))?;
            let history =
                crate::commands::serve_stored::service_history(store, report, self.trend_runs)?;
            let report = report
                .clone()
                .with_trends(&trends)
                .with_service_history(&history);
            if let Some(dir) = &self.report_dir {
                write_report_dir(&self.renderer, &report, dir)?;
            }
            if let Some(genv) = &self.github {
                let opts = PublishOptions {
                    run_head_sha: head_sha.map(str::to_owned),
                    status_context: Some(self.status_context.clone()),
                    ..self.checks.clone()
                };
                publish_report(&self.renderer, &report, genv, &opts)?;
            }
            Ok(())
        })();
        unless_gate_failed(result, gate_failed)
    }
}
