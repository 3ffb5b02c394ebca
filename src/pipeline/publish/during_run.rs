//! The publishing half of `utilgate run --report-dir/--github`: checked before the first
//! harness starts (the directory, the templates, the token), check runs started `in_progress`
//! on the pull request's head, and once the run is stored the files and posts; a run that stops
//! early completes its check runs `cancelled`. Network through `github`; writes files.

use std::path::PathBuf;

use crate::cli::RunArgs;
use crate::config::LoadedConfig;
use crate::error::Error;
use crate::github::{self, CheckConclusion, CheckOutput, CheckRunPost, CheckRunStart};
use crate::output;
use crate::pipeline::context::env_lookup;
use crate::report::{self, Renderer, RunReport};
use crate::store::Store;

use super::env::{GithubEnv, PublishOptions, check_ready, head_sha, read_event};
use super::files::{create_dir, renderer, write_report_dir};
use super::{post::publish_report, unless_gate_failed};
use crate::pipeline::report::trends;

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
pub(crate) fn annotation_path(loaded: &LoadedConfig) -> String {
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

    /// What a pull request changed in the gate's settings (`pipeline::base_gate`), for the
    /// comment.
    pub fn gate_notes(&mut self, notes: &[String]) {
        self.checks.gate_notes = notes.to_vec();
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
                crate::pipeline::serve_stored::service_history(store, report, self.trend_runs)?;
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
                    baseline_branch: Some(self.baseline_branch.clone()),
                    ..self.checks.clone()
                };
                publish_report(&self.renderer, &report, genv, &opts)?;
            }
            Ok(())
        })();
        unless_gate_failed(result, gate_failed)
    }
}
